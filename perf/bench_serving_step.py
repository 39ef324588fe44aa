"""A serving step over a batch of new schemas: dotjson's ``fill_next_token_bitmask`` against
llguidance's ``fill_next_token_bitmask_par`` (issue 24's second target).

``N`` requests, each a different MaskBench schema compiled fresh by each engine, are
teacher-forced in lock-step through one valid instance of their schema (Llama 3, 128k
vocabulary): at every step the masks of all requests still decoding are filled into one ``int32``
bitmask, as a server does before sampling, then each request takes its next token. Timed: the
fill calls only (compiling the schemas and advancing the states are left out for both engines),
summed over the steps. dotjson: ``Index(schema, vocabulary, close_objects=False,
property_order="any")`` (every valid instance is accepted), ``gc.freeze()`` after set-up as a
server does, fresh masks where ``dotjson.batch.FRESH_WORKERS`` says (the calling thread by
default: threads convoy on the GIL); llguidance: an ``LLExecutor`` with ``--threads`` threads
(default: every core). A request whose instance an engine refuses stops there in both. The
target: total ≤ 1× llguidance's.

    python perf/bench_serving_step.py [--requests 32,64] [--steps 200] [--threads 2]

On a machine without the MaskBench split (a GPU host lent for a few minutes), save the sample
where the data is and take it along: ``--save-jobs jobs.json`` writes each batch size's schemas
and token ids and stops; ``--jobs jobs.json`` runs on them instead of ``--data``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402
from bench_maskbench import CATEGORIES, DATA, load_sample  # noqa: E402


def _jobs(n, seed, data, tok):
    """At least ``n`` (id, schema, token ids) triples, one per schema with a valid instance."""
    limit = 2
    while True:
        out = []
        for row in load_sample(CATEGORIES, limit, seed, data=data):
            case = next((c for c in row.get("tests", []) if c.get("valid")), None)
            if case is not None:
                out.append((row["id"], row["schema"],
                            tok.encode(peers.compact(case["data"]), add_special_tokens=False)))
        if len(out) >= 2 * n or limit >= 64:
            return out
        limit *= 2


def _load_jobs(path, n):
    """The jobs ``--save-jobs`` wrote for batch size ``n``."""
    with open(path, encoding="utf-8") as f:
        saved = json.load(f)
    if str(n) not in saved:
        raise SystemExit(f"{path}: no jobs for {n} requests (saved: {', '.join(saved)})")
    return [(rid, schema, list(toks)) for rid, schema, toks in saved[str(n)]]


def run(n, args, tok, vocab, lltok):
    import llguidance
    import llguidance.numpy as llnp
    import numpy as np

    from dotjson import Guide, Index, fill_next_token_bitmask
    from dotjson.errors import DotjsonError

    jobs = _load_jobs(args.jobs, n) if args.jobs else _jobs(n, args.seed, args.data, tok)
    guides, matchers, ids = [], [], []
    for rid, schema, toks in jobs:
        if len(guides) == n:
            break
        try:
            g = Guide(Index(schema, vocab, close_objects=False, property_order="any"), batch_size=1)
        except DotjsonError:
            continue
        try:
            grm = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema))
            m = llguidance.LLMatcher(lltok, grm, log_level=0)
        except Exception:  # llguidance refuses the schema: neither engine takes it
            continue
        if m.is_error():
            continue
        guides.append(g)
        matchers.append(m)
        ids.append(toks[: args.steps])
    k = len(guides)
    width = vocab.max_token_id()
    bm_d = np.zeros((k, (width + 31) // 32), dtype=np.int32)
    bm_l = llnp.allocate_token_bitmask(k, width)
    executor = llguidance.LLExecutor(num_threads=args.threads)
    live = [True] * k
    td = tl = 0.0
    masks = 0
    gc.collect()
    gc.freeze()
    for step in range(args.steps):
        rows = [i for i in range(k) if live[i] and step < len(ids[i])]
        if not rows:
            break
        masks += len(rows)
        t0 = time.perf_counter()
        fill_next_token_bitmask([(guides[i], 0) for i in rows], bm_d, out_rows=rows)
        td += time.perf_counter() - t0
        t0 = time.perf_counter()
        llnp.fill_next_token_bitmask_par(executor, [(matchers[i], i) for i in rows], bm_l)
        tl += time.perf_counter() - t0
        for i in rows:
            t = ids[i][step]
            try:
                guides[i].accept_tokens([t])
            except DotjsonError:
                live[i] = False
            if not matchers[i].consume_token(t):
                live[i] = False
    gc.unfreeze()
    print(f"{k} requests ({k} schemas), {masks} masks over {step + 1} steps, llguidance on {args.threads} threads: "
          f"dotjson {td:.3f} s, llguidance {tl:.3f} s, dotjson / llguidance = {td / tl:.1f}x "
          f"({td / masks * 1e6:.0f} / {tl / masks * 1e6:.0f} us per mask)", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", default="32,64", help="batch sizes, comma-separated")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--save-jobs", default=None, metavar="PATH",
                    help="write each batch size's schemas and token ids here and stop")
    ap.add_argument("--jobs", default=None, metavar="PATH", help="run on jobs --save-jobs wrote")
    ap.add_argument("--fresh-workers", type=int, default=None,
                    help="dotjson.batch.FRESH_WORKERS for the run (threads computing fresh masks; "
                         "default: the library's, 0: the calling thread)")
    ap.add_argument("--switch-interval", type=float, default=0.0,
                    help="CPython's thread switch interval in seconds for the run "
                         "(sys.setswitchinterval; default: the interpreter's, 0.005)")
    args = ap.parse_args(argv)
    if args.switch_interval > 0:
        sys.setswitchinterval(args.switch_interval)
    sizes = [int(x) for x in args.requests.split(",")]
    if args.save_jobs:
        tok = peers.load_tokenizer("llama3")
        with open(args.save_jobs, "w", encoding="utf-8") as f:
            json.dump({str(n): _jobs(n, args.seed, args.data, tok) for n in sizes}, f)
        print(f"wrote the jobs of {', '.join(map(str, sizes))} requests to {args.save_jobs}")
        return

    import llguidance.hf

    import dotjson
    import dotjson.batch
    from dotjson import Vocabulary
    from dotjson.tools.testing import llama3_tokenizer_dir

    dotjson.warmup()
    if args.fresh_workers is not None:
        dotjson.batch.FRESH_WORKERS = args.fresh_workers
    tok = peers.load_tokenizer("llama3")
    vocab = Vocabulary.from_pretrained(llama3_tokenizer_dir())
    lltok = llguidance.hf.from_tokenizer(tok, n_vocab=vocab.max_token_id(), eos_token=vocab.eos_token_ids[0])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; dotjson's fresh masks: "
          f"{dotjson.batch.FRESH_WORKERS or 'the calling'} thread(s); switch interval "
          f"{sys.getswitchinterval() * 1e3:g} ms", flush=True)
    for n in sizes:
        run(n, args, tok, vocab, lltok)


if __name__ == "__main__":
    main()
