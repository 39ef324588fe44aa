"""``$dynamicRef`` / ``$dynamicAnchor`` resolved per dynamic scope (dotjson/jsonschema/dynamic.py, issue 29).

Every test group of the JSON-Schema-Test-Suite that holds a ``$dynamicRef`` with several candidate
anchors, in the every-valid configuration, against the suite's verdicts and ``jsonschema``'s; a
schema reaching one ``$dynamicRef`` by two paths on random instances; and the same schema inside
text (``%json`` in a Lark grammar), which compiles through its own path.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import jsonschema
import pytest
import referencing
import referencing.jsonschema

from dotjson.automaton import Automaton
from dotjson.jsonschema import schema_to_grammar

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}
D = "https://json-schema.org/draft/2020-12/schema"
SUITE = Path(__file__).resolve().parent / "data" / "json-schema-test-suite"


def _remotes() -> dict:
    base = SUITE / "remotes"
    return {f"http://localhost:1234/{p.relative_to(base).as_posix()}": json.loads(p.read_text())
            for p in base.rglob("*.json")}


def _groups():
    out = []
    for rel in ("dynamicRef.json", "optional/dynamicRef.json", "unevaluatedProperties.json",
                "unevaluatedItems.json"):
        for g in json.loads((SUITE / "draft2020-12" / rel).read_text()):
            if "$dynamicRef" in json.dumps(g["schema"]) or "extendible" in json.dumps(g["schema"]) \
                    or "tree.json" in json.dumps(g["schema"]):
                out.append(pytest.param(g, id=f"{rel}:{g['description'][:60]}"))
    return out


@pytest.fixture(scope="module")
def remotes():
    return _remotes()


@pytest.mark.parametrize("group", _groups())
def test_suite_dynamic_ref_groups(group, remotes):
    schema = group["schema"]
    auto = Automaton(schema_to_grammar(schema, resources=remotes, **EVERY_VALID))
    registry = referencing.Registry().with_resources(
        (uri, referencing.jsonschema.DRAFT202012.create_resource(s)) for uri, s in remotes.items())
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    for t in group["tests"]:
        assert validator.is_valid(t["data"]) == t["valid"], t  # (the oracle agrees with the suite)
        for text in (json.dumps(t["data"]), json.dumps(t["data"], indent=2)):
            assert auto.matches(text.encode()) == t["valid"], (t["description"], text)


# one $dynamicRef reached by two paths (then: numbers, else: strings), inside a recursive list
TWO_PATHS = {
    "$schema": D, "$id": "https://example.com/main",
    "if": {"properties": {"kind": {"const": "n"}}, "required": ["kind"]},
    "then": {"$ref": "numbers"}, "else": {"$ref": "strings"},
    "$defs": {
        "generic": {"$id": "generic", "properties": {"list": {"items": {"$dynamicRef": "#item"}},
                                                    "next": {"$ref": "generic"}},
                    "$defs": {"default": {"$dynamicAnchor": "item"}}},
        "numbers": {"$id": "numbers", "$defs": {"i": {"$dynamicAnchor": "item", "type": "number"}},
                    "$ref": "generic"},
        "strings": {"$id": "strings", "$defs": {"i": {"$dynamicAnchor": "item", "type": "string"}},
                    "$ref": "generic"},
    },
}


def _instance(rng: random.Random, depth: int = 0):
    out = {}
    if rng.random() < 0.7:
        out["kind"] = rng.choice(["n", "s", 1])
    if rng.random() < 0.8:
        out["list"] = [rng.choice([1, 2.5, "a", None]) for _ in range(rng.randint(0, 3))]
    if depth < 2 and rng.random() < 0.4:
        out["next"] = _instance(rng, depth + 1)
    return out


def test_two_paths_to_one_dynamic_ref_match_jsonschema():
    auto = Automaton(schema_to_grammar(TWO_PATHS, **EVERY_VALID))
    validator = jsonschema.Draft202012Validator(TWO_PATHS)
    rng = random.Random(29)
    verdicts = set()
    for _ in range(300):
        x = _instance(rng)
        want = validator.is_valid(x)
        verdicts.add(want)
        assert auto.matches(json.dumps(x).encode()) == want, x
    assert verdicts == {True, False}


def test_dynamic_ref_inside_text():
    from dotjson.embed import load_lark_with_json

    g = load_lark_with_json("start: \"x=\" data\ndata: %json " + json.dumps(TWO_PATHS) + "\n")
    auto = Automaton(g)
    assert auto.matches(b'x={"kind":"n","list":[1,2],"next":{"list":[3]}}')
    assert not auto.matches(b'x={"kind":"n","list":[1,"a"]}')
    assert not auto.matches(b'x={"kind":"s","next":{"list":[3]}}')
    assert auto.matches(b'x={"next":{"list":["b"]}}')
