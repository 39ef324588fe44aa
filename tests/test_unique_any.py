"""Token masks inside arrays of distinct objects, arrays and mixed values (issue 29,
:mod:`dotjson.jsonschema.unique_any`).

The reference is the family's generic walk (``Masker._family_masks = False``: a rule per token
prefix an item may hold, exact by construction, affordable on a small vocabulary): both masks
are compared at every state of random walks over a vocabulary of the tokens that can tell a
relaxed state from the exact one (tokens that close an item and open the next, spell a member
or a value read, numbers that extend), in the default configuration and the every-valid one;
every document a walk finishes is checked by ``jsonschema``.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal

import jsonschema
import numpy as np
import pytest

from dotjson import Index, Vocabulary
from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.unique import canonical_text, value_key
from dotjson.jsonschema.unique_any import _LETTERS, _NUM, item_end, item_scan, may_become, parse_canonical
from naive import bits as _bits, generic_walk_index, walk_against_reference

TOKS = ['[', ']', '{', '}', '{"', '"', '"a"', '"b"', '"c"', 'a', 'b', 'ab', ':', ': ', '":', '": ', '":"', '":1', '1',
        '2', '12', '0', '.5', 'e1', '-', ',', ', ', ',"', ', "', '},', '},{', '}, {', '},{"', '}]', '"}', '"},', '"},{',
        '"}]', '1}', '1},', '1},{"', '2}', '12}', '{"a":1}', '{"a":', '{"a":2}', '{"b":"', '"a":1', '"a":2', ',"b":"',
        '"a', '"b', '1,', '1]', '2,', '2]', ' ', '\n', 'true', 'tr', 'ue', 'false', 'null', '[1', '[1,', '2]]', '],[',
        ']]', '[[', 'x', '"x"', '\\u0061', '\\', 'u', '0061', '""', '"",', '{}', '{},', '{}]', ',{', '1.0', '10', 'e-1',
        '[]', '[],', '"a":"', '"b":1', '"c":', '"a":{', '}}', '}},', '}}]', '{"c":1}']
TOKS = list(dict.fromkeys(TOKS))
EOS = len(TOKS)

CLOSED = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 3}},
          "additionalProperties": False}


def _one_of(x, y) -> dict:
    """Exactly one of members ``x`` and ``y``, and not only those two names (tson's shape)."""
    return {"if": {"propertyNames": {"enum": [x, y]}, "minProperties": 2}, "then": False,
            "else": {"oneOf": [{"required": [x]}, {"required": [y]}]}}


PAIRS = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                                          "c": {"type": "integer"}, "x": {"type": "string"}},
         "allOf": [_one_of("a", "b"), _one_of("c", "x")]}
SCHEMAS = [
    {"type": "array", "items": CLOSED, "uniqueItems": True},
    # closed by the generation policy (close_objects), nested
    {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "c": {"type": "integer"}}}, "b": {"type": "string"}}}, "uniqueItems": True, "maxItems": 4},
    {"type": "array", "items": {"type": ["string", "integer", "boolean", "null"]}, "uniqueItems": True},
    {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}, "uniqueItems": True},
    # a later position with few values, owed by minItems
    # (values with few spellings: an integer's, 1.0, 10e-1, ..., are too many for the every-valid
    # configuration's search among a position's values)
    {"type": "array", "prefixItems": [CLOSED, {"enum": [{"b": "a"}, {"b": "ab"}, "x"]}], "items": CLOSED,
     "uniqueItems": True, "minItems": 2},
    {"type": "array", "items": {"anyOf": [CLOSED, {"type": "integer"}]}, "uniqueItems": True, "minItems": 1,
     "maxItems": 3},
    {"type": "object", "properties": {"c": {"type": "array", "items": CLOSED, "uniqueItems": True},
                                      "b": {"type": "integer"}}},
    # an array of distinct values inside the items of another (the outer family's searches read
    # the inner one's rules: ir.families.not_a_token_walk)
    {"type": "array", "uniqueItems": True, "minItems": 1, "items": {
        "type": "object", "additionalProperties": False, "required": ["a"],
        "properties": {"a": {"type": "array", "items": {"type": "string", "maxLength": 2}, "uniqueItems": True,
                             "minItems": 1}}}},
    # one array of distinct objects followed by two continuations (the object's branches): a
    # state ``(F r1 | F r2) rest`` the family masks and steps as ``F ((r1 | r2) rest)``
    {"$defs": {"arr": {"type": "array", "items": CLOSED, "uniqueItems": True}}, "anyOf": [
        {"type": "object", "properties": {"c": {"$ref": "#/$defs/arr"}, "b": {"type": "integer"}}, "required": ["c"]},
        {"type": "object", "properties": {"c": {"$ref": "#/$defs/arr"}, "d": {"type": "string"}}, "required": ["c"]}]},
    # ... and two different arrays of distinct values at the same place: one family's rule first
    # in a branch, the other's in another (the first masks, the other branch is its ``other``)
    {"anyOf": [
        {"type": "object", "properties": {"c": {"type": "array", "items": {"type": ["integer", "string"]},
                                                "uniqueItems": True}, "b": {"type": "integer"}}, "required": ["c"]},
        {"type": "object", "properties": {"c": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True,
                                                "maxItems": 3}, "d": {"type": "string"}}, "required": ["c"]}]},
    # open objects whose branches hold witness members (a key outside an if's propertyNames) and
    # branches no object is in (maxProperties 1 beside two required names): every object still
    # takes a member more (ArrayBuilder.members_grow), JsonSchemaStore---tson's partials
    {"type": "array", "uniqueItems": True, "items": PAIRS},
]
EVERY_VALID = {"bounds": "schema", "close_objects": False, "property_order": "any", "whitespace": "json"}


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.from_tuples(TOKS + ["<eos>"], list(range(EOS + 1)), EOS, special_token_ids=[EOS])


def _is_int(checker, x) -> bool:
    return not isinstance(x, bool) and (isinstance(x, int) or (isinstance(x, Decimal) and x == x.to_integral_value()))


def _is_number(checker, x) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, Decimal))


#: numbers read exactly (``1.0122e1110`` is an integer, not a float's infinity)
_Exact = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=(
    jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": _is_int, "number": _is_number})))


def valid(schema, text: str) -> bool:
    """``text`` meets ``schema``, numbers of both exact (``Decimal``: no float rounds them)."""
    exact = json.loads(json.dumps(schema), parse_float=Decimal)
    return _Exact(exact).is_valid(json.loads(text, parse_float=Decimal))


def _favoured(rng, choices):
    # (favour tokens that end an item and go on, or spell one read: they are the ones that tell;
    # the array's end comes late)
    on = [t for t in choices if "]" not in TOKS[t] or TOKS[t] in ("],[", "2]]")] or choices
    heavy = [t for t in on if any(c in TOKS[t] for c in "},")]
    return rng.choice(heavy if heavy and rng.random() < 0.4 else on if rng.random() < 0.9 else choices)


def _walks(index, ref, schema, config, seeds=6, steps=32):
    return walk_against_reference(index, ref, TOKS, EOS, lambda text: valid(schema, text), seeds=seeds,
                                  steps=steps, choose=_favoured, label=(schema, config))


#: the longest reference walks (15 s to 3 min each on CI's machine) run with --runslow; the same
#: schemas' other configuration covers their item kinds in the default run
_SLOW = {(7, "every-valid"), (2, "every-valid"), (9, "default")}
CASES = [pytest.param(k, config, marks=[pytest.mark.slow] if (k, config) in _SLOW else [])
         for k in range(len(SCHEMAS)) for config in ("default", "every-valid")
         if SCHEMAS[k].get("items") is not PAIRS or config == "every-valid"]  # (open objects: every-valid only)


@pytest.mark.parametrize("k,config", CASES)  # (the nested arrays' reference walk: 3 min, every-valid)
def test_masks_equal_the_generic_walk(request, vocab, k, config):
    schema = SCHEMAS[k]
    options = EVERY_VALID if config == "every-valid" else {}
    index, ref = Index(schema, vocab, **options), generic_walk_index(schema, vocab, **options)
    # (the reference is slow in strings; the default run walks half the seeds, --runslow all)
    seeds = 3 if k in (1, 2) else 6
    if not request.config.getoption("--runslow"):
        seeds = (seeds + 1) // 2
    _walks(index, ref, schema, config, seeds=seeds)


def test_the_family_masks_its_states(vocab):
    # (the walks above compare something: the family's own masks, not the generic walk's)
    from dotjson.jsonschema import unique_any

    calls = []
    real = unique_any.token_mask

    def spy(*a):
        out = real(*a)
        calls.append(out is not None)
        return out

    unique_any.token_mask = spy
    try:
        index = Index(SCHEMAS[0], vocab)
        s = index.initial_state
        for t in ['[', '{"a":1}', ',', '{"', 'a', '":', '1']:
            assert index.mask(s)[TOKS.index(t) >> 5] >> (TOKS.index(t) & 31) & 1, t
            s = index.next_state(s, TOKS.index(t))
        got = {TOKS[t] for t in _bits(index.mask(s)) if t < EOS}
        assert not got & {"}", "}]", "},", "},{"} and {"2", "0", ",", ",\"", "2}", "1}"} <= got, got  # (1} is 11)
    finally:
        unique_any.token_mask = real
    assert sum(calls) >= 5 and all(calls)


def test_the_family_steps_an_item_under_branched_continuations(vocab):
    # (F r1 | F r2) rest: the item's bytes are the family's (one rule for them), not a body per
    # byte naming ~100 successors each (JsonSchemaStore---tson: 34 ms steps inside an item)
    from dotjson.automaton import kernels as K
    from dotjson.masks import _seq_head

    index = Index(next(x for x in SCHEMAS if "$defs" in x), vocab)  # (one array, two continuations)
    s = index.initial_state
    for t in ['{', '"c"', ':', '[', '{"']:
        s = index.next_state(s, TOKS.index(t))
    a = index._auto
    assert a.store[K.S_TI][_seq_head(a.store[K.S_TI], a.term_of(s))[0], 0] == K.K_ALT
    fam = next(f for f in a.grammar.families if hasattr(f, "token_mask"))
    made = len(fam._bodies)
    after = index._masker.family_walk(s, b'a":1}')
    assert after is not None and after >= 0
    assert len(fam._bodies) == made  # (no body per byte of the item)
    assert index.accepts('{"c":[{"a":1},{"a":2}],"d":"x"}') and index.accepts('{"c":[{"a":1}],"b":1}')
    assert not index.accepts('{"c":[{"a":1},{"a":1}]}')


def test_parse_canonical_and_item_end():
    for v in [{"b": [1, "x", None], "a": {"c": True}}, [], {}, "é\u0000\"", -0.5, 10**30, [[1.5e-7]], False]:
        ct = canonical_text(json.loads(json.dumps(v), parse_float=Decimal, parse_int=Decimal))
        p = parse_canonical(ct)
        assert p[1] == ct
        text = json.dumps(v).encode()
        assert item_end(text + b",") == len(text) and may_become(text, [p], False)
        for i in range(len(text)):  # (every prefix may still become it)
            assert may_become(text[:i], [p], False), text[:i]
    assert item_end(b'{"a": "}"') == -1 and item_end(b'{"a": "}"}') == 10 and item_end(b"12") == -1
    d = [parse_canonical(canonical_text(json.loads('{"a": 1, "b": "xy"}', parse_float=Decimal, parse_int=Decimal)))]
    assert may_become(b'{"b": "xy", "a": 1', d, False) and may_become(b'{"b":"x', d, False)
    assert not may_become(b'{"b": "xz', d, False) and not may_become(b'{"c', d, False)
    assert not may_become(b'{"a": 2', d, False) and may_become(b'{"a": 2', d, True)  # (a later "a" may replace it)
    assert may_become(b'{"a": 10e-1', d, False) and may_become(b'{"a": 0.0', d, False)
    assert not may_become(b'{"a": 12', d, False) and may_become(b'{"a": 100', d, False)  # (100e-2)
    assert not may_become(b'{"a": -', d, False) and not may_become(b'{"a": 1, "a', d, False)
    targets: list = []
    assert may_become(b'{"a": 1, "b": "', d, False, targets) and targets == [b"xy"]


def _item_end_reference(b: bytes) -> int:
    """item_end as it was, scanning from the item's first byte every time (the reference)."""
    n = len(b)
    if not n:
        return -1
    c = b[0]
    if c in _NUM:
        j = 1
        while j < n and b[j] in _NUM:
            j += 1
        return j if j < n else -1
    if c in _LETTERS:
        j = 1
        while j < n and b[j] in _LETTERS:
            j += 1
        return j if j < n else -1
    if c == 0x22:
        j = 1
        while j < n:
            if b[j] == 0x5C:
                j += 2
                continue
            if b[j] == 0x22:
                return j + 1
            j += 1
        return -1
    depth, j, in_str = 0, 0, False
    while j < n:
        x = b[j]
        if in_str:
            if x == 0x5C:
                j += 1
            elif x == 0x22:
                in_str = False
        elif x == 0x22:
            in_str = True
        elif x in b"[{":
            depth += 1
        elif x in b"]}":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return -1


def test_item_scan_resumed_equals_a_scan_from_the_start():
    """Scanning an item's bytes in pieces (each token's bytes after the item's so far, where the
    scan stopped) ends where one scan from the item's first byte does, at every split: escapes
    and brackets inside strings, a backslash as the last byte of a piece, numbers and literals
    ended by the next byte."""
    rng = random.Random(0)
    texts = [b'{"a": "x\\"}", "b": [1, {"c": "]"}]}, 2', b'"ab\\"c\\\\" ,', b"12345,", b"true]",
             b'[["\\u00e9", {}], 3.5e-1] ', b'"unterminated \\', b"-0.25", b'{"k": [true, null]']
    for v in (json.dumps(x).encode() + b"," for x in ([1, "x\"]"], {"a": {"b": "}"}}, "é", 1.5, None)):
        texts.append(v)
    for text in texts:
        for _ in range(30):
            cuts = sorted(rng.sample(range(1, len(text) + 1), min(3, len(text))))
            end, at = item_scan(text[:cuts[0]])
            for c in cuts[1:] + [len(text)]:
                if end >= 0:
                    break
                end, at = item_scan(text[:c], at)
            want = _item_end_reference(text)
            assert end == want == item_end(text), (text, cuts)


def test_a_saved_index_masks_the_same(vocab, tmp_path):
    schema = SCHEMAS[0]
    index = Index(schema, vocab)
    index.serialize_to_disk(tmp_path / "u")
    loaded = Index.deserialize_from_disk(tmp_path / "u", vocab)
    (fam,) = [f for f in loaded._auto.grammar.families if hasattr(f, "token_mask")]
    assert fam.keys_once and not fam.strings
    a, b = index.initial_state, loaded.initial_state
    for t in ['[', '{"a":1}', ',', '{"', 'a', '":', '1']:
        assert _bits(index.mask(a)) == _bits(loaded.mask(b)), t
        a, b = index.next_state(a, TOKS.index(t)), loaded.next_state(b, TOKS.index(t))
    assert _bits(index.mask(a)) == _bits(loaded.mask(b))


def test_open_objects_stay_refused_with_generation_bounds(vocab):
    # their keys may repeat (the last member of a name wins): the every-valid configuration only
    for items in ({"type": "object"}, {"type": "object", "properties": {"a": {}}}):
        with pytest.raises(UnsupportedSchemaError, match="may repeat a key"):
            Index({"type": "array", "items": items, "uniqueItems": True}, vocab)


def test_llama3_masks_inside_an_array_of_distinct_objects(llama3_vocab, llama3_tokenizer):
    # the default configuration: records teacher-forced; where the third item repeats the first
    # so far, the tokens that would close it are refused and those that go on are not; a sample
    # of the vocabulary's tokens (every one holding a closing brace among them) against the
    # automaton's own walk
    schema = {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}, "uniqueItems": True}
    index = Index(schema, llama3_vocab)
    doc = '[{"name": "al", "age": 3}, {"name": "bo", "age": 30}, {"name": "al", "age": 3'
    s = index.initial_state
    for t in llama3_tokenizer.encode(doc, add_special_tokens=False):
        assert index.mask(s)[t >> 5] >> (t & 31) & 1, t
        s = index.next_state(s, t)
    mask = _bits(index.mask(s))
    ids = {llama3_vocab.token_bytes(t): t for t in range(llama3_vocab.max_token_id())}
    for text in (b'}', b'},', b'}]', b'}]\n'):
        if text in ids:
            assert ids[text] not in mask, text
    for text in (b'0', b'1', b'5', b'00'):
        assert ids[text] in mask, text
    rng = random.Random(29)
    braced = [t for b, t in ids.items() if b"}" in b]
    sample = rng.sample(braced, 150) + rng.sample(range(llama3_vocab.max_token_id()), 150)
    a = index._auto
    for t in sample:
        tb = llama3_vocab.token_bytes(t)
        want = bool(tb) and not llama3_vocab.is_special(t) and a.walk_bytes(s, tb) >= 0
        assert (t in mask) == want, tb


def test_numbers_of_any_exponent_are_one_value_each(vocab):
    # value keys read a number's digits and exponent as text (a Decimal refuses exponents
    # past 10^18, and 1e999999999999999999999 is a JSON number)
    assert value_key("1e999999999999999999999") == value_key("10e999999999999999999998") != value_key("2e999999999999999999999")
    assert value_key("[1.50e-99999, 0.0e5]") == value_key("[15e-100000, -0]")
    index = Index({"type": "array", "uniqueItems": True}, vocab, **EVERY_VALID)
    assert not index.accepts("[[1e999999999999999999999],[10e999999999999999999998]]")
    assert index.accepts("[[1e999999999999999999999],[2e999999999999999999999]]")


def _regression_row(name: str) -> dict:
    from pathlib import Path

    path = Path(__file__).resolve().parent / "data" / "maskbench" / "regressions.jsonl"
    return next(r for r in map(json.loads, path.read_text().splitlines()) if r["id"] == name)


def test_maskbench_tson_documents_check_every_valid(vocab):
    # A second tuning differs from the first by a key of its own no value read holds (an open
    # object's undeclared member): decided without the completion search, which the tunings'
    # long required members exhausted (LimitExceededError checking the valid documents).
    row = _regression_row("JsonSchemaStore---tson")
    index = Index(row["schema"], vocab, **EVERY_VALID)
    check = jsonschema.Draft7Validator(row["schema"])
    for t in row["tests"]:
        assert index.accepts(json.dumps(t["data"])) is check.is_valid(t["data"]) is t["valid"], t["description"]
    # a member of its own first: a new value whatever follows (a second tuning that follows the
    # first into its nested members is still the search's: past its budget on this schema)
    first = row["tests"][0]["data"]["tunings"][0]
    assert index.accepts(json.dumps({"tunings": [first, {"zz": 1, **first}]}))


def test_objects_with_witness_members_still_grow():
    # a witness member (a key outside the if's propertyNames) is said to exist: an object holding
    # one still does with a member more; a branch of maxProperties 1 beside two required names
    # holds no object. A satisfiable maxProperties branch still keeps objects from growing (the
    # per-branch check does not see that the grown object falls in another branch).
    from dotjson.jsonschema import arrays, schema_to_grammar

    got = []
    real = arrays.ArrayBuilder.members_grow

    def spy(self, exprs):
        got.append(real(self, exprs))
        return got[-1]

    arrays.ArrayBuilder.members_grow = spy
    try:
        for items, want in ((PAIRS, True), ({**PAIRS, "allOf": [_one_of("a", "b")]}, False),
                            ({**PAIRS, "maxProperties": 3}, False)):
            got.clear()
            schema_to_grammar({"type": "array", "uniqueItems": True, "items": items}, **EVERY_VALID)
            assert got == [want], (items, got)
    finally:
        arrays.ArrayBuilder.members_grow = real


def test_maskbench_tson_masks_every_valid(llama3_vocab, llama3_tokenizer):
    # tson's arrays of distinct partials: open objects whose two if/then/else conditions on
    # propertyNames make witness members and empty maxProperties branches; a second partial that
    # differs in its first member used to be refused by name (LimitExceededError past 512 item
    # texts in one mask); every token of the valid documents is in its mask now, the step agrees,
    # and the invalid ones are refused somewhere
    row = _regression_row("JsonSchemaStore---tson")
    index = Index(row["schema"], llama3_vocab, **EVERY_VALID)
    for t in row["tests"]:
        ids = llama3_tokenizer.encode(json.dumps(t["data"], separators=(",", ":")), add_special_tokens=False)
        s, ok = index.initial_state, True
        for tok in ids:
            allowed = bool(index.mask(s)[tok >> 5] >> (tok & 31) & 1)
            nxt = index.next_state(s, tok)
            assert allowed == (nxt >= 0), (t["description"], tok)
            if nxt < 0:
                ok = False
                break
            s = nxt
        assert (ok and index.is_accepting(s)) is t["valid"], t["description"]


def test_a_fresh_key_decides_where_the_search_cannot(vocab):
    # (UniqueValues._fresh_key) inside the item's own object, after a member, in a key of its
    # own: the item can still become a new value; after a colon or inside a member's value it
    # does not say (a later member of that name could replace the value)
    schema = {"type": "array", "uniqueItems": True, "items": {"type": "object"}}
    index = Index(schema, vocab, **EVERY_VALID)
    fam = next(f for f in index._auto.grammar.families if hasattr(f, "_fresh_key"))
    fam._automaton()
    seen = (fam.value_of(b'{"a":1}'),)
    for text, want in [("", True), ('{', True), ('{"a":1', True), ('{"a":1,', True), ('{"a', True),
                       ('{"a":', False), ('{"a":"x', False), ('{"a":{', False), ('{"a":{"b":1}', True),
                       ('{"a":"\\u00', False)]:
        q = fam._q(fam._pos(seen), text)
        assert q >= 0, text
        assert fam._fresh_key(seen, text, q) is want, text
    # a closed object takes no key of its own
    closed = Index({"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}}, vocab, **EVERY_VALID)
    fam = next(f for f in closed._auto.grammar.families if hasattr(f, "_fresh_key"))
    fam._automaton()
    seen = (fam.value_of(b'{"a":1}'),)
    for text in ["", "{", '{"a":2']:
        q = fam._q(fam._pos(seen), text)
        assert q >= 0 and not fam._fresh_key(seen, text, q), text


def test_a_declared_member_decides_where_the_search_cannot(vocab):
    # (UniqueValues._declared_key) a closed object's item can still become a new value by a
    # declared member no value read has as a key: at the item's start, after a member, inside
    # such a key; not where every key the object may take next is one a value read holds
    schema = {"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "ab": {"type": "integer"}},
        "additionalProperties": False}}
    index = Index(schema, vocab, **EVERY_VALID)
    fam = next(f for f in index._auto.grammar.families if hasattr(f, "_fresh_key"))
    fam._automaton()
    one = (fam.value_of(b'{"a":1}'),)
    every = tuple(sorted({fam.value_of(b'{"a":1}'), fam.value_of(b'{"b":1}'), fam.value_of(b'{"ab":1}')}))
    for seen, text, want in [(one, "", True), (one, "{", True), (one, '{"', True), (one, '{"b', True),
                             (one, '{"a', True),  # ("ab": a key of its own)
                             (one, '{"a":2', True), (one, '{"a":2,', True), (one, '{"b":', False),
                             (every, "", False), (every, '{"a', False), (every, '{"b":2,', False)]:
        q = fam._q(fam._pos(seen), text)
        assert q >= 0, text
        assert fam._fresh_key(seen, text, q) is want, (seen, text)


def test_distinct_objects_whose_required_member_is_an_array_of_distinct_patterns(llama3_vocab, llama3_tokenizer):
    # JsonSchemaStore---webextension's content scripts: deciding whether a second item can still
    # differ from the first searched for a whole completion, which went into the required array
    # of distinct `pattern` strings (a new state at every byte of its item) and gave up
    # (LimitExceededError, checking the valid documents); a declared member the first item lacks
    # decides it now, at an item's start and at its members' keys. (Inside a second item's
    # `matches` while it may still become the first item, the search is still what decides, and
    # gives up: a mask there, or a document repeating the first item, is refused by name)
    pattern_array = {"type": "array", "uniqueItems": True, "minItems": 1, "items": {
        "type": "string", "pattern": "^((\\*|http|https|file):\\/\\/(\\*|[^\\/\\*]+)?(\\/.*))|<all_urls>$"}}
    schema = {"type": "object", "properties": {"scripts": {
        "type": "array", "uniqueItems": True, "minItems": 1, "items": {
            "type": "object", "required": ["matches"], "additionalProperties": False,
            "properties": {"matches": pattern_array, "exclude": pattern_array,
                           "css": {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
                           "js": {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
                           "all_frames": {"type": "boolean"}}}}}}
    check = jsonschema.Draft202012Validator(schema)
    docs = ['{"scripts": [{"matches": ["<all_urls>"], "js": ["content.js"]}]}',
            '{"scripts": [{"matches": ["<all_urls>"]}, {"css": [], "matches": ["https://a.org/x"]}]}',
            '{"scripts": [{"matches": ["<all_urls>"], "js": ["a.js"]}, {"all_frames": true, "matches": ["<all_urls>"]}]}',
            '{"scripts": [{"matches": ["<all_urls>", "<all_urls>"]}]}',
            '{"scripts": [{"matches": []}]}',
            '{"scripts": [{"js": ["a.js"]}]}']
    index = Index(schema, llama3_vocab, **EVERY_VALID)
    for doc in docs:
        assert index.accepts(doc) is check.is_valid(json.loads(doc)), doc
    # the first document's tokens are each in their mask (a second item's masks look into
    # `matches` values that may still become the first item's: the search's, past its budget)
    for doc in docs[:1]:
        s = index.initial_state
        for t in llama3_tokenizer.encode(doc, add_special_tokens=False):
            assert index.mask(s)[t >> 5] >> (t & 31) & 1, (doc, t)
            s = index.next_state(s, t)
            assert s >= 0
        assert index.is_accepting(s)


ESC_TOKS = ['[', ']', '{"b":"', '{"a":1,"b":"', 'a', 'b', 'ab', '\\', '\\n', 'n', 'nb', 'n"', 'n"}', '"', '"}', '"},',
            '"}]', '},', '}]', ',', ',"a":1', '"a', 'u', '0001', '00', '01"}', 'b"}', 'b"},', '\\u', '"b', 'x', '\\"',
            '"x"}', 'a\\', 'nb"}', 'nb"},', ',{"b":"', 'nc', 'c"}']


ESC_ITEMS = {
    "closed": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
               "additionalProperties": False},
    "open": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}},
    # a copied string that can only become the value read: its tokens that keep it a prefix of
    # that value are refused (and so are those of any other content: the enum's)
    "enum": {"type": "object", "properties": {"b": {"enum": ["a\nb", "a\nc", "x"]}}, "required": ["b"],
             "additionalProperties": False},
}


@pytest.mark.parametrize("kind", list(ESC_ITEMS))
def test_a_copied_item_inside_an_unfinished_escape(kind):
    """An item that copies an earlier one up to an unfinished escape in a string: the tokens that
    leave the string open with a content no value read begins are allowed without matching the
    whole item again (MaskBench JsonSchemaStore---micro-syntax: 0.9-2.5 s masks before); the
    masks equal the generic walk's, and those of every state one token further."""
    toks = ESC_TOKS
    eos = len(toks)
    voc = Vocabulary.from_tuples(toks + ["<eos>"], list(range(eos + 1)), eos, special_token_ids=[eos])
    schema = {"type": "array", "items": ESC_ITEMS[kind], "uniqueItems": True}
    index, ref = Index(schema, voc), generic_walk_index(schema, voc)
    tid = {t: i for i, t in enumerate(toks)}
    paths = [["[", '{"b":"', "a", "\\n", "b", '"},', '{"b":"', "a", "\\"],
             ["[", '{"a":1,"b":"', "a", "\\", 'nb"},', '{"a":1,"b":"', "a\\"],
             ["[", '{"b":"', "\\u", "0001", '"},', '{"b":"', "\\u", "00"],
             ["[", '{"b":"', "\\", 'n"}', ",", '{"b":"', "\\"],
             ["[", '{"b":"', "a\\", 'nb"},', '{"b":"', "a\\"]]
    if kind == "enum":
        paths = [paths[0], paths[4]]
    checked = refused = 0
    for path in paths:
        s, r = index.initial_state, ref.initial_state
        for t in path:
            s, r = index.next_state(s, tid[t]), ref.next_state(r, tid[t])
            assert s >= 0 and r >= 0, path
        got, want = _bits(index.mask(s)), _bits(ref.mask(r))
        assert got == want, (path, sorted(toks[t] for t in got ^ want if t < eos))
        refused += path[-3:] in (['{"b":"', "a", "\\"], ['nb"},', '{"b":"', "a\\"]) and tid["nb"] not in want
        for t in sorted(want - {eos}):  # one token further
            s2, r2 = index.next_state(s, t), ref.next_state(r, t)
            assert _bits(index.mask(s2)) == _bits(ref.mask(r2)), (path, toks[t])
            checked += 1
    assert checked > (2 if kind == "enum" else 20)
    assert refused == (len(paths) if kind == "enum" else 0)  # (the copy's own continuation)


# An array of distinct objects whose items hold an array of distinct values (tson's tunings and
# their notes): the outer array's relaxed state and its item automaton walk the inner array's
# items by the inner family (automaton.item_walk.walk_items), not by a rule per byte.
NESTED = {"type": "array", "uniqueItems": True, "items": {
    "type": "object", "required": ["id"],
    "properties": {"id": {"type": "string"}, "notes": {"type": "array", "uniqueItems": True, "items": {
        "oneOf": [{"type": "object", "properties": {"r": {"type": "string"}, "name": {"type": "string"}}},
                  {"type": "number"}]}}}}}
NESTED_DOCS = [
    [{"id": "t1", "notes": [{"r": "1", "name": "Note 1"}, {"name": "Note 2", "r": "2"}, 3.5]},
     {"notes": [{"r": "1", "name": "Note 1"}], "id": "t2"}],
    [{"id": "x", "notes": []}, {"id": "y", "notes": [7, {"r": "a\"b"}]}],
]


def _per_byte_bodies(monkeypatch):
    from dotjson.jsonschema import unique

    made = []
    real = unique.UniqueValues.body

    def body(self, name):
        seen, text = self._state(name)
        if name not in self._bodies and not isinstance(seen, str) and text:
            made.append(name)
        return real(self, name)

    monkeypatch.setattr(unique.UniqueValues, "body", body)
    return made


def test_nested_distinct_arrays_are_stepped_by_item(llama3_vocab, llama3_tokenizer, monkeypatch):
    """tson in any order (its tunings' and spectra's items hold arrays of distinct notes and
    partials): every token of the valid documents is in its mask and steps, and the inner
    families build a body for a few of their item states, not one per byte of every item
    the outer arrays' relaxed states and item automata walk (178 on the tree before)."""
    made = _per_byte_bodies(monkeypatch)
    row = _regression_row("JsonSchemaStore---tson")
    for t in row["tests"]:
        if not t["valid"]:
            continue
        index = Index(row["schema"], llama3_vocab, **EVERY_VALID)
        s = index.initial_state
        for tok in llama3_tokenizer.encode(json.dumps(t["data"], separators=(",", ":")), add_special_tokens=False):
            assert index.mask(s)[tok >> 5] >> (tok & 31) & 1, tok
            s = index.next_state(s, tok)
            assert s >= 0
        assert index.is_accepting(s)
    assert len(made) <= 40, len(made)


def test_root_array_with_nested_distinct_arrays_searches_by_item(llama3_vocab, llama3_tokenizer, monkeypatch):
    """A root array of distinct objects whose items hold arrays of distinct values: every token
    of the documents is in its mask and steps, and the outer array's search for a completion
    from inside an inner item completes that item as its family does (``UniqueValues._jumps``),
    not a byte at a time through the inner family's states (885 and 691 per-byte bodies, 1.4
    and 1.1 s of masks, for the two documents on the tree before; 26 and 20 after)."""
    made = _per_byte_bodies(monkeypatch)
    for doc in NESTED_DOCS:
        made.clear()
        index = Index(NESTED, llama3_vocab, **EVERY_VALID)
        s = index.initial_state
        for tok in llama3_tokenizer.encode(json.dumps(doc, separators=(",", ":")), add_special_tokens=False):
            assert index.mask(s)[tok >> 5] >> (tok & 31) & 1, tok
            s = index.next_state(s, tok)
            assert s >= 0
        assert index.is_accepting(s)
        assert len(made) <= 80, len(made)


def test_nested_distinct_arrays_masks_equal_the_byte_walk(tiny_bpe_vocab):
    """At every byte of documents with an array of distinct values inside another's items,
    and of variants the arrays refuse (an inner value or an outer item again), the masks and
    verdicts equal those of the same index whose relaxed states and item automata walk the
    inner items a byte at a time (a rule per byte)."""
    from dotjson.jsonschema.unique import UniqueValues

    texts = [json.dumps(d, separators=(",", ":")) for d in NESTED_DOCS]
    texts.append('[{"id":"t1","notes":[{"r":"1"},{"r":"1"}]}]')   # an inner value again
    texts.append('[{"id":"t","notes":[1]},{"id":"t","notes":[1]}]')  # an outer item again
    # ... in another order of keys, inner objects' members too
    texts.append('[{"id":"t","notes":[{"r":"1","name":"a"}]},{"notes":[{"name":"a","r":"1"}],"id":"t"}]')
    for text in texts:
        fast = Index(NESTED, tiny_bpe_vocab, **EVERY_VALID)
        ref = Index(NESTED, tiny_bpe_vocab, **EVERY_VALID)
        fams = [f for f in ref._auto.grammar.families if isinstance(f, UniqueValues)]
        assert len(fams) == 2
        for f in fams:
            f._automaton()
            f._item_fams = ()  # (item_walk.walk_items then walks bytes: a rule per byte)
        ref._masker.walk_items = ref._auto.walk_bytes
        data = text.encode()
        for i in range(len(data) + 1):
            x = fast._auto.walk_bytes(fast.initial_state, data[:i])
            y = ref._auto.walk_bytes(ref.initial_state, data[:i])
            assert (x < 0) == (y < 0), data[:i]
            if x < 0:
                break
            assert np.array_equal(fast.mask(x), ref.mask(y)), data[:i]
        assert fast.accepts(text) is ref.accepts(text) is (text in texts[:2])
