"""Differential tests: the Numba term store and kernels against the Python reference engine.

``tests/naive_automaton.py`` is dotjson's derivative engine as it was before the port (pure
Python, dictionaries of tuples). Both engines run the same grammars — random hypothesis grammars
with And/Diff/Repeat/Ref, a sample of MaskBench development schemas, JSON-Schema-Test-Suite
schemas — and must give the same languages: at every state of random walks the same live bytes
(whole rows and single transitions), the same acceptance, and the same token masks (clamped mask
keys included). A grammar one engine rejects, the other must reject with the same error.
"""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive_automaton as naive
from naive import reference_mask
from dotjson import Index, ir
from dotjson.automaton import DEAD, Automaton
from dotjson.errors import DotjsonError, GrammarError, LimitExceededError, SchemaError
from dotjson.jsonschema import schema_to_grammar

DATA = Path(__file__).parent / "data"


def _live(a, s) -> np.ndarray:
    a.fill_row(s)
    return a.trans[s] >= 0


def _tiny_store(g: ir.Grammar) -> Automaton:
    """An automaton whose store starts nearly empty, so that every kernel exits to grow it."""
    saved = Automaton.INITIAL_TERMS, Automaton.INITIAL_STATES
    Automaton.INITIAL_TERMS, Automaton.INITIAL_STATES = 16, 2
    try:
        a = Automaton(g)
    finally:
        Automaton.INITIAL_TERMS, Automaton.INITIAL_STATES = saved
    a.GROWN_TERMS = a.GROWN_STATES = 1  # (doubling from there: a growth in every kernel)
    return a


def compare(g: ir.Grammar, seed: int, walks: int = 4, steps: int = 80) -> None:
    """Random walks in lock-step on both engines: equal live bytes, acceptance, single steps."""
    try:
        ref = naive.Automaton(g)
    except (GrammarError, LimitExceededError) as e:
        with pytest.raises(type(e)) as got:
            Automaton(g)
        assert str(got.value) == str(e)
        return
    nat = Automaton(g)
    single = _tiny_store(g)  # single transitions only (deriv, not rows); grows mid-kernel
    rng = random.Random(seed)
    for _ in range(walks):
        s, r, u = nat.start, ref.start, single.start
        for _ in range(steps):
            ln, lr = _live(nat, s), _live(ref, r)
            assert np.array_equal(ln, lr), (nat.describe(s), ref.describe(r))
            assert bool(nat.accepting[s]) == bool(ref.accepting[r])
            assert bool(single.accepting[u]) == bool(ref.accepting[r])
            for b in rng.sample(range(256), 6):
                assert (single.step(u, b) >= 0) == bool(lr[b])
            live = np.flatnonzero(ln)
            if live.size == 0 or (nat.accepting[s] and rng.random() < 0.1):
                break
            b = int(live[rng.randrange(live.size)])
            s, r, u = int(nat.trans[s, b]), int(ref.trans[r, b]), single.step(u, b)
            assert u >= 0


# ---------------------------------------------------------------------- random grammars

_TEXT = st.text(alphabet="ab{}\"é", min_size=0, max_size=3)
_RANGES = st.sampled_from([((0x61, 0x63),), ((0x30, 0x39), (0x61, 0x61)), ((0xE9, 0xE9),),
                           ((0x20, 0x7E),), ((0x7F, 0x800),), ((0x10000, 0x10010),)])


def _regular(leaves):
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.lists(kids, min_size=0, max_size=3).map(lambda xs: ir.Seq(tuple(xs))),
            st.lists(kids, min_size=1, max_size=3).map(lambda xs: ir.Alt(tuple(xs))),
            st.tuples(kids, st.integers(0, 3), st.integers(0, 3), st.booleans()).map(
                lambda x: ir.Repeat(x[0], x[1], None if x[3] else x[1] + x[2])
            ),
        ),
        max_leaves=8,
    )


_REG_LEAF = st.one_of(_TEXT.map(ir.Lit), _RANGES.map(ir.Chars))
_REGULAR = _regular(_REG_LEAF)
_SETOP = st.one_of(
    st.lists(_REGULAR, min_size=2, max_size=3).map(lambda xs: ir.And(tuple(xs))),
    st.tuples(_REGULAR, _REGULAR).map(lambda x: ir.Diff(*x)),
)


@st.composite
def grammars(draw):
    n = draw(st.integers(1, 4))
    names = [f"r{i}" for i in range(n)]
    leaf = st.one_of(_REG_LEAF, _REG_LEAF, st.sampled_from(names).map(ir.Ref), _SETOP)
    body = _regular(leaf)
    return ir.Grammar({nm: draw(body) for nm in names}, "r0")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(grammars(), st.integers(0, 1000))
def test_random_grammars_same_language(g, seed):
    compare(g, seed, walks=3, steps=30)


# ---------------------------------------------------------------------- real schemas


def _compiles(schema) -> bool:
    try:
        schema_to_grammar(schema)
    except SchemaError:
        return False
    return True


def _maskbench(sample: int = 14) -> list:
    """Every fourth MaskBench development schema that dotjson supports."""
    rows = [json.loads(x) for x in (DATA / "maskbench" / "subset.jsonl").read_text().splitlines()]
    return [r["schema"] for r in rows[:: max(1, len(rows) // sample)] if _compiles(r["schema"])]


@pytest.mark.parametrize("i", range(len(_maskbench())))
def test_maskbench_schemas_same_language(i):
    compare(schema_to_grammar(_maskbench()[i]), seed=i, walks=4, steps=120)


_SUITE_FILES = ["anyOf.json", "allOf.json", "pattern.json", "maxLength.json", "minItems.json",
                "properties.json", "ref.json", "not.json", "enum.json", "multipleOf.json",
                "patternProperties.json", "additionalProperties.json"]


@pytest.mark.parametrize("name", _SUITE_FILES)
def test_suite_schemas_same_language(name):
    groups = json.loads((DATA / "json-schema-test-suite" / "draft2020-12" / name).read_text())
    n = 0
    for k, grp in enumerate(groups):
        try:
            g = schema_to_grammar(grp["schema"])
        except SchemaError:
            continue
        compare(g, seed=k, walks=2, steps=60)
        n += 1
    assert n > 0


# ---------------------------------------------------------------------- masks (clamped keys)


_ANY_ORDER = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 3},
                                      "c": {"type": "boolean"}}, "required": ["a", "c"]},
    {"type": "object", "properties": {"x": {"type": "null"}, "y": {"$ref": "#"}},
     "patternProperties": {"^z": {"type": "integer"}}, "minProperties": 1, "maxProperties": 2},
    {"type": "array", "items": {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(12)},
                                "additionalProperties": False, "required": ["p3"]}},
]


@pytest.mark.parametrize("i", range(len(_ANY_ORDER)))
def test_any_order_families_same_language(i):
    """Rule families (property_order="any"): rule ids registered on demand, bodies from the family."""
    g = schema_to_grammar(_ANY_ORDER[i], property_order="any", close_objects=False)
    for seed in range(3):
        compare(g, seed, walks=4, steps=120)
    nat = Automaton(g)
    assert nat.matches(b'{"a":1,"c":true}' if i == 0 else b'{"x":null}' if i == 1 else b'[{"p3":1,"p0":2}]')
    assert g.families  # a lazily compiled schema adds its families as objects are built
    assert any("__seen_" in n for n in nat.rules.names)  # family rules got ids on demand


@pytest.mark.parametrize("schema", [
    {"type": "string", "minLength": 3, "maxLength": 40},
    {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 30},
    {"type": "string", "pattern": "^[a-e]{2,9}x$"},
    {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "number"}},
     "required": ["name"]},
])
def test_masks_equal_reference(schema, tiny_bpe_vocab):
    vocab = tiny_bpe_vocab
    index = Index(schema, vocab)
    ref = naive.Automaton(index.ir)
    rng = random.Random(0)
    n = vocab.max_token_id()
    for _ in range(3):
        s, r = index.initial_state, ref.start
        for _ in range(40):
            m = index.mask(s)
            got = {t for t in range(n) if (int(m[t >> 5]) >> (t & 31)) & 1}
            assert got == reference_mask(ref, r, vocab)
            plain = [t for t in got if t not in vocab.eos_token_ids]
            if not plain:
                break
            t = rng.choice(plain)
            s, r = index.next_state(s, t), ref.walk_bytes(r, vocab.token_bytes(t))
            assert s >= 0 and r >= 0


# ---------------------------------------------------------------------- depth and growth


def test_rule_chain_of_10000_rules_needs_no_recursion():
    # r_i = "k" digit | r_{i+1}: the first byte's derivative expands all 10,000 rules
    n = 10_000
    rules = {f"r{i}": ir.Alt((ir.Seq((ir.Lit("k"), ir.Lit(str(i % 10)))), ir.Ref(f"r{i + 1}")))
             for i in range(n)}
    rules[f"r{n}"] = ir.Lit("x")
    a = Automaton(ir.Grammar(rules, "r0"))
    assert a.matches(b"x") and a.matches(b"k7")
    assert not a.matches(b"k") and not a.is_prefix(b"y")
    assert a.n_terms > n  # the store grew several times on the way


def test_nesting_10000_deep():
    g = ir.Grammar({"v": ir.Alt((ir.Lit("x"), ir.Seq((ir.Lit("["), ir.Ref("v"), ir.Lit("]")))))},
                   "v")
    a = Automaton(g)
    assert a.matches(b"[" * 10_000 + b"x" + b"]" * 10_000)
    assert not a.matches(b"[" * 10_000 + b"x" + b"]" * 9_999)


@pytest.mark.parametrize("prefix", [
    b'{"a":' * 80 + b'{"b":"xy',  # deep stack under a string with maxLength
    b'{"a":' * 80 + b'{"zz',  # deep stack under a key other than "a" (a Diff: emptiness)
    b'{"a":' * 80 + b'{"c":[1,',
])
def test_deep_stack_masks_equal_reference(prefix, tiny_bpe_vocab):
    """Clamping and emptiness treat a sequence as cons cells (head, memoized tail): a new state
    on top of a deep stack costs O(1). The masks stay those of the reference engine."""
    schema = {"type": "object", "properties": {"a": {"$ref": "#"}, "b": {"type": "string", "maxLength": 5},
                                               "c": {"type": "array", "maxItems": 300}},
              "additionalProperties": {"type": "integer"}}
    vocab = tiny_bpe_vocab
    index = Index(schema, vocab)
    ref = naive.Automaton(index.ir)
    a = index._auto
    s, r = index.initial_state, ref.start
    for i in range(len(prefix)):
        s, r = a.walk_bytes(s, prefix[i : i + 1]), ref.walk_bytes(r, prefix[i : i + 1])
        assert s >= 0 and r >= 0
        if i > len(prefix) - 4:
            m = index.mask(s)
            got = {t for t in range(vocab.max_token_id()) if (int(m[t >> 5]) >> (t & 31)) & 1}
            assert got == reference_mask(ref, r, vocab)


def test_mask_keys_drop_the_stack_no_token_reaches(tiny_bpe_vocab):
    """Mask keys are truncated after ``limit`` non-nullable items of a state's sequence
    (``automaton/keys.py``): states deeper than a token reaches share one key, and their masks
    (acceptance included) stay the reference engine's on both sides of the cut."""
    g = ir.Grammar({"v": ir.Alt((ir.Lit("x"), ir.Seq((ir.Lit("["), ir.Ref("v"), ir.Lit("]"))),
                                 ir.Seq((ir.Lit("("), ir.Ref("v"), ir.Lit(")"), ir.Repeat(ir.Lit(" "), 0, 3)))))},
                   "v")
    vocab = tiny_bpe_vocab
    index = Index.from_grammar(g, vocab)
    ref = naive.Automaton(g)
    a = index._auto
    limit = index._limit
    rng = random.Random(3)
    from dotjson.automaton.keys import BLOCK

    opens = "".join(rng.choice("[(") for _ in range(limit + 3 * BLOCK + 6)).encode()
    for depth in list(range(limit - 3, limit + 6)) + list(range(limit + BLOCK - 3, limit + 3 * BLOCK + 6, 3)):
        data = opens[:depth]
        close = b"]" if data[-1:] == b"[" else b")"
        s, r = a.walk_bytes(index.initial_state, data), ref.walk_bytes(ref.start, data)
        for tail in (b"", b"x", b"x" + close) + ((b"x) ",) if close == b")" else ()):
            s2, r2 = a.walk_bytes(s, tail), ref.walk_bytes(r, tail)
            assert s2 >= 0 and r2 >= 0
            m = index.mask(s2)
            got = {t for t in range(vocab.max_token_id()) if (int(m[t >> 5]) >> (t & 31)) & 1}
            assert got == reference_mask(ref, r2, vocab), (depth, tail)
    # cuts at multiples of BLOCK non-nullable items from the bottom: a periodic stack has at
    # most BLOCK keys however deep it goes, and each key repeats every BLOCK levels
    lo = limit + 2 * BLOCK
    deep = {d: a.walk_bytes(index.initial_state, b"[" * d) for d in range(lo, lo + 3 * BLOCK)}
    keys = {d: a.key_state(s, limit) for d, s in deep.items()}
    assert len(set(keys.values())) <= BLOCK
    assert all(keys[d] == keys[d + BLOCK] for d in range(lo, lo + 2 * BLOCK))
    assert all(keys[d] != s for d, s in deep.items())  # cut
    assert len({a.key_state(a.walk_bytes(index.initial_state, b"[" * d), limit) for d in range(1, limit)}) \
        == limit - 1  # shallower ones are all distinct (the whole stack within reach)


def test_budgets_raise_from_status_codes():
    g = ir.Grammar({"v": ir.Alt((ir.Lit("x"), ir.Seq((ir.Lit("["), ir.Ref("v"), ir.Lit("]")))))},
                   "v")
    with pytest.raises(LimitExceededError, match="budget of 30 states"):
        Automaton(g, max_states=30).is_prefix(b"[" * 40)
    hard = ir.Grammar({"s": ir.And((ir.Repeat(ir.Chars(((0x61, 0x62),)), 0, None),
                                    ir.Repeat(ir.Lit("ab"), 300, 300),
                                    ir.Repeat(ir.Lit("abab"), 0, None)))}, "s")
    with pytest.raises(LimitExceededError, match="fuel"):
        Automaton(hard, fuel=50)
    assert issubclass(LimitExceededError, DotjsonError)


def test_round_trip_through_arrays():
    from dotjson.automaton.persist import export_state, import_state

    g = schema_to_grammar(_maskbench()[3])
    a = Automaton(g)
    a.walk_bytes(a.start, b'{"')
    st_ = export_state(a)
    b = import_state(g, st_["meta"], st_["arrays"])
    assert b.n_states == a.n_states and b.n_terms == a.n_terms
    compare_pair(a, b, seed=3)
    bad = dict(st_["arrays"])
    ti = bad["ti"].copy()
    ti[-1, 1] = ti.shape[0] + 5
    bad["ti"] = ti
    with pytest.raises(ValueError):
        import_state(g, st_["meta"], bad)


def compare_pair(a, b, seed):
    rng = random.Random(seed)
    s, r = a.start, b.start
    for _ in range(60):
        la, lb = _live(a, s), _live(b, r)
        assert np.array_equal(la, lb)
        live = np.flatnonzero(la)
        if live.size == 0:
            break
        x = int(live[rng.randrange(live.size)])
        s, r = int(a.trans[s, x]), int(b.trans[r, x])


@pytest.mark.parametrize("case", ["maskbench", "any_order"])
def test_threads_share_one_index_with_identical_masks(tiny_bpe_vocab, case):
    # any_order: rule-family rules get ids (and the store's rule_body array grows) while the
    # threads walk; lazily compiled schema rules likewise in both cases
    schema, opts = ((_maskbench()[5], {}) if case == "maskbench"
                    else (_ANY_ORDER[2], {"property_order": "any", "close_objects": False}))
    vocab = tiny_bpe_vocab
    rng = random.Random(1)
    probe = Index(schema, vocab, **opts)
    paths = []
    for _ in range(8):
        s, path = probe.initial_state, []
        for _ in range(30):
            m = probe.mask(s)
            ids = [t for t in range(vocab.max_token_id()) if (int(m[t >> 5]) >> (t & 31)) & 1
                   and t not in vocab.eos_token_ids]
            if not ids:
                break
            t = rng.choice(ids)
            path.append(t)
            s = probe.next_state(s, t)
        paths.append(path)

    def masks(index, path):
        s, out = index.initial_state, []
        for t in path:
            out.append(index.mask(s).tobytes())
            s = index.next_state(s, t)
        return out

    expect = [masks(Index(schema, vocab, **opts), p) for p in paths]
    shared = Index(schema, vocab, **opts)
    got = [None] * len(paths)

    def work(i):
        got[i] = masks(shared, paths[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(paths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expect
    assert DEAD == -2
