"""Issue 14's depth and long-string cases on dotjson and llguidance, in the same run.

Each (engine, case) runs in its own subprocess with a wall-clock and an address-space limit,
through ``perf/peers.py`` (the same Llama 3 tokenizer object, each engine's own warm-up on a small
document of the same kind first). Per case: compile time, per-token time of teacher forcing the
document with a fresh compiled schema (advance + mask, what a first request pays; for dotjson the
first pass that builds states lazily), and the process's peak RSS growth over the case (RSS, since
llguidance's memory is not Python's).

Cases: recursive ``$ref`` array ``[[[...]]]`` and object ``{"a":{"a":...}}`` at depth 10 and
10,000; ``{"type": "string", "maxLength": 1000000}`` with a 1,000,000-character string.

Usage::

    python perf/bench_scaling_peers.py [--engines dotjson-guide,llguidance] [--time-limit 300]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _doc(kind: str, n: int):
    if kind == "array":
        return {"$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}, \
            "[" * n + "]" * n
    if kind == "object":
        return {"type": "object", "properties": {"a": {"$ref": "#"}}}, '{"a":' * (n - 1) + "{}" + "}" * (n - 1)
    return {"type": "string", "maxLength": n}, '"' + "a" * n + '"'


def _why(m) -> str:
    err = m.error() or "refused"
    return next((ln.strip() for ln in err.splitlines() if "error" in ln.lower()), err.splitlines()[0])[:120]


def _force(compiled, ids, eos_check=True) -> float:
    t0 = time.perf_counter()
    m = compiled.matcher()
    m.first_mask()
    for i, t in enumerate(ids):
        if not m.allows(t):
            raise AssertionError(f"token {i} of {len(ids)} refused: {_why(m)}")
        if not m.advance(t):
            raise AssertionError(f"token {i} of {len(ids)} not consumed: {_why(m)}")
        m.mask()
    if eos_check and not m.eos_allowed():
        raise AssertionError("EOS refused at the end of a valid document")
    return time.perf_counter() - t0


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _child(engine_name: str, kind: str, n: int) -> None:
    sys.path.insert(0, HERE)
    sys.path.insert(0, ROOT)
    import peers

    peers.set_single_thread_env()
    tok = peers.load_tokenizer("llama3")
    engine = peers.make_engine(engine_name, tok)
    small_schema, small_doc = _doc(kind, 10 if kind != "string" else 100)
    _force(engine.compile(small_schema), tok.encode(small_doc, add_special_tokens=False))
    schema, doc = _doc(kind, n)
    ids = tok.encode(doc, add_special_tokens=False)
    rss0 = _rss()
    t0 = time.perf_counter()
    compiled = engine.compile(schema)
    compile_s = time.perf_counter() - t0
    secs = _force(compiled, ids)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print("RESULT " + json.dumps({"tokens": len(ids), "compile_s": compile_s, "us": secs / len(ids) * 1e6,
                                  "rss_growth_mb": max(0, peak - rss0) / 2**20}), flush=True)


def _run(engine: str, kind: str, n: int, tl: float, mem_mb: int) -> dict:
    def limit():
        b = mem_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (b, b))

    cmd = [sys.executable, os.path.abspath(__file__), "--child", engine, kind, str(n)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=tl, preexec_fn=limit, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": f"over budget (> {tl:.0f} s)"}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return {"status": "ok", **json.loads(line[7:])}
    err = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
    return {"status": f"failed: {err[:160]}"}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default="dotjson-guide,llguidance")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--mem-limit-mb", type=int, default=8192)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return
    engines = args.engines.split(",")
    cases = [("array", 10), ("array", 10_000), ("object", 10), ("object", 10_000), ("string", 1_000_000)]
    print(f"# bench_scaling_peers {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; Llama 3 vocabulary\n")
    print("| case | " + " | ".join(f"{e} us/token | {e} RSS growth MB" for e in engines) + " |")
    print("|---|" + "---:|" * (2 * len(engines)))
    for kind, n in cases:
        cells = []
        for e in engines:
            r = _run(e, kind, n, args.time_limit, args.mem_limit_mb)
            if r["status"] != "ok":
                cells += [r["status"], ""]
            else:
                cells += [f"{r['us']:.0f}", f"{r['rss_growth_mb']:.0f}"]
        label = f"{kind} depth {n:,}" if kind != "string" else f"maxLength {n:,} ({n:,} chars)"
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
