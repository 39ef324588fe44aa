"""Tunables and Numba options, in one place."""

from __future__ import annotations

from dataclasses import dataclass, fields

#: Options for every serial kernel. Kernels release the GIL so a caller can compute
#: token sets in a thread while the model runs its forward pass.
NJIT_OPTS = dict(cache=True, nogil=True)
#: Options for kernels that pay for threads (masking large batched buffers).
NJIT_PARALLEL_OPTS = dict(cache=True, nogil=True, parallel=True)


@dataclass(frozen=True)
class Budgets:
    """The resource budgets of an index and their defaults: the one definition that
    :class:`~dotjson.Index` (its constructors and ``**options``), the automaton and
    :class:`~dotjson.IndexCache` read. Each is an ``Index`` option of the same name; a budget
    that runs out raises :class:`~dotjson.errors.LimitExceededError`.

    Attributes
    ----------
    max_states : int, default 1_000_000
        Most automaton states an index may hold.
    max_cache_bytes : int, default 1 GiB
        Most memory for memoized masks; when full, the memo is emptied and refilled on demand.
    fuel : int, default 200_000
        Work allowed to one emptiness search: its derivative steps plus the terms it builds, so
        that it bounds time and memory.
    max_store_bytes : int, default 2 GiB
        Most memory for one automaton's store (term, state and memo arrays), checked before every
        growth: a state costs ~1-4 KiB (its 256-entry transition row and its terms), so 2 GiB
        holds several hundred thousand states, and a hostile schema (a 1 MB literal, an
        intersection of 50 patterns) stops at a bounded size.
    """

    max_states: int = 1_000_000
    max_cache_bytes: int = 1 << 30
    fuel: int = 200_000
    max_store_bytes: int = 2 << 30


#: The default budgets.
BUDGETS = Budgets()
#: The names of the budgets, in their order (the ``Index`` options they are).
BUDGET_NAMES = tuple(f.name for f in fields(Budgets))
#: The default ``max_store_bytes`` (read by the automaton).
MAX_STORE_BYTES = BUDGETS.max_store_bytes
#: Budget of the process-wide head cache (:mod:`dotjson.automaton.heads`): the masks of the
#: heads of states (the rest of a string with its format or bounds) shared by every index of a
#: vocabulary, 16 KiB each at 128k tokens, so 64 MiB holds ~4,000; when full it is emptied and
#: refilled on demand (each index keeps the heads it uses).
MAX_HEAD_CACHE_BYTES = 64 << 20
#: Most process-wide head ids (:class:`dotjson.automaton.heads.Interner`, 56 bytes each with
#: their hash table): past it the interner starts a new generation (and the head cache with it).
MAX_HEAD_IDS = 1 << 20
