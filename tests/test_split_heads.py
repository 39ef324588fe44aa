"""Split heads: a state met below a mask walk's root whose term is a shared head followed by the
rest of the document (``A c``: ``A`` the leading items that name only the base image's rules,
``c`` the rest) is walked as the pair (``A``'s state, ``c``), and ``c``'s state walks on from each
node where ``A``'s state accepts (``_kernels.split``, ``walk.SPLITS``; issue 24).

Checked: which states split (an undeclared member's value after ``":``, a string's rest after a
partial UTF-8 character or an escape; not a state that is shared as a whole, nor one whose first
item is the schema's own rule); masks equal to the reference walk (``WALK_ALL``) at every byte of
documents that cross heads into their rests (numbers, literals, nested values, escapes, non-ASCII
keys) on the three shipped vocabularies; a walk whose stack fills up grows it and gives the same
masks; and the point of it, fewer states for the same masks.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Index
from dotjson import masks as masks_mod
from dotjson._kernels import split, walk

from naive import assert_same_masks

_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                            "c": {"type": "array", "items": {"type": "number"}}}}

_DOCS = [
    '{"a":12,"":{"x":[1,2.5e3,true,null,"\\u00e9\\n"],"y":{}},"b":"x\\"y","c":[-0.5,3]}',
    json.dumps({"zé": "ü€😀", "a": -7, "q": [False, None, {"k": "v"}], "b": "é"}, ensure_ascii=False),
    '{"b":"\\ud83d\\ude00 \\t","":"","a":0,"d":"\\/"}',
    json.dumps({"a": 1, "x": {"y": [1, [2, [3, {"z": "w"}]]]}, "c": [1e-3]}, indent=1),
]


def _split_of(index, prefix: bytes):
    """``(head term, rest term)`` of the state after ``prefix``, or ``None``."""
    a = index._auto
    s = a.walk_bytes(index.initial_state, prefix)
    assert s >= 0, prefix
    out = np.zeros(2, dtype=np.int64)
    if a._run(split.split_pair, s, out) == 0:
        return None
    return a.term_of(int(out[0])), int(out[1])


@pytest.mark.parametrize("prefix,head", [
    (b'{"":', "ws json_value"),                    # an undeclared member's value
    (b'{"a":1,"b":"\xc3', "[64 bytes] (json_string_char){0,} b'\"'"),  # a partial character
    (b'{"a":1,"b":"\\', "(b'u' b'0' b'0'"),       # an escape's rest, then the string's
    (b'{"x\xc3', "[64 bytes]"),                   # a partial character of an undeclared key
])
def test_what_splits(llama3_vocab, prefix, head):
    """The head is the leading shared items (their own state, not nullable), the rest what
    follows them in the state's term."""
    index = Index(_SCHEMA, llama3_vocab, close_objects=False)
    got = _split_of(index, prefix)
    assert got is not None, prefix
    h, c = got
    a = index._auto
    whole = a.describe(a.walk_bytes(index.initial_state, prefix), 10_000)
    assert a.show(h).startswith(head), a.show(h)
    assert whole == (a.show(h) + " " + a.show(c, 10_000)).replace("  ", " "), whole
    assert not a.nullable(h)


@pytest.mark.parametrize("schema,prefix", [
    ({"type": "string"}, b'"ab'),                 # the whole state is shared: nothing to split off
    (_SCHEMA, b'{"a'),                            # a key set first: the schema's own
    (_SCHEMA, b'{"a":'),                          # the member's value rule first
])
def test_what_does_not_split(tiny_bpe_vocab, schema, prefix):
    assert _split_of(Index(schema, tiny_bpe_vocab, close_objects=False), prefix) is None


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("options", [{}, {"close_objects": False},
                                     {"property_order": "any", "close_objects": False,
                                      "whitespace": "json"}],
                         ids=["default", "open", "every-valid"])
def test_masks_equal_the_reference_walk(request, vocab_name, options):
    """At every byte prefix, the masks equal those of the reference walk (no split, no shortcut
    in the special trie), and both indexes refuse the same prefixes."""
    vocab = request.getfixturevalue(vocab_name)
    for text in _DOCS:
        fast = Index(_SCHEMA, vocab, **options)
        slow = Index(_SCHEMA, vocab, **options)
        assert fast._masker._special_mode & walk.SPLITS
        slow._masker._special_mode = walk.WALK_ALL
        assert_same_masks(fast, slow, text.encode())


def test_a_full_stack_grows(llama3_vocab, monkeypatch):
    """A walk that runs out of stack stops, its stack grows with its frames kept, and it goes on
    to the same masks."""
    monkeypatch.setattr(masks_mod.Masker, "_scratch", lambda self: masks_mod._thread_scratch(600))
    monkeypatch.setattr(masks_mod, "_SCRATCH", type(masks_mod._SCRATCH)())
    small = Index(_SCHEMA, llama3_vocab, close_objects=False)
    ref = Index(_SCHEMA, llama3_vocab, close_objects=False)
    ref._masker._special_mode = walk.WALK_ALL
    assert_same_masks(small, ref, _DOCS[0].encode())
    assert masks_mod._SCRATCH.st_node.shape[0] > 600  # (it did grow)


def test_split_heads_make_fewer_states(llama3_vocab):
    """The same masks with a fifth fewer states: an undeclared member's value is walked in its own
    states once, not once per key position with the rest of the document in each."""
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in "abcdefgh"}}
    doc = json.dumps({k: "x" for k in "abcdefgh"}).encode()
    n = {}
    for mode in (walk.WALK_RUNS | walk.BYTE_RUNS, walk.WALK_RUNS | walk.BYTE_RUNS | walk.SPLITS):
        index = Index(schema, llama3_vocab, close_objects=False)
        index._masker._special_mode = mode
        s, masks = index.initial_state, []
        for i in range(len(doc) + 1):
            s = index._auto.walk_bytes(index.initial_state, doc[:i])
            masks.append(index.mask(s).copy())
        n[mode] = (index._auto.n_states, masks)
    (before, m0), (after, m1) = n.values()
    assert all(np.array_equal(x, y) for x, y in zip(m0, m1))
    assert after < 0.85 * before, (before, after)  # (844 -> 657 states when written)
