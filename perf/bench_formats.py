"""The slowest mask of a new schema that uses a string ``format``, against llguidance's.

Issue 33: every new schema with ``format: date-time`` used to stall 175-440 ms in one mask
(the first one inside the string), because the mask key of that state (``clamp``) walked the
format's ~2,400-term language through a memo table whose hash sent ~20 consecutive terms to
one slot. This benchmark teacher-forces, in one process after ``dotjson.warmup()``, the four
schemas of the issue (``date-time`` beside one extra property each) and 20 more with ``date``,
``time``, ``date-time``, ``email``, ``uuid``, ``uri`` and ``ipv4`` strings, each a new
``Index`` (and a new llguidance grammar), on the Llama 3 vocabulary, and prints per schema the
slowest dotjson mask, the slowest llguidance mask on the same document, their ratio, and the
slowest dotjson mask over the memoized mask time (the same states asked again).

Targets (issue 33): the first schema's slowest mask <= 10x llguidance's slowest; the second and
later schemas' slowest <= 2x the memoized mask time. The last two columns: the slowest mask at a
position inside a string value (the format's language decides it: what a new schema shares with
the ones before it), and its ratio to the memoized mask.

Run ``python3 perf/bench_formats.py --help``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

VALUES = {
    "date-time": "2023-04-15T19:30:00Z",
    "date": "2023-04-15",
    "time": "19:30:00+02:00",
    "email": "jane.doe@example.com",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "uri": "https://www.example.com/a/b?c=d",
    "ipv4": "192.168.10.1",
}


def cases():
    """(name, schema, instance) of the benchmark, the issue's four schemas first."""
    out = []
    for k in range(4):
        schema = {"type": "object", "properties": {
            "when": {"type": "string", "format": "date-time"}, f"x{k}": {"type": "integer"}},
            "required": ["when"]}
        out.append((f"date-time+x{k}", schema, {"when": VALUES["date-time"]}))
    fmts = list(VALUES)
    for k in range(20):
        f1, f2 = fmts[k % len(fmts)], fmts[(k * 3 + 1) % len(fmts)]
        schema = {"type": "object", "properties": {
            f"a{k}": {"type": "string", "format": f1},
            f"b{k}": {"type": "string", "format": f2},
            f"n{k}": {"type": "integer"}}, "required": [f"a{k}", f"b{k}"]}
        out.append((f"{f1}+{f2}", schema, {f"a{k}": VALUES[f1], f"b{k}": VALUES[f2], f"n{k}": k}))
    return out


def _slowest(engine, schema, ids):
    """The slowest mask, in seconds, of ``engine`` teacher-forced through ``ids``."""
    return max(peers.mask_times(engine, schema, ids))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-peer", action="store_true", help="dotjson only (no llguidance column)")
    ap.add_argument("--cpu", action="store_true",
                    help="time masks by the thread's CPU time, not wall time (a loaded machine)")
    args = ap.parse_args(argv)
    if args.cpu:
        peers.CLOCK = time.thread_time
    tok, vocab, llg = peers.llama3_setup(args.no_peer)
    import dotjson
    from dotjson import Index

    t0 = time.perf_counter()
    dotjson.warmup()
    print(f"warmup {time.perf_counter() - t0:.1f} s")
    if llg is not None:  # the peer warmed up too (its first grammar pays its own set-up)
        _slowest(llg, {"type": "string", "format": "date-time"},
                 tok.encode('"2020-01-01T00:00:00Z"', add_special_tokens=False))
    print(f"{'schema':22} {'dotjson max ms':>14} {'llg max ms':>10} {'ratio':>7} "
          f"{'memo µs':>8} {'max/memo':>9} {'in value µs':>11} {'/memo':>6}")
    worst_later = worst_value = 0.0
    for i, (name, schema, inst) in enumerate(cases()):
        text = peers.compact(inst)
        ids = tok.encode(text, add_special_tokens=False)
        fresh, memo = peers.index_mask_times(Index(schema, vocab), ids)  # (teacher-forced)
        memo_s = sorted(memo)[len(memo) // 2]
        dmax = max(fresh)
        inside = _inside_values(tok, ids, text, inst)
        vmax = max((fresh[k] for k in inside), default=0.0)
        lmax = _slowest(llg, schema, ids) if llg is not None else float("nan")
        ratio = dmax / lmax if llg is not None else float("nan")
        if i:
            worst_later = max(worst_later, dmax / memo_s)
            worst_value = max(worst_value, vmax / memo_s)
        print(f"{name:22} {dmax * 1e3:14.2f} {lmax * 1e3:10.2f} {ratio:7.2f} "
              f"{memo_s * 1e6:8.1f} {dmax / memo_s:9.1f} {vmax * 1e6:11.1f} {vmax / memo_s:6.1f}")
    print(f"second and later schemas: slowest mask <= {worst_later:.1f}x the memoized mask; "
          f"slowest inside a format's value <= {worst_value:.1f}x")


def _inside_values(tok, ids, text, inst) -> list[int]:
    """The mask positions (0: before the first token) whose text so far ends inside one of the
    instance's string values (after its opening quote, up to its closing quote): the masks a
    format's language decides."""
    spans, at = [], 0
    for key, value in inst.items():
        if isinstance(value, str):
            lit = peers.compact(key) + ":" + peers.compact(value)
            start = text.index(lit, at) + len(peers.compact(key)) + 1
            spans.append((start + 1, start + len(peers.compact(value))))
            at = start
    out, pos = [], 0
    for k in range(len(ids) + 1):
        if k:
            pos = len(tok.decode(ids[:k]))
        if any(lo <= pos < hi for lo, hi in spans):
            out.append(k)
    return out


if __name__ == "__main__":
    main()
