"""dotjson.integrations.vllm against a faithful copy of vLLM's v1 interface (tests/vllm_interface.py),
with the real SmolLM2 tokenizer: rows added, removed, moved and swapped, async placeholders,
EOS and stop tokens as vLLM sees them, the structured-output backend shape. The same classes
run in a real vLLM engine in tests/test_vllm_engine.py (when vLLM is importable)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import jsonschema
import numpy as np
import pytest
import torch

from dotjson import Guide
from dotjson.errors import DotjsonValueError
from dotjson.integrations.vllm import DotjsonBackend, JSONLogitsProcessor, parse_request

from vllm_interface import BatchUpdate, PersistentBatch, SamplingParams, StructuredOutputOptions

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"]},
    {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3},
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"enum": [1, 2, 3]}},
     "required": ["ok", "n"]},
]
WIDTH = 49152 + 64  # logits wider than the vocabulary (padded embedding): extra columns masked


@pytest.fixture(scope="module")
def vllm_config(smollm2_tokenizer_dir):
    model_config = SimpleNamespace(tokenizer=str(smollm2_tokenizer_dir), get_vocab_size=lambda: WIDTH)
    return SimpleNamespace(model_config=model_config,
                           structured_outputs_config=SimpleNamespace(disable_any_whitespace=False))


@pytest.fixture(scope="module")
def processor(vllm_config):
    return JSONLogitsProcessor(vllm_config, torch.device("cpu"), False)


def _decode(vocab, toks, ends):
    data = b""
    for t in toks:
        if t in ends:
            return data.decode("utf-8"), True
        data += vocab.token_bytes(t)
    return data.decode("utf-8", "replace"), False


def _whitespace_outside_strings(text: str) -> bool:
    in_str = esc = False
    for c in text:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in " \t\n\r":
            return True
    return False


def _run_engine(proc, requests, *, seed=0, max_num_seqs=3, temperature=0.8, async_placeholders=False):
    """Drive the processor as vLLM's model runner does: per step, finished requests removed,
    waiting ones added, the batch condensed, rows swapped now and then, update_state, the forward
    pass (random logits), apply, sampling, the token appended to the request's output list."""
    rng = torch.Generator().manual_seed(seed)
    batch = PersistentBatch()
    waiting = list(requests)
    params = {rid: p for rid, p in requests}
    done: dict[str, list[int]] = {}
    finished: list[str] = []
    pending_tokens: dict[int, int] = {}
    moved = 0
    step = 0
    while waiting or batch.num_reqs or finished:
        for rid in finished:
            batch.remove(rid)
        finished = []
        while waiting and batch.num_reqs < max_num_seqs:
            rid, p = waiting.pop(0)
            batch.add(rid, p, [1, 2, 3])
        batch.condense()
        if batch.num_reqs >= 2 and step % 4 == 1:
            batch.swap(0, batch.num_reqs - 1)
        bu = batch.batch_update()
        if bu is not None:
            moved += len(bu.moved)
        proc.update_state(bu)
        if async_placeholders:  # the sampled ids arrive between update_state and apply
            for rid, tok in pending_tokens.items():
                out = batch.outputs[batch.reqs.index(rid)]
                assert out[-1] == -1
                out[-1] = tok
            pending_tokens = {}
        n = batch.num_reqs
        if n == 0:
            continue
        logits = torch.randn(n, WIDTH, generator=rng) * 3
        before = logits.clone()
        assert proc.apply(logits) is logits
        probs = torch.softmax(logits / temperature, dim=-1)
        sampled = torch.multinomial(probs, 1, generator=rng)[:, 0].tolist()
        for i in range(n):
            rid = batch.reqs[i]
            p = params[rid]
            if not (p.extra_args and "json_schema" in p.extra_args):  # free requests: untouched
                assert torch.equal(logits[i], before[i])
            else:
                assert torch.isinf(logits[i, 49152:]).all()
            out = batch.outputs[i]
            tok = sampled[i]
            if async_placeholders:
                out.append(-1)
                pending_tokens[rid] = tok
                real = out[:-1] + [tok]
            else:
                out.append(tok)
                real = out
            ends = set(p.stop_token_ids) | ({p.eos_token_id} if p.eos_token_id is not None else set())
            if tok in ends or len(real) >= p.max_tokens:
                done[rid] = list(real)
                finished.append(rid)
        if async_placeholders:  # finished requests' placeholders resolve as they leave
            for rid in finished:
                batch.outputs[batch.reqs.index(rid)][-1] = pending_tokens.pop(rid)
        step += 1
    return done, moved


def _requests(n_each=2):
    reqs = []
    for k, schema in enumerate(SCHEMAS):
        for j in range(n_each):
            text = (k + j) % 2 == 0  # dicts and JSON text, as over HTTP
            xargs = {"json_schema": json.dumps(schema) if text else schema}
            if j == 1:
                xargs["disallow_whitespace"] = "true"
            reqs.append((f"r{k}{j}", SamplingParams(extra_args=xargs, eos_token_id=2, max_tokens=120)))
    reqs.insert(3, ("free", SamplingParams(extra_args=None, eos_token_id=2, max_tokens=7)))
    reqs.insert(5, ("other", SamplingParams(extra_args={"unrelated": 1}, eos_token_id=2, max_tokens=4)))
    return reqs


@pytest.mark.parametrize("async_placeholders", [False, True])
def test_mixed_batch_gives_valid_documents(processor, smollm2_vocab, async_placeholders):
    reqs = _requests()
    done, moved = _run_engine(processor, reqs, seed=1 + async_placeholders,
                              async_placeholders=async_placeholders)
    assert moved > 0  # rows really moved and swapped
    assert set(done) == {rid for rid, _ in reqs}
    lengths = set()
    for rid, p in reqs:
        if p.extra_args is None or "json_schema" not in p.extra_args:
            assert len(done[rid]) == p.max_tokens
            continue
        text, ended = _decode(smollm2_vocab, done[rid], {2})
        assert ended, (rid, text)
        schema = parse_request(p.extra_args)[0]
        jsonschema.validate(json.loads(text), json.loads(schema))
        if p.extra_args.get("disallow_whitespace") == "true":
            assert not _whitespace_outside_strings(text), text
        lengths.add(len(done[rid]))
    assert len(lengths) > 1  # requests finished at different steps
    assert processor.cache.misses == 6  # three schemas x two whitespace options, compiled once


def test_end_tokens_as_vllm_sees_them(processor, smollm2_vocab, smollm2_tokenizer):
    """A request ends on its eos_token_id and its stop_token_ids; under ignore_eos (no end
    token) the vocabulary's EOS is kept so a finished document still has a token."""
    xargs = {"json_schema": {"enum": ["yes", "no"]}, "disallow_whitespace": True}
    batch = PersistentBatch()
    both = SamplingParams(extra_args=xargs, eos_token_id=2, stop_token_ids=[0])
    ignore = SamplingParams(extra_args=xargs, eos_token_id=None)
    only_stop = SamplingParams(extra_args=xargs, eos_token_id=None, stop_token_ids=[0])
    for i, p in enumerate((both, ignore, only_stop)):
        batch.add(f"q{i}", p, [5])
    processor.update_state(batch.batch_update())
    ids = smollm2_tokenizer.encode('"yes"', add_special_tokens=False)
    for out in batch.outputs:
        out.extend(ids)
    processor.update_state(None)
    logits = torch.zeros(3, WIDTH)
    processor.apply(logits)
    allowed = [set(torch.nonzero(torch.isfinite(row)).flatten().tolist()) for row in logits]
    assert allowed[0] == {0, 2}
    assert allowed[1] == {2}
    assert allowed[2] == {0}
    # sampling the stop token ends the document: only end tokens from then on
    batch.outputs[2].append(0)
    processor.update_state(None)
    logits = torch.zeros(3, WIDTH)
    processor.apply(logits)
    assert set(torch.nonzero(torch.isfinite(logits[2])).flatten().tolist()) == {0}
    for i in range(3):
        batch.remove(f"q{i}")
    batch.condense()
    processor.update_state(batch.batch_update())
    assert not processor._rows


def test_a_token_outside_the_schema_ends_the_request(processor, smollm2_tokenizer):
    batch = PersistentBatch()
    batch.add("x", SamplingParams(extra_args={"json_schema": {"type": "integer"}}, eos_token_id=2), [1])
    processor.update_state(batch.batch_update())
    batch.outputs[0].extend(smollm2_tokenizer.encode("[", add_special_tokens=False))
    processor.update_state(None)
    logits = torch.zeros(1, WIDTH)
    processor.apply(logits)
    assert torch.nonzero(torch.isfinite(logits[0])).flatten().tolist() == [2]
    batch.remove("x")
    processor.update_state(batch.batch_update())


def test_a_budget_running_out_ends_only_that_request(processor, smollm2_vocab):
    from dotjson import Index

    batch = PersistentBatch()
    p = SamplingParams(extra_args={"json_schema": {"type": "integer"}}, eos_token_id=2)
    batch.add("a", p, [1])
    batch.add("b", p, [1])
    processor.update_state(batch.batch_update())
    # row 0's index runs out of its state budget computing its first mask
    tiny = Index({"type": "object", "properties": {"k": {"type": "string"}}}, smollm2_vocab, max_states=10)
    processor._rows[0].guide = Guide(tiny)
    processor.update_state(None)
    logits = torch.zeros(2, WIDTH)
    processor.apply(logits)
    assert torch.nonzero(torch.isfinite(logits[0])).flatten().tolist() == [2]
    assert torch.isfinite(logits[1]).sum() > 10  # the other request goes on
    batch.remove("a")
    batch.remove("b")
    processor.update_state(batch.batch_update())
    assert not processor._rows


def test_validate_params():
    ok = SamplingParams(extra_args={"json_schema": '{"type": "object"}', "property_order": "any"})
    JSONLogitsProcessor.validate_params(ok)
    JSONLogitsProcessor.validate_params(SamplingParams(extra_args=None))
    with pytest.raises(ValueError, match="not JSON"):
        JSONLogitsProcessor.validate_params(SamplingParams(extra_args={"json_schema": "{type"}))
    with pytest.raises(ValueError, match=r"extra_args\['disallow_whitespace'\]: expected a boolean"):
        JSONLogitsProcessor.validate_params(
            SamplingParams(extra_args={"json_schema": {}, "disallow_whitespace": "maybe"}))
    with pytest.raises(ValueError, match="expected one of schema, any"):
        JSONLogitsProcessor.validate_params(
            SamplingParams(extra_args={"json_schema": {}, "property_order": "random"}))
    with pytest.raises(ValueError, match="minimum"):
        JSONLogitsProcessor.validate_params(
            SamplingParams(extra_args={"json_schema": {"type": "integer", "minimum": "0"}}))
    with pytest.raises(DotjsonValueError, match="expected a JSON Schema"):
        parse_request({"json_schema": [1, 2]})
    assert parse_request({"json_schema": True, "close_objects": 0}) == ("true", {"close_objects": False})


def test_processor_is_not_argmax_invariant(processor):
    assert processor.is_argmax_invariant() is False
    assert processor.stats["steps"] > 0 and processor.stats["apply_s"] > 0


# ------------------------------------------------------------------ structured-output backend


@pytest.fixture(scope="module")
def backend(vllm_config, smollm2_tokenizer):
    return DotjsonBackend(vllm_config, smollm2_tokenizer, WIDTH)


def _allowed(bitmask_row):
    return set(np.flatnonzero(np.unpackbits(bitmask_row.numpy().view(np.uint8), bitorder="little")).tolist())


def test_backend_grammar_matches_a_guide(backend, smollm2_tokenizer, smollm2_vocab):
    schema = SCHEMAS[0]
    g = backend.compile_grammar(StructuredOutputOptions.JSON, json.dumps(schema), stop_token_ids={2, 0})
    doc = smollm2_tokenizer.encode('{"name": "Ada", "age": 36}', add_special_tokens=False)
    bm = backend.allocate_token_bitmask(4)
    assert bm.shape == (4, (WIDTH + 31) // 32) and bm.dtype == torch.int32
    ref = Guide(backend.cache.get(json.dumps(schema)))
    for t in doc:
        g.fill_bitmask(bm, 2)
        expect = set(np.flatnonzero(np.unpackbits(ref.current_tokensets().bits[0].view(np.uint8),
                                                  bitorder="little")).tolist())
        assert _allowed(bm[2]) == expect
        assert g.accept_tokens("req", [t])
        ref.advance([t])
    g.fill_bitmask(bm, 1)
    assert {0, 2} <= _allowed(bm[1])
    assert not g.is_terminated()
    # speculative decoding: validate a draft, accept, roll back
    assert g.validate_tokens([0, 5, 6]) == [0]  # nothing after the end
    assert g.accept_tokens("req", [0])
    assert g.is_terminated() and g.validate_tokens([2]) == []
    assert g.accept_tokens("req", [2, 2])  # after the end: ignored
    g.fill_bitmask(bm, 0)
    assert _allowed(bm[0]) == {0, 2}
    g.rollback(1)
    assert not g.is_terminated() and g.num_processed_tokens == len(doc)
    g.rollback(len(doc))
    assert g.num_processed_tokens == 0
    assert g.validate_tokens(doc + [-1, 7]) == doc  # speculative padding ends the block
    bad = smollm2_tokenizer.encode("]", add_special_tokens=False)
    assert g.validate_tokens(doc[:3] + bad + doc[3:]) == doc[:3]
    assert not g.accept_tokens("req", doc[:3] + bad)
    assert g.num_processed_tokens == 0  # nothing moved on a refused block
    g.accept_tokens("req", doc)
    g.reset()
    assert g.num_processed_tokens == 0


def test_backend_request_types(backend, smollm2_tokenizer):
    cases = [
        (StructuredOutputOptions.JSON_OBJECT, None, '{"a": [1]}'),
        (StructuredOutputOptions.REGEX, r"\d{3}-[a-z]+", "123-abc"),
        (StructuredOutputOptions.GRAMMAR, 'start: "yes" | "no" | "maybe"', "maybe"),
        (StructuredOutputOptions.GRAMMAR, 'root ::= "a" [0-9]+ "b"', "a42b"),  # EBNF, XGrammar's format
        (StructuredOutputOptions.CHOICE, json.dumps(["A+B", "C?"]), "C?"),
    ]
    for kind, spec, text in cases:
        g = backend.compile_grammar(kind, spec, stop_token_ids={2})
        toks = smollm2_tokenizer.encode(text, add_special_tokens=False)
        assert g.validate_tokens(toks + [2]) == toks + [2], kind
    with pytest.raises(DotjsonValueError, match="Invalid request type STRUCTURAL_TAG"):
        backend.compile_grammar(StructuredOutputOptions.STRUCTURAL_TAG, "{}")


def test_backend_plugin_is_opt_in(monkeypatch, caplog):
    """vLLM runs the ``vllm.general_plugins`` entry point in every process: it registers the
    dotjson backend only under ``DOTJSON_VLLM_BACKEND=1``; without vLLM, ``register`` says so."""
    import importlib.util

    from dotjson.integrations import vllm_plugin

    calls = []
    monkeypatch.setattr(vllm_plugin, "register", lambda: calls.append(1) or True)
    monkeypatch.delenv(vllm_plugin.ENV, raising=False)
    vllm_plugin.plugin()
    monkeypatch.setenv(vllm_plugin.ENV, "0")
    vllm_plugin.plugin()
    assert calls == []
    monkeypatch.setenv(vllm_plugin.ENV, "1")
    vllm_plugin.plugin()
    assert calls == [1]
    monkeypatch.undo()
    if importlib.util.find_spec("vllm") is None:
        with caplog.at_level("WARNING", logger="dotjson.integrations.vllm_plugin"):
            assert vllm_plugin.register() is False
        assert "vLLM is not importable" in caplog.text
