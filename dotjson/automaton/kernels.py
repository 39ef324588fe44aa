"""Numba kernels over the term store: interning, derivatives, rows, emptiness, clamping, states.

The store is a tuple of flat arrays (see :mod:`dotjson.automaton.store` for the layout), passed
whole to every kernel. Every kernel is iterative with explicit stacks (a chain of 10,000 rules
costs a deeper stack array, never a deeper native stack), releases the GIL, and never raises:
a function that cannot finish returns ``FAIL`` (``-1``) after writing the reason into
``ctl[C_STATUS]`` and its argument into ``ctl[C_ARG]``:

* ``NEED_GROW_*``: an array is full; Python grows it (×2) and calls again;
* ``NEED_RULE``: a rule body (``ctl[C_ARG]``) is not compiled yet; Python compiles it, calls again;
* ``NEED_KEY_ALIVE`` / ``NEED_KEY_TAIL``: whether member ``ctl[C_ARG2]`` of the key set at pool
  offset ``ctl[C_ARG]`` can complete, or the term of what follows its name, is not known yet
  (``ctl[C_ARG3:C_ARG4 + 1]``: the members the asking state offers); Python answers (it builds
  the member's rule), calls again;
* ``LIMIT_STATES`` / ``LIMIT_FUEL``: a budget is spent; Python raises ``LimitExceededError``.

Interning is idempotent and memo entries are written only once complete, so a call restarted
from scratch after an exit redoes nothing it had finished and builds the same terms.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .._kernels.jit import kernel, unit
from .._kernels.group import group_by

try:  # LLVM's cttz; a loop where this private helper is missing
    from numba.cpython.unsafe.numbers import trailing_zeros as _ctz
except ImportError:  # pragma: no cover
    @kernel
    def _ctz(x):
        n = 0
        while (x & np.uint64(1)) == 0:
            x >>= np.uint64(1)
            n += 1
        return n

# Term kinds.
K_EMPTY, K_EPS, K_BYTES, K_SEQ, K_ALT, K_REP, K_REF, K_AND, K_DIFF, K_KEYS = range(10)
EMPTY = 0
EPS = 1
INF = -1  # no upper bound in a REP term

# Term flags.
F_NULL = 1
F_BOOL = 2  # holds AND/DIFF
F_REP = 4  # holds REP

# Per-term memo columns (``tm``).
M_ROW_OFF, M_ROW_LEN, M_EMPTY, M_INF, M_STATE = range(5)
N_TM = 5

# Store tuple slots.
S_TI, S_TF, S_TM, S_BW, S_POOL, S_HT, S_MK, S_MV, S_RCW, S_RCT, S_RULE, S_TERM_OF, S_TRANS, \
    S_ACC, S_INV, S_READY, S_CTL = range(17)

_I32_1, _I32_2 = types.Array(types.int32, 1, "C"), types.Array(types.int32, 2, "C")
_U64_2, _I64_1 = types.Array(types.uint64, 2, "C"), types.Array(types.int64, 1, "C")
_I32_3 = types.Array(types.int32, 3, "C")
#: The Numba type of the store tuple (the slots above), in the signatures of the units.
STORE = types.Tuple((
    _I32_2, types.Array(types.uint8, 1, "C"), _I32_2, _U64_2, _I32_1, _I32_1,
    types.Array(types.int64, 1, "C"), _I32_1, _U64_2, _I32_1, _I32_1, _I32_1, _I32_2,
    types.Array(types.boolean, 1, "C"), types.Array(types.int8, 1, "C"),
    types.Array(types.boolean, 1, "C"), types.Array(types.int64, 1, "C"),
))
_i64 = types.int64

# ctl slots.
C_TERMS, C_BSETS, C_POOL, C_RC, C_STATES, C_MEMO, C_STATUS, C_ARG, C_MAX_STATES, C_FUEL, \
    C_EXPANDED, C_ARG2, C_ARG3, C_ARG4 = range(14)
N_CTL = 16

# Exit statuses.
FAIL = -1
OK = 0
NEED_GROW_TERMS = 1
NEED_GROW_BSETS = 2
NEED_GROW_POOL = 3
NEED_GROW_RC = 4
NEED_GROW_STATES = 5
NEED_GROW_MEMO = 6
NEED_RULE = 7
LIMIT_STATES = 8
LIMIT_FUEL = 9
NEED_KEY_ALIVE = 10
NEED_KEY_TAIL = 11

UNKNOWN = -1
DEAD = -2

#: Counts at or above this are markers or lane values (:mod:`.counters`); real counts stay below.
BAND = 1 << 29
#: :func:`plain_run` of a state whose plain run has no end (or is past every token's length).
RUN_INF = 1 << 30

# Memo key tags (bits 58..62 of an int64 key; term ids stay below 2**29).
TERM_ID_BITS = 29
_T_DERIV = 1 << 58
_T_SEQ = 2 << 58
_T_CLAMP = 3 << 58
_T_RADIUS = 4 << 58
_T_FARHI = 5 << 58
_T_KCTX = 6 << 58
_T_PLAINC = 7 << 58
#: :func:`_far_hi` of a term whose counters a clamp leaves alone.
NO_FAR = (1 << 31) - 1

#: Terms of a derivative closure explored by :func:`radius` before it answers "unknown".
RADIUS_FUEL = 512
#: :func:`radius` of a term whose closure is larger than :data:`RADIUS_FUEL` terms.
R_UNKNOWN = 1 << 30

_U1 = np.uint64(1)
_U0 = np.uint64(0)

@intrinsic
def borrow(typingctx, S):
    """The store tuple as views without reference counts.

    Every array a kernel takes out of the tuple, or passes to a helper, costs an atomic
    increment and decrement of its reference count; over 17 arrays that was most of the time of
    an expansion. The views are the same arrays with no memory owner (a null ``meminfo`` and
    ``parent``), so those operations become a test of a null pointer. The caller keeps ``S``
    (and so the memory) alive for the call. An intrinsic: a few register moves where it is
    called, no compile of its own (as a kernel of 17 ``carray`` views it was 8 compiles and
    ~210 kB of IR linked into every kernel that borrows).
    """
    if not isinstance(S, types.BaseTuple) or not all(isinstance(t, types.Array) for t in S.types):
        return None
    sig = S(S)

    def codegen(context, builder, signature, args):
        tup = args[0]
        for i, aty in enumerate(signature.args[0].types):
            ary = context.make_array(aty)(context, builder, builder.extract_value(tup, i))
            ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
            ary.parent = cgutils.get_null_value(ary.parent.type)
            tup = builder.insert_value(tup, ary._getvalue(), i)
        return tup

    return sig, codegen


# No kernel is inlined by Numba (``inline="always"``): that copies the callee's IR into every
# call site before type inference, at a compile-time cost on every first run. The kernels take
# the store as borrowed views (no reference counts to move at a call), and LLVM inlines the small
# helpers itself when it links a kernel's callees. Measured with perf/profile_fresh_masks.py on
# 12 MaskBench schemas (2,288 fresh masks): 257-278 us per fresh mask without Numba inlining,
# 273-292 us with it, same runs, alternated.


# ----------------------------------------------------------------------------- small helpers


@kernel
def _fail(S, status, arg):
    ctl = S[S_CTL]
    ctl[C_STATUS] = status
    ctl[C_ARG] = arg
    return -1


@kernel
def _low(x):
    """Index of the lowest set bit of a non-zero ``uint64``."""
    return np.int64(_ctz(x))


@unit(_I32_1, _I32_1, _i64)
def _grow_i32(a, n):
    if n < a.shape[0]:
        return a
    b = np.empty(max(2 * a.shape[0], n + 1, 16), dtype=np.int32)
    for i in range(a.shape[0]):  # (a loop: a slice assignment compiles shape-error code)
        b[i] = a[i]
    return b


@kernel
def _mix(h, x):
    # in uint64, where a product wraps: Numba's signed products are `mul nsw`, whose overflow
    # LLVM may assume never happens, so the same hash inlined into two kernels could differ
    # (a term interned off the slot its lookup probes, made again on every lookup)
    u = (np.uint64(h) ^ np.uint64(x)) * np.uint64(0x100000001B3)
    return np.int64(u ^ (u >> np.uint64(29)))


@kernel
def _mslot(key):
    """The memo table's hash of a key: a full 64-bit finalizer (MurmurHash3's ``fmix64``).
    Memo keys hold a term id shifted left past a small field (``t << 8 | byte``,
    ``t << 16 | limit``), so their low bits are often equal: one multiply moves bits only
    upwards, and the single multiply-xorshift used before sent 4,096 consecutive terms' keys to
    64 slots of 8,192 (derivative keys) or 218 (clamp keys): linear probing then walked long
    runs (tests/test_memo_table.py)."""
    u = np.uint64(key)
    u ^= u >> np.uint64(33)
    u *= np.uint64(0xFF51AFD7ED558CCD)
    u ^= u >> np.uint64(33)
    u *= np.uint64(0xC4CEB9FE1A85EC53)
    u ^= u >> np.uint64(33)
    return np.int64(u >> np.uint64(1))


@kernel
def _hash_simple(kind, a, b, c):
    h = 0x5BD1E995 + kind
    h = _mix(h, a)
    h = _mix(h, b)
    h = _mix(h, c)
    return h


@kernel
def _hash_words(w0, w1, w2, w3):
    h = 0x5BD1E995 + K_BYTES
    h = _mix(h, np.int64(w0))
    h = _mix(h, np.int64(w1))
    h = _mix(h, np.int64(w2))
    h = _mix(h, np.int64(w3))
    return h


@kernel
def _hash_list(kind, buf, n):
    h = 0x5BD1E995 + kind
    for i in range(n):
        h = _mix(h, buf[i])
    return _mix(h, n)


@kernel
def term_hash(ti, bw, pool, t):
    """The interning hash of stored term ``t`` (the one its constructor probed with)."""
    k = ti[t, 0]
    if k == K_BYTES:
        i = ti[t, 1]
        return _hash_words(bw[i, 0], bw[i, 1], bw[i, 2], bw[i, 3])
    if k == K_ALT or k == K_AND:
        off = ti[t, 1]
        return _hash_list(k, pool[off : off + ti[t, 2]], ti[t, 2])
    return _hash_simple(k, ti[t, 1], ti[t, 2], ti[t, 3])


@kernel
def rehash_terms(ti, bw, pool, n, ht):
    """Insert terms ``0..n-1`` into the empty table ``ht``; returns the number of duplicates
    (0 for a store built by the constructors)."""
    mask = ht.shape[0] - 1
    dup = 0
    for t in range(n):
        i = term_hash(ti, bw, pool, t) & mask
        while ht[i] >= 0:
            u = ht[i]
            if _same(ti, bw, pool, t, u):
                dup += 1
                break
            i = (i + 1) & mask
        ht[i] = t
    return dup


@kernel
def _same(ti, bw, pool, t, u):
    k = ti[t, 0]
    if ti[u, 0] != k:
        return False
    if k == K_BYTES:
        i, j = ti[t, 1], ti[u, 1]
        return bw[i, 0] == bw[j, 0] and bw[i, 1] == bw[j, 1] and bw[i, 2] == bw[j, 2] \
            and bw[i, 3] == bw[j, 3]
    if k == K_ALT or k == K_AND:
        n = ti[t, 2]
        if ti[u, 2] != n:
            return False
        for x in range(n):
            if pool[ti[t, 1] + x] != pool[ti[u, 1] + x]:
                return False
        return True
    return ti[t, 1] == ti[u, 1] and ti[t, 2] == ti[u, 2] and ti[t, 3] == ti[u, 3]


@kernel
def rehash_memo(keys, vals, nkeys, nvals):
    """Insert the live entries of one memo table into an empty larger one."""
    mask = nkeys.shape[0] - 1
    for j in range(keys.shape[0]):
        k = keys[j]
        if k < 0:
            continue
        i = _mslot(k) & mask
        while nkeys[i] >= 0:
            i = (i + 1) & mask
        nkeys[i] = k
        nvals[i] = vals[j]


@kernel
def _mget(S, key):
    keys = S[S_MK]
    mask = keys.shape[0] - 1
    i = _mslot(key) & mask
    while True:
        k = keys[i]
        if k == key:
            return S[S_MV][i]
        if k < 0:
            return -1
        i = (i + 1) & mask


@kernel
def _mput(S, key, val):
    keys = S[S_MK]
    ctl = S[S_CTL]
    if 2 * (ctl[C_MEMO] + 1) > keys.shape[0]:
        return _fail(S, NEED_GROW_MEMO, 0)
    mask = keys.shape[0] - 1
    i = _mslot(key) & mask
    while True:
        k = keys[i]
        if k == key:
            S[S_MV][i] = val
            return 0
        if k < 0:
            break
        i = (i + 1) & mask
    S[S_MV][i] = val
    keys[i] = key
    ctl[C_MEMO] += 1
    return 0


# ----------------------------------------------------------------------------- constructors


@kernel
def _new_term(S, slot, kind, a, b, c, flags):
    ti = S[S_TI]
    ctl = S[S_CTL]
    n = ctl[C_TERMS]
    ti[n, 0] = kind
    ti[n, 1] = a
    ti[n, 2] = b
    ti[n, 3] = c
    S[S_TF][n] = flags
    tm = S[S_TM]
    tm[n, M_ROW_OFF] = -1
    tm[n, M_ROW_LEN] = 0
    tm[n, M_EMPTY] = -1
    tm[n, M_INF] = -1
    tm[n, M_STATE] = -1
    S[S_HT][slot] = n
    ctl[C_TERMS] = n + 1
    return n


@kernel
def _room(S):
    ctl = S[S_CTL]
    n = ctl[C_TERMS]
    return n < S[S_TI].shape[0] and 2 * (n + 1) <= S[S_HT].shape[0] and n < (1 << TERM_ID_BITS)


@kernel
def mk_simple(S, kind, a, b, c, flags):
    """Intern a SEQ/REP/REF/DIFF (or ∅/ε) node."""
    ti = S[S_TI]
    ht = S[S_HT]
    mask = ht.shape[0] - 1
    i = _hash_simple(kind, a, b, c) & mask
    while True:
        t = ht[i]
        if t < 0:
            break
        if ti[t, 0] == kind and ti[t, 1] == a and ti[t, 2] == b and ti[t, 3] == c:
            return t
        i = (i + 1) & mask
    if not _room(S):
        return _fail(S, NEED_GROW_TERMS, 0)
    return _new_term(S, i, kind, a, b, c, flags)


@kernel
def mk_bytes(S, w0, w1, w2, w3):
    """Intern the byte set with words ``w0..w3`` (∅ for no byte)."""
    if w0 == _U0 and w1 == _U0 and w2 == _U0 and w3 == _U0:
        return EMPTY
    ti = S[S_TI]
    bw = S[S_BW]
    ht = S[S_HT]
    mask = ht.shape[0] - 1
    i = _hash_words(w0, w1, w2, w3) & mask
    while True:
        t = ht[i]
        if t < 0:
            break
        if ti[t, 0] == K_BYTES:
            j = ti[t, 1]
            if bw[j, 0] == w0 and bw[j, 1] == w1 and bw[j, 2] == w2 and bw[j, 3] == w3:
                return t
        i = (i + 1) & mask
    if not _room(S):
        return _fail(S, NEED_GROW_TERMS, 0)
    ctl = S[S_CTL]
    nb_ = ctl[C_BSETS]
    if nb_ >= bw.shape[0]:
        return _fail(S, NEED_GROW_BSETS, 0)
    bw[nb_, 0] = w0
    bw[nb_, 1] = w1
    bw[nb_, 2] = w2
    bw[nb_, 3] = w3
    ctl[C_BSETS] = nb_ + 1
    return _new_term(S, i, K_BYTES, nb_, 0, 0, 0)


@kernel
def _mk_list(S, kind, buf, n, flags):
    """Intern an ALT/AND node over the sorted distinct ids ``buf[:n]``."""
    ti = S[S_TI]
    pool = S[S_POOL]
    ht = S[S_HT]
    mask = ht.shape[0] - 1
    i = _hash_list(kind, buf, n) & mask
    while True:
        t = ht[i]
        if t < 0:
            break
        if ti[t, 0] == kind and ti[t, 2] == n:
            off = ti[t, 1]
            same = True
            for x in range(n):
                if pool[off + x] != buf[x]:
                    same = False
                    break
            if same:
                return t
        i = (i + 1) & mask
    if not _room(S):
        return _fail(S, NEED_GROW_TERMS, 0)
    ctl = S[S_CTL]
    off = ctl[C_POOL]
    if off + n > pool.shape[0]:
        return _fail(S, NEED_GROW_POOL, n)
    for x in range(n):
        pool[off + x] = buf[x]
    ctl[C_POOL] = off + n
    return _new_term(S, i, kind, off, n, 0, flags)


@kernel
def _cons(S, a, b):
    tf = S[S_TF]
    fa, fb = tf[a], tf[b]
    flags = ((fa & fb) & F_NULL) | ((fa | fb) & (F_BOOL | F_REP))
    return mk_simple(S, K_SEQ, a, b, 0, flags)


@kernel
def seq(S, a, b):
    """Concatenation, kept right-nested (the items of a chain are never sequences)."""
    if a == EMPTY or b == EMPTY:
        return EMPTY
    if a == EPS:
        return b
    if b == EPS:
        return a
    ti = S[S_TI]
    if ti[a, 0] != K_SEQ:
        return _cons(S, a, b)
    key = _T_SEQ | (np.int64(a) << TERM_ID_BITS) | b
    r = _mget(S, key)
    if r >= 0:
        return r
    n = 0
    cur = a
    while ti[cur, 0] == K_SEQ:
        n += 1
        cur = ti[cur, 2]
    items = np.empty(n + 1, dtype=np.int32)
    cur = a
    j = 0
    while ti[cur, 0] == K_SEQ:
        items[j] = ti[cur, 1]
        j += 1
        cur = ti[cur, 2]
    items[j] = cur
    r = b
    for x in range(n, -1, -1):
        r = _cons(S, items[x], r)
        if r < 0:
            return -1
    if _mput(S, key, r) < 0:
        return -1
    return r


@kernel
def seq_list(S, buf, n):
    """Concatenation of ``buf[:n]``."""
    r = EPS
    for x in range(n - 1, -1, -1):
        r = seq(S, buf[x], r)
        if r < 0:
            return -1
    return r


@kernel
def _flatten(S, kind, buf, n):
    """Sorted distinct ids of ``buf[:n]`` with nested ``kind`` nodes spliced in; ∅ dropped."""
    ti = S[S_TI]
    pool = S[S_POOL]
    tot = 0
    for x in range(n):
        t = buf[x]
        if ti[t, 0] == kind:
            tot += ti[t, 2]
        else:
            tot += 1
    out = np.empty(tot, dtype=np.int32)
    m = 0
    for x in range(n):
        t = buf[x]
        if t == EMPTY:
            continue
        if ti[t, 0] == kind:
            off = ti[t, 1]
            for y in range(ti[t, 2]):
                out[m] = pool[off + y]
                m += 1
        else:
            out[m] = t
            m += 1
    if m > 32:
        out = np.sort(out[:m])
    else:
        for x in range(1, m):  # insertion sort: no allocation for the usual short lists
            v = out[x]
            y = x - 1
            while y >= 0 and out[y] > v:
                out[y + 1] = out[y]
                y -= 1
            out[y + 1] = v
    k = 0
    for x in range(m):
        if k == 0 or out[x] != out[k - 1]:
            out[k] = out[x]
            k += 1
    return out[:k]


@kernel
def alt(S, buf, n):
    """Alternation of ``buf[:n]`` (flattened, deduplicated, single-byte sets merged)."""
    flat = _flatten(S, K_ALT, buf, n)
    m = flat.shape[0]
    if m == 0:
        return EMPTY
    if m == 1:
        return flat[0]
    ti = S[S_TI]
    tf = S[S_TF]
    nbytes = 0
    for x in range(m):
        if ti[flat[x], 0] == K_BYTES:
            nbytes += 1
    if nbytes > 1:
        bw = S[S_BW]
        w0 = w1 = w2 = w3 = _U0
        k = 0
        for x in range(m):
            t = flat[x]
            if ti[t, 0] == K_BYTES:
                j = ti[t, 1]
                w0 |= bw[j, 0]
                w1 |= bw[j, 1]
                w2 |= bw[j, 2]
                w3 |= bw[j, 3]
            else:
                flat[k] = t
                k += 1
        bt = mk_bytes(S, w0, w1, w2, w3)
        if bt < 0:
            return -1
        if k == 0:
            return bt
        # insert the merged byte set at its sorted place
        y = k - 1
        while y >= 0 and flat[y] > bt:
            flat[y + 1] = flat[y]
            y -= 1
        flat[y + 1] = bt
        m = k + 1
    flags = 0
    for x in range(m):
        flags |= tf[flat[x]]
    return _mk_list(S, K_ALT, flat, m, flags)


@kernel
def and_(S, buf, n):
    """Intersection of ``buf[:n]``."""
    for x in range(n):
        if buf[x] == EMPTY:
            return EMPTY
    flat = _flatten(S, K_AND, buf, n)
    m = flat.shape[0]
    if m == 1:
        return flat[0]
    tf = S[S_TF]
    alln = True
    reps = 0
    for x in range(m):
        if (tf[flat[x]] & F_NULL) == 0:
            alln = False
        reps |= tf[flat[x]] & F_REP
    if flat[0] == EPS:  # sorted: ε (id 1) comes first after ∅ (absent)
        return EPS if alln else EMPTY
    # F_REP: an operand holds a counter (clamp looks inside; see _clamp_and)
    flags = F_BOOL | reps | (F_NULL if alln else 0)
    return _mk_list(S, K_AND, flat, m, flags)


@kernel
def and2(S, a, b):
    buf = np.empty(2, dtype=np.int32)
    buf[0] = a
    buf[1] = b
    return and_(S, buf, 2)


@kernel
def rep(S, item, lo, hi):
    """``item{lo,hi}``; ``hi == INF`` for no upper bound."""
    if hi != INF and hi < lo:
        return EMPTY
    if item == EMPTY:
        return EPS if lo == 0 else EMPTY
    if item == EPS or hi == 0:
        return EPS
    fi = S[S_TF][item]
    if (fi & F_NULL) != 0:
        lo = 0
    if lo == 1 and hi == 1:
        return item
    flags = F_REP | (fi & F_BOOL) | (F_NULL if (lo == 0 or (fi & F_NULL) != 0) else 0)
    return mk_simple(S, K_REP, item, lo, hi, flags)


@kernel
def diff(S, a, b):
    if a == EMPTY:
        return EMPTY
    if b == EMPTY:
        return a
    if a == b:
        return EMPTY
    tf = S[S_TF]
    if b == EPS and (tf[a] & F_NULL) == 0:
        return a
    nul = (tf[a] & F_NULL) != 0 and (tf[b] & F_NULL) == 0
    return mk_simple(S, K_DIFF, a, b, 0, F_BOOL | (F_NULL if nul else 0))


@kernel
def ref(S, rule, nullable):
    return mk_simple(S, K_REF, rule, 0, 0, F_NULL if nullable else 0)


# ----------------------------------------------------------------------------- key sets
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
# whether it may be written raw (``KT_RAW``); the arrays of the names may be shared by several
# tables over the same names (an object in any order: a table per set of members seen). A
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
    KT_SHORT = range(12)
N_KT = 12
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
def _k_any(S, T, C, q1, q2):
    """1 when a name of sorted ``[q1, q2)`` is offered by context ``C`` and can complete, 0 when
    none, -1 on exit (whether an offered member can complete is not known yet)."""
    pool = S[S_POOL]
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
            return _k_ask_alive(S, T, m, mlo, mhi)  # the others offered: worth answering for too
    return 0


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
    pool, C, s, d, T, st, bl, e = _k_open(S, t)
    parts = np.empty(16, dtype=np.int32)
    n = 0
    q = s
    while q < e:
        i, ln, q2 = _k_char(pool, T, st, bl, q, d)
        if i >= 0:
            head = EMPTY
            if b == 117:
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
    """The derivative classes of escape-mode key set term ``t``: ``u`` and the short escape
    bytes of its characters. Their number, or -1 on exit."""
    pool, C, s, d, T, st, bl, e = _k_open(S, t)
    seen = np.zeros(256, dtype=np.bool_)
    seen[117] = True
    cand = np.empty(257, dtype=np.int32)
    cand[0] = 117
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
def _k_ask_alive(S, T, m, lo, hi):
    """Exit: whether member ``m`` of table ``T`` can complete (``lo .. hi - 1``: the members
    the asking state offers)."""
    ctl = S[S_CTL]
    ctl[C_ARG2] = m
    ctl[C_ARG3] = lo
    ctl[C_ARG4] = hi
    return _fail(S, NEED_KEY_ALIVE, T)


@kernel
def _k_end(S, t):
    """The tail of the name of end-mode key set term ``t`` (``K_KEYS(full, p, KD_END)``);
    -1 on exit (Python makes it)."""
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
    if S[S_TI][t, 3] >= KD_ESC:  # (never KD_END: deriv takes those)
        return _k_esc_deriv(S, t, b)
    pool, C, p, d, T, st, bl, e = _k_open(S, t)
    s = p
    if _klen(pool, st, p) == d:  # name p ends here (it sorts first)
        s = p + 1
        if b == 34:  # its closing quote: what follows member m's name
            m = pool[pool[T + KT_MEMBER] + p]
            if m < pool[C + 1] or m >= pool[C + 2]:
                return EMPTY
            a = pool[pool[T + KT_ALIVE] + m]
            if a < 0:
                return _k_ask_alive(S, T, m, m, m + 1)
            if a == 0:
                return EMPTY
            r = pool[pool[T + KT_TAIL] + m]
            if r < 0:  # not made yet: made when a byte after the quote is asked for
                return mk_simple(S, K_KEYS, pool[T + KT_FULL], p, KD_END, 0)
            return r
    if s >= e or b < 32 or b == 34:
        return EMPTY
    boundary = (pool[bl + pool[st + s] + d] & 0xC0) != 0x80
    if b == 92:
        return _k_backslash(S, T, C, s, e, d) if boundary else EMPTY
    q1 = _k_bound(pool, st, bl, s, e, d, b, False)
    q2 = _k_bound(pool, st, bl, q1, e, d, b, True)
    if q1 == q2:
        return EMPTY
    if boundary:
        # a character starts here: written raw only where JSON allows it raw
        cp, ln = _k_decode(pool, st, bl, q1, d)
        i = _k_cp(pool, T, cp)
        if i < 0 or pool[pool[T + KT_RAW] + i] == 0:
            return EMPTY
    return _k_term(S, pool, T, C, q1, q2, d + 1)


@unit(_i64, STORE, _i64, _U64_2, _I32_1)
def _k_row(S, t, cw, ct):
    """The derivative classes of key set term ``t`` (one byte each) into ``cw``/``ct``; their
    number, or -1 on exit."""
    if S[S_TI][t, 3] >= KD_ESC:  # (never KD_END: row takes those)
        return _k_esc_row(S, t, cw, ct)
    pool, C, p, d, T, st, bl, e = _k_open(S, t)
    # the bytes with a derivative to compute: the closing quote where name p ends, a backslash
    # where a character starts, each distinct raw byte the names have at depth d
    cand = np.empty(258, dtype=np.int32)
    k = 0
    s = p
    if _klen(pool, st, p) == d:
        s = p + 1
        cand[k] = 34
        k += 1
    if s < e:
        if (pool[bl + pool[st + s] + d] & 0xC0) != 0x80:
            cand[k] = 92
            k += 1
        q = s
        while q < e:
            b = pool[bl + pool[st + q] + d]
            if b >= 32 and b != 34 and b != 92:
                cand[k] = b
                k += 1
            q = _k_bound(pool, st, bl, q, e, d, b, True)
    return _k_classes(S, t, cand, k, cw, ct)


@kernel
def _k_classes(S, t, cand, k, cw, ct):
    """The derivatives of key set term ``t`` (either mode) by the bytes ``cand[:k]``, the
    non-empty ones as one-byte classes into ``cw``/``ct``; their number, or -1 on exit."""
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


# Builder program opcodes (see ``build``).
OP_EMPTY, OP_EPS, OP_TERM, OP_BYTES, OP_SEQ, OP_ALT, OP_AND, OP_DIFF, OP_REP, OP_REF, OP_SAVE, \
    OP_LOAD = range(12)


@unit(_i64, STORE, _I64_1, _U64_2, _I32_1)
def build(S, prog, words, slots):
    """Run a postfix builder program (one compiled rule body) and return its term.

    Opcodes: ``EMPTY``, ``EPS``, ``TERM t``, ``BYTES i`` (``words[i]``), ``SEQ n``, ``ALT n``,
    ``AND n`` (pop ``n`` values), ``DIFF``, ``REP lo hi``, ``REF rule nullable``, ``SAVE k``
    (``slots[k] =`` top), ``LOAD k``.
    """
    S = borrow(S)
    st = np.empty(64, dtype=np.int32)
    sp = 0
    pc = 0
    while pc < prog.shape[0]:
        op = prog[pc]
        r = 0
        if op == OP_SAVE:
            slots[prog[pc + 1]] = st[sp - 1]
            pc += 2
            continue
        if op == OP_EMPTY:
            r = EMPTY
            pc += 1
        elif op == OP_EPS:
            r = EPS
            pc += 1
        elif op == OP_TERM:
            r = prog[pc + 1]
            pc += 2
        elif op == OP_LOAD:
            r = slots[prog[pc + 1]]
            pc += 2
        elif op == OP_BYTES:
            i = prog[pc + 1]
            r = mk_bytes(S, words[i, 0], words[i, 1], words[i, 2], words[i, 3])
            pc += 2
        elif op == OP_SEQ or op == OP_ALT or op == OP_AND:
            n = prog[pc + 1]
            sp -= n
            if op == OP_SEQ:
                r = seq_list(S, st[sp:], n)
            elif op == OP_ALT:
                r = alt(S, st[sp:], n)
            else:
                r = and_(S, st[sp:], n)
            pc += 2
        elif op == OP_DIFF:
            sp -= 2
            r = diff(S, st[sp], st[sp + 1])
            pc += 1
        elif op == OP_REP:
            sp -= 1
            r = rep(S, st[sp], prog[pc + 1], prog[pc + 2])
            pc += 3
        elif op == OP_REF:
            r = ref(S, prog[pc + 1], prog[pc + 2] != 0)
            pc += 3
        if r < 0:
            return -1
        st = _grow_i32(st, sp)
        st[sp] = r
        sp += 1
    return st[0]


# ----------------------------------------------------------------------------- derivatives


@kernel
def _has(words_row, byte):
    return (words_row[byte >> 6] >> np.uint64(byte & 63)) & _U1


@kernel
def _dget(S, t, byte):
    """The memoized derivative of ``t`` by ``byte``, or -1 if not known yet."""
    ti = S[S_TI]
    k = ti[t, 0]
    if k == K_EMPTY or k == K_EPS:
        return EMPTY
    if k == K_BYTES:
        return EPS if _has(S[S_BW][ti[t, 1]], byte) else EMPTY
    tm = S[S_TM]
    off = tm[t, M_ROW_OFF]
    if off >= 0:
        rcw = S[S_RCW]
        for i in range(off, off + tm[t, M_ROW_LEN]):
            if _has(rcw[i], byte):
                return S[S_RCT][i]
        return EMPTY
    return _mget(S, _T_DERIV | (np.int64(t) << 8) | byte)


@unit(_i64, STORE, _i64, _i64)
def _deriv(S, t0, byte):
    """The derivative of ``t0`` by one byte (memoized; ∅ when it cannot consume it)."""
    S = borrow(S)
    r = _dget(S, t0, byte)
    if r >= 0:
        return r
    ti = S[S_TI]
    tf = S[S_TF]
    pool = S[S_POOL]
    rules = S[S_RULE]
    blk = np.empty(80, dtype=np.int32)
    st = blk[:64]
    parts = blk[64:]
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if _dget(S, t, byte) >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        # push what is missing
        if k == K_SEQ:
            cur = t
            while True:
                if ti[cur, 0] != K_SEQ:
                    if _dget(S, cur, byte) < 0:
                        st = _grow_i32(st, sp)
                        st[sp] = cur
                        sp += 1
                    break
                a = ti[cur, 1]
                if _dget(S, a, byte) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = a
                    sp += 1
                if (tf[a] & F_NULL) == 0:
                    break
                cur = ti[cur, 2]
                if _dget(S, cur, byte) >= 0:
                    break
        elif k == K_ALT or k == K_AND:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                c = pool[off + x]
                if _dget(S, c, byte) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_REP:
            if _dget(S, ti[t, 1], byte) < 0:
                st = _grow_i32(st, sp)
                st[sp] = ti[t, 1]
                sp += 1
        elif k == K_REF:
            body = rules[ti[t, 1]]
            if body < 0:
                return _fail(S, NEED_RULE, ti[t, 1])
            if _dget(S, body, byte) < 0:
                st = _grow_i32(st, sp)
                st[sp] = body
                sp += 1
        elif k == K_DIFF:
            for c in (ti[t, 1], ti[t, 2]):
                if _dget(S, c, byte) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_KEYS and ti[t, 3] >= KD_END:
            body = _k_end(S, t)
            if body < 0:
                return -1
            if _dget(S, body, byte) < 0:
                st = _grow_i32(st, sp)
                st[sp] = body
                sp += 1
        if sp > top:
            continue
        # every dependency is known: compute
        if k == K_SEQ:
            n = 0
            cur = t
            while True:
                if ti[cur, 0] != K_SEQ:
                    parts = _grow_i32(parts, n)
                    parts[n] = _dget(S, cur, byte)
                    n += 1
                    break
                a, b = ti[cur, 1], ti[cur, 2]
                d = seq(S, _dget(S, a, byte), b)
                if d < 0:
                    return -1
                parts = _grow_i32(parts, n)
                parts[n] = d
                n += 1
                if (tf[a] & F_NULL) == 0:
                    break
                cur = b
                known = _dget(S, cur, byte)
                if known >= 0:
                    parts = _grow_i32(parts, n)
                    parts[n] = known
                    n += 1
                    break
            r = parts[0] if n == 1 else alt(S, parts, n)
        elif k == K_ALT or k == K_AND:
            n = ti[t, 2]
            off = ti[t, 1]
            parts = _grow_i32(parts, n)
            for x in range(n):
                parts[x] = _dget(S, pool[off + x], byte)
            r = alt(S, parts, n) if k == K_ALT else and_(S, parts, n)
        elif k == K_REP:
            item, lo, hi = ti[t, 1], ti[t, 2], ti[t, 3]
            d = _dget(S, item, byte)
            if d == EMPTY:
                r = EMPTY
            else:
                rest = rep(S, item, max(lo - 1, 0), INF if hi == INF else hi - 1)
                if rest < 0:
                    return -1
                r = seq(S, d, rest)
        elif k == K_REF:
            r = _dget(S, rules[ti[t, 1]], byte)
        elif k == K_DIFF:
            r = diff(S, _dget(S, ti[t, 1], byte), _dget(S, ti[t, 2], byte))
        elif k == K_KEYS:
            if ti[t, 3] >= KD_END:
                r = _dget(S, _k_end(S, t), byte)
            else:
                r = _k_deriv(S, t, byte)
        else:
            r = EMPTY
        if r < 0:
            return -1
        if _mput(S, _T_DERIV | (np.int64(t) << 8) | byte, r) < 0:
            return -1
        sp -= 1
    return _dget(S, t0, byte)


@kernel
def deriv(S, t0, byte):
    """The derivative of ``t0`` by one byte (memoized; ∅ when it cannot consume it): the memo
    inline, :func:`_deriv` (a unit) on a miss."""
    r = _dget(S, t0, byte)
    if r >= 0:
        return r
    return _deriv(S, t0, byte)



# ----------------------------------------------------------------------------- rows


@kernel
def _row_known(S, t):
    return S[S_TM][t, M_ROW_OFF] >= 0


@kernel
def _publish_row(S, t, cw, ct, n):
    """Store ``n`` classes as the row of ``t``; equal successors are merged first."""
    # merge classes with the same successor (small n: quadratic is fine)
    m = 0
    for i in range(n):
        j = 0
        while j < m and ct[j] != ct[i]:
            j += 1
        if j < m:
            for w in range(4):
                cw[j, w] |= cw[i, w]
        else:
            if j != i:
                ct[j] = ct[i]
                for w in range(4):
                    cw[j, w] = cw[i, w]
            m += 1
    ctl = S[S_CTL]
    off = ctl[C_RC]
    rcw = S[S_RCW]
    if off + m > rcw.shape[0]:
        return _fail(S, NEED_GROW_RC, m)
    rct = S[S_RCT]
    for i in range(m):
        for w in range(4):
            rcw[off + i, w] = cw[i, w]
        rct[off + i] = ct[i]
    ctl[C_RC] = off + m
    tm = S[S_TM]
    tm[t, M_ROW_LEN] = m
    tm[t, M_ROW_OFF] = off
    return 0


@unit(_i64, STORE, _U64_2, _I32_1, _i64, _U64_2, _I32_1)
def _union_rows(S, srcw, srct, ns, cw, ct):
    """Union of derivative classes ``(srcw[i], srct[i])`` for ``i < ns`` (masks may overlap):
    one partition refinement over all the classes' masks, then one ``alt`` per cell. Writes
    disjoint classes with distinct non-empty successors into ``cw``/``ct``; returns their number.

    Cells are byte masks with a persistent list of successors (a split shares its tail), so the
    cost is in the number of classes and cells, not in the 256 bytes."""
    # fast path: pairwise disjoint masks need no refinement
    u0 = u1 = u2 = u3 = _U0
    disjoint = True
    for i in range(ns):
        if (u0 & srcw[i, 0]) | (u1 & srcw[i, 1]) | (u2 & srcw[i, 2]) | (u3 & srcw[i, 3]) != _U0:
            disjoint = False
            break
        u0 |= srcw[i, 0]
        u1 |= srcw[i, 1]
        u2 |= srcw[i, 2]
        u3 |= srcw[i, 3]
    if disjoint:
        m = 0
        for i in range(ns):
            if srct[i] == EMPTY:
                continue
            for w in range(4):
                cw[m, w] = srcw[i, w]
            ct[m] = srct[i]
            m += 1
        return _merge_same(cw, ct, m)
    nc0 = 4 * ns + 64
    blk = np.empty(257 + 257 + 2 * nc0 + ns + 1, dtype=np.int32)  # one allocation, sliced
    cell_head = blk[:257]
    cons_t = blk[514 : 514 + nc0]
    cons_n = blk[514 + nc0 : 514 + 2 * nc0]
    buf = blk[514 + 2 * nc0 :]
    cm = np.empty((257, 4), dtype=np.uint64)
    for w in range(4):
        cm[0, w] = ~_U0
    cell_head[0] = -1
    n_cells = 1
    n_cons = 0
    for i in range(ns):
        d = srct[i]
        nc = n_cells
        for c in range(nc):
            x0 = cm[c, 0] & srcw[i, 0]
            x1 = cm[c, 1] & srcw[i, 1]
            x2 = cm[c, 2] & srcw[i, 2]
            x3 = cm[c, 3] & srcw[i, 3]
            if (x0 | x1 | x2 | x3) == _U0:
                continue
            if n_cons + 1 >= cons_t.shape[0]:
                cons_t = _grow_i32(cons_t, n_cons + 1)
                cons_n = _grow_i32(cons_n, n_cons + 1)
            cons_t[n_cons] = d
            cons_n[n_cons] = cell_head[c]
            if x0 == cm[c, 0] and x1 == cm[c, 1] and x2 == cm[c, 2] and x3 == cm[c, 3]:
                cell_head[c] = n_cons
            else:
                cm[n_cells, 0] = x0
                cm[n_cells, 1] = x1
                cm[n_cells, 2] = x2
                cm[n_cells, 3] = x3
                cm[c, 0] &= ~x0
                cm[c, 1] &= ~x1
                cm[c, 2] &= ~x2
                cm[c, 3] &= ~x3
                cell_head[n_cells] = n_cons
                n_cells += 1
            n_cons += 1
    m = 0
    for c in range(n_cells):
        h = cell_head[c]
        if h < 0:
            continue
        n = 0
        while h >= 0:
            buf[n] = cons_t[h]  # a cell's list holds at most one entry per class
            n += 1
            h = cons_n[h]
        r = buf[0] if n == 1 else alt(S, buf, n)
        if r < 0:
            return -1
        if r == EMPTY:
            continue
        for w in range(4):
            cw[m, w] = cm[c, w]
        ct[m] = r
        m += 1
    return _merge_same(cw, ct, m)


@kernel
def _push_row_dep(S, st, sp, x):
    if not _row_known(S, x):
        st = _grow_i32(st, sp)
        st[sp] = x
        sp += 1
    return st, sp


@unit(_i64, STORE, _i64)
def _row(S, t0):
    """Memoize the derivative classes of ``t0``: disjoint byte masks with distinct non-empty
    successors (``tm[t0, M_ROW_OFF:M_ROW_LEN]`` into the class pool); 0, or -1 on exit."""
    S = borrow(S)
    if _row_known(S, t0):
        return 0
    ti = S[S_TI]
    tf = S[S_TF]
    tm = S[S_TM]
    pool = S[S_POOL]
    rules = S[S_RULE]
    ib = np.empty(64 + 64 + 257, dtype=np.int32)  # one allocation per call, sliced
    st = ib[:64]
    srct = ib[64:128]
    ct = ib[128:]
    # (two allocations, not a reshaped slice of one: reshape compiles Numba's shape-error
    # formatting, ~2 s of a cold start)
    srcw = np.empty((64, 4), dtype=np.uint64)
    cw = np.empty((257, 4), dtype=np.uint64)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if _row_known(S, t):
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        if k == K_SEQ:
            cur = t
            while True:
                if ti[cur, 0] != K_SEQ:
                    st, sp = _push_row_dep(S, st, sp, cur)
                    break
                a = ti[cur, 1]
                st, sp = _push_row_dep(S, st, sp, a)
                if (tf[a] & F_NULL) == 0:
                    break
                cur = ti[cur, 2]
                if _row_known(S, cur):
                    break
        elif k == K_ALT or k == K_AND:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                st, sp = _push_row_dep(S, st, sp, pool[off + x])
        elif k == K_REP:
            st, sp = _push_row_dep(S, st, sp, ti[t, 1])
        elif k == K_REF:
            body = rules[ti[t, 1]]
            if body < 0:
                return _fail(S, NEED_RULE, ti[t, 1])
            st, sp = _push_row_dep(S, st, sp, body)
        elif k == K_DIFF:
            st, sp = _push_row_dep(S, st, sp, ti[t, 1])
            st, sp = _push_row_dep(S, st, sp, ti[t, 2])
        elif k == K_KEYS and ti[t, 3] >= KD_END:
            body = _k_end(S, t)
            if body < 0:
                return -1
            st, sp = _push_row_dep(S, st, sp, body)
        if sp > top:
            continue
        rcw = S[S_RCW]
        rct = S[S_RCT]
        n = 0
        if k == K_BYTES:
            j = ti[t, 1]
            for w in range(4):
                cw[0, w] = S[S_BW][j, w]
            ct[0] = EPS
            n = 1
        elif k == K_KEYS and ti[t, 3] >= KD_END:  # shares its tail's row
            body = _k_end(S, t)
            tm[t, M_ROW_LEN] = tm[body, M_ROW_LEN]
            tm[t, M_ROW_OFF] = tm[body, M_ROW_OFF]
            sp -= 1
            continue
        elif k == K_KEYS:
            n = _k_row(S, t, cw, ct)
            if n < 0:
                return -1
        elif k == K_SEQ or k == K_ALT:
            ns = 0
            single = True
            if k == K_SEQ:
                cur = t
                while True:
                    last = ti[cur, 0] != K_SEQ
                    a = cur if last else ti[cur, 1]
                    b = EPS if last else ti[cur, 2]
                    off = tm[a, M_ROW_OFF]
                    ln = tm[a, M_ROW_LEN]
                    if ns + ln > srct.shape[0]:
                        srcw, srct = _grow_cls(srcw, srct, ns + ln)
                    for i in range(off, off + ln):
                        d = seq(S, rct[i], b)
                        if d < 0:
                            return -1
                        for w in range(4):
                            srcw[ns, w] = rcw[i, w]
                        srct[ns] = d
                        ns += 1
                    if last or (tf[a] & F_NULL) == 0:
                        break
                    single = False
                    cur = b
                    if _row_known(S, cur):
                        off = tm[cur, M_ROW_OFF]
                        ln = tm[cur, M_ROW_LEN]
                        if ns + ln > srct.shape[0]:
                            srcw, srct = _grow_cls(srcw, srct, ns + ln)
                        for i in range(off, off + ln):
                            for w in range(4):
                                srcw[ns, w] = rcw[i, w]
                            srct[ns] = rct[i]
                            ns += 1
                        break
            else:
                poff = ti[t, 1]
                for x in range(ti[t, 2]):
                    a = pool[poff + x]
                    off = tm[a, M_ROW_OFF]
                    ln = tm[a, M_ROW_LEN]
                    if ns + ln > srct.shape[0]:
                        srcw, srct = _grow_cls(srcw, srct, ns + ln)
                    for i in range(off, off + ln):
                        for w in range(4):
                            srcw[ns, w] = rcw[i, w]
                        srct[ns] = rct[i]
                        ns += 1
            if k == K_SEQ and single:
                # one part (a non-nullable head): its classes are disjoint already
                for i in range(ns):
                    for w in range(4):
                        cw[i, w] = srcw[i, w]
                    ct[i] = srct[i]
                n = ns
            else:
                n = _union_rows(S, srcw, srct, ns, cw, ct)
                if n < 0:
                    return -1
        elif k == K_REP:
            item, lo, hi = ti[t, 1], ti[t, 2], ti[t, 3]
            rest = rep(S, item, max(lo - 1, 0), INF if hi == INF else hi - 1)
            if rest < 0:
                return -1
            off = tm[item, M_ROW_OFF]
            for i in range(off, off + tm[item, M_ROW_LEN]):
                d = seq(S, rct[i], rest)
                if d < 0:
                    return -1
                for w in range(4):
                    cw[n, w] = rcw[i, w]
                ct[n] = d
                n += 1
        elif k == K_REF:
            body = rules[ti[t, 1]]
            tm[t, M_ROW_LEN] = tm[body, M_ROW_LEN]
            tm[t, M_ROW_OFF] = tm[body, M_ROW_OFF]
            sp -= 1
            continue
        elif k == K_AND:
            poff = ti[t, 1]
            a = pool[poff]
            off = tm[a, M_ROW_OFF]
            n = tm[a, M_ROW_LEN]
            for i in range(n):
                for w in range(4):
                    cw[i, w] = rcw[off + i, w]
                ct[i] = rct[off + i]
            tw = np.empty((257, 4), dtype=np.uint64)
            tt = np.empty(257, dtype=np.int32)
            for x in range(1, ti[t, 2]):
                q = pool[poff + x]
                qoff = tm[q, M_ROW_OFF]
                m = 0
                for i in range(n):
                    for j in range(qoff, qoff + tm[q, M_ROW_LEN]):
                        nz = False
                        for w in range(4):
                            tw[m, w] = cw[i, w] & rcw[j, w]
                            if tw[m, w] != _U0:
                                nz = True
                        if not nz:
                            continue
                        d = and2(S, ct[i], rct[j])
                        if d < 0:
                            return -1
                        if d == EMPTY:
                            continue
                        tt[m] = d
                        m += 1
                n = _merge_same(tw, tt, m)
                for i in range(n):
                    for w in range(4):
                        cw[i, w] = tw[i, w]
                    ct[i] = tt[i]
        elif k == K_DIFF:
            a, b = ti[t, 1], ti[t, 2]
            qoff, qn = tm[b, M_ROW_OFF], tm[b, M_ROW_LEN]
            uq = np.zeros(4, dtype=np.uint64)
            for j in range(qoff, qoff + qn):
                for w in range(4):
                    uq[w] |= rcw[j, w]
            aoff = tm[a, M_ROW_OFF]
            for i in range(aoff, aoff + tm[a, M_ROW_LEN]):
                d1 = rct[i]
                for j in range(qoff, qoff + qn):
                    nz = False
                    for w in range(4):
                        cw[n, w] = rcw[i, w] & rcw[j, w]
                        if cw[n, w] != _U0:
                            nz = True
                    if not nz:
                        continue
                    d = diff(S, d1, rct[j])
                    if d < 0:
                        return -1
                    if d == EMPTY:
                        continue
                    ct[n] = d
                    n += 1
                nz = False
                for w in range(4):
                    cw[n, w] = rcw[i, w] & ~uq[w]
                    if cw[n, w] != _U0:
                        nz = True
                if nz:
                    ct[n] = d1
                    n += 1
            n = _merge_same(cw, ct, n)
        if _publish_row(S, t, cw, ct, n) < 0:
            return -1
        sp -= 1
    return 0


@kernel
def row(S, t0):
    """Memoize the derivative classes of ``t0`` (:func:`_row`, a unit, unless known); 0, or -1
    on exit."""
    if _row_known(S, t0):
        return 0
    return _row(S, t0)



@unit(types.Tuple((_U64_2, _I32_1)), _U64_2, _I32_1, _i64)
def _grow_cls(w, t, n):
    cap = max(2 * t.shape[0], n + 1)
    w2 = np.empty((cap, 4), dtype=np.uint64)
    t2 = np.empty(cap, dtype=np.int32)
    for i in range(t.shape[0]):  # (a loop: a 2-D slice assignment compiles shape-error code)
        w2[i, 0] = w[i, 0]
        w2[i, 1] = w[i, 1]
        w2[i, 2] = w[i, 2]
        w2[i, 3] = w[i, 3]
        t2[i] = t[i]
    return w2, t2


@kernel
def _merge_same(cw, ct, n):
    m = 0
    for i in range(n):
        j = 0
        while j < m and ct[j] != ct[i]:
            j += 1
        if j < m:
            for w in range(4):
                cw[j, w] |= cw[i, w]
        else:
            if j != i:
                ct[j] = ct[i]
                for w in range(4):
                    cw[j, w] = cw[i, w]
            m += 1
    return m


# ----------------------------------------------------------------------------- emptiness


@kernel
def _infinite(S, t0):
    """For AND/DIFF/REF-free terms: is the language infinite? (memoized in ``tm[:, M_INF]``)"""
    ti = S[S_TI]
    tm = S[S_TM]
    pool = S[S_POOL]
    if tm[t0, M_INF] >= 0:
        return tm[t0, M_INF]
    st = np.empty(64, dtype=np.int32)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if tm[t, M_INF] >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        if k == K_REP:
            if ti[t, 3] != INF and tm[ti[t, 1], M_INF] < 0:
                st = _grow_i32(st, sp)
                st[sp] = ti[t, 1]
                sp += 1
        elif k == K_SEQ:
            for c in (ti[t, 1], ti[t, 2]):
                if tm[c, M_INF] < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_ALT:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                c = pool[off + x]
                if tm[c, M_INF] < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        if sp > top:
            continue
        r = 0
        if k == K_REP:
            r = 1 if (ti[t, 3] == INF or tm[ti[t, 1], M_INF] == 1) else 0
        elif k == K_SEQ:
            r = 1 if (tm[ti[t, 1], M_INF] == 1 or tm[ti[t, 2], M_INF] == 1) else 0
        elif k == K_ALT:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                if tm[pool[off + x], M_INF] == 1:
                    r = 1
        tm[t, M_INF] = r
        sp -= 1
    return tm[t0, M_INF]


@kernel
def _search_nonempty(S, t0):
    """Bounded breadth-first search for a nullable derivative: 1 found, 0 none, -1 exit."""
    tf = S[S_TF]
    tm = S[S_TM]
    ctl = S[S_CTL]
    fuel = ctl[C_FUEL]
    queue = np.empty(64, dtype=np.int32)
    cap = 64
    seen = np.full(cap, -1, dtype=np.int32)
    n_seen = 0
    queue[0] = t0
    qh, qt = 0, 1
    seen[(_mix(t0, 7) & (cap - 1))] = t0
    n_seen = 1
    steps = 0
    while qh < qt:
        u = queue[qh]
        qh += 1
        if (tf[u] & F_NULL) != 0:
            return 1
        if row(S, u) < 0:
            return -1
        rct = S[S_RCT]
        off = tm[u, M_ROW_OFF]
        for i in range(off, off + tm[u, M_ROW_LEN]):
            v = rct[i]
            steps += 1
            if steps > fuel:
                return _fail(S, LIMIT_FUEL, fuel)
            # membership in the seen set
            j = _mix(v, 7) & (cap - 1)
            found = False
            while seen[j] >= 0:
                if seen[j] == v:
                    found = True
                    break
                j = (j + 1) & (cap - 1)
            if found:
                continue
            if (tf[v] & F_BOOL) != 0 and tm[v, M_EMPTY] == 1:
                continue
            seen[j] = v
            n_seen += 1
            if 2 * n_seen > cap:
                old = seen
                cap *= 2
                seen = np.full(cap, -1, dtype=np.int32)
                for x in old:
                    if x >= 0:
                        jj = _mix(x, 7) & (cap - 1)
                        while seen[jj] >= 0:
                            jj = (jj + 1) & (cap - 1)
                        seen[jj] = x
            queue = _grow_i32(queue, qt)
            queue[qt] = v
            qt += 1
    return 0


@unit(_i64, STORE, _i64)
def _is_empty(S, t0):
    """1 when ``t0`` denotes ∅, 0 when not, -1 on exit (exact; a bounded search for AND/DIFF)."""
    S = borrow(S)
    if t0 == EMPTY:
        return 1
    ti = S[S_TI]
    tf = S[S_TF]
    tm = S[S_TM]
    pool = S[S_POOL]
    if (tf[t0] & F_BOOL) == 0:
        return 0
    if tm[t0, M_EMPTY] >= 0:
        return tm[t0, M_EMPTY]
    st = np.empty(64, dtype=np.int32)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if tm[t, M_EMPTY] >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        r = -1
        pending = -1
        if k == K_SEQ or k == K_ALT:
            # in order, stopping at the first unknown item (short-circuit like any()/all())
            want = 1 if k == K_SEQ else 0  # the item value that decides the result
            r = 1 - want
            if k == K_SEQ:
                # a cons cell (head, tail): the tail's emptiness is memoized on the tail, so a
                # new term on top of a deep stack costs O(1), not O(depth)
                for c in (ti[t, 1], ti[t, 2]):
                    v = _empty_known(S, c)
                    if v < 0:
                        pending = c
                        break
                    if v == want:
                        r = want
                        break
            else:
                off = ti[t, 1]
                for x in range(ti[t, 2]):
                    c = pool[off + x]
                    v = _empty_known(S, c)
                    if v < 0:
                        pending = c
                        break
                    if v == want:
                        r = want
                        break
        elif k == K_REP:
            if ti[t, 2] > 0:
                v = _empty_known(S, ti[t, 1])
                if v < 0:
                    pending = ti[t, 1]
                else:
                    r = v
            else:
                r = 0
        else:
            a, b = ti[t, 1], ti[t, 2]
            if k == K_DIFF and (tf[a] & F_BOOL) == 0 and (tf[b] & F_BOOL) == 0 \
                    and _infinite(S, a) == 1 and _infinite(S, b) == 0:
                r = 0  # an infinite language minus a finite one is never empty
            else:
                f = _search_nonempty(S, t)
                if f < 0:
                    return -1
                r = 1 - f
        if pending >= 0:
            st = _grow_i32(st, sp)
            st[sp] = pending
            sp += 1
            continue
        tm[t, M_EMPTY] = r
        sp -= 1
    return tm[t0, M_EMPTY]


@kernel
def is_empty(S, t0):
    """1 when ``t0`` denotes ∅, 0 when not, -1 on exit: what is known inline, the search
    (:func:`_is_empty`, a unit) otherwise."""
    if t0 == EMPTY:
        return 1
    if (S[S_TF][t0] & F_BOOL) == 0:
        return 0
    e = S[S_TM][t0, M_EMPTY]
    if e >= 0:
        return e
    return _is_empty(S, t0)



@kernel
def _empty_known(S, t):
    if t == EMPTY:
        return 1
    if (S[S_TF][t] & F_BOOL) == 0:
        return 0
    return S[S_TM][t, M_EMPTY]


# ----------------------------------------------------------------------------- clamping


@kernel
def _cget(S, t, limit):
    if (S[S_TF][t] & F_REP) == 0:
        return t
    return _mget(S, _T_CLAMP | (np.int64(t) << 16) | limit)


@unit(_i64, STORE, _i64)
def _radius(S, t0):
    """How far a term can be from acceptance: the largest, over the terms reachable from ``t0``
    by derivatives (``t0`` included), of the length in bytes of the shortest text taking that
    term to acceptance (terms that never accept are left out). :data:`R_UNKNOWN` when more than
    :data:`RADIUS_FUEL` terms are reachable; -1 on exit. For REF-free terms; memoized per term."""
    S = borrow(S)
    r = _mget(S, _T_RADIUS | t0)
    if r >= 0:
        return r
    tm = S[S_TM]
    tf = S[S_TF]
    cap = 1024  # a power of two above 2 * RADIUS_FUEL: the local index of the closure
    hkeys = np.full(cap, -1, dtype=np.int32)
    hvals = np.empty(cap, dtype=np.int32)
    terms = np.empty(RADIUS_FUEL, dtype=np.int32)
    esrc = np.empty(256, dtype=np.int32)
    edst = np.empty(256, dtype=np.int32)
    ne = 0
    terms[0] = t0
    h = _mix(np.int64(t0), 0x27D4EB2F) & (cap - 1)
    hkeys[h] = t0
    hvals[h] = 0
    n = 1
    i = 0
    while i < n:
        t = terms[i]
        if row(S, t) < 0:
            return -1
        off, ln = tm[t, M_ROW_OFF], tm[t, M_ROW_LEN]
        for x in range(off, off + ln):
            u = S[S_RCT][x]
            h = _mix(np.int64(u), 0x27D4EB2F) & (cap - 1)
            while hkeys[h] >= 0 and hkeys[h] != u:
                h = (h + 1) & (cap - 1)
            if hkeys[h] < 0:
                if n >= RADIUS_FUEL:
                    if _mput(S, _T_RADIUS | t0, R_UNKNOWN) < 0:
                        return -1
                    return R_UNKNOWN
                hkeys[h] = u
                hvals[h] = n
                terms[n] = u
                n += 1
            esrc = _grow_i32(esrc, ne)
            edst = _grow_i32(edst, ne)
            esrc[ne] = i
            edst[ne] = hvals[h]
            ne += 1
        i += 1
    # shortest distance to acceptance: a breadth-first search from the accepting terms along
    # reversed edges (every edge is one byte)
    start, into = group_by(edst[:ne], n)
    radj = esrc[:ne][into]
    dist = np.full(n, -1, dtype=np.int32)
    queue = np.empty(n, dtype=np.int32)
    qh, qt = 0, 0
    for v in range(n):
        if (tf[terms[v]] & F_NULL) != 0:
            dist[v] = 0
            queue[qt] = v
            qt += 1
    while qh < qt:
        v = queue[qh]
        qh += 1
        for y in range(start[v], start[v + 1]):
            u = radj[y]
            if dist[u] < 0:
                dist[u] = dist[v] + 1
                queue[qt] = u
                qt += 1
    r = 0
    for v in range(n):
        if dist[v] > r:
            r = dist[v]
    if _mput(S, _T_RADIUS | t0, r) < 0:
        return -1
    return r


@kernel
def radius(S, t0):
    """:func:`_radius` (a unit) of ``t0``, memoized (the memo read inline)."""
    r = _mget(S, _T_RADIUS | t0)
    if r >= 0:
        return r
    return _radius(S, t0)



@kernel
def _far_hi(S, t0, limit):
    """Over the counters of ``t0`` (REF-free, AND/DIFF-free): the least upper bound that
    :func:`clamp` at ``limit`` makes unbounded, or ``NO_FAR`` when it changes none; 0 when
    it would change a lower bound or ``t0`` holds AND/DIFF (no exact clamp then); -1 on exit."""
    ti = S[S_TI]
    tf = S[S_TF]
    pool = S[S_POOL]
    st = np.empty(64, dtype=np.int32)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if (tf[t] & F_REP) == 0 or _mget(S, _T_FARHI | (np.int64(t) << 16) | limit) >= 0:
            sp -= 1
            continue
        if (tf[t] & F_BOOL) != 0:
            if _mput(S, _T_FARHI | (np.int64(t) << 16) | limit, 0) < 0:
                return -1
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        # children: a sequence's head and tail, a repetition's item (fields 1.., inline), an
        # alternation's list in the pool
        if k == K_ALT:
            n, off = ti[t, 2], ti[t, 1]
        else:
            n, off = (2 if k == K_SEQ else 1), -1
        for x in range(n):
            c = ti[t, 1 + x] if off < 0 else pool[off + x]
            if (tf[c] & F_REP) != 0 and _mget(S, _T_FARHI | (np.int64(c) << 16) | limit) < 0:
                st = _grow_i32(st, sp)
                st[sp] = c
                sp += 1
        if sp > top:
            continue
        r = NO_FAR
        if k == K_REP:
            lo, hi = ti[t, 2], ti[t, 3]
            if lo > limit:
                r = 0
            elif hi != INF and hi > limit:
                r = hi
        for x in range(n):
            if r == 0:
                break
            c = ti[t, 1 + x] if off < 0 else pool[off + x]
            if (tf[c] & F_REP) != 0:
                v = _mget(S, _T_FARHI | (np.int64(c) << 16) | limit)
                r = min(r, v)
        if _mput(S, _T_FARHI | (np.int64(t) << 16) | limit, r) < 0:
            return -1
        sp -= 1
    if (tf[t0] & F_REP) == 0:
        return NO_FAR
    return _mget(S, _T_FARHI | (np.int64(t0) << 16) | limit)


@unit(_i64, STORE, _i64, _i64)
def _clamp(S, t0, limit):
    """A term with the same one-token behaviour as ``t0`` for tokens of at most ``limit - 1``
    bytes: counters far from their bounds become unbounded.

    Inside an intersection the counters may only become unbounded where that cannot change
    which tokens have a completion: with ``A'`` the intersection so clamped (lower bounds
    untouched) and ``R`` the :func:`radius` of ``A'``, a token ``w`` with a completion in
    ``A'`` has one of at most ``limit - 1 + R`` bytes, which iterates no counter more than that
    many times; when every upper bound made unbounded is at least ``limit + R``, that
    completion is in the exact intersection too. Otherwise (and for AND/DIFF nested in an
    intersection, and DIFF) the sub-term stays exact."""
    S = borrow(S)
    r = _cget(S, t0, limit)
    if r >= 0:
        return r
    ti = S[S_TI]
    tf = S[S_TF]
    pool = S[S_POOL]
    st = np.empty(64, dtype=np.int32)
    buf = np.empty(16, dtype=np.int32)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if _cget(S, t, limit) >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        if k == K_SEQ:
            # a cons cell (head, tail): the tail is a term of its own whose clamp is memoized,
            # so a new state on top of a deep stack costs O(1), not O(depth)
            for c in (ti[t, 1], ti[t, 2]):
                if _cget(S, c, limit) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_ALT:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                c = pool[off + x]
                if _cget(S, c, limit) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_REP:
            c = ti[t, 1]
            if (tf[c] & F_BOOL) == 0 and _cget(S, c, limit) < 0:
                st = _grow_i32(st, sp)
                st[sp] = c
                sp += 1
        elif k == K_AND:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                c = pool[off + x]
                if (tf[c] & F_BOOL) == 0 and _cget(S, c, limit) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        if sp > top:
            continue
        # a term none of whose parts the clamp changes is itself (not rebuilt: re-interning
        # every node of a large term, a format's language, cost ~18 us a node, 44 ms a date-time)
        if k == K_SEQ:
            h1, t1 = _cget(S, ti[t, 1], limit), _cget(S, ti[t, 2], limit)
            r = t if h1 == ti[t, 1] and t1 == ti[t, 2] else seq(S, h1, t1)
        elif k == K_ALT:
            off = ti[t, 1]
            n = ti[t, 2]
            buf = _grow_i32(buf, n)
            same = True
            for x in range(n):
                buf[x] = _cget(S, pool[off + x], limit)
                if buf[x] != pool[off + x]:
                    same = False
            r = t if same else alt(S, buf, n)
        elif k == K_REP:
            item, lo, hi = ti[t, 1], ti[t, 2], ti[t, 3]
            if (tf[item] & F_BOOL) == 0:
                item = _cget(S, item, limit)
                lo = min(lo, limit)
                if hi != INF and hi > limit:
                    hi = INF
            if item == ti[t, 1] and lo == ti[t, 2] and hi == ti[t, 3]:
                r = t
            else:
                r = rep(S, item, lo, hi)
        elif k == K_AND:
            r = _clamp_and(S, t, limit)
        else:
            r = t
        if r < 0:
            return -1
        if _mput(S, _T_CLAMP | (np.int64(t) << 16) | limit, r) < 0:
            return -1
        sp -= 1
    return _cget(S, t0, limit)


@kernel
def clamp(S, t0, limit):
    """:func:`_clamp` (a unit) of ``t0`` for tokens shorter than ``limit`` (the memo read
    inline)."""
    r = _cget(S, t0, limit)
    if r >= 0:
        return r
    return _clamp(S, t0, limit)



@kernel
def _clamp_and(S, t, limit):
    """The clamp of intersection ``t`` whose operands are clamped already (see :func:`clamp`):
    the clamped intersection when that is exact, else ``t``; -1 on exit."""
    ti = S[S_TI]
    tf = S[S_TF]
    pool = S[S_POOL]
    off, n = ti[t, 1], ti[t, 2]
    least = NO_FAR
    for x in range(n):
        c = pool[off + x]
        if (tf[c] & F_BOOL) != 0:
            return t
        v = _far_hi(S, c, limit)
        if v < 0:
            return -1
        if v == 0:
            return t
        least = min(least, v)
    if least == NO_FAR:
        return t
    buf = np.empty(n, dtype=np.int32)
    for x in range(n):
        buf[x] = _cget(S, pool[off + x], limit)
    a2 = and_(S, buf, n)
    if a2 < 0:
        return -1
    if a2 == t:
        return t
    r = radius(S, a2)
    if r < 0:
        return -1
    # (an unknown radius never clamps: a lane count, counters.LANES and up, exceeds R_UNKNOWN
    # while the count it stands for may not)
    if r < R_UNKNOWN and least >= limit + r:
        return a2
    return t


# ----------------------------------------------------------------------------- states


@kernel
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
    tm[t, M_STATE] = n
    ctl[C_STATES] = n + 1
    return n


@kernel
def _live_state(S, u):
    """State of successor term ``u``, ``DEAD`` when it denotes ∅, or -1 (FAIL) on exit."""
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
    out = np.full(256, DEAD, dtype=np.int32)
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


@kernel
def fill_row(S, s):
    """Compute every byte transition of state ``s`` (:func:`_fill_row`, a unit, unless done);
    0, or -1 on exit."""
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


@kernel
def fill_entry(S, s, byte):
    """The transition of state ``s`` on ``byte`` (computed by :func:`_fill_entry`, a unit, when
    not known); the successor (or DEAD), -1 on exit."""
    r = S[S_TRANS][s, byte]
    if r != UNKNOWN:
        return r
    return _fill_entry(S, s, byte)



@kernel
def step(S, s, byte):
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
    front = np.empty(512, dtype=np.int32)
    nxt = np.empty(512, dtype=np.int32)
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
    front = np.empty(64, dtype=np.int32)
    nxt = np.empty(64, dtype=np.int32)
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
    one, without a state per count (:func:`plain_inv` would need one per character).
    """
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
    item = ti[a, 1]
    v = _mget(S, _T_PLAINC | item)
    if v < 0:
        v = _plain_complete(S, item, pseq, plen)
        if v < 0:
            return -1
        if _mput(S, _T_PLAINC | item, v) < 0:
            return -1
    if v == 0:
        return 0
    hi = ti[a, 3]
    if hi == INF or hi >= BAND:
        return RUN_INF
    return hi
