"""Index: exact masks (against a slow reference), teacher forcing with real tokenizers,
serialization, bounded resources, sharing across threads."""

from __future__ import annotations

import json
import random
import threading
import tracemalloc

import numpy as np
import pytest
from naive import allowed_tokens

from dotjson import Guide, Index
from dotjson.errors import IndexFormatError, LimitExceededError, SchemaError

SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 8},
            "age": {"type": "integer", "minimum": 0, "maximum": 130},
            "tags": {"type": "array", "items": {"enum": ["a", "bc"]}, "maxItems": 3},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
    "tree": {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                "required": ["v"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    },
    "any": {},
    "pattern": {"type": "string", "pattern": "^[a-c]+x$", "minLength": 2, "maxLength": 5},
    "open": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
}


def _bits(mask: np.ndarray, n: int) -> set[int]:
    return {t for t in range(n) if (int(mask[t >> 5]) >> (t & 31)) & 1}



def _prefixes(doc: str) -> list[bytes]:
    data = doc.encode()
    cuts = sorted({0, len(data)} | {i for i in range(len(data) + 1) if i % 3 == 0})
    out = []
    for c in cuts:
        try:
            data[:c].decode()
        except UnicodeDecodeError:
            pass
        out.append(data[:c])
    return out


DOCS = {
    "person": ['{"name": "ab\\u0063", "age": 30, "tags": ["a", "bc"]}', '{"name":"","age":0}'],
    "tree": ['{"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}, {"v": -4}]}'],
    "any": ['{"x": [1, 2.5, "é", {"y": null}], "z": true}'],
    "pattern": ['"abx"', '"cx"'],
    "open": ['{"id": 7, "extra": {"k": [1]}, "more": "s"}'],
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_masks_equal_slow_reference(name, tiny_bpe_vocab):
    vocab = tiny_bpe_vocab
    # "open" is the spec's open object; the documents spell characters with \u escapes
    index = Index(SCHEMAS[name], vocab, close_objects=False, spellings="any")
    assert all(index.accepts(doc) for doc in DOCS[name])
    _assert_masks_equal_reference(index, vocab, name)


def _teacher_force(index: Index, vocab, tokenizer, doc: str) -> int:
    ids = tokenizer.encode(doc, add_special_tokens=False)
    ids = list(getattr(ids, "ids", ids))  # tokenizers.Tokenizer returns an Encoding
    assert b"".join(vocab.token_bytes(t) for t in ids) == doc.encode()
    guide = Guide(index, batch_size=1)
    ts = guide.get_start_tokensets()
    for t in ids:
        assert ts.contains(t)[0], (doc, t, vocab.token_bytes(t))
        ts = guide.get_next_tokensets([t])
    eos = vocab.eos_token_ids[0]
    assert ts.contains(eos)[0], doc
    ts = guide.get_next_tokensets([eos])
    assert guide.is_finished()[0]
    assert ts.num_allowed()[0] == len(set(vocab.eos_token_ids))
    return len(ids)


@pytest.mark.parametrize("vocab_name", ["smollm2", "llama3", "qwen"])
def test_teacher_forcing_real_tokenizers(vocab_name, request):
    vocab = request.getfixturevalue(f"{vocab_name}_vocab")
    tok = request.getfixturevalue(f"{vocab_name}_tokenizer")
    for name, docs in DOCS.items():
        index = Index(SCHEMAS[name], vocab, close_objects=False, spellings="any")
        for doc in docs:
            _teacher_force(index, vocab, tok, doc)
            _teacher_force(index, vocab, tok, json.dumps(json.loads(doc), indent=2))


def test_mask_bits_agree_with_reference_on_sampled_states_real_vocab(llama3_vocab, llama3_tokenizer):
    vocab = llama3_vocab
    index = Index(SCHEMAS["person"], vocab)
    rng = random.Random(0)
    doc = DOCS["person"][0]
    ids = llama3_tokenizer.encode(doc, add_special_tokens=False)
    prefix = b""
    state = index.initial_state
    sampled = rng.sample(range(vocab.max_token_id()), 3000)
    for t in ids:
        mask = index.mask(state)
        for tok in sampled:
            b = vocab.token_bytes(tok)
            expect = bool(b) and index.is_prefix(prefix + b) if tok not in vocab.eos_token_ids else index.accepts(prefix)
            assert bool((int(mask[tok >> 5]) >> (tok & 31)) & 1) == expect, (prefix, b)
        prefix += vocab.token_bytes(t)
        state = index.next_state(state, t)


def test_guide_rejects_forbidden_token_and_stays_usable(tiny_bpe_vocab):
    vocab = tiny_bpe_vocab
    index = Index({"type": "boolean"}, vocab)
    guide = Guide(index, batch_size=2)
    ts = guide.get_start_tokensets()
    allowed = [t for t in range(vocab.max_token_id()) if ts.contains(t)[0]]
    forbidden = next(t for t in range(vocab.max_token_id()) if not ts.contains(t)[0] and t not in vocab.eos_token_ids)
    before = guide.states
    from dotjson.errors import TokenNotAllowedError

    with pytest.raises(TokenNotAllowedError, match=r"token \d+ .* not allowed in row 1"):
        guide.get_next_tokensets([allowed[0], forbidden])
    assert (guide.states == before).all()
    guide.get_next_tokensets([allowed[0], allowed[0]])


def test_next_state_memoized_path_checks_as_the_first_step(tiny_bpe_vocab):
    # a step taken before is answered from the transition memo: the same answers as the first
    # time, and what was never stored (EOS, ids past the vocabulary, ids that would alias another
    # state's key, non-integers, unknown states) still takes the checked path
    vocab = tiny_bpe_vocab
    index = Index({"type": "array", "items": {"type": "boolean"}}, vocab)
    n = vocab.max_token_id()
    s0 = index.initial_state
    first = [index.next_state(s0, t) for t in range(n)]
    again = [index.next_state(s0, t) for t in range(n)]
    assert first == again and any(r >= 0 for r in first)
    s1 = next(r for r in first if r >= 0)
    for t in range(n):
        index.next_state(s1, t)
    for eos in vocab.eos_token_ids:
        assert index.next_state(s0, eos) == -2  # not a complete document
    alias = next(t for t in range(n) if index.next_state(s1, t) >= 0)
    assert index.next_state(s1 - 1, alias + 4_294_967_296) == -2
    assert index.next_state(s0, n) == -2 and index.next_state(s0, -1) == -2
    with pytest.raises(TypeError):
        index.next_state(s0, True)
    with pytest.raises(TypeError):
        index.next_state(True, first.index(s1))
    with pytest.raises(IndexError):
        index.next_state(index.n_states + 5, 0)
    assert index.next_state(np.int64(s0), np.int32(first.index(s1))) == s1


def test_from_lark_and_from_regex(tiny_bpe_vocab):
    vocab = tiny_bpe_vocab
    index = Index.from_lark('start: "[" item ("," item)* "]"\nitem: /[0-9]+/ | start', vocab)
    assert index.accepts("[1,[2,3],45]")
    assert not index.accepts("[1,]")
    rx = Index.from_regex(r"(ab|c)+\d{2}", vocab)
    assert rx.accepts("abcab12")
    assert not rx.accepts("abc1")
    assert "start" in index.grammar


def test_serialization_round_trip_is_warm(tmp_path, tiny_bpe_vocab, tiny_bpe_tokenizer):
    vocab = tiny_bpe_vocab
    index = Index(SCHEMAS["tree"], vocab)
    doc = DOCS["tree"][0]
    _teacher_force(index, vocab, tiny_bpe_tokenizer, doc)
    n_states, n_masks = index.n_states, index.n_masks
    index.serialize_to_disk(tmp_path / "idx")
    loaded = Index.deserialize_from_disk(tmp_path / "idx")
    assert loaded.n_states == n_states and loaded.n_masks == n_masks
    assert loaded.grammar == index.grammar
    # the directory's vocabulary holds the tries of the index's plain class, loaded not rebuilt
    # (their class is the one read from the file: equal to the index's, another object)
    assert list(loaded.vocabulary._tries) == [index._plain] and loaded._tries.plain_class is not index._plain
    _teacher_force(loaded, loaded.vocabulary, tiny_bpe_tokenizer, doc)
    assert loaded.n_states == n_states  # warm: nothing new to expand
    # and it keeps expanding lazily past what was saved
    _teacher_force(loaded, loaded.vocabulary, tiny_bpe_tokenizer, '{"v": 9, "kids": [{"v": 1, "kids": []}]}')


def test_corrupt_truncated_foreign_index_files(tmp_path, tiny_bpe_vocab, tiny_sp_vocab):
    index = Index({"type": "integer"}, tiny_bpe_vocab)
    index.mask(index.initial_state)
    d = tmp_path / "idx"
    index.serialize_to_disk(d)
    with pytest.raises(IndexFormatError, match="another vocabulary"):
        Index.deserialize_from_disk(d, vocabulary=tiny_sp_vocab)
    arr = (d / "arrays.npz").read_bytes()
    (d / "arrays.npz").write_bytes(arr[: len(arr) // 2])
    with pytest.raises(IndexFormatError, match="arrays.npz is truncated or corrupt"):
        Index.deserialize_from_disk(d)
    (d / "arrays.npz").write_bytes(arr)
    meta = json.loads((d / "index.json").read_text())
    meta["version"] = 999
    (d / "index.json").write_text(json.dumps(meta))
    with pytest.raises(IndexFormatError, match=r"index.json is truncated or corrupt \(checksum mismatch"):
        Index.deserialize_from_disk(d)
    # A hand-edited directory whose manifest was rewritten to match still meets the checks
    # of the contents.
    from dotjson.serialization import INDEX_FILES, VERSION, write_manifest

    write_manifest(d, INDEX_FILES)
    with pytest.raises(IndexFormatError, match="version 999"):
        Index.deserialize_from_disk(d)
    meta["version"] = VERSION
    meta["automaton"]["start_term"] = 10**9
    (d / "index.json").write_text(json.dumps(meta))
    write_manifest(d, INDEX_FILES)
    with pytest.raises(IndexFormatError, match="corrupt"):
        Index.deserialize_from_disk(d)
    (d / "index.json").write_text("{not json")
    write_manifest(d, INDEX_FILES)
    with pytest.raises(IndexFormatError, match="index.json is corrupt"):
        Index.deserialize_from_disk(d)
    with pytest.raises(IndexFormatError, match="does not exist"):
        Index.deserialize_from_disk(tmp_path / "nope")


def test_large_bounds_compile_small(tiny_bpe_vocab):
    for schema in (
        {"type": "string", "maxLength": 100000},
        {"type": "array", "items": {"type": "integer"}, "minItems": 5000},
        {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(1000)}},
    ):
        tracemalloc.start()
        index = Index(schema, tiny_bpe_vocab)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 20_000_000, (schema.get("type"), peak)
        assert index.n_states <= 2


def test_long_counted_string_shares_masks(tiny_bpe_vocab, tiny_bpe_tokenizer):
    index = Index({"type": "string", "maxLength": 100000}, tiny_bpe_vocab)
    doc = json.dumps("abc def " * 200)
    _teacher_force(index, tiny_bpe_vocab, tiny_bpe_tokenizer, doc)
    assert index.n_masks < 40


def test_state_budget_is_a_clear_error(tiny_bpe_vocab):
    index = Index(SCHEMAS["tree"], tiny_bpe_vocab, max_states=30)
    with pytest.raises(LimitExceededError, match="max_states"):
        for depth in range(1, 40):
            index.is_prefix('{"v":1,"kids":[' * depth)


def test_cache_budget_evicts_and_stays_correct(tiny_bpe_vocab, tiny_bpe_tokenizer):
    n_words = (tiny_bpe_vocab.max_token_id() + 31) // 32
    index = Index(SCHEMAS["person"], tiny_bpe_vocab, max_cache_bytes=3 * n_words * 4, spellings="any")
    reference = Index(SCHEMAS["person"], tiny_bpe_vocab, spellings="any")
    _teacher_force(index, tiny_bpe_vocab, tiny_bpe_tokenizer, DOCS["person"][0])
    assert index.n_masks <= 3
    for prefix in _prefixes(DOCS["person"][0]):
        s1 = index._auto.walk_bytes(index.initial_state, prefix)
        s2 = reference._auto.walk_bytes(reference.initial_state, prefix)
        assert (index.mask(s1) == reference.mask(s2)).all()


def test_bad_schema_text_is_schema_error(tiny_bpe_vocab):
    with pytest.raises(SchemaError, match="not valid JSON"):
        Index("{nope", tiny_bpe_vocab)


def test_shared_index_across_threads(tiny_bpe_vocab, tiny_bpe_tokenizer):
    index = Index(SCHEMAS["tree"], tiny_bpe_vocab)
    docs = [
        '{"v": 1, "kids": [{"v": 2}]}',
        '{"v": 3, "kids": [{"v": 4, "kids": [{"v": 5}]}]}',
        '{"v": -1}',
        '{"v": 10, "kids": []}',
    ] * 3
    errors = []

    def work(doc):
        try:
            _teacher_force(index, tiny_bpe_vocab, tiny_bpe_tokenizer, doc)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(d,)) for d in docs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    fresh = Index(SCHEMAS["tree"], tiny_bpe_vocab)
    for prefix in _prefixes(docs[1]):
        s1 = index._auto.walk_bytes(index.initial_state, prefix)
        s2 = fresh._auto.walk_bytes(fresh.initial_state, prefix)
        assert (index.mask(s1) == fresh.mask(s2)).all()


def _assert_masks_equal_reference(index, vocab, name):
    """At every byte prefix of the documents of ``name``, the mask equals the slow reference."""
    for doc in DOCS[name]:
        for prefix in _prefixes(doc):
            state = index._auto.walk_bytes(index.initial_state, prefix)
            assert state >= 0, prefix
            got = _bits(index.mask(state), vocab.max_token_id())
            assert got == allowed_tokens(index, vocab, prefix), (name, prefix)


@pytest.mark.parametrize("name", ["person", "any", "open"])
def test_masks_with_big_subtree_bitsets_equal_slow_reference(name, tiny_bpe_vocab):
    """Every subtree taken through a precomputed bitset (threshold 1 token) gives the same masks
    as the slow reference: the walk's bitset path is exercised on a small vocabulary too."""
    from dotjson.trie import big_subtree_bits

    from dotjson.jsonschema.jsonstr import PLAIN_CLASS

    vocab = tiny_bpe_vocab
    saved = vocab._walk_tables(PLAIN_CLASS)
    tries = vocab.tries_for(PLAIN_CLASS)
    vocab._walk[PLAIN_CLASS] = (*big_subtree_bits(tries.plain, tries.n_words, min_tokens=1), *saved[2:])
    try:
        assert (vocab._walk[PLAIN_CLASS][0] >= 0).all()
        index = Index(SCHEMAS[name], vocab, close_objects=False, spellings="any")
        _assert_masks_equal_reference(index, vocab, name)
    finally:
        vocab._walk[PLAIN_CLASS] = saved


@pytest.mark.parametrize("name", ["person", "tree", "open"])
def test_masks_equal_slow_reference_when_the_store_grows_mid_walk(name, tiny_bpe_vocab, monkeypatch):
    """A store started nearly empty grows (an exit to Python, then a resumed walk) inside almost
    every kernel call; the masks must not change."""
    from dotjson.automaton import Automaton

    monkeypatch.setattr(Automaton, "INITIAL_TERMS", 16)
    monkeypatch.setattr(Automaton, "INITIAL_STATES", 2)
    monkeypatch.setattr(Automaton, "GROWN_TERMS", 1)  # (doubling from there: growth mid-walk)
    monkeypatch.setattr(Automaton, "GROWN_STATES", 1)
    vocab = tiny_bpe_vocab
    index = Index(SCHEMAS[name], vocab, close_objects=False, spellings="any")
    _assert_masks_equal_reference(index, vocab, name)


@pytest.mark.parametrize("name", ["person", "open"])
def test_masks_equal_slow_reference_when_the_store_grows_into_mappings(name, tiny_bpe_vocab, monkeypatch):
    """Store arrays past NumPy's huge-page threshold are anonymous mappings of their own
    (automaton.memory._alloc); with the threshold lowered to 1 KiB every growth takes that path, and
    the masks must not change."""
    import dotjson.automaton as A
    import dotjson.automaton.memory as M

    monkeypatch.setattr(A.Automaton, "INITIAL_TERMS", 16)
    monkeypatch.setattr(A.Automaton, "INITIAL_STATES", 2)
    monkeypatch.setattr(A.Automaton, "GROWN_TERMS", 1)  # (doubling from there: growth mid-walk)
    monkeypatch.setattr(A.Automaton, "GROWN_STATES", 1)
    monkeypatch.setattr(M, "_HUGE_ADVISED", 1024)
    big = M._alloc((300, 4), np.int32, -1)
    assert big.flags.writeable and big.base is not None and (big == -1).all()
    assert (M._alloc((600,), np.int64) == 0).all()
    vocab = tiny_bpe_vocab
    index = Index(SCHEMAS[name], vocab, close_objects=False, spellings="any")
    _assert_masks_equal_reference(index, vocab, name)
    import mmap

    def owner(a):
        while isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        return a.obj if isinstance(a, memoryview) else a

    assert isinstance(owner(index._auto._a["trans"]), mmap.mmap)  # grown through a mapping


def test_grown_extends_reserved_arrays_in_place(monkeypatch):
    """A large store array lives in reserved address space (automaton.memory._reserve) and grows in
    place: the rows written survive, the array published before views the same memory (a
    kernel still on it reads valid rows), new rows take the fill, and past the reservation the
    array is copied into a new one; a small array given a reservation moves into it once."""
    import dotjson.automaton.memory as M

    monkeypatch.setattr(M, "_HUGE_ADVISED", 64)
    arr = M._reserve(8, (4,), np.int32)
    assert arr.shape == (8, 4) and (arr == 0).all()
    arr[:] = np.arange(32, dtype=np.int32).reshape(8, 4)
    cap = M._extend(arr, 1 << 30)
    assert cap is None  # far past what was reserved
    grown = M.grown(arr, 16, -1)
    assert grown.shape == (16, 4) and grown.ctypes.data == arr.ctypes.data  # not copied
    assert (grown[:8] == arr).all() and (grown[8:] == -1).all()
    grown[0, 0] = 99
    assert arr[0, 0] == 99  # the old array is a view of the same rows
    states = M.grown(grown, 32, None, used=5)  # rows past `used`: their owner writes
    assert states.ctypes.data == arr.ctypes.data and (states[:5] == grown[:5]).all()
    small = np.zeros((3, 4), dtype=np.int32)  # NumPy's allocation: extended by copying
    assert M._extend(small, 6) is None
    # a small array grown with a reservation moves once, then grows in place up to it
    monkeypatch.setattr(M, "_HUGE_ADVISED", 1 << 22)
    monkeypatch.setattr(M, "_STRICT", False)
    small[:] = 7
    moved = M.grown(small, 6, 0, ahead=100)
    assert moved.shape == (6, 4) and (moved[:3] == 7).all() and (moved[3:] == 0).all()
    again = M.grown(moved, 100, None)
    assert again.ctypes.data == moved.ctypes.data and (again[:3] == 7).all()
    assert M.grown(again, 101, None).ctypes.data != moved.ctypes.data  # past it: copied
    monkeypatch.setattr(M, "_STRICT", True)  # where overcommit is strict: 8 times the rows
    strict = M.grown(small, 6, 0, ahead=100)
    assert M._extend(strict, 48) is not None and M._extend(strict, 49) is None


def test_store_growth_rehashes_by_stored_hashes(tiny_bpe_vocab):
    """A grown term table is filled from the hashes the terms were made with: they are the
    hashes computed from the terms themselves, and every term is found again."""
    import dotjson.automaton as A
    from dotjson.automaton import kernels as K

    index = Index(SCHEMAS["open"], tiny_bpe_vocab, close_objects=False, spellings="any")
    for doc in DOCS["open"]:
        index.accepts(doc)
    a = index._auto._a
    n = int(a["ctl"][K.C_TERMS])
    stored = a["tm"][:n, K.M_HASH].copy()
    assert (stored >= 0).all()
    ht = np.full(A._pow2(2 * n), -1, dtype=np.int32)
    tm = a["tm"].copy()
    assert K.rehash_terms(a["ti"], a["bw"], a["pool"], tm, n, ht) == 0
    assert (tm[:n, K.M_HASH] == stored).all()
    ht2 = np.full(ht.shape[0], -1, dtype=np.int32)
    K.rehash_stored(a["tm"], n, ht2)
    assert (ht2 == ht).all()  # (the same insertion order, the same probes)


@pytest.mark.parametrize("ahead", [2, 64, "limited"])
def test_masks_equal_slow_reference_when_reserved_arrays_grow(ahead, tiny_bpe_vocab, monkeypatch):
    """Every growth through reserved address space (the threshold lowered to 1 KiB), some in
    place and some past the reservation (``_RESERVE_AHEAD`` of 2), under an address-space limit
    with no room to reserve ahead, and with no reservation possible at all: the masks do not
    change."""
    import dotjson.automaton as A
    import dotjson.automaton.memory as M

    monkeypatch.setattr(A.Automaton, "INITIAL_TERMS", 16)
    monkeypatch.setattr(A.Automaton, "INITIAL_STATES", 2)
    monkeypatch.setattr(A.Automaton, "GROWN_TERMS", 1)  # (doubling from there: growth mid-walk)
    monkeypatch.setattr(A.Automaton, "GROWN_STATES", 1)
    monkeypatch.setattr(M, "_HUGE_ADVISED", 1024)
    monkeypatch.setattr(M, "_STRICT", ahead == 2)  # (strict overcommit: reserved 2x, then moved)
    if ahead == "limited":
        monkeypatch.setattr(M, "_address_space_room", lambda: 0)
        arr = M._reserve(4, (8,), np.int32)
        assert arr.shape == (4, 8) and M._extend(arr, 5) is None  # nothing reserved ahead
    else:
        monkeypatch.setattr(M, "_RESERVE_AHEAD", ahead)
    vocab = tiny_bpe_vocab
    for name in ("person", "open"):
        index = Index(SCHEMAS[name], vocab, close_objects=False, spellings="any")
        _assert_masks_equal_reference(index, vocab, name)
        trans = index._auto._a["trans"]
        assert M._extend(trans, trans.shape[0]) is not None  # reserved
    monkeypatch.setattr(M, "_reserve", lambda rows, row_shape, dtype, ahead=0: None)
    index = Index(SCHEMAS["open"], vocab, close_objects=False, spellings="any")
    _assert_masks_equal_reference(index, vocab, "open")


def test_special_trie_run_shortcut_equals_full_walk_real_vocab(llama3_vocab, llama3_tokenizer):
    """The special trie walked through its ASCII runs and exits gives, at every state of real
    documents (strings with quotes inside tokens, keys, escapes), the masks of the node-by-node
    walk."""
    from dotjson._kernels import walk

    for name in ("person", "open", "any", "tree"):
        fast = Index(SCHEMAS[name], llama3_vocab, close_objects=False, spellings="any")
        full = Index(SCHEMAS[name], llama3_vocab, close_objects=False, spellings="any")
        full._masker._special_mode = walk.WALK_ALL
        for doc in DOCS[name]:
            for text in (doc, json.dumps(json.loads(doc), indent=2)):
                ids = llama3_tokenizer.encode(text, add_special_tokens=False)
                s = u = fast.initial_state
                u = full.initial_state
                for t in ids:
                    assert np.array_equal(fast.mask(s), full.mask(u)), (name, text)
                    s, u = fast.next_state(s, t), full.next_state(u, t)


def test_a_dropped_index_frees_its_automaton_at_once(tiny_bpe_vocab, tmp_path):
    # no reference cycle through the automaton, its rules or their analysis: the store is freed
    # when the index is dropped, not by a later pass of the cycle collector (which ran inside the
    # next index's compile); loaded indexes and indexes that compiled rules and masks alike
    import weakref

    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "array",
              "items": {"type": "integer"}}}, "required": ["a"]}
    index = Index(schema, tiny_bpe_vocab)
    g = Guide(index, batch_size=1)
    g.get_start_tokensets()
    assert index.accepts('{"a":"x","b":[1,2]}')
    index.serialize_to_disk(tmp_path / "ix")
    loaded = Index.deserialize_from_disk(tmp_path / "ix", tiny_bpe_vocab)
    assert loaded.accepts('{"a":"y"}')
    refs = [weakref.ref(index._auto), weakref.ref(loaded._auto)]
    del g, index, loaded
    assert [r() for r in refs] == [None, None]


@pytest.mark.parametrize("items", [
    {"type": "object", "properties": {"a": {"type": "integer"}}},  # the values' family
    {"type": "string", "maxLength": 3},                                # strings'
])
def test_a_dropped_unique_items_index_frees_its_compiler(items, tiny_bpe_vocab):
    """An index whose ``uniqueItems`` family read its items with an automaton of its own, and
    masked through its family's view, lets go of its automaton at once and of its rules, its
    compiler and its normal forms once dropped: the family's view of the grammar held the rules
    (and bound methods of theirs), the compiler held the family, and the finalizer that
    releases the compiler when the rules die held the compiler: a leak the cycle collector
    cannot see (~60,000 objects for one MaskBench schema, walked by every later full
    collection); and the masker and its families' view held each other (a cycle: the index
    freed only by the collector, inside some later mask)."""
    import gc
    import weakref

    schema = {"type": "array", "uniqueItems": True, "items": items}
    index = Index(schema, tiny_bpe_vocab, close_objects=False)
    doc = '[{"a":1},{"a":2}]' if items["type"] == "object" else '["ab","c"]'
    assert index.accepts(doc)
    for i in range(len(doc) + 1):
        s = index._auto.walk_bytes(index.initial_state, doc[:i].encode())
        assert s >= 0
        index.mask(s)
    assert index._masker._view is not None  # (the family's view was made)
    rules, auto = weakref.ref(index._auto.grammar.rules), weakref.ref(index._auto)
    gc.disable()
    try:
        del index
        assert auto() is None  # at once, by reference counting
    finally:
        gc.enable()
    gc.collect()
    assert rules() is None  # (and with them the compiler: its finalizer ran)


def test_a_token_step_makes_a_state_only_at_its_end(llama3_vocab, llama3_tokenizer):
    # next_state walks a token's bytes by derivatives and interns only the state after it (a
    # mask is never asked inside a token): the same states as a byte-by-byte walk, fewer made
    schema = {"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}}}
    doc = '{"text": "a considerably lengthy sentence, with punctuation", "n": 12345}'
    ids = llama3_tokenizer.encode(doc, add_special_tokens=False)
    made = []
    for per_byte in (False, True):
        index = Index(schema, llama3_vocab)
        auto = index._auto
        if per_byte:  # the reference: a state for every byte
            auto.walk_token = auto.walk_bytes
        s, n0, terms = index.initial_state, auto.n_states, []
        for t in ids:
            s = index.next_state(s, t)
            assert s >= 0
            terms.append(auto.term_of(s))
        assert index.next_state(s, llama3_vocab.eos_token_ids[0]) == -3  # (FINISHED: the document is whole)
        made.append((auto.n_states - n0, terms))
    (n_token, terms_token), (n_byte, terms_byte) = made
    assert terms_token == terms_byte  # (interned by structure: the same language, the same term)
    assert n_token <= len(ids) < n_byte
