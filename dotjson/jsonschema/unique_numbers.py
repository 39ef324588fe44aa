"""``uniqueItems`` over numbers: arrays of distinct numbers, as a rule family (issue 29).

An array of numbers whose items must differ (``{"type": "array", "items": {"type": "integer"},
"uniqueItems": true}``) is not a context-free language: the state after some items is the set
of values read. As a :mod:`dotjson.ir.families` rule family, only the states a document
visits exist: a state is ``(S, text)``, the values read before the current item (exact
rationals, so ``1``, ``1.0`` and ``10e-1`` are one value) and the text of the current item so
far. A character is allowed when some number starting with the new text meets the item's
constraints and is not in ``S`` (decided in rationals by
:class:`~dotjson.jsonschema.numarith._Arith`, its excluded values ``S``); a complete item
moves on to ``S`` plus its value. (Items of other kinds: :mod:`.unique`.)
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from dotjson import ir
from dotjson.ir import Ref, seq
from dotjson.ir.families import register_family
from dotjson.jsonschema.numbers import _EXP_PHASES, _SYNTAX, _SYNTAX_ACCEPT
from dotjson.jsonschema.numarith import _Arith, digits_int, int_digits
from dotjson.jsonschema.statefamily import _Family

__all__ = ["UniqueNumbers", "item_params"]

_CHARS = "-+.eE0123456789"


def _phase(text: str, exponents: bool):
    """The syntax phase after ``text`` (a JSON number prefix), ``None`` if it is none."""
    ph = "S"
    for ch in text:
        ph = _SYNTAX[ph].get(ch)
        if ph is None or (ph in _EXP_PHASES and not exponents):
            return None
    return ph


def _key(v: Fraction) -> str:
    return f"{int_digits(v.numerator)}/{int_digits(v.denominator)}"


@register_family
class UniqueNumbers(_Family):
    """Arrays of ``lo`` to ``hi`` distinct numbers meeting the item's numeric constraints, from
    the first item to the last (the brackets are the compiler's). ``sep`` is the separator node
    between items; ``exponents``: whether items may be written with an exponent (the item's
    own policy: ``numbers="any"``, or no bound, ``multipleOf`` or excluded value)."""

    kind = "unique_numbers"
    why_no_text = "arrays of distinct numbers (uniqueItems) are not a context-free language"

    def __init__(self, prefix: str, lo: int, hi, item: dict, exponents: bool, sep: ir.Node):
        self.lo, self.hi, self.item, self.exponents, self.sep = lo, hi, item, exponents, sep
        D = Decimal
        self._c = dict(lo=None if item["lo"] is None else D(item["lo"]), lox=bool(item["lox"]),
                       hi=None if item["hi"] is None else D(item["hi"]), hix=bool(item["hix"]),
                       mults=[D(m) for m in item["mults"]], notmults=[D(m) for m in item["notmults"]],
                       integer=item["integer"])
        self._ne = [D(c) for c in item["ne"]]
        self._ariths: dict = {}
        self._afters: dict = {}
        super().__init__(prefix)
        self._rep = {}  # (texts of states are numfamily's big-remainder device: not needed here)

    # state: (values read, as sorted "num/den" keys; the current item's text)
    def init_state(self):
        return ((), "")

    def _arith_of(self, seen) -> _Arith:
        """The item's constraints with the values ``seen`` excluded."""
        a = self._ariths.get(seen)
        if a is None:
            if len(self._ariths) > 4096:
                self._ariths.clear()
            extra = [Fraction(digits_int(n), digits_int(d)) for n, d in (k.split("/") for k in seen)]
            a = self._ariths[seen] = _Arith(ne=self._ne + extra, **self._c)
        return a

    def _viable(self, seen, text: str) -> bool:
        """Some item starting with ``text`` meets the constraints and is not in ``seen``."""
        ph = _phase(text, self.exponents)
        if ph is None:
            return False
        a = self._arith_of(seen)
        if ph in _EXP_PHASES:
            k = min(i for i in (text.find("e"), text.find("E")) if i >= 0)
            tail = text[k + 1:]
            sign = tail[:1] if tail[:1] in ("+", "-") else ""
            return a.exp_part_live(text[:k], sign, tail[len(sign):])
        return a.plain_live(text) or (self.exponents and a.exponent_live(text))

    def _value(self, seen, text: str):
        """The value of a complete item ``text`` that may stand here, else ``None``."""
        ph = _phase(text, self.exponents)
        if ph not in _SYNTAX_ACCEPT:
            return None
        v = Fraction(digits_int(text)) if ph == "I" else Fraction(Decimal(text))  # (digits: no Decimal)
        return v if self._arith_of(seen).holds(v) else None

    def moves(self, st):
        seen, text = st
        return [(ch, (seen, text + ch)) for ch in _CHARS if _phase(text + ch, self.exponents) is not None]

    def _after(self, st):
        """``(count, next state)`` once the current item is complete, else ``None``."""
        hit = self._afters.get(st, False)
        if hit is not False:
            return hit
        seen, text = st
        v = self._value(seen, text) if text else None
        out = None
        if v is not None:
            nxt = tuple(sorted(seen + (_key(v),)))
            out = len(nxt), (nxt, "")
        if len(self._afters) > 200_000:
            self._afters.clear()
        self._afters[st] = out
        return out

    def accepts_empty(self, st) -> bool:
        after = self._after(st)
        return after is not None and after[0] >= self.lo

    def tail(self, st) -> ir.Node:
        after = self._after(st)
        if after is None or (self.hi is not None and after[0] >= self.hi):
            return ir.EMPTY
        count, nxt = after
        return seq(self.sep, Ref(self.name(nxt))) if self.live(nxt) else ir.EMPTY

    def can_end(self, st) -> bool:
        return self.accepts_empty(st)

    def abstract(self, st):
        return st

    def live(self, st) -> bool:
        """Some array completes from ``st``: the current item can be completed to a new value,
        and the values the item schema allows are at least ``lo`` (then the items still owed
        can always be found among them)."""
        key = st
        hit = self._prod.get(key)
        if hit is not None:
            return hit
        seen, text = st
        if self.hi is not None and len(seen) >= self.hi:
            ok = False  # (no room for the item begun)
        else:
            ok = self._enough() and self._viable(seen, text)
        if len(self._prod) > 200_000:
            self._prod.clear()
        self._prod[key] = ok
        return ok

    def _enough(self) -> bool:
        hit = getattr(self, "_enough_", None)
        if hit is None:
            hit = self._enough_ = self._arith_of(()).count_upto(self.lo) >= self.lo
        return hit

    def to_json(self, enc) -> dict:
        return {"kind": self.kind, "prefix": self.prefix, "lo": self.lo, "hi": self.hi, "item": self.item,
                "exponents": self.exponents, "sep": enc(self.sep)}

    @classmethod
    def from_json(cls, d: dict, dec) -> "UniqueNumbers":
        """The family :meth:`to_json` wrote; ``ValueError`` (``KeyError``, ``TypeError``) if
        malformed."""
        item = d["item"]
        keys = {"lo", "lox", "hi", "hix", "mults", "notmults", "ne", "integer"}
        if not isinstance(item, dict) or set(item) != keys or not isinstance(d["lo"], int) or \
                not (d["hi"] is None or isinstance(d["hi"], int)) or not isinstance(d["prefix"], str):
            raise ValueError("malformed rule family")
        return cls(d["prefix"], d["lo"], d["hi"], item, bool(d["exponents"]), dec(d["sep"]))


def item_params(m, integer) -> dict:
    """The item constraints of a merged numeric branch ``m`` as plain JSON values."""
    n = m.number
    return {"lo": None if n.lo is None else str(n.lo), "lox": bool(n.lo_excl),
            "hi": None if n.hi is None else str(n.hi), "hix": bool(n.hi_excl),
            "mults": [str(x) for x in n.multiples], "notmults": [str(x) for x in n.not_multiples],
            "ne": sorted(str(c[1]) for c in m.not_enum if c[0] == "x"), "integer": integer}
