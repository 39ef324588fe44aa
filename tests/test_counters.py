"""Counter-carrying states (``dotjson/automaton/counters.py``): a counted repetition far from its
bounds is one automaton state (a shape) plus an offset, so ``maxLength: 10**6`` costs what an
unbounded string costs. Checked against the reference engine (``tests/naive_automaton.py``, which
has no such states): the same acceptance and masks at every step, exact bounds (N accepted, N+1
refused), bounded state counts, threads, saved indexes, and forged ids refused.
"""

from __future__ import annotations

import json
import random
import threading

import numpy as np
import pytest

import naive_automaton as naive
from naive import reference_mask
from dotjson import Guide, Index
from dotjson.automaton import counters
from dotjson.errors import DotjsonIndexError, LimitExceededError
from dotjson.automaton.ids import VIRT as _VIRT

DEAD = -2


def _table(vocab) -> dict[bytes, int]:
    out = {}
    for t in range(vocab.max_token_id()):
        if t in vocab.eos_token_ids:
            continue
        b = vocab.token_bytes(t)
        if b and b not in out:
            out[b] = t
    return out


def _ids(vocab, data: bytes) -> list[int]:
    """Greedy longest-match token ids spelling ``data`` (any spelling is fine for forcing)."""
    table = _table(vocab)
    longest = max(len(b) for b in table)
    ids, i = [], 0
    while i < len(data):
        for n in range(min(longest, len(data) - i), 0, -1):
            t = table.get(data[i : i + n])
            if t is not None:
                ids.append(t)
                i += n
                break
        else:  # pragma: no cover - the tiny vocabulary spells every byte
            raise AssertionError(f"no token for {data[i:i + 1]!r}")
    return ids


def _walk(index, ids) -> list[int]:
    states = [index.initial_state]
    for t in ids:
        s = index.next_state(states[-1], t)
        states.append(s)
        if s == DEAD:
            break
    return states


def _accepts(index, data: bytes) -> bool:
    states = _walk(index, _ids(index.vocabulary, data))
    return states[-1] != DEAD and index.is_accepting(states[-1])


def _mask_set(index, s) -> set[int]:
    m = index.mask(s)
    return {t for t in range(index.vocabulary.max_token_id()) if (int(m[t >> 5]) >> (t & 31)) & 1}


def _string(n: int) -> bytes:
    return b'"' + b"a" * n + b'"'


@pytest.mark.parametrize("n", [3000, 40_000])
def test_max_length_exact_with_bounded_states(tiny_bpe_vocab, n):
    index = Index({"type": "string", "maxLength": n}, tiny_bpe_vocab)
    assert _accepts(index, _string(n))
    assert _accepts(index, _string(n - 1))
    assert not _accepts(index, _string(n + 1))
    assert _accepts(index, b'""')
    # the counter lives in the state id, not in a state per character
    assert index.n_states < 300 + 4 * index._ids.far
    states = _walk(index, _ids(tiny_bpe_vocab, _string(n // 2)[:-1]))
    assert states[-1] >= _VIRT


def test_accepts_and_is_prefix_walk_counters_too(tiny_bpe_vocab):
    index = Index({"type": "array", "items": {"type": "string", "maxLength": 30_000}}, tiny_bpe_vocab)
    doc = '["' + "é" * 30_000 + '","' + "a" * 30_000 + '"]'
    assert index.accepts(doc) and index.is_prefix(doc[:-1])
    assert not index.accepts(doc.replace('"a', '"aa'))
    assert not index.is_prefix('["' + "é" * 30_001)
    assert index.is_prefix('["' + "é" * 30_000)
    assert index.n_states < 300 + 8 * index._ids.far


def test_check_walks_counters_and_reports_the_exact_byte(tiny_bpe_vocab):
    n = 30_000
    index = Index({"type": "object", "properties": {"s": {"type": "string", "maxLength": n}}}, tiny_bpe_vocab)
    small = Index({"type": "object", "properties": {"s": {"type": "string", "maxLength": 5}}}, tiny_bpe_vocab)
    good = '{"s":"' + "a" * n + '"}'
    assert index.check(good).ok and index.check(_ids(tiny_bpe_vocab, good.encode())).ok
    # one character too many: refused at that very byte, with what small bounds report there
    r, r5 = index.check(good.replace('"a', '"aa')), small.check('{"s":"aaaaaa"}')
    assert (r.ok, r.reason, r.position) == (False, "rejected", 6 + n)
    assert r.expected == r5.expected and r.valid_prefix == good.encode()[: 6 + n]
    ids = _ids(tiny_bpe_vocab, good.replace('"a', '"aa').encode())
    rt, rt5 = index.check(ids), small.check(_ids(tiny_bpe_vocab, b'{"s":"aaaaaa"}'))
    assert (rt.ok, rt.reason) == (False, "rejected") and rt.position == 6 + n
    assert rt.expected == rt5.expected and rt.n_expected_tokens == rt5.n_expected_tokens
    inc = index.check(good[:-2])
    assert (inc.ok, inc.reason) == (False, "incomplete") and inc.expected == small.check('{"s":"aaaaa').expected
    assert index.check(good[:-200]).expected == small.check('{"s":"aa').expected
    assert index.n_states < 300 + 8 * index._ids.far


def test_min_length_and_both_bounds_exact(tiny_bpe_vocab):
    index = Index({"type": "string", "minLength": 3000}, tiny_bpe_vocab)
    assert [_accepts(index, _string(n)) for n in (2999, 3000, 3001, 6000)] == [False, True, True, True]
    index = Index({"type": "string", "minLength": 3000, "maxLength": 3004}, tiny_bpe_vocab)
    got = [_accepts(index, _string(n)) for n in range(2998, 3007)]
    assert got == [False, False, True, True, True, True, True, False, False]
    index = Index({"type": "string", "minLength": 2000, "maxLength": 2000}, tiny_bpe_vocab)
    assert [_accepts(index, _string(n)) for n in (1999, 2000, 2001)] == [False, True, False]


_PIECES = ["a", "é", "€", "😀", "\\n", "\\u00e9", "\\ud83d\\ude00", "\\\"", " ", "z"]


@pytest.mark.parametrize("seed", [0, 1])
def test_mixed_items_same_as_reference(tiny_bpe_vocab, seed):
    """Items of 1 to 12 bytes (UTF-8 of every length, escapes, surrogate pairs): the counter
    counts characters exactly; acceptance and masks equal the reference engine's at every step
    (masks sampled along the way and at every step near the bound)."""
    rng = random.Random(seed)
    pieces = [rng.choice(_PIECES) for _ in range(1500)]
    text = "".join(pieces)
    n_chars = len(json.loads('"' + text + '"'))
    vocab = tiny_bpe_vocab
    index = Index({"type": "string", "maxLength": n_chars}, vocab, spellings="any")  # \u escapes too
    ref = naive.Automaton(index.ir)
    data = ('"' + text + '"').encode()
    ids = _ids(vocab, data)
    s, r = index.initial_state, ref.start
    virtual = 0
    for i, t in enumerate(ids):
        s = index.next_state(s, t)
        r = ref.walk_bytes(r, vocab.token_bytes(t))
        assert (s == DEAD) == (r < 0)
        assert s != DEAD, i
        virtual += s >= _VIRT
        assert index.is_accepting(s) == bool(ref.accepting[r])
        if i % 97 == 0 or i > len(ids) - 40:
            assert _mask_set(index, s) == reference_mask(ref, r, vocab), i
    assert index.is_accepting(s)
    assert virtual > len(ids) // 2
    one_more = Index({"type": "string", "maxLength": n_chars - 1}, vocab)
    assert not _accepts(one_more, data)


def test_array_max_items(tiny_bpe_vocab):
    index = Index({"type": "array", "items": {"type": "integer"}, "maxItems": 3000}, tiny_bpe_vocab)

    def doc(n):
        return ("[" + ",".join(str(i % 97) for i in range(n)) + "]").encode()

    assert _accepts(index, doc(3000)) and _accepts(index, doc(2999))
    assert not _accepts(index, doc(3001))
    assert index.n_states < 3000


def test_counter_inside_deep_document(tiny_bpe_vocab):
    """A counter under an object stack, followed by another counted string (an occurrence of
    the same repetition that must stay exact) and closing brackets."""
    schema = {"type": "object", "properties": {
        "s": {"type": "string", "maxLength": 2500}, "t": {"type": "string", "maxLength": 2500},
        "o": {"$ref": "#"}}, "required": ["s"]}
    index = Index(schema, tiny_bpe_vocab)
    inner = '{"s":"' + "b" * 2500 + '","t":"' + "c" * 2500 + '"}'
    deep = '{"s":"x","o":' * 5 + inner + "}" * 5
    assert _accepts(index, deep.encode())
    assert not _accepts(index, deep.replace('"' + "c" * 2500, '"' + "c" * 2501).encode())
    assert not _accepts(index, deep.replace('"' + "b" * 2500, '"' + "b" * 2501).encode())
    assert index.n_states < 2500  # three documents of 5,000 counted characters


def test_guides_in_threads_share_one_index(tiny_bpe_vocab):
    index = Index({"type": "array", "items": {"type": "string", "maxLength": 1500}}, tiny_bpe_vocab)
    docs = [('["' + "a" * (1500 - k) + '","' + "é" * 1500 + '"]').encode() for k in range(4)]
    ids = [_ids(tiny_bpe_vocab, d) for d in docs]
    expected = [_walk(index, x) for x in ids]
    assert all(sum(s >= _VIRT for s in e) > len(e) // 2 for e in expected)
    results = [None] * 8
    barrier = threading.Barrier(8)

    def run(k):
        barrier.wait()
        g = Guide(index, 1)
        ts = g.get_start_tokensets()
        out = [int(g.states[0])]
        for t in ids[k % 4]:
            assert ts.contains(t)[0]
            ts = g.get_next_tokensets([t])
            out.append(int(g.states[0]))
        results[k] = (out, bool(g.is_accepting()[0]))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k in range(8):
        assert results[k] == (expected[k % 4], True)


def test_saved_index_continues_a_counter(tiny_bpe_vocab, tmp_path):
    index = Index({"type": "string", "maxLength": 4000}, tiny_bpe_vocab)
    ids = _ids(tiny_bpe_vocab, _string(4000))
    half = len(ids) // 2
    states = _walk(index, ids[:half])
    assert states[-1] >= _VIRT
    index.serialize_to_disk(tmp_path / "ix")
    again = Index.deserialize_from_disk(tmp_path / "ix", tiny_bpe_vocab)
    s = states[-1]
    for t in ids[half:]:
        s = again.next_state(s, t)
    assert again.is_accepting(s)
    s = states[-1]
    for t in _ids(tiny_bpe_vocab, b"a" * 10) + ids[half:]:
        s = again.next_state(s, t)
    assert s == DEAD
    assert np.array_equal(again.mask(states[-1]), index.mask(states[-1]))


def test_forged_counter_ids_are_refused(tiny_bpe_vocab):
    index = Index({"type": "string", "maxLength": 5000}, tiny_bpe_vocab)
    v = _walk(index, _ids(tiny_bpe_vocab, b'"' + b"a" * 100))[-1]
    assert v >= _VIRT
    shape, c = v & (2**31 - 1), ((v >> 31) & (2**31 - 1)) - 2**30
    assert c == 5000 - 100 - counters.MARK
    near = _VIRT | (2**30 - counters.MARK) << 31 | shape  # exact bound 0: a counter never far
    with pytest.raises(DotjsonIndexError, match="or a counter-carrying id this index handed out"):
        index.is_accepting(near)
    for bad in (_VIRT | index.initial_state, _VIRT | 12345678, near, 1 << 63, v | 1 << 63):
        with pytest.raises(DotjsonIndexError, match=f"Invalid state {bad}: expected 0 <= state <"):
            index.next_state(bad, 5)
        with pytest.raises(DotjsonIndexError):
            index.mask(bad)
    assert index.next_state(v, _ids(tiny_bpe_vocab, b"a")[0]) >= _VIRT  # the genuine id still works
    assert index.is_accepting(v) is False


def test_counts_over_the_marker_band_are_lane_counts(tiny_bpe_vocab):
    # before: maxLength 2**31 + 5 overflowed int32 and refused every string, silently; then it
    # was a LimitExceededError at the first mask; now a lane stands for it (tests/test_big_counts.py)
    for n in (counters.BAND - 1, counters.BAND, 2**31 + 5):
        index = Index({"type": "string", "maxLength": n}, tiny_bpe_vocab)
        assert _accepts(index, _string(3000))
        assert index._auto.rules.lanes.anchors == ([] if n < counters.BAND else [n])


@pytest.mark.slow
def test_million_character_string_in_bounded_memory(llama3_vocab, llama3_tokenizer):
    """Issue 14's case: ``maxLength: 1000000`` accepts a 1,000,000-character string through a
    Guide (Llama 3 vocabulary, 125,002 tokens) in < 50 MB; 1,000,001 characters are refused."""
    import tracemalloc

    def ids(n):
        return llama3_tokenizer.encode('"' + "a" * n + '"', add_special_tokens=False)

    ok, over = ids(1_000_000), ids(1_000_001)
    tracemalloc.start()
    index = Index({"type": "string", "maxLength": 1_000_000}, llama3_vocab)
    g = Guide(index, 1)
    ts = g.get_start_tokensets()
    for t in ok:
        assert ts.contains(t)[0]
        ts = g.get_next_tokensets([t])
    assert ts.contains(llama3_vocab.eos_token_ids[0])[0]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * 2**20, peak
    assert index.n_states < 5_000
    s = index.initial_state
    for t in over:
        s = index.next_state(s, t)
    assert s == DEAD


# ---------------------------------------------------------------------- differential, random walks

from dotjson import ir  # noqa: E402

_A = ir.Chars(((0x61, 0x63),))  # a-c
_GRAMMARS = {
    "string": ir.Grammar({"s": ir.Seq((ir.Lit('"'), ir.Repeat(ir.Alt((_A, ir.Lit("\\n"), ir.Chars(((0xE9, 0xE9),)))),
                                                             0, 260), ir.Lit('"')))}, "s"),
    "nested": ir.Grammar({"s": ir.Repeat(ir.Seq((ir.Lit("["), ir.Repeat(_A, 70, 90), ir.Lit("]"))), 2, 140)}, "s"),
    "both_far": ir.Grammar({"s": ir.Seq((ir.Repeat(ir.Lit("ab"), 120, 125), ir.Lit("!")))}, "s"),
    "adjacent": ir.Grammar({"s": ir.Seq((ir.Repeat(ir.Lit("ab"), 100, 100), ir.Repeat(ir.Lit("ab"), 0, 60),
                                          ir.Lit(".")))}, "s"),
    "ambiguous": ir.Grammar({"s": ir.Seq((ir.Repeat(_A, 0, 150), ir.Repeat(ir.Lit("a"), 0, 150), ir.Lit("!")))}, "s"),
    "nullable_item": ir.Grammar({"s": ir.Seq((ir.Repeat(ir.Alt((ir.Lit("ab"), ir.Lit(""))), 0, 200), ir.Lit("!")))},
                                "s"),
    "recursive": ir.Grammar({"v": ir.Alt((ir.Seq((ir.Lit("("), ir.Repeat(_A, 0, 120), ir.Ref("v"), ir.Lit(")"))),
                                          ir.Lit("x")))}, "v"),
}
#: bytes of the counted items: walks draw tokens made of them 97% of the time, to reach the bounds
_BODY = {"string": b"abc\\n\xc3\xa9", "nested": b"abc[]", "both_far": b"ab", "adjacent": b"ab", "ambiguous": b"abc",
         "nullable_item": b"ab", "recursive": b"abc("}


@pytest.mark.parametrize("name", sorted(_GRAMMARS))
def test_random_walks_same_masks_as_reference(tiny_bpe_vocab, name):
    """Random token walks (tokens drawn from the mask, biased to keep going) on grammars with
    counters far from their bounds: every mask and acceptance equals the reference engine's,
    and the counted parts go through counter-carrying ids."""
    g = _GRAMMARS[name]
    vocab = tiny_bpe_vocab
    index = Index.from_grammar(g, vocab)
    ref = naive.Automaton(g)
    eos = set(vocab.eos_token_ids)
    virtual = 0
    longest = 0
    body = set(_BODY[name])
    for seed in range(2):
        rng = random.Random(seed)
        s, r = index.initial_state, ref.start
        for step in range(700):
            got = _mask_set(index, s)
            assert got == reference_mask(ref, r, vocab)
            assert index.is_accepting(s) == bool(ref.accepting[r])
            plain = sorted(got - eos)
            if not plain or (got & eos and rng.random() < 0.01):
                break
            inner = [t for t in plain if set(vocab.token_bytes(t)) <= body]
            t = rng.choice(inner if inner and rng.random() < 0.97 else plain)
            s, r = index.next_state(s, t), ref.walk_bytes(r, vocab.token_bytes(t))
            assert s >= 0 and r >= 0
            virtual += s >= _VIRT
        longest = max(longest, step)
    assert virtual > 0
    assert longest >= 90  # far enough to cross a bound, not just to enter the counter


# --------------------------------------------------------------------------- counters in an intersection


@pytest.mark.parametrize("schema, text", [
    # a pattern with a length: the states of the string share their mask keys
    ({"type": "string", "pattern": "^[a-z ]*$", "maxLength": 400}, "ab cd" * 79),
    # the pattern itself needs a long tail (b{40}): far from the bound the counter is free,
    # closer than the pattern's distance to acceptance it must stay exact
    ({"type": "string", "pattern": "^a*b{40}$", "maxLength": 300}, "a" * 250 + "b" * 40),
    ({"type": "string", "pattern": "^a*b{40}$", "maxLength": 300}, "a" * 200),
    # a lower bound far away: left exact
    ({"type": "string", "pattern": "^[ab]*$", "minLength": 150, "maxLength": 400}, "ab" * 100),
    ({"type": "string", "format": "date-time", "maxLength": 300}, "2020-01-01T00:00:00Z"),
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "^x[0-9]*$", "maxLength": 250}}},
     None),
])
def test_counters_inside_an_intersection_same_as_reference(tiny_bpe_vocab, schema, text):
    """A length counter intersected with a pattern is clamped in the mask key only where that
    cannot change a token's fate (the bound at least a token plus the pattern's largest distance
    to acceptance away): the masks equal the reference engine's at every step."""
    vocab = tiny_bpe_vocab
    index = Index(schema, vocab)
    ref = naive.Automaton(index.ir)
    if text is None:
        data = b'{"s":"x' + b"0123456789" * 24 + b'"}'
    else:
        data = ('"' + text + '"').encode()
    ids = _ids(vocab, data)
    s, r = index.initial_state, ref.start
    for i, t in enumerate(ids):
        s = index.next_state(s, t)
        r = ref.walk_bytes(r, vocab.token_bytes(t))
        assert (s == DEAD) == (r < 0), i
        if s == DEAD:
            break
        assert index.is_accepting(s) == bool(ref.accepting[r]), i
        assert _mask_set(index, s) == reference_mask(ref, r, vocab), i


def test_a_long_string_with_a_pattern_shares_its_masks(tiny_bpe_vocab):
    vocab = tiny_bpe_vocab
    index = Index({"type": "string", "pattern": "^[a-z]*$", "maxLength": 100_000}, vocab)
    states = _walk(index, _ids(vocab, b'"' + b"abc" * 1000))
    assert states[-1] != DEAD
    for s in states[1:]:
        index.mask(s)
    # one mask per pattern state near the start, not one per character
    assert index.n_masks < 20, index.n_masks
    assert _accepts(index, b'"' + b"abc" * 1000 + b'"')
    assert not _accepts(Index({"type": "string", "pattern": "^[a-z]*$", "maxLength": 2999}, vocab),
                        b'"' + b"abc" * 1000 + b'"')
