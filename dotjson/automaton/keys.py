"""Mask keys: the term a state's mask is memoized under.

A mask is the set of tokens (at most ``limit - 1`` bytes each) that keep a state alive. Two
rewrites keep that set while making states that differ only beyond one token's reach share a
key (and so one memoized mask and one trie walk):

* :func:`dotjson.automaton.clamp.clamp`: a counter further than ``limit`` from its bounds
  becomes unbounded (the states of a long counted repetition share a key);
* :func:`truncate`: the part of the parse stack that a token cannot reach is dropped. A state's
  term is a right-nested sequence whose items are the pending continuations (``]``, ``}``, ...);
  once ``limit`` of its items can each not be passed without consuming a byte, what follows is
  out of reach of any token, and, the state being live, it is non-empty, so replacing it by ε
  changes neither which tokens keep the state alive nor its acceptance (the kept prefix alone
  is not nullable). The cut is placed at a multiple of :data:`BLOCK` such items counted from
  the stack's bottom (at least ``limit`` kept), so a new state reuses the memoized truncation of
  the tail it shares with the state below it. States 10 and 10,000 levels deep then share their
  keys: a fresh mask on top of a deep stack costs no new states beyond the token's own path.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .._kernels.jit import kernel, unit
from . import kernels as K


#: Memo tags (kernels.py uses 1..3, counters.py 29): items that consume a byte from a sequence
#: cell to its end, and a cell's truncation at a target.
_T_HARD = 30 << 58
_T_TRUNC = 31 << 58
#: Cuts are placed at multiples of this many non-nullable items counted from the stack's bottom,
#: so consecutive states share the memoized truncation of their common tail (a new state costs
#: O(1) amortized) and a periodic stack has at most this many distinct keys.
BLOCK = 32
_HARD_CAP = (1 << 29) - 1


@kernel
def _hard1(S, t):
    S = K.borrow(S)
    return 0 if (S[K.S_TF][t] & K.F_NULL) != 0 else 1


@kernel
def hard_to_end(S, t0):
    """Non-nullable items from ``t0`` to the end of its sequence (memoized per cell, capped at
    2**29 - 1); -1 on exit."""
    S = K.borrow(S)
    ti = S[K.S_TI]
    if ti[t0, 0] != K.K_SEQ:
        return _hard1(S, t0)
    r = K._mget(S, _T_HARD | t0)
    if r >= 0:
        return r
    st = K.scratch(np.int32, 64, 0)
    sp = 0
    cur = t0
    while ti[cur, 0] == K.K_SEQ and K._mget(S, _T_HARD | cur) < 0:
        st = K._grow_i32(st, sp)
        st[sp] = cur
        sp += 1
        cur = ti[cur, 2]
    h = _hard1(S, cur) if ti[cur, 0] != K.K_SEQ else K._mget(S, _T_HARD | cur)
    while sp > 0:
        c = st[sp - 1]
        h = min(h + _hard1(S, ti[c, 1]), _HARD_CAP)
        if K._mput(S, _T_HARD | c, h) < 0:
            return -1
        sp -= 1
    return h


@kernel
def truncate(S, t, limit):
    """``t`` with its sequence cut, ε in place of the rest, at the first cell whose items to
    the end hold at most ``target`` non-nullable ones, ``target`` the largest multiple of
    :data:`BLOCK` leaving at least ``limit`` of them before the cut; ``t`` itself when the
    sequence holds fewer than ``limit + BLOCK``. -1 on exit. ``t`` must be live (its tail then
    denotes a non-empty language)."""
    S = K.borrow(S)
    ti = S[K.S_TI]
    if ti[t, 0] != K.K_SEQ:
        return t
    h = hard_to_end(S, t)
    if h < 0:
        return -1
    if h >= _HARD_CAP or h - limit < BLOCK:
        return t
    target = ((h - limit) // BLOCK) * BLOCK
    items = K.scratch(np.int32, 64, 0)
    cells = K.scratch(np.int32, 64, 0)
    n = 0
    cur = t
    rest = K.EPS
    while True:
        m = K._mget(S, _T_TRUNC | (np.int64(cur) << 29) | target)
        if m >= 0:
            rest = m
            break
        hc = hard_to_end(S, cur)
        if hc < 0:
            return -1
        if hc <= target:
            break
        # hc > target >= 0 and a cell's count is its head's plus its tail's: cur is a cell
        items = K._grow_i32(items, n)
        cells = K._grow_i32(cells, n)
        items[n] = ti[cur, 1]
        cells[n] = cur
        n += 1
        cur = ti[cur, 2]
    r = rest
    for x in range(n - 1, -1, -1):
        r = K.seq(S, items[x], r)
        if r < 0:
            return -1
        if K._mput(S, _T_TRUNC | (np.int64(cells[x]) << 29) | target, r) < 0:
            return -1
    return r


@unit(K._i64, K.STORE, K._i64, K._i64)
def key_state(S, s, limit):
    """The state of the mask key of state ``s`` (clamped, then truncated); -1 on exit."""
    S = K.borrow(S)
    t = K.clamp(S, S[K.S_TERM_OF][s], limit)
    if t < 0:
        return -1
    t = truncate(S, t, limit)
    if t < 0:
        return -1
    return K.state(S, t)


@unit(K._i64, K.PACKED, K._i64, K._i64, early=1, python=True)
def key_state_packed(P, s, limit):
    """:func:`key_state` with the store packed (:func:`~dotjson.automaton.store.pack`)."""
    return key_state(K.unpack_store(P), s, limit)


key_state.packed = key_state_packed
