"""``uniqueItems`` (issue 29): over numbers, a rule family whose state is the set of values read
(exact rationals: ``1``, ``1.0`` and ``10e-1`` are one value); over any values (strings, objects,
arrays, mixed; ``bounds="schema"``), a rule family over bytes whose state is the values read and
the current item's bytes (``"\u0061"`` = ``"a"``, objects in any key order).

The oracle is ``jsonschema`` with the document's numbers read exactly
(:func:`tests.test_numbers_exponents.reference`); every verdict of dotjson's automaton is
compared with it, in the "every valid document" configuration (every spelling) and in the
default one (plain notation: exact there, and never an invalid document).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema import schema_to_grammar
from test_numbers_exponents import EVERY_VALID, accepts, automaton, reference

SCHEMAS = [
    {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 3, "multipleOf": 0.5},
     "uniqueItems": True, "minItems": 2},
    {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 3}, "uniqueItems": True, "minItems": 3},
    {"type": "array", "items": {"type": "number", "not": {"enum": [2]}}, "uniqueItems": True, "maxItems": 3},
]


def _item(rng: random.Random) -> str:
    v = rng.choice([0, 1, 1, 2, 3, 0.5, 1.5, 2.5, -1, 10, 100])
    forms = [str(v), f"{float(v)}", f"{float(v)}0", f"{v}e0", f"{float(v) * 10}e-1", f"{float(v) / 10}E1"]
    if v == 0:
        forms.append("-0")
    return rng.choice(forms)


def _array(rng: random.Random) -> str:
    return "[" + ",".join(_item(rng) for _ in range(rng.randint(0, 4))) + "]"


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_arrays_of_distinct_numbers_match_jsonschema(k):
    schema = SCHEMAS[k]
    rng = random.Random(29 + k)
    texts = {_array(rng) for _ in range(60)} | {"[]", "[1,1.0]", "[1,10e-1]", "[2,3,1]", "[0,-0]", "[0.5,1,1.5]",
                                                "[3.0,1,20e-1]", "[1,2.00,3]"}
    for text, want in _every_valid_verdicts(schema, texts, at_least=3):
        got = accepts(schema, text)
        if "e" in text.lower():
            assert not got or want, (schema, text)  # plain notation: never an invalid document
        else:
            assert got == want, (schema, text, want)


def _every_valid_verdicts(schema, texts, at_least: int):
    """``(text, jsonschema's verdict)`` of each text, once the every-valid configuration's
    verdict is checked equal; at least ``at_least`` of them valid."""
    out = [(text, reference(schema, text)) for text in sorted(texts)]
    for text, want in out:
        assert accepts(schema, text, **EVERY_VALID) == want, (schema, text, want)
    assert sum(w for _, w in out) >= at_least, schema  # (the texts hold valid arrays)
    return out


def test_a_prefix_is_dead_when_only_seen_values_complete_it():
    # 1..3 integers, two read: the third item can only be the one value left
    s = {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 3}, "uniqueItems": True}
    a = accepts
    assert a(s, "[3,1,2]") and not a(s, "[3,1,1]") and not a(s, "[3,1,2,1]")
    # the language is empty when minItems asks for more values than the items allow
    with pytest.raises(Exception, match="accepts no JSON value"):
        schema_to_grammar({**s, "minItems": 4})


def test_index_masks_and_saves(tiny_bpe_vocab, tmp_path):
    from dotjson import Index

    schema = {"type": "object", "properties": {"ids": SCHEMAS[0]}, "required": ["ids"]}
    for kw in ({}, EVERY_VALID):
        index = Index(schema, tiny_bpe_vocab, **kw)
        assert index.accepts('{"ids": [3, 1, 20]}') and not index.accepts('{"ids": [3, 1, 3]}')
        index.serialize_to_disk(tmp_path / "u")
        loaded = Index.deserialize_from_disk(tmp_path / "u", tiny_bpe_vocab)
        assert loaded.accepts('{"ids": [5, 7]}') and not loaded.accepts('{"ids": [5, 7, 5]}')
    ev = Index(schema, tiny_bpe_vocab, **EVERY_VALID)
    assert ev.accepts('{"ids": [1, 2e0]}') and not ev.accepts('{"ids": [1, 1e0]}')


def test_items_whose_objects_may_repeat_a_key_are_named_errors_with_generation_bounds():
    # (strings are masked by tests/test_unique_strings.py's construction in every configuration;
    # values whose objects hold each key once by tests/test_unique_any.py's)
    schema_to_grammar({"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    for items in ({"anyOf": [{"type": "integer"}, {"type": "string"}]},
                  {"type": "object", "properties": {"a": {"type": "integer"}}},
                  {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "boolean"}}},
                   "additionalProperties": False},
                  {"type": "array", "items": {"type": "integer"}}):
        schema_to_grammar({"type": "array", "items": items, "uniqueItems": True})
    for items in ({}, {"type": "object"}, {"anyOf": [{"type": "integer"}, {"type": "object"}]},
                  {"type": "object", "properties": {"a": {}}},
                  {"type": "object", "properties": {"a": {"type": "integer"}}, "patternProperties": {"^x": {}}},
                  {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True},
                  {"type": "array", "items": {"type": "object"}}):
        with pytest.raises(UnsupportedSchemaError, match="uniqueItems over items whose objects may repeat a key.*"
                                                         "bounds='schema'") as ei:
            schema_to_grammar({"type": "array", "items": items, "uniqueItems": True})
        assert ei.value.pointer == "/uniqueItems", json.dumps(items)
        schema_to_grammar({"type": "array", "items": items, "uniqueItems": True}, bounds="schema")


ANY_SCHEMAS = [
    {"uniqueItems": True},
    {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "minItems": 2, "maxItems": 4},
    {"prefixItems": [{"type": "boolean"}, {"type": "boolean"}], "uniqueItems": True},
    {"type": "array", "uniqueItems": True,
     "items": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
    # (nine strings: over the eager finite-set limit of eight, so the family decides)
    {"type": "array", "items": {"enum": list("abcdefghi")}, "uniqueItems": True, "minItems": 8},
]
_VALUES = ['"a"', '"\\u0061"', '"\\u0041"', '"A"', '"b"', '""', '"é"', '"\\u00e9"', '"\\u00E9"', "1", "1.0",
           "10e-1", "true", "false", "null", "0", "-0", "[]", "[1]", "[1.0]", "[ 1 ]", "{}", '{"x":1}', '{"x":1.0}',
           '{"x":1,"y":2}', '{"y":2,"x":1}', '{"x":2}', '{"x":{"y":[true]}}', '{"x":{"y":[false]}}']


def _any_array(rng: random.Random) -> str:
    items = [rng.choice(_VALUES).replace("\\\\", "\\") for _ in range(rng.randint(0, 4))]
    return "[" + rng.choice([",", ", ", " ,\n"]).join(items) + "]"


@pytest.mark.parametrize("k", range(len(ANY_SCHEMAS)))
def test_arrays_of_distinct_values_match_jsonschema(k):
    # every verdict on random arrays of values in several spellings (escapes, key orders, number
    # forms, whitespace) is jsonschema's, with the every-valid configuration
    schema = ANY_SCHEMAS[k]
    rng = random.Random(290 + k)
    texts = {_any_array(rng) for _ in range(80)} | {'["a","\\u0061"]', '[{"x":1,"y":2},{"y":2,"x":1}]', "[1,1.0]",
                                                   "[true,1]", "[0,false]", "[[1],[1.0]]", '["a","b"]', "[true,false]",
                                                   '["a","b","c","d","e","f","g","h"]', '["i","h","g","f","e","d","c","b"]'}
    _every_valid_verdicts(schema, texts, at_least=2)


def test_a_string_item_is_dead_when_only_values_read_complete_it():
    # items "a" or "b": after "a", a second item beginning "a (or \u0061) can only be "a" again
    s = {"type": "array", "items": {"type": "string", "pattern": "^[ab]$"}, "uniqueItems": True}
    a = automaton(s, **EVERY_VALID)
    assert a.is_prefix(b'["a","') and a.is_prefix(b'["a","\\u006') and a.is_prefix(b'["a","b"')
    assert not a.is_prefix(b'["a","a') and not a.is_prefix(b'["a","\\u0061') and not a.is_prefix(b'["a","b","')
    assert a.matches(b'["\\u0062", "a"]') and not a.matches(b'["\\u0062", "b"]')
    with pytest.raises(Exception, match="accepts no JSON value"):
        schema_to_grammar({**s, "minItems": 3}, bounds="schema")


def test_items_with_long_completions_beside_free_members(tiny_bpe_vocab):
    # JsonSchemaStore---tson (issue 32): distinct objects with required members beside free ones;
    # a search for completions by length spends its budget on the free members' short values
    # before it reaches `{"frequency ratio":0,"amplitude weight":0}` (LimitExceededError at the
    # first mask before): with nothing read the array is live whenever the item is, and a
    # depth-first search finds the completions the second item needs (a repeated item costs
    # ~3 s here: repeated values are checked in test_arrays_of_distinct_values_match_jsonschema)
    from dotjson import Index

    import jsonschema

    item = {"type": "object", "required": ["frequency ratio", "amplitude weight"], "additionalProperties": True,
            "properties": {"frequency ratio": {"type": "number"}, "amplitude weight": {"type": "number"},
                           "name": {"type": "string"}}}
    schema = {"type": "object", "properties": {"partials": {"type": "array", "minItems": 1, "uniqueItems": True,
                                                            "items": item}}}
    index = Index(schema, tiny_bpe_vocab, close_objects=False)
    assert index.mask(index.initial_state).any()
    docs = [{"partials": [{"frequency ratio": 1, "amplitude weight": 2}]},
            {"partials": [{"frequency ratio": 1, "amplitude weight": 2}, {"amplitude weight": 2, "frequency ratio": 1.5}]},
            {"partials": [{"frequency ratio": 1}]}, {"partials": []}, {"partials": [{"name": "x"}]}]
    a = automaton(schema, **EVERY_VALID)
    for d in docs:
        assert a.matches(json.dumps(d).encode()) == jsonschema.Draft202012Validator(schema).is_valid(d), d



def test_an_arrays_start_is_answered_by_the_grammars_analysis(tiny_bpe_vocab, monkeypatch):
    """Whether an array of distinct items can start (nothing read, at most one item owed) is
    whether its first item's language is empty: the grammar's own analysis answers it, and no
    item automaton is built for an array the document has not reached (JsonSchemaStore---tson's
    first mask: an `anyOf` branch requiring such an array). Masks at every byte of documents that
    enter the arrays (distinct items, a repeated one, an item that has no value) equal those of an
    index that builds the item automaton to answer (the family not bound to the analysis)."""
    from dotjson import Index
    from dotjson.jsonschema.statefamily import _Family
    from dotjson.jsonschema.unique import UniqueValues

    from naive import assert_same_masks

    item = {"type": "object", "required": ["f"], "properties": {"f": {"type": "integer"}, "n": {"type": "string"}}}
    dead = {"type": "object", "required": ["x"], "properties": {"x": False}}
    schema = {"type": "object", "anyOf": [
        {"required": ["a"], "properties": {"a": {"type": "array", "minItems": 1, "uniqueItems": True, "items": item}}},
        {"required": ["b"], "properties": {"b": {"type": "array", "uniqueItems": True, "items": item}}},
        {"required": ["d"], "properties": {"d": {"type": "array", "minItems": 1, "uniqueItems": True, "items": dead}}},
    ]}
    fast = Index(schema, tiny_bpe_vocab, close_objects=False)
    fast.mask(fast.initial_state)
    fams = [f for f in fast._auto.grammar.families if isinstance(f, UniqueValues)]
    assert fams and all(f._auto is None for f in fams)  # (no item automaton at the first mask)
    monkeypatch.setattr(UniqueValues, "bind", _Family.bind)  # the reference: the automaton answers
    slow = Index(schema, tiny_bpe_vocab, close_objects=False)
    docs = ['{"a":[{"f":1},{"f":2,"n":"x"}]}', '{"a":[{"f":1},{"f":1}]}', '{"b":[]}', '{"b":[{"f":3}]}',
            '{"d":[{"x":1}]}', '{"d":[]}', '{"a":[]}']
    for doc in docs:
        assert_same_masks(fast, slow, doc.encode())
    assert fast.accepts(docs[0]) and not fast.accepts(docs[1]) and fast.accepts(docs[2])
    assert not fast.accepts(docs[4]) and not fast.accepts(docs[5]) and not fast.accepts(docs[6])
    # a recursive schema is refused as before, at the first mask
    rec = {"$defs": {"t": {"type": "object", "properties": {"kids": {"type": "array", "minItems": 1,
           "uniqueItems": True, "items": {"$ref": "#/$defs/t"}}}, "required": ["kids"]}}, "$ref": "#/$defs/t"}
    monkeypatch.undo()
    for bound in (True, False):
        if not bound:
            monkeypatch.setattr(UniqueValues, "bind", _Family.bind)
        try:
            ix = Index(rec, tiny_bpe_vocab, close_objects=False)
            got = ("mask", bool(ix.mask(ix.initial_state).any()))
        except Exception as e:  # noqa: BLE001 - compared between both paths
            got = (type(e).__name__, "")
        if bound:
            want = got
        else:
            assert got == want

def test_every_valid_index_checks_and_saves(tiny_bpe_vocab, tmp_path):
    from dotjson import Index

    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                                        "uniqueItems": True}}, "required": ["tags"]}
    index = Index(schema, tiny_bpe_vocab, **EVERY_VALID)
    assert index.accepts('{"tags": ["a", "b"]}') and not index.accepts('{"tags": ["a", "\\u0061"]}')
    r = index.check('{"tags": ["ab", "a", "ab"]}')
    assert not r.ok and r.position == len('{"tags": ["ab", "a", "ab') and '\'"\'' not in r.expected
    index.serialize_to_disk(tmp_path / "u")
    loaded = Index.deserialize_from_disk(tmp_path / "u", tiny_bpe_vocab)
    assert loaded.accepts('{"tags": ["x", "xy", "y"]}') and not loaded.accepts('{"tags": ["x", "y", "x"]}')


def _first_id_of_bytes(vocab) -> dict:
    """The lowest token id of each token text of ``vocab``."""
    ids: dict = {}
    for t in range(vocab.max_token_id()):
        ids.setdefault(vocab.token_bytes(t), t)
    return ids


def test_llama3_mask_at_an_items_end(llama3_vocab, llama3_tokenizer):
    # the mask of a fresh state at the end of an item: "1" after 1 and 2 cannot end there ("]",
    # "]}", ","), it can grow ("0": 10); "1." only completes to 1 or a non-integer in plain
    # notation, while with exponents "1.5e1" is the new integer 15 ("]," : another member, only
    # in the open objects of the every-valid configuration)
    from dotjson import Guide, Index

    schema = {"type": "object", "properties": {"ids": SCHEMAS[0]}, "required": ["ids"]}
    ids = _first_id_of_bytes(llama3_vocab)
    for kw in ({}, EVERY_VALID):
        index = Index(schema, llama3_vocab, **kw)
        for prefix, want in (("1", {b"0", b"00"} | ({b".", b"e"} if kw else set())),
                             ("3", {b"0", b"00", b",", b"]", b"]}"} | ({b".", b"e", b"],"} if kw else {b"."}))):
            guide = Guide(index, batch_size=1)
            ts = guide.get_start_tokensets()
            for t in llama3_tokenizer.encode('{"ids": [1, 2, ' + prefix, add_special_tokens=False):
                ts = guide.get_next_tokensets([t])
            probe = (b"0", b"00", b",", b"]", b"]}", b"],", b".", b"e")
            allowed = {tok for tok in probe if ts.contains(ids[tok])[0]}
            assert allowed == want, (kw, prefix, allowed)


@pytest.mark.slow
def test_hypothesis_instances_are_accepted():
    # (slow: ~4 s) random valid documents of the issue's schemas (hypothesis-jsonschema), each accepted in the
    # every-valid configuration, and in the default one when written in plain notation
    from test_numbers_exponents import BIG_DIVISORS, hypothesis_instances_accepted

    schemas = SCHEMAS[:3] + [BIG_DIVISORS[1], {"type": "array", "items": BIG_DIVISORS[0], "uniqueItems": True}]
    hypothesis_instances_accepted(schemas, 8, default=True)


@pytest.mark.slow
def test_hypothesis_instances_of_distinct_values_are_accepted():
    from test_numbers_exponents import hypothesis_instances_accepted

    # any values, in the every-valid configuration (items of a few hundred bytes at most: a rule per
    # byte, each asking whether the item can still differ from those read, ~1 ms per byte there)
    small = {"type": "object", "maxProperties": 3, "properties": {"x": {"type": "integer"}}, "required": ["x"],
             "additionalProperties": {"type": ["string", "boolean", "array"], "maxLength": 6, "maxItems": 2,
                                      "items": {"type": "integer"}}}
    hypothesis_instances_accepted(ANY_SCHEMAS[1:3] + ANY_SCHEMAS[4:] + [
        {"type": "array", "uniqueItems": True, "items": small},
        {"type": "array", "uniqueItems": True, "items": {"type": ["string", "number", "array"], "maxLength": 8,
                                                         "maxItems": 3, "items": {"type": "boolean"}}}], 20)


def _unique_values_family(index):
    from dotjson.jsonschema.unique import UniqueValues

    (fam,) = [f for f in index._auto.grammar.families if isinstance(f, UniqueValues)]
    return fam


def test_a_mask_inside_free_items_is_refused_at_once_and_the_index_stays_usable(llama3_vocab, llama3_tokenizer):
    # issue 29: a token mask from inside a free item of an array of distinct objects that may
    # repeat a key (here, in a string under a member whose value differs from an item read: a
    # later member of the name may replace it) walks nearly every token, a family rule per byte
    # of each (~40,000 on Llama 3): refused once that one mask has made MAX_MASK_ITEM_TEXTS item
    # texts (it made 256 texts of one length first before, 3-4 s, and those counts never came
    # down: index.check then refused valid documents it had not read). (Strings, items that can
    # become no value read, and objects that always take one member more have masks of their
    # own: tests/test_unique_strings.py, tests/test_unique_any.py, the test below; here
    # maxProperties keeps a member more from always fitting)
    from dotjson import Index
    from dotjson.errors import LimitExceededError
    from dotjson.jsonschema.unique import MAX_MASK_ITEM_TEXTS

    import jsonschema

    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "object", "maxProperties": 3},
                                                        "uniqueItems": True}}, "required": ["tags"]}
    index = Index(schema, llama3_vocab, **EVERY_VALID)
    fam = _unique_values_family(index)
    assert not fam.strings and not fam.members_grow
    s = index.initial_state
    before = None
    for t in llama3_tokenizer.encode('{"tags": [{"a": "yy"}, {"a": "zz', add_special_tokens=False):
        before = s
        assert index.mask(s).any()  # (the masks before the array, and at its start)
        s = index.next_state(s, t)
    made = len(fam._bodies)
    for _ in range(2):  # (again: refused again, the rules it made kept)
        refused = (r"token mask inside the array \(item 1, here after its bytes b'\{\"[^']*'\) .* refused past "
                   rf"{MAX_MASK_ITEM_TEXTS} item texts in one mask")
        with pytest.raises(LimitExceededError, match=refused):
            index.mask(s)
        assert len(fam._bodies) - made <= MAX_MASK_ITEM_TEXTS
        made = len(fam._bodies)
    assert index.mask(before).any()
    docs = [{"tags": [{"t": i} for i in range(60)]}, {"tags": [{"a": 1}, {"a": 1.0}]}, {"tags": [{"x": 1}, {}, {"x": 1}]},
            {"tags": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}, {"tags": []}, {"tags": [{"\u00e9": 1}, {"é": 2}]},
            {"tags": [{"a": 1, "b": 2, "c": 3, "d": 4}]}]
    for d in docs:
        text = json.dumps(d)
        want = jsonschema.Draft202012Validator(schema).is_valid(d)
        assert index.accepts(text) is want and index.check(text).ok is want, d
    assert index.check('{"tags": [{"x":1}, {"\\u0078":1}]}').position == len('{"tags": [{"x":1}, {"\\u0078":1')


def test_a_mask_inside_objects_that_take_a_member_more(llama3_vocab, llama3_tokenizer):
    # issue 29: where every object the items allow stays allowed with one member more of a name no
    # schema speaks of (open, no maxProperties, propertyNames, patternProperties or witness), an
    # item begun as an object can always become a value no other item is (that member before its
    # closing brace): inside it every token that does not hold a closing brace takes the relaxed
    # state's verdict, and only those holding one are decided (JsonSchemaStore---cryproj: refused
    # by name before, as above)
    from dotjson import Index

    import jsonschema

    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "object"},
                                                        "uniqueItems": True}}, "required": ["tags"]}
    index = Index(schema, llama3_vocab, **EVERY_VALID)
    fam = _unique_values_family(index)
    assert fam.members_grow and fam.to_json(lambda n: None).get("members_grow") is True
    tok = llama3_tokenizer

    def state_after(text):
        st = index.initial_state
        for t in tok.encode(text, add_special_tokens=False):
            assert index.mask(st)[t >> 5] >> (t & 31) & 1, text
            st = index.next_state(st, t)
        return st

    by_bytes = {llama3_vocab.token_bytes(i): i for i in range(llama3_vocab.max_token_id())}

    def allows(st, piece):
        t = by_bytes[piece.encode()]
        return bool(index.mask(st)[t >> 5] >> (t & 31) & 1)

    for prefix in ['{"tags": [{"a": "yy"}, {', '{"tags": [{"a": "yy"}, {"a', '{"tags": [{"a": "yy"}, {"a": "y',
                   '{"tags": [{"a": "yy"}, {"a": {"b": [1, "x']:
        st = state_after(prefix)
        m = index.mask(st)
        allowed = np.flatnonzero(np.unpackbits(m.view(np.uint8), bitorder="little"))
        assert len(allowed) > 100, prefix
        # the mask's bits and next_state agree, tokens in and out of it (a sample)
        sample = list(allowed[:: max(1, len(allowed) // 80)]) + list(range(0, 128256, 997))
        for u in sample:
            assert (index.next_state(st, int(u)) >= 0) is bool(m[u >> 5] >> (u & 31) & 1), (prefix, int(u))
    # the second item equal to the first: its closing brace refused there, a member more allowed
    st = state_after('{"tags": [{"a": "yy"}, {"a": "yy"')
    assert not allows(st, "}") and not allows(st, "}]") and allows(st, ",") and allows(st, ",\"")
    st = state_after('{"tags": [{"a": "yy"}, {"a": "yy')
    assert not allows(st, '"}') and allows(st, '",') and allows(st, '"')
    for d in [{"tags": [{"a": "yy"}, {"a": "yy"}]}, {"tags": [{"a": "yy"}, {"a": "yy", "b": 1}]},
              {"tags": [{"a": "yy"}, {"b": 1, "a": "yy"}, {"a": "yy", "b": 1}]}]:
        text = json.dumps(d)
        assert index.accepts(text) is jsonschema.Draft202012Validator(schema).is_valid(d), d
    # tokens: the item that repeats one read is refused where it closes; the mask there is the
    # family's own (every member so far matches the item read: no string to narrow)
    r = index.check(llama3_tokenizer.encode('{"tags": [{"ab": 1}, {"ab": 1}]}', add_special_tokens=False))
    assert r.reason == "rejected" and r.position == len('{"tags": [{"ab": 1}, {"ab": 1') and r.expected
    assert r.n_expected_tokens > 0 and b"}" not in dict(r.expected_tokens).values()
    assert index.check(llama3_tokenizer.encode('{"tags": [{"ab": 1}, {"ab": 2}]}', add_special_tokens=False)).ok
    # a string as a walk along the tokens of a document: each state from next_state, masks
    # outside the array
    s = index.initial_state
    for t in llama3_tokenizer.encode('{"tags": [{"qz": 1}, {"q": 1}]}', add_special_tokens=False):
        s = index.next_state(s, t)
        assert s >= 0
    assert index.is_accepting(s)


def test_a_mask_inside_narrow_items_is_computed(llama3_vocab, llama3_tokenizer):
    # JsonSchemaStore---drupal-breakpoints' multipliers: a string item whose pattern lets few tokens
    # in (~110 item texts a mask): masks inside the item work, exactly, under the budget
    from dotjson import Index

    schema = {"type": "array", "items": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?x$"}, "uniqueItems": True}
    index = Index(schema, llama3_vocab, **EVERY_VALID)
    ids = _first_id_of_bytes(llama3_vocab)
    # "1x" was read: "1" may not become it again (x, then only '"' completes it), it may grow
    # ("12x", "10x"), take a fraction ("1.5x"), or spell a digit as an escape; "1x" may not end,
    # "12x" may
    probes = {'["1x", "1': {b"x": False, b"a": False, b"2": True, b"0": True, b".": True, b"\\": True},
              '["1x", "1x': {b'"': False, b'",': False, b'"]': False, b"x": False},
              '["1x", "12x': {b'"': True, b'",': True, b'"]': True, b"x": False}}
    for prefix, want in probes.items():
        s = index.initial_state
        for t in llama3_tokenizer.encode(prefix, add_special_tokens=False):
            s = index.next_state(s, t)
        bits = np.unpackbits(index.mask(s).astype("<u4").view(np.uint8), bitorder="little")
        allowed = {llama3_vocab.token_bytes(int(t)) for t in np.flatnonzero(bits)}
        for tok, ok in want.items():
            assert (tok in allowed) is ok and (index.next_state(s, ids[tok]) >= 0) is ok, (prefix, tok)


def test_reading_many_arrays_of_one_family_is_never_refused(tiny_bpe_vocab):
    # every array of a uniqueItems schema inside another array is the same family: reading 300 of
    # them made 300 item texts of one length after no item, past the per-length limit of before
    from dotjson import Index

    import jsonschema

    schema = {"type": "array", "items": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}
    index = Index(schema, tiny_bpe_vocab, **EVERY_VALID)
    good = [[f"{i:03d}", "z"] for i in range(300)]
    bad = json.dumps(good)[:-1] + ', ["q", "\\u0071"]]'
    assert jsonschema.Draft202012Validator(schema).is_valid(good)
    assert not jsonschema.Draft202012Validator(schema).is_valid(json.loads(bad))
    assert index.check(json.dumps(good)).ok and index.accepts(json.dumps(good))
    assert not index.accepts(bad) and index.check(bad).position == len(bad) - len('"]]')


def test_token_walk_scopes():
    # what a family sees of a mask's walk: one id per outermost scope, 0 outside, per thread
    import threading

    from dotjson.ir.families import token_walk, token_walk_id

    assert token_walk_id() == 0
    with token_walk():
        a = token_walk_id()
        with token_walk():
            assert token_walk_id() == a != 0
        assert token_walk_id() == a
        seen = []
        th = threading.Thread(target=lambda: seen.append(token_walk_id()))
        th.start()
        th.join()
        assert seen == [0]
    assert token_walk_id() == 0
    with token_walk():
        assert token_walk_id() not in (0, a)
    with pytest.raises(KeyError):
        with token_walk():
            raise KeyError("x")
    assert token_walk_id() == 0


@pytest.mark.parametrize("items,grows", [
    ({"type": "object"}, True),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "minProperties": 2}, True),
    ({"anyOf": [{"type": "object", "required": ["a"]}, {"type": "integer"}]}, True),
    ({"type": "object", "maxProperties": 3}, False),
    ({"type": "object", "additionalProperties": False}, False),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, True),
    ({"allOf": [{"type": "object", "additionalProperties": {"type": "integer"}},
                {"additionalProperties": {"type": "string"}}]}, False),  # (no value for both)
    ({"type": "object", "patternProperties": {"^x": {}}}, False),
    ({"type": "object", "propertyNames": {"maxLength": 3}}, False),
    ({"type": "object", "not": {"const": {"a": 1}}}, False),
    ({"enum": [{"a": 1}, {"b": 2}]}, False),
    ({"type": "object", "properties": {"zQ7vX": False}}, False),  # (a name it would add: the schema's)
])
def test_which_items_take_a_member_more(items, grows):
    # ArrayBuilder.members_grow: the objects the items allow stay allowed with one member more of a
    # fresh name (open objects without the generation bounds: the every-valid configuration, and
    # close_objects=False, whose default bounds are the schema's)
    from dotjson.jsonschema.unique import UniqueValues

    schema = {"type": "array", "items": items, "uniqueItems": True}
    for kw, want in [(EVERY_VALID, grows), ({"close_objects": False}, grows)]:
        g = schema_to_grammar(schema, **kw)  # (held: its families are let go of with it)
        fams = [f for f in g.families if isinstance(f, UniqueValues)]
        assert [f.members_grow for f in fams] == ([want] if fams else []), (items, kw)


def test_closed_objects_take_no_member_more():
    # (the defaults close an object to its declared names: no member of another name fits)
    from dotjson.jsonschema.unique import UniqueValues

    g = schema_to_grammar({"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"a": {"type": "integer"}}}})
    (fam,) = [f for f in g.families if isinstance(f, UniqueValues)]
    assert not fam.members_grow and fam.keys_once
