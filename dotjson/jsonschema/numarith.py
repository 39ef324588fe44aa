"""Exact arithmetic of the number families: integer sets, exponent text and liveness in rationals.

* integer sets -- sorted disjoint closed intervals, ``None`` for an infinite end: the exponents a
  mantissa allows under the bounds are one;
* exponent text -- :func:`exponent_node`, the regular node over an exponent's digits that spells
  such a set, :func:`uint_between` the digits of an unsigned integer range;
* helpers -- a decimal's significant digits and magnitude, ``multipleOf`` as ``a × 10^-s``,
  prime valuations and the order of 10 (what remainders of digit strings do);
* :class:`_Arith` -- a family's constraints as exact rationals, deciding from a prefix's text
  whether some number completes it where a search over remainders would not end.

Used by :mod:`dotjson.jsonschema.numfamily`, :mod:`dotjson.jsonschema.numbers` and
:mod:`dotjson.jsonschema.unique`.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from math import gcd

from dotjson import ir
from dotjson.errors import LimitExceededError
from dotjson.ir import EMPTY, EPS, alt, seq

__all__ = ["digits_int", "exponent_node", "int_digits", "uint_between"]


#: the longest digit string ``int()`` converts here (CPython refuses more than
#: ``sys.get_int_max_str_digits()``, 4,300 by default, to bound a quadratic conversion); longer
#: ones (a number of any length in a document) go through :class:`~decimal.Decimal`, whose
#: conversions have no such limit
_INT_DIGITS = 4000


def digits_int(s: str) -> int:
    """The integer of the decimal digits ``s`` (an optional sign first), however many."""
    return int(s) if len(s) <= _INT_DIGITS else int(Decimal(s))


def int_digits(n: int) -> str:
    """The decimal text of the integer ``n``, however many digits (``str(n)`` refuses more
    than ``sys.get_int_max_str_digits()``)."""
    return str(n) if n.bit_length() <= 3 * _INT_DIGITS else format(Decimal(n), "f")


_DIGIT = ir.chars((0x30, 0x39))
_NONZERO = ir.chars((0x31, 0x39))
_E = ir.chars((0x45, 0x45), (0x65, 0x65))


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
    return digits_int(stripped), -exp


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


#: Decimal exponents past which a value is kept as its significant digits and exponent, never
#: as a rational (``1e999999999`` is a valid JSON number; its rational has a billion digits)
FAR_EXP = 4000


def exp_at(text: str) -> int:
    """Where a number text's exponent begins (its ``e`` or ``E``), ``len(text)`` if nowhere."""
    for i, ch in enumerate(text):
        if ch in "eE":
            return i
    return len(text)


def sci(text: str) -> tuple[bool, str, int]:
    """``(negative, digits, E)`` of a JSON number's text (an exponent optional, a mantissa like
    ``1.`` allowed): its value is ``±digits·10^E`` with ``digits`` free of leading and trailing
    zeros (zero: ``(False, "0", 0)``). Nothing of the value's size is built."""
    neg = text.startswith("-")
    body = text[1:] if neg else text
    k = exp_at(body)
    ip, _, fp = body[:k].partition(".")
    digits = (ip + fp).lstrip("0")
    sig = digits.rstrip("0")
    if not sig:
        return False, "0", 0
    tail = body[k + 1:]
    return neg, sig, (digits_int(tail) if tail else 0) - len(fp) + len(digits) - len(sig)


def sci_value(neg: bool, sig: str, E: int) -> Fraction:
    """The rational ``±sig·10^E`` (:func:`sci`'s parts; build it only within :data:`FAR_EXP`)."""
    s = digits_int(sig)
    v = Fraction(s * 10 ** E) if E >= 0 else Fraction(s, 10 ** -E)
    return -v if neg else v


def far_of(v) -> tuple[str, int] | None:
    """``(digits, E)`` of a positive rational ``v = digits·10^E`` whose exponent is past
    :data:`FAR_EXP` either way, else ``None`` (cheap for the values of ordinary size)."""
    n, d = v.numerator, v.denominator
    if n.bit_length() <= 3 * FAR_EXP and d.bit_length() <= FAR_EXP:
        return None  # (|E| > FAR_EXP needs n >= 10^E, or 2^-E or 5^-E dividing d)
    E = 0
    if d != 1:
        x, y, m = _split25(d)
        if m != 1:
            return None  # (no finite decimal)
        E = -max(x, y)
        n = n * 10 ** -E // d
    s = int_digits(n)
    sig = s.rstrip("0")
    E += len(s) - len(sig)
    return (sig, E) if abs(E) > FAR_EXP else None


class _Excluded(frozenset):
    """The excluded values of one sign, as magnitudes: rationals, and ``far``, the
    ``(digits, E)`` of those past :data:`FAR_EXP` (no rational is built for them); ``in``
    answers for both."""

    def __new__(cls, values, far):
        self = super().__new__(cls, values)
        self.far = frozenset(far)
        return self

    def __contains__(self, v) -> bool:
        return frozenset.__contains__(self, v) or (bool(self.far) and far_of(v) in self.far)


def _excluded(values, far) -> frozenset:
    """The excluded values of one sign: a plain ``frozenset`` (C-speed ``in``: the multiples'
    loops ask it up to :data:`MAX_CANDIDATES` times) unless some value is past
    :data:`FAR_EXP`, then an :class:`_Excluded`."""
    values = frozenset(values)
    far = [*far, *(f for f in map(far_of, values) if f is not None)]
    return _Excluded(values, far) if far else values


def _ilog10(x) -> int:
    """``floor(log10(x))`` of a positive rational, give or take one."""
    x = Fraction(x)
    return len(int_digits(x.numerator)) - len(int_digits(x.denominator))


class _Arith:
    """A family's constraints as exact rationals, to decide from the text of a prefix whether
    some number completes it: the numbers a prefix can still become are a union of intervals
    (``12`` in plain notation: ``[12·10^j, 13·10^j)`` for ``j >= 0``; a mantissa ``12`` before
    an exponent: for every integer ``j``), and whether an interval holds a multiple of the
    ``multipleOf`` divisors within the bounds, not excluded, is a question about the first few
    multiples in it. Exact for any divisor: no remainder is ever enumerated.

    ``integer``: ``True`` integers only, ``False`` non-integers only, ``None`` either.
    """

    def __init__(self, lo, lox, hi, hix, mults, notmults, ne, integer, far=()):
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
                e = [F(c) for c in ne if F(c) >= 0]
            else:  # the negative numbers, mirrored: x -> -x swaps the bounds
                b = (None if hi is None else -F(hi), hix, None if lo is None else -F(lo), lox)
                e = [-F(c) for c in ne if F(c) <= 0]
            e = _excluded(e, [(sig, E) for n, sig, E in far if n == neg])
            self.sides[neg] = (b, e, tuple(nots))
        # the constants' reach in decimal digits (what :meth:`holds_sci` clamps exponents to)
        consts = [x for x in (*self._bounds, M, *nots) if x is not None]
        self._reach = max((len(int_digits(abs(x.numerator))) + len(int_digits(x.denominator))
                           for x in consts), default=1)

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
            n = _ilog10(floor_) - len(int_digits(c)) - 2
        elif floor_ is not None:
            n = max(n, _ilog10(floor_) - len(int_digits(c)) - 2)
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
        if dot or not ip.strip("0"):
            t = Fraction(digits_int(ip + fp), 10 ** len(fp))
            return self.exists(neg, t, t + Fraction(1, 10 ** len(fp)))
        return self._scaled(neg, digits_int(ip), 0)

    def holds(self, v) -> bool:
        """The number ``v`` (a rational) meets every constraint."""
        v = Fraction(v)
        neg = v < 0
        (lo, lox, hi, hix), ne, nots = self.sides[neg]
        a = -v if neg else v
        if (lo is not None and (a < lo or (a == lo and lox))) or (hi is not None and (a > hi or (a == hi and hix))):
            return False
        return self._ok(a, ne, nots)

    def holds_sci(self, neg: bool, sig: str, E: int) -> bool:
        """:meth:`holds` for ``±sig·10^E`` (:func:`sci`), with an exponent of any size: past the
        constants' reach ``R`` digits, the bounds, ``multipleOf`` and ``not: {multipleOf}`` say
        the same at every exponent (above ``4R + 4``: larger than every bound, and ``10^E``
        holds every power of 2 and 5 of a divisor's numerator; below ``-(len(sig) + R + 2)``:
        smaller than every bound, and a multiple of nothing), so the exponent is clamped there
        and an excluded value past :data:`FAR_EXP` is looked up by its digits."""
        if sig == "0":
            return self.holds(0)
        if abs(E) <= FAR_EXP:
            return self.holds(sci_value(neg, sig, E))
        (lo, lox, hi, hix), ne, nots = self.sides[neg]
        if (sig, E) in getattr(ne, "far", ()):
            return False
        E = min(E, 4 * self._reach + 4) if E > 0 else max(E, -(len(sig) + self._reach + 2))
        a = sci_value(False, sig, E)
        if (lo is not None and (a < lo or (a == lo and lox))) or (hi is not None and (a > hi or (a == hi and hix))):
            return False
        return self._ok(a, (), nots)  # (no value of ordinary size is this one)

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
            if c == 0:
                continue
            t = c / a
            e = _ilog10(t)
            for k in (e - 1, e, e + 1):
                if a * F10 ** k == c:
                    bad.add(k)
        far = getattr(ne, "far", ())
        if far:  # a·10^k is sig·10^E when the significant digits agree: k = E - (a's exponent)
            _, asig, aE = sci(mantissa)
            bad.update(E - aE for sig, E in far if sig == asig)
        # the exponents the text can still become, as E (sign applied)
        sg = -1 if esign == "-" else 1
        if not edigits:
            cands = [(None, None)] if not esign else [(0, None)] if sg > 0 else [(None, 0)]
            return self._meets(cands, ea, eb, bad)
        d = digits_int(edigits)
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
        return self._scaled(neg, digits_int(sig), None)
