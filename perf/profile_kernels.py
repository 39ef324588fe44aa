"""Inside the kernels: where a fresh mask's machine time goes, by Numba function (Linux ``perf``).

The Python profilers (``profile_fresh_parts.py``, py-spy, cProfile) see a kernel call as one
opaque frame; the kernels' share of a fresh mask (their machine code, and Numba's unboxing and
allocation around it) had no breakdown. This samples the machine code itself. ``perf`` cannot
name Numba's code (it is loaded from object files into anonymous memory), so the profiled
process writes ``/tmp/perf-<pid>.map``, the symbol map ``perf report`` reads for such memory:
every compiled library's object file is kept as Numba loads it (cached or compiled), its symbol
table read with ``nm``, and each symbol placed at the address the loader gave its library.
Functions LLVM inlined are counted in their caller.

The workload: the ``bench_maskbench.py`` sample's first valid instance of each schema (Llama 3),
each teacher-forced on a fresh :class:`dotjson.Index` (the benchmark configuration,
``close_objects=False``), ``--rounds`` times, after a warm-up. Sampling is on only around that
forcing (``perf record --control``). Printed: the share of the samples in compiled code, each
kernel function's share of those, and the heaviest symbols elsewhere.

Needs ``perf`` (``linux-tools``) and ``nm`` (binutils); ``perf_event_paranoid`` ≤ 2 lets a user
profile their own processes. Run ``python3 perf/profile_kernels.py --help``.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: the compiled object of every Numba library loaded so far, by id (see :func:`keep_objects`)
_OBJECTS: dict = {}


def keep_objects() -> None:
    """Keep each Numba code library's object file as it is loaded (Numba drops it after linking);
    call before any kernel is compiled or loaded."""
    from numba.core.codegen import CPUCodeLibrary

    if getattr(CPUCodeLibrary, "_dotjson_kept", False):
        return
    original = CPUCodeLibrary._set_compiled_object
    compiled = CPUCodeLibrary._object_compiled_hook.__func__

    def keep(self, value):  # a library loaded from Numba's cache
        _OBJECTS[id(self)] = (self, value)
        return original(self, value)

    def keep_compiled(cls, ll_module, buf):  # ... or compiled in this process
        compiled(cls, ll_module, buf)
        lib = getattr(ll_module, "_CPUCodeLibrary__library", None)
        if lib is not None:
            _OBJECTS[id(lib)] = (lib, buf)

    CPUCodeLibrary._set_compiled_object = keep
    CPUCodeLibrary._object_compiled_hook = classmethod(keep_compiled)
    CPUCodeLibrary._dotjson_kept = True


def _symbols(obj: bytes) -> list:
    """``(value, size, kind, name)`` of the defined functions of an object file (``nm -S``)."""
    with tempfile.NamedTemporaryFile(suffix=".o", delete=False) as f:
        f.write(obj)
        path = f.name
    try:
        out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True,
                             check=True).stdout
    finally:
        os.unlink(path)
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "TtWw":
            syms.append((int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]))
    return syms


def symbol_map() -> list:
    """``(address, size, name)`` of every function of every kept library, sorted. A library's
    code is one section: its load address is that of any global function it defines (asked of
    the library by name) less the function's offset in the file; weak functions (one copy per
    library that links them) are placed by it too, never asked by name."""
    rows = []
    for lib, obj in list(_OBJECTS.values()):
        syms = _symbols(obj)
        base = None
        for value, _, kind, name in syms:
            if kind == "T" and not name.startswith("cfunc."):
                try:
                    addr = lib.get_pointer_to_function(name)
                except Exception:  # noqa: BLE001 - a symbol the engine cannot resolve: try the next
                    addr = 0
                if addr:
                    base = addr - value
                    break
        if base is not None:
            rows.extend((base + value, size, name) for value, size, _, name in syms if size)
    return sorted(rows)


def write_map(path: str | None = None) -> int:
    """Write ``perf``'s map of this process's compiled code; the number of symbols written."""
    rows = symbol_map()
    with open(path or f"/tmp/perf-{os.getpid()}.map", "w") as f:
        for addr, size, name in rows:
            f.write(f"{addr:x} {size:x} {name}\n")
    return len(rows)


def demangle(sym: str) -> str | None:
    """The dotted Python name of a Numba symbol (``_ZN7dotjson9automaton6derive6_derivB3v48...``
    → ``dotjson.automaton.derive._deriv``; its wrappers ``cfunc.`` / ``_ZN7cpython`` the same);
    ``None`` for a symbol that is not Numba's."""
    if sym.startswith("cfunc."):
        sym = sym[6:]
    if not sym.startswith("_ZN"):
        return None
    i, names = 3, []
    while i < len(sym) and sym[i].isdigit():
        j = i
        while j < len(sym) and sym[j].isdigit():
            j += 1
        n = int(sym[i:j])
        names.append(sym[j:j + n])
        i = j + n
    if names and names[0] == "cpython":
        names = names[1:]
    # (the loop stops at Numba's version tag, ``B3v48``: the argument types follow it)
    return ".".join(names[:6]) if names and names[0] in ("dotjson", "numba") else None


def _child(args) -> None:
    keep_objects()
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))
    import gc

    import peers
    from bench_maskbench import WARMUP_DOC, WARMUP_SCHEMA, _force, valid_instances

    tok = peers.load_tokenizer("llama3")
    eng = peers.make_engine("dotjson", tok)
    _force(eng.compile(WARMUP_SCHEMA), tok.encode(peers.compact(WARMUP_DOC), add_special_tokens=False))
    jobs = []
    for _, schema, ids in valid_instances(tok, args.limit, args.seed, data=args.data, first_only=True):
        try:
            eng.compile(schema)
        except Exception:  # noqa: BLE001 - a schema the engine refuses is not this profile's topic
            continue
        jobs.append((schema, ids))
    for schema, ids in jobs:  # (every kernel loaded before sampling starts)
        _force(eng.compile(schema), ids)
    gc.collect()
    gc.freeze()
    ctl, ack = int(os.environ["DOTJSON_PERF_CTL"]), int(os.environ["DOTJSON_PERF_ACK"])
    os.write(ctl, b"enable\n")
    os.read(ack, 16)
    t0 = time.thread_time()
    for _ in range(args.rounds):
        for schema, ids in jobs:
            _force(eng.compile(schema), ids)
    cpu = time.thread_time() - t0
    os.write(ctl, b"disable\n")
    os.read(ack, 16)
    n = write_map()
    steps = sum(len(ids) for _, ids in jobs) * args.rounds
    print(f"forced {len(jobs)} documents x {args.rounds} rounds: {steps} steps, {cpu:.2f} s thread CPU "
          f"({cpu / steps * 1e6:.1f} µs a step); {n} compiled functions mapped", flush=True)


def report(data: str, top: int) -> str:
    """The tables of ``perf report``'s samples in ``data``: the kernels' functions, then the
    rest's heaviest symbols (the interpreter, the allocator, NumPy), each as a share of all."""
    out = subprocess.run(["perf", "report", "-i", data, "--sort", "dso,sym", "--stdio"],
                         capture_output=True, text=True, check=True).stdout
    by_fn: collections.Counter = collections.Counter()
    rest: collections.Counter = collections.Counter()
    total = 0.0
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(.+?)\s+\[(.)\]\s+(\S+)", line)
        if not m:
            continue
        share = float(m[1])
        total += share
        name, dso = demangle(m[4]), m[2].strip()
        if name is not None:
            by_fn[name] += share
        elif dso.startswith("[JIT]"):
            rest[("(compiled code without a symbol)", "")] += share
        else:
            rest[(m[4], dso)] += share
    jit = sum(by_fn.values())
    lines = [f"samples in compiled code (the kernels' own machine code): {jit:.1f}% of all; the rest "
             f"({total - jit:.1f}%) is the interpreter, the C library, NumPy and Numba's runtime "
             "(argument unboxing, allocation) around and between the kernels", "",
             "| kernel function | share of the kernels' samples | of all |", "|---|---:|---:|"]
    for name, share in by_fn.most_common(top):
        lines.append(f"| `{name}` | {share / jit * 100:.1f}% | {share:.1f}% |")
    lines += ["", "| elsewhere: symbol | library | of all |", "|---|---|---:|"]
    for (sym, dso), share in rest.most_common(max(8, top // 3)):
        lines.append(f"| `{sym[:60]}` | {dso} | {share:.1f}% |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=2, help="schemas per MaskBench category")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=5, help="fresh indexes per document")
    ap.add_argument("--top", type=int, default=30, help="kernel functions listed")
    ap.add_argument("--freq", type=int, default=4000, help="samples a second")
    ap.add_argument("--data", default=None, help="MaskBench folder (default: the benchmark's)")
    ap.add_argument("--keep", default=None, help="keep perf's data file at this path")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.data is None:
        sys.path.insert(0, str(HERE))
        from bench_maskbench import DATA

        args.data = str(DATA)
    if args.child:
        _child(args)
        return 0
    missing = [t for t in ("perf", "nm") if shutil.which(t) is None]
    if missing:
        print(f"profile_kernels: needs {' and '.join(missing)} on PATH (linux-tools, binutils)", file=sys.stderr)
        return 2
    tmp = None if args.keep else tempfile.mkdtemp(prefix="profile_kernels.")
    data = args.keep or os.path.join(tmp, "perf.data")
    ctl_r, ctl_w = os.pipe()
    ack_r, ack_w = os.pipe()
    env = dict(os.environ, DOTJSON_PERF_CTL=str(ctl_w), DOTJSON_PERF_ACK=str(ack_r))
    cmd = ["perf", "record", "-q", "-F", str(args.freq), "-D", "-1", f"--control=fd:{ctl_r},{ack_w}",
           "-o", data, "--", sys.executable, str(Path(__file__).resolve()), "--child",
           "--limit", str(args.limit), "--seed", str(args.seed), "--rounds", str(args.rounds),
           "--data", args.data]
    try:
        proc = subprocess.run(cmd, env=env, pass_fds=(ctl_r, ctl_w, ack_r, ack_w),
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n", file=sys.stderr)
            return proc.returncode
        print(proc.stdout.strip())
        print(report(data, args.top))
    finally:
        for fd in (ctl_r, ctl_w, ack_r, ack_w):
            os.close(fd)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
