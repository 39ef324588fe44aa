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
from dotjson.automaton.ids import C_BIAS as _C_BIAS, LOW31 as _LOW31, VIRT as _VIRT

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


def _at(index, v: int, remaining: int) -> int:
    """The id of the state of ``v``'s shape whose counter stands for ``remaining`` (what a
    document ``count(v) - remaining`` items longer reaches), through the counter machinery."""
    shape, c = _offset(v)
    return index._ids.resolve(shape, c + remaining - _count(index, v))


CASES = {
    # keyword -> (schema of bound n, prefix, continuation item)
    "maxLength": (lambda n: {"type": "string", "maxLength": n}, '"ab', "a", '"'),
    "minLength": (lambda n: {"type": "string", "minLength": n}, '"ab', "a", '"'),
    "maxItems": (lambda n: {"type": "array", "items": {"type": "integer"}, "maxItems": n}, "[1,2", ",3", "]"),
    "minItems": (lambda n: {"type": "array", "items": {"type": "integer"}, "minItems": n}, "[1,2", ",3", "]"),
    "maxProperties": (lambda n: {"type": "object", "maxProperties": n}, '{"a":1', ',"b":2', "}"),
    "minProperties": (lambda n: {"type": "object", "minProperties": n}, '{"a":1', ',"b":2', "}"),
    # (minContains/maxContains: no shape - after an item "1" it may still become "12", so the
    # state is an alternation of two counts - see test_counted_contains_same_as_unrolled)
    "quantifier": (lambda n: {"type": "string", "pattern": f"^(ab){{0,{n}}}$"}, '"ab', "ab", '"'),
}


def _lockstep(a, sa, b, sb, ids):
    """Walk ``ids`` from ``sa`` in index ``a`` and ``sb`` in ``b``: the same fate, acceptance
    and mask at every step. Returns the number of tokens both took."""
    for i, t in enumerate(ids):
        assert _mask_set(a, sa) == _mask_set(b, sb), i
        assert a.is_accepting(sa) == b.is_accepting(sb), i
        sa, sb = a.next_state(sa, t), b.next_state(sb, t)
        assert (sa == DEAD) == (sb == DEAD), i
        if sa == DEAD:
            return i
    assert a.is_accepting(sa) == b.is_accepting(sb)
    return len(ids)


@pytest.mark.parametrize("n", BIG)
@pytest.mark.parametrize("kw", sorted(CASES))
def test_near_a_large_bound_exact(tiny_bpe_vocab, kw, n):
    """A document that has come within ``r`` items of a bound of 2**29 - 1 .. 2**63 - 1 behaves
    exactly as one at the same distance from a small bound (every mask, acceptance, the item
    that is one too many refused) — from far (``r`` 90) through near (``r`` 3) to the end."""
    make, prefix, item, close = CASES[kw]
    vocab = tiny_bpe_vocab
    big = Index(make(n), vocab)
    small = Index(make(100), vocab)
    vb = _walk(big, _ids(vocab, prefix.encode()))[-1]
    vs = _walk(small, _ids(vocab, prefix.encode()))[-1]
    assert vb >= _VIRT and vs >= _VIRT, (vb, vs)
    r = _count(small, vs)
    w = _at(big, vb, r)
    assert w >= _VIRT and _count(big, w) == r
    # the rest of the small document's items, one too many, then the close
    cont = _ids(vocab, (item * (r + 1)).encode())
    took = _lockstep(big, w, small, vs, cont)
    assert took < len(cont) or kw in ("minLength", "minItems", "minProperties", "minContains")
    for k in (r - 1, r, r + 1):  # closing after k more items: exactly what the small bound says
        ids = _ids(vocab, (item * k + close).encode())
        _lockstep(big, w, small, vs, ids)


@pytest.mark.parametrize("kw", sorted(CASES))
def test_far_from_a_huge_bound_counts_exactly(tiny_bpe_vocab, kw):
    """2**40 + 5 items from a bound of 2**63 - 1 (a lane of its own: the offset would not fit
    the id) and 2**62 from it: the id stays below 2**63, the count is exact token after token,
    and the masks are those of an index whose bound is that distance away."""
    make, prefix, item, close = CASES[kw]
    vocab = tiny_bpe_vocab
    big = Index(make(2**63 - 1), vocab)
    vb = _walk(big, _ids(vocab, prefix.encode()))[-1]
    for r in (2**40 + 5, 2**62):
        w = _at(big, vb, r)
        assert _VIRT <= w < 2**63 and _count(big, w) == r
        other = Index(make(2**63 - 1 - _count(big, vb) + r), vocab)
        vo = _walk(other, _ids(vocab, prefix.encode()))[-1]
        assert _count(other, vo) == r
        ids = _ids(vocab, (item * 7).encode())
        _lockstep(big, w, other, vo, ids)
        s = w
        for t in ids:
            s = big.next_state(s, t)
        assert s >= _VIRT and _count(big, s) == r - 7


def test_two_sided_large_bounds_exact(tiny_bpe_vocab):
    """minLength with a large maxLength: ``R{lo} R{0,hi-lo}``, the same language."""
    vocab = tiny_bpe_vocab
    for lo, hi in [(3, 2**31 - 1), (40, 2**63 - 1), (2**31 - 1, 2**32), (2**32, 2**32), (2**29, 2**63 - 1),
                   (40, 2**29 - 1), (30, 2**28 + 35), (35, 2**28 + 30), (2**28, 2**29 - 1)]:
        schema = {"type": "string", "minLength": lo, "maxLength": hi}
        index = Index(schema, vocab)
        for k in range(0, 45):
            doc = "a" * k
            assert index.accepts(json.dumps(doc)) == jsonschema.Draft202012Validator(schema).is_valid(doc), (lo, hi, k)
    # near both ends of a large two-sided range: exact (lo = hi = 2**32: one count)
    index = Index({"type": "string", "minLength": 2**32, "maxLength": 2**32}, vocab)
    small = Index({"type": "string", "minLength": 60, "maxLength": 60}, vocab)
    vb = _walk(index, _ids(vocab, b'"ab'))[-1]
    vs = _walk(small, _ids(vocab, b'"ab'))[-1]
    w = _at(index, vb, _count(small, vs))
    for k in (57, 58, 59):
        _lockstep(index, w, small, vs, _ids(vocab, b"a" * k + b'"'))


@pytest.mark.parametrize("schema,text", [
    ({"type": "string", "pattern": "^[a-z ]*$", "maxLength": 2**31 - 1}, "ab cd" * 30),
    ({"type": "string", "pattern": "^a*b{40}$", "maxLength": 2**63 - 1}, "a" * 20 + "b" * 40),
    ({"type": "string", "pattern": "^[ab]*$", "minLength": 3, "maxLength": 2**40}, "ab" * 50),
    ({"type": "string", "pattern": "^(ab){2147483648,}$"}, "ab" * 50),
    ({"type": "array", "items": {"type": "string", "pattern": "^x+$"}, "maxItems": 2**32}, None),
    ({"type": "array", "items": {"type": "string", "maxLength": 2**31 - 1}, "maxItems": 2**63 - 1},
     None),
])
def test_large_counts_same_masks_as_reference(tiny_bpe_vocab, schema, text):
    """Masks and acceptance at every step equal the reference engine's (Python integers, no
    lanes), also for a large count inside an intersection (a pattern with a length)."""
    vocab = tiny_bpe_vocab
    index = Index(schema, vocab)
    ref = naive.Automaton(index.ir)
    data = b'["x","' + b"x" * 40 + b'","xx"]' if text is None else ('"' + text + '"').encode()
    s, r = index.initial_state, ref.start
    for i, t in enumerate(_ids(vocab, data)):
        assert index.is_accepting(s) == bool(ref.accepting[r]), i
        assert _mask_set(index, s) == reference_mask(ref, r, vocab), i
        s = index.next_state(s, t)
        r = ref.walk_bytes(r, vocab.token_bytes(t))
        assert (s == DEAD) == (r < 0), i
        if s == DEAD:
            break
    if s != DEAD:
        assert index.is_accepting(s) == bool(ref.accepting[r])


def test_saved_index_keeps_its_lanes(tiny_bpe_vocab, tmp_path):
    """``maxLength: 2147483647`` saved mid-string and reloaded: the id goes on (its lane is
    saved), as does an id whose counter moved to a lane allocated after the first mask."""
    vocab = tiny_bpe_vocab
    index = Index({"type": "array", "items": {"type": "string", "maxLength": 2**31 - 1},
                   "minItems": 2**63 - 1}, vocab)
    v = _walk(index, _ids(vocab, b'["' + b"a" * 50))[-1]
    assert v >= _VIRT
    w = _at(index, v, 2**31 - 1 - 2**25)  # past the first lane's room: a lane of its own
    lanes = list(index._auto.rules.lanes.anchors)
    assert len(lanes) == 3, lanes
    index.serialize_to_disk(tmp_path / "ix")
    again = Index.deserialize_from_disk(tmp_path / "ix", vocab)
    assert again._auto.rules.lanes.anchors == lanes
    rest = _ids(vocab, b"a" * 30 + b'"')
    for s in (v, w):
        _lockstep(again, s, index, s, rest)
        assert _count(again, s) == _count(index, s)
    s = v
    for t in rest + _ids(vocab, b',"x"'):
        s = again.next_state(s, t)
    assert s != DEAD and not again.is_accepting(s) and again.is_prefix('["x"')
    fresh = Index.deserialize_from_disk(tmp_path / "ix", vocab)
    assert fresh.accepts('["' + "a" * 100 + '"') is False and fresh.is_prefix('["' + "a" * 100 + '"')


def test_forged_lane_ids_are_refused(tiny_bpe_vocab):
    vocab = tiny_bpe_vocab
    index = Index({"type": "string", "maxLength": 2**40}, vocab)
    v = _walk(index, _ids(vocab, b'"abc'))[-1]
    shape, c = _offset(v)
    assert v >= _VIRT and abs(c) < 100 and _count(index, v) == 2**40 - 3
    assert _at(index, v, 5) < _VIRT  # near the bound: an exact state
    n = index._auto.n_states
    for bad in (_VIRT | (c + _C_BIAS) << 31 | index.initial_state,  # not a shape
                _VIRT | (c + _C_BIAS) << 31 | n,  # not a state
                v | 1 << 63):
        with pytest.raises(DotjsonIndexError, match=f"Invalid state {bad}"):
            index.next_state(bad, 5)
    assert index.next_state(v, _ids(vocab, b"a")[0]) >= _VIRT


def test_many_distinct_large_counts(tiny_bpe_vocab):
    """Counts close together share a lane; far-apart ones take a lane each. A schema holds at
    most 31 distinct lane counts (half the lanes: a two-sided repetition takes the difference
    too), refused by Index() with the keyword and pointer beyond: never at a later mask."""
    from dotjson.errors import UnsupportedSchemaError
    from dotjson.jsonschema.normalize import keywords as normalize

    assert normalize._LANE_COUNT == counters.BAND and 2 * normalize._MAX_LANE_COUNTS <= counters.N_LANES
    vocab = tiny_bpe_vocab
    k_max = normalize._MAX_LANE_COUNTS
    ok = {"anyOf": [{"type": "string", "minLength": 2**40 + k * 2**22, "maxLength": 2**50 + k * 2**22}
                    for k in range(k_max // 2)] + [{"type": "string", "maxLength": 2**31 - 1}]}
    index = Index(ok, vocab)
    assert index.accepts('"abc"') and index.is_prefix('"abc') and not index.accepts('"abc')
    assert len(index._auto.rules.lanes.anchors) <= counters.N_LANES
    branches = [{"type": "string", "maxLength": 2**40 + k * 2**22} for k in range(k_max)]
    assert Index({"anyOf": branches}, vocab).accepts('"abc"')
    for extra, kw, where in [({"type": "array", "maxItems": 2**60}, "maxItems", "/anyOf/31"),
                             ({"type": "string", "pattern": "^a{0,99999999999}$"}, "pattern", "/anyOf/31/pattern")]:
        with pytest.raises(UnsupportedSchemaError, match="distinct counts") as e:
            Index({"anyOf": branches + [extra]}, vocab)
        assert e.value.keyword == kw and where in str(e.value), str(e.value)



def test_a_pattern_needing_more_than_the_fuel_is_refused_at_index(tiny_bpe_vocab):
    """A large lower bound inside an intersection: the emptiness search would walk it (as for
    ``minLength: 10**6``): refused by Index(), never later."""
    from dotjson.errors import LimitExceededError

    for schema in ({"type": "string", "pattern": "^[ab]*$", "minLength": 2**32},
                   {"type": "string", "pattern": "^a{2147483648}$", "maxLength": 2**30}):
        with pytest.raises(LimitExceededError, match="fuel"):
            Index(schema, tiny_bpe_vocab)


@pytest.mark.parametrize("schema", [
    {"type": "array", "contains": {"const": 1}, "minContains": 3},
    {"type": "array", "items": {"type": "integer"}, "contains": {"const": 1}, "minContains": 2, "maxContains": 3},
    {"type": "array", "items": {"type": "integer"}, "contains": {"const": 1}, "minContains": 0, "maxContains": 2},
    {"type": "array", "items": {"type": "integer"}, "contains": {"const": 1}, "minContains": 0, "maxContains": 0},
    {"type": "array", "contains": {"type": "integer"}, "minContains": 2, "minItems": 2},
    {"type": "array", "contains": {"const": 1}, "minContains": 0, "maxContains": 1, "minItems": 1},
])
def test_counted_contains_same_as_unrolled(tiny_bpe_vocab, schema, monkeypatch):
    """The counted form of minContains/maxContains (used above 1000) and the unrolled one accept
    exactly what the jsonschema validator accepts, on every array of up to 5 items over 1, 2, "a"."""
    import itertools

    from dotjson.jsonschema import arrays

    unrolled = Index(schema, tiny_bpe_vocab)
    monkeypatch.setattr(arrays, "CONTAINS_UNROLL", -1)
    counted = Index(schema, tiny_bpe_vocab)
    validator = jsonschema.Draft202012Validator(schema)
    for n in range(6):
        for doc in itertools.product([1, 2, "a"], repeat=n):
            text = json.dumps(list(doc), separators=(",", ":"))
            want = validator.is_valid(list(doc))
            # (the unrolled form accepted [] under minContains 0 with minItems 1, before)
            assert counted.accepts(text) == want and unrolled.accepts(text) == want, text


def test_lane_values_never_drift_out_of_their_half(tiny_bpe_vocab, monkeypatch):
    """An exact lane value loses one per item, each item a new state: with lanes in use an index
    refuses more states than the room below any exact value (``counters.DRIFT_STATES``)."""
    from dotjson.errors import LimitExceededError

    vocab = tiny_bpe_vocab
    monkeypatch.setattr(counters, "DRIFT_STATES", 40)
    index = Index({"type": "string", "pattern": "^[a-z]*$", "maxLength": 2**31 - 1}, vocab)
    with pytest.raises(LimitExceededError, match="more than 40 with counts of at least"):
        _walk(index, _ids(vocab, b'"' + b"abcdefgh" * 20))
    # no lane count: no such limit
    plain = Index({"type": "string", "pattern": "^[a-z]*$", "maxLength": 2**29 - 1}, vocab)
    assert _walk(plain, _ids(vocab, b'"' + b"abcdefgh" * 20))[-1] != DEAD
    assert plain._auto.n_states > 40
