"""dotjson.integrations.sglang against a faithful copy of SGLang's grammar-backend interface
(tests/sglang_interface.py), with the real SmolLM2 tokenizer: registration, the scheduler's
flow (future, cache, copy, batched fill, apply, accept), EOS, jump-forward with retokenization."""

from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import jsonschema
import numpy as np
import pytest
import torch

import sglang_interface as sgl

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
                                           "pop": {"type": "integer", "minimum": 0, "maximum": 9999}},
          "required": ["city", "pop"]}
EBNF = '''
# a tiny command language
root   ::= cmd (";" cmd){0,2}
cmd    ::= "go " dir | "wait" ( " " [0-9]{1,2} )?
dir    ::= "north" | "south" | "east" | "west"
'''
WIDTH = 49152


@pytest.fixture(scope="module")
def mod():
    with pytest.MonkeyPatch.context() as mp:
        sgl.install(mp)
        import dotjson.integrations.sglang as m

        m = importlib.reload(m)  # bound to the interface copy's base classes
        yield m
    importlib.reload(m)


@pytest.fixture(scope="module")
def backend(mod, smollm2_tokenizer):
    mod.register()
    mod.register()  # idempotent
    assert sgl.GRAMMAR_BACKEND_CHOICES.count("dotjson") == 1
    server_args = SimpleNamespace(grammar_backend="dotjson", constrained_json_disable_any_whitespace=True)
    b = sgl.create_grammar_backend(server_args, smollm2_tokenizer, WIDTH, {2})
    assert isinstance(b, mod.DotjsonGrammarBackend) and isinstance(b, sgl.BaseGrammarBackend)
    assert b.disallow_whitespace
    return b


def _grammar(backend, key):
    """The scheduler's path: a future on a miss, cached afterwards, each request a copy."""
    value, hit = backend.get_cached_or_future_value(key, False)
    if not hit:
        value = value.result()
        backend.set_cache(key, value)
        value = value.copy()
    return value


def _decode(vocab, toks):
    return b"".join(vocab.token_bytes(t) for t in toks).decode()


def test_batch_of_requests_gives_valid_output(backend, mod, smollm2_vocab):
    keys = [("json", json.dumps(SCHEMA)), ("regex", r"[A-Z]{2}-\d{3}"), ("ebnf", EBNF),
            ("json", json.dumps(SCHEMA))]
    grammars = [_grammar(backend, k) for k in keys]
    assert all(isinstance(g, mod.DotjsonGrammar) and isinstance(g, sgl.BaseGrammarObject) for g in grammars)
    assert grammars[0] is not grammars[3] and grammars[0].index is grammars[3].index
    rng = torch.Generator().manual_seed(3)
    outputs = [[] for _ in grammars]
    mask = grammars[0].allocate_vocab_mask(WIDTH, len(grammars), "cpu")
    for _ in range(60):
        live = [i for i, g in enumerate(grammars) if not g.finished]
        if not live:
            break
        grammars[0].reset_vocab_mask(mask)
        rows = [sgl.GrammarRow(r, grammars[i]) for r, i in enumerate(live)]
        type(grammars[0]).fill_vocab_mask_batched(rows, mask)
        mask = grammars[0].move_vocab_mask(mask, "cpu")
        logits = torch.randn(len(live), WIDTH, generator=rng) * 3
        grammars[0].apply_vocab_mask(logits, mask)
        toks = torch.multinomial(torch.softmax(logits, -1), 1, generator=rng)[:, 0].tolist()
        for r, i in enumerate(live):
            grammars[i].accept_token(toks[r])
            outputs[i].append(toks[r])
    for i, (kind, spec) in enumerate(keys):
        assert grammars[i].is_terminated() and outputs[i][-1] == 2, keys[i]
        text = _decode(smollm2_vocab, outputs[i][:-1])
        if kind == "json":
            jsonschema.validate(json.loads(text), SCHEMA)
            assert " " not in text.replace(json.loads(text)["city"], "")
        elif kind == "regex":
            assert __import__("re").fullmatch(spec, text)
        else:
            import lark
            from dotjson.ebnf import ebnf_to_lark

            lark.Lark(ebnf_to_lark(EBNF), parser="earley").parse(text)


def test_fill_matches_single_fill_and_guides(backend, mod):
    g = _grammar(backend, ("json", json.dumps(SCHEMA)))
    a = g.allocate_vocab_mask(WIDTH, 3, "cpu")
    b = g.allocate_vocab_mask(WIDTH, 3, "cpu")
    g.fill_vocab_mask(a, 1)
    mod.DotjsonGrammar.fill_vocab_mask_batched([sgl.GrammarRow(1, g)], b)
    assert torch.equal(a, b) and (a[0] == -1).all() and (a[2] == -1).all()  # others untouched
    expect = g.guide.current_tokensets().bits[0].view(np.int32)
    assert np.array_equal(a[1].numpy(), expect)


def test_apply_paths_agree(backend, mod):
    g = _grammar(backend, ("regex", r"\d+"))
    mask = g.allocate_vocab_mask(WIDTH + 40, 2, "cpu")
    g.fill_vocab_mask(mask, 0)
    x = torch.randn(1, WIDTH + 40)
    y = x.clone()
    mod.apply_token_bitmask(x, mask)  # the kernel path (CPU)
    from dotjson._kernels import gpu

    gpu.mask_torch(y, mask[:1], y.shape[-1], float("-inf"))  # the torch-ops path (CUDA's fallback)
    assert torch.equal(torch.isinf(x), torch.isinf(y))
    allowed = torch.nonzero(torch.isfinite(x[0])).flatten().tolist()
    assert allowed and set(allowed) == set(g.guide.current_tokensets()[0])


def test_eos_rollback_and_jump_forward(backend, smollm2_tokenizer, smollm2_vocab):
    g = _grammar(backend, ("json", json.dumps(SCHEMA)))
    # the start is forced through the first required key (keys are spelled as written, the
    # canonical spelling of generation mode) up to its string value's quote
    helper = g.try_jump_forward(smollm2_tokenizer)
    assert helper == ([], '{"city":"')
    text, state = g.jump_forward_str_state(helper)
    new = smollm2_tokenizer.encode(text, add_special_tokens=False)
    g.jump_and_retokenize([], new, state)
    assert g.guide.num_tokens() == len(new)
    old = list(new)
    for t in smollm2_tokenizer.encode('Oslo"', add_special_tokens=False):
        g.accept_token(t)
        old.append(t)
    helper = g.try_jump_forward(smollm2_tokenizer)
    assert helper == ([], ',"pop":')
    # SGLang retokenizes the whole output text: the ids may change before the jump point
    full = smollm2_tokenizer.encode(_decode(smollm2_vocab, old) + helper[1], add_special_tokens=False)
    g.jump_and_retokenize(old, full, -1)
    ref = _grammar(backend, ("json", json.dumps(SCHEMA)))
    for t in full:
        ref.accept_token(t)
    assert g.guide.state_of() == ref.guide.state_of()
    with pytest.raises(ValueError, match="not accepted during retokenization"):
        g.jump_and_retokenize(full, full[:-1] + [2], -1)  # EOS inside the document
    assert g.guide.state_of() == ref.guide.state_of()  # unchanged by the refused call
    for t in smollm2_tokenizer.encode('42}', add_special_tokens=False):
        g.accept_token(t)
    assert g.try_jump_forward(smollm2_tokenizer) is None  # complete: ending is an option
    g.accept_token(2)
    assert g.finished and g.is_terminated()
    g.accept_token(5)  # after the end: ignored, as SGLang's other backends do
    g.rollback(1)
    assert not g.finished and not g.is_terminated()
    with pytest.raises(ValueError, match="not allowed"):
        g.accept_token(smollm2_tokenizer.encode("x", add_special_tokens=False)[0])


def test_invalid_requests(backend):
    bad = _grammar(backend, ("json", '{"type": "integer", "minimum": "zero"}'))
    assert isinstance(bad, sgl.InvalidGrammarObject) and "minimum" in bad.error_message
    assert isinstance(_grammar(backend, ("ebnf", "root ::= (= \"a\") \"a\"")), sgl.InvalidGrammarObject)
    assert isinstance(_grammar(backend, ("structural_tag", "{}")), sgl.InvalidGrammarObject)
    lark_grammar = _grammar(backend, ("ebnf", 'start: "yes" | "no"'))  # Lark syntax taken as is
    assert lark_grammar.index.accepts("yes")
