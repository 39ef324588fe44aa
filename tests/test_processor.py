"""LogitsProcessor against a slow NumPy reference, for every buffer kind, dtype and layout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dotjson.processor as P
from dotjson.processor import LogitsProcessor, warmup_kernels
from dotjson.tokenset import BatchedTokenSet


class FakeVocabulary:
    def __init__(self, n):
        self.n = n

    def max_token_id(self):
        return self.n


class FakeGuide:
    """Only what LogitsProcessor reads from a guide."""

    def __init__(self, vocab_size, batch_size):
        self.vocabulary = FakeVocabulary(vocab_size)
        self.batch_size = batch_size


def pack(allowed):
    batch, vocab = allowed.shape
    padded = np.zeros((batch, (vocab + 31) // 32 * 32), dtype=bool)
    padded[:, :vocab] = allowed
    return np.packbits(padded, axis=1, bitorder="little").view("<u4").astype(np.uint32)


def make_set(rng, batch, vocab, frac=0.5):
    allowed = rng.random((batch, vocab)) < frac
    return allowed, BatchedTokenSet(pack(allowed), vocab)


def reference(src, allowed, mask_value):
    """What masking must produce: allowed columns keep their value, every other becomes mask_value."""
    batch, width = src.shape
    keep = np.zeros((batch, width), dtype=bool)
    keep[:, : allowed.shape[1]] = allowed
    out = src.copy()
    out[~keep] = mask_value
    return out


def random_logits(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def assert_same(actual, expected):
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype
    # Compare bit patterns: -inf == -inf, and NaN mask values compare equal too.
    np.testing.assert_array_equal(actual.view(f"u{actual.dtype.itemsize}"), expected.view(f"u{expected.dtype.itemsize}"))


MASK_VALUES = {
    "float16": -np.inf,
    "float32": -np.inf,
    "float64": -1e30,
    "int8": -128,
    "int16": -32768,
    "int32": -(2**31),
    "int64": -(2**63),
    "uint8": 0,
    "uint16": 0,
    "uint32": 7,
    "uint64": 2**64 - 1,
}


# --------------------------------------------------------------------------- numpy 2-D


@pytest.mark.parametrize("dtype", list(MASK_VALUES))
@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("extra", [0, 37])
def test_numpy_every_dtype(dtype, batch, extra):
    rng = np.random.default_rng(hash((dtype, batch, extra)) % 2**32)
    vocab = 1000
    allowed, ts = make_set(rng, batch, vocab)
    logits = random_logits(rng, (batch, vocab + extra), dtype)
    expected = reference(logits, allowed, MASK_VALUES[dtype])
    proc = LogitsProcessor(FakeGuide(vocab, batch), MASK_VALUES[dtype])
    out = proc(logits, ts)
    assert out is logits
    assert_same(logits, expected)


@pytest.mark.parametrize("batch", [1, 4, 8])
@pytest.mark.parametrize("frac", [0.0, 0.01, 0.5, 0.99, 1.0])
@pytest.mark.parametrize("vocab,width", [(128_256, 128_256), (70_001, 70_100), (300_007, 300_100)])
@pytest.mark.parametrize("driver", ["always", "never"])
def test_numpy_large_buffers_use_every_kernel_path(monkeypatch, batch, frac, vocab, width, driver):
    monkeypatch.setattr(P, "PARALLEL", driver)
    # Serial and parallel drivers (300k float32 is past PARALLEL_MIN_BYTES even at batch 1, so
    # one row is split into chunks), odd widths for partial last words.
    rng = np.random.default_rng(batch * 131 + int(frac * 100) + vocab)
    allowed, ts = make_set(rng, batch, vocab, frac)
    logits = rng.standard_normal((batch, width)).astype(np.float32)
    expected = reference(logits, allowed, -np.inf)
    LogitsProcessor(FakeGuide(vocab, batch)).update_logits(logits, ts)
    assert_same(logits, expected)


def test_uint16_logits_with_mask_value_zero():
    rng = np.random.default_rng(5)
    vocab = 50_000
    allowed, ts = make_set(rng, 4, vocab, 0.2)
    logits = rng.integers(1, 60_000, size=(4, vocab), dtype=np.uint16)
    expected = reference(logits, allowed, 0)
    LogitsProcessor(FakeGuide(vocab, 4), 0)(logits, ts)
    assert_same(logits, expected)
    assert ((logits == 0) == ~allowed).all()


def test_numpy_1d_buffer_for_a_batch_of_one():
    rng = np.random.default_rng(6)
    allowed, ts = make_set(rng, 1, 300)
    logits = rng.standard_normal(333).astype(np.float32)
    expected = reference(logits[None, :], allowed, -np.inf)[0]
    LogitsProcessor(FakeGuide(300, 1))(logits, ts)
    assert_same(logits, expected)


LAYOUTS = {
    "column_slice": lambda a, b, v: a[:b, : v + 5],  # rows contiguous, row stride > width
    "reversed_rows": lambda a, b, v: a[b - 1 :: -1, : v + 5],  # negative row stride
    "every_other_column": lambda a, b, v: a[:b, ::2],  # non-contiguous rows
    "every_other_row": lambda a, b, v: a[::2, 10 : v + 10],
    "transposed": lambda a, b, v: a.T[: v + 7, :b].T,  # column-major rows
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_numpy_strided_layouts(layout):
    rng = np.random.default_rng(sum(map(ord, layout)))
    vocab, batch = 2000, 4
    allowed, ts = make_set(rng, batch, vocab)
    base = rng.standard_normal((2 * batch, 2 * vocab + 64)).astype(np.float32)
    if layout == "transposed":
        base = np.asfortranarray(base)
    before = base.copy()
    logits = LAYOUTS[layout](base, batch, vocab)
    expected = reference(np.ascontiguousarray(logits), allowed, -np.inf)
    LogitsProcessor(FakeGuide(vocab, batch))(logits, ts)
    assert_same(np.ascontiguousarray(logits), expected)
    # Nothing outside the view was touched.
    probe = np.zeros(base.shape, dtype=bool, order="F" if layout == "transposed" else "C")
    LAYOUTS[layout](probe, batch, vocab)[...] = True
    np.testing.assert_array_equal(base[~probe], before[~probe])


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("chunk_words", [1, 2, 7])
def test_parallel_driver_with_tiny_chunks(monkeypatch, batch, chunk_words):
    # Force the parallel driver on small buffers with chunks of a few words: every chunk
    # boundary, the partial last word and the columns past the vocabulary meet in one buffer.
    monkeypatch.setattr(P, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(P, "PARALLEL", "always")
    monkeypatch.setattr(P, "MIN_CHUNK_WORDS", chunk_words)
    rng = np.random.default_rng(batch * 10 + chunk_words)
    for vocab, width in [(1, 1), (31, 40), (100, 100), (333, 401)]:
        allowed, ts = make_set(rng, batch, vocab)
        for dtype in ("float32", "float16", "int8", "float64"):
            logits = random_logits(rng, (batch, width), dtype)
            mask_value = -100 if dtype == "int8" else -np.inf
            expected = reference(logits, allowed, mask_value)
            LogitsProcessor(FakeGuide(vocab, batch), mask_value)(logits, ts)
            assert_same(logits, expected)


def test_byte_swapped_and_record_field_buffers():
    rng = np.random.default_rng(14)
    vocab, batch = 500, 2
    allowed, ts = make_set(rng, batch, vocab)
    # Big-endian float32: the mask value's bytes are written in the buffer's byte order.
    logits = rng.standard_normal((batch, vocab + 3)).astype(">f4")
    expected = reference(logits, allowed, -np.inf)
    LogitsProcessor(FakeGuide(vocab, batch))(logits, ts)
    np.testing.assert_array_equal(logits, expected)
    assert np.isneginf(logits[~np.pad(allowed, ((0, 0), (0, 3)))]).all()
    # A field of a packed record array: a row stride (5 bytes) that is no multiple of 4.
    rec = np.zeros((batch, vocab), dtype=[("f", "<f4"), ("g", "u1")])
    rec["f"] = rng.standard_normal((batch, vocab))
    rec["g"] = 7
    field = rec["f"]
    expected = reference(field.copy(), allowed, -np.inf)
    LogitsProcessor(FakeGuide(vocab, batch))(field, ts)
    np.testing.assert_array_equal(rec["f"], expected)
    assert (rec["g"] == 7).all()


def test_read_only_bitsets_work():
    rng = np.random.default_rng(15)
    allowed, ts = make_set(rng, 2, 300)
    frozen = BatchedTokenSet(ts.bits, 300)  # ts.bits is a read-only view
    logits = rng.standard_normal((2, 300)).astype(np.float32)
    expected = reference(logits, allowed, -np.inf)
    LogitsProcessor(FakeGuide(300, 2))(logits, frozen)
    assert_same(logits, expected)
    np.testing.assert_array_equal(frozen.num_allowed(), allowed.sum(axis=1))


def test_large_parallel_strided_buffer():
    # The parallel kernel with a row stride larger than the width (a column slice).
    rng = np.random.default_rng(8)
    vocab, batch = 100_000, 4
    allowed, ts = make_set(rng, batch, vocab, 0.3)
    base = rng.standard_normal((batch, vocab + 500)).astype(np.float32)
    before = base.copy()
    view = base[:, :vocab]
    expected = reference(view.copy(), allowed, -np.inf)
    LogitsProcessor(FakeGuide(vocab, batch))(view, ts)
    assert_same(np.ascontiguousarray(view), expected)
    np.testing.assert_array_equal(base[:, vocab:], before[:, vocab:])


def test_tail_bits_past_the_vocabulary_do_not_unmask():
    vocab, width = 40, 96
    bits = np.full((2, 2), 0xFFFFFFFF, dtype=np.uint32)
    ts = BatchedTokenSet(bits, vocab)
    logits = np.ones((2, width), dtype=np.float32)
    LogitsProcessor(FakeGuide(vocab, 2))(logits, ts)
    assert np.isfinite(logits[:, :vocab]).all()
    assert np.isneginf(logits[:, vocab:]).all()


# --------------------------------------------------------------------------- lists of rows


@pytest.mark.parametrize("kind", ["separate", "row_views", "strided_views", "tuple", "mixed_dtypes"])
def test_list_of_rows(kind):
    rng = np.random.default_rng(hash(kind) % 2**32)
    vocab, batch = 3000, 4
    allowed, ts = make_set(rng, batch, vocab)
    base = rng.standard_normal((batch, 2 * vocab)).astype(np.float32)
    if kind == "separate":
        rows = [rng.standard_normal(vocab + r * 11).astype(np.float32) for r in range(batch)]
    elif kind == "row_views":
        rows = [base[r, : vocab + 3] for r in range(batch)]
    elif kind == "strided_views":
        rows = [base[r, ::2] for r in range(batch)]
    elif kind == "tuple":
        rows = tuple(base[r] for r in range(batch))
    else:
        rows = [random_logits(rng, vocab + 1, dt) for dt in ("float16", "float64", "int32", "float32")]
    # One mask value for every row: -7 fits each dtype of the mixed list.
    mask_value = -7 if kind == "mixed_dtypes" else -np.inf
    expected = [reference(row.copy()[None, :], allowed[r : r + 1], mask_value)[0] for r, row in enumerate(rows)]
    out = LogitsProcessor(FakeGuide(vocab, batch), mask_value)(rows, ts)
    assert out is rows
    for row, exp in zip(rows, expected):
        assert_same(row, exp)


def test_list_of_large_rows_uses_parallel_kernel():
    rng = np.random.default_rng(9)
    vocab, batch = 300_000, 2
    allowed, ts = make_set(rng, batch, vocab, 0.5)
    rows = [rng.standard_normal(vocab).astype(np.float32) for _ in range(batch)]
    expected = [reference(r.copy()[None, :], allowed[i : i + 1], -np.inf)[0] for i, r in enumerate(rows)]
    LogitsProcessor(FakeGuide(vocab, batch))(rows, ts)
    for row, exp in zip(rows, expected):
        assert_same(row, exp)


def test_bad_row_leaves_every_row_untouched():
    rng = np.random.default_rng(10)
    vocab = 100
    _, ts = make_set(rng, 3, vocab)
    rows = [np.ones(vocab, np.float32), np.ones(vocab, np.float32), np.ones(vocab - 1, np.float32)]
    with pytest.raises(ValueError, match=r"Invalid logits row 2: expected width >= 100 .*got width 99"):
        LogitsProcessor(FakeGuide(vocab, 3))(rows, ts)
    assert all((row == 1).all() for row in rows)


def test_list_errors():
    _, ts = make_set(np.random.default_rng(0), 2, 64)
    proc = LogitsProcessor(FakeGuide(64, 2))
    with pytest.raises(ValueError, match="Invalid logits: expected a list of 2 rows .*got 3 rows"):
        proc([np.zeros(64, np.float32)] * 3, ts)
    with pytest.raises(ValueError, match=r"Invalid logits row 1: expected a 1-D array, got shape \(1, 64\)"):
        proc([np.zeros(64, np.float32), np.zeros((1, 64), np.float32)], ts)
    with pytest.raises(TypeError, match="Invalid logits row 0: expected a 1-D NumPy array, a tensor or a list of numbers, got tuple"):
        proc([(0.0,) * 64, np.zeros(64, np.float32)], ts)
    with pytest.raises(TypeError, match=r"Invalid logits row 1, element 3: expected a real number \(int or float\), got 'x'"):
        proc([[0.0] * 64, [0.0] * 3 + ["x"] + [0.0] * 60], ts)
    with pytest.raises(ValueError, match=r"Invalid logits row 0: expected width >= 64 .*got width 63"):
        proc([[0.0] * 63, [0.0] * 64], ts)
    with pytest.raises(TypeError, match="Invalid logits: expected a float16/32/64.*got dtype bool"):
        proc([np.zeros(64, bool), np.zeros(64, bool)], ts)


def test_python_lists_are_masked_in_place():
    # The usage page's example: a three-token vocabulary where the second token is not allowed.
    ts = BatchedTokenSet(pack(np.array([[True, False, True]])), 3)
    logits = [[1, 2, 3]]
    row = logits[0]
    out = LogitsProcessor(FakeGuide(3, 1), 0)(logits, ts)
    assert out is logits and logits[0] is row and logits == [[1, 0, 3]]
    assert type(logits[0][1]) is int
    # a flat list is one row; floats take float(mask_value); columns past the vocabulary masked
    flat = [1.5, 2.5, 3.5, 4.5]
    LogitsProcessor(FakeGuide(3, 1))(flat, ts)
    assert flat == [1.5, float("-inf"), 3.5, float("-inf")]
    # rows of mixed kinds; integer rows need an integer mask value (as integer arrays do)
    rng = np.random.default_rng(3)
    allowed, ts = make_set(rng, 3, 70)
    rows = [list(range(70)), [float(x) for x in range(72)], np.arange(70, dtype=np.float32)]
    LogitsProcessor(FakeGuide(70, 3), -9)(rows, ts)
    for r in range(3):
        ref = reference(np.arange(len(rows[r]), dtype=np.float64)[None, :], allowed[r : r + 1], -9)[0]
        assert list(rows[r]) == ref.tolist()
    ints = [[5] * 70, [5] * 70, [5] * 70]
    with pytest.raises(ValueError, match=r"Invalid mask_value: -inf cannot be stored in logits row 0, a list of integers"):
        LogitsProcessor(FakeGuide(70, 3))(ints, ts)
    assert ints == [[5] * 70] * 3
    with pytest.raises(ValueError, match=r"Invalid logits: expected a list of 3 rows .*got a flat list of numbers \(one row\)"):
        LogitsProcessor(FakeGuide(70, 3))([1.0] * 70, ts)


def test_mask_values_that_cannot_mask_are_refused():
    for bad in (float("inf"), float("nan"), np.float32("nan"), np.inf):
        with pytest.raises(ValueError, match=r"Invalid mask_value: expected a finite number or -inf \(a value that cannot be sampled\)"):
            LogitsProcessor(FakeGuide(64, 1), bad)
    LogitsProcessor(FakeGuide(64, 1), float("-inf"))
    LogitsProcessor(FakeGuide(64, 1), -1e30)


# --------------------------------------------------------------------------- torch


TORCH_CASES = [
    (torch.float32, float("-inf")),
    (torch.float16, float("-inf")),
    (torch.bfloat16, float("-inf")),
    (torch.bfloat16, -12.375),
    (torch.float64, -1e300),
    (torch.int16, -100),
    (torch.uint8, 0),
    (torch.int64, -(2**62)),
    (torch.uint16, 0),
    (torch.uint32, 2**32 - 1),
    (torch.uint64, 2**63 + 5),
]
_WIDE = {torch.uint16, torch.uint32, torch.uint64}  # few torch ops: compare through int64


def torch_reference(t, allowed, mask_value):
    """The masked tensor, computed in NumPy (torch lacks indexing ops for uint16/32/64)."""
    if t.dtype == torch.bfloat16:
        out = t.float().numpy().copy()
        keep = np.zeros(out.shape, dtype=bool)
        keep[:, : allowed.shape[1]] = allowed
        out[~keep] = mask_value
        return torch.from_numpy(out).to(torch.bfloat16)
    out = reference(t.numpy(), allowed, mask_value)
    return torch.from_numpy(out)


def same_tensor(a, b):
    if a.dtype in _WIDE:
        return a.dtype == b.dtype and np.array_equal(a.numpy(), b.numpy())
    return torch.equal(a, b)


@pytest.mark.parametrize("dtype,mask_value", TORCH_CASES)
@pytest.mark.parametrize("batch", [1, 4])
def test_torch_cpu_in_place_without_copies(dtype, mask_value, batch):
    rng = np.random.default_rng(batch)
    vocab, width = 5000, 5120
    allowed, ts = make_set(rng, batch, vocab)
    g = torch.Generator().manual_seed(batch)
    if dtype.is_floating_point:
        logits = torch.randn(batch, width, generator=g).to(dtype)
    else:
        logits = torch.randint(1, 100, (batch, width), generator=g).to(dtype)
    expected = torch_reference(logits, allowed, mask_value)
    ptr = logits.data_ptr()
    storage_ptr = logits.untyped_storage().data_ptr()
    out = LogitsProcessor(FakeGuide(vocab, batch), mask_value)(logits, ts)
    assert out is logits
    assert logits.data_ptr() == ptr and logits.untyped_storage().data_ptr() == storage_ptr
    assert logits.dtype == dtype
    assert same_tensor(logits, expected)


def test_torch_bfloat16_large_and_transposed():
    rng = np.random.default_rng(11)
    vocab, batch = 128_256, 4
    allowed, ts = make_set(rng, batch, vocab, 0.5)
    logits = torch.randn(batch, vocab).to(torch.bfloat16)
    expected = torch_reference(logits, allowed, float("-inf"))
    ptr = logits.data_ptr()
    LogitsProcessor(FakeGuide(vocab, batch))(logits, ts)
    assert logits.data_ptr() == ptr and torch.equal(logits, expected)
    # A non-contiguous tensor (a transposed buffer) is masked through its strided view.
    store = torch.randn(vocab, batch)
    view = store.t()
    expected = torch_reference(view, allowed, float("-inf"))
    LogitsProcessor(FakeGuide(vocab, batch))(view, ts)
    assert torch.equal(view, expected)


def test_torch_list_of_row_views():
    rng = np.random.default_rng(12)
    vocab, batch = 700, 3
    allowed, ts = make_set(rng, batch, vocab)
    logits = torch.randn(batch, 800)
    expected = torch_reference(logits, allowed, float("-inf"))
    rows = [logits[r] for r in range(batch)]
    LogitsProcessor(FakeGuide(vocab, batch))(rows, ts)
    assert torch.equal(logits, expected)


@pytest.mark.parametrize("dtype,mask_value", TORCH_CASES)
def test_torch_ops_path_matches_the_kernel(dtype, mask_value):
    # The accelerator path (bits unpacked with torch ops, masked_fill_) runs on any device; check
    # it on the CPU against the same reference the kernels meet.
    rng = np.random.default_rng(13)
    vocab, batch = 1000, 4
    allowed, ts = make_set(rng, batch, vocab)
    logits = (torch.rand(batch, 1040) * 100).to(dtype)
    expected = torch_reference(logits, allowed, mask_value)
    proc = LogitsProcessor(FakeGuide(vocab, batch), mask_value)
    proc._mask_device(logits, ts._bits, str(dtype))
    assert same_tensor(logits, expected)


def test_torch_errors():
    _, ts = make_set(np.random.default_rng(0), 2, 64)
    proc = LogitsProcessor(FakeGuide(64, 2))
    with pytest.raises(TypeError, match=r"Invalid logits: expected a float16/32/64.*got dtype torch.bool"):
        proc(torch.zeros(2, 64, dtype=torch.bool), ts)
    with pytest.raises(TypeError, match=r"got dtype torch.complex64"):
        proc(torch.zeros(2, 64, dtype=torch.complex64), ts)
    with pytest.raises(ValueError, match="requires_grad=True"):
        proc(torch.zeros(2, 64, requires_grad=True), ts)
    with pytest.raises(ValueError, match=r"Invalid logits: expected 2 rows .*got 3 rows"):
        proc(torch.zeros(3, 64), ts)
    with pytest.raises(ValueError, match=r"Invalid mask_value: -inf cannot be stored in torch.int16 logits"):
        proc(torch.zeros(2, 64, dtype=torch.int16), ts)
    with pytest.raises(ValueError, match=r"Invalid mask_value: 1e\+40 does not fit torch.bfloat16 logits"):
        LogitsProcessor(FakeGuide(64, 2), 1e40)(torch.zeros(2, 64, dtype=torch.bfloat16), ts)


# --------------------------------------------------------------------------- errors


def test_shape_and_type_errors():
    _, ts = make_set(np.random.default_rng(0), 2, 64)
    proc = LogitsProcessor(FakeGuide(64, 2))
    with pytest.raises(ValueError, match=r"Invalid logits: expected 2 rows \(the token set's batch size\), got 3 rows"):
        proc(np.zeros((3, 64), np.float32), ts)
    with pytest.raises(ValueError, match=r"Invalid logits: expected shape \(2, width\) for a batch of 2, got \(64,\)"):
        proc(np.zeros(64, np.float32), ts)
    with pytest.raises(ValueError, match=r"Invalid logits: expected a 2-D \(batch, width\) buffer, got shape \(2, 1, 64\)"):
        proc(np.zeros((2, 1, 64), np.float32), ts)
    with pytest.raises(ValueError, match=r"Invalid logits: expected width >= 64 \(the vocabulary's max_token_id\(\)\), got width 63"):
        proc(np.zeros((2, 63), np.float32), ts)
    with pytest.raises(TypeError, match="Invalid logits: expected a float16/32/64.*got dtype bool"):
        proc(np.zeros((2, 64), bool), ts)
    with pytest.raises(TypeError, match="got dtype complex64"):
        proc(np.zeros((2, 64), np.complex64), ts)
    with pytest.raises(TypeError, match="got dtype object"):
        proc(np.zeros((2, 64), object), ts)
    with pytest.raises(TypeError, match=r"Invalid logits: expected a 2-D NumPy array, a list of rows \(1-D arrays, tensors or lists of numbers\) .*got str"):
        proc("logits", ts)
    ro = np.zeros((2, 64), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="Invalid logits: expected a writeable buffer"):
        proc(ro, ts)
    with pytest.raises(TypeError, match="Invalid token_set: expected a BatchedTokenSet, got ndarray"):
        proc(np.zeros((2, 64), np.float32), ts._bits)
    other = BatchedTokenSet(np.zeros((2, 3), np.uint32), 96)
    with pytest.raises(ValueError, match=r"Invalid token_set: expected vocabulary size 64 \(the guide's\), got 96"):
        proc(np.zeros((2, 96), np.float32), other)


def test_mask_value_errors():
    _, ts = make_set(np.random.default_rng(0), 1, 64)
    guide = FakeGuide(64, 1)
    with pytest.raises(ValueError, match=r"Invalid mask_value: -inf cannot be stored in int16 logits; use an integer such as -32768"):
        LogitsProcessor(guide)(np.zeros((1, 64), np.int16), ts)
    with pytest.raises(ValueError, match=r"Invalid mask_value: 300 does not fit uint8 logits \(range 0 .. 255\)"):
        LogitsProcessor(guide, 300)(np.zeros((1, 64), np.uint8), ts)
    with pytest.raises(ValueError, match=r"Invalid mask_value: -1 does not fit uint16 logits"):
        LogitsProcessor(guide, -1)(np.zeros((1, 64), np.uint16), ts)
    with pytest.raises(ValueError, match=r"Invalid mask_value: 0.5 cannot be stored in int32 logits"):
        LogitsProcessor(guide, 0.5)(np.zeros((1, 64), np.int32), ts)
    with pytest.raises(ValueError, match=r"Invalid mask_value: -10000000000.0 does not fit float16 logits \(it would become -inf\)"):
        LogitsProcessor(guide, -1e10)(np.zeros((1, 64), np.float16), ts)
    with pytest.raises(TypeError, match="Invalid mask_value: expected a real number"):
        LogitsProcessor(guide, "-inf")
    with pytest.raises(TypeError, match="Invalid mask_value: expected a real number"):
        LogitsProcessor(guide, True)
    with pytest.raises(TypeError, match="Invalid guide: expected a dotjson Guide"):
        LogitsProcessor(object())
    # An integral float is fine for integer buffers; the buffer is untouched after an error.
    logits = np.full((1, 64), 5, np.int16)
    with pytest.raises(ValueError):
        LogitsProcessor(guide)(logits, ts)
    assert (logits == 5).all()
    LogitsProcessor(guide, -3.0)(logits, ts)
    assert set(np.unique(logits)) <= {5, -3}


def test_driver_chooser_prefers_the_faster_and_backs_off():
    c = P._DriverChooser()
    assert c.pick() == 0
    c.record(0, 1000, 1000)  # serial: 1 ns/byte
    assert c.pick() == 1
    c.record(1, 50_000, 1000)  # parallel: 50 ns/byte (a busy host)
    picks = [c.pick() for _ in range(15)]
    assert picks == [0] * 15
    assert c.pick() == 1  # the 16th call re-tries the loser
    c.record(1, 50_000, 1000)  # it loses again: the next retry is twice as far
    assert c.interval == 32
    assert [c.pick() for _ in range(31)] == [0] * 31 and c.pick() == 1
    c.record(1, 100, 1000)  # now parallel wins (an idle host): it is used, the interval resets
    assert c.interval == 16
    assert c.pick() == 1
    c.record(1, 100_000, 1000)  # the host got busy: parallel's smoothed cost passes serial's
    assert c.pick() == 0


def test_processor_properties_and_warmup():
    guide = FakeGuide(64, 1)
    proc = LogitsProcessor(guide, -5)
    assert proc.guide is guide and proc.mask_value == -5 and proc.vocab_size == 64
    warmup_kernels(("float32", "bfloat16", "int8", "float64"))
    assert P.PARALLEL_MIN_BYTES > 0


# --------------------------------------------------------------------------- the seed's program flow


FLOW_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "tag": {"enum": ["red", "green", "blue"]}},
    "required": ["ok", "tag"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("buffer", ["array", "views"])
def test_seed_program_flow_uint16_mask_zero(tiny_bpe_vocab, batch, buffer):
    """Vocabulary -> Index -> Guide and LogitsProcessor -> start/next token sets, masking, sampling."""
    import json

    import jsonschema

    from dotjson import Guide, Index

    vocabulary = tiny_bpe_vocab
    index = Index(FLOW_SCHEMA, vocabulary)
    guide = Guide(index, batch_size=batch)
    processor = LogitsProcessor(guide, 0)
    rng = np.random.default_rng(batch + len(buffer))
    eos = set(vocabulary.eos_token_ids)
    docs = [b""] * batch
    token_set = guide.get_start_tokensets()
    for step in range(400):
        # Random positive logits: after masking, the nonzero ones are exactly the allowed tokens,
        # and argmax samples uniformly among them.
        logits = rng.integers(1, 65_535, size=(batch, vocabulary.max_token_id()), dtype=np.uint16)
        target = logits if buffer == "array" else [logits[r] for r in range(batch)]
        if step % 2:
            processor(target, token_set)
        else:
            processor.update_logits(target, token_set)
        np.testing.assert_array_equal(logits != 0, token_set.to_bool_mask())
        sampled = logits.argmax(axis=1)
        for r, t in enumerate(sampled.tolist()):
            if t not in eos:
                docs[r] += vocabulary.token_bytes(t)
        token_set = guide.get_next_tokensets(sampled)
        if guide.is_finished().all():
            break
    assert guide.is_finished().all(), docs
    for doc in docs:
        jsonschema.validate(json.loads(doc), FLOW_SCHEMA)
