"""The lazy byte automaton against independent references.

Regular grammars are checked against Python's ``re`` on generated strings; recursive ones against
hand-written recognisers; liveness (every state handed out can still reach acceptance) by a
breadth-first search over the expanded table.
"""

from __future__ import annotations

import re
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dotjson import ir
from dotjson.automaton import DEAD, Automaton, utf8_sequences
from dotjson.errors import GrammarError, LimitExceededError

# ----------------------------------------------------------------------------- UTF-8 ranges


@pytest.mark.parametrize(
    "lo,hi",
    [(0, 0x7F), (0x80, 0x7FF), (0x41, 0x3042), (0x7FF, 0x800), (0xE000, 0x10FFFF), (0x10000, 0x1F600)],
)
def test_utf8_sequences_cover_exactly(lo, hi):
    seqs = utf8_sequences(lo, hi)

    def matched(b: bytes) -> bool:
        return any(
            len(sq) == len(b) and all(a <= x <= z for (a, z), x in zip(sq, b)) for sq in seqs
        )

    probe = list(range(lo, min(hi, lo + 3000) + 1)) + list(range(max(lo, hi - 3000), hi + 1))
    for cp in probe:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        assert matched(chr(cp).encode("utf-8")), hex(cp)
    for cp in (lo - 1, hi + 1):
        if 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF:
            assert not matched(chr(cp).encode("utf-8")), hex(cp)


# ----------------------------------------------------------------------------- regular grammars vs re

ALPHABET = "ab€"


def _to_re(node) -> str:
    if isinstance(node, ir.Lit):
        return re.escape(node.text)
    if isinstance(node, ir.Chars):
        if not node.ranges:
            return "[^\\s\\S]"
        return "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in node.ranges) + "]"
    if isinstance(node, ir.Seq):
        return "".join(f"(?:{_to_re(x)})" for x in node.items)
    if isinstance(node, ir.Alt):
        if not node.items:
            return "[^\\s\\S]"
        return "|".join(f"(?:{_to_re(x)})" for x in node.items)
    if isinstance(node, ir.Repeat):
        hi = "" if node.max is None else str(node.max)
        return f"(?:{_to_re(node.item)}){{{node.min},{hi}}}"
    raise AssertionError(node)


def _regular_nodes():
    leaf = st.one_of(
        st.text(ALPHABET, max_size=2).map(ir.Lit),
        st.sampled_from([ir.chars((0x61, 0x61)), ir.chars((0x61, 0x62)), ir.chars((0x20AC, 0x20AC))]),
    )

    def extend(children):
        return st.one_of(
            st.lists(children, min_size=1, max_size=3).map(lambda xs: ir.Seq(tuple(xs))),
            st.lists(children, min_size=1, max_size=3).map(lambda xs: ir.Alt(tuple(xs))),
            st.tuples(children, st.integers(0, 2), st.one_of(st.none(), st.integers(0, 3))).map(
                lambda t: ir.Repeat(t[0], t[1], None if t[2] is None else max(t[1], t[2]))
            ),
        )

    return st.recursive(leaf, extend, max_leaves=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regular_nodes(), st.lists(st.text(ALPHABET, max_size=6), min_size=1, max_size=25))
def test_regular_grammar_matches_python_re(node, texts):
    rx = re.compile(_to_re(node), re.S)
    g = ir.Grammar({"start": node})
    try:
        a = Automaton(g)
    except GrammarError as e:
        assert "empty" in str(e)
        assert not any(rx.fullmatch(t) for t in texts + [""])
        return
    for t in texts + [""]:
        assert a.matches(t.encode()) == bool(rx.fullmatch(t)), (t, _to_re(node))
        # prefix closure: a prefix is live iff some string in the language extends it
        if rx.fullmatch(t):
            for i in range(len(t) + 1):
                assert a.is_prefix(t[:i].encode())


@settings(max_examples=80, deadline=None)
@given(_regular_nodes(), _regular_nodes(), st.lists(st.text(ALPHABET, max_size=5), max_size=20))
def test_and_diff_match_set_semantics(x, y, texts):
    rx, ry = re.compile(_to_re(x), re.S), re.compile(_to_re(y), re.S)
    for op, expect in (
        (ir.And((x, y)), lambda t: bool(rx.fullmatch(t)) and bool(ry.fullmatch(t))),
        (ir.Diff(x, y), lambda t: bool(rx.fullmatch(t)) and not ry.fullmatch(t)),
    ):
        try:
            a = Automaton(ir.Grammar({"start": op}))
        except GrammarError:
            continue
        for t in texts + [""]:
            assert a.matches(t.encode()) == expect(t), (t, op)


# ----------------------------------------------------------------------------- recursion, liveness


def _brackets():
    # start: "[" (start ("," start)*)? "]" | "1"
    return ir.Grammar(
        {
            "start": ir.alt(
                ir.seq(
                    ir.lit("["),
                    ir.opt(ir.seq(ir.Ref("start"), ir.repeat(ir.seq(ir.lit(","), ir.Ref("start"))))),
                    ir.lit("]"),
                ),
                ir.lit("1"),
            )
        }
    )


def _brackets_ok(s: str) -> bool:
    import json

    try:
        v = json.loads(s)
    except ValueError:
        return False

    def ok(x):
        return x == 1 and type(x) is int or isinstance(x, list) and all(ok(y) for y in x)

    return ok(v) and s.replace(" ", "") == s


@settings(max_examples=200, deadline=None)
@given(st.text("[],1", max_size=14))
def test_recursive_grammar_matches_recogniser(text):
    a = Automaton(_brackets())
    assert a.matches(text.encode()) == _brackets_ok(text)


def test_recursion_to_any_depth():
    a = Automaton(_brackets())
    for depth in (1, 10, 500, 3000):
        doc = "[" * depth + "1" + "]" * depth
        assert a.matches(doc.encode())
        assert not a.matches(doc[:-1].encode())
        assert a.is_prefix(doc[:-1].encode())


def test_every_expanded_state_is_live():
    g = ir.Grammar(
        {
            "start": ir.seq(
                ir.lit('"'),
                ir.And((ir.repeat(ir.chars((0x61, 0x62))), ir.repeat(ir.chars((0x61, 0x7A)), 3, 5))),
                ir.lit('"'),
                ir.opt(ir.Ref("start")),
            )
        }
    )
    a = Automaton(g)
    # expand a good part of the automaton
    frontier = [a.start]
    seen = {a.start}
    while frontier and len(seen) < 200:
        s = frontier.pop()
        a.fill_row(s)
        for b in range(256):
            u = int(a.trans[s, b])
            if u >= 0 and u not in seen:
                seen.add(u)
                frontier.append(u)
    # from every state, acceptance is reachable
    for s in seen:
        stack, vis, ok = [s], {s}, False
        while stack and not ok:
            u = stack.pop()
            if a.accepting[u]:
                ok = True
                break
            a.fill_row(u)
            for b in range(256):
                v = int(a.trans[u, b])
                if v >= 0 and v not in vis:
                    vis.add(v)
                    stack.append(v)
        assert ok, a.describe(s)


def test_dead_end_is_not_a_state():
    # "a" followed by a string that must be both of length 3 and of even length: empty.
    bad = ir.And((ir.repeat(ir.lit("aa")), ir.repeat(ir.lit("a"), 3, 3)))
    a = Automaton(ir.Grammar({"start": ir.alt(ir.seq(ir.lit("x"), bad), ir.lit("y"))}))
    assert a.step(a.start, ord("x")) == DEAD
    assert a.matches(b"y")


def test_left_recursion_is_rejected_with_the_cycle():
    g = ir.Grammar({"start": ir.seq(ir.Ref("a"), ir.lit("x")), "a": ir.alt(ir.seq(ir.Ref("start"), ir.lit("y")), ir.lit("z"))})
    with pytest.raises(GrammarError, match="left-recursive rules.*start -> a -> start|a -> start -> a"):
        Automaton(g)


def test_undefined_rule_is_named():
    with pytest.raises(GrammarError, match="references undefined rule 'nope'"):
        Automaton(ir.Grammar({"start": ir.Ref("nope")}))


def test_empty_language_is_an_error():
    with pytest.raises(GrammarError, match="language is empty"):
        Automaton(ir.Grammar({"start": ir.Diff(ir.lit("a"), ir.lit("a"))}))


def test_large_bounds_cost_nothing_until_used():
    tracemalloc.start()
    g = ir.Grammar(
        {
            "start": ir.seq(
                ir.lit("["),
                ir.repeat(ir.chars((0x61, 0x61)), 5000, 100000),
                ir.lit("]"),
            )
        }
    )
    a = Automaton(g)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 2_000_000
    assert a.n_states == 1
    assert a.matches(b"[" + b"a" * 5000 + b"]")
    assert not a.matches(b"[" + b"a" * 4999 + b"]")
    assert a.n_states < 5010


def test_clamp_merges_far_counters():
    g = ir.Grammar({"start": ir.seq(ir.lit('"'), ir.repeat(ir.chars((0x61, 0x7A)), 0, 100000), ir.lit('"'))})
    a = Automaton(g)
    s1 = a.walk_bytes(a.start, b'"' + b"a" * 10)
    s2 = a.walk_bytes(a.start, b'"' + b"a" * 500)
    near = a.walk_bytes(a.start, b'"' + b"a" * 99990)
    c1, c2, c3 = (a.clamp(a.term_of(s), 17) for s in (s1, s2, near))
    assert c1 == c2 and c3 != c1


def test_fuel_bounds_emptiness_search():
    # an intersection whose emptiness needs a long search
    g = ir.Grammar(
        {
            "start": ir.And(
                (ir.repeat(ir.lit("aaa")), ir.seq(ir.repeat(ir.lit("a"), 4000, 4000), ir.lit("b")))
            )
        }
    )
    with pytest.raises(LimitExceededError, match="fuel"):
        Automaton(g, fuel=500)


def test_state_budget():
    a = Automaton(_brackets(), max_states=20)
    with pytest.raises(LimitExceededError, match="20 states"):
        a.is_prefix(b"[" * 40)


def test_compile_rules_known_only_stops_at_the_rules_named_when_called(tiny_bpe_vocab):
    """A schema's grammar may name rules without end (``uniqueItems`` over strings: a rule per
    prefix of the items so far, made when a walk first needs it); ``compile_rules(known_only=
    True)`` compiles the rules named when called and stops, where chasing every rule met would
    run until the store's budget."""
    from dotjson import Index

    index = Index({"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                  tiny_bpe_vocab, max_store_bytes=12 << 20)
    a = index._auto
    n = len(a.rules.names)
    a.compile_rules(known_only=True)
    assert all(a._a["rule_body"][i] >= 0 for i in range(n))
    assert len(a.rules.names) > n  # compiling them named more, left to their first use
    with pytest.raises(LimitExceededError):  # (every rule met: the family has no end)
        a.compile_rules()
