"""Masking logits on a CUDA device: the Triton kernel (dotjson/_kernels/gpu.py) and the torch-ops
path, against the host reference.

Without a GPU the kernel still runs here, through Triton's interpreter on CPU tensors (its
logic: words, shifts, padding columns, strides); the tests marked ``cuda`` run where
``torch.cuda.is_available()`` (a GPU machine: ``python3 -m pytest tests/test_processor_cuda.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import dotjson.processor as P
from dotjson._kernels import gpu
from dotjson.processor import LogitsProcessor

from test_processor import FakeGuide, make_set, torch_reference

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

FLOATS = [torch.float32, torch.float16, torch.bfloat16]
# (batch, width, vocab): exact width, padded columns, a partial last word, one row
SHAPES = [(4, 1000, 1000), (3, 1300, 1000), (2, 70, 65), (1, 5000, 4999), (8, 128_256, 128_256)]


def _layouts(logits):
    """The same values in three layouts: contiguous, a column slice of a wider buffer (row
    stride larger than the width), and a transposed buffer (column stride larger than 1)."""
    b, w = logits.shape
    wide = torch.zeros(b, w + 9, dtype=logits.dtype, device=logits.device)
    wide[:, 4:4 + w] = logits
    tr = torch.zeros(w, b, dtype=logits.dtype, device=logits.device)
    tr.copy_(logits.t())
    return {"contiguous": logits.clone(), "column slice": wide[:, 4:4 + w], "transposed": tr.t()}


_INTERPRETED = """
import numpy as np, torch
from dotjson._kernels import gpu
from test_processor import make_set, torch_reference
from test_processor_cuda import FLOATS, SHAPES, _layouts
gpu.BLOCK = 256
assert gpu.kernel() is not None
for dtype in FLOATS:
    for batch, width, vocab in SHAPES[:4]:
        rng = np.random.default_rng(width)
        allowed, ts = make_set(rng, batch, vocab, 0.4)
        logits = torch.randn(batch, width).to(dtype)
        for value in (float("-inf"), -1e4):
            expected = torch_reference(logits, allowed, value)
            packed = torch.from_numpy(ts._bits.view(np.int32))
            for name, x in _layouts(logits).items():
                gpu.mask_rows(x, packed, vocab, value)
                assert torch.equal(x, expected), (dtype, batch, width, vocab, value, name)
print("checked")
"""


def test_kernel_logic_in_the_interpreter():
    # Triton's interpreter runs the kernel on CPU tensors; it must be chosen before Triton is
    # imported, hence a child process
    pytest.importorskip("triton")
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([here, os.path.dirname(here), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", _INTERPRETED], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and "checked" in r.stdout, r.stderr[-3000:]


def test_kernel_only_where_it_applies(monkeypatch):
    # CPU tensors, float64, integer dtypes and values float32 cannot hold take the other paths
    assert not gpu.available(torch.zeros(2, 3), float("-inf"))
    meta = torch.empty(2, 3, device="meta")
    assert not gpu.available(meta, float("-inf"))
    monkeypatch.setattr(gpu, "_STATE", {"kernel": object()})
    fake = type("T", (), {"device": torch.device("cpu"), "dtype": torch.float32})()
    fake.device = type("D", (), {"type": "cuda"})()
    assert gpu.available(fake, float("-inf")) and gpu.available(fake, -1e4)
    assert not gpu.available(fake, -1e300)  # not a float32
    fake.dtype = torch.float64
    assert not gpu.available(fake, float("-inf"))


@cuda
@pytest.mark.parametrize("kernel", ["auto", "torch"])
@pytest.mark.parametrize("dtype", FLOATS + [torch.float64])
@pytest.mark.parametrize("batch,width,vocab", SHAPES)
def test_cuda_masking_matches_the_host(monkeypatch, kernel, dtype, batch, width, vocab):
    monkeypatch.setattr(P, "DEVICE_KERNEL", kernel)
    rng = np.random.default_rng(batch * width)
    allowed, ts = make_set(rng, batch, vocab, 0.3)
    host = torch.randn(batch, width).to(dtype)
    expected = torch_reference(host, allowed, float("-inf"))
    for value in (float("-inf"), -1e4):
        want = expected if value == float("-inf") else torch_reference(host, allowed, value)
        for name, x in _layouts(host.cuda()).items():
            ptr = x.data_ptr()
            out = LogitsProcessor(FakeGuide(vocab, batch), value)(x, ts)
            assert out is x and x.data_ptr() == ptr
            assert torch.equal(x.cpu(), want), (name, value)


@cuda
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8])
def test_cuda_integer_logits_take_torch_ops(dtype):
    rng = np.random.default_rng(3)
    vocab, batch = 1000, 3
    allowed, ts = make_set(rng, batch, vocab)
    host = torch.randint(1, 100, (batch, 1040)).to(dtype)
    expected = torch_reference(host, allowed, 0)
    x = host.cuda()
    LogitsProcessor(FakeGuide(vocab, batch), 0)(x, ts)
    assert torch.equal(x.cpu(), expected)


@cuda
def test_cuda_guide_drives_a_document_to_the_end():
    # Random logits on the GPU, masked there, argmax: every token the guide allows, the document
    # valid (the vocabulary is Llama 3's, from quicktok, through the code users run).
    from dotjson import Guide, Index, Vocabulary
    from dotjson.tools.testing import llama3_tokenizer_dir

    vocab = Vocabulary.from_pretrained(llama3_tokenizer_dir())
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                               "n": {"type": "integer", "minimum": 0, "maximum": 99},
                                               "tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                                        "maxItems": 3}},
              "required": ["name", "n", "tags"], "additionalProperties": False}
    index = Index(schema, vocab)
    batch = 4
    guide = Guide(index, batch_size=batch)
    proc = LogitsProcessor(guide)
    g = torch.Generator(device="cuda").manual_seed(0)
    width = vocab.max_token_id() + 64  # padded like a model's embedding
    eos = set(vocab.eos_token_ids)
    ts = guide.get_start_tokensets()
    out = [[] for _ in range(batch)]
    done = [False] * batch
    for _ in range(300):
        logits = torch.randn(batch, width, device="cuda", generator=g)
        proc(logits, ts)
        picks = logits.argmax(dim=1).tolist()
        for r, p in enumerate(picks):
            assert p in ts[r] and p < vocab.max_token_id()
            if not done[r]:
                done[r] = p in eos
                if not done[r]:
                    out[r].append(p)
        if all(done):
            break
        ts = guide.get_next_tokensets(picks)
    assert all(done), "a row did not finish in 300 tokens"
    for ids in out:
        assert index.accepts(b"".join(vocab.token_bytes(t) for t in ids))


if os.environ.get("DOTJSON_CUDA_TIMINGS"):
    @cuda
    def test_print_cuda_masking_times():
        """Not an assertion (timings are never asserted): prints the Triton kernel's and the
        torch-ops path's time on 32 x 128k float32 logits against a device copy."""
        rng = np.random.default_rng(0)
        batch, vocab = 32, 128_256
        _, ts = make_set(rng, batch, vocab, 0.5)
        x = torch.randn(batch, vocab, device="cuda")
        y = torch.empty_like(x)
        proc = LogitsProcessor(FakeGuide(vocab, batch))

        def timed(fn, n=200):
            for _ in range(10):
                fn()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / n * 1e3

        copy = timed(lambda: y.copy_(x))
        for kernel in ("auto", "torch"):
            P.DEVICE_KERNEL = kernel
            t = timed(lambda: proc(x, ts))
            print(f"\n{kernel}: {t:.1f} us, copy {copy:.1f} us, ratio {t / copy:.2f}")
        P.DEVICE_KERNEL = "auto"


@cuda
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mask_device", ["cpu", "cuda"])
def test_cuda_sglang_bitmask_matches_torch_ops(dtype, mask_device):
    # SGLang's apply_token_bitmask: the Triton kernel against the torch-ops path, with
    # fewer logit rows than mask rows and logits wider than the mask (those columns masked)
    from dotjson.integrations import sglang

    rng = np.random.default_rng(7)
    rows, words, width = 3, 40, 40 * 32 + 50
    mask = torch.from_numpy(rng.integers(-2**31, 2**31, size=(rows + 2, words), dtype=np.int64)
                            .astype(np.int32)).to(mask_device)
    x = torch.randn(rows, width, device="cuda").to(dtype)
    y = x.clone()
    sglang.apply_token_bitmask(x, mask)
    gpu.mask_torch(y, mask[:rows].to("cuda").contiguous(), width, float("-inf"))
    assert torch.equal(x, y)
    assert torch.isinf(x[:, 40 * 32:]).all()
