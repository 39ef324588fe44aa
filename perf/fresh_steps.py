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

``--slowest N`` lists the N slowest steps with the text before each and the token it took (what
kind of position the tail of the distribution is); ``--layers US`` runs one more round timing each
layer's own part of every step (the JSON Schema layer building a rule's IR, rule bodies compiled
into terms, key sets, store growth, the kernels; the rest is the masker and its glue), over every
step, over the steps whose least passed ``US`` µs and over those at or below the median.

``--spikes`` also says what else ran inside each step (a collection of Python's collector, a growth
of the automaton's store) and, for the steps past ``--spike-us`` in a single round but not in
their least over the rounds, which of the two they held: the benchmark's max is one mask of one
run, and this tells a slow walk from a mask hit by something else.

    python3 perf/fresh_steps.py --rounds 3 --spikes
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
    tracer = _Tracer() if args.spikes else None
    best: dict = {}
    for rnd in range(args.rounds):
        compiled = []
        for rid, schema, ids in jobs:  # (compiled first: the steps alone are timed)
            try:
                compiled.append((rid, eng.compile(schema), ids))
            except peers.CompileFailed:
                continue
        got: dict = {}
        for rid, c, ids in compiled:
            runs = got.setdefault(rid, [])
            if tracer is not None:
                tracer.key = (rid, len(runs), rnd)
            # (watch only with --spikes: a --tree checkout's _force may not take it)
            runs.append((_force(c, ids) if tracer is None else _force(c, ids, watch=tracer))[2])
        for rid, runs in got.items():
            old = best.get(rid)
            best[rid] = runs if old is None else [[min(a, b) for a, b in zip(x, y)] for x, y in zip(old, runs)]
    if tracer is not None:
        tracer.close()
        tracer.report(best, args.spike_us)
    if args.layers is not None:
        _layers(eng, jobs, best, args.layers, _force)
    if args.slowest:
        ids_of: dict = {}
        for rid, _, ids in jobs:
            ids_of.setdefault(rid, []).append(ids)  # (each valid instance's, in the runs' order)
        _slowest(best, ids_of, tok, args.slowest)
    return best


class _Layers:
    """Exclusive time (``perf_counter``) of each layer a fresh step passes through, per step
    (``bench_maskbench._force``'s ``watch``): wrappers around each layer's entry points, a stack
    taking a nested layer's time out of the one that called it, and the collector's runs out of
    the layer they landed in; the rest of a step is the masker and its glue. Each step is added
    to :attr:`every` and, by its least in the timed rounds ``best``, to :attr:`tail` (past
    ``tail_us``) or :attr:`low` (at or below the median): ``[steps, ns, ns by layer]``."""

    def __init__(self, best: dict, tail_us: float):
        import dotjson.automaton as A
        import dotjson.jsonschema.compiler as C
        from dotjson._kernels import entries, jit
        from dotjson.automaton import rules as R

        self.acc = dict.fromkeys(self.NAMES, 0)
        self._stack: list = []
        self._undo: list = []
        for owner, names, layer in ((C.Compiler, ("body",), 0), (R.Rules, ("compile_node", "written_term"), 1),
                                    (R.Rules, ("rule_id",), 2), (A.Automaton, ("_key_table", "_key_tail", "_keys_body"), 3),
                                    (A.Automaton, ("_grow",), 4), (jit.Unit, ("__call__",), 5)):
            for name in names:
                self._wrap(owner, name, layer)
        for name in dir(entries):  # (the kernels Python calls straight, without a Unit)
            if name.endswith("_packed") and callable(getattr(entries, name)):
                self._wrap(entries, name, 5)
        self.best, self.tail_us = best, tail_us
        least = sorted(t for runs in best.values() for one in runs for t in one)
        self.median = least[len(least) // 2] if least else 0.0
        self.every, self.tail, self.low = ([0, 0, [0] * len(self.NAMES)] for _ in range(3))
        self.key = None  # (instance id, its valid instance #) being forced
        self.t0 = 0
        self.snap = None
        self._gc_t = 0
        gc.callbacks.append(self._collected)

    def _collected(self, phase, info):
        # (a collection's time is the collector's, not the layer it landed in)
        if phase == "start":
            self._gc_t = time.perf_counter_ns()
            return
        dt = time.perf_counter_ns() - self._gc_t
        self.acc[self.NAMES[6]] += dt
        if self._stack:
            self._stack[-1] += dt

    NAMES = ("the JSON Schema layer: a rule's IR (Compiler.body)",
             "rule bodies: IR to terms (Rules.compile_node, written bodies)",
             "rule ids and their analyses (Rules.rule_id)",
             "key sets: tables, member tails, bodies",
             "store growth (Automaton._grow)",
             "kernels (every compiled unit Python calls)",
             "Python's collector (wherever a collection landed)")

    def _wrap(self, owner, name, layer):
        real = getattr(owner, name)
        stack, acc, key, clock = self._stack, self.acc, self.NAMES[layer], time.perf_counter_ns

        def timed(*a, **k):
            t = clock()
            stack.append(0)
            try:
                return real(*a, **k)
            finally:
                dt = clock() - t
                acc[key] += dt - stack.pop()
                if stack:
                    stack[-1] += dt

        setattr(owner, name, timed)
        self._undo.append((owner, name, real))

    def close(self):
        for owner, name, real in reversed(self._undo):
            setattr(owner, name, real)
        gc.callbacks.remove(self._collected)

    def before(self):
        self.snap = tuple(self.acc.values())  # (nothing kept per step: no work for the collector)
        self.t0 = time.perf_counter_ns()

    def after(self, step: int, us: float):
        total = time.perf_counter_ns() - self.t0
        rid, k = self.key
        least = self.best[rid][k][step]
        for g in (self.every, self.tail if least > self.tail_us else self.low if least <= self.median else None):
            if g is None:
                continue
            g[0] += 1
            g[1] += total
            for i, v in enumerate(self.acc.values()):
                g[2][i] += v - self.snap[i]


def _layers(eng, jobs, best: dict, tail_us: float, force) -> None:
    """One more round on new indexes, each layer's exclusive time in each step (:class:`_Layers`),
    over every step, over the steps whose least in the timed rounds passed ``tail_us`` and over
    those at or below the median (the common step)."""
    import peers

    compiled = []
    for rid, schema, ids in jobs:
        try:
            compiled.append((rid, eng.compile(schema), ids))
        except peers.CompileFailed:
            continue
    lay = _Layers(best, tail_us)
    try:
        seen: dict = {}
        for rid, c, ids in compiled:
            lay.key = (rid, seen.get(rid, 0))
            seen[rid] = lay.key[1] + 1
            force(c, ids, watch=lay)
    finally:
        lay.close()
    print("each layer's own time in a step (one more round, wrappers around the layers' entry points, "
          "their cost inside; µs a step and share):")
    for title, (n, total, parts) in (("every step", lay.every),
                                     (f"the steps past {tail_us:.0f} µs (their least)", lay.tail),
                                     (f"the steps at or below the median (their least ≤ {lay.median:.0f} µs)", lay.low)):
        if not n:
            print(f"  {title}: none")
            continue
        print(f"  {title}: {n} steps, {total / n / 1e3:.1f} µs each")
        for name, v in zip(_Layers.NAMES, parts):
            print(f"    {v / n / 1e3:8.1f}  {v / total:6.1%}  {name}")
        rest = total - sum(parts)
        print(f"    {rest / n / 1e3:8.1f}  {rest / total:6.1%}  the masker, its shortcuts and the glue (the rest)")


def _slowest(best: dict, ids_of: dict, tok, n: int) -> None:
    """The ``n`` slowest steps (the least of the rounds), each with the text before it and the
    token it took: what kind of position the tail of the distribution is (step 0 is the first
    mask; step ``i`` takes token ``i - 1`` and fills the next mask)."""
    rows = sorted(((t, rid, k, s) for rid, runs in best.items() for k, one in enumerate(runs)
                   for s, t in enumerate(one)), reverse=True)[:n]
    total = sum(t for runs in best.values() for one in runs for t in one)
    print(f"the {len(rows)} slowest steps ({sum(r[0] for r in rows) / total:.1%} of the steps' time; "
          "µs, instance #, step, the text before it + the token it took):")
    for t, rid, k, s in rows:
        ids = ids_of[rid][k]
        before = tok.decode(ids[: max(s - 1, 0)])[-36:] if s else ""
        took = tok.decode([ids[s - 1]]) if s else "(first mask)"
        print(f"  {t:8.0f}  {rid[:34]} #{k} step {s}: {before!r} + {took!r}")


class _Tracer:
    """What else ran inside each step :func:`bench_maskbench._force` times (its ``watch``): the
    collector's runs (by generation, with their time) and the store's growths
    (``Automaton._grow``, by kind, with their time), for the steps of instance :attr:`key`."""

    def __init__(self):
        import dotjson.automaton as A
        from dotjson.automaton import store

        self._auto_cls = A.Automaton
        self.grow_names = {v: k[len("NEED_GROW_"):].lower() for k, v in vars(store).items()
                           if k.startswith("NEED_GROW_")}
        self._grow0 = A.Automaton._grow
        self.gc_runs: list = []  # (generation, seconds)
        self.grows: list = []  # (status, seconds)
        self.events: dict = {}  # (rid, k, round, step) -> (µs, collections, growths)
        self.key = None  # (rid, k, round) of the instance being forced
        self._t = 0.0
        self._at = (0, 0)
        tracer = self

        def grow(auto, status, arg):
            t = time.thread_time()
            try:
                return tracer._grow0(auto, status, arg)
            finally:
                tracer.grows.append((status, time.thread_time() - t))

        A.Automaton._grow = grow
        gc.callbacks.append(self._gc)

    def _gc(self, phase, info):
        if phase == "start":
            self._t = time.perf_counter()
        else:
            self.gc_runs.append((info["generation"], time.perf_counter() - self._t))

    def close(self):
        self._auto_cls._grow = self._grow0
        gc.callbacks.remove(self._gc)

    def before(self):
        self._at = (len(self.gc_runs), len(self.grows))

    def after(self, step: int, us: float):
        g0, w0 = self._at
        self.events[self.key + (step,)] = (us, len(self.gc_runs) - g0, len(self.grows) - w0)

    def report(self, best: dict, spike_us: float) -> None:
        least = {(rid, k, s): t for rid, runs in best.items() for k, one in enumerate(runs) for s, t in enumerate(one)}
        (rid, k, s), top = max(least.items(), key=lambda kv: kv[1])
        print(f"slowest step, the least of the rounds: {top:.0f} µs ({rid} #{k} step {s})")
        # (a step whose least is past the bar too is slow by its own walk, not a spike)
        over = [(dt, least[(r, kk, ss)], g, w) for (r, kk, rnd, ss), (dt, g, w) in self.events.items()
                if dt > spike_us and least[(r, kk, ss)] <= spike_us]
        kinds: dict = {}
        for dt, lo, g, w in over:
            what = "a collection and a growth" if g and w else "a collection" if g else "a growth" if w else "neither"
            kinds[what] = kinds.get(what, 0) + 1
        print(f"steps past {spike_us:.0f} µs in a single round, not in their least: {len(over)}"
              + (f" ({', '.join(f'{n} {w}' for w, n in sorted(kinds.items()))}); their least at most "
                 f"{max(lo for _, lo, _, _ in over):.0f} µs" if over else ""))
        for label, rows, name in (("collections", self.gc_runs, lambda g: f"generation {g}"),
                                  ("store growths", self.grows, lambda k: self.grow_names.get(k, str(k)))):
            by: dict = {}
            for kind, sec in rows:
                by.setdefault(kind, []).append(sec * 1e6)
            print(f"{label} inside the steps: " + ("; ".join(
                f"{name(kind)}: {len(v)}, mean {sum(v) / len(v):.0f} µs, max {max(v):.0f}"
                for kind, v in sorted(by.items())) or "none"))


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
    ap.add_argument("--spikes", action="store_true",
                    help="also report what ran inside the slow steps (the collector, store growths)")
    ap.add_argument("--layers", type=float, default=None, metavar="US",
                    help="one more round timing each layer's own part of a step (the JSON Schema layer, "
                         "rule bodies, key sets, kernels, ...), over every step, over those past US µs "
                         "and over those at or below the median")
    ap.add_argument("--slowest", type=int, default=0, metavar="N",
                    help="list the N slowest steps with the text before each and its token")
    ap.add_argument("--spike-us", type=float, default=1000.0,
                    help="--spikes: a single round's step past this many µs is reported (default 1000)")
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
