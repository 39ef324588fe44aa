"""Cost against schema size: time to first mask and mask time as a bound or a size grows.

Four families, each swept over sizes (the schema generators are ``bench_compile.py``'s):

* ``properties``: an object with N optional properties (strings and integers), instance: every
  tenth property;
* ``maxLength``: a string with ``maxLength`` N, instance: min(N, 200) characters of text;
* ``minItems``: an array of integers with ``minItems`` N, instance: N integers;
* ``depth``: a recursive tree schema (``$ref``), instance: a tree nested N deep (the schema is the
  same for every N; what grows is the depth the cursor is forced through).

For every (family, size, engine), in the engine's worker process (one thread, a time limit):
TTFM (compile + cursor + start mask), then the instance teacher-forced token by token (mean and
max of ``advance + mask``). An engine that builds its automaton lazily (dotjson, llguidance)
keeps TTFM flat as the bound grows; an eager one (outlines-core) pays for the bound up front.

Usage::

    python3 perf/size_sweep.py
    python3 perf/size_sweep.py --engines dotjson,llguidance --families maxLength,minItems
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import peers  # noqa: E402
import workers  # noqa: E402
from bench_compile import TREE, _props, _props_doc, _text, _tree  # noqa: E402
from engine_coverage import RESULTS, machine, setup_engine  # noqa: E402

#: family -> default sizes
SIZES = {"properties": (10, 100, 1000), "maxLength": (100, 10_000, 1_000_000),
         "minItems": (10, 100, 1000), "depth": (5, 20, 60)}


def case(family: str, n: int):
    """``(schema, instance)`` of ``family`` at size ``n``."""
    if family == "properties":
        return _props(n), _props_doc(n)
    if family == "maxLength":
        return {"type": "string", "maxLength": n}, _text(min(n, 200))
    if family == "minItems":
        return {"type": "array", "items": {"type": "integer"}, "minItems": n}, list(range(n))
    if family == "depth":
        return TREE, _tree(n)
    raise ValueError(f"Invalid family: expected one of {tuple(SIZES)}, got {family!r}")


def handle_case(state: dict, job: dict, report) -> dict:
    """Compile, first mask, then force the instance; times in seconds."""
    pc = time.perf_counter
    t0 = pc()
    try:
        compiled = state["engine"].compile(job["schema"])
        m = compiled.matcher()
        m.first_mask()
    except peers.CompileFailed as e:
        return {"status": "compile_fail", "error": str(e)[:300]}
    report(status="compiled", ttfm_s=pc() - t0)
    steps = []
    for tok in job["ids"]:
        if not m.allows(tok):
            return {"steps": len(steps), "mask_mean_s": sum(steps) / max(len(steps), 1),
                    "mask_max_s": max(steps, default=0.0), "forced": "reject"}
        t = pc()
        ok = m.advance(tok)
        m.mask()
        steps.append(pc() - t)
        if not ok:
            return {"steps": len(steps), "forced": "reject"}
    return {"steps": len(steps), "mask_mean_s": sum(steps) / max(len(steps), 1),
            "mask_max_s": max(steps, default=0.0),
            "forced": "ok" if m.eos_allowed() else "no_eos"}


def run(engines=peers.ENGINES, sizes=None, tokenizer: str = "llama3", time_limit: float = 30.0,
        mem_limit_gb: float = 8.0, log=print) -> dict:
    """Run the sweep; returns ``{"rows": [...], "infos", "settings", "machine"}``.

    Parameters
    ----------
    engines : sequence of str
    sizes : dict, optional
        family -> sizes; default :data:`SIZES`.
    tokenizer : str
        ``"llama3"``, ``"smollm2"``, ``"qwen"`` or a tokenizer directory (``peers.load_tokenizer``).
    time_limit, mem_limit_gb : float
        Per (case, engine) job, and per worker process.
    log : callable or None
    """
    log = log or (lambda *a, **k: None)
    sizes = dict(sizes or SIZES)
    tok = peers.load_tokenizer(tokenizer)
    engines = list(engines)
    pool = {e: workers.Worker(e, setup_engine, handle_case,
                              {"model": peers.tokenizer_dir(tokenizer), "load_model": False},
                              mem_limit_gb) for e in engines}
    rows, infos = [], {}
    t0 = time.perf_counter()
    try:
        infos.update(workers.start_pool(pool))
        for family, ns in sizes.items():
            for n in ns:
                schema, inst = case(family, n)
                ids = tok.encode(peers.compact(inst), add_special_tokens=False)
                for e in engines:
                    x = pool[e].run({"schema": schema, "ids": ids}, time_limit)
                    rows.append({"family": family, "size": n, "engine": e, "tokens": len(ids),
                                 **x})
                    log(f"{family} {n} {e}: {x.get('status')} ttfm "
                        f"{x.get('ttfm_s', float('nan')) * 1e3:.1f} ms, forced "
                        f"{x.get('forced')} [{time.perf_counter() - t0:.0f}s]")
    finally:
        for w in pool.values():
            w.stop()
    return {"kind": "size-sweep", "rows": rows, "infos": infos,
            "settings": {"engines": engines, "sizes": sizes, "tokenizer": tokenizer,
                         "time_limit_s": time_limit},
            "machine": machine(), "wall_s": time.perf_counter() - t0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engines", default=",".join(peers.ENGINES))
    ap.add_argument("--families", default=",".join(SIZES))
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--out", default=str(RESULTS / "size_sweep.json"))
    args = ap.parse_args(argv)
    fams = [f for f in args.families.split(",") if f]
    for f in fams:
        if f not in SIZES:
            ap.error(f"unknown family {f!r}: expected one of {tuple(SIZES)}")
    out = run(args.engines.split(","), {f: SIZES[f] for f in fams}, args.tokenizer,
              args.time_limit, log=lambda m: print(m, file=sys.stderr, flush=True))
    print("| family | size | " + " | ".join(out["settings"]["engines"]) + " |")
    print("|---|---:|" + "---:|" * len(out["settings"]["engines"]))
    for f, ns in out["settings"]["sizes"].items():
        for n in ns:
            cells = []
            for e in out["settings"]["engines"]:
                x = next(r for r in out["rows"] if (r["family"], r["size"], r["engine"]) == (f, n, e))
                cells.append(f"{x['ttfm_s'] * 1e3:.1f} ms" if "ttfm_s" in x else x["status"])
            print(f"| {f} | {n:,} | " + " | ".join(cells) + " |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
