"""Alternations of texts' spellings built from their characters (``LazyRules.texts_of``).

An open object's undeclared key is any key but the declared names: the IR is ``Diff(any key,
alt(spellings of each name))``, one node per character of every name. The compiler registers
that alternation as the spellings of the names (``text_alts``), and the automaton writes its
builder program from the characters' terms at once (``Rules._texts_program``) instead of
walking the tree. The reference is the same index with nothing registered: the masks and steps
along real documents must be the same.
"""

from __future__ import annotations

import pytest

from dotjson import Index, ir

NAMES = ["requireCurlyBraces", "requireSpaceAfterKeywords", "disallowMultipleVarDecl", "validateIndentation",
         "a", "id", "maximumLineLength", "disallowTrailingWhitespace", "requireSpacesInFunction", "esnext"]
SCHEMA = {"type": "object", "properties": {n: {"type": ["boolean", "integer", "string"]} for n in NAMES}}
DOCS = [
    '{"requireCurlyBraces": true, "unknownKey": 3, "a": "x", "requireCurly": false}',
    '{"b":1,"disallowMultipleVarDecl":"strict","id":"z","validateIndentationX":[1,{"a":2}]}',
]


def _walk(ix, ids):
    """The masks along ``ids`` and whether EOS ends them (state ids are the store's own: terms
    made in another order number the states otherwise)."""
    out, s = [], ix.initial_state
    for t in ids:
        out.append(ix.mask(s).tobytes())
        s = ix.next_state(s, t)
        assert s >= 0
    out.append(ix.mask(s).tobytes())
    return out, ix.is_accepting(s)


@pytest.mark.parametrize("order", ["schema", "any"])
def test_the_names_alternation_built_from_its_characters_masks_as_its_walk(llama3_vocab, llama3_tokenizer,
                                                                          order, monkeypatch):
    walks = []
    ix = Index(SCHEMA, llama3_vocab, close_objects=False, property_order=order)
    for doc in DOCS:
        walks.append(_walk(ix, llama3_tokenizer.encode(doc, add_special_tokens=False)))
    assert ix._auto.rules._char_luts, "the names' alternation was not built from its characters"
    monkeypatch.setattr(ir.LazyRules, "texts_of", lambda self, node: None)
    ref = Index(SCHEMA, llama3_vocab, close_objects=False, property_order=order)
    assert not ref._auto.rules._char_luts
    for doc, walked in zip(DOCS, walks):
        assert _walk(ref, llama3_tokenizer.encode(doc, add_special_tokens=False)) == walked


def test_only_printable_ascii_names_of_two_or_more_are_registered():
    """Other names (a character outside printable ASCII, a single name: no alternation) keep
    the walk of their tree."""
    from dotjson.jsonschema import schema_to_grammar

    for props, registered in ((NAMES, True), (["é", "abc"], False), (["only"], False), (["x\ty", "z"], False)):
        g = schema_to_grammar({"type": "object", "properties": {n: {} for n in props}}, close_objects=False)
        tr = g.rules._src
        g.rules.force()
        assert bool(tr.text_alts) is registered, props
