"""MaskBench-style benchmark: compile time and per-token mask time, dotjson against its peers.

For a stratified sample of the MaskBench development schemas (``../shared/data/maskbench``), each
engine (see ``perf/peers.py``) compiles each schema and is teacher-forced, token by token, through
the schema's valid instances, all on the same Llama 3 (128k) tokenizer:

* **TTFM** (time to first mask): ``compile(schema)`` + a cursor + the start mask.
* **mask time**: for every token of the instance, ``advance(token) + mask()`` timed together
  (dotjson's public ``Guide.get_next_tokensets`` does both in one call, so the pair is what is
  comparable), plus each instance's start mask.
* **cold** pass: dotjson and llguidance get a freshly compiled schema for every instance (their
  compile is cheap, so nothing is memoized yet); XGrammar and outlines-core, whose compile
  precomputes their mask caches and is too slow to repeat, get a fresh cursor on the compiled
  schema. **warm** pass: the same instances again on the same compiled objects (dotjson: every
  mask memoized; llguidance: the same matcher, reset, keeping its lexer states).
* **protocol** pass (MaskBench's own figure): the schema compiled once more (XGrammar and
  outlines-core: their compiled object again), then every test
  instance of the schema, valid and invalid, in the data's order, on that one compiled object
  (each instance a fresh cursor, the first fresh; an invalid one forced until its first refused
  token): the mean over every mask of every instance. Paired per instance over the masks both
  engines computed (the shorter prefix where one refuses earlier).
* a **false reject** is a valid instance whose tokens the engine refuses before the end (or whose
  end does not allow EOS: counted apart as ``no_eos``).

Every (schema, engine) job runs in a per-engine worker process with one CPU thread
(``RAYON_NUM_THREADS=OMP_NUM_THREADS=NUMBA_NUM_THREADS=1``) and a wall-clock budget per schema;
a job past its budget is killed and counted as a timeout (outlines-core's eager index is the
usual one), a worker that dies (segfault, out of memory) as a crash. Engines are interleaved
schema by schema, so machine noise hits them alike.

Run ``python3 perf/bench_maskbench.py --help``; see perf/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

# ../shared/data/maskbench beside the checkout (a git worktree sits one level deeper)
DATA = next((p for p in (HERE.parent.parent / "shared" / "data" / "maskbench",
                         Path("/work/shared/data/maskbench")) if p.is_dir()),
            HERE.parent.parent / "shared" / "data" / "maskbench")
CATEGORIES = ("BFCL", "Github_trivial", "Github_easy", "Github_medium", "Github_hard",
              "Github_ultra", "Glaiveai2K", "Handwritten", "JME", "JsonSchemaStore",
              "Kubernetes", "MCPspec", "Snowplow", "Synthesized", "WashingtonPost")

#: Published MaskBench figures (llguidance README, one thread, 128k vocabulary), in µs.
PUBLISHED = {
    "llguidance": {"mask mean": 64, "mask p50": 46, "mask p99": 533, "ttfm p50": 1000},
    "xgrammar": {"mask p50": 9, "mask p99": 5700, "ttfm p50": 900_000},
}

WARMUP_SCHEMA = {"type": "object", "properties": {"a": {"type": "string"},
                                                   "b": {"type": "array", "items": {"type": "integer"}}}}
WARMUP_DOC = {"a": "hi there", "b": [1, 22]}


# ------------------------------------------------------------------------------------------
# worker side
# ------------------------------------------------------------------------------------------


def _clock():
    """The workers' clock: wall time, or with ``--cpu`` the thread's CPU time (on a loaded
    machine a wall-clock mask is mostly the scheduler's; every engine computes in its worker's
    one thread here)."""
    return time.thread_time if os.environ.get("BENCH_CPU_CLOCK") == "1" else time.perf_counter


def _force(compiled, ids, first=None, watch=None):
    """Teacher-force ``ids``; returns (status, tokens consumed, step times in µs, error).

    ``watch`` (``fresh_steps.py --spikes`` and ``--layers``): ``watch.before()`` is called before each timed step
    and ``watch.after(i, us)`` after step ``i`` of the times returned, both outside the timing."""
    pc = _clock()
    if first is None:
        m = compiled.matcher()
        if watch is not None:
            watch.before()
        t = pc()
        m.first_mask()
        times = [(pc() - t) * 1e6]
        if watch is not None:
            watch.after(0, times[0])
    else:
        m, first_us = first
        times = [first_us]
    for k, tok in enumerate(ids):
        if not m.allows(tok):
            return _refused(m), k, times
        if watch is not None:
            watch.before()
        t = pc()
        ok = m.advance(tok)
        m.mask()
        dt = pc() - t
        if not ok:
            return _refused(m), k, times
        times.append(dt * 1e6)
        if watch is not None:
            watch.after(len(times) - 1, times[-1])
    return ("ok" if m.eos_allowed() else "no_eos"), len(ids), times


def _send_forced(conn, pas, i, compiled, ids, first=None):
    """Force instance ``i`` of pass ``pas`` and send its result (an exception as an error)."""
    try:
        status, k, times = _force(compiled, ids, first)
    except Exception as e:  # noqa: BLE001
        _send_error(conn, pas, i, e)
        return
    conn.send(("inst", pas, i, status, k, times, None))


def _send_error(conn, pas, i, e):
    conn.send(("inst", pas, i, "error", -1, [], f"{type(e).__name__}: {e} {traceback.format_exc()[-1500:]}"))


def _refused(m):
    """A plain refusal is ``reject``; ``engine_error: ...`` when the engine reported an error."""
    err = m.error()
    return f"engine_error: {err}" if err else "reject"


def _worker(conn, engine_name, tokenizer, mem_limit_gb, verbose=False):
    peers.set_single_thread_env()
    if not verbose:  # engines' own warnings (XGrammar's C++ log) would drown the progress lines
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 2)
    if mem_limit_gb > 0:
        import resource

        lim = int(mem_limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    try:
        tok = peers.load_tokenizer(tokenizer)
        engine = peers.make_engine(engine_name, tok)
        # warm-up: imports, JIT (numba's on-disk cache for dotjson), allocator pools
        c = engine.compile(WARMUP_SCHEMA)
        _force(c, tok.encode(peers.compact(WARMUP_DOC), add_special_tokens=False))
        if os.environ.get("BENCH_GC_FREEZE") == "1":
            import gc

            gc.collect()
            gc.freeze()  # --gc-freeze: setup's objects out of the collector's sight, every engine
        conn.send(("ready", engine.vocab_prep_s, engine.mode, engine.version))
    except BaseException as e:  # noqa: BLE001
        conn.send(("dead", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-2000:]}"))
        return
    # (every dotjson configuration memoizes in its compiled object, as llguidance keeps lexer states)
    recompile = engine_name.startswith("dotjson") or engine_name == "llguidance"
    pc = _clock()
    while True:
        job = conn.recv()
        if job is None:
            return
        schema, instances, warm, protocol = job
        try:
            t0 = pc()
            compiled = engine.compile(schema)
            t1 = pc()
            m = compiled.matcher()
            m.first_mask()
            t2 = pc()
        except peers.CompileFailed as e:
            conn.send(("compile_fail", str(e)[:2000]))
            continue
        except Exception as e:  # noqa: BLE001 - a bug in the engine, not a refusal
            conn.send(("compile_fail", f"UNEXPECTED {type(e).__name__}: {e} "
                       f"{traceback.format_exc()[-1500:]}"))
            continue
        conn.send(("compiled", (t2 - t0) * 1e6, (t1 - t0) * 1e6))
        per_inst = []
        for i, ids in enumerate(instances):
            try:
                c = compiled if i == 0 else engine.compile(schema) if recompile else compiled
            except Exception as e:  # noqa: BLE001
                per_inst.append(None)
                _send_error(conn, "cold", i, e)
                continue
            per_inst.append(c)
            _send_forced(conn, "cold", i, c, ids, (m, (t2 - t1) * 1e6) if i == 0 else None)
        if warm:
            for i, ids in enumerate(instances):
                if per_inst[i] is not None:
                    _send_forced(conn, "warm", i, per_inst[i], ids)
        if protocol:
            # MaskBench's protocol: one compiled object, every instance on it in turn
            try:
                c = engine.compile(schema) if recompile else compiled
            except Exception as e:  # noqa: BLE001 - compiled above: not expected
                _send_error(conn, "protocol", 0, e)
                c = None
            for i, ids in enumerate(protocol if c is not None else ()):
                _send_forced(conn, "protocol", i, c, ids)
        conn.send(("done",))


class Worker:
    """A per-engine worker process, restarted after a timeout or a crash."""

    def __init__(self, engine, tokenizer, mem_limit_gb, verbose=False):
        self.engine, self.tokenizer, self.mem = engine, tokenizer, mem_limit_gb
        self.verbose = verbose
        self.proc = None
        self.info = None
        self.restarts = -1

    def start(self):
        """Start the worker process without waiting for it to be ready (see :meth:`ensure`)."""
        if self.proc is not None and self.proc.is_alive():
            return
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, self.engine, self.tokenizer, self.mem, self.verbose),
                                daemon=True)
        self.proc.start()
        child.close()
        self.restarts += 1
        self.info = None

    def ensure(self):
        if self.proc is not None and self.proc.is_alive() and self.info is not None:
            return True
        self.start()
        if not self.conn.poll(600):
            self.kill()
            raise RuntimeError(f"{self.engine}: worker did not start in 600 s")
        msg = self.conn.recv()
        if msg[0] != "ready":
            self.kill()
            raise RuntimeError(f"{self.engine}: worker failed to start: {msg[1]}")
        self.info = {"vocab_prep_s": msg[1], "mode": msg[2], "version": msg[3]}
        return True

    def kill(self):
        if self.proc is not None:
            self.proc.kill()  # our own child, by its handle
            self.proc.join(10)
            self.proc = None

    def stop(self):
        if self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(10)
            except (BrokenPipeError, OSError):
                pass
        self.kill()

    def run(self, schema, instances, warm, budget_s, protocol=None):
        """One job; returns a result dict (never raises for engine misbehaviour). ``protocol``:
        every test instance's ids, for the protocol pass (``None``: no such pass)."""
        self.ensure()
        res = {"status": None, "ttfm_us": None, "compile_us": None, "error": None,
               "cold": {}, "warm": {}, "protocol": {}}
        deadline = time.monotonic() + budget_s
        self.conn.send((schema, instances, warm, protocol))
        while True:
            left = deadline - time.monotonic()
            try:
                ready = left > 0 and self.conn.poll(left)
                msg = self.conn.recv() if ready else None
            except (EOFError, OSError):
                msg = ("crash",)
            if msg is None:
                self.kill()
                res["status"] = res["status"] or "timeout"
                res["timeout"] = "compile" if res["status"] == "timeout" else "teacher-forcing"
                return res
            kind = msg[0]
            if kind == "crash":
                code = self.proc.exitcode if self.proc is not None else None
                self.kill()
                res["status"] = res["status"] or "crash"
                res["crash"] = f"worker died (exit code {code})"
                return res
            if kind == "compile_fail":
                res["status"], res["error"] = "compile_fail", msg[1]
                return res
            if kind == "compiled":
                res["status"], res["ttfm_us"], res["compile_us"] = "compiled", msg[1], msg[2]
            elif kind == "inst":
                _, pas, i, status, k, times, err = msg
                res[pas][i] = {"status": status, "k": k, "times": times, "error": err}
            elif kind == "done":
                return res


# ------------------------------------------------------------------------------------------
# statistics and report
# ------------------------------------------------------------------------------------------


def pct(xs, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    if not xs:
        return math.nan
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))]


def mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


def summarize(results, engines):
    """Per-engine counts and timing statistics (µs) from the per-schema results."""
    out = {}
    for e in engines:
        s = {"schemas": 0, "compiled": 0, "compile_fail": 0, "timeout_compile": 0,
             "timeout_forcing": 0, "crash": 0, "compile_bug": 0, "engine_errors": 0,
             "instances": 0, "completed": 0,
             "false_reject": 0, "no_eos": 0, "errors": 0, "not_run": 0}
        ttfm, cold, warm, proto = [], [], [], []
        for r in results:
            x = r["engines"].get(e)
            if x is None:
                continue
            s["schemas"] += 1
            st = x["status"]
            if st == "compile_fail":
                s["compile_fail"] += 1
                if str(x.get("error", "")).startswith("UNEXPECTED"):
                    s["compile_bug"] += 1
            elif st == "crash":
                s["crash"] += 1
            elif st == "timeout" and x.get("timeout") == "compile":
                s["timeout_compile"] += 1
            if x["ttfm_us"] is not None:
                s["compiled"] += 1
                ttfm.append(x["ttfm_us"])
            if x.get("timeout") == "teacher-forcing":
                s["timeout_forcing"] += 1
            if x["ttfm_us"] is None:
                continue
            for v in x.get("protocol", {}).values():
                proto += v["times"]
            for i in range(r["n_instances"]):
                s["instances"] += 1
                ci = x["cold"].get(i)
                if ci is None:
                    s["not_run"] += 1
                    continue
                st = ci["status"]
                s["completed" if st == "ok" else "false_reject" if st == "reject"
                  else "no_eos" if st == "no_eos" else "errors"] += 1
                if st.startswith("engine_error"):
                    s["engine_errors"] += 1
                cold += ci["times"]
                wi = x["warm"].get(i)
                if wi is not None:
                    warm += wi["times"]
        s["ttfm"] = {"p50": pct(ttfm, 50), "p99": pct(ttfm, 99), "max": max(ttfm, default=math.nan),
                     "mean": mean(ttfm)}
        for name, xs in (("cold", cold), ("warm", warm), ("protocol", proto)):
            s[name] = {"n": len(xs), "mean": mean(xs), "p50": pct(xs, 50), "p99": pct(xs, 99),
                       "max": max(xs, default=math.nan)}
        out[e] = s
    return out


def paired_ratios(results, engines, base="dotjson"):
    """dotjson/peer ratios on what both did: schemas both compiled, instances both completed."""
    out = {}
    if base not in engines:
        return out
    for p in engines:
        if p == base:
            continue
        tb, tp, cb, cp, wb, wp, pb, pp = [], [], [], [], [], [], [], []
        for r in results:
            xb, xp = r["engines"].get(base), r["engines"].get(p)
            if not xb or not xp or xb["ttfm_us"] is None or xp["ttfm_us"] is None:
                continue
            tb.append(xb["ttfm_us"])
            tp.append(xp["ttfm_us"])
            for i in range(r["n_instances"]):
                a, b = xb["cold"].get(i), xp["cold"].get(i)
                if a and b and a["status"] == "ok" and b["status"] == "ok":
                    cb += a["times"]
                    cp += b["times"]
                a, b = xb["warm"].get(i), xp["warm"].get(i)
                if a and b and a["status"] == "ok" and b["status"] == "ok":
                    wb += a["times"]
                    wp += b["times"]
            # the protocol pass: every instance, over the masks both computed
            pa, pz = xb.get("protocol", {}), xp.get("protocol", {})
            if len(pa) == len(pz) == r.get("n_protocol", -1) and all(
                    pa[i]["status"] != "error" and pz[i]["status"] != "error" for i in pa):
                for i in pa:
                    n = min(len(pa[i]["times"]), len(pz[i]["times"]))
                    pb += pa[i]["times"][:n]
                    pp += pz[i]["times"][:n]

        def ratio(f, x, y):
            return f(x) / f(y) if x and y and f(y) > 0 else math.nan

        out[p] = {"schemas": len(tb), "tokens_cold": len(cb), "tokens_warm": len(wb),
                  "tokens_protocol": len(pb)}
        for label, x, y in (("ttfm", tb, tp), ("cold", cb, cp), ("warm", wb, wp), ("protocol", pb, pp)):
            out[p][label] = {"mean": ratio(mean, x, y), "p50": ratio(lambda v: pct(v, 50), x, y),
                             "p99": ratio(lambda v: pct(v, 99), x, y), "max": ratio(max, x, y)}
    return out


def fmt_us(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f} s"
    if x >= 1e3:
        return f"{x / 1e3:.2f} ms"
    return f"{x:.1f} µs"


def fmt_ratio(x):
    return "-" if x is None or math.isnan(x) else f"{x:.2f}×"


def render(summary, ratios, engines, infos):
    lines = []
    w = max(14, *(len(e) for e in engines))
    head = f"| {'':26s} | " + " | ".join(f"{e:>{w}s}" for e in engines) + " |"
    lines += [head, "|" + "-" * 28 + "|" + "|".join("-" * (w + 1) + ":" for _ in engines) + "|"]

    def row(label, f):
        lines.append(f"| {label:26s} | " + " | ".join(f"{f(summary[e]):>{w}s}" for e in engines)
                     + " |")

    row("schemas", lambda s: str(s["schemas"]))
    row("compiled", lambda s: str(s["compiled"]))
    row("compile failed", lambda s: str(s["compile_fail"]))
    row("  of which unexpected exc.", lambda s: str(s["compile_bug"]))
    row("compile timeout / crash", lambda s: f"{s['timeout_compile']} / {s['crash']}")
    row("TTFM p50", lambda s: fmt_us(s["ttfm"]["p50"]))
    row("TTFM p99", lambda s: fmt_us(s["ttfm"]["p99"]))
    row("TTFM max", lambda s: fmt_us(s["ttfm"]["max"]))
    row("valid instances (compiled)", lambda s: str(s["instances"]))
    row("forced to EOS", lambda s: str(s["completed"]))
    row("false rejects", lambda s: str(s["false_reject"]))
    row("no EOS at end", lambda s: str(s["no_eos"]))
    row("errors / forcing timeouts", lambda s: f"{s['errors']} / {s['timeout_forcing']}")
    row("  of which engine errors", lambda s: str(s["engine_errors"]))
    for p in ("cold", "warm", "protocol"):
        if p == "protocol" and not any(summary[e]["protocol"]["n"] for e in engines):
            continue
        row(f"{p}: masks timed", lambda s, p=p: str(s[p]["n"]))
        for k in ("mean", "p50", "p99", "max"):
            row(f"{p}: mask {k}", lambda s, p=p, k=k: fmt_us(s[p][k]))
    out = "\n".join(lines)
    if ratios:
        peers_ = list(ratios)
        out += ("\n\nRatios dotjson / peer, on what both did (schemas both compiled; instances "
                "both forced to EOS); below 1 means dotjson is faster:\n\n")
        h = f"| {'':22s} | " + " | ".join(f"{p:>{w}s}" for p in peers_) + " |"
        rl = [h, "|" + "-" * 24 + "|" + "|".join("-" * (w + 1) + ":" for _ in peers_) + "|"]
        rl.append(f"| {'schemas / tokens':22s} | " + " | ".join(
            f"{str(ratios[p]['schemas']) + ' / ' + str(ratios[p]['tokens_cold']):>{w}s}"
            for p in peers_) + " |")
        for label in ("ttfm", "cold", "warm", "protocol"):
            if label == "protocol" and not any(ratios[p]["tokens_protocol"] for p in peers_):
                continue
            if label == "protocol":
                rl.append(f"| {'protocol: masks paired':22s} | " + " | ".join(
                    f"{ratios[p]['tokens_protocol']:>{w}d}" for p in peers_) + " |")
            for k in ("mean", "p50", "p99", "max"):
                nm = ("TTFM " if label == "ttfm" else f"{label} mask ") + k
                rl.append(f"| {nm:22s} | " + " | ".join(
                    f"{fmt_ratio(ratios[p][label][k]):>{w}s}" for p in peers_) + " |")
        out += "\n".join(rl)
    out += "\n\nEngine modes:\n" + "\n".join(
        f"- {e} {infos.get(e, {}).get('version', '?')}: {infos.get(e, {}).get('mode', '?')} "
        f"(vocabulary prepared in {infos.get(e, {}).get('vocab_prep_s', math.nan):.2f} s)"
        for e in engines)
    return out


# ------------------------------------------------------------------------------------------
# driver
# ------------------------------------------------------------------------------------------


#: The repository's own copy: 4 schemas per category (tests/data/maskbench/README.md).
SUBSET = HERE.parent / "tests" / "data" / "maskbench" / "subset.jsonl"


def _subset_category(row_id: str) -> str:
    return "BFCL" if row_id.startswith("BFCL") else row_id.split("---")[0]


def load_sample(categories, limit, seed, data=DATA):
    """A seeded sample of ``limit`` schemas per category from ``data`` (one .jsonl per category).

    The MaskBench development split lives outside the repository (``../shared/data/maskbench``
    on the project's machines). From a clone without it, the default falls back to the
    repository's subset (4 schemas per category) and says so; an explicit ``--data`` folder
    that is missing is an error naming what is expected.
    """
    rng = random.Random(seed)
    picked = []
    data = Path(data)
    subset = None
    if not data.is_dir():
        if data != DATA:
            raise SystemExit(f"{Path(sys.argv[0]).name}: error: no MaskBench folder at {data} "
                             "(--data DIR needs one <category>.jsonl per category)")
        print(f"note: the MaskBench development split is not at {data} (it is not part of the "
              "repository: https://github.com/guidance-ai/jsonschemabench, maskbench/data; pass "
              f"--data DIR); using the repository's subset {SUBSET.relative_to(HERE.parent)} "
              "(4 schemas per category) instead", file=sys.stderr)
        subset = {}
        for line in SUBSET.open(encoding="utf-8"):
            row = json.loads(line)
            subset.setdefault(_subset_category(row["id"]), []).append(row)
    for cat in categories:
        path = data / f"{cat}.jsonl"
        if subset is not None:
            rows = list(subset.get(cat, []))
        elif not path.is_file():
            raise SystemExit(f"{Path(sys.argv[0]).name}: error: no {path.name} in {data} "
                             f"(category {cat!r})")
        else:
            rows = [json.loads(line) for line in path.open(encoding="utf-8")]
        if limit and limit < len(rows):
            rows = sorted(rng.sample(rows, limit), key=lambda r: r["id"])
        picked += rows
    return picked


def valid_instances(tok, limit, seed, data=DATA, first_only=False):
    """``(schema id, schema, token ids)`` of the valid test instances of :func:`load_sample`'s
    sample (every category), compact JSON encoded by ``tok``; ``first_only``: each schema's
    first one. What the profilers in ``perf/`` teacher-force."""
    out = []
    for row in load_sample(CATEGORIES, limit, seed, data=data):
        for case in row.get("tests", []):
            if case.get("valid"):
                out.append((row["id"], row["schema"],
                            tok.encode(peers.compact(case["data"]), add_special_tokens=False)))
                if first_only:
                    break
    return out


def run_sample(rows, engines, tokenizer="llama3", budget_s=10.0, mem_limit_gb=12.0, warm=True,
               verbose=False, log=None, tok=None, protocol=True):
    """Run every engine over ``rows`` (MaskBench rows: ``id``, ``schema``, ``tests``).

    Returns ``(results, infos)``: per schema, per engine, the job's result (status, TTFM and
    compile time in µs, per instance and pass the status and every step time in µs), and per
    engine its version, mode and start time. Used by ``main`` and the speed notebook.
    """
    tok = tok if tok is not None else peers.load_tokenizer(tokenizer)
    workers = {e: Worker(e, tokenizer, mem_limit_gb, verbose) for e in engines}
    infos = {}
    results = []
    t_start = time.perf_counter()
    try:
        for w in workers.values():  # start them together: their imports overlap
            w.start()
        for e, w in workers.items():
            t = time.perf_counter()
            w.ensure()
            infos[e] = dict(w.info, worker_start_s=time.perf_counter() - t)
            if log:
                log(f"  {e}: ready in {infos[e]['worker_start_s']:.1f} s ({w.info['version']})")
        t_start = time.perf_counter()
        for n, row in enumerate(rows):
            valid = [t["data"] for t in row["tests"] if t["valid"]]
            texts = [peers.compact(v) for v in valid]
            ids = [tok.encode(x, add_special_tokens=False) for x in texts]
            # the protocol pass: every test, valid or not, in the data's order
            pids = [tok.encode(peers.compact(t["data"]), add_special_tokens=False)
                    for t in row["tests"]] if protocol else None
            r = {"id": row["id"], "n_instances": len(ids), "tokens": [len(x) for x in ids],
                 "n_protocol": len(pids) if protocol else 0, "engines": {}}
            for e in engines:
                try:
                    r["engines"][e] = workers[e].run(row["schema"], ids, warm, budget_s, pids)
                except RuntimeError as err:  # the worker could not even start again
                    r["engines"][e] = {"status": "crash", "crash": str(err), "ttfm_us": None,
                                       "compile_us": None, "error": None, "cold": {}, "warm": {},
                                       "protocol": {}}
            results.append(r)
            if log:
                bits = []
                for e in engines:
                    x = r["engines"][e]
                    okc = sum(1 for v in x["cold"].values() if v["status"] == "ok")
                    bits.append(f"{e}={x['status'][:8]}:{fmt_us(x['ttfm_us'])}:"
                                f"{okc}/{len(ids)}")
                log(f"[{n + 1}/{len(rows)} {time.perf_counter() - t_start:.0f}s] {row['id']}: "
                    + " ".join(bits))
    finally:
        for w in workers.values():
            w.stop()
    for e in infos:
        infos[e]["run_s"] = time.perf_counter() - t_start
    return results, infos


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--categories", default=",".join(CATEGORIES),
                    help="comma-separated MaskBench categories (default: all 15)")
    ap.add_argument("--limit", type=int, default=3,
                    help="schemas per category, a seeded random sample (0: all 6,774; default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ids", default=None,
                    help="comma-separated schema ids: only these (from the --categories; --limit and --seed "
                         "then ignored), e.g. the schemas a change touched")
    ap.add_argument("--engines", default=",".join(peers.ENGINES),
                    help=f"comma-separated, from {peers.ENGINES + peers.EXTRA_ENGINES}")
    ap.add_argument("--time-budget-per-schema", type=float, default=10.0,
                    help="seconds per (schema, engine) job: compile + both passes (default 10)")
    ap.add_argument("--mem-limit-gb", type=float, default=12.0,
                    help="address-space limit of each worker (0: none; default 12)")
    ap.add_argument("--no-warm", action="store_true", help="skip the warm pass")
    ap.add_argument("--no-protocol", action="store_true",
                    help="skip the protocol pass (MaskBench's figure: every test instance, valid or "
                         "not, on one compiled schema)")
    ap.add_argument("--gc-freeze", action="store_true",
                    help="each worker calls gc.freeze() after its setup (tokenizer, engine, warm-up), "
                         "as inference servers do after loading a model: CPython's full collections "
                         "then walk only what the run itself allocates (every engine alike)")
    ap.add_argument("--cpu", action="store_true",
                    help="time compiles and masks by the worker thread's CPU time, not wall time "
                         "(a loaded machine: the figures then leave out waiting for a core)")
    ap.add_argument("--tokenizer", default="llama3",
                    help="'llama3' (default), 'smollm2', 'qwen' or a Hugging Face tokenizer directory")
    ap.add_argument("--data", default=str(DATA), help="MaskBench folder (one .jsonl per category)")
    ap.add_argument("--json", default=None, help="write the summary and per-schema results here")
    ap.add_argument("--quiet", action="store_true", help="no per-schema progress lines")
    ap.add_argument("--verbose", action="store_true",
                    help="keep the engines' own stderr (XGrammar logs a warning per oneOf)")
    args = ap.parse_args(argv)

    peers.set_single_thread_env()
    if args.gc_freeze:
        os.environ["BENCH_GC_FREEZE"] = "1"  # read by the spawned workers
    if args.cpu:
        os.environ["BENCH_CPU_CLOCK"] = "1"
    engines = [e for e in args.engines.split(",") if e]
    for e in engines:
        if e not in peers.ENGINES + peers.EXTRA_ENGINES:
            ap.error(f"unknown engine {e!r}")
    cats = [c for c in args.categories.split(",") if c]
    if args.ids:
        want = set(args.ids.split(","))
        rows = [r for r in load_sample(cats, 0, args.seed, args.data) if r["id"] in want]
        missing = want - {r["id"] for r in rows}
        if missing:
            ap.error(f"--ids: not in the sample: {', '.join(sorted(missing))}")
    else:
        rows = load_sample(cats, args.limit, args.seed, args.data)
    tok = peers.load_tokenizer(args.tokenizer)
    print(f"{len(rows)} schemas from {len(cats)} categories (limit {args.limit}, seed {args.seed}); "
          f"tokenizer {args.tokenizer} ({peers.vocab_width(tok)} ids); engines {engines}; "
          f"budget {args.time_budget_per_schema:g} s per schema", file=sys.stderr)

    results, infos = run_sample(rows, engines, args.tokenizer, args.time_budget_per_schema,
                                args.mem_limit_gb, warm=not args.no_warm, verbose=args.verbose,
                                protocol=not args.no_protocol,
                                log=None if args.quiet else
                                (lambda m: print(m, file=sys.stderr, flush=True)), tok=tok)
    wall = max((i.get("run_s", 0.0) for i in infos.values()), default=0.0)
    summary = summarize(results, engines)
    ratios = paired_ratios(results, engines)
    print(render(summary, ratios, engines, infos))
    print(f"\nwall time {wall:.0f} s; published MaskBench figures "
          f"(µs, 1 thread, 128k): {json.dumps(PUBLISHED)}")

    failures = {e: [(r["id"], r["engines"][e].get("error") or r["engines"][e].get("crash")
                     or r["engines"][e].get("timeout"))
                    for r in results if r["engines"][e]["status"] != "compiled"]
                for e in engines}
    rejects = {e: [(r["id"], i, v["status"], v["k"], r["tokens"][i], v.get("error"))
                   for r in results for i, v in r["engines"][e]["cold"].items()
                   if v["status"] != "ok"] for e in engines}
    if "dotjson" in engines:
        fl, rj = failures["dotjson"], rejects["dotjson"]
        print(f"\ndotjson: {len(fl)} schemas not compiled, {len(rj)} valid instances not forced "
              f"to EOS", file=sys.stderr)
        for sid, err in fl[:40]:
            print(f"  compile {sid}: {str(err)[:300]}", file=sys.stderr)
        for sid, i, st, k, ntok, err in rj[:40]:
            print(f"  {st} {sid}#{i} at token {k}/{ntok} {str(err or '')[:300]}", file=sys.stderr)

    if args.json:
        for r in results:  # keep the file small: per-instance totals, not every sample
            for x in r["engines"].values():
                for pas in ("cold", "warm", "protocol"):
                    for v in x.get(pas, {}).values():
                        ts = v.pop("times")
                        v.update(n=len(ts), sum_us=sum(ts), max_us=max(ts, default=0))
        payload = {"args": vars(args), "infos": infos, "summary": summary, "ratios": ratios,
                   "published": PUBLISHED, "failures": failures, "rejects": rejects,
                   "results": results, "machine": {"cpus": os.cpu_count()}}
        Path(args.json).write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    return summary


if __name__ == "__main__":
    main()
