"""Masking throughput: dotjson's LogitsProcessor against a memory copy, llguidance and XGrammar.

For each batch size x allowed-fraction, on the same float32 buffer of ``batch x vocab`` logits
and the same packed bitsets, times (median of repeats, after warm-up calls):

- ``memcpy``: ``np.copyto`` of a buffer of the same size (the bandwidth yardstick),
- ``dotjson`` on a NumPy array and on a CPU torch tensor,
- ``llguidance.numpy.apply_token_bitmask_inplace`` and ``llguidance.torch.apply_token_bitmask_inplace``,
- ``xgrammar.apply_token_bitmask_inplace`` (CPU torch tensors),

and prints a table with the ratios ours / memcpy and peer / ours (how many times faster we are).
Peers that are not installed, or fail, are reported as ``n/a``.

Run: ``python3 perf/bench_mask.py`` (about a minute; ``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dotjson.processor import LogitsProcessor  # noqa: E402
from dotjson.tokenset import BatchedTokenSet  # noqa: E402


class _Vocab:
    def __init__(self, n):
        self.n = n

    def max_token_id(self):
        return self.n


class _Guide:
    def __init__(self, n, batch):
        self.vocabulary = _Vocab(n)
        self.batch_size = batch


def make_bits(rng, batch, vocab, frac):
    """Packed bitsets with each token allowed independently with probability ``frac``.

    Independent bits are the hard case for a masking kernel (every 32-token word is mixed, so
    no word can be skipped or filled whole); real grammar masks come in long runs and are easier.
    """
    allowed = rng.random((batch, vocab)) < frac
    padded = np.zeros((batch, (vocab + 31) // 32 * 32), dtype=bool)
    padded[:, :vocab] = allowed
    bits = np.packbits(padded, axis=1, bitorder="little").view("<u4").astype(np.uint32)
    return bits, allowed.mean()


def timeit(fn, repeats, min_time, warmup=3, stats=None):
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < repeats or (time.perf_counter() - start < min_time and len(times) < 10 * repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= 3 and time.perf_counter() - start > 20 * min_time:
            break  # a very slow peer: three samples are enough
    if stats is not None:
        stats["min"] = min(times)
    return statistics.median(times)


def peers(torch):
    """name -> factory(logits_np, logits_t, bits_np) -> zero-argument callable, or an error string."""
    out = {}
    try:
        import llguidance.numpy as lln

        out["llguidance.numpy"] = lambda a, t, b: (
            lambda m=b.view(np.int32): lln.apply_token_bitmask_inplace(a, m)
        )
    except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
        out["llguidance.numpy"] = f"n/a ({type(e).__name__})"
    if torch is not None:
        try:
            import llguidance.torch as llt

            out["llguidance.torch"] = lambda a, t, b: (
                lambda m=torch.from_numpy(b.view(np.int32)): llt.apply_token_bitmask_inplace(t, m)
            )
        except Exception as e:  # noqa: BLE001
            out["llguidance.torch"] = f"n/a ({type(e).__name__})"
        try:
            import xgrammar

            out["xgrammar"] = lambda a, t, b: (
                lambda m=torch.from_numpy(b.view(np.int32)): xgrammar.apply_token_bitmask_inplace(t, m)
            )
        except Exception as e:  # noqa: BLE001
            out["xgrammar"] = f"n/a ({type(e).__name__})"
    return out


def measure(vocab, batches=(1, 8, 32), fracs=(0.01, 0.5, 0.99), repeats=30, min_time=0.2,
            with_peers=True, torch=None):
    """Time masking ``batch x vocab`` float32 logits for every batch size and allowed fraction.

    Yields one dict per (batch, fraction): ``memcpy_s`` (a copy of the same buffer), ``ours_s``
    and ``ours_min_s`` (dotjson on a NumPy array: median and best), ``ours_torch_s`` (on a CPU
    torch tensor, None without torch) and ``peers`` (name -> median seconds, or a string saying
    why not). Used by ``main`` and the speed notebook.
    """
    peer_fns = peers(torch) if with_peers else {}
    rng = np.random.default_rng(0)
    for batch in batches:
        proc = LogitsProcessor(_Guide(vocab, batch))
        for frac in fracs:
            bits, actual = make_bits(rng, batch, vocab, frac)
            ts = BatchedTokenSet(bits, vocab)
            src = rng.standard_normal((batch, vocab)).astype(np.float32)
            dst = np.empty_like(src)
            logits = src.copy()
            t_copy = timeit(lambda: np.copyto(dst, src), repeats, min_time)
            st = {}
            t_ours = timeit(lambda: proc(logits, ts), repeats, min_time, stats=st)
            t_torch = None
            if torch is not None:
                lt = torch.from_numpy(src.copy())
                t_torch = timeit(lambda: proc(lt, ts), repeats, min_time)
            res = {}
            for name, factory in peer_fns.items():
                if isinstance(factory, str):
                    res[name] = factory
                    continue
                a = src.copy()
                t = torch.from_numpy(src.copy()) if torch is not None else None
                try:
                    res[name] = timeit(factory(a, t, bits), max(3, repeats // 5), min_time)
                except Exception as e:  # noqa: BLE001 - report and go on
                    res[name] = f"n/a ({type(e).__name__}: {str(e)[:40]})"
            yield {"vocab": vocab, "batch": batch, "frac": frac, "allowed": float(actual),
                   "memcpy_s": t_copy, "ours_s": t_ours, "ours_min_s": st["min"],
                   "ours_torch_s": t_torch, "peers": res}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=128_256)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--fracs", type=float, nargs="+", default=[0.01, 0.5, 0.99])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per measurement, at least")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="Numba and torch threads (default: all cores)")
    ap.add_argument("--quick", action="store_true", help="batch 1 and 8, one fraction, few repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.batches, args.fracs, args.repeats, args.min_time = [1, 8], [0.5], 5, 0.02

    import numba

    threads = args.threads or numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(threads)
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        torch = None

    print(
        f"# mask {args.vocab}-token float32 logits in place; median of >= {args.repeats} runs; "
        f"numba threads={numba.get_num_threads()}, torch threads="
        f"{torch.get_num_threads() if torch is not None else 'n/a'}, cpus={os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    header = False
    worst = 0.0
    for r in measure(args.vocab, args.batches, args.fracs, args.repeats, args.min_time,
                     not args.no_peers, torch):
        if not header:
            cols = ["batch", "allowed", "memcpy us", "ours np us (min)", "ours/memcpy",
                    "ours torch us"] + [f"{name} us (x ours)" for name in r["peers"]]
            print(" | ".join(cols))
            print(" | ".join("---" for _ in cols))
            header = True
        if r["batch"] == 32:
            worst = max(worst, r["ours_s"] / r["memcpy_s"])
        row = [str(r["batch"]), f"{r['allowed']:.1%}", f"{r['memcpy_s'] * 1e6:.0f}",
               f"{r['ours_s'] * 1e6:.0f} ({r['ours_min_s'] * 1e6:.0f})",
               f"{r['ours_s'] / r['memcpy_s']:.2f}",
               "n/a" if r["ours_torch_s"] is None else f"{r['ours_torch_s'] * 1e6:.0f}"]
        for name, t_peer in r["peers"].items():
            row.append(t_peer if isinstance(t_peer, str)
                       else f"{t_peer * 1e6:.0f} ({t_peer / r['ours_s']:.1f}x)")
        print(" | ".join(row), flush=True)
    if worst:
        print(f"# worst ours/memcpy at batch 32: {worst:.2f} (target <= 1.5)")
    import dotjson.processor as P

    serial, parallel = P._CHOOSER.cost
    if serial is not None and parallel is not None:
        print(
            f"# driver for buffers >= {P.PARALLEL_MIN_BYTES >> 10} KiB (PARALLEL={P.PARALLEL!r}): measured "
            f"serial {serial * 1e3:.1f} ps/byte, parallel {parallel * 1e3:.1f} ps/byte -> "
            f"{'parallel' if parallel < serial else 'serial'}"
        )


if __name__ == "__main__":
    main()
