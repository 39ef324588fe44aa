"""Issue 32: negated object keywords, overlapping ``oneOf``, excluded object/array values, and
``contains`` beside ``prefixItems``/``maxItems`` or repeated.

The negation of ``patternProperties``, ``additionalProperties`` or ``propertyNames`` is a
property of one member (a *witness*: a key the keyword speaks of whose value violates its
schema), so ``not``/``oneOf``/``if`` over them compile exactly; ``not`` over an object or array
``const``/``enum`` is "another type, a key more or missing, a value different". Every verdict
here is the ``jsonschema`` package's (Draft 2020-12): each case is checked in the "every valid
document" configuration (``property_order="any", close_objects=False, whitespace="json"``:
accepted exactly when valid) and in the default one (a sub-language: no invalid document
accepted, and the valid documents it is meant to keep), in both orders of composition, nested
under a property and under a recursive ``$ref``, on listed and random documents and on
hypothesis-jsonschema's instances. (Numbers are kept away from exponent forms: an integer
written ``1e308`` is outside the language on purpose, docs/keywords.md.)
"""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

from dotjson import Index
from dotjson.errors import SchemaError, UnsupportedSchemaError
from dotjson.jsonschema import schema_to_grammar

EVERY_VALID = dict(property_order="any", close_objects=False, whitespace="json")
S = {"type": "string"}
I = {"type": "integer"}

# arrays of comparison operators, and the other values jscsrc's `oneOf` speaks of
_OPS_DOCS = [[], ["=="], ["==", "!="], ["==", "=="], [None, None], [None, "!="], ["<"], True, False, None, "==", {}]

#: (schema, documents that must be among those checked: the boundary cases)
CASES = {
    "not-patternProperties": (
        {"type": "object", "not": {"patternProperties": {"^a": S}}},
        [{}, {"a": "x"}, {"a": 1}, {"b": 1}, {"ab": None, "a": "s"}, {"x": 1, "ay": []}, {"a": "x", "ab": "y"}]),
    "not-patternProperties-declared": (
        {"type": "object", "properties": {"a": {}, "ab": I}, "not": {"patternProperties": {"^a": S}}},
        [{"a": 1}, {"ab": 1}, {"a": "s", "ab": 2}, {"b": 1}, {"ac": True}, {"ab": "s"}]),
    "not-patternProperties-counted": (
        {"type": "object", "properties": {"a": {}}, "required": ["a"], "maxProperties": 1,
         "not": {"patternProperties": {"^a": S}}},
        [{"a": 1}, {"a": "s"}, {"a": 1, "b": 2}, {}]),
    "not-propertyNames": (
        {"not": {"propertyNames": {"maxLength": 1}}},
        [{}, {"a": 1}, {"ab": 1}, {"a": 1, "bc": 2}, "ab", [], 3]),
    "not-propertyNames-declared": (
        {"type": "object", "properties": {"ab": I}, "required": ["ab"], "not": {"propertyNames": {"maxLength": 1}}},
        [{"ab": 1}, {"ab": "s"}, {"ab": 1, "c": 2}, {"c": 2}]),
    "not-additionalProperties-false": (
        {"not": {"additionalProperties": False}},
        [{}, {"a": 1}, [], "s", None]),
    "not-additionalProperties-schema": (
        {"not": {"properties": {"a": {}}, "patternProperties": {"^x": {}}, "additionalProperties": I}},
        [{}, {"a": "s"}, {"xa": "s"}, {"b": 1}, {"b": "s"}, {"a": 1, "b": 1.5}]),
    "not-additionalProperties-outside-names": (
        {"properties": {"b": {}}, "not": {"properties": {"a": {}}, "additionalProperties": False}},
        [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"c": 1}]),
    "double-negation": (
        {"not": {"not": {"patternProperties": {"^a": S}}}},
        [{"a": "s"}, {"a": 1}, {"b": 1}]),
    "two-witnesses-one-member": (
        {"type": "object", "maxProperties": 2, "not": {"patternProperties": {"^a": S}},
         "allOf": [{"not": {"propertyNames": {"maxLength": 1}}}]},
        [{"ab": 1}, {"ab": "s"}, {"a": 1, "bc": 1}, {"a": 1, "b": 1}, {"ab": "x", "bc": 1}, {"a": 1}]),
    "oneOf-overlapping": (
        {"oneOf": [{"properties": {"a": S}, "additionalProperties": False}, {"required": ["b"]}]},
        [{}, {"a": "s"}, {"b": 1}, {"a": "s", "b": 1}, {"a": 1, "b": 1}, {"c": 1}]),
    "oneOf-patterns-names": (
        {"oneOf": [{"patternProperties": {"^a": I}}, {"propertyNames": {"maxLength": 1}}]},
        [{}, {"a": 1}, {"a": "s"}, {"ab": 1}, {"ab": "s"}, {"b": "s"}, 1]),
    "if-propertyNames": (
        {"if": {"propertyNames": {"maxLength": 1}}, "then": {"required": ["a"]}, "else": {"maxProperties": 1}},
        [{}, {"a": 1}, {"b": 1}, {"ab": 1}, {"ab": 1, "c": 2}, {"a": 1, "b": 2}]),
    "not-const-object": (
        {"not": {"const": {"a": 1}}},
        [{"a": 1}, {"a": 1.0}, {"a": 1, "b": 2}, {"a": 2}, {"b": 1}, {}, 1]),
    "not-enum-structured": (
        {"not": {"enum": [{"a": 1}, [1, "s"], {}, [], 3]}},
        [{"a": 1}, [1, "s"], {}, [], [1], [1, "s", 2], ["s", 1], 3, 4, {"a": 1, "b": 1}]),
    "not-const-nested": (
        {"type": "object", "not": {"const": {"a": {"b": [1]}}}},
        [{"a": {"b": [1]}}, {"a": {"b": [1, 2]}}, {"a": {"b": []}}, {"a": {"b": [1], "c": 1}}, {"a": {}}]),
    "not-const-array": (
        {"not": {"const": [1, {"a": None}]}},
        [[1, {"a": None}], [1, {"a": None, "b": 1}], [1, {}], [1], [1, {"a": None}, 3], []]),
    "oneOf-const-object": (
        {"oneOf": [{"const": {"a": 1}}, {"type": "object"}]},
        [{"a": 1}, {"a": 2}, {}, [], 1]),
    "oneOf-untyped-objects": (
        # two untyped object schemas overlap on every non-object: exactly one holds there for none
        {"oneOf": [{"required": ["r"], "properties": {"r": S}, "additionalProperties": False},
                   {"required": ["t"], "properties": {"t": {"enum": ["x", "y"]}, "u": {}}, "additionalProperties": False,
                    "dependentSchemas": {"u": {"properties": {"t": {"const": "x"}}}}}]},
        [{"r": "s"}, {"t": "x"}, {"t": "y", "u": 1}, {"t": "x", "u": 1}, "s", 1, None, {"r": "s", "t": "x"}]),
    "oneOf-discriminator-patterns": (
        {"oneOf": [{"properties": {"type": {"pattern": "^Abs$"}, "a": I}, "required": ["type"], "additionalProperties": False},
                   {"properties": {"type": {"pattern": "^Add$"}, "b": I}, "required": ["type"], "additionalProperties": False}]},
        [{"type": "Abs"}, {"type": "Add", "b": 1}, {"type": "Abs", "b": 1}, {"type": "Adx"}]),
    "contains-prefixItems": (
        {"type": "array", "prefixItems": [S], "contains": I},
        [["s", 1], [1], ["s"], [1, "s"], ["s", "t", 2]]),
    "contains-maxItems": (
        {"type": "array", "contains": I, "minContains": 2, "maxContains": 3, "maxItems": 4},
        [[1, 2], [1, 2, 3, 4], [1, "s", 2, 3], [1], [1, 2, 3, 4, 5]]),
    "contains-twice": (
        {"type": "array", "allOf": [{"contains": {"minimum": 2}, "maxContains": 1}, {"contains": {"maximum": 2}}]},
        [[2], [1, 3], [2, 2], [3, 4, 1], [1]]),
    "contains-minItems": (
        {"type": "array", "minItems": 3, "contains": I},
        [[1, "a", "b"], [1], ["a", "b", "c"]]),
    "not-items-twice": (
        {"type": "array", "maxItems": 2,
         "allOf": [{"not": {"items": {"patternProperties": {"ab": False}, "additionalProperties": False}}},
                   {"not": {"items": {"patternProperties": {"cd": False}, "additionalProperties": False}}}]},
        [[{"ab": 1}, {"cd": 1}], [{"abcd": 1}], [{}], [{"x": 1}], [{"ab": 1}], [{"ab": 1}, {"cd": 1}, {}]]),
    "not-items-after-prefix": (
        {"prefixItems": [I], "not": {"items": S}},
        [[1], [1, "s"], [1, 2], ["s", 2], [1, "s", 3], [], "s"]),
    "oneOf-items-after-prefix": (
        {"type": "array", "oneOf": [{"prefixItems": [I, I], "items": S}, {"maxItems": 2}]},
        [[1], [1, 2], [1, 2, "s"], [1, 2, 3], ["s"], [1, "s", "t"]]),
    "oneOf-enums": (
        # MaskBench Handwritten key8: the values of one enum that no other branch holds
        {"type": "array", "oneOf": [{"enum": [[1], [3, 4], [5]]}, {"enum": [[1], [1, 2]]},
                                    {"allOf": [{"enum": [[1], [3, 4], [6]]}]}]},
        [[1], [3, 4], [5], [6], [1, 2], [2], []]),
    "enum-minus-structured": (
        # a branch that lists its values filters the excluded ones
        {"enum": [[1], [2], {"a": 1}, {"a": 2}, 3], "not": {"enum": [[1], {"a": 1}, 3]}},
        [[1], [2], {"a": 1}, {"a": 2}, 3, 4, [3]]),
    "not-const-empty-containers": (
        {"type": ["array", "object"], "maxItems": 0, "maxProperties": 0, "not": {"enum": [[]]}},
        [[], {}, [1], {"a": 1}]),
    "items-not-closed": (
        {"type": "array", "items": {"not": {"additionalProperties": False}}},
        [[], [{}], [{"a": 1}], [{"a": 1}, {}]]),
    # Negations of many-branch sub-schemas (MaskBench's "over 256 alternatives" refusals): the
    # product of the negated branches, compacted (Normalizer.compact, neg_branch)
    "not-oneOf-objects": (
        # Synthesized not(oneOf) over objects: each negated branch a few alternatives
        {"not": {"oneOf": [{"properties": {"a": I, "b": S}, "required": ["a"]},
                           {"properties": {"x": S}, "required": ["x"]},
                           {"properties": {"x": I, "b": I}, "required": ["b"]},
                           {"properties": {"a": S, "c": {}}, "required": ["c", "x"]}]}},
        [{}, {"a": 1}, {"a": "s"}, {"x": "s"}, {"x": 1, "b": 1}, {"a": 1, "x": "s"}, {"c": 1, "x": 1, "a": "s"},
         {"c": 1, "x": "s", "a": "s"}, {"b": "s"}, 1, "s"]),
    "at-most-one-non-null": (
        # prometheus' auth: allOf of if/then pairs, "at most one of a..f is not null"
        {"type": "object", "allOf": [
            {"if": {"not": {"properties": {k: {"const": None}}}},
             "then": {"properties": {j: {"const": None} for j in "abcdef" if j != k}}} for k in "abcdef"]},
        [{}, {"a": 1}, {"a": 1, "b": None}, {"a": 1, "b": 2}, {"a": None, "b": None, "c": None}, {"x": 1, "c": "s"},
         {"c": [], "f": {}}]),
    "not-anyOf-required-keys": (
        # utam's selectors negated: objects holding none of five alternatives
        {"type": "object", "not": {"anyOf": [
            {"properties": {k: S, "args": {"type": "array", "items": I}, "all": {"type": "boolean"}},
             "required": [k]} for k in ("a", "b", "c", "x", "t")]}},
        [{}, {"a": "s"}, {"a": 1}, {"a": 1, "b": "s"}, {"a": 1, "args": [1]}, {"a": 1, "args": ["s"]},
         {"x": [], "t": None, "all": 1}, {"u": 1}]),
}


# Issue 32, "over 256 alternatives": oneOf branches disjoint only beside what surrounds them, or
# by a discriminator the product never looked at; each was refused before (tests below)
_TY = [I, S, {"type": "boolean"}, {"type": "null"}, {"type": "array"}]


def _tagged(tags, nprops=4):
    """oneOf branches that give `type` one value each without requiring it, and four other
    properties of differing types (MaskBench Github_ultra o358-o360, Github_medium o72217)."""
    return [{"properties": {"type": {"enum": [t]}, **{f"v{k}": _TY[(i + k) % 5] for k in range(nprops)}}}
            for i, t in enumerate(tags)]


_TAGS = ["a", "b", "c", "x"]
_TAG_DOCS = [{"type": "a"}, {"type": "b", "v0": "s"}, {"type": "a", "v0": 1}, {"type": "a", "v0": "s"}, {},
             {"v0": 1}, {"type": "c", "v1": None}, {"type": "x", "v0": None, "v3": 1}, {"type": "d"}, {"n": 1, "type": "b"}]
_PREFIXES = ["ab", "aa", "b", "x", "xa", "c", "ac", "r"]

CASES.update({
    "oneOf-discriminator-required-beside": (
        # `required: [type]` beside an allOf holding the oneOf: disjoint there (normal form in context)
        {"type": "object", "required": ["type"], "allOf": [{"properties": {"n": I}}, {"oneOf": _tagged(_TAGS)}]},
        _TAG_DOCS),
    "oneOf-in-dependency": (
        # the same oneOf as a dependency of `type`: it applies where `type` is present
        {"type": "object", "properties": {"type": {"enum": _TAGS}}, "dependentSchemas": {"type": {"oneOf": _tagged(_TAGS)}}},
        _TAG_DOCS),
    "oneOf-closed-one-key": (
        # Github_hard o36016's expressions: each branch one property and nothing else (a member
        # outside another branch's names is a member of this one's: a required key, no witness)
        {"oneOf": [{"properties": {k: sch}, "additionalProperties": False}
                   for k, sch in (("a", I), ("b", S), ("x", {}), ("t", {"type": "boolean"}), ("u", {"type": "array"}),
                                  ("c", I), ("r", {"type": "null"}), ("ab", S), ("xa", {}), ("aa", I))]},
        [{}, {"a": 1}, {"a": "s"}, {"b": "s"}, {"x": None}, {"a": 1, "b": "s"}, {"t": 1}, 1]),
    "oneOf-closed-optional-discriminator": (
        # Github_hard o36016's fields: closed objects sharing most properties, `type` optional
        # (a property's value outside a schema equal to the branch's own is no alternative, and
        # the alternatives every negation shares are factored out)
        {"oneOf": [{"type": "object", "required": ["a"], "additionalProperties": False,
                    "properties": {"type": {"enum": [t]}, "a": S, "b": {"oneOf": [{"type": "boolean"}, S]}, "c": I,
                                   own: {}}}
                   for t, own in (("p", "x"), ("q", "r"), ("s", "u"), ("z", "t"), ("w", "ab"), ("y", "aa"), ("v", "xa"))]},
        [{"a": "s"}, {"a": "s", "x": 1}, {"a": "s", "type": "p"}, {"a": "s", "type": "q", "x": 1},
         {"a": "s", "x": 1, "r": 2}, {"a": 1}, {"a": "s", "b": True, "type": "z"}, {"a": "s", "b": 1}]),
    "oneOf-literal-prefix-patterns": (
        # JsonSchemaStore mason-registry: a required id whose pattern starts with its branch's
        # own prefix (^pkg:cargo/, ^pkg:npm/ ...): disjoint
        {"oneOf": [{"type": "object", "required": ["id"], "additionalProperties": False,
                    "properties": {"id": {"type": "string", "pattern": f"^{p}/.+"}, f"{p}0": _TY[i % 5]}}
                   for i, p in enumerate(_PREFIXES)]},
        [{"id": "ab/1"}, {"id": "ab/1", "ab0": 1}, {"id": "aa/x", "aa0": "s"}, {"id": "a/1"}, {"id": "ab/"},
         {"id": "xa/s", "xa0": []}, {"id": "x/s", "xa0": []}, {}]),
    "five-witnesses": (
        # Handwritten pnmp4: five negated propertyNames, each a member the object must hold
        {"type": "object", "patternProperties": {"^[0-9]$": {"type": "array", "minItems": 2}},
         "additionalProperties": False, "maxProperties": 3,
         "not": {"anyOf": [{"propertyNames": {"not": {"enum": e}}}
                           for e in (["1", "3"], ["2", "7", "9"], ["2", "3", "11"], ["2", "4", "5"], ["1", "2", "5"])]}},
        [{"2": [1, 2], "3": [1, 2], "1": [1, 2]}, {"2": [1, 2], "1": [1, 2]}, {"2": [1, 2], "3": [1, 2]},
         {"1": [1, 2], "2": [1, 2], "3": [1]}, {}, {"2": [1, 2], "5": [0, 0], "3": [1, 1]}, {"2": [0, 0], "5": [1, 1]}]),
    "oneOf-required-or-optional-same-schema": (
        # beside a branch that gives `p` the same schema without requiring it, "p outside its
        # schema" leaves "p absent" (not nothing)
        {"oneOf": [{"type": "object", "required": ["p"], "properties": {"p": S}},
                   {"type": "object", "properties": {"p": S, "q": I}}]},
        [{}, {"p": "s"}, {"q": 1}, {"p": 1}, {"p": "s", "q": "x"}, {"q": "x"}, {"p": "s", "q": 1}]),
    "oneOf-uniqueItems-other-types": (
        # JsonSchemaStore jscsrc: a `uniqueItems` branch that also allows booleans and null,
        # beside a boolean and a null branch; only where the branches overlap (booleans, null)
        # is it negated, and there `uniqueItems` says nothing (refused before: "cannot negate
        # 'uniqueItems'"); exactly one holds on arrays alone
        {"oneOf": [{"type": ["array", "boolean", "null"], "items": {"enum": ["==", "!=", None]}, "uniqueItems": True},
                   {"type": "boolean"}, {"type": "null"}]},
        _OPS_DOCS),
    "not-uniqueItems-on-a-string": (
        # JsonSchemaStore template: `uniqueItems` beside `type: string` (a keyword of arrays on
        # a string schema) under a negation (there a branch of a `oneOf` the others overlap):
        # the string's negation, nothing of items
        {"not": {"oneOf": [{"type": "array", "items": {"type": "string", "uniqueItems": True}}, {"type": "string"}]}},
        [[], ["a"], ["a", "a"], ["a", 1], [["a", "a"]], "a", "", 1, None, {"a": "a"}]),
    "oneOf-six-item-enums": (
        # Github_medium o62056: arrays of six overlapping item enums (exactly one holds: an item
        # outside each other enum, six contains counters)
        {"oneOf": [{"type": "array", "maxItems": 3, "items": {"enum": e}}
                   for e in (["a", "b"], ["b", "x"], ["c"], ["x", "t"], ["u", "a"], ["r", "c", "s"])]},
        [[], ["a"], ["b"], ["a", "b"], ["a", "x"], ["c"], ["c", "r"], ["t", "x", "x"], ["a", "u", "a"],
         ["a", "b", "a", "b", "a"], ["s", "r"], "a", ["b", "x", "t"]]),
})

_KEYS = ["a", "b", "ab", "x", "xa", "aa", "c", "", "r", "t", "u", "type"]


_SCALARS = [None, True, False, 0, 1, -2, 2.5, "", "s", "ab", "a", 3, "Abs", "x"]


def _value(r: random.Random, depth: int = 0, keys=_KEYS, scalars=_SCALARS):
    k = r.random()
    if depth > 2 or k < 0.35:
        return r.choice(scalars)
    if k < 0.6:
        return [_value(r, depth + 1, keys, scalars) for _ in range(r.randint(0, 3))]
    return {kk: _value(r, depth + 1, keys, scalars) for kk in r.sample(keys, r.randint(0, 3))}


def _documents(listed, n=120, seed=0, keys=_KEYS, scalars=_SCALARS) -> list:
    """``listed`` and ``n`` random values (mostly objects over ``keys``, ``scalars`` inside)."""
    r = random.Random(seed)
    out = list(listed)
    for _ in range(n):
        out.append(_value(r, 0, keys, scalars) if r.random() < 0.3 else
                   {k: _value(r, 1, keys, scalars) for k in r.sample(keys, r.randint(0, 4))})
    return out


def _forms(schema, docs):
    """The case itself, nested under a required property, and under a recursive reference (an
    array of the case's values or of such arrays)."""
    yield "plain", schema, docs
    yield "property", {"type": "object", "properties": {"v": schema}, "required": ["v"]}, [{"v": d} for d in docs]
    rec = {"$defs": {"t": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/t"}}, schema]}},
           "$ref": "#/$defs/t"}
    yield "ref", rec, [[d] for d in docs[:60]] + [[[d]] for d in docs[:20]]


def _check(schema, docs, vocab):
    v = jsonschema.Draft202012Validator(schema)
    every = Index(schema, vocab, **EVERY_VALID)
    default = Index(schema, vocab)
    kept = 0
    for d in docs:
        ok = v.is_valid(d)
        text = json.dumps(d, separators=(",", ":"))
        assert every.accepts(text) == ok, (schema, text, ok)
        assert every.accepts(json.dumps(d, indent=2)) == ok, (schema, text, ok)
        got = default.accepts(text)
        assert not got or ok, ("invalid accepted in the default configuration", schema, text)
        kept += got
    return kept


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_is_exact(name, tiny_bpe_vocab):
    schema, listed = CASES[name]
    docs = _documents(listed)
    assert any(jsonschema.Draft202012Validator(schema).is_valid(d) for d in docs)
    for form, s, ds in _forms(schema, docs):
        kept = _check(s, ds, tiny_bpe_vocab)
        # the default configuration keeps valid documents too (here objects that must hold a
        # member the schema does not declare stay open)
        assert kept > 0, (name, form)


@pytest.mark.parametrize("name", ["not-patternProperties-declared", "not-additionalProperties-schema",
                                  "oneOf-overlapping", "if-propertyNames", "two-witnesses-one-member",
                                  "oneOf-discriminator-required-beside", "oneOf-closed-optional-discriminator"])
def test_both_orders_of_composition(name, tiny_bpe_vocab):
    # the keyword's neighbours before and after it (allOf in either order) and, for oneOf, the
    # branches swapped: the same language
    schema, listed = CASES[name]
    docs = _documents(listed, n=80, seed=1)
    rest = {k: x for k, x in schema.items() if k not in ("not", "oneOf", "if", "then", "else", "allOf")}
    neg = {k: x for k, x in schema.items() if k not in rest}
    forms = [{"allOf": [rest, neg]}, {"allOf": [neg, rest]}]
    if "oneOf" in schema:
        forms.append({**rest, "oneOf": schema["oneOf"][::-1]})
    for s in forms:
        _check(s, docs, tiny_bpe_vocab)


def test_witness_in_a_recursive_schema(tiny_bpe_vocab):
    # every object holds a key outside [ab]+, and every undeclared value is such an object or
    # an integer: a witness at each level of the recursion
    schema = {"$defs": {"n": {"type": "object", "not": {"propertyNames": {"pattern": "^[a-b]+$"}},
                              "additionalProperties": {"anyOf": [{"$ref": "#/$defs/n"}, I]}}},
              "$ref": "#/$defs/n"}
    docs = [{"c": 1}, {"c": {"d": 2}}, {"c": {"a": 1}}, {"a": {"c": 1}}, {"c": {"b": {"c": 1}}}, {"a": 1},
            {"c": {"d": {"e": 1}}, "a": 3}, {}]
    _check(schema, _documents(docs, n=60), tiny_bpe_vocab)
    # without the integer every value recurses forever: no document at all
    with pytest.raises(SchemaError, match="accepts no JSON value"):
        schema_to_grammar({"$defs": {"n": {"type": "object", "not": {"propertyNames": {"pattern": "^[a-b]+$"}},
                                           "additionalProperties": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"})


def test_uniqueItems_behind_a_reference_negated_on_other_types(tiny_bpe_vocab):
    # jscsrc itself: the `uniqueItems` branch is a `$ref`, negated on booleans and null only
    # (the reference inlined on those types: nothing of its arrays is negated)
    schema = {"$defs": {"ops": CASES["oneOf-uniqueItems-other-types"][0]["oneOf"][0]},
              "type": ["array", "boolean", "null"],
              "oneOf": [{"$ref": "#/$defs/ops"}, {"type": "boolean"}, {"type": "null"}]}
    assert _check(schema, _documents(_OPS_DOCS, n=40), tiny_bpe_vocab) > 0


def test_excluded_object_values_that_leave_nothing():
    # no member allowed and {} excluded: empty, said when the grammar is built
    with pytest.raises(SchemaError, match="accepts no JSON value"):
        schema_to_grammar({"type": "object", "additionalProperties": False, "not": {"const": {}}})


def test_a_witness_needs_a_member_the_count_allows(tiny_bpe_vocab):
    # maxProperties 1 and a required "a": "a" itself must be the witness (a value not a string)
    schema, _ = CASES["not-patternProperties-counted"]
    index = Index(schema, tiny_bpe_vocab, **EVERY_VALID)
    assert index.is_prefix('{"a":') and not index.is_prefix('{"a":"')
    assert index.accepts('{"a":[]}') and not index.accepts('{"a":"s"}')


def test_too_many_witnesses_is_named():
    schema = {"type": "object", "allOf": [{"not": {"patternProperties": {f"^{c}": S}}} for c in "abcdefghi"]}
    with pytest.raises(UnsupportedSchemaError) as e:
        schema_to_grammar(schema, **EVERY_VALID)
    assert e.value.keyword in ("not", "patternProperties")


_HYPOTHESIS = ["not-patternProperties", "not-propertyNames", "not-additionalProperties-schema", "oneOf-overlapping",
               "not-const-object", "not-const-array", "if-propertyNames", "contains-maxItems", "contains-twice"]


@pytest.mark.parametrize("name", [
    # (16 s: the default run stays under 15 min on a slow day; the other cases run)
    pytest.param(n, marks=pytest.mark.slow) if n == "not-patternProperties" else n for n in _HYPOTHESIS])
def test_hypothesis_instances_are_accepted(name, tiny_bpe_vocab):
    from hypothesis_jsonschema import from_schema

    schema, _ = CASES[name]
    index = Index(schema, tiny_bpe_vocab, **EVERY_VALID)
    v = jsonschema.Draft202012Validator(schema)

    @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(from_schema(schema))
    def accepted(x):
        if not v.is_valid(x):
            return  # (hypothesis-jsonschema ignores minContains/maxContains: the validator decides)
        text = json.dumps(x)
        if "e+" in text or "e-" in text:
            return  # (an integer written with an exponent: outside the language on purpose)
        assert index.accepts(text), (schema, x)

    accepted()


def test_witness_objects_are_saved_and_loaded(tmp_path, tiny_bpe_vocab):
    # the any-order family keeps its witnesses in a saved index: a reloaded one decides alike,
    # states it never visited before saving included
    schema = {"type": "object", "properties": {"a": {}, "ab": I}, "not": {"patternProperties": {"^a": S}},
              "allOf": [{"not": {"propertyNames": {"maxLength": 1}}}]}
    v = jsonschema.Draft202012Validator(schema)
    docs = _documents([{"ab": 1, "a": []}, {"ab": 1}, {"xy": True}, {"ac": 1}, {"a": "s", "bc": None}], n=80, seed=2)
    # (schema order: a saved index holds the whole grammar, written out as rules)
    for k, options in enumerate([EVERY_VALID, dict(close_objects=False, spellings="any")]):
        index = Index(schema, tiny_bpe_vocab, **options)
        assert index.accepts('{"a": [], "ab": 1}') and not index.accepts('{"a": 1}')
        assert not index.accepts('{"ab": "s"}')
        index.serialize_to_disk(tmp_path / f"ix{k}")
        again = Index.deserialize_from_disk(tmp_path / f"ix{k}", tiny_bpe_vocab)
        for d in docs:
            text = json.dumps(d, separators=(",", ":"))
            want = v.is_valid(d) if k == 0 else index.accepts(text)  # (schema order: a sub-language)
            assert again.accepts(text) == want, (options, text)
            assert not want or v.is_valid(d)


def _nested_negated_patterns():
    # MaskBench Handwritten allany15's shape: not(allOf(not(allOf(patterns)))) twice, 27
    # alternatives before the product (refused past 256 before the branches were compacted)
    trip = lambda ps: {"not": {"allOf": [{"not": {"allOf": [{"pattern": p} for p in t]}} for t in ps]}}
    return {"type": "string", "maxLength": 12, "allOf": [
        trip([("^.{4,8}$", "ab", "b1"), ("^.{4,8}$", "bc", "c1"), ("^.{4,8}$", "ca", "a1")]),
        trip([("^.{5,}$", "aa", "b"), ("^.{5,}$", "bb", "c"), ("^.{5,}$", "cc", "a")])]}


_PATTERN_DOCS = ["", "ab1", "ab1b", "aab1b", "bbc1c", "cca1a", "aab1", "b1ab", "aabc", "bbcc", "ccab1", "abc1abc1abc",
                 "xxxxxxxxxxxxx", 1, None]


def test_nested_negated_patterns(tiny_bpe_vocab):
    r = random.Random(3)
    docs = _PATTERN_DOCS + ["".join(r.choice("abc1") for _ in range(r.randint(3, 7))) for _ in range(20)]
    assert _check(_nested_negated_patterns(), docs, tiny_bpe_vocab) > 0


@pytest.mark.slow
def test_nested_negated_patterns_nested_and_recursive(tiny_bpe_vocab):
    r = random.Random(4)
    docs = _PATTERN_DOCS + ["".join(r.choice("abc1") for _ in range(r.randint(0, 7))) for _ in range(150)]
    for form, s, ds in _forms(_nested_negated_patterns(), docs):
        assert _check(s, ds, tiny_bpe_vocab) > 0, form


def test_negation_past_the_limit_is_named(tiny_bpe_vocab):
    # what compacting cannot bring under 256 alternatives is still refused by name in schema
    # order: the negation of 9 objects, each a distinct pair of required names (2^9 minimal
    # alternatives); in any order each negated object is a witness (test_negated_branches.py)
    schema = {"type": "object", "not": {"anyOf": [{"required": [f"a{k}", f"b{k}"]} for k in range(9)]}}
    with pytest.raises(UnsupportedSchemaError, match="too many alternatives") as e:
        schema_to_grammar(schema)
    assert e.value.pointer == "/not"
    r = random.Random(7)
    names = [f"{c}{k}" for k in range(9) for c in "ab"]
    docs = [{n: 1 for n in r.sample(names, r.randint(0, 12))} for _ in range(40)]
    docs += [{f"{c}{k}": 1 for k in range(9) for c in "ab" if (c, k) != ("b", j)} for j in range(9)]
    v = jsonschema.Draft202012Validator(schema)
    index = Index(schema, tiny_bpe_vocab, **EVERY_VALID)
    assert [index.accepts(json.dumps(d)) for d in docs] == [v.is_valid(d) for d in docs]
    assert any(v.is_valid(d) for d in docs) and not all(v.is_valid(d) for d in docs)


#: GeoJSON's shape: six kinds told apart by a `type` const, a seventh with any `type` (it
#: overlaps all six, so it negates their union: split on the discriminator's values, where the
#: product of the six negations has 3^6 alternatives)
DISCRIMINATED = (
    {"oneOf": [{"type": "object", "required": ["type", "c"],
                "properties": {"type": {"const": k}, "c": {"type": "array", "maxItems": n + 1, "items": I},
                               "b": {"type": "array", "minItems": 2}}}
               for n, k in enumerate(["a", "b", "x", "t", "r", "u"])]
     + [{"type": "object", "required": ["type", "g"], "properties": {"type": S, "g": {"type": "array"}}}]},
    [{"type": "a", "c": [1]}, {"type": "a", "c": [1, 2]}, {"type": "b", "c": [1, 2]}, {"type": "a", "c": [], "g": []},
     {"type": "s", "g": []}, {"type": "s", "c": [], "g": []}, {"type": "a", "c": [1], "g": [], "b": [1, 2]},
     {"type": "a", "c": [1], "g": [], "b": [1]}, {"type": "u", "c": [1], "g": 1}, {"type": 1, "g": []}, {"g": []},
     {"type": "r", "c": [1, 2, 3, 4, 5, 6], "g": [1]}, [], "a"])


def test_oneOf_split_on_a_discriminator(tiny_bpe_vocab):
    schema, listed = DISCRIMINATED
    assert _check(schema, listed, tiny_bpe_vocab) > 0


@pytest.mark.slow
def test_oneOf_split_on_a_discriminator_nested_and_recursive(tiny_bpe_vocab):
    schema, listed = DISCRIMINATED
    for form, s, ds in _forms(schema, _documents(listed, seed=5)):
        assert _check(s, ds, tiny_bpe_vocab) > 0, form


# ----------------------------------------------------------------------------- random oneOf
_RKEYS = ["a", "b", "c", "t", "id"]
_RVALUES = [S, I, {"type": "boolean"}, {}, {"enum": ["x", "y"]}, {"const": "x"}, {"type": "string", "pattern": "^ab"},
            {"type": "string", "pattern": "^ac"}, {"oneOf": [S, I]}]
_RDOCS = [None, True, 0, 1, "x", "y", "ab", "abc", "acd", "s", [], {}]


def _random_object(r):
    o = {"type": "object"} if r.random() < 0.7 else {}
    props = {k: r.choice(_RVALUES) for k in r.sample(_RKEYS, r.randint(0, 4))}
    if props:
        o["properties"] = props
    req = [k for k in _RKEYS if r.random() < 0.25]
    if req:
        o["required"] = req
    if r.random() < 0.35:
        o["additionalProperties"] = False
    if r.random() < 0.1:
        o["minProperties"] = 1
    return o


def _random_one_of(r):
    # a oneOf of 2-7 object schemas, alone, in an allOf beside required keys, as a dependency, or
    # negated: the shapes the normal form in context and _beside reduce
    s = {"oneOf": [_random_object(r) for _ in range(r.randint(2, 7))]}
    k = r.random()
    if k < 0.3:
        return {"type": "object", "required": r.sample(_RKEYS, r.randint(1, 2)), "allOf": [{"properties": {"c": {}}}, s]}
    if k < 0.45:
        return {"type": "object", "dependentSchemas": {r.choice(_RKEYS): s}}
    if k < 0.55:
        return {"not": s}
    return s


def _random_one_of_exact(seed, n):
    from dotjson.automaton import Automaton

    r = random.Random(seed)
    compiled = 0
    for _ in range(n):
        s = _random_one_of(r)
        v = jsonschema.Draft202012Validator(s)
        docs = [r.choice(_RDOCS) if r.random() < 0.1 else
                {k: r.choice(_RDOCS) for k in r.sample(_RKEYS + ["z"], r.randint(0, 4))} for _ in range(40)]
        try:
            a = Automaton(schema_to_grammar(s, **EVERY_VALID))
        except UnsupportedSchemaError:
            continue
        except SchemaError:  # said to be empty: none of the documents may be valid
            assert not any(v.is_valid(d) for d in docs), s
            continue
        compiled += 1
        for d in docs:
            assert a.matches(json.dumps(d).encode()) == v.is_valid(d), (s, d)
    return compiled


def test_random_one_of_objects_are_exact():
    # every-valid configuration, jsonschema 2020-12 the oracle (this caught "p outside the
    # branch's own schema" dropped where p was not required)
    assert _random_one_of_exact(2, 30) >= 25


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_random_one_of_objects_are_exact_sweep(seed):
    assert _random_one_of_exact(100 + seed, 150) >= 120


def _geojson(n=6):
    """Github_trivial o63308's shape: GeoJSON whose collections' ``type`` says ``emum`` (a
    typo: any string), so the collection overlaps every geometry; a feature's geometry is a
    ``oneOf`` of null, ``n`` geometries tagged by ``type`` and the collection, and the top-level
    ``oneOf`` negates it inside a feature collection's items (the collection branch's product
    against the six tagged geometries is 2⁶ branches: one witness each, 64, was refused)."""
    num = {"type": "number"}
    bbox = {"type": "array", "minItems": 4, "items": num}
    pt = {"type": "array", "minItems": 2, "items": num}
    coords = [pt, {"type": "array", "minItems": 2, "items": pt}, {"type": "array", "items": pt},
              {"type": "array", "items": {"type": "array", "minItems": 4, "items": pt}},
              {"type": "array", "maxItems": 3, "items": pt}, {"type": "array", "minItems": 1, "items": pt}]
    shapes = [{"type": "object", "required": ["type", "coordinates"],
               "properties": {"type": {"type": "string", "enum": [t]}, "coordinates": c, "bbox": bbox}}
              for t, c in zip("PLMQRS", coords[:n])]
    typo = lambda t: {"type": "string", "emum": [t]}
    gc = {"type": "object", "required": ["type", "geometries"],
          "properties": {"type": typo("GC"), "bbox": bbox, "geometries": {"type": "array", "items": {"oneOf": shapes}}}}
    feature = {"type": "object", "required": ["type", "g"],
               "properties": {"type": typo("F"), "g": {"oneOf": [{"type": "null"}] + shapes + [gc]}}}
    fc = {"type": "object", "required": ["type", "features"],
          "properties": {"type": typo("FC"), "features": {"type": "array", "items": feature}}}
    return {"oneOf": shapes + [gc, feature, fc]}


def _geojson_documents():
    p, gc = {"type": "P", "coordinates": [1, 2]}, {"type": "GC", "geometries": []}
    feats = [{"type": "F", "g": g} for g in (None, p, gc, {"type": "P", "coordinates": [1]}, {"type": "X"},
                                             {"type": "P", "coordinates": [1, 2], "geometries": []}, 1)]
    quick = [{"type": "FC", "features": [f]} for f in feats[1:4] + feats[5:6]]
    rest = [p, gc, {"type": "L", "coordinates": [[1, 2]]}, {"type": "L", "coordinates": [[1, 2], [3, 4]]},
            {"type": "GC", "geometries": [p, {"type": "R", "coordinates": []}]},
            {"type": "P", "coordinates": [1, 2], "geometries": []}, {"type": "FC", "features": []}]
    rest += feats + [{"type": "FC", "features": [f]} for f in feats[:1] + feats[4:5] + feats[6:]]
    return quick, rest + [{"type": "FC", "features": feats[:3]}]


def _check_geojson(docs, vocab):
    schema = _geojson()
    v = jsonschema.Draft202012Validator(schema)
    every = Index(schema, vocab, **EVERY_VALID)
    assert any(v.is_valid(d) for d in docs) and not all(v.is_valid(d) for d in docs)
    for d in docs:
        assert every.accepts(json.dumps(d)) == v.is_valid(d), d


def test_negated_branches_beside_a_discriminator_case(tiny_bpe_vocab):
    # the split's case "type is not one of the tags" keeps only what the geometries hold
    # there: the collection branch's alternatives hold "type is not P" and the like, which the
    # case implies, and what they leave holds one another (a feature collection's feature:
    # its geometry is negated by the top-level oneOf)
    _check_geojson(_geojson_documents()[0], tiny_bpe_vocab)


@pytest.mark.slow
def test_negated_branches_beside_a_discriminator_case_more(tiny_bpe_vocab):
    quick, rest = _geojson_documents()
    _check_geojson(quick + rest, tiny_bpe_vocab)
    # schema order cannot tell an absent name: the collection's negation there is a product
    with pytest.raises(UnsupportedSchemaError, match="more than 256"):
        schema_to_grammar(_geojson())


# a member that must lie outside three closed objects at once: its value is ¬A ∧ ¬B ∧ ¬C, 7³
# alternatives as a product (refused), ¬(A ∨ B ∨ C) as one negation, its branches witnesses
# (opspec-io's `not` outside its number, object and string constraints)
_OUTSIDE_CLOSED = {"type": "object", "required": ["v"],
                   "not": {"anyOf": [{"properties": {"v": {"type": "object", "additionalProperties": False,
                                                           "properties": {f"{k}{i}": I for i in range(6)}}}}
                                     for k in "abc"]}}
_OUTSIDE_CLOSED_DOCS = [{"v": 1}, {"v": {}}, {"v": {"a0": 1}}, {"v": {"a0": "s"}}, {"v": {"a0": 1, "b0": 1}},
                        {"v": {"x": 1}}, {"v": {"a0": "s", "b5": 1}}, {"v": {"c5": None}}, {"v": {"c5": 2, "c1": 3}}, {}]


def test_a_value_outside_several_negated_objects(tiny_bpe_vocab):
    r = random.Random(5)
    keys = [f"{k}{i}" for k in "abc" for i in (0, 5)] + ["x"]
    docs = _OUTSIDE_CLOSED_DOCS + [{"v": {k: r.choice([1, "s", None]) for k in r.sample(keys, r.randint(0, 3))}}
                                   for _ in range(30)]
    for form, schema, ds in _forms(_OUTSIDE_CLOSED, docs):
        v = jsonschema.Draft202012Validator(schema)
        every = Index(schema, tiny_bpe_vocab, **EVERY_VALID)
        assert any(v.is_valid(d) for d in ds) and not all(v.is_valid(d) for d in ds)
        for d in ds:
            assert every.accepts(json.dumps(d)) == v.is_valid(d), (form, d)
    # schema order cannot tell an absent name: the product there, refused by name
    with pytest.raises(UnsupportedSchemaError, match="more than 256"):
        schema_to_grammar(_OUTSIDE_CLOSED)


def _regression(row_id):
    from pathlib import Path

    path = Path(__file__).resolve().parent / "data" / "maskbench" / "regressions.jsonl"
    return next(r for r in map(json.loads, path.read_text().splitlines()) if r["id"] == row_id)


def _opspec_documents():
    # opspec-io's parameters: a type each, its constraints a schema of schemas (recursive:
    # `not`, `allOf`, `dependencies` as a oneOf of that schema and an array of names)
    C = lambda c, kind="object": {"name": "x", "inputs": {"a": {kind: {"constraints": c}}}}
    docs = [{"name": "x"}, {"name": "x", "inputs": {"a": {"string": {}}}},
            {"name": "x", "inputs": {"a": {"number": {"constraints": {"minimum": 1}}, "string": {}}}},
            C({"minLength": 1}, "string"), C({"not": {"minLength": 1}}, "string"),
            C({"not": {"enum": ["a"], "not": {"maxLength": 2}}}, "string"), C({"not": {"minLength": "x"}}, "string"),
            C({"properties": {"p": {"type": "string", "minLength": 2}}}), C({"dependencies": {"p": {"type": "string"}}}),
            C({"dependencies": ["p"]}), C({"dependencies": [1]}), C({"dependencies": {"title": 1}})]
    for dep in ({"not": {}}, {"not": {"not": {}}}, {"not": {"minLength": "x"}}, {"not": {"allOf": [{"not": 1}]}},
                {"allOf": [{"not": {"format": "uri"}}]}, {"format": "uri", "oneOf": [{"not": {"title": 1}}]},
                {"properties": {"x": {"not": {"minLength": 1}}}}, {"dependencies": {"title": 2}},
                {"dependencies": {"title": "s", "not": {"not": {"minLength": 1}}}}, {"not": {"minimum": 1, "title": 2}},
                {"not": {"format": "uri", "minLength": 2}}, {"not": {"properties": {"a": {}}, "minLength": 2}},
                {"not": {"x": 1}}, {"not": []}):
        docs.append(C({"dependencies": dict({"title": 1}, **dep)}))
        docs.append(C({"dependencies": dep}))
    return docs


@pytest.mark.slow
def test_maskbench_opspec_every_valid(tiny_bpe_vocab):
    # JsonSchemaStore opspec-io-0.1.7: deciding a discriminator recursed without end through
    # its recursive constraints (_finite_prop), and a member witnessing three negated
    # constraint objects was a product past 256; the row has no instances: these are ours,
    # labelled by jsonschema (its dialect, draft 7)
    row = _regression("JsonSchemaStore---opspec-io-0.1.7")
    index = Index(row["schema"], tiny_bpe_vocab, **EVERY_VALID)
    check = jsonschema.validators.validator_for(row["schema"])(row["schema"])
    docs = _opspec_documents()
    verdicts = [check.is_valid(d) for d in docs]
    assert any(verdicts) and not all(verdicts)
    for d, ok in zip(docs, verdicts):
        assert index.accepts(json.dumps(d)) == ok, d


@pytest.mark.slow
def test_maskbench_o63308_every_valid(tiny_bpe_vocab):
    # Github_trivial o63308 (GeoJSON with `emum` typos): 64 witnesses before the negation
    # within a discriminator's case kept only what holds there
    row = _regression("Github_trivial---o63308")
    index = Index(row["schema"], tiny_bpe_vocab, **EVERY_VALID)
    check = jsonschema.validators.validator_for(row["schema"])(row["schema"])
    for t in row["tests"]:
        assert index.accepts(json.dumps(t["data"])) is check.is_valid(t["data"]) is t["valid"], t["data"]
    quick, rest = _geojson_documents()
    for d in quick + rest:  # (its tags are others; these documents mostly hold no valid one)
        assert index.accepts(json.dumps(d)) == check.is_valid(d), d


def test_a_split_on_other_types_does_not_split_again():
    # a schema of schemas (opspec-io's constraints, two kinds): the negation of `dependencies`'
    # union is split on `kind`; its part on the other types than object has no object
    # property to split on (it recursed without end, "schema nesting too deep"); what is
    # left is a product past the limit, refused by name
    I = {"type": "integer"}
    kind = lambda k: {"type": "object", "additionalProperties": False,
                      "properties": {"kind": {"enum": [k]}, "not": {"$ref": "#/$defs/c"},
                                     "all": {"type": "array", "items": {"$ref": "#/$defs/c"}},
                                     "deps": {"oneOf": [{"$ref": "#/$defs/c"}, {"items": S}]}, f"{k}0": I, f"{k}1": I}}
    schema = {"$defs": {"c": {"anyOf": [{"properties": {"title": S}}, {"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]},
                        "a": kind("a"), "b": kind("b")}, "$ref": "#/$defs/c"}
    with pytest.raises(UnsupportedSchemaError, match="more than 256"):
        schema_to_grammar(schema, **EVERY_VALID)


def test_maskbench_o63308_in_the_generation_configuration(tiny_bpe_vocab):
    # GeoJSON whose collections say `emum`: every geometry overlaps the collections (their
    # `type` any string), and in schema order the exact negations are a product past 256. The
    # default configuration closes objects (`close_objects`), and a closed geometry cannot hold
    # `geometries`, `features` or `geometry`: with its oneOf's object branches closed as the
    # policy closes them, no two branches overlap. Documents generated are valid ones only;
    # open objects in schema order are still refused by name.
    row = _regression("Github_trivial---o63308")
    check = jsonschema.validators.validator_for(row["schema"])(row["schema"])
    with pytest.raises(UnsupportedSchemaError, match="oneOf branches that may overlap"):
        schema_to_grammar(row["schema"], close_objects=False)
    index = Index(row["schema"], tiny_bpe_vocab)
    point = {"type": "Point", "coordinates": [1.5, 2]}
    docs = [point, dict(point, bbox=[1, 2, 3, 4]), {"type": "GeometryCollection", "geometries": [point]},
            {"type": "Feature", "properties": None, "geometry": None},
            {"type": "Feature", "properties": {"a": 1}, "geometry": point},
            {"type": "FeatureCollection", "features": [{"type": "Feature", "properties": None, "geometry": point}]},
            {"type": "LineString", "coordinates": [[1, 2], [3, 4]]}]
    for d in docs:  # (valid, closed and in schema order: each one branch's)
        assert check.is_valid(d), d
        assert index.accepts(json.dumps(d)), d
    wrong = [dict(point, geometries=[]), dict(point, features=[]), {"type": "Point", "coordinates": [1]},
             {"type": "Point"}, {"type": "X", "coordinates": [1, 2]},
             {"type": "Feature", "properties": None, "geometry": {"type": "Point", "coordinates": [1]}}]
    for d in wrong:
        assert not index.accepts(json.dumps(d)), d
    assert not check.is_valid(wrong[0]) and not check.is_valid(wrong[2])  # (two branches; too short)
    for t in row["tests"]:  # (the second valid one writes `geometry` before `properties`)
        if not t["valid"]:
            assert not index.accepts(json.dumps(t["data"])), t["data"]
    assert index.accepts(json.dumps(row["tests"][0]["data"])) and row["tests"][0]["valid"]
