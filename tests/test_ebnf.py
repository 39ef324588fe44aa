"""GBNF-style EBNF -> Lark: the translated grammar accepts exactly what XGrammar's own EBNF
parser accepts, on strings in and out of each language."""

from __future__ import annotations

import re

import pytest

from dotjson import Index
from dotjson.ebnf import ebnf_to_lark
from dotjson.errors import DotjsonTypeError, GrammarError

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402

GRAMMARS = {
    "commands": (
        'root ::= cmd (";" cmd){0,2}\n'
        'cmd ::= "go " dir | "wait" (" " [0-9]{1,2})?\n'
        'dir ::= "north" | "south"\n',
        ["go north", "wait", "wait 7", "wait 42;go south", "go north;wait;wait 1",
         "go east", "wait 123", "go north;go north;go north;go north", "", "wait ", "go  north"],
    ),
    "classes_and_escapes": (
        'root ::= "\\"" ( [^"\\\\\\x00-\\x1f] | "\\\\" [nt"\\\\] )* "\\"" [\\t\\n]?\n',
        ['""', '"abc"', '"a\\nb"', '"\\"q\\""', '"é€😀"', '"abc"\n', '"a\\x"', '"unterminated',
         '"ctl\x01"', '"tab\t"'],
    ),
    "repetitions": (
        'root ::= a{2} b{1,} c{0,1}\na ::= "a"\nb ::= "b" | "B"\nc ::= "c"\n',
        ["aab", "aabBbc", "aaBc", "ab", "aaa b", "aabcc", "aa", "aabbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"],
    ),
    "recursion_and_names": (
        'root ::= list-of-items\nlist-of-items ::= "[" (item ("," item)*)? "]"\n'
        'item ::= [0-9]+ | list-of-items\n# a comment line\n',
        ["[]", "[1]", "[1,[2,[3,[]]],45]", "[1,]", "[[]", "[a]", "[,]", "[[[[[[[[[[1]]]]]]]]]]"],
    ),
    "empty_alternative": (
        'root ::= "x" opt "y"\nopt ::= "" | "-" | ("+" | "")\n',
        ["xy", "x-y", "x+y", "x--y", "x y"],
    ),
}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_same_language_as_xgrammar(name, smollm2_vocab):
    ebnf, strings = GRAMMARS[name]
    lark_text = ebnf_to_lark(ebnf)
    index = Index.from_lark(lark_text, smollm2_vocab)
    g = xgr.Grammar.from_ebnf(ebnf)
    accepted = 0
    for s in strings:
        want = _is_grammar_accept_string(g, s)
        assert index.accepts(s) == want, (name, s, lark_text)
        accepted += want
    assert 0 < accepted < len(strings)  # the cases hold strings in and out of the language


def test_xgrammar_builtin_json_grammar_without_lookaheads(smollm2_vocab):
    ebnf = str(xgr.Grammar.builtin_json_grammar())
    with pytest.raises(GrammarError, match=r"lookahead assertion '\(=' at line 2"):
        ebnf_to_lark(ebnf)
    # the lookaheads of this grammar only restate what follows: drop them and compare
    plain = re.sub(r"\(=\(.*?\)\)\s*$", "", ebnf, flags=re.M)
    plain = re.sub(r" \(=\(\[[^\n]*\]\)\)$", "", plain, flags=re.M)
    assert "(=" not in plain
    index = Index.from_lark(ebnf_to_lark(plain), smollm2_vocab)
    g = xgr.Grammar.from_ebnf(plain)
    for s in ['{"a": [1, 2.5e3, true, null, {"b": "c\\n"}]}', '[]', '{"a":1,}', '[1 2]', '{"a"}',
              '[-0.5, "x\\u00e9"]', '{}', '[01]']:
        assert index.accepts(s) == _is_grammar_accept_string(g, s), s


def test_errors():
    with pytest.raises(GrammarError, match="no 'root' rule"):
        ebnf_to_lark('start ::= "a"')
    with pytest.raises(GrammarError, match="'b' is used but never defined"):
        ebnf_to_lark('root ::= "a" b')
    with pytest.raises(GrammarError, match="defined twice"):
        ebnf_to_lark('root ::= "a"\nroot ::= "b"')
    with pytest.raises(GrammarError, match="unterminated string at line 2, column 11"):
        ebnf_to_lark('root ::= x\nx ::= "a" "b')
    with pytest.raises(GrammarError, match=r"unknown escape \\q"):
        ebnf_to_lark('root ::= "\\q"')
    with pytest.raises(GrammarError, match="reversed"):
        ebnf_to_lark('root ::= [z-a]')
    with pytest.raises(GrammarError, match="expected a rule"):
        ebnf_to_lark('"a" ::= "b"')
    with pytest.raises(DotjsonTypeError, match="expected EBNF text"):
        ebnf_to_lark(b"root ::= 'a'")
    assert ebnf_to_lark('root ::= start\nstart ::= "s"').startswith("start: root\nroot: start_\n")


def test_grammar_to_lark_reads_either_format():
    """Engines send EBNF and Lark in one field: ``::=`` rules are EBNF, anything else is Lark."""
    from dotjson.ebnf import grammar_to_lark

    lark = 'start: "yes" | "no"'
    assert grammar_to_lark(lark) is lark
    assert grammar_to_lark('root ::= "yes" | "no"') == ebnf_to_lark('root ::= "yes" | "no"')
    with pytest.raises(GrammarError, match="no 'root' rule"):
        grammar_to_lark('start ::= "a"')
    with pytest.raises(DotjsonTypeError, match="expected EBNF text"):
        grammar_to_lark(None)
