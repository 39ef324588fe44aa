"""The string spelling policy: ``spellings="canonical"`` (generation's default) and ``"any"``.

Canonical: a schema's own strings (declared keys, ``enum``/``const`` strings, ``const`` object
keys) only as ``json.dumps(s, ensure_ascii=False)`` writes them; string contents with no escape
of a character JSON lets stand raw. Every document the canonical policy allows is valid, the
every-valid configuration keeps every spelling, and ``spellings="any"`` gives it back anywhere.
"""

from __future__ import annotations

import json

import pytest

from dotjson import Index
from dotjson.automaton import Automaton
from dotjson.errors import SchemaError
from dotjson.jsonschema import schema_to_grammar

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}
# a wide object: more names than a key position writes out, so the automaton's native key set
# (its escape tables read from the policy's spellings) answers the key bytes
WIDE = [f"k{i}" for i in range(100)] + ['q"x', "n\ny", "é", "a/b", "t\u001f"]


def lang(schema, **kw):
    a = Automaton(schema_to_grammar(schema, **kw))
    return lambda text: a.matches(text.encode("utf-8"))


def canonical(doc) -> str:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


# (document text, its value): spellings of the same documents, canonical first
KEY_SPELLINGS = [
    ('{"k5":1}', True), ('{"\\u006b5":1}', False), ('{"k\\u0035":1}', False),
    ('{"q\\"x":1}', True), ('{"q\\u0022x":1}', False),
    ('{"n\\ny":1}', True), ('{"n\\u000ay":1}', False), ('{"n\\u000Ay":1}', False),
    ('{"é":1}', True), ('{"\\u00e9":1}', False),
    ('{"a/b":1}', True), ('{"a\\/b":1}', False),
    ('{"t\\u001f":1}', True), ('{"t\\u001F":1}', False),
]


@pytest.mark.parametrize("kw", [{}, {"property_order": "any"}, {"disallow_whitespace": True}],
                         ids=["schema-order", "any-order", "compact"])
@pytest.mark.parametrize("names", [["k5", 'q"x', "n\ny", "é", "a/b", "t\u001f"], WIDE], ids=["narrow", "wide"])
def test_declared_keys_have_one_spelling_by_default(kw, names):
    s = {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    m = lang(s, **kw)
    every = lang(s, **kw, spellings="any")
    for text, canon in KEY_SPELLINGS:
        assert m(text) is canon, text
        assert every(text), text  # one option away: every spelling
    # the canonical spelling is json.dumps's
    for n in names:
        assert m(canonical({n: 1}))


@pytest.mark.parametrize("names", [["k5", 'q"x', "n\ny", "é", "a/b", "t\u001f"], WIDE], ids=["narrow", "wide"])
def test_every_valid_configuration_keeps_every_spelling(names):
    s = {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    m = lang(s, **EVERY_VALID)
    for text, _ in KEY_SPELLINGS:
        assert m(text), text
    assert m('{"\\u006B5":1,"\\u00E9":2}') and m('{"x\\u0079":"\\ud83d\\ude00\\/"}')


def test_string_contents_without_gratuitous_escapes():
    m = lang({"type": "string"})
    for text in ['"q"', '"\\"\\\\\\n\\t\\r\\b\\f"', '"\\u0001\\u001F\\u001f\\u0022\\u005c\\u000A"',
                 '"é😀/"', '"\u2028"']:
        assert m(text), text
    for text in ['"\\u0071"', '"\\/"', '"\\u00e9"', '"\\ud83d\\ude00"', '"\\u2028"']:
        assert not m(text), text
        assert lang({"type": "string"}, spellings="any")(text), text
    # the same in patterns, formats and lengths
    for s in ({"type": "string", "pattern": "^[a-z]+$"}, {"type": "string", "maxLength": 3},
              {"type": "string", "format": "date"}):
        m = lang(s)
        ok = '"2024-01-02"' if "format" in s else '"abc"'
        bad = '"\\u0032024-01-02"' if "format" in s else '"\\u0061bc"'
        assert m(ok) and not m(bad), s
        assert lang(s, spellings="any")(bad), s


def test_enum_and_const_strings_as_json_dumps_writes_them():
    s = {"enum": ["x\ny", "é", 'say "hi"', "a/b", "\u001f"]}
    m, every = lang(s), lang(s, spellings="any")
    for v in s["enum"]:
        assert m(canonical(v)) and every(canonical(v))
    for text in ['"x\\u000ay"', '"\\u00e9"', '"say \\u0022hi\\u0022"', '"a\\/b"', '"\\u001F"']:
        assert not m(text) and every(text), text
    c = {"const": {"k/ey": ["é", "\t"]}}
    m = lang(c)
    assert m('{"k/ey":["é","\\t"]}')
    assert not m('{"k\\/ey":["é","\\t"]}') and not m('{"k/ey":["\\u00e9","\\t"]}') and not m('{"k/ey":["é","\\u0009"]}')
    assert lang(c, spellings="any")('{"k\\/ey":["\\u00e9","\\u0009"]}')


def test_canonical_language_stays_exact_where_strings_are_excluded():
    # an excluded enum value is excluded in every content spelling, not only its canonical one
    s = {"type": "string", "not": {"enum": ["a\nb", "c"]}}
    m = lang(s)
    for text in ['"a\\nb"', '"a\\u000ab"', '"a\\u000Ab"', '"c"']:
        assert not m(text), text
    assert m('"d"') and m('"a\\nbc"') and m('"a\\u000abc"')
    # an extra key is never a declared name in another spelling
    o = {"type": "object", "properties": {"n\ny": {"type": "integer"}}, "additionalProperties": {"type": "string"}}
    for kw in ({}, {"property_order": "any"}):
        m = lang(o, **kw)
        assert m('{"n\\ny":1}') and m('{"zz":"s","n\\ny":2}')
        assert not m('{"n\\u000ay":1}') and not m('{"n\\u000ay":"s"}') and not m('{"\\u007a":"s"}')
    wide = {"type": "object", "properties": {n: {"type": "integer"} for n in WIDE},
            "additionalProperties": {"type": "string"}}
    m = lang(wide)
    assert m('{"zz":"s"}') and m('{"n\\ny":1}') and not m('{"n\\u000ay":"s"}') and not m('{"q\\u0022x":"s"}')
    # propertyNames by enum: the names in any content spelling of theirs (contents, not literals)
    p = {"type": "object", "propertyNames": {"enum": ["x\ty", "z"]}, "additionalProperties": {"type": "integer"}}
    m = lang(p)
    assert m('{"x\\ty":1}') and m('{"x\\u0009y":1}') and m('{"z":1}')
    assert not m('{"\\u007a":1}') and not m('{"w":1}')


def test_canonical_documents_are_json_dumps_output(smollm2_vocab):
    # every document json.dumps writes for a valid value is in the default language, whitespace
    # or not, and the compact one in the compact language
    s = {"type": "object", "properties": {"na\"me": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["é", "a\\b"]}}},
         "required": ["na\"me"]}
    doc = {"na\"me": "line\nnext \"q\" \u0007 😀 /", "tags": ["é", "a\\b"]}
    index = Index(s, smollm2_vocab)
    compact = Index(s, smollm2_vocab, disallow_whitespace=True)
    assert index.accepts(json.dumps(doc, ensure_ascii=False, indent=2))
    assert index.accepts(canonical(doc)) and compact.accepts(canonical(doc))
    # ensure_ascii=True escapes é and the emoji: not canonical, but one option away
    ascii_text = json.dumps(doc, separators=(",", ":"))
    assert not compact.accepts(ascii_text)
    assert Index(s, smollm2_vocab, disallow_whitespace=True, spellings="any").accepts(ascii_text)
    assert Index(s, smollm2_vocab, **EVERY_VALID).accepts(ascii_text)
    assert index._options["spellings"] == "canonical"
    assert Index(s, smollm2_vocab, **EVERY_VALID)._options["spellings"] == "any"


def test_spellings_mode_is_checked(smollm2_vocab):
    with pytest.raises(SchemaError, match="spellings must be one of"):
        schema_to_grammar({"type": "string"}, spellings="raw")
    with pytest.raises(SchemaError, match="spellings must be one of"):
        Index({"type": "string"}, smollm2_vocab, spellings=1)


@pytest.mark.parametrize("spellings", ["canonical", "any"])
def test_a_saved_index_keeps_its_spellings(smollm2_vocab, tmp_path, spellings):
    # an object in any order is a rule family built lazily after loading too: it must spell
    # its names under the policy it was saved with
    s = {"type": "object", "properties": {n: {"type": "integer"} for n in WIDE}}
    index = Index(s, smollm2_vocab, property_order="any", spellings=spellings)
    assert index.accepts('{"k5":1}')
    index.serialize_to_disk(tmp_path / "ix")
    again = Index.deserialize_from_disk(tmp_path / "ix", smollm2_vocab)
    for text, canon in KEY_SPELLINGS + [('{"k7":1,"\\u00e9":2}', False), ('{"k7":1,"é":2}', True)]:
        assert again.accepts(text) is (canon or spellings == "any"), text
