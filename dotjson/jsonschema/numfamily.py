"""Numbers whose language is not a small DFA: rule families built as decoding reads them.

Two families, each one :mod:`dotjson.ir.families` rule family whose rules are the states of a
number automaton, named by the state itself (so a name means the same state in every process,
and a saved index keeps its meaning):

* :class:`LazyNumberDFA` -- the product automaton of :func:`numbers._number_dfa` (plain decimal
  notation, the same trackers), expanded one state at a time instead of eagerly: a product of
  ``multipleOf`` remainders and bounds too large to build whole (``multipleOf 13`` and not a
  multiple of 2, 3, 5, 7, 11: 30,030 remainders) costs only the states a document visits.
* :class:`ExponentNumbers` -- the numbers written **with an exponent** (``1.5E2``, ``-2e+1``,
  ``1000e-3``) under bounds, ``type: integer``, ``multipleOf``, excluded values. Whether
  ``0.00…01e+N`` is at least 100 depends on how many zeros came before the exponent: the
  language is not regular (nor context-free). A state carries what was read of the mantissa:
  its sign, whether it is zero, its magnitude ``P`` (the value is ``0.d1d2… × 10^P``), the count
  of significant digits, the comparison of those digits with each bound's, and the remainders
  of the significant digits modulo each ``multipleOf``. At the exponent every constraint is a
  condition ``P + e ⋚ k`` on the exponent ``e``: the allowed exponents are a finite union of
  intervals, written as a regular node over the exponent's digits.

Productivity (a state from which some number completes) is decided exactly by a search over
the states with the magnitude left out (the exponent can move it anywhere), which is finite.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from math import gcd

from dotjson import ir
from dotjson.errors import LimitExceededError
from dotjson.ir import EMPTY, EPS, Ref, alt, seq

__all__ = ["LazyNumberDFA", "ExponentNumbers", "exponent_node", "uint_between"]

#: States one productivity search may visit before it gives up with a named error.
MAX_SEARCH = 400_000

_DIGIT = ir.chars((0x30, 0x39))
_NONZERO = ir.chars((0x31, 0x39))
_E = ir.chars((0x45, 0x45), (0x65, 0x65))


# ----------------------------------------------------------------------------- state names
def _tup(x):
    return tuple(_tup(y) for y in x) if isinstance(x, list) else x


def _encode(state) -> str:
    return json.dumps(state, separators=(",", ":")).encode().hex()


def _decode(text: str):
    return _tup(json.loads(bytes.fromhex(text).decode()))


# ----------------------------------------------------------------------------- integer sets
# A set of integers: sorted disjoint closed intervals (lo, hi), None for -inf / +inf.
ALL = ((None, None),)
NONE = ()


def _iv(lo, hi):
    if lo is not None and hi is not None and lo > hi:
        return NONE
    return ((lo, hi),)


def _meet(a, b):
    out = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo = lo1 if lo2 is None else lo2 if lo1 is None else max(lo1, lo2)
            hi = hi1 if hi2 is None else hi2 if hi1 is None else min(hi1, hi2)
            if lo is None or hi is None or lo <= hi:
                out.append((lo, hi))
    out.sort(key=lambda t: (t[0] is not None, t[0] if t[0] is not None else 0))
    return tuple(out)


def _join(*sets):
    ivs = sorted((iv for s in sets for iv in s), key=lambda t: (t[0] is not None, t[0] if t[0] is not None else 0))
    out: list = []
    for lo, hi in ivs:
        if out:
            plo, phi = out[-1]
            if phi is None or (lo is not None and lo <= phi + 1):
                out[-1] = (plo, None if (phi is None or hi is None) else max(phi, hi))
                continue
        out.append((lo, hi))
    return tuple(out)


def _complement(a):
    out = []
    prev = None  # next uncovered lower end (None: -inf)
    start = True
    for lo, hi in a:
        if lo is not None:
            if start and prev is None:
                out.append((None, lo - 1))
            elif prev is not None and prev <= lo - 1:
                out.append((prev, lo - 1))
        start = False
        if hi is None:
            return tuple(out)
        prev = hi + 1
    if start:
        return ALL
    out.append((prev, None))
    return tuple(out)


def _shift(a, k):
    return tuple((None if lo is None else lo + k, None if hi is None else hi + k) for lo, hi in a)


# ----------------------------------------------------------------------------- exponent text
def _fixed(a: str, b: str) -> ir.Node:
    """Digit strings of length ``len(a)`` between ``a`` and ``b`` (same length) inclusive."""
    if not a:
        return EPS
    if a == "0" * len(a) and b == "9" * len(b):
        return ir.repeat(_DIGIT, len(a), len(a))
    if a[0] == b[0]:
        return seq(ir.lit(a[0]), _fixed(a[1:], b[1:]))
    n = len(a) - 1
    parts = [seq(ir.lit(a[0]), _fixed(a[1:], "9" * n))]
    lo, hi = ord(a[0]) + 1, ord(b[0]) - 1
    if lo <= hi:
        parts.append(seq(ir.chars((lo, hi)), ir.repeat(_DIGIT, n, n)))
    parts.append(seq(ir.lit(b[0]), _fixed("0" * n, b[1:])))
    return alt(*parts)


def _canonical_between(lo: int, hi) -> ir.Node:
    """Decimal numerals without leading zeros (``0`` for zero) of the integers in ``[lo, hi]``
    (``hi`` None: unbounded), ``0 <= lo``."""
    parts = []
    if lo == 0:
        parts.append(ir.lit("0"))
        lo = 1
        if hi is not None and hi < 1:
            return alt(*parts)
    n = len(str(lo))
    while True:
        top = 10 ** n - 1
        if hi is not None and hi < 10 ** (n - 1):
            break
        if hi is None and lo == 10 ** (n - 1):
            parts.append(seq(_NONZERO, ir.repeat(_DIGIT, n - 1, None)))
            break
        h = top if hi is None or hi > top else hi
        if lo <= h:
            parts.append(_fixed(str(lo), str(h)))
        if hi is not None and hi <= top:
            break
        lo = 10 ** n
        n += 1
    return alt(*parts)


def uint_between(lo: int, hi) -> ir.Node:
    """Digit strings (leading zeros allowed, at least one digit) whose value is in ``[lo, hi]``."""
    if hi is not None and hi < lo:
        return EMPTY
    return seq(ir.repeat(ir.lit("0"), 0, None), _canonical_between(lo, hi)) if lo > 0 or hi != 0 else \
        ir.repeat(ir.lit("0"), 1, None)


def exponent_node(es) -> ir.Node:
    """``[eE][+-]?[0-9]+`` whose value is in the integer set ``es`` (an interval tuple)."""
    if not es:
        return EMPTY
    pos = _meet(es, ((0, None),))
    neg = _meet(es, ((None, -1),))
    parts = []
    for lo, hi in pos:
        parts.append(seq(ir.opt(ir.lit("+")), uint_between(lo, hi)))
        if lo == 0:
            parts.append(seq(ir.lit("-"), ir.repeat(ir.lit("0"), 1, None)))  # -0, -00, ...
    for lo, hi in neg:
        parts.append(seq(ir.lit("-"), uint_between(-hi, None if lo is None else -lo)))
    return seq(_E, alt(*parts))


# ----------------------------------------------------------------------------- helpers
def _sig(c: Decimal):
    """``(digits, P, sign)`` with ``|c| = 0.digits × 10^P`` (digits without leading or trailing
    zeros); ``("", 0, 0)`` for zero. Exact for any exponent (nothing is written out)."""
    if c == 0:
        return "", 0, 0
    sign, digits, exp = c.as_tuple()
    ds = "".join(map(str, digits)).lstrip("0")
    k = len(ds)
    stripped = ds.rstrip("0")
    exp += k - len(stripped)
    return stripped, len(stripped) + exp, -1 if sign else 1


def _mult_parts(m: Decimal):
    """``multipleOf m`` as ``(a, s)`` with ``m = a × 10^-s`` and ``a`` not divisible by 10."""
    sign, digits, exp = m.as_tuple()
    ds = "".join(map(str, digits)).lstrip("0") or "0"
    stripped = ds.rstrip("0")
    exp += len(ds) - len(stripped)
    return int(stripped), -exp


def _val(n: int, p: int, cap: int) -> int:
    """The exponent of prime ``p`` in ``n`` (``n`` taken modulo ``p^cap``), at most ``cap``."""
    k = 0
    n %= p ** cap if cap else 1
    if n == 0:
        return cap
    while k < cap and n % p == 0:
        n //= p
        k += 1
    return k


def _split25(n: int):
    """``(a, b, m)`` with ``n = 2^a · 5^b · m`` and ``m`` prime to 10 (``n > 0``)."""
    a = b = 0
    while n % 2 == 0:
        n //= 2
        a += 1
    while n % 5 == 0:
        n //= 5
        b += 1
    return a, b, n


def _order10(m: int) -> int:
    """The multiplicative order of 10 modulo ``m`` (``gcd(m, 10) = 1``)."""
    if m == 1:
        return 1
    x, k = 10 % m, 1
    while x != 1:
        x = x * 10 % m
        k += 1
    return k


_DIGITS = "0123456789"


# ----------------------------------------------------------------------------- arithmetic liveness
#: Remainders a productivity search may meet before the family decides it arithmetically
#: instead (a ``multipleOf`` of ``0.123456789`` or ``2^40``: the search's states are its
#: remainders, ten new ones a digit, and none repeats before 10^9 of them).
BIG_MODULUS = 10_000
#: Consecutive multiples one interval check may try before it gives up with a named error
#: (only ``not: {multipleOf}`` and excluded values rule a multiple out; they leave gaps within
#: a few multiples unless they exclude all of them, which :class:`_Arith` sees first).
MAX_CANDIDATES = 100_000


def _ilog10(x) -> int:
    """``floor(log10(x))`` of a positive rational, give or take one."""
    x = Fraction(x)
    return len(str(x.numerator)) - len(str(x.denominator))


class _Arith:
    """A family's constraints as exact rationals, to decide from the text of a prefix whether
    some number completes it: the numbers a prefix can still become are a union of intervals
    (``12`` in plain notation: ``[12·10^j, 13·10^j)`` for ``j >= 0``; a mantissa ``12`` before
    an exponent: for every integer ``j``), and whether an interval holds a multiple of the
    ``multipleOf`` divisors within the bounds, not excluded, is a question about the first few
    multiples in it. Exact for any divisor: no remainder is ever enumerated.

    ``integer``: ``True`` integers only, ``False`` non-integers only, ``None`` either.
    """

    def __init__(self, lo, lox, hi, hix, mults, notmults, ne, integer):
        F = Fraction
        M = None
        for m in mults:
            m = F(m)
            if M is None:
                M = m
            else:  # lcm of two rationals: lcm of numerators over gcd of denominators
                num = M.numerator * m.numerator // gcd(M.numerator, m.numerator)
                M = F(num, gcd(M.denominator, m.denominator))
        nots = [F(n) for n in notmults]
        if integer is True:
            M = F(1) if M is None else F(M.numerator)  # lcm(M, 1)
        elif integer is False:
            nots.append(F(1))
        self.M = M
        self._bounds = (None if lo is None else F(lo), None if hi is None else F(hi))
        # every multiple of M is a multiple of some excluded divisor: no number at all but
        # (when M is None) the non-multiples
        self.void = M is not None and any((M / n).denominator == 1 for n in nots)
        self.sides = {}
        for neg in (False, True):
            if not neg:
                b = (None if lo is None else F(lo), lox, None if hi is None else F(hi), hix)
                e = frozenset(F(c) for c in ne)
            else:  # the negative numbers, mirrored: x -> -x swaps the bounds
                b = (None if hi is None else -F(hi), hix, None if lo is None else -F(lo), lox)
                e = frozenset(-F(c) for c in ne)
            self.sides[neg] = (b, e, tuple(nots))

    def _ok(self, v, ne, nots) -> bool:
        return v not in ne and not any((v / n).denominator == 1 for n in nots) and \
            (self.M is None or (v / self.M).denominator == 1)

    def exists(self, neg: bool, A, B) -> bool:
        """Some number ``x`` with ``A <= |x| < B`` (``B`` None: no end), of the sign ``neg``
        (zero belongs to both), meets every constraint."""
        (lo, lox, hi, hix), ne, nots = self.sides[neg]
        L, Lx = Fraction(A), False
        if lo is not None and (lo > L or (lo == L and lox)):
            L, Lx = lo, lox
        if B is None:
            H, Hx = hi, hix
        else:
            H, Hx = Fraction(B), True
            if hi is not None and hi < H:
                H, Hx = hi, hix
        if H is not None and (L > H or (L == H and (Lx or Hx))):
            return False
        if self.M is None:
            if H is None or L < H:
                return True  # a non-empty open interval: a decimal on none of the lattices
            return self._ok(L, ne, nots)
        if self.void:
            return False
        q = L / self.M
        k = -((-q.numerator) // q.denominator)  # ceil
        if Lx and q.denominator == 1:
            k += 1
        k1 = None
        if H is not None:
            q = H / self.M
            k1 = q.numerator // q.denominator
            if Hx and q.denominator == 1:
                k1 -= 1
        end = k + MAX_CANDIDATES
        while k1 is None or k <= k1:
            if k >= end:
                raise LimitExceededError(
                    f"number automaton: more than {MAX_CANDIDATES} consecutive multiples are excluded")
            if self._ok(k * self.M, ne, nots):
                return True
            k += 1
        return False

    def _ends(self, neg):
        (lo, lox, hi, hix), _, _ = self.sides[neg]
        return lo, hi

    def _scaled(self, neg: bool, c: int, n: int) -> bool:
        """Some number in ``[c·10^n, (c+1)·10^n)`` for one ``n >= n0`` (``n0`` None: any
        integer) meets the constraints; ``c >= 1``."""
        lo, hi = self._ends(neg)
        if hi is None:
            # no end on this side: enough digits (or a large enough exponent) pass every lower
            # bound and give an interval holding every remainder of the multiples
            return not self.void
        floor_ = max([x for x in (lo, self.M) if x is not None and x > 0], default=None)
        if n is None:
            if floor_ is None:
                # numbers as small as we like: some tiny interval lies under any positive bound
                return hi is None or hi > 0
            n = _ilog10(floor_) - len(str(c)) - 2
        elif floor_ is not None:
            n = max(n, _ilog10(floor_) - len(str(c)) - 2)
        while True:
            w = 10 ** n if n >= 0 else Fraction(1, 10 ** -n)
            A = c * w
            if A > hi:
                return False
            if self.exists(neg, A, A + w):
                return True
            n += 1

    def plain_live(self, text: str) -> bool:
        """Some number in plain notation that starts with ``text`` meets the constraints."""
        neg = text.startswith("-")
        body = text[1:] if neg else text
        if not body:
            return self.exists(True, 0, None) or (not neg and self.exists(False, 0, None))
        ip, dot, fp = body.partition(".")
        if dot or int(ip) == 0:
            t = Fraction(int(ip + fp), 10 ** len(fp))
            return self.exists(neg, t, t + Fraction(1, 10 ** len(fp)))
        return self._scaled(neg, int(ip), 0)

    def holds(self, v) -> bool:
        """The number ``v`` (a rational) meets every constraint."""
        v = Fraction(v)
        neg = v < 0
        (lo, lox, hi, hix), ne, nots = self.sides[neg]
        a = -v if neg else v
        if (lo is not None and (a < lo or (a == lo and lox))) or (hi is not None and (a > hi or (a == hi and hix))):
            return False
        return self._ok(a, ne, nots)

    @staticmethod
    def _first_integral(q):
        """The least integer ``E`` with ``q·10^E`` an integer (``q > 0``), ``None`` when none
        is (``q``'s denominator has a prime factor other than 2 and 5)."""
        r = q.numerator
        x, y, s = _split25(q.denominator)
        if s != 1:
            return None
        if x or y:
            return max(x, y)
        k = 0
        while r % 10 == 0:
            r //= 10
            k += 1
        return -k

    def exp_part_live(self, mantissa: str, esign: str, edigits: str) -> bool:
        """Some number ``mantissa e esign edigits…`` (the exponent's digits starting with
        ``edigits``) meets the constraints: the exponents ``E`` allowed are an interval (bounds;
        a multiple from some ``E`` on, a non-multiple below some ``E``) less the finitely many that
        hit an excluded value, and the exponents the digits can still become are intervals
        ``[d·10^j, (d+1)·10^j)``."""
        v = Fraction(Decimal(mantissa))
        if v == 0:
            return self.holds(0)
        neg = v < 0
        a = -v if neg else v
        (lo, lox, hi, hix), ne, nots = self.sides[neg]
        F10 = Fraction(10)
        ea = eb = None  # allowed exponents [ea, eb], None: no end
        if lo is not None and lo > 0:
            e = _ilog10(lo / a) - 1
            while a * F10 ** e < lo or (lox and a * F10 ** e == lo):
                e += 1
            ea = e
        if hi is not None:
            if hi <= 0:
                return False
            e = _ilog10(hi / a) + 1
            while a * F10 ** e > hi or (hix and a * F10 ** e == hi):
                e -= 1
            eb = e
        if self.M is not None:
            if self.void:
                return False
            t = self._first_integral(a / self.M)
            if t is None:
                return False
            ea = t if ea is None else max(ea, t)
        for n in nots:
            t = self._first_integral(a / n)
            if t is not None:
                eb = t - 1 if eb is None else min(eb, t - 1)
        if ea is not None and eb is not None and ea > eb:
            return False
        bad = set()
        for c in ne:
            t = c / a
            e = _ilog10(t)
            for k in (e - 1, e, e + 1):
                if a * F10 ** k == c:
                    bad.add(k)
        # the exponents the text can still become, as E (sign applied)
        sg = -1 if esign == "-" else 1
        if not edigits:
            cands = [(None, None)] if not esign else [(0, None)] if sg > 0 else [(None, 0)]
            return self._meets(cands, ea, eb, bad)
        d = int(edigits)
        j = 0
        while True:
            r0, r1 = (d * 10 ** j, (d + 1) * 10 ** j - 1) if d else (0, None)
            iv = (r0, r1) if sg > 0 else ((None if r1 is None else -r1), -r0)
            if self._meets([iv], ea, eb, bad):
                return True
            # past the allowed exponents: none further (with no end there, a range wider than
            # the excluded ones inside the allowed ones is met first)
            if r1 is None or (sg > 0 and eb is not None and r0 > eb) or (sg < 0 and ea is not None and -r0 < ea):
                return False
            j += 1
            if j > 1000:
                raise LimitExceededError("number automaton: an exponent of more than 1000 digits")

    @staticmethod
    def _meets(ivs, ea, eb, bad) -> bool:
        """Some integer of the intervals ``ivs`` in ``[ea, eb]`` and not in ``bad``."""
        for r0, r1 in ivs:
            lo = r0 if ea is None else ea if r0 is None else max(r0, ea)
            hi = r1 if eb is None else eb if r1 is None else min(r1, eb)
            if lo is None:
                lo = (hi if hi is not None else 0) - len(bad) - 1
            k = lo
            while hi is None or k <= hi:
                if k not in bad:
                    return True
                k += 1
        return False

    def count_upto(self, limit: int) -> int:
        """How many numbers meet the constraints, counted up to ``limit`` (``limit`` when
        there are at least that many: an interval of positive length, or no end)."""
        lo, hi = self._bounds
        if self.M is None:
            if lo is not None and lo == hi:
                return int(self.holds(lo))  # one value
            return 0 if lo is not None and hi is not None and lo > hi else limit
        if self.void:
            return 0
        if lo is None or hi is None:
            return limit
        q = lo / self.M
        k = -((-q.numerator) // q.denominator)
        q = hi / self.M
        k1 = q.numerator // q.denominator
        n = 0
        while k <= k1 and n < limit:
            n += self.holds(k * self.M)
            k += 1
        return n

    def exponent_live(self, text: str) -> bool:
        """Some number written ``text…e…`` (the mantissa starting with ``text``, any exponent)
        meets the constraints."""
        neg = text.startswith("-")
        body = text[1:] if neg else text
        if not body:
            return self.exists(True, 0, None) or (not neg and self.exists(False, 0, None))
        sig = body.replace(".", "").lstrip("0")
        if not sig:  # zero so far: zero, or any positive number with more digits and an exponent
            return self.exists(neg, 0, None)
        return self._scaled(neg, int(sig), None)


class _Family:
    """The rule family protocol of :mod:`dotjson.ir.families` over named states."""

    kind = ""
    renderable = False  # expand_families refuses these (no finite grammar text)
    #: the constraints as rationals (:class:`_Arith`) where a search over states would not end
    _arith = None

    def __init__(self, prefix: str):
        self.prefix = prefix
        self._own = prefix + "__"
        self._states: dict = {}
        self._names: dict = {}
        self.start = self._own + _encode(self.init_state())
        self._bodies: dict = {}
        self._prod: dict = {}
        # a text that reaches each state named so far (what :class:`_Arith` decides from)
        self._rep: dict = {self.init_state(): ""}

    def owns(self, name: str) -> bool:
        if not name.startswith(self._own):
            return False
        try:
            self._state(name)
        except (ValueError, TypeError):
            return False
        return True

    def _state(self, name: str):
        st = self._states.get(name)
        if st is None:
            st = _decode(name[len(self._own):])
            if not isinstance(st, tuple):
                raise ValueError(name)
            self._remember(name, st)
        return st

    def _remember(self, name: str, st) -> None:
        # (names and states both ways: the analyses ask nullable/productive by name, for every
        # successor of every body, and a name is JSON of the state, hex-encoded)
        if len(self._states) > 200_000:
            self._states.clear()
            self._names.clear()
        self._states[name] = st
        self._names[st] = name

    def name(self, st) -> str:
        nm = self._names.get(st)
        if nm is None:
            nm = self._own + _encode(st)
            self._remember(nm, st)
        return nm

    def nullable(self, name: str) -> bool:
        return self.accepts_empty(self._state(name))

    def productive(self, name: str):
        return self.live(self._state(name))

    def bind(self, node_productive) -> None:  # (members of these families are self-contained)
        return None

    def materialize(self) -> None:
        return None

    def body(self, name: str) -> ir.Node:
        hit = self._bodies.get(name)
        if hit is not None:
            return hit
        st = self._state(name)
        by: dict = {}
        rep = self._rep.get(st)
        for ch, nxt in self.moves(st):
            if rep is not None and nxt not in self._rep:
                self._rep[nxt] = rep + ch[0]
            if self.live(nxt):
                by.setdefault(nxt, []).extend(ch)  # (ch: one character or a class of digits)
        outs = []
        for nxt, chs in by.items():
            outs.append(seq(ir.chars(*((ord(c), ord(c)) for c in chs)), Ref(self.name(nxt))))
        tail = self.tail(st)
        node = alt(*(([EPS] if self.accepts_empty(st) else []) + ([tail] if tail is not EMPTY else []) + outs))
        self._bodies[name] = node
        return node

    def tail(self, st) -> ir.Node:
        return EMPTY

    def hopeless(self, st) -> bool:
        """A necessary condition of death: no text completes ``st`` (prunes the searches)."""
        return False

    def assume_path(self, text: str) -> None:
        """``text`` is a number of this family's language: every state on its path can be
        completed (checked: a text that does not end accepted changes nothing)."""
        st = self.init_state()
        path = [st]
        for ch in text:
            nxt = next((n for c, n in self.moves(st) if ch in c), None)
            if nxt is None:
                return
            st = nxt
            path.append(st)
        if self.can_end(st):
            for p in path:
                self._prod[self.abstract(p)] = True

    def _reps_json(self) -> dict:
        """The texts that reach the states named so far, for a saved index (only where
        :class:`_Arith` decides: a state reached again after loading needs one); each a longest
        one (its prefixes reach the states before it)."""
        if self._arith is None:
            return {}
        texts = sorted(set(self._rep.values()))
        return {"reps": [t for k, t in enumerate(texts) if k + 1 == len(texts) or not texts[k + 1].startswith(t)]}

    def restore_reps(self, texts) -> None:
        """Replays a saved index's texts (:meth:`_reps_json`): every state on each path gets its
        text. A text that leaves the automaton is a corrupt file (``ValueError``)."""
        if not isinstance(texts, list) or not all(isinstance(t, str) and len(t) < 100_000 for t in texts):
            raise ValueError("malformed rule family: reps must be a list of texts")
        for text in texts:
            st = self.init_state()
            for k, ch in enumerate(text):
                st = next((n for c, n in self.moves(st) if ch in c), None)
                if st is None:
                    raise ValueError(f"malformed rule family: {text!r} leaves the number automaton")
                self._rep.setdefault(st, text[:k + 1])

    def live(self, st) -> bool:
        """Some text completes the number from state ``st`` (exact; memoized)."""
        key = self.abstract(st)
        hit = self._prod.get(key)
        if hit is not None:
            return hit
        if self._arith is not None:
            text = self._rep.get(st)
            if text is not None:
                ok = self._prod[key] = self._arith_live(text)
                return ok
        # search the abstract states from key for one that can end; the path to it is
        # productive too (remembered: the next state's question is then answered at once)
        seen = {key: st}
        parent = {key: None}
        order = [key]
        k = 0
        found = None
        while k < len(order):
            a = order[k]
            k += 1
            known = self._prod.get(a)
            if known is True or (known is None and self.can_end(seen[a])):
                found = a
                break
            if known is False or self.hopeless(seen[a]):
                continue
            for _, nxt in self.moves(seen[a]):
                b = self.abstract(nxt)
                if b not in seen:
                    seen[b] = nxt
                    parent[b] = a
                    order.append(b)
                    if len(order) > MAX_SEARCH:
                        raise LimitExceededError(
                            f"number automaton: deciding whether a number can still be completed took more than "
                            f"{MAX_SEARCH} states")
        if found is None:
            for a in order:
                self._prod[a] = False
            return False
        while found is not None:
            self._prod[found] = True
            found = parent[found]
        return True


# ============================================================================ plain, lazily
class LazyNumberDFA(_Family):
    """The plain-notation number automaton of :func:`dotjson.jsonschema.numbers._number_dfa`
    (same trackers), one rule per state, states made when a document reaches them."""

    kind = "lazy_number_dfa"
    why_no_text = ("a number automaton too large to write out: past 4,000 states, bounds of thousands of digits or "
                   "a multipleOf with many remainders, built a state at a time")

    def __init__(self, prefix: str, trackers, allow_exp: bool, params=None):
        from dotjson.jsonschema import numbers as _n

        self._n = _n
        self.trackers = trackers
        self.allow_exp = allow_exp
        self.params = params
        self._moves: dict = {}
        if not allow_exp:
            self._arith = _arith_of_trackers(trackers, _n)
        super().__init__(prefix)

    def init_state(self):
        return ("S", tuple(t.init for t in self.trackers))

    def _arith_live(self, text: str) -> bool:
        return self._arith.plain_live(text)

    def moves(self, st):
        """``(characters, next state)`` pairs: the digits of one syntax move are split only
        where a tracker tells them apart (its ``cuts``), one representative stepped per class,
        as :func:`~dotjson.jsonschema.numbers._number_dfa` does."""
        hit = self._moves.get(st)
        if hit is not None:
            return hit
        ph, tss = st
        out = []
        for ph2, ch, lo, hi in self._n._MOVES[ph]:
            if ph2 in self._n._EXP_PHASES and not self.allow_exp:
                continue
            if ch is not None:
                classes = [ch]
            else:
                cut = 0
                for t, ts in zip(self.trackers, tss):
                    cut |= t.cuts(ts, ph2)
                classes = []
                start = lo
                for d in range(lo + 1, hi + 2):
                    if d > hi or (cut >> d) & 1:
                        classes.append(_DIGITS[start:d])
                        start = d
            for cls in classes:
                new = []
                for t, ts in zip(self.trackers, tss):
                    ns = t.step(ts, ph, cls[0], ph2)
                    if ns is None:
                        break
                    new.append(ns)
                else:
                    out.append((cls, (ph2, tuple(new))))
        if len(self._moves) < 200_000:
            self._moves[st] = out
        return out

    def accepts_empty(self, st) -> bool:
        ph, tss = st
        return ph in self._n._SYNTAX_ACCEPT and all(t.accept(ts) for t, ts in zip(self.trackers, tss))

    can_end = accepts_empty

    def abstract(self, st):
        return st

    def hopeless(self, st) -> bool:
        return any(getattr(t, "hopeless", None) is not None and t.hopeless(ts) for t, ts in zip(self.trackers, st[1]))

    def to_json(self, enc) -> dict:
        if self.params is None:
            raise ValueError("this number family cannot be saved")
        return {"kind": self.kind, "prefix": self.prefix, "params": self.params, **self._reps_json()}


def _arith_of_trackers(trackers, n):
    """The :class:`_Arith` of a plain automaton's trackers when one of them is a remainder
    too large to search (else ``None``: the search over states decides, as it always has)."""
    lo = hi = None
    lox = hix = False
    mults, notmults, ne = [], [], []
    integer = None
    big = False
    for t in trackers:
        if isinstance(t, n._CmpTracker):
            if t.op in ("ge", "gt", "eq"):
                lo, lox = t.c, t.op == "gt"
            if t.op in ("le", "lt", "eq"):
                hi, hix = t.c, t.op == "lt"
            if t.op == "ne":
                ne.append(t.c)
        elif isinstance(t, n._IntTracker):
            if t.syntactic:
                return None  # draft 4: "1.0" is no integer; the search decides
            integer = t.negate is False
        else:
            if isinstance(t, n._ModTracker):
                m, big = Fraction(t.a, 10 ** t.s), big or t.a > BIG_MODULUS
            else:
                m, big = Fraction(t.b * 10 ** t.k), big or t.b > BIG_MODULUS
            (notmults if t.negate else mults).append(m)
    if not big:
        return None
    return _Arith(lo, lox, hi, hix, mults, notmults, ne, integer)


# ============================================================================ with exponents
class ExponentNumbers(_Family):
    """The numbers written with an exponent that satisfy the constraints (exactly), as a family.

    Parameters
    ----------
    prefix : str
        The rule-name prefix.
    lo, lox, hi, hix : Decimal or None, bool
        Bounds and exclusivity.
    mults, notmults : tuple of Decimal
        ``multipleOf`` divisors the number must / must not be a multiple of.
    ne : tuple of Decimal
        Excluded values.
    integer : {None, True, False}
        ``True``: integers only; ``False``: non-integers only; ``None``: either.
    """

    kind = "exponent_numbers"
    why_no_text = ("its language is not context-free: numbers with exponents under bounds, integrality or "
                   "multipleOf, which numbers='any' accepts (the default of the every-valid configuration); "
                   "numbers='plain' writes them in plain notation")

    def __init__(self, prefix, lo, lox, hi, hix, mults, notmults, ne, integer):
        self.params = {"lo": None if lo is None else str(lo), "lox": lox, "hi": None if hi is None else str(hi),
                       "hix": hix, "mults": [str(m) for m in mults], "notmults": [str(m) for m in notmults],
                       "ne": [str(c) for c in ne], "integer": integer}
        cmps = []
        if lo is not None and hi is not None and lo == hi:
            cmps.append((lo, "eq"))
        else:
            if lo is not None:
                cmps.append((lo, "gt" if lox else "ge"))
            if hi is not None:
                cmps.append((hi, "lt" if hix else "le"))
        cmps += [(c, "ne") for c in ne]
        self.cmps = [(_sig(c), op) for c, op in cmps]
        self.integer = integer
        self.mults = []
        for m, neg in [(m, False) for m in mults] + [(m, True) for m in notmults]:
            a, s = _mult_parts(m)
            alpha, beta, ap = _split25(a)
            self.mults.append((a, s, ap, alpha, beta, neg))
        # abstraction of the searches: nsig beyond `ncap` behaves as `ncap`; zs folds at `z0`
        # with the period of 10 modulo the coprime parts
        pts = [abs(P) for (_, P, _), _ in self.cmps] + [0]
        offs = [abs(s) + max(al, be) for _, s, _, al, be, _ in self.mults] + [0]
        self.ncap = max(pts) + max(offs) + 3
        per = 1
        for _, _, ap, _, _, _ in self.mults:
            if ap > BIG_MODULUS:
                per = None  # (the order of 10 can be ~ap: the searches are arithmetic then)
                break
            o = _order10(ap)
            per = per * o // gcd(per, o)
        if any(a > BIG_MODULUS for a, *_ in self.mults):
            self._arith = _Arith(lo, lox, hi, hix, mults, notmults, ne, integer)
        self.z0 = self.ncap + max([max(al, be) for _, _, _, al, be, _ in self.mults] + [0])
        self.per = per
        self.has_mults = bool(self.mults)
        self.uses_nsig = bool(self.mults) or integer is not None
        # the most significant digits a nonzero number of each sign can have (integers and
        # multiples need P >= nsig - s, the bounds cap P), None when unbounded
        self.lim = {}
        for sv in (1, -1):
            out = ALL
            for (C, Pc, csign), op in self.cmps:
                if csign == 0 or csign != sv:
                    if not _holds(op, sv):
                        out = NONE
                    continue
                pieces = [(_iv(None, Pc - 1), -sv), (_iv(Pc + 1, None), sv)] + [(_iv(Pc, Pc), sv * g) for g in (-1, 0, 1)]
                out = _meet(out, _join(*(q for q, r in pieces if _holds(op, r))))
            pmax = out[-1][1] if out else None
            lims = []
            if not out:
                lims.append(-1)  # no nonzero number of this sign
            elif pmax is not None:
                if integer:
                    lims.append(pmax)
                lims += [pmax + s_ for _, s_, _, _, _, negm in self.mults if not negm]
            self.lim[sv] = min(lims) if lims else None
        super().__init__(prefix)

    # state: (ph, neg, zero, pm, nsig, zs, cmps, res)
    def init_state(self):
        return ("S", False, True, 0, 0, 0, tuple(0 for _ in self.cmps), tuple(0 for _ in self.mults))

    def accepts_empty(self, st) -> bool:
        return False  # a mantissa alone is the plain automaton's

    def _sigdigit(self, st, d: int, first: bool):
        ph, neg, zero, pm, nsig, zs, cs, rs = st
        ncs = []
        for ((C, _, _), _), j in zip(self.cmps, cs):
            if j >= 0:
                cd = int(C[j]) if j < len(C) else 0
                j = min(j + 1, len(C)) if d == cd else (-1 if d < cd else -2)
            ncs.append(j)
        nrs = []
        for (a, *_), r in zip(self.mults, rs):
            if first:
                r = d % a
            elif d:
                r = (r * pow(10, zs + 1, a) + d) % a
            nrs.append(r)
        if first:
            nsig, zs = 1, 0
        elif d:
            nsig, zs = nsig + zs + 1, 0
        else:
            zs += 1
        return nsig, zs, tuple(ncs), tuple(nrs)

    def moves(self, st):
        ph, neg, zero, pm, nsig, zs, cs, rs = st
        out = []
        row = _SYNTAX_M.get(ph, {})
        for ch, ph2 in row.items():
            if ch == "-":
                out.append((ch, (ph2, True, zero, pm, nsig, zs, cs, rs)))
            elif ch == ".":
                out.append((ch, (ph2, neg, zero, pm, nsig, zs, cs, rs)))
            else:
                d = ord(ch) - 48
                if ph2 == "Z":
                    out.append((ch, (ph2, neg, True, 0, 0, 0, cs, rs)))
                elif ph2 == "I":
                    if zero:
                        ns, z, c2, r2 = self._sigdigit(st, d, True)
                        out.append((ch, (ph2, neg, False, 1, ns, z, c2, r2)))
                    else:
                        ns, z, c2, r2 = self._sigdigit(st, d, False)
                        out.append((ch, (ph2, neg, False, pm + 1, ns, z, c2, r2)))
                else:  # F
                    if zero and d == 0:
                        out.append((ch, (ph2, neg, True, pm - 1, 0, 0, cs, rs)))
                    else:
                        ns, z, c2, r2 = self._sigdigit(st, d, zero)
                        out.append((ch, (ph2, neg, False, pm, ns, z, c2, r2)))
        return out

    def pset(self, st):
        """The magnitudes ``P`` (value ``0.digits × 10^P``) at which the number read satisfies
        every constraint."""
        ph, neg, zero, pm, nsig, zs, cs, rs = st
        out = ALL
        sv = -1 if neg else 1
        for ((C, Pc, csign), op), j in zip(self.cmps, cs):
            if zero or csign == 0 or csign != sv:
                r = -csign if zero else sv
                pieces = [(ALL, r)]
            else:
                sigf = -1 if j == -1 else 1 if j == -2 else (-1 if j < len(C) else 0)
                pieces = [(_iv(None, Pc - 1), -sv), (_iv(Pc, Pc), sv * sigf), (_iv(Pc + 1, None), sv)]
            ok = _join(*(s for s, r in pieces if _holds(op, r)))
            out = _meet(out, ok)
            if not out:
                return NONE
        if self.integer is not None:
            if zero:
                s = ALL if self.integer else NONE
            else:
                s = _iv(nsig, None) if self.integer else _iv(None, nsig - 1)
            out = _meet(out, s)
        for (a, s_, ap, alpha, beta, negm), r in zip(self.mults, rs):
            if zero:
                s = ALL
            elif r % ap:
                s = NONE
            else:
                need = max(0, alpha - _val(r, 2, alpha), beta - _val(r, 5, beta))
                s = _iv(need + nsig - s_, None)
            if negm:
                s = _complement(s)
            out = _meet(out, s)
        return out

    def hopeless(self, st) -> bool:
        # what any continuation can still reach: a comparison still equal may end <, = or >;
        # the count of significant digits only grows (integers and multiples need P >= it)
        ph, neg, zero, pm, nsig, zs, cs, rs = st
        if zero:
            return False
        out = ALL
        sv = -1 if neg else 1
        for ((C, Pc, csign), op), j in zip(self.cmps, cs):
            if csign == 0 or csign != sv:
                if not _holds(op, sv):
                    return True
                continue
            sigs = (-1, 0, 1) if j >= 0 else ((-1,) if j == -1 else (1,))
            pieces = [(_iv(None, Pc - 1), -sv), (_iv(Pc + 1, None), sv)] + [(_iv(Pc, Pc), sv * g) for g in sigs]
            out = _meet(out, _join(*(s for s, r in pieces if _holds(op, r))))
        if self.integer:
            out = _meet(out, _iv(nsig, None))
        for a, s_, ap, alpha, beta, negm in self.mults:
            if not negm:
                out = _meet(out, _iv(nsig - s_, None))
        return not out

    def _arith_live(self, text: str) -> bool:
        return self._arith.exponent_live(text)

    def eset(self, st):
        return _shift(self.pset(st), -st[3])

    def tail(self, st) -> ir.Node:
        if st[0] not in ("Z", "I", "F"):
            return EMPTY
        return exponent_node(self.eset(st))

    def can_end(self, st) -> bool:
        return st[0] in ("Z", "I", "F") and bool(self.pset(st))

    def abstract(self, st):
        ph, neg, zero, pm, nsig, zs, cs, rs = st
        if not self.uses_nsig:
            nsig = zs = 0
        else:
            nsig = min(nsig, self.ncap)
            if not self.has_mults:
                zs = min(zs, self.ncap)
            elif zs >= self.z0 and self.per is not None:
                zs = self.z0 + (zs - self.z0) % self.per
            lim = self.lim[-1 if neg else 1]
            if lim is not None and not zero:
                # past lim - nsig zeros a nonzero digit is hopeless: only zeros may follow
                zs = min(zs, max(0, lim - st[4]) + 1)
        return (ph, neg, zero, nsig, zs, cs, rs)

    def live(self, st) -> bool:
        # an excluded-equality that is already decided can never hold again (a quick answer)
        if not st[2]:
            for (_, op), j in zip(self.cmps, st[6]):
                if op == "eq" and j < 0:
                    return False
        return super().live(st)

    def to_json(self, enc) -> dict:
        return {"kind": self.kind, "prefix": self.prefix, "params": self.params, **self._reps_json()}

    @classmethod
    def from_params(cls, prefix, p):
        D = Decimal
        return cls(prefix, None if p["lo"] is None else D(p["lo"]), bool(p["lox"]),
                   None if p["hi"] is None else D(p["hi"]), bool(p["hix"]), tuple(D(x) for x in p["mults"]),
                   tuple(D(x) for x in p["notmults"]), tuple(D(x) for x in p["ne"]), p["integer"])


def _holds(op: str, r: int) -> bool:
    return {"ge": r >= 0, "gt": r > 0, "le": r <= 0, "lt": r < 0, "eq": r == 0, "ne": r != 0}[op]


# the mantissa's syntax (the exponent is the tail's)
_SYNTAX_M = {
    "S": {"-": "M", "0": "Z", **{d: "I" for d in "123456789"}},
    "M": {"0": "Z", **{d: "I" for d in "123456789"}},
    "Z": {".": "D"},
    "I": {".": "D", **{d: "I" for d in "0123456789"}},
    "D": {d: "F" for d in "0123456789"},
    "F": {d: "F" for d in "0123456789"},
}
