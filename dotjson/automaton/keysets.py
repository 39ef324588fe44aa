"""Key sets: the key position of a wide object as one term kind (``K_KEYS``).

A derivative narrows a range of sorted names by binary search instead of walking a trie of rules
(see the comment below for the table layout, contexts and the escape and end depths). The string
syntax the names are written in (closing quote, escape bytes, the bytes never raw) is data in the
table, handed down by the JSON layer (``dotjson.jsonschema.jsonstr.STRING_SYNTAX``): no byte of
JSON's is written here.
"""

from __future__ import annotations

import numpy as np
from .._kernels.jit import kernel, unit
from .store import (
    C_ARG2, C_MEMO, C_POOL, EMPTY, EPS, K_KEYS, NEED_GROW_MEMO, NEED_GROW_POOL,
    NEED_KEY_ALIVE, NEED_KEY_TAIL, STORE, S_CTL, S_MK, S_POOL, S_TI, _I32_1, _T_KCTX, _U0, _U1,
    _U64_2, _fail, _grow_i32, _i64, _mget, _mput, borrow, scratch,
)
from .terms import alt, mk_simple, seq

#
# The key position of a wide object, natively: "the rest of one of these names (every JSON
# spelling of it), its closing quote, then what follows that member". Written as grammar rules it
# is a trie of rules, each compiled in Python when the automaton first reaches it (~110 rules for
# the first mask after ``"p`` among 10,000 names ``p0 .. p9999``); here a derivative narrows a
# range of sorted names by binary search, so a fresh key position costs what any state costs.
#
# A key set's table is stored in the pool at offset T: ``pool[T + KT_*]`` are its size and the
# pool offsets of its arrays: the names' UTF-8 bytes (sorted by bytes; ``KT_START``: n + 1 byte
# offsets into ``KT_BLOB``), the member of each sorted name (``KT_MEMBER``), per member whether
# it can complete (``KT_ALIVE``: 1, 0, or -1 not known yet) and the term of what follows its
# name (``KT_TAIL``: -1 not known yet), and per code point of the names (sorted, ``KT_CP``) the
# rest of its ``\\u`` spellings after the backslash and the ``u`` (``KT_ESC``), the byte of its
# short escape (``KT_SHORT``: ``n`` for a newline, ``"`` for a quote; -1 when it has none) and
# whether it may be written raw (``KT_RAW``), and the pool offset of the string syntax of the
# names (``KT_SYN``, below); the arrays of the names may be shared by several tables over the same
# names (an object in any order: a table per set of members seen), a syntax block by every table
# of that syntax. A
# context at pool offset C is ``(T, mlo, mhi)``: the members a state offers; ``KT_FULL`` is the
# context offering them all. A derivative takes the least context offering the same members of
# its range (``_k_ctx``, interned by ``_k_intern``), so key positions whose states offer the same
# members of a range share its terms: a later key position of a wide object is mostly memoized.
# Term ``K_KEYS(C, p, d)``: the names sharing the first ``d`` bytes of sorted name ``p`` (``p`` the
# first of them) whose member is offered and can complete, their remaining bytes from ``d`` on.
# Such a term is made only when one of its names is offered and can complete: like every term
# without AND/DIFF, it is never empty. ``K_KEYS(C, s, d + KD_ESC)`` is the same names just after
# a backslash that starts their character at byte ``d`` (``s`` the first name with one): one term
# for the backslash class of every row, its characters' escapes spelled only when a byte after
# the backslash is asked for. ``K_KEYS(full, p, KD_END)`` is what follows the closing quote of
# name ``p`` (its member's tail) before the tail is made: a row's quote class costs no rule until
# a byte after the quote is asked for (then it derives as the tail, like a reference its body).
KT_N, KT_START, KT_BLOB, KT_MEMBER, KT_ALIVE, KT_TAIL, KT_CP, KT_NCP, KT_ESC, KT_RAW, KT_FULL, \
    KT_SHORT, KT_SYN = range(13)
N_KT = 13
#: A syntax block at pool offset Y: ``pool[Y + SY_*]`` are the byte that closes a name (JSON's
#: quote), the byte that starts an escape (the backslash), the byte after it that starts a hex
#: escape (``u``), the least byte a character may be written raw with, and the number of short
#: escapes, then that many ``(code point, byte after the escape)`` pairs sorted by code point
#: (written by :func:`syntax_block`, checked by :func:`syntax_problem`).
SY_CLOSE, SY_ESCAPE, SY_HEX, SY_LOW, SY_NSHORT = range(5)
N_SY = 5
#: depth flag of a key set term just after a backslash (see ``_k_esc_deriv``)
KD_ESC = 1 << 28
#: depth of a key set term just after the closing quote of a name (see ``_k_end``)
KD_END = 1 << 29


@kernel
def _klen(pool, st, q):
    return pool[st + q + 1] - pool[st + q]


@kernel
def _k_block_end(pool, T, p, d):
    """One past the last sorted name sharing the first ``d`` bytes of name ``p``."""
    n = pool[T + KT_N]
    if d == 0:
        return n
    st = pool[T + KT_START]
    bl = pool[T + KT_BLOB]
    s0 = pool[st + p]
    lo = p + 1
    hi = n
    while lo < hi:
        mid = (lo + hi) >> 1
        sm = pool[st + mid]
        same = pool[st + mid + 1] - sm >= d
        if same:
            for x in range(d - 1, -1, -1):  # the last byte differs first
                if pool[bl + sm + x] != pool[bl + s0 + x]:
                    same = False
                    break
        if same:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def _k_bound(pool, st, bl, lo, hi, d, b, strict):
    """First name in ``[lo, hi)`` whose byte ``d`` is ``>= b`` (``> b`` when ``strict``); the
    names there are longer than ``d`` and their bytes ``d`` ascend."""
    while lo < hi:
        mid = (lo + hi) >> 1
        x = pool[bl + pool[st + mid] + d]
        if x < b or (strict and x == b):
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def _k_decode(pool, st, bl, q, d):
    """The code point starting at byte ``d`` of name ``q``, and its length in bytes."""
    o = bl + pool[st + q] + d
    b0 = pool[o]
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | (pool[o + 1] & 0x3F), 2
    if b0 < 0xF0:
        return ((b0 & 0x0F) << 12) | ((pool[o + 1] & 0x3F) << 6) | (pool[o + 2] & 0x3F), 3
    return (((b0 & 0x07) << 18) | ((pool[o + 1] & 0x3F) << 12) | ((pool[o + 2] & 0x3F) << 6)
            | (pool[o + 3] & 0x3F)), 4


@kernel
def _k_cp(pool, T, cp):
    """Index of code point ``cp`` in the table's sorted list, -1 when absent."""
    o = pool[T + KT_CP]
    n = pool[T + KT_NCP]
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) >> 1
        if pool[o + mid] < cp:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < n and pool[o + lo] == cp else -1


@kernel
def _k_char(pool, T, st, bl, q, d):
    """The character block at byte ``d`` starting with name ``q``: the index of its code point
    in the table (-1 when absent), its length in bytes, and one past its last name."""
    cp, ln = _k_decode(pool, st, bl, q, d)
    return _k_cp(pool, T, cp), ln, _k_block_end(pool, T, q, d + ln)


@kernel
def _k_first(pool, T, C, q1, q2):
    """Whether a name of sorted ``[q1, q2)`` is offered by context ``C`` and can complete, as
    far as the table knows: 1 yes, 0 none, ``-2 - m`` when member ``m`` (offered, the first
    such) is not known yet and decides it."""
    mlo = pool[C + 1]
    mhi = pool[C + 2]
    mem = pool[T + KT_MEMBER]
    al = pool[T + KT_ALIVE]
    for q in range(q1, q2):
        m = pool[mem + q]
        if m < mlo or m >= mhi:
            continue
        a = pool[al + m]
        if a == 1:
            return 1
        if a < 0:
            return -2 - m
    return 0


@kernel
def _k_any(S, T, C, q1, q2):
    """1 when a name of sorted ``[q1, q2)`` is offered by context ``C`` and can complete, 0 when
    none, -1 on exit (whether an offered member can complete is not known yet)."""
    S = borrow(S)
    r = _k_first(S[S_POOL], T, C, q1, q2)
    if r >= 0:
        return r
    return _k_ask_alive(S, T, -2 - r)


#: a key set of more members than this keeps its contexts as made (not interned in the memo,
#: whose keys hold a context's bounds in 22 bits each)
K_CTX_MEMBERS = 1 << 22


@kernel
def _k_ctx_key(T, lo, hi):
    return _T_KCTX | (np.int64(T & 0x3FFF) << 44) | (np.int64(lo) << 22) | np.int64(hi)


@kernel
def _k_intern(S, T, lo, hi):
    """The context ``(T, lo, hi)`` (members ``lo .. hi - 1`` of table ``T`` offered): the table's
    full one, else the one made before (found in the memo), else a new one in the pool; -1 on
    exit. Every maker of contexts comes here, so a context is one pool offset and the key set
    terms over it are shared."""
    S = borrow(S)
    pool = S[S_POOL]
    n = pool[T + KT_N]
    if lo == 0 and hi == n:
        return pool[T + KT_FULL]
    interned = n < K_CTX_MEMBERS
    key = _k_ctx_key(T, lo, hi)
    if interned:
        c = _mget(S, key)
        if c >= 0 and pool[c] == T and pool[c + 1] == lo and pool[c + 2] == hi:
            return c
        if c >= 0:  # another table's context under the same key: this one is made, not kept
            interned = False
    ctl = S[S_CTL]
    if interned and 2 * (ctl[C_MEMO] + 1) > S[S_MK].shape[0]:
        return _fail(S, NEED_GROW_MEMO, 0)
    off = ctl[C_POOL]
    if off + 3 > pool.shape[0]:
        return _fail(S, NEED_GROW_POOL, 3)
    pool[off] = T
    pool[off + 1] = lo
    pool[off + 2] = hi
    ctl[C_POOL] = off + 3
    if interned:
        _mput(S, key, off)  # (room checked above)
    return off


@kernel
def _k_ctx(S, pool, T, C, q1, q2):
    """The context of a key set term over names ``[q1, q2)`` under context ``C``: the least one
    offering the same members of them, from the least to the greatest offered (the full one
    when ``C`` offers all of them): the terms of every state offering the same members of a
    range are shared, whichever members the states offer elsewhere. -1 on exit."""
    S = borrow(S)
    full = pool[T + KT_FULL]
    if C == full:
        return C
    mlo = pool[C + 1]
    mhi = pool[C + 2]
    mem = pool[T + KT_MEMBER]
    a = mhi
    b = mlo - 1
    whole = True
    for q in range(q1, q2):
        m = pool[mem + q]
        if m < mlo or m >= mhi:
            whole = False
        else:
            if m < a:
                a = m
            if m > b:
                b = m
    if whole:
        return full
    if a == mlo and b + 1 == mhi:
        return C
    return _k_intern(S, T, a, b + 1)


@kernel
def keys_root(S, T, lo, hi):
    """The key set term of table ``T`` offering members ``lo .. hi - 1`` (all its names, from
    their first byte); the caller knows it is not empty."""
    S = borrow(S)
    C = _k_intern(S, T, lo, hi)
    if C < 0:
        return -1
    return mk_simple(S, K_KEYS, C, 0, 0, 0)


@kernel
def keys_register(S, C):
    """Put context ``C`` of a loaded store back in the memo (which is not saved), so contexts
    made from now on find it instead of making a copy; -1 on exit."""
    S = borrow(S)
    pool = S[S_POOL]
    T = pool[C]
    if pool[T + KT_N] >= K_CTX_MEMBERS or C == pool[T + KT_FULL]:
        return 0
    key = _k_ctx_key(T, pool[C + 1], pool[C + 2])
    if _mget(S, key) >= 0:
        return 0
    return _mput(S, key, C)


@kernel
def _k_term(S, pool, T, C, q1, q2, d):
    """The key set term of names ``[q1, q2)`` from byte ``d`` on, under context ``C`` (made
    canonical): ∅ when none of them is offered and can complete; -1 on exit."""
    S = borrow(S)
    f = _k_any(S, T, C, q1, q2)
    if f < 0:
        return -1
    if f == 0:
        return EMPTY
    c = _k_ctx(S, pool, T, C, q1, q2)
    if c < 0:
        return -1
    return mk_simple(S, K_KEYS, c, q1, d, 0)


@kernel
def _k_open(S, t):
    """Key set term ``t``'s pool, context, first name, depth (an escape-mode term's: the byte
    its backslash stands before), table, the table's name offsets and bytes, and one past the
    last name of its range."""
    S = borrow(S)
    ti = S[S_TI]
    pool = S[S_POOL]
    C = ti[t, 1]
    p = ti[t, 2]
    d = ti[t, 3]
    if d >= KD_ESC:  # (end-mode terms never come here: deriv and row take them)
        d -= KD_ESC
    T = pool[C]
    return pool, C, p, d, T, pool[T + KT_START], pool[T + KT_BLOB], _k_block_end(pool, T, p, d)


@kernel
def _k_backslash(S, T, C, s, e, d):
    """The derivative by a backslash of the names ``[s, e)`` (byte ``d`` starts a character in
    each): the escape-mode term over them when one of their characters with an escape starts an
    offered member that can complete, else ∅; -1 on exit."""
    S = borrow(S)
    pool = S[S_POOL]
    st = pool[T + KT_START]
    bl = pool[T + KT_BLOB]
    q = s
    while q < e:
        i, _, q2 = _k_char(pool, T, st, bl, q, d)
        if i >= 0 and (pool[pool[T + KT_ESC] + i] != EMPTY or pool[pool[T + KT_SHORT] + i] >= 0):
            f = _k_any(S, T, C, q, q2)
            if f < 0:
                return -1
            if f == 1:
                c = _k_ctx(S, pool, T, C, s, e)
                if c < 0:
                    return -1
                return mk_simple(S, K_KEYS, c, s, d + KD_ESC, 0)
        q = q2
    return EMPTY


@kernel
def _k_esc_deriv(S, t, b):
    """The derivative of escape-mode key set term ``t`` by byte ``b``: ``u`` leads, per
    character, to the rest of its ``\\u`` spellings then the names' rest after it; a short
    escape's byte to the rest of the names of its one character. -1 on exit."""
    S = borrow(S)
    pool, C, s, d, T, st, bl, e = _k_open(S, t)
    hx = pool[pool[T + KT_SYN] + SY_HEX]
    parts = scratch(np.int32, 16, 0)
    n = 0
    q = s
    while q < e:
        i, ln, q2 = _k_char(pool, T, st, bl, q, d)
        if i >= 0:
            head = EMPTY
            if b == hx:
                head = pool[pool[T + KT_ESC] + i]
            elif pool[pool[T + KT_SHORT] + i] == b:
                head = EPS
            if head != EMPTY:
                kt = _k_term(S, pool, T, C, q, q2, d + ln)
                if kt < 0:
                    return -1
                if kt != EMPTY:
                    r = seq(S, head, kt)
                    if r < 0:
                        return -1
                    parts = _grow_i32(parts, n)
                    parts[n] = r
                    n += 1
        q = q2
    if n == 0:
        return EMPTY
    if n == 1:
        return parts[0]
    return alt(S, parts, n)


@kernel
def _k_esc_row(S, t, cw, ct):
    """The derivative classes of escape-mode key set term ``t``: the hex escape's byte and the
    short escape bytes of its characters. Their number, or -1 on exit."""
    S = borrow(S)
    pool, C, s, d, T, st, bl, e = _k_open(S, t)
    hx = pool[pool[T + KT_SYN] + SY_HEX]
    seen = scratch(np.bool_, 256, 0)
    for b in range(256):
        seen[b] = False
    seen[hx] = True
    cand = scratch(np.int32, 257, 0)
    cand[0] = hx
    k = 1
    q = s
    while q < e:
        i, _, q2 = _k_char(pool, T, st, bl, q, d)
        if i >= 0:
            x = pool[pool[T + KT_SHORT] + i]
            if x >= 0 and not seen[x]:
                seen[x] = True
                cand[k] = x
                k += 1
        q = q2
    return _k_classes(S, t, cand, k, cw, ct)


@kernel
def _k_ask_alive(S, T, m):
    """Exit: whether member ``m`` of table ``T`` can complete (one the builder could not vouch
    for when the table was written)."""
    S = borrow(S)
    S[S_CTL][C_ARG2] = m
    return _fail(S, NEED_KEY_ALIVE, T)


@kernel
def _k_end(S, t):
    """The tail of the name of end-mode key set term ``t`` (``K_KEYS(full, p, KD_END)``);
    -1 on exit (Python makes it)."""
    S = borrow(S)
    pool = S[S_POOL]
    T = pool[S[S_TI][t, 1]]
    m = pool[pool[T + KT_MEMBER] + S[S_TI][t, 2]]
    r = pool[pool[T + KT_TAIL] + m]
    if r < 0:
        S[S_CTL][C_ARG2] = m
        return _fail(S, NEED_KEY_TAIL, T)
    return r


@unit(_i64, STORE, _i64, _i64)
def _k_deriv(S, t, b):
    """The derivative of key set term ``t`` by byte ``b`` (-1 on exit)."""
    S = borrow(S)
    if S[S_TI][t, 3] >= KD_ESC:  # (never KD_END: deriv takes those)
        return _k_esc_deriv(S, t, b)
    pool, C, p, d, T, st, bl, e = _k_open(S, t)
    sy = pool[T + KT_SYN]
    close = pool[sy + SY_CLOSE]
    s = p
    if _klen(pool, st, p) == d:  # name p ends here (it sorts first)
        s = p + 1
        if b == close:  # its closing quote: what follows member m's name
            m = pool[pool[T + KT_MEMBER] + p]
            if m < pool[C + 1] or m >= pool[C + 2]:
                return EMPTY
            a = pool[pool[T + KT_ALIVE] + m]
            if a < 0:
                return _k_ask_alive(S, T, m)
            if a == 0:
                return EMPTY
            r = pool[pool[T + KT_TAIL] + m]
            if r < 0:  # not made yet: made when a byte after the quote is asked for
                return mk_simple(S, K_KEYS, pool[T + KT_FULL], p, KD_END, 0)
            return r
    if s >= e or b < pool[sy + SY_LOW] or b == close:
        return EMPTY
    boundary = (pool[bl + pool[st + s] + d] & 0xC0) != 0x80
    if b == pool[sy + SY_ESCAPE]:
        return _k_backslash(S, T, C, s, e, d) if boundary else EMPTY
    q1 = _k_bound(pool, st, bl, s, e, d, b, False)
    q2 = _k_bound(pool, st, bl, q1, e, d, b, True)
    if q1 == q2:
        return EMPTY
    if boundary:
        # a character starts here: written raw only where the syntax allows it raw
        cp, ln = _k_decode(pool, st, bl, q1, d)
        i = _k_cp(pool, T, cp)
        if i < 0 or pool[pool[T + KT_RAW] + i] == 0:
            return EMPTY
    return _k_term(S, pool, T, C, q1, q2, d + 1)


@unit(_i64, STORE, _i64, _U64_2, _I32_1)
def _k_row(S, t, cw, ct):
    """The derivative classes of key set term ``t`` (one byte each) into ``cw``/``ct``; their
    number, or -1 on exit."""
    S = borrow(S)
    if S[S_TI][t, 3] >= KD_ESC:  # (never KD_END: row takes those)
        return _k_esc_row(S, t, cw, ct)
    pool, C, p, d, T, st, bl, e = _k_open(S, t)
    sy = pool[T + KT_SYN]
    close = pool[sy + SY_CLOSE]
    esc = pool[sy + SY_ESCAPE]
    low = pool[sy + SY_LOW]
    # the bytes with a derivative to compute: the closing quote where name p ends, a backslash
    # where a character starts, each distinct raw byte the names have at depth d
    cand = scratch(np.int32, 258, 0)
    k = 0
    s = p
    if _klen(pool, st, p) == d:
        s = p + 1
        cand[k] = close
        k += 1
    if s < e:
        if (pool[bl + pool[st + s] + d] & 0xC0) != 0x80:
            cand[k] = esc
            k += 1
        q = s
        while q < e:
            b = pool[bl + pool[st + q] + d]
            if b >= low and b != close and b != esc:
                cand[k] = b
                k += 1
            q = _k_bound(pool, st, bl, q, e, d, b, True)
    return _k_classes(S, t, cand, k, cw, ct)


@kernel
def _k_classes(S, t, cand, k, cw, ct):
    """The derivatives of key set term ``t`` (either mode) by the bytes ``cand[:k]``, the
    non-empty ones as one-byte classes into ``cw``/``ct``; their number, or -1 on exit."""
    S = borrow(S)
    n = 0
    for i in range(k):
        r = _k_deriv(S, t, cand[i])
        if r < 0:
            return -1
        if r != EMPTY:
            _k_class(cw, ct, n, cand[i], r)
            n += 1
    return n


@kernel
def _k_class(cw, ct, n, b, r):
    for w in range(4):
        cw[n, w] = _U0
    cw[n, b >> 6] = _U1 << np.uint64(b & 63)
    ct[n] = r


# ------------------------------------------------------------------------------ the syntax block


def syntax_block(syntax) -> np.ndarray:
    """The pool block of a string syntax (see ``SY_*``): ``syntax`` has the fields ``close``,
    ``escape``, ``hex_escape``, ``low`` and ``short`` (``(code point, byte)`` pairs) of
    :class:`dotjson.jsonschema.jsonstr.StringSyntax`, the JSON layer's record."""
    short = sorted((int(c), int(b)) for c, b in syntax.short)
    head = [int(syntax.close), int(syntax.escape), int(syntax.hex_escape), int(syntax.low), len(short)]
    return np.asarray(head + [x for pair in short for x in pair], dtype=np.int64)


def syntax_problem(block, max_codepoint: int) -> str | None:
    """What makes a syntax block unsafe for the kernels, or None: its size, a delimiter that is
    not an ASCII byte (the kernels index 256-entry tables by them and read names as UTF-8), the
    closing and escape bytes alike, a short escape's byte that is the hex escape's or not ASCII,
    short escapes' code points not ascending or past ``max_codepoint``."""
    if len(block) < N_SY:
        return "truncated"
    close, escape, hx, low, n = (int(x) for x in block[:N_SY])
    if n < 0 or len(block) != N_SY + 2 * n:
        return "size disagrees with its number of short escapes"
    if not (0 <= close < 0x80 and 0 <= escape < 0x80 and 0 <= hx < 0x80 and 0 <= low <= 0x80):
        return "delimiter bytes are not ASCII"
    if close == escape:
        return "closing byte is the escape byte"
    pairs = np.asarray(block[N_SY:], dtype=np.int64).reshape(n, 2)
    cps, bytes_ = pairs[:, 0], pairs[:, 1]
    if n and (cps[0] < 0 or cps[-1] > max_codepoint or np.any(np.diff(cps) <= 0)):
        return "short escapes' characters not sorted"
    if n and (bytes_.min() < 0 or bytes_.max() >= 0x80 or np.any(bytes_ == hx)):
        return "short escape bytes out of range"
    return None
