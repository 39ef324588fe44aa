"""Differential tests: our automaton against Lark's own Earley parser on the rendered grammar.

For each schema, strings are generated (hypothesis drives random walks through the automaton for
near-valid documents, then mutates them) and both recognisers must agree on every one. Lark never
sees our automaton, and our automaton never sees Lark's parse: a disagreement is a bug in one of
the translation, the rendering or the automaton.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dotjson.automaton import Automaton
from dotjson.grammar import lark_parses, to_lark
from dotjson.jsonschema import schema_to_grammar

SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 3}}, "required": ["a"]},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 3},
    {"enum": ["x", 1, None, [1, 2]]},
    {"type": "string", "pattern": "^a(b|c)*$"},
    {"type": "integer", "minimum": -12, "maximum": 345},
    {"type": "number", "exclusiveMinimum": 0.5, "maximum": 10},
    {
        "$defs": {"t": {"type": "object", "properties": {"k": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "additionalProperties": False}},
        "$ref": "#/$defs/t",
    },
    {"anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]},
    {"type": "object", "properties": {"id": {"const": 1}}, "additionalProperties": {"type": "boolean"}},
    {"type": "string", "format": "date"},
]

ALPHABET = '{}[]",:01-.eE abcxyz\\ntruefalsn'


def _walk(a: Automaton, choices: list[int], max_len: int = 60) -> str:
    """A string the automaton allows, steered by ``choices``."""
    s = a.start
    out = bytearray()
    for i, c in enumerate(choices):
        if a.accepting[s] and (c % 7 == 0 or len(out) >= max_len):
            break
        a.fill_row(s)
        row = a.trans[s]
        live = [b for b in range(256) if row[b] >= 0]
        if not live:
            break
        b = live[c % len(live)]
        out.append(b)
        s = int(row[b])
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return out.decode("utf-8", errors="ignore")


def _mutate(text: str, ops: list[tuple[int, int, str]]) -> str:
    t = text
    for kind, pos, ch in ops:
        p = pos % (len(t) + 1)
        if kind == 0:
            t = t[:p] + ch + t[p:]
        elif kind == 1 and t:
            t = t[:p] + t[p + 1 :]
        elif t:
            t = t[:p] + ch + t[p + 1 :]
    return t


_cache: dict = {}


def _compiled(i: int, compact: bool):
    key = (i, compact)
    if key not in _cache:
        g = schema_to_grammar(SCHEMAS[i], disallow_whitespace=compact, close_objects=False)
        _cache[key] = (Automaton(g), to_lark(g), g.start)
    return _cache[key]


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("i", range(len(SCHEMAS)))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    choices=st.lists(st.integers(0, 10_000), min_size=1, max_size=80),
    ops=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 200), st.sampled_from(ALPHABET)), max_size=3),
)
def test_automaton_agrees_with_lark_earley(i, compact, choices, ops):
    a, text, start = _compiled(i, compact)
    base = _walk(a, choices)
    for candidate in {base, _mutate(base, ops)}:
        ours = a.matches(candidate.encode("utf-8"))
        theirs = lark_parses(text, candidate, start=start)
        assert ours == theirs, (SCHEMAS[i], candidate, ours, theirs)
