"""``uniqueItems`` over finite item sets (issue 29): compile, fresh masks and memory against the
universe's size, beside llguidance on the same schemas in the same run.

An array of distinct strings drawn from an ``enum`` of ``n`` values (``n`` = 9, 39 as in MaskBench
``JsonSchemaStore---jscsrc``, 64, 256, 1,024) is a rule family whose state is the set of values
used (:class:`dotjson.jsonschema.unique_sets.UniqueChoices`): a state's body is an alternation
over the values left. This teacher-forces one document of ``min(n, 50)`` distinct items through
``Index.mask`` (every mask a fresh state: a new set of values used at each item) on a new index,
in the every-valid configuration and the default one, and prints per universe: ``Index()`` time,
time to first mask, fresh masks (mean, p50, max) and how the process's memory grew (peak RSS,
and ``tracemalloc``'s peak of Python objects during the walk). llguidance compiles the same
schema without ``uniqueItems`` (it refuses the keyword: "Unimplemented keys"; the array of the
same items without the keyword is the nearest peer figure); the ratio is dotjson's over llguidance's.

Run ``python3 perf/bench_unique_sets.py`` (``--sizes 39,1024``, ``--items 50``). Llama 3 vocabulary,
one process after ``dotjson.warmup()``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}

_WORDS = ["require", "disallow", "validate", "space", "after", "before", "keywords", "curly", "braces", "quote",
          "marks", "line", "break", "operator", "comma", "trailing", "padding", "blocks", "dot", "notation"]


def values(n: int) -> list[str]:
    """``n`` distinct identifiers in the style of jscsrc's rule names (``requireSpaceAfterComma``)."""
    out = []
    k = 0
    while len(out) < n:
        a, b, c = _WORDS[k % 20], _WORDS[(k // 20) % 20], _WORDS[(k // 400) % 20]
        out.append(a + b.capitalize() + (c.capitalize() if k >= 400 else "") + (str(k // 8000) if k >= 8000 else ""))
        k += 1
    return out


def case(n: int, items: int):
    vs = values(n)
    schema = {"type": "object", "properties": {"rules": {"type": "array", "items": {"enum": vs},
                                                         "uniqueItems": True}}, "required": ["rules"]}
    # a document that visits values spread over the universe (every 7th, wrapping)
    step = 7 if n % 7 else 11
    doc = {"rules": [vs[(k * step) % n] for k in range(min(n, items))]}
    return schema, doc


def without_unique(schema):
    """The schema without ``uniqueItems`` (what llguidance compiles: it refuses the keyword)."""
    s = json.loads(json.dumps(schema))
    del s["properties"]["rules"]["uniqueItems"]
    return s


def _summary(ts):
    ms = [t * 1e3 for t in ts]
    return statistics.mean(ms), statistics.median(ms), max(ms)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="9,39,64,256,1024")
    ap.add_argument("--items", type=int, default=50)
    ap.add_argument("--no-peer", action="store_true")
    args = ap.parse_args(argv)
    tok, vocab, ll = peers.llama3_setup(args.no_peer)
    import dotjson
    from dotjson import Index

    dotjson.warmup()
    print(f"{'n':>5} {'config':12} {'items':>5} {'Index ms':>9} {'first ms':>9} {'fresh mean':>10} {'p50':>7} "
          f"{'max':>7} {'RSS+ MB':>8} {'py peak MB':>10} {'ll mean':>8} {'ll max':>7} {'ratio':>6}")
    for n in (int(x) for x in args.sizes.split(",")):
        schema, doc = case(n, args.items)
        text = json.dumps(doc, separators=(",", ":"))
        ids = tok.encode(text, add_special_tokens=False)
        llm = None
        if ll is not None:
            try:
                lt = peers.mask_times(ll, without_unique(schema), ids)
                llm = _summary(lt[1:])
            except Exception as e:  # noqa: BLE001 - a peer's refusal is a figure too
                llm = None
                print(f"  llguidance: {type(e).__name__}: {str(e)[:120]}")
        for label, kw in (("every-valid", EVERY_VALID), ("default", {})):
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            t0 = time.perf_counter()
            try:
                index = Index(schema, vocab, **kw)
            except Exception as e:  # noqa: BLE001 - a refusal is a figure
                print(f"{n:5d} {label:12} refused: {type(e).__name__}: {str(e)[:100]}")
                continue
            t_index = time.perf_counter() - t0
            try:
                fresh, _ = peers.index_mask_times(index, ids)
            except Exception as e:  # noqa: BLE001
                print(f"{n:5d} {label:12} masks refused: {type(e).__name__}: {str(e)[:100]}")
                continue
            # (memory apart, on another new index: tracemalloc slows Python several times)
            tracemalloc.start()
            peers.index_mask_times(Index(schema, vocab, **kw), ids)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
            mean, p50, mx = _summary(fresh[1:])
            ratio = f"{mean / llm[0]:6.1f}" if llm else "     -"
            llc = f"{llm[0]:8.2f} {llm[2]:7.2f}" if llm else f"{'-':>8} {'-':>7}"
            print(f"{n:5d} {label:12} {len(doc['rules']):5d} {t_index * 1e3:9.1f} {fresh[0] * 1e3:9.2f} "
                  f"{mean:10.2f} {p50:7.2f} {mx:7.2f} {rss:8.1f} {peak / 2**20:10.1f} {llc} {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
