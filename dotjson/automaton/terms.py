"""Interning constructors and the builder program.

Every term is made here: ``mk_simple``/``mk_bytes`` intern a node by structure (an open-addressing
hash table in the store), and the smart constructors normalise as they build (``seq`` keeps
sequences right-nested, ``alt`` flattens, deduplicates, sorts and merges byte sets, ``rep`` folds
trivial counts, ``diff``/``and_`` drop what cannot matter). ``build`` runs a postfix builder program
(one compiled rule body, :mod:`dotjson.automaton.rules`) in one kernel call.
"""

from __future__ import annotations

import numpy as np
from .._kernels.jit import kernel, unit
from .store import (
    C_BSETS, C_POOL, C_TERMS, EMPTY, EPS, F_BOOL, F_NULL, F_REP, F_FAR, FAR_MIN, INF, K_ALT, K_AND, K_BYTES,
    K_DIFF, K_REF, K_REP, K_SEQ, HASH_BITS, M_EMPTY, M_HASH, M_INF, M_ROW_LEN, M_ROW_OFF, M_STATE,
    NEED_GROW_BSETS,
    NEED_GROW_POOL, NEED_GROW_TERMS, STORE, S_BW, S_CTL, S_HT, S_POOL, S_TF, S_TI, S_TM,
    TERM_ID_BITS, _I32_1, _I64_1, _T_SEQ, _U0, _U64_2, _fail, _grow_i32, _hash_list,
    _hash_simple, _hash_words, _i64, _mget, _mput, borrow, scratch, PACKED, unpack_store,
)



@kernel
def _new_term(S, slot, h, kind, a, b, c, flags):
    S = borrow(S)
    ti = S[S_TI]
    ctl = S[S_CTL]
    n = ctl[C_TERMS]
    ti[n, 0] = kind
    ti[n, 1] = a
    ti[n, 2] = b
    ti[n, 3] = c
    S[S_TF][n] = flags
    tm = S[S_TM]
    tm[n, M_ROW_OFF] = -1
    tm[n, M_ROW_LEN] = 0
    tm[n, M_EMPTY] = -1
    tm[n, M_INF] = -1
    tm[n, M_STATE] = -1
    tm[n, M_HASH] = h & HASH_BITS
    S[S_HT][slot] = n
    ctl[C_TERMS] = n + 1
    return n


@kernel
def _room(S):
    S = borrow(S)
    ctl = S[S_CTL]
    n = ctl[C_TERMS]
    return n < S[S_TI].shape[0] and 2 * (n + 1) <= S[S_HT].shape[0] and n < (1 << TERM_ID_BITS)


@kernel(python=True)
def mk_simple(S, kind, a, b, c, flags):
    """Intern a SEQ/REP/REF/DIFF (or ∅/ε) node."""
    S = borrow(S)
    ti = S[S_TI]
    ht = S[S_HT]
    mask = ht.shape[0] - 1
    h = _hash_simple(kind, a, b, c)
    i = h & mask
    while True:
        t = ht[i]
        if t < 0:
            break
        if ti[t, 0] == kind and ti[t, 1] == a and ti[t, 2] == b and ti[t, 3] == c:
            return t
        i = (i + 1) & mask
    if not _room(S):
        return _fail(S, NEED_GROW_TERMS, 0)
    return _new_term(S, i, h, kind, a, b, c, flags)


@kernel
def mk_bytes(S, w0, w1, w2, w3):
    """Intern the byte set with words ``w0..w3`` (∅ for no byte)."""
    S = borrow(S)
    if w0 == _U0 and w1 == _U0 and w2 == _U0 and w3 == _U0:
        return EMPTY
    ti = S[S_TI]
    bw = S[S_BW]
    ht = S[S_HT]
    mask = ht.shape[0] - 1
    h = _hash_words(w0, w1, w2, w3)
    i = h & mask
    while True:
        t = ht[i]
        if t < 0:
            break
        if ti[t, 0] == K_BYTES:
            j = ti[t, 1]
            if bw[j, 0] == w0 and bw[j, 1] == w1 and bw[j, 2] == w2 and bw[j, 3] == w3:
                return t
        i = (i + 1) & mask
    if not _room(S):
        return _fail(S, NEED_GROW_TERMS, 0)
    ctl = S[S_CTL]
    nb_ = ctl[C_BSETS]
    if nb_ >= bw.shape[0]:
        return _fail(S, NEED_GROW_BSETS, 0)
    bw[nb_, 0] = w0
    bw[nb_, 1] = w1
    bw[nb_, 2] = w2
    bw[nb_, 3] = w3
    ctl[C_BSETS] = nb_ + 1
    return _new_term(S, i, h, K_BYTES, nb_, 0, 0, 0)


@kernel
def _mk_list(S, kind, buf, n, flags):
    """Intern an ALT/AND node over the sorted distinct ids ``buf[:n]``."""
    S = borrow(S)
    ti = S[S_TI]
    pool = S[S_POOL]
    ht = S[S_HT]
    mask = ht.shape[0] - 1
    h = _hash_list(kind, buf, n)
    i = h & mask
    while True:
        t = ht[i]
        if t < 0:
            break
        if ti[t, 0] == kind and ti[t, 2] == n:
            off = ti[t, 1]
            same = True
            for x in range(n):
                if pool[off + x] != buf[x]:
                    same = False
                    break
            if same:
                return t
        i = (i + 1) & mask
    if not _room(S):
        return _fail(S, NEED_GROW_TERMS, 0)
    ctl = S[S_CTL]
    off = ctl[C_POOL]
    if off + n > pool.shape[0]:
        return _fail(S, NEED_GROW_POOL, n)
    for x in range(n):
        pool[off + x] = buf[x]
    ctl[C_POOL] = off + n
    return _new_term(S, i, h, kind, off, n, 0, flags)


@kernel
def _cons(S, a, b):
    S = borrow(S)
    tf = S[S_TF]
    fa, fb = tf[a], tf[b]
    flags = ((fa & fb) & F_NULL) | ((fa | fb) & (F_BOOL | F_REP | F_FAR))
    return mk_simple(S, K_SEQ, a, b, 0, flags)


@kernel(python=True)
def seq(S, a, b):
    """Concatenation, kept right-nested (the items of a chain are never sequences)."""
    S = borrow(S)
    if a == EMPTY or b == EMPTY:
        return EMPTY
    if a == EPS:
        return b
    if b == EPS:
        return a
    ti = S[S_TI]
    if ti[a, 0] != K_SEQ:
        return _cons(S, a, b)
    key = _T_SEQ | (np.int64(a) << TERM_ID_BITS) | b
    r = _mget(S, key)
    if r >= 0:
        return r
    n = 0
    cur = a
    while ti[cur, 0] == K_SEQ:
        n += 1
        cur = ti[cur, 2]
    if n < 64:
        items = scratch(np.int32, 64, 0)
    else:
        items = np.empty(n + 1, dtype=np.int32)
    cur = a
    j = 0
    while ti[cur, 0] == K_SEQ:
        items[j] = ti[cur, 1]
        j += 1
        cur = ti[cur, 2]
    items[j] = cur
    r = b
    for x in range(n, -1, -1):
        r = _cons(S, items[x], r)
        if r < 0:
            return -1
    if _mput(S, key, r) < 0:
        return -1
    return r


@kernel
def seq_list(S, buf, n):
    """Concatenation of ``buf[:n]``."""
    S = borrow(S)
    r = EPS
    for x in range(n - 1, -1, -1):
        r = seq(S, buf[x], r)
        if r < 0:
            return -1
    return r


@kernel
def _flatten(S, kind, buf, n, out):
    """Sorted distinct ids of ``buf[:n]`` with nested ``kind`` nodes spliced in, ∅ dropped:
    ``(k, arr)``, the ids in ``arr[:k]``, ``arr`` being ``out`` (the caller's scratch) unless it is
    too small."""
    S = borrow(S)
    ti = S[S_TI]
    pool = S[S_POOL]
    tot = 0
    for x in range(n):
        t = buf[x]
        if ti[t, 0] == kind:
            tot += ti[t, 2]
        else:
            tot += 1
    if tot > out.shape[0]:
        out = np.empty(tot, dtype=np.int32)
    m = 0
    for x in range(n):
        t = buf[x]
        if t == EMPTY:
            continue
        if ti[t, 0] == kind:
            off = ti[t, 1]
            for y in range(ti[t, 2]):
                out[m] = pool[off + y]
                m += 1
        else:
            out[m] = t
            m += 1
    if m > 32:
        out = np.sort(out[:m])
    else:
        for x in range(1, m):  # insertion sort: no allocation for the usual short lists
            v = out[x]
            y = x - 1
            while y >= 0 and out[y] > v:
                out[y + 1] = out[y]
                y -= 1
            out[y + 1] = v
    k = 0
    for x in range(m):
        if k == 0 or out[x] != out[k - 1]:
            out[k] = out[x]
            k += 1
    return k, out


@kernel(python=True)
def alt(S, buf, n):
    """Alternation of ``buf[:n]`` (flattened, deduplicated, single-byte sets merged)."""
    S = borrow(S)
    m, flat = _flatten(S, K_ALT, buf, n, scratch(np.int32, 64, 0))
    if m == 0:
        return EMPTY
    if m == 1:
        return flat[0]
    ti = S[S_TI]
    tf = S[S_TF]
    nbytes = 0
    for x in range(m):
        if ti[flat[x], 0] == K_BYTES:
            nbytes += 1
    if nbytes > 1:
        bw = S[S_BW]
        w0 = w1 = w2 = w3 = _U0
        k = 0
        for x in range(m):
            t = flat[x]
            if ti[t, 0] == K_BYTES:
                j = ti[t, 1]
                w0 |= bw[j, 0]
                w1 |= bw[j, 1]
                w2 |= bw[j, 2]
                w3 |= bw[j, 3]
            else:
                flat[k] = t
                k += 1
        bt = mk_bytes(S, w0, w1, w2, w3)
        if bt < 0:
            return -1
        if k == 0:
            return bt
        # insert the merged byte set at its sorted place
        y = k - 1
        while y >= 0 and flat[y] > bt:
            flat[y + 1] = flat[y]
            y -= 1
        flat[y + 1] = bt
        m = k + 1
    flags = 0
    for x in range(m):
        flags |= tf[flat[x]]
    return _mk_list(S, K_ALT, flat, m, flags)


@kernel
def and_(S, buf, n):
    """Intersection of ``buf[:n]``."""
    S = borrow(S)
    for x in range(n):
        if buf[x] == EMPTY:
            return EMPTY
    m, flat = _flatten(S, K_AND, buf, n, scratch(np.int32, 64, 0))
    if m == 1:
        return flat[0]
    tf = S[S_TF]
    alln = True
    reps = 0
    for x in range(m):
        if (tf[flat[x]] & F_NULL) == 0:
            alln = False
        reps |= tf[flat[x]] & (F_REP | F_FAR)
    if flat[0] == EPS:  # sorted: ε (id 1) comes first after ∅ (absent)
        return EPS if alln else EMPTY
    # F_REP: an operand holds a counter (clamp looks inside; see _clamp_and)
    flags = F_BOOL | reps | (F_NULL if alln else 0)
    return _mk_list(S, K_AND, flat, m, flags)


@kernel
def and2(S, a, b):
    S = borrow(S)
    buf = scratch(np.int32, 2, 0)
    buf[0] = a
    buf[1] = b
    return and_(S, buf, 2)


@kernel
def rep(S, item, lo, hi):
    """``item{lo,hi}``; ``hi == INF`` for no upper bound."""
    S = borrow(S)
    if hi != INF and hi < lo:
        return EMPTY
    if item == EMPTY:
        return EPS if lo == 0 else EMPTY
    if item == EPS or hi == 0:
        return EPS
    fi = S[S_TF][item]
    if (fi & F_NULL) != 0:
        lo = 0
    if lo == 1 and hi == 1:
        return item
    far = F_FAR if lo > FAR_MIN or (hi != INF and hi > FAR_MIN) else 0
    flags = F_REP | far | (fi & (F_BOOL | F_FAR)) | (F_NULL if (lo == 0 or (fi & F_NULL) != 0) else 0)
    return mk_simple(S, K_REP, item, lo, hi, flags)


@kernel
def diff(S, a, b):
    S = borrow(S)
    if a == EMPTY:
        return EMPTY
    if b == EMPTY:
        return a
    if a == b:
        return EMPTY
    tf = S[S_TF]
    if b == EPS and (tf[a] & F_NULL) == 0:
        return a
    nul = (tf[a] & F_NULL) != 0 and (tf[b] & F_NULL) == 0
    return mk_simple(S, K_DIFF, a, b, 0, F_BOOL | (F_NULL if nul else 0))


@kernel
def ref(S, rule, nullable):
    S = borrow(S)
    return mk_simple(S, K_REF, rule, 0, 0, F_NULL if nullable else 0)


# Builder program opcodes (see ``build``).
OP_EMPTY, OP_EPS, OP_TERM, OP_BYTES, OP_SEQ, OP_ALT, OP_AND, OP_DIFF, OP_REP, OP_REF, OP_SAVE, \
    OP_LOAD = range(12)


@unit(_i64, STORE, _I64_1, _U64_2, _I32_1)
def build(S, prog, words, slots):
    """Run a postfix builder program (one compiled rule body) and return its term.

    Opcodes: ``EMPTY``, ``EPS``, ``TERM t``, ``BYTES i`` (``words[i]``), ``SEQ n``, ``ALT n``,
    ``AND n`` (pop ``n`` values), ``DIFF``, ``REP lo hi``, ``REF rule nullable``, ``SAVE k``
    (``slots[k] =`` top), ``LOAD k``.
    """
    S = borrow(S)
    st = scratch(np.int32, 256, 0)
    sp = 0
    pc = 0
    while pc < prog.shape[0]:
        op = prog[pc]
        r = 0
        if op == OP_SAVE:
            slots[prog[pc + 1]] = st[sp - 1]
            pc += 2
            continue
        if op == OP_EMPTY:
            r = EMPTY
            pc += 1
        elif op == OP_EPS:
            r = EPS
            pc += 1
        elif op == OP_TERM:
            r = prog[pc + 1]
            pc += 2
        elif op == OP_LOAD:
            r = slots[prog[pc + 1]]
            pc += 2
        elif op == OP_BYTES:
            i = prog[pc + 1]
            r = mk_bytes(S, words[i, 0], words[i, 1], words[i, 2], words[i, 3])
            pc += 2
        elif op == OP_SEQ or op == OP_ALT or op == OP_AND:
            n = prog[pc + 1]
            sp -= n
            if op == OP_SEQ:
                r = seq_list(S, st[sp:], n)
            elif op == OP_ALT:
                r = alt(S, st[sp:], n)
            else:
                r = and_(S, st[sp:], n)
            pc += 2
        elif op == OP_DIFF:
            sp -= 2
            r = diff(S, st[sp], st[sp + 1])
            pc += 1
        elif op == OP_REP:
            sp -= 1
            r = rep(S, st[sp], prog[pc + 1], prog[pc + 2])
            pc += 3
        elif op == OP_REF:
            r = ref(S, prog[pc + 1], prog[pc + 2] != 0)
            pc += 3
        if r < 0:
            return -1
        st = _grow_i32(st, sp)
        st[sp] = r
        sp += 1
    return st[0]


@unit(_i64, PACKED, _I64_1, _U64_2, _I32_1, early=1, python=True)
def build_packed(P, prog, words, slots):
    """:func:`build` with the store packed (:func:`~dotjson.automaton.store.pack`)."""
    return build(unpack_store(P), prog, words, slots)


build.packed = build_packed
