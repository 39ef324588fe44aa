"""Rule names, and so an index's grammar text, depend on the schema alone, not on what the process
compiled before: schema A compiled, then B, then A again gives A the same rules (names and
bodies, built lazily in the automaton's order and all of them) and the same Lark text.

What could break it: the process-wide caches of languages shared across schemas (numeric bounds'
automata, encoded string languages, patterns); a cache hit must count the names a build counts
(``numbers.NumberBuilder``: a bound's language from the cache counts one name, as its build does).
"""

from __future__ import annotations

import pytest
from perf_module import perf_module

from dotjson.grammar import to_lark
from dotjson.jsonschema import schema_to_grammar

# numbers under bounds (a process-wide cache of their automata), a format and a pattern (of
# encoded languages), objects in both orders, an array, a reference
A = {
    "type": "object",
    "properties": {
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 99.25},
        "when": {"type": "string", "format": "date-time"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "maxItems": 4},
        "size": {"type": "integer", "minimum": -40, "maximum": 40, "multipleOf": 4},
    },
    "required": ["age", "when"],
    "$defs": {"tag": {"type": "object", "properties": {"k": {"type": "string", "maxLength": 8},
                                                       "v": {"type": "integer", "minimum": 1}}}},
}
# B shares A's bounds, format and pattern (so that a second A finds them in the caches), and
# more of its own before them
B = {
    "type": "array",
    "items": {
        "anyOf": [
            {"type": "integer", "minimum": 7, "maximum": 77},
            {"type": "integer", "minimum": 0, "maximum": 150},
            {"type": "number", "exclusiveMinimum": 0.5, "maximum": 99.25},
            {"type": "string", "format": "date-time"},
            {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
            {"type": "integer", "minimum": 1},
        ]
    },
}

CONFIGS = [{}, {"property_order": "any", "close_objects": False, "whitespace": "json"}]


def _clear_process_caches():
    """Empty the caches that schemas share within a process, so that the first A below builds
    what the second finds there."""
    from dotjson.jsonschema import numbers, values

    numbers._NUMBER_LANGUAGES.clear()
    values._ENC_CACHE.clear()
    values._REGEX_CACHE.clear()


_DIGEST = perf_module("rule_digest")


def _lazy_digest(schema, options) -> str:
    """The rules as the automaton would ask for them (breadth first from ``start``), names and
    bodies (``perf/rule_digest.py``'s digest)."""
    return _DIGEST.digest(schema, options, 400)


def _text(schema, options) -> str:
    return to_lark(schema_to_grammar(schema, **options))


@pytest.mark.parametrize("options", CONFIGS, ids=["default", "every-valid"])
def test_a_schema_compiles_to_the_same_rules_after_another(options):
    if options:  # (the every-valid configuration's exponent numbers have no Lark text)
        _clear_process_caches()
        first = _lazy_digest(A, options)
        _lazy_digest(B, options)
        assert _lazy_digest(A, options) == first
        return
    _clear_process_caches()
    first, first_text = _lazy_digest(A, options), _text(A, options)
    _lazy_digest(B, options)
    _text(B, options)
    assert _lazy_digest(A, options) == first
    assert _text(A, options) == first_text


def test_an_index_grammar_is_the_same_after_another_index(llama3_vocab, llama3_tokenizer):
    # through Index: the automaton asks for rules in its own order as a document is decoded
    # (head masks shared by every index of a vocabulary may spare it some), and the text is
    # rendered from the rules built so far and then the rest
    from dotjson import Guide, Index

    doc = '{"age": 42, "when": "2024-01-02T03:04:05Z", "tags": [{"k": "a", "v": 3}], "size": 8}'
    ids = list(llama3_tokenizer.encode(doc, add_special_tokens=False))

    def run(schema, decode=False):
        ix = Index(schema, llama3_vocab, close_objects=False)
        if decode:
            guide = Guide(ix, 1)
            ts = guide.get_start_tokensets()
            for t in ids:
                assert ts.contains(t)[0]
                ts = guide.get_next_tokensets([t])
            assert ts.contains(llama3_vocab.eos_token_ids[0])[0]
        return ix.grammar

    _clear_process_caches()
    first = run(A, decode=True)
    run(B)
    assert run(A, decode=True) == first
