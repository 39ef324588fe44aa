"""Trie walk: the allowed-token bitset of an automaton state, expanding the automaton inline.

The walk is a depth-first traversal of a token trie in lock-step with the automaton's transition
table. A subtree is pruned as soon as its byte prefix leads to the dead state. A transition not
computed yet (``-1``) is computed on the spot by :mod:`dotjson.automaton.states` (a single
transition at a narrow trie node, the whole row at a node branching on more than ``wide``
bytes), and so is a state's plain-invariance: one kernel call
computes a fresh mask, without the GIL. The walk returns to Python only when the store must grow,
a rule body must be compiled, or a budget is spent (``EXIT``, the reason in the store's ``ctl``),
with its explicit stack intact; Python acts and calls again to resume exactly where it stopped.
The caller holds the automaton's lock.

In the *plain* trie (tokens made only of plain string characters) a node whose state is
plain-invariant takes its whole subtree at once: inside a JSON string body this replaces a walk
over ~96% of the vocabulary with a copy of a contiguous run of token ids.
"""

from __future__ import annotations

import numpy as np

from numba import types

from .jit import kernel, unit
from ..automaton import kernels as K
from .subtrees import (
    _NO_CLASS, CLASS_MIN_NODES, CLASS_ROW_NODES, _class_chain, _class_whole, _counted_subtree, _fill,
    _run_subtree, _set_bits, or_words,
)

_U32_1, _U32_2 = types.Array(types.uint32, 1, "C"), types.Array(types.uint32, 2, "C")
_U64_1 = types.Array(types.uint64, 1, "C")
_I32_3, _I64_1 = K._I32_3, K._I64_1
#: A token trie (``child_ptr, child_byte, child_node, tok_ptr, tok_ids, subtree_end``).
_TRIE = types.Tuple((K._I32_1, types.Array(types.uint8, 1, "C"), K._I32_1, K._I32_1, K._I32_1, K._I32_1))
#: The special trie's ASCII plain runs (:func:`dotjson.trie.ascii_runs`).
_RUNS = types.Tuple((types.Array(types.uint8, 1, "C"), _I64_1, K._I32_1, _I64_1, K._I32_1))

DONE = 0
EXIT = 1

# ``ret`` slots of :func:`compute_mask` (a resumable computation).
R_SP, R_PHASE = 0, 1
PH_START, PH_SPECIAL, PH_INV, PH_PLAIN, PH_DONE = range(5)
# walk_trie modes
WALK_ALL, WALK_PLAIN, WALK_RUNS = range(3)
#: A flag OR-ed into a mode: byte runs followed by position (:func:`walk_trie`); the masks'
#: default, off in the reference walk (``WALK_ALL`` alone).
BYTE_RUNS = 4
#: States from this id on are never a byte run's origin in a walk (a frame packs ``s * 64 + j``).
_RUN_ORIGIN_MAX = 1 << 24
RUNS_MIN_NODES = 32  # the special trie's run shortcut is tried below nodes this large
RUN_MIN_NODES = 8  # the plain trie's bounded-run shortcut is tried below nodes this large



@kernel
def _push_position(trie, out, st_node, st_state, st_edge, sp, c, code):
    """A byte run's next position at node ``c`` (:func:`walk_trie`): its tokens, and a frame for
    its children whose state is the position ``code``; the new stack depth."""
    child_ptr, tok_ptr, tok_ids = trie[0], trie[3], trie[4]
    _set_bits(out, tok_ids, tok_ptr[c], tok_ptr[c + 1])
    if child_ptr[c + 1] > child_ptr[c]:
        st_node[sp] = c
        st_state[sp] = code
        st_edge[sp] = child_ptr[c]
        sp += 1
    return sp


@kernel
def _run_facts(S, s0):
    """``(hi, the row of its byte set in the store's byte sets, rest's state)`` of a byte run's
    origin ``s0`` (:func:`~dotjson.automaton.states.byte_run` answered > 0); rest's state -1
    on exit."""
    S = K.borrow(S)
    v = K.byte_run(S, s0)
    if v < 0:
        return 0, 0, -1
    ti = S[K.S_TI]
    ra = K.run_head(S, S[K.S_TERM_OF][s0])
    rst = K.state(S, v - 1)  # (made when the run was recognised, in this store; -1 on exit)
    return ti[ra, 3], ti[ti[ra, 1], 1], rst


@kernel
def _suspend(st_node, st_state, st_edge, sp, node, state, e, ret):
    st_node[sp] = node
    st_state[sp] = state
    st_edge[sp] = e
    ret[R_SP] = sp + 1
    return EXIT


@kernel
def _run_exits(S, trie, runs, out, st_node, st_state, st_edge, sp, node, state, k, ret, pseq,
               plen):
    """:func:`walk_trie`'s frame at an ASCII-run shortcut's exits (from the ``k``-th on): each
    exit's tokens, and its children pushed as frames; the stack depth, or -1 on exit (the frame
    pushed back at the exit being computed)."""
    S = K.borrow(S)
    child_ptr, child_byte, child_node, tok_ptr, tok_ids, subtree_end = trie
    in_byte, run_ptr, run_toks, exit_ptr, exit_nodes = runs
    child_ptr, tok_ptr, tok_ids = K.borrow(child_ptr), K.borrow(tok_ptr), K.borrow(tok_ids)
    subtree_end, in_byte = K.borrow(subtree_end), K.borrow(in_byte)
    run_ptr, run_toks = K.borrow(run_ptr), K.borrow(run_toks)
    exit_ptr, exit_nodes = K.borrow(exit_ptr), K.borrow(exit_nodes)
    out, st_node, st_state, st_edge = K.borrow(out), K.borrow(st_node), K.borrow(st_state), K.borrow(st_edge)
    pseq, plen, ret = K.borrow(pseq), K.borrow(plen), K.borrow(ret)
    trans = S[K.S_TRANS]
    inv_ = S[K.S_INV]
    base = exit_ptr[node]
    n_exits = exit_ptr[node + 1] - base
    while k < n_exits:
        d = exit_nodes[base + k]
        b = in_byte[d]
        nxt = trans[state, b]
        if nxt == -1:
            if K.fill_row(S, state) == K.FAIL:
                _suspend(st_node, st_state, st_edge, sp, node, state, -1 - k, ret)
                return -1
            nxt = trans[state, b]
        if nxt >= 0:
            _set_bits(out, tok_ids, tok_ptr[d], tok_ptr[d + 1])
            if child_ptr[d + 1] > child_ptr[d]:
                inv = inv_[nxt] if subtree_end[d] - d >= RUNS_MIN_NODES else 0
                if inv < 0:
                    inv = K.plain_inv(S, nxt, pseq, plen)
                    if inv < 0:
                        _suspend(st_node, st_state, st_edge, sp, node, state, -1 - k, ret)
                        return -1
                st_node[sp] = d
                st_state[sp] = nxt
                if inv == 1:
                    _set_bits(out, run_toks, run_ptr[d], run_ptr[d + 1])
                    st_edge[sp] = -1
                else:
                    st_edge[sp] = child_ptr[d]
                sp += 1
        k += 1
    return sp


@unit(K._i64, K.STORE, _TRIE, K._i64, K._I32_1, _U32_2, _RUNS, _U32_1, K._I32_1, K._I32_1, K._I32_1,
      K._i64, _I64_1, _I32_3, K._I32_1, K._i64, K._I32_1, K._I32_1, K._I32_1, _U32_2, _U64_1)
def walk_trie(S, trie, mode, big, big_bits, runs, out, st_node, st_state, st_edge, sp, ret, pseq,
              plen, wide, nchars, tchars, len_row, len_bits, below):
    """Resume a walk of ``trie`` whose stack holds ``sp`` frames; ``DONE``, or ``EXIT`` with the
    stack depth in ``ret[R_SP]`` (see the module docstring).

    ``trie`` is ``(child_ptr, child_byte, child_node, tok_ptr, tok_ids, subtree_end)``; the caller
    seeds the stack with the root frame ``(0, start_state, child_ptr[0])``. A node with children
    reached in a plain-invariant state is shortcut by ``mode``:

    * ``WALK_PLAIN`` (the plain trie): it takes its whole subtree, through its precomputed bitset
      when ``big[node] >= 0`` (a row of ``big_bits``), else its tokens one by one;
    * ``WALK_RUNS`` (the special trie): it takes the tokens of its ASCII plain runs and the walk
      goes on at its exits only (``runs``: :func:`dotjson.trie.ascii_runs`), in a frame whose
      ``edge`` is ``-1 - k`` (the next exit to visit is the ``k``-th);
    * ``WALK_ALL``: no shortcut (the reference the others are tested against).

    In ``WALK_PLAIN``, a node with at least :data:`RUN_MIN_NODES` nodes below it reached in a
    state that allows every plain token without being plain-invariant
    (:func:`~dotjson.automaton.states.plain_open`: an open object's key, less its declared
    names) takes its whole subtree too; one reached in a
    state that takes any ``k`` plain characters in a row (:func:`~dotjson.automaton.states.plain_run`:
    the key of an undeclared member under the generation bounds, a string body under
    ``maxLength``) takes the tokens of its subtree with at most ``k`` characters below it, read
    off ``nchars`` (characters from the root to each node) and ``tchars`` (each token's
    characters, in ``tok_ids``' order; a big subtree's as its bitset AND the row of
    ``len_bits`` of its length bound); empty arrays turn this off. A free key's first byte
    leads to such states under almost every node: walked node by node, its mask visited the
    whole plain trie (~265,000 nodes on Llama 3, 3.7 ms).

    Also in ``WALK_PLAIN``, a node reached by a byte that takes its parent's state back to
    itself, in a state that is none of those, takes its whole subtree when every byte below
    the node (``below``: :func:`dotjson.trie.plain_below_bytes`, two words a node) does so too
    (:func:`_ascii_class`, the state's invariant ASCII bytes, read once per frame): a ``uri``'s
    host or path, an ``email``'s local part, a ``pattern`` such as ``^[a-z0-9-]+$``, where each
    token below leaves the (live) state as it was. An empty ``below`` turns this off.

    Also in ``WALK_PLAIN``, a node whose bytes below are all ASCII, reached in a state none of
    those shortcuts take, is read against the state's counted class (:func:`_class_chain`:
    ``[a-z]{2,30}``, a hostname's label): when every byte below is of the class, its subtree is
    taken whole if its longest token lives, or by its tokens' lengths where the class kills
    every string one byte longer than it keeps alive. Off with ``below`` or ``nchars`` empty.

    With :data:`BYTE_RUNS` in ``mode``, a state that is a byte run ``C{0,hi} rest``
    (:func:`~dotjson.automaton.states.byte_run`: the whitespace between JSON tokens) whose
    transition on a byte of ``C`` is not known yet is followed into ``C``'s children by position:
    a frame whose state is ``-2 - (s * 64 + j)`` stands for ``s`` after ``j`` bytes of ``C``,
    which takes a byte of ``C`` to ``j + 1`` (while ``j < hi``) and any other byte where
    ``rest``'s state takes it. The tokens are the same; the ``hi`` states between are not made.

    A frame ``(node, state, edge)`` is popped and its remaining edges are scanned in one tight
    loop with the state's transition row hot in cache; every live child with children is pushed
    as a new frame (the order does not matter: the result is an OR of bits). A node is pushed at
    most once per walk, and at most the fan-outs along one path are waiting: the stack needs
    ``min(n_nodes, 256 * (depth + 1))`` frames. On an exit the frame is pushed back at the edge
    being computed, so a resumed walk redoes nothing (setting a bit twice is harmless).
    """
    S = K.borrow(S)
    child_ptr, child_byte, child_node, tok_ptr, tok_ids, subtree_end = trie
    run_ptr, run_toks = K.borrow(runs[1]), K.borrow(runs[2])
    # (the caller keeps every array alive: views without reference counts, as K.borrow's)
    child_ptr, child_byte, child_node = K.borrow(child_ptr), K.borrow(child_byte), K.borrow(child_node)
    tok_ptr, tok_ids, subtree_end = K.borrow(tok_ptr), K.borrow(tok_ids), K.borrow(subtree_end)
    pseq, plen, big, big_bits = K.borrow(pseq), K.borrow(plen), K.borrow(big), K.borrow(big_bits)
    nchars, tchars, len_row, len_bits = K.borrow(nchars), K.borrow(tchars), K.borrow(len_row), K.borrow(len_bits)
    out, st_node, st_state, st_edge = K.borrow(out), K.borrow(st_node), K.borrow(st_state), K.borrow(st_edge)
    ret, below = K.borrow(ret), K.borrow(below)
    cls = K.scratch(np.uint64, 2, 0)
    chain = K.scratch(np.int64, 2, 0)
    chain_w = K.scratch(np.uint64, 2, 0)
    trans = S[K.S_TRANS]
    inv_ = S[K.S_INV]
    byte_runs = (mode & BYTE_RUNS) != 0
    mode = mode & 3
    # the facts of the last byte run's origin read (a run's positions are frames of their own,
    # one per blank-prefixed node: reading them again per frame, three memo and state lookups,
    # was 15 of the 42 us of a known state's walk after `{` or `:` on Llama 3)
    f_s0 = -1
    f_hi = f_rj = f_rst = 0
    while sp > 0:
        sp -= 1
        node = st_node[sp]
        state = st_state[sp]
        e = st_edge[sp]
        if e < 0:  # the exits of an ASCII-run shortcut, from the k-th on
            sp = _run_exits(S, trie, runs, out, st_node, st_state, st_edge, sp, node, state, -1 - e,
                            ret, pseq, plen)
            if sp < 0:
                return EXIT
            continue
        end = child_ptr[node + 1]
        fill_wide = end - child_ptr[node] > wide
        # A frame's state: a state (>= 0), or a byte run's position: ``j`` bytes of the run of origin
        # ``s0`` (``run``: 0 not asked yet, 1 a run, -1 not one; its byte set, row ``rj`` of the
        # store's, its bound ``rhi``, its rest's state ``rst``; ``src``: whose row other bytes take)
        src = s0 = state
        j = run = rhi = rj = 0
        rst = -1
        cls[1] = _NO_CLASS  # (the frame's state's invariant ASCII bytes: not read yet)
        chain[0] = -1  # (the last child state whose counted class was read: _counted_subtree)
        if state < -1:
            code = -2 - state
            s0 = code >> 6
            j = code & 63
            run = 1
        while e < end:
            b = child_byte[e]
            if run == 1 and rst < 0:  # the run's facts, read once a frame
                if s0 == f_s0:  # (the last origin's: every position of one run shares them)
                    rhi, rj, rst = f_hi, f_rj, f_rst
                else:
                    rhi, rj, rst = _run_facts(S, s0)
                    if rst < 0:
                        return _suspend(st_node, st_state, st_edge, sp, node, state, e, ret)
                    f_s0, f_hi, f_rj, f_rst = s0, rhi, rj, rst
                if j > 0:
                    src = rst
            if j > 0 and K._has(S[K.S_BW][rj], b):
                nxt = -3  # the run's next position
            else:
                nxt = trans[src, b]
                if nxt == -1 and run == 0 and byte_runs and state < _RUN_ORIGIN_MAX:
                    v = K.byte_run(S, state)
                    if v < 0:
                        return _suspend(st_node, st_state, st_edge, sp, node, state, e, ret)
                    run = 1 if v > 0 else -1
                    if run == 1:
                        continue  # (its facts read above)
                if nxt == -1 and run == 1 and j == 0:  # the origin, its transition not known
                    if K._has(S[K.S_BW][rj], b):
                        nxt = -3
                    else:  # rest's successor, which is the origin's too
                        nxt = _fill(S, rst, b, fill_wide)
                        if nxt == K.FAIL:
                            return _suspend(st_node, st_state, st_edge, sp, node, state, e, ret)
                        trans[state, b] = nxt
                elif nxt == -1:
                    nxt = _fill(S, src, b, fill_wide)
                    if nxt == K.FAIL:
                        return _suspend(st_node, st_state, st_edge, sp, node, state, e, ret)
            if nxt == -3:
                if j < rhi:  # one more byte of the run: its tokens, its children by position
                    sp = _push_position(trie, out, st_node, st_state, st_edge, sp, child_node[e],
                                        -2 - (s0 * 64 + j + 1))
                e += 1
                continue
            if nxt >= 0:
                c = child_node[e]
                has_kids = child_ptr[c + 1] > child_ptr[c]
                inv = 0
                # at a leaf a shortcut has nothing to skip; in the special trie a small subtree is
                # walked faster than the plain-invariance of a new state is decided
                if has_kids and (mode == WALK_PLAIN or (
                        mode == WALK_RUNS and subtree_end[c] - c >= RUNS_MIN_NODES)):
                    inv = inv_[nxt]
                    if inv < 0:
                        inv = K.plain_inv(S, nxt, pseq, plen)
                        if inv < 0:
                            return _suspend(st_node, st_state, st_edge, sp, node, state, e, ret)
                # the subtree at once (w: 1 whole, 2 its tokens taken by their lengths, 0 walked,
                # -1 an exit): a plain-invariant state; a bounded plain run, or a state that
                # allows every plain token (plain_open, asked where a run is: an open object's
                # key); bytes that keep the frame's state; a counted class
                w = 1 if inv == 1 and mode == WALK_PLAIN else 0
                if (w == 0 and inv == 0 and mode == WALK_PLAIN and nchars.shape[0] > 0
                        and subtree_end[c] - c >= RUN_MIN_NODES):
                    w = _run_subtree(S, nxt, c, pseq, plen, out, big, big_bits, len_row, len_bits,
                                     tok_ptr, tok_ids, subtree_end, nchars, tchars)
                if (w == 0 and nxt == state and has_kids and inv != 1 and mode == WALK_PLAIN
                        and below.shape[0] > 0 and (below[2 * c] & np.uint64(1)) == 0):
                    w = _class_whole(S, below, c, state, cls)  # (the byte kept the frame's state)
                if (w == 0 and inv != 1 and has_kids and mode == WALK_PLAIN and nchars.shape[0] > 0
                        and below.shape[0] > 0 and subtree_end[c] - c >= CLASS_MIN_NODES
                        and (below[2 * c] & np.uint64(1)) == 0
                        and (subtree_end[c] - c >= CLASS_ROW_NODES or S[K.S_READY][nxt])):
                    w = _counted_subtree(S, nxt, c, below, chain, chain_w, out, big, big_bits,
                                         len_row, len_bits, tok_ptr, tok_ids, subtree_end, nchars,
                                         tchars)
                if w < 0:
                    return _suspend(st_node, st_state, st_edge, sp, node, state, e, ret)
                if w == 2:
                    e += 1
                    continue
                if w == 1:
                    kb = big[c]
                    if kb >= 0:
                        or_words(out, big_bits[kb])
                    else:
                        _set_bits(out, tok_ids, tok_ptr[c], tok_ptr[subtree_end[c]])
                    e += 1
                    continue
                _set_bits(out, tok_ids, tok_ptr[c], tok_ptr[c + 1])
                if has_kids:  # (as an exit's push, in _run_exits)
                    st_node[sp] = c
                    st_state[sp] = nxt
                    if inv == 1:  # WALK_RUNS
                        _set_bits(out, run_toks, run_ptr[c], run_ptr[c + 1])
                        st_edge[sp] = -1
                    else:
                        st_edge[sp] = child_ptr[c]
                    sp += 1
            e += 1
    ret[R_SP] = 0
    return DONE


@kernel
def walk_seeded(S, in_plain, special, plain, special_mode, big, big_bits, runs, pseq, plen, wide,
                nchars, tchars, len_row, len_bits, below, out, st_node, st_state, st_edge, ret):
    """Resume a mask's walk of the ``ret[R_SP]`` frames seeded in the special trie (``in_plain``
    false: by ``special_mode``) or in the plain one (by ``WALK_PLAIN`` and ``special_mode``'s byte
    runs, with the plain trie's tables: the special trie's modes never read them); ``DONE``, or
    ``EXIT`` (see :func:`walk_trie`). The one walk :func:`compute_mask`, :func:`class_mask` and
    :func:`dotjson._kernels.keywalk.keys_mask` run below the frames they seed."""
    S = K.borrow(S)
    trie = plain if in_plain else special
    mode = (WALK_PLAIN | (special_mode & BYTE_RUNS)) if in_plain else special_mode
    return walk_trie(S, trie, mode, big, big_bits, runs, out, st_node, st_state, st_edge, ret[R_SP],
                     ret, pseq, plen, wide, nchars, tchars, len_row, len_bits, below)


@unit(K._i64, K.STORE, K._i64, _TRIE, _TRIE, _U32_1, K._I32_1, _U32_2, _RUNS, K._I32_1, _U32_2, K._i64, _I32_3, K._I32_1, K._i64, K._I32_1, K._I32_1, _U64_1, _U32_1, K._I32_1, K._I32_1, K._I32_1, _I64_1)
def compute_mask(S, state, special, plain, plain_bits, big, big_bits, runs, len_row, len_bits,
                 special_mode, pseq, plen, wide, nchars, tchars, below, out, st_node, st_state,
                 st_edge, ret):
    """The allowed-token bits of ``state`` (EOS aside) OR-ed into ``out``: the special trie's
    walk, then the plain trie's (or the whole plain bitset for a plain-invariant state or one
    that allows every plain token, :func:`~dotjson.automaton.states.plain_open`, or the
    plain tokens of at most ``k`` characters for a state with a plain run of ``k``:
    :func:`~dotjson.automaton.states.plain_run`); ``big``/``big_bits``: the plain trie's
    big-subtree bitsets (:func:`dotjson.trie.big_subtree_bits`); ``len_row``/``len_bits``: the
    plain tokens of at most ``k`` characters are row ``len_row[k]`` of ``len_bits``
    (:func:`dotjson.trie.plain_length_bits`; an empty ``len_row`` turns that shortcut off);
    ``nchars``/``tchars``: the plain trie's characters per node and per token
    (:func:`dotjson.trie.plain_char_counts`, for the bounded-run shortcut below a node, see
    :func:`walk_trie`; empty arrays turn it off, and the whole-subtree shortcut of states that
    allow every plain token, as an empty ``len_row`` turns both off at the root); ``below``:
    the bytes below each plain-trie node (:func:`dotjson.trie.plain_below_bytes`, the class
    shortcut of :func:`walk_trie`; empty turns it off);
    ``runs``: the special trie's ASCII runs (:func:`dotjson.trie.ascii_runs`), used when
    ``special_mode`` is ``WALK_RUNS`` (``WALK_ALL``: the special trie walked node by node).

    Resumable: the caller sets ``ret[R_PHASE] = PH_START`` once and calls again after each
    ``EXIT`` until ``DONE``.
    """
    S = K.borrow(S)
    # (the Python caller keeps these alive: views without reference counts)
    special, plain, plain_bits, big = K.borrow(special), K.borrow(plain), K.borrow(plain_bits), K.borrow(big)
    big_bits, runs, len_row, len_bits = K.borrow(big_bits), K.borrow(runs), K.borrow(len_row), K.borrow(len_bits)
    pseq, plen, nchars, tchars = K.borrow(pseq), K.borrow(plen), K.borrow(nchars), K.borrow(tchars)
    out, st_node, st_state, st_edge = K.borrow(out), K.borrow(st_node), K.borrow(st_state), K.borrow(st_edge)
    ret, below = K.borrow(ret), K.borrow(below)
    while True:
        ph = ret[R_PHASE]
        if ph == PH_START or ph == PH_INV:
            if ph == PH_INV:
                v = K.plain_inv(S, state, pseq, plen)
                if v < 0:
                    return EXIT
                if v == 1:
                    or_words(out, plain_bits)
                    ret[R_PHASE] = PH_DONE
                    return DONE
                if len_row.shape[0] > 0:
                    k = K.plain_run(S, state, pseq, plen)
                    if k < 0:
                        return EXIT
                    if k > 0:
                        if k >= len_row.shape[0]:
                            or_words(out, plain_bits)
                        else:
                            or_words(out, len_bits[len_row[k]])
                        ret[R_PHASE] = PH_DONE
                        return DONE
                    v = K.plain_open(S, state, pseq, plen)
                    if v < 0:
                        return EXIT
                    if v == 1:  # every plain token (an open object's key)
                        or_words(out, plain_bits)
                        ret[R_PHASE] = PH_DONE
                        return DONE
            trie = special if ph == PH_START else plain
            if trie[0].shape[0] <= 2:  # a trie with a root only
                ret[R_PHASE] = PH_INV if ph == PH_START else PH_DONE
                if ph != PH_START:
                    return DONE
                continue
            st_node[0] = 0
            st_state[0] = state
            st_edge[0] = trie[0][0]
            ret[R_SP] = 1
            ret[R_PHASE] = PH_SPECIAL if ph == PH_START else PH_PLAIN
            continue
        if ph == PH_SPECIAL or ph == PH_PLAIN:
            r = walk_seeded(S, ph == PH_PLAIN, special, plain, special_mode, big, big_bits, runs,
                            pseq, plen, wide, nchars, tchars, len_row, len_bits, below, out,
                            st_node, st_state, st_edge, ret)
            if r == EXIT:
                return EXIT
            if ph == PH_PLAIN:
                ret[R_PHASE] = PH_DONE
                return DONE
            ret[R_PHASE] = PH_INV
            continue
        return DONE


#: :func:`run_share`'s answer when a state has no shared state.
NO_SHARE = -2


@kernel
def _reach(S, u0, fterm, special):
    """How many bytes of a special token a plain run can take before the token ends or leaves
    the run: the deepest node of the special trie, walked from state ``u0`` (the run unbounded,
    ``R{0,}``), at which a token ends alive, or before a byte of ``fterm`` (the byte set that
    may follow the run; ``-1``: any byte) where the run may end. -1 on exit."""
    S = K.borrow(S)
    child_ptr, child_byte, child_node, tok_ptr, tok_ids, subtree_end = special
    n = child_ptr.shape[0] - 1
    st_node = np.empty(n + 1, dtype=np.int32)
    st_state = np.empty(n + 1, dtype=np.int32)
    st_depth = np.empty(n + 1, dtype=np.int32)
    bw = S[K.S_BW]
    ti = S[K.S_TI]
    acc = S[K.S_ACC]
    fj = ti[fterm, 1] if fterm > 0 else -1
    best = 0
    st_node[0] = 0
    st_state[0] = u0
    st_depth[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        node = st_node[sp]
        u = st_state[sp]
        d = st_depth[sp]
        for e in range(child_ptr[node], child_ptr[node + 1]):
            b = child_byte[e]
            if acc[u] and d > best and (fterm < 0 or (fj >= 0 and (bw[fj, b >> 6] >> np.uint64(b & 63)) & np.uint64(1))):
                best = d  # the run may end here and the token go on into what follows it
            nxt = K.fill_entry(S, u, b)
            if nxt == K.FAIL:
                return -1
            if nxt < 0:
                continue
            c = child_node[e]
            if tok_ptr[c + 1] > tok_ptr[c] and d + 1 > best:
                best = d + 1
            if child_ptr[c + 1] > child_ptr[c]:
                st_node[sp] = c
                st_state[sp] = nxt
                st_depth[sp] = d + 1
                sp += 1
    return best


@unit(K._i64, K.STORE, K._i64, _TRIE, K._i64, _I64_1, _I32_3, K._I32_1, early=2, python=True)
def run_share(S, s, special, known, out, pseq, plen):
    """The state whose mask ``s``, a bounded plain run of ``k`` characters
    (:func:`~dotjson.automaton.states.plain_run`, written to ``out[1]``), shares for its special
    tokens; :data:`NO_SHARE` when there is none (``s`` is no bounded run, or is too near its
    bound); -1 on exit.

    ``s`` is ``R{lo,hi} rest``. A special token takes at most ``D`` items of ``R`` before it
    ends or leaves the run (``D`` from :func:`_reach`, once per ``R`` and first byte set of
    ``rest``, memoized), so when ``hi > D`` the token cannot tell ``R{lo,hi}`` from
    ``R{min(lo, D+1),}``: that state (the same for every position of the run more than ``D``
    from its bound) has the same special tokens. Its plain tokens differ, and are not asked of
    it. Llama 3: ``D`` = 9 bytes inside a JSON string (Qwen 14, SmolLM2 4). ``known``: ``D``
    when the caller has it (another automaton computed it for the same terms), else -1;
    ``out[0]`` receives ``D``.
    """
    S = K.borrow(S)
    # (the Python caller keeps these alive: views without reference counts)
    special, out, pseq, plen = K.borrow(special), K.borrow(out), K.borrow(pseq), K.borrow(plen)
    k = K.plain_run(S, s, pseq, plen)
    if k < 0:
        return -1
    out[1] = k
    if k == 0 or k >= K.RUN_INF:
        return NO_SHARE
    ti = S[K.S_TI]
    t = S[K.S_TERM_OF][s]
    if ti[t, 0] == K.K_SEQ:
        a = ti[t, 1]
        rest = ti[t, 2]
    else:
        a = t
        rest = K.EPS
    if ti[a, 0] != K.K_REP:
        return NO_SHARE
    item, lo, hi = ti[a, 1], ti[a, 2], ti[a, 3]
    if hi == K.INF or hi >= K.BAND:
        return NO_SHARE
    if rest == K.EPS:
        fterm = K.EMPTY  # nothing follows: a token cannot leave the run
    else:
        first = ti[rest, 1] if ti[rest, 0] == K.K_SEQ else rest
        fterm = first if ti[first, 0] == K.K_BYTES else -1
    free = K.rep(S, item, 0, K.INF)
    if free < 0:
        return -1
    key = K._T_REACH | (np.int64(free) << 29) | (fterm & ((1 << 29) - 1))
    reach = known if known >= 0 else K._mget(S, key)
    if reach < 0:
        u0 = K.state(S, free)
        if u0 < 0:
            return -1
        reach = _reach(S, u0, fterm, special)
        if reach < 0:
            return -1
        if K._mput(S, key, reach) < 0:
            return -1
    out[0] = reach
    if hi <= reach:
        return NO_SHARE
    r = K.rep(S, item, min(lo, reach + 1), K.INF)
    if r < 0:
        return -1
    shared = K.seq(S, r, rest) if rest != K.EPS else r
    if shared < 0:
        return -1
    return K.state(S, shared)





# ------------------------------------------------------------------ heads (automaton/heads.py)


#: Most (head, continuation) pairs :func:`head_pairs` splits a state into.
MAX_HEADS = 16
assert 4 * MAX_HEADS == 64  # (head_pairs' work lists, on the stack)


@unit(K._i64, K.STORE, K._i64, _U64_1, _I64_1, K._i64)
def head_pairs(S, s, delim, out, n_shared):
    """Split state ``s``'s term into pairs ``A c`` whose union it is, each head ``A`` a chain
    ``e1 ... ek q`` ending at its first item ``q`` that is a byte set inside ``delim`` (the 256-bit
    set of bytes no plain token holds): an alternation first in a chain is distributed over what
    follows it (``(x | y) z`` is ``x z | y z``). Pair ``i`` is written to ``out[2i]`` (``A``, a
    term) and ``out[2i + 1]`` (the state of ``c``, -1 when nothing follows); returns the count,
    :data:`NO_SHARE` when some branch has no such item in its first 64 or there would be more than
    :data:`MAX_HEADS` pairs, -1 on exit. See :mod:`dotjson.automaton.heads`.

    :data:`NO_SHARE` too where a head is surely no other index's (an item of its chain is a key
    set, or a reference to a rule numbered ``n_shared`` or above: the schema's own, not the base
    image's) and is no bounded run (whose special tokens a run's shared state may still answer):
    the masker computes no such head, so the state is walked whole, and here before a state is
    made for any continuation (a key position's, at every one of an open object)."""
    S = K.borrow(S)
    # (the Python caller keeps these alive: views without reference counts)
    delim, out = K.borrow(delim), K.borrow(out)
    ti = S[K.S_TI]
    bw = S[K.S_BW]
    pool = S[K.S_POOL]
    items = K.scratch(np.int32, 64, 0)
    work_x = K.scratch(np.int64, 64, 0)  # 4 * MAX_HEADS
    work_y = K.scratch(np.int64, 64, 0)
    work_x[0] = S[K.S_TERM_OF][s]
    work_y[0] = K.EPS
    root = work_x[0]
    nw = 1
    steps = 0
    m = 0
    while nw > 0:
        steps += 1
        if steps > 4 * MAX_HEADS:
            return NO_SHARE
        nw -= 1
        x = work_x[nw]
        y = work_y[nw]
        n = 0
        cur = x
        rest = -1
        own = False  # (an item of the chain that no other index shares)
        while n < 64:
            if ti[cur, 0] == K.K_SEQ:
                e = ti[cur, 1]
                nxt = ti[cur, 2]
            else:
                e = cur
                nxt = K.EPS
            items[n] = e
            n += 1
            ke = ti[e, 0]
            if ke == K.K_KEYS or (ke == K.K_REF and ti[e, 1] >= n_shared):
                own = True
            if ke == K.K_BYTES:
                j = ti[e, 1]
                inside = True
                for w in range(4):
                    if (bw[j, w] & ~delim[w]) != np.uint64(0):
                        inside = False
                        break
                if inside:
                    rest = nxt
                    break
            if nxt == K.EPS:
                break
            cur = nxt
        first = ti[x, 1] if ti[x, 0] == K.K_SEQ else x
        if rest < 0 and ti[first, 0] == K.K_ALT:
            # no delimiter in the chain: (x1 | x2 | ...) rest y, each alternative on its own
            tail = ti[x, 2] if ti[x, 0] == K.K_SEQ else K.EPS
            ty = K.seq(S, tail, y)
            if ty < 0:
                return -1
            off, n = ti[first, 1], ti[first, 2]
            if nw + n > work_x.shape[0]:
                return NO_SHARE
            for j in range(n):
                work_x[nw] = pool[off + j]
                work_y[nw] = ty
                nw += 1
            continue
        if rest < 0 and n < 64 and y != K.EPS:  # the delimiter may be in what follows: x y
            xy = K.seq(S, x, y)
            if xy < 0:
                return -1
            work_x[nw] = xy
            work_y[nw] = K.EPS
            nw += 1
            continue
        if rest < 0 or m >= MAX_HEADS:
            return NO_SHARE
        if own and not (ti[items[0], 0] == K.K_REP and 0 < ti[items[0], 3] < K.BAND):
            return NO_SHARE  # (a head of this index's own, no bounded run: walked whole)
        a = K.seq_list(S, items, n)
        if a < 0:
            return -1
        c = K.seq(S, rest, y)
        if c < 0:
            return -1
        if x != root:
            # (an alternative of a live state may be empty, with intersections or differences
            # inside: its head's prefixes are not the state's; the state's own chain is live.
            # Where that is not known yet, the whole walk answers: no emptiness search, and no
            # budget spent, here)
            ea = K.empty_known(S, a)
            ec = K.empty_known(S, c)
            if ea < 0 or ec < 0:
                return NO_SHARE
            if ea == 1 or ec == 1:
                continue
        out[2 * m] = a
        if c == K.EPS:
            out[2 * m + 1] = -1
        else:
            sc = K.state(S, c)
            if sc < 0:
                return -1
            out[2 * m + 1] = sc
        m += 1
    return m if m > 0 else NO_SHARE


@unit(K._i64, K.STORE, K._i64, _TRIE, K._I32_1, early=2, python=True)
def head_exits(S, sa, special, out):
    """The nodes of the ``special`` trie, with children, at which state ``sa`` (a head) has
    accepted (the head's word is complete: a token going on takes what follows it), written to
    ``out``; their count, -1 on exit (call again: nothing is lost), -2 when ``out`` is too small
    (grow it). Nodes are walked once each from ``sa``."""
    S = K.borrow(S)
    # (the Python caller keeps these alive: views without reference counts)
    special, out = K.borrow(special), K.borrow(out)
    child_ptr, child_byte, child_node, tok_ptr, tok_ids, subtree_end = special
    acc = S[K.S_ACC]
    n = child_ptr.shape[0] - 1
    st_node = np.empty(n + 1, dtype=np.int32)
    st_state = np.empty(n + 1, dtype=np.int32)
    st_node[0] = 0
    st_state[0] = sa
    sp = 1
    m = 0
    while sp > 0:
        sp -= 1
        node = st_node[sp]
        u = st_state[sp]
        for e in range(child_ptr[node], child_ptr[node + 1]):
            c = child_node[e]
            if child_ptr[c + 1] == child_ptr[c]:
                continue  # a leaf: its tokens are the head's, nothing goes on from it
            nxt = K.fill_entry(S, u, child_byte[e])
            if nxt == K.FAIL:
                return -1
            if nxt < 0:
                continue
            if acc[nxt]:
                if m >= out.shape[0]:
                    return -2
                out[m] = c
                m += 1
            st_node[sp] = c
            st_state[sp] = nxt
            sp += 1
    return m


@unit(K._i64, K.STORE, _TRIE, K._I32_1, _U32_2, _RUNS, K._i64, _I32_3, K._I32_1, K._i64, K._I32_1, K._i64, K._i64, _U32_1, K._I32_1, K._I32_1, K._I32_1, _I64_1)
def walk_from(S, special, big, big_bits, runs, mode, pseq, plen, wide, seeds, n_seeds, sc, out,
              st_node, st_state, st_edge, ret):
    """The tokens of the ``special`` trie below the ``seeds`` nodes (not at them) allowed from
    state ``sc``, OR-ed into ``out``: a head's exits continued by what follows the head. Resumable
    as :func:`compute_mask` (``ret[R_PHASE] = PH_START`` once, call again after ``EXIT``)."""
    S = K.borrow(S)
    # (the Python caller keeps these alive: views without reference counts)
    special, big, big_bits, runs = K.borrow(special), K.borrow(big), K.borrow(big_bits), K.borrow(runs)
    pseq, plen, seeds, out = K.borrow(pseq), K.borrow(plen), K.borrow(seeds), K.borrow(out)
    st_node, st_state, st_edge, ret = K.borrow(st_node), K.borrow(st_state), K.borrow(st_edge), K.borrow(ret)
    if ret[R_PHASE] == PH_START:
        child_ptr = special[0]
        sp = 0
        for i in range(n_seeds):
            st_node[sp] = seeds[i]
            st_state[sp] = sc
            st_edge[sp] = child_ptr[seeds[i]]
            sp += 1
        ret[R_SP] = sp
        ret[R_PHASE] = PH_SPECIAL
    no_chars = K.scratch(np.int32, 1, 0)[:0]  # (the special trie: no bounded-run shortcut, so
    # no length rows either: big_bits stands in for them, unread)
    no_below = K.scratch(np.uint64, 1, 0)[:0]  # (nor the class shortcut: the plain trie's)
    r = walk_trie(S, special, mode, big, big_bits, runs, out, st_node, st_state, st_edge,
                  ret[R_SP], ret, pseq, plen, wide, no_chars, no_chars, no_chars, big_bits, no_below)
    if r == EXIT:
        return EXIT
    ret[R_PHASE] = PH_DONE
    return DONE


#: :func:`class_mask`'s answers beside ``DONE`` and ``EXIT``: the state is no counted class, or
#: the exit edges to walk do not fit the stack beside the walk's own frames (the caller walks
#: the state whole instead, ``out`` discarded).
NOT_CLASS, NO_ROOM = 2, 3
# ``ret`` slots of class_mask (R_SP and R_PHASE as compute_mask's), and its phases: each trie's
# exits seeded, then walked (the special trie's first), ``PH_START`` the recognition
_R_REST, _R_HI = 2, 3
_CM_SEED_SPECIAL, _CM_WALK_SPECIAL, _CM_SEED_PLAIN, _CM_WALK_PLAIN, _CM_DONE = range(1, 6)


@kernel
def _class_seed(S, trie, ex_ptr, ex_depth, ex_child, rest, chain, lo, hi, room, out, st_node,
                st_state, st_edge):
    """The frames starting a class's walk of ``trie`` (see :func:`class_mask`): below every exit
    edge of depth ``p`` in ``lo .. hi`` whose byte the state after ``p`` bytes of the class
    takes to a live state, the child's tokens set and a frame for its subtree. That state is
    ``rest``'s (a counted class: the same for every ``p``), or with ``rest`` -1 ``chain[p]``.
    Their number; -1 on exit (the edges are gone through again: their bits are set already),
    -2 past ``room`` frames."""
    S = K.borrow(S)
    child_ptr, tok_ptr, tok_ids = K.borrow(trie[0]), K.borrow(trie[3]), K.borrow(trie[4])
    sp = 0
    for b in range(256):
        i = ex_ptr[b]
        end = ex_ptr[b + 1]
        if i == end:
            continue
        nxt = -1
        if rest >= 0:
            nxt = _fill(S, rest, b, True)  # (the whole row: most bytes are asked)
            if nxt == K.FAIL:
                return -1
            if nxt < 0:
                continue
        while i < end and ex_depth[i] < lo:  # (sorted by depth: the range's first)
            i += 1
        while i < end and (hi < 0 or ex_depth[i] <= hi):
            if rest < 0:
                nxt = _fill(S, chain[ex_depth[i]], b, True)
                if nxt == K.FAIL:
                    return -1
                if nxt < 0:
                    i += 1
                    continue
            c = ex_child[i]
            _set_bits(out, tok_ids, tok_ptr[c], tok_ptr[c + 1])
            if child_ptr[c + 1] > child_ptr[c]:
                if sp >= room:
                    return -2
                st_node[sp] = c
                st_state[sp] = nxt
                st_edge[sp] = child_ptr[c]
                sp += 1
            i += 1
    return sp


@kernel
def _class_states(S, s, words, n, chain):
    """The states after ``0 .. n`` bytes of class ``words`` from ``s``, into ``chain``, while
    every byte of the class takes each to one state: how many follow ``s`` alive (``n``: all of
    them), -1 on exit, -2 where the class's bytes part (some go on, elsewhere or dying)."""
    S = K.borrow(S)
    chain[0] = s
    u = s
    for p in range(1, n + 1):
        v0 = -3
        for b in range(256):
            if not K._has(words, b):
                continue
            v = _fill(S, u, b, True)
            if v == K.FAIL:
                return -1
            if v0 == -3:
                v0 = v
            elif v != v0:
                return -2
        if v0 < 0:
            return p - 1
        chain[p] = v0
        u = v0
    return n


@unit(K._i64, K.STORE, K._i64, _TRIE, _TRIE, K._I32_1, K._I32_1, K._I32_1, K._I32_1, K._I32_1,
      K._I32_1, K._I32_1, _U32_2, _U64_1, K._I32_1, K._i64, K._I32_1, _U32_2, _RUNS, K._i64, _I32_3,
      K._I32_1, K._i64, K._I32_1, K._I32_1, K._I32_1, _U32_2, _U64_1, _U32_1, K._I32_1, K._I32_1,
      K._I32_1, _I64_1, python=True)
def class_mask(S, state, special, plain, sp_ptr, sp_depth, sp_child, pl_ptr, pl_depth, pl_child,
               c_row, c_bits, c_words, chain, room, big, big_bits, runs, special_mode, pseq, plen,
               wide, nchars, tchars, len_row, len_bits, below, out, st_node, st_state, st_edge,
               ret):
    """The allowed-token bits of a *counted class* ``state`` (EOS aside) OR-ed into ``out``:
    ``C{lo,hi} rest`` whose rest starts with no byte of the byte class ``C``
    (:func:`dotjson.automaton.states.class_run`), from the tables of ``C``
    (:func:`dotjson.trie.class_tables`: ``c_row``/``c_bits``, the tokens all of ``C`` by
    length; ``sp_*``/``pl_*``, the special and plain tries' exit edges): the tokens of at most
    ``hi`` bytes all of ``C``, and in each trie, below every exit edge of depth ``lo .. hi``
    whose byte ``rest`` takes to a live state, the child's tokens and the walk of its subtree
    from that state (:func:`walk_trie`, with ``special_mode`` and the plain trie's tables as
    :func:`compute_mask` passes them). The nodes spelt with ``C`` are not visited.

    With ``chain`` non-empty (``int32[n + 1]``, ``n`` the depth of the deepest trie node whose
    path is all of ``C``: :func:`dotjson.trie.class_tables`), a
    *chain* instead: ``C`` the ASCII bytes ``state`` takes to one state (``c_words``, read by
    :func:`root_class`), the states after ``0, 1, …`` bytes of it, one per length while every
    byte of ``C`` takes each to one state (a pattern's class under a string's length bound, whose
    counter every character moves: ``[a-z0-9-]+`` within 128 characters). A token whose first
    ``p`` bytes are of ``C`` then goes on from the ``p``-th state: the tokens all of ``C`` as
    long as the chain lives, and the exit edges of each depth from that depth's state.

    ``NOT_CLASS`` when ``state`` is no counted class of class ``C``'s tables (the caller read
    ``C`` off the term) or its chain parts before the deepest node, ``NO_ROOM`` when more than
    ``room`` frames would start a walk; resumable as :func:`compute_mask` (``ret[R_PHASE] =
    PH_START`` once, call again after ``EXIT``)."""
    S = K.borrow(S)
    # (the Python caller keeps these alive: views without reference counts)
    special, plain = K.borrow(special), K.borrow(plain)
    sp_ptr, sp_depth, sp_child = K.borrow(sp_ptr), K.borrow(sp_depth), K.borrow(sp_child)
    pl_ptr, pl_depth, pl_child = K.borrow(pl_ptr), K.borrow(pl_depth), K.borrow(pl_child)
    c_row, c_bits, big, big_bits, runs = K.borrow(c_row), K.borrow(c_bits), K.borrow(big), K.borrow(big_bits), K.borrow(runs)
    pseq, plen, nchars, tchars = K.borrow(pseq), K.borrow(plen), K.borrow(nchars), K.borrow(tchars)
    len_row, len_bits, below = K.borrow(len_row), K.borrow(len_bits), K.borrow(below)
    out, ret = K.borrow(out), K.borrow(ret)
    c_words, chain = K.borrow(c_words), K.borrow(chain)
    st_node, st_state, st_edge = K.borrow(st_node), K.borrow(st_state), K.borrow(st_edge)
    ti = S[K.S_TI]
    t = S[K.S_TERM_OF][state]
    top = c_row.shape[0] - 1
    lo = 0
    hi = ret[_R_HI]
    if chain.shape[0] == 0:
        h = ti[t, 1] if ti[t, 0] == K.K_SEQ else t
        lo = ti[h, 2]
        hi = ti[h, 3]
    while True:
        ph = ret[R_PHASE]
        if ph == PH_START:
            if chain.shape[0] == 0:
                v = K.class_run(S, t)
                if v < 0:
                    return EXIT
                if v == 0:
                    return NOT_CLASS
                e = K.state(S, v - 1)
                if e < 0:
                    return EXIT
            else:
                e = -1
                k = _class_states(S, state, c_words, chain.shape[0] - 1, chain)
                if k == -1:
                    return EXIT
                if k == -2:
                    return NOT_CLASS
                hi = k
                ret[_R_HI] = k
            ret[_R_REST] = e
            or_words(out, c_bits[c_row[top if hi < 0 or hi > top else hi]])
            ret[R_PHASE] = _CM_SEED_SPECIAL
        elif ph == _CM_SEED_SPECIAL or ph == _CM_SEED_PLAIN:
            p = ph == _CM_SEED_PLAIN
            n = _class_seed(S, plain if p else special, pl_ptr if p else sp_ptr,
                            pl_depth if p else sp_depth, pl_child if p else sp_child, ret[_R_REST],
                            chain, lo, hi, room, out, st_node, st_state, st_edge)
            if n == -1:
                return EXIT
            if n == -2:
                return NO_ROOM
            ret[R_SP] = n
            ret[R_PHASE] = ph + 1  # (its walk)
        elif ph == _CM_WALK_SPECIAL or ph == _CM_WALK_PLAIN:
            r = walk_seeded(S, ph == _CM_WALK_PLAIN, special, plain, special_mode, big, big_bits,
                            runs, pseq, plen, wide, nchars, tchars, len_row, len_bits, below, out,
                            st_node, st_state, st_edge, ret)
            if r == EXIT:
                return EXIT
            ret[R_PHASE] = ph + 1  # (the plain trie's seeding, or done)
        else:
            return DONE


@unit(K._i64, K.STORE, K._i64, _U64_1, python=True)
def root_class(S, s, words):
    """The ASCII bytes live state ``s`` takes to one state, most of them (the class of
    :func:`dotjson._kernels.subtrees._class_chain`), into ``words`` (four words): 1, or 0 where
    there is none; -1 on exit."""
    S = K.borrow(S)
    words = K.borrow(words)
    r, cl = _class_chain(S, s, 1)
    if r < 0:
        return -1
    if cl == K.EMPTY:
        return 0
    words[:] = S[K.S_BW][S[K.S_TI][cl, 1]]
    return 1
