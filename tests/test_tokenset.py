"""BatchedTokenSet against slow NumPy references (unpackbits), on fixed and random bitsets."""

from __future__ import annotations

import numpy as np
import pytest

from dotjson.tokenset import BatchedTokenSet, TokenSetRow


def pack(allowed: np.ndarray) -> np.ndarray:
    """Reference packing: bool (batch, vocab) -> uint32 (batch, ceil(vocab/32)), little-endian bits."""
    batch, vocab = allowed.shape
    n_words = (vocab + 31) // 32
    padded = np.zeros((batch, n_words * 32), dtype=bool)
    padded[:, :vocab] = allowed
    return np.packbits(padded, axis=1, bitorder="little").view("<u4").astype(np.uint32)


def random_allowed(rng, batch, vocab, frac):
    return rng.random((batch, vocab)) < frac


def test_fixed_example():
    allowed = np.zeros((3, 70), dtype=bool)
    allowed[0, [0, 31, 32, 69]] = True
    allowed[1, 5] = True
    ts = BatchedTokenSet(pack(allowed), 70)
    assert ts.batch_size == 3 and ts.vocab_size == 70
    assert ts.num_allowed().tolist() == [4, 1, 0]
    assert ts.forced_tokens().tolist() == [-1, 5, -1]
    assert ts.contains(31).tolist() == [True, False, False]
    assert ts.contains(5).tolist() == [False, True, False]
    assert ts.contains(70).tolist() == [False, False, False]
    assert ts.contains(10**9).tolist() == [False, False, False]
    assert ts[0].tolist() == [0, 31, 32, 69]
    assert list(ts[1]) == [5]
    assert len(ts[0]) == 4 and len(ts[2]) == 0
    assert 69 in ts[0] and 68 not in ts[0] and 70 not in ts[0] and -1 not in ts[0] and "a" not in ts[0]
    assert ts[-1].tolist() == [] and ts[-3].tolist() == [0, 31, 32, 69]
    assert [len(row) for row in ts] == [4, 1, 0]
    assert isinstance(ts[0], TokenSetRow)
    assert ts[0].to_numpy().dtype == np.int64
    np.testing.assert_array_equal(ts.to_bool_mask(), allowed)
    assert "num_allowed=[4, 1, 0]" in repr(ts)
    assert "ids=[0, 31, 32, 69]" in repr(ts[0])


@pytest.mark.parametrize("vocab", [1, 31, 32, 33, 1000, 4099])
@pytest.mark.parametrize("frac", [0.0, 0.001, 0.5, 1.0])
def test_random_against_reference(vocab, frac):
    rng = np.random.default_rng(vocab * 7 + int(frac * 1000))
    allowed = random_allowed(rng, 4, vocab, frac)
    ts = BatchedTokenSet(pack(allowed), vocab)
    np.testing.assert_array_equal(ts.num_allowed(), allowed.sum(axis=1))
    np.testing.assert_array_equal(ts.to_bool_mask(), allowed)
    forced = np.where(allowed.sum(axis=1) == 1, allowed.argmax(axis=1), -1)
    np.testing.assert_array_equal(ts.forced_tokens(), forced)
    for r in range(4):
        np.testing.assert_array_equal(ts[r].to_numpy(), np.flatnonzero(allowed[r]))
        assert len(ts[r]) == allowed[r].sum()
    for t in rng.integers(0, vocab, size=20):
        np.testing.assert_array_equal(ts.contains(int(t)), allowed[:, t])


def test_single_allowed_token_is_forced_everywhere():
    vocab = 5000
    allowed = np.zeros((4, vocab), dtype=bool)
    for r, t in enumerate([0, 31, 2048, 4999]):
        allowed[r, t] = True
    ts = BatchedTokenSet(pack(allowed), vocab)
    assert ts.forced_tokens().tolist() == [0, 31, 2048, 4999]
    assert ts.num_allowed().tolist() == [1, 1, 1, 1]


def test_padding_bits_past_vocab_are_ignored():
    vocab = 40
    bits = np.full((2, 2), 0xFFFFFFFF, dtype=np.uint32)  # bits 40..63 set: not tokens
    ts = BatchedTokenSet(bits, vocab)
    assert ts.num_allowed().tolist() == [40, 40]
    assert ts[0].tolist() == list(range(40))
    assert 45 not in ts[0]
    assert ts.contains(45).tolist() == [False, False]
    assert ts.to_bool_mask().shape == (2, 40)
    bits = np.zeros((1, 2), dtype=np.uint32)
    bits[0, 1] = 1 << 20  # token 52 only, which is past the vocabulary
    assert BatchedTokenSet(bits, vocab).forced_tokens().tolist() == [-1]


def test_slice_and_bits_are_views_that_protect_the_source():
    rng = np.random.default_rng(1)
    allowed = random_allowed(rng, 5, 300, 0.3)
    bits = pack(allowed)
    ts = BatchedTokenSet(bits, 300)
    sub = ts[1:4]
    assert isinstance(sub, BatchedTokenSet) and sub.batch_size == 3
    np.testing.assert_array_equal(sub.to_bool_mask(), allowed[1:4])
    view = ts.bits
    assert view.shape == bits.shape and np.shares_memory(view, bits)
    with pytest.raises(ValueError, match="read-only"):
        view[0, 0] = 1
    with pytest.raises(ValueError, match="read-only"):
        ts[0].bits[0] = 1


def test_constructor_errors():
    with pytest.raises(TypeError, match="Invalid bits: expected a numpy.ndarray, got list"):
        BatchedTokenSet([[1]], 32)
    with pytest.raises(TypeError, match="Invalid bits: expected dtype uint32, got int32"):
        BatchedTokenSet(np.zeros((1, 1), dtype=np.int32), 32)
    with pytest.raises(ValueError, match=r"expected shape \(batch, 2\) for vocab_size 33, got \(1, 1\)"):
        BatchedTokenSet(np.zeros((1, 1), dtype=np.uint32), 33)
    with pytest.raises(ValueError, match=r"expected shape \(batch, 1\)"):
        BatchedTokenSet(np.zeros(1, dtype=np.uint32), 32)
    with pytest.raises(ValueError, match="C-contiguous"):
        BatchedTokenSet(np.zeros((2, 4), dtype=np.uint32)[:, ::2], 64)
    with pytest.raises(TypeError, match="Invalid vocab_size: expected an integer, got float"):
        BatchedTokenSet(np.zeros((1, 1), dtype=np.uint32), 32.0)
    with pytest.raises(ValueError, match="Invalid vocab_size: expected a non-negative integer, got -1"):
        BatchedTokenSet(np.zeros((1, 0), dtype=np.uint32), -1)


def test_query_errors():
    ts = BatchedTokenSet(np.zeros((2, 1), dtype=np.uint32), 32)
    with pytest.raises(ValueError, match="Invalid token id: expected a non-negative integer, got -3"):
        ts.contains(-3)
    with pytest.raises(TypeError, match="Invalid token id: expected an integer, got str"):
        ts.contains("a")
    with pytest.raises(IndexError, match=r"Invalid row index: expected -2 <= index < 2, got 2"):
        ts[2]
    with pytest.raises(TypeError, match="Invalid row index: expected an integer or a slice, got str"):
        ts["0"]
    assert ts.contains(np.int64(3)).tolist() == [False, False]


def test_len_counts_allowed_tokens_of_one_row():
    allowed = np.zeros((3, 70), dtype=bool)
    allowed[0, [0, 31, 32, 69]] = True
    allowed[1, 5] = True
    ts = BatchedTokenSet(pack(allowed), 70)
    assert len(ts[0:1]) == 4 and len(ts[1:2]) == 1 and len(ts[2:3]) == 0
    assert len(ts[0:1]) == len(ts[0:1][0]) == ts[0:1].num_allowed()[0]
    assert bool(ts) and bool(ts[1:2]) and not ts[2:3] and not ts[0:0]
    with pytest.raises(TypeError, match=r"len\(\) of a BatchedTokenSet of 3 rows is ambiguous.*num_allowed\(\)"):
        len(ts)
    # iteration goes by rows whatever the batch size (list() ignores the refused length hint)
    assert [r.tolist() for r in ts] == [[0, 31, 32, 69], [5], []]
    assert len(list(ts[0:1])) == 1 and ts[0:1].batch_size == 1


def test_empty_vocab_and_batch():
    ts = BatchedTokenSet(np.zeros((0, 2), dtype=np.uint32), 64)
    assert len(ts) == 0 and ts.num_allowed().shape == (0,) and ts.to_bool_mask().shape == (0, 64)
    ts = BatchedTokenSet(np.zeros((2, 0), dtype=np.uint32), 0)
    assert ts.num_allowed().tolist() == [0, 0] and ts[0].tolist() == []
