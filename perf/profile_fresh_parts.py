"""Where the fresh path's time goes, by the shape of the state, by Python exit, by new state.

The cold pass of ``bench_maskbench.py`` in one process: for the seeded MaskBench sample, every
valid instance is teacher-forced (Llama 3 tokenizer) through a fresh :class:`dotjson.Index`, by
the benchmark's own engine and loop (``peers``' ``dotjson``, ``close_objects=False``;
``--generation``: ``dotjson-generation``, the library's defaults; ``bench_maskbench._force``:
``Index.next_state`` then ``Index.fill_mask`` a token). The indexes are built first: the steps
alone are profiled. The profiler wraps three methods of the engine (nothing else changes):

* ``Masker.row`` (a mask whose key is new): its time, by the **shape of its state**, the kind of
  the term's leading item (a rule of the schema by its name's pattern, a key set, a run of
  blanks, an alternation of such kinds, ...);
* ``Automaton.handle_exit``: the time a kernel spends back in Python, by **exit**: a rule body
  compiled (``rule``), a key set's member asked (``key``), an array grown (``grow``); counted
  once, at the outermost exit;
* the states those masks made, by the **kind of their leading item** (whitespace, a UTF-8
  continuation byte, an escape's rest, a key set, ...): how many a step, which is what a mask of
  a new position builds beyond the document's own path, and of them how many the document never
  reaches (no token boundary of it, no byte inside one of its tokens, is that state: made for
  the mask's walk alone) and how many the walk never went below (their row of transitions never
  filled: made only as a successor in another state's row, or to tell a token's end alive);
* ``Rules.body`` (a rule's body compiled, wherever the walk or the token step asked for it):
  its time by the **family of the rule** (:func:`body_family`: the object automaton's states,
  members and key positions, sub-schemas, undeclared members, ...), the Python a native object
  automaton or bodies kept by normal form would take off the fresh path; and the **collector**'s
  collections inside the steps (``gc.callbacks``), by generation.

Time is thread CPU time (``time.thread_time``), with the wrappers' own cost inside (a few µs a
mask: compare figures of one run with each other, and runs with each other, not with
``bench_maskbench.py``'s).

Native time: ``--plain`` runs the same workload without the wrappers, and ``--perf-map`` writes
``/tmp/perf-<pid>.map`` naming every compiled kernel function loaded (Numba's code has no symbols
of its own: ``profile_kernels.py``'s map, each function with its size), so that ``perf record -g
python3 perf/profile_fresh_parts.py --plain --perf-map`` and ``perf report --sort symbol --time
FROM,TO`` (the steps' window, printed) tell the kernels apart from the interpreter (a function
LLVM inlined counts as its caller). ``profile_kernels.py`` does all of it in one command.

Run ``python3 perf/profile_fresh_parts.py --help``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402
from bench_maskbench import DATA, WARMUP_DOC, WARMUP_SCHEMA, _force, valid_instances  # noqa: E402

_BLANKS = frozenset(b" \t")
_CONT = frozenset(range(0x80, 0xC0))


def _byte_set(bw, j) -> frozenset:
    bits = np.unpackbits(np.ascontiguousarray(bw[j]).view(np.uint8), bitorder="little")
    return frozenset(np.flatnonzero(bits).tolist())


def lead_kind(auto, t: int, depth: int = 0) -> str:
    """The kind of term ``t``'s leading item, in words (rule names with their numbers as ``#``)."""
    from dotjson.automaton import store as K

    S = auto.store
    ti, bw, pool = S[K.S_TI], S[K.S_BW], S[K.S_POOL]
    first = int(ti[t, 1]) if ti[t, 0] == K.K_SEQ else t
    k = int(ti[first, 0])
    if k == K.K_REF:
        return "rule " + re.sub(r"\d+", "#", str(auto.rules.names[int(ti[first, 1])]))
    if k == K.K_KEYS:
        return "key set"
    if k == K.K_BYTES:
        bs = _byte_set(bw, int(ti[first, 1]))
        if bs <= _CONT:
            return "UTF-8 continuation byte"
        if len(bs) == 1:
            return f"byte {bytes(bs)!r}"
        return "byte set"
    if k == K.K_REP:
        item = int(ti[first, 1])
        if ti[item, 0] == K.K_BYTES and _byte_set(bw, int(ti[item, 1])) <= _BLANKS:
            return "blanks"
        return "repetition"
    if k == K.K_DIFF:
        return "difference"
    if k == K.K_AND:
        return "intersection"
    if k == K.K_ALT:
        if depth >= 1:
            return "alternation"
        off, n = int(ti[first, 1]), int(ti[first, 2])
        kinds = sorted({lead_kind(auto, int(pool[off + i]), depth + 1) for i in range(n)})
        return "(" + " | ".join(kinds[:4]) + (" | ..." if len(kinds) > 4 else "") + ")"
    if k == K.K_EPS:
        return "end"
    return f"kind {k}"


#: rule-name patterns of the JSON layer's rule families, in words (:func:`body_family`)
_FAMILIES = (
    (re.compile(r"^obj\d+_s_"), "object state (written)"),
    (re.compile(r"^obj\d+_m_"), "object member: its value and the next state"),
    (re.compile(r"^obj\d+_K_"), "object key position (native key set)"),
    (re.compile(r"^obj\d+_[kt]_"), "object key position (trie of rules)"),
    (re.compile(r"^obj\d+__"), "object in any order (family)"),
    (re.compile(r"^extra\d+_r$"), "undeclared member after its quote"),
    (re.compile(r"^extra\d+$"), "undeclared member"),
    (re.compile(r"^extra\d+_"), "undeclared key (native key set, witnesses)"),
    (re.compile(r"^s_root$"), "the root schema"),
    (re.compile(r"^s_"), "sub-schema"),
    (re.compile(r"^(uval|uniq)\d*_"), "uniqueItems family"),
    (re.compile(r"^start$"), "start"),
)


def body_family(name: str) -> str:
    """The family of rule ``name`` in words (the JSON layer's naming: ``obj3_s_1_1_0`` is an
    object state); other rules by their name, numbers as ``#``."""
    for pat, words in _FAMILIES:
        if pat.search(name):
            return words
    return "rule " + re.sub(r"\d+", "#", name)


def _tally_made(compiled, ids, made, kinds, unreached, unexpanded) -> None:
    """Count the states the fresh masks of one forced document made (``made``, by automaton), by
    kind, and those the document never reaches or no walk went below. The document's states: its
    token boundaries (stepped again: every transition is known by now) and the bytes inside its
    tokens where the transitions are known (a token step may walk terms, not states)."""
    index = compiled.index
    a = index._auto
    got = made.pop(id(a), None)
    if got is None:
        return
    reached = set()
    s = index.initial_state
    vocab = index.vocabulary
    trans = a.trans
    for t in ids:
        u = s
        for b in vocab.token_bytes(int(t)):
            u = int(trans[u, b]) if 0 <= u < trans.shape[0] else -1
            if u < 0:
                break
            reached.add(u)
        s = index.next_state(s, int(t))
        if s < 0:
            break
        reached.add(s)
        trans = a.trans  # (grown by a step that made a state)
    ready = a.row_ready
    for lo, hi in got[1]:
        for q in range(lo, hi):
            kind = lead_kind(a, a.term_of(q))
            kinds[kind] += 1
            if q not in reached:
                unreached[kind] += 1
            if not ready[q]:
                unexpanded[kind] += 1


def write_perf_map() -> str:
    """Write ``/tmp/perf-<pid>.map`` naming every compiled kernel function this process has
    loaded since :func:`profile_kernels.keep_objects` (called before the engine starts: each
    function at its address, with its size, from its library's symbol table); returns its path."""
    import profile_kernels

    profile_kernels.write_map()
    return f"/tmp/perf-{os.getpid()}.map"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=2, help="schemas per category in the sample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--generation", action="store_true",
                    help="the library's defaults (Index(schema, vocab)) instead of close_objects=False")
    ap.add_argument("--any-order", action="store_true",
                    help="property_order='any' (bench_serving_step's configuration) instead of schema order")
    ap.add_argument("--serving", type=int, default=0, metavar="N",
                    help="bench_serving_step.py's workload instead of the sample: its first N schemas "
                         "(each a fresh index, property_order='any'), the first 200 tokens of each")
    ap.add_argument("--no-gc-freeze", action="store_true",
                    help="leave the collector as it is (default: gc.collect() and gc.freeze() once the "
                         "indexes are built, as bench_serving_step.py and bench_maskbench.py --gc-freeze "
                         "do: a full collection of the process's ~300k objects of imports otherwise lands "
                         "in some step, ~150 ms, counted to whatever body it interrupted)")
    ap.add_argument("--top", type=int, default=14, help="rows of each table")
    ap.add_argument("--plain", action="store_true", help="no wrappers: the workload and its total only")
    ap.add_argument("--perf-map", action="store_true",
                    help="write /tmp/perf-<pid>.map of the compiled kernels (for perf report)")
    args = ap.parse_args(argv)
    if args.perf_map:  # (before any kernel is loaded: their object files name their functions)
        import profile_kernels

        profile_kernels.keep_objects()

    import gc

    from dotjson.automaton import Automaton
    from dotjson.automaton import store as K
    from dotjson.automaton.rules import Rules
    from dotjson.masks import Masker

    os.environ["BENCH_CPU_CLOCK"] = "1"  # (_force's clock: thread CPU time, as this profiler's)
    tok = peers.load_tokenizer("llama3")
    any_order = args.any_order or args.serving
    engine = "dotjson-generation" if args.generation else "dotjson-any" if any_order else "dotjson"
    eng = peers.make_engine(engine, tok)  # (warmup())
    if args.serving:  # (one schema per request, in the serving step's order; one at a time here)
        import bench_serving_step

        jobs = [(schema, ids[:200]) for _, schema, ids
                in bench_serving_step._jobs(args.serving, args.seed, args.data, tok)]
    else:
        jobs = [(schema, ids) for _, schema, ids in valid_instances(tok, args.limit, args.seed, data=args.data)]

    shape_t: dict = defaultdict(float)
    shape_n: Counter = Counter()
    shape_exit: dict = defaultdict(lambda: defaultdict(float))
    new_kinds: Counter = Counter()
    unreached: Counter = Counter()  # (never a state of the document)
    unexpanded: Counter = Counter()  # (its row never filled)
    made: dict = {}  # id(automaton) -> (automaton, [(first, past) state ids a fresh mask made])
    exit_t: dict = defaultdict(float)
    cur = {"shape": None, "in_exit": False}
    clock = time.thread_time
    row0, exit0, body0 = Masker.row, Automaton.handle_exit, Rules.body
    body_t: dict = defaultdict(float)
    body_n: Counter = Counter()
    in_body = [False]
    gc_t: dict = defaultdict(float)
    gc_n: Counter = Counter()
    gc_on = [False, 0.0]
    names = {K.NEED_RULE: "rule", K.NEED_KEY_ALIVE: "key", K.NEED_KEY_TAIL: "key"}

    own = [0.0]  # the profiler's own time (classifying states), left out of the totals

    def row(self, state):
        if cur["shape"] is not None or state in self._state_row:
            return row0(self, state)
        a = self._auto
        c0 = clock()
        with a.lock:
            shape = lead_kind(a, a.term_of(a.key_state(state, self._limit)))
        n0 = a.n_states
        cur["shape"] = shape
        t0 = clock()
        own[0] += t0 - c0
        try:
            return row0(self, state)
        finally:
            t1 = clock()
            shape_t[shape] += t1 - t0
            shape_n[shape] += 1
            cur["shape"] = None
            made.setdefault(id(a), (a, []))[1].append((n0, a.n_states))
            own[0] += clock() - t1

    def handle_exit(self):
        if cur["in_exit"]:
            return exit0(self)
        kind = names.get(int(self._a["ctl"][K.C_STATUS]), "grow")
        cur["in_exit"] = True
        t0 = clock()
        try:
            return exit0(self)
        finally:
            dt = clock() - t0
            cur["in_exit"] = False
            exit_t[kind] += dt
            if cur["shape"] is not None:
                shape_exit[cur["shape"]][kind] += dt

    def body(self, i):
        if in_body[0]:  # (a body compiled inside another's counts as the outer one's)
            return body0(self, i)
        in_body[0] = True
        t0 = clock()
        try:
            return body0(self, i)
        finally:
            dt = clock() - t0
            in_body[0] = False
            fam = body_family(str(self.names[i]))
            body_t[fam] += dt
            body_n[fam] += 1

    def collected(phase, info):
        if not gc_on[0]:
            return
        if phase == "start":
            gc_on[1] = clock()
        else:
            gc_t[info["generation"]] += clock() - gc_on[1]
            gc_n[info["generation"]] += 1

    _force(eng.compile(WARMUP_SCHEMA), tok.encode(peers.compact(WARMUP_DOC), add_special_tokens=False))
    if args.perf_map:
        print(f"perf map: {write_perf_map()}")
    if not args.plain:
        Masker.row, Automaton.handle_exit, Rules.body = row, handle_exit, body
        gc.callbacks.append(collected)
    steps = 0
    total = 0.0
    compiled = []
    for schema, ids in jobs:  # (compiled first: a profile of the steps alone)
        if args.serving and len(compiled) == args.serving:
            break
        try:
            compiled.append((eng.compile(schema), ids))
        except peers.CompileFailed:
            continue
    if not args.no_gc_freeze:  # (before the steps' window opens: the collection is set-up's)
        gc.collect()
        gc.freeze()
    if args.perf_map:  # (CLOCK_MONOTONIC, perf's clock: `perf report --time START,END`)
        print(f"steps from {time.monotonic():.6f}", flush=True)
    try:
        gc_on[0] = True
        for c, ids in compiled:
            own0 = own[0]
            times = _force(c, ids)[2]  # (µs a step, the wrappers' own time inside)
            total += sum(times) / 1e6 - (own[0] - own0)
            steps += len(times)
            if not args.plain:
                _tally_made(c, ids, made, new_kinds, unreached, unexpanded)
    finally:
        gc_on[0] = False
        if not args.no_gc_freeze:
            gc.unfreeze()
        Masker.row, Automaton.handle_exit, Rules.body = row0, exit0, body0
        if collected in gc.callbacks:
            gc.callbacks.remove(collected)
    if args.perf_map:
        print(f"steps to {time.monotonic():.6f}", flush=True)
    if not steps:
        print("no instance ran")
        return
    if args.plain:
        print(f"{len(compiled)} instances, {steps} steps: {total * 1e6 / steps:.1f} µs a step "
              "(next_state + fill_mask)")
        return
    per = 1e6 / steps
    fresh = sum(shape_t.values())
    print(f"{len(compiled)} instances, {steps} steps: {total * per:.1f} µs a step (next_state + fill_mask), "
          f"of which fresh masks {fresh * per:.1f} µs; Python exits "
          + ", ".join(f"{k} {v * per:.1f}" for k, v in sorted(exit_t.items(), key=lambda kv: -kv[1]))
          + " µs a step")
    print(f"\nfresh masks by the shape of their state (top {args.top}; µs a step, masks, µs a mask, "
          "of which exits to Python for a rule / a key / growth)")
    for shape, t in sorted(shape_t.items(), key=lambda kv: -kv[1])[: args.top]:
        n = shape_n[shape]
        ex = shape_exit[shape]
        print(f"  {t * per:6.1f} {n:6d} {t / n * 1e6:8.1f}  rule {ex['rule'] / n * 1e6:6.1f} "
              f"key {ex['key'] / n * 1e6:6.1f} grow {ex['grow'] / n * 1e6:6.1f}  {shape}")
    n_bodies = sum(body_n.values())
    print(f"\nrule bodies compiled in the steps, by family: {sum(body_t.values()) * per:.1f} µs a step "
          f"({sum(body_t.values()) / total * 100:.0f}% of the steps), {n_bodies} bodies "
          "(µs a step, bodies, µs a body)")
    for fam, t in sorted(body_t.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {t * per:6.1f} {body_n[fam]:6d} {t / body_n[fam] * 1e6:8.1f}  {fam}")
    print("collections inside the steps: "
          + (", ".join(f"generation {g}: {gc_n[g]} ({gc_t[g] * 1e3:.2f} ms, {gc_t[g] * per:.1f} µs a step)"
                       for g in sorted(gc_n)) or "none"))
    n_new = sum(new_kinds.values())
    print(f"\nstates the fresh masks made, by their leading item: {n_new / steps:.2f} a step; "
          f"{sum(unreached.values()) / max(n_new, 1) * 100:.0f}% of them never a state of the document "
          f"(made for the masks' walks alone), {sum(unexpanded.values()) / max(n_new, 1) * 100:.0f}% "
          "never walked below (their row never filled)")
    for kind, n in new_kinds.most_common(args.top):
        print(f"  {n / steps:6.2f} a step {n / n_new * 100:5.1f}%  unreached {unreached[kind] / n * 100:3.0f}%  "
              f"not expanded {unexpanded[kind] / n * 100:3.0f}%  {kind}")


if __name__ == "__main__":
    main()
