"""dotjson.grammar: Lark text ↔ IR and the Lark oracle, over the JSON base grammar
(:mod:`dotjson.jsonschema.jsonbase`) among others."""

from __future__ import annotations

import json
import random
import re

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dotjson import ir
from dotjson.errors import GrammarError
from dotjson.grammar import (
    lark_name,
    lark_parses,
    load_lark,
    to_lark,
    to_python_regex,
)
from dotjson.jsonschema.jsonbase import JSON_WS, json_base, json_base_grammar
from dotjson.jsonschema.jsonstr import encode_string_language


def stock_lark(text: str) -> lark.Lark:
    """Lark's own parser, no patches: what a user gets loading ``index.grammar``."""
    return lark.Lark(text, parser="earley", lexer="dynamic")


def stock_parses(parser: lark.Lark, s: str) -> bool:
    try:
        parser.parse(s)
        return True
    except lark.exceptions.UnexpectedInput:
        return False


# ----------------------------------------------------------------------------- load_lark


def test_load_lark_constructs():
    g = load_lark(
        r'''
        start: a b? (c | d)* "x"i e+ f ~ 2 f ~ 1..3 [g]
        a: "ab"
        b: /[0-9]+/
        c: "c" -> alias_ignored
        d: D
        e: "a".."c"
        f: "f"
        g: "g"
        D: "d" ~ 2 | "q"
        '''
    )
    r = g.rules
    assert g.start == "start"
    assert r["a"] == ir.Lit("ab")
    assert r["b"] == ir.Repeat(ir.chars((0x30, 0x39)), 1, None)
    assert r["d"] == ir.alt(ir.Repeat(ir.Lit("d"), 2, 2), ir.Lit("q"))
    assert r["e"] == ir.chars((0x61, 0x63))
    start = r["start"]
    assert isinstance(start, ir.Seq)
    assert start.items[0] == ir.Ref("a")
    assert start.items[1] == ir.opt(ir.Ref("b"))
    assert start.items[2] == ir.repeat(ir.alt(ir.Ref("c"), ir.Ref("d")), 0, None)
    assert start.items[3] == ir.seq(ir.chars((0x58, 0x58), (0x78, 0x78)))  # "x"i
    assert start.items[4] == ir.repeat(ir.Ref("e"), 1, None)
    assert start.items[5] == ir.Repeat(ir.Ref("f"), 2, 2)
    assert start.items[6] == ir.Repeat(ir.Ref("f"), 1, 3)
    assert start.items[7] == ir.opt(ir.Ref("g"))


def test_load_lark_string_escapes_and_regex_flags():
    g = load_lark(r'''start: "a\"b\\c\n\u00e9" /ab/i /a.b/s''')
    items = g.rules["start"].items
    assert items[0] == ir.Lit('a"b\\c\n\u00e9')
    rx = to_python_regex(ir.seq(*items[1:]))
    import re

    assert re.fullmatch(rx, "aBa\nb") and not re.fullmatch(rx, "ac")


def test_load_lark_imports_and_templates():
    g = load_lark(
        """
        start: _sep{INT, ","}
        _sep{x, sep}: x (sep x)*
        %import common.INT
        """
    )
    text = to_lark(g)
    assert lark_parses(text, "1,22,333")
    assert not lark_parses(text, "1,,2")


def test_load_lark_start_and_errors():
    with pytest.raises(GrammarError, match="start rule 'main'"):
        load_lark('start: "a"', start="main")
    with pytest.raises(GrammarError, match="%ignore"):
        load_lark('start: "a"\n%ignore " "')
    with pytest.raises(GrammarError, match="declare"):
        load_lark("start: X\n%declare X")
    with pytest.raises(GrammarError, match="invalid Lark grammar"):
        load_lark("start: (")
    with pytest.raises(GrammarError, match="lookaround"):
        load_lark("start: /a(?=b)/")


def test_lark_name():
    assert lark_name("json_value") == "json_value"
    assert lark_name("_x1") == "_x1"
    for bad in ["Foo-Bar", "1abc", "__x", "a.b", "$ref"]:
        import re

        assert re.fullmatch(r"_?[a-z][_a-z0-9]*", lark_name(bad)), bad


# ----------------------------------------------------------------------------- json base


def test_json_base_rules_and_whitespace():
    b = json_base(False)
    for name in ["json_value", "json_object", "json_array", "json_string", "json_number", "json_integer",
                 "ws", "json_string_char", "json_string_content", "json_member", "json_boolean", "json_null"]:
        assert name in b, name
    assert ir.Ref("ws") in b["json_object"].items[0].items
    c = json_base(True)
    assert c["ws"] == ir.EPS
    assert all("ws" not in ir.refs(node) for node in c.values())
    assert json_base(True) == c and json_base(True) is not c  # fresh dict, cached content
    # whitespace="json": any run of RFC 8259's four whitespace bytes, and nothing else
    ws = re.compile(to_python_regex(JSON_WS))
    assert ws.fullmatch(" \t\n\r  \n") and ws.fullmatch("")
    assert not any(ws.fullmatch(ch) for ch in "\f\v\u00a0\u2028x")


@pytest.fixture(scope="module")
def json_lark_text():
    return to_lark(json_base_grammar(False, "json_document"))


@pytest.fixture(scope="module")
def compact_lark_text():
    return to_lark(json_base_grammar(True, "json_value"))


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
    max_leaves=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_json_values)
def test_json_grammar_accepts_json(value, json_lark_text, compact_lark_text):
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert lark_parses(compact_lark_text, compact)
    assert lark_parses(json_lark_text, compact)
    assert lark_parses(json_lark_text, json.dumps(value, indent=2))
    assert lark_parses(json_lark_text, json.dumps(value))  # ", " and ": " separators
    if compact != json.dumps(value, separators=(",", ":")):
        assert lark_parses(compact_lark_text, json.dumps(value, separators=(",", ":")))


@pytest.mark.parametrize(
    "text",
    ["", "01", "1.", ".5", "-", "+1", "1e", "[1,]", "{,}", '{"a"}', '{"a":1,}', "[", "tru", "nul",
     '"\\x41"', '"\\ud800"', '"a\nb"', "'a'", '{"a" 1}', "NaN", "Infinity", "[1 2]", '"\\u12"'],
)
def test_json_grammar_rejects(text, json_lark_text):
    assert not lark_parses(json_lark_text, text)


def test_whitespace_is_bounded(json_lark_text, compact_lark_text):
    assert lark_parses(json_lark_text, "[\n" + " " * 20 + "1]")
    assert lark_parses(json_lark_text, "[\r\n\t1]")
    assert not lark_parses(json_lark_text, "[" + " " * 21 + "1]")
    assert not lark_parses(json_lark_text, "[\n\n1]")
    assert not lark_parses(json_lark_text, "[ \n1]")  # spaces only after the newline
    assert lark_parses(json_lark_text, "[\n  1,\n  2\n]")
    assert not lark_parses(compact_lark_text, "[1, 2]")
    assert lark_parses(compact_lark_text, "[1,2]")


def test_stock_lark_agrees_with_oracle(json_lark_text):
    parser = stock_lark(json_lark_text)
    rnd = random.Random(0)
    docs = ['{"a": [1, 2.5e-3, true, null, "x\\u00e9\\ud83d\\ude00"]}', "[\n  {}\n]", "-0", '"\\/"']
    for d in docs:
        assert stock_parses(parser, d) and lark_parses(json_lark_text, d)
    alphabet = '{}[],:"01e.-tn \n\\u'
    for _ in range(200):
        s = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6)))
        assert stock_parses(parser, s) == lark_parses(json_lark_text, s), s


# ----------------------------------------------------------------------------- to_lark


def test_to_lark_loads_in_stock_lark_and_round_trips():
    g = load_lark(
        r'''
        start: item ("," item)* | "empty"
        item: NAME "=" VALUE | "(" start ")"
        NAME: /[a-z]+/
        VALUE: /[0-9]{1,3}/ | "x" ~ 2..4
        '''
    )
    text = to_lark(g)
    parser = stock_lark(text)
    g2 = load_lark(text)
    text2 = to_lark(g2)
    cases = {"a=1": True, "a=1,bb=22": True, "(a=1),c=xxx": True, "empty": True, "a=1234": False,
             "a=x": False, "a=xxxxx": False, "": False, "(a=1": False, "A=1": False}
    for s, ok in cases.items():
        assert stock_parses(parser, s) == ok, s
        assert lark_parses(text, s) == ok, s
        assert lark_parses(text2, s) == ok, s


def test_to_lark_escapes_literals():
    weird = 'a"b\\c\n\t\x00\u00e9\U0001F600/ '
    g = ir.Grammar({"start": ir.seq(ir.lit(weird), ir.Ref("x")), "x": ir.alt(ir.lit("/"), ir.chars((0x5B, 0x5E)))})
    text = to_lark(g)
    for tail, ok in [("/", True), ("[", True), ("\\", True), ("]", True), ("^", True), ("_", False)]:
        assert lark_parses(text, weird + tail) == ok, tail
        assert stock_parses(stock_lark(text), weird + tail) == ok, tail
    assert load_lark(text).rules["start"] == g.rules["start"]


def test_to_lark_renames_invalid_rule_names_and_adds_start():
    g = ir.Grammar({"Root-Rule": ir.seq(ir.lit("a"), ir.Ref("$defs/x")), "$defs/x": ir.lit("b")}, "Root-Rule")
    text = to_lark(g)
    assert text.count("start:") == 1
    assert lark_parses(text, "ab") and not lark_parses(text, "a")


def test_to_lark_empty_and_epsilon():
    g = ir.Grammar({"start": ir.seq(ir.lit("a"), ir.Ref("e"), ir.Ref("n")), "e": ir.EPS, "n": ir.alt(ir.EMPTY, ir.lit("b"))})
    text = to_lark(g)
    assert lark_parses(text, "ab") and not lark_parses(text, "a")
    g = ir.Grammar({"start": ir.alt(ir.EPS, ir.lit("a"))})
    text = to_lark(g)
    assert lark_parses(text, "") and lark_parses(text, "a")
    g = ir.Grammar({"start": ir.seq(ir.lit("a"), ir.Chars(()))})
    assert not lark_parses(to_lark(g), "a")


def test_to_lark_large_bounds_stay_small():
    g = ir.Grammar({"start": ir.seq(ir.lit("["), ir.Repeat(ir.Ref("x"), 0, 100000), ir.lit("]")), "x": ir.lit("a")})
    text = to_lark(g)
    assert len(text) < 500 and "100000" in text
    big = encode_string_language(ir.Repeat(ir.ANY_CHAR, 0, 100000))
    text = to_lark(ir.Grammar({"start": ir.seq(ir.lit('"'), big, ir.lit('"'))}))
    assert len(text) < 2000
    assert lark_parses(text, '"' + "ab" * 50 + '"')


def test_to_lark_no_expansion_blowup():
    # twenty optional pieces in one sequence: Lark would distribute them into 2**20 expansions
    pieces = [ir.opt(ir.Ref("x")) for _ in range(20)]
    g = ir.Grammar({"start": ir.seq(*pieces, ir.lit("!")), "x": ir.alt(ir.lit("a"), ir.lit("bb"))})
    text = to_lark(g)
    assert stock_parses(stock_lark(text), "abba!")
    assert lark_parses(text, "a" * 20 + "!") and not lark_parses(text, "a" * 21 + "!")


def test_setops_need_the_closing_quote():
    a = encode_string_language(ir.repeat(ir.chars((0x61, 0x62)), 0, None))
    b = encode_string_language(ir.repeat(ir.ANY_CHAR, 1, 2))
    ok = ir.Grammar({"start": ir.seq(ir.lit('"'), ir.And((a, b)), ir.lit('"'))})
    text = to_lark(ok)
    assert stock_parses(stock_lark(text), '"ab"') and not stock_parses(stock_lark(text), '"aba"')
    with pytest.raises(GrammarError, match="closing quote"):
        to_lark(ir.Grammar({"start": ir.seq(ir.lit('"'), ir.And((a, b)), ir.lit("x"))}))
    with pytest.raises(GrammarError, match="closing quote"):
        to_lark(ir.Grammar({"start": ir.seq(ir.And((a, b)), ir.Ref("start"))}))
    # an operand that could contain an unescaped quote cannot be rendered exactly
    bad = ir.And((ir.lit('a"'), ir.lit('a"')))
    with pytest.raises(GrammarError, match="closing quote"):
        to_lark(ir.Grammar({"start": ir.seq(bad, ir.lit('"'))}))


def test_quote_terminated_terminal_only_when_exact():
    # 'a"?' followed by '"' is not prefix-free: it must not become one terminal
    g = ir.Grammar({"start": ir.seq(ir.lit("a"), ir.opt(ir.lit('"')), ir.lit('"'), ir.lit("b"))})
    text = to_lark(g)
    for s, ok in [('a"b', True), ('a""b', True), ('ab', False)]:
        assert stock_parses(stock_lark(text), s) == ok
        assert lark_parses(text, s) == ok


# ----------------------------------------------------------------------------- the oracle


def test_lark_parses_explores_all_splits():
    # Python's re.match("a|ab", "abc") gives "a": Lark's own dynamic lexers never try "ab"
    text = 'start: X "c"\nX: /a|ab/'
    assert not stock_parses(lark.Lark(text, parser="earley", lexer="dynamic_complete"), "abc")
    assert lark_parses(text, "abc")
    assert lark_parses(text, "ac")
    assert not lark_parses(text, "abbc")


def test_json_lark_string_char_equals_jsonstr():
    # grammars/json.lark's json_string_char and jsonstr's encoding of "any character" agree
    import re

    from dotjson.jsonschema.jsonstr import JSON_STRING_CHAR

    ours = re.compile(to_python_regex(json_base(False)["json_string_char"]))
    theirs = re.compile(to_python_regex(JSON_STRING_CHAR))
    rnd = random.Random(1)
    samples = ['"', "\\", "\\u", "\\ud83d\\ude00", "\\uD83D\\uDE00", "\\ud83d", "\\udc00", "\\u00e9", "\\u00E9",
               "\\/", "\\x", "\\\\", "\n", "\x1f", "\x7f", "\u2028", "\U0001F600", "ab", "\\uDBFF\\uDFFF"]
    hexd = "0123456789abcdefABCDEF"
    for _ in range(300):
        samples.append("\\u" + "".join(rnd.choice(hexd) for _ in range(4)))
        samples.append("\\u" + "".join(rnd.choice(hexd) for _ in range(4)) + "\\u" + "".join(rnd.choice(hexd) for _ in range(4)))
        samples.append(chr(rnd.choice([rnd.randrange(0x80), rnd.randrange(0xD800), rnd.randrange(0xE000, 0x110000)])))
    for s in samples:
        assert (ours.fullmatch(s) is None) == (theirs.fullmatch(s) is None), s
