"""What calling the kernels from Python costs: the units a fresh mask calls, and a call's price.

Two measurements (Llama 3, the benchmark's engine configuration):

* ``--count``: every unit called from Python during the cold pass of ``bench_maskbench.py``'s
  sample (``perf/fresh_steps.py``'s workload, one round), with the arrays each call hands over
  (the packed tables count one each) and the calls per fresh mask;
* ``--cost`` (the default): the price of one call of ``compute_mask`` and ``key_state`` on a known
  state with nothing to walk (``compute_mask``'s phase set to done), handed the store, the walk
  tables and the stacks as tuples of arrays (the unit itself) and packed (its twin,
  ``compute_mask_packed``, as the masker calls it): the least of ``--repeat`` runs of
  ``--calls`` calls, in µs.

    python3 perf/kernel_calls.py            # the price of a call, both ways
    python3 perf/kernel_calls.py --count    # the calls a fresh mask makes
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def _n_arrays(a) -> int:
    if isinstance(a, np.ndarray):
        return 1
    if isinstance(a, tuple):
        return sum(_n_arrays(x) for x in a)
    return 0


def count(limit: int) -> None:
    """Units called from Python over the cold pass, per fresh mask."""
    import fresh_steps
    from dotjson._kernels import jit
    from dotjson.masks import Masker

    calls, arrays = collections.Counter(), collections.Counter()
    fresh = [0]
    # (every fresh mask asks the rule families first: one call each)
    real_call, real_mask = jit.Unit.__call__, Masker._family_mask
    on = [False]

    def spy(self, *args):
        if on[0]:
            calls[self.__name__] += 1
            arrays[self.__name__] += sum(_n_arrays(a) for a in args)
        return real_call(self, *args)

    def mask_spy(self, state):
        fresh[0] += on[0]
        return real_mask(self, state)

    jit.Unit.__call__, Masker._family_mask = spy, mask_spy
    try:
        ns = argparse.Namespace(tree=None, limit=limit, seed=0, data=None, rounds=1)
        fresh_steps.run(ns)  # (warm: kernels loaded, a vocabulary's tables built)
        on[0] = True
        fresh_steps.run(ns)
    finally:
        jit.Unit.__call__, Masker._family_mask = real_call, real_mask
    n = max(1, fresh[0])
    print(f"{fresh[0]} fresh masks; units called from Python:")
    for name, c in calls.most_common():
        print(f"  {name:24s} {c:7d} calls  {arrays[name] / c:5.1f} arrays a call  {c / n:5.2f} a fresh mask")
    print(f"  per fresh mask: {sum(calls.values()) / n:.2f} calls, {sum(arrays.values()) / n:.1f} arrays")


def cost(calls: int, repeat: int) -> None:
    """The price of a call of ``compute_mask`` and ``key_state``, tuples against packed."""
    import peers
    from dotjson._kernels import entries as E, walk as W
    from dotjson.automaton import keys
    from dotjson.masks import _WIDE_NODE

    tok = peers.load_tokenizer("llama3")
    eng = peers.make_engine("dotjson", tok)
    c = eng.compile({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    ix = c.index
    m, a = ix._masker, ix._auto
    s = a.walk_bytes(ix.initial_state, b'{"a":"xy')
    ix.mask(s)
    sc = m._walk_start()
    PW = m._walk_packed()
    big, big_bits, runs, len_row, len_bits, nchars, tchars, below = m._walk_tables
    pseq, plen = m._plain.seqs
    out = np.zeros(m._n_words, dtype=np.uint32)
    special, plain = m._trie_arrays

    def tuples():
        sc.ret[W.R_PHASE] = W.PH_DONE
        return W.compute_mask(a.store, s, special, plain, m._tries.plain_bits, big, big_bits, runs,
                              len_row, len_bits, m._special_mode, pseq, plen, _WIDE_NODE, nchars,
                              tchars, below, out, sc.st_node, sc.st_state, sc.st_edge, sc.ret)

    def packed():
        sc.ret[W.R_PHASE] = W.PH_DONE
        return E.compute_mask_packed(a.packed_store, s, PW, sc.packed, m._special_mode, _WIDE_NODE, out)

    limit = m._limit
    rows = (("compute_mask, tuples (49 arrays)", tuples),
            ("compute_mask, packed (4 arrays)", packed),
            ("key_state, the store's 17 arrays", lambda: keys.key_state(a.store, s, limit)),
            ("key_state, the store packed", lambda: keys.key_state_packed(a.packed_store, s, limit)))
    for label, f in rows:
        assert f() >= 0
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            for _ in range(calls):
                f()
            best = min(best, (time.perf_counter() - t) / calls * 1e6)
        print(f"{label:34s} {best:6.2f} µs a call")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", action="store_true", help="count the units a fresh mask calls")
    ap.add_argument("--limit", type=int, default=2, help="schemas per MaskBench category (--count)")
    ap.add_argument("--calls", type=int, default=20000, help="calls per timed run (--cost)")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs, the least kept (--cost)")
    args = ap.parse_args(argv)
    if args.count:
        count(args.limit)
    else:
        cost(args.calls, args.repeat)


if __name__ == "__main__":
    main()
