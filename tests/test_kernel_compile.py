"""The engine's kernels as compiled code: one signature each, a cache key over every kernel source.

A cold start (an empty Numba cache) compiles every kernel a run calls; each extra signature of
a kernel is a whole compile of it and of everything it calls (``perf/bench_cold_start.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from numba.core import types

import pytest

import dotjson
from dotjson._kernels import jit

PKG = Path(dotjson.__file__).resolve().parent


def _kernel_modules():
    found = set()
    for path in PKG.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"^@(kernel\b|unit\(|nb\.njit|numba\.njit|njit)", text, re.M):
            found.add(path.relative_to(PKG).as_posix())
    return found


def test_every_module_defining_kernels_is_in_the_engine_stamp():
    # a kernel module missing from the stamp could load stale callee code from Numba's cache
    assert _kernel_modules() <= set(jit.ENGINE_MODULES)
    for rel in jit.ENGINE_MODULES:
        assert (PKG / rel).is_file(), rel


def test_no_kernel_bypasses_the_kernel_decorator():
    for rel in _kernel_modules():
        text = (PKG / rel).read_text(encoding="utf-8")
        assert not re.search(r"^@(nb\.njit|numba\.njit|njit)", text, re.M), rel


def test_the_stamp_changes_with_any_engine_source(tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "dotjson"
    for rel in jit.ENGINE_MODULES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PKG / rel, root / rel)
    monkeypatch.setattr(jit, "__file__", str(root / "_kernels" / "jit.py"))
    before = jit._engine_stamp()
    assert before == jit.ENGINE_STAMP
    p = root / "automaton" / "keys.py"
    p.write_text(p.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert jit._engine_stamp() != before


def test_integer_arguments_are_widened_to_one_signature():
    @jit.kernel
    def callee(a, b):
        return a + b

    @jit.kernel
    def caller(xs):
        s = callee(xs[0], 7)  # int32 and a literal
        s += callee(np.int64(xs[1]), np.uint8(3))
        return s

    assert caller(np.array([1, 2], dtype=np.int32)) == 1 + 7 + 2 + 3
    assert callee(np.int32(4), 5) == 9
    assert [tuple(map(str, sig)) for sig in callee.signatures] == [("int64", "int64")]


def test_uint64_arguments_keep_their_type():
    @jit.kernel
    def shr(x, k):
        return x >> k

    top = np.uint64(1 << 63)
    assert shr(top, 63) == 1  # an int64 would shift in sign bits
    assert [tuple(map(str, sig)) for sig in shr.signatures] == [("uint64", "int64")]


def test_a_kernel_only_kernels_call_gets_no_python_entry_point_until_python_calls_it():
    """Compiled for a kernel caller, a kernel has no Python wrapper and stays out of the
    dispatcher's call table; a Python call compiles it again with its entry point (the first
    code kept: the caller holds it), and a kernel declared ``python=True`` has one from the
    start."""
    from numba.core.registry import cpu_target

    @jit.kernel
    def inner(a, i):
        return a[i] * 3

    @jit.kernel(python=True)
    def inner_py(a, i):
        return a[i] * 5

    @jit.kernel
    def outer(a):
        return inner(a, 1) + inner_py(a, 0)

    a = np.arange(4, dtype=np.int64)
    assert outer(a) == 3 + 0 and outer.has_entry(outer.signatures[0])
    sig = inner.signatures[0]
    assert not inner.has_entry(sig)  # compiled for `outer` alone
    assert inner_py.has_entry(inner_py.signatures[0])
    first = inner.overloads[sig]
    retired = len(jit._RETIRED)
    assert inner(a, 2) == 6  # a Python call: compiled again, with its entry point
    assert inner.has_entry(sig) and inner.overloads[sig] is not first
    assert jit._RETIRED[retired:] == [first]
    assert outer(a) == 3 and inner_py(a, 3) == 15  # the caller's code still runs
    assert inner.signatures == [sig]
    # the cache keeps the two apart
    codegen = cpu_target.target_context.codegen()
    cache = jit._EngineCache(inner.py_func)
    assert cache.key_for(sig, codegen, True) != cache.key_for(sig, codegen, False)


def _engine_dispatchers():
    from dotjson._kernels import group, walk
    from dotjson.automaton import clamp, counters, derive, emptiness, keys, keysets, rows, states, store, terms
    from dotjson import trie

    for mod in (store, terms, keysets, derive, rows, emptiness, clamp, states, counters, keys, walk, group, trie):
        for name, obj in vars(mod).items():
            if isinstance(obj, jit.KernelDispatcher) and obj.py_func.__module__ == mod.__name__:
                yield f"{mod.__name__}.{name}", obj
            elif isinstance(obj, jit.Unit) and obj.__module__ == mod.__name__:
                yield f"{mod.__name__}.{name}", obj.dispatcher


def test_a_run_compiles_each_kernel_once(smollm2_vocab, smollm2_tokenizer):
    """After warmup and a real schema's masks, no kernel of the engine has two signatures."""
    from dotjson import Guide, Index

    dotjson.warmup()
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 5},
                                               "b": {"type": "array", "items": {"type": "number"}}},
              "required": ["a"]}
    g = Guide(Index(schema, smollm2_vocab), batch_size=1)
    g.get_start_tokensets()
    doc = '{"a": "xy", "b": [1.5, 2]}'
    for tok in smollm2_tokenizer(doc, add_special_tokens=False).input_ids:
        assert g.get_next_tokensets([tok]) is not None
    assert g.get_next_tokensets([smollm2_vocab.eos_token_ids[0]]) is not None
    assert g.is_finished()[0]
    # a kernel generic over array types (the masking kernels, one per logits width) has one
    # signature per array type; two with the same arrays differ in scalars only, which the
    # widening prevents
    def arrays_of(sig):
        return tuple(str(a) if isinstance(a, (types.Array, types.BaseTuple)) else "scalar" for a in sig)

    # a unit is compiled for its declared signature only: a Python caller passing other types
    # (a read-only array, an int32 array) would compile a second copy of it
    other = {repr(u): u.dispatcher.signatures for u in jit.UNITS
             if u.__module__.startswith("dotjson.") and u.dispatcher.signatures != [u.args]}
    assert other == {}
    twice = {}
    for name, d in _engine_dispatchers():
        shapes = [arrays_of(sig) for sig in d.signatures]
        if len(set(shapes)) != len(shapes):
            twice[name] = d.signatures
    assert twice == {}
    # nor compiled twice for a Python call: every kernel the engine calls from Python that
    # kernels call too is declared python=True (jit.KernelDispatcher); only the tests call
    # plain_run, _mslot and term_hash from Python. (Seen on a cold cache, as CI's: a warm
    # process loads a callee's code inside its caller's and the Python entry's from the cache,
    # compiling neither. The list: every kernel a cold run of the whole suite compiled both
    # for a kernel caller and for a Python call.)
    again = sorted({c.fndesc.qualname for c in jit._RETIRED if c.fndesc.modname.startswith("dotjson.")}
                   - {"plain_run", "_mslot", "term_hash"})
    assert again == []


def test_warmup_in_the_background_returns_a_future_that_completes():
    fut = dotjson.warmup(background=True)
    assert fut.result(timeout=600) is None
    assert fut.done() and fut.exception() is None
    assert dotjson.warmup() is None


def test_warmup_prepares_only_the_dtypes_it_is_given():
    from dotjson._kernels import mask

    dotjson.warmup(dtypes=("float32", "bfloat16"))
    widths = {str(sig[0].dtype) for sig in mask.mask_serial.signatures}
    assert {"uint32", "uint16"} <= widths


def test_dotjson_warmup_stays_the_function_whatever_was_imported():
    # a submodule named like a lazy attribute would replace it in the package on import (the
    # command line imports the warm-up): the module is private, the name stays the function
    import importlib

    importlib.import_module("dotjson._warmup")
    importlib.import_module("dotjson.tools.cli")
    assert callable(dotjson.warmup) and dotjson.warmup.__name__ == "warmup"



def test_units_are_compiled_once_and_called_through_their_cells():
    """A unit's code is not linked into its callers: each holds its own copy of nothing but its
    plain callees, and a caller reaches it through the cell :func:`jit.link` fills."""
    from dotjson.automaton import kernels

    dotjson.warmup()
    assert kernels._deriv in jit.UNITS and kernels._row in jit.UNITS
    for u in jit.UNITS:
        assert u.address != 0, u  # linked before any kernel ran
        assert len(u.dispatcher.signatures) >= 1
        cres = u.dispatcher.overloads[u.args]
        assert cres.signature.return_type == u.returns
    # a kernel calling deriv holds deriv's memo lookup and a load of _deriv's cell, not _deriv's
    # code (compiled here without the cache: cached code cannot be inspected)
    import numba

    @numba.njit(cache=False)
    def _calls_deriv(S, t, b):
        return kernels.deriv(S, t, b)

    unit = kernels._deriv
    _calls_deriv.compile(unit.args)
    ir = _calls_deriv.inspect_llvm(unit.args)
    assert unit.symbol in ir
    assert unit.dispatcher.overloads[unit.args].fndesc.mangled_name not in ir


def test_a_unit_checks_the_types_it_is_called_with():
    import numba
    from numba.core.errors import TypingError

    @jit.unit(types.int64, types.Array(types.int64, 1, "C"), types.int64)
    def _twice(a, i):
        return 2 * a[i]

    @numba.njit(cache=False)
    def _calls_twice(a, i):
        return _twice(a, i) + 1

    @numba.njit(cache=False)
    def _calls_twice_badly(a):
        return _twice(a, 1.5)

    a = np.arange(5, dtype=np.int64)
    assert _twice(a, 3) == 6
    assert _calls_twice(a, np.int32(4)) == 9  # an int32 index reaches the unit as int64
    with pytest.raises(TypingError, match="_twice"):
        _calls_twice_badly(a)
    # from Python: the compiled code's entry point, checked against the declared types in the
    # tests (an int32 array would be read as int64 words); booleans and any integer pass
    assert jit.CHECK_ARGS
    assert _twice(a, np.int32(2)) == 4 and _twice(a, True) == 2
    assert _twice._entry is _twice.dispatcher.overloads[_twice.args].entry_point
    with pytest.raises(TypeError, match="_twice"):
        _twice(a.astype(np.int32), 1)
    with pytest.raises(TypeError, match="_twice"):
        _twice(a[::2], 1)  # not contiguous
    with pytest.raises(TypeError, match="_twice"):
        _twice(a, 1, 2)


def test_a_link_stops_a_helper_stuck_on_the_unit_it_needs(monkeypatch):
    """A link waits for the unit a helper is compiling, not for ever: past the helper timeout
    the helpers are stopped and the unit is compiled here."""
    import os

    @jit.unit(types.int64, types.int64)
    def _plus_one(i):
        return i + 1

    h = _FakeHelper()  # (never finishes its first unit)
    monkeypatch.setattr(_plus_one, "_cached", lambda: False)
    monkeypatch.setattr(jit, "_started", (os.getpid(), {h: [_plus_one]}, {_plus_one: h}))
    monkeypatch.setattr(jit, "_WORKER_TIMEOUT", 0.1)
    assert _plus_one(41) == 42
    assert h.done  # (killed)


class _FakeHelper:
    """A compile helper as :func:`jit._next_unit` sees one: running (compiling the first unit of
    its list not cached) until ``done``, which a kill sets."""

    done = False

    def poll(self):
        return 0 if self.done else None

    def kill(self):
        self.done = True

    def wait(self, timeout=None):
        return 0


def test_a_waiting_link_compiles_this_process_s_share_and_links_it(monkeypatch):
    """While a link waits for the unit a helper is compiling, this process compiles the next
    unit of its own share instead of sleeping; that unit is linked with the rest, so the plain
    kernels compiled for it, which Python can call from then on, find every cell they name
    filled."""
    import os

    @jit.unit(types.int64, types.int64)
    def _waited(i):
        return i + 1

    @jit.unit(types.int64, types.int64)
    def _deep(i):
        return i * 3

    @jit.kernel
    def _plain(i):
        return _deep(i) + 1

    @jit.unit(types.int64, types.int64)
    def _spare(i):
        return _plain(i) * 2

    h = _FakeHelper()  # (compiling _waited until it is stopped)
    for u in (_waited, _spare, _deep):
        monkeypatch.setattr(u, "_cached", lambda: False)
    monkeypatch.setattr(jit, "_started", (os.getpid(), {h: [_waited]}, {_waited: h}))
    monkeypatch.setattr(jit, "_MINE", [_spare])
    monkeypatch.setattr(jit, "_EARLY", {_waited, _spare})
    monkeypatch.setattr(jit, "_WORKER_TIMEOUT", 0.05)
    assert jit._spare_unit() is _spare
    assert _waited(1) == 2  # (the helper stopped past the timeout, the unit compiled here)
    assert h.done
    assert _spare.args in _spare.dispatcher.overloads  # compiled while the link waited
    assert _spare._linked and _deep.address and _deep._linked
    assert _plain(4) == 13 and _spare(4) == 26
    assert jit._spare_unit() is None  # nothing of this process's share left


def test_an_optional_unit_declines_until_its_helper_has_it(monkeypatch):
    """A kernel calling an optional unit runs before the unit is linked: while a running helper
    is to compile it (and neither the cache nor this process has it), its cell stays empty and
    the call answers the declared value; :func:`jit.upgrade` links it once the helper is done,
    and the same kernel then gets the unit's answer. Called from Python, it is linked at once."""
    import os

    @jit.unit(types.int64, types.int64, declined=-1)
    def _opt_square(i):
        return i * i

    @jit.kernel
    def _calls_square(i):
        return _opt_square(i) + 0

    h = _FakeHelper()
    monkeypatch.setattr(jit, "WAIT_OPTIONAL", False)
    monkeypatch.setattr(_opt_square, "_cached", lambda: False)
    monkeypatch.setattr(jit, "_started", (os.getpid(), {h: [_opt_square]}, {_opt_square: h}))
    monkeypatch.setattr(jit, "_OPT_WAITING", set())
    monkeypatch.setattr(jit, "_next_upgrade", 0.0)
    assert _calls_square(3) == -1  # declined: the helper has not cached it
    assert _opt_square in jit._OPT_WAITING and not _opt_square.address
    jit.upgrade()  # the helper still at it: nothing to link
    assert _opt_square in jit._OPT_WAITING and _calls_square(3) == -1
    h.done = True
    monkeypatch.setattr(jit, "_next_upgrade", 0.0)
    jit.upgrade()
    assert not jit._OPT_WAITING and _opt_square.address
    assert _calls_square(3) == 9 and _opt_square(5) == 25

    @jit.unit(types.int64, types.int64, declined=-1)
    def _opt_cube(i):
        return i * i * i

    h.done = False
    monkeypatch.setattr(_opt_cube, "_cached", lambda: False)
    monkeypatch.setattr(jit, "_started", (os.getpid(), {h: [_opt_cube]}, {_opt_cube: h}))
    monkeypatch.setattr(jit, "_WORKER_TIMEOUT", 0.05)
    assert _opt_cube(2) == 8  # from Python: linked now (waited for, as a required unit)
    assert _opt_cube.address and _opt_cube not in jit._OPT_WAITING


_OPTIONAL_CASES = [  # states the engine's optional units (the walk's subtree shortcuts) read
    ({"type": "object", "properties": {"slug": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                                       "mail": {"type": "string", "format": "email"}}},
     {"slug": "release-notes-2024", "mail": "alice.smith@mail.example.org", "other": "x y"}),
    ({"type": "object", "properties": {"host": {"type": "string", "format": "hostname"}},
      "additionalProperties": {"type": "string", "maxLength": 40}},
     {"host": "api.internal.example.net", "free key": "some words here"}),
]


@pytest.mark.parametrize("schema,doc", _OPTIONAL_CASES)
def test_masks_are_the_same_while_the_optional_units_decline(llama3_vocab, schema, doc):
    """The engine's optional units are exact shortcuts: with their cells empty (a first run's
    first masks, before the helper has them) every mask is the one they give, also for an index
    whose first states were walked without them and its later ones with them."""
    import json

    from naive import assert_same_masks

    from dotjson import Index

    optional = [u for u in jit.UNITS if u.declined is not None]
    names = {u.__name__ for u in optional}
    assert names >= {"_ascii_class_miss", "_class_chain_packed", "_plain_open_miss"}
    jit.link()
    data = json.dumps(doc, separators=(",", ":")).encode()
    ref = Index(schema, llama3_vocab, close_objects=False)
    for i in range(len(data) + 1):  # (its masks computed with the units, memoized)
        s = ref._auto.walk_bytes(ref.initial_state, data[:i])
        if s >= 0:
            ref.mask(s)
    assert _memo_count(ref, "_T_POPEN") > 0
    cells = {u: u._cell.value for u in optional}
    mixed = Index(schema, llama3_vocab, close_objects=False)
    try:
        for u in optional:
            u._cell.value = 0
        declined = Index(schema, llama3_vocab, close_objects=False)
        assert_same_masks(declined, ref, data)
        # (their misses never ran: no memo entry of theirs; the reference made some)
        assert _memo_count(declined, "_T_POPEN") == _memo_count(declined, "_T_ACLS") == 0
        half = len(data) // 2
        for i in range(half):
            mixed.mask(mixed._auto.walk_bytes(mixed.initial_state, data[:i]))
    finally:
        for u, v in cells.items():
            u._cell.value = v
    assert_same_masks(mixed, ref, data)


def _memo_count(index, tag: str) -> int:
    """How many entries of the store memo's tag ``tag`` (``automaton.store._T_*``) ``index`` holds."""
    from dotjson.automaton import store

    mk = index._auto._a["mk"]
    return int(((mk >= 0) & ((mk >> 58) == (getattr(store, tag) >> 58))).sum())


_LINKED_PROBE = (
    "import importlib, json, dotjson\n"
    "from dotjson._kernels import jit\n"
    "from dotjson import Guide, Index, Vocabulary\n"
    "def linked():\n"
    "    return sum(1 for u in jit.UNITS if u._linked)\n"
    "def unlinked_calls():\n"
    "    # every compiled kernel's code: the units it calls have their cells filled\n"
    "    bad = []\n"
    "    for rel in jit.ENGINE_MODULES:\n"
    "        m = importlib.import_module('dotjson.' + rel[:-3].replace('/', '.'))\n"
    "        for name, d in vars(m).items():\n"
    "            disp = d.dispatcher if isinstance(d, jit.Unit) else d\n"
    "            if not isinstance(disp, jit.KernelDispatcher):\n"
    "                continue\n"
    "            for sig in list(disp.overloads):\n"
    "                bad += [(name, u.__name__) for u in jit._overload_units(disp, sig)\n"
    "                        if not u.address or not u._linked]\n"
    "    return sorted(set(bad))\n"
    "toks = [chr(c) for c in range(32, 127)] + ['\"a\"', 'ab', '12']\n"
    "v = Vocabulary.from_tuples(toks, list(range(len(toks))), eos_token_ids=len(toks))\n"
    "out = {'all': len(jit.UNITS), 'vocabulary': linked()}\n"
    "s = {'type': 'object', 'properties': {'a': {'type': 'string'}}}\n"
    "ts = Guide(Index(s, v), batch_size=1).get_start_tokensets()\n"
    "out['first mask'] = linked()\n"
    "out['first mask unlinked'] = unlinked_calls()\n"
    "if WARMUP:\n"
    "    dotjson.warmup()\n"
    "    out['warmup'] = linked()\n"
    "    out['warmup unlinked'] = unlinked_calls()\n"
    "print('@@' + json.dumps(out))\n"
)


def _python(code: str, env=None, timeout=900) -> str:
    """Run ``code`` in a new Python process (a fresh link of the units); its stdout."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


def _linked_counts(env=None, warmup=True, timeout=900) -> dict:
    import json

    out = _python(f"WARMUP = {warmup}\n" + _LINKED_PROBE, env, timeout)
    return json.loads([ln for ln in out.splitlines() if ln.startswith("@@")][-1][2:])


def test_a_process_links_the_units_its_kernels_reach():
    """A unit's cell is filled before any code naming it runs, and only then: a new process
    building a vocabulary links no unit, its first mask the units that mask's kernels reach (not
    the counters', the key walk's, ...), every compiled kernel calling only filled cells;
    ``warmup()`` links every unit."""
    got = _linked_counts()
    assert got["vocabulary"] == 0
    assert 10 <= got["first mask"] < got["all"], got
    assert got["first mask unlinked"] == []
    assert got["warmup"] == got["all"] and got["warmup unlinked"] == []


def test_threads_link_what_their_kernels_reach_at_once():
    """Four threads of a new process build indexes and step documents at the same moment, each
    linking what its kernels reach (a link is under Numba's compiler lock; a unit's entry point
    is set once every cell its code reaches is filled): no error, no crash, equal masks."""
    probe = (
        "import threading, numpy as np\n"
        "from dotjson import Index, Vocabulary\n"
        "toks = [chr(c) for c in range(32, 127)] + ['\"a\"', 'ab', '12']\n"
        "v = Vocabulary.from_tuples(toks, list(range(len(toks))), eos_token_ids=len(toks))\n"
        "schemas = [{'type': 'object', 'properties': {'a': {'type': 'string'}, 'b': {'type': 'integer'}}},\n"
        "           {'type': 'array', 'items': {'type': 'string', 'pattern': '^[a-z]{2,5}$'}},\n"
        "           {'type': 'object', 'properties': {'x': {'type': 'number', 'minimum': 3}}},\n"
        "           {'type': 'array', 'items': {'type': 'string', 'format': 'date-time'}}]\n"
        "out, barrier = {}, threading.Barrier(4)\n"
        "def run(k, s):\n"
        "    barrier.wait()\n"
        "    ix = Index(s, v, close_objects=False)\n"
        "    st, masks = ix.initial_state, []\n"
        "    for ch in ('{\"a\":\"x\",\"b\":1}' if s['type'] == 'object' else '[\"ab\",\"cd\"]'):\n"
        "        masks.append(np.flatnonzero(ix.mask(st)).tolist())\n"
        "        nxt = ix.next_state(st, toks.index(ch))\n"
        "        if nxt < 0:\n"
        "            break\n"
        "        st = nxt\n"
        "    out[k] = masks\n"
        "ts = [threading.Thread(target=run, args=(k, s)) for k, s in enumerate(schemas)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "again = {}\n"
        "for k, s in enumerate(schemas):\n"
        "    barrier = threading.Barrier(1); out2 = out; out = again; run(k, s); out = out2\n"
        "print('OK' if len(out) == 4 and out == again else 'DIFF')\n"
    )
    out = _python(probe)
    assert out.split()[-1] == "OK", out[-2000:]


@pytest.mark.slow
def test_a_cold_first_mask_waits_only_for_the_units_it_reaches(tmp_path):
    """An empty Numba cache, no ``warmup()``: the first mask runs once the units it reaches are
    compiled (by this process and a helper), not all of them; the helper finishes the rest
    before the process exits, and a new process then compiles nothing."""
    import os

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), DOTJSON_COMPILE_WORKERS="2")
    got = _linked_counts(env, warmup=False, timeout=1800)
    assert 10 <= got["first mask"] < got["all"] and got["first mask unlinked"] == []
    probe = ("import dotjson\nfrom dotjson._kernels import jit\nimport importlib\n"
             "for rel in jit.ENGINE_MODULES:\n"
             "    importlib.import_module('dotjson.' + rel[:-3].replace('/', '.'))\n"
             "print(sum(1 for u in jit.UNITS if not u._cached()))\n")
    out = _python(probe, env, 600)
    assert out.split()[-1] == "0", out[-2000:]


@pytest.mark.slow
def test_a_cold_cache_compiles_the_units_in_helper_processes(tmp_path):
    """An empty Numba cache: the units are compiled by two processes (one a helper writing the
    same cache); every unit is cached afterwards, and a new process compiles nothing."""
    import os
    import subprocess
    import sys

    probe = (
        "import dotjson\n"
        "from dotjson._kernels import jit\n"
        "dotjson.warmup()\n"
        "units = [u for u in jit.UNITS if u.__module__.startswith('dotjson.')]\n"
        "missed = [repr(u) for u in units if sum(u.dispatcher._cache_misses.values())]\n"
        "print(len(units), len(missed), all(u._cached() for u in units))\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), DOTJSON_COMPILE_WORKERS="2")

    def run():
        p = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                           timeout=1800)
        assert p.returncode == 0, p.stderr[-3000:]
        n, missed, cached = p.stdout.split()[-3:]
        return int(n), int(missed), cached == "True"

    n, missed, cached = run()
    assert cached and n >= 10
    assert 0 < missed < n  # this process compiled its share; the helper's share was loaded
    n2, missed2, cached2 = run()
    assert (n2, missed2, cached2) == (n, 0, True)



def test_no_kernel_is_loaded_in_a_request_after_warmup(tmp_path):
    """``warmup()`` loads every kernel a request calls from Python: in a new process, after it,
    the first masks of schemas that reach the rarer paths (an array of distinct objects, whose
    rule family walks a member's key byte by byte; a process's head interner growing) load no
    kernel (each would be ~7 ms of loading inside a request)."""
    probe = (
        "import numpy as np, dotjson\n"
        "import numba.core.dispatcher as D\n"
        "from dotjson import Index, Vocabulary\n"
        "dotjson.warmup()\n"
        "loaded = []\n"
        "orig = D._DispatcherBase._compile_for_args\n"
        "def spy(self, *a, **k):\n"
        "    loaded.append(self.py_func.__qualname__)\n"
        "    return orig(self, *a, **k)\n"
        "D._DispatcherBase._compile_for_args = spy\n"
        "toks = [chr(c) for c in range(32, 127)] + ['\"a\"', 'ab', '12']\n"
        "v = Vocabulary.from_tuples(toks, list(range(len(toks))), eos_token_ids=len(toks))\n"
        "s = {'type': 'array', 'uniqueItems': True, 'items': {'type': 'object', 'properties': "
        "{'a': {'type': 'string'}, 'b': {'type': 'integer'}}}}\n"
        "ix = Index(s, v, close_objects=False)\n"
        "st = ix.initial_state\n"
        "for ch in '[{\"a\":\"x\",\"b\":1},{\"a\"':\n"
        "    ix.mask(st); st = ix.next_state(st, toks.index(ch))\n"
        "from dotjson.automaton import heads\n"
        "it = heads.interner(); it._rehash(2 * it.ght.shape[0])\n"
        "print('LOADED', sorted(set(loaded)))\n"
    )
    out = _python(probe)
    assert out.strip().splitlines()[-1] == "LOADED []", out[-2000:]

def _kernels_taking_the_store():
    import ast

    for rel in sorted(_kernel_modules()):
        tree = ast.parse((PKG / rel).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef) or not node.args.args:
                continue
            decorated = any(ast.unparse(d).startswith(("kernel", "unit")) for d in node.decorator_list)
            if decorated and node.args.args[0].arg == "S":
                yield rel, node


def test_every_kernel_taking_the_store_borrows_it():
    # a kernel that reads the store tuple without `S = borrow(S)` pays an NRT_incref/decref call
    # per array it touches (docs/ARCHITECTURE.md, "Reference counts and scratch arrays"): that was
    # ~15% of a fresh mask's time before every kernel borrowed
    import ast

    missing, seen = [], 0
    for rel, node in _kernels_taking_the_store():
        seen += 1
        body = [st for st in node.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
        first = ast.unparse(body[0]).replace(" ", "") if body else ""
        if first not in ("S=borrow(S)", "S=K.borrow(S)"):
            missing.append(f"{rel}:{node.lineno} {node.name}")
    assert seen > 80
    assert not missing, missing


def test_scratch_arrays_are_usable_and_not_returned():
    # scratch: a literal-size array on the kernel's stack, its slices and 2-D rows as any array's;
    # and no kernel returns one it made (it would point into a dead frame)
    import ast

    from numba import njit

    from dotjson.automaton.store import scratch

    @njit
    def use(k):
        a = scratch(np.int32, 8, 0)
        w = scratch(np.uint64, 4, 3)
        for i in range(8):
            a[i] = i * k
        for i in range(4):
            for j in range(3):
                w[i, j] = np.uint64(i * 3 + j)
        b = a[2:6]
        return b.sum() + int(w[3, 2]) + a.shape[0] + w.shape[0] * 10 + w.shape[1] * 100

    assert use(2) == (4 + 6 + 8 + 10) + 11 + 8 + 40 + 300
    bad = []
    for rel in sorted(_kernel_modules()):
        tree = ast.parse((PKG / rel).read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            made = {t.id for st in ast.walk(fn) if isinstance(st, ast.Assign) and "scratch(" in ast.unparse(st.value)
                    for t in st.targets if isinstance(t, ast.Name)}
            def arrays(v):  # the names an expression hands back as arrays (itself, a slice)
                if isinstance(v, ast.Tuple):
                    return {n for e in v.elts for n in arrays(e)}
                if isinstance(v, ast.Name):
                    return {v.id}
                if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Slice):
                    return arrays(v.value)
                return set()

            for st in ast.walk(fn):
                if isinstance(st, ast.Return) and st.value is not None and arrays(st.value) & made:
                    bad.append(f"{rel}:{st.lineno} {fn.name}")
    assert not bad, bad


def test_fresh_masks_fit_a_small_thread_stack(llama3_vocab, llama3_tokenizer):
    # the kernels' scratch arrays live on the native stack (store.scratch: a few KiB a frame,
    # ~30 KiB for rows): fresh masks of an any-order open object with nested arrays, a pattern
    # and a bounded string must run in a thread whose stack is 192 KiB (musl's default is
    # 128 KiB; the sample of 30 MaskBench documents ran in 128 KiB when this was written)
    import json
    import threading

    from dotjson import Index

    schema = {"type": "object", "properties": {
        "id": {"type": "string", "pattern": "^[a-z]{2}-[0-9]+$"},
        "tags": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 40}, "weight": {"type": "number"}}}},
        "when": {"type": "string", "format": "date-time"}}, "required": ["id"]}
    doc = json.dumps({"id": "ab-12", "tags": [{"name": "x\\u00e9y", "weight": 1.5e3}, {"name": "z"}],
                      "extra": {"k": [1, "two", None]}, "when": "2023-04-15T19:30:00Z"})
    ids = llama3_tokenizer.encode(doc, add_special_tokens=False)
    got = []

    def run():
        index = Index(schema, llama3_vocab, close_objects=False, property_order="any")
        s = index.initial_state
        for t in ids:
            got.append(bool(index.mask(s)[t >> 5] >> np.uint32(t & 31) & np.uint32(1)))
            s = index.next_state(s, t)
        got.append(index.is_accepting(s))

    old = threading.stack_size(192 * 1024)
    try:
        th = threading.Thread(target=run)
        th.start()
        th.join()
    finally:
        threading.stack_size(old)
    assert len(got) == len(ids) + 1 and all(got)
