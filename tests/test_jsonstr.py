"""dotjson.jsonschema.jsonstr: decoded-string languages → every JSON spelling of their strings."""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dotjson import ir
from dotjson.errors import GrammarError
from dotjson.grammar import lark_parses, to_lark, to_python_regex
from dotjson.jsonschema.jsonstr import (
    JSON_STRING_CHAR,
    encode_chars,
    encode_string_language,
    json_string_content,
    string_of_length,
)
from dotjson.regex import regex_to_ir

_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def spell(s: str, rnd: random.Random) -> str:
    """One random JSON spelling of ``s`` (content between the quotes)."""
    out = []
    for ch in s:
        cp = ord(ch)
        options = []
        if cp >= 0x20 and ch not in '"\\':
            options.append(ch)
        if ch in _SHORT:
            options.append(_SHORT[ch])
        if cp < 0x10000:
            h = f"{cp:04x}"
            options.append("\\u" + "".join(c.upper() if rnd.random() < 0.5 else c for c in h))
        else:
            v = cp - 0x10000
            hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
            options.append(f"\\u{hi:04x}\\u{lo:04X}" if rnd.random() < 0.5 else f"\\u{hi:04X}\\u{lo:04x}")
        out.append(rnd.choice(options))
    return "".join(out)


def content_rx(node: ir.Node) -> re.Pattern:
    return re.compile(to_python_regex(encode_string_language(node)))


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(_text, st.integers(0, 2**32))
def test_literal_accepts_every_spelling(s, seed):
    rx = content_rx(ir.lit(s))
    rnd = random.Random(seed)
    for ensure_ascii in (True, False):
        enc = json.dumps(s, ensure_ascii=ensure_ascii)[1:-1]
        assert rx.fullmatch(enc), (s, enc)
        assert json.loads('"' + enc + '"') == s
    for _ in range(4):
        sp = spell(s, rnd)
        assert json.loads('"' + sp + '"') == s
        assert rx.fullmatch(sp), (s, sp)


@settings(max_examples=150, deadline=None)
@given(_text, _text, st.integers(0, 2**32))
def test_literal_rejects_spellings_of_other_strings(s, t, seed):
    if s == t:
        return
    rx = content_rx(ir.lit(s))
    rnd = random.Random(seed)
    for _ in range(3):
        assert not rx.fullmatch(spell(t, rnd))
    assert not rx.fullmatch(json.dumps(t)[1:-1])


@st.composite
def char_sets(draw):
    n = draw(st.integers(1, 5))
    rs = []
    for _ in range(n):
        lo = draw(st.one_of(st.integers(0, 0x80), st.integers(0, 0x3000), st.integers(0, 0x10FFFF)))
        hi = lo + draw(st.one_of(st.integers(0, 3), st.integers(0, 0x500), st.integers(0, 0x20000)))
        rs.append((lo, min(hi, 0x10FFFF)))
    return ir.chars(*rs)


def _in(c: ir.Chars, cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in c.ranges)


@settings(max_examples=80, deadline=None)
@given(char_sets(), st.integers(0, 2**32))
def test_char_sets_exact(c, seed):
    rx = re.compile(to_python_regex(encode_chars(c)))
    rnd = random.Random(seed)
    probes = set()
    for lo, hi in c.ranges:
        probes |= {lo, hi, lo - 1, hi + 1, (lo + hi) // 2}
    probes |= {rnd.randrange(0x110000) for _ in range(20)} | {0x22, 0x5C, 0x2F, 0x0A, 0x1F, 0x20, 0xFFFF, 0x10000}
    for cp in probes:
        if not (0 <= cp <= 0x10FFFF) or 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        want = _in(c, cp)
        for sp in {json.dumps(ch)[1:-1], json.dumps(ch, ensure_ascii=False)[1:-1], spell(ch, rnd), spell(ch, rnd)}:
            assert (rx.fullmatch(sp) is not None) == want, (hex(cp), sp)


def test_hex_automaton_is_compact():
    # every scalar value: a handful of nodes, not one alternative per code point
    size = sum(1 for _ in ir.walk(JSON_STRING_CHAR))
    assert size < 60
    size = sum(1 for _ in ir.walk(encode_chars(ir.chars((0x100, 0x10FFFF)))))
    assert size < 200


def test_lone_surrogates_and_raw_controls_rejected():
    rx = re.compile(to_python_regex(json_string_content()))
    assert rx.fullmatch("\\ud83d\\ude00")
    assert rx.fullmatch("\\uD83D\\uDE00")
    assert not rx.fullmatch("\\ud83d")
    assert not rx.fullmatch("\\ude00")
    assert not rx.fullmatch("\\ude00\\ud83d")
    assert not rx.fullmatch("\n")
    assert not rx.fullmatch('"')
    assert not rx.fullmatch("\\")
    assert not rx.fullmatch("\\x41")
    assert not rx.fullmatch("\\u12")
    assert rx.fullmatch("\\\\\\/\\b\\f\\n\\r\\t\\\"")


def test_string_of_length_counts_characters():
    rx = re.compile(to_python_regex(string_of_length(2, 3)))
    assert not rx.fullmatch("a")
    assert rx.fullmatch("ab")
    assert rx.fullmatch("a\\u00e9")
    assert rx.fullmatch("\\n\\ud83d\\ude00\\t")  # three characters
    assert not rx.fullmatch("abcd")
    assert rx.fullmatch("\U0001F600\u00e9")
    assert string_of_length(0, 100000) == ir.Repeat(JSON_STRING_CHAR, 0, 100000)
    assert string_of_length(5, None) == ir.Repeat(JSON_STRING_CHAR, 5, None)
    assert string_of_length(3, 2) == ir.EMPTY


def test_homomorphism_commutes_with_and_diff():
    a = regex_to_ir("^a+$")
    b = ir.repeat(ir.ANY_CHAR, 2, 3)
    enc = encode_string_language(ir.And((a, b)))
    assert isinstance(enc, ir.And)
    g = ir.Grammar({"start": ir.seq(ir.lit('"'), enc, ir.lit('"'))})
    text = to_lark(g)
    for s, ok in [("a", False), ("aa", True), ("aaa", True), ("aaaa", False), ("ab", False)]:
        assert lark_parses(text, json.dumps(s)) == ok
        assert lark_parses(text, '"' + "\\u0061" * len(s) + '"') == (2 <= len(s) <= 3)
    d = encode_string_language(ir.Diff(a, ir.lit("aa")))
    text = to_lark(ir.Grammar({"start": ir.seq(ir.lit('"'), d, ir.lit('"'))}))
    assert lark_parses(text, '"a"') and not lark_parses(text, '"aa"') and not lark_parses(text, '"a\\u0061"')
    assert lark_parses(text, '"aaa"')


def test_refs_are_rejected():
    with pytest.raises(GrammarError, match="cannot reference rule 'x'"):
        encode_string_language(ir.seq(ir.lit("a"), ir.Ref("x")))


@settings(max_examples=40, deadline=None)
@given(_text)
def test_json_string_content_through_lark(s):
    g = ir.Grammar({"start": ir.seq(ir.lit('"'), json_string_content(), ir.lit('"'))})
    text = to_lark(g)
    assert lark_parses(text, json.dumps(s))
    assert lark_parses(text, json.dumps(s, ensure_ascii=False))
