"""Token masks inside arrays of distinct numbers (``uniqueItems`` over number items, issue 29).

:class:`~dotjson.jsonschema.unique_numbers.UniqueNumbers` reads such an array a character at a
time: a state is the values read and the current item's text, so the generic mask walk makes a
rule per token prefix an item may hold (~1,100 digit strings from inside an item on Llama 3,
0.1–0.4 s a mask). A state's mask is computed here instead, as for strings
(:mod:`.unique_strings`), from two facts:

* **A relaxed state.** The same position with the distinctness and the item counts dropped
  (the family's relaxed rules: ``("*", "")`` is an item, the item's numbers as the compiler
  writes them, then ``("+", "")``, the array going on with any items or ending) allows a superset
  of the tokens. It is an ordinary state, the same at every position with the same item text:
  its mask is memoized, and its walk makes no rule per digit string.
* **Few tokens can tell the difference.** A token that ends inside the current item leaves a
  text some new value can complete unless every number it may still become is a value read:
  only a text that begins a spelling of a value read can differ (found per value, its spelling
  in plain notation continued by zeros, one token per length; with exponents, by significant
  digits), and those are decided by the family's own liveness. A token that completes the item
  (one holding a byte after the number: ``,``, ``]``, whitespace) is walked from the exact state
  by the automaton (the value read again, the counts, the next item), but for whitespace alone
  after an item that ends a new value where the array may both end and go on: only the separator
  or what follows the array can take it, as in the relaxed state.

Nothing here is JSON-Schema-specific beyond a JSON number's characters.
"""

from __future__ import annotations

import functools

import numpy as np

from dotjson.jsonschema.jsonbase import JSON_WS_BYTES
from dotjson.masks import bit_ids
from dotjson import ir
from dotjson.jsonschema.numarith import _split25, digits_int, exp_at, int_digits
from dotjson.jsonschema.unique_numbers import _parse_far
from dotjson.jsonschema.unique_strings import _set_eos, relaxed_walk

__all__ = ["token_mask", "token_step"]

#: the bytes of a JSON number
NUMBER_BYTES = frozenset(b"-+.eE0123456789")
_WS = frozenset(JSON_WS_BYTES)


def _ids(bits: np.ndarray) -> list:
    return bit_ids(bits).tolist()


def _decimal(key: str) -> tuple[bool, str, int]:
    """``(negative, digits, k)`` of a value read (a ``"num/den"`` key, or digits and exponent
    past ``FAR_EXP``): ``|v| = digits / 10**k`` (every JSON number is a finite decimal)."""
    if "/" not in key:
        neg, sig, E = _parse_far(key)
        return (neg, sig + "0" * E, 0) if E > 0 else (neg, sig, -E)
    n, d = key.split("/")
    num, den = digits_int(n), digits_int(d)
    a, b, _ = _split25(den)
    k = max(a, b)
    return num < 0, int_digits(abs(num) * 10 ** k // den), k


@functools.lru_cache(maxsize=65536)
def stems(key: str) -> tuple[str, ...]:
    """The plain-notation spellings of a value read, as stems: every spelling is a stem
    continued by zeros (``12`` → ``12.``, ``1.5`` → ``1.5``, zero → ``0.`` and ``-0.``)."""
    neg, digits, k = _decimal(key)
    if digits == "0":
        return ("0.", "-0.")
    if k:
        digits = digits.zfill(k + 1)
        ip, fp = digits[:-k], digits[-k:].rstrip("0")
    else:
        ip, fp = digits, ""
    return (("-" if neg else "") + ip + ("." + fp if fp else "."),)


@functools.lru_cache(maxsize=65536)
def significant(key: str) -> str:
    """The significant digits of a value read (no leading or trailing zeros; ``""`` for zero)."""
    if "/" not in key:
        return _parse_far(key)[1]
    return _decimal(key)[1].lstrip("0").rstrip("0")


def _mantissa(text: str) -> tuple[str, bool]:
    """``(digits, closed)``: the significant digits of a number prefix's mantissa so far (signs,
    the point and leading zeros dropped, trailing zeros too) and whether an exponent has begun
    (the mantissa can grow no more)."""
    k = exp_at(text)
    digits = text[:k].replace("-", "").replace(".", "").lstrip("0").rstrip("0")
    return digits, k < len(text)


class _Tables:
    """Per index: the tokens made of a number's characters only, and of whitespace only."""

    def __init__(self, view):
        self.nums = view.tokens_within(NUMBER_BYTES)
        self.ws_only = view.tokens_within(_WS)
        self.by_text: dict = {}
        self.text_of: dict = {}
        for t in _ids(self.nums):
            text = self.text_of[t] = view.token_bytes(t).decode("ascii")
            self.by_text.setdefault(text, []).append(t)
        self.longest = max(map(len, self.by_text), default=0)
        # with exponents: the tokens by their mantissa's digits (up to an e or E; signs and the
        # point dropped) and whether they begin an exponent
        self.by_mantissa: dict = {}
        for t, text in self.text_of.items():
            k = exp_at(text)
            key = (text[:k].replace("-", "").replace(".", ""), k < len(text))
            self.by_mantissa.setdefault(key, []).append(t)


def _tables(fam, view) -> _Tables:
    kept = view.cache_for(fam)
    got = kept.get("tables")
    if got is None:
        got = kept["tables"] = _Tables(view)
    return got


def _plain_dangers(fam, seen, text: str, tab: _Tables) -> set:
    """The number-only tokens after which the item's text begins a plain spelling of a value
    in ``seen`` (every other one leaves a text that no value read can complete)."""
    out: set = set()
    n = len(text)
    for key in seen:
        for stem in stems(key):
            if n <= len(stem):
                if not stem.startswith(text):
                    continue
                rem = stem[n:] + "0" * tab.longest
            elif text.startswith(stem) and not text[len(stem):].strip("0"):
                rem = "0" * tab.longest
            else:
                continue
            for j in range(1, min(len(rem), tab.longest) + 1):
                ids = tab.by_text.get(rem[:j])
                if ids:
                    out.update(ids)
    return out


def _exponent_dangers(fam, seen, text: str, tab: _Tables, allowed: np.ndarray) -> set:
    """With exponents, the number-only tokens allowed in ``allowed`` whose text's mantissa may
    still equal a value read's significant digits (a superset of those that can differ)."""
    sig = {significant(k) for k in seen}
    pre = {s[:i] for s in sig for i in range(len(s) + 1)}
    k = exp_at(text)
    if k < len(text):  # (the mantissa is closed: every token alike)
        return set(_ids(allowed & tab.nums)) if _mantissa(text)[0] in sig else set()
    lead = text.replace("-", "").replace(".", "").lstrip("0")
    if lead:
        return _dangers_after(lead, sig, pre, tab)
    out = set()
    for t in _ids(allowed & tab.nums):  # (the item's first digits: every token asked)
        digits, closed = _mantissa(text + tab.text_of[t])
        if (digits in sig) if closed else (digits in pre):
            out.add(t)
    return out


def _dangers_after(lead: str, sig: set, pre: set, tab: _Tables) -> set:
    """:func:`_exponent_dangers` where the mantissa's digits so far, ``lead``, begin with a
    nonzero one: a token's mantissa digits ``m`` make ``(lead + m)`` less its trailing zeros, so
    those ending in a value's significant digits ``s`` (``s`` closed by an exponent, a prefix of
    one open) are ``s[len(lead):]`` continued by zeros, or zeros alone where ``lead`` already
    is one: found by lookup, not by asking every token."""
    out: set = set()
    zeros = ["0" * z for z in range(tab.longest + 1)]
    core = lead.rstrip("0")
    for closed, targets in ((True, sig), (False, pre)):
        if core in targets:
            for z in zeros:
                out.update(tab.by_mantissa.get((z, closed), ()))
        for s in targets:
            if len(s) > len(lead) and s.startswith(lead):
                tail = s[len(lead):]
                for z in zeros[: tab.longest - len(tail) + 1]:
                    out.update(tab.by_mantissa.get((tail + z, closed), ()))
    return out


def token_mask(fam, view, state: int, prefix: int, st, rest: int, other: int):
    """The mask of ``state``, whose term is ``prefix F rest | other`` with ``F`` the rule of
    family ``fam``'s state ``st = (seen, text)``, ``prefix`` whitespace (``EPS`` once the item has
    begun) and ``other`` a term without ``F`` (``EMPTY``: none), or ``None`` where this does not
    apply (see the module docstring). Call with the automaton's lock held."""
    seen, text = st
    if prefix != view.EPS and (text or not view.only_bytes(prefix, _WS)):
        return None
    got = relaxed_walk(view, prefix, fam.name(("*", "")), rest, other, text.encode("ascii"))
    if got is None:
        return None
    rel, other, extra = got
    tab = _tables(fam, view)
    relaxed = view.mask(rel)
    out = relaxed.copy()
    eos = set(view.eos_token_ids)
    # tokens ending inside the item: those whose text may still become a value read
    inside = relaxed & tab.nums
    danger = _exponent_dangers(fam, seen, text, tab, inside) if fam.exponents else \
        _plain_dangers(fam, seen, text, tab)
    other_state = None
    for t in danger:
        if t in eos or not inside[t >> 5] >> np.uint32(t & 31) & 1:
            continue
        ok = fam.live((seen, text + tab.text_of[t]))
        if not ok and other != view.EMPTY:
            if other_state is None:
                other_state = -1 if view.is_empty(other) else view.state(other)
            ok = other_state >= 0 and view.walk_items(other_state, view.token_bytes(t)) >= 0
        if not ok:
            out[t >> 5] &= ~np.uint32(1 << (t & 31))
    # tokens going past the item (or before it, past whitespace): walked from the exact state
    cross = relaxed & ~tab.nums
    if not text or _ends_as_relaxed(fam, st):
        # whitespace before the item, or after an item that ends here a new value with the
        # array free to end or go on: what the relaxed state says
        cross &= ~tab.ws_only
    for t in _ids(cross):
        if t in eos:
            continue
        if view.walk_items(state, view.token_bytes(t)) < 0:
            out[t >> 5] &= ~np.uint32(1 << (t & 31))
    if extra is not None:
        out |= extra
    _set_eos(view, state, out)
    return out


def _ends_as_relaxed(fam, st) -> bool:
    """Whether the item text of ``st`` is a new value after which the family's state offers
    both ways the relaxed one does (the array's end, a separator and a next item that exists):
    then a token of whitespace alone, which only the separator or what follows the array can
    take, has the relaxed state's verdict (~170 such tokens on Llama 3, each a walk)."""
    return fam.accepts_empty(st) and fam.tail(st) is not ir.EMPTY


def token_step(fam, view, st, rest: int, data: bytes):
    """``(state, n)``: the state after the number characters ``data`` begins with, from the
    family's state ``st`` followed by ``rest``, where the item has begun: one rule for the new
    text (no body per character on the way); ``-2`` as the state when refused; ``None`` where
    ``data`` does not go on with the item (the automaton walks it)."""
    seen, text = st
    n = 0
    while n < len(data) and data[n] in NUMBER_BYTES:
        n += 1
    if n == 0:
        return None
    # (what follows the family's rule begins with whitespace or a bracket: a number character
    # can only go on with the item)
    nxt = (seen, text + data[:n].decode("ascii"))
    if not fam.live(nxt):
        return -2, n
    return view.state(view.seq(view.ref(fam.name(nxt)), rest)), n
