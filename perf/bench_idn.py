"""Masks for the IDN formats on Llama 3, beside their ASCII siblings (issue 29).

For ``{"type": "string", "format": F}`` with F in ``hostname``, ``idn-hostname``, ``email``,
``idn-email``, in one process after ``dotjson.warmup()`` (whose format warm-up builds every
registered format's language, so this first compile is timed apart, first): the time to build
the format's language (the IR, then an automaton over it, its states after one match), then per
document a new ``Index`` teacher-forced through the document's Llama 3 tokens: time to first
mask (``Index(...)`` + the first mask), the fresh masks of the tokens (median, max), the same
states' memoized masks, and the index's states; and llguidance's masks on the same tokens where
it takes the schema (its median and max, and the ratio of medians).

Run ``python3 perf/bench_idn.py`` (``--no-peer``: dotjson only).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

DOCS = {
    "hostname": ["www.example.com", "mail.dotjson-test.org"],
    "idn-hostname": ["www.example.com", "\uc2e4\ub840.\ud14c\uc2a4\ud2b8", "m\u00fcnchen.de",
                     "\u05d0\u05d1.\u05d2\u05d3", "\u4f8b\u3048.\u30c6\u30b9\u30c8"],
    "email": ["jane.doe@example.com"],
    "idn-email": ["jane.doe@example.com", "\u03b4\u03bf\u03ba\u03b9\u03bc\u03ae@m\u00fcnchen.de"],
}


def _first_compile(name: str) -> str:
    from dotjson import ir
    from dotjson.automaton import Automaton
    from dotjson.formats import format_to_ir

    from dotjson.formats import idn, rfc

    for mod in (idn, rfc):  # (every cached piece: the language is built from nothing)
        for f in vars(mod).values():
            if hasattr(f, "cache_clear"):
                f.cache_clear()
    format_to_ir.cache_clear()
    t0 = time.perf_counter()
    node = format_to_ir(name)
    t1 = time.perf_counter()
    auto = Automaton(ir.Grammar({"start": node}, "start"))
    auto.matches(DOCS[name][-1].encode())
    t2 = time.perf_counter()
    return f"IR {1e3 * (t1 - t0):7.1f} ms, automaton + one match {1e3 * (t2 - t1):7.1f} ms, {auto.n_states} states"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-peer", action="store_true", help="dotjson only (no llguidance column)")
    args = ap.parse_args(argv)
    tok, vocab, llg = peers.llama3_setup(args.no_peer)
    import dotjson
    from dotjson import Index

    t0 = time.perf_counter()
    dotjson.warmup()
    print(f"warmup {time.perf_counter() - t0:.1f} s")
    print("first compile of each format's language (decoded strings, its own automaton):")
    for name in DOCS:
        print(f"  {name:13} {_first_compile(name)}")
    print(f"{'format':13} {'document':24} {'toks':>4} {'TTFM ms':>8} {'fresh p50':>9} {'fresh max':>9} "
          f"{'memo µs':>7} {'states':>6} {'llg p50':>8} {'llg max':>8} {'p50 ratio':>9}")
    for name, docs in DOCS.items():
        schema = {"type": "string", "format": name}
        for doc in docs:
            ids = tok.encode(json.dumps(doc, ensure_ascii=False), add_special_tokens=False)
            t1 = time.perf_counter()
            index = Index(schema, vocab)
            index.mask(index.initial_state)
            ttfm = time.perf_counter() - t1
            fresh, memo = peers.index_mask_times(index, ids)
            p50 = sorted(fresh)[len(fresh) // 2]
            memo_s = sorted(memo)[len(memo) // 2]
            lp50 = lmax = float("nan")
            if llg is not None:
                try:
                    lt = peers.mask_times(llg, schema, ids)
                    lp50, lmax = sorted(lt)[len(lt) // 2], max(lt)
                except Exception as e:  # (a schema the peer refuses)
                    print(f"  llguidance: {type(e).__name__}: {str(e)[:80]}")
            print(f"{name:13} {ascii(doc)[1:-1][:24]:24} {len(ids):4d} {ttfm * 1e3:8.1f} {p50 * 1e3:9.2f} "
                  f"{max(fresh) * 1e3:9.2f} {memo_s * 1e6:7.1f} {index.n_states:6d} {lp50 * 1e3:8.2f} "
                  f"{lmax * 1e3:8.2f} {p50 / lp50:9.2f}")


if __name__ == "__main__":
    main()
