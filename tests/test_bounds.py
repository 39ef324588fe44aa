"""The generation bounds: ``bounds="generation"`` (the default with closed objects) and
``"schema"``.

Where the schema sets no bound of its own, generation bounds array items, the characters of free
strings, the undeclared members of open objects and the nesting of free values
(``values.GENERATION_BOUNDS``; a pattern's strings are bounded when its shortest string plainly
fits): small models loop on repetition until the token budget ends. Each
bound is a restriction (every document it allows is valid), the schema's own bound wins, and
``bounds="schema"`` (the default with ``close_objects=False``, so in the every-valid
configuration) gives the full language back.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from dotjson.automaton import Automaton
from dotjson.errors import SchemaError
from dotjson.jsonschema import schema_to_grammar
from dotjson.jsonschema.values import GENERATION_BOUNDS

ITEMS = GENERATION_BOUNDS["items"]
LENGTH = GENERATION_BOUNDS["string_length"]
EXTRA = GENERATION_BOUNDS["extra_members"]
SITEMS = GENERATION_BOUNDS["structured_items"]
SEXTRA = GENERATION_BOUNDS["structured_members"]
DEPTH = GENERATION_BOUNDS["free_depth"]
DIGITS = GENERATION_BOUNDS["number_digits"]
MODES = [{}, {"disallow_whitespace": True}]


def lang(schema, **kw):
    a = Automaton(schema_to_grammar(schema, **kw))
    compact = kw.get("disallow_whitespace", False)

    def m(doc):
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False) if compact \
            else json.dumps(doc, indent=1, ensure_ascii=False)
        ok = a.matches(text.encode("utf-8"))
        if ok:  # every document a policy allows is valid
            jsonschema.validate(doc, schema)
        return ok

    return m


def nested(depth, leaf=1):
    for _ in range(depth):
        leaf = {"k": leaf}
    return leaf


# (schema, a document at the bound, one past it)
CASES = [
    ({"type": "array", "items": {"type": "integer"}}, [1] * ITEMS, [1] * (ITEMS + 1)),
    ({"type": "array"}, [None] * ITEMS, [None] * (ITEMS + 1)),
    ({"type": "string"}, "x" * LENGTH, "x" * (LENGTH + 1)),
    ({"type": "string", "minLength": 2}, "é" * LENGTH, "é" * (LENGTH + 1)),
    ({"type": "array", "minItems": 3}, [0] * ITEMS, [0] * (ITEMS + 1)),
    # integer digits of an integer or a multipleOf number (Handwritten---allany4: "1000000...")
    ({"type": "integer"}, int("9" * DIGITS), int("1" + "0" * DIGITS)),
    ({"type": "number", "multipleOf": 3, "minimum": 1}, int("3" * DIGITS), int("3" * (DIGITS + 1))),
    # a pattern with short strings is bounded too (a path repeating a segment: Github_hard---o21366)
    ({"type": "string", "pattern": "^(/[a-z.]+)+$"}, "/a" * (LENGTH // 2), "/a" * (LENGTH // 2) + "b"),
    ({"type": "string", "pattern": "ab"}, "x" * (LENGTH - 2) + "ab", "x" * (LENGTH - 1) + "ab"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True},
     {"a": 1, **{f"k{i}": 1 for i in range(EXTRA)}}, {"a": 1, **{f"k{i}": 1 for i in range(EXTRA + 1)}}),
    ({"type": "object"}, {f"k{i}": 1 for i in range(EXTRA)}, {f"k{i}": 1 for i in range(EXTRA + 1)}),
    # the extra members are counted, whichever declared ones the document holds (Snowplow---sp_182:
    # 14 declared names, none written, and 30 invented members when the bound counted them all)
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "additionalProperties": True},
     {f"k{i}": 1 for i in range(EXTRA)}, {f"k{i}": 1 for i in range(EXTRA + 1)}),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "required": ["a", "r"],
      "additionalProperties": {"type": "integer"}},
     {"k": 1, "a": 1, "r": 2, **{f"k{i}": 1 for i in range(EXTRA - 1)}},
     {"k": 1, "a": 1, "r": 2, **{f"k{i}": 1 for i in range(EXTRA)}}),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 2, "additionalProperties": True},
     {"a": 1, **{f"k{i}": 1 for i in range(EXTRA)}}, {"a": 1, **{f"k{i}": 1 for i in range(EXTRA + 1)}}),
    # items and extra values that are all objects or arrays: fewer (MCPspec---ListRootsResult:
    # 16 repeated `{"name": "root", "uri": …}` roots of ~30 tokens each outlast a 512-token budget)
    ({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}}},
     [{"n": "a"}] * SITEMS, [{"n": "a"}] * (SITEMS + 1)),
    ({"$defs": {"r": {"type": "object"}}, "type": "array", "items": {"$ref": "#/$defs/r"}},
     [{}] * SITEMS, [{}] * (SITEMS + 1)),
    ({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}, [[1]] * SITEMS, [[1]] * (SITEMS + 1)),
    ({"type": "array", "items": {"type": ["object", "string"]}}, [{}] * ITEMS, [{}] * (ITEMS + 1)),
    ({"type": "array", "items": {"type": "object"}, "minItems": SITEMS + 1}, [{}] * ITEMS, [{}] * (ITEMS + 1)),
    ({"type": "object", "additionalProperties": {"type": "object"}},
     {f"k{i}": {} for i in range(SEXTRA)}, {f"k{i}": {} for i in range(SEXTRA + 1)}),
    # the keys of extra members: a key repeating a fragment without end under a pattern
    # (Github_hard---o36012: `"S_S_S_…"` for `^S_`), an invented key of an open object, one
    # beside more declared names than the trie of undeclared keys starts at (64)
    ({"type": "object", "patternProperties": {"^S_": {"type": "integer"}}},
     {"S_" + "x" * (LENGTH - 2): 1}, {"S_" + "x" * (LENGTH - 1): 1}),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"}},
     {"a": 1, "k" * LENGTH: 2}, {"a": 1, "k" * (LENGTH + 1): 2}),
    ({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(70)},
      "additionalProperties": {"type": "integer"}},
     {"p1": 1, "p" * LENGTH: 2, "p1" + "x" * (LENGTH - 2): 3}, {"p1": 1, "p1" + "x" * (LENGTH - 1): 3}),
    # a free value ({}) holds arrays and objects nested DEPTH deep below its own level
    ({"type": "object", "properties": {"m": {}}}, {"m": nested(DEPTH + 1)}, {"m": nested(DEPTH + 2)}),
    ({"type": "array", "items": {}}, [[[[[1]]]]], [[[[[[1]]]]]]),
    ({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {}}}},
     {"m": nested(DEPTH + 2)}, {"m": nested(DEPTH + 3)}),
]


@pytest.mark.parametrize("kw", MODES, ids=["whitespace", "compact"])
@pytest.mark.parametrize("schema,at,past", CASES, ids=range(len(CASES)))
def test_each_bound_holds_by_default_and_is_one_option_away(schema, at, past, kw):
    m = lang(schema, **kw)
    assert m(at)
    assert not m(past)
    full = lang(schema, **kw, bounds="schema")
    assert full(at) and full(past)
    # the specification's rule for extra members drops the bounds with it
    spec = lang(schema, **kw, close_objects=False)
    assert spec(past)


def test_the_schemas_own_bounds_win():
    assert lang({"type": "array", "maxItems": 100})([0] * 100)
    # a minimum beyond the bound: the schema wants more, and gets no generation bound
    assert lang({"type": "array", "minItems": ITEMS + 5})([0] * (ITEMS + 50))
    assert lang({"type": "string", "minLength": LENGTH + 10})("y" * (LENGTH + 100))
    assert lang({"type": "object", "minProperties": EXTRA + 3})({f"k{i}": 1 for i in range(EXTRA + 30)})
    # `contains` and `uniqueItems` count items their own way: no generation bound beside them
    assert lang({"type": "array", "contains": {"type": "string"}, "minContains": 3})(
        [0] * ITEMS + ["a", "b", "c"])
    assert lang({"type": "string", "maxLength": 1000})("y" * 1000)
    # a pattern whose strings are all longer than the bound is not cut (nor emptied)
    assert lang({"type": "string", "pattern": "^x{300}$"})("x" * 300)
    assert lang({"type": "object", "properties": {"p": {"pattern": "^x{300}$"}}, "required": ["p"]})(
        {"p": "x" * 300})
    # keys likewise: a pattern whose keys are all longer, propertyNames' own length, extra
    # members minProperties asks for
    assert lang({"type": "object", "patternProperties": {"^x{300}$": {}}})({"x" * 300: 1})
    assert lang({"type": "object", "additionalProperties": {"type": "integer"},
                 "propertyNames": {"maxLength": 300}})({"y" * 300: 1})
    assert lang({"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"},
                 "minProperties": 2})({"a": 1, "y" * 300: 1})
    assert lang({"type": "integer", "minimum": 10 ** 25})(10 ** 30)
    assert lang({"type": "integer", "maximum": -10 ** 25})(-10 ** 30)
    assert lang({"type": "object", "maxProperties": 40})({f"k{i}": 1 for i in range(40)})


@pytest.mark.parametrize("kw", MODES, ids=["whitespace", "compact"])
def test_undeclared_keys_keep_their_spellings_under_the_bounds(kw):
    # extra keys that need an escape, and (spellings="any") one escaped needlessly, in an open
    # object under the bound: the key policies are unchanged
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True}
    m = lang(schema, **kw)
    assert m({"a": 1, 'q"x': 1, "n\ny": 2, "é": 3})
    text = '{"a":1,"\\u0071":1}'
    assert not Automaton(schema_to_grammar(schema, **kw)).matches(text.encode())
    assert Automaton(schema_to_grammar(schema, **kw, spellings="any")).matches(text.encode())


def test_every_valid_configuration_has_no_generation_bound():
    kw = {"property_order": "any", "close_objects": False, "whitespace": "json"}
    assert lang({"type": "array"}, **kw)([[[[[[1]]]]]] * (ITEMS + 1))
    assert lang({"type": "object"}, **kw)({f"k{i}": "z" * (LENGTH + 1) for i in range(EXTRA + 1)})


def test_bounds_mode_is_checked():
    with pytest.raises(SchemaError, match=r"bounds must be one of \('generation', 'schema'\), got 'tight'"):
        schema_to_grammar({"type": "array"}, bounds="tight")


@pytest.mark.parametrize("kw", MODES, ids=["whitespace", "compact"])
def test_an_enum_number_takes_few_trailing_zeros(kw):
    # `{"enum": [1.1]}` spelled 1.1000... until the budget ended (Synthesized---draft2019_09_...)
    schema = {"allOf": [{"enum": [1.1]}, {"not": {"not": {"type": "number"}}}]}
    a = Automaton(schema_to_grammar(schema, **kw))
    full = Automaton(schema_to_grammar(schema, **kw, bounds="schema"))
    assert a.matches(b"1.1") and a.matches(b"1.10")
    assert a.matches(("1.1" + "0" * (DIGITS - 1)).encode())
    assert not a.matches(("1.1" + "0" * DIGITS).encode())
    assert full.matches(("1.1" + "0" * 40).encode())
    assert not a.matches(b"1.2") and not a.matches(b"11")


@pytest.mark.parametrize("kw", MODES, ids=["whitespace", "compact"])
def test_a_free_number_takes_few_digits(kw):
    # a number the schema leaves free ({"type": "number"}, a free value, a schema without a
    # type): at most DIGITS integer and fraction digits and 3 exponent digits (Github_hard---o68391
    # compact: "1.1111…" to the token budget)
    frac = GENERATION_BOUNDS["number_digits"]
    at = ["1." + "1" * frac, "-" + "9" * DIGITS, "2.5e-999", "0E+7"]
    past = ["1." + "1" * (frac + 1), "1" + "0" * DIGITS, "1e1000"]
    for schema in ({"type": "number"}, {"minProperties": 1}, True):
        bounded = Automaton(schema_to_grammar(schema, **kw))
        full = Automaton(schema_to_grammar(schema, **kw, bounds="schema"))
        for text in at:
            jsonschema.validate(json.loads(text), schema if schema is not True else {})
            assert bounded.matches(text.encode()) and full.matches(text.encode()), (schema, text)
        for text in past:
            assert not bounded.matches(text.encode()) and full.matches(text.encode()), (schema, text)
