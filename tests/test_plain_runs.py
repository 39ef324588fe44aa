"""Plain runs: a state that takes any ``k`` plain characters in a row, each to one successor (a
string body under a length bound), takes its plain tokens as the tokens of at most ``k``
characters, one OR of a precomputed row (``kernels.plain_run``, ``trie.plain_length_bits``).

Checked against a token-by-token count of the vocabulary, against the same index with the
shortcut off (the plain trie walked node by node) at every position of bounded strings on Llama 3,
and against the slow byte-by-byte reference on a small vocabulary.
"""

from __future__ import annotations

import numpy as np
import pytest

from dotjson import Index
from dotjson.automaton import kernels as K
from dotjson.jsonschema.jsonstr import PLAIN_CLASS
from dotjson.trie import plain_length_bits

from naive import allowed_tokens, assert_same_masks


def _ids(bits: np.ndarray) -> set[int]:
    return {int(i) for i in np.flatnonzero(np.unpackbits(bits.view(np.uint8), bitorder="little"))}


def test_plain_length_bits_are_the_plain_tokens_of_at_most_k_characters(llama3_vocab):
    v = llama3_vocab
    tries = v.tries_for(PLAIN_CLASS)
    row, bits = plain_length_bits(tries.plain, tries.n_words)
    chars = {}
    for t in range(v.max_token_id()):
        if t in v.eos_token_ids:
            continue
        b = v.token_bytes(t)
        if PLAIN_CLASS.holds(b):
            chars[t] = len(b.decode("utf-8"))
    assert row.shape[0] == max(chars.values()) + 1
    assert _ids(bits[row[0]]) == set()
    for k in (1, 2, 3, 7, 16, 40, row.shape[0] - 1):
        assert _ids(bits[row[k]]) == {t for t, n in chars.items() if n <= k}, k
    assert _ids(bits[row[-1]]) == _ids(tries.plain_bits)


def _run(index, state: int) -> int:
    pseq, plen = index._plain.seqs
    return index._auto._run(K.plain_run, state, pseq, plen)


@pytest.mark.parametrize("schema,prefix,expected", [
    ({"type": "string", "maxLength": 5}, b'"ab', 3),
    ({"type": "string", "minLength": 2, "maxLength": 9}, b'"', 9),
    ({"type": "string", "minLength": 4}, b'"x', K.RUN_INF),
    ({"type": "string", "maxLength": 3}, b'"abc', 0),  # only the closing quote is left
    ({"type": "string", "pattern": "^[a-z]{0,8}$"}, b'"a', 0),  # not every plain character
    ({"type": "string", "format": "date"}, b'"', 0),
])
def test_plain_run_is_read_off_the_term(tiny_bpe_vocab, schema, prefix, expected):
    index = Index(schema, tiny_bpe_vocab, bounds="schema")
    s = index._auto.walk_bytes(index.initial_state, prefix)
    assert s >= 0
    assert _run(index, s) == expected


def test_the_generation_bounds_string_is_a_plain_run(tiny_bpe_vocab):
    index = Index({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                  tiny_bpe_vocab)
    s = index._auto.walk_bytes(index.initial_state, b'{"a": "hel')
    assert _run(index, s) == 128 - 3


_BOUNDED = [
    ({"type": "string", "maxLength": 4}, '"ab\\n"'),
    ({"type": "string", "minLength": 3, "maxLength": 12}, '"hello wörld"'),
    ({"type": "string", "minLength": 6}, '"abcdefgh"'),
    ({"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
     '["Reading","Hiking \\"x\\""]'),
    ({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
     '{"name":"Ada Lovelace, née Byron — 1815"}'),
    # crosses the special tokens' length (82 bytes on Llama 3) from the bound: shared, then not
    ({"type": "string", "minLength": 30, "maxLength": 100},
     '"' + "Grüße aus Köln, \"quoted\" and \\u escapes \u00e9 — twenty-six more chars..." + '"'),
]

# runs met below the walk's root: the state at a node is a bounded run once the other branches
# die (an undeclared key under the generation bounds' 128 characters, once no declared name
# shares its prefix; a bounded string beside a literal), so the subtree's tokens are read off
# their lengths (walk.walk_trie) instead of walked node by node
_BELOW_ROOT = [
    ({"type": "object", "properties": {"body": {"type": "string"}, "bodyguard": {"type": "integer"}},
      "additionalProperties": {"type": "integer"}},
     '{"body":"x","bo":1,"zeta_key_with_more_characters":2,"bodyguardx":3}'),
    ({"anyOf": [{"type": "string", "maxLength": 8}, {"const": "abcdefghijklmnop"}]},
     '"abcdefghijklmnop"'),
]


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("schema,doc", _BOUNDED + _BELOW_ROOT)
def test_bounded_string_masks_equal_the_node_by_node_walk(request, vocab_name, schema, doc):
    """At every byte prefix (inside strings too), the shortcut's mask equals the mask of the
    same schema with the shortcuts off, on the three shipped vocabularies."""
    vocab = request.getfixturevalue(vocab_name)
    fast = Index(schema, vocab)
    slow = Index(schema, vocab)
    slow._masker._plain_runs = False
    assert_same_masks(fast, slow, doc.encode())


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "smollm2_vocab"])
def test_positions_far_from_the_bound_share_one_walk(request, vocab_name):
    """Inside a 128-character string, the positions further from the bound than a special
    token reaches into the run (9 bytes on Llama 3, 4 on SmolLM2, whose longest token is a
    special one) build no state of their own: their masks come from the unbounded run's."""
    index = Index({"type": "array", "items": {"type": "string"}}, request.getfixturevalue(vocab_name))
    s = index._auto.walk_bytes(index.initial_state, b'["')
    index.mask(s)
    before = index.n_states
    for ch in b"abcdefghijklmnopqrstuvwxyz":
        s = index._auto.walk_bytes(s, bytes([ch]))
        index.mask(s)
    assert index.n_states - before <= 26  # the positions themselves, nothing walked from them


@pytest.mark.parametrize("schema,doc", _BOUNDED[:3] + _BELOW_ROOT)
def test_bounded_string_masks_equal_the_slow_reference(tiny_bpe_vocab, schema, doc):
    index = Index(schema, tiny_bpe_vocab, spellings="any")
    data = doc.encode()
    n = tiny_bpe_vocab.max_token_id()
    for i in range(len(data) + 1):
        s = index._auto.walk_bytes(index.initial_state, data[:i])
        if s < 0:
            continue
        got = {t for t in range(n) if index.mask(s)[t >> 5] >> (t & 31) & 1}
        assert got == allowed_tokens(index, tiny_bpe_vocab, data[:i]), data[:i]
