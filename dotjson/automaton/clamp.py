"""Clamped mask keys: a term with the same one-token behaviour for tokens shorter than a limit.

Counters further than the limit from their bounds become unbounded (exactly so inside
intersections, through the ``radius`` of the clamped operands), so states that differ only in
far counters share one memoized mask.
"""

from __future__ import annotations

import numpy as np
from .._kernels.jit import kernel, unit
from .._kernels.group import group_by
from .store import (
    F_BOOL, F_NULL, F_REP, F_FAR, FAR_MIN, INF, K_ALT, K_AND, K_REP, K_SEQ, M_ROW_LEN, M_ROW_OFF, NO_FAR,
    RADIUS_FUEL, R_UNKNOWN, STORE, S_POOL, S_RCT, S_TF, S_TI, S_TM, _T_CLAMP, _T_FARHI,
    _T_RADIUS, _grow_i32, _i64, _mget, _mix, _mput, borrow,
)
from .terms import alt, and_, rep, seq
from .rows import row



@kernel
def _cget(S, t, limit):
    S = borrow(S)
    f = S[S_TF][t]
    if (f & F_REP) == 0 or ((f & F_FAR) == 0 and limit >= FAR_MIN):
        return t  # no counter a token can tell from unbounded: nothing to clamp
    return _mget(S, _T_CLAMP | (np.int64(t) << 16) | limit)


@unit(_i64, STORE, _i64)
def _radius(S, t0):
    """How far a term can be from acceptance: the largest, over the terms reachable from ``t0``
    by derivatives (``t0`` included), of the length in bytes of the shortest text taking that
    term to acceptance (terms that never accept are left out). :data:`R_UNKNOWN` when more than
    :data:`RADIUS_FUEL` terms are reachable; -1 on exit. For REF-free terms; memoized per term."""
    S = borrow(S)
    r = _mget(S, _T_RADIUS | t0)
    if r >= 0:
        return r
    tm = S[S_TM]
    tf = S[S_TF]
    cap = 1024  # a power of two above 2 * RADIUS_FUEL: the local index of the closure
    hkeys = np.full(cap, -1, dtype=np.int32)
    hvals = np.empty(cap, dtype=np.int32)
    terms = np.empty(RADIUS_FUEL, dtype=np.int32)
    esrc = np.empty(256, dtype=np.int32)
    edst = np.empty(256, dtype=np.int32)
    ne = 0
    terms[0] = t0
    h = _mix(np.int64(t0), 0x27D4EB2F) & (cap - 1)
    hkeys[h] = t0
    hvals[h] = 0
    n = 1
    i = 0
    while i < n:
        t = terms[i]
        if row(S, t) < 0:
            return -1
        off, ln = tm[t, M_ROW_OFF], tm[t, M_ROW_LEN]
        for x in range(off, off + ln):
            u = S[S_RCT][x]
            h = _mix(np.int64(u), 0x27D4EB2F) & (cap - 1)
            while hkeys[h] >= 0 and hkeys[h] != u:
                h = (h + 1) & (cap - 1)
            if hkeys[h] < 0:
                if n >= RADIUS_FUEL:
                    if _mput(S, _T_RADIUS | t0, R_UNKNOWN) < 0:
                        return -1
                    return R_UNKNOWN
                hkeys[h] = u
                hvals[h] = n
                terms[n] = u
                n += 1
            esrc = _grow_i32(esrc, ne)
            edst = _grow_i32(edst, ne)
            esrc[ne] = i
            edst[ne] = hvals[h]
            ne += 1
        i += 1
    # shortest distance to acceptance: a breadth-first search from the accepting terms along
    # reversed edges (every edge is one byte)
    start, into = group_by(edst[:ne], n)
    radj = esrc[:ne][into]
    dist = np.full(n, -1, dtype=np.int32)
    queue = np.empty(n, dtype=np.int32)
    qh, qt = 0, 0
    for v in range(n):
        if (tf[terms[v]] & F_NULL) != 0:
            dist[v] = 0
            queue[qt] = v
            qt += 1
    while qh < qt:
        v = queue[qh]
        qh += 1
        for y in range(start[v], start[v + 1]):
            u = radj[y]
            if dist[u] < 0:
                dist[u] = dist[v] + 1
                queue[qt] = u
                qt += 1
    r = 0
    for v in range(n):
        if dist[v] > r:
            r = dist[v]
    if _mput(S, _T_RADIUS | t0, r) < 0:
        return -1
    return r


@kernel
def radius(S, t0):
    """:func:`_radius` (a unit) of ``t0``, memoized (the memo read inline)."""
    S = borrow(S)
    r = _mget(S, _T_RADIUS | t0)
    if r >= 0:
        return r
    return _radius(S, t0)



@kernel
def _far_hi(S, t0, limit):
    """Over the counters of ``t0`` (REF-free, AND/DIFF-free): the least upper bound that
    :func:`clamp` at ``limit`` makes unbounded, or ``NO_FAR`` when it changes none; 0 when
    it would change a lower bound or ``t0`` holds AND/DIFF (no exact clamp then); -1 on exit."""
    S = borrow(S)
    ti = S[S_TI]
    tf = S[S_TF]
    pool = S[S_POOL]
    st = np.empty(64, dtype=np.int32)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if (tf[t] & F_REP) == 0 or _mget(S, _T_FARHI | (np.int64(t) << 16) | limit) >= 0:
            sp -= 1
            continue
        if (tf[t] & F_BOOL) != 0:
            if _mput(S, _T_FARHI | (np.int64(t) << 16) | limit, 0) < 0:
                return -1
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        # children: a sequence's head and tail, a repetition's item (fields 1.., inline), an
        # alternation's list in the pool
        if k == K_ALT:
            n, off = ti[t, 2], ti[t, 1]
        else:
            n, off = (2 if k == K_SEQ else 1), -1
        for x in range(n):
            c = ti[t, 1 + x] if off < 0 else pool[off + x]
            if (tf[c] & F_REP) != 0 and _mget(S, _T_FARHI | (np.int64(c) << 16) | limit) < 0:
                st = _grow_i32(st, sp)
                st[sp] = c
                sp += 1
        if sp > top:
            continue
        r = NO_FAR
        if k == K_REP:
            lo, hi = ti[t, 2], ti[t, 3]
            if lo > limit:
                r = 0
            elif hi != INF and hi > limit:
                r = hi
        for x in range(n):
            if r == 0:
                break
            c = ti[t, 1 + x] if off < 0 else pool[off + x]
            if (tf[c] & F_REP) != 0:
                v = _mget(S, _T_FARHI | (np.int64(c) << 16) | limit)
                r = min(r, v)
        if _mput(S, _T_FARHI | (np.int64(t) << 16) | limit, r) < 0:
            return -1
        sp -= 1
    if (tf[t0] & F_REP) == 0:
        return NO_FAR
    return _mget(S, _T_FARHI | (np.int64(t0) << 16) | limit)


@unit(_i64, STORE, _i64, _i64)
def _clamp(S, t0, limit):
    """A term with the same one-token behaviour as ``t0`` for tokens of at most ``limit - 1``
    bytes: counters far from their bounds become unbounded.

    Inside an intersection the counters may only become unbounded where that cannot change
    which tokens have a completion: with ``A'`` the intersection so clamped (lower bounds
    untouched) and ``R`` the :func:`radius` of ``A'``, a token ``w`` with a completion in
    ``A'`` has one of at most ``limit - 1 + R`` bytes, which iterates no counter more than that
    many times; when every upper bound made unbounded is at least ``limit + R``, that
    completion is in the exact intersection too. Otherwise (and for AND/DIFF nested in an
    intersection, and DIFF) the sub-term stays exact."""
    S = borrow(S)
    r = _cget(S, t0, limit)
    if r >= 0:
        return r
    ti = S[S_TI]
    tf = S[S_TF]
    pool = S[S_POOL]
    st = np.empty(64, dtype=np.int32)
    buf = np.empty(16, dtype=np.int32)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if _cget(S, t, limit) >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        if k == K_SEQ:
            # a cons cell (head, tail): the tail is a term of its own whose clamp is memoized,
            # so a new state on top of a deep stack costs O(1), not O(depth)
            for c in (ti[t, 1], ti[t, 2]):
                if _cget(S, c, limit) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_ALT:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                c = pool[off + x]
                if _cget(S, c, limit) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_REP:
            c = ti[t, 1]
            if (tf[c] & F_BOOL) == 0 and _cget(S, c, limit) < 0:
                st = _grow_i32(st, sp)
                st[sp] = c
                sp += 1
        elif k == K_AND:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                c = pool[off + x]
                if (tf[c] & F_BOOL) == 0 and _cget(S, c, limit) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        if sp > top:
            continue
        # a term none of whose parts the clamp changes is itself (not rebuilt: re-interning
        # every node of a large term, a format's language, cost ~18 us a node, 44 ms a date-time)
        if k == K_SEQ:
            h1, t1 = _cget(S, ti[t, 1], limit), _cget(S, ti[t, 2], limit)
            r = t if h1 == ti[t, 1] and t1 == ti[t, 2] else seq(S, h1, t1)
        elif k == K_ALT:
            off = ti[t, 1]
            n = ti[t, 2]
            buf = _grow_i32(buf, n)
            same = True
            for x in range(n):
                buf[x] = _cget(S, pool[off + x], limit)
                if buf[x] != pool[off + x]:
                    same = False
            r = t if same else alt(S, buf, n)
        elif k == K_REP:
            item, lo, hi = ti[t, 1], ti[t, 2], ti[t, 3]
            if (tf[item] & F_BOOL) == 0:
                item = _cget(S, item, limit)
                lo = min(lo, limit)
                if hi != INF and hi > limit:
                    hi = INF
            if item == ti[t, 1] and lo == ti[t, 2] and hi == ti[t, 3]:
                r = t
            else:
                r = rep(S, item, lo, hi)
        elif k == K_AND:
            r = _clamp_and(S, t, limit)
        else:
            r = t
        if r < 0:
            return -1
        if _mput(S, _T_CLAMP | (np.int64(t) << 16) | limit, r) < 0:
            return -1
        sp -= 1
    return _cget(S, t0, limit)


@kernel
def clamp(S, t0, limit):
    """:func:`_clamp` (a unit) of ``t0`` for tokens shorter than ``limit`` (the memo read
    inline)."""
    S = borrow(S)
    r = _cget(S, t0, limit)
    if r >= 0:
        return r
    return _clamp(S, t0, limit)



@kernel
def _clamp_and(S, t, limit):
    """The clamp of intersection ``t`` whose operands are clamped already (see :func:`clamp`):
    the clamped intersection when that is exact, else ``t``; -1 on exit."""
    S = borrow(S)
    ti = S[S_TI]
    tf = S[S_TF]
    pool = S[S_POOL]
    off, n = ti[t, 1], ti[t, 2]
    least = NO_FAR
    for x in range(n):
        c = pool[off + x]
        if (tf[c] & F_BOOL) != 0:
            return t
        v = _far_hi(S, c, limit)
        if v < 0:
            return -1
        if v == 0:
            return t
        least = min(least, v)
    if least == NO_FAR:
        return t
    buf = np.empty(n, dtype=np.int32)
    for x in range(n):
        buf[x] = _cget(S, pool[off + x], limit)
    a2 = and_(S, buf, n)
    if a2 < 0:
        return -1
    if a2 == t:
        return t
    r = radius(S, a2)
    if r < 0:
        return -1
    # (an unknown radius never clamps: a lane count, counters.LANES and up, exceeds R_UNKNOWN
    # while the count it stands for may not)
    if r < R_UNKNOWN and least >= limit + r:
        return a2
    return t
