"""``uniqueItems`` over numbers: arrays of distinct numbers, as a rule family (issue 29).

An array of numbers whose items must differ (``{"type": "array", "items": {"type": "integer"},
"uniqueItems": true}``) is not a context-free language: the state after some items is the set
of values read. As a :mod:`dotjson.ir.families` rule family, only the states a document
visits exist: a state is ``(S, text)``, the values read before the current item (exact
rationals, so ``1``, ``1.0`` and ``10e-1`` are one value) and the text of the current item so
far. A character is allowed when some number starting with the new text meets the item's
constraints and is not in ``S`` (decided in rationals by
:class:`~dotjson.jsonschema.numarith._Arith`, its excluded values ``S``); a complete item
moves on to ``S`` plus its value. (Items of other kinds: :mod:`.unique`.) Token masks inside
such an array come from a relaxed state (the family's rules ``("*", "")`` and ``("+", "")``: the
item's numbers as the compiler writes them, ``item_node``, with no distinctness and no counts)
and the few tokens that can tell it from the exact one: :mod:`.unique_number_masks`.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from dotjson import ir
from dotjson.ir import EPS, Ref, alt, seq
from dotjson.ir.families import register_family
from dotjson.jsonschema.numbers import _EXP_PHASES, _SYNTAX, _SYNTAX_ACCEPT
from dotjson.jsonschema.numarith import FAR_EXP, _Arith, digits_int, int_digits, sci, sci_value
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


def _far_key(neg: bool, sig: str, E: int) -> str:
    """The key of a value past :data:`~.numarith.FAR_EXP` (``1e999999999``): its digits and
    exponent, never its rational; every value has one key (:func:`_key` for the others)."""
    return f"{'-' if neg else ''}{sig}e{E}"


def _parse_far(key: str) -> tuple[bool, str, int]:
    sig, _, E = key.partition("e")
    return sig.startswith("-"), sig.lstrip("-"), int(E)


@register_family
class UniqueNumbers(_Family):
    """Arrays of ``lo`` to ``hi`` distinct numbers meeting the item's numeric constraints, from
    the first item to the last (the brackets are the compiler's). ``sep`` is the separator node
    between items; ``exponents``: whether items may be written with an exponent (the item's
    own policy: ``numbers="any"``, or no bound, ``multipleOf`` or excluded value). ``item_node``:
    the same numbers as an IR node of the compiler's (the relaxed rules' item, for token masks),
    ``None`` where there is none (the generic walk masks the array's states)."""

    kind = "unique_numbers"
    why_no_text = "arrays of distinct numbers (uniqueItems) are not a context-free language"

    def __init__(self, prefix: str, lo: int, hi, item: dict, exponents: bool, sep: ir.Node,
                 item_node: ir.Node | None = None):
        self.lo, self.hi, self.item, self.exponents, self.sep = lo, hi, item, exponents, sep
        self.item_node = item_node
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

    # state: (values read, as sorted keys: "num/den", or "digitsEexponent" past FAR_EXP; the
    # current item's text)
    def init_state(self):
        return ((), "")

    def _arith_of(self, seen) -> _Arith:
        """The item's constraints with the values ``seen`` excluded."""
        a = self._ariths.get(seen)
        if a is None:
            if len(self._ariths) > 4096:
                self._ariths.clear()
            extra = [Fraction(digits_int(n), digits_int(d)) for n, d in (k.split("/") for k in seen if "/" in k)]
            far = [_parse_far(k) for k in seen if "/" not in k]
            a = self._ariths[seen] = _Arith(ne=self._ne + extra, far=far, **self._c)
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
        """The key of the value of a complete item ``text`` that may stand here, else ``None``."""
        ph = _phase(text, self.exponents)
        if ph not in _SYNTAX_ACCEPT:
            return None
        neg, sig, E = sci(text)
        if abs(E) > FAR_EXP:  # (no rational: its digits and exponent)
            return _far_key(neg, sig, E) if self._arith_of(seen).holds_sci(neg, sig, E) else None
        v = sci_value(neg, sig, E)
        return _key(v) if self._arith_of(seen).holds(v) else None

    def moves(self, st):
        seen, text = st
        return [(ch, (seen, text + ch)) for ch in _CHARS if _phase(text + ch, self.exponents) is not None]

    def _after(self, st):
        """``(count, next state)`` once the current item is complete, else ``None``."""
        hit = self._afters.get(st, False)
        if hit is not False:
            return hit
        seen, text = st
        key = self._value(seen, text) if text else None
        out = None
        if key is not None:
            nxt = tuple(sorted(seen + (key,)))
            out = len(nxt), (nxt, "")
        if len(self._afters) > 200_000:
            self._afters.clear()
        self._afters[st] = out
        return out

    def accepts_empty(self, st) -> bool:
        if isinstance(st[0], str):  # a relaxed state: ("+", "") may end the array
            return st[0] == "+"
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
        if isinstance(seen, str):
            return True  # (a relaxed state: made only where an item of the array can be read)
        if self.hi is not None and len(seen) >= self.hi:
            ok = False  # (no room for the item begun)
        else:
            ok = self._enough() and self._viable(seen, text)
        if len(self._prod) > 200_000:
            self._prod.clear()
        self._prod[key] = ok
        return ok

    def body(self, name: str) -> ir.Node:
        st = self._state(name)
        if not isinstance(st[0], str):
            return super().body(name)
        # the relaxed rules: ("*", "") an item then ("+", ""); ("+", "") the array ending or
        # going on with another item (no distinctness, no counts)
        hit = self._bodies.get(name)
        if hit is None:
            if st[0] == "*":
                hit = seq(self.item_node, Ref(self.name(("+", ""))))
            else:
                hit = alt(EPS, seq(self.sep, Ref(self.name(("*", "")))))
            self._bodies[name] = hit
        return hit

    def token_mask(self, view, state: int, prefix: int, name: str, rest: int, other: int):
        """The mask of ``state``, which is ``prefix``, this family's rule ``name``, then ``rest``
        (or the term ``other``): :func:`.unique_number_masks.token_mask`; ``None`` where the
        generic walk decides (no ``item_node``, a relaxed state)."""
        st = self._state(name)
        if self.item_node is None or isinstance(st[0], str):
            return None
        from dotjson.jsonschema.unique_number_masks import token_mask

        return token_mask(self, view, state, prefix, st, rest, other)

    def token_step(self, view, name: str, rest: int, data: bytes):
        """The state after the number characters ``data`` begins with
        (:func:`.unique_number_masks.token_step`), ``None`` where the automaton walks ``data``."""
        st = self._state(name)
        if isinstance(st[0], str):
            return None
        from dotjson.jsonschema.unique_number_masks import token_step

        return token_step(self, view, st, rest, data)

    def _enough(self) -> bool:
        hit = getattr(self, "_enough_", None)
        if hit is None:
            hit = self._enough_ = self._arith_of(()).count_upto(self.lo) >= self.lo
        return hit

    def to_json(self, enc) -> dict:
        out = {"kind": self.kind, "prefix": self.prefix, "lo": self.lo, "hi": self.hi, "item": self.item,
               "exponents": self.exponents, "sep": enc(self.sep)}
        if self.item_node is not None:
            out["item_node"] = enc(self.item_node)
        return out

    @classmethod
    def from_json(cls, d: dict, dec) -> "UniqueNumbers":
        """The family :meth:`to_json` wrote; ``ValueError`` (``KeyError``, ``TypeError``) if
        malformed."""
        item = d["item"]
        keys = {"lo", "lox", "hi", "hix", "mults", "notmults", "ne", "integer"}
        if not isinstance(item, dict) or set(item) != keys or not isinstance(d["lo"], int) or \
                not (d["hi"] is None or isinstance(d["hi"], int)) or not isinstance(d["prefix"], str):
            raise ValueError("malformed rule family")
        node = d.get("item_node")
        return cls(d["prefix"], d["lo"], d["hi"], item, bool(d["exponents"]), dec(d["sep"]),
                   None if node is None else dec(node))


def item_params(m, integer) -> dict:
    """The item constraints of a merged numeric branch ``m`` as plain JSON values."""
    n = m.number
    return {"lo": None if n.lo is None else str(n.lo), "lox": bool(n.lo_excl),
            "hi": None if n.hi is None else str(n.hi), "hix": bool(n.hi_excl),
            "mults": [str(x) for x in n.multiples], "notmults": [str(x) for x in n.not_multiples],
            "ne": sorted(str(c[1]) for c in m.not_enum if c[0] == "x"), "integer": integer}
