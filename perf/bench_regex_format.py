"""Masks of a ``format: "regex"`` string (issue 29) on the Llama 3 vocabulary, beside llguidance.

In one process after ``dotjson.warmup()``: a new ``Index`` per document of a schema whose one
property is a ``regex``-format string, teacher-forced through real patterns (taken from MaskBench
``pattern`` keywords); per document, the Index construction, the first mask (time to first mask),
the slowest and the median fresh mask inside the string, and the memoized mask (the same states
asked again). llguidance refuses ``format: "regex"`` ("Unknown format: regex"): its column is
the same documents with the format left out, as is dotjson's "no-fmt" column (the cost of the
format itself). ``--every-valid`` runs dotjson in the every-valid configuration (any order, open
objects, JSON whitespace); the default is the generation configuration.

Run ``python3 perf/bench_regex_format.py [--no-peer] [--every-valid]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

PATTERNS = [
    "^[a-zA-Z0-9_-]+$",
    "^(\\d{1,3}\\.){3}\\d{1,3}(/\\d{1,2})?$",
    "^[\\w.+-]+@[\\w-]+\\.[\\w.-]+$",
    "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
    "\\d+(?:\\.\\d+)?%",
    "^(?<y>\\d{4})-(\\d{2})$",
    "[\\u4e00-\\u9fa5]+|[а-яА-Я]+",
]


def _schema(fmt: bool):
    s = {"type": "string", "format": "regex"} if fmt else {"type": "string"}
    return {"type": "object", "properties": {"pattern": s}, "required": ["pattern"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-peer", action="store_true", help="dotjson only")
    ap.add_argument("--every-valid", action="store_true", help="dotjson in the every-valid configuration")
    args = ap.parse_args(argv)
    tok, vocab, llg = peers.llama3_setup(args.no_peer)
    import dotjson
    from dotjson import Index

    opts = dict(property_order="any", close_objects=False, whitespace="json") if args.every_valid else {}
    t0 = time.perf_counter()
    dotjson.warmup()
    print(f"warmup {time.perf_counter() - t0:.1f} s")
    if llg is not None:
        peers.mask_times(llg, _schema(False), tok.encode('{"pattern":"x"}', add_special_tokens=False))
    print(f"{'pattern':40} {'index ms':>8} {'TTFM ms':>8} {'max ms':>7} {'p50 µs':>7} {'memo µs':>7} "
          f"{'no-fmt p50 µs':>13} {'llg p50 µs':>10}")
    for i, p in enumerate(PATTERNS):
        ids = tok.encode(peers.compact({"pattern": p}), add_special_tokens=False)
        t0 = time.perf_counter()
        index = Index(_schema(True), vocab, **opts)
        build = time.perf_counter() - t0
        fresh, memo = peers.index_mask_times(index, ids)
        plain, _ = peers.index_mask_times(Index(_schema(False), vocab, **opts), ids)
        inner = fresh[1:]
        lp50 = statistics.median(peers.mask_times(llg, _schema(False), ids)[1:]) if llg is not None else float("nan")
        print(f"{p[:40]:40} {build * 1e3:8.1f} {fresh[0] * 1e3:8.2f} {max(inner) * 1e3:7.2f} "
              f"{statistics.median(inner) * 1e6:7.1f} {statistics.median(memo) * 1e6:7.1f} "
              f"{statistics.median(plain[1:]) * 1e6:13.1f} {lp50 * 1e6:10.1f}")


if __name__ == "__main__":
    main()
