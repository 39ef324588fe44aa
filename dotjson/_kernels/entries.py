"""The entries Python calls the mask walks through: the walks' tables packed, and twin units.

A Python call of a unit unboxes each array it is handed (~65 ns: a memory-owner record made and
freed), and a fresh mask handed ``compute_mask`` 49 (the store's 17, two tries, the special
trie's runs, the plain trie's tables, the walk stacks). Here those tuples are packed
(:func:`dotjson.automaton.store.pack`: an ``int64`` array of addresses and shapes) once each —
a vocabulary's walk tables (:data:`WALK_TABLES`, :func:`walk_packed`), a thread's stacks
(:data:`STACKS`, :func:`thread_stacks`), the store when it is published
(``Automaton.packed_store``) — and the twins (:func:`compute_mask_packed`,
:func:`walk_from_packed`, :func:`keys_mask_packed`, :func:`head_pairs_packed`) take the packed
forms, turn them back into the tuples as borrowed views (the unpackers: a few loads) and call
the walk. A packed form holds no reference: whoever passes one keeps its arrays alive for the
call. See docs/ARCHITECTURE.md, "Packed tuples".
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
from numba import types

from .jit import kernel, unit
from ..automaton import kernels as K
from .keywalk import keys_mask
from .walk import _I32_3, _I64_1, _RUNS, _TRIE, _U32_1, _U32_2, _U64_1, compute_mask, head_pairs, walk_from

#: Every table of a vocabulary a mask walk reads, in one tuple (packed once per vocabulary,
#: :func:`pack_walk`): the special trie (0-5), the plain trie (6-11), ``plain_bits`` (12), ``big``
#: and ``big_bits`` (13, 14), ``runs`` (15-19), ``len_row`` and ``len_bits`` (20, 21), the plain
#: class's ``pseq`` and ``plen`` (22, 23), ``nchars``, ``tchars`` and ``below`` (24-26): the
#: arguments :func:`~dotjson._kernels.walk.compute_mask` takes, in its order.
WALK_TABLES = types.Tuple((*_TRIE.types, *_TRIE.types, _U32_1, K._I32_1, _U32_2, *_RUNS.types,
                           K._I32_1, _U32_2, _I32_3, K._I32_1, K._I32_1, K._I32_1, _U64_1))
#: A thread's walk stacks (``st_node``, ``st_state``, ``st_edge``, ``ret``), one tuple.
STACKS = types.Tuple((K._I32_1, K._I32_1, K._I32_1, _I64_1))
_unpack_walk = K.unpacker(WALK_TABLES)
_unpack_stacks = K.unpacker(STACKS)


@unit(K._i64, WALK_TABLES, K.PACKED, early=1, python=True)
def pack_walk(W, P):
    """Pack a vocabulary's walk tables (:data:`WALK_TABLES`) into ``P`` (:func:`~dotjson.automaton.store.pack`); ``P``'s size."""
    K.pack(W, P)
    return P.shape[0]


@unit(K._i64, STACKS, K.PACKED, early=1, python=True)
def pack_stacks(T, P):
    """Pack a thread's walk stacks (:data:`STACKS`) into ``P``; ``P``'s size."""
    K.pack(T, P)
    return P.shape[0]


@kernel
def _special_of(W):
    return (W[0], W[1], W[2], W[3], W[4], W[5])


@kernel
def _plain_of(W):
    return (W[6], W[7], W[8], W[9], W[10], W[11])


@kernel
def _runs_of(W):
    return (W[15], W[16], W[17], W[18], W[19])


@unit(K._i64, K.PACKED, K._i64, K.PACKED, K.PACKED, K._i64, K._i64, _U32_1, early=1, python=True)
def compute_mask_packed(P, state, PW, PT, special_mode, wide, out):
    """:func:`~dotjson._kernels.walk.compute_mask` from Python with the store, the walk tables and the stacks packed
    (:func:`~dotjson.automaton.store.pack`: four arrays unboxed, not 49); the caller keeps the
    packed arrays' arrays alive."""
    W = _unpack_walk(PW)
    T = _unpack_stacks(PT)
    return compute_mask(K.unpack_store(P), state, _special_of(W), _plain_of(W), W[12], W[13], W[14],
                        _runs_of(W), W[20], W[21], special_mode, W[22], W[23], wide, W[24], W[25],
                        W[26], out, T[0], T[1], T[2], T[3])


@unit(K._i64, K.PACKED, K.PACKED, K.PACKED, K._i64, K._i64, K._I32_1, K._i64, K._i64, _U32_1, early=2, python=True)
def walk_from_packed(P, PW, PT, mode, wide, seeds, n_seeds, sc, out):
    """:func:`~dotjson._kernels.walk.walk_from` with the store, the walk tables and the stacks packed (as
    :func:`compute_mask_packed`)."""
    W = _unpack_walk(PW)
    T = _unpack_stacks(PT)
    return walk_from(K.unpack_store(P), _special_of(W), W[13], W[14], _runs_of(W), mode, W[22], W[23],
                     wide, seeds, n_seeds, sc, out, T[0], T[1], T[2], T[3])


@unit(K._i64, K.PACKED, K._i64, K.PACKED, K.PACKED, K._I32_1, K._i64, K._i64, K._i64, K._i64,
      _U32_1, _I64_1, early=2, python=True)
def keys_mask_packed(P, state, PW, PT, kst, kroom, room, special_mode, wide, out, ask):
    """:func:`~dotjson._kernels.keywalk.keys_mask` from Python with the store, the walk tables and the stacks packed (as
    :func:`compute_mask_packed`)."""
    W = _unpack_walk(PW)
    T = _unpack_stacks(PT)
    return keys_mask(K.unpack_store(P), state, _special_of(W), _plain_of(W), kst, kroom, room,
                     W[13], W[14], _runs_of(W), special_mode, W[22], W[23], wide, W[24], W[25],
                     W[20], W[21], W[26], out, T[0], T[1], T[2], T[3], ask)


@unit(K._i64, K.PACKED, K._i64, _U64_1, _I64_1, K._i64, early=1, python=True)
def head_pairs_packed(P, s, delim, out, n_shared):
    """:func:`~dotjson._kernels.walk.head_pairs` with the store packed (:func:`~dotjson.automaton.store.pack`)."""
    return head_pairs(K.unpack_store(P), s, delim, out, n_shared)


head_pairs.packed = head_pairs_packed


# ----------------------------------------------------------------------------- the Python side

_SCRATCH = threading.local()


def thread_stacks(depth: int):
    """The calling thread's trie-walk stacks (``st_node``, ``st_state``, ``st_edge``, ``ret`` and
    ``packed``, the four packed), at least ``depth`` frames, shared by every index (~0.5 MB at
    128k tokens; a key position's walk keeps its names' frames, ``kst``, there too): a thread
    computes one mask at a time, and a walk's exits to Python never start another."""
    sc = _SCRATCH
    if getattr(sc, "st_node", None) is None or sc.st_node.shape[0] < depth:
        sc.st_node = np.zeros(depth, dtype=np.int32)
        sc.st_state = np.zeros(depth, dtype=np.int32)
        sc.st_edge = np.zeros(depth, dtype=np.int32)
        sc.ret = np.zeros(4, dtype=np.int64)
        sc.packed = K.packed(pack_stacks, (sc.st_node, sc.st_state, sc.st_edge, sc.ret))
    return sc


#: The packed walk tables of a vocabulary's tries, by the id of its tries object (an entry
#: dropped when the tries go): ``[without the plain runs' tables, with every table]``, each
#: ``(the tables, packed)`` or ``None``
_WALK_PACKED: dict = {}
_WALK_PACKED_LOCK = threading.Lock()


def walk_packed(tries, trie_arrays: tuple, walk_tables: tuple, seqs: tuple, full: bool) -> np.ndarray:
    """The walk tables (:data:`WALK_TABLES`) of the vocabulary tries ``tries`` packed, built
    once per tries object: ``trie_arrays`` (the special and the plain trie's six arrays),
    ``walk_tables`` (``Vocabulary._walk_tables``), ``seqs`` (the plain class's ``pseq, plen``);
    without ``full``, the plain runs' tables empty (``len_row``, ``nchars``, ``below``: those
    shortcuts off, for the tests)."""
    full = int(bool(full))
    got = _WALK_PACKED.get(id(tries))
    if got is not None and got[full] is not None:
        return got[full][1]
    big, big_bits, runs, len_row, len_bits, nchars, tchars, below = walk_tables
    if not full:
        len_row, nchars, below = len_row[:0], nchars[:0], below[:0]
    special, plain = trie_arrays
    tables = (*special, *plain, tries.plain_bits, big, big_bits, *runs, len_row, len_bits, *seqs,
              nchars, tchars, below)
    entry = (tables, K.packed(pack_walk, tables))
    with _WALK_PACKED_LOCK:
        got = _WALK_PACKED.get(id(tries))
        if got is None:
            got = _WALK_PACKED[id(tries)] = [None, None]
            weakref.finalize(tries, _WALK_PACKED.pop, id(tries), None)
        if got[full] is None:
            got[full] = entry
        return got[full][1]
