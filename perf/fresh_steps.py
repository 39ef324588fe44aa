"""Every fresh step of the cold pass, timed one by one, and two such runs compared step by step.

The cold pass of ``bench_maskbench.py`` in one process (every valid instance of the seeded
MaskBench sample teacher-forced through a fresh :class:`dotjson.Index`, the benchmark's own engine
and loop, Llama 3), repeated ``--rounds`` times on new indexes; each step keeps the least of its
rounds (thread CPU time), which takes most of a shared machine's noise out of an A/B of two trees.
``--out`` saves the steps (JSON: instance id -> one list of µs per instance); ``--compare A B``
prints the two runs' figures and the steps whose time moved most, with the text before them.

    python3 perf/fresh_steps.py --rounds 4 --out /tmp/new.json
    python3 perf/fresh_steps.py --tree ../other-checkout --rounds 4 --out /tmp/old.json
    python3 perf/fresh_steps.py --compare /tmp/old.json /tmp/new.json

``--tree`` runs another checkout's ``dotjson`` (and its ``perf/``), so that two trees are
measured alternately by the same command.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _figures(steps) -> str:
    times = sorted(t for runs in steps.values() for one in runs for t in one)
    n = len(times)
    if not n:
        return "no steps"
    return (f"{n} steps: mean {sum(times) / n:.1f} µs, p50 {times[n // 2]:.1f}, p90 {times[int(n * 0.9)]:.1f}, "
            f"p99 {times[int(n * 0.99)]:.1f}, max {times[-1]:.1f}")


def run(args) -> dict:
    tree = Path(args.tree).resolve() if args.tree else HERE.parent
    sys.path.insert(0, str(tree / "perf"))
    sys.path.insert(0, str(tree))
    import peers
    from bench_maskbench import DATA, WARMUP_DOC, WARMUP_SCHEMA, _force, valid_instances

    import dotjson

    if not Path(dotjson.__file__).resolve().is_relative_to(tree):
        raise SystemExit(f"dotjson imported from {dotjson.__file__}, not from {tree}")
    os.environ["BENCH_CPU_CLOCK"] = "1"  # (_force's clock: thread CPU time)
    tok = peers.load_tokenizer("llama3")
    eng = peers.make_engine("dotjson", tok)
    jobs = valid_instances(tok, args.limit, args.seed, data=args.data or DATA)
    _force(eng.compile(WARMUP_SCHEMA), tok.encode(peers.compact(WARMUP_DOC), add_special_tokens=False))
    gc.freeze()  # (as the benchmark's --gc-freeze: a server after its set-up)
    best: dict = {}
    for _ in range(args.rounds):
        compiled = []
        for rid, schema, ids in jobs:  # (compiled first: the steps alone are timed)
            try:
                compiled.append((rid, eng.compile(schema), ids))
            except peers.CompileFailed:
                continue
        got: dict = {}
        for rid, c, ids in compiled:
            got.setdefault(rid, []).append(_force(c, ids)[2])
        for rid, runs in got.items():
            old = best.get(rid)
            best[rid] = runs if old is None else [[min(a, b) for a, b in zip(x, y)] for x, y in zip(old, runs)]
    return best


def compare(a_path, b_path, top: int) -> None:
    a = json.loads(Path(a_path).read_text(encoding="utf-8"))
    b = json.loads(Path(b_path).read_text(encoding="utf-8"))
    print(f"A {a_path}: {_figures(a)}")
    print(f"B {b_path}: {_figures(b)}")
    moved = []
    for rid in a.keys() & b.keys():
        for k, (x, y) in enumerate(zip(a[rid], b[rid])):
            moved.extend((q - p, p, q, rid, k, s) for s, (p, q) in enumerate(zip(x, y)))
    moved.sort()
    print(f"B - A over {len(moved)} paired steps: {sum(m[0] for m in moved) / 1e3:+.1f} ms "
          f"(increases {sum(m[0] for m in moved if m[0] > 0) / 1e3:.1f}, "
          f"decreases {sum(m[0] for m in moved if m[0] < 0) / 1e3:.1f})")
    for title, rows in (("most increased", moved[::-1][:top]), ("most decreased", moved[:top])):
        print(title + " (µs; instance, its valid instance #, step):")
        for d, p, q, rid, k, s in rows:
            print(f"  {d:+8.1f}  {p:8.1f} -> {q:8.1f}  {rid} #{k} step {s}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=2, help="schemas per MaskBench category")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=None, help="MaskBench folder (default: the benchmark's)")
    ap.add_argument("--rounds", type=int, default=4, help="fresh indexes per instance (the least kept)")
    ap.add_argument("--tree", default=None, help="the checkout whose dotjson runs (default: this one)")
    ap.add_argument("--out", default=None, help="save the steps here (JSON)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two saved runs")
    ap.add_argument("--top", type=int, default=10, help="steps listed by --compare")
    args = ap.parse_args(argv)
    if args.compare:
        compare(*args.compare, args.top)
        return
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    t0 = time.monotonic()
    steps = run(args)
    print(f"{_figures(steps)} (the least of {args.rounds} rounds per step; {time.monotonic() - t0:.0f} s)")
    if args.out:
        Path(args.out).write_text(json.dumps(steps), encoding="utf-8")


if __name__ == "__main__":
    main()
