"""In-place logit masking from packed token bitsets, for any buffer a generation loop holds.

:class:`LogitsProcessor` writes ``mask_value`` into every logit whose token a
:class:`~dotjson.tokenset.BatchedTokenSet` row does not allow, and into every column at or past
the vocabulary's size (models pad their embedding matrix). Supported buffers:

- a NumPy array ``(batch, width)`` (or ``(width,)`` for a batch of one), any row stride;
- a list (or tuple) of 1-D NumPy arrays or tensors, one per row, contiguous or strided views;
- a list of Python lists of numbers, one per row (the usage page's ``[[1, 2, 3]]``), updated
  in place; a flat list of numbers is one row;
- a PyTorch tensor: on the CPU through a zero-copy NumPy view of its storage (bfloat16 included,
  written as its bit pattern); on a CUDA device by one Triton kernel there
  (:mod:`dotjson._kernels.gpu`: float16, bfloat16, float32, Triton present), otherwise (another
  device, other dtypes, no Triton) through torch ops on that device.

Dtypes: float16/32/64, bfloat16 (torch), int8/16/32/64 and uint8/16/32/64. The jitted kernels
never see a float: a buffer is viewed as the unsigned integer type of the same width and the mask
value's bit pattern is stored, so one compiled kernel serves every dtype of a given width.
"""

from __future__ import annotations

import math
import numbers
import sys
import time

import numba
import numpy as np
from numpy.lib.stride_tricks import as_strided

from dotjson._kernels import gpu as _gpu
from dotjson._kernels import mask as _k
from dotjson.errors import DotjsonTypeError, DotjsonValueError
from dotjson.tokenset import BatchedTokenSet

__all__ = ["LogitsProcessor", "warmup_kernels"]

#: Buffers smaller than this are masked on the calling thread. Measured on 2 idle cores
#: (float32, 50% allowed): 1 x 128k (512 KiB) takes 5 us parallel vs 7 us serial, 1 x 256k
#: (1 MiB) 8 vs 13 us, 4 MiB 26 vs 45 us. A parallel region must wake every worker, and on an
#: oversubscribed host (torch's own thread team busy, other processes) a woken worker can wait
#: milliseconds for a core, so below 1 MiB the microseconds saved are not worth that risk.
PARALLEL_MIN_BYTES = 1 << 20
#: ``"auto"``: for buffers of at least ``PARALLEL_MIN_BYTES``, time both drivers as they run and
#: use the faster (re-checking the other now and then, less often each time it loses);
#: ``"always"`` / ``"never"``: always the parallel / the serial driver for those buffers.
PARALLEL = "auto"
#: A row is split into chunks of at least this many 32-token words, so a batch of one row still
#: spreads over every thread while each task stays long enough to amortize its scheduling.
MIN_CHUNK_WORDS = 512
#: How a CUDA tensor is masked: ``"auto"``, one Triton kernel where it can (float16, bfloat16,
#: float32, a mask value exact in float32, Triton importable), else torch ops; ``"torch"``:
#: always torch ops (the reference the Triton kernel is tested against).
DEVICE_KERNEL = "auto"

_UINT_OF_SIZE = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
_NUMPY_KINDS = {"f": (2, 4, 8), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8)}
_BUFFER_KINDS = (
    "a 2-D NumPy array, a list of rows (1-D arrays, tensors or lists of numbers) or a torch tensor"
)


class _DriverChooser:
    """Picks the serial or the parallel driver from their measured cost (ns per byte, smoothed).

    One per process: whether threads pay depends on how busy the machine's cores are, which no
    static threshold knows. The losing driver is re-tried every ``interval`` calls; each retry
    it loses doubles the interval (up to 1024), so a busy host pays for a slow parallel call
    rarely, and an idle one keeps its threads.
    """

    def __init__(self):
        self.cost = [None, None]  # serial, parallel
        self.calls = 0
        self.interval = 16

    def pick(self) -> int:
        serial, parallel = self.cost
        if serial is None:
            return 0
        if parallel is None:
            return 1
        best = 0 if serial <= parallel else 1
        self.calls += 1
        if self.calls >= self.interval:
            self.calls = 0
            return 1 - best
        return best

    def record(self, mode: int, ns: int, nbytes: int) -> None:
        c = ns / max(nbytes, 1)
        old, other = self.cost[mode], self.cost[1 - mode]
        if old is not None and other is not None and old > other:
            # A re-try of the losing driver: its old cost is stale, take the fresh one.
            self.interval = min(self.interval * 2, 1024) if c > other else 16
            self.cost[mode] = c
        else:
            self.cost[mode] = c if old is None else 0.75 * old + 0.25 * c


_CHOOSER = _DriverChooser()


def _invalid(what: str, expected: str, got) -> str:
    return f"Invalid {what}: expected {expected}, got {got}"


def _overlap_2d(batch: int, width: int, rs: int, cs: int, item: int) -> bool:
    """Whether two distinct elements of a ``(batch, width)`` view with byte strides ``(rs, cs)``
    and items of ``item`` bytes share a byte (``torch.expand`` gives ``rs == 0``; an
    ``as_strided`` view can give rows that overlap by any amount).

    Exact: elements ``(a, b)`` and ``(a + da, b + db)`` overlap when ``|da*rs + db*cs| < item``,
    and flipping an axis only translates the set of addresses, so the strides' signs do not
    matter. The common layouts (rows apart, or columns apart as in a transposed buffer) answer
    at once; any other takes one step per row.
    """
    if batch <= 0 or width <= 0:
        return False
    rs, cs = abs(rs), abs(cs)
    if width > 1 and cs < item:
        return True  # elements of one row overlap (cs == 0: a broadcast row)
    if batch == 1 or rs >= (width - 1) * cs + item:
        return False  # rows apart: C order and its slices
    if width == 1 or cs >= (batch - 1) * rs + item:
        return rs < item  # columns apart (a transposed buffer): overlap only within a column
    for da in range(1, batch):
        x = da * rs
        k1 = min(x // cs, width - 1)
        if x - k1 * cs < item or (k1 + 1 < width and (k1 + 1) * cs - x < item):
            return True
    return False


def _rows_overlap(rows) -> tuple[int, int] | None:
    """Two rows of a list of 1-D buffers that share memory, ``(r, r)`` for a row overlapping
    itself, or ``None``. Each row is ``(r, key, pointer, n, stride_bytes, item, array)``:
    ``key`` separates devices, ``array`` is the NumPy view (``None`` for a device tensor).
    Rows whose extents are apart answer in one sort; rows that interleave with the same stride
    are compared element-exactly, NumPy arrays of different strides by ``np.shares_memory``,
    and device rows of different strides whose extents meet count as overlapping."""
    spans = []
    for r, key, ptr, n, st, item, arr in rows:
        if n > 1 and abs(st) < item:
            return (r, r)
        lo = ptr + min(0, (n - 1) * st)
        hi = ptr + max(0, (n - 1) * st) + item
        spans.append((key, lo, hi, r, ptr, n, st, item, arr))
    spans.sort(key=lambda x: x[:4])
    for i, (key, lo, hi, r, ptr, n, st, item, arr) in enumerate(spans):
        for key2, lo2, hi2, r2, ptr2, n2, st2, item2, arr2 in spans[i + 1:]:
            if key2 != key or lo2 >= hi:
                break
            if st == st2 and item == item2 and st != 0:
                meet = _same_stride_meet(ptr2 - ptr, n, n2, st, item)
            elif arr is not None and arr2 is not None:
                meet = np.shares_memory(arr, arr2)
            else:
                meet = True
            if meet:
                return (min(r, r2), max(r, r2))
    return None


def _same_stride_meet(d: int, n1: int, n2: int, st: int, item: int) -> bool:
    """Whether rows ``p + k*st`` (``k < n1``) and ``p + d + m*st`` (``m < n2``) share a byte."""
    if st < 0:
        st, d = -st, -d
    # elements k and m meet when |d + (m - k)*st| < item, with -(n1 - 1) <= m - k <= n2 - 1
    lo, hi = -(n1 - 1), n2 - 1
    j = min(max(-d // st, lo), hi)
    return any(lo <= t <= hi and abs(d + t * st) < item for t in (j, j + 1))


def _overlap_message(batch: int, width: int, strides) -> str:
    where = "its rows share memory" if batch > 1 else "the elements of its row share memory"
    return _invalid(
        "logits",
        "a buffer whose rows and elements do not share memory (each row is masked with its own "
        "token set); pass a copy (e.g. .clone() or .copy())",
        f"a ({batch}, {width}) view with byte strides {tuple(int(x) for x in strides)}: {where} "
        "(torch expand, broadcast_to or an overlapping as_strided view)",
    )


def _check_rows_apart(prepared) -> None:
    """Refuse a list of rows two of which share memory (the same row twice, views that
    overlap): each row must receive its own mask, or one row's mask erases another's tokens."""
    seen = {}
    spans = []
    for r, (kind, row, _dtype, _name) in enumerate(prepared):
        if kind == "list":
            other = seen.setdefault(id(row), r)
            if other != r:
                raise DotjsonValueError(_invalid(
                    "logits", "rows that do not share memory (each row gets its own mask)",
                    f"the same list as rows {other} and {r}"))
        elif kind == "device":
            item = row.element_size()
            spans.append((r, str(row.device), row.data_ptr(), row.shape[0], row.stride(0) * item, item, None))
        else:
            spans.append((r, "", row.__array_interface__["data"][0], row.shape[0], row.strides[0],
                          row.dtype.itemsize, row))
    if len(spans) > 1 or any(n > 1 and abs(st) < item for _, _, _, n, st, item, _ in spans):
        hit = _rows_overlap(spans)
        if hit is not None:
            a, b = hit
            got = f"row {a} overlapping itself (byte stride {_row_stride(spans, a)})" if a == b \
                else f"rows {a} and {b} sharing memory"
            raise DotjsonValueError(_invalid(
                "logits", "rows that do not share memory (each row gets its own mask); pass copies", got))


def _row_stride(spans, r: int) -> int:
    return next(st for rr, _, _, _, st, _, _ in spans if rr == r)


def _is_tensor(obj) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def _is_number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def _check_mask_value(value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise DotjsonTypeError(_invalid("mask_value", "a real number (float or int)", repr(value)))
    if not isinstance(value, numbers.Integral):
        f = float(value)
        if math.isnan(f) or f == math.inf:
            # nan compares false with everything and +inf is the largest logit: an argmax or a
            # softmax would then pick the very tokens the mask forbids.
            raise DotjsonValueError(
                _invalid("mask_value", "a finite number or -inf (a value that cannot be sampled)", repr(value))
            )
    return value


def _mask_pattern(value, dtype: np.dtype, dtype_name: str):
    """The bit pattern of ``value`` stored in ``dtype``, as the unsigned type of the same width."""
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            stored = np.array([value], dtype=dtype)
        if math.isfinite(float(value)) and not np.isfinite(stored[0]):
            raise DotjsonValueError(
                f"Invalid mask_value: {value!r} does not fit {dtype_name} logits "
                f"(it would become {stored[0]}); use -inf or a value within "
                f"±{np.finfo(dtype).max}"
            )
        return stored.view(_UINT_OF_SIZE[dtype.itemsize])[0]
    info = np.iinfo(dtype)
    if isinstance(value, numbers.Integral):
        v = int(value)
    else:
        f = float(value)
        if not (math.isfinite(f) and f.is_integer()):
            raise DotjsonValueError(
                f"Invalid mask_value: {value!r} cannot be stored in {dtype_name} logits; "
                f"use an integer such as {info.min}"
            )
        v = int(f)
    if not info.min <= v <= info.max:
        raise DotjsonValueError(
            f"Invalid mask_value: {v} does not fit {dtype_name} logits "
            f"(range {info.min} .. {info.max})"
        )
    return np.array([v], dtype=dtype).view(_UINT_OF_SIZE[dtype.itemsize])[0]


def _bf16_pattern(value, dtype_name: str):
    """The bfloat16 bit pattern of ``value`` (round to nearest even), as ``uint16``."""
    import torch

    stored = torch.tensor([float(value)], dtype=torch.float32).to(torch.bfloat16)
    if math.isfinite(float(value)) and not bool(torch.isfinite(stored)):
        raise DotjsonValueError(
            f"Invalid mask_value: {value!r} does not fit {dtype_name} logits "
            f"(it would become {float(stored)}); use -inf or a value within "
            f"±{torch.finfo(torch.bfloat16).max}"
        )
    return np.uint16(int(stored.view(torch.int16).item()) & 0xFFFF)


def _check_numpy_dtype(dtype: np.dtype, dtype_name: str) -> None:
    if dtype.itemsize not in _NUMPY_KINDS.get(dtype.kind, ()):
        raise DotjsonTypeError(
            _invalid(
                "logits",
                "a float16/32/64, bfloat16 (torch) or int8..64/uint8..64 dtype",
                f"dtype {dtype_name}",
            )
        )


class LogitsProcessor:
    """Masks, in place, the logits of the tokens a guide does not allow.

    Parameters
    ----------
    guide : dotjson.Guide
        The guide whose token sets this processor applies; its ``vocabulary.max_token_id()``
        fixes the vocabulary size (logits may be wider; the extra columns are masked).
    mask_value : float or int, default -inf
        What a disallowed logit becomes. For integer buffers it must be an integer that fits
        the dtype (e.g. ``0`` for ``uint16``); ``-inf`` into an integer buffer is an error.
        ``nan`` and ``+inf`` are refused: they cannot mask (a sampler would pick them).

    Examples
    --------
    >>> processor = LogitsProcessor(guide, float("-inf"))   # doctest: +SKIP
    >>> token_set = guide.get_start_tokensets()              # doctest: +SKIP
    >>> processor(logits, token_set)                         # doctest: +SKIP
    """

    def __init__(self, guide, mask_value: float = float("-inf")):
        vocabulary = getattr(guide, "vocabulary", None)
        if vocabulary is None or not hasattr(vocabulary, "max_token_id"):
            raise DotjsonTypeError(_invalid("guide", "a dotjson Guide (with .vocabulary)", type(guide).__name__))
        self._guide = guide
        self._vocab_size = int(vocabulary.max_token_id())
        self._mask_value = _check_mask_value(mask_value)
        self._patterns: dict = {}
        self._starts: dict = {}

    @property
    def guide(self):
        """The guide this processor was built for."""
        return self._guide

    @property
    def mask_value(self):
        """What a disallowed logit becomes."""
        return self._mask_value

    @property
    def vocab_size(self) -> int:
        """The vocabulary's size (``max_token_id()``): the narrowest logits width accepted."""
        return self._vocab_size

    def __call__(self, logits, token_set: BatchedTokenSet):
        """Same as :meth:`update_logits`."""
        return self.update_logits(logits, token_set)

    def update_logits(self, logits, token_set: BatchedTokenSet):
        """Write ``mask_value`` into every logit whose token is not allowed, in place.

        Parameters
        ----------
        logits : numpy.ndarray, list of rows, or torch.Tensor
            ``(batch, width)`` with ``width >= vocab_size`` (a 1-D buffer is accepted when the
            token set has one row). A list holds one row per sequence: a 1-D array or tensor,
            or a Python list of numbers (ints take an integer ``mask_value``, stored as
            ``int``). Modified in place; never copied.
        token_set : BatchedTokenSet
            One row per row of ``logits``.

        Returns
        -------
        The same ``logits`` object, masked.

        Raises
        ------
        DotjsonTypeError
            A buffer kind or dtype that is not supported, or a mask value of the wrong kind.
        DotjsonValueError
            A shape, batch or width that does not match the token set and vocabulary, a
            read-only buffer, or a mask value that does not fit the dtype.
        """
        bits = self._check_token_set(token_set)
        if isinstance(logits, np.ndarray):
            self._mask_ndarray(logits, bits)
        elif _is_tensor(logits):
            self._mask_tensor(logits, bits)
        elif isinstance(logits, list) and logits and _is_number(logits[0]):
            # One row given as a flat list of numbers (like a 1-D array): a batch of one.
            if bits.shape[0] != 1:
                raise DotjsonValueError(
                    _invalid(
                        "logits",
                        f"a list of {bits.shape[0]} rows (the token set's batch size)",
                        "a flat list of numbers (one row)",
                    )
                )
            self._mask_rows([logits], bits)
        elif isinstance(logits, (list, tuple)):
            self._mask_rows(logits, bits)
        else:
            raise DotjsonTypeError(_invalid("logits", _BUFFER_KINDS, type(logits).__name__))
        return logits

    # ------------------------------------------------------------------ checks

    def _check_token_set(self, token_set) -> np.ndarray:
        if not isinstance(token_set, BatchedTokenSet):
            raise DotjsonTypeError(_invalid("token_set", "a BatchedTokenSet", type(token_set).__name__))
        if token_set.vocab_size != self._vocab_size:
            raise DotjsonValueError(
                _invalid(
                    "token_set",
                    f"vocabulary size {self._vocab_size} (the guide's)",
                    token_set.vocab_size,
                )
            )
        return token_set._bits

    def _pattern(self, dtype: np.dtype, name: str):
        key = (dtype.str, name)
        pat = self._patterns.get(key)
        if pat is None:
            if name == "torch.bfloat16":  # stored as an int16 view of the tensor
                pat = _bf16_pattern(self._mask_value, name)
            else:
                pat = _mask_pattern(self._mask_value, dtype, name)
            self._patterns[key] = pat
        return pat

    def _check_2d(self, shape, batch: int, what: str = "logits") -> tuple[int, int]:
        if len(shape) == 1:
            if batch != 1:
                raise DotjsonValueError(
                    _invalid(what, f"shape ({batch}, width) for a batch of {batch}", tuple(shape))
                )
            shape = (1, shape[0])
        if len(shape) != 2:
            raise DotjsonValueError(_invalid(what, "a 2-D (batch, width) buffer", f"shape {tuple(shape)}"))
        if shape[0] != batch:
            raise DotjsonValueError(
                _invalid(what, f"{batch} rows (the token set's batch size)", f"{shape[0]} rows")
            )
        self._check_width(shape[1], what)
        return int(shape[0]), int(shape[1])

    def _check_width(self, width: int, what: str) -> None:
        if width < self._vocab_size:
            raise DotjsonValueError(
                _invalid(
                    what,
                    f"width >= {self._vocab_size} (the vocabulary's max_token_id())",
                    f"width {width}",
                )
            )

    # ------------------------------------------------------------------ numpy

    def _mask_ndarray(self, logits: np.ndarray, bits: np.ndarray, name: str | None = None) -> None:
        dtype = logits.dtype
        name = name or str(dtype)
        _check_numpy_dtype(dtype, name)
        batch, width = self._check_2d(logits.shape, bits.shape[0])
        if not logits.flags.writeable:
            raise DotjsonValueError(_invalid("logits", "a writeable buffer (masking is in place)", "a read-only one"))
        mval = self._pattern(dtype, name)
        udt = _UINT_OF_SIZE[dtype.itemsize]
        if batch == 0 or width == 0:
            return
        arr = logits.reshape(batch, width) if logits.ndim == 1 else logits
        item = dtype.itemsize
        rs, cs = arr.strides
        if not arr.flags.c_contiguous and _overlap_2d(batch, width, rs, cs, item):
            raise DotjsonValueError(_overlap_message(batch, width, (rs, cs)))
        if cs == item and (batch == 1 or (rs % item == 0 and abs(rs) >= width * item)):
            # Every row is contiguous and rows do not overlap: one kernel call over the span
            # from the lowest row to the highest, addressed by per-row start offsets.
            if arr.flags.c_contiguous:
                flat = arr.reshape(-1)
                starts = self._row_starts(batch, width)
            else:
                step = rs // item
                low = 0 if step >= 0 else batch - 1
                span = abs(step) * (batch - 1) + width
                flat = as_strided(arr[low], shape=(span,), strides=(item,))
                starts = (np.arange(batch, dtype=np.int64) - low) * step
            self._run(flat.view(udt), starts, width, bits, mval)
        else:
            for r in range(batch):
                self._mask_row(arr[r], bits[r : r + 1], mval, udt)

    def _row_starts(self, batch: int, width: int) -> np.ndarray:
        key = (batch, width)
        starts = self._starts.get(key)
        if starts is None:
            if len(self._starts) > 64:
                self._starts.clear()
            starts = self._starts[key] = np.arange(batch, dtype=np.int64) * width
        return starts

    def _run(self, flat, starts, width, bits, mval) -> None:
        batch = starts.shape[0]
        threads = numba.get_num_threads()
        nbytes = flat.itemsize * width * batch
        if threads == 1 or nbytes < PARALLEL_MIN_BYTES or PARALLEL == "never":
            _k.mask_serial(flat, starts, width, bits, self._vocab_size, mval)
            return
        mode = 1 if PARALLEL == "always" else _CHOOSER.pick()
        t0 = time.perf_counter_ns()
        if mode == 0:
            _k.mask_serial(flat, starts, width, bits, self._vocab_size, mval)
        else:
            width_words = (width + 31) // 32
            n_chunks = max(1, min(-(-4 * threads // batch), width_words // MIN_CHUNK_WORDS))
            chunk_words = -(-width_words // n_chunks)
            _k.mask_parallel(flat, starts, width, bits, self._vocab_size, mval, n_chunks, chunk_words)
        _CHOOSER.record(mode, time.perf_counter_ns() - t0, nbytes)

    def _mask_row(self, row: np.ndarray, bits_row: np.ndarray, mval, udt) -> None:
        """One 1-D row; ``bits_row`` is that row's bitset as a (1, n_words) array."""
        item = row.dtype.itemsize
        if row.flags.c_contiguous:
            self._run(row.view(udt), self._row_starts(1, row.shape[0]), row.shape[0], bits_row, mval)
        elif row.strides[0] % item == 0:
            _k.mask_strided_row(row.view(udt), bits_row[0], self._vocab_size, mval)
        else:
            # A stride that is not a multiple of the item size (a packed record field): the
            # unsigned view is impossible, so mask through NumPy on the row itself.
            allowed = BatchedTokenSet(bits_row, self._vocab_size).to_bool_mask()[0]
            keep = np.zeros(row.shape[0], dtype=bool)
            keep[: self._vocab_size] = allowed
            row[~keep] = np.array([mval], dtype=udt).view(row.dtype)[0]

    # ------------------------------------------------------------------ lists

    def _mask_rows(self, rows, bits: np.ndarray) -> None:
        batch = bits.shape[0]
        if len(rows) != batch:
            raise DotjsonValueError(
                _invalid("logits", f"a list of {batch} rows (the token set's batch size)", f"{len(rows)} rows")
            )
        # Check every row before writing any, so a bad row leaves the whole batch untouched.
        prepared = [self._prepare_row(row, r) for r, row in enumerate(rows)]
        _check_rows_apart(prepared)
        for r, (kind, row, dtype, name) in enumerate(prepared):
            if kind == "list":
                self._mask_list_row(row, bits[r : r + 1], dtype)
            elif kind == "device":
                self._mask_device(row.unsqueeze(0), bits[r : r + 1], name)
            else:
                mval = self._pattern(dtype, name)
                self._mask_row(row, bits[r : r + 1], mval, _UINT_OF_SIZE[dtype.itemsize])

    def _prepare_row(self, row, r: int):
        what = f"logits row {r}"
        if _is_tensor(row):
            if row.dim() != 1:
                raise DotjsonValueError(_invalid(what, "a 1-D tensor", f"shape {tuple(row.shape)}"))
            if row.device.type != "cpu":
                self._check_tensor_dtype(row)
                self._check_width(row.shape[0], what)
                return ("device", row, None, str(row.dtype))
            arr, name = self._tensor_as_numpy(row)
        elif isinstance(row, np.ndarray):
            arr, name = row, str(row.dtype)
        elif isinstance(row, list):
            return ("list", row, self._list_value(row, what), None)
        else:
            raise DotjsonTypeError(
                _invalid(what, "a 1-D NumPy array, a tensor or a list of numbers", type(row).__name__)
            )
        if arr.ndim != 1:
            raise DotjsonValueError(_invalid(what, "a 1-D array", f"shape {arr.shape}"))
        _check_numpy_dtype(arr.dtype, name)
        self._check_width(arr.shape[0], what)
        if not arr.flags.writeable:
            raise DotjsonValueError(_invalid(what, "a writeable buffer (masking is in place)", "a read-only one"))
        self._pattern(arr.dtype, name)  # validate the mask value for this dtype up front
        return ("host", arr, arr.dtype, name)

    def _list_value(self, row: list, what: str):
        """Check a row given as a Python list; return the value to store into it.

        A list has no dtype: a row of integers takes an integer mask value (stored as ``int``,
        like an integer array takes an integer), a row holding any float takes
        ``float(mask_value)``.
        """
        self._check_width(len(row), what)
        kinds = set(map(type, row))
        if not kinds <= {int, float}:
            for j, x in enumerate(row):
                if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
                    raise DotjsonTypeError(
                        _invalid(f"{what}, element {j}", "a real number (int or float)", repr(x))
                    )
        integral = all(isinstance(x, numbers.Integral) for x in row) if kinds - {int} else True
        value = self._mask_value
        if not integral:
            return float(value)
        if isinstance(value, numbers.Integral):
            return int(value)
        f = float(value)
        if not (math.isfinite(f) and f.is_integer()):
            raise DotjsonValueError(
                f"Invalid mask_value: {value!r} cannot be stored in {what}, a list of integers; "
                f"use an integer mask value such as 0"
            )
        return int(f)

    def _mask_list_row(self, row: list, bits_row: np.ndarray, value) -> None:
        """Write ``value`` into the disallowed positions of a Python list, in place."""
        vocab = self._vocab_size
        allowed = BatchedTokenSet(bits_row, vocab).to_bool_mask()[0]
        for i in np.flatnonzero(~allowed).tolist():
            row[i] = value
        if len(row) > vocab:
            row[vocab:] = [value] * (len(row) - vocab)

    # ------------------------------------------------------------------ torch

    def _check_tensor_dtype(self, t) -> None:
        import torch

        if t.layout != torch.strided:
            raise DotjsonTypeError(_invalid(
                "logits", "a dense (strided) tensor", f"a tensor of layout {t.layout} (masking writes every logit in place)"))
        if t.device.type == "meta":
            raise DotjsonValueError(_invalid(
                "logits", "a tensor with data", "a tensor on the 'meta' device (it holds no values to mask)"))
        ok = {
            torch.float16, torch.float32, torch.float64, torch.bfloat16,
            torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
        }
        for extra in ("uint16", "uint32", "uint64"):
            if hasattr(torch, extra):
                ok.add(getattr(torch, extra))
        if t.dtype not in ok:
            raise DotjsonTypeError(
                _invalid(
                    "logits",
                    "a float16/32/64, bfloat16 or integer tensor",
                    f"dtype {t.dtype}",
                )
            )
        if t.requires_grad:
            raise DotjsonValueError(
                _invalid(
                    "logits",
                    "a tensor that does not require grad (masking is in place; use torch.no_grad())",
                    "requires_grad=True",
                )
            )

    def _tensor_as_numpy(self, t):
        """A NumPy view sharing ``t``'s CPU storage (bfloat16 as int16 bits), and a dtype name."""
        import torch

        self._check_tensor_dtype(t)
        name = str(t.dtype)
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy(), name
        return t.numpy(), name

    def _mask_tensor(self, logits, bits: np.ndarray) -> None:
        if logits.device.type != "cpu":
            self._check_tensor_dtype(logits)
            batch, width = self._check_2d(tuple(logits.shape), bits.shape[0])
            item = logits.element_size()
            strides = [x * item for x in logits.stride()]
            rs, cs = (0, strides[0]) if logits.dim() == 1 else strides
            if _overlap_2d(batch, width, rs, cs, item):
                raise DotjsonValueError(_overlap_message(batch, width, (rs, cs)))
            self._mask_device(logits, bits, str(logits.dtype))
            return
        arr, name = self._tensor_as_numpy(logits)
        self._mask_ndarray(arr, bits, name)

    def _mask_device(self, logits, bits: np.ndarray, name: str) -> None:
        """Mask a tensor on an accelerator where it lives (:func:`dotjson._kernels.gpu.mask_device`:
        the Triton kernel on CUDA, torch ops otherwise), the bits copied over."""
        import torch

        # Validate the mask value against the tensor's dtype with the same rules as the host path.
        value = self._device_value(logits.dtype, name)
        if logits.dim() == 1:
            logits = logits.unsqueeze(0)
        if logits.shape[0] == 0 or logits.shape[1] == 0:
            return
        packed = torch.from_numpy(np.ascontiguousarray(bits.view(np.int32))).to(logits.device, non_blocking=True)
        _gpu.mask_device(logits, packed, self._vocab_size, value, triton=DEVICE_KERNEL != "torch")

    def _device_value(self, torch_dtype, name: str):
        import torch

        if torch_dtype == torch.bfloat16:
            self._pattern(np.dtype(np.int16), name)
            return float(self._mask_value)
        np_dtype = np.dtype(str(torch_dtype).replace("torch.", ""))
        self._pattern(np_dtype, name)
        return float(self._mask_value) if np_dtype.kind == "f" else int(self._mask_value)


def warmup_kernels(dtypes=("float32",)) -> None:
    """Compile (or load from Numba's cache) the masking and token-set kernels.

    Parameters
    ----------
    dtypes : iterable of str
        Logit dtypes to prepare; each width (1, 2, 4, 8 bytes) compiles once and serves every
        dtype of that width. ``"bfloat16"`` counts as 2 bytes. Others compile on first use.
    """
    sizes = {"bfloat16": 2}
    vocab = 70
    bits = np.full((2, (vocab + 31) // 32), 0x5555_5555, dtype=np.uint32)
    _k.popcount_rows(bits, vocab, np.empty(2, dtype=np.int64))
    _k.forced_tokens(bits, vocab, np.empty(2, dtype=np.int64))
    _k.list_ids(bits[0], vocab, np.empty(64, dtype=np.int64))
    for name in dtypes:
        item = sizes.get(name) or np.dtype(name).itemsize
        udt = _UINT_OF_SIZE[item]
        buf = np.zeros(2 * 96, dtype=udt)
        starts = np.array([0, 96], dtype=np.int64)
        mval = udt.type(0)
        _k.mask_serial(buf, starts, 96, bits, vocab, mval)
        _k.mask_parallel(buf, starts, 96, bits, vocab, mval, 1, 3)
        _k.mask_strided_row(buf[::2], bits[0], vocab, mval)
