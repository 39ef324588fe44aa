"""Plain openness: a state that allows every plain token without being plain-invariant (the key
of an open object: a declared name's rest, or any key but the names) takes the whole plain trie
at once (``kernels.plain_open``), or a node's whole subtree below the root, instead of walking
it node by node.

Read off the term, checked against the cases it must refuse (a key less an infinite language, a
bounded key, a closed object's names), and against the same index with the plain shortcuts off
(the plain trie walked node by node) at every byte of documents with open objects, on the three
shipped vocabularies; and against the byte-by-byte reference on a small vocabulary.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Index
from dotjson.automaton import kernels as K

from naive import allowed_tokens, assert_same_masks

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}
OPEN = {"close_objects": False, "bounds": "schema"}


def _open(index, prefix: bytes) -> int:
    s = index._auto.walk_bytes(index.initial_state, prefix)
    assert s >= 0, prefix
    pseq, plen = index._plain.seqs
    return index._auto._run(K.plain_open, s, pseq, plen)


@pytest.mark.parametrize("schema,options,prefix,expected", [
    # an open object's key: a name's rest, or any key but the names
    ({"type": "object", "properties": {"abc": {}, "abd": {}}}, OPEN, b'{"', 1),
    ({"type": "object", "properties": {"abc": {}, "abd": {}}}, OPEN, b'{"ab', 1),
    ({"type": "object", "properties": {"abc": {}}}, EVERY_VALID, b'{"a', 1),
    # a closed object: the names only
    ({"type": "object", "properties": {"abc": {}}}, {"bounds": "schema"}, b'{"', 0),
    # a key less an infinite language: not every key starting with "a"
    ({"type": "object", "propertyNames": {"not": {"pattern": "^a"}}}, OPEN, b'{"', 0),
    ({"type": "object", "propertyNames": {"pattern": "^a"}}, OPEN, b'{"', 0),
    # a bounded key (the generation bounds' 128 characters): a plain run, not open
    ({"type": "object", "properties": {"abc": {}}}, {"close_objects": False, "bounds": "generation"},
     b'{"x', 0),
    # not a string at all
    ({"type": "integer"}, {}, b"1", 0),
])
def test_plain_open_is_read_off_the_term(tiny_bpe_vocab, schema, options, prefix, expected):
    assert _open(Index(schema, tiny_bpe_vocab, **options), prefix) == expected


_DOCS = [
    ({"type": "object", "properties": {"leftPanelEnabled": {"type": "boolean"},
                                       "theme": {"type": "string", "minLength": 1}},
      "required": ["leftPanelEnabled", "theme"]},
     {"leftPanelEnabled": True, "léft\u00e9": 1, "theme": "dark", "日本語のキー": [1, {"x": None}]}),
    ({"type": "object", "properties": {"a": {"type": "object", "properties": {"ab": {}, "abc": {}}}},
      "patternProperties": {"^z": {"type": "integer"}}},
     {"a": {"abc": 1, "ab": "x", "abcd": {"k": "v"}}, "zeta": 3, "q\"uote\\d": "e"}),
    ({"type": "object", "propertyNames": {"not": {"pattern": "^a"}}},
     {"bcd": 1, "xa": {"a": 2}}),
]


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("options", [OPEN, EVERY_VALID], ids=["open", "every-valid"])
@pytest.mark.parametrize("schema,doc", _DOCS)
def test_open_key_masks_equal_the_node_by_node_walk(request, vocab_name, options, schema, doc):
    """At every byte prefix of documents with open objects (keys beside declared names, keys
    outside the plain characters, escapes), the masks equal those of the same schema with the
    plain shortcuts off."""
    vocab = request.getfixturevalue(vocab_name)
    fast = Index(schema, vocab, **options)
    slow = Index(schema, vocab, **options)
    slow._masker._plain_runs = False
    slow._masker._heads = False
    assert_same_masks(fast, slow, json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())


def test_open_key_mask_equals_the_byte_by_byte_reference(tiny_bpe_vocab):
    index = Index({"type": "object", "properties": {"abc": {}, "abd": {}}}, tiny_bpe_vocab, **OPEN)
    for prefix in (b'{"', b'{"ab', b'{"abc":1,"', b'{"abc":1,"x'):
        s = index._auto.walk_bytes(index.initial_state, prefix)
        bits = index.mask(s)
        got = {int(i) for i in np.flatnonzero(np.unpackbits(bits.view(np.uint8), bitorder="little"))}
        assert got == allowed_tokens(index, tiny_bpe_vocab, prefix), prefix
