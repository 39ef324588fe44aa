"""Counted classes at a mask walk's root (``Masker._class_mask``): a state ``C{lo,hi} rest`` whose
rest starts with no byte of the byte class ``C`` (``states.class_run``: a ``pattern``'s
``[0-9A-Za-z]{8}-``, a hex digest, a date's digits) takes its tokens all of ``C`` from cumulative
bitsets by length and walks from ``rest`` only below the tries' edges that leave ``C`` after
``lo .. hi`` bytes (``trie.class_tables``, ``_kernels.walk.class_mask``), instead of visiting
every node the class spells (~1-2 ms a position of an alphanumeric class on Llama 3). A string
under a length bound (an ``AND`` first: every character moves its counter) is read as a *chain*:
its class the bytes it takes to one state (``walk.root_class``), the states after each length of
the class followed while the class keeps together, each exit edge walked from its depth's state.

Checked: the tables against a search of the tries; the masks at every byte of documents with
such strings, at and around their bounds, against the same index walking such states node by
node (``_class_roots = False``) and against the reference walk (no shortcut at all), on the three
shipped vocabularies; a class holding bytes only special tokens hold (a grammar's ``["a]``); the
fallback when the exits do not fit the walk's stack.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Index, masks
from dotjson._kernels import walk
from dotjson.jsonschema.jsonstr import PLAIN_CLASS
from dotjson.trie import class_tables

from naive import answers_of, assert_same_masks

ALNUM = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _paths(trie):
    """Every node of ``trie`` with the bytes from the root to it."""
    out, stack = [], [(0, b"")]
    while stack:
        y, p = stack.pop()
        out.append((y, p))
        for e in range(trie.child_ptr[y], trie.child_ptr[y + 1]):
            stack.append((int(trie.child_node[e]), p + bytes([int(trie.child_byte[e])])))
    return out


@pytest.mark.parametrize("vocab_name", ["tiny_bpe_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("chars", [ALNUM, b"0123456789abcdef", b'a"', b"ab", b"\x00a"])
@pytest.mark.parametrize("whole", [False, True], ids=["node by node", "subtrees whole"])
def test_class_tables_are_a_search_of_the_tries(request, vocab_name, chars, whole):
    """The tables against a search of every node; with the plain trie's bytes below each node
    and characters per token (what the vocabulary hands it), a subtree all of the class is
    taken whole: the same tables."""
    vocab = request.getfixturevalue(vocab_name)
    tries = vocab.tries_for(PLAIN_CLASS)
    cmask = np.zeros(256, dtype=bool)
    cmask[list(chars)] = True
    extra = {}
    if whole:
        tables = vocab._walk_tables(PLAIN_CLASS)
        extra = {"plain_below": tables[7], "plain_tchars": tables[6]}
    len_row, len_bits, exits, n_tokens, deepest = class_tables(tries.special, tries.plain,
                                                               tries.n_words, cmask, **extra)
    want_tokens: dict[int, int] = {}  # token -> length, tokens all of the class
    want_deepest = 0
    for k, trie in enumerate((tries.special, tries.plain)):
        want_exits = set()
        for y, p in _paths(trie):
            if not all(cmask[b] for b in p):
                continue
            want_deepest = max(want_deepest, len(p))
            for i in range(trie.tok_ptr[y], trie.tok_ptr[y + 1]):
                if p:
                    want_tokens[int(trie.tok_ids[i])] = len(p)
            for e in range(trie.child_ptr[y], trie.child_ptr[y + 1]):
                b = int(trie.child_byte[e])
                if not cmask[b]:
                    want_exits.add((b, len(p), int(trie.child_node[e])))
        ptr, depth, child = exits[k]
        got = set()
        for b in range(256):
            ds = depth[ptr[b]:ptr[b + 1]]
            assert np.all(np.diff(ds) >= 0)  # sorted by depth within a byte
            got |= {(b, int(d), int(c)) for d, c in zip(ds, child[ptr[b]:ptr[b + 1]])}
        assert got == want_exits
    assert n_tokens == len(want_tokens) and deepest == want_deepest
    top = len_row.shape[0] - 1
    for k in range(0, top + 3):
        row = len_bits[len_row[min(k, top)]]
        ids = set(np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")).tolist())
        assert ids == {t for t, n in want_tokens.items() if n <= k}, k
    if whole and chars == ALNUM:  # (the shortcut is exercised: subtrees all of the class exist)
        below = extra["plain_below"]
        cw = [0, 0]
        for b in chars:
            cw[b >> 6] |= 1 << (b & 63)
        pure = [y for y, p in _paths(tries.plain) if p and all(cmask[b] for b in p)
                and int(below[2 * y]) & ~cw[0] == 0 and int(below[2 * y + 1]) & ~cw[1] == 0
                and tries.plain.tok_ptr[tries.plain.subtree_end[y]] > tries.plain.tok_ptr[y]]
        assert len(pure) > 100


@pytest.fixture
def every_class(monkeypatch):
    """Every counted class at a root takes the tables' way, however few its tokens (the masker
    walks the smaller ones by default: ``masks.CLASS_ROOT_MIN_TOKENS``)."""
    monkeypatch.setattr(masks, "CLASS_ROOT_MIN_TOKENS", 0)


_CASES = [  # (schema, documents): strings whose states count a byte class, at and around bounds
    ({"type": "string", "pattern": "^[0-9a-zA-Z]{8}-[0-9a-zA-Z]{4}-[0-9a-zA-Z]{12}$"},
     ["ab12CD34-1a2b-abcdef123456", "ABCDEFGH-zzzz-000000000000"]),
    ({"type": "string", "pattern": "^[0-9a-f]{2,40}$"}, ["deadbeef", "0" * 40]),
    ({"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"}, ["2024-01"]),
    ({"type": "string", "pattern": "^[a-z]{3,}[0-9]$"}, ["abcdefgh1", "abc2"]),  # unbounded
    ({"type": "string", "pattern": "^[a-z]{0,5}[a-c]$"}, ["abca", "a"]),  # rest starts with class bytes: no shortcut
    # chains: a pattern's class under a length bound (the generation bounds' 128 characters, a
    # maxLength), every character a new count
    ({"type": "string", "pattern": "^[a-zA-Z0-9_-]+$"}, ["release_notes-2024", "x" * 128]),
    ({"type": "string", "pattern": "^[a-z]+$", "maxLength": 10}, ["abcdefghij", "ab"]),
    ({"type": "string", "pattern": "^[A-Za-z]+( [A-Za-z]+)*$", "maxLength": 40}, ["Hello big World"]),
    ({"type": "string", "pattern": "^[a-z]{2}[a-z0-9]*$", "minLength": 5, "maxLength": 12}, ["ab1cd2e"]),
    ({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[A-Z]{3}[0-9]{3}$"},
                                       "n": {"type": "integer"}}, "required": ["id", "n"]},
     {"id": "ABC123", "n": 12345}),
]


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("schema,doc", [(s, d) for s, docs in _CASES for d in (docs if isinstance(docs, list) else [docs])])
def test_class_root_masks_equal_the_node_by_node_walk(request, every_class, vocab_name, schema, doc):
    vocab = request.getfixturevalue(vocab_name)
    data = json.dumps(doc, separators=(",", ":")).encode()
    for bounds in ("schema", "generation"):
        fast = Index(schema, vocab, bounds=bounds)
        fast._masker._heads = False  # (every state walked from its own root: heads are shared)
        slow = Index(schema, vocab, bounds=bounds)
        slow._masker._class_roots = False
        slow._masker._heads = False
        assert_same_masks(fast, slow, data)
    ref = Index(schema, vocab)
    ref._masker._plain_runs = False
    ref._masker._heads = False
    ref._masker._special_mode = walk.WALK_ALL
    assert_same_masks(Index(schema, vocab), ref, data)


def test_the_shortcut_is_taken_and_its_tables_kept(llama3_vocab):
    """Inside ``^[0-9A-Za-z]{8}-…`` the state at the value's start is a counted class: its
    mask comes from the class's tables (kept with the vocabulary), not from a walk of the
    class's nodes; digits (few tokens on Llama 3) are walked."""
    schema = {"type": "string", "pattern": "^[0-9A-Za-z]{8}-[0-9A-Za-z]{4}$"}
    index = Index(schema, llama3_vocab)
    m = index._masker
    s = index._auto.walk_bytes(index.initial_state, b'"ab')
    with answers_of(walk, "class_mask") as answers, index._auto.lock:
        got = m._class_mask(index._auto.key_state(s, m._limit))
    assert got is not None and answers[-1] == walk.DONE
    key = np.zeros(4, dtype=np.uint64)
    for b in ALNUM:
        key[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    assert any(k[1] == key.tobytes() for k in llama3_vocab._classes)
    ref = Index(schema, llama3_vocab)
    ref._masker._class_roots = False
    ref._masker._heads = False
    assert np.array_equal(got, ref.mask(ref._auto.walk_bytes(ref.initial_state, b'"ab')))
    digits = Index({"type": "string", "pattern": "^[0-9]{6}-[a-z]$"}, llama3_vocab)
    s = digits._auto.walk_bytes(digits.initial_state, b'"1')
    with digits._auto.lock:
        assert digits._masker._class_mask(digits._auto.key_state(s, digits._masker._limit)) is None


def test_a_class_of_bytes_only_special_tokens_hold(every_class, smollm2_vocab):
    """A grammar's class may hold a byte no plain token holds (a quote): tokens all of the
    class are then special tokens, found in the special trie's search."""
    fast = Index.from_regex('[a"]{2,6}b[a"]{0,3}', smollm2_vocab)
    slow = Index.from_regex('[a"]{2,6}b[a"]{0,3}', smollm2_vocab)
    slow._masker._class_roots = False
    for text in ('a"a"ab"', '""b', 'aaaaaab"a"'):
        assert_same_masks(fast, slow, text.encode())


def test_exits_that_do_not_fit_the_stack_fall_back_to_the_walk(every_class, llama3_vocab):
    schema = {"type": "string", "pattern": "^[a-z]{0,6}[ ,.-][a-z ]{1,4}$"}
    fast = Index(schema, llama3_vocab)
    fast._masker._heads = False
    fast._masker._class_reserve = 1 << 40  # (no room at all: every class root walked whole)
    slow = Index(schema, llama3_vocab)
    slow._masker._class_roots = False
    slow._masker._heads = False
    assert_same_masks(fast, slow, b'"abc, de"')


def test_an_exit_deeper_than_every_token_of_the_class(every_class):
    """The chain is followed as deep as the trie's paths of the class go, not only as its
    tokens: here no token is ``abc`` but ``abc-`` is one (an exit edge three bytes deep while
    the longest token all of the class is one byte), and a string under ``maxLength`` (a chain)
    must allow it."""
    from dotjson import Vocabulary

    words = ['"', "a", "b", "c", "-", "abc-", 'x"', "ab-c", "abcd-e"]
    vocab = Vocabulary.from_tuples(words + ["<eos>"], list(range(len(words) + 1)), len(words))
    schema = {"type": "string", "pattern": "^[a-z]+(-[a-z]+)?$", "maxLength": 12}
    fast = Index(schema, vocab)
    fast._masker._heads = False
    slow = Index(schema, vocab)
    slow._masker._class_roots = False
    slow._masker._heads = False
    s = fast._auto.walk_bytes(fast.initial_state, b'"')
    allowed = set(np.flatnonzero(np.unpackbits(fast.mask(s).view(np.uint8), bitorder="little")).tolist())
    assert {words.index("abc-"), words.index("ab-c"), words.index("abcd-e")} <= allowed
    for text in ('"abc-c"', '"ab-c"', '"abcd-e"', '"abcab"'):
        assert_same_masks(fast, slow, text.encode())
