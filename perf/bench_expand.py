"""Per-state cost of expanding the automaton: the Numba kernels against the Python reference.

For a sample of MaskBench development schemas (``../shared/data/maskbench``, the same stratified
sample as ``bench_maskbench.py``), each schema's automaton is built fresh and expanded breadth
first from the start state, whole rows at a time, up to ``--states`` states:

* **native**: :class:`dotjson.automaton.Automaton`; each BFS frontier is expanded in one kernel
  call (``fill_rows``), so the figure is the kernels' own cost;
* **reference**: ``tests/naive_automaton.py``, the pure-Python engine the kernels replaced
  (dotjson before issue 9), ``fill_row`` per state.

Rule bodies are compiled before the clock starts (both engines compile them lazily otherwise),
and the clock is the thread's CPU time (``time.thread_time``), so the figure is the expansion
alone, and other jobs on a loaded machine do not inflate it. Printed per engine: states
expanded, total CPU seconds, and µs per *new state* (every new state costs one row: its
derivative classes, their successor terms, the emptiness checks); then the ratio. Both engines
run in this process, one schema after the other, on the same states (the same terms: the two
stores intern identical term counts).

Run ``python3 perf/bench_expand.py --help``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench_maskbench import CATEGORIES, DATA, load_sample  # noqa: E402


def _bfs_native(Automaton, g, cap):
    a = Automaton(g)
    a.compile_rules(known_only=True)  # rule bodies first: the expansion alone is timed
    t = time.thread_time()
    frontier, done = [a.start], 0
    while frontier and a.n_states < cap:
        before = a.n_states
        a.fill_rows(frontier)
        done += len(frontier)
        frontier = list(range(before, min(a.n_states, cap)))
    return time.thread_time() - t, a.n_states, done


def _bfs_reference(Automaton, g, cap):
    a = Automaton(g)
    i = 0
    while i < len(a._names):  # rules get ids as bodies compile (lazy rules): all of them
        a._body(i)
        i += 1
    t = time.thread_time()
    frontier, done = [a.start], 0
    while frontier and a.n_states < cap:
        before = a.n_states
        for s in frontier:
            a.fill_row(s)
        done += len(frontier)
        frontier = list(range(before, min(a.n_states, cap)))
    return time.thread_time() - t, a.n_states, done


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=3, help="schemas per MaskBench category")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--states", type=int, default=2000, help="expand at most this many states")
    ap.add_argument("--data", default=str(DATA))
    args = ap.parse_args(argv)

    from dotjson.automaton import Automaton
    from dotjson.errors import DotjsonError
    from dotjson.jsonschema import schema_to_grammar
    from naive_automaton import Automaton as Reference

    sample = load_sample(CATEGORIES, args.limit, args.seed, data=args.data)
    # warm-up: the kernels' on-disk cache
    warm = schema_to_grammar({"type": "object", "properties": {"a": {"type": "string"}}})
    _bfs_native(Automaton, warm, 50)
    tot = {"native": [0.0, 0, 0], "reference": [0.0, 0, 0]}
    n = 0
    for item in sample:
        schema = item["schema"]
        try:
            g = schema_to_grammar(schema)
        except DotjsonError:
            continue
        try:
            tn, sn, _ = _bfs_native(Automaton, g, args.states)
            tr, sr, _ = _bfs_reference(Reference, g, args.states)
        except (DotjsonError, RecursionError):
            continue
        n += 1
        for k, (dt, s) in (("native", (tn, sn)), ("reference", (tr, sr))):
            tot[k][0] += dt
            tot[k][1] += s
    print(f"{n} schemas, up to {args.states} states each (breadth first, whole rows)")
    print(f"{'engine':<10} {'states':>8} {'seconds':>9} {'µs/state':>9}")
    for k, (dt, s, _) in tot.items():
        print(f"{k:<10} {s:>8} {dt:>9.3f} {dt / max(s, 1) * 1e6:>9.2f}")
    rn = tot["native"][0] / max(tot["native"][1], 1)
    rr = tot["reference"][0] / max(tot["reference"][1], 1)
    print(f"native / reference per state: {rn / rr:.3f}  ({rr / rn:.1f}x faster)")


if __name__ == "__main__":
    main()
