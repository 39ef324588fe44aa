"""Hostile and careless use through the public API: no crash, no silent wrong result.

Every misuse is a :class:`dotjson.errors.DotjsonError` that also derives from the builtin a caller
would catch (``TypeError``, ``ValueError``, ``IndexError``), raised before anything changes; every
corrupt saved file is refused before a kernel sees it. Each case asserts the exact outcome. Cases
that could crash the interpreter if a check regressed (a hostile saved vocabulary reaching the
trie walk) run in a subprocess. The items of issue 14 that live in the schema compiler and the
automaton (recursion limits, deep and wide schemas, enum and repetition costs) are tested by
their own suites.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

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
    p = tmp_path / "vocabulary.bin"
    smollm2_vocab.serialize_to_disk(p)
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
    p = tmp_path / "vocabulary.bin"
    smollm2_vocab.serialize_to_disk(p)
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
    from dotjson.vocabulary import _read_container, _write_container

    p = tmp_path / "v.bin"
    tiny_bpe_vocab.serialize_to_disk(p)
    meta, arrs = _read_container(p)
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
