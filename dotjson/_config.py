"""Tunables and Numba options, in one place."""

from __future__ import annotations

#: Options for every serial kernel. Kernels release the GIL so a caller can compute
#: token sets in a thread while the model runs its forward pass.
NJIT_OPTS = dict(cache=True, nogil=True)
#: Options for kernels that pay for threads (masking large batched buffers).
NJIT_PARALLEL_OPTS = dict(cache=True, nogil=True, parallel=True)
#: Default budget of one automaton's store (term, state and memo arrays), the Index option
#: ``max_store_bytes``: a state costs ~1-4 KiB (its 256-entry transition row and its terms), so
#: 2 GiB holds several hundred thousand states. Checked before every growth, so a hostile
#: schema (a 1 MB literal, an intersection of 50 patterns) stops at a bounded size.
MAX_STORE_BYTES = 2 << 30
#: Budget of the process-wide head cache (:mod:`dotjson.automaton.heads`): the masks of the
#: heads of states (the rest of a string with its format or bounds) shared by every index of a
#: vocabulary, 16 KiB each at 128k tokens, so 64 MiB holds ~4,000; when full it is emptied and
#: refilled on demand (each index keeps the heads it uses).
MAX_HEAD_CACHE_BYTES = 64 << 20
