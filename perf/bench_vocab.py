"""Vocabulary preparation time: from a loaded tokenizer to tries ready, and reloading a saved one.

On the real tokenizers of :mod:`dotjson.tools.testing` (Qwen2.5's 151,665 ids by default; ``--all``
adds Llama 3's 128,256 and SmolLM2's 49,152), after one warm-up pass (Numba kernels loaded from
their cache), times the median of ``--repeat`` runs of:

- ``tokenizer load``: ``AutoTokenizer.from_pretrained(dir)`` (transformers' own cost, for scale),
- ``token bytes``: ``Vocabulary.from_tokenizer(tok)`` (bytes of every id, EOS ids),
- ``tries``: the first ``vocabulary.tries_for(PLAIN_CLASS)`` (plain/special tries split by the JSON
  layer's plain class, plain bitset),
- ``prepare``: the sum of the two above -- tokenizer in hand to tries ready (target: well under 1 s),
  and ``prepare cpu``, its process CPU time (steadier than wall time on a shared machine),
- ``from_pretrained``: ``Vocabulary.from_pretrained(dir)`` plus its tries, end to end (it reads
  ``tokenizer.json`` with ``tokenizers`` directly, skipping transformers' slower load),
- ``serialize`` / ``deserialize``: ``serialize_to_disk`` and ``deserialize_from_disk`` (tries
  included, so a reload is ready to use), with the file size.

Run: ``python3 perf/bench_vocab.py [--all] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dotjson.jsonschema.jsonstr import PLAIN_CLASS  # noqa: E402
from dotjson.tools import testing  # noqa: E402
from dotjson.vocabulary import Vocabulary  # noqa: E402

TOKENIZERS = {
    "qwen2.5 (151k)": testing.qwen_tokenizer_dir,
    "llama3.1 (128k)": testing.llama3_tokenizer_dir,
    "smollm2 (49k)": testing.smollm2_tokenizer_dir,
}


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def bench_one(path, repeat: int) -> dict[str, float]:
    from transformers import AutoTokenizer

    t = {k: [] for k in ("tokenizer load", "token bytes", "tries", "prepare", "prepare cpu", "from_pretrained",
                         "serialize", "deserialize")}
    tok = AutoTokenizer.from_pretrained(str(path))
    Vocabulary.from_tokenizer(tok).tries_for(PLAIN_CLASS)  # warm-up: kernels compiled or loaded from cache
    size = 0
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "vocab.bin")
        for _ in range(repeat):
            t0 = time.perf_counter()
            tok = AutoTokenizer.from_pretrained(str(path))
            t1 = time.perf_counter()
            c1 = time.process_time()
            v = Vocabulary.from_tokenizer(tok)
            t2 = time.perf_counter()
            v.tries_for(PLAIN_CLASS)
            t3 = time.perf_counter()
            t["prepare cpu"].append(time.process_time() - c1)
            t["tokenizer load"].append(t1 - t0)
            t["token bytes"].append(t2 - t1)
            t["tries"].append(t3 - t2)
            t["prepare"].append(t3 - t1)

            t0 = time.perf_counter()
            Vocabulary.from_pretrained(path).tries_for(PLAIN_CLASS)
            t["from_pretrained"].append(time.perf_counter() - t0)

            t0 = time.perf_counter()
            v.serialize_to_disk(f)
            t1 = time.perf_counter()
            w = Vocabulary.deserialize_from_disk(f)
            w.tries_for(PLAIN_CLASS)
            t2 = time.perf_counter()
            t["serialize"].append(t1 - t0)
            t["deserialize"].append(t2 - t1)
            size = os.path.getsize(f)
            assert w.fingerprint == v.fingerprint
    out = {k: _median_ms(s) for k, s in t.items()}
    out["file MB"] = size / 1e6
    out["ids"] = v.max_token_id()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="also Llama 3 and SmolLM2")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    names = list(TOKENIZERS) if args.all else list(TOKENIZERS)[:1]
    rows = {name: bench_one(TOKENIZERS[name](), args.repeat) for name in names}
    cols = ["tokenizer load", "token bytes", "tries", "prepare", "prepare cpu", "from_pretrained", "serialize",
            "deserialize"]
    print(f"median of {args.repeat} runs, milliseconds (wall clock; 'prepare cpu' is process CPU time)")
    print(f"{'vocabulary':<17}" + "".join(f"{c:>16}" for c in cols) + f"{'file MB':>9}")
    for name, r in rows.items():
        print(f"{name:<17}" + "".join(f"{r[c]:>16.1f}" for c in cols) + f"{r['file MB']:>9.1f}")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")


if __name__ == "__main__":
    main()
