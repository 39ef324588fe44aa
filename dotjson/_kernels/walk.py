"""Trie walk: the allowed-token bitset of an automaton state.

The walk is a depth-first traversal of a token trie in lock-step with the automaton's transition
table. A subtree is pruned as soon as its byte prefix leads to the dead state. The table is filled
lazily by Python: when the walk meets a row that is not computed (``-1``) or a state whose
plain-invariance is unknown, it returns ``NEED_ROW``/``NEED_INV`` with that state and its explicit
stack intact; Python fills the row and calls again to resume exactly where it stopped.

In the *plain* trie (tokens made only of plain string characters) a node whose state is
plain-invariant takes its whole subtree at once: inside a JSON string body this replaces a walk
over ~96% of the vocabulary with a copy of a contiguous run of token ids.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .._config import NJIT_OPTS

DONE = 0
NEED_ROW = 1
NEED_INV = 2


@nb.njit(**NJIT_OPTS)
def _set_bits(out, tok_ids, lo, hi):
    for i in range(lo, hi):
        t = tok_ids[i]
        out[t >> 5] |= np.uint32(1) << np.uint32(t & 31)


@nb.njit(**NJIT_OPTS)
def walk_trie(
    trans,
    plain_inv,
    child_ptr,
    child_byte,
    child_node,
    tok_ptr,
    tok_ids,
    subtree_end,
    shortcut,
    out,
    st_node,
    st_state,
    st_edge,
    sp,
    ret,
):
    """Resume a walk whose stack holds ``sp`` frames; returns a status, see module docstring.

    ``ret[0]`` receives the stack depth, ``ret[1]`` the state that Python must expand, ``ret[2]``
    the byte it needs and ``ret[3]`` how many bytes the trie node branches on (Python computes a
    single transition for a narrow node, the whole row for a wide one).
    The caller seeds the stack with the root frame ``(0, start_state, child_ptr[0])``.
    """
    while sp > 0:
        top = sp - 1
        node = st_node[top]
        state = st_state[top]
        e = st_edge[top]
        if e >= child_ptr[node + 1]:
            sp -= 1
            continue
        nxt = trans[state, child_byte[e]]
        if nxt == -1:
            ret[0] = sp
            ret[1] = state
            ret[2] = child_byte[e]
            ret[3] = child_ptr[node + 1] - child_ptr[node]
            return NEED_ROW
        if nxt < 0:
            st_edge[top] = e + 1
            continue
        c = child_node[e]
        if shortcut:
            inv = plain_inv[nxt]
            if inv < 0:
                ret[0] = sp
                ret[1] = nxt
                return NEED_INV
            if inv == 1:
                _set_bits(out, tok_ids, tok_ptr[c], tok_ptr[subtree_end[c]])
                st_edge[top] = e + 1
                continue
        _set_bits(out, tok_ids, tok_ptr[c], tok_ptr[c + 1])
        st_edge[top] = e + 1
        if child_ptr[c + 1] > child_ptr[c]:
            st_node[sp] = c
            st_state[sp] = nxt
            st_edge[sp] = child_ptr[c]
            sp += 1
    ret[0] = 0
    ret[1] = -1
    return DONE


@nb.njit(**NJIT_OPTS)
def walk_token(trans, state, data, lo, hi, ret):
    """Advance ``state`` over ``data[lo:hi]``; returns the final state, ``-2`` (dead) or ``-1``
    with ``ret[0]`` = position and ``ret[1]`` = state whose row must be filled first."""
    for i in range(lo, hi):
        nxt = trans[state, data[i]]
        if nxt == -1:
            ret[0] = i
            ret[1] = state
            return -1
        if nxt < 0:
            return -2
        state = nxt
    return state


@nb.njit(**NJIT_OPTS)
def or_words(out, src):
    for i in range(out.shape[0]):
        out[i] |= src[i]
