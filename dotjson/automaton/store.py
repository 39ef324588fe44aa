"""The term store's layout and its lowest layer: term kinds and flags, the per-term memo columns,
the slots of the store tuple and of its control array, exit statuses, memo key tags; ``borrow``
(the tuple as views without reference counts), hashing, growth of scratch arrays and the memo
table (open addressing over ``int64`` keys: a tag, a term id, a small field).

A term is a row of ``ti: int32[n, 4]`` (kind and up to three fields: children, counters, a rule
index, a byte-set index into ``bw: uint64[m, 4]``, or an offset/count into ``pool`` for the sorted
children of ``ALT``/``AND``) plus flags ``tf`` (nullable, holds ``AND``/``DIFF``, holds ``REP``).
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from .._kernels.jit import kernel, unit

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
#: holds a REP with a bound above :data:`FAR_MIN` (or a marker): only such a term can change under
#: :func:`~dotjson.automaton.clamp.clamp` for tokens of at least ``FAR_MIN`` bytes, so a mask key
#: of a term without it (a ``date-time`` value: ~2,400 terms of small counts) is the term itself,
#: without walking it
F_FAR = 8
#: The largest count a REP may have and leave its term without :data:`F_FAR`.
FAR_MIN = 16

# Per-term memo columns (``tm``); ``M_HASH``: the term's interning hash (its low 31 bits),
# written when the term is made, so that a grown hash table is filled without hashing every
# term again (48,786 terms: 2.3 ms hashed, 0.23 ms stored)
M_ROW_OFF, M_ROW_LEN, M_EMPTY, M_INF, M_STATE, M_HASH = range(6)
N_TM = 6
#: the bits of a hash that :data:`M_HASH` keeps (a hash table has at most 2**30 slots)
HASH_BITS = 0x7FFFFFFF

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
_T_REACH = 8 << 58
#: A state's ``plain_inv`` flag: -1 not known yet, 0 not plain-invariant, 1 plain-invariant,
#: ``INV_NO_RUN`` not plain-invariant and no bounded plain run either (``plain_run`` is 0: the
#: mask walk records it so as not to ask again at every node it meets the state).
INV_NO_RUN = 2
_T_PRUN = 9 << 58  # plain_run of a term, as run_len reads it mid-walk
_T_POPEN = 10 << 58  # plain_open of a term, as the mask walk reads it
_T_BRUN = 11 << 58  # byte_run of a term: its run's rest + 1, or 0
_T_ACLS = 12 << 58  # a state's term: the BYTES term of the ASCII bytes that take it to itself
_T_CREACH = 13 << 58  # a state's term: how far its counted class goes (subtrees._class_chain)
_T_CCLS = 14 << 58  # ... and that class, a BYTES term
_T_CRUN = 15 << 58  # class_run of a term: its rest + 1, or 0
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
    """The store tuple (or one array) as views without reference counts.

    Every array a kernel takes out of the tuple, or passes to a helper, costs an atomic
    increment and decrement of its reference count; over 17 arrays that was most of the time of
    an expansion. The views are the same arrays with no memory owner (a null ``meminfo`` and
    ``parent``), so those operations become a test of a null pointer. The caller keeps ``S``
    (and so the memory) alive for the call. An intrinsic: a few register moves where it is
    called, no compile of its own (as a kernel of 17 ``carray`` views it was 8 compiles and
    ~210 kB of IR linked into every kernel that borrows).
    """
    if isinstance(S, types.Array):  # one array (a trie's, the plain sequences): the same
        sig = S(S)

        def codegen_one(context, builder, signature, args):
            ary = context.make_array(S)(context, builder, args[0])
            ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
            ary.parent = cgutils.get_null_value(ary.parent.type)
            return ary._getvalue()

        return sig, codegen_one
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


#: The Numba type of a *packed* tuple of arrays (:func:`pack`): one ``int64`` array.
PACKED = _I64_1


def packed_size(arrays) -> int:
    """Items of the packed form of the tuple ``arrays`` (:func:`pack`): an address and the shape
    of each array."""
    return sum(1 + a.ndim for a in arrays)


def packed(packer, arrays: tuple) -> np.ndarray:
    """``arrays`` packed by the unit ``packer`` (one that calls :func:`pack` on its tuple type:
    :func:`pack_store`, ``entries.pack_walk``, ``entries.pack_stacks``): the form the twins
    take, valid while ``arrays`` are alive."""
    P = np.empty(packed_size(arrays), dtype=np.int64)
    packer(arrays, P)
    return P


@intrinsic
def pack(typingctx, T, P):
    """Write the tuple of C-contiguous arrays ``T`` into ``P`` (``int64``, at least
    :func:`packed_size` items): for each array, the address of its data, then its shape.

    A Python call of a kernel unboxes each array it is handed (~65 ns an array: a memory-owner
    record made and freed); the store alone is 17, and a mask walk's tables ~30 more. Packed,
    the tables a caller passes at every call are one array each, packed once (the store when it
    is published, a vocabulary's tables when they are built), and a *twin* unit that takes the
    packed forms turns them back into the tuples with :func:`unpacker`'s intrinsic (a few loads
    in registers) and calls the kernel. The packed form holds no reference: whoever passes it
    keeps the arrays alive for the call (as :func:`borrow`'s views)."""
    if not isinstance(T, types.BaseTuple) or not all(
            isinstance(t, types.Array) and t.layout == "C" for t in T.types) or P != PACKED:
        return None

    def codegen(context, builder, signature, args):
        tup, parr = args
        base = context.make_array(PACKED)(context, builder, parr).data
        i64 = context.get_value_type(types.int64)
        k = 0
        for i, aty in enumerate(signature.args[0].types):
            ary = context.make_array(aty)(context, builder, builder.extract_value(tup, i))
            builder.store(builder.ptrtoint(ary.data, i64), builder.gep(base, [context.get_constant(types.intp, k)]))
            k += 1
            for d in cgutils.unpack_tuple(builder, ary.shape, aty.ndim):
                builder.store(d, builder.gep(base, [context.get_constant(types.intp, k)]))
                k += 1
        return context.get_dummy_value()

    return types.none(T, P), codegen


def unpacker(T):
    """The intrinsic that turns the packed form of a tuple of type ``T`` (C-contiguous arrays,
    :func:`pack`) back into that tuple, as views without reference counts (:func:`borrow`'s).
    Made once per tuple type, at import, by the module that declares the type."""
    if not isinstance(T, types.BaseTuple) or not all(
            isinstance(t, types.Array) and t.layout == "C" for t in T.types):
        raise TypeError(f"unpacker: not a tuple of C-contiguous arrays: {T}")

    @intrinsic
    def unpack(typingctx, P):
        if P != PACKED:
            return None

        def codegen(context, builder, signature, args):
            base = context.make_array(PACKED)(context, builder, args[0]).data
            intp = types.intp
            tup = cgutils.get_null_value(context.get_value_type(T))
            k = 0
            for i, aty in enumerate(T.types):
                lty = context.get_data_type(aty.dtype)
                data = builder.inttoptr(
                    builder.load(builder.gep(base, [context.get_constant(intp, k)])), lty.as_pointer())
                k += 1
                shape = []
                for _ in range(aty.ndim):
                    shape.append(builder.load(builder.gep(base, [context.get_constant(intp, k)])))
                    k += 1
                size = context.get_abi_sizeof(lty)
                strides = [context.get_constant(intp, size)]
                for d in range(aty.ndim - 1, 0, -1):  # (C order: the last axis' items adjacent)
                    strides.insert(0, builder.mul(strides[0], shape[d]))
                ary = context.make_array(aty)(context, builder)
                context.populate_array(ary, data=data, shape=shape, strides=strides,
                                       itemsize=context.get_constant(intp, size), meminfo=None)
                tup = builder.insert_value(tup, ary._getvalue(), i)
            return tup

        return T(P), codegen

    return unpack


#: The store from its packed form (:func:`pack`, :func:`pack_store`).
unpack_store = unpacker(STORE)


@unit(_i64, STORE, PACKED, early=1, python=True)
def pack_store(S, P):
    """Pack the store ``S`` into ``P`` (:func:`pack`); ``P``'s size."""
    S = borrow(S)
    pack(S, P)
    return P.shape[0]


# No kernel is inlined by Numba (``inline="always"``): that copies the callee's IR into every
# call site before type inference, at a compile-time cost on every first run. The kernels take
# the store as borrowed views (no reference counts to move at a call), and LLVM inlines the small
# helpers itself when it links a kernel's callees. Measured with perf/profile_fresh_masks.py on
# 12 MaskBench schemas (2,288 fresh masks): 257-278 us per fresh mask without Numba inlining,
# 273-292 us with it, same runs, alternated.


# ----------------------------------------------------------------------------- small helpers


@kernel
def _fail(S, status, arg):
    S = borrow(S)
    ctl = S[S_CTL]
    ctl[C_STATUS] = status
    ctl[C_ARG] = arg
    return -1


@kernel
def _low(x):
    """Index of the lowest set bit of a non-zero ``uint64``."""
    return np.int64(_ctz(x))


@intrinsic
def scratch(typingctx, dtype, n, m):
    """A C-contiguous array of ``n`` items (``n × m`` when ``m > 0``; both literal integers)
    of ``dtype`` on the native stack of the kernel that calls it, uninitialized.

    A kernel's scratch arrays (a work stack, a class buffer) were heap allocations: a
    ``malloc``, an atomic reference count per slice and view, a ``free`` — ~900,000 of them in the
    fresh masks of 30 MaskBench documents. On the stack they cost nothing, and with a null
    ``meminfo`` (as :func:`borrow`'s views) their reference counts fold away. Never return one,
    store one, or keep one past the kernel's return; grow it with :func:`_grow_i32` (a heap copy)
    where it may fill up. The space is reserved in the entry block, once per call of the
    (possibly inlined) kernel: keep them a few KiB.
    """
    if not isinstance(n, types.IntegerLiteral) or not isinstance(m, types.IntegerLiteral):
        return None
    if not isinstance(dtype, (types.NumberClass, types.DType)):
        return None
    ety = dtype.dtype
    rows, cols = n.literal_value, m.literal_value
    arrty = types.Array(ety, 2 if cols > 0 else 1, "C")

    def codegen(context, builder, signature, args):
        lty = context.get_data_type(ety)
        ptr = cgutils.alloca_once(builder, lty, size=rows * max(cols, 1))
        ary = context.make_array(arrty)(context, builder)
        size = context.get_abi_sizeof(lty)
        intp = types.intp
        shape = [context.get_constant(intp, rows)]
        strides = [context.get_constant(intp, size)]
        if cols > 0:
            shape.append(context.get_constant(intp, cols))
            strides.insert(0, context.get_constant(intp, cols * size))
        context.populate_array(ary, data=ptr, shape=shape, strides=strides,
                               itemsize=context.get_constant(intp, size), meminfo=None)
        return ary._getvalue()

    return arrty(dtype, n, m), codegen


@kernel
def _grow_i32(a, n):
    """``a`` if index ``n`` fits in it, else a copy with room (:func:`_grow_i32_slow`). A plain
    kernel, inlined where it is called in every loop of the engine: the unit behind it is called
    only when the array is full (before, every push in those loops called through a unit's cell;
    measured neutral on fresh masks, kept as the simpler hot loop)."""
    if n < a.shape[0]:
        return a
    return _grow_i32_slow(a, n)


@unit(_I32_1, _I32_1, _i64)
def _grow_i32_slow(a, n):
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
def rehash_terms(ti, bw, pool, tm, n, ht):
    """Insert terms ``0..n-1`` into the empty table ``ht``, their hashes computed from the
    terms and written to ``tm``'s :data:`M_HASH` column; returns the number of duplicates
    (0 for a store built by the constructors; a loaded store is checked with it)."""
    mask = ht.shape[0] - 1
    dup = 0
    for t in range(n):
        h = term_hash(ti, bw, pool, t) & HASH_BITS
        tm[t, M_HASH] = h
        i = h & mask
        while ht[i] >= 0:
            u = ht[i]
            if _same(ti, bw, pool, t, u):
                dup += 1
                break
            i = (i + 1) & mask
        ht[i] = t
    return dup


@kernel
def rehash_stored(tm, n, ht):
    """Insert terms ``0..n-1``, distinct by construction, into the empty table ``ht`` by the
    hashes ``tm`` holds (a grown store: nothing hashed again, nothing compared)."""
    mask = ht.shape[0] - 1
    for t in range(n):
        i = tm[t, M_HASH] & mask
        while ht[i] >= 0:
            i = (i + 1) & mask
        ht[i] = t


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
    S = borrow(S)
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
    S = borrow(S)
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
