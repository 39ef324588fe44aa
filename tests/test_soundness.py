"""Random-walk soundness: rows sample among the allowed tokens until EOS; every finished document
must validate with ``jsonschema``, and the mask must never leave a row without a way forward.
"""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

from dotjson import Guide, Index, LogitsProcessor

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}, "age": {"type": "integer", "minimum": 18, "maximum": 99}}, "required": ["name", "age"], "additionalProperties": False},
    {"type": "array", "items": {"type": "number", "exclusiveMinimum": -1, "maximum": 2.5}, "minItems": 1, "maxItems": 4},
    {"enum": ["red", "green", {"rgb": [1, 2, 3]}, None]},
    {"$defs": {"n": {"type": "object", "properties": {"v": {"type": "boolean"}, "next": {"$ref": "#/$defs/n"}}, "required": ["v"], "additionalProperties": False}}, "$ref": "#/$defs/n"},
    {"type": "string", "pattern": "^[a-f0-9]{2,6}$"},
    {"type": "string", "format": "date"},
    {"type": "integer", "multipleOf": 7, "minimum": 0, "maximum": 200},
    {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "maxProperties": 2},
    {"anyOf": [{"type": "string", "minLength": 3, "maxLength": 4}, {"type": "boolean"}]},
]


def _random_walk(index: Index, vocab, rng: np.random.Generator, rows: int, budget: int) -> list[str]:
    guide = Guide(index, batch_size=rows)
    width = vocab.max_token_id()
    processor = LogitsProcessor(guide, -np.inf)
    ts = guide.get_start_tokensets()
    texts = [bytearray() for _ in range(rows)]
    eos = vocab.eos_token_ids[0]
    plain = index._tries.plain_bits
    for _ in range(budget):
        if guide.is_finished().all():
            break
        n = ts.num_allowed()
        assert (n > 0).all(), "a row was left with no allowed token"
        logits = rng.standard_normal((rows, width)).astype(np.float32)
        processor(logits, ts)
        choice = []
        for r in range(rows):
            allowed = np.flatnonzero(np.isfinite(logits[r]))
            assert len(allowed) == n[r]
            if eos in allowed and rng.random() < 0.5:
                choice.append(eos)
                continue
            # Uniform among the allowed tokens, but half of the time among the structural ones
            # (not plain string content), so that strings end and documents finish.
            structural = [t for t in allowed if not (plain[t >> 5] >> (t & 31)) & 1]
            pool = structural if structural and rng.random() < 0.5 else allowed
            choice.append(int(rng.choice(pool)))
        for r, t in enumerate(choice):
            if not guide.is_finished()[r] and t != eos:
                texts[r] += vocab.token_bytes(t)
        ts = guide.get_next_tokensets(choice)
    return [bytes(t).decode("utf-8") for t, done in zip(texts, guide.is_finished()) if done]


@pytest.mark.parametrize("i", range(len(SCHEMAS)))
def test_random_walk_documents_validate(i, smollm2_vocab):
    schema = SCHEMAS[i]
    index = Index(schema, smollm2_vocab)
    rng = np.random.default_rng(i)
    docs = _random_walk(index, smollm2_vocab, rng, rows=6, budget=60)
    assert docs, "no row finished within the budget"
    for d in docs:
        jsonschema.validate(json.loads(d), schema, format_checker=jsonschema.FormatChecker())
