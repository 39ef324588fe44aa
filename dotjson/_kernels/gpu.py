"""In-place logit masking on a CUDA device: one Triton kernel per call.

The host path (:mod:`dotjson._kernels.mask`) masks NumPy views with Numba. A tensor on a GPU is
masked where it lives: the packed bitsets are copied over (4 bytes per 32 tokens) and one
kernel reads a row's words and writes the mask value into every column whose bit is clear (and
every column at or past ``vocab``), touching nothing else. The torch-ops path it replaces
(unpack with shifts into a ``(batch, words, 32)`` tensor, compare, ``masked_fill_``) launches six
kernels and moves ~5x the logits' bytes; XGrammar applies its bitmask the same way as here.

Triton is optional (it ships with CUDA builds of torch, not with CPU ones): :func:`available`
says whether the kernel can run, and :func:`mask_device` (what the processor and SGLang's
``apply_token_bitmask`` call) falls back to torch ops, :func:`mask_torch`, where it cannot
(another device, an integer dtype, no Triton). Triton compiles the kernel on its first call per
dtype (about a second, then Triton's own on-disk cache).
"""

from __future__ import annotations

import math

import numpy as np

_STATE: dict = {}
_SHIFTS: dict = {}  # device -> arange(32), the bit positions mask_torch unpacks with
#: torch has no masked_fill for these: a same-width signed view takes the value's bit pattern
_SIGNED_VIEW = {"torch.uint16": "int16", "torch.uint32": "int32", "torch.uint64": "int64"}

#: Columns a program covers (a power of two, a multiple of 32: whole words per program).
BLOCK = 4096

#: torch dtypes the kernel takes (the float widths a model's logits come in)
#: (float64 goes through torch ops: Triton passes a Python float as a float32 scalar)
FLOAT_DTYPES = ("torch.float16", "torch.bfloat16", "torch.float32")


def _build():
    """The jitted kernel, or ``None`` where Triton cannot be imported."""
    try:
        import triton
        import triton.language as tl
    except Exception:  # noqa: BLE001 - not installed, or broken: the torch-ops path serves
        return None

    @triton.jit
    def mask_rows(logits, bits, row_stride, col_stride, bits_stride, width, vocab, value,
                  BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        in_row = cols < width
        in_vocab = cols < vocab
        words = tl.load(bits + row.to(tl.int64) * bits_stride + (cols >> 5), mask=in_vocab, other=0)
        allowed = ((words >> (cols & 31)) & 1) != 0
        drop = in_row & ~(allowed & in_vocab)
        ptr = logits + row.to(tl.int64) * row_stride + cols.to(tl.int64) * col_stride
        fill = (tl.zeros((BLOCK,), tl.float32) + value).to(logits.dtype.element_ty)
        tl.store(ptr, fill, mask=drop)

    return mask_rows


def kernel():
    """The Triton kernel (built once per process), or ``None`` where Triton is missing."""
    if "kernel" not in _STATE:
        _STATE["kernel"] = _build()
    return _STATE["kernel"]


def available(tensor, value: float) -> bool:
    """Whether :func:`mask_rows` can mask ``tensor`` (a CUDA float16/bfloat16/float32 tensor)
    with ``value`` (exact as a float32: the kernel's scalar), Triton present."""
    f32 = np.finfo(np.float32)
    exact = math.isinf(value) or (abs(value) <= float(f32.max) and float(np.float32(value)) == value)
    return (tensor.device.type == "cuda" and str(tensor.dtype) in FLOAT_DTYPES and exact
            and kernel() is not None)


def mask_rows(logits, packed, vocab: int, value: float) -> None:
    """Write ``value`` into ``logits[r, c]`` (a 2-D CUDA tensor, any strides) wherever bit ``c``
    of row ``r`` of ``packed`` (``int32[batch, words]`` on the same device, C-contiguous) is
    clear or ``c >= vocab``; other elements are neither read nor written."""
    batch, width = logits.shape
    if batch == 0 or width == 0:
        return
    grid = (batch, (width + BLOCK - 1) // BLOCK)
    kernel()[grid](logits, packed, logits.stride(0), logits.stride(1), packed.stride(0), width,
                   min(int(vocab), 32 * packed.shape[1]), value, BLOCK=BLOCK)


def mask_torch(logits, packed, vocab: int, value) -> None:
    """:func:`mask_rows` with torch ops on ``logits``' device (any device, any dtype torch can
    fill; ``value`` already checked against it): the words unpacked there with shifts, then
    ``masked_fill_``. The reference the kernel is tested against."""
    import torch

    batch, width = logits.shape
    if batch == 0 or width == 0:
        return
    shifts = _SHIFTS.get(logits.device)
    if shifts is None:
        shifts = _SHIFTS[logits.device] = torch.arange(32, dtype=torch.int32, device=logits.device)
    vocab = min(int(vocab), 32 * packed.shape[1], width)
    allowed = ((packed.unsqueeze(-1) >> shifts) & 1).to(torch.bool).reshape(batch, -1)[:, :vocab]
    signed = _SIGNED_VIEW.get(str(logits.dtype))
    if signed is not None:
        item = np.dtype(signed).itemsize
        value = int(np.array([value], dtype=f"u{item}").view(signed)[0])
        logits = logits.view(getattr(torch, signed))
    logits[:, :vocab].masked_fill_(~allowed, value)
    if width > vocab:
        logits[:, vocab:].fill_(value)


def mask_device(logits, packed, vocab: int, value, triton: bool = True) -> None:
    """Mask a 2-D tensor on its device: :func:`mask_rows` where :func:`available` (and
    ``triton``), else :func:`mask_torch`. ``packed``: ``int32[batch, words]`` on that device,
    C-contiguous."""
    if triton and available(logits, value):
        mask_rows(logits, packed, vocab, value)
    else:
        mask_torch(logits, packed, vocab, value)
