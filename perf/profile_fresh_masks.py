"""Where a fresh mask's time goes: trie walk against automaton expansion (thread CPU time).

For the first ``--schemas`` schemas of the ``bench_maskbench.py`` sample that have a valid
instance, a fresh :class:`dotjson.Index` (rule bodies compiled first) is teacher-forced through
the instance (Llama 3 tokenizer). At every state whose clamped mask key is new, the mask is
computed twice with the index's lock held: first by the path every caller takes (``_mask_row``:
the trie walk expanding the states it meets, or a shared mask a plain run reuses), then by a
whole walk of the tries over the (now computed) transitions. Printed per schema and in total:
fresh masks, new states, µs per fresh mask (first call), µs of walk alone (second call), and µs
of expansion per new state ((first − second) / new states).

Run ``python3 perf/profile_fresh_masks.py --help``.
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
from bench_maskbench import DATA, valid_instances  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=2, help="schemas per category in the sample")
    ap.add_argument("--schemas", type=int, default=12, help="schemas profiled")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bounds", default="generation", choices=("generation", "schema"),
                    help="Index(bounds=...): the generation defaults, or only the schema's bounds")
    ap.add_argument("--data", default=str(DATA))
    args = ap.parse_args(argv)

    from dotjson import Index, Vocabulary
    from dotjson.errors import DotjsonError, LimitExceededError
    from dotjson.tools.testing import llama3_tokenizer_dir

    tok = peers.load_tokenizer("llama3")
    vocab = Vocabulary.from_pretrained(llama3_tokenizer_dir())
    jobs = valid_instances(tok, args.limit, args.seed, data=args.data, first_only=True)
    warm = Index({"type": "object", "properties": {"a": {"type": "string"}}}, vocab)
    warm.mask(warm.initial_state)
    tot_first = tot_walk = 0.0
    tot_states = tot_masks = 0
    done = 0
    for name, schema, ids in jobs:
        if done >= args.schemas:
            break
        try:
            index = Index(schema, vocab, bounds=args.bounds)
        except DotjsonError:
            continue
        done += 1
        auto = index._auto
        auto.compile_rules(known_only=True)  # (not rules made on demand: no end to some)
        s = index.initial_state
        first = walk = 0.0
        n_masks = 0
        new = 0  # states the first computations built (the whole walks after them build more)
        over = None
        for t in ids:
            s = index.next_state(s, t)
            with index._lock:
                k = auto.key_state(s, index._limit)
                if auto.term_of(k) in index._masker._mask_of_key:
                    continue
                n1 = index.n_states
                c0 = time.thread_time()
                index._masker.row(s)  # the path every caller takes (memoized after)
                c1 = time.thread_time()
                new += index.n_states - n1
                try:
                    index._masker._compute_mask(k)
                except LimitExceededError as e:  # the whole walk of a long bounded string
                    over = e
                    break
                c2 = time.thread_time()
            first += c1 - c0
            walk += c2 - c1
            n_masks += 1
        if over is not None:  # (a whole walk's figures would leave that state out: none printed)
            print(f"{name[:32]:32} skipped: the whole walk of a state at step {n_masks + 1} went past "
                  f"the index's budget ({over})")
            continue
        print(f"{name[:32]:32} fresh masks {n_masks:5} new states {new:6} "
              f"first {first / max(n_masks, 1) * 1e6:8.1f} µs  walk alone "
              f"{walk / max(n_masks, 1) * 1e6:8.1f} µs  expansion "
              f"{(first - walk) / max(new, 1) * 1e6:6.2f} µs/state")
        tot_first += first
        tot_walk += walk
        tot_states += new
        tot_masks += n_masks
    print(f"total: {tot_masks} fresh masks, {tot_states / max(tot_masks, 1):.1f} new states per "
          f"mask; {tot_first / max(tot_masks, 1) * 1e6:.1f} µs per fresh mask, of which walk "
          f"{tot_walk / max(tot_masks, 1) * 1e6:.1f} µs; expansion "
          f"{(tot_first - tot_walk) / max(tot_states, 1) * 1e6:.2f} µs per new state")


if __name__ == "__main__":
    main()
