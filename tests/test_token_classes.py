"""The vocabulary's token classes the rule families' masks read (``dotjson.masks.tokens_holding``,
``tokens_within``: the tokens holding a byte of a set, the tokens made only of a set's bytes),
against their definition over every token's bytes, on the three shipped vocabularies (empty
tokens, specials and byte-level pieces included)."""

from __future__ import annotations

import numpy as np
import pytest

from dotjson.masks import _HOLDING, bit_ids, tokens_holding, tokens_within

_SETS = [frozenset(b'"'), frozenset(b']}"'), frozenset(range(0x80, 0x100)), frozenset(b"0123456789-+.eE"),
         frozenset(range(256)), frozenset((0xFF,)), frozenset()]


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
def test_token_classes_match_their_definition(request, vocab_name):
    vocab = request.getfixturevalue(vocab_name)
    data = [vocab.token_bytes(t) or b"" for t in range(vocab.max_token_id())]
    for bs in _SETS:
        _HOLDING.clear()  # (computed, not read from an earlier test's cache)
        holding = tokens_holding(vocab, bs)
        within = tokens_within(vocab, bs)
        want_holding = [t for t, b in enumerate(data) if any(x in bs for x in b)]
        want_within = [t for t, b in enumerate(data) if b and all(x in bs for x in b)]
        assert bit_ids(holding).tolist() == want_holding, sorted(bs)[:4]
        assert bit_ids(within).tolist() == want_within, sorted(bs)[:4]
        assert not holding.flags.writeable and holding.dtype == np.uint32
