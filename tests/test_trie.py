"""Token tries: the Numba builder against a slow pure-Python reference, and its invariants."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dotjson.errors import DotjsonValueError
from dotjson.jsonschema.jsonstr import PLAIN_CLASS as JSON_PLAIN
from dotjson.trie import (
    PlainClass, TokenTrie, _pack, ascii_runs, big_subtree_bits, build_trie, build_vocab_tries, plain_split,
)

#: A toy plain class: printable ASCII but ``a``, and ``é`` alone beyond ASCII (the split's slow path)
TOY = PlainClass(((0x20, 0x60), (0x62, 0x7E), (0xE9, 0xE9)))

# --------------------------------------------------------------------------------------------
# Pure-Python reference
# --------------------------------------------------------------------------------------------


def naive_is_plain(b: bytes) -> bool:
    """JSON string content taken as itself: no control byte, quote or backslash, UTF-8."""
    if not b or any(x < 0x20 or x in (0x22, 0x5C) for x in b):
        return False
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def naive_holds(ranges, b: bytes) -> bool:
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return bool(b) and all(any(lo <= ord(c) <= hi for lo, hi in ranges) for c in text)


def naive_trie(items) -> dict[str, list[int]]:
    """Nested dicts, numbered in pre-order with children by byte; ids ascending per node."""
    root: dict = {"c": {}, "ids": []}
    for b, i in items:
        if not b:
            continue
        node = root
        for x in b:
            node = node["c"].setdefault(x, {"c": {}, "ids": []})
        node["ids"].append(i)
    out = {k: [] for k in ("child_ptr", "child_byte", "child_node", "tok_ptr", "tok_ids", "subtree_end")}
    order = []

    def number(node):
        node["n"] = len(order)
        order.append(node)
        for x in sorted(node["c"]):
            number(node["c"][x])
        node["end"] = len(order)

    number(root)
    for node in order:
        out["child_ptr"].append(len(out["child_byte"]))
        for x in sorted(node["c"]):
            out["child_byte"].append(x)
            out["child_node"].append(node["c"][x]["n"])
        out["tok_ptr"].append(len(out["tok_ids"]))
        out["tok_ids"].extend(sorted(node["ids"]))
        out["subtree_end"].append(node["end"])
    out["child_ptr"].append(len(out["child_byte"]))
    out["tok_ptr"].append(len(out["tok_ids"]))
    return out


def assert_trie_equals_reference(trie: TokenTrie, items) -> None:
    ref = naive_trie(items)
    dtypes = {"child_byte": np.uint8}
    for k, v in trie.arrays().items():
        assert v.dtype == dtypes.get(k, np.int32), k
        np.testing.assert_array_equal(v, np.asarray(ref[k], dtype=v.dtype), err_msg=k)


def assert_invariants(trie: TokenTrie, items) -> None:
    """Every token reachable by its bytes; each subtree's ids are exactly the prefix's tokens."""
    cp, cb, cn = trie.child_ptr, trie.child_byte, trie.child_node
    tp, ti, se = trie.tok_ptr, trie.tok_ids, trie.subtree_end
    n = trie.n_nodes
    prefix = {0: b""}
    for v in range(n):
        kids = cb[cp[v] : cp[v + 1]]
        assert np.all(np.diff(kids.astype(int)) > 0), "children sorted by byte"
        for x, c in zip(kids, cn[cp[v] : cp[v + 1]]):
            assert c > v
            prefix[int(c)] = prefix[v] + bytes([int(x)])
    assert len(prefix) == n
    by_prefix: dict[bytes, set[int]] = {}
    for b, i in items:
        if b:
            by_prefix.setdefault(b, set()).add(i)
    for v in range(n):
        assert v < se[v] <= n
        sub = set(ti[tp[v] : tp[se[v]]].tolist())
        want = {i for b, i in items if b and b.startswith(prefix[v])}
        assert sub == want, prefix[v]
        assert set(ti[tp[v] : tp[v + 1]].tolist()) == by_prefix.get(prefix[v], set())
    for b, i in items:
        if not b:
            continue
        node = 0
        for x in b:
            kids = cb[cp[node] : cp[node + 1]]
            j = int(np.searchsorted(kids, x))
            assert j < kids.shape[0] and kids[j] == x, b
            node = int(cn[cp[node] + j])
        assert i in ti[tp[node] : tp[node + 1]]


def random_items(rng: random.Random, n: int, id_space: int = 100) -> list[tuple[bytes, int]]:
    alphabet = [0, 1, 0x0A, 0x20, 0x22, 0x5C, 0x41, 0x42, 0x61, 0x7F, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xED,
                0xA0, 0xF0, 0x9F, 0xF4, 0x90, 0xFF, 0x80, 0xE0, 0xC0, 0xC1, 0xF5]
    return [(bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 6))), rng.randrange(id_space))
            for _ in range(n)]


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def test_small_hand_made():
    items = [(b"ab", 5), (b"a", 2), (b"b", 1), (b"ab", 3), (b"", 9), (b"abc", 0)]
    t = build_trie(items)
    # root, a, ab, abc, b
    assert t.child_ptr.tolist() == [0, 2, 3, 4, 4, 4]
    assert t.child_byte.tolist() == [ord("a"), ord("b"), ord("b"), ord("c")]
    assert t.child_node.tolist() == [1, 4, 2, 3]
    assert t.tok_ptr.tolist() == [0, 0, 1, 3, 4, 5]
    assert t.tok_ids.tolist() == [2, 3, 5, 0, 1]
    assert t.subtree_end.tolist() == [5, 4, 4, 4, 5]
    assert_trie_equals_reference(t, items)


def test_empty():
    for items in ([], [(b"", 3)]):
        t = build_trie(items)
        assert t.n_nodes == 1 and t.child_ptr.tolist() == [0, 0] and t.tok_ptr.tolist() == [0, 0]
        v = build_vocab_tries(items, 10, JSON_PLAIN)
        assert v.plain.n_nodes == v.special.n_nodes == 1 and v.max_len == 0 and not v.plain_bits.any()


@pytest.mark.parametrize("seed", range(40))
def test_random_against_reference(seed):
    rng = random.Random(seed)
    items = random_items(rng, rng.randint(0, 80))
    t = build_trie(items)
    assert_trie_equals_reference(t, items)
    assert_invariants(t, items)
    v = build_vocab_tries(items, 100, JSON_PLAIN)
    plain = [(b, i) for b, i in items if naive_is_plain(b)]
    special = [(b, i) for b, i in items if b and not naive_is_plain(b)]
    assert_trie_equals_reference(v.plain, plain)
    assert_trie_equals_reference(v.special, special)
    bits = np.zeros(4, dtype=np.uint32)
    for _, i in plain:
        bits[i >> 5] |= np.uint32(1 << (i & 31))
    np.testing.assert_array_equal(v.plain_bits, bits)
    assert v.n_words == 4
    assert v.max_len == max((len(b) for b, _ in items), default=0)


def test_plain_kernel_matches_is_plain():
    rng = random.Random(7)
    cases = [b"a", b"\x7f", b"\x1f", b'"', b"\\", "é".encode(), "日".encode(), "\U0001f680".encode(),
             b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\x9f\xbf",
             b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf5\x80\x80\x80", b"\xc3",
             b"\xe2\x82", b"\xf0\x9f\x9a", b"\x80", b"a\xc3", b"\xc3\xa9\xc3", b"", b"\xef\xbf\xbf"]
    cases += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 5))) for _ in range(3000)]
    cases += [bytes(rng.choice([0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0x41])
                    for _ in range(rng.randint(1, 5))) for _ in range(3000)]
    blob, starts, lens = _pack(cases)
    got = plain_split(blob, starts, lens, JSON_PLAIN)
    for b, g in zip(cases, got):
        assert bool(g) == naive_is_plain(b) == JSON_PLAIN.holds(b), b
    # a class with part of the characters beyond ASCII (the kernel decodes each one)
    cases += ["aé日b".encode(), "é".encode(), "bé~".encode(), "\U0001f680".encode()]
    blob, starts, lens = _pack(cases)
    for cls in (TOY, PlainClass(((0x41, 0x41), (0x800, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x1F000)))):
        got = plain_split(blob, starts, lens, cls)
        for b, g in zip(cases, got):
            assert bool(g) == naive_holds(cls.ranges, b) == cls.holds(b), (cls, b)


def test_the_plain_class_is_a_parameter():
    """Another class splits the same tokens otherwise: the tries call plain what the class given
    holds, not what JSON does."""
    rng = random.Random(3)
    alphabet = [b"a", b"b", b"~", b'"', b"\\", b"\x01", "é".encode(), "日".encode(), "\u2028".encode()]
    items = [(b"a", 0), (b'"', 1)]
    items += [(b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))), i) for i in range(2, 300)]
    json_tries, toy_tries = (build_vocab_tries(items, 300, c) for c in (JSON_PLAIN, TOY))
    for cls, tries in ((JSON_PLAIN, json_tries), (TOY, toy_tries)):
        plain = [(b, i) for b, i in items if naive_holds(cls.ranges, b)]
        assert_trie_equals_reference(tries.plain, plain)
        assert_trie_equals_reference(tries.special, [(b, i) for b, i in items if not naive_holds(cls.ranges, b)])
        assert tries.plain_class is cls
    # 'a' is JSON-plain, not toy-plain; '"' the other way round
    js, toy = set(json_tries.plain.tok_ids.tolist()), set(toy_tries.plain.tok_ids.tolist())
    assert 0 in js - toy and 1 in toy - js
    # the tables the walk takes from the class are the class's
    assert TOY.ascii[0x22] and not TOY.ascii[0x61] and not JSON_PLAIN.ascii[0x22] and JSON_PLAIN.ascii[0x61]
    delim = np.unpackbits(TOY.non_plain_words.view(np.uint8), bitorder="little").astype(bool)
    assert delim[0x61] and not delim[0x22] and delim[0xE6]  # (0xE6: a lead byte of no toy character)
    # (JSON's leaves out U+2028 and U+2029: a class holding every scalar value from U+0080 on
    # takes the split's fast path)
    assert not TOY.all_high and not JSON_PLAIN.all_high
    assert PlainClass(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF))).all_high


def test_plain_class_values():
    assert PlainClass(JSON_PLAIN.ranges) == JSON_PLAIN and hash(PlainClass(JSON_PLAIN.ranges)) == hash(JSON_PLAIN)
    assert TOY != JSON_PLAIN and PlainClass([[0x20, 0x7E]]).ranges == ((0x20, 0x7E),)
    for bad in ([(0x30, 0x20)], [(0x20, 0x30), (0x30, 0x40)], [(0x40, 0x50), (0x20, 0x30)], [(0xD000, 0xD900)],
                [(0, 0x110000)], [(-1, 5)], [(1, 2, 3)], [(1.0, 2)], [(True, 2)], 5, ["ab"]):
        with pytest.raises(DotjsonValueError, match="Invalid plain class"):
            PlainClass(bad)


def test_out_of_range_id_rejected():
    with pytest.raises(ValueError, match="Invalid token id"):
        build_vocab_tries([(b"a", 10)], 10, JSON_PLAIN)


def _vocab_items(vocab):
    return [(vocab.token_bytes(int(i)), int(i)) for i in vocab.emittable_token_ids()]


@pytest.mark.parametrize("fixture", ["tiny_bpe_vocab", "tiny_sp_vocab"])
def test_tiny_vocab_tries(fixture, request):
    vocab = request.getfixturevalue(fixture)
    items = _vocab_items(vocab)
    tries = vocab.tries_for(JSON_PLAIN)
    plain = [(b, i) for b, i in items if naive_is_plain(b)]
    special = [(b, i) for b, i in items if not naive_is_plain(b)]
    assert_trie_equals_reference(tries.plain, plain)
    assert_trie_equals_reference(tries.special, special)
    assert_invariants(tries.plain, plain)
    assert_invariants(tries.special, special)
    assert set(vocab.eos_token_ids).isdisjoint(tries.plain.tok_ids.tolist() + tries.special.tok_ids.tolist())


def test_real_vocab_tries_against_reference(smollm2_vocab):
    items = _vocab_items(smollm2_vocab)
    tries = smollm2_vocab.tries_for(JSON_PLAIN)
    plain = [(b, i) for b, i in items if naive_is_plain(b)]
    special = [(b, i) for b, i in items if not naive_is_plain(b)]
    assert len(plain) + len(special) == len(items) == 49_152 - 17
    assert_trie_equals_reference(tries.plain, plain)
    assert_trie_equals_reference(tries.special, special)
    ids = np.asarray([i for _, i in plain])
    bits = np.unpackbits(tries.plain_bits.view(np.uint8), bitorder="little")
    assert set(np.flatnonzero(bits).tolist()) == set(ids.tolist())


@pytest.mark.slow
def test_qwen_tries_against_reference(qwen_vocab):
    items = _vocab_items(qwen_vocab)
    tries = qwen_vocab.tries_for(JSON_PLAIN)
    assert_trie_equals_reference(tries.plain, [(b, i) for b, i in items if naive_is_plain(b)])
    assert_trie_equals_reference(tries.special, [(b, i) for b, i in items if not naive_is_plain(b)])


@pytest.mark.parametrize("min_tokens", [1, 3, 50])
def test_big_subtree_bits_hold_exactly_the_subtree_tokens(min_tokens):
    rng = random.Random(min_tokens)
    items = [(bytes(rng.choice(b"abc") for _ in range(rng.randint(1, 5))), i) for i in range(300)]
    trie = build_trie(items)
    n_words = (300 + 31) // 32
    index, bits = big_subtree_bits(trie, n_words, min_tokens)
    for node in range(trie.n_nodes):
        ids = trie.tok_ids[trie.tok_ptr[node]: trie.tok_ptr[trie.subtree_end[node]]]
        if len(ids) < min_tokens:
            assert index[node] == -1
            continue
        row = bits[index[node]]
        got = {w * 32 + b for w in range(n_words) for b in range(32) if (int(row[w]) >> b) & 1}
        assert got == {int(t) for t in ids}


@pytest.mark.parametrize("cls", [JSON_PLAIN, TOY], ids=["json", "toy"])
def test_ascii_runs_against_reference(cls):
    rng = random.Random(7)
    alphabet = b'ab"\\\x01 \xc3\xa9'
    items = [(bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 6))), i) for i in range(400)]
    trie = build_trie(items)
    in_byte, run_ptr, run_toks, exit_ptr, exit_nodes = ascii_runs(trie, cls)
    run = {b for b in range(0x20, 0x7F) if any(lo <= b <= hi for lo, hi in cls.ranges)}
    # reference: node -> path bytes, from the trie itself
    path = {0: b""}
    for n in range(trie.n_nodes):
        for e in range(trie.child_ptr[n], trie.child_ptr[n + 1]):
            path[int(trie.child_node[e])] = path[n] + bytes([trie.child_byte[e]])
    for c in range(trie.n_nodes):
        pc = path[c]
        want_toks, want_exits = set(), set()
        for d in range(c + 1, trie.subtree_end[c]):
            rest = path[d][len(pc):]
            if all(b in run for b in rest):
                want_toks |= {int(t) for t in trie.tok_ids[trie.tok_ptr[d]: trie.tok_ptr[d + 1]]}
            elif rest[-1] not in run and all(b in run for b in rest[:-1]):
                want_exits.add(d)
        assert set(run_toks[run_ptr[c]: run_ptr[c + 1]].tolist()) == want_toks
        assert set(exit_nodes[exit_ptr[c]: exit_ptr[c + 1]].tolist()) == want_exits
        assert all(in_byte[d] == path[d][-1] for d in want_exits)
