"""Programs kept across indexes (``dotjson.automaton.rules._PROGRAMS``): the languages the JSON
layer keeps for the whole process (number ranges, patterns, formats: ``ir.share``) are compiled
once into a builder program, and a later index runs that program in its own store, its holes (the
terms of nodes the first store had compiled before) filled with its own terms.

The reference is the same index with nothing kept (every node compiled by walking its IR): the
masks and steps along real documents must be the same, whatever the first index compiled
before the shared nodes (which is what makes holes).
"""

from __future__ import annotations

import pytest

from dotjson import Index, ir
from dotjson.automaton import Automaton
from dotjson.automaton import rules as R
from dotjson.automaton.counters import BAND

# number ranges (a process-wide automaton each), a format and a pattern (encoded languages)
SCHEMA = {
    "type": "object",
    "properties": {
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 99.25},
        "lon": {"type": "number", "minimum": -180, "maximum": 180},
        "when": {"type": "string", "format": "date-time"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
        "n": {"type": "number", "minimum": 0},
    },
    "required": ["age"],
}
# the same languages met in another order, after others (so the first store's terms differ)
OTHER = {
    "type": "array",
    "items": {"anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "number", "minimum": 0},
                        {"type": "string", "format": "date-time"}, {"type": "integer", "minimum": 0,
                                                                      "maximum": 150}]},
}
DOCS = [
    '{"age": 42, "score": 12.5, "lon": -122.4194, "when": "2024-01-02T03:04:05Z", "code": "ABC-12", "n": 0.01}',
    '{"age":0,"lon":180,"when":"2020-02-29T12:00:00.5+01:00","code":"XYZ-0","n":1000.5}',
    '{"age": 150, "score": 99.25}',
]


def _walk(ix, ids):
    """The masks and states along ``ids`` (the ids of a document), and whether EOS ends it."""
    out, s = [], 0
    for t in ids:
        out.append((s, ix.mask(s).tobytes()))
        s = ix.next_state(s, t)
        assert s >= 0
    out.append((s, ix.mask(s).tobytes()))
    return out


@pytest.fixture
def empty_programs(monkeypatch):
    monkeypatch.setattr(R, "_PROGRAMS", {})
    monkeypatch.setattr(R, "_program_ops", [0])


def test_a_kept_program_gives_the_masks_of_the_ir_walk(llama3_vocab, llama3_tokenizer, empty_programs,
                                                       monkeypatch):
    docs = [llama3_tokenizer.encode(d, add_special_tokens=False) for d in DOCS]
    runs = []
    run0 = R.Rules._run_kept

    def spy(self, root, kept):
        runs.append(len(kept[5]))
        return run0(self, root, kept)

    monkeypatch.setattr(R.Rules, "_run_kept", spy)
    for first in (OTHER, SCHEMA):  # the programs kept by another schema's store, then by its own
        R._PROGRAMS.clear()
        a = Index(first, llama3_vocab, close_objects=False)
        if first is OTHER:
            for d in ('[1, "abc", "2024-01-02T03:04:05Z", 7]',):
                _walk(a, llama3_tokenizer.encode(d, add_special_tokens=False))
        else:
            for ids in docs:
                _walk(a, ids)
        assert R._PROGRAMS, "no program was kept"
        runs.clear()
        kept_ix = Index(SCHEMA, llama3_vocab, close_objects=False)
        got = [_walk(kept_ix, ids) for ids in docs]
        assert runs, "the second index ran no kept program"
        # the reference: nothing kept, nothing run
        saved, min_ops = dict(R._PROGRAMS), R.MIN_PROGRAM_OPS
        R._PROGRAMS.clear()
        monkeypatch.setattr(R, "MIN_PROGRAM_OPS", 1 << 40)
        ref = [_walk(Index(SCHEMA, llama3_vocab, close_objects=False), ids) for ids in docs]
        monkeypatch.setattr(R, "MIN_PROGRAM_OPS", min_ops)
        R._PROGRAMS.update(saved)
        for g, r in zip(got, ref):
            assert [m for _, m in g] == [m for _, m in r]
    assert any(runs), "no kept program had a hole to fill"


def test_a_program_naming_a_rule_or_a_lane_is_not_kept(empty_programs):
    # a big regular language kept; the same with a rule reference inside, or a count in a lane
    # (both an index's own), not
    digits = ir.repeat(ir.chars((0x30, 0x39)), 1, 4)
    words = [ir.seq(ir.lit(f"w{k}-"), digits, ir.lit(".")) for k in range(40)]
    regular = ir.share(ir.alt(*words))
    with_ref = ir.share(ir.alt(*words, ir.seq(ir.lit("r:"), ir.Ref("x"))))
    with_lane = ir.share(ir.alt(*words, ir.repeat(ir.lit("z"), 0, BAND + 5)))
    for node, kept in ((regular, True), (with_ref, False), (with_lane, False)):
        a = Automaton(ir.Grammar({"start": ir.seq(ir.lit("<"), node), "x": ir.lit("x")}, "start"))
        assert a.matches(b"<w7-123.")
        assert any(e[0] is node for e in R._PROGRAMS.values()) is kept
        if kept:  # and a second automaton runs it, to the same language
            b = Automaton(ir.Grammar({"start": ir.seq(ir.lit("<"), node), "x": ir.lit("x")}, "start"))
            assert b.matches(b"<w39-0.") and not b.matches(b"<w40-0.") and not b.matches(b"<w1-12345.")


def test_a_shared_node_stays_whole_in_sequences_and_alternations():
    # (its program is looked up by the node's identity: flattened into its parent it would be lost)
    a, b = ir.lit("a"), ir.chars((0x30, 0x39))
    s = ir.share(ir.Seq((a, b)))
    u = ir.share(ir.Alt((a, b)))
    assert ir.seq(ir.lit("x"), s).items[1] is s
    assert u in ir.alt(ir.lit("x"), u).items
    assert ir.seq(ir.lit("x"), ir.Seq((a, b))).items[1:] == (a, b)  # (others are flattened)


def test_a_hole_is_filled_with_the_running_store_s_own_term(empty_programs):
    # the class [0-9] compiled before the shared node in the first store (a hole in its program);
    # the second store compiles other terms first, so that its [0-9] has another id
    digits = ir.repeat(ir.chars((0x30, 0x39)), 1, 4)
    shared = ir.share(ir.alt(*(ir.seq(ir.lit(f"w{k}-"), digits, ir.lit(".")) for k in range(40))))
    first = {"start": ir.seq(ir.Ref("pre"), ir.lit(";"), ir.Ref("main")), "pre": ir.chars((0x30, 0x39)),
             "main": shared}
    a = Automaton(ir.Grammar(first, "start"))
    assert a.matches(b"7;w7-123.")
    (entry,) = [e for e in R._PROGRAMS.values() if e[0] is shared]
    assert [type(node) for node, _ in entry[5]] == [ir.Chars]
    other = ir.alt(*(ir.seq(ir.lit(f"o{k}"), ir.chars((0x41 + k, 0x41 + k))) for k in range(20)))
    second = {"start": ir.seq(ir.Ref("other"), ir.lit(";"), ir.Ref("pre"), ir.lit(";"), ir.Ref("main")),
              "other": other, "pre": ir.chars((0x30, 0x39)), "main": shared}
    b = Automaton(ir.Grammar(second, "start"))
    assert b.matches(b"o3D;7;w39-0.") and b.matches(b"o0A;0;w0-9999.")
    assert not b.matches(b"o3D;7;w39-.") and not b.matches(b"o3D;7;w39-a.")


def test_a_node_the_front_end_drops_is_an_ordinary_node_again():
    a, b = ir.lit("a"), ir.chars((0x30, 0x39))
    s = ir.share(ir.Seq((a, b)))
    ir.unshare([s])
    assert id(s) not in ir.SHARED
    assert ir.seq(ir.lit("x"), s).items[1:] == (a, b)
    # the number cache drops its languages from the shared ones when it is emptied
    from dotjson.jsonschema import numbers

    before = dict(numbers._NUMBER_LANGUAGES)
    try:
        numbers._NUMBER_LANGUAGES.clear()
        node = ir.share(ir.Alt((ir.lit("1"), ir.lit("2"))))
        numbers._NUMBER_LANGUAGES.update({("k", i): node for i in range(numbers._MAX_SHARED_NUMBERS)})
        from dotjson.jsonschema import schema_to_grammar

        g = schema_to_grammar({"type": "integer", "minimum": 3, "maximum": 977})
        assert Automaton(g).matches(b"42")  # (its number language built into the full cache)
        assert id(node) not in ir.SHARED
    finally:
        numbers._NUMBER_LANGUAGES.clear()
        numbers._NUMBER_LANGUAGES.update(before)
        for v in before.values():
            ir.share(v)


@pytest.mark.parametrize("order", ["schema", "any"])
def test_separators_and_quote_are_the_base_image_s(llama3_vocab, llama3_tokenizer, order, monkeypatch):
    """Objects write the quote, ``ws "," ws`` and ``ws ":" ws`` in every state and member: the
    process's nodes of them (``jsonbase.punctuation``, ``QUOTE``), compiled once in the base
    image, so no index compiles them in its own store (each was a program and a term per index,
    the quote one per object), and its masks are those of an index that compiles them itself."""
    from dotjson.jsonschema import jsonbase, objects_any_order

    ws, sep, colon = jsonbase.punctuation(False)
    assert jsonbase.punctuation(False)[1] is sep and jsonbase.punctuation(False)[2] is colon
    ids = llama3_tokenizer.encode(DOCS[0], add_special_tokens=False)
    ix = Index(SCHEMA, llama3_vocab, close_objects=False, property_order=order)
    walked = _walk(ix, ids)
    rules = ix._auto.rules
    for node in (jsonbase.QUOTE, sep, colon):
        assert id(node) in rules._base_compiled and id(node) not in rules._compiled
    # the reference: new nodes for them at every compiler (so none in the base image)
    monkeypatch.setattr(jsonbase, "punctuation", lambda d, p="": (
        ws, ir.seq(ws, ir.lit(","), ws), ir.seq(ws, ir.lit(":"), ws)))
    monkeypatch.setattr(jsonbase, "QUOTE", ir.Lit('"'))
    monkeypatch.setattr(objects_any_order, "QUOTE", jsonbase.QUOTE)
    ref = Index(SCHEMA, llama3_vocab, close_objects=False, property_order=order)
    # (the masks; the states' ids may differ: which states a mask makes besides the document's
    # depends on what the process's head cache holds already, e.g. after other tests)
    assert [m for _, m in _walk(ref, ids)] == [m for _, m in walked]
    rules = ref._auto.rules
    assert id(jsonbase.QUOTE) not in rules._base_compiled
