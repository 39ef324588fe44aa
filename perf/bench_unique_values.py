"""Checking documents with ``uniqueItems`` over any values (issue 29), against the same check
without the keyword, and what a token mask inside such an array does.

``uniqueItems`` over strings, objects, arrays or mixed items is a rule family over bytes
(:class:`dotjson.jsonschema.unique.UniqueValues`, every-valid configuration only): a rule per byte
of an item. ``index.check`` / ``index.accepts`` read a document byte by byte, so they make one
rule per byte; a token mask inside the array walks every token an item may hold, a rule per byte
of each, and is refused (a ``LimitExceededError``) once it has made ``MAX_MASK_ITEM_TEXTS`` of
them. This prints, per document, the time of ``index.check`` on a new index with and without
``uniqueItems`` (µs per byte, and the ratio), and the time a token mask inside the array takes to
be refused. Llama 3 vocabulary, one process after ``dotjson.warmup()``.

Run ``python3 perf/bench_unique_values.py``.
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}


def _obj(name, sub):
    return {"type": "object", "properties": {name: sub}, "required": [name]}


CASES = [
    ("strings", _obj("tags", {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
     {"tags": [f"tag number {i}" for i in range(20)]}),
    ("objects", _obj("pts", {"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}}),
     {"pts": [{"x": i, "y": i * i} for i in range(20)]}),
    ("any values", _obj("xs", {"type": "array", "uniqueItems": True}),
     {"xs": [1, "1", [1], {"a": 1}, None, True, 2.5, "a longer string item", {"b": [1, 2, {"c": "d"}]}]}),
]


def _without(schema):
    s = copy.deepcopy(schema)
    for sub in s["properties"].values():
        sub.pop("uniqueItems", None)
    return s


def main(argv=None) -> int:
    tok, vocab, _ = peers.llama3_setup(True)
    import dotjson
    from dotjson import Guide, Index
    from dotjson.errors import LimitExceededError

    dotjson.warmup()
    print(f"{'document':12} {'bytes':>6} {'check ms':>9} {'µs/byte':>8} {'w/o ms':>8} {'ratio':>6} {'mask inside':>22}")
    for name, schema, inst in CASES:
        text = json.dumps(inst)
        times = []
        for s in (schema, _without(schema)):
            index = Index(s, vocab, **EVERY_VALID)
            t0 = time.perf_counter()
            assert index.check(text).ok
            times.append(time.perf_counter() - t0)
        index = Index(schema, vocab, **EVERY_VALID)
        guide = Guide(index, batch_size=1)
        guide.get_start_tokensets()
        ids = tok.encode(text[: text.index("[") + 3], add_special_tokens=False)  # (inside the first item)
        t0 = time.perf_counter()
        try:
            for t in ids:
                guide.get_next_tokensets([t])
            mask = f"allowed in {time.perf_counter() - t0:.1f} s"
        except LimitExceededError:
            mask = f"refused after {time.perf_counter() - t0:.1f} s"
        n = len(text.encode())
        print(f"{name:12} {n:6d} {times[0] * 1e3:9.1f} {times[0] / n * 1e6:8.0f} {times[1] * 1e3:8.2f} "
              f"{times[0] / times[1]:6.0f} {mask:>22}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
