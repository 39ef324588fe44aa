"""The decorator of the engine's kernels: Numba's ``njit`` with one signature per kernel.

Numba compiles a jitted function once per distinct tuple of argument types. Inside jitted code
the same scalar reaches a callee as ``int32`` (read from a term array), ``int64`` (an
expression), ``uint8`` (a byte) or ``Literal[int](97)`` (a constant), and each of those was a
full compile of the callee *and of everything it calls*: before this decorator ``deriv`` was
compiled three times, ``seq`` four, ``_k_deriv`` four, ~40% of a cold start's compile time.

:func:`kernel` makes a dispatcher that widens every integer argument type but ``uint64`` (the
bit words, whose unsigned arithmetic matters) to ``int64`` before compiling, so a kernel has
one signature for every caller: callers' ``int32``/``uint8``/literal arguments are converted at
the call (a sign or zero extension). Arrays, tuples of arrays and other types are left as
they are. Everything else is Numba's own ``njit``: the same options (``cache=True``,
``nogil=True``), the same lazy compilation on first call, the same on-disk cache.

The on-disk cache is keyed by the engine, not only by the kernel's own file. Numba's cache
entry for a function is checked against that function's file alone, yet a compiled kernel holds
the machine code of every kernel it calls, from any file: after an edit of ``kernels.py``,
``walk_trie`` (in ``walk.py``) would load the old derivative code from its cache. Every kernel's
cache key therefore carries :data:`ENGINE_STAMP`, a hash of the sources of every module that
defines kernels (:data:`ENGINE_MODULES`; a test checks the list is complete), so an edit of any
of them recompiles all kernels and never runs stale code.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba import config, types
from numba.core import sigutils
from numba.core.caching import FunctionCache
from numba.core.registry import CPUDispatcher

from .._config import NJIT_OPTS, NJIT_PARALLEL_OPTS

#: The modules that define kernels, relative to the package (their sources make the stamp).
ENGINE_MODULES = (
    "_config.py",
    "_kernels/jit.py",
    "_kernels/group.py",
    "_kernels/mask.py",
    "_kernels/walk.py",
    "automaton/kernels.py",
    "automaton/counters.py",
    "automaton/keys.py",
    "trie.py",
)


def _engine_stamp() -> str:
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for rel in ENGINE_MODULES:
        h.update(rel.encode())
        h.update((root / rel).read_bytes())
    return h.hexdigest()


#: A hash of the sources of :data:`ENGINE_MODULES`, part of every kernel's cache key.
ENGINE_STAMP = _engine_stamp()


class _EngineCache(FunctionCache):
    """Numba's function cache with :data:`ENGINE_STAMP` in every index key."""

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, codegen) + (ENGINE_STAMP,)


def _canonical(t):
    if isinstance(t, types.IntegerLiteral):
        t = t.literal_type
    elif isinstance(t, types.BooleanLiteral):
        return types.boolean
    if isinstance(t, types.Integer) and not (t.bitwidth == 64 and not t.signed):
        return types.int64
    return t


class KernelDispatcher(CPUDispatcher):
    """A :class:`numba.core.registry.CPUDispatcher` that compiles canonical signatures only,
    cached under the engine's stamp."""

    #: widen integer argument types (``kernel(canonical=False)`` sets it off per kernel)
    canonical = True

    def enable_caching(self):
        self._cache = _EngineCache(self.py_func)

    def compile(self, sig):
        if not self.canonical:
            return super().compile(sig)
        args, return_type = sigutils.normalize_signature(sig)
        canon = tuple(_canonical(a) for a in args)
        if canon != tuple(args):
            sig = canon if return_type is None else return_type(*canon)
        return super().compile(sig)


def kernel(func=None, *, parallel: bool = False, canonical: bool = True):
    """Decorate ``func`` as an engine kernel (see the module docstring).

    Parameters
    ----------
    func : function
        The Python function to compile (nopython mode). Never inlined by Numba
        (``inline="always"`` re-types the callee at every call site, a compile-time cost that
        measured no runtime gain: ``perf/profile_fresh_masks.py``); LLVM inlines small callees
        when it links them.
    parallel : bool
        Numba's ``parallel=True`` (``prange``); only for kernels where threads pay.
    canonical : bool
        Widen integer argument types to ``int64`` (the default). ``False`` for kernels whose
        integer arguments must keep their type (the masking kernels' mask values, one
        specialization per logits width).
    """

    def wrap(f):
        if config.DISABLE_JIT:
            return f
        base = NJIT_PARALLEL_OPTS if parallel else NJIT_OPTS
        opts = {k: v for k, v in base.items() if k != "cache"}
        opts["nopython"] = True
        disp = KernelDispatcher(py_func=f, locals={}, targetoptions=opts)
        disp.canonical = canonical
        if base.get("cache"):
            disp.enable_caching()
        return disp

    return wrap(func) if func is not None else wrap
