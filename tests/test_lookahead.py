"""Speculative and jump-forward APIs of Guide, checked against step-by-step stepping with real
tokenizers (SmolLM2, Llama 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Guide, Index
from dotjson.errors import DotjsonIndexError, DotjsonTypeError, TokenNotAllowedError

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"enum": ["a", "bb", "ccc"]}},
        "kind": {"const": "person-record"},
    },
    "required": ["name", "age", "kind"],
}
DOC = {"name": "Ada Lovelace", "age": 36, "tags": ["bb", "a"], "kind": "person-record"}


def _ids(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False)


@pytest.fixture(scope="module", params=["smollm2", "llama3"])
def setup(request):
    vocab = request.getfixturevalue(f"{request.param}_vocab")
    tok = request.getfixturevalue(f"{request.param}_tokenizer")
    index = Index(PERSON, vocab, disallow_whitespace=True)
    return vocab, tok, index


def _stepwise_bits(index, toks):
    """Masks before each token and after the last, by plain stepping with fresh guides."""
    g = Guide(index)
    rows = [g.get_start_tokensets().bits[0].copy()]
    for t in toks:
        rows.append(g.get_next_tokensets([t]).bits[0].copy())
    return np.stack(rows)


def test_validate_tokens_is_the_accepted_prefix(setup):
    vocab, tok, index = setup
    doc = _ids(tok, json.dumps(DOC, separators=(",", ":")))
    eos = vocab.eos_token_ids[0]
    g = Guide(index)
    assert g.validate_tokens(doc + [eos]) == len(doc) + 1
    assert g.validate_tokens(doc + [eos, eos, eos]) == len(doc) + 3  # after EOS, only EOS
    assert g.validate_tokens([]) == 0
    bad = eos  # never allowed inside a document
    for j in (0, 1, len(doc) // 2, len(doc) - 1):
        # the reference: step token by token until one is refused
        draft = doc[:j] + [bad] + doc[j:]
        ref = Guide(index)
        n = 0
        for t in draft:
            if not ref.current_tokensets().contains(t)[0]:
                break
            ref.advance([t])
            n += 1
        assert g.validate_tokens(draft) == n == j
    assert g.num_tokens() == 0 and g.states[0] == index.initial_state  # nothing moved
    # from the middle of a document, as a numpy array and out-of-vocabulary ids
    g.accept_tokens(doc[:5])
    assert g.validate_tokens(np.asarray(doc[5:])) == len(doc) - 5
    assert g.validate_tokens([vocab.max_token_id() + 7]) == 0
    assert g.num_tokens() == 5


def test_draft_tokensets_equal_stepwise_masks(setup):
    vocab, tok, index = setup
    doc = _ids(tok, json.dumps(DOC, separators=(",", ":")))
    eos = vocab.eos_token_ids[0]
    ref = _stepwise_bits(index, doc + [eos])
    g = Guide(index, batch_size=2)
    g.get_start_tokensets()
    ts = g.draft_tokensets(doc + [eos], row=1)
    assert ts.batch_size == len(doc) + 2
    np.testing.assert_array_equal(ts.bits, ref)
    # from the middle of a document, a draft with a rejected token in it: k + 1 rows
    g.accept_tokens(doc[:4], row=0)
    bad = _ids(tok, "}")[0]
    ts = g.draft_tokensets(doc[4:9] + [bad] + doc[9:], row=0)
    assert ts.batch_size == 6
    np.testing.assert_array_equal(ts.bits, ref[4:10])
    assert g.num_tokens(0) == 4 and g.num_tokens(1) == 0


def test_accept_tokens_all_or_nothing(setup):
    vocab, tok, index = setup
    doc = _ids(tok, json.dumps(DOC, separators=(",", ":")))
    g = Guide(index, batch_size=2)
    g.accept_tokens(doc[:3], row=1)
    step = Guide(index)
    step.advance([doc[0]]); step.advance([doc[1]]); step.advance([doc[2]])
    assert g.state_of(1) == step.state_of(0) and g.num_tokens(0) == 0
    before = g.states
    bad = vocab.eos_token_ids[0]  # never allowed inside a document
    with pytest.raises(TokenNotAllowedError, match=r"not allowed in row 1 after 2 of the 3"):
        g.accept_tokens(doc[3:5] + [bad], row=1)
    np.testing.assert_array_equal(g.states, before)
    g.rollback(3, rows=[1])
    assert g.state_of(1) == index.initial_state
    with pytest.raises(DotjsonIndexError, match="Invalid row 2"):
        g.validate_tokens(doc, row=2)
    with pytest.raises(DotjsonTypeError, match="Invalid tokens"):
        g.accept_tokens("abc")


def _forced_reference(index, prefix: bytes, limit=64) -> bytes:
    """Bytes forced after ``prefix``: while not a complete document, the one byte b with
    ``prefix + b`` still a valid prefix (by Index.is_prefix over all 256 bytes)."""
    out = b""
    while len(out) < limit and not index.accepts(prefix + out):
        nxt = [b for b in range(256) if index.is_prefix(prefix + out + bytes([b]))]
        if len(nxt) != 1:
            break
        out += bytes(nxt)
    return out


def test_fast_forward_bytes_match_reference(smollm2_vocab, smollm2_tokenizer):
    # generation mode spells a key as written: the first required key is forced, to its value
    canonical = Index(PERSON, smollm2_vocab, disallow_whitespace=True)
    assert Guide(canonical).fast_forward_bytes() == b'{"name":"' == _forced_reference(canonical, b"")
    index = Index(PERSON, smollm2_vocab, disallow_whitespace=True, spellings="any")
    text = json.dumps(DOC, separators=(",", ":"))
    g = Guide(index)
    # with every spelling a key may be written with escapes ("\u006eame"): the forced bytes
    # stop at its quote
    assert g.fast_forward_bytes() == b'{"' == _forced_reference(index, b"")
    # after each token of a real document, the forced bytes are what the reference says, and
    # the document itself goes on with them
    toks = _ids(smollm2_tokenizer, text)
    written = b""
    seen = set()
    for t in toks:
        g.accept_tokens([t])
        written += smollm2_vocab.token_bytes(t)
        ff = g.fast_forward_bytes()
        assert ff == _forced_reference(index, written), written
        assert text.encode()[len(written):].startswith(ff)
        seen.add(ff)
    assert {b'":"', b',"'} <= seen
    assert g.is_accepting()[0] and g.fast_forward_bytes() == b""
    g.accept_tokens([smollm2_vocab.eos_token_ids[0]])
    assert g.fast_forward_bytes() == b"" and g.fast_forward_tokens() == []


# (a number const also matches 1.0 and 1e0, a string one its escaped spellings: neither is forced)
CONST = {"type": "object", "properties": {"k": {"const": [True, None, False, [True]]}},
         "required": ["k"]}


def test_fast_forward_tokens_write_the_forced_bytes(smollm2_vocab, llama3_vocab):
    for vocab in (smollm2_vocab, llama3_vocab):
        index = Index(CONST, vocab, disallow_whitespace=True)
        g = Guide(index)
        for b in b'{"k"':  # single-byte tokens up to the end of the key
            g.accept_tokens([_byte_token(vocab, bytes([b]))])
        forced = _forced_reference(index, b'{"k"')
        assert g.fast_forward_bytes() == forced == b':[true,null,false,[true]]}'
        toks = g.fast_forward_tokens()
        assert b"".join(vocab.token_bytes(t) for t in toks) == forced
        assert 1 < len(toks) < len(forced)  # longest tokens first, not byte by byte
        assert g.num_tokens() == 4  # the guide did not move
        g.accept_tokens(toks)
        assert g.is_accepting()[0] and g.fast_forward_bytes() == b""
        assert g.fast_forward_tokens(max_tokens=0) == []
        assert len(g.fast_forward_bytes(max_bytes=0)) == 0


def _byte_token(vocab, b: bytes) -> int:
    for t in range(vocab.max_token_id()):
        if vocab.token_bytes(t) == b and not vocab.is_special(t):
            return t
    raise AssertionError(b)


def test_fast_forward_in_counted_repetitions(smollm2_vocab):
    # literals inside an array of exactly 3 items: counters far from and near their bounds
    schema = {"type": "array", "items": {"const": True}, "minItems": 3, "maxItems": 3}
    index = Index(schema, smollm2_vocab, disallow_whitespace=True)
    g = Guide(index)
    assert g.fast_forward_bytes() == b"[true,true,true]" == _forced_reference(index, b"")
    toks = g.fast_forward_tokens()
    g.accept_tokens(toks)
    assert g.is_accepting()[0]
