"""Token masks inside arrays of distinct strings (issue 29, :mod:`dotjson.jsonschema.unique_strings`).

The reference is the family's generic walk (``Masker._family_masks = False``: a rule per token
prefix an item may hold, exact by construction, affordable on a small vocabulary): both masks
are compared at every state of random walks over a vocabulary of the tokens that can tell a
relaxed state from the exact one (quotes closing an item and opening the next, ``","``,
``",""``, escapes, a surrogate pair's halves, plain tokens that spell a value read), in the
default configuration and the every-valid one; every document a walk finishes is checked by
``jsonschema``. On Llama 3 the mask is checked token by token against the automaton's own walk.
"""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

from dotjson import Index, Vocabulary
from dotjson.jsonschema.unique_strings import string_content
from naive import bits as _bits, generic_walk_index, walk_against_reference

TOKS = ['"', '",', '", "', '","', '"]', '"],', '"]}', '""', '"",', '",""', '"a"', '"ab"', 'ab', 'a', 'b', 'c', 'abc',
        '\\u', '\\u00', '0062', '62', '0', '6', '2', '\\"', '\\\\', '\\', 'é', '["', '[', ' [', ' "', ']', '],', '}', ',',
        ' ', '\n', '\\ud83d', '\\ude80', 'ab"', 'b"', '"x', 'x"]', '","a', '", "ab"', '"a","b"]', '{"', 'k', '":', '": ',
        'x', 'y', '\\n', 'u', 'd', 'e', '8', '3', '"a', '"b', '"c', ' ]', '"]]', '[]', '{', '"k"', ':', '1', '2]', ', ',
        ',"', 'n', '"n"', ': 1}', '"a"]', 'é"', '\\u00e9']
TOKS = list(dict.fromkeys(TOKS))
EOS = len(TOKS)

SCHEMAS = [
    {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "maxLength": 2}, "uniqueItems": True, "minItems": 1, "maxItems": 3},
    {"type": "object", "properties": {"k": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                                      "n": {"type": "integer"}}},
    # a later position with few values, owed by minItems (its values are dangerous for the first)
    {"type": "array", "prefixItems": [{"type": "string"}, {"enum": ["a", "ab", "é"] + [f"q{i}" for i in range(300)]}],
     "items": {"type": "string", "maxLength": 3}, "uniqueItems": True, "minItems": 2},
    {"type": "array", "prefixItems": [{"type": "string"}, {"enum": ["a", "b"] + [f"q{i}" for i in range(300)]},
                                      {"type": "string", "pattern": "^[ab]$"}],
     "items": False, "uniqueItems": True, "minItems": 3},
    {"type": "array", "items": {"type": "string", "pattern": "^[abc]*$"}, "uniqueItems": True, "minItems": 2},
    {"anyOf": [{"type": "array", "items": {"type": "string"}, "uniqueItems": True},
               {"type": "array", "items": {"type": "integer"}}]},
]
EVERY_VALID = {"bounds": "schema", "close_objects": False, "property_order": "any", "whitespace": "json"}


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.from_tuples(TOKS + ["<eos>"], list(range(EOS + 1)), EOS, special_token_ids=[EOS])


@pytest.mark.parametrize("config", ["default", "every-valid"])
@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_masks_equal_the_generic_walk(vocab, k, config):
    schema = SCHEMAS[k]
    options = EVERY_VALID if config == "every-valid" else {}
    index, ref = Index(schema, vocab, **options), generic_walk_index(schema, vocab, **options)
    validator = jsonschema.Draft202012Validator(schema)
    finished = walk_against_reference(index, ref, TOKS, EOS, lambda text: validator.is_valid(json.loads(text)),
                                      seeds=7, steps=22, label=(schema, config))
    assert finished or k == 2  # (the walks reach complete documents)


def test_the_generic_walk_is_not_taken(vocab):
    # the masks inside the array come from the construction: a state inside an item is one rule
    # of the family, not a rule per token prefix (the reference makes ~13x more rules here)
    schema = SCHEMAS[0]
    index, ref = Index(schema, vocab), generic_walk_index(schema, vocab)
    for ix in (index, ref):
        s = ix.initial_state
        for t in ['["', 'ab', '", "', 'a', 'b']:
            ix.mask(s)
            s = ix.next_state(s, TOKS.index(t))
        ix.mask(s)
    assert len(index._auto.rules.names) * 3 < len(ref._auto.rules.names)


def test_string_content():
    assert string_content(b'ab"') == (b"ab", True, 2)
    assert string_content(b'a\\"b') == (b'a"b', True, -1)
    assert string_content(b'a\\u00') == (b"a", False, -1)
    assert string_content(b'\\u00e9') == ("é".encode(), True, -1)
    assert string_content(b'\\ud83d') == (b"", False, -1)  # (its pair may follow)
    assert string_content(b'\\ud83d\\ude80"') == ("\U0001f680".encode(), True, 12)
    assert string_content(b'x\\\\"y') == (b"x\\", True, 3)
    assert string_content(b'\\') == (b"", False, -1)


def test_llama3_masks_inside_an_array_of_distinct_tags(llama3_vocab, llama3_tokenizer):
    # the default configuration: tags, teacher-forced; at "ab", "cd", "ab the tokens that would
    # end the item again are refused, the ones that go on are not; a sample of the vocabulary's
    # tokens (every one holding a quote among them) against the automaton's own walk
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                                        "uniqueItems": True, "minItems": 1}},
              "required": ["tags"]}
    index = Index(schema, llama3_vocab)
    doc = '{"tags": ["ab", "cd", "ab'
    s = index.initial_state
    for t in llama3_tokenizer.encode(doc, add_special_tokens=False):
        assert index.mask(s)[t >> 5] >> (t & 31) & 1, t
        s = index.next_state(s, t)
    mask = _bits(index.mask(s))
    ids = {llama3_vocab.token_bytes(t): t for t in range(llama3_vocab.max_token_id())}
    for text in (b'"', b'",', b'"]', b'"]}'):
        assert ids[text] not in mask, text
    goes_on = [x for x in (b'ab', b' "', b'\\n', b'abc', b'ing') if x in ids]
    assert len(goes_on) >= 4
    for text in goes_on:
        assert ids[text] in mask, text
    rng = random.Random(29)
    quoted = [t for b, t in ids.items() if b'"' in b]
    sample = rng.sample(quoted, 150) + rng.sample(range(llama3_vocab.max_token_id()), 150)
    a = index._auto
    for t in sample:
        tb = llama3_vocab.token_bytes(t)
        want = bool(tb) and not llama3_vocab.is_special(t) and a.walk_bytes(s, tb) >= 0
        assert (t in mask) == want, tb


def test_a_saved_index_masks_the_same(vocab, tmp_path):
    schema = SCHEMAS[1]
    index = Index(schema, vocab)
    s = index.initial_state
    for t in ['["', 'ab', '", "']:
        s = index.next_state(s, TOKS.index(t))
    index.serialize_to_disk(tmp_path / "u")
    loaded = Index.deserialize_from_disk(tmp_path / "u", vocab)
    ref = generic_walk_index(schema, vocab)
    for prefix in ['["ab", "', '["ab", "a', '["ab", "ab', '["ab", "a"']:
        states = [ix._walk_text(prefix.encode()) for ix in (index, loaded, ref)]
        got = [_bits(ix.mask(st)) for ix, st in zip((index, loaded, ref), states)]
        assert got[0] == got[1] == got[2], prefix


@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_a_token_step_is_the_automatons_walk(vocab, k):
    # the family's own step (a rule for the item's new bytes, no body per byte) lands on the very
    # state the automaton's byte walk reaches (the same term), or refuses where it dies
    index = Index(SCHEMAS[k], vocab)
    a = index._auto
    stepped = 0
    for seed in range(6):
        rng = random.Random(seed)
        s = index.initial_state
        for _ in range(20):
            for t in range(EOS):
                got = index._masker.family_walk(s, TOKS[t].encode())
                if got is not None:
                    stepped += 1
                    want = a.walk_bytes(s, TOKS[t].encode())
                    assert got == want or (got < 0 and want < 0), (TOKS[t], a.describe(s))
            choices = sorted(_bits(index.mask(s)) - {EOS})
            if not choices:
                break
            s = index._step(s, rng.choice(choices))
    assert stepped > 100


def test_one_family_serves_two_indexes(vocab):
    # an IR grammar compiled once may serve indexes on different vocabularies: what the family
    # keeps for masks is kept per index (token ids differ), so each mask is its own reference's
    from dotjson.jsonschema import schema_to_grammar

    other = Vocabulary.from_tuples(list(reversed(TOKS)) + ["<eos>"], list(range(EOS + 1)), EOS,
                                   special_token_ids=[EOS])
    g = schema_to_grammar(SCHEMAS[1])
    a, b = Index.from_grammar(g, vocab), Index.from_grammar(g, other)
    assert a._auto.grammar.families[0] is b._auto.grammar.families[0]
    for prefix in [b'["ab", "', b'["ab", "a', b'["a", "ab"', b'[']:
        texts = []
        for ix, toks in ((a, TOKS), (b, list(reversed(TOKS)))):
            ref = generic_walk_index(SCHEMAS[1], ix.vocabulary)
            got = _bits(ix.mask(ix._walk_text(prefix)))
            assert got == _bits(ref.mask(ref._walk_text(prefix))), prefix
            texts.append(sorted(toks[t] for t in got if t < EOS))
        assert texts[0] == texts[1], prefix


@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_texts_read_through_the_family_are_the_automatons_verdicts(vocab, k):
    # Index.accepts / check read a text a token's length at a time: an item the text reaches
    # is stepped by the family at once (Masker.family_walk); the verdicts and the first refused
    # byte are the byte walk's (the reference index walks every byte through the rules)
    schema = SCHEMAS[k]
    index, ref = Index(schema, vocab), generic_walk_index(schema, vocab)
    rng = random.Random(290 + k)
    items = ['"a"', '"ab"', '"b"', '""', '"\\u0061"', '"x\\"y"', '"é"', '"abc"', '"ba"', '"ab "']
    for _ in range(150):
        arr = "[" + rng.choice([",", ", "]).join(rng.choice(items) for _ in range(rng.randint(0, 5))) + "]"
        text = '{"k": ' + arr + "}" if k == 2 else arr
        got, want = index.check(text), ref.check(text)
        assert (got.ok, got.position) == (want.ok, want.position), text
    assert index.accepts(json.dumps(["ab", "a", "b"] if k != 2 else {"k": ["ab", "a"]}))
