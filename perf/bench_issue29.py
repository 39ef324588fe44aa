"""Masks of the issue-29 constructions against llguidance's on the same documents.

Issue 29 made exact what was refused: ``multipleOf`` of any size (a number automaton built a
state at a time, decided in rationals) and ``uniqueItems`` over numbers (a rule family whose
state is the set of values read). Both are fresh states inside numbers: a mask from inside a
number walks every digit token (~1,100 on Llama 3), each a new family state. This benchmark
teacher-forces one document per schema, in one process after ``dotjson.warmup()``, on the Llama 3
vocabulary, and prints per schema dotjson's mean and slowest fresh mask, the same for the schema
without the keyword (what the document costs when the keyword is not enforced), and llguidance's
mean and slowest mask on the same tokens (where llguidance refuses the schema, on the schema
without the keyword, marked ``*``; whether it enforces a keyword it takes is not measured here).

Run ``python3 perf/bench_issue29.py``.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402


def _obj(name, sub):
    return {"type": "object", "properties": {name: sub}, "required": [name]}


CASES = [
    ("multipleOf 2^40", _obj("n", {"type": "integer", "multipleOf": 2 ** 40}), {"n": 2 ** 40 * 12345}),
    ("multipleOf 0.123456789", _obj("n", {"type": "number", "multipleOf": 0.123456789}), {"n": 123456789}),
    ("multipleOf 7*5^30 bounded", _obj("n", {"type": "number", "multipleOf": 7 * 5 ** 30, "maximum": 1e40,
                                             "minimum": -1e25}), {"n": 3 * 7 * 5 ** 30}),
    ("unique integers", _obj("ids", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
     {"ids": [12, 7, 1024, 3, 99, 100]}),
    ("unique 0..100 step 0.5", _obj("xs", {"type": "array", "items": {"type": "number", "minimum": 0,
                                                                      "maximum": 100, "multipleOf": 0.5},
                                           "uniqueItems": True}), {"xs": [0.5, 10, 99.5, 42]}),
]


def _without(schema):
    """The schema without the issue's keyword (``multipleOf``, ``uniqueItems``)."""
    s = copy.deepcopy(schema)
    for sub in s["properties"].values():
        sub.pop("multipleOf", None)
        sub.pop("uniqueItems", None)
    return s


def _dotjson(vocab, schema, ids):
    """Fresh masks (seconds) along ``ids`` of a new Index, and the median memoized mask."""
    from dotjson import Index

    fresh, memo = peers.index_mask_times(Index(schema, vocab), ids)
    return fresh, sorted(memo)[len(memo) // 2]


_peer = peers.mask_times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-peer", action="store_true", help="dotjson only")
    args = ap.parse_args(argv)
    tok, vocab, llg = peers.llama3_setup(args.no_peer)
    import dotjson

    dotjson.warmup()
    if llg is not None:
        _peer(llg, {"type": "integer"}, tok.encode("12", add_special_tokens=False))
    ms = 1e3
    print(f"{'schema':27} {'mean ms':>8} {'max ms':>8} {'w/o kw mean':>11} {'w/o max':>8} "
          f"{'llg mean':>8} {'llg max':>8} {'mean/llg':>8} {'max/llg':>8} {'memo µs':>8}")
    for name, schema, inst in CASES:
        ids = tok.encode(peers.compact(inst), add_special_tokens=False)
        fresh, memo = _dotjson(vocab, schema, ids)
        base, _ = _dotjson(vocab, _without(schema), ids)
        star = ""
        try:
            lt = _peer(llg, schema, ids) if llg is not None else [float("nan")]
        except peers.CompileFailed:  # refused by llguidance: its time without the keyword
            star = "*"
            try:
                lt = _peer(llg, _without(schema), ids)
            except peers.CompileFailed:  # (the bounds alone too)
                lt, star = [float("nan")], "**"
        mean, lmean = sum(fresh) / len(fresh), sum(lt) / len(lt)
        print(f"{name + star:27} {mean * ms:8.2f} {max(fresh) * ms:8.2f} {sum(base) / len(base) * ms:11.2f} "
              f"{max(base) * ms:8.2f} {lmean * ms:8.3f} {max(lt) * ms:8.3f} {mean / lmean:8.1f} "
              f"{max(fresh) / max(lt):8.1f} {memo * 1e6:8.1f}")
    print("* llguidance refuses the schema: its columns are the schema without the keyword; "
          "** it refuses that too")


if __name__ == "__main__":
    main()
