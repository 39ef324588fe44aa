"""Counter-carrying state ids: a long counted repetition without an automaton state per count.

Far from its bounds a counter does not change what one token can do, so an index hands out, for
such a state, an id made of a *shape* (the term with that counter moved into the marker band: an
ordinary automaton state shared by every count) and an *offset* (what the marker's bounds lack
from the exact ones): ``VIRT | (offset + C_BIAS) << 31 | shape``. Ordinary state ids are below
``2**31``. The kernels that make and shift shapes are in :mod:`.counters`; this module keeps the
ids: making one for a state, stepping one by a token, resolving a successor back to an ordinary
state once a bound is near, and checking an id a caller hands back.
"""

from __future__ import annotations

from ..errors import LimitExceededError
from . import counters as _ctr
from .store import F_FAR, FAR_MIN, S_TF

#: The tag bit of a counter-carrying id.
VIRT = 1 << 62
#: The bias of the offset field (offsets may be negative).
C_BIAS = 1 << 30
#: The mask of a 31-bit field (the shape, or the biased offset after a shift by 31).
LOW31 = (1 << 31) - 1


class CounterIds:
    """The counter-carrying ids of one index over automaton ``auto``.

    Parameters
    ----------
    auto : dotjson.automaton.Automaton
    far : int
        A counter at least this far from its bounds cannot reach them within a token, nor
        within the next one (twice a token's length, and then some): its state gets an id.
    """

    def __init__(self, auto, far: int):
        self._auto = auto
        self.far = far
        self._ids: dict[int, int] = {}  # state without markers -> its id (counter-carrying or itself)
        self._shape_info: dict[int, tuple[int, int, int]] = {}  # successor of a shape -> (marker min, canonical shape, shift)
        self._step: dict[int, tuple[int, int, int]] = {}  # shape * 2**32 + token -> the far successor (next)

    def __len__(self) -> int:
        return len(self._ids)

    def of(self, s: int) -> int:
        """The id of automaton state ``s`` (memoized): counter-carrying when its sequence starts
        with a counter far from its bounds, else ``s``."""
        v = self._ids.get(s)
        return v if v is not None else self._make(s)

    def _make(self, s: int) -> int:
        a = self._auto
        if a.rules.lanes.anchors and a.n_states > _ctr.DRIFT_STATES:
            raise LimitExceededError(
                f"the automaton has {a.n_states} states, more than {_ctr.DRIFT_STATES} with counts "
                f"of at least {_ctr.BAND} in use (a count that is no shape is exact for that many "
                f"items); lower max_states to {_ctr.DRIFT_STATES} or less"
            )
        t = a.term_of(s)
        v = s
        # (a term without a count above FAR_MIN holds no marker and no count a token cannot
        # reach past: no kernel asked, at every new state of a schema without long counts)
        if (self.far <= FAR_MIN or a.store[S_TF][t] & F_FAR) and a.marker_min(t) == _ctr.NONE:
            # a shape reached by a raw state id stays as it is
            got = a.make_shape(t, self.far)
            if got is not None:
                shape, c = got
                v = VIRT | (c + C_BIAS) << 31 | a.state(shape)
        self._ids[s] = v
        return v

    def _info(self, s: int) -> tuple[int, int, int]:
        """``(marker min, canonical shape, shift)`` of automaton state ``s``."""
        info = self._shape_info.get(s)
        if info is None:
            a = self._auto
            t = a.term_of(s)
            m = a.marker_min(t)
            if m == _ctr.NONE or m == _ctr.canonical_marker(m):
                info = (m, s, 0)
            else:
                d = _ctr.canonical_marker(m) - m
                info = (m, a.state(a.shift_markers(t, d)), d)
            self._shape_info[s] = info
        return info

    def valid(self, v: int) -> bool:
        """Whether ``v`` is a counter-carrying id this index can have handed out."""
        shape, c = v & LOW31, ((v >> 31) & LOW31) - C_BIAS
        if v >> 62 != 1 or shape >= self._auto.n_states:
            return False
        m, canon, _ = self._info(shape)
        lanes = self._auto.rules.lanes
        return m != _ctr.NONE and m == _ctr.canonical_marker(m) and canon == shape and lanes.known(m) \
            and lanes.marker_count(m, c) >= self.far

    def next(self, v: int, token_id: int, step) -> int:
        """The id after ``token_id`` (not EOS) from counter-carrying id ``v``: the token walked
        from the shape by ``step(state, token_id)`` (the index's memoized token step), the offset
        updated; exact counts again once a bound is near."""
        f, shape = (v >> 31) & LOW31, v & LOW31
        key = shape * 4_294_967_296 + token_id
        hit = self._step.get(key)  # (canonical successor, its shift, least offset field far)
        if hit is not None and f >= hit[2]:
            f2 = f - hit[1]
            if 0 <= f2 <= LOW31:
                return VIRT | f2 << 31 | hit[0]
        r = step(shape, token_id)
        if r < 0:
            return r
        if hit is None:
            m, canon, d = self._info(r)
            if m != _ctr.NONE:  # the offset fields that keep the successor far
                self._step[key] = (canon, d, self.far - self._auto.rules.lanes.marker_count(m, 0) + C_BIAS)
        return self.resolve(r, f - C_BIAS)

    def walk(self, v: int, data: bytes) -> int:
        """The id after ``data`` (at most a token's length of bytes) from counter-carrying id
        ``v``, or a negative dead state."""
        r = self._auto.walk_text(v & LOW31, data)
        return r if r < 0 else self.resolve(r, ((v >> 31) & LOW31) - C_BIAS)

    def resolve(self, r: int, c: int) -> int:
        """The id of automaton state ``r``, reached from a shape with offset ``c`` by at most a
        token's length of bytes."""
        m, canon, d = self._info(r)
        if m == _ctr.NONE:  # the counted repetition is over
            return self.of(r)
        lanes = self._auto.rules.lanes
        n = lanes.marker_count(m, c)
        if n >= self.far:
            if 0 <= c - d + C_BIAS <= LOW31:
                return VIRT | (c - d + C_BIAS) << 31 | canon
            # after 2**30 items of a lane's counter the offset outgrows its field: the same
            # count as a marker of another lane (or the band), with a small offset
            try:
                target, c2 = lanes.marker_of(n)
            except OverflowError:
                raise _lanes_full(n) from None
            a = self._auto
            return VIRT | (c2 + C_BIAS) << 31 | a.state(a.shift_markers(a.term_of(r), target - m))
        # a bound is near: the exact term, ordinary states from here
        a = self._auto
        return self.of(a.state(a.shift_markers(a.term_of(r), self._exact_shift(m, c))))

    def exact(self, v: int) -> int:
        """The ordinary automaton state of counter-carrying id ``v`` (its exact term; a new
        state, which is what walking byte by byte needs)."""
        a = self._auto
        shape, c = v & LOW31, ((v >> 31) & LOW31) - C_BIAS
        t = a.term_of(shape)
        return a.state(a.shift_markers(t, self._exact_shift(a.marker_min(t), c)))

    def _exact_shift(self, m: int, c: int) -> int:
        """The shift making the markers of a term (nearest bound ``m``, offset ``c``) exact
        counts (:meth:`dotjson.automaton.counters.Lanes.exact_shift`)."""
        try:
            return self._auto.rules.lanes.exact_shift(m, c)
        except OverflowError:
            raise _lanes_full(self._auto.rules.lanes.marker_count(m, c)) from None


def _lanes_full(n: int) -> LimitExceededError:
    return LimitExceededError(
        f"a counted repetition reached count {n}, and all {_ctr.N_LANES} lanes for counts of "
        f"at least {_ctr.BAND} are taken (counts more than {_ctr.LANE_SHARE} apart take one each)"
    )
