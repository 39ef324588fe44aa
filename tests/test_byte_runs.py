"""Byte runs: the mask walk follows a run ``C{0,hi} rest`` (the bounded whitespace between JSON
tokens, ``[ \\t]{0,20}``) through the trie by position, without a state per position
(``kernels.byte_run``, ``_kernels.walk.BYTE_RUNS``).

Read off the term, checked against the cases it must refuse (a rest that may start with a byte
of the run, an unbounded or a required repetition, a run of more than one byte an item), and
against the same index walked node by node with the run positions made states (the reference
``WALK_ALL``) at every byte of indented documents — newlines, tabs, blank runs up to the bound
and past it — on the three shipped vocabularies; and against the byte-by-byte reference on a
small vocabulary.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Index
from dotjson._kernels import walk
from dotjson.automaton import kernels as K

from naive import allowed_tokens, assert_same_masks

_OBJ = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a"]}


def _run(index, prefix: bytes) -> int:
    s = index._auto.walk_bytes(index.initial_state, prefix)
    assert s >= 0, prefix
    return index._auto._run(K.byte_run, s)


@pytest.mark.parametrize("prefix,is_run", [
    (b'{"a":1 ', True),     # (R x | R y) z: after a value, before "," or "}"
    (b'{"a": ', True),       # R value: before a value
    (b'{"a":1\n', True),     # after the line break, the blanks
    (b'{"a"', False),        # ws ":" : the rule reference first, not a repetition yet
    (b'{"a":1', False),      # inside a number
    (b'{"a":1,"b":"x', False),  # inside a string
])
def test_byte_run_is_read_off_the_term(tiny_bpe_vocab, prefix, is_run):
    assert (_run(Index(_OBJ, tiny_bpe_vocab), prefix) > 0) == is_run


@pytest.mark.parametrize("pattern,is_run", [
    ("^a{0,5}b$", True),     # a{0,5} b: b never starts with a
    ("^a{0,5}ab$", False),   # the rest may start with a byte of the run
    ("^a*b$", False),        # unbounded: one state already (the repetition's derivative is itself)
    ("^a{2,5}b$", False),    # a required part: not every position takes the rest's bytes
    ("^(ab){0,5}c$", False),  # two bytes an item
    ("^a{0,70}b$", False),   # past the walk's 62 positions
])
def test_byte_run_conditions(tiny_bpe_vocab, pattern, is_run):
    index = Index({"type": "string", "pattern": pattern}, tiny_bpe_vocab, bounds="schema")
    assert (_run(index, b'"') > 0) == is_run


def _docs():
    doc = {"a": 12, "b": "x y", "c": [1, {"d": None, "e": [True, False]}], "é": "ü"}
    yield json.dumps(doc, indent=2, ensure_ascii=False)
    yield json.dumps(doc, indent="\t", ensure_ascii=False)
    yield json.dumps(doc, indent=" " * 19, ensure_ascii=False)  # blank runs at the bound's edge
    yield '{ "a" :\t 12 ,\r\n  "b":"x" , "c"  : [ 1 ,\n\t{ } ] }'


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("options", [{}, {"close_objects": False},
                                     {"property_order": "any", "close_objects": False,
                                      "whitespace": "json"}],
                         ids=["default", "open", "every-valid"])
def test_byte_run_masks_equal_the_node_by_node_walk(request, vocab_name, options):
    """At every byte prefix of indented documents, the masks equal those of the reference walk
    (every run position a state), and both indexes refuse the same prefixes (21 blanks in a
    row under the default bound)."""
    vocab = request.getfixturevalue(vocab_name)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                               "c": {"type": "array"}}}
    for text in _docs():
        fast = Index(schema, vocab, **options)
        slow = Index(schema, vocab, **options)
        assert fast._masker._special_mode & walk.BYTE_RUNS
        slow._masker._special_mode = walk.WALK_ALL
        assert_same_masks(fast, slow, text.encode())


def test_a_run_position_mask_is_the_reference_after_the_run_was_walked(llama3_vocab):
    """A run position's state made later (by a token taking blanks) has the mask the reference
    gives it: the walk wrote only the transitions that the rest's state takes."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fast, slow = Index(schema, llama3_vocab), Index(schema, llama3_vocab)
    slow._masker._special_mode = walk.WALK_ALL
    for prefix in (b'{"a":1', b'{"a":1 ', b'{"a":1' + b" " * 7, b'{"a":1' + b" " * 20):
        s = fast._auto.walk_bytes(fast.initial_state, prefix)
        u = slow._auto.walk_bytes(slow.initial_state, prefix)
        fast.mask(s)  # the origin's walk first, then the positions as states
    for n in range(22):
        prefix = b'{"a":1' + b" " * n
        s = fast._auto.walk_bytes(fast.initial_state, prefix)
        u = slow._auto.walk_bytes(slow.initial_state, prefix)
        assert (s < 0) == (u < 0) == (n > 20), n
        if s >= 0:
            assert np.array_equal(fast.mask(s), slow.mask(u)), n


def test_byte_run_mask_equals_the_byte_by_byte_reference(tiny_bpe_vocab):
    index = Index(_OBJ, tiny_bpe_vocab)
    for prefix in (b'{"a":1', b'{"a":1 ', b'{"a":1\n  ', b'{"a": ', b'{"a":1,\t"b"'):
        s = index._auto.walk_bytes(index.initial_state, prefix)
        bits = index.mask(s)
        got = {int(i) for i in np.flatnonzero(np.unpackbits(bits.view(np.uint8), bitorder="little"))}
        assert got == allowed_tokens(index, tiny_bpe_vocab, prefix), prefix
