"""The lazy two-phase schema compiler: what is built when, and what may never go wrong lazily."""

from __future__ import annotations

import numpy as np
import pytest

from dotjson import Index, ir
from dotjson.automaton import Automaton, kernels as K
from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError
from dotjson.grammar import lark_parses, to_lark
from dotjson.ir.analysis import Analysis
from dotjson.jsonschema import schema_to_grammar


@pytest.fixture
def setop_questions(monkeypatch):
    """The And/Diff nodes the automaton is asked to decide emptiness of (Rules.setop_productive)."""
    from dotjson.automaton.rules import Rules

    calls = []
    orig = Rules.setop_productive

    def spy(self, node):
        calls.append(node)
        return orig(self, node)

    monkeypatch.setattr(Rules, "setop_productive", spy)
    return calls


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
    schema = _props(1000)
    for i, v in enumerate(schema["properties"].values()):
        v["maximum"] = i + 10  # (1,000 different schemas: identical ones would be one rule)
    g = schema_to_grammar(schema)
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


def test_identical_leaf_schemas_are_one_expression():
    from dotjson.jsonschema.compiler import Compiler

    # 1,000 properties of one leaf schema (annotations aside) normalise to one expression and
    # one value rule; values that differ by JSON type (1, 1.0, true) or that hold a sub-schema,
    # a reference or an identifier do not merge
    props = {f"p{i}": {"type": "integer", "description": f"#{i}"} for i in range(1000)}
    props.update({"c1": {"const": 1}, "c2": {"const": True}, "c3": {"const": 1.0}, "c4": {"const": 1},
                  "r1": {"$ref": "#/$defs/x"}, "r2": {"$ref": "#/$defs/x"},
                  "o1": {"type": "object", "properties": {}}, "o2": {"type": "object", "properties": {}}})
    schema = {"type": "object", "properties": props, "$defs": {"x": {"type": "string"}}}
    g = schema_to_grammar(schema)
    a = Automaton(g)
    assert a.matches(b'{"p3":1,"p999":2,"c1":1,"c2":true,"c3":1,"c4":1,"r1":"a","o2":{}}')
    assert not a.matches(b'{"c2":1}') and not a.matches(b'{"c1":true}') and not a.matches(b'{"p5":1.5}')
    c = Compiler(schema, disallow_whitespace=False, close_objects=False, lenient=False, resources=None)
    s = c.documents.docs[""].root
    exprs = {k: c._sub(s["properties"], "", "/properties", k) for k in props}
    assert len({exprs[f"p{i}"] for i in range(1000)}) == 1
    assert exprs["c1"] == exprs["c4"] and len({exprs[k] for k in ("c1", "c2", "c3")}) == 3
    assert exprs["r1"] != exprs["r2"] and exprs["o1"] != exprs["o2"]


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


class _ChainFamily:
    """A rule family ``f0 .. fn`` whose productivity hint asks the analysis about a member:
    ``f{i}`` is ``[`` ``v{i}`` ``]`` and its hint is the productivity of ``v{i}``, a plain rule
    that refers to ``f{i+1}`` (what an any-order object does with a required member whose
    value is the next object)."""

    prefix = "f"

    def __init__(self, n):
        self.n = n
        self.ask = None
        self.asked = 0

    def owns(self, name):
        return name.startswith("f__") and name[3:].isdigit() and int(name[3:]) <= self.n

    def body(self, name):
        return ir.seq(ir.lit("["), ir.Ref(f"v{name[3:]}"), ir.lit("]"))

    def nullable(self, name):
        return False

    def productive(self, name):
        if self.ask is None:
            return None
        self.asked += 1
        return bool(self.ask(ir.Ref(f"v{name[3:]}")))

    def bind(self, node_productive):
        self.ask = node_productive


@pytest.mark.parametrize("end", ["x", "loop"])
def test_analysis_hints_asking_through_long_chains_without_recursion(end):
    # each hint asks about the next family rule: before, one nested search per link (the
    # interpreter's stack overflowed after ~80 links, Github_medium o3626); now the solver's
    # own loop settles the rule asked about first, then asks the hint again
    from dotjson.ir.families import rules_with_families

    n = 5_000
    fam = _ChainFamily(n)
    rules = {f"v{i}": ir.Ref(f"f__{i + 1}") for i in range(n)}
    # "loop": the last link leads back to the first, so no rule ends (a hint then asks about a
    # rule being settled, and the analysis reads the bodies instead)
    rules[f"v{n}"] = ir.lit("x") if end == "x" else ir.Ref("f__0")
    rules["start"] = ir.Ref("f__0")
    an = Analysis(rules_with_families(ir.Grammar(rules, "start", families=[fam])))
    assert an.productive("start") is (end == "x")
    assert an.productive(f"f__{n // 2}") is (end == "x")
    assert an.productive(f"v{n - 1}") is (end == "x")
    if end == "x":
        assert fam.asked >= n  # the hints answered (not the bodies read instead)


def _object_chain(n):
    """``d0`` .. ``d{n-1}``: objects whose required member ``x`` is the next one, ``d{n}`` an
    integer; and the document of depth ``n`` (``y`` required on odd levels)."""
    defs = {f"d{i}": {"type": "object", "properties": {"x": {"$ref": f"#/$defs/d{i + 1}"}, "y": {"type": "string"}},
                      "required": ["x"] if i % 2 == 0 else ["x", "y"]} for i in range(n)}
    defs[f"d{n}"] = {"type": "integer"}
    doc = "1"
    for i in reversed(range(n)):
        doc = ('{"x":%s}' if i % 2 == 0 else '{"y":"s","x":%s}') % doc
    return {"$defs": defs, "$ref": "#/$defs/d0"}, doc


def test_any_order_objects_chained_deeper_than_the_interpreter_stack():
    import json

    import jsonschema

    # the oracle on a chain it can validate; then the same chain 300 objects deep (before: a
    # LimitExceededError "schema nesting too deep to compile" from ~80 on, in this configuration)
    for n in (6, 300):
        schema, doc = _object_chain(n)
        g = schema_to_grammar(schema, property_order="any", close_objects=False, whitespace="json")
        a = Automaton(g)
        bad = [doc.replace("1", '"1"'), doc.replace('"y":"s",', "", 1), doc.replace('"x":1', '"z":1')]
        if n < 10:
            check = jsonschema.Draft202012Validator(schema)
            assert check.is_valid(json.loads(doc))
            assert not any(check.is_valid(json.loads(b)) for b in bad)
        assert a.matches(doc.encode())
        assert not any(a.matches(b.encode()) for b in bad)
    # a member that must be itself forever: no document at all, decided without recursion
    loop = {"$defs": {"d": {"type": "object", "properties": {"x": {"$ref": "#/$defs/e"}}, "required": ["x"]},
                      "e": {"type": "object", "properties": {"x": {"$ref": "#/$defs/d"}}, "required": ["x"]}},
            "$ref": "#/$defs/d"}
    with pytest.raises(SchemaError, match="empty"):
        schema_to_grammar(loop, property_order="any", close_objects=False, whitespace="json")


@pytest.mark.slow
def test_maskbench_o3626_every_valid():
    # the MaskBench schema that overflowed the interpreter's stack in the productivity analysis
    # (every-valid configuration only; ~3 s: 900 object families, 14,000 rule bodies)
    import json
    from pathlib import Path

    import jsonschema

    path = Path(__file__).resolve().parent / "data" / "maskbench" / "regressions.jsonl"
    row = next(r for r in map(json.loads, path.read_text().splitlines()) if r["id"] == "Github_medium---o3626")
    g = schema_to_grammar(row["schema"], property_order="any", close_objects=False, whitespace="json")
    a = Automaton(g)
    check = jsonschema.validators.validator_for(row["schema"])(row["schema"])
    for t in row["tests"]:
        doc = json.dumps(t["data"], separators=(",", ":"))
        assert a.matches(doc.encode()) is check.is_valid(t["data"]) is t["valid"], doc


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


def test_index_decides_an_empty_language_exactly_once(llama3_vocab):
    # the required chain never ends: the object-state conditions lead the search to the
    # recursion, not to a built state
    inf = {"$defs": {"foo": {"type": "object", "properties": {"c": {"$ref": "#/$defs/foo"}},
                             "required": ["c"]}}}
    with pytest.raises(SchemaError, match="accepts no JSON value"):
        Index({**inf, "$ref": "#/$defs/foo"}, llama3_vocab)
    # an And/Diff language that is empty (the pattern wants one character, the length two):
    # the analysis of schema_to_grammar alone counts it non-empty, the automaton knows better
    contra = {"type": "object", "required": ["a"],
              "properties": {"a": {"type": "string", "pattern": "^[ab]$", "minLength": 2}}}
    with pytest.raises(SchemaError, match="accepts no JSON value"):
        Index(contra, llama3_vocab)
    # a required member after optional ones, each with required members of its own
    deep = {"type": "object", "required": ["z"], "properties": {
        "a": {"type": "integer"},
        "z": {"type": "object", "required": ["y"], "properties": {"y": {"$ref": "#/properties/z"}}}}}
    with pytest.raises(SchemaError, match="accepts no JSON value"):
        Index(deep, llama3_vocab)
    ok = {"type": "object", "required": ["z"], "properties": {
        "a": {"type": "integer"},
        "z": {"type": "object", "required": ["y"], "properties": {"y": {"enum": [1]}}}}}
    assert Index(ok, llama3_vocab).accepts('{"z":{"y":1}}')


def test_object_states_are_not_built_to_know_they_are_productive():
    # every member required, every value an object with required members: the search goes
    # from state to value through the states' conditions; no state body is built
    leaf = {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}
    mid = {"type": "object", "properties": {f"m{i}": leaf for i in range(5)}, "required": [f"m{i}" for i in range(5)]}
    g = schema_to_grammar({"type": "object", "properties": {f"p{i}": mid for i in range(5)},
                           "required": [f"p{i}" for i in range(5)]})
    built = set(g.rules._src.rules)
    assert not any(name.startswith("obj") for name in built), sorted(built)
    a = Automaton(g)
    doc = "{" + ",".join(f'"p{i}":' + "{" + ",".join(f'"m{j}":{{"v":{j}}}' for j in range(5)) + "}"
                         for i in range(5)) + "}"
    assert a.matches(doc.encode()) and not a.matches(doc.replace('"v":4', '"w":4').encode())


def test_required_objects_are_known_inhabited_without_building_them():
    # a schema whose required members are objects with required members: its language is known
    # not empty from the normal forms, and nothing of the objects is built before decoding
    leaf = {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}
    schema = {"type": "object", "properties": {"a": leaf, "b": {"type": "object", "properties": {"c": leaf},
                                                                "required": ["c"]}},
              "required": ["a", "b"]}
    g = schema_to_grammar(schema)
    assert g.rules.n_built == len(g.rules._src.base) + 1  # the base rules and the start
    a = Automaton(g)
    assert a.matches(b'{"a":{"v":1},"b":{"c":{"v":2}}}') and not a.matches(b'{"a":{"v":1},"b":{"c":{}}}')
    # not when a required value is empty, recursive, outside `properties` or over the counts
    for bad in ({"properties": {"a": leaf, "b": {"type": "string", "minLength": 2, "maxLength": 1}},
                 "required": ["a", "b"]},
                {"$defs": {"r": {"type": "object", "properties": {"r": {"$ref": "#/$defs/r"}}, "required": ["r"]}},
                 "properties": {"x": {"$ref": "#/$defs/r"}}, "required": ["x"]},
                {"properties": {"a": leaf}, "required": ["a", "z"]},
                {"properties": {"a": leaf}, "required": ["a"], "minProperties": 2}):
        schema = {"type": "object", **bad}
        g = schema_to_grammar(schema, check_language=False)
        assert g.rules._src.expr_known(("loc", "", ""))[1] is None, bad


def test_formats_patterns_enums_ranges_arrays_and_aliases_are_known_inhabited_without_building_them():
    # required members whose values are a format or a pattern, a const/enum, a number range, a
    # short non-empty array or a plain `$ref`: the start is known productive from the normal
    # forms, nothing is built
    defs = {"tag": {"type": "string", "const": "ping"}}
    good = {"date": {"type": "string", "format": "date"},
            "method": {"type": "string", "const": "ping"},
            "kind": {"enum": [1, "a", None]},
            "list": {"type": "array", "items": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                     "minItems": 2},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"$ref": "#/$defs/tag"}],
                     "minItems": 2, "maxItems": 2},
            "alias": {"$ref": "#/$defs/tag"},
            "rating": {"type": "integer", "minimum": 1, "maximum": 5},
            "share": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "ip": {"type": "string", "pattern": "^$|^([0-9]{1,3}\\.){3}[0-9]{1,3}$"}}
    schema = {"$defs": defs, "type": "object", "properties": good, "required": list(good)}
    g = schema_to_grammar(schema)
    assert g.rules.n_built == len(g.rules._src.base) + 1  # the base rules and the start
    a = Automaton(g)
    doc = b'{"date":"2024-02-29","method":"ping","kind":"a","list":[["x"],["y","z"]],"pair":[1,"ping"],' \
          b'"alias":"ping","rating":5,"share":0.5,"ip":"10.0.0.1"}'
    assert a.matches(doc) and not a.matches(doc.replace(b"2024-02-29", b"2023-02-29"))
    # not when no enum value fits, the items must differ, an item is empty, or the counts cross
    for bad in ({"enum": ["a", "b"], "type": "integer"},
                {"type": "array", "minItems": 2, "uniqueItems": True, "items": {"const": 1}},
                {"type": "array", "minItems": 1, "items": False},
                {"type": "array", "minItems": 3, "maxItems": 2},
                {"type": "array", "minItems": 1, "contains": {"type": "string"}},
                {"type": "string", "format": "date", "maxLength": 5},
                {"type": "string", "pattern": "^a$", "minLength": 2},
                {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                {"type": "integer", "minimum": 0.5, "maximum": 0.7},
                {"type": "number", "minimum": 2, "maximum": 1},
                {"type": "integer", "minimum": 0, "maximum": 9, "multipleOf": 11},
                {"$ref": "#/$defs/none"}):
        s = {"$defs": {"none": {"type": "string", "minLength": 3, "maxLength": 2}}, "type": "object",
             "properties": {"x": bad}, "required": ["x"]}
        g = schema_to_grammar(s, check_language=False)
        assert g.rules._src.expr_known(("loc", "", ""))[1] is None, bad


def test_extra_members_are_known_productive_without_asking_the_automaton(setop_questions):
    # any key but the declared names leaves infinitely many keys: an extra member exists when its
    # value does, known without compiling the Diff of keys and searching it for emptiness
    s = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
         "required": ["name"]}
    a = Automaton(schema_to_grammar(s, close_objects=False))
    assert a.matches(b'{"name":"x","zz":1}') and a.matches(b'{"zz":[],"name":"x"}')
    assert not a.matches(b'{"age":1}')
    assert setop_questions == []
    # with patterns, or a propertyNames language, the keys left are the automaton's question
    for extra in ({"patternProperties": {"^a": {"type": "integer"}}},
                  {"propertyNames": {"pattern": "^[a-z]+$"}}):
        a = Automaton(schema_to_grammar({**s, **extra}, close_objects=False))
        assert a.matches(b'{"name":"x","zz":1}')
    assert setop_questions


def test_a_pattern_every_key_matches_is_in_every_class_of_keys(setop_questions):
    # `.*` (a search for a nullable pattern) matches every key: no class of keys lacks it, so
    # the automaton is never asked to find "keys matching no pattern" empty (~1 ms of kernel
    # search through the escapes of the pattern's language), and its schema applies to every key
    from dotjson.jsonschema.strings import matches_every_string
    from dotjson.regex import regex_to_ir

    assert all(matches_every_string(regex_to_ir(p)) for p in (".*", "", "[\\s\\S]*", "x*", "^a*"))
    assert not any(matches_every_string(regex_to_ir(p)) for p in ("^.*$", ".+", "^a+", "a"))
    for close in (False, True):
        for extra in ({}, {"additionalProperties": False}, {"additionalProperties": {"type": "integer"}}):
            s = {"patternProperties": {".*": {"type": "string"}}, "properties": {"basic": {"type": "string"}},
                 "required": ["basic"], **extra}
            a = Automaton(schema_to_grammar(s, close_objects=close))
            assert a.matches(b'{"basic":"x","other":"y","a\\nb":""}'), (close, extra)
            assert not a.matches(b'{"basic":"x","other":1}') and not a.matches(b'{"basic":1}')
            assert not a.matches(b'{"other":"y"}')
    assert setop_questions == []
    # `^.*$` stops at a line break: a key holding one matches no pattern
    s = {"patternProperties": {"^.*$": {"type": "integer"}}, "additionalProperties": False}
    a = Automaton(schema_to_grammar(s))
    assert a.matches(b'{"ab":1}') and not a.matches(b'{"a\\nb":1}') and not a.matches(b'{"ab":"x"}')


def test_a_branch_merges_into_typed_nodes():
    from decimal import Decimal

    from dotjson.jsonschema.compiler import Compiler
    from dotjson.jsonschema.nodes import NO_ARRAY, NO_OBJECT, NO_STRING, Branch, NumberNode, ObjectNode

    schema = {"allOf": [{"type": ["integer", "object"], "minimum": 2, "maximum": 9, "multipleOf": 3,
                         "properties": {"a": {"type": "string"}}, "required": ["a"]},
                        {"exclusiveMaximum": 9, "maxProperties": 4, "not": {"const": 6}}]}
    c = Compiler(schema, disallow_whitespace=False, close_objects=False, lenient=False, resources=None)
    (br,) = c.dnf(("loc", "", ""))
    m = c.merge(br)
    assert isinstance(m, Branch) and m.types == {"integer", "object"} and m.enum is None
    assert m.not_enum == {("x", Decimal(6))}
    assert isinstance(m.number, NumberNode) and (m.number.lo, m.number.lo_excl) == (2, False)
    assert (m.number.hi, m.number.hi_excl) == (9, True) and m.number.multiples == (3,)
    assert isinstance(m.object, ObjectNode) and list(m.object.properties) == ["a"]
    assert list(m.object.required) == ["a"] and m.object.max_properties == 4
    # kinds the branch does not constrain share the empty nodes, which stay empty
    assert m.string is NO_STRING and m.array is NO_ARRAY
    assert c.merge(br) is m  # remembered
    assert NO_OBJECT.properties == {} and not NO_OBJECT.required and NO_STRING.patterns == ()
    # and the compiled language is the schema's
    g = schema_to_grammar(schema, close_objects=False)
    text = to_lark(g)
    assert lark_parses(text, "3") and not lark_parses(text, "6") and not lark_parses(text, "9")
    assert lark_parses(text, '{"a":"x"}') and not lark_parses(text, '{"a":1}')


@pytest.mark.parametrize("schema, docs", [
    ({"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
      "required": ["name"]}, ['{"name":"x","n":1}', '{"name":"\\u0041"}', '{"n":1}', '{"other":1,"name":"y"}']),
    ({"type": "array", "items": {"enum": ["a", "b\\u00e9", 3]}}, ['["a",3]', '["b\\u00e9"]', '["c"]', '[]']),
    ({"type": "string", "pattern": "^[a-z]+$", "maxLength": 4}, ['"abcd"', '"abcde"', '"A"']),
])
def test_automata_from_the_base_image_behave_as_freshly_compiled_ones(monkeypatch, schema, docs):
    # the reference: the same grammar compiled into an empty store, no shared image
    fresh = Automaton(schema_to_grammar(schema, close_objects=False))
    monkeypatch.setattr(Automaton, "_image_for", lambda self, grammar: None)
    ref = Automaton(schema_to_grammar(schema, close_objects=False))
    monkeypatch.undo()
    assert fresh.rules.names[:5] != [] and ref.rules.names != fresh.rules.names  # the image's ids come first
    for doc in docs:
        for k in range(len(doc) + 1):
            s1 = fresh.walk_bytes(fresh.start, doc[:k].encode())
            s2 = ref.walk_bytes(ref.start, doc[:k].encode())
            assert (s1 == -2) == (s2 == -2), (doc, k)
            if s1 != -2:
                assert fresh.accepting[s1] == ref.accepting[s2], (doc, k)
                row1 = [fresh.deriv(fresh.term_of(s1), b) != fresh.EMPTY for b in range(256)]
                row2 = [ref.deriv(ref.term_of(s2), b) != ref.EMPTY for b in range(256)]
                assert row1 == row2, (doc, k)


def test_an_automaton_starts_from_exactly_the_image_store():
    # the copy reads only the used prefix of the image's arrays (the rest is fill, and an image
    # has no state): what an automaton starts with is the image's store, array for array
    from dotjson.automaton import base_image
    from dotjson.jsonschema.jsonbase import json_base_items
    from dotjson.jsonschema import shared_nodes

    g = schema_to_grammar({"type": "object", "properties": {"a": {"type": "string"}}}, close_objects=False)
    a = Automaton.__new__(Automaton)
    a._init(g, 1_000_000, 200_000)
    image = base_image(json_base_items(False), shared_nodes(), Automaton.INITIAL_TERMS, Automaton.INITIAL_STATES)
    a._from_image(image)
    whole = image.owner._a  # the store the image was made from
    assert set(a._a) == set(whole)
    n = int(whole["ctl"][K.C_STATES])
    for k, v in whole.items():
        got = a._a[k]
        assert got.dtype == v.dtype and not np.shares_memory(got, v), k
        if k in ("term_of", "trans", "accepting", "plain_inv", "row_ready"):
            # the states' tables start at their grown size (a row is written when its state is
            # made): the image's states, then room
            assert got.shape[1:] == v.shape[1:] and got.shape[0] == max(v.shape[0], Automaton.GROWN_STATES), k
            assert np.array_equal(got[:n], v[:n]), k
        else:
            assert np.array_equal(got, v), k


def test_number_languages_are_shared_across_schemas_exactly():
    from dotjson.jsonschema.compiler import Compiler

    # the digit automaton of a bound pair is built once per process and reused by every schema
    # (as IR, which is immutable); a language made leniently (a constraint dropped) is not shared
    def node(schema, **kw):
        opts = dict(disallow_whitespace=False, close_objects=True, lenient=False, resources=None)
        opts.update(kw)
        c = Compiler(schema, **opts)
        (br,) = c.dnf(("loc", "", ""))
        m = c.merge(br)
        return c.numbers.build_number(m.number, m.not_enum, "integer" in m.types, "nonint" in m.types, "")

    a = node({"type": "number", "minimum": 0.125, "maximum": 17.5})
    assert node({"type": "number", "maximum": 17.5, "minimum": 0.125}) is a
    assert node({"type": "integer", "minimum": 0.125, "maximum": 17.5}) is not a
    text = to_lark(schema_to_grammar({"type": "number", "minimum": 0.125, "maximum": 17.5}))
    assert lark_parses(text, "0.125") and lark_parses(text, "17.5") and not lark_parses(text, "17.51")
    # a divisor of any size compiles (issue 29; it was dropped leniently, or refused, before)
    big = {"type": "integer", "multipleOf": 123457, "minimum": 0, "maximum": 10}
    from dotjson.automaton import Automaton

    auto = Automaton(schema_to_grammar(big))
    assert auto.matches(b"0") and not auto.matches(b"1") and not auto.matches(b"123457")


def test_the_image_computes_the_rows_its_grammar_names():
    # the JSON layer names its whitespace rule and bytes (ir.Grammar.shared's third item): the
    # image computes their rows once for every schema; the automaton knows no rule by name
    from dotjson.automaton import base_image
    from dotjson.automaton import kernels as K
    from dotjson.jsonschema.jsonbase import WARM_ROWS, json_base_items
    from dotjson.jsonschema import shared_nodes

    def rows(img):
        return int((img.arrays["tm"][: img.n_terms, K.M_ROW_OFF] >= 0).sum())

    items, nodes = json_base_items(False), shared_nodes()
    cold = base_image(items, nodes, Automaton.INITIAL_TERMS, Automaton.INITIAL_STATES)
    warm = base_image(items, nodes, Automaton.INITIAL_TERMS, Automaton.INITIAL_STATES, WARM_ROWS)
    assert rows(warm) > rows(cold)
    g = schema_to_grammar({"type": "integer"})
    assert g.shared[2][: len(WARM_ROWS)] == WARM_ROWS
    img = Automaton(g).image  # a schema's image: the whitespace rule's body has its row
    ws = int(img.arrays["rule_body"][img.rules[1]["ws"]])
    assert ws >= 0 and img.arrays["tm"][ws, K.M_ROW_OFF] >= 0


@pytest.mark.parametrize("spellings", ["any", "canonical"])
def test_the_image_reads_key_characters_ahead(spellings):
    # the JSON layer names the printable ASCII characters of property names (ir.KeyChars): the
    # image reads their escapes once, so a new index's first key set reads none of them, and
    # the key set built on them accepts and refuses as one that read them itself
    from dotjson import ir
    from dotjson.jsonschema.jsonbase import KEY_CHARS

    schema = {"type": "object", "properties": {"n\\a\"me": {"type": "integer"}, "zip": {"type": "string"}},
              "required": ["zip"]}
    g = schema_to_grammar(schema, spellings=spellings, close_objects=False)
    warm = [e for e in g.shared[2] if type(e) is ir.KeyChars]
    assert warm and all(e[2] == KEY_CHARS for e in warm)
    a = Automaton(g)
    assert a.image is not None and a.image.kchar
    calls = []
    deriv0 = a.deriv
    a.deriv = lambda t, b: calls.append(b) or deriv0(t, b)
    docs_ok = ['{"zip":"1"}', '{"n\\\\a\\"me":1,"zip":""}', '{"zip":"","other":[1]}']
    docs_bad = ['{"n\\\\a\\"me":"x","zip":""}', '{"zi":"1"}', '{"zip":1}']
    if spellings == "any":
        docs_ok.append('{"\\u007aip":"1"}')
    else:
        docs_bad.append('{"\\u007aip":"1"}')
    for doc in docs_ok:
        assert a.matches(doc.encode()), doc
    for doc in docs_bad:
        assert not a.matches(doc.encode()), doc
    assert not calls  # (every name character was read by the image)
    # the same verdicts from a store of its own (no image: every character read here)
    own = Automaton(ir.Grammar(g.rules, g.start, families=g.families))
    assert own.image is None
    for doc in docs_ok:
        assert own.matches(doc.encode()), doc
    for doc in docs_bad:
        assert not own.matches(doc.encode()), doc


def test_a_formats_image_starts_from_the_base_image():
    # a schema naming formats gets an image of its own (the base rules, the spellings and the
    # formats' languages): a copy of the image whose nodes are the longest prefix of its own
    # (the base image, or one of fewer formats), with only the nodes it adds compiled, so the
    # first schema of a format in a process does not compile the base rules again
    from dotjson.automaton import base_image
    from dotjson.jsonschema.jsonbase import json_base_items, warm_items
    from dotjson.jsonschema import shared_nodes

    items, nodes, warm = json_base_items(False), shared_nodes(), warm_items()
    T, S = Automaton.INITIAL_TERMS, Automaton.INITIAL_STATES
    x1 = (ir.seq(ir.lit("first extra node"), ir.repeat(ir.chars((0x30, 0x39)), 1, 3)),)  # (new objects:
    x2 = (ir.alt(ir.lit("second"), ir.lit("extra")),)                                     # no image has them)
    base = base_image(items, nodes, T, S, warm)
    d1 = base_image(items, nodes + x1, T, S, warm)
    d2 = base_image(items, nodes + x1 + x2, T, S, warm)
    assert d1.parent is base and d2.parent is d1
    assert d2.nodes == nodes + x1 + x2 and d1.n_terms < d2.n_terms
    # what the base image compiled keeps its ids in the derived ones
    n = base.n_terms
    for img in (d1, d2):
        assert (img.arrays["ti"][:n] == base.arrays["ti"][:n]).all()
        assert img.rules[1] == base.rules[1] and img.kchar == base.kchar and img.ksyn == base.ksyn
    # a schema's automaton over such an image reads its formats exactly
    fmt_schema = {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
                                                   "who": {"type": "string", "format": "email"}}}
    a = Automaton(schema_to_grammar(fmt_schema, close_objects=False))
    p = a.image
    while p.parent is not None:  # (its ancestors' nodes are prefixes of its own)
        assert p.nodes[: len(p.parent.nodes)] == p.parent.nodes and len(p.parent.nodes) < len(p.nodes)
        p = p.parent
    ok = ['{"when":"2023-04-15T19:30:00Z","who":"jane@example.com"}', '{"who":"a@b.co"}']
    bad = ['{"when":"2023-04-15","who":"jane@example.com"}', '{"who":"jane"}']
    for doc in ok:
        assert a.matches(doc.encode()), doc
    for doc in bad:
        assert not a.matches(doc.encode()), doc
