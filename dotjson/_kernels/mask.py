"""Numba kernels over packed token bitsets: popcount, listing ids, and in-place logit masking.

A token set is a packed bitset of ``uint32`` words: token ``t`` is allowed in row ``r`` iff
``(bits[r, t >> 5] >> (t & 31)) & 1``. Every kernel here treats bits of tokens ``>= vocab_size``
as zero, so a set whose padding bits happen to be set still behaves as the contract says.

The masking kernels never see a float: the caller views the logits buffer as the unsigned
integer type of the same width (``uint8/16/32/64``) and passes the bit pattern of the mask value
in that type. Four element types cover every dtype (float16, bfloat16, int16 and uint16 all
share the ``uint16`` specialization), which keeps compile time and the on-disk cache small.

Kernels take plain arrays and scalars, never raise, and compile lazily (nothing at import); the
public wrappers in :mod:`dotjson.tokenset` and :mod:`dotjson.processor` validate.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import kernel

_ALL_ONES = np.uint32(0xFFFFFFFF)


@kernel(canonical=False)
def _popcount32(x):
    # SWAR popcount; LLVM turns this idiom into a single popcnt where the target has one.
    x = np.uint32(x)
    x = x - ((x >> np.uint32(1)) & np.uint32(0x55555555))
    x = (x & np.uint32(0x33333333)) + ((x >> np.uint32(2)) & np.uint32(0x33333333))
    x = (x + (x >> np.uint32(4))) & np.uint32(0x0F0F0F0F)
    # Numba widens uint32 products to 64 bits: keep only the byte that holds the count.
    return np.int64(((x * np.uint32(0x01010101)) >> np.uint32(24)) & np.uint32(0xFF))


@kernel(canonical=False)
def _word(bits_row, w, n_words, vocab_size):
    """Word ``w`` of a row with the bits of tokens ``>= vocab_size`` cleared (0 past the end)."""
    if w >= n_words:
        return np.uint32(0)
    word = np.uint32(bits_row[w])
    if w == n_words - 1:
        tail = vocab_size & 31
        if tail != 0:
            word &= np.uint32((1 << tail) - 1)
    return word


# --------------------------------------------------------------------------- counting / listing


@kernel(canonical=False)
def popcount_rows(bits, vocab_size, out):
    """``out[r]`` = number of allowed tokens of row ``r``. ``bits``: uint32 (batch, n_words)."""
    n_rows, n_words = bits.shape
    for r in range(n_rows):
        row = bits[r]
        total = 0
        for w in range(n_words):
            total += _popcount32(_word(row, w, n_words, vocab_size))
        out[r] = total
    return 0


@kernel(canonical=False)
def list_ids(bits_row, vocab_size, out):
    """Write the allowed ids of one row into ``out`` (ascending); returns how many were written.

    Stops at ``out``'s length, so a caller sizes ``out`` with :func:`popcount_rows` first.
    """
    n_words = bits_row.shape[0]
    cap = out.shape[0]
    k = 0
    for w in range(n_words):
        word = _word(bits_row, w, n_words, vocab_size)
        base = w * 32
        while word != 0 and k < cap:
            # Lowest set bit: isolate it, find its index by popcount of the bits below.
            low = word & (~word + np.uint32(1))
            out[k] = base + _popcount32(low - np.uint32(1))
            k += 1
            word &= word - np.uint32(1)
    return k


@kernel(canonical=False)
def forced_tokens(bits, vocab_size, out):
    """``out[r]`` = the single allowed id of row ``r``, or -1 when the row allows 0 or >= 2."""
    n_rows, n_words = bits.shape
    for r in range(n_rows):
        row = bits[r]
        found = -1
        count = 0
        for w in range(n_words):
            word = _word(row, w, n_words, vocab_size)
            if word == 0:
                continue
            c = _popcount32(word)
            count += c
            if count > 1:
                break
            low = word & (~word + np.uint32(1))
            found = w * 32 + _popcount32(low - np.uint32(1))
        out[r] = found if count == 1 else -1
    return 0


# --------------------------------------------------------------------------- masking


def _masked_store_name(elt, ptr_type):
    if getattr(ptr_type, "is_opaque", False):
        return f"llvm.masked.store.v32i{elt.width}.p0"
    return f"llvm.masked.store.v32i{elt.width}.p0v32i{elt.width}"  # llvmlite with typed pointers


def _target_has_masked_store(context, bits: int) -> bool:
    """Whether the compile target stores ``bits``-wide lanes under a mask natively.

    AVX-512 (BW for 8/16-bit lanes) does for every width, AVX2 for 32/64-bit lanes. Elsewhere
    LLVM would split a masked store into one branch per lane, so a blend is used instead.
    """
    try:
        features = context.codegen()._tm_features or ""
    except AttributeError:  # a Numba without this attribute: the blend is correct everywhere
        return False
    if bits >= 32:
        return "+avx512f" in features or "+avx2" in features
    return "+avx512bw" in features


@intrinsic
def _store_where_clear(typingctx, buf, pos, word, mval):
    """Write ``mval`` into ``buf[pos + j]`` for each ``j < 32`` whose bit ``j`` of ``word`` is 0.

    Where the target has masked vector stores for the lane width (AVX-512, AVX2 for 32/64-bit
    lanes): one ``llvm.masked.store`` of 32 lanes whose mask is the word's complement bit-cast
    to ``<32 x i1>``, so allowed logits are neither read nor written. Elsewhere (SSE, NEON): a
    32-lane load, a select against the word's bits, and a store, which vectorizes without a
    branch per lane (allowed lanes are rewritten with their own value). ``buf`` must hold
    ``pos + 32`` elements (callers handle a row's partial last word with a scalar loop).
    """
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"):
        return None
    if not isinstance(buf.dtype, types.Integer):
        return None
    sig = types.void(buf, pos, word, mval)

    def codegen(context, builder, signature, args):
        arr_ty, pos_ty, word_ty, mval_ty = signature.args
        arr, p, w, v = args
        data = context.make_array(arr_ty)(context, builder, arr).data
        elt = context.get_value_type(arr_ty.dtype)
        v = context.cast(builder, v, mval_ty, arr_ty.dtype)
        w = context.cast(builder, w, word_ty, types.uint32)
        p = context.cast(builder, p, pos_ty, types.intp)
        vec = ir.VectorType(elt, 32)
        i1x32 = ir.VectorType(ir.IntType(1), 32)
        ptr = builder.bitcast(builder.gep(data, [p]), vec.as_pointer())
        lane0 = builder.insert_element(ir.Constant(vec, ir.Undefined), v, ir.Constant(ir.IntType(32), 0))
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), 32), [0] * 32)
        splat = builder.shuffle_vector(lane0, ir.Constant(vec, ir.Undefined), zeros)
        align = context.get_abi_alignment(elt)
        if _target_has_masked_store(context, elt.width):
            mask = builder.bitcast(builder.not_(w), i1x32)
            fnty = ir.FunctionType(ir.VoidType(), [vec, ptr.type, ir.IntType(32), i1x32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, _masked_store_name(elt, ptr.type))
            builder.call(fn, [splat, ptr, ir.Constant(ir.IntType(32), align), mask])
        else:
            # Skip an all-ones word here (no load, no store); the masked store needs no such
            # branch, and on random masks the branch mispredicts more than it saves.
            all_ones = ir.Constant(ir.IntType(32), 0xFFFFFFFF)
            with builder.if_then(builder.icmp_unsigned("!=", w, all_ones)):
                keep = builder.bitcast(w, i1x32)
                old = builder.load(ptr, align=align)
                builder.store(builder.select(keep, old, splat), ptr, align=align)
        return context.get_dummy_value()

    return sig, codegen


@kernel(canonical=False)
def _mask_words(buf, start, bits_row, n_words, vocab_size, width, w0, w1, mval):
    """Serial inner kernel: mask columns ``[32*w0, min(32*w1, width))`` of the row at ``buf[start:]``.

    ``buf`` is 1-D contiguous, of an unsigned type as wide as the logits' dtype. Every full word
    is one branch-free 32-lane store (:func:`_store_where_clear`); testing for all-ones words
    first was measured slower on random masks (the branch mispredicts: 32 x 128k int8 at 99%
    allowed took 226 us with the test, 72 us without). The row's partial last word (width not a
    multiple of 32) is written element by element so nothing past the row is touched.
    """
    full_words = width >> 5
    for w in range(w0, w1):
        word = _word(bits_row, w, n_words, vocab_size)
        col = w * 32
        if w < full_words:
            _store_where_clear(buf, start + col, word, mval)
        else:
            p = start + col
            for j in range(width - col):
                if (word >> np.uint32(j)) & np.uint32(1) == 0:
                    buf[p + j] = mval


@kernel(parallel=True, canonical=False)
def mask_parallel(buf, row_starts, width, bits, vocab_size, mval, n_chunks, chunk_words):
    """Mask every row of a batched buffer, in parallel over (row, chunk of the row) pairs.

    ``buf``: the rows' memory as one 1-D contiguous array of ``uint8/16/32/64``; row ``r`` occupies
    ``buf[row_starts[r] : row_starts[r] + width]``. ``bits``: uint32 (batch, n_words).
    ``mval``: the mask value's bit pattern, of ``buf``'s type. Each (row, chunk) task writes only
    its own columns, so a batch of one row still spreads over every thread.
    """
    n_rows = row_starts.shape[0]
    n_words = bits.shape[1]
    width_words = (width + 31) >> 5
    for t in prange(n_rows * n_chunks):
        r = t // n_chunks
        c = t - r * n_chunks
        w0 = c * chunk_words
        w1 = min(w0 + chunk_words, width_words)
        if w0 < w1:
            _mask_words(buf, row_starts[r], bits[r], n_words, vocab_size, width, w0, w1, mval)
    return 0


@kernel(canonical=False)
def mask_serial(buf, row_starts, width, bits, vocab_size, mval):
    """Same as :func:`mask_parallel` on the calling thread: for buffers too small to pay for threads."""
    n_rows = row_starts.shape[0]
    n_words = bits.shape[1]
    width_words = (width + 31) >> 5
    for r in range(n_rows):
        _mask_words(buf, row_starts[r], bits[r], n_words, vocab_size, width, 0, width_words, mval)
    return 0


@kernel(canonical=False)
def mask_strided_row(row, bits_row, vocab_size, mval):
    """Mask one non-contiguous 1-D row (any stride). Rare path: views such as ``a[:, ::2][0]``."""
    width = row.shape[0]
    n_words = bits_row.shape[0]
    for w in range((width + 31) >> 5):
        word = _word(bits_row, w, n_words, vocab_size)
        if word == _ALL_ONES:
            continue
        col = w * 32
        n = min(32, width - col)
        for j in range(n):
            if (word >> np.uint32(j)) & np.uint32(1) == 0:
                row[col + j] = mval
    return 0
