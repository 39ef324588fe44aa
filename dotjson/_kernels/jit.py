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
they are. A kernel only kernels call is compiled without Numba's CPython and C wrappers
(:class:`KernelDispatcher`: a Python call, or ``python=True``, gives it its Python entry point).
Everything else is Numba's own ``njit``: the same options (``cache=True``, ``nogil=True``), the
same lazy compilation on first call, the same on-disk cache.

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
valid across processes. A cell is filled before any code naming it first runs: when a kernel is
compiled (or loaded from the cache), the cells its LLVM module names — its own calls and those of
every plain kernel linked into it — are filled, each unit compiled or loaded in turn and the cells
*its* module names with it (:func:`_ensure`); a unit called from Python does the same first.
So a process links the units its kernels reach and no others (building a vocabulary links none;
a first mask 27 of the 40), and :func:`link` (what :func:`dotjson.warmup` calls) links them all.
Small helpers stay plain kernels, linked and inlined by LLVM where they are called; a memoized
unit sits behind a plain kernel that answers memo hits inline, so only a miss pays the call
(~130 machine words of arguments for the store tuple, and no inlining).

**Optional units.** A unit declared with ``declined=v`` is an exact shortcut its callers may
skip: its call reads the cell and answers ``v`` ("take the long way") while the cell is empty, so
the kernels naming it run before it is linked. On a cold cache a link leaves such a unit to the
helper it was given to (after the units a document's first steps reach) and notes it in
:data:`_OPT_WAITING`; :func:`upgrade`, which the masker calls before a fresh mask, links it once
the helper has cached it. Its cell is filled last, when every unit its code reaches is: kernels
running in other threads may call it the moment it is. The walk's subtree shortcuts are such
units (the counted class's chain, a state's invariant bytes, an open state's test): ~8 s of the
walk's 14 s compile on 2 CPUs that a first mask no longer waits for. Everywhere else (a warm
cache, one process, :func:`link`, a call from Python) it is linked like any unit.

Units compile independently, so a cold cache compiles them in several processes at once:
:func:`prelink` (called when a :class:`dotjson.Vocabulary` is made) starts helper processes
(``python -m dotjson._kernels.compile_worker``) writing the same Numba cache: the units a first
mask reaches (declared ``early``) are shared by every process, this one included, the rest go to
the helpers after them. A link needing a unit loads it once a helper has cached it, compiles it
here if it is this process's or its helper has not reached it (the helper skips it then), and
waits only for one a helper is compiling — meanwhile compiling the next early unit of its own
share (or the one a helper would reach last) and linking it with the rest, instead of sleeping.
The helpers finish before the process exits.
``DOTJSON_COMPILE_WORKERS`` sets how many processes (:func:`compile_workers`).
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import threading
import time
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
    """Numba's function cache with :data:`ENGINE_STAMP` in every index key, and whether the
    entry has Numba's Python entry point (:class:`KernelDispatcher`): code compiled for kernel
    callers alone is another entry than the same code with its Python wrapper."""

    #: the dispatcher whose code this cache holds (:meth:`KernelDispatcher.enable_caching`): its
    #: compile under way says which entry is keyed
    owner = None

    def _index_key(self, sig, codegen):
        return self.key_for(sig, codegen, self.owner is not None and self.owner._with_entry)

    def key_for(self, sig, codegen, python: bool):
        """The index key of ``sig``'s entry, with the Python entry point or without."""
        return super()._index_key(sig, codegen) + (ENGINE_STAMP, "py" if python else "native")


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
    cached under the engine's stamp, with Numba's Python entry point only where Python calls.

    Numba gives every compiled function a CPython wrapper (unboxing each argument from a Python
    object, boxing the result) and a C wrapper, though a kernel called only by other kernels
    never runs either. For a kernel taking the store tuple the wrapper unboxes 17 arrays: more
    code than most kernels' bodies, typed, lowered, optimised and emitted at each of the
    engine's ~250 compiles (a synthetic chain of 40 such kernels: 9.0 s compiled with
    wrappers, 3.7 s without). So a kernel is compiled without them when another kernel's
    compile asks for it, and with the Python entry point when Python calls it (the dispatcher's
    own call, or :meth:`Unit.__call__`), or from the start where declared ``python=True``; an
    overload compiled without it never enters the dispatcher's call table, and a Python call of
    it compiles it again with it (the first code kept alive: compiled callers and unit cells
    may hold it)."""

    #: widen integer argument types (``kernel(canonical=False)`` sets it off per kernel)
    canonical = True
    #: compile with the Python entry point from the start: a kernel Python calls (``kernel(python=True)``)
    python = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        #: the signatures compiled with the Python entry point (in the dispatcher's call table)
        self._entries: set = set()
        #: whether the compile under way makes the Python entry point (:meth:`_compile_as`)
        self._with_entry = True
        self.targetoptions["no_cfunc_wrapper"] = True  # (nothing here takes a C callback)

    def enable_caching(self):
        self._cache = _EngineCache(self.py_func)
        self._cache.owner = self

    def _compile_for_args(self, *args, **kws):
        # Python calls this dispatcher: the overload it compiles needs its Python entry point
        prev = getattr(_tls, "entry_for", None)
        _tls.entry_for = self
        try:
            return super()._compile_for_args(*args, **kws)
        finally:
            _tls.entry_for = prev

    def add_overload(self, cres):
        if self._with_entry:
            super().add_overload(cres)
            self._entries.add(tuple(cres.signature.args))
        else:  # no Python entry point: for compiled callers only, never in the call table
            self.overloads[tuple(cres.signature.args)] = cres

    def has_entry(self, sig) -> bool:
        """Whether the overload for ``sig`` (compiled) has its Python entry point."""
        args, _ = sigutils.normalize_signature(sig)
        return tuple(args) in self._entries

    def _compile_as(self, sig, entry: bool):
        """Numba's compile of ``sig`` (canonical), with the Python entry point or without; an
        overload without it compiled again with it where ``entry``."""
        args, _ = sigutils.normalize_signature(sig)
        key = tuple(args)
        with global_compiler_lock:
            have = self.overloads.get(key)
            if have is not None and entry and not self.has_entry(key):
                _log.debug("kernel %s compiled again with its Python entry point (a Python call; "
                           "not declared python=True)", self.py_func.__qualname__)
                _RETIRED.append(have)  # (its code stays: callers and cells may hold it)
                del self.overloads[key]
            # (read by Numba when it compiles, by the cache when it keys, by add_overload; a
            # nested compile of this kernel for itself puts them back as they were)
            saved = self._with_entry
            self.targetoptions["no_cpython_wrapper"] = not entry
            self._with_entry = entry
            try:
                return super().compile(sig)
            finally:
                self.targetoptions["no_cpython_wrapper"] = not saved
                self._with_entry = saved

    def compile(self, sig):
        if self.canonical:
            args, return_type = sigutils.normalize_signature(sig)
            canon = tuple(_canonical(a) for a in args)
            if canon != tuple(args):
                sig = canon if return_type is None else return_type(*canon)
        entry = self.python or getattr(_tls, "entry_for", None) is self
        if _WORKER:  # a compile helper: compiles into the cache, links nothing, runs nothing
            return self._compile_as(sig, entry)
        # Compiled (or loaded) code may call units: before it can run, the cells its code names
        # are filled (read off the compiled module: every unit it reaches, and no other). Done
        # once the outermost compile of this thread is over (a callee compiled for its caller
        # is linked into it, so the caller's module names the callee's units too), also when
        # it failed; inside a link (:func:`_ensure` compiling a unit) the link's loop does it.
        depth = getattr(_tls, "depth", 0)
        if depth == 0:
            _tls.compiled = []
        _tls.depth = depth + 1
        try:
            got = self._compile_as(sig, entry)
            _tls.compiled.append((self, sig))
            return got
        finally:
            _tls.depth = depth
            if depth == 0 and not getattr(_tls, "linking", False):
                units = set()
                for disp, s in _tls.compiled:
                    units.update(_overload_units(disp, s))
                    units.update(_overload_units(disp, s, True))
                _tls.compiled = []
                if units:
                    _ensure(units)


def kernel(func=None, *, parallel: bool = False, canonical: bool = True, python: bool = False):
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
    python : bool
        Compiled with Numba's Python entry point from the start: a kernel Python calls, which
        kernels call too (otherwise a Python call compiles such a kernel a second time, see
        :class:`KernelDispatcher`). A kernel only Python calls needs no mark.
    """

    def wrap(f):
        if config.DISABLE_JIT:
            return f
        base = NJIT_PARALLEL_OPTS if parallel else NJIT_OPTS
        opts = {k: v for k, v in base.items() if k != "cache"}
        opts["nopython"] = True
        disp = KernelDispatcher(py_func=f, locals={}, targetoptions=opts)
        disp.canonical = canonical
        disp.python = python
        if base.get("cache"):
            disp.enable_caching()
        return disp

    return wrap(func) if func is not None else wrap


# ----------------------------------------------------------------------------- units

_log = logging.getLogger("dotjson")
#: Every unit of the engine, in definition order.
UNITS: list = []
#: unit by its cell's symbol (what a compiled module names); optional units apart
_BY_SYMBOL: dict = {}
_OPT_BY_SYMBOL: dict = {}
#: optional units a kernel's code names whose helper has not cached them yet: linked by
#: :func:`upgrade` once it has (their cells answer ``declined`` meanwhile)
_OPT_WAITING: set = set()
#: when :func:`upgrade` looks at the cache again (``time.monotonic()``)
_next_upgrade = 0.0
#: Check the types of every Python call of a unit against its declared signature (see
#: :meth:`Unit.__call__`): off in production (it costs what the direct call saves), on in the
#: tests (``tests/conftest.py``) and with ``DOTJSON_CHECK_UNIT_ARGS=1``.
CHECK_ARGS = os.environ.get("DOTJSON_CHECK_UNIT_ARGS", "") not in ("", "0")
#: this process is a compile helper (:func:`_worker`): compile, never link
_WORKER = False
#: Link optional units when code naming them is linked, as required ones, even on a cold cache
#: whose helper has not compiled them yet (``DOTJSON_WAIT_OPTIONAL_UNITS=1``; the test suite sets
#: it: tests that call a kernel from Python and read its answer want the exact one, not "declined")
WAIT_OPTIONAL = os.environ.get("DOTJSON_WAIT_OPTIONAL_UNITS", "") not in ("", "0")
#: per thread: the depth of nested compiles, the overloads compiled in the outermost, whether
#: a link is running (:meth:`KernelDispatcher.compile`, :func:`_ensure`)
_tls = threading.local()
#: overloads compiled again with their Python entry point: the first code stays alive (compiled
#: callers linked it, a unit's cell points into it)
_RETIRED: list = []


class Unit:
    """A kernel compiled once for one declared signature and called by other kernels through
    the cell named :attr:`symbol` (see the module docstring). Callable from Python too."""

    def __init__(self, func, returns, args, early=0, declined=None, python=False):
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__module__ = func.__module__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        self.returns = returns
        self.args = tuple(args)
        self.dispatcher = kernel(func, python=python)
        # one cell per unit and engine build; named so no two units (or engines) share one
        self.symbol = f"_dotjson_unit_{func.__module__}.{func.__qualname__}_{ENGINE_STAMP[:12]}"
        self._cell = ctypes.c_int64(0)
        #: the compiled code's own Python entry point (set at the first Python call): a Python
        #: call unboxes its arguments for the one declared signature, without the dispatcher's
        #: type resolution (a fingerprint of every argument, ~1.1 us for the store's 17 arrays)
        self._entry = None
        #: linked: compiled (or loaded), its cell filled, and every unit its code reaches
        self._linked = False
        #: a twin unit taking the store packed in place of ``S``, the other arguments the same
        #: (:func:`dotjson.automaton.store.pack`), which ``Automaton._run`` calls instead
        self.packed = None
        #: compiled first on a cold cache (:func:`prelink`): 1 on the way to a first mask, 2 to a
        #: document's first steps, 0 neither
        self.early = early
        #: an optional unit's answer while its cell is empty (``None``: a required unit)
        self.declined = declined
        #: an optional unit's native entry point, loaded but its cell not filled yet (the cell is
        #: filled once every unit its code reaches is: running kernels may call it at once)
        self._addr = 0
        if declined is not None:
            self.symbol = self.symbol.replace("_dotjson_unit_", "_dotjson_opt_", 1)
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
        with global_compiler_lock:
            UNITS.append(self)
            (_BY_SYMBOL if declined is None else _OPT_BY_SYMBOL)[self.symbol] = self

    def _cached(self) -> bool:
        """Whether Numba's cache holds this unit's code (without loading it)."""
        cache = getattr(self.dispatcher, "_cache", None)
        if cache is None or not hasattr(cache, "_cache_file"):
            return False
        try:
            from numba.core.registry import cpu_target

            key = cache.key_for(self.args, cpu_target.target_context.codegen(), self.dispatcher.python)
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
        addr = builder.load(cell)

        def call():
            fn = builder.inttoptr(addr, fnty.as_pointer())
            status, res = context.call_conv.call_function(builder, fn, sig.return_type, sig.args, args)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return res

        if self.declined is None:
            return call()
        # an optional unit: its declared answer while the cell is empty
        slot = cgutils.alloca_once_value(builder, context.get_constant(sig.return_type, self.declined))
        with builder.if_then(builder.icmp_unsigned("!=", addr, addr.type(0)), likely=True):
            builder.store(call(), slot)
        return builder.load(slot)

    def _load(self) -> None:
        """Compile this unit (or load it from Numba's cache) and fill its cell (an optional
        unit's: by :func:`_ensure`, last). Its Python entry point is set by :func:`_ensure` once
        every unit its code reaches is filled too."""
        if self._cell.value or self._addr:
            return
        disp = self.dispatcher
        disp.compile(self.args)
        cres = disp.overloads[self.args]
        addr = cres.library.get_pointer_to_function(cres.fndesc.mangled_name)
        if not addr:  # pragma: no cover - Numba always defines the native entry point
            raise RuntimeError(f"unit {self.__name__}: no native entry point after compiling")
        if self.declined is None:
            self._cell.value = addr
        else:
            self._addr = addr

    def units(self) -> tuple:
        """The units this unit's compiled code calls, optional ones included (its own module's
        cells; loaded first)."""
        self._load()
        return _overload_units(self.dispatcher, self.args) + _overload_units(self.dispatcher, self.args, True)

    def __call__(self, *args):
        """Run the unit from Python. The call goes straight to the code compiled for the
        declared signature: a unit's Python callers (the engine's own, with its store and
        scratch arrays) pass exactly those types, which :data:`CHECK_ARGS` verifies on every
        call (the tests turn it on); an array of another type would be read as the declared
        one, not converted."""
        e = self._entry
        if e is None:
            e = self._python_entry()
        if CHECK_ARGS:
            self.check_args(args)
        return e(*args)

    def _python_entry(self):
        """Link this unit, and give it its Python entry point (compiled again with it where
        it was compiled for kernel callers alone: a unit Python calls is declared
        ``python=True``, so that a cold cache's helpers compile it so)."""
        _ensure((self,), take=True)
        with global_compiler_lock:
            if self._entry is None:
                disp = self.dispatcher
                if not disp.has_entry(self.args):
                    disp._compile_as(self.args, True)
                self._entry = disp.overloads[self.args].entry_point
            return self._entry

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


def unit(returns, *args, early: int = 0, declined=None, python: bool = False):
    """Declare a kernel a *unit* (see the module docstring): compiled once, for the signature
    ``returns(*args)`` (integers ``int64`` as every kernel's), called by other kernels through
    its cell in the engine's symbol table rather than linked into them.

    For kernels with large bodies (or large closures of callees) that many kernels call; small
    helpers stay plain :func:`kernel` s, which LLVM can inline. Units may call units, themselves
    included: compiling a unit needs only the other units' declared signatures, and the cells a
    kernel's code names are filled before it first runs (:func:`_ensure`). ``early``: 1 for a
    unit Python calls on the way to a first mask, 2 on the way to a document's first steps; on a
    cold cache those and the units they reach are compiled first (:func:`prelink`).

    ``declined``: an *optional* unit, whose callers read this value (of type ``returns``) as
    "not done, go the long way" — an exact shortcut, which code may skip. A call of it reads its
    cell and answers ``declined`` while the cell is empty, so a kernel naming it runs before it
    is linked: on a cold cache its compile is left to a helper, and :func:`upgrade` links it
    once the helper has cached it (a first mask does not wait for it). Elsewhere it is linked as
    any unit is.

    ``python``: Python calls the unit (its packed twin, a scratch packer), so it is compiled
    with Numba's Python entry point from the start, by a cold cache's helper too; any other
    unit gets one at its first Python call, compiled again (:class:`KernelDispatcher`).
    """

    def wrap(f):
        if config.DISABLE_JIT:
            return f
        return Unit(f, returns, args, early=early, declined=declined, python=python)

    return wrap


def _overload_units(disp, sig, optional=False) -> tuple:
    """The units the compiled code of ``disp`` for ``sig`` calls: the cells its module names
    (``optional``: its optional units' cells, else the others').

    Read once per overload from its LLVM module (the module a caller would link: a compiled
    library's final module, a cached one's module for linking), which holds the code of every
    plain kernel linked into it. Where Numba keeps neither (another version), every unit.
    """
    args, _ = sigutils.normalize_signature(sig)
    cres = disp.overloads.get(tuple(args))
    if cres is None:
        return ()
    lib = cres.library
    got = getattr(lib, "_dotjson_units", None)
    if got is None:
        mod = getattr(lib, "_shared_module", None)
        if mod is None:
            mod = getattr(lib, "_final_module", None)
        if mod is None:  # pragma: no cover - a Numba without these: link everything
            got = (tuple(u for u in UNITS if u.declined is None),
                   tuple(u for u in UNITS if u.declined is not None))
        else:
            names = [g.name for g in mod.global_variables]
            got = (tuple(_BY_SYMBOL[n] for n in names if n in _BY_SYMBOL),
                   tuple(_OPT_BY_SYMBOL[n] for n in names if n in _OPT_BY_SYMBOL))
        try:
            lib._dotjson_units = got
        except AttributeError:  # pragma: no cover - a library with slots
            pass
    return got[1] if optional else got[0]


def _ensure(units, take=False, everything=False) -> None:
    """Link ``units`` and every unit their code reaches, transitively: each compiled (or loaded
    from the cache) and its cell filled, then their Python entry points set. Nothing else runs
    meanwhile in this thread, and other threads' compiles wait (Numba's compiler lock, held
    throughout, is the link's lock too: a compile inside a link is reentrant, and no second
    lock can be taken in the other order). On a cold cache a unit a helper process is
    compiling is waited for, one it has not reached yet is compiled here (the helper skips it
    when it gets there); while waiting, this process compiles an early unit no one compiles now
    (:func:`_spare_unit`) and adds it to the link: the plain kernels compiled for it become
    callable from Python, so the cells their code names (all among the unit's) are filled too.

    An optional unit a running helper is to compile and has not cached yet is not waited for
    (unless it is one of ``units`` and ``take``, or ``everything``): it joins
    :data:`_OPT_WAITING`, its cell empty (its callers take the long way), for :func:`upgrade`.
    An optional unit's cell is filled last, once every unit its code reaches is linked: kernels
    already running in other threads may call it at once."""
    if all(u._linked for u in units):
        return
    with global_compiler_lock:
        if getattr(_tls, "linking", False):  # (a compile inside this thread's link: its loop does it)
            return
        _tls.linking = True
        try:
            prelink()  # (the helpers of a cold cache, if no vocabulary started them)
            pending, seen, done = [], set(), []

            def want(v, force):
                if not v._linked and v not in seen:
                    seen.add(v)
                    if force or _opt_ready(v):
                        pending.append(v)
                    else:
                        _OPT_WAITING.add(v)

            for u in units:
                want(u, take or everything)
            waited = 0.0
            while pending:
                u = _next_unit(pending)
                if u is None:  # every one left is being compiled by a helper
                    if waited > _WORKER_TIMEOUT:  # a helper stuck on one unit: stopped, done here
                        _stop_helpers()
                        continue
                    t0 = time.perf_counter()
                    spare = _spare_unit()
                    if spare is not None:  # a unit a first mask reaches, compiled meanwhile
                        spare.dispatcher.compile(spare.args)
                        # and linked with the rest: the plain kernels compiled for it can be
                        # called now, and the cells their code names are among the unit's
                        seen.add(spare)
                        pending.append(spare)
                        waited += time.perf_counter() - t0
                        if _log.isEnabledFor(logging.DEBUG):
                            _log.debug("compiled unit %s while waiting, in %.2f s", spare.__name__,
                                       time.perf_counter() - t0)
                        continue
                    time.sleep(_POLL_S)
                    waited += _POLL_S
                    continue
                waited = 0.0
                pending.remove(u)
                done.append(u)
                t0 = time.perf_counter()
                for v in u.units():
                    want(v, everything)
                if _log.isEnabledFor(logging.DEBUG):  # what a link waits for, on a cold cache above all
                    _log.debug("linked unit %s in %.2f s", u.__name__, time.perf_counter() - t0)
            for u in done:  # (every required cell is filled by now: the optional ones last)
                if u._addr:
                    u._cell.value = u._addr
                    u._addr = 0
                    _OPT_WAITING.discard(u)
                u._linked = True
        finally:
            _tls.linking = False


def link() -> None:
    """Link every unit (compile it, or load it from Numba's cache, and fill its cell): what
    :func:`dotjson.warmup` does, so that no request loads one. A kernel's first run links the
    units its code reaches and no others (:func:`_ensure`)."""
    prelink()  # (every engine module imported first: all their units, not those seen so far)
    _ensure(tuple(UNITS), everything=True)


def _opt_ready(u) -> bool:
    """Whether a link takes unit ``u`` now: a required unit always; an optional one unless a
    running helper of this process is to compile it and neither this process nor the cache
    has it yet."""
    if u.declined is None or _started is None or WAIT_OPTIONAL:
        return True
    pid, _, owner = _started
    p = owner.get(u) if pid == os.getpid() else None
    return p is None or p.poll() is not None or _have(u)


#: How often :func:`upgrade` looks at the cache for the optional units waiting (seconds).
_UPGRADE_S = 0.25


def upgrade() -> None:
    """Link the optional units waiting for a helper (:data:`_OPT_WAITING`) that it has cached
    by now (or that no running helper will: compiled here). A set test when none waits; else
    at most every :data:`_UPGRADE_S` seconds. The masker calls it before a fresh mask: after a
    first run's first masks, the shortcuts come in as the helpers finish them."""
    global _next_upgrade
    if not _OPT_WAITING:
        return
    now = time.monotonic()
    if now < _next_upgrade:
        return
    _next_upgrade = now + _UPGRADE_S
    with global_compiler_lock:
        ready = tuple(u for u in _OPT_WAITING if _opt_ready(u))
    if ready:
        _ensure(ready)


def prelink() -> None:
    """Start the compile helpers of a cold cache now, without waiting for them.

    Called when a :class:`dotjson.Vocabulary` is made (or by the first link, if none was): on
    the first run after install the helpers compile their share of the units while this
    process goes on (building the vocabulary's tries, compiling a schema, loading a model); the
    units a first mask reaches
    (``early``) are compiled first, by this process and the helpers alike, the others by the
    helpers after them. Does nothing when the cache is warm or on later calls.
    """
    global _started
    if _started is not None:
        return
    with global_compiler_lock:
        if _started is not None:
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


def _callees(f) -> list:
    """The kernels and units ``f``'s bytecode names (globals, and attributes of the modules it
    names: ``K.seq``), nested code included: an estimate for scheduling, not for linking."""
    import types as pytypes

    out, codes = [], [f.__code__]
    g = f.__globals__
    while codes:
        c = codes.pop()
        codes.extend(k for k in c.co_consts if isinstance(k, pytypes.CodeType))
        for name in c.co_names:
            v = g.get(name)
            if isinstance(v, (KernelDispatcher, Unit)):
                out.append(v)
            elif isinstance(v, pytypes.ModuleType):
                out.extend(a for a in (getattr(v, n, None) for n in c.co_names)
                           if isinstance(a, (KernelDispatcher, Unit)))
    return out


def _weight(u) -> int:
    """A unit's compile cost, estimated from the bytecode of its body and its plain callees."""
    seen, todo, size = set(), [u.__wrapped__], 0
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        size += len(f.__code__.co_code)
        todo.extend(k.py_func for k in _callees(f) if isinstance(k, KernelDispatcher))
    return size


def _early_units(rank: int) -> list:
    """The units declared ``early`` up to ``rank`` and the units their code may reach
    (estimated from the bytecode), in the order they are met: each early unit's (by rank, then
    in definition order) before the next one's."""
    order, seen = [], set()
    for root in sorted((u for u in UNITS if 0 < u.early <= rank), key=lambda u: u.early):
        todo, fseen = [root], set()
        while todo:
            k = todo.pop()
            if id(k) in fseen:
                continue
            fseen.add(id(k))
            if isinstance(k, Unit) and k not in seen:
                seen.add(k)
                order.append(k)
            todo.extend(_callees(k.__wrapped__ if isinstance(k, Unit) else k.py_func))
    return order


#: Seconds a compile helper may take at exit, or a link wait for the unit a helper compiles,
#: before it is stopped (what it did not cache is compiled here).
_WORKER_TIMEOUT = 1800
#: The plain kernels this process compiles beside its share of the early units (the
#: vocabulary's, an index's, the entries'), as a share of the early units' work: on 2 CPUs a
#: cold first mask took 37-41 s at 0.2, 48-50 s at 0.1 (this process still compiling when the
#: helper was done), 40 s at 0.3, 47 s at 0.5 (perf/bench_cold_start.py --job first-mask).
_ENTRY_SHARE = 0.2
#: How often a link waiting for a helper looks at the cache (seconds).
_POLL_S = 0.02
#: Helpers started on a cold cache: ``(process id that started them, {helper: its units in
#: order}, {unit: its helper})``; ``None`` before :func:`prelink` or the first link.
_started = None
#: This process's own share of the early units on a cold cache, in order, and the early units
#: (:func:`_start_workers`)
_MINE: list = []
_EARLY: set = set()


def _start_workers(cold):
    """Split the units ``cold`` over :func:`compile_workers` processes and start the helpers
    (``python -m dotjson._kernels.compile_worker MODULE:UNIT ...``, each writing Numba's cache);
    returns :data:`_started`'s value. The units a first mask reaches (:func:`_early_units`)
    are shared by every process, this one included (its share is compiled when a link needs
    it), in the order a first mask meets them; those of a document's first steps, then the
    others (heaviest first), go to the helpers after them. A helper that fails costs only time:
    whatever is not cached when a link needs it is compiled here."""
    import atexit
    import subprocess
    import sys

    n = compile_workers()
    exe = sys.executable or ""
    if len(cold) < 2 or n < 2 or not os.path.basename(exe).lower().startswith("python"):
        return (os.getpid(), {}, {})  # one unit, one CPU, or an embedded interpreter: all here
    cold_set = set(cold)
    early = [u for u in _early_units(1) if u in cold_set]
    optional = [u for u in early if u.declined is not None]  # (a first mask declines them)
    early = [u for u in early if u.declined is None]
    taken = set(early) | set(optional)
    late = [u for u in _early_units(2) if u in cold_set and u not in taken]
    taken.update(late)
    late += optional
    weight = {u: _weight(u) for u in cold}
    late += sorted((u for u in cold if u not in taken), key=weight.__getitem__, reverse=True)
    groups = [[] for _ in range(n)]
    loads = [0] * n
    # this process also compiles the plain entry kernels (perf/bench_cold_start.py): it starts
    # with that handicap
    loads[0] = int(_ENTRY_SHARE * sum(weight[u] for u in early))
    for u in early:  # in the order they are met, each to the least loaded process
        k = loads.index(min(loads))
        groups[k].append(u)
        loads[k] += weight[u]
    _MINE[:] = groups[0]
    _EARLY.update(early)
    for u in late:  # to the helpers only, after their share of the early ones
        k = 1 + loads[1:].index(min(loads[1:]))
        groups[k].append(u)
        loads[k] += weight[u]
    logging.getLogger("dotjson").info(
        "compiling dotjson's kernels into Numba's cache (first run after install): %d units in "
        "%d processes", len(cold), sum(1 for g in groups if g))
    env = dict(os.environ)
    if config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = config.CACHE_DIR
    env["DOTJSON_COMPILE_WORKERS"] = "1"
    lists, owner = {}, {}
    for group in groups[1:]:
        if not group:
            continue
        names = [f"{u.__module__}:{u.__qualname__}" for u in group]
        try:
            p = subprocess.Popen([exe, "-m", "dotjson._kernels.compile_worker", *names], env=env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        except OSError:  # no process to spare: compiled here when needed
            continue
        lists[p] = group
        owner.update((u, p) for u in group)
    if lists:
        # the helpers finish the cache before this process exits (no compile left running)
        atexit.register(_wait, list(lists))
    return (os.getpid(), lists, owner)


def _next_unit(pending):
    """A unit of ``pending`` this process can link now, or ``None`` if each is what its helper
    compiles now: first one in the cache (a load), then one no running helper holds, then the
    one a helper would reach last (compiled here, from the far end of its list while it works
    from the near end: the helper skips what is cached by the time it gets there)."""
    pid, lists, owner = _started
    mine = stolen = None
    far = 0
    at = {}  # a helper's position: its first unit not cached (what it compiles now)
    for u in pending:
        p = owner.get(u) if pid == os.getpid() else None  # (a forked child has no helpers)
        if p is None or p.poll() is not None:
            if mine is None:
                mine = u
            continue
        if _in_cache(u):
            return u
        units = lists[p]
        if p not in at:
            at[p] = _position(units)
        k = units.index(u) - at[p]
        if k > far:  # (k == 0: the helper's current unit)
            stolen, far = u, k
    return mine if mine is not None else stolen


def _spare_unit():
    """A unit for this process to compile while a link waits for a helper: the next of its own
    share of the early units (:data:`_MINE`, compiled otherwise only when a link reaches it),
    else the one of the early units a helper would reach last; ``None`` when none is left (each
    is compiled, cached, or a helper's current one)."""
    pid, lists, _ = _started
    if pid != os.getpid():
        return None
    for u in _MINE:
        if not _have(u):
            return u
    best, far = None, 0
    for p, units in lists.items():
        if p.poll() is not None:
            continue
        at = _position(units)
        for k in range(len(units) - 1, at, -1):
            v = units[k]
            if v in _EARLY and not _have(v):
                if k - at > far:
                    best, far = v, k - at
                break
    return best


def _position(units) -> int:
    """A helper's position in its list ``units``: its first unit not cached (what it compiles
    now; it skips what the cache holds by the time it gets there)."""
    return next((i for i, v in enumerate(units) if not _in_cache(v)), len(units))


def _have(u) -> bool:
    """Whether this process or the cache has unit ``u``'s code (a linked unit was compiled or
    loaded here)."""
    return u.args in u.dispatcher.overloads or _in_cache(u)


#: units seen in Numba's cache by :func:`_in_cache` (a cached unit stays cached)
_IN_CACHE: set = set()


def _in_cache(u) -> bool:
    """``u._cached()``, remembered once true (a link waiting for helpers asks again and again)."""
    if u in _IN_CACHE:
        return True
    if u._cached():
        _IN_CACHE.add(u)
        return True
    return False


def wait_helpers() -> None:
    """Wait for the compile helpers of a cold cache to finish (this process exits only after
    them anyway: the cache is whole for the next run)."""
    if _started is not None and _started[0] == os.getpid():
        _wait(list(_started[1]))


def _stop_helpers() -> None:
    """Stop the compile helpers (what they did not cache is compiled here when needed)."""
    for p in _started[1]:
        if p.poll() is None:
            p.kill()
            p.wait()


def _wait(procs) -> None:
    import subprocess

    for p in procs:
        try:
            p.wait(timeout=_WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:  # its units are compiled here instead
            p.kill()
            p.wait()


def _worker(names) -> int:
    """A compile helper's job: compile the named units into Numba's cache in order, skipping
    those the cache holds by the time it reaches them (the parent compiled them); nothing else."""
    global _WORKER
    import importlib

    _WORKER = True  # compiling a unit must not link (compile) the units it calls
    for name in names:
        mod, _, qual = name.partition(":")
        u = getattr(importlib.import_module(mod), qual)
        if not u._cached():
            u.dispatcher.compile(u.args)
    return 0
