"""Index.check: a text or a token sequence, where it fails and what was expected there."""

from __future__ import annotations

import json

import pytest

from dotjson import Index

D4 = "http://json-schema.org/draft-04/schema#"
SCHEMA = {"type": "object", "properties": {"port": {"type": "integer"}, "host": {"type": "string"}},
          "required": ["port"], "additionalProperties": False}


@pytest.fixture(scope="module")
def index(llama3_vocab):
    return Index(SCHEMA, llama3_vocab, close_objects=False)


def test_text_ok_rejected_incomplete(index):
    r = index.check('{"port":8080,"host":"a"}')
    assert r.ok and r.reason == "ok" and bool(r) and r.token_index is None
    assert index.accepts('{"port":8080,"host":"a"}') is True
    r = index.check('{"port":"8080"}')
    assert not r and r.reason == "rejected"
    assert r.position == 8 and r.valid_prefix == b'{"port":'
    # a number may start here (digits, minus), or whitespace; a quote may not
    assert "'-'" in r.expected and "'0'-'9'" in r.expected and "'\"'" not in r.expected
    assert "expected" in str(r) and "byte 8" in str(r)
    r = index.check('{"port":80')
    assert r.reason == "incomplete" and r.position == 10 and r.valid_prefix == b'{"port":80'
    assert "'}'" in r.expected and "<end>" not in r.expected
    # in schema order the required "port" comes first: "h" is rejected right after the quote
    r = index.check(b'{"host":"a"}')
    # (a declared key has one spelling by default: no \u0070 for the p)
    assert r.reason == "rejected" and r.valid_prefix == b'{"' and set(r.expected) == {"'p'"}
    r = index.check('{"port":1} ')
    assert r.ok and r.expected == ()


def test_draft4_integer_fails_at_the_dot(llama3_vocab):
    index = Index({"$schema": D4, **SCHEMA}, llama3_vocab, close_objects=False)
    r = index.check('{"port":8080.0}')
    assert not r.ok and r.position == len('{"port":8080') and r.valid_prefix == b'{"port":8080'
    assert "'.'" not in r.expected and "'}'" in r.expected


def test_token_sequences(index, llama3_vocab, llama3_tokenizer):
    vocab = llama3_vocab
    eos = vocab.eos_token_ids[0]

    def enc(text):
        ids = llama3_tokenizer.encode(text, add_special_tokens=False)
        return list(getattr(ids, "ids", ids))

    good = enc(json.dumps({"port": 8080, "host": "example.org"}, indent=2))
    assert index.check(good).ok and index.check(good + [eos]).ok
    assert index.check(good + [eos, eos]).reason == "after_eos"
    assert index.check(good[:-1]).reason == "incomplete"
    r = index.check(good[:-1] + [eos])  # EOS before the object is closed
    assert r.reason == "rejected" and r.token_index == len(good) - 1
    assert r.n_expected_tokens > 0 and all(eos != t for t, _ in r.expected_tokens)
    # a token that fails in its middle: the byte position is inside the token
    bad = enc('{"port": 80x0}')
    r = index.check(bad)
    assert r.reason == "rejected" and r.valid_prefix == b'{"port": 80' and r.position == 11
    k = r.token_index
    before = b"".join(vocab.token_bytes(t) for t in bad[:k])
    assert before == r.valid_prefix[: len(before)] and vocab.token_bytes(bad[k]).find(b"x") >= 0
    # every listed token is really allowed: its bytes continue the prefix before the token
    for t, data in r.expected_tokens:
        assert t == eos or index.is_prefix(before + data)
    assert index.check([10**9]).reason == "rejected"
