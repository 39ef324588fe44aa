"""Teacher forcing: valid documents, tokenized by real tokenizers, are allowed token by token and
end with EOS allowed; invalid ones are stopped.

Sources of documents we did not write: the JSON-Schema-Test-Suite's valid instances (draft
2020-12, copied under tests/data with its licence) and hypothesis-jsonschema's generated instances.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dotjson import Guide, Index
from dotjson.errors import DotjsonError

SUITE = Path(__file__).parent / "data" / "json-schema-test-suite" / "draft2020-12"

# A fixed, fast selection of keyword files; the whole suite runs with --runslow.
FAST_FILES = [
    "type.json", "enum.json", "const.json", "required.json", "properties.json",
    "additionalProperties.json", "items.json", "prefixItems.json", "minLength.json",
    "maxLength.json", "minimum.json", "maximum.json", "anyOf.json", "allOf.json", "ref.json",
    "pattern.json", "minItems.json", "maxItems.json", "exclusiveMinimum.json", "multipleOf.json",
]


def _ids(tokenizer, text: str) -> list[int]:
    enc = tokenizer.encode(text, add_special_tokens=False)
    return list(getattr(enc, "ids", enc))


def _force(index: Index, vocab, ids: list[int]) -> bool:
    """True when every token is allowed and EOS is allowed at the end."""
    guide = Guide(index, 1)
    ts = guide.get_start_tokensets()
    for t in ids:
        if not ts.contains(t)[0]:
            return False
        ts = guide.get_next_tokensets([t])
    return bool(ts.contains(vocab.eos_token_ids[0])[0])


def _suite_cases(files):
    for f in files:
        for group in json.loads((SUITE / f).read_text()):
            yield f, group


def _run_suite(files, vocab, tokenizer, stats):
    for f, group in _suite_cases(files):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # json.dumps escapes non-ASCII: every spelling, as the specification allows
                index = Index(group["schema"], vocab, close_objects=False, spellings="any")
        except DotjsonError:
            stats["unsupported"] += 1
            continue
        for case in group["tests"]:
            for text in {json.dumps(case["data"]), json.dumps(case["data"], indent=2)}:
                if json.loads(text) != case["data"]:
                    continue
                ok = _force(index, vocab, _ids(tokenizer, text))
                if case["valid"]:
                    # Token-level forcing agrees with the byte-level language. (A valid instance
                    # may still be outside it: properties must follow the schema's order.)
                    assert ok == index.accepts(text), (f, group["description"], case["description"], text)
                    stats["valid"] += ok
                    stats["valid_other_order"] += not ok
                else:
                    assert not ok, (f, group["description"], case["description"], text)
                    stats["invalid"] += 1


@pytest.mark.parametrize("vocab_name", ["smollm2", "llama3", "qwen"])
def test_suite_instances_teacher_forced(vocab_name, request):
    vocab = request.getfixturevalue(f"{vocab_name}_vocab")
    tok = request.getfixturevalue(f"{vocab_name}_tokenizer")
    stats = {"valid": 0, "valid_other_order": 0, "invalid": 0, "unsupported": 0}
    files = FAST_FILES if vocab_name == "llama3" else FAST_FILES[:8]
    _run_suite(files, vocab, tok, stats)
    assert stats["valid"] > 100 and stats["invalid"] > 50, stats


@pytest.mark.slow
def test_whole_suite_teacher_forced(llama3_vocab, llama3_tokenizer):
    stats = {"valid": 0, "valid_other_order": 0, "invalid": 0, "unsupported": 0}
    files = sorted(p.name for p in SUITE.glob("*.json"))
    _run_suite(files, llama3_vocab, llama3_tokenizer, stats)
    print(stats)


HYPO_SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": -5, "maximum": 1000}, "b": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 4}}, "required": ["a"], "additionalProperties": False},
    {"type": "array", "items": {"anyOf": [{"type": "boolean"}, {"type": "null"}, {"type": "number"}]}, "maxItems": 5},
    {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[A-Z][a-z]+$"}, "tags": {"type": "array", "items": {"enum": ["x", "y", "z"]}, "uniqueItems": False}}, "required": ["name"]},
]


@pytest.mark.parametrize("i", range(len(HYPO_SCHEMAS)))
def test_hypothesis_jsonschema_instances(i, llama3_vocab, llama3_tokenizer):
    from hypothesis_jsonschema import from_schema

    schema = HYPO_SCHEMAS[i]
    # hypothesis adds extra keys; json.dumps escapes non-ASCII (every spelling)
    index = Index(schema, llama3_vocab, close_objects=False, spellings="any")

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(from_schema(schema), st.booleans())
    def check(instance, pretty):
        text = json.dumps(instance, indent=2 if pretty else None)
        assert _force(index, llama3_vocab, _ids(llama3_tokenizer, text)), text

    check()


def test_invalid_instances_are_stopped(llama3_vocab, llama3_tokenizer):
    schema = HYPO_SCHEMAS[0]
    index = Index(schema, llama3_vocab)
    for bad in ['{"a": 1001}', '{"b": []}', '{"a": 1, "c": 2}', '{"a": 1, "b": ["1234567"]}', '{"a": 1.5}']:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(bad), schema)
        assert not _force(index, llama3_vocab, _ids(llama3_tokenizer, bad)), bad
