"""Save an index, load it in a new process, and see that it is warm.

An ``Index`` memoizes the states its automaton has reached and the token masks it has computed.
``index.serialize_to_disk(dir)`` saves the grammar, those states and masks, and the vocabulary's
fingerprint (never pickle); ``Index.deserialize_from_disk(dir)`` in another process (a server
worker, say) gets them back, so the masks that process needs first are lookups, not trie walks.

This script warms an index by decoding a few documents with dummy logits, saves it, then starts
itself again in a fresh Python process (``--load``) that loads the index and decodes the same
documents: it computes no new mask.

Run::

    python examples/04_save_load_index.py
    python examples/04_save_load_index.py --out /tmp/person_index --schema examples/schemas/person.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dotjson import Guide, Index, LogitsProcessor, Vocabulary

HERE = Path(__file__).resolve().parent


def decode_with_dummy_logits(index: Index, rows: int, seed: int, max_steps: int = 2000):
    """Decode ``rows`` documents with random uint16 logits; return their texts and the time."""
    vocabulary = index.vocabulary
    guide = Guide(index, batch_size=rows)
    processor = LogitsProcessor(guide, 0)
    rng = np.random.default_rng(seed)
    logits = np.empty((rows, vocabulary.max_token_id()), dtype=np.uint16)
    eos_ids = {int(t) for t in vocabulary.eos_token_ids}
    out = [[] for _ in range(rows)]
    t0 = time.perf_counter()
    token_set = guide.get_start_tokensets()
    for _ in range(max_steps):
        if guide.is_finished().all():
            break
        logits[:] = rng.integers(1, 65536, size=logits.shape, dtype=np.uint16)
        processor(logits, token_set)
        sampled = logits.argmax(axis=1)
        for r, t in enumerate(sampled.tolist()):
            if t not in eos_ids:
                out[r].append(t)
        token_set = guide.get_next_tokensets(sampled)
    elapsed = time.perf_counter() - t0
    texts = [b"".join(vocabulary.token_bytes(t) for t in ids).decode() for ids in out]
    return texts, elapsed


def load_and_replay(path: str, rows: int, seed: int) -> int:
    """The second process: load the saved index and decode the same documents again."""
    t0 = time.perf_counter()
    index = Index.deserialize_from_disk(path)
    t_load = time.perf_counter() - t0
    masks_before = index.n_masks
    texts, elapsed = decode_with_dummy_logits(index, rows, seed)
    new_masks = index.n_masks - masks_before
    print(json.dumps({"load_s": round(t_load, 3), "masks_loaded": masks_before,
                      "new_masks": new_masks, "decode_s": round(elapsed, 3), "texts": texts}))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schema", default=str(HERE / "schemas" / "product.json"))
    ap.add_argument("--tokenizer", default=None,
                    help="tokenizer dir or id (default: SmolLM2's, from dotjson.tools.testing)")
    ap.add_argument("--out", default=None, help="where to save the index (default: a temp dir)")
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--load", default=None, help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args(argv)
    if args.load:
        return load_and_replay(args.load, args.rows, args.seed)

    if args.tokenizer is None:
        from dotjson.tools.testing import smollm2_tokenizer_dir

        args.tokenizer = str(smollm2_tokenizer_dir())
    vocabulary = Vocabulary.from_pretrained(args.tokenizer)
    index = Index(Path(args.schema).read_text(), vocabulary)

    texts, cold = decode_with_dummy_logits(index, args.rows, args.seed)
    print(f"this process, fresh index: {args.rows} documents in {cold:.3f} s, "
          f"{index.n_states} states, {index.n_masks} masks computed")

    with tempfile.TemporaryDirectory() as tmp:
        path = args.out or str(Path(tmp) / "index")
        t0 = time.perf_counter()
        index.serialize_to_disk(path)
        size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
        print(f"saved to {path} in {time.perf_counter() - t0:.3f} s ({size / 1e6:.2f} MB)")

        # A NEW process (not a fork, nothing inherited) loads it and decodes the same documents.
        t0 = time.perf_counter()
        child = subprocess.run(
            [sys.executable, __file__, "--load", path, "--rows", str(args.rows),
             "--seed", str(args.seed)],
            capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t0
    report = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"new process: loaded {report['masks_loaded']} masks in {report['load_s']:.3f} s, "
          f"decoded the same {args.rows} documents in {report['decode_s']:.3f} s computing "
          f"{report['new_masks']} new masks (process wall time {wall:.1f} s)")
    if report["texts"] != texts:
        print("MISMATCH: the reloaded index decoded different documents")
        return 1
    if report["new_masks"] != 0:
        print("the reloaded index was not warm")
        return 1
    for t in texts:
        print(json.dumps(json.loads(t), ensure_ascii=False))
    print("the reloaded index is warm: every mask it needed came from the file")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
