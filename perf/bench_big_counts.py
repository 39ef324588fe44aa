"""Issue 34: per-token teacher-forcing time of ``{"type": "string", "maxLength": n}`` for a bound
no document reaches (2**31 - 1, 2**63 - 1: lane counts) against the unbounded string.

One process, the cases interleaved round by round (a fresh ``Index`` each round for the first
pass, then a second pass over its states), minimum over the rounds: on a shared, loaded machine
separate processes (``bench_scaling.py --only string``) swing by 2x from run to run. Target:
both ratios <= 1.2x. Llama 3 vocabulary, a 100,000-character string (12,502 tokens).

Usage::

    python perf/bench_big_counts.py [--rounds 5] [--chars 100000]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_scaling as B  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--chars", type=int, default=100_000)
    args = ap.parse_args(argv)
    Guide, Index, vocab, tok = B._setup()
    B._warm_up(Guide, Index, vocab, tok)
    ids = B._ids(tok, '"' + "a" * args.chars + '"')
    bounds = [None, 2**31 - 1, 2**63 - 1]
    first = {b: [] for b in bounds}
    later = {b: [] for b in bounds}
    for _ in range(args.rounds):
        for b in bounds:
            gc.collect()
            ix = Index({"type": "string"} if b is None else {"type": "string", "maxLength": b}, vocab)
            first[b].append(B._force(Guide, ix, vocab, ids) / len(ids) * 1e6)
            later[b].append(B._force(Guide, ix, vocab, ids) / len(ids) * 1e6)
    print(f"{len(ids)} tokens, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print("| schema | 1st pass us/token (min) | ratio | median | later pass us/token (min) | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for b in bounds:
        name = "unbounded" if b is None else f"maxLength {b:,}"
        print(f"| {name} | {min(first[b]):.1f} | {min(first[b]) / min(first[None]):.2f}x | "
              f"{statistics.median(first[b]):.1f} | {min(later[b]):.1f} | {min(later[b]) / min(later[None]):.2f}x |")


if __name__ == "__main__":
    main()
