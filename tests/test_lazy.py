"""The lazy two-phase schema compiler: what is built when, and what may never go wrong lazily."""

from __future__ import annotations

import numpy as np
import pytest

from dotjson import Index, ir
from dotjson.automaton import Automaton
from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError
from dotjson.grammar import lark_parses, to_lark
from dotjson.ir.analysis import Analysis
from dotjson.jsonschema import schema_to_grammar


def _props(n, required=()):
    return {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)},
            "required": list(required)}


def test_unused_defs_are_never_compiled():
    defs = {f"d{i}": {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x+$"}}}
            for i in range(500)}
    g = schema_to_grammar({"$defs": defs, "$ref": "#/$defs/d7"})
    a = Automaton(g)
    assert a.matches(b'{"a":"xx"}') and not a.matches(b'{"a":"y"}')
    # the base JSON rules, the start, d7 and its object's few states: nothing of the other 499
    assert g.rules.n_built < 40
    assert not any("d8" in name for name in g.rules._src.rules)


def test_property_schemas_are_built_when_reached():
    g = schema_to_grammar(_props(1000))
    a = Automaton(g)
    s = a.walk_bytes(a.start, b'{"p5":')
    assert s >= 0
    # the object's states are built (a tree over its 1,000 members), but no property schema
    # yet; then only the one the text opened
    assert [n for n in g.rules._src.rules if n.startswith("s_p")] == []
    assert a.walk_bytes(s, b"1") >= 0
    assert [n for n in g.rules._src.rules if n.startswith("s_p")] == ["s_p5"]
    assert a.matches(b'{"p5":1,"p999":2}')
    assert not a.matches(b'{"p999":2,"p5":1}')  # schema order


def test_errors_surface_in_phase_one_even_for_unreached_parts():
    # the bad keyword sits in a property the decoder may never open: still an error up front
    with pytest.raises(SchemaError, match="minLength"):
        schema_to_grammar({"properties": {"a": {}, "z": {"minLength": -1}}})
    with pytest.raises(UnsupportedSchemaError, match="cannot resolve"):
        schema_to_grammar({"properties": {"z": {"$ref": "https://example.com/nowhere.json"}}})
    with pytest.raises(SchemaError, match="never consumes input"):
        schema_to_grammar({"properties": {"z": {"$ref": "#/$defs/a"}},
                           "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}})


def test_empty_required_property_deep_inside_is_never_a_dead_state():
    # b is required and its schema accepts nothing: any object holding "b" cannot finish; the
    # automaton must not offer the key at all (no dead state), exactly, without compiling
    # everything up front
    schema = {"type": "object", "properties": {
        "x": {"type": "object", "properties": {"a": {"type": "integer"},
                                               "b": {"type": "string", "minLength": 3, "maxLength": 2}},
              "required": ["b"]},
        "y": {"type": "integer"}}}
    g = schema_to_grammar(schema)
    a = Automaton(g)
    assert a.matches(b'{"y":1}')
    assert a.walk_bytes(a.start, b'{"x"') == -2  # the key x is refused at once
    text = to_lark(g)
    assert lark_parses(text, '{"y":1}') and not lark_parses(text, '{"x":{"b":"abc"}}')


def test_required_recursion_forever_is_caught_lazily_and_exactly():
    inf = {"$defs": {"foo": {"type": "object", "properties": {"c": {"$ref": "#/$defs/foo"}},
                             "required": ["c"]}}}
    with pytest.raises(SchemaError, match="accepts no JSON value"):
        schema_to_grammar({**inf, "$ref": "#/$defs/foo"})
    g = schema_to_grammar({**inf, "type": "object", "properties": {"a": {"$ref": "#/$defs/foo"}, "b": {}}})
    a = Automaton(g)
    assert a.matches(b'{"b":1}')
    assert a.walk_bytes(a.start, b'{"a"') == -2


def test_analysis_short_circuits_optional_objects():
    # an object with only optional properties is productive through {} without its properties
    asked = []

    class Rules(dict):
        def __getitem__(self, name):
            asked.append(name)
            return dict.__getitem__(self, name)

    rules = Rules({
        "start": ir.alt(ir.lit("{}"), ir.seq(ir.lit("{"), ir.Ref("p1"), ir.lit("}"))),
        "p1": ir.seq(ir.lit('"a":'), ir.Ref("v1")),
        "v1": ir.Ref("v1"),  # unproductive, and never looked at
    })
    an = Analysis(rules)
    assert an.productive("start")
    assert asked == ["start"]
    assert not an.productive("p1")  # exact when asked


def test_analysis_long_chains_without_recursion():
    n = 20_000
    rules = {f"r{i}": ir.alt(ir.seq(ir.lit("x"), ir.Ref(f"r{i + 1}")), ir.Ref(f"r{i + 1}")) for i in range(n)}
    rules[f"r{n}"] = ir.lit("end")
    an = Analysis(rules)
    assert an.productive("r0") and not an.nullable("r0")
    rules[f"r{n}"] = ir.Ref(f"r{n}")  # now nothing ends
    an = Analysis(rules)
    assert not an.productive("r0")
    with pytest.raises(GrammarError, match="left-recursive"):
        an.check_left_recursion(f"r{n}")


def test_index_resources_for_remote_refs(tiny_bpe_vocab):
    remote = {"https://example.com/point.json": {"type": "object", "required": ["x"],
                                                 "properties": {"x": {"type": "integer"}},
                                                 "additionalProperties": False}}
    schema = {"type": "array", "items": {"$ref": "https://example.com/point.json"}}
    with pytest.raises(UnsupportedSchemaError, match="resources"):
        Index(schema, tiny_bpe_vocab)
    index = Index(schema, tiny_bpe_vocab, resources=remote)
    assert index.check('[{"x":1},{"x":-2}]').ok
    assert not index.check('[{"y":1}]').ok
    mask = np.zeros((int(tiny_bpe_vocab.max_token_id()) + 32) // 32, dtype=np.uint32)
    index.fill_mask(index.initial_state, mask)
    assert mask.any()
