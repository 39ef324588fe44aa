"""Tunables and Numba options, in one place."""

from __future__ import annotations

import contextlib
import gc

#: Options for every serial kernel. Kernels release the GIL so a caller can compute
#: token sets in a thread while the model runs its forward pass.
NJIT_OPTS = dict(cache=True, nogil=True)
#: Options for kernels that pay for threads (masking large batched buffers).
NJIT_PARALLEL_OPTS = dict(cache=True, nogil=True, parallel=True)


@contextlib.contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector for one burst of allocation, then restore it.

    Phase 1 of a 10,000-property schema allocates some 10**5 small objects that all stay alive
    (the normal forms); each allocation threshold crossed starts a collection, and the older
    generations' passes walk every tracked object of the process (a tokenizer's, a model's), so
    collection was about two thirds of that compile (~100 ms). Nothing collectable is made
    here. The collector is re-enabled on the way out, also on an exception, and only if it was
    enabled on the way in (a caller's ``gc.disable()`` stays); another thread allocating
    meanwhile is merely collected later.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
