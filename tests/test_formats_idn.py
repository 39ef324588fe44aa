"""``format: idn-hostname`` / ``idn-email`` against the ``idna`` package on random names.

The oracle is ``idna.encode(name, uts46=False)`` (IDNA2008 per label: classes, CONTEXTJ/CONTEXTO,
hyphens, leading marks, NFC, the Bidi rule of RTL labels, lengths), plus what dotjson states
beyond it or refuses on purpose, each computed here independently of the IR:

* the Bidi rule over the whole name (RFC 5893 section 2: every label of a name with an RTL
  label; ``idna`` checks RTL labels alone; the suite's ``0a.\\u05d0`` is invalid);
* refused on purpose: U-labels whose A-label is not provably short enough by
  :func:`dotjson.formats.idn.punycode_digit_weight`, names of four labels or more not provably
  ≤ 253 octets (``n + 12 K``), and a
  second-of-composite mark not right after a starter (see ``dotjson/formats/idn.py``).

So on every string: accepted by dotjson ⇔ the oracle says valid and none of the refusals applies,
and whenever dotjson accepts, ``idna`` accepts too (soundness).
"""

from __future__ import annotations

import functools
import random
import unicodedata

import pytest

from dotjson import ir
from dotjson.automaton import Automaton
from dotjson.formats import _idna_data as T
from dotjson.formats import format_to_ir
from dotjson.formats.idn import punycode_digit_weight

idna = pytest.importorskip("idna")
from idna.core import check_bidi  # noqa: E402

SEPARATORS = ".\u3002\uff0e\uff61"
#: characters that exercise every rule: LDH, capitals, Latin with marks and composable pairs,
#: Greek + KERAIA, Hebrew + GERESH, Arabic letters of each joining type with both digit kinds,
#: Devanagari with virama and nukta, the joiners, MIDDLE DOT, kana/Han + KATAKANA MIDDLE DOT,
#: marks of several combining classes, disallowed characters, RTL digits, fullwidth letters
ALPHABET = (
    "abclxyz019-AZ"
    "\u00e9\u00fc\u00df\u0065\u0301\u0323\u0316\u0300\u0308\u0304"
    "\u03b1\u03b2\u0375\u03c2S"
    "\u05d0\u05d1\u05f3\u05f4\u05b0"
    "\u0628\u064a\u0627\u0660\u0661\u06f0\u06f1\u064b\u0640\u07fa"
    "\u0915\u0937\u094d\u093c\u0930"
    "\u200c\u200d\u00b7"
    "\u30fb\u3041\u30a1\u4e08\u3007"
    "\u0b95\u0bbe\u0bc6\u0bd7"
    "\u302e\u3031\u0903\u0488\uff21\u2665"
    "\uc2e4\ub840"
)


@functools.lru_cache(maxsize=None)
def _automaton(name: str) -> Automaton:
    # (one per format for the module: a state is built once, by whichever test reaches it first)
    return Automaton(ir.Grammar({"start": format_to_ir(name)}, "start"))


def _labels(s: str) -> list[str]:
    out, cur = [], ""
    for ch in s:
        if ch in SEPARATORS:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def _idna_ok(s: str) -> bool:
    try:
        idna.encode(s, uts46=False)
        return True
    except (idna.IDNAError, UnicodeError, ValueError):
        return False


def _bidi_name_ok(labels: list[str]) -> bool:
    rtl = any(unicodedata.bidirectional(c) in ("R", "AL", "AN") for lab in labels for c in lab)
    if not rtl:
        return True
    try:
        return all(check_bidi(lab, check_ltr=True) for lab in labels)
    except idna.IDNAError:
        return False


_MAYBE = frozenset(T.MAYBE_BAD_BEFORE)


def _refused_on_purpose(labels: list[str]) -> bool:
    n = sum(len(lab) for lab in labels) + len(labels) - 1
    k = sum(1 for lab in labels for c in lab if ord(c) > 0x7F)
    if len(labels) > 3 and n + 12 * k > 253:
        return True
    for lab in labels:
        if all(ord(c) < 0x80 for c in lab):
            continue
        if any(c == "-" for c in lab[2:4]) and lab[2:4] == "--":
            continue  # (invalid anyway)
        b = sum(1 for c in lab if ord(c) < 0x80)
        if len(lab) > 58 or b + sum(punycode_digit_weight(ord(c)) for c in lab if ord(c) > 0x7F) > 58:
            return True
        for i, c in enumerate(lab):
            if ord(c) in _MAYBE:
                prev = lab[i - 1] if i else None
                if prev is None or unicodedata.combining(prev) or ord(prev) in _MAYBE:
                    return True
    return False


def _expected(s: str) -> bool:
    labels = _labels(s)
    return _idna_ok(s) and _bidi_name_ok(labels) and not _refused_on_purpose(labels)


def _random_names(rng: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        labels = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            size = rng.choice((1, 2, 3, 4, 6, 9))
            labels.append("".join(rng.choice(ALPHABET) for _ in range(size)))
        out.append("".join(lab + rng.choice(SEPARATORS) for lab in labels[:-1]) + labels[-1])
    return out


def _check(names: list[str]) -> tuple[int, int]:
    auto = _automaton("idn-hostname")
    wrong, accepted = [], 0
    for s in names:
        got = auto.matches(s.encode("utf-8"))
        accepted += got
        if got:
            assert _idna_ok(s), f"accepted an invalid name {s!r}"
        if got != _expected(s):
            wrong.append((s, got))
    assert not wrong, wrong[:10]
    return accepted, len(names)


def test_random_names_against_idna():
    accepted, n = _check(_random_names(random.Random(29), 50))
    assert 3 < accepted < n  # (the sample reaches both answers)


@pytest.mark.slow
def test_random_names_against_idna_sweep():
    for seed in range(10):
        _check(_random_names(random.Random(1000 + seed), 1000))


@pytest.mark.parametrize("text, valid", [
    ("\u0915\u094d\u200c\u0937", True),           # ZWNJ after a virama
    ("\u0628\u064a\u200c\u0628\u064a", True),     # ZWNJ inside (D) T* ZWNJ T* (D)
    ("\u0628\u200c\u0627", True),                 # D ZWNJ R
    ("\u0627\u200c\u0628", False),                # R ZWNJ D: the left side must join
    ("l\u00b7l\u00b7l", True),                    # MIDDLE DOTs sharing their middle l
    ("\u03b1\u0375\u0375\u03b2", True),           # KERAIA before KERAIA before Greek
    ("\u03b1\u0375\u0375", False),
    ("\u05d0\u05f3\u05f4", True),                 # GERESH then GERSHAYIM, both after Hebrew
    ("cafe\u0301", False),                        # not NFC (e + combining acute composes)
    ("caf\u00e9", True),
    ("\u0915\u093c\u094d", True),                 # nukta (second of an excluded composite), virama
    ("a\u0316\u0301", False),                     # a mark of class 230 after 220: composes with 'a'
    ("a\u0301\u0316", False),                     # out of canonical order
    ("\u0b95\u0bbe", True),                       # Tamil vowel sign after a consonant
    ("\u0bc6\u0bbe", False),                      # composes to U+0BCA
    ("M\u00fcnchen", False),                      # a capital in a U-label is DISALLOWED
    ("MUNCHEN.example", True),                    # LDH labels keep their capitals
    ("\u00fc" * 11, True),                        # 4 + 1 + 11 * 5 = 60 by the bound
    ("\u00fc" * 12, False),                       # refused by the bound (its A-label is 16 octets)
    ("\u05d0.0a", False),                         # a Bidi name: every label an RTL or LTR label
    (".".join(["\uc2e4\ub840\ud14c\uc2a4\ud2b8"] * 3), True),   # three labels: 191 octets at most
    (".".join(["\uc2e4\ub840\ud14c\uc2a4\ud2b8"] * 4), False),  # four: 23 + 12 * 20 > 253 (refused)
    (".".join(["a" * 63] * 3 + ["a" * 61]), True),                   # 253 ASCII octets
    (".".join(["a" * 63] * 3 + ["a" * 62]), False),
    ("\u05d0.a0", True),
])
def test_rules_one_by_one(text, valid):
    assert _automaton("idn-hostname").matches(text.encode("utf-8")) is valid


def test_bound_is_sound_for_the_worst_labels():
    """The per-code-point digit bound against real Punycode: labels of the costliest code points
    (far apart, each once) and of one code point repeated, at the bound's limit."""
    rng = random.Random(5)
    pvalid = [c for lo, hi in T.PVALID for c in range(lo, hi + 1) if c > 0x7F]
    for _ in range(300):
        k = rng.randint(1, 12)
        label = "".join(chr(rng.choice(pvalid)) for _ in range(k)) + "a" * rng.randint(0, 40)
        b = sum(1 for c in label if ord(c) < 0x80)
        bound = 4 + b + 1 + sum(punycode_digit_weight(ord(c)) for c in label if ord(c) > 0x7F)
        assert len(b"xn--" + label.encode("punycode")) <= bound, label


@pytest.mark.parametrize("text, valid", [
    ("\u03b4\u03bf\u03ba\u03b9\u03bc\u03ae@\u03c0\u03b1\u03c1\u03ac\u03b4\u03b5\u03b9\u03b3\u03bc\u03b1.com", False),
    ("\u03b4\u03bf\u03ba\u03b9\u03bc\u03ae@\u00fcber.com", True),
    ("\"a b\u00e9\"@example.com", True),
    ("\u00e9@[IPv6:::1]", True),
    ("user@cafe\u0301.com", True),                # NFC not required in an e-mail domain (the suite)
    ("user@-cafe.com", False),
    ("user@\u05d0.0a", False),
])
def test_idn_email(text, valid):
    assert _automaton("idn-email").matches(text.encode("utf-8")) is valid


@pytest.mark.slow
def test_generated_table_is_fresh():
    """The shipped table is what tools/gen_idna_tables.py makes from the installed ``idna`` and
    ``unicodedata`` (when they are the versions it was made from)."""
    import importlib.util
    from pathlib import Path

    if idna.__version__ != T.IDNA_PACKAGE_VERSION or unicodedata.unidata_version != T.UCD_UNICODE_VERSION:
        pytest.skip("another idna / unicodedata version than the table's")
    path = Path(__file__).resolve().parent.parent / "tools" / "gen_idna_tables.py"
    spec = importlib.util.spec_from_file_location("gen_idna_tables", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.render() == mod.OUT.read_text(encoding="utf-8")


def test_in_a_schema_every_json_spelling():
    # the decoded-string language spelled as JSON: raw UTF-8, \uXXXX escapes (surrogate pairs
    # for the supplementary planes), in an object, with jsonschema's verdict beside dotjson's
    from dotjson.jsonschema import schema_to_grammar

    schema = {"type": "object", "properties": {"h": {"type": "string", "format": "idn-hostname"}}}
    auto = Automaton(schema_to_grammar(schema, spellings="any", close_objects=False, property_order="any"))
    for text, valid in [
        ('{"h": "\uc2e4\ub840.\ud14c\uc2a4\ud2b8"}', True),
        ('{"h": "\\uc2e4\\ub840\\u3002\\ud14c\\uc2a4\\ud2b8"}', True),       # escaped, ideographic stop
        ('{"h": "\\u0061\\u00b7l"}', False),                                   # a·l, escaped
        ('{"h": "l\\u00B7l"}', True),
        ('{"h": "\\ud840\\udc00\\u4e00"}', True),                              # U+20000 as a surrogate pair
        ('{"h": "\\ud840"}', False),                                           # a lone surrogate
        ('{"h": "\\u302e\\uc2e4"}', False),
    ]:
        assert auto.matches(text.encode("utf-8")) is valid, text
