"""The store's arrays in memory: where large ones live and how they grow.

The automaton's store is a dozen NumPy arrays that double when a kernel runs out of room
(:meth:`dotjson.automaton.Automaton._grow`). A new index's are NumPy's (small: copied from the
base image); an array that grows moves, once, into reserved address space sized for what it may
become, and grows in place from then on (:func:`_reserve`, :func:`_extend`, :func:`grown`):
growing by copying paid a page fault for every page of the copy inside one mask (a transition
table's 2 → 4 MiB: ~1.4 ms of CPU here, the slowest mask of several MaskBench documents). An
index past its first 64 states thus holds up to 1 GiB of address space for its transition table
(``max_states`` rows of 1 KiB; seen in a process's virtual size, not in its memory: only the
pages written are backed). Large fresh arrays (4 MiB and more: the rehashed tables) are
anonymous mappings of their own (:func:`_alloc`).
"""

from __future__ import annotations

import mmap
import sys

import numpy as np

try:  # (imported here, not inside a mask: a first import reads the disk)
    import resource
except ImportError:  # pragma: no cover - not on POSIX
    resource = None

#: Bytes from which NumPy advises the kernel to back an array with huge pages (``madvise
#: MADV_HUGEPAGE``, NumPy's default on Linux for allocations of 4 MiB and more).
_HUGE_ADVISED = 1 << 22


#: flags of a private anonymous mapping (None where ``mmap`` takes no flags: NumPy's allocation)
_MAP_PRIVATE_ANON = (mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", getattr(mmap, "MAP_ANON", 0))
                     if hasattr(mmap, "MAP_PRIVATE") else None)


#: ``MAP_NORESERVE`` (Linux): address space only, no commit charge until a page is written
_MAP_NORESERVE = 0x4000 if sys.platform.startswith("linux") else 0
#: Address space reserved for one growing array (see :func:`_reserve`): the rows its owner says
#: it may reach, at most this many bytes, and under an address-space limit (``ulimit -v``) at
#: most a sixteenth of the room left.
_RESERVE_BYTES = 1 << 30
#: ... and at most this many times the rows asked for where the kernel charges reserved address
#: space as committed memory (``vm.overcommit_memory = 2``: ``MAP_NORESERVE`` is ignored there,
#: and a large reservation would take commit room other allocations need).
_RESERVE_AHEAD = 8


def _strict_overcommit() -> bool:
    """The kernel charges every private mapping in full (``vm.overcommit_memory = 2``)."""
    try:
        with open("/proc/sys/vm/overcommit_memory", "rb") as f:
            return f.read(8).strip() == b"2"
    except OSError:
        return False


#: whether reservations are bounded by :data:`_RESERVE_AHEAD` (read once, at import)
_STRICT = _strict_overcommit() if _MAP_NORESERVE else True


def _alloc(shape, dtype, fill=None, empty=False) -> np.ndarray:
    """An array for the store, filled with ``fill`` (zeros when None; left unwritten with
    ``empty`` where that is cheaper): one of 4 MiB and more in an anonymous mapping of its own
    rather than NumPy's allocation.

    NumPy asks for transparent huge pages on such arrays; where the kernel defragments on demand
    for advised ranges (``defrag = madvise``, the default) a first touch in a fragmented process
    compacts memory synchronously: growing the transition table of MaskBench's
    ``Github_ultra---o34345`` from 16,384 to 32,768 states took 230 ms of CPU inside one mask
    after ten schemas had run in the process (2 ms when it ran first). An anonymous mapping gets
    ordinary pages, zero-filled by the kernel; the array keeps it alive.
    """
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if n < _HUGE_ADVISED or _MAP_PRIVATE_ANON is None:
        if empty:
            return np.empty(shape, dtype=dtype)
        return np.zeros(shape, dtype=dtype) if fill is None else np.full(shape, fill, dtype=dtype)
    # (private: Python's default for an anonymous mapping is MAP_SHARED, memory of the shmem
    # filesystem, whose pages go through its page cache: growing a 16 MiB transition table to
    # 32 MiB took 6.9 ms of CPU that way against 5.6 ms private, medians of 30, 11.8 against
    # 8.8 ms at worst)
    out = np.frombuffer(mmap.mmap(-1, n, flags=_MAP_PRIVATE_ANON), dtype=dtype).reshape(shape)
    if fill is not None and fill != 0:
        out.fill(fill)
    return out


def _reserve(rows: int, row_shape: tuple, dtype, ahead: int = 0) -> np.ndarray | None:
    """A zero-filled array of ``rows`` rows that can later be :func:`_extend`-ed in place: the
    first rows of a private anonymous mapping of address space for up to ``ahead`` rows (at
    most :data:`_RESERVE_BYTES`; at least ``rows``; at most :data:`_RESERVE_AHEAD` times
    ``rows`` where overcommit is strict), ``MAP_NORESERVE`` so that only the pages written cost
    memory. ``None`` where no such mapping is possible (the caller copies instead).

    Growing a table by copying it into a mapping twice its size pays, besides the copy, a page
    fault for every page of the copy: the states' transition table of
    ``Github_ultra---o34345`` grows 4 → 32 MiB inside single masks (6–9 ms of CPU each time,
    40 ms at worst under memory pressure). Extended in place, a page is faulted in once, when
    the row on it is first written, and nothing is copied; arrays handed out before stay valid
    (they view the same mapping).
    """
    dtype = np.dtype(dtype)
    row_bytes = int(np.prod(row_shape, dtype=np.int64)) * dtype.itemsize
    if _MAP_PRIVATE_ANON is None or row_bytes == 0:
        return None
    want = rows * _RESERVE_AHEAD if _STRICT else max(ahead, rows * _RESERVE_AHEAD)
    cap = max(rows, min(want, _RESERVE_BYTES // row_bytes))
    room = _address_space_room()
    if room is not None:  # reserve ahead only into a small part of what is left
        cap = max(rows, min(cap, room // 16 // row_bytes))
    try:
        mm = mmap.mmap(-1, cap * row_bytes, flags=_MAP_PRIVATE_ANON | _MAP_NORESERVE)
    except (OSError, ValueError, OverflowError):  # (address space or commit limits)
        return None
    flat = np.frombuffer(mm, dtype=dtype)
    return flat[: rows * (row_bytes // dtype.itemsize)].reshape((rows,) + tuple(row_shape))


def _address_space_room() -> int | None:
    """Bytes of address space this process may still map under its limit (``RLIMIT_AS``,
    ``ulimit -v``), or ``None`` when it has no limit."""
    if resource is None:
        return None
    try:
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm", "rb") as f:
            used = int(f.read(64).split()[0]) * mmap.PAGESIZE
    except (ImportError, OSError, ValueError, AttributeError, IndexError):
        return None
    return max(0, soft - used)


def _mapped(buf) -> bool:
    """``buf`` is a mapping (NumPy holds one through a memoryview)."""
    return isinstance(getattr(buf, "obj", buf), mmap.mmap)


def _extend(arr: np.ndarray, rows: int) -> np.ndarray | None:
    """``arr`` (from :func:`_reserve`, or an earlier :func:`_extend`) with ``rows`` rows, in
    place, when its mapping has room; else ``None``. Rows past those ever handed out are zero."""
    flat = arr.base
    while isinstance(flat, np.ndarray) and not _mapped(flat.base):
        flat = flat.base
    if not isinstance(flat, np.ndarray) or flat.ndim != 1 or flat.dtype != arr.dtype \
            or flat.ctypes.data != arr.ctypes.data or not arr.flags.c_contiguous:
        return None
    per_row = arr.size // arr.shape[0] if arr.shape[0] else 0
    if per_row == 0 or flat.size < rows * per_row:
        return None
    return flat[: rows * per_row].reshape((rows,) + arr.shape[1:])


def _pow2(n: int) -> int:
    c = 16
    while c < n:
        c *= 2
    return c


def grown(arr, cap, fill, used=None, ahead=0):
    """``arr`` with ``cap`` rows: its rows (the first ``used`` of them), the new ones ``fill``
    (left unwritten when ``None``: their owner writes a row before it is read).

    An array in reserved address space grows in place while its reservation lasts: nothing is
    copied, and the arrays published before stay valid (a kernel or reader still on them sees
    the same rows). Otherwise it is copied, into a reservation of up to ``ahead`` rows (the
    most its owner expects it to need, so that it moves once) when ``ahead`` is given or the
    array reaches 4 MiB (then :data:`_RESERVE_AHEAD` times ``cap``), else into NumPy's memory."""
    n = arr.shape[0] if used is None else used
    out = _extend(arr, cap)
    if out is not None:
        if fill is not None and fill != 0:
            out[arr.shape[0]:] = fill  # (rows never handed out are zero pages)
        return out
    big = cap * (arr.nbytes // max(1, arr.shape[0])) >= _HUGE_ADVISED
    out = _reserve(cap, arr.shape[1:], arr.dtype, ahead) if big or ahead > cap else None
    zeroed = out is not None
    if out is None:
        out = _alloc((cap,) + arr.shape[1:], arr.dtype, empty=True)
    if fill is not None and not (zeroed and fill == 0):
        out[n:] = fill  # (the old rows written once, not filled first)
    out[:n] = arr[:n]
    return out
