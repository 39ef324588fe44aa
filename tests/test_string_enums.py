"""String ``enum`` of many values as one native key set (``Compiler.string_enum``): the same
masks and verdicts as the literals compiled from the IR, in every configuration, saved and
loaded."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from dotjson import Index
from dotjson.jsonschema.compiler import NATIVE_ENUM

ALPHABET = list("abcIAB0123456789-_ ") + ['"', "\\", "/", "\n", "\t", "é", "日", "\U0001f600", "\x7f", "\u2028"]


def _ir_index(schema, vocab, monkeypatch, **kw):
    """An Index whose automaton compiles every rule from its IR body (no key sets)."""
    from dotjson import ir

    with monkeypatch.context() as m:
        m.setattr(ir.LazyRules, "native", lambda self, name: None)
        return Index(schema, vocab, **kw)


def _values(rng, n, exotic):
    out: set = set()
    while len(out) < n:
        pool = ALPHABET if exotic and rng.random() < 0.3 else ALPHABET[:19]
        out.add("".join(rng.choice(pool) for _ in range(rng.randint(0, 7))))
    return sorted(out)


def _states(index, doc: bytes):
    a = index._auto
    out = []
    for i in range(len(doc) + 1):
        s = a.walk_bytes(index.initial_state, doc[:i])
        if s < 0:
            break
        out.append((i, s))
    return out


def _same(native, ref, doc: bytes) -> None:
    ours, theirs = _states(native, doc), _states(ref, doc)
    assert [i for i, _ in ours] == [i for i, _ in theirs], doc
    for (i, s), (_, t) in zip(ours, theirs):
        assert (native.mask(s) == ref.mask(t)).all(), doc[:i]
    assert native.accepts(doc) == ref.accepts(doc), doc


def test_a_large_string_enum_is_one_key_set_and_a_small_one_literals(llama3_vocab):
    big = {"type": "string", "enum": [f"v{i}" for i in range(NATIVE_ENUM)]}
    small = {"type": "string", "enum": [f"v{i}" for i in range(NATIVE_ENUM - 1)]}
    ix = Index(big, llama3_vocab)
    assert ix.accepts('"v7"') and ix.accepts('"v31"') and not ix.accepts('"v32"') and not ix.accepts('"v"')
    assert ix._auto._ktab, "the enum was not a key set"
    ix = Index(small, llama3_vocab)
    assert ix.accepts('"v7"') and not ix.accepts('"v31"')
    assert not ix._auto._ktab
    # draft 4 (integral enum numbers spelled as integers under `type: integer`) and under a $ref
    d4 = {"$schema": "http://json-schema.org/draft-04/schema#", "definitions": {"c": big},
          "type": "object", "properties": {"c": {"$ref": "#/definitions/c"}, "n": {"type": "integer", "enum": [1, 2]}}}
    ix = Index(d4, llama3_vocab)
    assert ix.accepts('{"c":"v3","n":2}') and not ix.accepts('{"c":"v32"}') and not ix.accepts('{"n":1.0}')
    assert ix._auto._ktab, "the draft-4 enum was not a key set"


@pytest.mark.parametrize("seed", [1, 2])
def test_string_enums_mask_like_literals(llama3_vocab, monkeypatch, tmp_path, seed):
    """Random enums (escapes, quotes, non-ASCII, astral, the empty string, values prefixes of
    others) in several positions and configurations: at every prefix of valid and invalid
    documents, and along random walks (the native index saved and loaded halfway), the masks of
    the key set equal those of the literals."""
    rng = random.Random(seed)
    for trial in range(3):
        vals = _values(rng, rng.choice([NATIVE_ENUM, 90, 400]), exotic=trial > 0)
        other = [1, None, 2.5] if trial == 1 else []
        enum = {"enum": vals + other}
        schema = rng.choice([
            {"type": "object", "properties": {"e": enum, "n": {"type": "integer"}}, "required": ["e"]},
            {"type": "array", "items": enum, "maxItems": 4},
            {"anyOf": [enum, {"type": "string", "maxLength": 2}]},
        ])
        kw = rng.choice([{}, {"close_objects": False}, {"close_objects": False, "spellings": "any"}])
        native = Index(schema, llama3_vocab, **kw)
        ref = _ir_index(schema, llama3_vocab, monkeypatch, **kw)
        picks = rng.sample(vals, 6)
        if "properties" in schema:
            docs = [json.dumps({"e": v, "n": 3}) for v in picks] + [json.dumps({"e": v + "x"}) for v in picks[:2]]
        elif "items" in schema:
            docs = [json.dumps(picks[:3]), json.dumps(picks[3:] + ["nope"])]
        else:
            docs = [json.dumps(v) for v in picks] + ['"zz"', '"' + picks[0][:1]]
        docs += [json.dumps(v, ensure_ascii=True) for v in picks if not v.isascii()][:2]
        for doc in docs:
            _same(native, ref, doc.encode())
        assert native._auto._ktab, "the enum was not a key set"
        for walk in range(4):
            s1, s2 = native.initial_state, ref.initial_state
            for _ in range(25):
                m1 = native.mask(s1)
                assert (m1 == ref.mask(s2)).all(), (trial, walk, kw)
                allowed = [t for t in np.flatnonzero(np.unpackbits(m1.view(np.uint8), bitorder="little"))
                           if t < 128256]
                if not allowed:
                    break
                t = int(rng.choice(allowed))
                if t in llama3_vocab.eos_token_ids:
                    break
                s1, s2 = native.next_state(s1, t), ref.next_state(s2, t)
            if walk == 1:
                native.serialize_to_disk(tmp_path / f"{seed}-{trial}")
                native = Index.deserialize_from_disk(tmp_path / f"{seed}-{trial}", llama3_vocab)


def test_string_enum_every_spelling_and_only_its_values(llama3_vocab):
    """Every-valid configuration: each value in any JSON spelling (escapes of every character),
    nothing else; the defaults: the canonical spelling only."""
    vals = [f"IAB{i}-{j}" for i in range(1, 9) for j in range(1, 9)] + ["a\"b", "é", "tab\there", ""]
    schema = {"type": "object", "properties": {"cat": {"type": "array", "items": {"enum": vals}}}}
    every = Index(schema, llama3_vocab, close_objects=False, spellings="any")
    canon = Index(schema, llama3_vocab)
    for v in vals:
        doc = json.dumps({"cat": [v]}, ensure_ascii=False)
        assert every.accepts(doc) and canon.accepts(doc), doc
        escaped = '{"cat":["' + "".join(f"\\u{ord(c):04X}" for c in v) + '"]}' if v else None
        if escaped:
            assert every.accepts(escaped) and not canon.accepts(escaped)
    assert every.accepts('{"cat":["\\u00e9"]}') and every.accepts('{"cat":["IAB1\\u002d2"]}')
    for bad in ('{"cat":["IAB1-9"]}', '{"cat":["IAB1-"]}', '{"cat":["IAB1-11"]}', '{"cat":["a\\"bc"]}',
                '{"cat":["\\u00e9x"]}', '{"cat":[" "]}'):
        assert not every.accepts(bad) and not canon.accepts(bad), bad
    # the index's grammar text writes the values out (the key set's IR body)
    assert "/IAB8\\-8\\\"/" in canon.grammar and "u0038" in every.grammar
