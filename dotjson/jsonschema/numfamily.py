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

Productivity (a state from which some number completes) is decided exactly: with a
``multipleOf`` among the constraints, in rationals from a text that reaches the state
(:class:`~dotjson.jsonschema.numarith._Arith`: the numbers a prefix can still become are
intervals, and whether one holds an allowed value is a question about its first few multiples);
otherwise, or for a state without a known text, by a search over the states with the magnitude
left out (the exponent can move it anywhere), which is finite.

The shared machinery lives beside it: the rule family over named states in
:mod:`dotjson.jsonschema.statefamily`; the integer sets, exponent text and arithmetic liveness in
:mod:`dotjson.jsonschema.numarith`.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from math import gcd

from dotjson import ir
from dotjson.ir import EMPTY
from dotjson.jsonschema.numarith import (ALL, BIG_MODULUS, NONE, _DIGITS, _Arith, _complement, _iv, _join,
                                         _meet, _mult_parts, _order10, _shift, _sig, _split25, _val,
                                         exponent_node)
from dotjson.ir.families import register_family
from dotjson.jsonschema.statefamily import _Family

__all__ = ["LazyNumberDFA", "ExponentNumbers"]


# ============================================================================ plain, lazily
@register_family
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

    @classmethod
    def from_json(cls, d: dict, dec) -> "LazyNumberDFA":
        """The family :meth:`to_json` wrote (its trackers made again from ``params``)."""
        from dotjson.jsonschema.numbers import lazy_number_family

        return _from_params_json(d, lazy_number_family)


def _from_params_json(d: dict, make):
    """A number family saved as ``prefix``, ``params`` and the texts that reach its states
    (``reps``): ``make(prefix, params)``, its texts replayed. ``ValueError`` (``KeyError``,
    ``TypeError``, ``ArithmeticError``) if malformed."""
    if not isinstance(d.get("prefix"), str) or not isinstance(d.get("params"), dict):
        raise ValueError("malformed rule family")
    fam = make(d["prefix"], d["params"])
    if "reps" in d:
        fam.restore_reps(d["reps"])
    return fam


def _arith_of_trackers(trackers, n):
    """The :class:`_Arith` of a plain automaton's trackers where one of them is a remainder
    (``None`` otherwise, and for draft 4's syntactic integers: the search over states decides).
    The automaton is lazy because its product of trackers passed the eager build's limit (4,000
    states); with remainders in it a search proves a state dead only by visiting their whole
    product: ``multipleOf 33`` or ``12`` or ``77``, not of 6 and 7, not of 8 (MaskBench
    ``Handwritten---allany7``) spent 20 s of Python in such searches in its first mask, which
    the rationals decide from each state's text at once. Bounds alone (thousands of digits)
    stay with the search: their trackers prune it (``hopeless``), where the rationals would
    compare numbers of thousands of digits at every state."""
    lo = hi = None
    lox = hix = False
    mults, notmults, ne = [], [], []
    integer = None
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
                m = Fraction(t.a, 10 ** t.s)
            else:
                m = Fraction(t.b * 10 ** t.k)
            (notmults if t.negate else mults).append(m)
    if not (mults or notmults):
        return None
    return _Arith(lo, lox, hi, hix, mults, notmults, ne, integer)


# ============================================================================ with exponents
@register_family
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
        # with divisors, whether a mantissa can still be completed is decided in rationals from
        # its text: the search over abstract states visits the product of every divisor's
        # remainders (and, past BIG_MODULUS, would not end); it stays the answer for a state
        # without a text, and for bounds alone (their comparisons prune it)
        if self.mults:
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
    def from_json(cls, d: dict, dec) -> "ExponentNumbers":
        """The family :meth:`to_json` wrote."""
        return _from_params_json(d, cls.from_params)

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
