"""``idn-hostname`` (IDNA2008, RFC 5890-5893) and ``idn-email`` (RFC 6531) as regular languages.

A name is labels joined by a separator (``.``, U+3002, U+FF0E, U+FF61). A label is either an
LDH label as in ``hostname`` or a U-label: code points PVALID, CONTEXTJ or CONTEXTO in RFC 5892
(the generated :mod:`dotjson.formats._idna_data`, from the ``idna`` package's tables), at least
one of them non-ASCII, with

* the hyphen rules (not first, not last, not both 3rd and 4th) and no mark first (RFC 5891 4.2.3);
* the contextual rules of RFC 5892 appendix A: ZERO WIDTH JOINER after a virama; ZERO WIDTH
  NON-JOINER after a virama or inside ``(L|D) T* ZWNJ T* (R|D)`` joining types; MIDDLE DOT
  between two ``l``; Greek KERAIA before Greek; Hebrew GERESH/GERSHAYIM after Hebrew; KATAKANA
  MIDDLE DOT in a label with Hiragana, Katakana or Han; Arabic-Indic and extended
  Arabic-Indic digits not mixed; each written as the label's *bad* infixes, subtracted;
* NFC (RFC 5891 5.4): no two adjacent marks out of canonical order, and a character that is
  the second of a composite (NFC_Quick_Check = Maybe) only right after a starter it does not
  compose with (the table lists those it does); after another mark it is refused (narrower:
  the exact rule would follow blocking through the marks between);
* a length bound (below).

The Bidi rule (RFC 5893) holds for every label of a name with a right-to-left label (one with
an R, AL or AN character): an ``And`` of the name with "no R/AL/AN anywhere" or "every label an
RTL or LTR label".

Not regular in practice, so refused (never accepted wrongly):

* A-labels (``xn--...``): their validity is Punycode decoding, a finite but astronomically large
  language; they are refused as ``hostname`` refuses them.
* A U-label's A-label form must be at most 63 octets, the name at most 253: the A-label's length
  is Punycode's, which depends on the sorted code points. A U-label is accepted when a bound
  proves it: each non-ASCII code point ``v`` costs at most ``W(v)`` Punycode digits (its delta
  is at most ``(v - 127) * 63 + 1`` in a label of at most 63 code points, and a delta ``q``
  takes at most ``D(q)`` digits, the fewest for which the smallest capacity of ``D`` digits over
  all thresholds exceeds ``q``), so ``4 + b + 1 + sum W`` (``b`` the ASCII characters) bounds
  the A-label; ``W`` is 5 up to U+02DD, 6 up to U+183A, 7 up to U+EDDA, 8 above. A name with
  ``K`` non-ASCII characters (separators aside) and ``n`` characters is accepted when it has at
  most three labels (3 * 63 + 2 < 253) or ``n + 12 K <= 253``.

``idn-email`` is ``email`` with RFC 6531's UTF8-non-ascii in atext, qtext and quoted pairs, and
an ``idn-hostname`` domain without the NFC requirement (the suite reads RFC 6531 that way:
``user@cafe\\u0301.com`` is valid), or an address literal as ``email`` allows.
"""

from __future__ import annotations

import functools

from dotjson import ir
from dotjson.formats import _idna_data as T
from dotjson.formats.rfc import address_literal, email_local, ldh_label

__all__ = ["idn_hostname", "idn_email", "punycode_digit_weight"]

_SEPARATORS = ir.chars((0x2E, 0x2E), (0x3002, 0x3002), (0xFF0E, 0xFF0E), (0xFF61, 0xFF61))
_ASCII = ir.chars((0, 0x7F))
_NON_ASCII = ir.chars((0x80, ir.MAX_CODEPOINT))
#: the smallest number of values ``r`` Punycode digits can hold, over every threshold sequence
#: (t + (36 - t) * cap(r - 1), minimised over t in [1, 26]): 1, 36, 386, 3886, ...
_CAPS = (1, 36, 386, 3886, 38886, 388886, 3888886, 38888886, 388888886)
#: label / name limits in octets of the A-label form (RFC 1034, RFC 5890)
_LABEL_MAX, _NAME_MAX = 63, 253


def _c(ranges) -> ir.Chars:
    return ir.chars(*ranges)


def _minus(a: ir.Chars, *bs: ir.Chars) -> ir.Chars:
    return ir.chars_intersect(a, ir.chars_complement(ir.chars_union(*bs))) if bs else a


def _digits(q: int) -> int:
    """An upper bound on the Punycode digits of a delta ``q``, whatever the bias."""
    return next(r for r, cap in enumerate(_CAPS, 1) if q < cap)


def punycode_digit_weight(v: int) -> int:
    """The most Punycode digits a non-ASCII code point adds to a label of at most 63 code points.

    Parameters
    ----------
    v : int
        The code point (``>= 0x80``).

    Returns
    -------
    int
        ``W(v)``: its first occurrence's delta is below ``(v - 126) * 64`` and a repeat's below
        127, and a delta ``q`` takes at most ``D(q)`` digits whatever the bias (``_CAPS``).
    """
    return _digits((v - 126) * 64)


def _weight_tiers() -> list[tuple[int, ir.Chars]]:
    """``(w, the non-ASCII code points of weight <= w)`` for each weight that occurs."""
    tiers, prev = [], 0x7F
    for w in range(punycode_digit_weight(0x80), len(_CAPS) + 1):
        hi = min(ir.MAX_CODEPOINT, 126 + (_CAPS[w - 1] - 1) // 64)  # the largest v of weight <= w
        if hi > prev:
            tiers.append((w, ir.chars((0x80, hi))))
            prev = hi
        if hi == ir.MAX_CODEPOINT:
            break
    return tiers


def _exactly(k: int, other: ir.Chars, counted: ir.Chars) -> ir.Node:
    """Strings with exactly ``k`` characters of ``counted``, the rest of ``other``."""
    rest = ir.repeat(other, 0, None)
    return ir.seq(rest, *([counted, rest] * k))


@functools.lru_cache(maxsize=None)
def _label_length_bound() -> ir.Node:
    """U-labels whose A-label is provably at most 63 octets: ``b + sum W <= 58``."""
    budget = _LABEL_MAX - len("xn--") - 1
    branches = []
    for w, tier in _weight_tiers():
        for k in range(1, budget // w + 1):
            n_max = budget - (w - 1) * k  # b + w k <= budget, with n = b + k
            branches.append(ir.And((_exactly(k, _ASCII, tier), ir.repeat(ir.ANY_CHAR, k, n_max))))
    return ir.alt(*branches)


@functools.lru_cache(maxsize=None)
def _name_length_bound() -> ir.Node:
    """Names whose A-label form is provably at most 253 octets: at most three labels (each at
    most 63), or ``n + 12 K <= 253``."""
    other = ir.chars_union(_ASCII, _SEPARATORS)
    counted = _minus(_NON_ASCII, _SEPARATORS)
    # each non-ASCII character: its digits beyond the one it counts in n, and its label's
    # "xn--" and "-" (at most one label per non-ASCII character); W is 8 at most in the table
    w_max = punycode_digit_weight(_tables().allowed.ranges[-1][1])
    per = w_max - 1 + len("xn--") + 1
    weighted = (ir.And((_exactly(k, other, counted), ir.repeat(ir.ANY_CHAR, 1, _NAME_MAX - per * k)))
                for k in range(0, _NAME_MAX // (per + 1) + 1))
    # three labels of at most 63 octets each and two dots are 191 octets: no count needed
    in_label = ir.repeat(ir.chars_complement(_SEPARATORS), 0, None)
    few_labels = ir.seq(in_label, ir.repeat(ir.seq(_SEPARATORS, in_label), 0, 2))
    return ir.alt(few_labels, *weighted)


class _Tables:
    """The character classes of the rules, from the generated tables."""

    def __init__(self):
        self.allowed = ir.chars(*T.PVALID, *T.CONTEXTJ, *T.CONTEXTO)
        self.marks = _c(T.MARKS)
        self.virama = _c(T.CCC.get(9, ()))
        self.ccc = {k: _c(v) for k, v in T.CCC.items()}
        self.bidi = {k: _c(v) for k, v in T.BIDI.items()}
        self.script = {k: _c(v) for k, v in T.SCRIPTS.items()}
        self.joining = {k: _c(v) for k, v in T.JOINING.items()}

    def bidi_of(self, *names: str) -> ir.Chars:
        return ir.chars_union(ir.chars(), *(self.bidi.get(n, ir.chars()) for n in names))


@functools.lru_cache(maxsize=None)
def _tables() -> _Tables:
    return _Tables()


def _one(cp: int) -> ir.Chars:
    return ir.chars((cp, cp))


def _each(sigma: ir.Chars, special: ir.Chars, *units: ir.Node) -> ir.Node:
    """Strings over ``sigma`` in which every character of ``special`` sits in one of ``units``
    (each a short context around it): written positively, so that a violation makes the
    derivative empty at once instead of leaving an emptiness proof to a search."""
    return ir.repeat(ir.alt(_minus(sigma, special), *units), 0, None)


@functools.lru_cache(maxsize=None)
def _u_label(nfc: bool) -> ir.Node:
    t = _tables()
    sigma = t.allowed
    S = ir.repeat(sigma, 0, None)
    zwnj, zwj = _one(0x200C), _one(0x200D)
    v = t.virama
    jt = t.joining.get
    ld = ir.chars_union(jt("L", ir.chars()), jt("D", ir.chars()))
    rd = ir.chars_union(jt("R", ir.chars()), jt("D", ir.chars()))
    trs = ir.repeat(jt("T", ir.chars()), 0, None)
    ell, dot, keraia, geresh = _one(0x6C), _one(0xB7), _one(0x375), ir.chars((0x5F3, 0x5F4))
    hkh = ir.chars_union(t.script["Hiragana"], t.script["Katakana"], t.script["Han"])
    arabic, extended = ir.chars((0x660, 0x669)), ir.chars((0x6F0, 0x6F9))
    hyphen = _one(0x2D)
    not_hyphen = _minus(sigma, hyphen)
    rules = [
        # at least one non-ASCII character (else it is an LDH label); RFC 5891 4.2.3.1/4.2.3.2:
        # no hyphen or mark first, no hyphen last, not hyphens both 3rd and 4th
        ir.seq(S, ir.chars_intersect(sigma, _NON_ASCII), S),
        ir.alt(ir.seq(_minus(sigma, t.marks, hyphen), ir.repeat(sigma, 0, 2)),
               ir.seq(_minus(sigma, t.marks, hyphen), sigma, ir.alt(ir.seq(not_hyphen, sigma), ir.seq(hyphen, not_hyphen)), S)),
        ir.seq(S, not_hyphen),
        # A.2: ZWJ right after a virama
        _each(sigma, zwj, ir.seq(v, zwj)),
        # A.1: ZWNJ right after a virama, or (L|D) T* ZWNJ T* (R|D): its left half and its right
        # half are two constraints (an L/D/R letter may serve two joiners)
        _each(sigma, zwnj, ir.seq(v, zwnj), ir.seq(ld, trs, zwnj)),
        _each(sigma, zwnj, ir.seq(v, zwnj), ir.seq(zwnj, trs, rd)),
        # A.3: MIDDLE DOT between two 'l' (each side a constraint: "l·l·l" shares its middle l)
        _each(sigma, dot, ir.seq(ell, dot)),
        _each(sigma, dot, ir.seq(dot, ell)),
        # A.4: KERAIA followed by Greek (KERAIA itself is Greek: a run of them, then another)
        _each(sigma, keraia, ir.seq(ir.repeat(keraia, 1, None), _minus(t.script["Greek"], keraia))),
        # A.5, A.6: GERESH, GERSHAYIM preceded by Hebrew (both are Hebrew themselves)
        _each(sigma, geresh, ir.seq(_minus(t.script["Hebrew"], geresh), ir.repeat(geresh, 1, None))),
        # A.7: KATAKANA MIDDLE DOT in a label with Hiragana, Katakana or Han
        ir.alt(ir.repeat(_minus(sigma, _one(0x30FB)), 0, None), ir.seq(S, hkh, S)),
        # A.8, A.9: the two kinds of Arabic-Indic digits not mixed
        ir.alt(ir.repeat(_minus(sigma, arabic), 0, None), ir.repeat(_minus(sigma, extended), 0, None)),
    ]
    if nfc:
        # canonical order: between two starters, marks by non-decreasing combining class
        ks = sorted(t.ccc)
        marks = ir.chars_union(*t.ccc.values())
        run = ir.seq(*(ir.repeat(t.ccc[k], 0, None) for k in ks))
        rules.append(ir.seq(run, ir.repeat(ir.seq(_minus(sigma, marks), run), 0, None)))
        # a second-of-composite only right after a starter it does not compose with (not after
        # a mark, nor after another second-of-composite: refused, narrower)
        maybe = ir.chars(*((m, m) for m in T.MAYBE_BAD_BEFORE))
        starters = _minus(sigma, marks, maybe)
        # the starters some second-of-composite composes with, by the set of those it does (few
        # and small); every other starter may be followed by any of them
        refused: dict = {}
        for m, before in T.MAYBE_BAD_BEFORE.items():
            for lo, hi in before:
                for c in range(lo, hi + 1):
                    refused.setdefault(c, set()).add(m)
        by_set: dict = {}
        for c, ms in refused.items():
            by_set.setdefault(frozenset(ms), []).append((c, c))
        free = _minus(starters, ir.chars(*((c, c) for c in refused)))
        units = [ir.seq(free, maybe)]
        for ms, cs in by_set.items():
            ok = _minus(maybe, ir.chars(*((m, m) for m in ms)))
            if ok.ranges:
                units.append(ir.seq(ir.chars_intersect(ir.chars(*cs), starters), ok))
        rules.append(_each(sigma, maybe, *units))
    rules.append(_label_length_bound())
    return ir.And(tuple(rules))


@functools.lru_cache(maxsize=None)
def _bidi_label() -> ir.Node:
    """RFC 5893 section 2: an RTL label (rules 1-4) or an LTR label (rules 1, 5, 6)."""
    t = _tables()
    nsm = ir.repeat(t.bidi_of("NSM"), 0, None)
    r_al = t.bidi_of("R", "AL")
    # (less KATAKANA MIDDLE DOT, MIDDLE DOT and KERAIA: their contexts need characters of class L,
    # which an RTL label cannot hold; left in, they would make states whose emptiness only a
    # search through every length bound could prove)
    rtl_ok = _minus(t.bidi_of("R", "AL", "AN", "EN", "ES", "CS", "ET", "ON", "BN", "NSM"),
                    ir.chars((0xB7, 0xB7), (0x375, 0x375), (0x30FB, 0x30FB)))
    rtl_end = t.bidi_of("R", "AL", "EN", "AN")
    en, an = t.bidi_of("EN"), t.bidi_of("AN")
    rtl = ir.And((
        ir.alt(ir.seq(r_al, nsm), ir.seq(r_al, ir.repeat(rtl_ok, 0, None), rtl_end, nsm)),
        ir.alt(ir.repeat(_minus(rtl_ok, en), 0, None), ir.repeat(_minus(rtl_ok, an), 0, None)),
    ))
    ltr_ok = t.bidi_of("L", "EN", "ES", "CS", "ET", "ON", "BN", "NSM")
    ltr_l = ir.chars_union(t.bidi_of("L"), ir.chars((0x41, 0x5A)))  # (LDH labels' capitals are L)
    ltr_ok = ir.chars_union(ltr_ok, ir.chars((0x41, 0x5A)))
    ltr = ir.alt(ir.seq(ltr_l, nsm), ir.seq(ltr_l, ir.repeat(ltr_ok, 0, None), ir.chars_union(ltr_l, en), nsm))
    return ir.alt(rtl, ltr)


@functools.lru_cache(maxsize=None)
def _name(nfc: bool) -> ir.Node:
    label = ir.alt(ldh_label(), _u_label(nfc))
    name = ir.seq(label, ir.repeat(ir.seq(_SEPARATORS, label), 0, None))
    rtl_chars = _tables().bidi_of("R", "AL", "AN")
    bidi_label = _bidi_label()
    bidi = ir.alt(ir.repeat(ir.chars_complement(rtl_chars), 0, None),
                  ir.seq(bidi_label, ir.repeat(ir.seq(_SEPARATORS, bidi_label), 0, None)))
    return ir.And((name, bidi, _name_length_bound()))


@functools.lru_cache(maxsize=None)
def idn_hostname() -> ir.Node:
    """``format: idn-hostname``.

    Returns
    -------
    ir.Node
        The IDNA2008 names as decoded strings (full match; ``And`` inside, so no Lark text),
        less what the module docstring lists as refused.
    """
    return _name(True)


@functools.lru_cache(maxsize=None)
def idn_email() -> ir.Node:
    """``format: idn-email``.

    Returns
    -------
    ir.Node
        RFC 6531 addresses as decoded strings: UTF-8 local parts, ``idn-hostname`` domains
        without NFC, or the address literals ``email`` takes.
    """
    utf8_non_ascii = ir.chars((0x80, ir.MAX_CODEPOINT))
    return ir.seq(email_local(utf8_non_ascii), ir.lit("@"), ir.alt(address_literal(), _name(False)))
