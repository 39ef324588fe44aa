"""Arrays of distinct strings, numbers, objects, arrays and mixed values (``uniqueItems``, issue
29): the cost of exactness per token, beside the same schema without the keyword and beside
llguidance in the same run. (Strings: :mod:`dotjson.jsonschema.unique_strings`; numbers:
:mod:`dotjson.jsonschema.unique_number_masks`; the others: :mod:`dotjson.jsonschema.unique_any`.)

A new index per document (every mask fresh), the default configuration, Llama 3, one process
after ``dotjson.warmup()``, thread CPU. Per case: ``Index()`` time; the document's token masks
(``Index.mask``: sum, mean, max) and token advances (``Index.next_state``: sum); the same
document on the same schema without ``uniqueItems`` (dotjson, masks + advances); llguidance on
that schema without the keyword (it refuses it: "Unimplemented keys"; XGrammar ignores it and
may repeat an item), its mask after each token (``peers.mask_times``), mean and max; and the
ratios of dotjson's mean mask, and of its mean mask + advance, with the keyword, to llguidance's
mean mask. No peer enforces the keyword: the ratios are the price of an exact ``uniqueItems``
against an engine that does not check it.

Run ``python3 perf/bench_unique_strings.py`` (``--no-peer``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

CLOCK = time.thread_time

_WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
          "upsilon phi chi psi omega").split()


def _obj(name, sub):
    return {"type": "object", "properties": {"title": {"type": "string"}, name: sub}, "required": ["title", name]}


def cases():
    """(name, schema, document)."""
    arr = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    return [
        ("tags x12", _obj("tags", arr), {"title": "A post", "tags": _WORDS[:12]}),
        ("tags x16 (the generation bound)", _obj("tags", arr),
         {"title": "A post", "tags": [w + " " + str(i) for i, w in enumerate(_WORDS[:16])]}),
        ("keywords maxLength 20, minItems 2",
         _obj("keywords", {"type": "array", "minItems": 2, "uniqueItems": True,
                           "items": {"type": "string", "maxLength": 20}}),
         {"title": "pkg", "keywords": ["json", "schema", "decoding", "llm", "grammar", "tokens"]}),
        ("slugs pattern",
         _obj("slugs", {"type": "array", "uniqueItems": True, "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"}}),
         {"title": "x", "slugs": ["getting-started", "install", "api-reference", "faq2", "changelog"]}),
        ("emails format",
         _obj("to", {"type": "array", "uniqueItems": True, "items": {"type": "string", "format": "email"}}),
         {"title": "mail", "to": ["jane@example.com", "joe@example.org", "ops@example.net"]}),
        # objects (closed by the default configuration), arrays, mixed values
        ("records x6 (objects)",
         _obj("people", {"type": "array", "uniqueItems": True, "items": {"type": "object", "properties": {
             "name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}}),
         {"title": "team", "people": [{"name": n, "age": a} for n, a in
                                      (("Ann", 31), ("Bob", 31), ("Ann", 32), ("Cy", 7), ("Bob", 40), ("Dee", 31))]}),
        ("points x8 (arrays)",
         _obj("points", {"type": "array", "uniqueItems": True, "items": {
             "type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}}),
         {"title": "path", "points": [[0, 0], [0, 1], [1, 0], [1, 1], [10, 0], [0, 10], [2, 3], [3, 2]]}),
        # numbers (:mod:`dotjson.jsonschema.unique_number_masks`)
        ("ids x16 (5-digit integers)",
         _obj("ids", {"type": "array", "uniqueItems": True, "items": {"type": "integer"}}),
         {"title": "batch", "ids": [10007 + 7919 * i % 89989 for i in range(16)]}),
        ("scores x12 (numbers 0..1)",
         _obj("scores", {"type": "array", "uniqueItems": True, "items": {"type": "number", "minimum": 0, "maximum": 1}}),
         {"title": "run", "scores": [0.5, 0.25, 0.75, 0.125, 1, 0, 0.33, 0.66, 0.9, 0.1, 0.05, 0.95]}),
        ("mixed x10 (strings, numbers, booleans)",
         _obj("values", {"type": "array", "uniqueItems": True, "items": {"type": ["string", "integer", "boolean"]}}),
         {"title": "row", "values": ["a", 1, True, "b", 2, False, "ab", 10, 12, "1"]}),
    ]


def without_unique(schema):
    s = json.loads(json.dumps(schema))
    for sub in s["properties"].values():
        sub.pop("uniqueItems", None)
    return s


def run_dotjson(schema, vocab, ids):
    """(Index s, [mask s], [advance s]) of a new index teacher-forced through ``ids``."""
    from dotjson import Index

    t0 = CLOCK()
    index = Index(schema, vocab)
    t_index = CLOCK() - t0
    s = index.initial_state
    masks, advances = [], []
    for t in ids:
        t0 = CLOCK()
        m = index.mask(s)
        t1 = CLOCK()
        s = index.next_state(s, t)
        t2 = CLOCK()
        if not (m[t >> 5] >> (t & 31) & 1) or s < 0:
            raise RuntimeError(f"dotjson refused token {t}")
        masks.append(t1 - t0)
        advances.append(t2 - t1)
    return t_index, masks, advances


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-peer", action="store_true")
    args = ap.parse_args(argv)
    tok, vocab, ll = peers.llama3_setup(args.no_peer)
    import dotjson

    dotjson.warmup()
    print(f"{'case':34} {'tok':>4} {'Index ms':>8} {'mask sum':>9} {'mean':>6} {'max':>6} {'adv sum':>8} "
          f"{'w/o kw ms':>9} {'ll mean':>8} {'ll max':>7} {'mask x':>7} {'+adv x':>7}   (ms; x: dotjson's mean "
          "over llguidance's mean mask, without the keyword)")
    for name, schema, doc in cases():
        ids = tok.encode(json.dumps(doc), add_special_tokens=False)
        t_index, masks, adv = run_dotjson(schema, vocab, ids)
        _, m0, a0 = run_dotjson(without_unique(schema), vocab, ids)
        llc, ratio = f"{'-':>8} {'-':>7}", f"{'-':>7} {'-':>7}"
        if ll is not None:
            lt = peers.mask_times(ll, without_unique(schema), ids)[1:]
            per = [m + a for m, a in zip(masks[1:], adv)]
            lm = statistics.mean(lt)
            llc = f"{lm * 1e3:8.3f} {max(lt) * 1e3:7.2f}"
            ratio = f"{statistics.mean(masks[1:]) / lm:7.0f} {statistics.mean(per) / lm:7.0f}"
        print(f"{name:34} {len(ids):4d} {t_index * 1e3:8.2f} {sum(masks) * 1e3:9.1f} "
              f"{statistics.mean(masks) * 1e3:6.2f} {max(masks) * 1e3:6.2f} {sum(adv) * 1e3:8.1f} "
              f"{(sum(m0) + sum(a0)) * 1e3:9.1f} {llc} {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
