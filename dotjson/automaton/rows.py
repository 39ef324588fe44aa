"""Derivative classes (rows): the 256 bytes partitioned by the successor they lead a term to.

A row is a list of disjoint byte masks with their distinct non-empty successors, in the store's class
pool; the row of an alternation comes from one partition refinement over its alternatives'
rows (``_union_rows``).
"""

from __future__ import annotations

import numpy as np
from numba import types
from .._kernels.jit import kernel, unit
from .store import (
    C_RC, EMPTY, EPS, F_NULL, INF, K_ALT, K_AND, K_BYTES, K_DIFF, K_KEYS, K_REF, K_REP, K_SEQ,
    M_ROW_LEN, M_ROW_OFF, NEED_GROW_RC, NEED_RULE, STORE, S_BW, S_CTL, S_POOL, S_RCT, S_RCW,
    S_RULE, S_TF, S_TI, S_TM, _I32_1, _U0, _U64_2, _fail, _grow_i32, _i64, borrow,
    scratch,
)

#: Classes :func:`_union_rows` merges with its cells on the stack (more: one heap block).
_SMALL_NS = 64
_SMALL_BLK = 514 + 2 * (4 * _SMALL_NS + 64) + _SMALL_NS + 1  # (a literal for scratch)
from .terms import alt, and2, diff, rep, seq
from .keysets import KD_END, _k_end, _k_row



@kernel
def _row_known(S, t):
    S = borrow(S)
    return S[S_TM][t, M_ROW_OFF] >= 0


@kernel
def _publish_row(S, t, cw, ct, n):
    """Store ``n`` classes as the row of ``t``; equal successors are merged first."""
    S = borrow(S)
    # merge classes with the same successor (small n: quadratic is fine)
    m = 0
    for i in range(n):
        j = 0
        while j < m and ct[j] != ct[i]:
            j += 1
        if j < m:
            for w in range(4):
                cw[j, w] |= cw[i, w]
        else:
            if j != i:
                ct[j] = ct[i]
                for w in range(4):
                    cw[j, w] = cw[i, w]
            m += 1
    ctl = S[S_CTL]
    off = ctl[C_RC]
    rcw = S[S_RCW]
    if off + m > rcw.shape[0]:
        return _fail(S, NEED_GROW_RC, m)
    rct = S[S_RCT]
    for i in range(m):
        for w in range(4):
            rcw[off + i, w] = cw[i, w]
        rct[off + i] = ct[i]
    ctl[C_RC] = off + m
    tm = S[S_TM]
    tm[t, M_ROW_LEN] = m
    tm[t, M_ROW_OFF] = off
    return 0


@unit(_i64, STORE, _U64_2, _I32_1, _i64, _U64_2, _I32_1)
def _union_rows(S, srcw, srct, ns, cw, ct):
    """Union of derivative classes ``(srcw[i], srct[i])`` for ``i < ns`` (masks may overlap):
    one partition refinement over all the classes' masks, then one ``alt`` per cell. Writes
    disjoint classes with distinct non-empty successors into ``cw``/``ct``; returns their number.

    Cells are byte masks with a persistent list of successors (a split shares its tail), so the
    cost is in the number of classes and cells, not in the 256 bytes."""
    S = borrow(S)
    # (the caller keeps them alive: views without reference counts)
    srcw, srct, cw, ct = borrow(srcw), borrow(srct), borrow(cw), borrow(ct)
    # fast path: pairwise disjoint masks need no refinement
    u0 = u1 = u2 = u3 = _U0
    disjoint = True
    for i in range(ns):
        if (u0 & srcw[i, 0]) | (u1 & srcw[i, 1]) | (u2 & srcw[i, 2]) | (u3 & srcw[i, 3]) != _U0:
            disjoint = False
            break
        u0 |= srcw[i, 0]
        u1 |= srcw[i, 1]
        u2 |= srcw[i, 2]
        u3 |= srcw[i, 3]
    if disjoint:
        m = 0
        for i in range(ns):
            if srct[i] == EMPTY:
                continue
            for w in range(4):
                cw[m, w] = srcw[i, w]
            ct[m] = srct[i]
            m += 1
        return _merge_same(cw, ct, m)
    nc0 = 4 * ns + 64
    if ns <= _SMALL_NS:  # (on the stack: see store.scratch)
        blk = scratch(np.int32, _SMALL_BLK, 0)
    else:
        blk = np.empty(257 + 257 + 2 * nc0 + ns + 1, dtype=np.int32)  # one allocation, sliced
    cell_head = blk[:257]
    cons_t = blk[514 : 514 + nc0]
    cons_n = blk[514 + nc0 : 514 + 2 * nc0]
    buf = blk[514 + 2 * nc0 :]
    cm = scratch(np.uint64, 257, 4)
    for w in range(4):
        cm[0, w] = ~_U0
    cell_head[0] = -1
    n_cells = 1
    n_cons = 0
    for i in range(ns):
        d = srct[i]
        nc = n_cells
        for c in range(nc):
            x0 = cm[c, 0] & srcw[i, 0]
            x1 = cm[c, 1] & srcw[i, 1]
            x2 = cm[c, 2] & srcw[i, 2]
            x3 = cm[c, 3] & srcw[i, 3]
            if (x0 | x1 | x2 | x3) == _U0:
                continue
            if n_cons + 1 >= cons_t.shape[0]:
                cons_t = _grow_i32(cons_t, n_cons + 1)
                cons_n = _grow_i32(cons_n, n_cons + 1)
            cons_t[n_cons] = d
            cons_n[n_cons] = cell_head[c]
            if x0 == cm[c, 0] and x1 == cm[c, 1] and x2 == cm[c, 2] and x3 == cm[c, 3]:
                cell_head[c] = n_cons
            else:
                cm[n_cells, 0] = x0
                cm[n_cells, 1] = x1
                cm[n_cells, 2] = x2
                cm[n_cells, 3] = x3
                cm[c, 0] &= ~x0
                cm[c, 1] &= ~x1
                cm[c, 2] &= ~x2
                cm[c, 3] &= ~x3
                cell_head[n_cells] = n_cons
                n_cells += 1
            n_cons += 1
    m = 0
    for c in range(n_cells):
        h = cell_head[c]
        if h < 0:
            continue
        n = 0
        while h >= 0:
            buf[n] = cons_t[h]  # a cell's list holds at most one entry per class
            n += 1
            h = cons_n[h]
        r = buf[0] if n == 1 else alt(S, buf, n)
        if r < 0:
            return -1
        if r == EMPTY:
            continue
        for w in range(4):
            cw[m, w] = cm[c, w]
        ct[m] = r
        m += 1
    return _merge_same(cw, ct, m)


@kernel
def _push_row_dep(S, st, sp, x):
    S = borrow(S)
    if not _row_known(S, x):
        st = _grow_i32(st, sp)
        st[sp] = x
        sp += 1
    return st, sp


@kernel
def _rep_row(S, t, cw, ct):
    """The classes of ``R{lo,hi}`` (its item's row known): the item's, each followed by
    ``R{lo-1,hi-1}``; their number, -1 on exit."""
    S = borrow(S)
    ti = S[S_TI]
    tm = S[S_TM]
    rcw = S[S_RCW]
    rct = S[S_RCT]
    item, lo, hi = ti[t, 1], ti[t, 2], ti[t, 3]
    rest = rep(S, item, max(lo - 1, 0), INF if hi == INF else hi - 1)
    if rest < 0:
        return -1
    n = 0
    off = tm[item, M_ROW_OFF]
    for i in range(off, off + tm[item, M_ROW_LEN]):
        d = seq(S, rct[i], rest)
        if d < 0:
            return -1
        for w in range(4):
            cw[n, w] = rcw[i, w]
        ct[n] = d
        n += 1
    return n


@kernel
def _and_row(S, t, cw, ct):
    """The classes of an AND (its items' rows known): the intersections of its items' classes
    with their successors intersected, empty ones dropped and equal ones merged; their number,
    -1 on exit."""
    S = borrow(S)
    ti = S[S_TI]
    tm = S[S_TM]
    pool = S[S_POOL]
    rcw = S[S_RCW]
    rct = S[S_RCT]
    poff = ti[t, 1]
    a = pool[poff]
    off = tm[a, M_ROW_OFF]
    n = tm[a, M_ROW_LEN]
    for i in range(n):
        for w in range(4):
            cw[i, w] = rcw[off + i, w]
        ct[i] = rct[off + i]
    tw = scratch(np.uint64, 257, 4)
    tt = scratch(np.int32, 257, 0)
    for x in range(1, ti[t, 2]):
        q = pool[poff + x]
        qoff = tm[q, M_ROW_OFF]
        m = 0
        for i in range(n):
            for j in range(qoff, qoff + tm[q, M_ROW_LEN]):
                nz = False
                for w in range(4):
                    tw[m, w] = cw[i, w] & rcw[j, w]
                    if tw[m, w] != _U0:
                        nz = True
                if not nz:
                    continue
                d = and2(S, ct[i], rct[j])
                if d < 0:
                    return -1
                if d == EMPTY:
                    continue
                tt[m] = d
                m += 1
        n = _merge_same(tw, tt, m)
        for i in range(n):
            for w in range(4):
                cw[i, w] = tw[i, w]
            ct[i] = tt[i]
    return n


@kernel
def _diff_row(S, t, cw, ct):
    """The classes of ``A - B`` (both rows known): where both have a class, the successors'
    difference (empty ones dropped); where only ``A`` has, its successor; equal ones merged.
    Their number, -1 on exit."""
    S = borrow(S)
    ti = S[S_TI]
    tm = S[S_TM]
    rcw = S[S_RCW]
    rct = S[S_RCT]
    a, b = ti[t, 1], ti[t, 2]
    qoff, qn = tm[b, M_ROW_OFF], tm[b, M_ROW_LEN]
    uq = scratch(np.uint64, 4, 0)
    for w in range(4):
        uq[w] = _U0
    for j in range(qoff, qoff + qn):
        for w in range(4):
            uq[w] |= rcw[j, w]
    n = 0
    aoff = tm[a, M_ROW_OFF]
    for i in range(aoff, aoff + tm[a, M_ROW_LEN]):
        d1 = rct[i]
        for j in range(qoff, qoff + qn):
            nz = False
            for w in range(4):
                cw[n, w] = rcw[i, w] & rcw[j, w]
                if cw[n, w] != _U0:
                    nz = True
            if not nz:
                continue
            d = diff(S, d1, rct[j])
            if d < 0:
                return -1
            if d == EMPTY:
                continue
            ct[n] = d
            n += 1
        nz = False
        for w in range(4):
            cw[n, w] = rcw[i, w] & ~uq[w]
            if cw[n, w] != _U0:
                nz = True
        if nz:
            ct[n] = d1
            n += 1
    return _merge_same(cw, ct, n)


@unit(_i64, STORE, _i64)
def _row(S, t0):
    """Memoize the derivative classes of ``t0``: disjoint byte masks with distinct non-empty
    successors (``tm[t0, M_ROW_OFF:M_ROW_LEN]`` into the class pool); 0, or -1 on exit."""
    S = borrow(S)
    if _row_known(S, t0):
        return 0
    ti = S[S_TI]
    tf = S[S_TF]
    tm = S[S_TM]
    pool = S[S_POOL]
    rules = S[S_RULE]
    ib = scratch(np.int32, 641, 0)  # 256 + 128 + 257, sliced (on the stack: see store.scratch)
    st = ib[:256]
    srct = ib[256:384]
    ct = ib[384:]
    # (two allocations, not a reshaped slice of one: reshape compiles Numba's shape-error
    # formatting, ~2 s of a cold start)
    srcw = scratch(np.uint64, 128, 4)
    cw = scratch(np.uint64, 257, 4)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if _row_known(S, t):
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        if k == K_SEQ:
            cur = t
            while True:
                if ti[cur, 0] != K_SEQ:
                    st, sp = _push_row_dep(S, st, sp, cur)
                    break
                a = ti[cur, 1]
                st, sp = _push_row_dep(S, st, sp, a)
                if (tf[a] & F_NULL) == 0:
                    break
                cur = ti[cur, 2]
                if _row_known(S, cur):
                    break
        elif k == K_ALT or k == K_AND:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                st, sp = _push_row_dep(S, st, sp, pool[off + x])
        elif k == K_REP:
            st, sp = _push_row_dep(S, st, sp, ti[t, 1])
        elif k == K_REF:
            body = rules[ti[t, 1]]
            if body < 0:
                return _fail(S, NEED_RULE, ti[t, 1])
            st, sp = _push_row_dep(S, st, sp, body)
        elif k == K_DIFF:
            st, sp = _push_row_dep(S, st, sp, ti[t, 1])
            st, sp = _push_row_dep(S, st, sp, ti[t, 2])
        elif k == K_KEYS and ti[t, 3] >= KD_END:
            body = _k_end(S, t)
            if body < 0:
                return -1
            st, sp = _push_row_dep(S, st, sp, body)
        if sp > top:
            continue
        rcw = S[S_RCW]
        rct = S[S_RCT]
        n = 0
        if k == K_BYTES:
            j = ti[t, 1]
            for w in range(4):
                cw[0, w] = S[S_BW][j, w]
            ct[0] = EPS
            n = 1
        elif k == K_REF or (k == K_KEYS and ti[t, 3] >= KD_END):  # its body's (tail's) row
            body = rules[ti[t, 1]] if k == K_REF else _k_end(S, t)
            tm[t, M_ROW_LEN] = tm[body, M_ROW_LEN]
            tm[t, M_ROW_OFF] = tm[body, M_ROW_OFF]
            sp -= 1
            continue
        elif k == K_KEYS:
            n = _k_row(S, t, cw, ct)
        elif k == K_SEQ or k == K_ALT:
            ns = 0
            single = True
            if k == K_SEQ:
                cur = t
                while True:
                    last = ti[cur, 0] != K_SEQ
                    a = cur if last else ti[cur, 1]
                    b = EPS if last else ti[cur, 2]
                    off = tm[a, M_ROW_OFF]
                    ln = tm[a, M_ROW_LEN]
                    if ns + ln > srct.shape[0]:
                        srcw, srct = _grow_cls(srcw, srct, ns + ln)
                    for i in range(off, off + ln):
                        d = seq(S, rct[i], b)
                        if d < 0:
                            return -1
                        for w in range(4):
                            srcw[ns, w] = rcw[i, w]
                        srct[ns] = d
                        ns += 1
                    if last or (tf[a] & F_NULL) == 0:
                        break
                    single = False
                    cur = b
                    if _row_known(S, cur):
                        off = tm[cur, M_ROW_OFF]
                        ln = tm[cur, M_ROW_LEN]
                        if ns + ln > srct.shape[0]:
                            srcw, srct = _grow_cls(srcw, srct, ns + ln)
                        for i in range(off, off + ln):
                            for w in range(4):
                                srcw[ns, w] = rcw[i, w]
                            srct[ns] = rct[i]
                            ns += 1
                        break
            else:
                poff = ti[t, 1]
                for x in range(ti[t, 2]):
                    a = pool[poff + x]
                    off = tm[a, M_ROW_OFF]
                    ln = tm[a, M_ROW_LEN]
                    if ns + ln > srct.shape[0]:
                        srcw, srct = _grow_cls(srcw, srct, ns + ln)
                    for i in range(off, off + ln):
                        for w in range(4):
                            srcw[ns, w] = rcw[i, w]
                        srct[ns] = rct[i]
                        ns += 1
            if k == K_SEQ and single:
                # one part (a non-nullable head): its classes are disjoint already
                for i in range(ns):
                    for w in range(4):
                        cw[i, w] = srcw[i, w]
                    ct[i] = srct[i]
                n = ns
            else:
                n = _union_rows(S, srcw, srct, ns, cw, ct)
        elif k == K_REP:
            n = _rep_row(S, t, cw, ct)
        elif k == K_AND:
            n = _and_row(S, t, cw, ct)
        elif k == K_DIFF:
            n = _diff_row(S, t, cw, ct)
        if n < 0:
            return -1
        if _publish_row(S, t, cw, ct, n) < 0:
            return -1
        sp -= 1
    return 0


@kernel(python=True)
def row(S, t0):
    """Memoize the derivative classes of ``t0`` (:func:`_row`, a unit, unless known); 0, or -1
    on exit."""
    S = borrow(S)
    if _row_known(S, t0):
        return 0
    return _row(S, t0)



@unit(types.Tuple((_U64_2, _I32_1)), _U64_2, _I32_1, _i64)
def _grow_cls(w, t, n):
    cap = max(2 * t.shape[0], n + 1)
    w2 = np.empty((cap, 4), dtype=np.uint64)
    t2 = np.empty(cap, dtype=np.int32)
    for i in range(t.shape[0]):  # (a loop: a 2-D slice assignment compiles shape-error code)
        w2[i, 0] = w[i, 0]
        w2[i, 1] = w[i, 1]
        w2[i, 2] = w[i, 2]
        w2[i, 3] = w[i, 3]
        t2[i] = t[i]
    return w2, t2


@kernel
def _merge_same(cw, ct, n):
    m = 0
    for i in range(n):
        j = 0
        while j < m and ct[j] != ct[i]:
            j += 1
        if j < m:
            for w in range(4):
                cw[j, w] |= cw[i, w]
        else:
            if j != i:
                ct[j] = ct[i]
                for w in range(4):
                    cw[j, w] = cw[i, w]
            m += 1
    return m
