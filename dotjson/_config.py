"""Tunables and Numba options, in one place."""

from __future__ import annotations

#: Options for every serial kernel. Kernels release the GIL so a caller can compute
#: token sets in a thread while the model runs its forward pass.
NJIT_OPTS = dict(cache=True, nogil=True)
#: Options for kernels that pay for threads (masking large batched buffers).
NJIT_PARALLEL_OPTS = dict(cache=True, nogil=True, parallel=True)
