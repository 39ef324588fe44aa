"""Mask keys: the term a state's mask is memoized under.

A mask is the set of tokens (at most ``limit - 1`` bytes each) that keep a state alive. Two
rewrites keep that set while making states that differ only beyond one token's reach share a
key (and so one memoized mask and one trie walk):

* :func:`dotjson.automaton.kernels.clamp`: a counter further than ``limit`` from its bounds
  becomes unbounded (the states of a long counted repetition share a key);
* :func:`truncate`: the part of the parse stack that a token cannot reach is dropped. A state's
  term is a right-nested sequence whose items are the pending continuations (``]``, ``}``, ...);
  once ``limit`` of its items can each not be passed without consuming a byte, what follows is
  out of reach of any token, and, the state being live, it is non-empty, so replacing it by ε
  changes neither which tokens keep the state alive nor its acceptance (the kept prefix alone
  is not nullable). States 10 and 10,000 levels deep then share their key: a fresh mask on top
  of a deep stack costs no new states beyond the token's own path.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .._config import NJIT_OPTS
from . import kernels as K


@nb.njit(**NJIT_OPTS)
def truncate(S, t, limit):
    """``t`` with its sequence cut after the item where ``limit`` non-nullable items are
    reached (ε in place of the rest); ``t`` itself when the sequence is shorter; -1 on exit.
    ``t`` must be live (its tail then denotes a non-empty language)."""
    S = K.borrow(S)
    ti = S[K.S_TI]
    tf = S[K.S_TF]
    n = 0
    hard = 0
    cur = t
    while ti[cur, 0] == K.K_SEQ:
        n += 1
        if (tf[ti[cur, 1]] & K.F_NULL) == 0:
            hard += 1
            if hard >= limit:
                break
        cur = ti[cur, 2]
    if hard < limit:
        return t
    items = np.empty(n, dtype=np.int32)
    cur = t
    for x in range(n):
        items[x] = ti[cur, 1]
        cur = ti[cur, 2]
    r = K.EPS
    for x in range(n - 1, -1, -1):
        r = K.seq(S, items[x], r)
        if r < 0:
            return -1
    return r


@nb.njit(**NJIT_OPTS)
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
