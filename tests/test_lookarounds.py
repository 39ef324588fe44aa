"""Lookaheads and lookbehinds in ``pattern`` (issue 32): exact, ECMA-262 semantics.

A lookaround is a condition on the whole text at one position, so its language is an
intersection (``ir.And``) or a difference (``ir.Diff``) with the language of the rest of the text
(or of the text before it). The reference here is Python's ``re`` (and ``jsonschema``, which uses
it): on ASCII texts without line breaks, with ``$`` read as ECMA-262's end of input (``\\Z``),
its lookarounds mean what ECMA-262's do (there are no backreferences to differ on).
"""

from __future__ import annotations

import json
import random
import re

import jsonschema
import pytest

from dotjson import ir
from dotjson.automaton import Automaton
from dotjson.errors import UnsupportedSchemaError
from dotjson.regex import regex_to_ir
from dotjson.jsonschema import schema_to_grammar

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}

PATTERNS = [
    r"^(?!tag|category)$",                      # MaskBench (issue 32)
    r"^(?![i|I][o|O])",                         # MaskBench (issue 32), abridged
    r"^(?!@@)[@a-zA-Z0-9_-]+$",                 # JsonSchemaStore browser.i18n
    r"^(?!pattern$).*$",                        # JsonSchemaStore web-types
    r"^(?!org\.bukkit\.)([a-zA-Z_$][a-zA-Z\d_$]*\.)*[a-zA-Z_$][a-zA-Z\d_$]*$",  # bukkit-plugin
    r"^(?!.*://)(?=.{1,12}$)((\w{1,3}\.){1,2}(?![0-9]*$)[a-z0-9-]+\.?)$",       # a small aerleon
    r"a(?=b)", r"(?<=a)b", r"(?<!a)b$", r"x(?!y)", r"(?<=ab|ba)c", r"^(a|b(?=c))c",
    r"^(?=.*[A-Z])(?=.*\d).{4,}$",              # password-style conjunction
    r"^((?!ab).)*$", r"^(?:(?!ab)[a-c])*$",     # "does not contain": a tempered token
    r"(?=a)(?!ab)", r"^(?=(a|b)c)", r"x(?!)|c", r"(?=)",
    r"^(?!.*\/)^(.*[^.]+.*)$",                   # JsonSchemaStore ci: a `^` again after a lookahead
    r"^(?=a)(?!ab)^^[a-c]+$", r"x^(?!a)^b|^(?=b)^b",
    r"^(?!^lucene\.|builtin\.|mongodb\.).*",    # mongodb-atlas: a `^` inside a lookahead at the start
    r"^(?=(?:^a|b))(?!(?!^)x)[a-c]+$",
    # "does not contain S" written as the texts avoiding S (KMP): periodic S, lazy and class repeats
    r"^(?!.*abab)[ab.:]*$", r"^(?!.*aab)[abc]{0,8}$", r"^(?!.*?::)[a:b]+$", r"^(?!.*\.\.)[a-z.]+$",
    r"^(?![^/]*//)[a-z/:]*$", r"^(?!.*://)(.{1,3}\.){1,3}[a-z]+$", r"^(?!.*b)(?!.*aa)[ab]*$", r"x(?!.*ab)",
]
ALPHA = "abcxyAB1.:/@tgoiIOr_$"
SEEDS = ["lucene.x", "builtin.", "mongodb.a", "xlucene.", "tag", "category", "io", "IO", "iO", "@@x", "@a", "pattern", "patterns", "ab", "ba", "b", "abc", "xy",
         "x", "bc", "c", "Ab1x", "a.b", "a.bc", "a.1", "org.bukkit.X", "org.x", "a://b", "bac"]


def _python(p: str):
    # `$` as an anchor (at the end, before `)` or `|`), not inside a class
    return re.compile(re.sub(r"\$(?=\)|\||$)", lambda m: r"\Z", p))


def _texts(rng: random.Random, n: int):
    out = list(SEEDS)
    for _ in range(n):
        s = "".join(rng.choice(ALPHA) for _ in range(rng.randint(0, 9)))
        if rng.random() < 0.3:
            s = rng.choice(SEEDS) + s[:3]
        out.append(s)
    return out


@pytest.mark.parametrize("k", range(len(PATTERNS)))
def test_lookarounds_match_python_re(k):
    p = PATTERNS[k]
    a = Automaton(ir.Grammar({"start": regex_to_ir(p)}, "start"))
    py = _python(p)
    for s in _texts(random.Random(k), 1500):
        assert a.matches(s.encode()) == (py.search(s) is not None), (p, s)


@pytest.mark.parametrize("config", [{}, EVERY_VALID], ids=["default", "every-valid"])
def test_lookarounds_in_schemas_match_jsonschema(config):
    schemas = [
        {"type": "string", "pattern": r"^(?!tag|category)$"},
        {"type": "object", "patternProperties": {r"^(?!@@)[@a-zA-Z0-9_-]+$": {"type": "integer"}},
         "additionalProperties": False},
        {"type": "object", "additionalProperties": {"type": "string", "pattern": r"^(?![i|I][o|O])"}},
        {"$defs": {"t": {"type": "string", "pattern": r"^(?!.*://).*\.[bB][lL][fF]$"}},
         "type": "array", "items": {"$ref": "#/$defs/t"}},
        {"type": "object", "propertyNames": {"pattern": r"^(?!pattern$).*$"}},
        {"not": {"type": "string", "pattern": r"^(?=.*[A-Z])(?=.*\d)"}},
        {"anyOf": [{"type": "string", "pattern": "(?<=a)b"}, {"type": "string", "maxLength": 1}]},
    ]
    rng = random.Random(5)
    for schema in schemas:
        a = Automaton(schema_to_grammar(schema, **config))
        v = jsonschema.Draft202012Validator(schema)
        words = _texts(rng, 200) + ["x.blf", "a://x.BLF", "io", "IO", "ok"]
        docs = [w for w in words] + [{w: 1} for w in words] + [{w: "io"} for w in words] + [[w] for w in words]
        docs += [{"a": w, "b": 2} for w in words[:40]] + [{"@@": 1}, {"ok": "x"}]
        for doc in docs:
            text = json.dumps(doc)
            assert a.matches(text.encode()) == v.is_valid(doc), (schema, text)


def test_a_negative_lookahead_of_a_literal_is_the_texts_avoiding_it():
    """``(?!.*S)`` is an intersection with the texts that avoid ``S`` before the first line's end,
    not a difference: once ``S`` is read nothing is left, with no search (the whole rest of the
    pattern searched past any fuel before: ``LimitExceededError`` in the middle of a document,
    MaskBench JsonSchemaStore---aerleon-definitions)."""
    from dotjson.regex.lookarounds import _no_occurrence

    aerleon = r"^(?!.*://)(?=.{1,255}$)((.{1,63}\.){1,127}(?![0-9]*$)[a-z0-9-]+\.?)$"
    assert not any(type(x) is ir.Diff and type(x.right) is ir.Seq for x in ir.walk(regex_to_ir(r"^(?!.*://)x+$")))
    # line breaks: `.` stops at one, so what follows it may hold S (Python's `.`: \n only)
    for p in [r"^(?!.*ab)[a-c\n]*$", r"^(?!.*?a\na)[a\n]*$", r"(?!.*aba)"]:
        a = Automaton(ir.Grammar({"start": regex_to_ir(p)}, "start"))
        py = _python(p)
        for s in ["", "ab", "a\nb", "\nab", "c\nab", "cab\n", "a\na", "\n", "abab", "aba\naba", "ba"]:
            assert a.matches(s.encode()) == (py.search(s) is not None), (p, s)
    # the KMP language on its own, against a brute force over a small alphabet
    rng = random.Random(3)
    for _ in range(40):
        text = "".join(rng.choice("ab:") for _ in range(rng.randint(1, 5)))
        g = Automaton(ir.Grammar({"start": _no_occurrence(ir.chars((0x3A, 0x3A), (0x61, 0x62)), [ord(c) for c in text])},
                                 "start"))
        for _ in range(60):
            w = "".join(rng.choice("ab:") for _ in range(rng.randint(0, 9)))
            assert g.matches(w.encode()) == (text not in w), (text, w)
    # the real one, in a schema, by token: dead at `://`, no fuel spent
    a = Automaton(schema_to_grammar({"type": "string", "pattern": aerleon}))
    s = a.walk_bytes(a.start, b'"example.com')
    assert s >= 0 and a.walk_bytes(s, b'"') >= 0
    assert a.walk_bytes(a.start, b'"a://') < 0 and a.walk_bytes(a.start, b'"a.b://c.d') < 0
    assert not a.matches(b'"a://b.com"') and a.matches(b'"a.b.com"') and not a.matches(b'"a.123"')


def test_refused_lookarounds_are_named():
    for p in [r"(?:a(?=b))+c", r"(?=a)(?<=b)", r"(a(?<=a))"]:
        with pytest.raises(UnsupportedSchemaError) as e:
            schema_to_grammar({"type": "string", "pattern": p})
        assert e.value.keyword == "pattern"
    with pytest.raises(UnsupportedSchemaError, match="backreference"):
        schema_to_grammar({"type": "string", "pattern": r"(a)\1"})
