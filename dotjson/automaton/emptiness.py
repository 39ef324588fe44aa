"""Emptiness and infiniteness of terms.

Terms without ``AND``/``DIFF`` are never empty (the constructors fold ∅ away); for the others a
bounded breadth-first search over derivative classes looks for a nullable derivative (the
index's ``fuel`` bounds it: ``LIMIT_FUEL``). Memoized in the per-term columns.
"""

from __future__ import annotations

import numpy as np
from .._kernels.jit import kernel, unit
from .store import (
    C_FUEL, C_TERMS, EMPTY, F_BOOL, F_NULL, INF, K_ALT, K_DIFF, K_REP, K_SEQ, LIMIT_FUEL, M_EMPTY, M_INF,
    M_ROW_LEN, M_ROW_OFF, STORE, S_CTL, S_POOL, S_RCT, S_TF, S_TI, S_TM, _fail, _grow_i32, _i64,
    _mix, borrow, scratch,
)
from .rows import row



@kernel
def _infinite(S, t0):
    """For AND/DIFF/REF-free terms: is the language infinite? (memoized in ``tm[:, M_INF]``)"""
    S = borrow(S)
    ti = S[S_TI]
    tm = S[S_TM]
    pool = S[S_POOL]
    if tm[t0, M_INF] >= 0:
        return tm[t0, M_INF]
    st = scratch(np.int32, 256, 0)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if tm[t, M_INF] >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        if k == K_REP:
            if ti[t, 3] != INF and tm[ti[t, 1], M_INF] < 0:
                st = _grow_i32(st, sp)
                st[sp] = ti[t, 1]
                sp += 1
        elif k == K_SEQ:
            for c in (ti[t, 1], ti[t, 2]):
                if tm[c, M_INF] < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_ALT:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                c = pool[off + x]
                if tm[c, M_INF] < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        if sp > top:
            continue
        r = 0
        if k == K_REP:
            r = 1 if (ti[t, 3] == INF or tm[ti[t, 1], M_INF] == 1) else 0
        elif k == K_SEQ:
            r = 1 if (tm[ti[t, 1], M_INF] == 1 or tm[ti[t, 2], M_INF] == 1) else 0
        elif k == K_ALT:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                if tm[pool[off + x], M_INF] == 1:
                    r = 1
        tm[t, M_INF] = r
        sp -= 1
    return tm[t0, M_INF]


@kernel
def _search_nonempty(S, t0):
    """Bounded breadth-first search for a nullable derivative: 1 found, 0 none, -1 exit.

    The fuel bounds the work, not only the steps: each successor examined costs one, and each
    term the search builds (computing rows) costs one more, so that a step over a large
    intersection (``allOf`` of 50 patterns: ~50 operand terms per derivative) spends fuel in
    proportion to what it costs in time and memory.
    """
    S = borrow(S)
    tf = S[S_TF]
    tm = S[S_TM]
    ctl = S[S_CTL]
    fuel = ctl[C_FUEL]
    built0 = ctl[C_TERMS]
    queue = scratch(np.int32, 64, 0)
    cap = 64
    seen = scratch(np.int32, 64, 0)
    for i in range(cap):
        seen[i] = -1
    n_seen = 0
    queue[0] = t0
    qh, qt = 0, 1
    seen[(_mix(t0, 7) & (cap - 1))] = t0
    n_seen = 1
    steps = 0
    while qh < qt:
        u = queue[qh]
        qh += 1
        if (tf[u] & F_NULL) != 0:
            return 1
        if row(S, u) < 0:
            return -1
        rct = S[S_RCT]
        off = tm[u, M_ROW_OFF]
        for i in range(off, off + tm[u, M_ROW_LEN]):
            v = rct[i]
            steps += 1
            if steps + (ctl[C_TERMS] - built0) > fuel:
                return _fail(S, LIMIT_FUEL, fuel)
            # membership in the seen set
            j = _mix(v, 7) & (cap - 1)
            found = False
            while seen[j] >= 0:
                if seen[j] == v:
                    found = True
                    break
                j = (j + 1) & (cap - 1)
            if found:
                continue
            if (tf[v] & F_BOOL) != 0 and tm[v, M_EMPTY] == 1:
                continue
            seen[j] = v
            n_seen += 1
            if 2 * n_seen > cap:
                old = seen
                cap *= 2
                seen = np.full(cap, -1, dtype=np.int32)
                for x in old:
                    if x >= 0:
                        jj = _mix(x, 7) & (cap - 1)
                        while seen[jj] >= 0:
                            jj = (jj + 1) & (cap - 1)
                        seen[jj] = x
            queue = _grow_i32(queue, qt)
            queue[qt] = v
            qt += 1
    return 0


@unit(_i64, STORE, _i64)
def _is_empty(S, t0):
    """1 when ``t0`` denotes ∅, 0 when not, -1 on exit (exact; a bounded search for AND/DIFF)."""
    S = borrow(S)
    if t0 == EMPTY:
        return 1
    ti = S[S_TI]
    tf = S[S_TF]
    tm = S[S_TM]
    pool = S[S_POOL]
    if (tf[t0] & F_BOOL) == 0:
        return 0
    if tm[t0, M_EMPTY] >= 0:
        return tm[t0, M_EMPTY]
    st = scratch(np.int32, 256, 0)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if tm[t, M_EMPTY] >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        r = -1
        pending = -1
        if k == K_SEQ or k == K_ALT:
            # short-circuit like any()/all(): a sequence stops at its first unknown item, an
            # alternation first looks for an item known non-empty
            want = 1 if k == K_SEQ else 0  # the item value that decides the result
            r = 1 - want
            if k == K_SEQ:
                # a cons cell (head, tail): the tail's emptiness is memoized on the tail, so a
                # new term on top of a deep stack costs O(1), not O(depth)
                for c in (ti[t, 1], ti[t, 2]):
                    v = _empty_known(S, c)
                    if v < 0:
                        pending = c
                        break
                    if v == want:
                        r = want
                        break
            else:
                # an item known non-empty decides before any unknown one is searched (an
                # alternation's items are in term-id order: searching the first unknown one
                # first sent an escaped digit of a date-time value through the leap second's
                # intersection, 197-205 ms of masks against 7.9 ms)
                off = ti[t, 1]
                for x in range(ti[t, 2]):
                    c = pool[off + x]
                    v = _empty_known(S, c)
                    if v == want:
                        r = want
                        pending = -1
                        break
                    if v < 0 and pending < 0:
                        pending = c
        elif k == K_REP:
            if ti[t, 2] > 0:
                v = _empty_known(S, ti[t, 1])
                if v < 0:
                    pending = ti[t, 1]
                else:
                    r = v
            else:
                r = 0
        else:
            a, b = ti[t, 1], ti[t, 2]
            if k == K_DIFF and (tf[a] & F_BOOL) == 0 and (tf[b] & F_BOOL) == 0 \
                    and _infinite(S, a) == 1 and _infinite(S, b) == 0:
                r = 0  # an infinite language minus a finite one is never empty
            else:
                f = _search_nonempty(S, t)
                if f < 0:
                    return -1
                r = 1 - f
        if pending >= 0:
            st = _grow_i32(st, sp)
            st[sp] = pending
            sp += 1
            continue
        tm[t, M_EMPTY] = r
        sp -= 1
    return tm[t0, M_EMPTY]


@kernel(python=True)
def is_empty(S, t0):
    """1 when ``t0`` denotes ∅, 0 when not, -1 on exit: what is known inline, the search
    (:func:`_is_empty`, a unit) otherwise."""
    S = borrow(S)
    if t0 == EMPTY:
        return 1
    if (S[S_TF][t0] & F_BOOL) == 0:
        return 0
    e = S[S_TM][t0, M_EMPTY]
    if e >= 0:
        return e
    return _is_empty(S, t0)



@kernel
def _empty_known(S, t):
    S = borrow(S)
    if t == EMPTY:
        return 1
    if (S[S_TF][t] & F_BOOL) == 0:
        return 0
    return S[S_TM][t, M_EMPTY]
