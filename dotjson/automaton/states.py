"""Automaton states over terms: state ids, transitions (whole rows or single entries), walks of
byte strings, mask keys, plain invariance, plain runs and plain openness.

A state is a live term with an id; its transitions ``trans[s, byte]`` (``UNKNOWN`` until asked,
``DEAD`` for ∅) are filled by ``fill_row``/``fill_entry`` from the term's derivatives.
"""

from __future__ import annotations

import numpy as np
from numba import types

from .._kernels.jit import kernel, unit
from .store import (
    BAND, C_EXPANDED, C_MAX_STATES, C_STATES, DEAD, EMPTY, EPS, FAIL, F_BOOL, F_NULL, F_REP, INF,
    K_ALT, K_BYTES, K_DIFF, K_REF, K_REP, K_SEQ, LIMIT_STATES, NEED_RULE, S_POOL, S_RULE, _T_POPEN, _T_BRUN, _T_CRUN, M_ROW_LEN, M_ROW_OFF, M_STATE, NEED_GROW_STATES,
    RUN_INF, STORE, S_ACC, S_BW, S_CTL, S_INV, S_RCT, S_RCW, S_READY, S_TERM_OF, S_TF, S_TI,
    S_TM, S_TRANS, UNKNOWN, _I32_1, _I32_3, _T_PLAINC, _T_PRUN, _U0, _U1, _fail, _i64, _low, _mget,
    _mput, borrow, scratch, PACKED, _I64_1, unpack_store,
)
from .derive import _has, deriv
from .rows import row
from .emptiness import is_empty
from .clamp import clamp
from .terms import alt, seq

#: A byte buffer (the text :func:`walk_terms` and :func:`walk_bytes` read), as their twins declare it.
_U8_1 = types.Array(types.uint8, 1, "C")


@kernel(python=True)
def state(S, t):
    """The state id of live term ``t`` (interned), or -1 on exit."""
    S = borrow(S)
    tm = S[S_TM]
    s = tm[t, M_STATE]
    if s >= 0:
        return s
    ctl = S[S_CTL]
    n = ctl[C_STATES]
    if n >= ctl[C_MAX_STATES]:
        return _fail(S, LIMIT_STATES, n)
    trans = S[S_TRANS]
    if n >= trans.shape[0]:
        return _fail(S, NEED_GROW_STATES, 0)
    S[S_TERM_OF][n] = t
    S[S_ACC][n] = (S[S_TF][t] & F_NULL) != 0
    # the state's row and flags are written here, not when the arrays grow (rows past the
    # states are never read: growing them costs a copy of the states so far, not a fill of
    # the doubled table, 32 MiB at 32,768 states)
    trans[n, :] = UNKNOWN
    S[S_INV][n] = -1
    S[S_READY][n] = False
    tm[t, M_STATE] = n
    ctl[C_STATES] = n + 1
    return n


@kernel
def _live_state(S, u):
    """State of successor term ``u``, ``DEAD`` when it denotes ∅, or -1 (FAIL) on exit."""
    S = borrow(S)
    if u == EMPTY:
        return DEAD
    if (S[S_TF][u] & F_BOOL) != 0:
        e = is_empty(S, u)
        if e < 0:
            return FAIL
        if e == 1:
            return DEAD
    return state(S, u)


@unit(_i64, STORE, _i64)
def _fill_row(S, s):
    """Compute every byte transition of state ``s``; 0, or -1 on exit."""
    S = borrow(S)
    if S[S_READY][s]:
        return 0
    t = S[S_TERM_OF][s]
    if row(S, t) < 0:
        return -1
    tm = S[S_TM]
    off, n = tm[t, M_ROW_OFF], tm[t, M_ROW_LEN]
    out = scratch(np.int32, 256, 0)
    for b in range(256):
        out[b] = DEAD
    for i in range(off, off + n):
        u = S[S_RCT][i]
        r = _live_state(S, u)
        if r == FAIL:
            return -1
        if r == DEAD:
            continue
        rcw = S[S_RCW]
        for w in range(4):
            x = rcw[i, w]
            while x != _U0:
                out[w * 64 + _low(x)] = r
                x &= x - _U1
    trans = S[S_TRANS]
    for b in range(256):
        trans[s, b] = out[b]
    S[S_READY][s] = True
    S[S_CTL][C_EXPANDED] += 1
    return 0


@kernel(python=True)
def fill_row(S, s):
    """Compute every byte transition of state ``s`` (:func:`_fill_row`, a unit, unless done);
    0, or -1 on exit."""
    S = borrow(S)
    if S[S_READY][s]:
        return 0
    return _fill_row(S, s)



@unit(_i64, STORE, _i64, _i64)
def _fill_entry(S, s, byte):
    """Compute the one transition of state ``s`` on ``byte``; the successor (or DEAD), -1 on exit."""
    S = borrow(S)
    trans = S[S_TRANS]
    r = trans[s, byte]
    if r != UNKNOWN:
        return r
    u = deriv(S, S[S_TERM_OF][s], byte)
    if u < 0:
        return FAIL
    r = _live_state(S, u)
    if r == FAIL:
        return FAIL
    trans[s, byte] = r
    return r


@kernel(python=True)
def fill_entry(S, s, byte):
    """The transition of state ``s`` on ``byte`` (computed by :func:`_fill_entry`, a unit, when
    not known); the successor (or DEAD), -1 on exit."""
    S = borrow(S)
    r = S[S_TRANS][s, byte]
    if r != UNKNOWN:
        return r
    return _fill_entry(S, s, byte)



@kernel
def step(S, s, byte):
    S = borrow(S)
    r = S[S_TRANS][s, byte]
    if r == UNKNOWN:
        r = fill_entry(S, s, byte)
    return r


@kernel
def walk_bytes(S, s, data, ret):
    """Advance state ``s`` over ``data``; the final state or DEAD; -1 on exit (``ret[0]`` =
    the position reached, ``ret[1]`` its state: resume from there)."""
    S = borrow(S)
    for i in range(data.shape[0]):
        r = step(S, s, data[i])
        if r == FAIL:
            ret[0] = i
            ret[1] = s
            return FAIL
        if r < 0:
            return DEAD
        s = r
    return s


@kernel
def walk_terms(S, t, data, ret):
    """The state after ``data`` from term ``t``, by derivatives alone, making a state only at
    the end (a text of a million bytes is a million terms, not a million states with their
    transition rows); ``DEAD``, or -1 on exit (``ret[0]`` = the position reached, ``ret[1]`` its
    term: resume from there)."""
    S = borrow(S)
    for i in range(data.shape[0]):
        u = deriv(S, t, data[i])
        if u < 0:
            ret[0] = i
            ret[1] = t
            return FAIL
        if u == EMPTY:
            return DEAD
        t = u
    r = _live_state(S, t)  # (a term holding AND/DIFF may denote ∅ without being EMPTY)
    if r == FAIL:
        ret[0] = data.shape[0]
        ret[1] = t
    return r


@kernel
def key_state(S, s, limit):
    """The state of the clamped term of state ``s`` (the key its mask is memoized under)."""
    S = borrow(S)
    t = clamp(S, S[S_TERM_OF][s], limit)
    if t < 0:
        return -1
    return state(S, t)


@unit(_i64, STORE, _i64, _I32_3, _I32_1)
def _plain_inv(S, s, pseq, plen):
    """Is state ``s`` unchanged by every plain string character? 1/0, or -1 on exit.

    ``pseq[i, :plen[i]]`` are the ``(lo, hi)`` byte ranges of the UTF-8 sequences of the plain
    characters. Memoized in the store's ``plain_inv`` column.
    """
    S = borrow(S)
    pseq = borrow(pseq)
    plen = borrow(plen)
    inv = S[S_INV]
    v = inv[s]
    if v >= 0:
        return v
    # cheap necessary condition first: a plain-invariant state loops on 'a' (asked of the
    # term, so that a state that is not invariant costs one derivative, not a new state)
    t = S[S_TERM_OF][s]
    d = deriv(S, t, 0x61)
    if d < 0:
        return -1
    if d != t:
        inv[s] = 0
        return 0
    front = scratch(np.int32, 512, 0)
    nxt = scratch(np.int32, 512, 0)
    ok = True
    for q in range(pseq.shape[0]):
        front[0] = s
        nf = 1
        for p in range(plen[q]):
            lo, hi = pseq[q, p, 0], pseq[q, p, 1]
            nn = 0
            for i in range(nf):
                u = front[i]
                if fill_row(S, u) < 0:
                    return -1
                trans = S[S_TRANS]
                for b in range(lo, hi + 1):
                    x = trans[u, b]
                    if x < 0:
                        ok = False
                        break
                    j = 0
                    while j < nn and nxt[j] != x:
                        j += 1
                    if j == nn:
                        if nn == nxt.shape[0]:
                            ok = False  # more than 512 distinct successors: not invariant
                            break
                        nxt[nn] = x
                        nn += 1
                if not ok:
                    break
            if not ok:
                break
            front, nxt = nxt, front
            nf = nn
        if not ok or nf != 1 or front[0] != s:
            ok = False
            break
    inv[s] = 1 if ok else 0
    return inv[s]


@kernel
def plain_inv(S, s, pseq, plen):
    """Is state ``s`` unchanged by every plain string character? 1/0, or -1 on exit (memoized in
    the store's ``plain_inv`` column, read inline; :func:`_plain_inv`, a unit, computes it)."""
    S = borrow(S)
    pseq = borrow(pseq)
    plen = borrow(plen)
    v = S[S_INV][s]
    if v >= 0:
        return v
    return _plain_inv(S, s, pseq, plen)



@kernel
def fill_rows(S, states):
    """:func:`fill_row` for every state of ``states`` (one call for a whole BFS frontier)."""
    S = borrow(S)
    for i in range(states.shape[0]):
        if fill_row(S, states[i]) < 0:
            return -1
    return 0


@kernel
def _plain_complete(S, c, pseq, plen):
    """Does every plain string character lead term ``c`` to exactly ε? 1/0, -1 on exit.

    Walked over ``c``'s derivative classes (rows: a handful of small terms), one front of
    successor terms per byte range of each UTF-8 sequence (``pseq``/``plen``, as for
    :func:`plain_inv`): every byte of every range must have a successor, and the last front of
    every sequence must be ``{ε}``.
    """
    S = borrow(S)
    pseq = borrow(pseq)
    plen = borrow(plen)
    front = scratch(np.int32, 64, 0)
    nxt = scratch(np.int32, 64, 0)
    tm = S[S_TM]
    for q in range(pseq.shape[0]):
        front[0] = c
        nf = 1
        for p in range(plen[q]):
            lo, hi = pseq[q, p, 0], pseq[q, p, 1]
            # the range as four words
            rw0 = _U0
            rw1 = _U0
            rw2 = _U0
            rw3 = _U0
            for b in range(lo, hi + 1):
                bit = _U1 << np.uint64(b & 63)
                if b < 64:
                    rw0 |= bit
                elif b < 128:
                    rw1 |= bit
                elif b < 192:
                    rw2 |= bit
                else:
                    rw3 |= bit
            nn = 0
            for i in range(nf):
                u = front[i]
                if row(S, u) < 0:
                    return -1
                off = tm[u, M_ROW_OFF]
                rcw = S[S_RCW]
                rct = S[S_RCT]
                c0 = _U0
                c1 = _U0
                c2 = _U0
                c3 = _U0
                for j in range(off, off + tm[u, M_ROW_LEN]):
                    if (rcw[j, 0] & rw0) | (rcw[j, 1] & rw1) | (rcw[j, 2] & rw2) | (rcw[j, 3] & rw3):
                        c0 |= rcw[j, 0] & rw0
                        c1 |= rcw[j, 1] & rw1
                        c2 |= rcw[j, 2] & rw2
                        c3 |= rcw[j, 3] & rw3
                        x = rct[j]
                        k = 0
                        while k < nn and nxt[k] != x:
                            k += 1
                        if k == nn:
                            if nn == nxt.shape[0]:
                                return 0
                            nxt[nn] = x
                            nn += 1
                if c0 != rw0 or c1 != rw1 or c2 != rw2 or c3 != rw3:
                    return 0  # some byte of the range has no successor
            front, nxt = nxt, front
            nf = nn
        if nf != 1 or front[0] != EPS:
            return 0
    return 1


@kernel
def _plain_item(S, item, pseq, plen):
    """:func:`_plain_complete` of a repetition's ``item``, memoized per term; 1/0, -1 on exit."""
    S = borrow(S)
    pseq = borrow(pseq)
    plen = borrow(plen)
    v = _mget(S, _T_PLAINC | item)
    if v < 0:
        v = _plain_complete(S, item, pseq, plen)
        if v < 0:
            return -1
        if _mput(S, _T_PLAINC | item, v) < 0:
            return -1
    return v


@unit(_i64, STORE, _i64, _I32_3, _I32_1)
def plain_run(S, s, pseq, plen):
    """How many plain string characters state ``s`` takes in a row, each to the same successor
    whatever the character: ``k`` (``1 <= k``, :data:`RUN_INF` when unbounded), 0 when ``s`` is
    not such a state, -1 on exit.

    Recognised on the term: ``R{lo,hi} rest`` (or ``R{lo,hi}`` alone) where every plain
    character takes ``R`` to exactly ε and, when the repetition may be empty, no plain
    character starts ``rest`` (its first item is a byte set with no plain lead byte). Then a
    plain character takes the term to ``R{lo-1,hi-1} rest``, whatever the character, for ``hi``
    characters, and the next one to ∅: a plain token is allowed exactly when it has at most
    ``hi`` characters (a JSON string body under ``maxLength``/``minLength``, the generation
    bounds' 128 characters). A plain-invariant state is the unbounded case; this is the bounded
    one, without a state per count (:func:`plain_inv` would need one per character). A unit:
    the mask walk and Python both call it, once per fresh mask.
    """
    S = borrow(S)
    pseq = borrow(pseq)
    plen = borrow(plen)
    ti = S[S_TI]
    t = S[S_TERM_OF][s]
    k = ti[t, 0]
    if k == K_SEQ:
        a = ti[t, 1]
        rest = ti[t, 2]
    elif k == K_REP:
        a = t
        rest = EPS
    else:
        return 0
    if ti[a, 0] != K_REP:
        return 0
    if (S[S_TF][a] & F_NULL) != 0 and rest != EPS:
        first = ti[rest, 1] if ti[rest, 0] == K_SEQ else rest
        if ti[first, 0] != K_BYTES:
            return 0
        bw = S[S_BW]
        j = ti[first, 1]
        for q in range(pseq.shape[0]):  # the plain lead bytes
            for b in range(pseq[q, 0, 0], pseq[q, 0, 1] + 1):
                if (bw[j, b >> 6] >> np.uint64(b & 63)) & _U1:
                    return 0
    v = _plain_item(S, ti[a, 1], pseq, plen)
    if v <= 0:
        return v
    hi = ti[a, 3]
    if hi == INF or hi >= BAND:
        return RUN_INF
    return hi


@kernel
def run_len(S, s, pseq, plen):
    """:func:`plain_run` of state ``s``, memoized per term in the store's memo (the walk asks it
    of the states it meets below a trie node, where a unit call per node would cost more than
    the nodes it saves); ``k >= 0``, or -1 on exit."""
    S = borrow(S)
    pseq = borrow(pseq)
    plen = borrow(plen)
    key = _T_PRUN | S[S_TERM_OF][s]
    v = _mget(S, key)
    if v >= 0:
        return v
    k = plain_run(S, s, pseq, plen)
    if k < 0:
        return -1
    if _mput(S, key, k) < 0:
        return -1
    return k


@kernel
def _open_item(S, a, pseq, plen):
    """Is every string of plain characters a prefix of a word of term ``a``, by its shape?
    ``R{lo,}`` where every plain character takes ``R`` to exactly ε (a string body), or such a
    repetition less a finite language (``DIFF`` whose right side holds no repetition: an open
    object's key less its declared names). 1/0, -1 on exit."""
    S = borrow(S)
    pseq = borrow(pseq)
    plen = borrow(plen)
    ti = S[S_TI]
    if ti[a, 0] == K_DIFF:
        if (S[S_TF][ti[a, 2]] & F_REP) != 0:
            return 0
        a = ti[a, 1]
    if ti[a, 0] != K_REP or ti[a, 3] != INF:
        return 0
    return _plain_item(S, ti[a, 1], pseq, plen)


@kernel
def _branch_head(S, x):
    """The first item of branch ``x`` (``a rest`` or ``a``), or -1 when the rest holds an
    ``AND``/``DIFF`` (only a rest without them is surely non-empty)."""
    S = borrow(S)
    ti = S[S_TI]
    if ti[x, 0] != K_SEQ:
        return x
    return -1 if (S[S_TF][ti[x, 2]] & F_BOOL) != 0 else ti[x, 1]


@kernel
def plain_open(S, s, pseq, plen):
    """Does state ``s`` allow every plain token (every string of plain characters is a prefix of
    one of its words)? 1/0, or -1 on exit; memoized per term.

    A sufficient condition read off the term, for states that are not plain-invariant: its
    first item (or a branch of an alternation first in it) is an :func:`_open_item` followed by
    something surely non-empty. The key of an open object is one: ``(names' rest | key less the
    names) " : value ...`` changes with the characters read (the names'), so its plain part was
    walked trie node by node (~90 subtrees and ~2,500 nodes below UTF-8 lead bytes, 60-90 us a
    mask with every state known), though it allows every plain token. What follows the first
    item: the state's own rest (the state is live), or a branch's rest holding no ``AND``/``DIFF``
    (a term without them is empty only as ∅ itself: a reference to an unproductive rule
    compiles to ∅).

    A memo hit here; a miss :func:`_plain_open_miss`, an optional unit: 2 (not known, take the
    long way) until it is linked.
    """
    S = borrow(S)
    v = _mget(S, _T_POPEN | S[S_TERM_OF][s])
    if v >= 0:
        return v
    return _plain_open_miss(S, s, pseq, plen)


@unit(_i64, STORE, _i64, _I32_3, _I32_1, declined=2)
def _plain_open_miss(S, s, pseq, plen):
    """:func:`plain_open` computed and memoized; an optional unit."""
    S = borrow(S)
    pseq = borrow(pseq)
    plen = borrow(plen)
    t = S[S_TERM_OF][s]
    key = _T_POPEN | t
    ti = S[S_TI]
    h = ti[t, 1] if ti[t, 0] == K_SEQ else t
    if ti[h, 0] == K_ALT:
        pool = S[S_POOL]
        off = ti[h, 1]
        v = 0
        for i in range(ti[h, 2]):
            x = _branch_head(S, pool[off + i])
            if x < 0:
                continue
            if ti[x, 0] == K_REF:
                # a rule first in the branch (an open object's extra member after its key's
                # opening quote): its body's branches, one level, the body compiled first (it is
                # what the walk derives next)
                body = S[S_RULE][ti[x, 1]]
                if body < 0:
                    return _fail(S, NEED_RULE, ti[x, 1])
                one = ti[body, 0] != K_ALT
                for j in range(1 if one else ti[body, 2]):
                    y = _branch_head(S, body if one else pool[ti[body, 1] + j])
                    v = 0 if y < 0 else _open_item(S, y, pseq, plen)
                    if v != 0:
                        break
            else:
                v = _open_item(S, x, pseq, plen)
            if v != 0:
                break
    else:
        v = _open_item(S, h, pseq, plen)
    if v < 0:
        return -1
    if _mput(S, key, v) < 0:
        return -1
    return v


#: The longest run :func:`byte_run` describes (the mask walk keeps a position in a run in 6 bits).
RUN_BYTES_MAX = 62


@unit(_i64, STORE, _i64)
def _byte_run(S, t):
    """:func:`byte_run` of term ``t``, computed: its rest term + 1, 0, or -1 on exit."""
    S = borrow(S)
    ti = S[S_TI]
    if ti[t, 0] == K_SEQ:
        h = ti[t, 1]
        z = ti[t, 2]
    else:
        h = t
        z = EPS
    if ti[h, 0] == K_REP:
        a = h
        rest = z
    elif ti[h, 0] == K_ALT:
        # (R x1 | R x2 | ...) z, the branches' common first item R: R (x1 | x2 | ...) z
        pool = S[S_POOL]
        off, n = ti[h, 1], ti[h, 2]
        if n > 64:
            return 0
        buf = scratch(np.int32, 64, 0)
        a = -1
        for i in range(n):
            x = pool[off + i]
            if ti[x, 0] == K_SEQ:
                xa = ti[x, 1]
                buf[i] = ti[x, 2]
            else:
                xa = x
                buf[i] = EPS
            if i == 0:
                a = xa
            elif xa != a:
                return 0
        if ti[a, 0] != K_REP:
            return 0
        r = alt(S, buf, n)
        if r < 0:
            return -1
        rest = seq(S, r, z)
        if rest < 0:
            return -1
    else:
        return 0
    hi = ti[a, 3]
    item = ti[a, 1]
    if ti[a, 2] != 0 or hi == INF or hi < 1 or hi > RUN_BYTES_MAX or ti[item, 0] != K_BYTES:
        return 0
    e = _live_state(S, rest)
    if e == FAIL:
        return -1
    if e == DEAD:
        return 0
    v = _none_starts(S, e, S[S_BW][ti[item, 1]])
    if v <= 0:
        return v  # (-1 on exit; 0: the rest may start with a byte of the run)
    return rest + 1


@kernel
def _none_starts(S, e, words):
    """1 when live state ``e`` takes no byte of ``words`` to a live state, 0 when it takes some,
    -1 on exit."""
    S = borrow(S)
    for b in range(256):
        if _has(words, b):
            r = fill_entry(S, e, b)
            if r == FAIL:
                return -1
            if r != DEAD:
                return 0
    return 1


@kernel
def byte_run(S, s):
    """Is state ``s`` a *byte run*, ``C{0,hi} rest`` where ``C`` is one byte set and no byte of
    ``C`` starts ``rest``? Then the state after ``j`` bytes of ``C`` (``j <= hi``) takes every
    other byte to ``rest``'s successor, whatever ``j``, and a byte of ``C`` to the state after
    ``j + 1`` (∅ past ``hi``): the mask walk follows a run through the trie by its position
    alone, without a state per position (JSON's whitespace between tokens, ``[ \t]{0,20}``: ~20
    states a position, each a transition row and its flags, for tokens of blanks only).

    Recognised on the term: ``R rest`` or ``R`` (``R = C{0,hi}``, ``1 <= hi <=``
    :data:`RUN_BYTES_MAX`), or an alternation first in it whose branches all start with the same
    ``R`` (``(R x | R y) z``: the rest is ``(x | y) z``); ``rest`` live, its row on ``C`` dead.
    Returns ``rest``'s term + 1 (> 0), 0 when ``s`` is no such state, -1 on exit; memoized per
    term. ``rest``'s state exists once this answered (> 0)."""
    S = borrow(S)
    t = S[S_TERM_OF][s]
    ti = S[S_TI]
    h = ti[t, 1] if ti[t, 0] == K_SEQ else t
    if ti[h, 0] != K_REP and ti[h, 0] != K_ALT:
        return 0  # (most states: no memo entry)
    key = _T_BRUN | t
    v = _mget(S, key)
    if v >= 0:
        return v
    v = _byte_run(S, t)
    if v < 0:
        return -1
    if _mput(S, key, v) < 0:
        return -1
    return v


@kernel
def class_run(S, t):
    """Is term ``t`` a *counted class*, ``C{lo,hi} rest`` (or ``C{lo,hi}``) where ``C`` is one
    byte set, ``1 <= hi``, both counts below ``BAND`` (``hi`` may be ``INF``), ``rest`` live
    and no byte of ``C`` starting it? Then a text of ``p`` bytes of ``C`` followed by a byte
    ``b`` outside it leads, for every ``lo <= p <= hi``, to ``rest``'s successor on ``b``, and
    dies for any other ``p``: the mask of its state is read off the tries' tables of ``C``
    (:func:`dotjson.trie.class_tables`, :func:`dotjson._kernels.walk.class_mask`) without a
    state per byte of ``C``. Returns ``rest``'s term + 1 (> 0), 0 when ``t`` is no such term,
    -1 on exit; memoized per term. ``rest``'s state exists once this answered (> 0)."""
    S = borrow(S)
    ti = S[S_TI]
    h = ti[t, 1] if ti[t, 0] == K_SEQ else t
    if ti[h, 0] != K_REP:
        return 0  # (most terms: no memo entry)
    key = _T_CRUN | t
    v = _mget(S, key)
    if v >= 0:
        return v
    v = _class_run(S, t)
    if v < 0:
        return -1
    if _mput(S, key, v) < 0:
        return -1
    return v


@kernel
def _class_run(S, t):
    """:func:`class_run` of term ``t``, computed: its rest term + 1, 0, or -1 on exit."""
    S = borrow(S)
    ti = S[S_TI]
    if ti[t, 0] == K_SEQ:
        h = ti[t, 1]
        rest = ti[t, 2]
    else:
        h = t
        rest = EPS
    item = ti[h, 1]
    lo = ti[h, 2]
    hi = ti[h, 3]
    if ti[item, 0] != K_BYTES or lo >= BAND or (hi != INF and (hi < 1 or hi >= BAND or lo > hi)):
        return 0
    e = _live_state(S, rest)
    if e == FAIL:
        return -1
    if e == DEAD:
        return 0
    v = _none_starts(S, e, S[S_BW][ti[item, 1]])
    if v <= 0:
        return v  # (-1 on exit; 0: the rest may start with a byte of the class)
    return rest + 1


@kernel
def run_head(S, t):
    """The repetition ``R`` first in term ``t``, a byte run (:func:`byte_run` answered > 0)."""
    S = borrow(S)
    ti = S[S_TI]
    h = ti[t, 1] if ti[t, 0] == K_SEQ else t
    if ti[h, 0] == K_ALT:
        x = S[S_POOL][ti[h, 1]]
        h = ti[x, 1] if ti[x, 0] == K_SEQ else x
    return h


@unit(_i64, PACKED, _i64, _U8_1, _I64_1, early=2, python=True)
def walk_terms_packed(P, t, data, ret):
    """:func:`walk_terms` from Python with the store packed (:func:`~dotjson.automaton.store.pack`):
    a document's token steps call it, through a unit's entry rather than the dispatcher."""
    return walk_terms(unpack_store(P), t, data, ret)


@unit(_i64, PACKED, _i64, _U8_1, _I64_1, early=2, python=True)
def walk_bytes_packed(P, s, data, ret):
    """:func:`walk_bytes` with the store packed."""
    return walk_bytes(unpack_store(P), s, data, ret)
