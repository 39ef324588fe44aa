"""Scaling benchmark for issue 14: costs that should not grow with width, depth, length or size.

Every case runs in its own subprocess with a wall-clock limit and an address-space limit
(``resource.setrlimit(RLIMIT_AS)``), so a blow-up is reported as "over budget" instead of killing
the run. Only the public API is used: ``Vocabulary.from_pretrained`` on the Llama 3 tokenizer of
``dotjson.tools.testing.llama3_tokenizer_dir()``, ``Index`` and ``Guide``.

Measurements (and the ratio issue 14 names):

* ``width``: per-token time of teacher forcing a valid document through a ``Guide`` at 10, 1,000
  and 10,000 declared properties (the document holds 10 of them, spread over the declaration
  order, so every width forces about the same tokens); ratio to the 10-property case (target <= 2x);
  then the same with ``property_order="any"`` and the members out of schema order.
* ``depth``: the same at nesting depth 10, 1,000 and 10,000 of a recursive ``$ref`` array
  (``[[[...]]]``) and object (``{"a":{"a":...}}``); ratio to depth 10 (target <= 2x).
* ``string``: peak memory (tracemalloc peak and RSS growth) of ``{"type": "string", "maxLength":
  1000000}`` accepting a 1,000,000-character string (target < 50 MB), of ``maxLength:
  2147483647`` (issue 34: per-token time within 1.2x of the unbounded string's) and of the
  unbounded string.
* ``enum``: compile time (``Index``) and time to first mask of a 500 / 5,000 / 50,000-value enum.
* ``defs``: a ~4 MB schema with thousands of ``$defs`` of which one is used: compile time, time to
  first mask, peak memory.

The first pass is also shown without the pauses of CPython's cyclic collector (timed through
``gc.callbacks``): a full collection walks every object of the process (~60 ms with a
tokenizer loaded) and lands wherever the allocation counts say, in one case and not the next.

Per-token time is measured twice on the same index: the first pass builds the automaton's states
lazily (what a first request pays), the second pass, with a new ``Guide``, reuses them. Before
every timed case one warm-up document goes through another index (JIT loading, caches), and so
does the smallest document of the same kind (width 10, depth 10): otherwise the first size's
first pass is mostly one-time loading (30 ms per token at depth 10) and every ratio looks small.

Usage::

    python perf/bench_scaling.py                 # full setting (tens of minutes on 2 busy cores)
    python perf/bench_scaling.py --quick         # smaller widths/depths/lengths
    python perf/bench_scaling.py --only width,depth --time-limit 300 --mem-limit-mb 6000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# ------------------------------------------------------------------------------------------
# child side: one case, one process
# ------------------------------------------------------------------------------------------


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _setup():
    sys.path.insert(0, ROOT)
    from tokenizers import Tokenizer

    from dotjson import Guide, Index, Vocabulary
    from dotjson.tools.testing import llama3_tokenizer_dir

    d = llama3_tokenizer_dir()
    vocab = Vocabulary.from_pretrained(str(d))
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    return Guide, Index, vocab, tok


def _ids(tok, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False).ids


def _force(Guide, index, vocab, ids) -> float:
    """Teacher-force ``ids`` then check EOS; return seconds. Raises if a token is refused."""
    t0 = time.perf_counter()
    g = Guide(index, 1)
    ts = g.get_start_tokensets()
    for t in ids:
        if not ts.contains(t)[0]:
            raise AssertionError(f"token {t} refused")
        ts = g.get_next_tokensets([t])
    if not ts.contains(vocab.eos_token_ids[0])[0]:
        raise AssertionError("EOS refused at the end of a valid document")
    return time.perf_counter() - t0


def _warm_up(Guide, Index, vocab, tok) -> None:
    from dotjson import warmup

    warmup()  # every kernel loaded (store growth included), as a server does at start-up
    schema = {"type": "object", "properties": {"w": {"type": "array", "items": {"type": "string"}}}}
    _force(Guide, Index(schema, vocab), vocab, _ids(tok, '{"w":["warm","up"]}'))


def _width_case(n: int, any_order: bool = False):
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}}
    keys = sorted({round(k * (n - 1) / 9) for k in range(10)})
    if any_order:
        keys = keys[::2] + keys[1::2]  # not the schema's order
    doc = "{" + ",".join(f'"p{i}":{i}' for i in keys) + "}"
    return schema, doc


def _depth_case(kind: str, n: int):
    if kind == "array":
        schema = {"$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}
        doc = "[" * n + "]" * n
    else:
        schema = {"type": "object", "properties": {"a": {"$ref": "#"}}}
        doc = '{"a":' * (n - 1) + "{}" + "}" * (n - 1)
    return schema, doc


def _per_token(kind: str, n: int) -> dict:
    Guide, Index, vocab, tok = _setup()
    _warm_up(Guide, Index, vocab, tok)
    # the smallest case's own document through another index: the kernels and rules this kind
    # of document reaches are loaded and compiled once here, not charged to the first size
    opts = {"property_order": "any"} if kind == "width-any" else {}
    small = _width_case(10, kind == "width-any") if kind.startswith("width") else _depth_case(kind, 10)
    _force(Guide, Index(small[0], vocab, **opts), vocab, _ids(tok, small[1]))
    schema, doc = _width_case(n, kind == "width-any") if kind.startswith("width") else _depth_case(kind, n)
    ids = _ids(tok, doc)
    t0 = time.perf_counter()
    index = Index(schema, vocab, **({"property_order": "any"} if kind == "width-any" else {}))
    compile_s = time.perf_counter() - t0
    gc_s = [0.0]

    def on_gc(phase, info, t=[0.0]):
        if phase == "start":
            t[0] = time.perf_counter()
        else:
            gc_s[0] += time.perf_counter() - t[0]

    gc.callbacks.append(on_gc)  # this process only: the collector's pauses, timed apart
    first = _force(Guide, index, vocab, ids)
    first_gc = gc_s[0]
    second = _force(Guide, index, vocab, ids)
    gc.callbacks.remove(on_gc)
    return {"tokens": len(ids), "compile_s": compile_s, "first_us": first / len(ids) * 1e6,
            "first_nogc_us": (first - first_gc) / len(ids) * 1e6,
            "second_us": second / len(ids) * 1e6, "peak_rss_mb": _peak_rss_bytes() / 2**20}


def _string_mem(max_length: int | None, n: int) -> dict:
    import tracemalloc

    Guide, Index, vocab, tok = _setup()
    _warm_up(Guide, Index, vocab, tok)
    schema = {"type": "string"} if max_length is None else {"type": "string", "maxLength": max_length}
    ids = _ids(tok, '"' + "a" * n + '"')  # tokenized before measuring
    rss0 = _rss_bytes()
    peak0 = _peak_rss_bytes()
    tracemalloc.start()
    t0 = time.perf_counter()
    error = None
    try:
        # the schema's own language (bounds="schema"): the library's default generation bounds
        # stop a string without maxLength at 128 characters, by design
        index = Index(schema, vocab, bounds="schema")
        secs = _force(Guide, index, vocab, ids)
    except Exception as e:  # a budget error is a result here: report the memory spent to reach it
        error, secs = f"{type(e).__name__}: {e}", None
    total = time.perf_counter() - t0
    _, tm_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    peak1 = _peak_rss_bytes()
    # later passes (states built; a new Guide each), best of 3: less noise than the first pass
    later = min(_force(Guide, index, vocab, ids) for _ in range(3)) if error is None else None
    return {"error": error, "tokens": len(ids), "seconds": total, "force_s": secs, "later_s": later,
            "tracemalloc_mb": tm_peak / 2**20,
            # RSS growth: the process's peak RSS minus its RSS before the index was built (if
            # the earlier peak was higher, e.g. from tokenizing, this is a lower bound).
            "rss_delta_mb": (max(peak1, peak0) - rss0) / 2**20, "rss_peak_grew": peak1 > peak0}


def _compile_case(schema, vocab, Guide, Index) -> dict:
    import tracemalloc

    rss0 = _rss_bytes()
    tracemalloc.start()
    t0 = time.perf_counter()
    index = Index(schema, vocab)
    t1 = time.perf_counter()
    Guide(index, 1).get_start_tokensets()
    t2 = time.perf_counter()
    _, tm_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"compile_s": t1 - t0, "first_mask_s": t2 - t0, "tracemalloc_mb": tm_peak / 2**20,
            "rss_delta_mb": (_peak_rss_bytes() - rss0) / 2**20}


def _enum_case(n: int) -> dict:
    Guide, Index, vocab, tok = _setup()
    _warm_up(Guide, Index, vocab, tok)
    return _compile_case({"enum": [f"value-{i}" for i in range(n)]}, vocab, Guide, Index)


def _defs_schema(target_bytes: int) -> dict:
    def one(i: int) -> dict:
        return {
            "type": "object",
            "description": f"definition {i}: " + "lorem ipsum dolor sit amet " * 8,
            "properties": {
                f"field_{i}_{j}": {"type": ["string", "integer", "null"][j % 3], "maxLength": 40}
                if j % 3 == 0 else {"type": ["string", "integer", "null"][j % 3]}
                for j in range(12)
            } | {"next": {"$ref": f"#/$defs/d{i + 1}"}},
            "required": [f"field_{i}_0"],
        }

    size = len(json.dumps(one(0)))
    count = max(2, target_bytes // size)
    defs = {f"d{i}": one(i) for i in range(count)}
    defs[f"d{count}"] = {"type": "string"}
    defs["used"] = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                    "required": ["id"]}
    return {"$defs": defs, "$ref": "#/$defs/used"}


def _defs_case(target_bytes: int) -> dict:
    Guide, Index, vocab, tok = _setup()
    _warm_up(Guide, Index, vocab, tok)
    schema = _defs_schema(target_bytes)
    text = json.dumps(schema)
    out = _compile_case(text, vocab, Guide, Index)
    out.update(schema_mb=len(text) / 2**20, defs=len(schema["$defs"]))
    return out


def _child(case: str, arg: str) -> None:
    if case in ("width", "width-any", "array", "object"):
        out = _per_token(case, int(arg))
    elif case == "string":
        bound, n = arg.split(":")
        out = _string_mem(None if bound == "none" else int(bound), int(n))
    elif case == "enum":
        out = _enum_case(int(arg))
    elif case == "defs":
        out = _defs_case(int(arg))
    else:
        raise SystemExit(f"unknown case {case!r}")
    print("RESULT " + json.dumps(out), flush=True)


# ------------------------------------------------------------------------------------------
# parent side: one subprocess per case, with limits
# ------------------------------------------------------------------------------------------


def _run(case: str, arg, time_limit: float, mem_mb: int) -> dict:
    def limit():
        b = mem_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (b, b))

    cmd = [sys.executable, os.path.abspath(__file__), "--child", case, str(arg)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=time_limit, preexec_fn=limit,
                           cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": f"over budget (> {time_limit:.0f} s)"}
    wall = time.perf_counter() - t0
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return {"status": "ok", "wall_s": wall, **json.loads(line[7:])}
    err = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
    if "MemoryError" in p.stderr or p.returncode in (-9, 137):
        return {"status": f"over budget (> {mem_mb} MB address space): {err[:100]}"}
    return {"status": f"failed: {err[:160]}"}


def _fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _table(title: str, head: list[str], rows: list[list[str]]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---:" if i else "---" for i in range(len(head))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller widths, depths, lengths and sizes")
    ap.add_argument("--only", default="width,depth,string,enum,defs",
                    help="comma-separated subset of width,depth,string,enum,defs")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per case (default 120)")
    ap.add_argument("--mem-limit-mb", type=int, default=4096,
                    help="address-space limit per case in MB (default 4096)")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "ARG"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(*args.child)
        return

    import numba
    import numpy

    sys.path.insert(0, ROOT)
    import dotjson

    only = set(args.only.split(","))
    q = args.quick
    widths = [10, 100, 1000] if q else [10, 1000, 10_000]
    depths = [10, 100, 1000] if q else [10, 1000, 10_000]
    length = 100_000 if q else 1_000_000
    enums = [50, 500, 5000] if q else [500, 5000, 50_000]
    defs_bytes = 400_000 if q else 4_000_000
    tl, mem = args.time_limit, args.mem_limit_mb

    print(f"# bench_scaling {'--quick ' if q else ''}{datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}")
    print(f"dotjson {dotjson.__version__}, numba {numba.__version__}, numpy {numpy.__version__}, "
          f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"limits {tl:.0f} s and {mem} MB per case; Llama 3 vocabulary (128,256 ids)")

    def per_token_table(title, kind, sizes, label):
        res = [(n, _run(kind, n, tl, mem)) for n in sizes]
        base = res[0][1].get("second_us") if res[0][1]["status"] == "ok" else None
        base1 = res[0][1].get("first_us") if res[0][1]["status"] == "ok" else None
        base0 = res[0][1].get("first_nogc_us") if res[0][1]["status"] == "ok" else None
        rows = []
        for n, r in res:
            if r["status"] != "ok":
                rows.append([f"{n:,}", r["status"], "", "", "", "", "", "", "", ""])
                continue
            rows.append([f"{n:,}", str(r["tokens"]), f"{r['compile_s']:.2f}", f"{r['first_us']:.0f}",
                         _fmt(base1 and r["first_us"] / base1, ".2f") + "x",
                         f"{r['first_nogc_us']:.0f}", _fmt(base0 and r["first_nogc_us"] / base0, ".2f") + "x",
                         f"{r['second_us']:.0f}", _fmt(base and r["second_us"] / base, ".2f") + "x",
                         f"{r['peak_rss_mb']:.0f}"])
        _table(title, [label, "tokens", "compile s", "1st pass us/token", "ratio",
                       "1st pass w/o GC pauses", "ratio", "2nd pass us/token",
                       "ratio (target <= 2x)", "peak RSS MB"], rows)

    if "width" in only:
        per_token_table("Per-token time vs. declared properties (document: 10 of them)", "width",
                        widths, "properties")
        per_token_table('The same with property_order="any" (the 10 members out of schema order)', "width-any",
                        widths, "properties")
    if "depth" in only:
        per_token_table("Per-token time vs. nesting depth: recursive $ref array `[[[...]]]`", "array",
                        depths, "depth")
        per_token_table('Per-token time vs. nesting depth: recursive $ref object `{"a":{"a":...}}`',
                        "object", depths, "depth")
    if "string" in only:
        rows = []
        # issue 34: a bound no document reaches (Integer.MAX_VALUE, a lane count) costs what an
        # unbounded string costs per token (target <= 1.2x)
        res = [(bound, _run("string", f"{bound if bound else 'none'}:{length}", tl, mem))
               for bound in (length, 2**31 - 1, None)]
        free = res[-1][1]
        ok = free["status"] == "ok" and free.get("force_s")
        base = free["force_s"] / free["tokens"] if ok else None
        base2 = free["later_s"] / free["tokens"] if ok else None
        for bound, r in res:
            name = f"maxLength {bound:,}" if bound else "unbounded"
            if r["status"] != "ok":
                rows.append([name, r["status"], "", "", "", "", "", "", "", ""])
                continue
            if r["error"]:
                name += f" ({r['error'][:110]})"
            per = r["force_s"] / r["tokens"] if r.get("force_s") else None
            per2 = r["later_s"] / r["tokens"] if r.get("later_s") else None
            rows.append([name, f"{r['tokens']:,}", f"{r['seconds']:.1f}",
                         _fmt(per and per * 1e6, ".1f"), _fmt(per and base and per / base, ".2f") + "x",
                         _fmt(per2 and per2 * 1e6, ".1f"), _fmt(per2 and base2 and per2 / base2, ".2f") + "x",
                         f"{r['tracemalloc_mb']:.1f}",
                         f"{r['rss_delta_mb']:.1f}" + ("" if r["rss_peak_grew"] else " (lower bound)"),
                         "no (failed)" if r["error"] else
                         "yes" if bound and r["tracemalloc_mb"] < 50 and r["rss_delta_mb"] < 50 else
                         ("-" if not bound else "no")])
        _table(f"Peak memory and per-token time: accepting a {length:,}-character string (Index + "
               "teacher forcing)", ["schema", "tokens", "seconds", "1st pass us/token", "vs unbounded",
                                   "later passes us/token (best of 3)", "vs unbounded (<= 1.2x)",
                                   "tracemalloc peak MB", "RSS growth MB", "< 50 MB"], rows)
    if "enum" in only:
        rows = []
        base = None
        for n in enums:
            r = _run("enum", n, tl, mem)
            if r["status"] != "ok":
                rows.append([f"{n:,}", r["status"], "", "", "", ""])
                continue
            per = r["compile_s"] / n * 1e6
            base = base or per
            rows.append([f"{n:,}", f"{r['compile_s']:.2f}", f"{r['first_mask_s']:.2f}", f"{per:.0f}",
                         f"{per / base:.2f}x", f"{r['tracemalloc_mb']:.0f}"])
        _table("Compile time of an enum of n strings", ["values", "compile s", "to first mask s",
               "us per value", "per-value ratio (linear: ~1x)", "tracemalloc peak MB"], rows)
    if "defs" in only:
        r = _run("defs", defs_bytes, tl, mem)
        if r["status"] != "ok":
            rows = [[f"~{defs_bytes / 2**20:.1f}", "-", r["status"], "", "", "", ""]]
        else:
            rows = [[f"{r['schema_mb']:.1f}", f"{r['defs']:,}", f"{r['compile_s']:.2f}",
                     f"{r['first_mask_s']:.2f}", f"{r['tracemalloc_mb']:.0f}", f"{r['rss_delta_mb']:.0f}"]]
        _table("A large schema of which one `$defs` entry is used", ["schema MB", "$defs", "compile s",
               "to first mask s", "tracemalloc peak MB", "RSS growth MB"], rows)


if __name__ == "__main__":
    main()
