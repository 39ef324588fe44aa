"""Numbers in every spelling (issues 29 and 32): exponents under bounds, integers, multipleOf.

The reference is the ``jsonschema`` package (Draft 2020-12), fed the document with its numbers
read as :class:`decimal.Decimal` (no float rounding) and a type checker for which a Decimal with
an integral value is an integer (the specification's rule; ``jsonschema`` itself only knows
``int`` and ``float``). Every verdict of dotjson's automaton is compared with it:

* the "every valid document" configuration (``property_order="any"``, ``close_objects=False``,
  ``whitespace="json"``, and so ``spellings="any"``): accepted exactly when valid, exponents
  included;
* the default generation configuration (``spellings="canonical"``): exactly the valid numbers in
  plain notation, and never an invalid one (its documented policy: no exponent under a bound,
  ``multipleOf`` or ``type: integer``).
"""

from __future__ import annotations

import decimal
import json
import re
import random
from decimal import Decimal

import jsonschema
import pytest

from dotjson.automaton import Automaton
from dotjson.errors import GrammarError
from dotjson.grammar import lark_parses, to_lark
from dotjson.jsonschema import schema_to_grammar

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}


def _is_integer(checker, x) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return True
    if isinstance(x, Decimal):
        return x.is_finite() and x == x.to_integral_value()
    return isinstance(x, float) and x.is_integer()


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))


def reference(schema, text: str) -> bool:
    """``jsonschema``'s verdict on the JSON text, its numbers exact."""
    with decimal.localcontext() as ctx:
        ctx.prec = 5000
        ctx.Emax, ctx.Emin = 10 ** 9, -(10 ** 9)
        doc = json.loads(text, parse_float=Decimal, parse_int=int)
        sch = json.loads(json.dumps(schema), parse_float=Decimal)
        return _Validator(sch).is_valid(doc)


_CACHE: dict = {}


def automaton(schema, **kw):
    key = (json.dumps(schema, sort_keys=True), tuple(sorted(kw.items())))
    a = _CACHE.get(key)
    if a is None:
        a = _CACHE[key] = Automaton(schema_to_grammar(schema, **kw))
    return a


def accepts(schema, text, **kw) -> bool:
    return automaton(schema, **kw).matches(text.encode())


def random_number(rng: random.Random, exponent: bool | None = None) -> str:
    """A JSON number text, biased toward the edges: zeros, long runs, exponents."""
    sign = "-" if rng.random() < 0.3 else ""
    r = rng.random()
    if r < 0.15:
        ip = "0"
    else:
        ip = str(rng.choice("123456789")) + "".join(rng.choice("0000123456789") for _ in range(rng.randint(0, 5)))
    fp = ""
    if rng.random() < 0.5:
        fp = "." + "".join(rng.choice("000001234579") for _ in range(rng.randint(1, 6)))
    ex = ""
    if exponent or (exponent is None and rng.random() < 0.6):
        ex = rng.choice("eE") + rng.choice(["", "", "+", "-", "-"]) + \
            rng.choice(["0", "00", "1", "2", "3", "5", "02", "10", "30", "31", "7"])
    return sign + ip + fp + ex


SCHEMAS = [
    {"type": "integer"},
    {"type": "number", "minimum": 100},
    {"type": "number", "maximum": 500},
    {"type": "number", "exclusiveMinimum": -2.5, "exclusiveMaximum": 1e3},
    {"type": "integer", "minimum": -20, "maximum": 3000},
    {"type": "integer", "multipleOf": 1e30},
    {"type": "number", "multipleOf": 1e30},
    {"multipleOf": 0.25},
    {"type": "integer", "multipleOf": 7},
    {"type": "number", "multipleOf": 2.5, "maximum": 1000},
    {"type": "number", "multipleOf": 0.01},
    {"type": "number", "not": {"multipleOf": 3}},
    {"type": "number", "not": {"type": "integer"}},
    {"const": 100},
    {"enum": [1, 2.5, -0.001, 1e20]},
    {"type": "number", "not": {"enum": [0, 150]}},
    {"type": "number", "minimum": 0.0001, "maximum": 0.0002},
    {"type": "integer", "exclusiveMaximum": 0},
    {"type": "integer", "multipleOf": 20, "minimum": 40},
    {"type": "number", "minimum": 12345678901234567890123456789012345, "maximum": 1e40},
    {"type": "number", "not": {"multipleOf": 100}},
    {"type": "integer", "multipleOf": 0.5, "maximum": 1e3, "not": {"multipleOf": 40}},
]


def test_issue_cases_every_valid():
    assert all(accepts({"type": "integer"}, t, **EVERY_VALID) for t in ["1e3", "-2E1", "1.0e1", "100e-2", "1E+2"])
    assert not any(accepts({"type": "integer"}, t, **EVERY_VALID) for t in ["1.5", "1.55e1", "100e-3", "1e-1"])
    mn = {"type": "number", "minimum": 100}
    assert accepts(mn, "1.5E2", **EVERY_VALID) and accepts(mn, "0.001e5", **EVERY_VALID)
    assert not accepts(mn, "9.9E1", **EVERY_VALID) and not accepts(mn, "0.000999e5", **EVERY_VALID)
    big = {"type": "integer", "multipleOf": 1e30}
    assert accepts(big, "1e30", **EVERY_VALID) and accepts(big, "2" + "0" * 30, **EVERY_VALID)
    assert not accepts(big, "1e29", **EVERY_VALID) and not accepts(big, "1.5e30", **EVERY_VALID)
    # whether 0.00…01e+N reaches the bound depends on how many zeros came first
    for n in range(0, 40, 3):
        text = "0." + "0" * n + "1e+" + str(n + 3)  # = 100
        assert accepts(mn, text, **EVERY_VALID) and reference(mn, text)
        text = "0." + "0" * n + "1e+" + str(n + 2)  # = 10
        assert not accepts(mn, text, **EVERY_VALID) and not reference(mn, text)


def test_multipleof_large_divisor_in_plain_notation():
    # a multiple of 10^30 ends in 30 zeros: 31 states, no remainder automaton of 10^30 states
    s = {"type": "integer", "multipleOf": 1e30}
    assert accepts(s, "0") and accepts(s, "3" + "0" * 30) and accepts(s, "-1" + "0" * 31)
    assert not accepts(s, "1" + "0" * 29) and not accepts(s, "1" + "0" * 29 + "1")
    assert not accepts(s, "1e30")  # the default policy: plain notation
    t = to_lark(schema_to_grammar(s))  # a regular language, written out: Lark agrees
    assert lark_parses(t, "7" + "0" * 30) and not lark_parses(t, "7" + "0" * 29)


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_random_numbers_match_jsonschema(k):
    schema = SCHEMAS[k]
    rng = random.Random(1000 + k)
    texts = {random_number(rng) for _ in range(700)}
    # the schema's own constants in other spellings
    for c in [100, 150, 1000, 3000, 0, 7, 2.5, 1e20, 1e30, 1e40]:
        d = Decimal(repr(c)) if isinstance(c, float) else Decimal(c)
        texts |= {f"{d:e}", f"{d:E}".replace("E+", "E"), f"{d * 10:f}e-1", f"{d / 1000:f}e3", f"-{d:e}"}
    texts |= {"0", "-0", "0.0e5", "-0e-0", "1e0", "10e-1"}
    for text in sorted(texts):
        want = reference(schema, text)
        assert accepts(schema, text, **EVERY_VALID) == want, (schema, text, want)
        got = accepts(schema, text)
        if "e" in text.lower():
            assert not got or want, (schema, text)  # never an invalid document
        else:
            assert got == want, (schema, text, want)  # plain notation: exact


def test_long_mantissas_and_exponents():
    rng = random.Random(7)
    for schema in (SCHEMAS[0], SCHEMAS[1], SCHEMAS[5], SCHEMAS[8], SCHEMAS[13]):
        for _ in range(60):
            n = rng.randint(0, 40)
            ip = rng.choice(["0", "1", "7", "100", "123"])
            fp = "." + "0" * n + rng.choice(["", "1", "5", "07"]) if rng.random() < 0.7 else ""
            if fp == ".":
                fp = ".0"
            e = rng.randint(-5, 50)
            text = f"{ip}{fp}e{e}"
            assert accepts(schema, text, **EVERY_VALID) == reference(schema, text), (schema, text)


def test_draft4_integers_have_no_exponent():
    d4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "minimum": 1}
    assert accepts(d4, "10", **EVERY_VALID) and not accepts(d4, "1e1", **EVERY_VALID)
    n4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "minimum": 100}
    assert accepts(n4, "1.5e2", **EVERY_VALID) and not accepts(n4, "1.5e1", **EVERY_VALID)


def hypothesis_instances_accepted(schemas, max_examples: int, default: bool = False) -> None:
    """Random valid documents of each schema (hypothesis-jsonschema) are accepted in the
    every-valid configuration, and with ``default`` in the default one too when written in plain
    notation (its strings spelled canonically)."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis_jsonschema import from_schema

    for schema in schemas:
        seen = []

        @hypothesis.settings(max_examples=max_examples, deadline=None, database=None,
                             suppress_health_check=list(hypothesis.HealthCheck))
        @hypothesis.given(from_schema(schema))
        def run(x):
            text = json.dumps(x)
            if reference(schema, text):
                seen.append(text)
                assert accepts(schema, text, **EVERY_VALID), (schema, text)
                plain = json.dumps(x, ensure_ascii=False)
                # (the default configuration's generation bounds: a number the schema leaves unbounded
                # has at most 20 integer digits, GENERATION_BOUNDS["number_digits"])
                assert not default or accepts(schema, plain) or "e" in plain.lower() \
                    or re.search(r"\d{21,}", plain), (schema, plain)

        run()
        assert seen, schema


def test_hypothesis_instances_are_accepted():
    hypothesis_instances_accepted(SCHEMAS[:12], 40)


def test_exponent_grammar_has_no_lark_text_but_saves():
    g = schema_to_grammar({"type": "integer", "minimum": 3}, **EVERY_VALID)
    with pytest.raises(GrammarError, match="not context-free"):
        to_lark(g)
    from dotjson.serialization import grammar_from_json, grammar_to_json

    g2 = grammar_from_json(json.loads(json.dumps(grammar_to_json(g))))
    a = Automaton(g2)
    assert a.matches(b"3e0") and a.matches(b"0.3e1") and not a.matches(b"2.9e0") and not a.matches(b"3.5")


def test_products_too_large_to_build_eagerly_are_built_lazily():
    # Handwritten num2 of MaskBench: 13 | n, none of 2, 3, 5, 7, 11, 100 < n < 1000, n != 169 (30,030
    # remainders in the product: refused before as "numeric bounds too large to compile")
    s = {"type": "integer", "multipleOf": 13,
         "not": {"anyOf": [{"multipleOf": 2}, {"multipleOf": 3}, {"multipleOf": 5}, {"multipleOf": 7},
                           {"multipleOf": 11}]},
         "exclusiveMinimum": 100, "exclusiveMaximum": 1000, "$ref": "#/definitions/n169",
         "definitions": {"n169": {"not": {"const": 169}}}}
    for kw in ({}, EVERY_VALID):
        for n in list(range(95, 400)) + [221, 2210, 13 * 17 * 19, 13 * 71]:
            assert accepts(s, str(n), **kw) == reference(s, str(n)), (n, kw)
    for text in ["2.21e2", "22100e-2", "1.69e2", "2.47E+2", "4.03e2"]:
        assert accepts(s, text, **EVERY_VALID) == reference(s, text), text


def _fraction_verdict(schema, text) -> bool:
    """The verdict of plain rational arithmetic (``fractions``) on a number text, for the
    schemas of :func:`test_multipleof_of_any_size_against_fractions`."""
    from fractions import Fraction

    v = Fraction(Decimal(text))
    ok = True
    for key, div in (("multipleOf", schema.get("multipleOf")), ("not", schema.get("not", {}).get("multipleOf"))):
        if div is not None:
            mult = (v / Fraction(Decimal(repr(div)) if isinstance(div, float) else Fraction(div))).denominator == 1
            ok &= mult if key == "multipleOf" else not mult
    if schema.get("type") == "integer":
        ok &= v.denominator == 1
    for key, cmp in (("minimum", v.__ge__), ("maximum", v.__le__), ("exclusiveMinimum", v.__gt__),
                     ("exclusiveMaximum", v.__lt__)):
        if key in schema:
            b = schema[key]
            ok &= cmp(Fraction(Decimal(repr(b)) if isinstance(b, float) else b))
    return ok


BIG_DIVISORS = [
    {"type": "integer", "multipleOf": 0.123456789},  # the suite's "float division = inf"
    {"multipleOf": 2 ** 40},  # 2^a: the last 40 digits decide, 2^40 remainders
    {"type": "number", "multipleOf": 7 * 5 ** 30, "maximum": 1e40, "minimum": -1e25},
    {"type": "number", "multipleOf": 0.000123456789, "not": {"multipleOf": 2}},
    {"type": "integer", "multipleOf": 2 ** 64, "exclusiveMinimum": 2 ** 64, "exclusiveMaximum": 2 ** 66},
]


@pytest.mark.parametrize("k", [k if k != 2 else pytest.param(k, marks=pytest.mark.slow)
                               for k in range(len(BIG_DIVISORS))])  # (2: bounds, ~3 s)
def test_multipleof_of_any_size_against_fractions(k):
    # a divisor with more than 10,000 remainders (refused before): the automaton is built a state
    # at a time and whether a prefix can still be completed is decided in rationals
    from fractions import Fraction

    schema = BIG_DIVISORS[k]
    m = Fraction(Decimal(repr(schema["multipleOf"])) if isinstance(schema["multipleOf"], float)
                 else schema["multipleOf"])
    rng = random.Random(77 + k)
    texts = {random_number(rng) for _ in range(12)}
    for j in [0, 1, 3, -4, 12345, 2 ** 70 + 1]:
        v = j * m
        d = Decimal(v.numerator) / Decimal(v.denominator) if v.denominator != 1 else Decimal(v.numerator)
        plain = f"{d:f}"
        texts |= {plain, f"{d:e}", plain + ("0" if "." in plain else ".0"), f"{d * 10:f}e-1", f"{d + 1:f}",
                  f"{d / 2:f}"}
    texts |= {"1e308", "-0", "0.0e7"}
    for text in sorted(texts):
        want = _fraction_verdict(schema, text)
        assert reference(schema, text) == want, text  # the two oracles agree
        assert accepts(schema, text, **EVERY_VALID) == want, (schema, text, want)
        # the generation defaults but the bounds policy: every plain spelling, exactly
        got = accepts(schema, text, bounds="schema")
        assert got == want if "e" not in text.lower() else (not got or want), (schema, text, want)
        # with it (at most 20 integer digits where the schema sets no bound), a subset
        assert not accepts(schema, text) or want, (schema, text, want)
    assert sum(_fraction_verdict(schema, t) for t in texts) >= 4  # (the texts hold valid ones)


# Products of small remainders past the eager build's 4,000 states: each divisor is small, but a
# branch's automaton tracks them all at once (MaskBench's Handwritten---allany7 and allany8: any
# multiple of 429 that no 8 divides, written with anyOf / oneOf / not over seven divisors)
PRODUCTS = [
    {"type": "number", "multipleOf": 13,
     "not": {"anyOf": [{"multipleOf": d} for d in (2, 3, 5, 7, 11)]}},
    {"type": "number", "allOf": [
        {"anyOf": [{"multipleOf": 33}, {"multipleOf": 12}, {"multipleOf": 77}]},
        {"anyOf": [{"allOf": [{"not": {"multipleOf": 6}}, {"not": {"multipleOf": 7}}]}, {"multipleOf": 44}]},
        {"anyOf": [{"not": {"multipleOf": 11}}, {"multipleOf": 13}]}, {"not": {"multipleOf": 8}}]},
    {"type": "number", "allOf": [
        {"oneOf": [{"multipleOf": 33}, {"multipleOf": 12}, {"multipleOf": 77}]},
        {"oneOf": [{"allOf": [{"not": {"multipleOf": 6}}, {"not": {"multipleOf": 7}}]}, {"multipleOf": 44}]},
        {"oneOf": [{"not": {"multipleOf": 11}}, {"multipleOf": 13}]}, {"not": {"multipleOf": 8}}]},
    {"type": "number", "multipleOf": 0.25, "exclusiveMinimum": -12.5,
     "not": {"anyOf": [{"multipleOf": d} for d in (0.75, 1.75, 2.75, 3.25)]}},
    # Handwritten---num4 (a multiple of 8,721 in a range, refused at its first mask before:
    # the search passed its 400,000 states; so it is no reference here, jsonschema is)
    {"properties": {"^$": True}, "required": ["a"], "allOf": [
        {"multipleOf": 6.75}, {"multipleOf": 19}, {"multipleOf": 9.5}, {"multipleOf": 2.125}],
     "not": {"anyOf": [{"multipleOf": d} for d in (2, 6.5, 5, 7, 11, 37)]},
     "exclusiveMinimum": -100000, "exclusiveMaximum": -10000, "$ref": "#/definitions/n169",
     "definitions": {"n169": {"not": {"const": -78489}}}},
]


def _number_families(schema, **kw):
    """The grammar (hold it: a dropped grammar releases its families) and its number families
    whose productivity is searched or computed (plain notation built lazily; exponents)."""
    from dotjson.jsonschema.numfamily import ExponentNumbers, LazyNumberDFA

    g = schema_to_grammar(schema, **kw)
    return g, [f for f in g.families if isinstance(f, (LazyNumberDFA, ExponentNumbers))]


def _live_as_searched(fam, depth: int, width: int) -> int:
    """Checks ``fam.live`` (decided in rationals from a state's text) against the search over
    the family's own states (the reference: exact, but it walked ~260,000 states, 20 s, in
    allany7's first mask, and its exponent family's ~100 s) at every prefix of up to ``depth``
    characters (``width`` of each length's live ones extended); ``(asked, alive)``."""
    import copy

    assert fam._arith is not None
    ref = copy.copy(fam)
    ref._arith, ref._prod, ref._rep = None, {}, {ref.init_state(): ""}
    frontier, asked, alive = [(fam.init_state(), "")], 0, 0
    for d in range(depth):
        nxt = []
        for st, text in frontier:
            for chars, st2 in fam.moves(st):
                fam._rep.setdefault(st2, text + chars[0])
                got, want = fam.live(st2), ref.live(st2)
                assert got == want, (fam.kind, text + chars[0], got, want)
                asked += 1
                alive += want
                if want:
                    nxt.append((st2, text + chars[0]))
        frontier = nxt[:: max(1, len(nxt) // width)]
    assert alive > 0
    return asked, alive


@pytest.mark.parametrize("k, every", [
    (0, False), (0, True), (3, False), (3, True),
    *(pytest.param(k, e, marks=pytest.mark.slow) for k, e in [(1, False), (1, True), (2, False), (2, True)])])
def test_products_decide_liveness_as_the_search_does(k, every):
    g, fams = _number_families(PRODUCTS[k], **(EVERY_VALID if every else {}))
    assert len(fams) >= 1 + every  # (the plain automaton is lazy: past the eager build's limit)
    counts = [_live_as_searched(f, 4, 40) for f in fams]
    assert sum(a for a, _ in counts) > 300 and any(v < a for a, v in counts)  # (dead ones too)


@pytest.mark.parametrize("k", [k for k, s in enumerate(SCHEMAS) if "multipleOf" in json.dumps(s)])
def test_exponent_families_decide_liveness_as_the_search_does(k):
    # (a family with divisors decides in rationals; bounds alone stay with the search)
    g, fams = _number_families(SCHEMAS[k], **EVERY_VALID)
    fams = [f for f in fams if f.kind == "exponent_numbers"]
    assert fams
    for f in fams:
        _live_as_searched(f, 5, 80)


@pytest.mark.parametrize("k", range(len(PRODUCTS)))
def test_lazy_products_match_jsonschema(k):
    schema = PRODUCTS[k]
    rng = random.Random(300 + k)
    texts = {random_number(rng, exponent=False) for _ in range(150)}
    for m in (13, 429, 0.25, 33, 77, 12, 8721):
        for j in (1, 2, 3, 7, 8, 11, 16, 17, 19, 30, 37, 1001, -3, -5, -9, -11, -23, 123457):
            d = Decimal(repr(m)) * j
            texts |= {f"{d:f}", f"{d:f}" + ("0" if "." in f"{d:f}" else ".0"), f"{d + Decimal('0.5'):f}"}
    texts |= {"0", "-0", "0.0"} | {f"{-8721 * j}{tail}" for j in range(2, 12) for tail in ("", ".0", ".5")}
    valid = 0
    for text in sorted(texts):
        want = reference(schema, text)
        valid += want
        assert accepts(schema, text, **EVERY_VALID) == want, (schema, text, want)
        assert accepts(schema, text, bounds="schema") == want, (schema, text, want)
    assert valid >= 2  # (num4 has two: -26163 and -26163.0)


def test_bounds_of_many_digits_are_exact():
    big = "1" + "0" * 5000
    s = '{"type": "integer", "minimum": %s, "maximum": %s1}' % (big, big[:-1])  # (as text: 5,001 digits)
    a = Automaton(schema_to_grammar(s))
    assert a.matches(big.encode()) and a.matches((big[:-1] + "1").encode())
    assert not a.matches((big[:-1] + "2").encode()) and not a.matches(big[:-1].encode())
    e = Automaton(schema_to_grammar(s, **EVERY_VALID))
    assert e.matches(b"1e5000") and e.matches(b"10e4999") and not e.matches(b"1e4999")
    # past 28 digits, exact: no Decimal context rounding of the bound
    t = '{"type": "number", "exclusiveMinimum": 1.0000000000000000000000000000000000001}'  # (text: exact)
    assert not accepts(t, "1.0000000000000000000000000000000000001", **EVERY_VALID)
    assert accepts(t, "1.00000000000000000000000000000000000011", **EVERY_VALID)
    assert accepts(t, "0.100000000000000000000000000000000000011e1", **EVERY_VALID)
    assert not accepts(t, "0.1000000000000000000000000000000000000010e1", **EVERY_VALID)


def test_index_accepts_and_check_in_both_configurations(tiny_bpe_vocab):
    from dotjson import Index

    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 10}, "x": {"minimum": 100}},
              "required": ["n"]}
    ev = Index(schema, tiny_bpe_vocab, **EVERY_VALID)
    df = Index(schema, tiny_bpe_vocab)
    good_exp = ['{"n": 1e3}', '{"x": 1.5E2, "n": 0.1e3}', '{"n": 100e-1}']
    for doc in good_exp:
        assert reference(schema, doc) and ev.accepts(doc) and ev.check(doc).ok, doc
        assert not df.accepts(doc)  # plain notation is the default policy
    for doc in ['{"n": 1e0}', '{"n": 1.55e1}', '{"n": 20, "x": 9.9E1}']:
        assert not reference(schema, doc) and not ev.accepts(doc), doc
        r = ev.check(doc)
        assert not r.ok and r.reason in ("rejected", "incomplete"), (doc, r)
    for doc in ['{"n": 10}', '{"n": 10.0, "x": 100}']:
        assert ev.accepts(doc) and df.accepts(doc)


def test_big_divisor_index_saves_and_continues(tiny_bpe_vocab, tmp_path):
    # a saved index keeps a text reaching each number state it named, so a state expanded after
    # loading is still decided in rationals (the search over remainders would not end)
    from dotjson import Index

    schema = {"type": "object", "properties": {"n": BIG_DIVISORS[2]}, "required": ["n"]}
    good = '{"n": %d}' % (3 * 7 * 5 ** 30)
    bad = '{"n": %d}' % (3 * 7 * 5 ** 30 + 5)
    for kw in ({}, EVERY_VALID):
        index = Index(schema, tiny_bpe_vocab, **kw)
        assert index.accepts(good[:12] + "}") is False  # expands the states of the first digits
        index.serialize_to_disk(tmp_path / "i")
        loaded = Index.deserialize_from_disk(tmp_path / "i", tiny_bpe_vocab)
        assert loaded.accepts(good) and not loaded.accepts(bad)
        assert loaded.accepts(good.replace("}", ".000}")) and not loaded.accepts(good.replace("}", ".5}"))
