"""One call filling the next-token masks of many (guide, row) pairs into one int32 bitmask.

A serving engine decodes many requests at once, each with its own guide (and often its own
schema); its sampler wants one ``int32[batch, words]`` bitmask, bit ``t & 31`` of word ``t >> 5``
set when token ``t`` is allowed — exactly :attr:`BatchedTokenSet.bits` reinterpreted, and the
layout of XGrammar's and llguidance's bitmasks, which vLLM and SGLang apply. This is dotjson's
``fill_next_token_bitmask_par``: the pairs are grouped by index, rows whose states are memoized
are copied at once, and the indexes with fresh states compute them one after the other in the
calling thread, or with :data:`FRESH_WORKERS` set, in a thread pool (one index per task: the
states of one index share its lock).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .errors import DotjsonIndexError, DotjsonTypeError, DotjsonValueError
from .guide import Guide
from .index import _as_int

__all__ = ["fill_next_token_bitmask"]

#: Threads computing the fresh masks of different indexes at once; 0 or 1: in the calling thread.
#: The trie walks release the GIL, but about two thirds of a fresh mask is Python holding it
#: (rule bodies, the walk's plumbing): threads then convoy on the GIL, and a serving step over 32
#: new schemas took 25-35% longer with 2 threads than in one (0.44-0.48 against 0.33-0.36 s,
#: ``perf/bench_serving_step.py``, 2 cores, 2026-12-04) and 20-30% longer with 16 on a 16-core
#: host (0.64-0.73 against 0.51-0.57 s). Worth setting where fresh masks are mostly kernel time
#: (long strings, wide special tries); the default follows the measurement.
FRESH_WORKERS = 0


def _bitmask_view(bitmask) -> np.ndarray:
    """``bitmask`` as a writeable ``uint32`` NumPy view of the caller's memory."""
    arr = bitmask
    if hasattr(arr, "detach"):  # torch
        if arr.device.type != "cpu":
            raise DotjsonValueError(
                f"Invalid bitmask: expected a CPU tensor (fill it on the CPU and copy it to the "
                f"device, as vLLM and SGLang do), got one on {arr.device}")
        arr = arr.detach().numpy()
    if not isinstance(arr, np.ndarray):
        raise DotjsonTypeError(
            f"Invalid bitmask: expected an int32 numpy array or torch tensor, got {type(bitmask).__name__}")
    if arr.dtype not in (np.int32, np.uint32) or arr.ndim != 2:
        raise DotjsonValueError(
            f"Invalid bitmask: expected a 2-D int32 array (batch, words), got {arr.dtype} {arr.shape}")
    if not arr.flags.c_contiguous or not arr.flags.writeable:
        raise DotjsonValueError("Invalid bitmask: expected a writeable C-contiguous array")
    return arr.view(np.uint32)


def fill_next_token_bitmask(pairs, bitmask, out_rows=None) -> None:
    """Write the allowed tokens of each ``(guide, row)`` pair into a row of ``bitmask``.

    Parameters
    ----------
    pairs : sequence of (Guide, int)
        A guide and one of its rows; the row's current state is read (nothing moves). Guides
        may share an index or not.
    bitmask : numpy.ndarray or torch.Tensor
        ``int32`` (or ``uint32``) ``(batch, words)``, C-contiguous, on the CPU, written in
        place. ``words`` must be at least each index's ``(max_token_id + 31) // 32``; words past
        an index's own width are cleared (padding columns of the logits stay disallowed).
    out_rows : sequence of int, optional
        The bitmask row of each pair; default ``0, 1, ...``. Rows not listed are untouched.

    Raises
    ------
    DotjsonTypeError, DotjsonValueError, DotjsonIndexError
        A pair that is not a guide and a row, a bitmask of the wrong type, dtype or width, a row
        out of range or listed twice. Checked before anything is written.
    LimitExceededError
        A budget of an index ran out computing a fresh state's mask.
    """
    bits = _bitmask_view(bitmask)
    if isinstance(pairs, (str, bytes)):
        raise DotjsonTypeError("Invalid pairs: expected a sequence of (guide, row) pairs, got text")
    pairs = list(pairs)
    if out_rows is None:
        dst = list(range(len(pairs)))
    else:
        dst = [_as_int(r, "bitmask row") for r in out_rows]
        if len(dst) != len(pairs):
            raise DotjsonValueError(
                f"Invalid out_rows: expected one bitmask row per pair ({len(pairs)}), got {len(dst)}")
    if len(set(dst)) != len(dst):
        raise DotjsonValueError("Invalid out_rows: a bitmask row is listed twice")
    groups: dict[int, tuple] = {}
    for i, p in enumerate(pairs):
        try:
            guide, row = p
        except (TypeError, ValueError):
            raise DotjsonTypeError(f"Invalid pair {i}: expected (guide, row), got {p!r}") from None
        if not isinstance(guide, Guide):
            raise DotjsonTypeError(f"Invalid pair {i}: expected a dotjson.Guide, got {type(guide).__name__}")
        state = guide.state_of(row)
        d = dst[i]
        if not 0 <= d < bits.shape[0]:
            raise DotjsonIndexError(f"Invalid bitmask row {d} for pair {i}: the bitmask has {bits.shape[0]} rows")
        idx = guide.index
        g = groups.get(id(idx))
        if g is None:
            if idx._n_words > bits.shape[1]:
                raise DotjsonValueError(
                    f"Invalid bitmask: expected at least {idx._n_words} words per row for a "
                    f"vocabulary of {idx.vocabulary.max_token_id()} ids, got {bits.shape[1]}")
            g = groups[id(idx)] = (idx, [], [])
        g[1].append(state)
        g[2].append(d)
    fresh = []
    for g in groups.values():
        idx, states, _ = g
        memo = idx._masker
        if all(s < 0 or memo.has(s) for s in states):
            _fill_group(bits, g)
        else:
            fresh.append(g)
    if len(fresh) > 1 and FRESH_WORKERS > 1:
        for _ in _worker_pool(FRESH_WORKERS).map(lambda g: _fill_group(bits, g), fresh):
            pass
    else:
        for g in fresh:
            _fill_group(bits, g)


_POOLS: dict = {}


def _worker_pool(n: int) -> ThreadPoolExecutor:
    """The process's pool of ``n`` threads for fresh masks (made on first use)."""
    pool = _POOLS.get(n)
    if pool is None:
        pool = _POOLS.setdefault(n, ThreadPoolExecutor(max_workers=n, thread_name_prefix="dotjson-fill"))
    return pool


def _fill_group(bits: np.ndarray, group) -> None:
    idx, states, dst = group
    nw = idx._n_words
    if len(states) == 1:
        d = dst[0]
        idx._fill_masks(states, bits[d : d + 1, :nw])
    else:
        tmp = np.empty((len(states), nw), dtype=np.uint32)
        idx._fill_masks(states, tmp)
        bits[dst, :nw] = tmp
    if bits.shape[1] > nw:
        bits[dst, nw:] = 0
