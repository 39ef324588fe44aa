"""``uniqueItems`` over finite item sets of any size up to ``MAX_UNIQUE_VALUES`` (issue 29): the
rule family :class:`dotjson.jsonschema.unique_sets.UniqueChoices`, whose state is the set of
values used, made as decoding reaches it, with exact nullability and productivity (a count, or a
matching over the ``prefixItems`` positions).

The oracle is ``jsonschema``: random arrays (valid and invalid: duplicates, values outside the
set, too few or too many items, other spellings of the same values) through ``Index.accepts``
on Llama 3 in the every-valid configuration (every verdict equal) and the default one (its
canonical spellings: every verdict equal there, never an invalid document), and a few documents
teacher-forced through the token masks.
"""

from __future__ import annotations

import itertools
import json
import random

import jsonschema
import pytest

from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError
from dotjson.jsonschema import schema_to_grammar
from dotjson.jsonschema.unique_sets import assign
from dotjson.jsonschema.values import MAX_UNIQUE_VALUES

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}

_WORDS = [f"rule{k}" for k in range(40)]
_MIXED = [1, 2.5, "1", "a", True, None, [], [1], [1, "a"], {}, {"a": 1}, {"a": 1, "b": [2]}]

# (schema, values its items are drawn from, values outside the universe)
UNIVERSES = [
    # 40 strings (past the old eager limit of 8; MaskBench jscsrc's operator arrays are 26-39)
    ({"type": "array", "items": {"enum": _WORDS}, "uniqueItems": True, "maxItems": 6}, _WORDS, ["rule40", "", 0]),
    # mixed types, arrays and objects as values
    ({"type": "array", "items": {"enum": _MIXED}, "uniqueItems": True}, _MIXED, [3, "b", [2], {"a": 2}, False]),
    # prefixItems with their own sets, then items
    ({"type": "array", "uniqueItems": True, "minItems": 3,
      "prefixItems": [{"enum": ["a", "b"]}, {"enum": ["a", "c", 1]}, {"const": "a"}],
      "items": {"enum": ["a", "b", "c", "d", 1, 2, 3, 4, 5, 6]}},
     ["a", "b", "c", "d", 1, 2, 3, 4, 5, 6], ["e", 7, None]),
    # minItems near the universe's size: the only arrays are (nearly) permutations
    ({"type": "array", "items": {"enum": _WORDS[:10]}, "uniqueItems": True, "minItems": 9},
     _WORDS[:10], ["rule10"]),
    # booleans and null with an enum (each its own set per position), items closed after the prefix
    ({"type": "array", "uniqueItems": True, "items": False,
      "prefixItems": [{"type": ["boolean", "null"]}, {"type": "boolean"}, {"enum": [True, "x", "y"]}]},
     [True, False, None, "x", "y"], [0, "z"]),
]


def _spell(v, rng: random.Random) -> str:
    """Another spelling of JSON value ``v`` (the every-valid configuration accepts them all)."""
    if isinstance(v, str) and v and rng.random() < 0.4:
        k = rng.randrange(len(v))
        return json.dumps(v[:k])[:-1] + f"\\u{ord(v[k]):04x}" + json.dumps(v[k + 1:])[1:]
    if isinstance(v, (int, float)) and not isinstance(v, bool) and rng.random() < 0.4:
        return rng.choice([f"{float(v)}", f"{v}e0", f"{float(v) * 10}e-1"])
    if isinstance(v, dict) and len(v) > 1 and rng.random() < 0.5:
        return json.dumps(dict(reversed(list(v.items()))))
    return json.dumps(v)


def _position_values(sub, inside):
    if sub is False:
        return []
    if "enum" in sub:
        return sub["enum"]
    if "const" in sub:
        return [sub["const"]]
    if "type" in sub:
        return [v for v in (True, False, None) if (v is None) == ("null" in sub["type"]) or
                (v is not None and "boolean" in sub["type"])]
    return inside


def _arrays(schema, inside, outside, rng: random.Random, n: int):
    """``(canonical text, other spelling)`` of ``n`` random arrays."""
    most = (schema.get("maxItems") or len(inside)) + 2
    prefix = schema.get("prefixItems", [])
    out = []
    for _ in range(n):
        size = rng.randint(0, most)
        if rng.random() < 0.5:  # distinct values each from its position's set, while there are any
            items = []
            for i in range(size):
                left = [v for v in _position_values(prefix[i] if i < len(prefix) else schema.get("items", {}), inside)
                        if json.dumps(v) not in map(json.dumps, items)]
                if not left:
                    break
                items.append(rng.choice(left))
        else:
            items = [rng.choice(inside) if rng.random() < 0.9 else rng.choice(outside) for _ in range(size)]
        out.append((json.dumps(items), "[" + rng.choice([",", " , ", ",\n"]).join(_spell(v, rng) for v in items) + "]"))
    return out


@pytest.mark.parametrize("k", range(len(UNIVERSES)))
def test_random_arrays_match_jsonschema(k, llama3_vocab):
    from dotjson import Index

    schema, inside, outside = UNIVERSES[k]
    rng = random.Random(2900 + k)
    check = jsonschema.Draft202012Validator(schema).is_valid
    every, default = Index(schema, llama3_vocab, **EVERY_VALID), Index(schema, llama3_vocab)
    valid = 0
    for canonical, spelled in _arrays(schema, inside, outside, rng, 60):
        want = check(json.loads(canonical))
        valid += want
        assert every.accepts(canonical) == want, (canonical, want)
        assert every.accepts(spelled) == want, (spelled, want)
        assert default.accepts(canonical) == want, (canonical, want)
        assert not default.accepts(spelled) or want, spelled
    assert 5 <= valid <= 55, valid  # (both kinds were drawn)


def _ids(tok, text):
    return tok.encode(text, add_special_tokens=False)


@pytest.mark.parametrize("kw", [EVERY_VALID, {}], ids=["every-valid", "default"])
def test_token_masks(kw, llama3_vocab, llama3_tokenizer):
    # teacher forcing through Index.mask / next_state: every token of a valid document allowed
    # and EOS at its end; a duplicate refused at the token that completes it
    from dotjson import Index

    schema = {"type": "object", "properties": {"rules": UNIVERSES[0][0]}, "required": ["rules"]}
    index = Index(schema, llama3_vocab, **kw)
    eos = llama3_vocab.eos_token_ids[0]

    def walk(text):
        s = index.initial_state
        for t in _ids(llama3_tokenizer, text):
            m = index.mask(s)
            if not m[t >> 5] >> (t & 31) & 1:
                return False
            s = index.next_state(s, t)
        m = index.mask(s)
        return bool(m[eos >> 5] >> (eos & 31) & 1)

    assert walk('{"rules": ["rule3", "rule17", "rule30", "rule4"]}')
    assert walk('{"rules": []}')
    assert not walk('{"rules": ["rule3", "rule17", "rule3"]}')
    assert not walk('{"rules": ["rule3", "rule40"]}')
    assert not walk('{"rules": ["rule0", "rule1", "rule2", "rule3", "rule4", "rule5", "rule6"]}')


def test_empty_when_the_values_cannot_fill_min_items():
    for kw in ({"bounds": "schema", **EVERY_VALID}, {}):
        for schema in (
            {"type": "array", "items": {"enum": _WORDS[:20]}, "uniqueItems": True, "minItems": 21},
            # prefix positions whose sets cannot all take distinct values (a matching)
            {"type": "array", "uniqueItems": True, "minItems": 3, "items": {"enum": ["a", "b", "c"]},
             "prefixItems": [{"enum": ["a", "b"]}, {"enum": ["a", "b"]}, {"enum": ["a", "b"]}]},
            {"type": "array", "uniqueItems": True, "minItems": 12, "items": {"enum": _WORDS[:10]},
             "prefixItems": [{"enum": _WORDS[:3]}, {"enum": ["x", "y"]}]},
        ):
            with pytest.raises(SchemaError, match="accepts no JSON value"):
                schema_to_grammar(schema, **kw)
    # (one value fewer asked: a language, the positions matched as they must be)
    from test_numbers_exponents import accepts

    s = {"type": "array", "uniqueItems": True, "minItems": 11, "items": {"enum": _WORDS[:10]},
         "prefixItems": [{"enum": _WORDS[:3]}, {"enum": ["x", "y"]}]}
    doc = [_WORDS[2], "x", *(w for w in _WORDS[:10] if w != _WORDS[2])]
    assert accepts(s, json.dumps(doc)) and not accepts(s, json.dumps([_WORDS[2], "x", *_WORDS[:9]]))


def test_min_items_near_a_large_universe_is_decided_without_listing_sets(llama3_vocab):
    # 60 values, at least 58 items: 2**60 sets, of which a document visits one per item; a
    # state is productive by a count (before, a hint-less state made the analysis look)
    from dotjson import Index

    vs = [f"v{k}" for k in range(60)]
    schema = {"type": "array", "items": {"enum": vs}, "uniqueItems": True, "minItems": 58}
    index = Index(schema, llama3_vocab)
    assert index.accepts(json.dumps(vs[::-1])) and index.accepts(json.dumps(vs[2:]))
    assert not index.accepts(json.dumps(vs[3:])) and not index.accepts(json.dumps(vs[2:] + vs[2:3]))
    assert not index.is_prefix(json.dumps(vs[:1] * 2)[:-1])


def test_index_saves_and_loads(llama3_vocab, tmp_path):
    from dotjson import Index

    schema = UNIVERSES[2][0]
    for kw in (EVERY_VALID, {}):
        index = Index(schema, llama3_vocab, **kw)
        assert index.accepts('["b", "c", "a", 4]')
        index.serialize_to_disk(tmp_path / "u")
        loaded = Index.deserialize_from_disk(tmp_path / "u", llama3_vocab)
        assert loaded.accepts('["b", "c", "a", 4]') and loaded.accepts('["a", 1, "a"]') is False
        assert loaded.accepts('["b", 1, "a", 6, 5]') and not loaded.accepts('["b", 1, "a", 6, 6]')
    # past 12 values the family has no grammar text, and saves all the same
    index = Index(UNIVERSES[0][0], llama3_vocab)
    assert index.accepts('["rule1", "rule39"]')
    with pytest.raises(GrammarError, match="unique_choices.*no grammar text"):
        index.grammar
    index.serialize_to_disk(tmp_path / "w")
    loaded = Index.deserialize_from_disk(tmp_path / "w", llama3_vocab)
    assert loaded.accepts('["rule5", "rule39", "rule0"]') and not loaded.accepts('["rule5", "rule39", "rule5"]')


def test_past_the_limit_a_named_refusal_with_the_generation_bounds():
    # (past the limit, strings alone are arrays of distinct strings: tests/test_unique_strings.py;
    # other values whose objects hold each key once: tests/test_unique_any.py)
    schema_to_grammar({"type": "array", "items": {"enum": [f"v{k}" for k in range(MAX_UNIQUE_VALUES + 1)]},
                       "uniqueItems": True})
    vs = [f"v{k}" for k in range(MAX_UNIQUE_VALUES)] + [1]
    schema_to_grammar({"type": "array", "items": {"enum": vs}, "uniqueItems": True})
    schema = {"type": "array", "items": {"anyOf": [{"enum": vs}, {"type": "object"}]}, "uniqueItems": True}
    with pytest.raises(UnsupportedSchemaError, match=f"at most {MAX_UNIQUE_VALUES} values") as ei:
        schema_to_grammar(schema)
    assert ei.value.pointer == "/uniqueItems"
    schema_to_grammar(schema, bounds="schema")  # (every-valid: values of any item schemas)
    schema_to_grammar({**schema, "items": {"enum": vs[:-1]}})


def _brute(sets, rest, m, n):
    for vals in itertools.product(*[[v for v in range(n) if s >> v & 1] for s in sets]):
        if len(set(vals)) == len(vals):
            left = sum(1 for v in range(n) if rest >> v & 1 and v not in vals)
            if left >= m:
                return True
    return False


def test_assign_is_a_maximum_matching():
    rng = random.Random(29)
    for _ in range(1500):
        n = rng.randint(1, 7)
        P = rng.randint(0, 4)
        sets = [rng.getrandbits(n) for _ in range(P)]
        rest = rng.getrandbits(n)
        m = rng.randint(0, 4)
        got = assign(sets, rest, m)
        assert (got is not None) == _brute(sets, rest, m, n), (sets, rest, m)
        if got is not None:
            taken, in_rest = got
            assert bin(taken).count("1") == P and in_rest == bin(taken & rest).count("1")
            assert bin(rest & ~taken).count("1") >= m


@pytest.mark.slow
def test_hypothesis_instances_are_accepted():
    # (slow: random valid documents, hypothesis-jsonschema) accepted in the every-valid
    # configuration, and in the default one in canonical spelling
    from test_numbers_exponents import hypothesis_instances_accepted

    # (not the prefixItems universe: hypothesis-jsonschema draws no valid instance of it)
    hypothesis_instances_accepted([u[0] for k, u in enumerate(UNIVERSES) if k != 2], 25, default=True)
