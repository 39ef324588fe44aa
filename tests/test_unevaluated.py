"""``unevaluatedProperties`` / ``unevaluatedItems`` beside applicators (issue 29).

Where what a valid instance has evaluated does not depend on the instance (``allOf``, ``$ref``,
``anyOf``/``oneOf`` whose branches evaluate the same, ``if``+``then`` evaluating what ``else``
does, ``not``), the keyword is ``additionalProperties``/``items`` over the union of what they
evaluate; where it depends on which of the schema's own ``anyOf``/``oneOf`` branches, ``if`` or
``dependentSchemas`` hold, a case per choice. Checked against ``jsonschema`` on random instances
in the every-valid configuration (any key order, open objects), and against the named error
where a nested applicator decides.
"""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

from dotjson.automaton import Automaton
from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema import schema_to_grammar

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}
D = "https://json-schema.org/draft/2020-12/schema"

SCHEMAS = [
    {"$schema": D, "allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": True}}],
     "properties": {"c": {"type": "string"}}, "unevaluatedProperties": False},
    {"$schema": D, "$ref": "#/$defs/x", "patternProperties": {"^p": {"type": "null"}},
     "unevaluatedProperties": {"type": "integer"}, "$defs": {"x": {"properties": {"a": {"type": "string"}}}}},
    {"$schema": D, "anyOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                             {"properties": {"a": {"type": "string"}}, "required": ["b"]}],
     "unevaluatedProperties": False},
    {"$schema": D, "if": {"properties": {"a": {"const": 1}}}, "then": {"properties": {"b": True}},
     "else": {"properties": {"a": True, "b": {"type": "null"}}}, "unevaluatedProperties": False},
    {"$schema": D, "allOf": [{"properties": {"a": True}, "unevaluatedProperties": {"type": "integer"}}],
     "unevaluatedProperties": False, "not": {"required": ["z"]}},
    {"$schema": D, "allOf": [{"prefixItems": [{"type": "integer"}]}, {"prefixItems": [True, {"type": "string"}]}],
     "unevaluatedItems": {"type": "boolean"}},
    {"$schema": D, "oneOf": [{"prefixItems": [{"type": "integer"}]}, {"prefixItems": [{"type": "string"}]}],
     "unevaluatedItems": False},
    # what is evaluated depends on the branches that hold: a case per set of them
    {"$schema": D, "anyOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": True}},
                             {"required": ["c"], "properties": {"c": True}}],
     "properties": {"w": True}, "unevaluatedProperties": False},
    {"$schema": D, "oneOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                             {"properties": {"b": {"type": "string"}}, "required": ["b"]}],
     "unevaluatedProperties": {"type": "integer"}},
    {"$schema": D, "if": {"properties": {"a": {"const": 1}}, "required": ["a"]}, "then": {"properties": {"b": True}},
     "else": {"properties": {"c": True}}, "unevaluatedProperties": False},
    {"$schema": D, "if": {"properties": {"a": {"type": "integer"}}}, "unevaluatedProperties": False},
    {"$schema": D, "dependentSchemas": {"a": {"properties": {"b": True}}}, "properties": {"a": True},
     "unevaluatedProperties": False},
    {"$schema": D, "anyOf": [{"prefixItems": [{"type": "integer"}]}, {"prefixItems": [True, True]}],
     "unevaluatedItems": {"type": "string"}},
    {"$schema": D, "if": {"prefixItems": [{"type": "integer"}]}, "then": {"prefixItems": [True, True]},
     "unevaluatedItems": False},
    # nested: the evaluated set depends on branches below allOf, $ref, anyOf, oneOf, if
    {"$schema": D, "allOf": [{"anyOf": [{"properties": {"a": True}}, {"properties": {"b": True}}]}],
     "unevaluatedProperties": False},
    {"$schema": D, "$ref": "#/$defs/one", "properties": {"w": True}, "unevaluatedProperties": {"type": "integer"},
     "$defs": {"one": {"oneOf": [{"$ref": "#/$defs/two"}, {"required": ["b"], "properties": {"b": True}}]},
               "two": {"oneOf": [{"required": ["c"], "properties": {"c": True}},
                                 {"required": ["a"], "patternProperties": {"^p": True}}]}}},
    {"$schema": D, "anyOf": [{"if": {"required": ["a"]}, "then": {"properties": {"b": True}},
                              "else": {"properties": {"c": True}}}, {"required": ["z"], "properties": {"z": True}}],
     "unevaluatedProperties": False},
    {"$schema": D, "dependentSchemas": {"a": {"anyOf": [{"properties": {"b": {"type": "integer"}}}, True]}},
     "allOf": [{"properties": {"a": True}}], "unevaluatedProperties": False},
    {"$schema": D, "allOf": [{"anyOf": [{"properties": {"a": True}, "unevaluatedProperties": False},
                                        {"required": ["c"]}]}], "unevaluatedProperties": {"type": "null"}},
    # contains: the items matching it are evaluated
    {"$schema": D, "allOf": [{"contains": {"type": "integer"}}], "unevaluatedItems": False},
    {"$schema": D, "prefixItems": [True], "contains": {"type": "string"}, "unevaluatedItems": {"type": "boolean"}},
    {"$schema": D, "contains": {"type": "string"}, "minContains": 0, "unevaluatedItems": {"type": "integer"}},
    {"$schema": D, "allOf": [{"contains": {"type": "integer"}}, {"contains": {"type": "string"}}],
     "unevaluatedItems": {"type": "null"}},
    {"$schema": D, "if": {"contains": {"const": 1}}, "then": {"if": {"contains": {"const": "s"}}},
     "unevaluatedItems": False},
    {"$schema": D, "anyOf": [{"prefixItems": [{"type": "integer"}]}, {"contains": {"type": "boolean"}}],
     "unevaluatedItems": {"type": "string"}},
]


def _value(rng: random.Random):
    return rng.choice([1, 2, "s", None, True, 1.5, [1], {"q": 1}])


def _instance(rng: random.Random):
    if rng.random() < 0.45:
        return [_value(rng) for _ in range(rng.randint(0, 3))]
    keys = rng.sample(["a", "b", "c", "p1", "z", "w"], rng.randint(0, 4))
    return {k: _value(rng) for k in keys}


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_static_evaluation_matches_jsonschema(k):
    schema = SCHEMAS[k]
    auto = Automaton(schema_to_grammar(schema, **EVERY_VALID))
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(290 + k)
    verdicts = set()
    extras = [{"a": 1}, {"b": "s", "w": 2}, {"a": 1, "z": 1}, {"a": 2, "c": 1}, [1, "s", True], []]
    for x in extras + [_instance(rng) for _ in range(150)]:
        want = validator.is_valid(x)
        verdicts.add(want)
        assert auto.matches(json.dumps(x).encode()) == want, (schema, x, want)
    assert verdicts == {True, False}, schema  # (both kinds were tried)


@pytest.mark.parametrize("schema", [
    {"$schema": D, "anyOf": [{"properties": {f"k{i}": True}} for i in range(7)], "unevaluatedProperties": False},
    {"$schema": D, "allOf": [{"anyOf": [{"prefixItems": [True] * i} for i in range(1, 5)]},
                             {"anyOf": [{"contains": {"const": i}} for i in range(5)]}], "unevaluatedItems": False},
])
def test_too_many_evaluated_sets_is_a_named_error(schema):
    # 2^7 sets of evaluated names (4 x 2^5 for items): past MAX_CASES, refused by name
    kw = "unevaluatedProperties" if "unevaluatedProperties" in schema else "unevaluatedItems"
    with pytest.raises(UnsupportedSchemaError, match=f"{kw} whose evaluated .* cannot be enumerated: more than 64") as ei:
        schema_to_grammar(schema, **EVERY_VALID)
    assert ei.value.pointer == "/" + kw
