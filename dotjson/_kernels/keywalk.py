"""Key positions walked by their names: the mask of a key set state without a state per prefix.

A key position of a wide object (``K_KEYS(C, p, d) rest``: :mod:`dotjson.automaton.keysets`)
allows the tokens that spell the rest of an offered name that can complete, and the tokens that
complete one, close it and go on into what follows that member. Walked as any state, every trie
node spelt with a name's prefix became an automaton state — a new one at every key position,
since a state is the whole rest of the document and each position's rest differs (an object in
any order has a key set per set of members seen): ~90 states at each key of a 30-member object,
~0.7 ms a position on Llama 3. Here the tries are walked jointly with the sorted names instead:
a frame is a range of names sharing the bytes read so far, narrowed by binary search as
:func:`~dotjson.automaton.keysets._k_deriv` narrows it, and a node's tokens are allowed while an
offered name of the range can complete. Only where a token leaves the names — the closing quote
after a whole name, or an escape — is the state made, exactly as the derivative makes it, and
the subtree below walked from it by :func:`~dotjson._kernels.walk.walk_trie`.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel, unit
from .walk import (
    _I64_1, _RUNS, _TRIE, _U32_1, _U32_2, _U64_1, DONE, EXIT, NO_ROOM, NOT_CLASS, PH_START, R_PHASE,
    R_SP, walk_seeded,
)
from .subtrees import _set_bits
from ..automaton import kernels as K
from ..automaton.keysets import (
    KT_BLOB, KT_CP, KT_RAW, KT_START, SY_CLOSE, SY_ESCAPE, SY_LOW, KT_SYN, _k_first,
    _k_block_end, _k_bound, _k_cp, _k_decode, _k_term, _klen,
)
from ..automaton.states import _live_state
from ..automaton.store import K_REF, S_RULE

#: :func:`keys_mask`'s answer for a state that is no key position it walks (the caller walks it)
NOT_KEYS = NOT_CLASS
#: :func:`keys_mask`'s answer when members' completion is to be settled first (see its ``ask``)
ASK = 4
#: room for the members one ``ASK`` lists (a node's children: at most 256)
ASK_ROOM = 258
#: ``ret`` slot: the depth of the names' frame stack
_R_KSP = 2
# phases: each trie's joint walk (its first frame pushed, then run), then its walk below the
# states made where tokens leave the names; the special trie first
_KM_INIT_SPECIAL, _KM_NAMES_SPECIAL, _KM_WALK_SPECIAL, _KM_INIT_PLAIN, _KM_NAMES_PLAIN, \
    _KM_WALK_PLAIN, _KM_DONE = range(7)
assert _KM_INIT_SPECIAL == PH_START
#: ints per frame of the names' stack: trie node, names ``[q1, q2)``, bytes read ``d``, next edge
KF = 5


@kernel
def _head(S, state):
    """The key set term at the head of ``state``'s term (read through a reference to a rule
    whose body is one: a key position's rule, compiled by the masker before it asks) and what
    follows it (``EPS`` for a bare key set); ``(-1, 0)`` where the state is no key position
    walked here (escape and end modes, like a rule not compiled yet, are left to the walk)."""
    S = K.borrow(S)
    ti = S[K.S_TI]
    t = S[K.S_TERM_OF][state]
    h = t
    rest = K.EPS
    if ti[t, 0] == K.K_SEQ:
        h = ti[t, 1]
        rest = ti[t, 2]
    if ti[h, 0] == K_REF:
        h = S[S_RULE][ti[h, 1]]
        if h < 0:
            return -1, 0
    if ti[h, 0] != K.K_KEYS or ti[h, 3] >= K.KD_ESC:
        return -1, 0
    return h, rest


@kernel
def _names_walk(S, state, trie, h, rest, kst, out, st_node, st_state, st_edge, ret, room, kroom,
                ksp, ask):
    """Run the joint walk of ``trie`` and the names of key set term ``h`` whose stack ``kst``
    holds ``ksp`` frames; the states made where tokens leave the names are pushed as frames of
    :func:`walk_trie` (``ret[R_SP]`` of them). 0 when done, -1 on exit (the frame being read
    pushed back, the depth in ``ret[_R_KSP]``), -2 past ``room`` or ``kroom`` frames, -3 when
    members' completion must be known first: ``ask[0]`` the table, ``ask[1]`` their count, then
    the members (every one the frame's edges wait for: one return to Python for a node's
    names, not one each; the frame pushed back as on an exit)."""
    S = K.borrow(S)
    child_ptr, child_byte, child_node = K.borrow(trie[0]), K.borrow(trie[1]), K.borrow(trie[2])
    tok_ptr, tok_ids = K.borrow(trie[3]), K.borrow(trie[4])
    kst, out, ret = K.borrow(kst), K.borrow(out), K.borrow(ret)
    st_node, st_state, st_edge = K.borrow(st_node), K.borrow(st_state), K.borrow(st_edge)
    ti = S[K.S_TI]
    pool = S[K.S_POOL]
    C = ti[h, 1]
    T = pool[C]
    st = pool[T + KT_START]
    bl = pool[T + KT_BLOB]
    sy = pool[T + KT_SYN]
    close = pool[sy + SY_CLOSE]
    esc = pool[sy + SY_ESCAPE]
    low = pool[sy + SY_LOW]
    raw = pool[T + KT_RAW]
    gsp = ret[R_SP]
    d0 = ti[h, 3]
    p0 = ti[h, 2]
    while ksp > 0:
        ksp -= 1  # (its slot is free: the frame is read into locals, pushed back on an exit)
        f = ksp * KF
        v = kst[f]
        q1 = kst[f + 1]
        q2 = kst[f + 2]
        d = kst[f + 3]
        e = kst[f + 4]
        end = child_ptr[v + 1]
        s = q1 + 1 if _klen(pool, st, q1) == d else q1  # (a name ending here sorts first)
        boundary = s < q2 and (pool[bl + pool[st + s] + d] & 0xC0) != 0x80
        stop = 0  # 1: an exit at edge e; 3: members to ask (from edge e0 on)
        e0 = -1
        nask = 0
        while e < end:
            b = child_byte[e]
            c = child_node[e]
            if b >= low and b != close and b != esc:  # a byte of the names: their range narrows
                if s >= q2:
                    e += 1
                    continue
                r1 = _k_bound(pool, st, bl, s, q2, d, b, False)
                r2 = _k_bound(pool, st, bl, r1, q2, d, b, True)
                if r1 == r2:
                    e += 1
                    continue
                if boundary:  # a character starts: written raw only where the syntax allows it
                    cp, _ = _k_decode(pool, st, bl, r1, d)
                    i = _k_cp(pool, T, cp)
                    if i < 0 or pool[raw + i] == 0:
                        e += 1
                        continue
                a = _k_first(pool, T, C, r1, r2)
                if a < 0 or e0 >= 0:  # (collecting: the other edges only say what they wait for)
                    if a < 0:
                        if e0 < 0:
                            e0 = e
                        if nask < ask.shape[0] - 2:
                            ask[2 + nask] = -2 - a
                            nask += 1
                    e += 1
                    continue
                if a == 1:
                    _set_bits(out, tok_ids, tok_ptr[c], tok_ptr[c + 1])
                    if child_ptr[c + 1] > child_ptr[c]:
                        if ksp + 1 >= kroom:  # (a slot kept for this frame, pushed back on exit)
                            return -2
                        g = ksp * KF
                        kst[g] = c
                        kst[g + 1] = r1
                        kst[g + 2] = r2
                        kst[g + 3] = d + 1
                        kst[g + 4] = child_ptr[c]
                        ksp += 1
                e += 1
                continue
            if b != esc and not (b == close and s > q1):
                e += 1  # (a closing quote before a whole name: nothing)
                continue
            if e0 >= 0:
                e += 1
                continue
            # a token leaves the names (a whole name closed, an escape): the exact successor,
            # one state (the root's transition, else the derivative of this range's term)
            if d == d0 and q1 == p0:
                nxt = K.fill_entry(S, state, b)
            else:
                nxt = K.FAIL
                kt = _k_term(S, pool, T, C, q1, q2, d)
                if kt >= 0:
                    x = K.seq(S, kt, rest)
                    if x >= 0:
                        u = K.deriv(S, x, b)
                        if u >= 0:
                            nxt = _live_state(S, u)
            if nxt == K.FAIL:
                stop = 1
                break
            if nxt >= 0:
                _set_bits(out, tok_ids, tok_ptr[c], tok_ptr[c + 1])
                if child_ptr[c + 1] > child_ptr[c]:
                    if gsp >= room:
                        return -2
                    st_node[gsp] = c
                    st_state[gsp] = nxt
                    st_edge[gsp] = child_ptr[c]
                    gsp += 1
            e += 1
        if stop == 0 and e0 >= 0:  # pushed back at the first edge waiting, the members asked
            e = e0
            stop = 3
            ask[0] = T
            ask[1] = nask
        if stop != 0:  # pushed back at the edge being read: a resumed walk redoes nothing
            g = ksp * KF
            kst[g] = v
            kst[g + 1] = q1
            kst[g + 2] = q2
            kst[g + 3] = d
            kst[g + 4] = e
            ret[_R_KSP] = ksp + 1
            ret[R_SP] = gsp
            return -1 if stop == 1 else -3
    ret[_R_KSP] = 0
    ret[R_SP] = gsp
    return 0


@unit(K._i64, K.STORE, K._i64, _TRIE, _TRIE, K._I32_1, K._i64, K._i64, K._I32_1, _U32_2, _RUNS,
      K._i64, K._I32_3, K._I32_1, K._i64, K._I32_1, K._I32_1, K._I32_1, _U32_2, _U64_1, _U32_1,
      K._I32_1, K._I32_1, K._I32_1, _I64_1, _I64_1)
def keys_mask(S, state, special, plain, kst, kroom, room, big, big_bits, runs, special_mode, pseq,
              plen, wide, nchars, tchars, len_row, len_bits, below, out, st_node, st_state,
              st_edge, ret, ask):
    """The allowed-token bits of key position ``state`` (``K_KEYS(C, p, d) rest``, EOS aside)
    OR-ed into ``out``: each trie walked jointly with the names (see the module docstring), then
    below the states made where tokens leave them by :func:`walk_trie` (``special_mode`` and the
    plain trie's tables as :func:`~dotjson._kernels.walk.compute_mask` passes them). ``kst``:
    ``kroom`` frames of the names' walk; ``room``: frames :func:`walk_trie`'s may start with.

    ``NOT_KEYS`` for any other state (escape and end modes too), ``NO_ROOM`` where the frames do
    not fit (the caller walks the state whole, ``out`` discarded), ``ASK`` where members'
    completion must be known first (``ask``: the table, their count, the members; the caller
    settles them, ``Automaton._key_alive``, and calls again); resumable as
    :func:`~dotjson._kernels.walk.compute_mask` (``ret[R_PHASE] = PH_START`` once, call again
    after ``EXIT``)."""
    S = K.borrow(S)
    special, plain, kst = K.borrow(special), K.borrow(plain), K.borrow(kst)
    big, big_bits, runs = K.borrow(big), K.borrow(big_bits), K.borrow(runs)
    pseq, plen, nchars, tchars = K.borrow(pseq), K.borrow(plen), K.borrow(nchars), K.borrow(tchars)
    len_row, len_bits, below = K.borrow(len_row), K.borrow(len_bits), K.borrow(below)
    out, ret = K.borrow(out), K.borrow(ret)
    st_node, st_state, st_edge = K.borrow(st_node), K.borrow(st_state), K.borrow(st_edge)
    h, rest = _head(S, state)
    if h < 0:
        return NOT_KEYS
    while True:
        ph = ret[R_PHASE]
        if ph == _KM_INIT_SPECIAL or ph == _KM_INIT_PLAIN:
            # the first frame: the root, over the term's names
            pool = S[K.S_POOL]
            ti = S[K.S_TI]
            T = pool[ti[h, 1]]
            kst[0] = 0
            kst[1] = ti[h, 2]
            kst[2] = _k_block_end(pool, T, ti[h, 2], ti[h, 3])
            kst[3] = ti[h, 3]
            kst[4] = (plain if ph == _KM_INIT_PLAIN else special)[0][0]
            ret[_R_KSP] = 1
            ret[R_SP] = 0
            ret[R_PHASE] = _KM_NAMES_PLAIN if ph == _KM_INIT_PLAIN else _KM_NAMES_SPECIAL
        elif ph == _KM_NAMES_SPECIAL or ph == _KM_NAMES_PLAIN:
            p = ph == _KM_NAMES_PLAIN
            r = _names_walk(S, state, plain if p else special, h, rest, kst, out, st_node,
                            st_state, st_edge, ret, room, kroom, ret[_R_KSP], ask)
            if r == -1:
                return EXIT
            if r == -3:
                return ASK
            if r == -2:
                return NO_ROOM
            ret[R_PHASE] = ph + 1  # (its walk)
        elif ph == _KM_WALK_SPECIAL or ph == _KM_WALK_PLAIN:
            r = walk_seeded(S, ph == _KM_WALK_PLAIN, special, plain, special_mode, big, big_bits,
                            runs, pseq, plen, wide, nchars, tchars, len_row, len_bits, below, out,
                            st_node, st_state, st_edge, ret)
            if r == EXIT:
                return EXIT
            ret[R_PHASE] = ph + 1  # (the plain trie's names, or done)
        else:
            return DONE
