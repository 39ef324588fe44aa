"""JSON-Schema-Test-Suite compliance, dotjson beside its peers, per keyword file.

Every test group of the suite's draft2020-12 files (``tests/data/json-schema-test-suite``) is
compiled by each engine of ``perf/peers.py`` on the same tokenizer (SmolLM2's 49k vocabulary by
default), in its own worker process with a time and memory limit per group, and every test
instance (compact JSON) is teacher-forced token by token: the engine *accepts* it when every token
is allowed and EOS is allowed at the end. A case **passes** when the verdict matches the suite's
label, **fails** otherwise; all cases of a group the engine does not compile (refusal, timeout,
crash) are **unsupported**, except that a schema refused as accepting no JSON value at all
(dotjson says so) rejects every instance. The remote schemas of ``refRemote.json`` are not served: every engine
sees them unresolved.

This is the token-level counterpart of ``suite_report.py`` (which checks dotjson's grammar with
Lark's Earley parser, also on pretty-printed forms).

Usage::

    python3 perf/suite_compliance.py                      # every file, every engine
    python3 perf/suite_compliance.py --engines dotjson,llguidance minLength.json enum.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import peers  # noqa: E402
import workers  # noqa: E402
from engine_coverage import RESULTS, accepts, machine, setup_engine  # noqa: E402

DRAFT = ROOT / "tests" / "data" / "json-schema-test-suite" / "draft2020-12"
OUTCOMES = ("pass", "fail", "unsupported")


def suite_files(optional: bool = True) -> list[str]:
    """The draft2020-12 files (relative paths), ``optional/`` included unless told otherwise."""
    files = sorted(p.relative_to(DRAFT).as_posix() for p in DRAFT.rglob("*.json"))
    return [f for f in files if optional or not f.startswith("optional/")]


def tokenizer_dir() -> str:
    """SmolLM2's tokenizer (49,152 ids), built from the shipped GGUF by ``dotjson.tools.testing``."""
    from dotjson.tools.testing import smollm2_tokenizer_dir

    return str(smollm2_tokenizer_dir())


def handle_group(state: dict, job: dict, report) -> dict:
    """Compile one group's schema; the verdict (accepted or not) of each of its instances."""
    try:
        compiled = state["engine"].compile(job["schema"])
    except peers.CompileFailed as e:
        if "accepts no JSON value" in str(e):  # a refusal that rejects every instance
            return {"status": "compiled", "verdicts": [False] * len(job["instances"]),
                    "note": "empty language"}
        return {"status": "compile_fail", "error": str(e)[:300]}
    verdicts = []
    for ids in job["instances"]:
        ok, _err = accepts(compiled, ids)
        verdicts.append(ok)
        report(verdicts=verdicts)
    return {"status": "compiled", "verdicts": verdicts}


def run(files=None, engines=peers.ENGINES, tokenizer: str | None = None,
        time_limit: float = 20.0, mem_limit_gb: float = 8.0, log=print) -> dict:
    """Run the suite through every engine; returns the results dict ``--out`` writes.

    Parameters
    ----------
    files : list of str, optional
        Paths relative to the draft2020-12 folder; default :func:`suite_files`.
    engines : sequence of str
    tokenizer : str, optional
        A tokenizer directory; default :func:`tokenizer_dir`.
    time_limit : float
        Seconds per (group, engine): compile and every instance.
    mem_limit_gb : float
        Address-space limit of each engine's process.
    log : callable or None
    """
    log = log or (lambda *a, **k: None)
    files = list(files) if files else suite_files()
    tokenizer = tokenizer or tokenizer_dir()
    tok = peers.load_tokenizer(tokenizer)
    engines = list(engines)
    t0 = time.perf_counter()
    pool = {e: workers.Worker(e, setup_engine, handle_group,
                              {"model": tokenizer, "load_model": False}, mem_limit_gb)
            for e in engines}
    table = {}
    infos = {}
    try:
        infos.update(workers.start_pool(pool))
        for rel in files:
            counts = {e: dict.fromkeys(OUTCOMES, 0) for e in engines}
            misses = {e: [] for e in engines}
            for group in json.loads((DRAFT / rel).read_text(encoding="utf-8")):
                labels = [bool(t["valid"]) for t in group["tests"]]
                ids = [tok.encode(peers.compact(t["data"]), add_special_tokens=False)
                       for t in group["tests"]]
                for e in engines:
                    x = pool[e].run({"schema": group["schema"], "instances": ids}, time_limit)
                    v = x.get("verdicts") if x.get("status") == "compiled" else None
                    if v is None or len(v) != len(labels):
                        counts[e]["unsupported"] += len(labels)
                        misses[e].append(f"{group['description']}: {x.get('status')} "
                                         f"{(x.get('error') or '')[:120]}")
                        continue
                    for t, lab, ok in zip(group["tests"], labels, v):
                        counts[e]["pass" if ok == lab else "fail"] += 1
                        if ok != lab:
                            misses[e].append(f"{group['description']} / {t['description']}: "
                                             f"{'accepted' if ok else 'rejected'}")
            table[rel] = {"counts": counts, "misses": misses}
            log(f"{rel:40s} " + "  ".join(
                f"{e}={counts[e]['pass']}/{sum(counts[e].values())}" for e in engines)
                + f"  [{time.perf_counter() - t0:.0f}s]")
    finally:
        for w in pool.values():
            w.stop()
    total = {e: {o: sum(t["counts"][e][o] for t in table.values()) for o in OUTCOMES}
             for e in engines}
    return {"kind": "suite-compliance", "files": table, "total": total, "infos": infos,
            "settings": {"engines": engines, "tokenizer": "SmolLM2 (49,152 ids)"
                         if tokenizer == tokenizer_dir() else tokenizer,
                         "time_limit_s": time_limit, "mem_limit_gb": mem_limit_gb},
            "machine": machine(), "wall_s": time.perf_counter() - t0}


def render(out: dict) -> str:
    """A markdown table: passed cases per file and engine (of the file's cases), and the wrong
    verdicts (an instance accepted against its label, or rejected) where there are any."""
    engines = out["settings"]["engines"]
    lines = ["| file | cases | " + " | ".join(engines) + " |",
             "|---|---:|" + "---:|" * len(engines)]
    for rel, t in out["files"].items():
        n = sum(t["counts"][engines[0]].values())
        best = max(t["counts"][e]["pass"] for e in engines)
        cells = []
        for e in engines:
            p, f = t["counts"][e]["pass"], t["counts"][e]["fail"]
            cell = f"**{p}**" if p == best and len(engines) > 1 else str(p)
            cells.append(cell + (f" ({f} wrong)" if f else ""))
        lines.append(f"| {rel.removesuffix('.json')} | {n} | " + " | ".join(cells) + " |")
    n = sum(out["total"][engines[0]].values())
    lines.append(f"| **total** | {n} | " + " | ".join(
        f"{out['total'][e]['pass']} ({100 * out['total'][e]['pass'] / max(n, 1):.1f}%)"
        for e in engines) + " |")
    lines.append("")
    lines.append("Failed / unsupported cases: " + "; ".join(
        f"{e} {out['total'][e]['fail']} / {out['total'][e]['unsupported']}" for e in engines))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="files relative to draft2020-12 (default: all)")
    ap.add_argument("--engines", default=",".join(peers.ENGINES),
                    help=f"comma-separated, from {peers.ENGINES + peers.EXTRA_ENGINES}")
    ap.add_argument("--no-optional", action="store_true", help="skip optional/ (formats...)")
    ap.add_argument("--tokenizer", default=None,
                    help="a Hugging Face tokenizer directory (default: SmolLM2's)")
    ap.add_argument("--time-limit", type=float, default=20.0,
                    help="seconds per (group, engine) (default 20)")
    ap.add_argument("--mem-limit-gb", type=float, default=8.0)
    ap.add_argument("--out", default=str(RESULTS / "suite.json"),
                    help="JSON results (default perf/results/suite.json)")
    args = ap.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    for e in engines:
        if e not in peers.ENGINES + peers.EXTRA_ENGINES:
            ap.error(f"unknown engine {e!r}")
    files = args.files or suite_files(not args.no_optional)
    out = run(files, engines, args.tokenizer, args.time_limit, args.mem_limit_gb,
              log=lambda m: print(m, file=sys.stderr, flush=True))
    print(render(out))
    print(f"\nwall time {out['wall_s']:.0f} s; engines: " + "; ".join(
        f"{e} {i.get('version', '?')}" for e, i in out["infos"].items()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
