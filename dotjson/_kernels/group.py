"""Counting-sort grouping of items by a small integer key (a CSR adjacency in two arrays)."""

from __future__ import annotations

import numba
import numpy as np

from .jit import kernel


@kernel
def group_by(keys, n_groups):
    """Items ``0 .. len(keys) - 1`` grouped by key: ``(ptr, order)`` with the items of key ``g``
    at ``order[ptr[g]:ptr[g + 1]]``, in increasing item order (stable). Keys lie in
    ``0 .. n_groups - 1``."""
    ptr = np.zeros(n_groups + 1, dtype=np.int32)
    for i in range(keys.shape[0]):
        ptr[keys[i] + 1] += 1
    for g in range(n_groups):
        ptr[g + 1] += ptr[g]
    fill = ptr[:n_groups].copy()
    order = np.empty(keys.shape[0], dtype=np.int32)
    for i in range(keys.shape[0]):
        g = keys[i]
        order[fill[g]] = i
        fill[g] += 1
    return ptr, order
