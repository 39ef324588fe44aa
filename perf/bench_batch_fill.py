"""A serving step's mask fill: 64 (guide, row) pairs into one int32 bitmask, dotjson's
``fill_next_token_bitmask`` vs llguidance's ``fill_next_token_bitmask_par`` (2 threads), on
memoized states, in the same run; also the first (fresh-state) fill of each.

64 requests over 8 schemas (8 rows each), every row teacher-forced to a different position of
a real document (Llama 3, 128k vocabulary). "Memoized": the fill has been run once at these
positions already (dotjson memoizes masks per state; llguidance keeps its lexer states and
caches warm). Prints medians and the ratio dotjson / llguidance.

    python perf/bench_batch_fill.py [--repeat 200] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                      "email": {"type": "string", "format": "email"}},
     "required": ["name", "age", "email"]},
    {"type": "array", "items": {"type": "number"}},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 10}}},
     "required": ["tags"]},
    {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"enum": ["x", "yy", "zzz"]},
                                      "c": {"type": ["integer", "null"]}}, "required": ["a", "b", "c"]},
    {"type": "object", "properties": {"point": {"type": "object", "properties": {"x": {"type": "number"},
                                                                                 "y": {"type": "number"}},
                                                "required": ["x", "y"]}}, "required": ["point"]},
    {"type": "object", "properties": {"date": {"type": "string", "format": "date"},
                                      "amount": {"type": "number", "minimum": 0}}, "required": ["date", "amount"]},
    {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {
        "id": {"type": "integer"}, "q": {"type": "integer", "minimum": 1}}, "required": ["id", "q"]}}},
     "required": ["items"]},
    {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
     "required": ["title", "body"]},
]
DOCS = [
    {"name": "Ada Lovelace", "age": 36, "email": "ada@example.com"},
    [1.5, -2, 3e4, 0.25, 7],
    {"tags": ["alpha", "beta", "gamma", "delta"]},
    {"a": True, "b": "zzz", "c": None},
    {"point": {"x": 1.25, "y": -3.5}},
    {"date": "2024-02-29", "amount": 12.5},
    {"items": [{"id": 1, "q": 2}, {"id": 7, "q": 1}]},
    {"title": "On computing", "body": "Numbers may be woven like flowers."},
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=int, default=64)
    args = ap.parse_args()

    import llguidance
    import llguidance.hf
    import llguidance.numpy as llnp
    from transformers import AutoTokenizer

    import dotjson
    from dotjson import Guide, Index, Vocabulary, fill_next_token_bitmask
    from dotjson.tools.testing import llama3_tokenizer_dir

    dotjson.warmup()
    tdir = str(llama3_tokenizer_dir())
    tok = AutoTokenizer.from_pretrained(tdir)
    vocab = Vocabulary.from_pretrained(tdir)
    width = vocab.max_token_id()
    lltok = llguidance.hf.from_tokenizer(tok, n_vocab=width, eos_token=vocab.eos_token_ids[0])
    executor = llguidance.LLExecutor(num_threads=args.threads)

    per = args.rows // len(SCHEMAS)
    pairs, matchers = [], []
    for schema, doc in zip(SCHEMAS, DOCS):
        ids = tok.encode(json.dumps(doc), add_special_tokens=False)
        index = Index(schema, vocab, close_objects=False)
        guide = Guide(index, batch_size=per)
        grm = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema))
        for r in range(per):
            k = (r * len(ids)) // per
            guide.accept_tokens(ids[:k], row=r)
            m = llguidance.LLMatcher(lltok, grm, log_level=0)
            assert m.consume_tokens(ids[:k]) and not m.is_error(), m.get_error()
            pairs.append((guide, r))
            matchers.append((m, len(matchers)))
    n = len(pairs)
    bm_d = np.zeros((n, (width + 31) // 32), dtype=np.int32)
    bm_l = llnp.allocate_token_bitmask(n, width)

    t0 = time.perf_counter()
    fill_next_token_bitmask(pairs, bm_d)
    first_d = time.perf_counter() - t0
    t0 = time.perf_counter()
    llnp.fill_next_token_bitmask_par(executor, matchers, bm_l)
    first_l = time.perf_counter() - t0
    # how often the two engines' masks coincide bit for bit (their languages differ in
    # whitespace and escapes, so this is information, not a check)
    same = int(sum(np.array_equal(bm_d[i], bm_l[i, : bm_d.shape[1]]) for i in range(n)))

    td, tl = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        fill_next_token_bitmask(pairs, bm_d)
        td.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        llnp.fill_next_token_bitmask_par(executor, matchers, bm_l)
        tl.append(time.perf_counter() - t0)
    md, ml = statistics.median(td), statistics.median(tl)
    print(f"{n} (guide, row) pairs, {len(SCHEMAS)} schemas, Llama 3 ({width} ids), llguidance "
          f"threads={args.threads}; identical masks on {same}/{n} rows")
    print(f"first fill (fresh states): dotjson {first_d * 1e3:.2f} ms, llguidance {first_l * 1e3:.2f} ms "
          f"(ratio {first_d / first_l:.2f}x)")
    print(f"memoized, median of {args.repeat}: dotjson {md * 1e6:.0f} us, llguidance {ml * 1e6:.0f} us, "
          f"dotjson / llguidance = {md / ml:.2f}x")


if __name__ == "__main__":
    main()
