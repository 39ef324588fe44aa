"""Single-byte derivatives of terms (Brzozowski), memoized per term and byte.

``deriv`` answers memo hits inline; ``_deriv`` (a unit) computes the derivative iteratively with an
explicit stack: a term is visited, its missing sub-results are pushed, and it is computed once they
are all memoized. A rule reference expands one level per derivative (``NEED_RULE`` when its body is
not compiled yet).
"""

from __future__ import annotations

import numpy as np
from .._kernels.jit import kernel, unit
from .store import (
    EMPTY, EPS, F_NULL, INF, K_ALT, K_AND, K_BYTES, K_DIFF, K_EMPTY, K_EPS, K_KEYS, K_REF,
    K_REP, K_SEQ, M_ROW_LEN, M_ROW_OFF, NEED_RULE, STORE, S_BW, S_POOL, S_RCT, S_RCW, S_RULE,
    S_TF, S_TI, S_TM, _T_DERIV, _U1, _fail, _grow_i32, _i64, _mget, _mput, borrow,
    scratch,
)
from .terms import alt, and_, diff, rep, seq
from .keysets import KD_END, _k_deriv, _k_end



@kernel
def _has(words_row, byte):
    return (words_row[byte >> 6] >> np.uint64(byte & 63)) & _U1


@kernel
def _dget(S, t, byte):
    """The memoized derivative of ``t`` by ``byte``, or -1 if not known yet."""
    S = borrow(S)
    ti = S[S_TI]
    k = ti[t, 0]
    if k == K_EMPTY or k == K_EPS:
        return EMPTY
    if k == K_BYTES:
        return EPS if _has(S[S_BW][ti[t, 1]], byte) else EMPTY
    tm = S[S_TM]
    off = tm[t, M_ROW_OFF]
    if off >= 0:
        rcw = S[S_RCW]
        for i in range(off, off + tm[t, M_ROW_LEN]):
            if _has(rcw[i], byte):
                return S[S_RCT][i]
        return EMPTY
    return _mget(S, _T_DERIV | (np.int64(t) << 8) | byte)


@unit(_i64, STORE, _i64, _i64)
def _deriv(S, t0, byte):
    """The derivative of ``t0`` by one byte (memoized; ∅ when it cannot consume it)."""
    S = borrow(S)
    r = _dget(S, t0, byte)
    if r >= 0:
        return r
    ti = S[S_TI]
    tf = S[S_TF]
    pool = S[S_POOL]
    rules = S[S_RULE]
    blk = scratch(np.int32, 272, 0)  # (a deeper stack than 64 was grown on the heap often)
    st = blk[:256]
    parts = blk[256:]
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if _dget(S, t, byte) >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        # push what is missing
        if k == K_SEQ:
            cur = t
            while True:
                if ti[cur, 0] != K_SEQ:
                    if _dget(S, cur, byte) < 0:
                        st = _grow_i32(st, sp)
                        st[sp] = cur
                        sp += 1
                    break
                a = ti[cur, 1]
                if _dget(S, a, byte) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = a
                    sp += 1
                if (tf[a] & F_NULL) == 0:
                    break
                cur = ti[cur, 2]
                if _dget(S, cur, byte) >= 0:
                    break
        elif k == K_ALT or k == K_AND:
            off = ti[t, 1]
            for x in range(ti[t, 2]):
                c = pool[off + x]
                if _dget(S, c, byte) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_REP:
            if _dget(S, ti[t, 1], byte) < 0:
                st = _grow_i32(st, sp)
                st[sp] = ti[t, 1]
                sp += 1
        elif k == K_REF:
            body = rules[ti[t, 1]]
            if body < 0:
                return _fail(S, NEED_RULE, ti[t, 1])
            if _dget(S, body, byte) < 0:
                st = _grow_i32(st, sp)
                st[sp] = body
                sp += 1
        elif k == K_DIFF:
            for c in (ti[t, 1], ti[t, 2]):
                if _dget(S, c, byte) < 0:
                    st = _grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
        elif k == K_KEYS and ti[t, 3] >= KD_END:
            body = _k_end(S, t)
            if body < 0:
                return -1
            if _dget(S, body, byte) < 0:
                st = _grow_i32(st, sp)
                st[sp] = body
                sp += 1
        if sp > top:
            continue
        # every dependency is known: compute
        if k == K_SEQ:
            n = 0
            cur = t
            while True:
                if ti[cur, 0] != K_SEQ:
                    parts = _grow_i32(parts, n)
                    parts[n] = _dget(S, cur, byte)
                    n += 1
                    break
                a, b = ti[cur, 1], ti[cur, 2]
                d = seq(S, _dget(S, a, byte), b)
                if d < 0:
                    return -1
                parts = _grow_i32(parts, n)
                parts[n] = d
                n += 1
                if (tf[a] & F_NULL) == 0:
                    break
                cur = b
                known = _dget(S, cur, byte)
                if known >= 0:
                    parts = _grow_i32(parts, n)
                    parts[n] = known
                    n += 1
                    break
            r = parts[0] if n == 1 else alt(S, parts, n)
        elif k == K_ALT or k == K_AND:
            n = ti[t, 2]
            off = ti[t, 1]
            parts = _grow_i32(parts, n)
            for x in range(n):
                parts[x] = _dget(S, pool[off + x], byte)
            r = alt(S, parts, n) if k == K_ALT else and_(S, parts, n)
        elif k == K_REP:
            item, lo, hi = ti[t, 1], ti[t, 2], ti[t, 3]
            d = _dget(S, item, byte)
            if d == EMPTY:
                r = EMPTY
            else:
                rest = rep(S, item, max(lo - 1, 0), INF if hi == INF else hi - 1)
                if rest < 0:
                    return -1
                r = seq(S, d, rest)
        elif k == K_REF:
            r = _dget(S, rules[ti[t, 1]], byte)
        elif k == K_DIFF:
            r = diff(S, _dget(S, ti[t, 1], byte), _dget(S, ti[t, 2], byte))
        elif k == K_KEYS:
            if ti[t, 3] >= KD_END:
                r = _dget(S, _k_end(S, t), byte)
            else:
                r = _k_deriv(S, t, byte)
        else:
            r = EMPTY
        if r < 0:
            return -1
        if _mput(S, _T_DERIV | (np.int64(t) << 8) | byte, r) < 0:
            return -1
        sp -= 1
    return _dget(S, t0, byte)


@kernel(python=True)
def deriv(S, t0, byte):
    """The derivative of ``t0`` by one byte (memoized; ∅ when it cannot consume it): the memo
    inline, :func:`_deriv` (a unit) on a miss."""
    S = borrow(S)
    r = _dget(S, t0, byte)
    if r >= 0:
        return r
    return _deriv(S, t0, byte)
