"""dotjson inside a real vLLM engine (the CPU build): validity, greedy equality with vLLM's
XGrammar backend, and tokens/s against unconstrained decoding and vLLM's XGrammar and
llguidance backends, 8 concurrent requests with different schemas: dotjson as a logits processor
(masks overlapped with the forward pass, or computed in ``update_state``) and as vLLM's
structured-output backend (the experimental plug-in). Printed per engine step: the processor's own
cost, and every backend's (``grammar_bitmask`` + ``accept_tokens``); the median decode step of
each run (engine steps after the prefill), as a ratio to the unconstrained run of the same engine
(the guidance and dotjson backends run in engines of their own processes).

Environment: ``perf/setup_vllm_env.sh`` (the steps of docs/vllm.md), then
``. /work/venv-vllm/bin/activate`` (its own ``NUMBA_CACHE_DIR``).

Run::

    python perf/bench_vllm.py [--max-tokens 96] [--rounds 2]

The model is SmolLM2-135M-Instruct from ``dotjson.models.converted_model_dir()``, run in-process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``, ``enforce_eager=True``, ``dtype="float32"``). The model
directory is found in a subprocess: importing dotjson's model helpers imports Numba, and Numba
imported before ``LLM()`` breaks vLLM's CPU worker.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 24},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"]},
    {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                      "country": {"type": "string", "maxLength": 20},
                                      "population": {"type": "integer", "minimum": 0}},
     "required": ["city", "country", "population"]},
    {"type": "object", "properties": {"colors": {"type": "array", "items": {"enum": ["red", "green", "blue"]},
                                                 "minItems": 1, "maxItems": 3}},
     "required": ["colors"]},
    {"type": "object", "properties": {"title": {"type": "string", "maxLength": 30},
                                      "year": {"type": "integer", "minimum": 1900, "maximum": 2030},
                                      "genre": {"enum": ["drama", "comedy", "action"]}},
     "required": ["title", "year", "genre"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "reason": {"type": "string", "maxLength": 40}},
     "required": ["ok", "reason"]},
    {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
     "required": ["x", "y"]},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 12},
                                               "maxItems": 4}}, "required": ["tags"]},
    {"type": "object", "properties": {"product": {"type": "string", "maxLength": 20},
                                      "price": {"type": "number", "minimum": 0},
                                      "in_stock": {"type": "boolean"}},
     "required": ["product", "price", "in_stock"]},
]
TOPICS = ["a person", "a city", "some colors", "a film", "a decision", "a point", "a blog post", "a product"]


def torch_libgomp() -> str | None:
    """Torch's own libgomp, which vLLM's CPU platform puts in ``LD_PRELOAD`` for the engine
    processes it starts (vLLM issue 27369: without it, thread binding leaves one core working)."""
    import glob
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    torch_dir = spec.submodule_search_locations[0]
    found = sorted(glob.glob(os.path.join(torch_dir, "lib", "libgomp*.so*")) +
                   glob.glob(os.path.join(os.path.dirname(torch_dir), "torch.libs", "libgomp*.so*")))
    return found[0] if found else None


def preload_like_vllm() -> None:
    """An in-process engine (this benchmark's) never gets what vLLM and dotjson set for the
    engine processes they start: torch's libgomp in ``LD_PRELOAD`` (vLLM) and
    ``OMP_WAIT_POLICY=PASSIVE`` (dotjson, at import, after torch's OpenMP started: too late in
    this process). Re-execute this script with both: without them, its engine steps ran ~10x
    slower than a child's on this loaded 2-core machine (OpenMP threads spinning)."""
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    lib = torch_libgomp()
    if lib and lib not in env.get("LD_PRELOAD", ""):
        env["LD_PRELOAD"] = ":".join(p for p in (lib, env.get("LD_PRELOAD")) if p)
    if env != dict(os.environ):
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def model_dir() -> str:
    out = subprocess.check_output(
        [sys.executable, "-c", "from dotjson.models import converted_model_dir; print(converted_model_dir())"],
        text=True)
    return out.strip().splitlines()[-1]


def prompts(tokenizer, n=8):
    out = []
    for i in range(n):
        k = i % len(SCHEMAS)
        msg = (f"Describe {TOPICS[k]} as JSON matching this schema: {json.dumps(SCHEMAS[k])}")
        out.append(tokenizer.apply_chat_template([{"role": "user", "content": msg}], tokenize=False,
                                                 add_generation_prompt=True))
    return out


def params(kind: str, k: int, *, temperature: float, max_tokens: int, seed: int | None = None):
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    schema = SCHEMAS[k % len(SCHEMAS)]
    common = dict(temperature=temperature, max_tokens=max_tokens, seed=seed)
    if kind == "free":
        return SamplingParams(**common)
    if kind == "dotjson":  # the logits processor
        return SamplingParams(**common, extra_args={"json_schema": schema, "disallow_whitespace": True})
    # any other kind: vLLM's structured outputs, through the engine's backend (xgrammar,
    # guidance, or dotjson's: "dotjson-backend")
    return SamplingParams(**common, structured_outputs=StructuredOutputsParams(json=schema))


def processor_of(llm):
    """The engine's dotjson processor (in-process engine): the model runner's logits processors
    (``gc.get_objects`` does not see it: vLLM freezes the collector after start-up)."""
    from dotjson.integrations.vllm import JSONLogitsProcessor

    runner = llm.llm_engine.engine_core.engine_core.model_executor.driver_worker.worker.model_runner
    found = [p for p in runner.input_batch.logitsprocs.all if isinstance(p, JSONLogitsProcessor)]
    return found[0] if found else None


class BackendClock:
    """The structured-output backend's own cost per engine step, whatever the backend: seconds
    in ``StructuredOutputManager.grammar_bitmask`` (every constrained row's mask, once per
    step) and in the grammars' ``accept_tokens`` (the sampled tokens, after the step).
    Installed in this process only (benchmark instrumentation)."""

    def __init__(self):
        from vllm.v1.structured_output import StructuredOutputManager
        from vllm.v1.structured_output.backend_guidance import GuidanceGrammar
        from vllm.v1.structured_output.backend_xgrammar import XgrammarGrammar

        from dotjson.integrations.vllm import DotjsonGrammar

        self.steps, self.seconds = 0, 0.0
        self._wrap(StructuredOutputManager, "grammar_bitmask", step=True)
        for cls in (XgrammarGrammar, GuidanceGrammar, DotjsonGrammar):
            self._wrap(cls, "accept_tokens", step=False)

    def _wrap(self, cls, name, *, step):
        original = getattr(cls, name)
        clock = self

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                clock.seconds += time.perf_counter() - t0
                clock.steps += step

        setattr(cls, name, timed)

    def mark(self):
        return self.steps, self.seconds

    def per_step_ms(self, mark) -> str:
        steps, seconds = self.steps - mark[0], self.seconds - mark[1]
        return f"{1e3 * seconds / max(steps, 1):.2f} ms over {steps} steps"


class StepClock:
    """Each engine step's wall time (``LLMEngine.step``, wrapped on this engine only), with
    whether it returned request outputs (a step that only waits, e.g. for a grammar compiled in
    vLLM's background thread, returns none). A round's first productive step is the prefill of
    its 8 prompts; every later one decodes one token per running request."""

    def __init__(self, llm):
        engine = llm.llm_engine
        step, self.times = engine.step, []

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            out = step(*args, **kwargs)
            self.times.append((time.perf_counter() - t0, bool(out)))
            return out

        engine.step = timed

    def median_decode(self) -> float:
        productive = [t for t, out in self.times if out][1:]
        return sorted(productive)[len(productive) // 2] if productive else float("nan")


def run(llm, ps, kind, *, temperature, max_tokens, rounds):
    """Best of ``rounds`` by tokens/s: (outputs, generated tokens, seconds, median decode step
    in seconds)."""
    clock = getattr(llm, "_bench_steps", None) or StepClock(llm)
    llm._bench_steps = clock
    best = None
    for _ in range(rounds):
        sp = [params(kind, i, temperature=temperature, max_tokens=max_tokens, seed=100 + i) for i in range(len(ps))]
        clock.times.clear()
        t0 = time.perf_counter()
        outs = llm.generate(ps, sp, use_tqdm=False)
        dt = time.perf_counter() - t0
        n = sum(len(o.outputs[0].token_ids) for o in outs)
        step = clock.median_decode()
        if best is None or n / dt > best[1] / best[2]:
            best = (outs, n, dt, step)
    return best


def check_valid(outs, n):
    import jsonschema

    bad = []
    for i, o in enumerate(outs[:n]):
        text = o.outputs[0].text
        try:
            jsonschema.validate(json.loads(text), SCHEMAS[i % len(SCHEMAS)])
        except Exception as e:  # noqa: BLE001 - reported
            bad.append((i, text, repr(e)[:80]))
    return bad


def make_llm(backend: str):
    from vllm import LLM

    if backend == "dotjson":  # the experimental plug-in (docs/vllm.md), before LLM() checks its config
        from dotjson.integrations.vllm_plugin import register

        assert register(), "the dotjson structured-output backend did not register"
    return LLM(model=model_dir(), enforce_eager=True, dtype="float32", max_model_len=1024,
               max_num_seqs=8, seed=0, gpu_memory_utilization=0.25,
               structured_outputs_config={"backend": backend, "disable_any_whitespace": True})


def line(kind, n, dt, outs, step, extra=""):
    longest = max(len(o.outputs[0].token_ids) for o in outs)
    return (f"{kind:16s}: {n} tokens in {dt:.2f} s = {n / dt:.1f} tok/s, longest request {longest} "
            f"tokens, median decode step {step * 1e3:.0f} ms{extra}")


def backend_only(backend: str, args) -> None:
    """One backend in its own engine (this process): a second ``LLM()`` in a process where
    Numba is loaded breaks vLLM's CPU worker, so the main run starts this as a subprocess. The
    engine's own unconstrained run comes first: engines in different processes are compared by
    their ratios to it."""
    t0 = time.perf_counter()
    llm = make_llm(backend)
    start = time.perf_counter() - t0
    clock = BackendClock()
    ps = prompts(llm.get_tokenizer())
    kind = f"{backend}-backend"  # structured_outputs requests (params: not the processor's)
    greedy = run(llm, ps, kind, temperature=0.0, max_tokens=args.max_tokens, rounds=1)[0]
    free = run(llm, ps, "free", temperature=0.8, max_tokens=args.max_tokens, rounds=args.rounds)
    mark = clock.mark()
    outs, n, dt, step = run(llm, ps, kind, temperature=0.8, max_tokens=args.max_tokens, rounds=args.rounds)
    print("RESULT " + json.dumps({
        "lines": [line("free", *free[1:3], free[0], free[3]),
                  line(kind, n, dt, outs, step, f"; LLM() {start:.1f} s; backend per step "
                       f"{clock.per_step_ms(mark)} (all rounds); invalid {len(check_valid(outs, 8))}/8")],
        "free": free[1:4], "run": (n, dt, step), "greedy": [o.outputs[0].text for o in greedy]}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--backend-only", choices=("xgrammar", "guidance", "dotjson"),
                    help="run one structured-output backend in an engine of its own (with that "
                         "engine's unconstrained run), and print its RESULT line")
    args = ap.parse_args()
    preload_like_vllm()

    if args.backend_only:
        backend_only(args.backend_only, args)
        return

    t0 = time.perf_counter()
    llm = make_llm("xgrammar")
    print(f"LLM() with the dotjson processor (entry point) and XGrammar: {time.perf_counter() - t0:.1f} s")
    clock = BackendClock()
    tok = llm.get_tokenizer()
    ps = prompts(tok)
    proc = processor_of(llm)
    assert proc is not None, "the dotjson processor was not loaded (entry point missing?)"

    # greedy: dotjson vs XGrammar, same schemas, compact JSON both
    g_dot = run(llm, ps, "dotjson", temperature=0.0, max_tokens=args.max_tokens, rounds=1)[0]
    g_xgr = run(llm, ps, "xgrammar", temperature=0.0, max_tokens=args.max_tokens, rounds=1)[0]
    same = sum(a.outputs[0].text == b.outputs[0].text for a, b in zip(g_dot, g_xgr))
    print(f"greedy, 8 schemas: dotjson processor == xgrammar on {same}/8 outputs; "
          f"invalid: dotjson {len(check_valid(g_dot, 8))}, xgrammar {len(check_valid(g_xgr, 8))}")
    for a, b in zip(g_dot, g_xgr):
        if a.outputs[0].text != b.outputs[0].text:
            print("  dotjson :", a.outputs[0].text[:100])
            print("  xgrammar:", b.outputs[0].text[:100])
    print("  e.g.", g_dot[0].outputs[0].text)

    res = {}
    for kind in ("free", "dotjson", "dotjson-sync", "xgrammar"):
        proc.overlap = kind != "dotjson-sync"  # sync: masks computed in update_state, no thread
        kind_run = "dotjson" if kind.startswith("dotjson") else kind
        stats0, mark = dict(proc.stats), clock.mark()
        outs, n, dt, step = run(llm, ps, kind_run, temperature=0.8, max_tokens=args.max_tokens, rounds=args.rounds)
        res[kind] = (n, dt, step)
        extra = ""
        if kind_run == "dotjson":
            steps = proc.stats["steps"] - stats0["steps"]
            cost = (proc.stats["update_s"] - stats0["update_s"]) + (proc.stats["apply_s"] - stats0["apply_s"])
            wait = proc.stats["wait_s"] - stats0["wait_s"]
            extra = (f"; processor per step {1e3 * cost / max(steps, 1):.2f} ms (waiting for masks "
                     f"{1e3 * wait / max(steps, 1):.2f} ms) over {steps} steps")
        if kind == "xgrammar":
            extra = f"; backend per step {clock.per_step_ms(mark)}"
        if kind != "free":
            extra += f"; invalid {len(check_valid(outs, 8))}/8"
        print(line(kind, n, dt, outs, step, extra))
    # vLLM's guidance backend and dotjson's (experimental) backend each need their own engine,
    # and a second LLM() in a process where Numba is loaded breaks vLLM's CPU worker:
    # subprocesses, each with its own unconstrained run (steps differ between processes)
    for backend in ("guidance", "dotjson"):
        out = subprocess.run([sys.executable, __file__, "--backend-only", backend, "--max-tokens",
                              str(args.max_tokens), "--rounds", str(args.rounds)],
                             text=True, capture_output=True, check=True).stdout.splitlines()
        got = json.loads([ln for ln in out if ln.startswith("RESULT ")][-1][len("RESULT "):])
        same = sum(a == b.outputs[0].text for a, b in zip(got["greedy"], g_xgr))
        print(f"{backend} backend's engine (own process):")
        for ln in got["lines"]:
            print("  " + ln)
        print(f"  greedy == xgrammar on {same}/8 outputs")
        res[f"{backend}-backend"] = tuple(got["run"]) + (tuple(got["free"]),)

    def ratios(k):
        n, dt, step = res[k][:3]
        free = res[k][3] if len(res[k]) > 3 else res["free"]
        return n / dt / (free[0] / free[1]), step / free[2]

    print("against the unconstrained run of the same engine (tokens/s, median decode step):")
    for k in ("dotjson", "dotjson-sync", "xgrammar", "guidance-backend", "dotjson-backend"):
        tps, step = ratios(k)
        print(f"  {k:16s} tokens/s {tps:.2f}x, decode step {step:.2f}x")


if __name__ == "__main__":
    main()
