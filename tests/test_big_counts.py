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


def _schemas(kw: str, n: int):
    """(schema, documents) for keyword ``kw`` at ``n``: short documents around the small end."""
    if kw in ("minLength", "maxLength"):
        return {"type": "string", kw: n}, ["a" * k for k in range(4)]
    if kw in ("minItems", "maxItems"):
        return {"type": "array", "items": {"type": "integer"}, kw: n}, [list(range(k)) for k in range(4)]
    if kw in ("minProperties", "maxProperties"):
        return {"type": "object", kw: n}, [{f"k{i}": i for i in range(k)} for k in range(4)]
    if kw == "minContains":
        return {"type": "array", "contains": {"const": 1}, kw: n}, [[1] * k + [2] for k in range(4)]
    if kw == "maxContains":
        return ({"type": "array", "items": {"type": "integer"}, "contains": {"const": 1}, kw: n},
                [[1] * k + [2] for k in range(4)])
    assert kw in ("quantifier-min", "quantifier-max")
    q = f"{{{n},}}" if kw == "quantifier-min" else f"{{0,{n}}}"
    return {"type": "string", "pattern": f"^(ab){q}$"}, ["ab" * k for k in range(4)]


KEYWORDS = ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
            "minContains", "maxContains", "quantifier-min", "quantifier-max"]


@pytest.mark.parametrize("n", BIG)
@pytest.mark.parametrize("kw", KEYWORDS)
def test_each_keyword_at_large_counts(tiny_bpe_vocab, kw, n):
    """Every keyword at 2**29 - 1 .. 2**63 - 1 builds at Index(), and short documents are what
    the jsonschema validator says (complete), and all of them prefixes."""
    schema, docs = _schemas(kw, n)
    index = Index(schema, tiny_bpe_vocab)
    for doc in docs:
        text = json.dumps(doc, separators=(",", ":"))
        if kw.startswith("quantifier"):  # (Python's re cannot compile counts this large)
            want = (kw == "quantifier-max")
        else:
            want = jsonschema.Draft202012Validator(schema).is_valid(doc)
        assert index.accepts(text) == want, (text, want)
        assert index.is_prefix(text[:-1])
        r = index.check(text)
        assert r.ok == want, r
