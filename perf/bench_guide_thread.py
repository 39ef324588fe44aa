"""Does ``Guide.get_next_tokensets`` run beside the model? Overlap of token sets and a forward pass.

A serving loop computes the next token sets in a thread while the main thread runs the model's
forward pass. That only pays if the token-set computation releases the GIL. For the valid
instances of a few MaskBench schemas (Llama 3 vocabulary; a FRESH index per measurement so every
state is computed, not looked up), each step is:

    fut = pool.submit(guide.get_next_tokensets, [tok])   # worker thread
    forward()                                            # main thread
    fut.result()

Measured step by step, back to back (the token set alone on one fresh index, the forward alone,
then both together with a second fresh index walking the same tokens), so load spikes hit the
three alike; ``T`` = summed over all steps, the median of ``--repeat`` runs:

* ``T_mask``: the token sets alone; ``T_fwd``: the forward passes alone; ``T_both``: together;
* **overlap** ``= (T_mask + T_fwd - T_both) / min(T_mask, T_fwd)``: 1 means the shorter one is
  fully hidden, 0 means the two ran one after the other.

Two kinds of "forward pass", each sized (``--fwd-us``, default: the mean token-set time) so the
two sides are comparable:

* ``numpy``: a float32 matmul (NumPy releases the GIL, as torch does): the realistic case;
* ``python``: a pure-Python loop that HOLDS the GIL: overlap here is the share of
  ``get_next_tokensets`` that runs without the GIL (the Numba kernels, ``nogil=True``).
  The control row runs the same GIL-holding loop in the thread too: it must show ~0.

With ``--torch-device cuda`` a third kind, ``torch``: one forward pass of a Llama-shaped decoder
with random weights (transformers' ``LlamaForCausalLM``, bfloat16, the vocabulary's width,
``--torch-layers`` layers of width ``--torch-hidden``, a 32-token input) on that device, ending
with the logits copied to the host, as a generation loop does: kernel launches hold the GIL, the
wait for the GPU does not. Its length is the model's, not calibrated.

BLAS is pinned to one thread, so the two sides need two cores; this machine has 2 shared ones, so
the numbers are noisy (run twice).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402  (first: pins BLAS to one thread before NumPy loads)

import numpy as np  # noqa: E402

from bench_maskbench import load_sample  # noqa: E402


def _python_work(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i & 7
    return s


def _torch_forward(args, n_vocab: int):
    """``fwd(k)``: ``k`` forward passes of a random Llama-shaped decoder on ``args.torch_device``,
    the last position's logits copied to the host after each (see the module docstring)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    h = args.torch_hidden
    cfg = LlamaConfig(vocab_size=n_vocab, hidden_size=h, intermediate_size=4 * h,
                      num_hidden_layers=args.torch_layers, num_attention_heads=max(1, h // 128),
                      num_key_value_heads=max(1, h // 512))
    torch.manual_seed(0)
    with torch.device(args.torch_device):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(0, min(n_vocab, 100_000), (1, 32), device=args.torch_device)

    def fwd(k):
        with torch.inference_mode():
            for _ in range(k):
                model(ids).logits[0, -1].float().cpu()

    for _ in range(3):
        fwd(1)
    t = time.perf_counter()
    fwd(10)
    print(f"torch forward on {args.torch_device}: {(time.perf_counter() - t) / 10 * 1e6:.0f} µs "
          f"({args.torch_layers} layers, hidden {h}, vocabulary {n_vocab})")
    return fwd


def calibrate(fn, target_s: float, lo: int = 1) -> int:
    """The repeat count ``k`` for which ``fn(k)`` takes about ``target_s``."""
    for _ in range(3):
        fn(lo)  # warm-up: BLAS initialisation, page faults
    k = lo
    while True:
        t = time.perf_counter()
        fn(k)
        dt = time.perf_counter() - t
        if dt >= target_s / 4 or k > 1 << 26:
            return max(1, int(k * target_s / max(dt, 1e-9)))
        k *= 2


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--category", default="Github_medium")
    ap.add_argument("--schemas", type=int, default=6, help="schemas with valid instances to use")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fwd-us", type=float, default=0.0,
                    help="forward-pass length per step in µs (default: the mean token-set time)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each measurement; the median is printed (default 1)")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--data", default=None, help="MaskBench folder (default ../shared/data/maskbench)")
    ap.add_argument("--torch-device", default=None,
                    help="also a model's forward pass on this torch device (e.g. cuda)")
    ap.add_argument("--torch-layers", type=int, default=16)
    ap.add_argument("--torch-hidden", type=int, default=2048)
    ap.add_argument("--switch-interval", type=float, default=0.0,
                    help="CPython's thread switch interval in seconds for the run "
                         "(sys.setswitchinterval; default: the interpreter's, 0.005)")
    args = ap.parse_args(argv)
    if args.switch_interval > 0:
        sys.setswitchinterval(args.switch_interval)
    print(f"switch interval {sys.getswitchinterval() * 1e3:g} ms")


    from dotjson import Guide, Index, Vocabulary

    tok = peers.load_tokenizer(args.tokenizer)
    vocab = Vocabulary.from_tokenizer(tok)
    rows = (load_sample([args.category], 0, args.seed, data=args.data) if args.data
            else load_sample([args.category], 0, args.seed))
    import random

    random.Random(args.seed).shuffle(rows)
    jobs = []  # (schema, token ids)
    for row in rows:
        valid = [t["data"] for t in row["tests"] if t["valid"]]
        if not valid:
            continue
        try:
            Index(row["schema"], vocab, close_objects=False)
        except Exception:  # noqa: BLE001 - unsupported schemas are not this benchmark's topic
            continue
        for v in valid:
            jobs.append((row["schema"], tok.encode(peers.compact(v), add_special_tokens=False)))
        if len({id(s) for s, _ in jobs}) >= args.schemas:
            break
    n_steps = sum(len(ids) for _, ids in jobs)
    print(f"{len({id(s) for s, _ in jobs})} schemas, {len(jobs)} instances, {n_steps} steps "
          f"({args.category}, seed {args.seed})")

    def mask_alone():
        """Summed time of get_next_tokensets over all steps, fresh indexes."""
        total = 0.0
        for schema, ids in jobs:
            g = Guide(Index(schema, vocab, close_objects=False))
            g.get_start_tokensets()
            for t in ids:
                s = time.perf_counter()
                g.get_next_tokensets([t])
                total += time.perf_counter() - s
        return total

    mask_alone()  # warm-up: JIT, grammar loading
    t_mask = mask_alone()
    step_s = args.fwd_us * 1e-6 if args.fwd_us > 0 else t_mask / n_steps
    print(f"token sets alone: {t_mask * 1e3:.1f} ms ({t_mask / n_steps * 1e6:.0f} µs per step); "
          f"forward pass per step: {step_s * 1e6:.0f} µs")

    # one unit: a (16 x 512) @ (512 x 512) float32 product, repeated k times per step
    a = np.random.default_rng(0).standard_normal((16, 512), dtype=np.float32)
    w = np.random.default_rng(1).standard_normal((512, 512), dtype=np.float32)

    def numpy_fwd(k):
        for _ in range(k):
            a @ w

    forwards = {
        "numpy": (numpy_fwd, calibrate(numpy_fwd, step_s)),
        "python": (_python_work, calibrate(_python_work, step_s, 64)),
    }
    if args.torch_device:
        forwards["torch"] = (_torch_forward(args, vocab.max_token_id()), 1)

    pool = ThreadPoolExecutor(max_workers=1)

    def interleaved(fwd, k, thread_fn=None):
        """Per step, back to back: the token set alone, the forward alone, both together.

        Two fresh indexes walk the same tokens in lockstep, so both sides compute every state
        for the first time; interleaving step by step lets load spikes on a shared host hit the
        three measurements alike.
        """
        tm = tf = tb = 0.0
        pc = time.perf_counter
        for schema, ids in jobs:
            ga, gb = Guide(Index(schema, vocab, close_objects=False)), Guide(Index(schema, vocab, close_objects=False))
            ga.get_start_tokensets()
            gb.get_start_tokensets()
            for t in ids:
                s = pc()
                if thread_fn is None:
                    ga.get_next_tokensets([t])
                else:
                    thread_fn()
                s1 = pc()
                fwd(k)
                s2 = pc()
                fut = pool.submit(gb.get_next_tokensets, [t]) if thread_fn is None \
                    else pool.submit(thread_fn)
                fwd(k)
                fut.result()
                s3 = pc()
                tm += s1 - s
                tf += s2 - s1
                tb += s3 - s2
        return tm, tf, tb

    print()
    print(f"| {'main thread':26s} | {'worker thread':22s} | {'T_mask':>9s} | {'T_fwd':>9s} | "
          f"{'T_both':>9s} | {'overlap':>7s} |")
    print("|" + "-" * 28 + "|" + "-" * 24 + "|" + "|".join("-" * 10 + ":" for _ in range(3))
          + "|" + "-" * 8 + ":|")

    def report(main_label, worker_label, tm, tf, tb):
        ov = (tm + tf - tb) / min(tm, tf)
        print(f"| {main_label:26s} | {worker_label:22s} | {tm * 1e3:7.1f}ms | {tf * 1e3:7.1f}ms | "
              f"{tb * 1e3:7.1f}ms | {ov:7.2f} |")
        return ov

    def med3(*a):
        runs = [interleaved(*a) for _ in range(args.repeat)]
        return [sorted(r[i] for r in runs)[len(runs) // 2] for i in range(3)]

    out = {}
    for name, (fwd, k) in forwards.items():
        out[name] = report(f"{name} forward", "get_next_tokensets", *med3(fwd, k))
    # control: GIL-holding work in both threads cannot overlap
    fwd, k = forwards["python"]

    def ctl():
        _python_work(k)

    out["control"] = report("python forward", "python loop (control)", *med3(fwd, k, ctl))
    pool.shutdown()
    print(f"\n(os.cpu_count() = {os.cpu_count()}; overlap 1 = fully hidden, 0 = serialized)")
    return out


if __name__ == "__main__":
    main()
