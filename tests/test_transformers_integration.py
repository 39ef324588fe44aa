"""JSONLogitsProcessor inside transformers' generate(), with a tiny random-weight Llama model."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, LogitsProcessorList

from dotjson import Guide, Index
from dotjson.errors import DotjsonValueError
from dotjson.integrations.transformers import JSONLogitsProcessor

ROOT = Path(__file__).resolve().parent.parent

# A finite language (up to escapes), so every row reaches EOS within the token budget.
SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "tag": {"enum": ["red", "green", "blue"]},
        "none": {"type": "null"},
    },
    "required": ["ok", "tag", "none"],
    "additionalProperties": False,
}
EXTRA_COLUMNS = 13  # the model's embedding is wider than the tokenizer, as real models pad it


@pytest.fixture(scope="module")
def setup(tiny_bpe_tokenizer, tiny_bpe_vocab):
    vocab = tiny_bpe_vocab
    index = Index(SCHEMA, vocab, disallow_whitespace=True)
    eos = vocab.eos_token_ids[0]
    pad = tiny_bpe_tokenizer.token_to_id("x")  # a pad id that is not EOS
    assert pad is not None and pad != eos
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab.max_token_id() + EXTRA_COLUMNS,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=pad,
    )
    model = LlamaForCausalLM(config).eval()
    # A 32-wide model gains nothing from intra-op threads, and on a busy 2-core machine torch's
    # thread team turns each tiny matmul into a wait for a descheduled thread (20x slower).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield tiny_bpe_tokenizer, vocab, index, model, eos, pad
    torch.set_num_threads(threads)


def left_padded(tokenizer, prompts, pad):
    ids = [tokenizer.encode(p).ids for p in prompts]
    width = max(map(len, ids))
    input_ids = torch.full((len(ids), width), pad, dtype=torch.long)
    attention = torch.zeros((len(ids), width), dtype=torch.long)
    for r, row in enumerate(ids):
        input_ids[r, width - len(row) :] = torch.tensor(row)
        attention[r, width - len(row) :] = 1
    return input_ids, attention


def generated_documents(out, prompt_width, index, eos):
    """Each row's generated text up to EOS, and whether EOS was reached; replayed through a guide."""
    vocab = index.vocabulary
    docs = []
    for row in out[:, prompt_width:].tolist():
        guide = Guide(index, batch_size=1)
        guide.get_start_tokensets()
        text = b""
        finished = False
        for t in row:
            guide.get_next_tokensets([t])  # raises if the processor let a forbidden token through
            if t == eos:
                finished = True
                break
            text += vocab.token_bytes(t)
        docs.append((text.decode("utf-8"), finished))
    return docs


@pytest.mark.parametrize("do_sample", [False, True])
def test_generate_batched_left_padded(setup, do_sample):
    tokenizer, vocab, index, model, eos, pad = setup
    prompts = ['{"a": 1}', "hello world, give me JSON please", "x", '[true, "blue"]']
    input_ids, attention = left_padded(tokenizer, prompts, pad)
    proc = JSONLogitsProcessor(index)
    torch.manual_seed(1)
    with torch.no_grad():
        out = model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            logits_processor=LogitsProcessorList([proc]),
            max_new_tokens=120,
            do_sample=do_sample,
            top_k=0,
            top_p=1.0,
            num_beams=1,
            pad_token_id=pad,
            eos_token_id=eos,
        )
    assert proc.guide.batch_size == len(prompts)
    docs = generated_documents(out, input_ids.shape[1], index, eos)
    for text, finished in docs:
        assert finished, f"row did not finish within the budget: {text!r}"
        jsonschema.validate(json.loads(text), SCHEMA)
    # Rows finish at different steps: the later columns of finished rows are padding.
    assert (out[:, input_ids.shape[1]:] == pad).any() or len({len(t) for t, _ in docs}) == 1
    # A second generate() call with the same processor starts new documents.
    with torch.no_grad():
        out2 = model.generate(
            input_ids=input_ids[:2],
            attention_mask=attention[:2],
            logits_processor=LogitsProcessorList([proc]),
            max_new_tokens=120,
            do_sample=do_sample,
            top_k=0,
            pad_token_id=pad,
            eos_token_id=eos,
        )
    for text, finished in generated_documents(out2, input_ids.shape[1], index, eos):
        assert finished
        jsonschema.validate(json.loads(text), SCHEMA)


def test_num_return_sequences_sampling(setup):
    tokenizer, vocab, index, model, eos, pad = setup
    input_ids, attention = left_padded(tokenizer, ["give JSON"], pad)
    proc = JSONLogitsProcessor(index)
    torch.manual_seed(2)
    with torch.no_grad():
        out = model.generate(
            input_ids=input_ids, attention_mask=attention,
            logits_processor=LogitsProcessorList([proc]), max_new_tokens=120, do_sample=True,
            top_k=0, num_return_sequences=3, pad_token_id=pad, eos_token_id=eos,
        )
    assert out.shape[0] == 3 and proc.guide.batch_size == 3
    for text, finished in generated_documents(out, input_ids.shape[1], index, eos):
        assert finished
        jsonschema.validate(json.loads(text), SCHEMA)


def test_scores_are_masked_in_place(setup):
    tokenizer, vocab, index, model, eos, pad = setup
    proc = JSONLogitsProcessor(index)
    input_ids = torch.tensor([[5, 6], [7, 8]])
    scores = torch.zeros(2, vocab.max_token_id() + EXTRA_COLUMNS)
    ptr = scores.data_ptr()
    out = proc(input_ids, scores)
    assert out is scores and scores.data_ptr() == ptr
    allowed = torch.isfinite(scores)
    assert allowed[:, vocab.max_token_id():].sum() == 0
    start = Guide(index, batch_size=2).get_start_tokensets().to_bool_mask()
    assert torch.equal(allowed[:, : vocab.max_token_id()], torch.from_numpy(start))
    # Next step: the row's last token is fed to the guide.
    brace = tokenizer.token_to_id("{")
    nxt = torch.cat([input_ids, torch.tensor([[brace], [brace]])], dim=1)
    scores = torch.zeros(2, vocab.max_token_id() + EXTRA_COLUMNS)
    proc(nxt, scores)
    g = Guide(index, batch_size=2)
    g.get_start_tokensets()
    expected = g.get_next_tokensets([brace, brace]).to_bool_mask()
    assert torch.equal(torch.isfinite(scores)[:, : vocab.max_token_id()], torch.from_numpy(expected))


def test_beam_search_is_refused(setup):
    tokenizer, vocab, index, model, eos, pad = setup
    input_ids, attention = left_padded(tokenizer, ["give JSON", "more JSON please"], pad)
    proc = JSONLogitsProcessor(index)
    with pytest.raises(DotjsonValueError, match=r"does not support beam search \(num_beams > 1\)"):
        with torch.no_grad():
            model.generate(
                input_ids=input_ids, attention_mask=attention,
                logits_processor=LogitsProcessorList([proc]), max_new_tokens=30, num_beams=3,
                num_return_sequences=1, do_sample=False, pad_token_id=pad, eos_token_id=eos,
            )


def test_scores_narrower_than_vocabulary_are_an_error(setup):
    tokenizer, vocab, index, model, eos, pad = setup
    proc = JSONLogitsProcessor(index)
    with pytest.raises(ValueError, match=r"Invalid logits: expected width >= \d+"):
        proc(torch.tensor([[1]]), torch.zeros(1, vocab.max_token_id() - 1))
    with pytest.raises(DotjsonValueError, match="Invalid input_ids: expected a 2-D"):
        proc(torch.tensor([1]), torch.zeros(1, vocab.max_token_id()))


def test_missing_transformers_is_a_dotjson_import_error():
    # In a process where ``import transformers`` fails, importing the integration says what is
    # missing with a DotjsonError that is still an ImportError.
    code = textwrap.dedent("""
        import sys
        sys.modules["transformers"] = None  # makes "import transformers" raise ImportError
        from dotjson.errors import DotjsonImportError
        try:
            import dotjson.integrations.transformers
        except DotjsonImportError as e:
            assert isinstance(e, ImportError)
            print("RAISED", e)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "RAISED dotjson.integrations.transformers needs the 'transformers' package" in out.stdout
    assert "pip install transformers" in out.stdout
