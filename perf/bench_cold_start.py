"""The first run after install: what compiling dotjson's Numba kernels costs, kernel by kernel.

Each measurement runs in a fresh Python process. ``--cold`` gives that process an empty
``NUMBA_CACHE_DIR`` (a temporary directory), so every kernel compiles as on a user's first run;
``--warm`` runs the same job again over the cache the cold run wrote. Printed per job: wall and
CPU seconds (user + system of the child and of its compile helpers), and with ``--kernels`` a table of every compiled
kernel and signature: its own compile time (its callees' compiles subtracted), the inclusive
time, and the size of its optimised LLVM IR.

Jobs (``--job``):

- ``warmup``: ``import dotjson; dotjson.warmup()``, what a server calls at start-up;
- ``first-mask``: a fresh ``Index`` over the Llama 3 vocabulary (``quicktok-v1``) and its first
  token set, without ``warmup()``: what a user's first script pays; then a short document
  stepped a mask a token (the ``first document`` mark);
- ``import``: ``import dotjson`` alone.

Examples::

    python3 perf/bench_cold_start.py --job warmup --cold --warm --kernels
    python3 perf/bench_cold_start.py --job first-mask --cold --warm

Measure on a quiet machine (the load average is printed): compilation is CPU-bound and single
threaded, so the CPU seconds are the figure that moves least with load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

_CHILD = textwrap.dedent(
    r"""
    import json, os, sys, time, resource
    t0 = time.perf_counter()
    rec = None
    if os.environ.get("BENCH_KERNELS") == "1":
        from numba.core import event
        rec = event.RecordingListener()
        event.register("numba:compile", rec)
    job = os.environ["BENCH_JOB"]
    marks = {}
    import dotjson
    marks["import"] = time.perf_counter() - t0
    if job == "warmup":
        dotjson.warmup()
        marks["warmup"] = time.perf_counter() - t0
    elif job == "first-mask":
        from dotjson import Guide, Index, Vocabulary
        from dotjson.tools.testing import llama3_tokenizer_dir
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(llama3_tokenizer_dir())
        marks["tokenizer"] = time.perf_counter() - t0
        v = Vocabulary.from_tokenizer(tok)
        marks["vocabulary"] = time.perf_counter() - t0
        schema = {"type": "object", "properties": {"name": {"type": "string"},
                  "age": {"type": "integer", "minimum": 0}}, "required": ["name"]}
        index = Index(schema, v)
        g = Guide(index, batch_size=1)
        ts = g.get_start_tokensets()
        marks["first mask"] = time.perf_counter() - t0
        # then a whole document, a mask a token (what the kernels it reaches next cost)
        state = index.initial_state
        for t in tok.encode('{"name": "Ada Lovelace", "age": 36}', add_special_tokens=False):
            index.mask(state)
            state = index.next_state(state, t)
        assert index.is_accepting(state)
        marks["first document"] = time.perf_counter() - t0
    from dotjson._kernels import jit as _jit
    if getattr(_jit, "wait_helpers", None) is not None:  # (helpers still compiling the rest)
        _jit.wait_helpers()
        marks["helpers done"] = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)  # the compile helpers, waited for
    from dotjson._kernels import jit
    out = {"marks": marks, "cpu": ru.ru_utime + ru.ru_stime + ch.ru_utime + ch.ru_stime,
           "cpu_helpers": ch.ru_utime + ch.ru_stime, "workers": jit.compile_workers(),
           "kernels": []}
    if rec is not None:
        # pair start/end events per dispatcher + signature, in order (compiles nest)
        stack, rows = [], []
        for ts, ev in rec.buffer:
            if ev.is_start:
                stack.append([ev.data["dispatcher"], ev.data["args"], ts, 0.0])
            else:
                d, args, t_start, nested = stack.pop()
                total = ts - t_start
                if stack:
                    stack[-1][3] += total
                name = d.py_func.__module__ + "." + d.py_func.__qualname__
                ir = 0
                try:
                    ir = len(d.inspect_llvm(tuple(args)))
                except Exception:
                    pass
                rows.append((name, str(args), total - nested, total, ir))
        out["kernels"] = rows
    print("@@" + json.dumps(out))
    """
)


def run_job(job: str, cache_dir: str, kernels: bool, workers=None) -> dict:
    env = dict(os.environ, BENCH_JOB=job, NUMBA_CACHE_DIR=cache_dir, BENCH_KERNELS="1" if kernels else "0")
    if workers is not None:
        env["DOTJSON_COMPILE_WORKERS"] = str(workers)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{job} failed:\n{p.stderr[-4000:]}")
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("@@")][-1]
    out = json.loads(line[2:])
    out["wall"] = wall
    return out


def report(label: str, out: dict, top: int) -> None:
    marks = ", ".join(f"{k} {v:.2f} s" for k, v in out["marks"].items())
    print(f"{label}: wall {out['wall']:.1f} s, CPU {out['cpu']:.1f} s  ({marks}; "
          f"{out['workers']} compile process(es), helpers' CPU {out['cpu_helpers']:.1f} s)")
    rows = out["kernels"]
    if rows:
        rows = sorted(rows, key=lambda r: -r[2])
        own = sum(r[2] for r in rows)
        print(f"  {len(rows)} kernel compiles, {own:.1f} s of compile in all; LLVM IR "
              f"{sum(r[4] for r in rows) / 1e6:.1f} MB")
        print(f"  {'own s':>7} {'incl s':>7} {'IR kB':>7}  kernel (signature)")
        for name, args, own_s, incl, ir in rows[:top]:
            short = name.replace("dotjson.", "")
            print(f"  {own_s:7.2f} {incl:7.2f} {ir / 1e3:7.0f}  {short} {args[:70]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--job", default="warmup", choices=["warmup", "first-mask", "import"])
    ap.add_argument("--cold", action="store_true", help="run once with an empty Numba cache")
    ap.add_argument("--warm", action="store_true", help="then again over the cache it wrote")
    ap.add_argument("--kernels", action="store_true", help="per-kernel compile table (cold run)")
    ap.add_argument("--top", type=int, default=40, help="rows of the kernel table")
    ap.add_argument("--json", help="write the raw figures here")
    ap.add_argument("--workers", type=int, help="DOTJSON_COMPILE_WORKERS for the job (default: "
                    "dotjson's own choice, the CPUs up to 4); the kernel table shows the compiles "
                    "of the job's own process only, so use --workers 1 with --kernels")
    a = ap.parse_args()
    if not (a.cold or a.warm):
        a.cold = a.warm = True
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; job {a.job}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="dotjson-numba-") as cache:
        if a.cold:
            results["cold"] = run_job(a.job, cache, a.kernels, a.workers)
            report("cold cache", results["cold"], a.top)
        if a.warm:
            results["warm"] = run_job(a.job, cache, False, a.workers)
            report("warm cache", results["warm"], a.top)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
