"""Token masks inside arrays of distinct numbers (issue 29, :mod:`dotjson.jsonschema.unique_number_masks`).

The reference is the family's generic walk (``Masker._family_masks = False``: a rule per token
prefix an item may hold, exact by construction, affordable on a small vocabulary): both masks
are compared at every state of random walks over a vocabulary of the tokens that can tell a
relaxed state from the exact one (digits that spell a value read again, its spellings with a
fraction of zeros or an exponent, signs, zero and minus zero, separators that end an item and
begin the next), in the default configuration and the every-valid one; every document a walk
finishes is checked by ``jsonschema``. On Llama 3 the masks of a teacher-forced document are
compared with the generic walk's.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from dotjson import Index, Vocabulary
from dotjson.jsonschema.unique_number_masks import significant, stems
from dotjson.jsonschema.unique_numbers import _key
from naive import bits as _bits, generic_walk_index, walk_against_reference
from test_unique_any import EVERY_VALID, valid  # (the same configuration and helpers)

TOKS = ["[", "]", ",", ", ", " ", "],", "1", "2", "3", "0", "5", "9", "12", "10", "00", "000", "120", ".", ".0", ".5",
        "0.", "1.", "-", "-0", "-1", "e", "E", "e1", "e-", "+", "1e", "0e", "5]", "2,", ",1", ", 2", ",-", "1,2",
        "[1", "[]", " ]", "\n", "{", "}", '"', '"a"', ":", '{"a":', "15", "150", "25", "1.5", "e0", "E+1"]
TOKS = list(dict.fromkeys(TOKS))
EOS = len(TOKS)

SCHEMAS = [
    {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "number"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 12}, "uniqueItems": True, "minItems": 2},
    {"type": "array", "items": {"type": "number", "minimum": -1, "maximum": 2, "multipleOf": 0.5},
     "uniqueItems": True, "maxItems": 4},
    {"type": "array", "items": {"type": "integer", "exclusiveMinimum": -2, "not": {"enum": [3]}},
     "uniqueItems": True, "minItems": 1, "maxItems": 3},
    {"type": "array", "items": {"type": "number", "minimum": 0}, "uniqueItems": True},
    {"anyOf": [{"type": "array", "items": {"type": "integer", "maximum": 20}, "uniqueItems": True},
               {"type": "array", "items": {"type": "number"}, "maxItems": 2}]},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}}},
]


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.from_tuples(TOKS + ["<eos>"], list(range(EOS + 1)), EOS, special_token_ids=[EOS])


def _family_masks_its_states(index) -> bool:
    fams = [f for f in index._auto.grammar.families if type(f).__name__ == "UniqueNumbers"]
    return bool(fams) and all(f.item_node is not None for f in fams)


@pytest.mark.parametrize("config", ["default", "every-valid"])
@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_masks_equal_the_generic_walk(vocab, k, config):
    schema = SCHEMAS[k]
    options = EVERY_VALID if config == "every-valid" else {}
    index, ref = Index(schema, vocab, **options), generic_walk_index(schema, vocab, **options)

    def choose(rng, choices):  # (digits first: values read again are what the masks must refuse)
        digits = [t for t in choices if TOKS[t][:1].isdigit()]
        return rng.choice(digits if digits and rng.random() < 0.6 else choices)

    # (valid reads numbers exactly: 1e1500 is no inf)
    assert walk_against_reference(index, ref, TOKS, EOS, lambda text: valid(schema, text), seeds=8, steps=20,
                                  choose=choose, label=(schema, config))


@pytest.mark.parametrize("config", ["default", "every-valid"])
def test_the_family_masks_its_states(vocab, config):
    # the masks inside the array come from the relaxed state: the reference makes a rule per
    # token prefix (many more rules), this one none per digit string
    options = EVERY_VALID if config == "every-valid" else {}
    schema = SCHEMAS[0]
    index, ref = Index(schema, vocab, **options), generic_walk_index(schema, vocab, **options)
    assert _family_masks_its_states(index)
    for ix in (index, ref):
        s = ix.initial_state
        for t in ["[", "12", ",", "1", "2", ",", "120"]:
            ix.mask(s)
            s = ix.next_state(s, TOKS.index(t))
        ix.mask(s)
    own = [sum(map(f.owns, ix._auto.rules.names)) for ix in (index, ref)
           for f in ix._auto.grammar.families if type(f).__name__ == "UniqueNumbers"]
    assert own[0] < 0.7 * own[1], own


def test_values_read_again_are_refused(vocab):
    index = Index(SCHEMAS[0], vocab)
    s = index.initial_state
    for t in ["[", "12", ",", "1"]:
        s = index.next_state(s, TOKS.index(t))
    got = {TOKS[t] for t in _bits(index.mask(s)) if t < EOS}
    assert "2," not in got and "5]" in got and "2" in got  # (12 read: "12" may still go on, 120)
    s = index.next_state(s, TOKS.index("2"))
    got = {TOKS[t] for t in _bits(index.mask(s)) if t < EOS}
    assert not got & {",", "]", ", ", "],", ".", ".0"} and {"0", "3"} <= got  # (12.0 is 12 again)


def test_stems_and_significant_digits():
    from fractions import Fraction

    assert stems(_key(Fraction(12))) == ("12.",)
    assert stems(_key(Fraction(3, 2))) == ("1.5",)
    assert stems(_key(Fraction(-1, 8))) == ("-0.125",)
    assert stems(_key(Fraction(0))) == ("0.", "-0.")
    assert stems(_key(Fraction(1200))) == ("1200.",)
    assert significant(_key(Fraction(1200))) == "12"
    assert significant(_key(Fraction(-3, 250))) == "12"
    assert significant(_key(Fraction(0))) == ""


def test_saved_and_loaded(vocab, tmp_path):
    index = Index(SCHEMAS[2], vocab)
    s = index.initial_state
    for t in ["[", "12", ","]:
        index.mask(s)
        s = index.next_state(s, TOKS.index(t))
    want = _bits(index.mask(s))
    index.serialize_to_disk(tmp_path / "ix")
    back = Index.deserialize_from_disk(tmp_path / "ix", vocab)
    assert _family_masks_its_states(back)
    s2 = back.initial_state
    for t in ["[", "12", ","]:
        s2 = back.next_state(s2, TOKS.index(t))
    assert _bits(back.mask(s2)) == want


def test_llama3_teacher_forced_against_the_generic_walk(llama3_vocab, llama3_tokenizer):
    schema = {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer", "minimum": 0},
                                                       "uniqueItems": True}}, "required": ["ids"]}
    doc = '{"ids": [7919, 15838, 791, 23757, 0, 1200, 79190]}'
    index, ref = Index(schema, llama3_vocab), generic_walk_index(schema, llama3_vocab)
    s, r = index.initial_state, ref.initial_state
    for t in llama3_tokenizer.encode(doc, add_special_tokens=False):
        got, want = index.mask(s), ref.mask(r)
        assert np.array_equal(got, want)
        assert got[t >> 5] >> (t & 31) & 1
        s, r = index.next_state(s, t), ref.next_state(r, t)
    # "791" read again: the item may not end, and may go on
    s = index.initial_state
    for t in llama3_tokenizer.encode('{"ids": [791, 791', add_special_tokens=False):
        s = index.next_state(s, t)
    m = _bits(index.mask(s))
    ids = {llama3_vocab.token_bytes(t): t for t in range(llama3_vocab.max_token_id())}
    ends = [ids[b] for b in (b",", b"]", b"]}", b"],", b",\n", b" ]") if b in ids]
    assert len(ends) >= 3 and not set(ends) & m
    assert {ids[b"0"], ids[b"5"], ids[b"123"]} <= m


@pytest.mark.parametrize("doc,ok", [
    ("[1e999999999999999999999,1e999999999999999999999]", False),
    ("[1e999999999999999999999,10e999999999999999999998]", False),
    ("[1e999999999999999999999,2e999999999999999999999]", True),
    ("[-1e999999999999999999999,1e999999999999999999999]", True),
    ("[1e-99999,0.1e-99998]", False),
    ("[1e-99999,1e-99998,0]", True),
    ("[1e5000,0.5e5000,5e4999]", False),
    ("[1e5000,0.5e5000]", True),
    ("[12e3,12000]", False),
])
def test_values_of_any_exponent(vocab, doc, ok):
    # a value's exponent may be past any rational worth building (1e999999999999999999999 is
    # a JSON number): it is kept as digits and exponent, equal values still equal
    index = Index(SCHEMAS[1], vocab, **EVERY_VALID)
    assert index.accepts(doc) is ok and index.is_prefix(doc[:-1])
    bounded = {"type": "array", "items": {"type": "number", "minimum": 0, "multipleOf": 0.5}, "uniqueItems": True}
    index = Index(bounded, vocab, **EVERY_VALID)
    assert index.accepts(doc) is (ok and "-" not in doc and "e-" not in doc)


def test_clamped_exponents_decide_as_the_rationals(monkeypatch):
    # holds_sci clamps an exponent past FAR_EXP to where the constants stop telling values
    # apart: with FAR_EXP lowered, every clamped answer is checked against the exact rational
    from decimal import Decimal
    from fractions import Fraction

    from dotjson.jsonschema import numarith
    from dotjson.jsonschema.numarith import _Arith, far_of, sci

    monkeypatch.setattr(numarith, "FAR_EXP", 3)
    rng = random.Random(5)
    consts = [None, "0", "1", "-2.5", "100", "0.001", "7e5", "-3e-4"]
    checked = 0
    for _ in range(300):
        lo, hi = rng.choice(consts), rng.choice(consts)
        mults = rng.choice([[], ["0.5"], ["3"], ["1e2"], ["0.25", "6"]])
        nots = rng.choice([[], ["2"], ["0.1"]])
        ne = rng.choice([[], ["5e6"], ["-0.0003"]])
        integer = rng.choice([None, True, False])
        a = _Arith(lo, rng.random() < 0.3, hi, rng.random() < 0.3, mults, nots, ne, integer)
        for _ in range(10):
            text = f"{rng.choice(['', '-'])}{rng.randint(1, 999)}e{rng.randint(-40, 40)}"
            neg, sig, E = sci(text)
            assert a.holds_sci(neg, sig, E) == a.holds(Fraction(Decimal(text))), (lo, hi, mults, nots, ne, integer, text)
            checked += abs(E) > 3
    assert checked > 1000
    assert sci("-120.50e-3") == (True, "1205", -4) and sci("0.0e9") == (False, "0", 0)
    assert far_of(Fraction(10) ** 5) == ("1", 5) and far_of(Fraction(3, 1000)) is None
