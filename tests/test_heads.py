"""Heads: a state ``A q c`` (``q`` a delimiter no plain token holds, a string's closing quote)
takes its mask from the head ``A q`` (the prefixes of its words and the special-trie nodes where
they end: computed once per process and vocabulary) and a walk of those nodes' subtrees from
``c`` (``dotjson.automaton.heads``, ``dotjson.masks.Masker._head_mask``).

Checked against the same index with heads off (one walk of the whole state) at every byte of
documents with formats, bounds, patterns and nesting, on the three shipped vocabularies; the
sharing across indexes by the structure of the head; the interner's ids (equal structure, equal
id; a schema's own rules, never shared).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Index
from dotjson.masks import Masker
from dotjson.automaton import heads as H
from naive import assert_same_masks

_DOCS = [
    ({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
                                       "n": {"type": "integer"}}, "required": ["when"]},
     {"when": "2023-04-15T19:30:00.25+02:00", "n": 3}),
    ({"type": "array", "items": {"type": "string", "format": "uri"}, "maxItems": 3},
     ["https://www.example.com/a/b?c=d#x", "urn:isbn:0451450523"]),
    ({"type": "object", "properties": {"e": {"type": "string", "format": "email"},
                                       "u": {"type": "string", "format": "uuid"},
                                       "ip": {"type": "string", "format": "ipv4"}}},
     {"e": "jane.doe+x@example.co.uk", "u": "123e4567-e89b-12d3-a456-426614174000",
      "ip": "192.168.10.1"}),
    ({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3,5}$"},
                                       "tag": {"enum": ["alpha", "beta\"q", "gamma"]},
                                       "s": {"type": "string", "minLength": 2, "maxLength": 12}}},
     {"code": "AB-1234", "tag": "beta\"q", "s": "héllo \"wörld\""}),
    ({"type": "array", "items": {"type": "array", "items": {"type": "string", "format": "date"}}},
     [["2024-02-29", "1999-12-31"], [], ["2000-01-01"]]),
]


def _check_every_byte(vocab, schema, doc):
    fast = Index(schema, vocab)
    slow = Index(schema, vocab)
    slow._masker._heads = False
    assert_same_masks(fast, slow, json.dumps(doc, ensure_ascii=False).encode())
    return fast


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("k", range(len(_DOCS)))
def test_head_masks_equal_the_whole_walk(request, vocab_name, k):
    _check_every_byte(request.getfixturevalue(vocab_name), *_DOCS[k])


def test_heads_are_shared_across_indexes(llama3_vocab):
    """A second schema holding the same format computes none of its heads again: its fresh
    masks inside the string only walk the exits from what follows it (and equal the whole
    walk's)."""
    prop = {"type": "string", "format": "date-time"}
    first = {"type": "object", "properties": {"when": prop, "a": {"type": "integer"}}}
    second = {"type": "object", "properties": {"b": {"type": "boolean"}, "at": prop},
              "required": ["at"]}
    _check_every_byte(llama3_vocab, first, {"when": "2023-04-15T19:30:00Z"})
    misses = []
    orig = Masker._compute_mask

    def counting(self, state):
        misses.append(state)
        return orig(self, state)

    Masker._compute_mask = counting
    try:
        index = Index(second, llama3_vocab)
        data = b'{"at": "2023-04-15T19:30:00Z'
        s0 = index._auto.walk_bytes(index.initial_state, b'{"at": "')
        n0 = len(misses)
        for i in range(len(b'{"at": "'), len(data) + 1):
            index.mask(index._auto.walk_bytes(index.initial_state, data[:i]))
    finally:
        Masker._compute_mask = orig
    assert s0 >= 0
    assert len(misses) == n0  # every position inside the string: its head was known
    _check_every_byte(llama3_vocab, second, {"b": True, "at": "2023-04-15T19:30:00Z"})


def test_interned_ids_follow_structure(llama3_vocab):
    """Equal structures get one id in every automaton; a reference to a schema's own rule (its
    meaning is that schema's) gets none."""
    def head_of(schema, prefix):
        index = Index(schema, llama3_vocab)
        s = index._auto.walk_bytes(index.initial_state, prefix)
        from dotjson._kernels import walk
        n = index._auto._run(walk.head_pairs, s, index._plain.non_plain_words, index._masker._head_pairs,
                             len(index._masker._rule_gid))
        assert n == 1
        return index._masker._head_gid_of(int(index._masker._head_pairs[0]))

    date = {"type": "string", "format": "date"}
    g1 = head_of({"type": "object", "properties": {"d": date}}, b'{"d": "2024-0')
    g2 = head_of({"type": "array", "items": date}, b'["2024-0')
    g3 = head_of({"type": "array", "items": date}, b'["2023-0')  # no 29 February: another head
    assert g1 == g2 >= 0
    assert g3 >= 0 and g3 != g1
    assert head_of({"type": "string", "format": "time"}, b'"12:') not in (g1, g3)


def test_a_head_of_the_index_s_own_is_refused_before_any_state_is_made(llama3_vocab):
    """A state split into heads of which one names a key set or the schema's own rule (an open
    object's key position after a member) gets ``NO_SHARE`` from the kernel, and no state is made
    for a continuation: the masker would compute no such head (``UNSHARED_HEADS`` off) and walks
    the state whole. The masks are the whole walk's at every byte of a document of such objects,
    with a format's head inside them still shared."""
    from dotjson._kernels import walk

    schema = {"type": "object", "properties": {
        "alpha": {"type": "integer"}, "when": {"type": "string", "format": "date"},
        "inner": {"type": "object", "properties": {"x": {"type": "boolean"}}}}}
    index = Index(schema, llama3_vocab, close_objects=False)
    a, m = index._auto, index._masker
    s = a.walk_bytes(index.initial_state, b'{"alpha":1,"')
    n0 = a.n_states
    n = a._run(walk.head_pairs, s, index._plain.non_plain_words, m._head_pairs, len(m._rule_gid))
    assert n == walk.NO_SHARE and a.n_states == n0
    doc = {"alpha": 1, "zz": [1, "x"], "when": "2024-02-29", "inner": {"x": True, "y": {}}}
    fast = Index(schema, llama3_vocab, close_objects=False)
    slow = Index(schema, llama3_vocab, close_objects=False)
    slow._masker._heads = False
    assert_same_masks(fast, slow, json.dumps(doc).encode())


def _byte_terms(n_terms: int, n_bytes: int):
    """Term arrays whose terms 2 .. n_bytes - 1 are distinct byte sets (the rest left to the
    caller), ∅ and ε first."""
    ti = np.zeros((n_terms, 4), dtype=np.int32)
    bw = np.zeros((n_bytes, 4), dtype=np.uint64)
    ti[0, 0], ti[1, 0] = H.K_EMPTY, H.K_EPS
    for i in range(2, n_bytes):
        ti[i] = (H.K_BYTES, i, 0, 0)
        bw[i] = (i, i * 7, 0, 1)
    return ti, bw, np.zeros(8, dtype=np.int32)


def test_interner_grows_and_rehashes():
    """Past its first tables (thousands of distinct structures), ids stay exact: every id
    interned before growth is found again after it."""
    # terms 2..2999: byte sets; 3000..5999: SEQ of two of them
    ti, bw, pool = _byte_terms(6000, 3000)
    for i in range(3000, 6000):
        a = 2 + (i - 3000) % 2998
        ti[i] = (H.K_SEQ, a, 2 + (a - 1) % 2998, 0)
    small = H.Interner(cap=16)
    gid_of = np.full(6000, H.UNKNOWN_GID, dtype=np.int64)
    rules = np.full(0, -1, dtype=np.int64)
    got = [small.gid(ti, bw, pool, gid_of, rules, t, 0)[1] for t in range(6000)]
    again = np.full(6000, H.UNKNOWN_GID, dtype=np.int64)
    assert [small.gid(ti, bw, pool, again, rules, t, 0)[1] for t in range(6000)] == got
    assert len(set(got[2:3000])) == 2998
    # a SEQ repeats (i and i + 2998 have the same children): the same id
    assert got[3000] == got[3000 + 2998] and got[3001] != got[3000]


def test_interner_starts_a_new_generation_when_full():
    """Past its budget of ids the interner empties its tables: ids of the old generation are
    never compared with the new ones (a caller's memo is emptied, and cache keys carry the
    generation)."""
    ti, bw, pool = _byte_terms(40, 40)
    small = H.Interner(cap=16, max_ids=20)
    rules = np.full(0, -1, dtype=np.int64)
    memo = np.full(40, H.UNKNOWN_GID, dtype=np.int64)
    gen = 0
    seen = []
    for t in range(2, 30):  # 18 ids fill generation 0 (ids 2..19), 10 go to generation 1
        gen, g = small.gid(ti, bw, pool, memo, rules, t, gen)
        seen.append((gen, g))
    assert small.generation == 1 and seen[0] == (0, 2) and seen[18] == (1, 2)
    assert len({g for _, g in seen[18:]}) == 10
    # term 2's old id (2, generation 0) is forgotten: in generation 1 it gets its own
    gen, g = small.gid(ti, bw, pool, memo, rules, 2, gen)
    assert gen == 1 and g == 12
    assert small.gid(ti, bw, pool, memo, rules, 2, gen) == (1, 12)


def test_heads_inside_a_long_bounded_string_are_not_kept(llama3_vocab):
    """Every position of a long bounded string is a head of its own (``R{0,k} "``; here under an
    alternation of two object variants, so the heads path serves it): each is rebuilt from the
    run's one shared head, not kept (a 16 KiB mask per character), and this index's heads stay
    within its mask budget."""
    text = {"type": "string", "maxLength": 3000}
    schema = {"anyOf": [
        {"type": "object", "properties": {"a": text}, "required": ["a"],
         "additionalProperties": False},
        {"type": "object", "properties": {"a": {**text, "minLength": 2}, "b": {"type": "integer"}},
         "required": ["a", "b"], "additionalProperties": False}]}
    index = Index(schema, llama3_vocab, max_cache_bytes=1 << 22)
    ref = Index(schema, llama3_vocab)
    ref._masker._heads = False
    s = index._auto.walk_bytes(index.initial_state, b'{"a": "')
    r = ref._auto.walk_bytes(ref.initial_state, b'{"a": "')
    with index._lock:
        assert index._masker._head_mask(s) is not None
    for i in range(300):
        index.mask(s)
        if i % 50 == 0:
            assert np.array_equal(index.mask(s), ref.mask(r)), i
        s = index._auto.walk_bytes(s, b"x")
        r = ref._auto.walk_bytes(r, b"x")
    assert len(index._masker._local_heads) <= 4
    assert index._masker._local_heads_bytes <= 1 << 22


def _subset():
    from pathlib import Path

    path = Path(__file__).parent / "data" / "maskbench" / "subset.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
def test_head_masks_equal_the_whole_walk_on_random_walks(request, vocab_name):
    """Issue 24's check: at every state of seeded random walks (tokens drawn from each mask) over
    the MaskBench subset, the masks with heads (shared across all these indexes in one process)
    equal the whole walk's; both configurations of the objects."""
    from dotjson.errors import DotjsonError

    vocab = request.getfixturevalue(vocab_name)
    rng = np.random.default_rng(24)
    checked = 0
    for row in _subset():
        for close in (True, False):
            try:
                fast = Index(row["schema"], vocab, close_objects=close)
                slow = Index(row["schema"], vocab, close_objects=close)
            except DotjsonError:
                continue
            slow._masker._heads = False
            s, u = fast.initial_state, slow.initial_state
            for _ in range(40):
                m = fast.mask(s)
                assert np.array_equal(m, slow.mask(u)), (row["id"], close)
                checked += 1
                ids = np.flatnonzero(np.unpackbits(m.view(np.uint8), bitorder="little"))
                ids = [int(t) for t in ids if int(t) not in vocab.eos_token_ids]
                if not ids:
                    break
                t = ids[int(rng.integers(len(ids)))]
                s, u = fast.next_state(s, t), slow.next_state(u, t)
    assert checked > 1000


def test_a_base_images_terms_are_interned_once(llama3_vocab):
    """The ids of a base image's terms (the JSON base rules, the formats compiled with them) are
    computed once per process and image, and copied by every index started from it."""
    prop = {"type": "string", "format": "date-time"}
    first = Index({"type": "object", "properties": {"t": prop}}, llama3_vocab)
    second = Index({"type": "array", "items": prop}, llama3_vocab)
    for index, text in ((first, b'{"t": "2020-0'), (second, b'["2021-1')):
        index.mask(index._auto.walk_bytes(index.initial_state, text))
    image = first._auto.image
    assert image is not None and second._auto.image is image
    known = image.facts[("head ids", _heads_generation())]
    assert known.shape[0] == image.n_terms and (known != H.UNKNOWN_GID).all()
    assert np.array_equal(second._masker._head_gid[: image.n_terms], known)


def _heads_generation() -> int:
    return H.interner().generation
