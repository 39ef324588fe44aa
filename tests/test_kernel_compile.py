"""The engine's kernels as compiled code: one signature each, a cache key over every kernel source.

A cold start (an empty Numba cache) compiles every kernel a run calls; each extra signature of
a kernel is a whole compile of it and of everything it calls (``perf/bench_cold_start.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from numba.core import types

import dotjson
from dotjson._kernels import jit

PKG = Path(dotjson.__file__).resolve().parent


def _kernel_modules():
    found = set()
    for path in PKG.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"^@(kernel\b|nb\.njit|numba\.njit|njit)", text, re.M):
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


def _engine_dispatchers():
    from dotjson._kernels import group, walk
    from dotjson.automaton import counters, keys, kernels
    from dotjson import trie

    for mod in (kernels, counters, keys, walk, group, trie):
        for name, obj in vars(mod).items():
            if isinstance(obj, jit.KernelDispatcher) and obj.py_func.__module__ == mod.__name__:
                yield f"{mod.__name__}.{name}", obj


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
    # a kernel generic over array types (``_view``) has one signature per array type; two
    # signatures with the same arrays differ in scalars only, a compile the widening prevents
    def arrays_of(sig):
        return tuple(str(a) if isinstance(a, (types.Array, types.BaseTuple)) else "scalar" for a in sig)

    twice = {}
    for name, d in _engine_dispatchers():
        shapes = [arrays_of(sig) for sig in d.signatures]
        if len(set(shapes)) != len(shapes):
            twice[name] = d.signatures
    assert twice == {}


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
    importlib.import_module("dotjson.cli")
    assert callable(dotjson.warmup) and dotjson.warmup.__name__ == "warmup"

