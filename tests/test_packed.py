"""Packed tuples of arrays (``dotjson.automaton.store.pack``): the form in which Python hands the
store, a vocabulary's walk tables and a thread's walk stacks to the kernels' twins
(``compute_mask_packed``, ``keys_mask_packed``, ``walk_from_packed``, ``key_state.packed``, ...).

Checked: every array unpacked in a kernel is the array packed (its address, shape and strides,
read back against NumPy's), for the three tuple types, on a real index and vocabulary; the
store's packed form follows the store when it grows; the masks through the twins equal the
reference walk at every byte of a document, with the store's tables shrunk so that it grows
inside the kernels.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import literal_unroll

from dotjson import Index
from dotjson._kernels import entries, walk
from dotjson._kernels.jit import kernel
from dotjson.automaton import Automaton
from dotjson.automaton import kernels as K
from naive import assert_same_masks

_unpack_walk = entries._unpack_walk
_unpack_stacks = entries._unpack_stacks


@kernel
def _describe(T, out):
    """Each array of tuple ``T``: its address, ndim, shape and strides, in turn."""
    k = 0
    for a in literal_unroll(T):
        out[k] = a.ctypes.data
        out[k + 1] = a.ndim
        k += 2
        for d in a.shape:
            out[k] = d
            k += 1
        for d in a.strides:
            out[k] = d
            k += 1
    return k


@kernel
def _describe_store(P, out):
    return _describe(K.unpack_store(P), out)


@kernel
def _describe_walk(P, out):
    return _describe(_unpack_walk(P), out)


@kernel
def _describe_stacks(P, out):
    return _describe(_unpack_stacks(P), out)


def _numpy_description(arrays) -> list[int]:
    got = []
    for a in arrays:
        got += [a.ctypes.data, a.ndim, *a.shape, *a.strides]
    return got


def _read_back(describe, P, arrays) -> list[int]:
    out = np.zeros(sum(2 + 2 * a.ndim for a in arrays), dtype=np.int64)
    n = describe(P, out)
    assert n == out.shape[0]
    return out.tolist()


SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "tags": {"type": "array", "items": {"type": "integer"}}},
          "required": ["name"]}
DOC = b'{"name":"Ada Lovelace","tags":[1,22,-3]}'


def test_the_three_tuples_unpack_to_the_arrays_packed(llama3_vocab):
    ix = Index(SCHEMA, llama3_vocab)
    ix.mask(ix.initial_state)
    a, m = ix._auto, ix._masker
    assert K.packed_size(a.store) == a.packed_store.shape[0] == 17 + sum(x.ndim for x in a.store)
    assert _read_back(_describe_store, a.packed_store, a.store) == _numpy_description(a.store)
    tables = entries._WALK_PACKED[id(m._tries)][1][0]  # (every shortcut on: the masker's default)
    assert len(tables) == len(entries.WALK_TABLES.types)
    assert _read_back(_describe_walk, m._walk_packed(), tables) == _numpy_description(tables)
    sc = entries.thread_stacks(16)
    stacks = (sc.st_node, sc.st_state, sc.st_edge, sc.ret)
    assert _read_back(_describe_stacks, sc.packed, stacks) == _numpy_description(stacks)


def test_the_packed_store_follows_the_store_when_it_grows(tiny_bpe_vocab, monkeypatch):
    monkeypatch.setattr(Automaton, "INITIAL_TERMS", 16)
    monkeypatch.setattr(Automaton, "INITIAL_STATES", 2)
    monkeypatch.setattr(Automaton, "GROWN_TERMS", 16)
    monkeypatch.setattr(Automaton, "GROWN_STATES", 2)
    ix = Index(SCHEMA, tiny_bpe_vocab)
    a = ix._auto
    seen = set()
    s = ix.initial_state
    for i in range(len(DOC)):
        ix.mask(s)
        seen.add(tuple(x.shape for x in a.store))
        assert _read_back(_describe_store, a.packed_store, a.store) == _numpy_description(a.store)
        s = a.walk_bytes(s, DOC[i:i + 1])
        assert s >= 0
    assert len(seen) > 3  # (grown several times, the packed form republished each time)


@pytest.mark.parametrize("vocab_name", ["tiny_bpe_vocab", "llama3_vocab"])
def test_masks_through_the_twins_equal_the_reference_walk(request, vocab_name, monkeypatch):
    """Every shortcut on against the reference walk (``WALK_ALL``, no shortcut: the walk tables'
    second packed form, without the plain runs' tables), both through the twins, at every byte
    of the document, the store growing inside the kernels."""
    vocab = request.getfixturevalue(vocab_name)
    monkeypatch.setattr(Automaton, "INITIAL_TERMS", 64)
    monkeypatch.setattr(Automaton, "INITIAL_STATES", 4)
    fast = Index(SCHEMA, vocab)
    ref = Index(SCHEMA, vocab)
    ref._masker._special_mode = walk.WALK_ALL
    ref._masker._plain_runs = False
    ref._masker._heads = False
    assert_same_masks(fast, ref, DOC)
