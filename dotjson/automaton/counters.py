"""Counter-carrying states: a long counted repetition without an automaton state per count.

``R{m,M}`` derives to ``R' R{m-1,M-1}``, so a term denotes its exact remaining counts and a
string of ``maxLength: 1000000`` would visit a million distinct terms, each an automaton state
(a transition row, memo entries). Far from its bounds a counter does not change what one token
can do (the clamped mask key already relies on it), so the index keeps such a state as a pair:

* a **shape**: the term with that one counter moved into a reserved band of counts (a *marker*
  ``REP`` whose nearest bound is :data:`MARK`); an ordinary automaton state, shared by every
  count;
* an **offset** ``c``: the exact bounds are the marker's bounds plus ``c``.

A token is walked from the shape (memoized transitions, as for any state); the successor term
holds the marker with bounds ``MARK - j`` (``j`` items started). If the exact nearest bound is
still at least ``far`` (more than a token's length away), the successor is shifted back to the
canonical shape and ``c`` absorbs ``j``; otherwise the exact term is rebuilt (the marker's bounds
plus ``c``: ordinary counts again) and decoding continues with ordinary states near the bound.
Only the first repetition of a state's sequence (within its first items, outside ``And``/``Diff``)
is made a marker, and only in a term holding no marker yet, so one offset per state is exact.

Kernels here follow :mod:`.kernels`: iterative, never raising, ``FAIL`` with a status in ``ctl``
when the store must grow (the caller handles the exit and calls again; interning is idempotent).
Real repetition counts stay below :data:`BAND`; larger ones, of any size, are *lane* values
(:data:`LANES`, :class:`Lanes`): a shape of a lane count keeps a marker in the same lane, so its
offset is small whatever the count.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .._kernels.jit import kernel, unit
from . import kernels as K

#: Counts at or above this are markers or lane values; real counts stay below it.
BAND = K.BAND
#: The nearest bound of a marker in a canonical shape (a token's length below it stays a marker).
MARK = BAND + (1 << 20)
#: Counts of at least :data:`BAND` (up to any size) live in *lanes* above the marker band: lane
#: ``k`` is ``[LANES + k * LANE_W, LANES + (k + 1) * LANE_W)``, its lower half *exact* values
#: (count ``anchor_k + v - lane_exact(k)``, what the rule compiler emits for a large bound), its
#: upper half *markers* (count ``anchor_k + v - (lane_exact(k) + LANE_W / 2) + offset``, a
#: shape's counter). The anchors are Python integers kept by :class:`Lanes` (saved with the index).
LANES = 1 << 30
LANE_W = 1 << 24
_HALF = LANE_W >> 1
#: Number of lanes (the top one ends below :data:`NONE`).
N_LANES = ((1 << 31) - 1 - LANES) // LANE_W
#: A count within this of a lane's anchor reuses the lane (its exact half still has room below
#: the value for ``_HALF // 2 - LANE_SHARE`` items consumed without a shape).
LANE_SHARE = 1 << 20
#: An exact lane value (one the index could not make a shape of: inside an intersection, or in
#: an alternation of counts) loses one per item, each item a new automaton state; with lanes in
#: use an automaton may hold this many states (the room below any exact lane value, less a
#: token's length), never more: a larger ``max_states`` is refused when it is reached.
DRIFT_STATES = (_HALF >> 1) - LANE_SHARE - (1 << 16)
#: A repetition ``R{lo,hi}`` with ``0 < lo < hi`` and ``hi - lo`` at least this (or ``hi`` at
#: least :data:`BAND`) is compiled as ``R{lo} R{0,hi-lo}``: a shape of the two-sided one would
#: put its upper bound past the band.
SPLIT = 1 << 28
#: :func:`marker_min` of a term without markers.
NONE = (1 << 31) - 1
#: Sequence items searched for a far repetition (the head, a partial item before it, ...).
SPINE_ITEMS = 3  # (make_shape's scratch has this literal size)


@kernel
def _mark_val(v):
    """Is count ``v`` a marker (the band, or a lane's upper half)?"""
    if v < BAND:
        return False
    return v < LANES or ((v - LANES) & _HALF) != 0


@kernel
def _is_marker(lo, hi):
    return _mark_val(lo) or (hi != K.INF and _mark_val(hi))


@kernel
def _marker_low(lo, hi):
    """The nearest bound of marker ``{lo,hi}`` (``lo`` unless it is 0)."""
    return lo if _mark_val(lo) else hi


@kernel
def _lookup(keys, n_keys, t):
    mask = keys.shape[0] - 1
    i = (t * 0x9E3779B1) & mask
    while True:
        k = keys[i]
        if k == t:
            return i
        if k < 0:
            return -1 - i
        i = (i + 1) & mask


@kernel
def _local_put(keys, vals, count, t, v):
    """Insert ``t -> v`` (``t`` absent); returns the tables, grown when half full."""
    if 2 * (count + 1) > keys.shape[0]:
        nk = np.full(2 * keys.shape[0], -1, dtype=np.int32)
        nv = np.zeros(2 * keys.shape[0], dtype=np.int32)
        for j in range(keys.shape[0]):
            if keys[j] >= 0:
                i = -1 - _lookup(nk, 0, keys[j])
                nk[i] = keys[j]
                nv[i] = vals[j]
        keys, vals = nk, nv
    i = -1 - _lookup(keys, 0, t)
    keys[i] = t
    vals[i] = v
    return keys, vals


#: Memo tag of :func:`marker_min` (kernels.py uses tags 1..3; this end of the range is ours).
_T_MMIN = 29 << 58


@kernel
def _markers_below(S, t):
    """Can ``t`` hold a marker? Only sequences and alternations of repetitions do."""
    S = K.borrow(S)
    k = S[K.S_TI][t, 0]
    return (S[K.S_TF][t] & K.F_REP) != 0 and (k == K.K_SEQ or k == K.K_ALT or k == K.K_REP)


@kernel
def _mmin_get(S, t):
    """:func:`marker_min` of ``t`` if known (always for terms that cannot hold one), else -1."""
    S = K.borrow(S)
    if not _markers_below(S, t):
        return NONE
    if S[K.S_TI][t, 0] == K.K_REP:
        lo, hi = S[K.S_TI][t, 2], S[K.S_TI][t, 3]
        return _marker_low(lo, hi) if _is_marker(lo, hi) else NONE
    return K._mget(S, _T_MMIN | t)


@unit(K._i64, K.STORE, K._i64, python=True)
def marker_min(S, t0):
    """The smallest nearest bound over the marker repetitions of ``t0``, :data:`NONE` if none;
    -1 (FAIL) on exit. Memoized per term: a new cell on a deep stack costs O(1).

    Markers only ever occur in sequences and alternations (derivatives of a shape), never
    inside a repetition's item, a rule body or ``And``/``Diff``.
    """
    S = K.borrow(S)
    r = _mmin_get(S, t0)
    if r >= 0:
        return r
    ti = S[K.S_TI]
    pool = S[K.S_POOL]
    st = K.scratch(np.int32, 64, 0)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if _mmin_get(S, t) >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        top = sp
        if k == K.K_SEQ:
            n, off = 2, -1
        else:
            n, off = ti[t, 2], ti[t, 1]
        r = NONE
        for x in range(n):
            c = ti[t, 1 + x] if off < 0 else pool[off + x]
            v = _mmin_get(S, c)
            if v < 0:
                st = K._grow_i32(st, sp)
                st[sp] = c
                sp += 1
            else:
                r = min(r, v)
        if sp > top:
            continue
        if K._mput(S, _T_MMIN | t, r) < 0:
            return -1
        sp -= 1
    return _mmin_get(S, t0)


@unit(K._i64, K.STORE, K._i64, K._i64, python=True)
def shift_markers(S, t0, d):
    """``t0`` with ``d`` added to the bounds of every marker repetition that lie in the band
    (0 and unbounded stay): the shape at another offset, or, with the state's offset, the exact
    term. The term, or -1 (FAIL) on exit."""
    S = K.borrow(S)
    if marker_min(S, t0) < 0:
        return -1
    ti = S[K.S_TI]
    pool = S[K.S_POOL]
    keys = K.scratch(np.int32, 64, 0)  # a table for 16 entries, on the stack (_local_put grows it)
    vals = K.scratch(np.int32, 64, 0)
    for i in range(64):
        keys[i] = -1
        vals[i] = 0
    count = 0
    st = K.scratch(np.int32, 64, 0)
    buf = K.scratch(np.int32, 16, 0)
    st[0] = t0
    sp = 1
    while sp > 0:
        t = st[sp - 1]
        if _mmin_get(S, t) == NONE or _lookup(keys, count, t) >= 0:
            sp -= 1
            continue
        k = ti[t, 0]
        if k == K.K_REP:
            item, lo, hi = ti[t, 1], ti[t, 2], ti[t, 3]
            if _is_marker(lo, hi):
                r = K.rep(S, item, lo + d if _mark_val(lo) else lo,
                          hi + d if (hi != K.INF and _mark_val(hi)) else hi)
            else:
                r = t
        else:
            top = sp
            if k == K.K_SEQ:
                n, off = 2, -1
            else:
                n, off = ti[t, 2], ti[t, 1]
            buf = K._grow_i32(buf, n)
            for x in range(n):
                c = ti[t, 1 + x] if off < 0 else pool[off + x]
                if _mmin_get(S, c) == NONE:  # known: marker_min(t0) filled the memo below
                    buf[x] = c
                    continue
                j = _lookup(keys, count, c)
                if j < 0:
                    st = K._grow_i32(st, sp)
                    st[sp] = c
                    sp += 1
                else:
                    buf[x] = vals[j]
            if sp > top:
                continue
            r = K.seq(S, buf[0], buf[1]) if k == K.K_SEQ else K.alt(S, buf, n)
        if r < 0:
            return -1
        keys, vals = _local_put(keys, vals, count, t, r)
        count += 1
        sp -= 1
    if _mmin_get(S, t0) == NONE:
        return t0
    return vals[_lookup(keys, count, t0)]


@kernel
def lane_exact(k):
    """The middle of lane ``k``'s exact half (the value of its anchor)."""
    return LANES + k * LANE_W + (_HALF >> 1)


@kernel
def _shapeable(lo, hi, far):
    """Can repetition ``{lo,hi}`` (not a marker) become one: far from both bounds, and one
    counter (real bounds, or one lane value with 0 / unbounded / the same value beside it)?"""
    if not ((lo == 0 or lo >= far) and (hi == K.INF or hi >= far)) or (lo == 0 and hi == K.INF):
        return False
    if _is_marker(lo, hi):
        return False
    v = lo if lo > 0 else hi
    if v < BAND:  # (both bounds markers: the upper one stays in the band, below LANES)
        return hi == K.INF or (hi < BAND and (lo == 0 or hi - lo < LANES - MARK))
    return (lo == 0 or lo == v) and (hi == K.INF or hi == v)


@unit(K._i64, K.STORE, K._i64, K._i64, K._I64_1, python=True)
def make_shape(S, t, far, out):
    """Move the first far counter of ``t``'s sequence into the marker band (or half).

    Looks at the first :data:`SPINE_ITEMS` items of the sequence ``t`` (or ``t`` itself) for a
    repetition ``R{lo,hi}`` with ``lo`` 0 or at least ``far`` and ``hi`` unbounded or at least
    ``far`` (not both 0 and unbounded; see :func:`_shapeable`). Returns the shape (that
    occurrence shifted so its nearest bound is :data:`MARK`, or for a lane count the middle of
    its lane's marker half; the rest of the term shared) with the offset in ``out[0]`` (exact
    bounds = marker bounds + offset, plus the lane's anchor less its marker middle); -2 when
    there is no such counter; -1 (FAIL) on exit. ``t`` must hold no marker.
    """
    S = K.borrow(S)
    ti = S[K.S_TI]
    items = K.scratch(np.int32, 3, 0)  # SPINE_ITEMS
    cur = t
    p = -1
    for x in range(SPINE_ITEMS):
        last = ti[cur, 0] != K.K_SEQ
        a = cur if last else ti[cur, 1]
        items[x] = a
        if ti[a, 0] == K.K_REP:  # (an item holding And/Diff too: its count is still outside them)
            lo, hi = ti[a, 2], ti[a, 3]
            if _shapeable(lo, hi, far):
                p = x
                break
        if last:
            break
        cur = ti[cur, 2]
    if p < 0:
        return -2
    a = items[p]
    item, lo, hi = ti[a, 1], ti[a, 2], ti[a, 3]
    v = lo if lo > 0 else hi
    if v < BAND:
        c = v - MARK
        sh = c
    else:  # a lane's exact half: the marker half of the same lane, same distance to its middle
        c = v - lane_exact((v - LANES) // LANE_W)
        sh = c - _HALF
    r = K.rep(S, item, lo - sh if lo > 0 else 0, hi if hi == K.INF else hi - sh)
    if r < 0:
        return -1
    if ti[cur, 0] == K.K_SEQ:  # the repetition is the head of cell ``cur``
        r = K.seq(S, r, ti[cur, 2])
        if r < 0:
            return -1
    for x in range(p - 1, -1, -1):
        r = K.seq(S, items[x], r)
        if r < 0:
            return -1
    out[0] = c
    return r


# ---------------------------------------------------------------------------------- lanes


def _xc(k: int) -> int:  # lane_exact, for Python callers
    return LANES + k * LANE_W + (_HALF >> 1)


def _mc(k: int) -> int:  # lane_mark
    return LANES + k * LANE_W + _HALF + (_HALF >> 1)


def lane_of(v: int) -> int:
    """The lane of count ``v`` (at least :data:`LANES`)."""
    return (v - LANES) // LANE_W


def canonical_marker(m: int) -> int:
    """Where a canonical shape keeps marker ``m``'s nearest bound: :data:`MARK` in the band,
    the middle of the marker half of ``m``'s lane."""
    return MARK if m < LANES else _mc(lane_of(m))


class Lanes:
    """The anchors of the lanes of one automaton (see :data:`LANES`): which count each lane
    value stands for. Allocated by the rule compiler (a bound of at least :data:`BAND`) and
    by the index (an exact count that has left its lane's room); saved with the index.

    A lane value ``v`` (exact half) is the count ``anchor + v - _xc(k)``; a marker ``m``
    of lane ``k`` with offset ``c`` is ``anchor + m - _mc(k) + c``. Band markers (below
    :data:`LANES`) are ``m + c``, as before lanes existed.
    """

    def __init__(self, anchors=()):
        self.anchors: list[int] = []
        for a in anchors:
            if type(a) is not int or a < BAND:
                raise ValueError(f"lane anchor {a!r}: expected an integer >= {BAND}")
            self.anchors.append(a)
        if len(self.anchors) > N_LANES:
            raise ValueError(f"{len(self.anchors)} lanes: expected at most {N_LANES}")

    def value(self, n: int) -> int:
        """The count value (an int32) standing for count ``n``: ``n`` itself below :data:`BAND`,
        else a value in the exact half of a lane whose anchor is within :data:`LANE_SHARE`
        (a new lane when none is). Raises ``OverflowError`` when every lane is taken."""
        if n < BAND:
            return n
        for k, a in enumerate(self.anchors):
            if abs(n - a) <= LANE_SHARE:
                return _xc(k) + (n - a)
        if len(self.anchors) >= N_LANES:
            raise OverflowError(n)
        self.anchors.append(n)
        return _xc(len(self.anchors) - 1)

    def count(self, v: int) -> int:
        """The count that exact value ``v`` (a real count or a lane's exact half) stands for."""
        if v < BAND:
            return v
        k = lane_of(v)
        return self.anchors[k] + v - _xc(k)

    def marker_count(self, m: int, c: int) -> int:
        """The count that marker ``m`` with offset ``c`` stands for."""
        if m < LANES:
            return m + c
        k = lane_of(m)
        return self.anchors[k] + m - _mc(k) + c

    def known(self, m: int) -> bool:
        """Is marker ``m`` in the band or in an allocated lane (a forged id may name neither)?"""
        return m < LANES or lane_of(m) < len(self.anchors)

    def marker_of(self, n: int) -> tuple[int, int]:
        """``(canonical marker, offset)`` standing for count ``n`` (at least a token's length
        from 0), the offset small: the band below :data:`BAND`, else the marker half of a lane
        whose anchor is near ``n`` (a new lane when none is)."""
        if n < BAND:
            return MARK, n - MARK
        k = lane_of(self.value(n))
        return _mc(k), n - self.anchors[k]

    def exact_shift(self, m: int, c: int) -> int:
        """The shift that makes the markers of a shape (nearest bound ``m``, offset ``c``) exact
        values: a real count near the bound, else the same distance in a lane's exact half (a
        new lane when the count has left the room of ``m``'s)."""
        n = self.marker_count(m, c)
        return self.value(n) - m
