"""Issue 34: repetition bounds of any size (``maxLength: 2147483647`` and up to ``2**63 - 1`` and
beyond), exact. Counts of at least ``counters.BAND`` live in lanes (``counters.Lanes``); a far
counter is a shape plus a small offset whatever its size. Documents of such lengths cannot be
written, so the ids are checked: the offset and the count a state stands for, and a document
near a huge bound is reached by constructing the state of the same shape at that offset.
References we did not write: the ``jsonschema`` validator and the reference engine
``tests/naive_automaton.py`` (Python integers, no lanes).
"""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

import naive_automaton as naive
from naive import reference_mask
from dotjson import Guide, Index
from dotjson.automaton import counters
from dotjson.errors import DotjsonIndexError
from dotjson.index import _C_BIAS, _LOW31, _VIRT

from test_counters import DEAD, _accepts, _ids, _mask_set, _walk

BIG = [2**29 - 1, 2**29, 2**31 - 1, 2**32, 2**63 - 1]


def _offset(v: int) -> tuple[int, int]:
    return v & _LOW31, ((v >> 31) & _LOW31) - _C_BIAS


def _count(index, v: int) -> int:
    """The exact count the marker of counter-carrying id ``v`` stands for."""
    a = index._auto
    shape, c = _offset(v)
    return a.rules.lanes.marker_count(a.marker_min(a.term_of(shape)), c)


def test_max_length_int_max_through_index_guide_check(tiny_bpe_vocab):
    vocab = tiny_bpe_vocab
    index = Index('{"type":"string","maxLength":2147483647}', vocab)
    doc = b'"' + b"ab" * 300 + b'"'
    assert index.accepts(doc) and index.check(doc).ok
    assert _accepts(index, doc)
    ids = _ids(vocab, doc)
    g = Guide(index)
    ts = g.get_start_tokensets()
    for t in ids:
        assert ts.contains(t)[0], t
        ts = g.get_next_tokensets([t])
    assert g.is_accepting()[0]
    assert g.states.dtype == np.int64
    s = _walk(index, ids[:-1])[-1]
    assert s >= _VIRT
    assert _count(index, s) == 2**31 - 1 - 600
