"""Split heads: a state of a mask walk as its *shared head* and the rest of the document.

A state is the whole rest of the document, so the states a mask's walk makes below a node are
new at every position even where the tokens there depend on a few lexical items only: the value
of an undeclared member after ``":`` (any JSON value), a string's rest after a partial UTF-8
character or an escape. :func:`_split` reads such a state's term as ``A c``: ``A`` the longest
chain of leading items that name no rule but the base image's (:func:`_shared`: the same terms
in every store started from that image), ``c`` what follows. The walk
(:func:`dotjson._kernels.walk.walk_trie`, :data:`~dotjson._kernels.walk.SPLITS`) then goes on
in ``A``'s own states — made once per store and shared by every position with that head — and,
from each node where ``A``'s state accepts, in ``c``'s (:func:`_frames_of`). Exact: the tokens
below a node in ``A c`` are those below it in ``A`` (``c`` is live, as the state is) and those
that complete a word of ``A`` and go on in ``c``. Off in the reference walk (``WALK_ALL``);
tested against it (``tests/test_split_heads.py``).
"""

from __future__ import annotations

import numpy as np

from .jit import kernel, unit
from ..automaton import kernels as K

_I64_1 = K._I64_1

#: A state is split (:data:`SPLITS`) only above a subtree of at least this many nodes: below a
#: smaller one the few states it saves cost less than asking (a probe of the memo table) at
#: every node. Measured over the MaskBench sample's first documents, masks paired per step
#: (``/work/helpers/probes/ab_split.py``): 2 -> 0.98, 8 -> 0.97, 128 -> 0.96 of the unsplit
#: walk's time, 2,048 -> 0.99 (no split is big enough).
SPLIT_MIN_NODES = 128


@kernel
def _shared(S, t):
    """1 when term ``t`` names no rule but the base image's (``ctl[C_NBASE]``: rules every store
    from that image shares), holds no key set, intersection or difference, and is
    small (at most 64 terms below it), its counts plain numbers; else 0; -1 on exit. Memoized
    per term."""
    key = K._T_SHR | np.int64(t)
    r = K._mget(S, key)
    if r >= 0:
        return r
    ti, tf, pool = S[K.S_TI], S[K.S_TF], S[K.S_POOL]
    nbase = S[K.S_CTL][K.C_NBASE]
    res = 1
    if (tf[t] & K.F_BOOL) != 0:
        res = 0
    else:
        stack = K.scratch(np.int32, 64, 0)
        stack[0] = t
        n = 1
        seen = 0
        while n > 0 and res == 1:
            n -= 1
            x = stack[n]
            seen += 1
            k = ti[x, 0]
            if seen > 64:
                res = 0
            elif k == K.K_REF:
                if ti[x, 1] >= nbase:
                    res = 0
            elif k == K.K_SEQ:
                if n + 2 > 64:
                    res = 0
                else:
                    stack[n] = ti[x, 1]
                    stack[n + 1] = ti[x, 2]
                    n += 2
            elif k == K.K_REP:
                if ti[x, 2] >= K.BAND or ti[x, 3] >= K.BAND:
                    res = 0  # (a count in a lane, or a marker: the index's own)
                else:
                    stack[n] = ti[x, 1]
                    n += 1
            elif k == K.K_ALT:
                off, m = ti[x, 1], ti[x, 2]
                if n + m > 64:
                    res = 0
                else:
                    for j in range(m):
                        stack[n] = pool[off + j]
                        n += 1
            elif k == K.K_KEYS or k > K.K_REF:  # (a key set; AND/DIFF carry F_BOOL)
                res = 0
    if K._mput(S, key, res) < 0:
        return -1
    return res


@kernel
def _split(S, s):
    """The state of the *shared head* of state ``s`` (its term is ``A c`` with ``A`` the longest
    chain of leading items that are :func:`_shared`, not nullable, and ``c`` what follows, not
    shared itself), ``c``'s term memoized under ``_T_SPLC``; -2 when there is none (nothing
    shared leads, or nothing unshared follows); -1 on exit. Memoized per term.

    The tokens below a trie node in state ``A c`` are those below it in ``A`` (a live head:
    ``c`` is live) and, from each node where ``A``'s state accepts, those below it in ``c``:
    walked so (:func:`walk_trie`), the head's states are ``A``'s alone, made once per store for
    every position whose head it is (the value of an undeclared member after ``":``, a string's
    rest after a partial character or an escape), instead of once per position with the whole
    rest of the document in each."""
    S = K.borrow(S)
    t = S[K.S_TERM_OF][s]
    key = K._T_SPLA | np.int64(t)
    r = K._mget(S, key)
    if r != -1:
        return r
    ti, tf = S[K.S_TI], S[K.S_TF]
    items = K.scratch(np.int32, 64, 0)
    n = 0
    cur = t
    while n < 64 and ti[cur, 0] == K.K_SEQ:
        sh = _shared(S, ti[cur, 1])
        if sh < 0:
            return -1
        if sh == 0:
            break
        items[n] = ti[cur, 1]
        n += 1
        cur = ti[cur, 2]
    res = -2
    if 0 < n < 64:  # (the loop stopped at an item not shared, or at the last item)
        last = 0
        if ti[cur, 0] != K.K_SEQ:
            last = _shared(S, cur)
            if last < 0:
                return -1
        if last == 0:  # (a shared last item: the whole term is shared, nothing to split off)
            a = K.seq_list(S, items, n)
            if a < 0:
                return -1
            if (tf[a] & K.F_NULL) == 0:
                sa = K.state(S, a)
                if sa < 0:
                    return -1
                if K._mput(S, K._T_SPLC | np.int64(t), cur) < 0:
                    return -1
                res = sa
    if K._mput(S, key, res) < 0:
        return -1
    return res


@unit(K._i64, K.STORE, K._i64, _I64_1)
def split_pair(S, s, out):
    """:func:`_split` of state ``s`` as ``out[0]`` (the head's state) and ``out[1]`` (the rest's
    term): 1, or 0 where ``s`` does not split; -1 on exit (for tests and debugging)."""
    S = K.borrow(S)
    a = _split(S, s)
    if a == -1:
        return -1
    if a < 0:
        return 0
    out[0] = a
    out[1] = K._mget(S, K._T_SPLC | np.int64(S[K.S_TERM_OF][s]))
    return 1


@kernel
def _frames_of(S, nxt, cont, split):
    """``(state, rest, rest's state)`` of the frames below a node reached in live state ``nxt``
    (with ``cont >= 0``: a pair's head state, ``cont`` its rest's term): ``nxt`` split first
    where ``split`` and it splits (:func:`_split`); the rest's state where the head has accepted
    (-1 elsewhere), and the rest's frame alone where nothing of the head is left. State -1 on
    exit."""
    fs = nxt
    fc = cont
    if split:
        a = _split(S, nxt)
        if a == -1:
            return -1, -1, -1
        if a >= 0:
            fs = a
            fc = K._mget(S, K._T_SPLC | np.int64(S[K.S_TERM_OF][nxt]))
    if fc < 0 or not S[K.S_ACC][fs]:
        return fs, fc, -1
    cs = K.state(S, fc)  # (the head is complete here: the rest goes on too)
    if cs < 0:
        return -1, -1, -1
    if S[K.S_TERM_OF][fs] == K.EPS:  # (nothing of the head is left: the rest's frame alone)
        return cs, -1, -1
    return fs, fc, cs
