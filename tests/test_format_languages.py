"""The ``date``/``time``/``date-time`` languages against the constructions they replaced.

``dotjson.formats.rfc`` writes the leap-second rule as one intersection (issue 33: 2,095 →
1,189 terms for ``time``) and the ordinary times as a trie on the hour. The earlier
constructions are kept here as the reference: the languages must be equal. Checked three
ways: the automaton proves the symmetric difference empty; Python's ``re`` (no dotjson code
after rendering) agrees on boundary strings around every leap second and on random
time-shaped strings; and arithmetic decides every leap second.
"""

from __future__ import annotations

import random
import re

import pytest

from dotjson import ir
from dotjson.automaton import Automaton, EmptyLanguageError
from dotjson.formats import rfc
from dotjson.grammar import to_python_regex
from dotjson.regex import regex_to_ir
from naive import assert_same_masks


def _r(pattern: str) -> ir.Node:
    return regex_to_ir(pattern, search=False)


_DIGIT = ir.chars((0x30, 0x39))


def _two(n: int) -> str:
    return f"{n:02d}"


def reference_full_date() -> ir.Node:
    """``full-date`` as ``dotjson.formats.rfc`` composed it before issue 33 (the year in each of
    three branches), from today's pieces (the change is the composition)."""
    p = rfc.date_parts()
    year = p["year"]
    return ir.alt(
        ir.seq(year, ir.lit("-"), p["m31"], ir.lit("-"), p["d31"]),
        ir.seq(year, ir.lit("-"), p["m30"], ir.lit("-"), p["d30"]),
        ir.seq(year, ir.lit("-02-"), p["d28"]),
        ir.seq(p["leap"], ir.lit("-02-29")),
    )


def reference_full_time() -> ir.Node:
    """``full-time`` as ``dotjson.formats.rfc`` wrote it before issue 33: an intersection per
    offset sign and the ``+hh:00`` cases listed apart."""
    hour = _r("([01][0-9]|2[0-3])")
    minute = _r("[0-5][0-9]")
    frac = ir.opt(ir.seq(ir.lit("."), ir.repeat(_DIGIT, 1, None)))
    num_offset = ir.seq(ir.chars((0x2B, 0x2B), (0x2D, 0x2D)), hour, ir.lit(":"), minute)
    offset = ir.alt(ir.chars((0x5A, 0x5A), (0x7A, 0x7A)), num_offset)
    normal = ir.seq(hour, ir.lit(":"), minute, ir.lit(":"), minute, frac, offset)
    z = ir.chars((0x5A, 0x5A), (0x7A, 0x7A))
    sec60 = ir.lit(":60")

    def pairs(sign, hour_map, minute_map, minutes):
        by_hour = ir.alt(*(
            ir.seq(ir.lit(_two(hour_map(h)) + ":"), minute, sec60, frac, ir.lit(f"{sign}{_two(h)}:"), minute)
            for h in range(24)
        ))
        by_minute = ir.alt(*(
            ir.seq(hour, ir.lit(":" + _two(minute_map(m))), sec60, frac, ir.lit(sign), hour, ir.lit(":" + _two(m)))
            for m in minutes
        ))
        return ir.And((by_hour, by_minute))

    leap = ir.alt(
        ir.seq(ir.lit("23:59:60"), frac, z),
        pairs("+", lambda h: h, lambda m: m - 1, range(1, 60)),
        ir.alt(*(ir.seq(ir.lit(f"{_two((h - 1) % 24)}:59:60"), frac, ir.lit(f"+{_two(h)}:00")) for h in range(24))),
        pairs("-", lambda h: 23 - h, lambda m: 59 - m, range(60)),
    )
    return ir.alt(normal, leap)


def reference_date_time() -> ir.Node:
    return ir.seq(reference_full_date(), ir.chars((0x54, 0x54), (0x74, 0x74)), reference_full_time())


PAIRS = {
    "date": (rfc.full_date, reference_full_date),
    "time": (rfc.full_time, reference_full_time),
    "date-time": (rfc.date_time, reference_date_time),
}


def _equal(a: ir.Node, b: ir.Node) -> bool:
    """Whether two regular languages are equal: their symmetric difference is empty (decided
    exactly by the automaton's emptiness search; a spent budget raises, never answers)."""
    try:
        Automaton(ir.Grammar({"start": ir.alt(ir.Diff(a, b), ir.Diff(b, a))}, "start"))
    except EmptyLanguageError:
        return True
    return False


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_languages_equal_the_reference(name):
    new, old = PAIRS[name]
    assert _equal(new(), old())


def test_a_different_language_is_told_apart():
    # the check above can fail: one leap second more, or one less, is a different language
    new = rfc.full_time()
    assert not _equal(ir.alt(new, ir.lit("00:00:60+00:02")), reference_full_time())
    assert not _equal(ir.Diff(new, ir.lit("12:29:60-11:30")), reference_full_time())
    assert not _equal(ir.Diff(rfc.full_date(), ir.lit("2000-02-29")), reference_full_date())


def _leap_ok(hh: int, mm: int, sign: str, oh: int, om: int) -> bool:
    off = (oh * 60 + om) * (1 if sign == "+" else -1)
    return (hh * 60 + mm - off) % 1440 == 23 * 60 + 59


def test_time_on_boundary_and_random_strings():
    new = re.compile(to_python_regex(rfc.full_time()))
    old = re.compile(to_python_regex(reference_full_time()))
    rng = random.Random(33)
    cases = []
    for hh in range(24):
        for mm in range(60):
            # the offsets that make HH:MM a leap second, and their neighbours by a minute and an hour
            plus = ((hh * 60 + mm) - (23 * 60 + 59)) % 1440
            minus = (23 * 60 + 59 - (hh * 60 + mm)) % 1440
            for sign, base in (("+", plus), ("-", minus)):
                for d in (-61, -60, -1, 0, 1, 60, 61):
                    v = (base + d) % 1440
                    cases.append((hh, mm, sign, v // 60, v % 60))
            cases.append((hh, mm, "+", rng.randrange(24), rng.randrange(60)))
    for hh, mm, sign, oh, om in cases:
        frac = rng.choice(["", ".5", ".000"])
        s = f"{hh:02}:{mm:02}:60{frac}{sign}{oh:02}:{om:02}"
        got = new.fullmatch(s) is not None
        assert got == (old.fullmatch(s) is not None) == _leap_ok(hh, mm, sign, oh, om), s
    for hh in range(24):
        for mm in range(60):
            for zz in "Zz":
                s = f"{hh:02}:{mm:02}:60{zz}"
                assert (new.fullmatch(s) is not None) == (old.fullmatch(s) is not None) == (hh == 23 and mm == 59), s
    # random time-shaped strings and their one-character mutations
    alphabet = "0123456789:+-.Zz T"
    for _ in range(20_000):
        s = (f"{rng.randrange(26):02}:{rng.randrange(62):02}:{rng.choice([rng.randrange(62), 60]):02}"
             f"{rng.choice(['', '.', '.1', '.25'])}"
             f"{rng.choice(['Z', 'z', '', '+', '-'])}{rng.choice(['', f'{rng.randrange(25):02}:{rng.randrange(61):02}'])}")
        if rng.random() < 0.3 and s:
            k = rng.randrange(len(s))
            s = s[:k] + rng.choice(alphabet) + s[k + 1:]
        assert (new.fullmatch(s) is not None) == (old.fullmatch(s) is not None), s


def test_date_on_boundary_strings():
    new = re.compile(to_python_regex(rfc.full_date()))
    old = re.compile(to_python_regex(reference_full_date()))
    for y in (0, 4, 100, 400, 1900, 2000, 2023, 2024, 9996, 9999):
        for m in range(14):
            for d in (0, 1, 28, 29, 30, 31, 32):
                s = f"{y:04}-{m:02}-{d:02}"
                assert (new.fullmatch(s) is not None) == (old.fullmatch(s) is not None), s


def test_an_ordinary_time_never_searches_the_leap_second_intersection():
    # Each state inside a time is an alternation of the ordinary times' derivative and the
    # leap-second intersection's; the ordinary one is a term of the compiled language, so the
    # state's emptiness check stops there. Had it searched the intersection, this walk would
    # build ~6,800 terms (every (HH, MM) pair of the search) instead of a few dozen.
    for text in (b"2023-04-15T19:30:00Z", b"2023-04-15T00:00:60+00:01", b"1998-12-31T23:59:60.5z"):
        a = Automaton(ir.Grammar({"start": rfc.date_time()}, "start"))
        a.compile_rules()
        before, s = a.n_terms, a.start
        for b in text:
            s = a.step(s, b)
            assert s >= 0, text
        assert a.accepting[s], text
        assert a.n_terms - before < 200, (text, a.n_terms - before)


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab"])
def test_masks_equal_the_reference_languages_masks(request, vocab_name):
    # Equal languages give equal token masks: at every byte of documents through an ordinary
    # time, a leap second with each offset form and a fraction, the index over today's
    # date-time and the one over the reference construction allow the same tokens.
    from dotjson import Index
    from dotjson.jsonschema.jsonstr import spellings

    vocab = request.getfixturevalue(vocab_name)
    enc = spellings("canonical").encode_string_language

    def index(node):
        return Index.from_grammar(ir.Grammar({"start": ir.seq(ir.lit('"'), enc(node), ir.lit('"'))}, "start"), vocab)

    new, old = index(rfc.date_time()), index(reference_date_time())
    for doc in (b'"2023-04-15T19:30:00Z"', b'"1998-12-31T15:59:60.123-08:00"', b'"2024-02-29T00:00:60+00:01"',
                b'"1998-12-31T00:59:60+01:00"', b'"1998-12-31t23:59:60z"'):
        assert_same_masks(new, old, doc)


def test_an_escaped_time_never_searches_the_leap_second_intersection():
    """An alternation is decided by an item known non-empty before any unknown one is searched
    (automaton/emptiness.py, _is_empty): when an escape makes the ordinary times' derivative a
    new term, the leap second's intersection is never searched (it was ~43,000-74,000 terms)."""
    # every JSON spelling (the every-valid configuration): "\u0031\u0039" is the hour 19
    from dotjson.jsonschema.jsonstr import spellings

    node = spellings("any").encode_string_language(rfc.date_time())
    for text in (rb"2023-04-15T\u0031\u0039:30:00Z", rb"2023-04-15T1\u0039:30:00Z"):
        a = Automaton(ir.Grammar({"start": node}, "start"))
        a.compile_rules()
        before, s = a.n_terms, a.start
        for b in text:
            s = a.step(s, b)
        assert s >= 0 and a.accepting[s], text
        assert a.n_terms - before < 1000, (text, a.n_terms - before)
