"""Masks inside ``pattern`` strings that count a class of bytes, on Llama 3, beside llguidance.

A string such as ``^[0-9A-Za-z]{8}-[0-9A-Za-z]{4}$`` is a new state at every character (the
count moves), and each of those states allows the tokens spelt with the class up to the count:
walked node by node, a position of a letters-and-digits class visited most of the plain trie's
top levels (~1-2 ms a mask on Llama 3). ``Masker._class_mask`` reads such a state off the
vocabulary's tables of the class (``trie.class_tables``) and walks only below the edges that
leave it (docs/ARCHITECTURE.md §3, "Counted classes at the root").

In one process after ``dotjson.warmup()``, for each pattern (shapes real schemas use: UUIDs,
API keys, currency and locale codes, IBANs, versions), a new index of ``{"value": <the
string>}`` teacher-forced through one document; per pattern the masks' total (the index's
construction excluded) and the slowest mask, for dotjson as it runs, dotjson with the shortcut
off (``_class_roots = False``: every such state's nodes walked, as before it), and llguidance.
The heads the process shares are emptied before each dotjson pass, so each computes every
state afresh; the default pass pays for building each class's tables (once per process and
vocabulary).

``--generation``: dotjson with the library's generation defaults (strings without a bound of
their own within 128 characters: a class under a counter, read as a chain), llguidance as it is.

Run ``python3 perf/bench_patterns.py [--no-peer] [--cpu] [--generation]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

#: (pattern, a string it matches)
PATTERNS = [
    ("^[0-9a-zA-Z]{8}-[0-9a-zA-Z]{4}-[0-9a-zA-Z]{4}-[0-9a-zA-Z]{4}-[0-9a-zA-Z]{12}$",
     "ab12CD34-1a2b-3c4d-5e6f-abcdef123456"),
    ("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
     "123e4567-e89b-12d3-a456-426614174000"),
    ("^[A-Za-z0-9]{32}$", "k3J9sLm2Qp8XzT4vW7yB1nR6cF0hG5dA"),
    ("^[A-Z]{3}$", "EUR"),
    ("^[a-z]{2}-[A-Z]{2}$", "en-US"),
    ("^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$", "DE44500105175407324931"),
    ("^[a-z]{3,12}_[a-z]{3,12}$", "order_status"),
    ("^v[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}$", "v1.12.0"),
    ("^[a-zA-Z0-9_-]+$", "release_notes-2024"),
    ("^[a-z0-9]+(?:-[a-z0-9]+)*$", "the-quick-brown-fox"),
]


def _schema(pattern: str) -> dict:
    return {"type": "object", "properties": {"value": {"type": "string", "pattern": pattern}},
            "required": ["value"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-peer", action="store_true", help="dotjson only")
    ap.add_argument("--cpu", action="store_true",
                    help="time masks by the thread's CPU time, not wall time (a loaded machine)")
    ap.add_argument("--generation", action="store_true",
                    help="dotjson with the generation defaults (bounded strings)")
    args = ap.parse_args(argv)
    if args.cpu:
        os.environ["BENCH_CPU_CLOCK"] = "1"
    import peers
    from bench_maskbench import _force

    from dotjson.automaton.heads import head_cache

    tok = peers.load_tokenizer("llama3")
    dj = peers.make_engine("dotjson", tok, generation=args.generation)
    ll = None if args.no_peer else peers.make_engine("llguidance", tok)
    print(f"Llama 3 vocabulary, {'thread CPU' if args.cpu else 'wall'} time; dotjson {dj.version} "
          f"({'generation defaults' if args.generation else 'close_objects=False'})"
          + ("" if ll is None else f", llguidance {ll.version}"))
    head = (f"{'pattern':44s} {'tokens':>6s} {'dotjson':>16s} {'walked':>16s}"
            + ("" if ll is None else f" {'llguidance':>16s} {'ratio':>7s}"))
    print(head + "\n" + " " * 52 + "total / slowest mask, ms" + ("" if ll is None else "  (total)"))
    tot = {"dotjson": 0.0, "walked": 0.0, "llguidance": 0.0}
    for pattern, value in PATTERNS:
        schema = _schema(pattern)
        ids = tok.encode(peers.compact({"value": value}), add_special_tokens=False)
        row = {}
        for name in ("walked", "dotjson"):
            head_cache().clear()
            c = dj.compile(schema)
            c.index._masker._class_roots = name == "dotjson"
            status, k, times = _force(c, ids)
            assert status == "ok", (pattern, status)
            row[name] = (sum(times) / 1e3, max(times) / 1e3)
        if ll is not None:
            status, k, times = _force(ll.compile(schema), ids)
            assert status == "ok", (pattern, status)
            row["llguidance"] = (sum(times) / 1e3, max(times) / 1e3)
        line = f"{pattern[:44]:44s} {len(ids):6d}"
        for name in ("dotjson", "walked") + (() if ll is None else ("llguidance",)):
            t, m = row[name]
            tot[name] += t
            line += f" {t:8.2f} / {m:5.2f}"
        if ll is not None:
            line += f" {row['dotjson'][0] / row['llguidance'][0]:6.2f}x"
        print(line)
    line = f"{'all':44s} {'':6s} {tot['dotjson']:8.2f}{'':8s} {tot['walked']:8.2f}{'':8s}"
    if ll is not None:
        line += f" {tot['llguidance']:8.2f}{'':8s} {tot['dotjson'] / tot['llguidance']:6.2f}x"
    print(line)
    print(f"dotjson / walked = {tot['dotjson'] / tot['walked']:.2f}x"
          + ("" if ll is None else f"; dotjson / llguidance = {tot['dotjson'] / tot['llguidance']:.2f}x, "
             f"walked / llguidance = {tot['walked'] / tot['llguidance']:.2f}x"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
