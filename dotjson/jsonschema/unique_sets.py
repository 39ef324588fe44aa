"""``uniqueItems`` over finite item sets: arrays of distinct items, each drawn from a finite set
of values, as a rule family whose states are the sets of values used (issue 29).

The items of each ``prefixItems`` position, and those after them (``items``), are each an
``enum``/``const``/boolean/null set; the universe is their union, numbered ``0..n-1``, and a
state is the bitmask of the values used so far (its item count is the mask's popcount). A
state's body offers the values its next position allows that are not used yet, each followed by
the state with that value added: only the sets a document visits are ever made, so ``n`` may be
in the hundreds (``MAX_UNIQUE_VALUES``) where ``2**n`` states could never be listed.

Nullability and productivity are the family's own, exact and without a search over sets: a
state is productive iff the positions still owed to ``minItems`` can take distinct values not
used yet. With no ``prefixItems`` (one set for every position) that is a count; with prefix
positions it is a bipartite matching (:func:`assign`) over those few positions, with the items
after them as one bottleneck of capacity "the values of ``items`` left over". A body offers only
the values after which the array can still be completed, so no state handed to the automaton is
dead.
"""

from __future__ import annotations

from dotjson import ir
from dotjson.ir import EPS, Ref, seq
from dotjson.ir.families import register_family
from dotjson.jsonschema.jsonbase import QUOTE

__all__ = ["UniqueChoices", "assign"]

#: a universe of at most this many values is written out as grammar text (``2**n`` set states
#: at most); above, ``index.grammar`` names the family instead (its states are made lazily)
MAX_RENDERED_VALUES = 12


def _bits(mask: int):
    """The indices of the bits set in ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def assign(sets, rest: int, m: int):
    """A distinct value for each position with at least ``m`` values of ``rest`` left over.

    Parameters
    ----------
    sets : sequence of int
        Per position, the bitmask of the values it may take.
    rest : int
        The bitmask of the values the ``m`` further items may take (each a distinct value too).
    m : int
        How many further items, after the positions, must take distinct values of ``rest``.

    Returns
    -------
    tuple of (int, int) or None
        ``(taken, in_rest)``: the values one such assignment gives the positions (a bitmask) and
        how many of them lie in ``rest``; ``None`` when there is none.

    Notes
    -----
    A maximum flow: source → position (1) → value (1) → sink, where the values of ``rest`` reach
    the sink through one node ``Z`` of capacity ``|rest| - m`` (the further items take ``m``
    values of ``rest`` the positions leave, so the positions may take at most that many). Each
    position is placed by a breadth-first augmenting path over the positions and ``Z``, its steps
    bitmask operations: ``O(P²)`` big-integer operations for ``P`` positions, whatever the
    number of values.
    """
    slack = rest.bit_count() - m
    if slack < 0:
        return None
    n = len(sets)
    val = [0] * n          # the value bit each placed position holds
    owner: dict = {}       # value bit -> position
    taken = 0
    in_rest = 0
    for p0 in range(n):
        parent = {p0: None}  # node -> (node it was reached from, value bit); Z is -1
        queue = [p0]
        head = 0
        found = None
        while head < len(queue) and found is None:
            p = queue[head]
            head += 1
            if p >= 0:
                s = sets[p]
                free = s & ~taken
                out = free & ~rest
                if out:
                    found = (p, out & -out)
                    break
                inr = free & rest
                if inr:
                    b = inr & -inr
                    if in_rest < slack:
                        found = (p, b)
                        break
                    if -1 not in parent:
                        parent[-1] = (p, b)
                        queue.append(-1)
                via = s & taken
            else:
                via = taken & rest  # Z is full: a position holding a value of rest gives it up
            while via:
                b = via & -via
                via ^= b
                q = owner[b]
                if q not in parent:
                    parent[q] = (p, b)
                    queue.append(q)
        if found is None:
            return None
        p, b = found
        while True:  # p takes b; its old value goes to whoever reached it
            old = val[p]
            val[p] = b
            back = parent[p]
            if back is None:
                break
            pp, via_bit = back
            assert via_bit == old
            if pp == -1:  # p's value of rest is released; Z was entered by another taking a free one
                p, b = parent[-1]
            else:
                p, b = pp, old
        owner = {val[q]: q for q in range(p0 + 1)}
        taken = 0
        for q in range(p0 + 1):
            taken |= val[q]
        in_rest = (taken & rest).bit_count()
    return taken, in_rest


@register_family
class UniqueChoices:
    """Arrays of ``lo`` to ``hi`` distinct items drawn from finite sets, from the first item to
    the last (the brackets, and the empty array, are the compiler's).

    Parameters
    ----------
    prefix : str
        The family's names are ``<prefix>__<used>``, ``used`` the bitmask of the values used in
        lowercase hexadecimal: a name means the same state in every process.
    lo, hi : int, int or None
        ``minItems`` and ``maxItems``.
    values : list of ir.Node
        The language of each value (its every spelling the configuration allows), less the
        opening quote of a string; the languages of two values never share a text.
    quoted : list of bool
        Which values are strings (their node follows an opening quote).
    allowed : list of int
        The bitmask of the values each ``prefixItems`` position allows, then that of the items
        after them (``0`` where the array closes after its prefix).
    sep : ir.Node
        The separator between items.
    """

    kind = "unique_choices"
    why_no_text = (f"arrays of distinct items from more than {MAX_RENDERED_VALUES} values: a rule per set of "
                   "values used, made as decoding reaches it")

    def __init__(self, prefix: str, lo: int, hi, values: list, quoted: list, allowed: list, sep: ir.Node):
        self.prefix = prefix
        self._own = prefix + "__"
        self.lo, self.hi = lo, hi
        self.values = list(values)
        self.quoted = [bool(q) for q in quoted]
        self.allowed = list(allowed)
        self.sep = sep
        n = len(self.values)
        self.K = len(self.allowed) - 1
        self.cap = n if hi is None else min(hi, n)
        self.need = max(lo, 1)  # (the empty array is the compiler's: the start state is not nullable)
        self.renderable = n <= MAX_RENDERED_VALUES
        self._states: dict = {}  # name -> bitmask (the analyses ask twice for every successor)
        self.start = self.name(0)
        self._bodies: dict = {}
        self._live: dict = {}

    # ------------------------------------------------------------------ names and states
    def name(self, used: int) -> str:
        return f"{self._own}{used:x}"

    def _used(self, name: str):
        """The state of a name, ``None`` for a name that is not one of this family's."""
        hit = self._states.get(name)
        if hit is not None:
            return hit
        used = self._parse(name)
        if used is not None:
            if len(self._states) > 200_000:
                self._states.clear()
            self._states[name] = used
        return used

    def _parse(self, name: str):
        if not name.startswith(self._own):
            return None
        text = name[len(self._own):]
        try:
            used = int(text, 16)
        except ValueError:
            return None
        if used < 0 or f"{used:x}" != text or used >> len(self.values) or used.bit_count() > self.cap:
            return None
        return used

    def owns(self, name: str) -> bool:
        return self._used(name) is not None

    # ------------------------------------------------------------------ the language of a state
    def fits(self, used: int) -> bool:
        """Whether the array can be completed after the values ``used``: the positions from
        ``popcount(used)`` up to ``max(minItems, 1)`` can take distinct values not used yet."""
        hit = self._live.get(used)
        if hit is None:
            i = used.bit_count()
            if i >= self.need:
                hit = True
            elif self.need > self.cap:
                hit = False
            else:
                K = self.K
                sets = [self.allowed[p] & ~used for p in range(i, min(self.need, K))]
                hit = assign(sets, self.allowed[K] & ~used, max(0, self.need - max(i, K))) is not None
            if len(self._live) > 200_000:
                self._live.clear()
            self._live[used] = hit
        return hit

    def nullable(self, name: str) -> bool:
        return self._used(name).bit_count() >= self.need

    def productive(self, name: str) -> bool:
        return self.fits(self._used(name))

    def bind(self, node_productive) -> None:  # (the values' languages are never empty)
        return None

    def materialize(self) -> None:
        return None

    def _next(self, used: int):
        """The values that may come next after ``used`` with the array still completable."""
        i = used.bit_count()
        if i >= self.cap:
            return []
        K = self.K
        can = self.allowed[min(i, K)] & ~used
        if i + 1 >= self.need:
            return list(_bits(can))
        # one assignment of the positions owed after this one, with `used`: a value it leaves
        # alone keeps it valid (less one spare value of `items`' set, where the value is one);
        # a value it takes is decided on its own
        rest = self.allowed[K] & ~used
        m = max(0, self.need - max(i + 1, K))
        a = assign([self.allowed[p] & ~used for p in range(i + 1, min(self.need, K))], rest, m)
        if a is None:
            return []
        taken, in_rest = a
        spare = rest.bit_count() - m - in_rest
        out = []
        for k in _bits(can):
            b = 1 << k
            if (not b & taken and (not b & rest or spare >= 1)) or self.fits(used | b):
                out.append(k)
        return out

    def body(self, name: str) -> ir.Node:
        hit = self._bodies.get(name)
        if hit is not None:
            return hit
        used = self._used(name)
        i = used.bit_count()
        # the separator once, then one alternative per value left, the strings' opening quote
        # once too: a body is compiled by the engine item by item (~20 µs an alternative), and
        # most tokens that cross into it stop at its first bytes (`","`)
        quoted, plain = [], []
        values = self.values
        for k in self._next(used):
            # (a value's node kept whole, not flattened into the alternative: the engine compiles a
            # node once and finds it again by identity in every later body)
            (quoted if self.quoted[k] else plain).append(ir.Seq((values[k], Ref(self.name(used | 1 << k)))))
        if quoted:
            plain.append(seq(QUOTE, ir.alt(*quoted)))
        node = ir.alt(*([EPS] if i >= self.need else []), seq(self.sep if i else EPS, ir.alt(*plain)))
        if len(self._bodies) > 100_000:
            self._bodies.clear()
        self._bodies[name] = node
        return node

    # ------------------------------------------------------------------ saving
    def to_json(self, enc) -> dict:
        return {"kind": self.kind, "prefix": self.prefix, "lo": self.lo, "hi": self.hi,
                "values": [enc(v) for v in self.values], "quoted": "".join("01"[q] for q in self.quoted),
                "allowed": [f"{a:x}" for a in self.allowed],
                "sep": enc(self.sep)}

    @classmethod
    def from_json(cls, d: dict, dec) -> "UniqueChoices":
        """The family :meth:`to_json` wrote; ``ValueError`` (``KeyError``, ``TypeError``) if
        malformed."""
        if not isinstance(d["lo"], int) or not (d["hi"] is None or isinstance(d["hi"], int)) or \
                not isinstance(d["prefix"], str) or not isinstance(d["values"], list) or \
                not isinstance(d["allowed"], list) or not d["allowed"] or not isinstance(d["quoted"], str) or \
                len(d["quoted"]) != len(d["values"]) or d["quoted"].strip("01") or \
                not all(isinstance(a, str) for a in d["allowed"]):
            raise ValueError("malformed rule family")
        values = [dec(v) for v in d["values"]]
        allowed = [int(a, 16) for a in d["allowed"]]
        if any(a < 0 or a >> len(values) for a in allowed):
            raise ValueError("malformed rule family: a set names a value it does not have")
        return cls(d["prefix"], d["lo"], d["hi"], values, [q == "1" for q in d["quoted"]], allowed, dec(d["sep"]))
