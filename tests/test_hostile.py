"""Hostile and careless use through the public API: no crash, no silent wrong result.

Every misuse is a :class:`dotjson.errors.DotjsonError` that also derives from the builtin a caller
would catch (``TypeError``, ``ValueError``, ``IndexError``), raised before anything changes; every
corrupt saved file is refused before a kernel sees it. Each case asserts the exact outcome. Cases
that could crash the interpreter if a check regressed (a hostile saved vocabulary reaching the
trie walk) run in a subprocess. The items of issue 14 that live in the schema compiler and the
automaton (recursion limits, deep and wide schemas, enum and repetition costs) are tested by
their own suites. Issue 31's round: numbers exact at any precision (a property test against
Python's fractions), logits rows that share memory, vocabularies that cannot write a document,
hostile index directories (FIFOs, device links, oversized and compressed members, lying
``.npy`` headers), memory budgets, and the raw exceptions ``perf/fuzz_hostile.py`` found.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dotjson import BatchedTokenSet, Guide, Index, LogitsProcessor, Vocabulary
from dotjson.errors import (
    DotjsonError,
    DotjsonIndexError,
    DotjsonTypeError,
    DotjsonValueError,
    IndexFormatError,
    LimitExceededError,
    SchemaError,
    TokenNotAllowedError,
    VocabularyError,
)
from dotjson.serialization import INDEX_FILES

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}


def token_of(vocab: Vocabulary, text: bytes) -> int:
    return next(t for t in range(vocab.max_token_id()) if vocab.token_bytes(t) == text)


@pytest.fixture(scope="module")
def index(smollm2_vocab):
    return Index(SCHEMA, smollm2_vocab)


@pytest.fixture()
def guide(index):
    g = Guide(index, batch_size=2)
    g.get_start_tokensets()
    return g


def snapshot(guide: Guide):
    return [list(h) for h in guide._history]


# --------------------------------------------------------------------------- mask values


@pytest.mark.parametrize("value", [float("inf"), float("nan"), np.inf, np.float32("nan"), np.float16("inf")])
def test_mask_values_that_cannot_mask_are_refused(guide, value):
    with pytest.raises(DotjsonValueError, match=r"Invalid mask_value: expected a finite number or -inf"):
        LogitsProcessor(guide, value)


def test_minus_inf_masks_and_argmax_never_picks_a_forbidden_token(guide, smollm2_vocab):
    ts = guide.get_start_tokensets()
    logits = np.random.default_rng(0).standard_normal((2, smollm2_vocab.max_token_id())).astype(np.float32)
    LogitsProcessor(guide, float("-inf"))(logits, ts)
    for r, t in enumerate(logits.argmax(axis=1)):
        assert ts.contains(int(t))[r]


# --------------------------------------------------------------------------- rollback


def test_rollback_with_a_row_listed_twice_is_refused_before_any_change(guide, smollm2_vocab):
    t = token_of(smollm2_vocab, b'{"')
    guide.get_next_tokensets([t, t])
    before = snapshot(guide)
    with pytest.raises(DotjsonValueError, match=r"Invalid rows: row 0 is listed twice"):
        guide.rollback(1, rows=[0, 0])
    assert snapshot(guide) == before
    with pytest.raises(ValueError, match=r"Invalid rollback: row 0 has 1 tokens, cannot undo 2"):
        guide.rollback(2, rows=[0])
    assert snapshot(guide) == before
    guide.rollback(1, rows=[0])
    assert [len(h) for h in snapshot(guide)] == [1, 2]
    # the start state survived the refused calls: row 0 allows what a fresh guide allows
    start = Guide(guide.index).get_start_tokensets()
    np.testing.assert_array_equal(guide.current_tokensets().bits[0], start.bits[0])


@pytest.mark.parametrize(
    "n, rows, exc, match",
    [
        (1.5, None, DotjsonTypeError, r"Invalid rollback count n: expected an integer, got 1\.5"),
        ("1", None, DotjsonTypeError, r"Invalid rollback count n: expected an integer, got '1'"),
        (True, None, DotjsonTypeError, r"Invalid rollback count n: expected an integer, got bool"),
        (-1, None, DotjsonValueError, r"Invalid rollback: expected n >= 0, got -1"),
        (1, [2], DotjsonIndexError, r"Invalid row 2: the batch has 2 rows"),
        (1, [-1], DotjsonIndexError, r"Invalid row -1: the batch has 2 rows"),
        (1, [0.5], DotjsonTypeError, r"Invalid row: expected an integer, got 0\.5"),
        (1, "0", DotjsonTypeError, r"Invalid rows: expected integers, got str"),
    ],
)
def test_rollback_argument_errors_change_nothing(guide, smollm2_vocab, n, rows, exc, match):
    t = token_of(smollm2_vocab, b'{"')
    guide.get_next_tokensets([t, t])
    before = snapshot(guide)
    with pytest.raises(exc, match=match):
        guide.rollback(n, rows=rows)
    assert snapshot(guide) == before


# --------------------------------------------------------------------------- budgets and retries


def test_a_budget_hit_while_computing_the_next_sets_leaves_the_guide_unchanged(smollm2_vocab):
    # For small max_states budgets the token '{"' still has a transition (next_state builds it)
    # but the token set after it needs more states: LimitExceededError from the mask. Whatever
    # the budget, a failed call leaves the row where it was, so a retry never applies the token
    # twice; at least one budget must hit that case.
    t = token_of(smollm2_vocab, b'{"')
    hit_in_token_set = 0
    for budget in range(1, 120):
        try:
            index = Index(SCHEMA, smollm2_vocab, max_states=budget)
            # (the key position's names walked as states: the mask after '{"' then needs more
            # states than the step to it; walked by its names, it needs none)
            index._masker._key_roots = False
            guide = Guide(index)
            guide.get_start_tokensets()
        except LimitExceededError:
            continue
        s0 = index.initial_state
        for _ in range(2):  # the retry meets the same budget
            try:
                guide.get_next_tokensets([t])
            except LimitExceededError as exc:
                assert re.search(rf"budget of {budget} states \(Index option max_states\)", str(exc))
                assert guide.states.tolist() == [s0]
            else:
                assert guide.states.tolist() == [index.next_state(s0, t)]
                break
        else:
            try:
                stepped = index.next_state(s0, t) >= 0
            except LimitExceededError:  # the budget ran out in the step itself
                stepped = False
            hit_in_token_set += stepped  # else the failure was in the token set, after the step
    assert hit_in_token_set > 0


def test_a_refused_token_leaves_every_row_unchanged(guide, smollm2_vocab):
    t = token_of(smollm2_vocab, b'{"')
    bad = token_of(smollm2_vocab, b"]")
    with pytest.raises(TokenNotAllowedError, match=r"token \d+ \(b'\]'\) is not allowed in row 1's state"):
        guide.get_next_tokensets([t, bad])
    assert snapshot(guide) == [[guide.index.initial_state]] * 2


# --------------------------------------------------------------------------- token ids


def test_token_id_aliasing_two_to_the_32_is_not_another_transition(guide, index, smollm2_vocab):
    t = token_of(smollm2_vocab, b'{"')
    s0 = index.initial_state
    assert index.next_state(s0, t) >= 0  # memoized now under key s0 * 2**32 + t
    for k in (1, 2, 5):
        assert index.next_state(s0, t + k * 2**32) == -2
        assert index.next_state(s0, t - k * 2**32) == -2
    with pytest.raises(TokenNotAllowedError, match=rf"token {t + 2**32} is not allowed in row 0: it is outside the vocabulary \(expected 0 <= id < 49152\)"):
        guide.get_next_tokensets([t + 2**32, t])
    with pytest.raises(TokenNotAllowedError, match=r"token -1 is not allowed in row 1: it is outside the vocabulary"):
        guide.get_next_tokensets(np.array([t, -1]))
    assert snapshot(guide) == [[s0]] * 2


@pytest.mark.parametrize(
    "tokens, exc, match",
    [
        (None, DotjsonTypeError, r"Invalid sampled_tokens: expected one integer token id per row \(a list, array or tensor\), got NoneType"),
        ("ab", DotjsonTypeError, r"got str"),
        ([None, None], DotjsonTypeError, r"expected integer token ids, got dtype object"),
        (["1", "2"], DotjsonTypeError, r"expected integer token ids, got dtype <U1"),
        ([1.5, 2.0], DotjsonTypeError, r"expected integer token ids, got 1\.5 in row 0"),
        ([float("nan"), 2.0], DotjsonTypeError, r"expected integer token ids, got nan in row 0"),
        ([True, False], DotjsonTypeError, r"expected integer token ids, got dtype bool"),
        ([1, 2, 3], DotjsonValueError, r"expected one token id per row \(2 rows\), got 3"),
        ([[1], [2, 3]], DotjsonTypeError, r"expected integer token ids"),
    ],
)
def test_sampled_tokens_of_the_wrong_kind(guide, tokens, exc, match):
    before = snapshot(guide)
    with pytest.raises(exc, match=match):
        guide.get_next_tokensets(tokens)
    assert snapshot(guide) == before


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda ix: ix.next_state(ix.initial_state, None), DotjsonTypeError, r"Invalid token id: expected an integer, got None"),
        (lambda ix: ix.next_state(ix.initial_state, "7"), DotjsonTypeError, r"Invalid token id: expected an integer, got '7'"),
        (lambda ix: ix.next_state(ix.initial_state, 7.0), DotjsonTypeError, r"Invalid token id: expected an integer, got 7\.0"),
        (lambda ix: ix.next_state(10**9, 7), DotjsonIndexError, r"Invalid state 1000000000: expected 0 <= state <"),
        (lambda ix: ix.next_state(-7, 7), DotjsonIndexError, r"Invalid state -7"),
        (lambda ix: ix.is_accepting(10**9), DotjsonIndexError, r"Invalid state 1000000000"),
        (lambda ix: ix.mask(10**9), DotjsonIndexError, r"Invalid state 1000000000"),
        (lambda ix: ix.mask("0"), DotjsonTypeError, r"Invalid state: expected an integer, got '0'"),
        (lambda ix: ix.fill_masks([0], np.zeros((1, 3), np.uint32)), DotjsonValueError, r"Invalid out: expected a uint32 array of shape \(1, 1536\)"),
        (lambda ix: ix.accepts(5), DotjsonTypeError, r"Invalid text: expected str or bytes, got int"),
        (lambda ix: ix.is_prefix(None), DotjsonTypeError, r"Invalid text: expected str or bytes, got NoneType"),
        (lambda ix: ix.accepts('"\ud800"'), DotjsonValueError, r"Invalid text: it holds a lone surrogate at index 1"),
    ],
)
def test_index_methods_check_their_arguments(index, call, exc, match):
    with pytest.raises(exc, match=match):
        call(index)


def test_every_refusal_is_also_the_builtin_a_caller_catches(index, smollm2_vocab):
    for exc_type, builtin in [(DotjsonTypeError, TypeError), (DotjsonValueError, ValueError),
                              (DotjsonIndexError, IndexError), (TokenNotAllowedError, ValueError),
                              (LimitExceededError, RuntimeError), (IndexFormatError, ValueError),
                              (VocabularyError, ValueError), (SchemaError, ValueError)]:
        assert issubclass(exc_type, DotjsonError) and issubclass(exc_type, builtin)
    with pytest.raises(TypeError):
        index.next_state(0, None)
    with pytest.raises(IndexError):
        Guide(index).get_start_tokensets()[5]


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda ix: Guide("index"), DotjsonTypeError, r"Invalid index: expected a dotjson\.Index, got str"),
        (lambda ix: Guide(ix, batch_size=0), DotjsonValueError, r"Invalid batch_size: expected a positive integer, got 0"),
        (lambda ix: Guide(ix, batch_size=1.0), DotjsonTypeError, r"Invalid batch_size: expected an integer, got 1\.0"),
        (lambda ix: Guide(ix).get_start_tokensets().contains(None), DotjsonTypeError, r"Invalid token id: expected an integer, got NoneType"),
        (lambda ix: Guide(ix).get_start_tokensets().contains(-1), DotjsonValueError, r"Invalid token id: expected a non-negative integer, got -1"),
        (lambda ix: Guide(ix).get_start_tokensets()[::0], DotjsonTypeError, r"Invalid row slice slice\(None, None, 0\)"),
        (lambda ix: len(Guide(ix, 2).get_start_tokensets()), DotjsonTypeError, r"len\(\) of a BatchedTokenSet of 2 rows is ambiguous"),
        (lambda ix: BatchedTokenSet(np.zeros((1, 2), np.int64), 64), DotjsonTypeError, r"Invalid bits: expected dtype uint32, got int64"),
        (lambda ix: LogitsProcessor(Guide(ix), 0)([[1] * 49151 + [True]], Guide(ix).get_start_tokensets()), DotjsonTypeError, r"Invalid logits row 0, element 49151: expected a real number \(int or float\), got True"),
        (lambda ix: Index(SCHEMA, "vocabulary"), DotjsonTypeError, r"Invalid vocabulary: expected a dotjson\.Vocabulary, got str"),
        (lambda ix: Index(SCHEMA, ix.vocabulary, max_states=0), DotjsonValueError, r"Invalid max_states: expected a positive integer, got 0"),
        (lambda ix: ix.vocabulary.token_bytes(None), VocabularyError, r"Invalid token id None: expected an integer, 0 <= id < 49152"),
        (lambda ix: ix.vocabulary.token_bytes(1.0), VocabularyError, r"Invalid token id 1\.0"),
        (lambda ix: ix.vocabulary.is_special(49152), VocabularyError, r"Invalid token id 49152"),
    ],
)
def test_public_calls_refuse_bad_arguments_with_dotjson_errors(index, call, exc, match):
    with pytest.raises(exc, match=match):
        call(index)


# --------------------------------------------------------------------------- vocabularies


def test_a_huge_token_id_is_refused_before_any_allocation():
    with pytest.raises(VocabularyError, match=r"Invalid token id 1000000000: expected ids below 4194304 \(MAX_VOCAB_SIZE"):
        Vocabulary.from_tuples([b"a"], [10**9], [0])
    with pytest.raises(VocabularyError, match=r"Invalid token id 4194304: expected ids below 4194304"):
        Vocabulary.from_tuples([b"a"], [0], [2**22])
    with pytest.raises(VocabularyError, match=r"Invalid token id 1\.5: expected an integer"):
        Vocabulary.from_tuples([b"a"], [1.5], [0])
    with pytest.raises(VocabularyError, match=r"Invalid EOS token id None: expected an integer"):
        Vocabulary.from_tuples([b"a"], [1], [None])
    assert Vocabulary.from_tuples([b"a"], [2**22 - 2], [2**22 - 1]).max_token_id() == 2**22


def _resign_vocabulary(path: Path) -> None:
    """Recompute a vocabulary file's SHA-256 trailer, as a hostile writer would."""
    body = path.read_bytes()[:-32]
    path.write_bytes(body + hashlib.sha256(body).digest())


def _edit_max_len(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    m = re.search(rb'"max_len":(\d+)', data)
    old = m.group(1)
    new = old[:1] + b" " * (len(old) - 1)  # "10" -> "1 ": same length, valid JSON
    path.write_bytes(data[: m.start(1)] + new + data[m.end(1) :])
    return int(old), int(new)


def test_a_one_digit_edit_of_the_saved_header_is_caught(tmp_path, smollm2_vocab):
    from dotjson.jsonschema.jsonstr import PLAIN_CLASS

    p = tmp_path / "vocabulary.bin"
    smollm2_vocab.serialize_to_disk(p, PLAIN_CLASS)
    old, new = _edit_max_len(p)
    assert new < old
    with pytest.raises(IndexFormatError, match=r"checksum mismatch \(SHA-256 of the whole file\)"):
        Vocabulary.deserialize_from_disk(p)
    # Even with a matching checksum (a crafted file), max_len must agree with the tokens.
    _resign_vocabulary(p)
    with pytest.raises(IndexFormatError, match=rf"max_len {new}: the longest emittable token has {old} bytes"):
        Vocabulary.deserialize_from_disk(p)


def test_a_crafted_vocabulary_never_reaches_the_trie_walk(tmp_path, smollm2_vocab):
    # In a subprocess: if a check regressed, the walk would overrun its stacks (a crash).
    from dotjson.jsonschema.jsonstr import PLAIN_CLASS

    p = tmp_path / "vocabulary.bin"
    smollm2_vocab.serialize_to_disk(p, PLAIN_CLASS)
    _edit_max_len(p)
    _resign_vocabulary(p)
    code = textwrap.dedent(f"""
        from dotjson import Vocabulary, Index, Guide
        from dotjson.errors import IndexFormatError
        try:
            v = Vocabulary.deserialize_from_disk({str(p)!r})
            g = Guide(Index({{"type": "string"}}, v))
            for _ in range(3):
                g.get_start_tokensets()
            print("LOADED")
        except IndexFormatError as e:
            print("REFUSED", e)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("REFUSED Corrupt vocabulary file") and "max_len" in out.stdout


def test_crafted_tries_are_checked_against_the_token_bytes(tmp_path, tiny_bpe_vocab):
    from dotjson.jsonschema.jsonstr import PLAIN_CLASS
    from dotjson.vocabulary import _read_container, _write_container

    p = tmp_path / "v.bin"
    tiny_bpe_vocab.serialize_to_disk(p, PLAIN_CLASS)
    _, meta, arrs = _read_container(p)
    arrays = list(arrs.items())
    for name, mutate, match in [
        ("plain.child_byte", lambda a: a.__setitem__(0, a[0] ^ 1), r"plain trie structure"),
        ("plain.tok_ids", lambda a: a.__setitem__(slice(0, 2), a[[1, 0]]), r"plain trie structure"),
        ("plain_bits", lambda a: a.__setitem__(0, a[0] ^ 1), r"plain bitset disagrees"),
        ("special.subtree_end", lambda a: a.__setitem__(0, a[0] - 1), r"special trie"),
    ]:
        changed = [(n, a.copy()) for n, a in arrays]
        for n, a in changed:
            if n == name:
                mutate(a)
        meta_out = {k: v for k, v in meta.items() if k != "arrays"}
        _write_container(p, meta_out, changed)
        with pytest.raises(IndexFormatError, match=match):
            Vocabulary.deserialize_from_disk(p)
    # the tries must be split by the class the header names (the walk takes a plain subtree whole
    # where a state is unchanged by the class): JSON's tries under another class are refused
    meta_out = {k: v for k, v in meta.items() if k != "arrays"}
    for plain, match in [([[0x20, 0x7E]], r"the plain trie's tokens are not those of its class PlainClass\(\(0x20, 0x7e\)\)"),
                         ([[0x7E, 0x20]], r"missing or invalid field \(Invalid plain class range"),
                         ([[0x20, "x"]], r"missing or invalid field \(Invalid plain class"),
                         ({"a": 1}, r"missing or invalid field")]:
        _write_container(p, dict(meta_out, plain=plain), arrays)
        with pytest.raises(IndexFormatError, match=match):
            Vocabulary.deserialize_from_disk(p)


def test_missing_and_foreign_vocabulary_paths(tmp_path):
    with pytest.raises(VocabularyError, match=r"No vocabulary file at .*nope\.bin: the file does not exist"):
        Vocabulary.deserialize_from_disk(tmp_path / "nope.bin")
    with pytest.raises(VocabularyError, match=r"No vocabulary file at .*: it is a directory"):
        Vocabulary.deserialize_from_disk(tmp_path)
    with pytest.raises(DotjsonTypeError, match=r"Invalid path: expected a str or os\.PathLike, got int"):
        Vocabulary.deserialize_from_disk(3)


# --------------------------------------------------------------------------- index directories


@pytest.fixture()
def saved_dir(tmp_path, index, smollm2_vocab):
    g = Guide(index)
    g.get_start_tokensets()
    g.get_next_tokensets([token_of(smollm2_vocab, b'{"')])
    d = tmp_path / "idx"
    index.serialize_to_disk(d)
    return d


@pytest.mark.parametrize("name", [n for n in INDEX_FILES if n != "vocabulary.bin"] + ["manifest.json"])
def test_single_bit_flips_in_a_saved_index_are_all_refused(saved_dir, name):
    path = saved_dir / name
    original = path.read_bytes()
    rng = np.random.default_rng(len(name))
    positions = rng.integers(0, len(original), size=50)
    bits = rng.integers(0, 8, size=50)
    for pos, bit in zip(positions.tolist(), bits.tolist()):
        data = bytearray(original)
        data[pos] ^= 1 << bit
        path.write_bytes(bytes(data))
        with pytest.raises(IndexFormatError, match=re.escape(f"index directory {str(saved_dir)!r}")):
            Index.deserialize_from_disk(saved_dir)
    path.write_bytes(original)
    assert Index.deserialize_from_disk(saved_dir).n_states > 1


@pytest.mark.slow
def test_every_bit_of_index_json_is_covered(saved_dir):
    path = saved_dir / "index.json"
    original = path.read_bytes()
    for pos in range(len(original)):
        data = bytearray(original)
        data[pos] ^= 1 << (pos % 8)  # every byte, each of the 8 bit positions in turn
        path.write_bytes(bytes(data))
        with pytest.raises(IndexFormatError, match="index.json is truncated or corrupt"):
            Index.deserialize_from_disk(saved_dir)


def test_a_bit_flip_in_the_saved_vocabulary_is_refused(saved_dir):
    path = saved_dir / "vocabulary.bin"
    data = bytearray(path.read_bytes())
    data[100] ^= 4  # inside the JSON header
    path.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match=r"vocabulary\.bin is truncated or corrupt \(checksum mismatch"):
        Index.deserialize_from_disk(saved_dir)


@pytest.mark.parametrize(
    "name, match",
    [(n, rf"is incomplete: .*{re.escape(n)} is missing") for n in INDEX_FILES]
    + [("manifest.json", r"has no manifest\.json .*: the save was interrupted, or it was written by a dotjson older")],
)
def test_missing_files_name_the_path(saved_dir, name, match):
    (saved_dir / name).unlink()
    with pytest.raises(IndexFormatError, match=match):
        Index.deserialize_from_disk(saved_dir)


def test_deserialize_with_a_vocabulary_of_the_wrong_type(saved_dir):
    with pytest.raises(DotjsonTypeError, match=r"Invalid vocabulary: expected a dotjson\.Vocabulary or None, got str"):
        Index.deserialize_from_disk(saved_dir, "vocab")
    with pytest.raises(DotjsonTypeError, match=r"Invalid path: expected a str or os\.PathLike, got NoneType"):
        Index.deserialize_from_disk(None)


def test_a_resigned_transition_memo_out_of_range_is_refused(saved_dir):
    from dotjson.serialization import INDEX_FILES, write_manifest

    meta = json.loads((saved_dir / "index.json").read_text())
    k, v = meta["next"][0]
    state = k // 2**32
    meta["next"].append([state * 2**32 + 2**32 - 1, v])  # a token id far past the vocabulary
    (saved_dir / "index.json").write_text(json.dumps(meta))
    write_manifest(saved_dir, INDEX_FILES)
    with pytest.raises(IndexFormatError, match=r"is corrupt: transition memo out of range"):
        Index.deserialize_from_disk(saved_dir)


# --------------------------------------------------------------------------- schemas


def test_schema_bytes_that_are_not_utf8(smollm2_vocab):
    with pytest.raises(SchemaError, match=r"schema bytes are not UTF-8 text: byte 0xff at offset 1 \(invalid start byte\)"):
        Index(b'{\xff"type": "string"}', smollm2_vocab)
    assert Index('{"const": "é"}'.encode("utf-8"), smollm2_vocab).accepts('"é"')


@pytest.mark.parametrize(
    "schema, cp",
    [
        ({"const": "\ud800"}, "D800"),
        ({"enum": ["a", "x\udc00y"]}, "DC00"),
        ({"type": "object", "properties": {"\udbff": {}}, "required": ["\udbff"]}, "DBFF"),
        # below the root, or optional: refused at construction too, not when decoding reaches it
        ({"type": "object", "properties": {"a": {"const": "\ud800"}}}, "D800"),
        ({"properties": {"a": {"properties": {"\udbff": {}}}}}, "DBFF"),
        ({"items": {"enum": [{"k": ["\udc00"]}]}}, "DC00"),
    ],
)
def test_lone_surrogates_in_string_values_are_refused(smollm2_vocab, schema, cp):
    with pytest.raises(SchemaError, match=rf"a string holds the lone surrogate U\+{cp}: expected Unicode scalar values"):
        Index(schema, smollm2_vocab)


def test_a_surrogate_pair_const_is_one_astral_character(smollm2_vocab):
    index = Index({"const": "\U0001F600"}, smollm2_vocab, spellings="any")
    assert index.accepts('"\U0001F600"') and index.accepts('"\\ud83d\\ude00"')
    assert not Index({"const": "\U0001F600"}, smollm2_vocab).accepts('"\\ud83d\\ude00"')  # canonical: raw
    assert not index.accepts('"\\ud83d"') and not index.is_prefix('"\\ud83d"x')


def test_a_resigned_grammar_nested_past_the_stack_is_refused(saved_dir):
    from dotjson.serialization import INDEX_FILES, write_manifest

    meta = json.loads((saved_dir / "index.json").read_text())
    meta["grammar"] = "__G__"
    depth = 100_000
    nested = '["seq",[' * depth + '["lit","a"]' + "]]" * depth
    text = json.dumps(meta).replace('"__G__"', '{"start":"s","rules":[["s",' + nested + "]]}")
    (saved_dir / "index.json").write_text(text)
    write_manifest(saved_dir, INDEX_FILES)
    with pytest.raises(IndexFormatError, match=r"index\.json is corrupt \(RecursionError"):
        Index.deserialize_from_disk(saved_dir)


def test_contradicting_patterns_are_a_schema_error(smollm2_vocab):
    schema = {"type": "string", "allOf": [{"pattern": "^a$"}, {"pattern": "^b$"}]}
    with pytest.raises(SchemaError, match=r"empty"):
        Index(schema, smollm2_vocab)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda v: Vocabulary.from_pretrained(None), DotjsonTypeError, r"Invalid model_id_or_local_dir: expected a hub id, a directory or a file \(str or os\.PathLike\), got NoneType"),
        (lambda v: Index.from_regex(None, v), DotjsonTypeError, r"Invalid pattern: expected a regular expression \(str\), got NoneType"),
        (lambda v: Index.from_lark(b"start: 'a'", v), DotjsonTypeError, r"Invalid grammar: expected Lark grammar text \(str\), got bytes"),
        (lambda v: Index.from_grammar({"start": "a"}, v), DotjsonTypeError, r"Invalid grammar: expected a dotjson\.ir\.Grammar, got dict"),
        (lambda v: Index.from_regex("a+", "vocabulary"), DotjsonTypeError, r"Invalid vocabulary: expected a dotjson\.Vocabulary, got str"),
        (lambda v: v.serialize_to_disk(None), DotjsonTypeError, r"Invalid path: expected a str or os\.PathLike, got NoneType"),
    ],
)
def test_constructors_and_savers_check_their_arguments(smollm2_vocab, call, exc, match):
    with pytest.raises(exc, match=match):
        call(smollm2_vocab)


def test_saving_where_a_file_is_in_the_way(tmp_path, index):
    from dotjson.errors import DotjsonOSError

    (tmp_path / "taken").write_text("a file, not a directory")
    with pytest.raises(DotjsonOSError, match=r"Cannot write index directory '.*taken': File exists") as ei:
        index.serialize_to_disk(tmp_path / "taken")
    assert isinstance(ei.value, OSError) and ei.value.errno == 17
    with pytest.raises(DotjsonTypeError, match=r"Invalid path: expected a str or os\.PathLike, got float"):
        index.serialize_to_disk(1.5)
    with pytest.raises(DotjsonOSError, match=r"Cannot write vocabulary file .*missing-dir/v\.bin: No such file or directory"):
        index.vocabulary.serialize_to_disk(tmp_path / "missing-dir" / "v.bin")


# --------------------------------------------------------------------------- numbers at any precision


def test_integer_bounds_past_28_digits_are_exact(smollm2_vocab):
    # decimal's default context rounds to 28 digits: these were all answered wrongly
    ix = Index({"type": "integer", "minimum": 1000000000000000000000000000005}, smollm2_vocab)
    assert not ix.accepts("1000000000000000000000000000001") and not ix.accepts("1000000000000000000000000000004")
    assert ix.accepts("1000000000000000000000000000005")
    ix = Index({"type": "integer", "maximum": 10**30 + 5}, smollm2_vocab)
    assert ix.accepts(str(10**30 + 3)) and ix.accepts(str(10**30 + 5)) and not ix.accepts(str(10**30 + 6))
    ix = Index({"type": "integer", "minimum": 10**400, "maximum": 10**400 + 10}, smollm2_vocab)
    assert ix.accepts(str(10**400 + 3)) and not ix.accepts(str(10**400 + 11)) and not ix.accepts(str(10**400 - 1))
    ix = Index({"exclusiveMinimum": -(10**400 + 1), "exclusiveMaximum": -(10**400)}, smollm2_vocab)
    assert ix.accepts(f"-{10**400}.5") and not ix.accepts(f"-{10**400}") and not ix.accepts(f"-{10**400 + 1}")
    # no integer strictly between 10**50 and 10**50 + 1: empty (10**50 + 1 rounded to 10**50 once)
    with pytest.raises(SchemaError, match=r"the schema accepts no JSON value"):
        Index({"type": "integer", "exclusiveMinimum": 10**50, "exclusiveMaximum": 10**50 + 1}, smollm2_vocab)
    ix = Index({"type": "integer", "exclusiveMinimum": 10**50, "exclusiveMaximum": 10**50 + 2}, smollm2_vocab)
    assert ix.accepts(str(10**50 + 1)) and not ix.accepts(str(10**50 + 2))


def test_decimal_bounds_in_schema_text_keep_every_digit(smollm2_vocab):
    # JSON text is read with its non-integers as Decimal: a float would make this bound 0.3
    ix = Index('{"minimum": 0.3, "maximum": 0.30000000000000000001}', smollm2_vocab)
    assert ix.accepts("0.3") and ix.accepts("0.30000000000000000001") and ix.accepts("0.300000000000000000005")
    assert not ix.accepts("0.300000000000000000011") and not ix.accepts("0.29999999999999999999")
    from decimal import Decimal

    ix = Index({"exclusiveMaximum": Decimal("1e-40")}, smollm2_vocab)  # a Decimal in a dict too
    assert ix.accepts("0." + "0" * 40 + "9") and not ix.accepts("0." + "0" * 39 + "1")
    ix = Index('{"type": "string", "minLength": 2.0, "maxLength": 3.0}', smollm2_vocab)
    assert ix.accepts('"ab"') and not ix.accepts('"abcd"')
    with pytest.raises(SchemaError, match=r"minLength must be a non-negative integer at /minLength"):
        Index('{"minLength": 2.5}', smollm2_vocab)


def test_multiple_of_checks_on_enum_values_are_exact(smollm2_vocab):
    # a Decimal remainder of a 41-digit value fails (DivisionImpossible) past 28 digits
    ix = Index({"enum": [10**40, 10**40 + 2], "multipleOf": 3}, smollm2_vocab)
    assert ix.accepts(str(10**40 + 2)) and not ix.accepts(str(10**40))


@pytest.mark.parametrize(
    "schema, match",
    [
        ('{"maximum": 1e999999999}', r"maximum: the number 1E\+999999999 has 1000000000 digits written out: more than 10000 \(MAX_NUMBER_DIGITS\) at /maximum"),
        ('{"enum": [1, 1e-999999]}', r"the number 1E-999999 has 999999 digits written out: more than 10000 \(MAX_NUMBER_DIGITS\) at /enum"),
        ({"minimum": 10**20000}, r"minimum: a number of 66439 bits: more than 10000 digits \(MAX_NUMBER_DIGITS\) at /minimum"),
    ],
)
def test_numbers_too_long_to_write_out_are_refused_before_any_work(smollm2_vocab, schema, match):
    from dotjson.errors import UnsupportedSchemaError

    with pytest.raises(UnsupportedSchemaError, match=match):
        Index(schema, smollm2_vocab)


def _plain(d) -> str:
    """``d`` written out without an exponent (the spelling a bounded number automaton accepts)."""
    return format(d, "f")


@st.composite
def _bound_and_values(draw):
    from decimal import Decimal

    integer = draw(st.booleans())
    digits = draw(st.integers(min_value=0, max_value=10**draw(st.integers(1, 70))))
    scale = 0 if integer else draw(st.integers(0, 40))
    bound = Decimal(draw(st.sampled_from([1, -1])) * digits).scaleb(-scale)
    kw = draw(st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]))
    values = []
    for _ in range(draw(st.integers(1, 6))):
        delta_scale = draw(st.integers(0, 45))
        delta = Decimal(draw(st.integers(-30, 30))).scaleb(-delta_scale)
        values.append(Fraction(bound) + Fraction(delta))
    values.append(Fraction(bound))
    return integer, kw, bound, values


def _dec_text(f: Fraction) -> str:
    """A Fraction with a power-of-ten denominator written out in full."""
    sign = "-" if f < 0 else ""
    f = abs(f)
    k = 0
    while (f * 10**k).denominator != 1:
        k += 1
    n = int(f * 10**k)
    if k == 0:
        return f"{sign}{n}"
    s = str(n).rjust(k + 1, "0")
    return f"{sign}{s[:-k]}.{s[-k:]}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_bound_and_values(), as_text=st.booleans())
def test_bounds_are_exact_against_python_fractions(smollm2_vocab, case, as_text):
    integer, kw, bound, values = case
    schema = {"type": "integer" if integer else "number", kw: int(bound) if integer else bound}
    text = '{"type": "%s", "%s": %s}' % (schema["type"], kw, _plain(bound))
    b = Fraction(bound)
    ok = {"minimum": lambda v: v >= b, "maximum": lambda v: v <= b,
          "exclusiveMinimum": lambda v: v > b, "exclusiveMaximum": lambda v: v < b}[kw]
    ix = Index(text if as_text else schema, smollm2_vocab)
    for v in values:
        if integer and v.denominator != 1:
            continue
        expected = ok(v) and (not integer or v.denominator == 1)
        assert ix.accepts(_dec_text(v)) == expected, (schema, _dec_text(v))


# --------------------------------------------------------------------------- logits buffers


def _two_row_sets(index, smollm2_vocab):
    """A guide of two rows in different states (row 1 after '{"'): their masks differ."""
    g = Guide(index, batch_size=2)
    g.get_start_tokensets()
    ts = g.get_next_tokensets([token_of(smollm2_vocab, b" "), token_of(smollm2_vocab, b'{"')])
    assert not np.array_equal(ts.bits[0], ts.bits[1])
    return g, ts


def test_logits_rows_that_share_memory_are_refused(index, smollm2_vocab):
    torch = pytest.importorskip("torch")
    g, ts = _two_row_sets(index, smollm2_vocab)
    proc = LogitsProcessor(g, float("-inf"))
    n = smollm2_vocab.max_token_id()
    base = torch.zeros(1, n)
    with pytest.raises(DotjsonValueError, match=r"Invalid logits: expected a buffer whose rows and elements do not share memory .*got a \(2, 49152\) view with byte strides \(0, 4\): its rows share memory \(torch expand"):
        proc(base.expand(2, n), ts)
    assert bool((base == 0).all())  # nothing written
    flat = np.zeros(n + 8, np.float32)
    with pytest.raises(DotjsonValueError, match=r"byte strides \(32, 4\): its rows share memory"):
        proc(as_strided(flat, shape=(2, n), strides=(32, 4)), ts)
    assert not flat.any()
    with pytest.raises(DotjsonValueError, match=r"byte strides \(4, 0\): its rows share memory"):
        proc(as_strided(np.zeros(2, np.float32), (2, n), (4, 0)), ts)  # each row one element
    row = np.zeros(n, np.float32)
    with pytest.raises(DotjsonValueError, match=r"Invalid logits: expected rows that do not share memory .*got rows 0 and 1 sharing memory"):
        proc([row, row], ts)
    wide = np.zeros(n + 16, np.float32)
    with pytest.raises(DotjsonValueError, match=r"got rows 0 and 1 sharing memory"):
        proc([wide[:n], wide[16:]], ts)
    with pytest.raises(DotjsonValueError, match=r"got rows 0 and 1 sharing memory"):
        proc([torch.from_numpy(wide[:n]), torch.from_numpy(wide[8 : n + 8])], ts)
    lst = [0.0] * n
    with pytest.raises(DotjsonValueError, match=r"got the same list as rows 0 and 1"):
        proc([lst, lst], ts)
    assert not wide.any() and not row.any() and set(lst) == {0.0}


def test_layouts_that_do_not_overlap_are_masked_exactly(index, smollm2_vocab):
    g, ts = _two_row_sets(index, smollm2_vocab)
    proc = LogitsProcessor(g, -1.0)
    n = smollm2_vocab.max_token_id()
    expected = np.where(ts.to_bool_mask(), 0.0, -1.0).astype(np.float32)
    for make in [
        lambda: np.zeros((n, 2), np.float32).T,                 # a transposed buffer: rows interleave
        lambda: np.zeros((2, n), np.float32)[::-1],             # negative row stride
        lambda: np.zeros((4, n), np.float32)[::2],              # every other row
        lambda: as_strided(np.zeros(2 * n + 1, np.float32)[1:], (2, n), (4 * n, 4)),
    ]:
        buf = make()
        proc(buf, ts)
        np.testing.assert_array_equal(buf, expected)
    inter = np.zeros(2 * n, np.float32)
    rows = [inter[0::2], inter[1::2]]                           # a list of interleaved views
    proc(rows, ts)
    np.testing.assert_array_equal(np.stack(rows), expected)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_sparse_and_meta_tensors_are_refused(index, smollm2_vocab):
    torch = pytest.importorskip("torch")
    g, ts = _two_row_sets(index, smollm2_vocab)
    proc = LogitsProcessor(g, float("-inf"))
    n = smollm2_vocab.max_token_id()
    with pytest.raises(DotjsonTypeError, match=r"Invalid logits: expected a dense \(strided\) tensor, got a tensor of layout torch\.sparse_coo"):
        proc(torch.zeros(2, n).to_sparse(), ts)
    with pytest.raises(DotjsonTypeError, match=r"layout torch\.sparse_csr"):
        proc(torch.zeros(2, n).to_sparse_csr(), ts)
    with pytest.raises(DotjsonValueError, match=r"Invalid logits: expected a tensor with data, got a tensor on the 'meta' device"):
        proc(torch.zeros(2, n, device="meta"), ts)
    with pytest.raises(DotjsonValueError, match=r"'meta' device"):
        proc([torch.zeros(n, device="meta"), torch.zeros(n)], ts)
    with pytest.raises(DotjsonTypeError, match=r"layout torch\.sparse_coo"):
        proc([torch.zeros(n).to_sparse(), torch.zeros(n)], ts)


# --------------------------------------------------------------------------- vocabularies that cannot write a document


_NO_QUOTE = [bytes([b]) for b in range(256) if b != 0x22]


@pytest.mark.parametrize(
    "tokens, schema, match",
    [
        ([], {"type": "string"}, r"the start state allows no token; of the 95 printable ASCII bytes, 95 have no one-byte token"),
        ([b"1"], {"type": "string"}, r"the start state allows no token; of the 95 printable ASCII bytes, 94"),
        ([b"1", b"2"], {"const": 3}, r"the start state allows no token; of the 95 printable ASCII bytes, 93"),
        # '{' is allowed, but no key can be written without '"': every path dies
        (_NO_QUOTE, {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
         r"the start state leads to \d+ states, none of which may end the document; of the 95 printable ASCII bytes, 1 have"),
    ],
)
def test_an_index_whose_start_is_dead_is_refused(tokens, schema, match):
    v = Vocabulary.from_tuples(tokens, list(range(len(tokens))), [1000])
    with pytest.raises(VocabularyError, match=r"Invalid vocabulary for this index: its tokens cannot spell any complete document of the grammar \(" + match):
        Index(schema, v)
    with pytest.raises(VocabularyError, match=r"the start state allows no token; of the 243 UTF-8 bytes"):
        Index.from_regex('"a"' if tokens != [b"1", b"2"] else "3", v)  # from_grammar's path too


def test_a_vocabulary_missing_bytes_the_schema_does_not_need_still_builds():
    v = Vocabulary.from_tuples(_NO_QUOTE, list(range(255)), [1000])
    assert Guide(Index({"type": "integer"}, v)).get_start_tokensets().num_allowed()[0] == 15  # - 0-9 space \t \n \r
    ix = Index({"type": "object", "properties": {"a": {"type": "integer"}}}, v)  # '{}' needs no quote
    assert ix.accepts("{}")


# --------------------------------------------------------------------------- hostile index directories


def _load_in_thread(path, seconds=60):
    """``Index.deserialize_from_disk(path)`` in a thread: (finished, exception or index). A load
    that blocks (a FIFO) would otherwise hang the suite; here it reports finished=False."""
    import threading

    box = []

    def run():
        try:
            box.append(Index.deserialize_from_disk(path))
        except BaseException as e:  # noqa: BLE001 - reported to the test
            box.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    return (not t.is_alive()), (box[0] if box else None)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("name", ["manifest.json", *INDEX_FILES])
def test_a_fifo_in_an_index_directory_is_refused_without_blocking(saved_dir, name):
    import os

    (saved_dir / name).unlink()
    os.mkfifo(saved_dir / name)
    done, out = _load_in_thread(saved_dir)
    assert done, "the load blocked on a FIFO"
    assert isinstance(out, IndexFormatError)
    assert re.search(rf"cannot read .*{re.escape(name)}: .*{re.escape(name)} is a FIFO \(named pipe\), not a regular file", str(out))


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("name", ["manifest.json", *INDEX_FILES])
def test_a_symlink_to_a_device_is_refused_before_reading(saved_dir, name, target):
    import tracemalloc

    if not Path(target).exists():
        pytest.skip(f"no {target}")
    (saved_dir / name).unlink()
    (saved_dir / name).symlink_to(target)
    tracemalloc.start()
    try:
        with pytest.raises(IndexFormatError, match=rf"cannot read .*{re.escape(name)}: .* is a character device, not a regular file"):
            Index.deserialize_from_disk(saved_dir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_a_symlink_to_a_regular_file_still_loads(saved_dir, tmp_path):
    real = tmp_path / "elsewhere.npz"
    (saved_dir / "arrays.npz").rename(real)
    (saved_dir / "arrays.npz").symlink_to(real)
    assert Index.deserialize_from_disk(saved_dir).n_states > 1


def test_a_file_larger_than_the_manifest_says_is_not_read(saved_dir):
    p = saved_dir / "index.json"
    with open(p, "ab") as f:
        f.truncate(p.stat().st_size + (1 << 30))  # a sparse 1 GiB tail: free on disk, costly to read
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(IndexFormatError, match=r"index\.json is truncated or corrupt \(checksum mismatch: .*index\.json has \d+ bytes, expected \d+"):
            Index.deserialize_from_disk(saved_dir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    with pytest.raises(VocabularyError, match=r"No vocabulary file at /dev/zero: it is not a regular file"):
        Vocabulary.deserialize_from_disk("/dev/zero")


def _resign_arrays(saved_dir, blob: bytes) -> None:
    """Write ``blob`` as arrays.npz with index.json and the manifest re-signed for it."""
    from dotjson.serialization import write_manifest

    (saved_dir / "arrays.npz").write_bytes(blob)
    meta = json.loads((saved_dir / "index.json").read_text())
    meta["arrays_sha256"] = hashlib.sha256(blob).hexdigest()
    (saved_dir / "index.json").write_text(json.dumps(meta))
    write_manifest(saved_dir, INDEX_FILES)


def _zeros_member(n_bytes):
    def write(f):
        header = {"descr": "<u4", "fortran_order": False, "shape": (n_bytes // 4,)}
        np.lib.format.write_array_header_1_0(f, header)
        chunk = bytes(1 << 20)
        for _ in range(n_bytes >> 20):
            f.write(chunk)
    return write


def _deflated_npz(saved_dir, n_bytes):
    """The saved arrays.npz with its ``masks`` member replaced by ``n_bytes`` of deflated zeros."""
    import io
    import zipfile

    with np.load(saved_dir / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, a in arrays.items():
            if k == "masks":
                info = zipfile.ZipInfo(f"{k}.npy")
                info.compress_type = zipfile.ZIP_DEFLATED
                info._compresslevel = 9
                with zf.open(info, "w", force_zip64=True) as f:
                    _zeros_member(n_bytes)(f)
            else:
                with zf.open(f"{k}.npy", "w") as f:
                    np.lib.format.write_array(f, a)
    return buf.getvalue()


def _assert_refused_cheaply(saved_dir, match):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(IndexFormatError, match=match):
            Index.deserialize_from_disk(saved_dir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = (saved_dir / "arrays.npz").stat().st_size + (saved_dir / "vocabulary.bin").stat().st_size
    assert peak < 4 * size + (16 << 20), peak  # what the files hold, never what a member claims


def test_a_deflated_member_is_refused_before_it_is_inflated(saved_dir):
    _resign_arrays(saved_dir, _deflated_npz(saved_dir, 256 << 20))
    _assert_refused_cheaply(saved_dir, r"is corrupt: arrays\.npz member 'masks\.npy' declares 268435\d\d\d bytes \(\d+ stored, compression 8\): expected an uncompressed member")


@pytest.mark.slow
def test_three_gib_of_deflated_zeros_allocate_nothing(saved_dir):
    _resign_arrays(saved_dir, _deflated_npz(saved_dir, 3 << 30))
    assert (saved_dir / "arrays.npz").stat().st_size < 16 << 20  # ~3 MB of deflate for 3 GiB
    _assert_refused_cheaply(saved_dir, r"compression 8\): expected an uncompressed member")


def test_an_npy_header_declaring_a_huge_shape_is_refused_before_allocating(saved_dir):
    def write(f):
        np.lib.format.write_array_header_1_0(f, {"descr": "<u4", "fortran_order": False, "shape": (10**12, 1536)})
        f.write(bytes(64))

    import io
    import zipfile

    with np.load(saved_dir / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, a in arrays.items():
            with zf.open(f"{k}.npy", "w") as f:
                write(f) if k == "masks" else np.lib.format.write_array(f, a)
    _resign_arrays(saved_dir, buf.getvalue())
    _assert_refused_cheaply(saved_dir, r"arrays\.npz member 'masks\.npy' declares shape \(1000000000000, 1536\) of uint32 \(6144000000000000 bytes\) but holds 64 bytes of data")


@pytest.mark.parametrize("path", ["", b"", "a\0b"])
def test_empty_and_nul_paths_are_refused(index, tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)  # an empty path was "." : the index files landed here
    want = r"expected a non-empty path" if not path else r"expected a path without NUL characters"
    for call in (index.serialize_to_disk, Index.deserialize_from_disk,
                 index.vocabulary.serialize_to_disk, Vocabulary.deserialize_from_disk):
        if isinstance(path, bytes):
            with pytest.raises(DotjsonTypeError, match=r"Invalid path: expected a str or os\.PathLike, got bytes"):
                call(path)
        else:
            with pytest.raises(DotjsonValueError, match=rf"Invalid path: {want}, got {re.escape(repr(path))}"):
                call(path)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- raw exceptions, named


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"resources": 5}, DotjsonTypeError, r"Invalid resources: expected a mapping of URI \(str\) to schema, got int"),
        ({"resources": [{}]}, DotjsonTypeError, r"Invalid resources: expected a mapping of URI \(str\) to schema, got list"),
        ({"resources": {1: {}}}, DotjsonTypeError, r"Invalid resources: expected URI keys \(str\), got the key 1"),
        ({"resources": {"urn:x": "{"}}, SchemaError, r"resource 'urn:x': schema is not valid JSON"),
        ({"max_states": 10**30}, DotjsonValueError, r"Invalid max_states: expected a positive integer at most 2147483647, got 10{30} \(state ids are 31-bit\)"),
        ({"fuel": 2**62}, DotjsonValueError, r"Invalid fuel: expected a positive integer at most 4611686018427387903"),
    ],
)
def test_index_options_out_of_range_are_named_errors(smollm2_vocab, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Index(SCHEMA, smollm2_vocab, **kwargs)


@pytest.mark.parametrize(
    "doc, match",
    [
        (None, r"Invalid doc: expected text \(str or bytes\) or a sequence of token ids \(a list, tuple, 1-D array or tensor of integers\), got NoneType"),
        ({"a": 1}, r"got dict"),
        (5, r"got int"),
        (np.int64(5), r"got a 0-d int64"),
        ([[1, 2]], r"Invalid doc: expected integer token ids, got \[1, 2\] at index 0"),
        (["{", 5], r"expected integer token ids, got '\{' at index 0"),
        ([1, 1.5], r"got 1\.5 at index 1"),
        ([True], r"got True at index 0"),
        (np.array([1.0, 2.0]), r"got 1\.0 at index 0"),
    ],
)
def test_check_refuses_what_is_neither_text_nor_token_ids(index, doc, match):
    with pytest.raises(DotjsonTypeError, match=match):
        index.check(doc)
    t = token_of(index.vocabulary, b'{"')
    assert index.check(np.array([t])).reason == "incomplete" and index.check((t,)).reason == "incomplete"


def test_vocabulary_tokens_that_cannot_be_held_are_refused():
    with pytest.raises(VocabularyError, match=r"Invalid token for id 0: 'a\\ud800' holds the lone surrogate U\+D800 at index 1"):
        Vocabulary.from_tuples(["a\ud800"], [0], [1])
    singles = [bytes([b]) for b in range(256)]
    with pytest.raises(VocabularyError, match=r"Invalid token for id 256: it emits 65535 bytes, expected at most 65534 \(MAX_TOKEN_BYTES\)"):
        Vocabulary.from_tuples(singles + [b"a" * 65535], list(range(257)), [300])
    # the longest allowed token masks: the walk's clamp limit is one past it, within 16 bits
    v = Vocabulary.from_tuples(singles + [b"a" * 65534], list(range(257)), [300])
    ts = Guide(Index({"type": "string"}, v)).get_start_tokensets()
    assert ts.contains(ord('"'))[0] and not ts.contains(256)[0]
    g = Guide(Index({"type": "string", "maxLength": 70000}, v))
    g.get_start_tokensets()
    assert g.get_next_tokensets([ord('"')]).contains(256)[0]


# --------------------------------------------------------------------------- memory budgets


def _peak(f):
    import tracemalloc

    tracemalloc.start()
    try:
        out = f()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_property_name_stops_at_the_store_budget_and_leaves_the_index_usable(smollm2_vocab):
    n = 300_000
    budget = 32 << 20
    ix = Index({"type": "object", "properties": {"a" * n: {"type": "integer"}}}, smollm2_vocab, max_store_bytes=budget)
    start = Guide(ix).get_start_tokensets()
    assert ix.accepts("{}")

    def walk():
        with pytest.raises(LimitExceededError, match=r"the automaton's store would grow to \d+ MiB \(\d+ states, \d+ terms\), past its budget of 32 MiB \(Index option max_store_bytes\)"):
            ix.accepts('{"' + "a" * n + '":1}')

    _, peak = _peak(walk)
    assert peak < 3 * budget, peak
    # what was built before the budget ran out still answers (a new state needs room it lacks)
    assert ix.accepts("{}") and ix.is_prefix('{"' + "a" * 1000)
    np.testing.assert_array_equal(Guide(ix).get_start_tokensets().bits, start.bits)
    with pytest.raises(DotjsonValueError, match=r"Invalid max_store_bytes: expected a positive integer, got 0"):
        Index(SCHEMA, smollm2_vocab, max_store_bytes=0)


def test_an_intersection_of_many_patterns_stops_at_the_store_budget(smollm2_vocab):
    pats = [{"pattern": f"^[a-j]*{'abcdefghij'[i % 10]}[a-j]{{{i % 7 + 2}}}$"} for i in range(50)]
    budget = 32 << 20

    def build():
        # the store fills long before the fuel (200,000 steps, ~31 s and 648 MB) runs out
        with pytest.raises(LimitExceededError, match=r"the automaton's store would grow to \d+ MiB \(0 states, \d+ terms\), past its budget of 32 MiB \(Index option max_store_bytes\)"):
            Guide(Index({"type": "string", "allOf": pats}, smollm2_vocab, max_store_bytes=budget)).get_start_tokensets()

    _, peak = _peak(build)
    assert peak < 3 * budget, peak


@pytest.mark.slow
def test_an_intersection_of_many_patterns_runs_out_of_fuel_in_bounded_memory(smollm2_vocab):
    # the default budgets: the emptiness search's fuel counts the terms it builds, so it stops
    # after ~200,000 terms (~6 s, +240 MB on a loaded 2-core machine), where counting steps
    # alone let it run 80 s and grow to 1 GB
    pats = [{"pattern": f"^[a-j]*{'abcdefghij'[i % 10]}[a-j]{{{i % 7 + 2}}}$"} for i in range(50)]

    def build():
        with pytest.raises(LimitExceededError, match=r"emptiness search exceeded its fuel \(200000 derivative steps and terms built\)"):
            Guide(Index({"type": "string", "allOf": pats}, smollm2_vocab)).get_start_tokensets()

    _, peak = _peak(build)
    assert peak < 512 << 20, peak


def test_the_store_budget_survives_a_save(tmp_path, smollm2_vocab):
    ix = Index(SCHEMA, smollm2_vocab, max_store_bytes=48 << 20)
    ix.serialize_to_disk(tmp_path / "i")
    assert Index.deserialize_from_disk(tmp_path / "i")._auto.max_store_bytes == 48 << 20


# --------------------------------------------------------------------------- found by perf/fuzz_hostile.py


@pytest.mark.parametrize("pattern", [["a"], {"a": 1}])
def test_a_pattern_that_is_not_a_string_is_a_schema_error(smollm2_vocab, pattern):
    # fuzz schema seeds 1141, 1486: the regex cache was asked first (TypeError: unhashable)
    with pytest.raises(SchemaError, match=r"pattern must be a string at /pattern"):
        Index({"type": "string", "pattern": pattern}, smollm2_vocab)
    with pytest.raises(SchemaError, match=r"pattern must be a string at /allOf/0/pattern"):
        Index({"allOf": [{"pattern": pattern}]}, smollm2_vocab)


def test_a_resigned_npz_member_failing_its_crc_is_refused(saved_dir):
    # fuzz index-file seed 25: zipfile's BadZipFile (CRC-32) escaped as a raw exception
    blob = bytearray((saved_dir / "arrays.npz").read_bytes())
    i = blob.index(b"\x93NUMPY") + 200  # inside the first member's data
    blob[i] ^= 0xFF
    _resign_arrays(saved_dir, bytes(blob))
    with pytest.raises(IndexFormatError, match=r"is corrupt: arrays\.npz is not a readable zip file \(BadZipFile: Bad CRC-32"):
        Index.deserialize_from_disk(saved_dir)


@pytest.mark.parametrize(
    "text, match",
    [
        # fuzz schema seed 5275: an exponent past Decimal's range raised decimal.InvalidOperation
        ('{"maximum": -92233721e999999999036854775809}', r"the number -92233721e999999999036854775809 is out of range"),
        # more than 4,300 digits: Python's int() refuses them (ValueError); the number stays exact
        ('{"maximum": 1' + "0" * 20000 + "}", r"maximum: the number 10000000000000000000…0000000000 has 20001 digits written out"),
    ],
)
def test_numbers_json_text_cannot_hold_are_schema_errors(smollm2_vocab, text, match):
    from dotjson.errors import UnsupportedSchemaError

    with pytest.raises(UnsupportedSchemaError, match=match):
        Index(text, smollm2_vocab)


def test_five_thousand_digit_numbers_in_schema_text_are_read_exactly(smollm2_vocab):
    # past the eager number automaton's 4,000 states the same automaton is built a state at a
    # time (issue 32: no bound is too large), exactly, and Python's int() never sees the digits
    big, big1 = "1" + "0" * 5000, "1" + "0" * 4999 + "1"  # (str(int) refuses 4,300+ digits)
    ix = Index('{"type": "integer", "minimum": %s, "maximum": %s}' % (big, big1), smollm2_vocab)
    assert ix.accepts(big) and ix.accepts(big1) and not ix.accepts(big[:-1]) and not ix.accepts(big1[:-1] + "2")
    ix = Index('{"enum": [%s]}' % big, smollm2_vocab)
    assert ix.accepts(big) and not ix.accepts(big1) and not ix.accepts(big + "0")
    ix = Index('{"enum": [%s]}' % big[:99], smollm2_vocab)  # a literal: written directly
    assert ix.accepts(big[:99]) and not ix.accepts(big1[:98] + "1")


def test_a_long_property_name_costs_a_state_per_chunk_not_per_byte(smollm2_vocab):
    # checking a document walks its text by derivatives, a state at the end of each token-long
    # chunk only: a 1 MB declared key cost a state (and a ~1 KB transition row) per byte and
    # stopped at max_states; 100,000 bytes here
    key = "k" * 100_000
    for close in (True, False):
        ix = Index({"type": "object", "properties": {key: {"type": "integer"}}, "required": [key]},
                   smollm2_vocab, close_objects=close)
        assert ix.check(json.dumps({key: 1})).ok
        bad = ix.check(json.dumps({key[:-1] + "x": 1}))
        assert not bad.ok and bad.position == 100_001 + (5 if not close else 0)
        assert ix.n_states < 100_000 // 40
