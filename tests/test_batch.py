"""fill_next_token_bitmask: many (guide, row) masks into one int32 bitmask."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from dotjson import Guide, Index, fill_next_token_bitmask
from dotjson.errors import DotjsonIndexError, DotjsonTypeError, DotjsonValueError

SCHEMAS = [
    {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
     "required": ["id", "name"]},
    {"type": "array", "items": {"type": "number"}, "maxItems": 4},
    {"enum": ["red", "green", "blue"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
]
DOCS = [{"id": 12, "name": "Grace"}, [1.5, 2, -3], "green", {"ok": True}]


def _pairs(vocab, tok, n=64):
    """``n`` (guide, row) pairs over four schemas, rows at every position of a real document,
    some finished."""
    pairs = []
    for k, (schema, doc) in enumerate(zip(SCHEMAS, DOCS)):
        index = Index(schema, vocab, disallow_whitespace=True)
        ids = tok.encode(json.dumps(doc, separators=(",", ":")), add_special_tokens=False)
        ids = ids + [vocab.eos_token_ids[0]]
        m = n // len(SCHEMAS)
        guide = Guide(index, batch_size=m)
        for r in range(m):
            guide.accept_tokens(ids[: r % (len(ids) + 1)], row=r)
            pairs.append((guide, r))
    return pairs


def _expected(pairs, width):
    out = np.zeros((len(pairs), width), dtype=np.uint32)
    for i, (g, r) in enumerate(pairs):
        bits = g.current_tokensets().bits[r]
        out[i, : bits.shape[0]] = bits
    return out.view(np.int32)


@pytest.mark.parametrize("vocab_name,workers", [("smollm2", 0), ("qwen", 0), ("smollm2", 3)])
def test_fill_equals_per_guide_token_sets(vocab_name, workers, request, monkeypatch):
    # fresh states in the calling thread (the default), or in a pool (FRESH_WORKERS)
    import dotjson.batch

    monkeypatch.setattr(dotjson.batch, "FRESH_WORKERS", workers)
    vocab = request.getfixturevalue(f"{vocab_name}_vocab")
    tok = request.getfixturevalue(f"{vocab_name}_tokenizer")
    pairs = _pairs(vocab, tok)
    nw = (vocab.max_token_id() + 31) // 32
    width = nw + 9  # padded logits (Qwen's 151,936 columns are wider than its vocabulary)
    bm = np.full((len(pairs) + 3, width), -1, dtype=np.int32)
    rows = list(range(3, len(pairs) + 3))[::-1]
    fill_next_token_bitmask(pairs, bm, out_rows=rows)  # fresh states
    exp = _expected(pairs, width)
    np.testing.assert_array_equal(bm[rows], exp)
    assert (bm[:3] == -1).all()  # rows not listed are untouched
    assert (bm[rows][:, nw:] == 0).all()
    # finished rows allow exactly EOS
    for i, (g, r) in enumerate(pairs):
        if g.is_finished()[r]:
            allowed = np.flatnonzero(np.unpackbits(bm[rows[i]].view(np.uint8), bitorder="little"))
            assert set(allowed.tolist()) == set(vocab.eos_token_ids)
    # a torch tensor, memoized states now, default rows
    t = torch.full((len(pairs), width), 7, dtype=torch.int32)
    fill_next_token_bitmask(pairs, t)
    np.testing.assert_array_equal(t.numpy(), exp)


def test_bad_arguments(smollm2_vocab, smollm2_tokenizer):
    pairs = _pairs(smollm2_vocab, smollm2_tokenizer, n=8)
    nw = (smollm2_vocab.max_token_id() + 31) // 32
    bm = np.zeros((8, nw), dtype=np.int32)
    with pytest.raises(DotjsonValueError, match="at least 1536 words"):
        fill_next_token_bitmask(pairs, np.zeros((8, nw - 1), dtype=np.int32))
    with pytest.raises(DotjsonValueError, match="2-D int32"):
        fill_next_token_bitmask(pairs, np.zeros((8, nw), dtype=np.float32))
    with pytest.raises(DotjsonTypeError, match="Invalid bitmask"):
        fill_next_token_bitmask(pairs, [[0] * nw] * 8)
    with pytest.raises(DotjsonIndexError, match="Invalid bitmask row 8"):
        fill_next_token_bitmask(pairs, bm, out_rows=range(1, 9))
    with pytest.raises(DotjsonValueError, match="listed twice"):
        fill_next_token_bitmask(pairs[:2], bm, out_rows=[0, 0])
    with pytest.raises(DotjsonTypeError, match="Invalid pair 1"):
        fill_next_token_bitmask([pairs[0], ("guide", 0)], bm)
    with pytest.raises(DotjsonIndexError, match="Invalid row 5"):
        fill_next_token_bitmask([(pairs[0][0], 5)], bm)
    assert (bm == 0).all()  # nothing written on a refused call
