"""The plain walk's class shortcuts: below a byte that takes a state back to itself, a plain-trie
node whose every byte below does so too takes its whole subtree (``_kernels.walk.walk_trie``,
``trie.plain_below_bytes``, ``_kernels.subtrees._ascii_class``): a ``pattern`` such as
``^[a-z0-9-]+$``, an ``email``'s local part, a ``hostname``'s labels; and below a state that
counts a class of bytes (``_kernels.subtrees._class_chain``: ``[a-z]{2,30}``, a hostname's label
under its 63 characters, an ``email``'s domain), a node whose bytes below are all of the class
takes its subtree whole, or its tokens by their lengths.

Checked: the bytes below every node against a search of the trie, a counted class's chain
against its pattern, and the masks at every byte of documents with such strings (up to and at
their bounds) against the same index with the plain shortcuts off (the plain trie walked node
by node), on the three shipped vocabularies.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Index
from dotjson.automaton import kernels as K
from dotjson.jsonschema.jsonstr import PLAIN_CLASS
from dotjson.trie import plain_below_bytes

from naive import assert_same_masks


def _brute_below(trie, y: int) -> set[int]:
    out, stack = set(), [y]
    while stack:
        z = stack.pop()
        for e in range(trie.child_ptr[z], trie.child_ptr[z + 1]):
            out.add(int(trie.child_byte[e]))
            stack.append(int(trie.child_node[e]))
    return out


@pytest.mark.parametrize("vocab_name", ["tiny_bpe_vocab", "smollm2_vocab"])
def test_plain_below_bytes_are_the_bytes_below_each_node(request, vocab_name):
    trie = request.getfixturevalue(vocab_name).tries_for(PLAIN_CLASS).plain
    below = plain_below_bytes(trie)
    assert below.shape == (2 * trie.n_nodes,)
    rng = np.random.default_rng(7)
    nodes = range(trie.n_nodes) if trie.n_nodes < 3000 else rng.integers(0, trie.n_nodes, 2000).tolist()
    for y in nodes:
        want = _brute_below(trie, int(y))
        got = {b for b in range(1, 128) if int(below[2 * y + (b >> 6)]) >> (b & 63) & 1}
        assert got == {b for b in want if 0 < b < 128}, y
        assert int(below[2 * y]) & 1 == int(any(b >= 128 or b == 0 for b in want)), y


_CASES = [
    ({"type": "object", "properties": {"slug": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                                       "n": {"type": "integer"}}},
     {"slug": "release-notes-2024-final", "n": 3}),
    ({"type": "object", "properties": {"mail": {"type": "string", "format": "email"},
                                       "host": {"type": "string", "format": "hostname"}}},
     {"mail": "alice.smith@mail.example.org", "host": "api.internal.example.net"}),
    ({"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}},
     ["snake_case_name", "CamelCase2", "_x"]),
]


_COUNTED = [  # strings whose states count a class of bytes, up to and at their bounds
    ({"type": "string", "format": "email"}, ["john.doe@example.com", "a@" + "b" * 62 + "c.io"]),
    ({"type": "string", "format": "hostname"}, ["api.example-site.com", "a" * 63 + ".b"]),
    ({"type": "string", "pattern": "^[a-z]{2,30}$"}, ["ab", "abcdefghijklmnopqrstuvwxyzabcd"]),
    ({"type": "string", "pattern": "^[a-z0-9-]{1,40}$"}, ["my-label-9", "-" * 40]),
    # at the third letter every letter but x kills: the chain stops there, it does not go on
    ({"type": "string", "pattern": "^[a-z]{3}(x[a-z]{0,8})?$"}, ["abc", "abcxyz"]),
    ({"type": "string", "format": "date-time"}, ["2024-01-31T23:59:60.123456Z"]),
]


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("bounds", ["schema", "generation"])
@pytest.mark.parametrize("schema,doc", _CASES + [(s, d) for s, docs in _COUNTED for d in docs])
def test_class_shortcut_masks_equal_the_node_by_node_walk(request, vocab_name, bounds, schema, doc):
    vocab = request.getfixturevalue(vocab_name)
    fast = Index(schema, vocab, bounds=bounds)
    slow = Index(schema, vocab, bounds=bounds)
    slow._masker._plain_runs = False
    slow._masker._heads = False
    assert_same_masks(fast, slow, json.dumps(doc, separators=(",", ":")).encode())


def test_the_shortcut_reads_a_pattern_states_class(llama3_vocab):
    """Inside ``^[c-x2-8~]+$`` (no length bound) the state after a character keeps every byte
    of the class: the walk reads its class (memoized per term) and takes subtrees of those
    bytes whole; the mask is the node-by-node walk's. (A class no other test uses: a head's
    bits are shared by every index of the process, and computed once.)"""
    schema = {"type": "string", "pattern": "^[c-x2-8~]+$"}
    fast = Index(schema, llama3_vocab, bounds="schema")
    # (at the root such a state is a counted class, read off the class's tables: the shortcut
    # met below a root is what this test reads, so the state is walked here)
    fast._masker._class_roots = False
    slow = Index(schema, llama3_vocab, bounds="schema")
    slow._masker._plain_runs = False
    s = fast._auto.walk_bytes(fast.initial_state, b'"cd')
    assert np.array_equal(fast.mask(s), slow.mask(slow._auto.walk_bytes(slow.initial_state, b'"cd')))
    auto = fast._auto
    # the classes the walk read (memo entries of tag _T_ACLS: a state's term -> a byte set)
    mk, mv = auto._a["mk"], auto._a["mv"]
    read = mv[(mk >= 0) & ((mk >> 58) == (K._T_ACLS >> 58))]
    classes = set()
    for cl in read.tolist():
        if cl != K.EMPTY:
            words = auto.store[K.S_BW][auto.store[K.S_TI][cl, 1]]
            classes.add(frozenset(b for b in range(128) if int(words[b >> 6]) >> (b & 63) & 1))
    assert frozenset(b"cdefghijklmnopqrstuvwx2345678~") in classes



def test_a_counted_class_chain(llama3_vocab):
    """Inside ``^[a-z]{2,6}$`` after ``ab`` every letter takes the state to one state, four more
    letters leave it alive and a fifth kills it; inside a hostname's label the letters and digits
    are the class (a hyphen goes elsewhere: a label does not end with one), and the label's 63
    characters bound it."""
    from dotjson._kernels import subtrees

    def chain(schema, prefix):
        index = Index(schema, llama3_vocab, bounds="schema")
        a = index._auto
        s = a.walk_bytes(index.initial_state, prefix)
        with a.lock:
            while True:
                r, cl = subtrees._class_chain(a.store, s, 128)
                if r >= 0:
                    break
                a.handle_exit()
            words = a.store[K.S_BW][a.store[K.S_TI][cl, 1]]
        return r & 255, (r >> 8) & 255, {b for b in range(128) if int(words[b >> 6]) >> (b & 63) & 1}

    assert chain({"type": "string", "pattern": "^[a-z]{2,6}$"}, b'"ab') == (4, 5, set(b"abcdefghijklmnopqrstuvwxyz"))
    alive, dead, cls = chain({"type": "string", "format": "hostname"}, b'"abc')
    assert cls == set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    assert (alive, dead) == (60, 61)  # (3 + 60 = 63 characters; a 64th kills)


def _lt_vocab():
    """A small vocabulary with tokens holding U+2028 and U+2029 raw (none of the shipped
    vocabularies has one): they are special tokens, walked with the quote's."""
    from dotjson import Vocabulary

    words = ["{", "}", '"', '":', ",", ":", "a", "b", "ab", "x", "1", "12", "\\", "\\n", "\\u", "2028",
             "u", "n", " ", "\u2028", "a\u2028", "\u2029b", "é", "aé", "\u2027", "\u202a", '"}', '",', '."',
             ".", "https", "://", "example", ".com"]
    words = list(dict.fromkeys(words))
    return Vocabulary.from_tuples(words + ["<eos>"], list(range(len(words) + 1)), len(words)), words


def test_line_separators_are_not_plain_and_a_dot_star_keeps_every_plain_token():
    """U+2028 and U+2029 are left out of the plain class (a regex's ``.`` refuses them, every
    other plain character it takes): inside ``^https://.*$`` and a ``^.*$`` key the state keeps
    every plain token (:func:`~dotjson.automaton.states.plain_inv`: its mask is the plain tokens'
    bits and a walk of the special ones, not the whole vocabulary walked), and every mask, with
    a token holding either character, is the node-by-node walk's."""
    from dotjson._kernels import walk

    vocab, words = _lt_vocab()
    assert 0x2028 not in PLAIN_CLASS.ranges and not any(lo <= 0x2028 <= hi or lo <= 0x2029 <= hi
                                                        for lo, hi in PLAIN_CLASS.ranges)
    cases = [
        ({"type": "string", "pattern": "^https://.*$"}, ['"https://example.com"', '"https://a\u2028"'],
         b'"https://ab'),
        ({"type": "object", "patternProperties": {"^.*$": {"type": "integer"}}},
         ['{"ab":1,"x\u2028":"b"}', '{"a\\u2028":"x"}'], b'{"ab'),
        ({"type": "string"}, ['"a\u2028b\u2029"'], b'"ab'),
    ]
    for schema, docs, inside in cases:
        fast = Index(schema, vocab, close_objects=False, spellings="any")
        slow = Index(schema, vocab, close_objects=False, spellings="any")
        slow._masker._plain_runs = False
        slow._masker._heads = False
        slow._masker._special_mode = walk.WALK_ALL
        for doc in docs:
            assert_same_masks(fast, slow, doc.encode())
        a = fast._auto
        s = a.walk_bytes(fast.initial_state, inside)
        pseq, plen = PLAIN_CLASS.seqs
        with a.lock:
            assert a._run(K.plain_inv, a.key_state(s, fast._masker._limit), pseq, plen) == 1, schema
    # a raw line separator: taken by a plain string, refused by `.` (and kept out of the keys a
    # `^.*$` pattern speaks of: such a member is an additional one, any value)
    dot = Index({"type": "string", "pattern": "^a.*$"}, vocab, bounds="schema")
    plain = Index({"type": "string"}, vocab, bounds="schema")
    for index, ok in ((dot, False), (plain, True)):
        s = index._auto.walk_bytes(index.initial_state, b'"a')
        assert (index._auto.walk_bytes(s, "\u2028".encode()) >= 0) == ok
        for w in ("\u2028", "\u2029b"):
            assert bool(np.unpackbits(index.mask(s).view(np.uint8), bitorder="little")[words.index(w)]) == ok
    pp = Index({"type": "object", "patternProperties": {"^.*$": {"type": "integer"}}}, vocab,
               close_objects=False, spellings="any")
    assert pp.accepts('{"x\u2028":"b"}') and not pp.accepts('{"x":"b"}') and pp.accepts('{"x":1}')
