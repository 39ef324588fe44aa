"""The plain walk's subtree shortcuts: what a trie node's subtree is worth without visiting it.

:func:`dotjson._kernels.walk.walk_trie` asks these below a node: a state that takes every byte
below the node back to itself takes the subtree whole (:func:`_class_whole`, the state's
invariant ASCII bytes :func:`_ascii_class`); a state that counts a class of bytes takes it whole
or by its tokens' lengths (:func:`_counted_subtree`, the state's chain :func:`_class_chain`);
and the bit operations that set a subtree's tokens (:func:`or_words`, :func:`and_or_words`,
:func:`_by_length`, :func:`_set_bits`); a bounded plain run takes its tokens by their lengths
(:func:`_run_subtree`). Transitions not known yet are computed on the spot
(:func:`_fill`); every kernel returns -1 on an exit to Python, as the walk does.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel, unit
from ..automaton import kernels as K

#: the plain trie's class-chain shortcut (:func:`_class_chain`) is tried below nodes this large
CLASS_MIN_NODES = 2
#: ... and from this size on even in a state whose row is not known yet (computing a row for
#: a small subtree alone costs more than walking it)
CLASS_ROW_NODES = 1024
#: :func:`_class_chain` follows a state's class at most this many bytes deep, first this many
_CHAIN_CAP = 128
_CHAIN_FIRST = 1
#: :func:`_class_chain`'s ``k_dead`` when no depth is known to kill every string of the class
CHAIN_NONE = 255
#: A frame's invariant ASCII bytes (:func:`walk_trie`) not read yet: their second word is
#: all ones only where every byte 64..127 keeps the state, which is then read again (the memo's)
_NO_CLASS = np.uint64(0xFFFFFFFFFFFFFFFF)


@kernel
def _set_bits(out, tok_ids, lo, hi):
    for i in range(lo, hi):
        t = tok_ids[i]
        out[t >> 5] |= np.uint32(1) << np.uint32(t & 31)


@kernel
def _fill(S, s, b, wide):
    """The transition of state ``s`` on byte ``b``, computed if not known (the whole row at a
    wide node); -1 on exit."""
    S = K.borrow(S)
    trans = S[K.S_TRANS]
    r = trans[s, b]
    if r == -1:
        r = K.fill_row(S, s) if wide else K.fill_entry(S, s, b)
        if r == K.FAIL:
            return K.FAIL
        r = trans[s, b]
    return r


# Optional units (jit.unit's ``declined``): the class shortcuts' computations are exact to skip,
# so on a cold cache a first mask walks those subtrees node by node rather than wait for their
# compile (with plain_open's, ~8 s of the walk's 14 s), until a helper has them.


@kernel
def _ascii_class(S, s):
    """The BYTES term of the ASCII bytes (1..127) each of which takes state ``s`` back to ``s``
    (``EMPTY``: none), from its whole row, memoized per term; -1 on exit. A memo hit here, a
    miss :func:`_ascii_class_miss` (``EMPTY`` until that optional unit is linked)."""
    S = K.borrow(S)
    r = K._mget(S, K._T_ACLS | np.int64(S[K.S_TERM_OF][s]))
    if r >= 0:
        return r
    return _ascii_class_miss(S, s)


@unit(K._i64, K.STORE, K._i64, declined=K.EMPTY)
def _ascii_class_miss(S, s):
    """:func:`_ascii_class` computed and memoized; an optional unit."""
    S = K.borrow(S)
    key = K._T_ACLS | np.int64(S[K.S_TERM_OF][s])
    if K.fill_row(S, s) == K.FAIL:
        return K.FAIL
    trans = S[K.S_TRANS]
    w0 = np.uint64(0)
    w1 = np.uint64(0)
    for b in range(1, 64):
        if trans[s, b] == s:
            w0 |= np.uint64(1) << np.uint64(b)
    for b in range(64, 128):
        if trans[s, b] == s:
            w1 |= np.uint64(1) << np.uint64(b - 64)
    r = K.mk_bytes(S, w0, w1, np.uint64(0), np.uint64(0))
    if r == K.FAIL:
        return K.FAIL
    if K._mput(S, key, r) < 0:
        return K.FAIL
    return r


@kernel
def _class_whole(S, below, c, state, cls):
    """1 when every byte below plain-trie node ``c`` takes ``state`` back to itself, else 0; -1
    on exit. ``cls``: the state's invariant ASCII bytes (:func:`_ascii_class`), read into it once
    per frame (``cls[1] == _NO_CLASS``: not yet), and only for a state whose row is known (a
    wide node's: computing a row for this alone cost more at first masks than it saved)."""
    S = K.borrow(S)
    if cls[1] == _NO_CLASS:
        cl = _ascii_class(S, state) if S[K.S_READY][state] else K.EMPTY
        if cl == K.FAIL:
            return -1
        cls[0] = cls[1] = np.uint64(0)
        if cl != K.EMPTY:
            row = S[K.S_TI][cl, 1]  # (its byte set's row in the store's byte sets)
            cls[0] = S[K.S_BW][row, 0]
            cls[1] = S[K.S_BW][row, 1]
    return 1 if (below[2 * c] & ~cls[0]) == 0 and (below[2 * c + 1] & ~cls[1]) == 0 else 0


@kernel
def _class_chain(S, s, need):
    """A counted class of live state ``s``: ``(r, cls)``, ``cls`` a BYTES term (``EMPTY``:
    none) of ASCII bytes and ``r = k_alive | k_dead << 8 | depth << 16``, where every string of
    at most ``k_alive`` bytes of the class leaves ``s`` alive and every one of ``k_dead`` bytes
    kills it (so does every longer one; :data:`CHAIN_NONE`: no such depth known), read ``depth``
    bytes deep (at least ``need`` where the chain goes on; :data:`_CHAIN_CAP` where it cannot
    go further). Memoized per term, and followed further when a later question needs it;
    ``(-1, -1)`` on exit.

    The class is the largest set of ASCII bytes taking ``s`` to one state; the states after
    ``1, 2, ...`` of its bytes are followed while the whole class takes each to one state (a
    chain: ``[a-z]{2,30}``'s counter, a hostname's label, a date's digits), no deeper than asked
    (each depth is a state made). The plain trie's walk asks it below a node reached in ``s``: a
    subtree whose bytes are all of the class is then taken whole, or by its tokens' lengths,
    without visiting its nodes (an ``email``'s domain: ~63,000 nodes of Llama 3 below letters
    and digits, ~1.5 ms a mask, at every new position of the domain)."""
    S = K.borrow(S)
    t = np.int64(S[K.S_TERM_OF][s])
    need = max(1, min(need, _CHAIN_CAP))
    r = K._mget(S, K._T_CREACH | t)
    if r >= 0 and ((r >> 16) >= need or (r & 255) < (r >> 16) or ((r >> 8) & 255) != CHAIN_NONE):
        return r, K._mget(S, K._T_CCLS | t)  # (deep enough, or nothing deeper to learn)
    if K.fill_row(S, s) == K.FAIL:
        return -1, -1
    trans = S[K.S_TRANS]
    # the class: the live target most ASCII bytes share (among the first few targets met)
    tg = K.scratch(np.int32, 8, 0)
    tn = K.scratch(np.int32, 8, 0)
    nt = 0
    for b in range(1, 128):
        v = trans[s, b]
        if v < 0:
            continue
        x = 0
        while x < nt and tg[x] != v:
            x += 1
        if x < nt:
            tn[x] += 1
        elif nt < 8:
            tg[nt] = v
            tn[nt] = 1
            nt += 1
    best = -1
    nbest = 1
    for x in range(nt):
        if tn[x] > nbest:
            best = tg[x]
            nbest = tn[x]
    w0 = np.uint64(0)
    w1 = np.uint64(0)
    k_alive = 0
    k_dead = CHAIN_NONE
    depth = need
    if best >= 0:
        for b in range(1, 128):
            if trans[s, b] == best:
                if b < 64:
                    w0 |= np.uint64(1) << np.uint64(b)
                else:
                    w1 |= np.uint64(1) << np.uint64(b - 64)
        u = best
        k_alive = 1
        while k_alive < need:
            v0 = -3
            same = True
            dead = False
            for b in range(1, 128):
                w = w0 if b < 64 else w1
                if ((w >> np.uint64(b & 63)) & np.uint64(1)) == 0:
                    continue
                v = _fill(S, u, b, True)
                if v == K.FAIL:
                    return -1, -1
                if v < 0:
                    dead = True
                if v0 == -3:
                    v0 = v
                elif v != v0:
                    same = False
                if dead and not same:
                    break  # (some string one byte longer dies, some lives)
            if not same:
                if not dead:
                    k_alive += 1  # (every string one byte longer lives, in states of its own)
                depth = _CHAIN_CAP
                break
            if v0 < 0:
                k_dead = k_alive + 1
                break
            u = v0
            k_alive += 1
    cl = K.mk_bytes(S, w0, w1, np.uint64(0), np.uint64(0))
    if cl == K.FAIL:
        return -1, -1
    r = k_alive | (k_dead << 8) | (depth << 16)
    if K._mput(S, K._T_CCLS | t, cl) < 0 or K._mput(S, K._T_CREACH | t, r) < 0:
        return -1, -1
    return r, cl


@unit(K._i64, K.STORE, K._i64, K._i64, declined=0)
def _class_chain_packed(S, s, need):
    """:func:`_class_chain` as one word, ``cls << 24 | r`` (-1 on exit; ``r`` takes 24 bits:
    its depth is at most :data:`_CHAIN_CAP`); an optional unit, 0 (no class) until linked."""
    S = K.borrow(S)
    r, cl = _class_chain(S, s, need)
    if r < 0:
        return -1
    return (np.int64(cl) << 24) | r


@kernel
def _by_length(out, c, lim, big, big_bits, len_row, len_bits, tok_ptr, tok_ids, subtree_end, tchars):
    """Set the tokens of plain-trie node ``c``'s subtree (``c``'s own included) of at most
    ``lim`` characters from the root: through the subtree's bitset and a length row where it
    has one, else token by token."""
    kb = big[c]
    if kb >= 0 and len_row.shape[0] > 0:
        if lim >= len_row.shape[0]:
            or_words(out, big_bits[kb])
        else:
            and_or_words(out, big_bits[kb], len_bits[len_row[lim]])
    else:
        for i in range(tok_ptr[c], tok_ptr[subtree_end[c]]):
            if tchars[i] <= lim:
                t = tok_ids[i]
                out[t >> 5] |= np.uint32(1) << np.uint32(t & 31)


@kernel
def _run_subtree(S, nxt, c, pseq, plen, out, big, big_bits, len_row, len_bits, tok_ptr, tok_ids,
                 subtree_end, nchars, tchars):
    """Plain-trie node ``c``, reached in state ``nxt`` (neither plain-invariant nor known to
    be no run), against a bounded plain run (:func:`~dotjson.automaton.states.run_len`): 2 when
    its tokens of at most ``k`` characters below were taken (into ``out``), 1 when the state
    allows every plain token (:func:`~dotjson.automaton.states.plain_open`: the subtree is to be
    taken whole), 0 when it is to be walked (the state then flagged ``INV_NO_RUN``, not to be
    asked again); -1 on exit."""
    S = K.borrow(S)
    k = K.run_len(S, nxt, pseq, plen)
    if k < 0:
        return -1
    if k == 0:
        u = K.plain_open(S, nxt, pseq, plen)
        if u < 0:
            return -1
        if u == 1:
            return 1
        if u == 0:  # (2: not answered yet, an optional unit not linked: asked again later)
            S[K.S_INV][nxt] = K.INV_NO_RUN
        return 0
    _by_length(out, c, nchars[c] + k, big, big_bits, len_row, len_bits, tok_ptr, tok_ids,
               subtree_end, tchars)
    return 2


@kernel
def _counted_subtree(S, nxt, c, below, chain, chain_w, out, big, big_bits, len_row, len_bits,
                     tok_ptr, tok_ids, subtree_end, nchars, tchars):
    """Plain-trie node ``c``, reached in state ``nxt``, against the state's counted class
    (:func:`_class_chain`): 1 when its subtree is to be taken whole, 2 when its tokens were
    taken by their lengths (into ``out``), 0 when it is to be walked; -1 on exit. ``chain``
    and ``chain_w``: the last state read in the frame (``chain[0]``, ``chain[1]`` its answer)
    and its class's words, so that siblings reached in one state read it once."""
    S = K.borrow(S)
    if nxt != chain[0]:
        v = _class_chain_packed(S, nxt, _CHAIN_FIRST)
        if v < 0:
            return -1
        r = v & 0xFFFFFF
        cl = v >> 24
        chain[0] = nxt
        chain[1] = r
        row = S[K.S_TI][cl, 1]
        chain_w[0] = S[K.S_BW][row, 0] if cl != K.EMPTY else np.uint64(0)
        chain_w[1] = S[K.S_BW][row, 1] if cl != K.EMPTY else np.uint64(0)
    r = chain[1]
    if (r & 255) == 0 or (below[2 * c] & ~chain_w[0]) != 0 or (below[2 * c + 1] & ~chain_w[1]) != 0:
        return 0
    # every byte below is of the class: as far as the subtree's longest token
    deep = 0
    for i in range(tok_ptr[c], tok_ptr[subtree_end[c]]):
        deep = max(deep, tchars[i])
    deep -= nchars[c]
    if deep > (r >> 16):  # (read further)
        v = _class_chain_packed(S, nxt, deep)
        if v < 0:
            return -1
        r = v & 0xFFFFFF
        chain[1] = r
    ka = r & 255
    if ka >= deep:
        return 1
    if ((r >> 8) & 255) == ka + 1:  # the tokens of at most ka bytes
        _by_length(out, c, nchars[c] + ka, big, big_bits, len_row, len_bits, tok_ptr, tok_ids,
                   subtree_end, tchars)
        return 2
    return 0


@kernel
def or_words(out, src):
    for i in range(out.shape[0]):
        out[i] |= src[i]


@kernel
def and_or_words(out, a, b):
    for i in range(out.shape[0]):
        out[i] |= a[i] & b[i]
