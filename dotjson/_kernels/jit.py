"""The decorators of the engine's kernels: Numba's ``njit`` with one signature per kernel, and
units compiled once each, in parallel on a cold cache.

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

**Units: kernels compiled once, called through a symbol table.** Numba links a callee's LLVM IR
into every caller and optimises and emits it again there, so each kernel holding the derivative
machinery beneath it paid LLVM for a private copy of it: 15 hub kernels carried 1.7-2.5 MB of
linked IR each, most of a cold start (``perf/bench_cold_start.py --kernels``). A kernel declared
with :func:`unit` is compiled on its own, once, for one declared signature, and other kernels
call it through a function pointer read from a cell of the engine's symbol table: the caller's
code holds an ``external global`` named after the unit, which LLVM resolves to that cell when it
loads the code (``llvmlite.binding.add_symbol``, registered at import), so cached callers stay
valid across processes. The cells are filled by :func:`link` (every unit compiled or loaded from
the cache, its native entry point's address written into its cell), which runs before any kernel
first runs in a process (:meth:`KernelDispatcher.compile` and a unit's Python call see to it).
Small helpers stay plain kernels, linked and inlined by LLVM where they are called; a memoized
unit sits behind a plain kernel that answers memo hits inline, so only a miss pays the call
(~130 machine words of arguments for the store tuple, and no inlining).

Units compile independently, so a cold cache compiles them in several processes at once:
:func:`prelink` (called when a :class:`dotjson.Vocabulary` is made) starts helper processes
(``python -m dotjson._kernels.compile_worker``) on their share of the units the cache lacks,
writing the same Numba cache; :func:`link` compiles this process's share, waits for them and
loads the rest. ``DOTJSON_COMPILE_WORKERS`` sets how many processes (:func:`compile_workers`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from pathlib import Path

import llvmlite.binding as llb
import llvmlite.ir as llir
from numba import config, types
from numba.core import cgutils, sigutils
from numba.core.caching import FunctionCache
from numba.core.compiler_lock import global_compiler_lock
from numba.core.errors import TypingError
from numba.core.imputils import lower_builtin
from numba.core.registry import CPUDispatcher
from numba.core.typing.templates import AbstractTemplate, infer_global, signature

from .._config import NJIT_OPTS, NJIT_PARALLEL_OPTS

#: The modules that define kernels, relative to the package (their sources make the stamp).
ENGINE_MODULES = (
    "_config.py",
    "_kernels/jit.py",
    "_kernels/group.py",
    "_kernels/mask.py",
    "_kernels/subtrees.py",
    "_kernels/walk.py",
    "_kernels/keywalk.py",
    "_kernels/entries.py",
    "automaton/store.py",
    "automaton/terms.py",
    "automaton/keysets.py",
    "automaton/derive.py",
    "automaton/rows.py",
    "automaton/emptiness.py",
    "automaton/clamp.py",
    "automaton/states.py",
    "automaton/counters.py",
    "automaton/keys.py",
    "automaton/heads.py",
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
        if self.canonical:
            args, return_type = sigutils.normalize_signature(sig)
            canon = tuple(_canonical(a) for a in args)
            if canon != tuple(args):
                sig = canon if return_type is None else return_type(*canon)
        # Compiled (or loaded) code may call units: their cells are filled before it can run.
        # Linked first, outside Numba's compiler lock: a compile nested in another (a callee
        # typed for its caller) leaves it to the outermost, which linked already; linking while
        # holding that lock would deadlock with another thread linking (it needs the lock).
        if not _linked and not global_compiler_lock.is_locked():
            link()
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


# ----------------------------------------------------------------------------- units

#: Every unit of the engine, in definition order (:func:`link` fills their cells).
UNITS: list = []
_link_lock = threading.RLock()
_linked = False
#: Check the types of every Python call of a unit against its declared signature (see
#: :meth:`Unit.__call__`): off in production (it costs what the direct call saves), on in the
#: tests (``tests/conftest.py``) and with ``DOTJSON_CHECK_UNIT_ARGS=1``.
CHECK_ARGS = os.environ.get("DOTJSON_CHECK_UNIT_ARGS", "") not in ("", "0")
_linking = False


class Unit:
    """A kernel compiled once for one declared signature and called by other kernels through
    the cell named :attr:`symbol` (see the module docstring). Callable from Python too."""

    def __init__(self, func, returns, args):
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__module__ = func.__module__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        self.returns = returns
        self.args = tuple(args)
        self.dispatcher = kernel(func)
        # one cell per unit and engine build; named so no two units (or engines) share one
        self.symbol = f"_dotjson_unit_{func.__module__}.{func.__qualname__}_{ENGINE_STAMP[:12]}"
        self._cell = ctypes.c_int64(0)
        #: the compiled code's own Python entry point (set by :meth:`_link`): a Python call
        #: unboxes its arguments for the one declared signature, without the dispatcher's type
        #: resolution (a fingerprint of every argument, ~1.1 us for the store's 17 arrays)
        self._entry = None
        #: a twin unit taking the store packed in place of ``S``, the other arguments the same
        #: (:func:`dotjson.automaton.store.pack`), which ``Automaton._run`` calls instead
        self.packed = None
        llb.add_symbol(self.symbol, ctypes.addressof(self._cell))
        unit = self

        class _Template(AbstractTemplate):
            key = unit

            def generic(self, args, kws):
                if kws:
                    raise TypingError(f"unit {unit.__name__} takes no keyword arguments")
                canon = tuple(_canonical(a) for a in args)
                if len(canon) != len(unit.args) or any(
                        a != b and not (isinstance(b, types.Integer) and isinstance(a, types.Integer))
                        for a, b in zip(canon, unit.args)):
                    raise TypingError(f"unit {unit.__name__}{unit.args} called with {tuple(args)}")
                return signature(unit.returns, *unit.args)

        infer_global(self, types.Function(_Template))
        lower_builtin(self, types.VarArg(types.Any))(self._lower_call)
        global _linked
        with _link_lock:
            UNITS.append(self)
            _linked = False  # a unit defined after a link (a module imported later) links next

    def _cached(self) -> bool:
        """Whether Numba's cache holds this unit's code (without loading it)."""
        cache = getattr(self.dispatcher, "_cache", None)
        if cache is None or not hasattr(cache, "_cache_file"):
            return False
        try:
            from numba.core.registry import cpu_target

            key = cache._index_key(self.args, cpu_target.target_context.codegen())
            return key in cache._cache_file._load_index()
        except Exception:  # a cache Numba cannot read is a cold one
            return False

    @property
    def address(self) -> int:
        """The native entry point the cell holds (0 before :func:`link`)."""
        return self._cell.value

    def _lower_call(self, context, builder, sig, args):
        """Emit ``cell -> native entry point`` and a call to it with Numba's calling convention,
        propagating its status as a direct call would."""
        module = builder.module
        cell = module.globals.get(self.symbol)
        if cell is None:
            cell = llir.GlobalVariable(module, llir.IntType(64), self.symbol)
            cell.linkage = "external"
        fnty = context.call_conv.get_function_type(sig.return_type, sig.args)
        fn = builder.inttoptr(builder.load(cell), fnty.as_pointer())
        status, res = context.call_conv.call_function(builder, fn, sig.return_type, sig.args, args)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return res

    def _link(self) -> None:
        disp = self.dispatcher
        disp.compile(self.args)
        cres = disp.overloads[self.args]
        addr = cres.library.get_pointer_to_function(cres.fndesc.mangled_name)
        if not addr:  # pragma: no cover - Numba always defines the native entry point
            raise RuntimeError(f"unit {self.__name__}: no native entry point after compiling")
        self._cell.value = addr
        self._entry = cres.entry_point

    def __call__(self, *args):
        """Run the unit from Python. The call goes straight to the code compiled for the
        declared signature: a unit's Python callers (the engine's own, with its store and
        scratch arrays) pass exactly those types, which :data:`CHECK_ARGS` verifies on every
        call (the tests turn it on); an array of another type would be read as the declared
        one, not converted."""
        e = self._entry
        if e is None:
            link()
            e = self._entry
        if CHECK_ARGS:
            self.check_args(args)
        return e(*args)

    def check_args(self, args) -> None:
        """Raise ``TypeError`` unless ``args`` have the declared types (integers and booleans
        of any width where an integer is declared, as the compiled code unboxes them)."""
        from numba import typeof

        got = tuple(typeof(a) for a in args)
        ok = len(got) == len(self.args) and all(
            a == b or (isinstance(b, types.Integer) and isinstance(_canonical(a), (types.Integer, types.Boolean)))
            for a, b in zip(got, self.args))
        if not ok:
            raise TypeError(f"unit {self.__name__} called from Python with {got}, declared {self.args}")

    def __repr__(self):
        return f"<unit {self.__module__}.{self.__qualname__}{self.args} -> {self.returns}>"


def unit(returns, *args):
    """Declare a kernel a *unit* (see the module docstring): compiled once, for the signature
    ``returns(*args)`` (integers ``int64`` as every kernel's), called by other kernels through
    its cell in the engine's symbol table rather than linked into them.

    For kernels with large bodies (or large closures of callees) that many kernels call; small
    helpers stay plain :func:`kernel` s, which LLVM can inline. Units may call units, themselves
    included: compiling a unit needs only the other units' declared signatures, and their cells
    are filled before any kernel runs. Python calls go to the unit's own dispatcher; arguments
    of other types than declared would compile a second copy (a test checks none does).
    """

    def wrap(f):
        if config.DISABLE_JIT:
            return f
        return Unit(f, returns, args)

    return wrap


def link() -> None:
    """Compile (or load from Numba's cache) every unit and fill its cell; once per process.

    Called before any kernel runs (by :meth:`KernelDispatcher.compile` and by a unit's Python
    call); compiling a unit compiles its plain callees but never another unit, so units compile
    independently, each once. On a cold cache the units not cached yet are compiled by up to
    :func:`compile_workers` processes at once (this one and helper processes writing the same
    Numba cache; started early by :func:`prelink`, or here), then loaded from the cache.
    """
    global _linked, _linking, _started
    if _linked:
        return
    with _link_lock:
        if _linked or _linking:
            return
        _linking = True
        try:
            started, _started = _started, None
            if started is None:
                started = _start_workers(_cold_units())
            mine, procs = started
            try:
                for u in mine:
                    if not u.address:
                        u._link()
            finally:
                _wait(procs)
            for u in list(UNITS):
                if not u.address:
                    u._link()
            _linked = True
        finally:
            _linking = False


def prelink() -> None:
    """Start the compile helpers of a cold cache now, without waiting for them.

    Called when a :class:`dotjson.Vocabulary` is made: on the first run after install the
    helpers compile their share of the units while this process goes on (building the
    vocabulary's tries, compiling a schema, loading a model); :func:`link` then compiles this
    process's share and waits for them. Does nothing when the cache is warm or on later calls.
    """
    global _started
    if _linked or _started is not None:
        return
    with _link_lock:
        if _linked or _linking or _started is not None:
            return
        import importlib

        for rel in ENGINE_MODULES:  # every unit registered (their modules are small)
            importlib.import_module("dotjson." + rel[:-3].replace("/", "."))
        _started = _start_workers(_cold_units())


def _cold_units() -> list:
    """The units not linked yet whose code Numba's cache lacks."""
    return [u for u in list(UNITS) if not u.address and not u._cached()]


def compile_workers() -> int:
    """How many processes compile the units on a cold cache (this one included).

    ``DOTJSON_COMPILE_WORKERS`` if set (``1``: this process alone), else the CPUs this process
    may run on, at most 4; 1 when Numba's cache is off (helpers could not hand their code over).
    """
    import os

    if not NJIT_OPTS.get("cache") or config.DISABLE_JIT:
        return 1
    env = os.environ.get("DOTJSON_COMPILE_WORKERS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


def _weight(u) -> int:
    """A unit's compile cost, estimated from the bytecode of its body and its plain callees."""
    seen, todo, size = set(), [u.__wrapped__], 0
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        size += len(f.__code__.co_code)
        for name in f.__code__.co_names:
            g = f.__globals__.get(name)
            if isinstance(g, KernelDispatcher):
                todo.append(g.py_func)
    return size


#: Seconds a compile helper may take before it is stopped (what it did not cache is compiled here).
_WORKER_TIMEOUT = 1800
#: The plain kernels this process compiles after :func:`link`, as a share of the units' work.
_ENTRY_SHARE = 0.1
#: Helpers started by :func:`prelink` and this process's share: ``(units, processes)``.
_started = None


def _start_workers(cold):
    """Split the units ``cold`` over :func:`compile_workers` processes and start the helpers
    (``python -m dotjson._kernels.compile_worker MODULE:UNIT ...``, each writing Numba's cache);
    returns ``(this process's units, helper processes)``. A helper that fails costs nothing but
    time: whatever is not in the cache afterwards is compiled here."""
    import logging
    import os
    import subprocess
    import sys

    n = compile_workers()
    exe = sys.executable or ""
    if len(cold) < 2 or n < 2 or not os.path.basename(exe).lower().startswith("python"):
        return list(cold), []  # one unit, one CPU, or an embedded interpreter: all here
    weight = {u: _weight(u) for u in cold}
    groups = [[] for _ in range(n)]
    loads = [0] * n
    # this process also compiles the plain entry kernels after linking (perf/bench_cold_start.py):
    # it starts with that handicap
    loads[0] = int(_ENTRY_SHARE * sum(weight.values()))
    for u in sorted(cold, key=weight.__getitem__, reverse=True):  # greedy: heaviest first
        k = loads.index(min(loads))
        groups[k].append(u)
        loads[k] += weight[u]
    logging.getLogger("dotjson").info(
        "compiling dotjson's kernels into Numba's cache (first run after install): %d units in "
        "%d processes", len(cold), sum(1 for g in groups if g))
    env = dict(os.environ)
    if config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = config.CACHE_DIR
    env["DOTJSON_COMPILE_WORKERS"] = "1"
    procs, mine = [], list(groups[0])
    for group in groups[1:]:
        if not group:
            continue
        names = [f"{u.__module__}:{u.__qualname__}" for u in group]
        try:
            procs.append(subprocess.Popen([exe, "-m", "dotjson._kernels.compile_worker", *names],
                                          env=env, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        except OSError:  # no process to spare: compile here
            mine.extend(group)
    return mine, procs


def _wait(procs) -> None:
    import subprocess

    for p in procs:
        try:
            p.wait(timeout=_WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:  # its units are compiled here instead
            p.kill()
            p.wait()


def _worker(names) -> int:
    """A compile helper's job: compile the named units into Numba's cache, nothing else."""
    global _linking
    import importlib

    _linking = True  # compiling a unit must not link (compile) all the others here
    for name in names:
        mod, _, qual = name.partition(":")
        u = getattr(importlib.import_module(mod), qual)
        u.dispatcher.compile(u.args)
    return 0

