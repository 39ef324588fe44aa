"""How long a vLLM engine with dotjson's processor takes to start, and its first constrained
request to get a token, over the Numba cache ``NUMBA_CACHE_DIR`` points at (empty: the first run
after install).

    NUMBA_CACHE_DIR=$(mktemp -d) python perf/vllm_cold_start.py      # cold, then again: warm

The processor's constructor calls ``dotjson.warmup()``, so the kernels compile inside ``LLM()``
(the engine's start) and no request should wait for them: the first constrained request's time
to its first token is printed beside an unconstrained one's. Environment: docs/vllm.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


def main() -> None:
    cache = os.environ.get("NUMBA_CACHE_DIR")
    entries = os.listdir(cache) if cache and os.path.isdir(cache) else []
    print(f"NUMBA_CACHE_DIR={cache} ({'empty' if not entries else f'{len(entries)} entries'})")
    model = subprocess.check_output(  # in a subprocess: Numba imported before LLM() breaks vLLM
        [sys.executable, "-c", "from dotjson.models import converted_model_dir; print(converted_model_dir())"],
        text=True).strip().splitlines()[-1]
    from vllm import LLM, SamplingParams

    t0 = time.perf_counter()
    llm = LLM(model=model, enforce_eager=True, dtype="float32", max_model_len=1024, max_num_seqs=4,
              seed=0, gpu_memory_utilization=0.25)
    print(f"LLM() (the processor warms dotjson up in it): {time.perf_counter() - t0:.1f} s")
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
                                               "age": {"type": "integer"}}, "required": ["name", "age"]}
    prompt = llm.get_tokenizer().apply_chat_template(
        [{"role": "user", "content": "Describe a person as JSON."}], tokenize=False, add_generation_prompt=True)
    llm.generate([prompt], SamplingParams(temperature=0, max_tokens=1), use_tqdm=False)  # engine's first step
    for i in range(2):
        t0 = time.perf_counter()
        llm.generate([prompt], SamplingParams(temperature=0, max_tokens=1, extra_args={"json_schema": schema}),
                     use_tqdm=False)
        print(f"constrained request {i + 1}, first token: {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    llm.generate([prompt], SamplingParams(temperature=0, max_tokens=1), use_tqdm=False)
    print(f"unconstrained request, first token: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
