"""One vLLM engine with dotjson as its structured-output backend, run in its own process by
``tests/test_vllm_engine.py`` (a process holds one CPU engine; the test's own engine uses
XGrammar).

``python tests/vllm_backend_child.py MODEL_DIR REQUESTS_JSON`` prints, on its last line, a JSON
object: ``outputs``, one ``{"text", "finish_reason", "tokens"}`` per request, and ``calls``, how
often vLLM called the grammar's speculative methods (``validate_tokens`` with a non-empty draft,
``rollback``) and the draft tokens it validated. Each request is
``{"prompt", "json", "temperature", "max_tokens", "seed"}``; the engine takes compact JSON
(``disable_any_whitespace``) and, with ``"speculative": N`` in the first request, N-gram
speculative decoding with N draft tokens (the route vLLM reserves for structured-output
backends).
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    model, requests = sys.argv[1], json.loads(sys.argv[2])
    from dotjson.integrations.vllm import DotjsonGrammar
    from dotjson.integrations.vllm_plugin import register

    assert register(), "the dotjson backend did not register"
    calls = {"validate_tokens": 0, "draft_tokens": 0, "rollback": 0}
    validate, rollback = DotjsonGrammar.validate_tokens, DotjsonGrammar.rollback

    def counted_validate(self, tokens):
        if len(tokens):
            calls["validate_tokens"] += 1
            calls["draft_tokens"] += len(tokens)
        return validate(self, tokens)

    def counted_rollback(self, num_tokens):
        calls["rollback"] += num_tokens > 0
        return rollback(self, num_tokens)

    DotjsonGrammar.validate_tokens, DotjsonGrammar.rollback = counted_validate, counted_rollback
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    extra = {}
    if requests[0].get("speculative"):
        extra["speculative_config"] = {"method": "ngram", "num_speculative_tokens": requests[0]["speculative"],
                                       "prompt_lookup_max": 4, "prompt_lookup_min": 1}
    llm = LLM(model=model, enforce_eager=True, dtype="float32", max_model_len=1024, max_num_seqs=4,
              seed=0, gpu_memory_utilization=0.25,
              structured_outputs_config={"backend": "dotjson", "disable_any_whitespace": True}, **extra)
    params = [SamplingParams(temperature=r["temperature"], max_tokens=r["max_tokens"], seed=r.get("seed"),
                             structured_outputs=StructuredOutputsParams(json=r["json"]))
              for r in requests]
    outs = llm.generate([r["prompt"] for r in requests], params, use_tqdm=False)
    print(json.dumps({"outputs": [{"text": o.outputs[0].text, "finish_reason": o.outputs[0].finish_reason,
                                   "tokens": len(o.outputs[0].token_ids)} for o in outs],
                      "calls": calls}))


if __name__ == "__main__":
    main()
