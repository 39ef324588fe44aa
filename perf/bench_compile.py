"""Compile time and memory for schemas with large bounds, every engine, one fresh process per case.

Each case is a pair (small bound, large bound) of the same shape, so growth with the bound shows:

* ``string maxLength`` 1,000 and 100,000;
* ``array minItems`` 50 and 5,000 (integers);
* ``object`` with 100, 1,000 and 10,000 optional properties;
* a 4 MB schema: 3,800 ``$defs`` of 20 patterned properties each, of which the root uses one
  (the cost of an index must not grow with what the schema declares but does not use);
* a recursive schema (a tree through ``$ref``), forced through a nesting depth of 40.

For every (case, engine), in a fresh worker process (one CPU thread, a wall-clock budget), after
the engine's vocabulary is prepared and a warm-up schema compiled:

* **TTFM**: compile + a cursor + the start mask;
* **ΔRSS**: resident memory after the compile minus before (``/proc/self/statm``), compiled
  object alive; **Δpeak**: growth of the peak RSS (``ru_maxrss``) over the compile;
* **tracemalloc peak** of a second compile of the same schema (Python and NumPy allocations only;
  the Rust/C++ engines allocate outside its view, so it is printed for dotjson only);
* **forced**: a valid instance teacher-forced token by token to EOS (capped by ``--max-tokens``),
  with its mean time per token and the RSS growth after forcing (dotjson: counters, not copies,
  so forcing 5,000 items must not grow the index).

Run ``python3 perf/bench_compile.py --help``; see perf/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import resource
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402
from bench_maskbench import _refused  # noqa: E402

_WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ".split()


def _text(n: int) -> str:
    out, i = [], 0
    while sum(len(w) + 1 for w in out) < n:
        out.append(_WORDS[i % len(_WORDS)])
        i += 1
    return " ".join(out)[:n]


def _tree(depth: int):
    node = {"value": depth, "children": []}
    for d in range(depth - 1, 0, -1):
        node = {"value": d, "children": [node, {"value": -d, "children": []}]}
    return node


def _props(n: int):
    return {"type": "object", "properties": {f"p{i}": {"type": "integer"} if i % 2 else {"type": "string"}
                                             for i in range(n)}}


def _big_defs(n: int = 3800):
    d = {f"d{i}": {"type": "object", "required": ["a1"],
                   "properties": {f"a{j}": {"type": "string", "pattern": "^[a-z]+$"} for j in range(20)}}
         for i in range(n)}
    return {"$defs": d, "$ref": "#/$defs/d7"}


def _props_doc(n: int, every: int = 10):
    return {f"p{i}": (i if i % 2 else f"v{i}") for i in range(0, n, every)}


TREE = {
    "$ref": "#/$defs/node",
    "$defs": {"node": {"type": "object",
                       "properties": {"value": {"type": "integer"},
                                      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                       "required": ["value", "children"], "additionalProperties": False}},
}

#: (name, schema, a valid instance)
CASES = [
    ("string maxLength 1,000", {"type": "string", "maxLength": 1000}, _text(900)),
    ("string maxLength 100,000", {"type": "string", "maxLength": 100000}, _text(900)),
    ("array minItems 50", {"type": "array", "items": {"type": "integer"}, "minItems": 50},
     list(range(60))),
    ("array minItems 5,000", {"type": "array", "items": {"type": "integer"}, "minItems": 5000},
     list(range(5000))),
    ("object 100 properties", _props(100), _props_doc(100)),
    ("object 1,000 properties", _props(1000), _props_doc(1000)),
    ("object 10,000 properties", _props(10000), _props_doc(10000, 100)),
    ("4 MB schema, 1 of 3,800 $defs", _big_defs(), {"a1": "abc", "a5": "xyz"}),
    ("recursive tree, depth 40", TREE, _tree(40)),
]

WARMUP = ({"type": "object", "properties": {"a": {"type": "string"}}}, {"a": "x"})


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _case(conn, engine_name, tokenizer, schema, instance, max_tokens, verbose):
    try:
        peers.set_single_thread_env()
        if not verbose:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 2)
        tok = peers.load_tokenizer(tokenizer)
        engine = peers.make_engine(engine_name, tok)
        c = engine.compile(WARMUP[0])
        m = c.matcher()
        m.first_mask()
        for t in tok.encode(peers.compact(WARMUP[1]), add_special_tokens=False):
            m.advance(t)
            m.mask()
        del c, m
        ids = tok.encode(peers.compact(instance), add_special_tokens=False)[:max_tokens]
        full = len(tok.encode(peers.compact(instance), add_special_tokens=False)) <= max_tokens
        import gc

        gc.collect()
        conn.send({"status": "ready"})  # the budget starts now, not at process start
        r0, p0 = _rss(), _maxrss()
        pc = time.perf_counter
        t0 = pc()
        try:
            compiled = engine.compile(schema)
            m = compiled.matcher()
            m.first_mask()
        except peers.CompileFailed as e:
            conn.send({"status": "compile_fail", "error": str(e)[:500]})
            return
        ttfm = pc() - t0
        r1, p1 = _rss(), _maxrss()
        conn.send({"status": "compiled", "ttfm_us": ttfm * 1e6, "rss": r1 - r0, "peak": p1 - p0})
        # teacher-force the instance
        steps, status, k = [], "ok", 0
        for k, t in enumerate(ids):
            if not m.allows(t):
                status = _refused(m)
                break
            s = pc()
            ok = m.advance(t)
            m.mask()
            steps.append(pc() - s)
            if not ok:
                status = _refused(m)
                break
        else:
            k = len(ids)
            if full and not m.eos_allowed():
                status = "no_eos"
            if not full:
                status = "prefix ok"
        r2 = _rss()
        res = {"status": "forced", "force": status, "k": k, "n": len(ids),
               "step_mean_us": (sum(steps) / len(steps) * 1e6) if steps else math.nan,
               "step_max_us": max(steps, default=0) * 1e6, "rss_after_force": r2 - r0}
        conn.send(res)
        if engine_name.startswith("dotjson"):
            import tracemalloc

            del compiled, m
            gc.collect()
            tracemalloc.start()
            c2 = engine.compile(schema)
            m2 = c2.matcher()
            m2.first_mask()
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            conn.send({"status": "traced", "tracemalloc_peak": peak})
        conn.send({"status": "done"})
    except BaseException as e:  # noqa: BLE001
        try:
            conn.send({"status": "error", "error": f"{type(e).__name__}: {e} "
                       f"{traceback.format_exc()[-1500:]}"})
        except Exception:  # noqa: BLE001
            pass


def run_case(engine, tokenizer, schema, instance, budget, max_tokens, verbose, start_s=600):
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_case, args=(child, engine, tokenizer, schema, instance, max_tokens,
                                        verbose), daemon=True)
    p.start()
    child.close()
    res = {"status": "timeout", "phase": "start"}
    deadline = time.monotonic() + start_s
    while True:
        left = deadline - time.monotonic()
        try:
            msg = parent.recv() if left > 0 and parent.poll(left) else None
        except (EOFError, OSError):
            msg = {"status": "crash", "error": f"exit code {p.exitcode}"}
        if msg is None:
            if res["status"] == "compiled" and "force" not in res:
                res["force"] = "timeout"
            break
        st = msg["status"]
        if st == "ready":
            res.pop("phase")
            deadline = time.monotonic() + budget
            continue
        if st == "done":
            break
        if st in ("compiled", "forced", "traced"):
            msg = {k: v for k, v in msg.items() if k != "status"}
            res.update(msg)
            res["status"] = "compiled"
            continue
        res.update(msg)
        if st in ("compile_fail", "error", "crash"):
            break
    p.kill()  # our own child, by its handle
    p.join(10)
    return res


def fmt_mb(x):
    if x is None:
        return "-"
    if abs(x) < 2**20:
        return f"{x / 2**10:.0f} KB"
    return f"{x / 2**20:.1f} MB"


def fmt_us(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f} s"
    if x >= 1e3:
        return f"{x / 1e3:.1f} ms"
    return f"{x:.0f} µs"


def cell(r, what):
    st = r.get("status")
    if st != "compiled":
        return {"timeout": f"timeout ({r.get('phase', 'compile')})"}.get(st, st or "-")
    if what == "ttfm":
        return f"{fmt_us(r['ttfm_us'])}, ΔRSS {fmt_mb(r['rss'])}"
    if what == "force":
        f = r.get("force", "-")
        if f in ("ok", "prefix ok"):
            return f"{f} {r['k']} tok, {fmt_us(r['step_mean_us'])}/tok, ΔRSS {fmt_mb(r['rss_after_force'])}"
        if f == "timeout":
            return "timeout (forcing)"
        return f"{f[:60]} at {r.get('k', '?')}/{r.get('n', '?')}"
    return "-"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default=",".join(peers.ENGINES),
                    help=f"comma-separated, from {peers.ENGINES + peers.EXTRA_ENGINES}")
    ap.add_argument("--cases", default="",
                    help="comma-separated substrings picking cases (default: all)")
    ap.add_argument("--time-budget", type=float, default=30.0,
                    help="seconds per (case, engine) once its worker is ready: compile, forcing "
                         "and the traced second compile (default 30)")
    ap.add_argument("--max-tokens", type=int, default=20000,
                    help="teacher-force at most this many tokens of each instance")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--json", default=None)
    ap.add_argument("--verbose", action="store_true", help="keep the engines' own stderr")
    args = ap.parse_args(argv)
    peers.set_single_thread_env()
    engines = [e for e in args.engines.split(",") if e]
    pick = [c for c in args.cases.split(",") if c]
    cases = [c for c in CASES if not pick or any(p in c[0] for p in pick)]
    results = {}
    for name, schema, inst in cases:
        for e in engines:
            t = time.perf_counter()
            r = run_case(e, args.tokenizer, schema, inst, args.time_budget, args.max_tokens,
                         args.verbose)
            results[(name, e)] = r
            print(f"{name:26s} {e:14s} {cell(r, 'ttfm'):40s} {cell(r, 'force')}"
                  f"  [{time.perf_counter() - t:.0f} s]", file=sys.stderr)
            if r.get("error"):
                print(f"    {r['error'][:400]}", file=sys.stderr)

    w = 44
    lines = ["Time to first mask (compile + start mask) and resident-memory growth:", "",
             f"| {'case':26s} | " + " | ".join(f"{e:{w}s}" for e in engines) + " |",
             "|" + "-" * 28 + "|" + "|".join("-" * (w + 2) for _ in engines) + "|"]
    for name, _, _ in cases:
        lines.append(f"| {name:26s} | " + " | ".join(f"{cell(results[(name, e)], 'ttfm'):{w}s}"
                                                   for e in engines) + " |")
    lines += ["", "A valid instance teacher-forced to EOS (tokens, mean time per token, RSS growth "
              "since before the compile):", "",
              f"| {'case':26s} | " + " | ".join(f"{e:{w}s}" for e in engines) + " |",
              "|" + "-" * 28 + "|" + "|".join("-" * (w + 2) for _ in engines) + "|"]
    for name, _, _ in cases:
        lines.append(f"| {name:26s} | " + " | ".join(f"{cell(results[(name, e)], 'force'):{w}s}"
                                                   for e in engines) + " |")
    traced = [(name, e, results[(name, e)].get("tracemalloc_peak")) for name, _, _ in cases
              for e in engines if results[(name, e)].get("tracemalloc_peak") is not None]
    if traced:
        lines += ["", "dotjson, tracemalloc peak of a second compile (Python + NumPy heap):"]
        lines += [f"  {name:26s} {e:14s} {fmt_mb(p)}" for name, e, p in traced]
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"args": vars(args), "results": [dict(case=n, engine=e, **r)
                                             for (n, e), r in results.items()]}, indent=1),
            encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
