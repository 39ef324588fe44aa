"""Wide objects: the key position is a trie of the names a state offers (issues 10 and 14).

The automaton asks for an object's rules one by one and gets, at a key, one alternative per next
character (``dotjson/jsonschema/key_trie.py``); a grammar built whole (rendering, saving) takes the balanced
tree of members instead. Both must denote the same language: these tests compare them on
documents that probe every edge of a name set (prefixes of names, extensions, escapes, order,
duplicates, required members, counters), and check the 10,000-property object exactly.
"""

from __future__ import annotations

import json
import random

import numpy as np

import pytest

from dotjson.automaton import Automaton
from dotjson.grammar import lark_parses, to_lark
from dotjson.jsonschema.key_trie import INLINE, KeyTrie
from dotjson.jsonschema import schema_to_grammar

# names sharing prefixes at every depth, one the empty string, some needing escapes, non-ASCII
NAMES = (["", "a", "ab", "abc", "abd", "abcd", "b", "ba", "bab", "é", "é1", "日本", "日本語", 'q"uote', "back\\s",
          "tab\tx", "\U0001f600", "\U0001f600x", "sl/ash", "nl\nx", "nl\ry", "\b\f", "\x7f", "u\u2028"]
         + [f"p{i}" for i in range(60)] + [f"item_{i:03d}" for i in range(0, 300, 7)])


def _lazy_and_whole(schema, **kw):
    """An automaton over the lazily built grammar (tries) and one over the grammar built whole
    first (the balanced tree of members), for the same schema."""
    lazy = Automaton(schema_to_grammar(schema, **kw))
    g = schema_to_grammar(schema, **kw)
    g.rules.force()
    return lazy, Automaton(g), g


def _doc(pairs) -> str:
    return "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"


def _probes(names, rng, must=(), n_docs=150):
    """Documents around a name list: valid ones in schema order and near misses (``must``: the
    required names, put in most documents)."""
    keys = [json.dumps(k) for k in names]
    need = [names.index(k) for k in must if k in names]
    out = []
    for _ in range(n_docs):
        picked = rng.sample(range(len(names)), rng.randint(0, min(6, len(names))))
        picked = sorted(set(picked) | (set(need) if rng.random() < 0.8 else set()))
        pairs = [(keys[j], j) for j in picked]
        for k in must:
            if k not in names and rng.random() < 0.8:  # a floating required name: anywhere
                pairs.insert(rng.randint(0, len(pairs)), (json.dumps(k), 0))
        out.append(_doc(pairs))
        if len(pairs) >= 2:
            swapped = list(pairs)
            swapped[0], swapped[-1] = swapped[-1], swapped[0]
            out.append(_doc(swapped))                       # out of schema order
            out.append(_doc(pairs + [pairs[0]]))            # a duplicate key
        if pairs:
            k, v = pairs[rng.randrange(len(pairs))]
            name = json.loads(k)
            out.append(_doc(pairs + [(json.dumps(name + "z"), 0)]))           # an extension
            if name:
                out.append(_doc([(json.dumps(name[:-1]), 0)] + pairs[1:]))    # a proper prefix
                # the same name spelled with a \u escape for its first character
                esc = '"\\u%04x' % ord(name[0]) + json.dumps(name)[2:] if ord(name[0]) < 0x10000 else k
                out.append(_doc([(esc, v)] + pairs[1:]))
            out.append(_doc([(k, '"not an int"')]))
    out += ["{}", '{"":0}', '{"zz":1}', '{"p1":1,"zz":2}']
    return list(dict.fromkeys(out))


@pytest.mark.parametrize("close_objects", [True, False])
def test_trie_and_tree_agree_on_probes(close_objects):
    rng = random.Random(7)
    names = list(NAMES)
    rng.shuffle(names)  # member order unrelated to sorted order
    props = {k: {"type": "integer"} for k in names}
    schemas = [
        {"type": "object", "properties": props},
        {"type": "object", "properties": props, "required": [names[5], names[40], names[-1]]},
        {"type": "object", "properties": props, "minProperties": 2, "maxProperties": 4},
        # a required name outside `properties` (allowed by a pattern) floats among the members
        {"type": "object", "properties": props, "required": ["ab", "floating"], "patternProperties": {"^fl": {}}},
        {"type": "object", "properties": props, "patternProperties": {"^x": {"type": "string"}}},
    ]
    for schema in schemas:
        # (the probes spell names as json.dumps does, \u escapes included: every spelling)
        lazy, whole, _ = _lazy_and_whole(schema, close_objects=close_objects, spellings="any")
        docs = _probes(names, rng, schema.get("required", ()))
        docs += ['{"x1":"s"}', '{"x1":1}', '{"ab":1,"floating":2}', '{"floating":2,"ab":1}']
        accepted = 0
        for d in docs:
            want = whole.matches(d.encode())
            assert lazy.matches(d.encode()) == want, (schema.keys(), d)
            accepted += want
        assert 10 < accepted < len(docs) - 10, (schema.keys(), accepted)  # both sides probed


def test_lark_oracle_on_a_wide_object():
    names = [f"k{i}" for i in range(40)] + ["k", "k1x"]
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in names}, "required": ["k30"]}
    g = schema_to_grammar(schema)
    lazy = Automaton(g)
    text = to_lark(schema_to_grammar(schema))
    for d in ['{"k30":1}', '{"k1":0,"k30":1}', '{"k1":0,"k1x":2,"k30":1}', '{"k":0,"k30":1,"k39":2}',
              '{"k3":0,"k30":1}', '{"k30":1,"k3":0}', '{"k1":0}', '{"k1x":0,"k1":0,"k30":1}', '{"k4":0,"k30":1,"k30":1}']:
        assert lazy.matches(d.encode()) == lark_parses(text, d), d


def _wide(n, **extra):
    return {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}, **extra}


def test_ten_thousand_properties_exact():
    n = 10_000
    schema = _wide(n, required=["p5000"])
    a = Automaton(schema_to_grammar(schema))
    keys = [0, 1, 17, 999, 1000, 4999, 5000, 5001, 9998, 9999]
    good = "{" + ",".join(f'"p{i}":{i}' for i in keys) + "}"
    assert a.matches(good.encode())
    assert a.matches(b'{"p5000":1}')
    assert not a.matches(good.replace('"p5000":5000,', "").encode())          # required missing
    assert not a.matches(b'{"p5000":1,"p5000":2}')                               # duplicate
    assert not a.matches(b'{"p1":1,"p1":1,"p5000":1}')                           # duplicate
    assert not a.matches(b'{"p10000":1,"p5000":1}')                              # undeclared (closed)
    assert not a.matches(b'{"p":1,"p5000":1}')                                   # a prefix of names
    assert not a.matches(b'{"p50000":1}')                                        # an extension
    assert not a.matches(b'{"p5001":1,"p5000":1}')                               # out of order
    assert not a.matches(b'{"p5000":"x"}')                                       # wrong value
    # after p5000 only p5001 .. p9999 may follow: a key prefix none of them has is dead at once
    assert a.walk_bytes(a.start, b'{"p5000":1,"p60') >= 0    # p6000 ..
    assert a.walk_bytes(a.start, b'{"p5000":1,"p4') < 0
    assert a.walk_bytes(a.start, b'{"p5000":1,"p5000') < 0
    assert a.walk_bytes(a.start, b'{"p5000":1,"p5001"') >= 0
    # open objects take the undeclared key
    b = Automaton(schema_to_grammar(schema, close_objects=False, spellings="any"))
    assert b.matches(b'{"p10000":1,"p5000":1}') and b.matches(b'{"p5000":1,"zz":[1]}')
    assert not b.matches(b'{"p5000":1,"p5000":2}')
    # undeclared keys around the declared ones: prefixes, extensions, the empty key; a declared
    # name spelled with an escape is that name (here a duplicate), never an extra
    assert b.matches(b'{"p":1,"p5000":1}') and b.matches(b'{"p5000":1,"p50000":2,"":3,"p5x":[]}')
    assert not b.matches(b'{"p5000":1,"p\\u0035000":2}')
    assert b.matches(b'{"p5000":1,"p\\u00355000":2}')
    assert not b.matches(b'{"p5000":1,"p5":2}')  # p5 is declared: not after p5000, not as an extra
    # what was built is a sliver of the object: a few sub-tries and the members the text named
    assert len(a.rules.names) < 1000


def test_key_trie_positions_and_choice_shape():
    names = ["b", "a", "ab", "abc", "ac"] + [f"z{i}" for i in range(20)]
    t = KeyTrie(names)
    assert t.keys == sorted(names)
    p = t.keys.index("a")
    assert t.end(p, 1) == t.keys.index("b")
    assert [t.keys[q] for q in t.positions(p, 1, 0, 3)] == ["a", "ab"]  # members 0..2 with prefix "a"
    subs = []

    def sub(q, d, pos):
        subs.append((t.keys[q][:d], len(pos)))
        return "ref"

    from dotjson import ir
    t.choice(0, 0, t.positions(0, 0, 0, len(names)), lambda j: ir.lit(f"<{j}>"),
             lambda q, d, pos: sub(q, d, pos) and ir.Ref("s"), lambda s: ir.lit(s))
    assert subs == [("z", 20)] and 20 > INLINE  # the 5 names under "a"/"b" are written in place


def test_index_round_trip_after_lazy_use(tmp_path, llama3_vocab):
    from dotjson import Index

    schema = _wide(300, required=["p150"])
    index = Index(schema, llama3_vocab)
    doc = '{"p3": 1, "p150": 2, "p299": 3}'
    assert index.accepts(doc) and not index.accepts('{"p3": 1, "p299": 3}')
    s = index._auto.walk_bytes(index.initial_state, b'{"p3": 1, "p1')
    before = index.mask(s)
    index.serialize_to_disk(tmp_path / "ix")
    again = Index.deserialize_from_disk(tmp_path / "ix", llama3_vocab)
    s2 = again._auto.walk_bytes(again.initial_state, b'{"p3": 1, "p1')
    assert (again.mask(s2) == before).all()
    assert again.accepts(doc) and again.accepts('{"p150": 0, "p151": 1}')
    assert not again.accepts('{"p151": 1, "p150": 0}') and not again.accepts('{"p3": 1, "p299": 3}')


def _ref_any_order(doc, names, required=(), plo=0, phi=None, closed=True):
    """A reference for property_order="any" objects of integers: each declared name at most
    once, in any order; undeclared names only when open."""
    try:
        pairs = json.loads(doc, object_pairs_hook=lambda p: p)
    except ValueError:
        return False
    if not isinstance(pairs, list):
        return False
    seen = [k for k, _ in pairs if k in names]
    if len(set(seen)) != len(seen) or not set(required) <= set(seen):
        return False
    if any(k in names and type(v) is not int for k, v in pairs):
        return False
    if closed and any(k not in names for k, _ in pairs):
        return False
    return plo <= len(pairs) and (phi is None or len(pairs) <= phi)


@pytest.mark.parametrize("close_objects", [True, False])
def test_any_order_trie_against_reference(close_objects):
    rng = random.Random(11)
    names = list(NAMES)
    rng.shuffle(names)
    props = {k: {"type": "integer"} for k in names}
    cases = [({}, {}), ({"required": [names[3], names[50]]}, {"required": [names[3], names[50]]}),
             ({"minProperties": 2, "maxProperties": 3}, {"plo": 2, "phi": 3})]
    for extra, ref in cases:
        schema = {"type": "object", "properties": props, **extra}
        a = Automaton(schema_to_grammar(schema, property_order="any", close_objects=close_objects,
                                        spellings="any"))  # (the probes: json.dumps's spellings)
        docs = _probes(names, rng, extra.get("required", ()))
        # orders other than the schema's
        docs += [_doc([(json.dumps(names[j]), j) for j in rng.sample(range(len(names)), 4)]) for _ in range(60)]
        accepted = 0
        for d in docs:
            want = _ref_any_order(d, set(names), closed=close_objects, **ref)
            assert a.matches(d.encode()) == want, (extra, d)
            accepted += want
        assert 10 < accepted < len(docs) - 10, (extra, accepted)


def test_any_order_ten_thousand_properties_exact():
    n = 10_000
    schema = _wide(n, required=["p5000", "p17"])
    a = Automaton(schema_to_grammar(schema, property_order="any"))
    keys = [9999, 17, 4999, 5000, 0, 1000, 1]
    good = "{" + ",".join(f'"p{i}":{i}' for i in keys) + "}"
    assert a.matches(good.encode())
    assert a.matches(b'{"p5000":1,"p17":2}') and a.matches(b'{"p17":2,"p5000":1}')
    assert not a.matches(good.replace('"p17":17,', "").encode())                 # required missing
    assert not a.matches(b'{"p17":2,"p5000":1,"p17":3}')                          # duplicate
    assert not a.matches(b'{"p17":2,"p5000":1,"p10000":3}')                       # undeclared (closed)
    assert not a.matches(b'{"p17":2,"p5000":1,"p":3}')                            # a prefix of names
    # a seen name is no longer offered, its prefix still is where other names extend it
    assert a.walk_bytes(a.start, b'{"p17":2,"p17"') < 0
    assert a.walk_bytes(a.start, b'{"p17":2,"p17') >= 0                           # p170 ..
    assert len(a.rules.names) < 2000


# --------------------------------------------------------------------------------------------
# Native key sets (kernels.K_KEYS): the key position of an object without counters or floating
# names is built from the sorted names in the term store, not from the trie of rules that is
# still its IR body. The trie of rules is the reference.


def _trie_rules_index(schema, vocab, monkeypatch, **kw):
    """An Index whose automaton compiles every key position from its IR body (no key sets)."""
    from dotjson import Index, ir

    with monkeypatch.context() as m:
        m.setattr(ir.LazyRules, "native", lambda self, name: None)
        return Index(schema, vocab, **kw)


def _random_walks_agree(native, ref, vocab, rng, save_to, steps, what, plain_first=0.0):
    """Four random walks of up to ``steps`` tokens through ``native``, its masks equal to
    ``ref``'s at every step (tokens not starting with whitespace chosen with probability
    ``plain_first``); ``native`` saved to ``save_to`` and loaded again after the second walk."""
    from dotjson import Index

    for walk in range(4):
        s1, s2 = native.initial_state, ref.initial_state
        for _ in range(steps):
            m1 = native.mask(s1)
            assert (m1 == ref.mask(s2)).all(), (what, walk)
            allowed = [t for t in np.flatnonzero(np.unpackbits(m1.view(np.uint8), bitorder="little"))
                       if t < vocab.max_token_id()]
            if not allowed:
                break
            plain = [t for t in allowed if vocab.token_bytes(t)[:1] not in (b" ", b"\t", b"\n", b"\r")] \
                if plain_first else []
            t = int(rng.choice(plain if plain and rng.random() < plain_first else allowed))
            if t in vocab.eos_token_ids:
                break
            s1, s2 = native.next_state(s1, t), ref.next_state(s2, t)
        if walk == 1:
            native.serialize_to_disk(save_to)
            native = Index.deserialize_from_disk(save_to, vocab)


def _prefix_states(index, doc: bytes):
    a = index._auto
    out = []
    for i in range(len(doc) + 1):
        s = a.walk_bytes(index.initial_state, doc[:i])
        if s < 0:
            break
        out.append((i, s))
    return out


def _assert_same_on_prefixes(native, ref, doc: bytes, what) -> None:
    """The two indexes reach states at the same prefixes of ``doc``, with the same masks there,
    and agree on ``doc`` when both read it whole."""
    ours, theirs = _prefix_states(native, doc), _prefix_states(ref, doc)
    assert [i for i, _ in ours] == [i for i, _ in theirs], doc
    for (i, s), (_, t) in zip(ours, theirs):
        assert (native.mask(s) == ref.mask(t)).all(), (doc[:i], what)
    if len(ours) == len(doc) + 1:
        assert native.accepts(doc) == ref.accepts(doc), doc


@pytest.mark.parametrize("close_objects", [True, False])
def test_key_sets_mask_like_trie_rules(llama3_vocab, monkeypatch, close_objects):
    from dotjson import Index

    rng = random.Random(11)
    names = list(NAMES)
    rng.shuffle(names)
    props = {k: {"type": "integer"} for k in names}
    # a member whose value has no instance: never offered (its name is a dead end)
    props["dead"] = {"type": "integer", "minimum": 5, "maximum": 1}
    props["deaf"] = {"type": "integer"}
    schemas = [
        {"type": "object", "properties": props},
        {"type": "object", "properties": props, "required": [names[5], names[40], names[-1]]},
        {"type": "object", "properties": {"a": {"type": "object", "properties": props}, "b": {}}},
    ]
    docs = [b'{"' + json.dumps(k).encode()[1:] + b':1}' for k in names] + [
        b'{"p1":1,"p10":2,"p5":3,"deaf":4}', b'{"\\u0070\\u00351":1}', b'{"\\u00e9":1,"\\u65e5\\u672c":2}',
        b'{"q\\"uote":1,"back\\\\s":2,"tab\\tx":3}', b'{"\\ud83d\\ude00x":1}', b'{"sl\\/ash":1,"nl\\nx":2,"nl\\u000Dy":3,"\\b\\u000c":4,"\x7f":5,"u\\u2028":6}',
        b'{"sl/ash":1,"nl\\u000ax":2,"\\u0062\\f":3}', b'{"a":{"p3":1,"p30":2},"b":[]}',
        b'{"dea', b'{"item_007":1,"item_105":2,"item_294":3}',
    ]
    for schema in schemas:
        native = Index(schema, llama3_vocab, close_objects=close_objects)
        ref = _trie_rules_index(schema, llama3_vocab, monkeypatch, close_objects=close_objects)
        for doc in docs:
            _assert_same_on_prefixes(native, ref, doc, schema.keys())
        assert native._auto._ktab, "the key sets were not used"
        _assert_interned(native._auto)
        a = native._auto
        if "a" not in schema["properties"]:
            assert a.walk_bytes(native.initial_state, b'{"dead') < 0  # no instance: never offered
            assert a.walk_bytes(native.initial_state, b'{"deaf"') >= 0


@pytest.mark.parametrize("variant", ["free", "required", "max", "open"])
def test_any_order_key_sets_mask_like_trie_rules(llama3_vocab, monkeypatch, variant, tmp_path):
    from dotjson import Index

    # property_order="any": every key position (a set of members seen) is a key set of its own
    # over the object's names, the seen members excluded; same masks as the trie of rules
    rng = random.Random(5)
    names = list(NAMES)
    rng.shuffle(names)
    props = {k: {"type": "integer"} for k in names}
    props["dead"] = {"type": "integer", "minimum": 5, "maximum": 1}
    schema = {"type": "object", "properties": props}
    if variant == "required":
        schema["required"] = [names[3], "p7"]
    elif variant == "max":
        schema["maxProperties"] = 3
    kw = {"property_order": "any", "close_objects": variant != "open"}
    docs = [b'{"p7":1,"p3":2,"' + json.dumps(names[3]).encode()[1:] + b':3}', b'{"p3":1,"p3":2}',
            b'{"\\u0070\\u00351":1,"p50":2,"p5":3}', b'{"\\u00e9":1,"\\u65e5\\u672c":2,"a":3}',
            b'{"q\"uote":1,"back\\s":2,"tab\tx":3,"nl\nx":4}', b'{"dead":1}', b'{"dea', b'{"zz":1,"p1":2}',
            b'{"item_105":1,"item_007":2,"p59":3,"p5":4,"p7":5}']
    native = Index(schema, llama3_vocab, **kw)
    ref = _trie_rules_index(schema, llama3_vocab, monkeypatch, **kw)
    for doc in docs:
        _assert_same_on_prefixes(native, ref, doc, variant)
    assert len(native._auto._ktab) >= 3, "the key positions were not key sets"
    assert not native.accepts(b'{"p3":1,"p3":2}')  # each member at most once
    assert native.accepts(b'{"p7":1,"p3":2}') == (variant != "required")
    _assert_interned(native._auto)
    # saved with its key set tables settled, loaded, and it goes on deciding the same
    native.serialize_to_disk(tmp_path / "ix")
    loaded = Index.deserialize_from_disk(tmp_path / "ix", llama3_vocab)
    for doc in docs[:3]:
        assert loaded.accepts(doc) == ref.accepts(doc), doc


@pytest.mark.parametrize("order", ["schema", "any"])
def test_a_loaded_index_with_key_sets_saves_again(llama3_vocab, tmp_path, order):
    from dotjson import Index

    # the saved key set tables are those the terms use, not only the ones this process made
    # (a loaded index made none: saved again, it once wrote no table and could not be loaded)
    index = Index(_wide(200), llama3_vocab, property_order=order)
    assert index.accepts('{"p1":1,"p150":2}') and index._auto._ktab
    index.serialize_to_disk(tmp_path / "a")
    loaded = Index.deserialize_from_disk(tmp_path / "a", llama3_vocab)
    loaded.serialize_to_disk(tmp_path / "b")
    again = Index.deserialize_from_disk(tmp_path / "b", llama3_vocab)
    assert again.accepts('{"p1":1,"p150":2}')
    assert again.accepts('{"p150":1,"p1":2}') == (order == "any")


def test_key_sets_are_shared_and_settled_lazily(llama3_vocab):
    from dotjson import Index

    n = 2000
    index = Index(_wide(n), llama3_vocab)
    a = index._auto
    assert index.accepts('{"p1":1,"p1500":2}')
    (T,) = a._ktab.values()
    keyset = a._kpy[T]
    pool = a._a["pool"]
    alive = pool[pool[T + 4] : pool[T + 4] + n]  # KT_ALIVE
    tails = pool[pool[T + 5] : pool[T + 5] + n]  # KT_TAIL
    # settled: every member the builder vouches for, written with the table (its values all
    # have instances); tails: only names the text reached
    assert (alive == 1).sum() >= 2 and 2 <= (tails >= 0).sum() <= 8
    assert (alive == 1).all() and keyset.alive_many(np.arange(n)).all()
    # the states after p1 offer p2 .. p1999: a range of names they all offer is one term
    s1 = a.walk_bytes(index.initial_state, b'{"p1":1,"p19')
    s2 = a.walk_bytes(index.initial_state, b'{"p2":1,"p19')
    assert s1 >= 0 and s2 >= 0 and a.term_of(s1) == a.term_of(s2)
    # ... and so is a range whose offered members are the same, whichever the states offer
    # elsewhere: after p1100 and after p1200 the names under "p15" offer p1500 .. p1999 (the
    # kernels make the context of those alone, interned)
    s1 = a.walk_bytes(index.initial_state, b'{"p1100":1,"p15')
    s2 = a.walk_bytes(index.initial_state, b'{"p1200":1,"p15')
    s3 = a.walk_bytes(index.initial_state, b'{"p1550":1,"p15')
    assert s1 >= 0 and s2 >= 0 and a.term_of(s1) == a.term_of(s2) != a.term_of(s3)
    assert index.accepts('{"p1100":1,"p1500":2}') and not index.accepts('{"p1200":1,"p150":2}')
    _assert_interned(a)


def _assert_interned(a):
    """Every term is where its constructor's probe finds it (so no term is ever built twice)."""
    from dotjson.automaton import kernels as K

    st = a._a
    ti, bw, pool, ht = st["ti"], st["bw"], st["pool"], st["ht"]
    mask = ht.shape[0] - 1
    for t in range(a.n_terms):
        i = K.term_hash(ti, bw, pool, t) & mask
        while ht[i] != t:
            assert ht[i] >= 0, f"term {t} ({ti[t].tolist()}) is not where its hash leads"
            i = (i + 1) & mask


def test_saved_key_sets_are_validated(tmp_path, llama3_vocab):
    import numpy as np

    from dotjson import Index
    from dotjson.automaton.persist import _check_keysets, export_state
    from dotjson.automaton import kernels as K
    from dotjson.automaton import keysets as KS

    index = Index(_wide(50), llama3_vocab)
    assert index.accepts('{"p7":1}')
    st = export_state(index._auto)
    ks, pool, n_terms = st["meta"]["keysets"], st["arrays"]["pool"], st["arrays"]["ti"].shape[0]
    assert ks and _check_keysets(ks, pool, n_terms)
    (T, _), = ks
    alive = pool[pool[T + K.KT_ALIVE] : pool[T + K.KT_ALIVE] + 50]
    assert set(alive.tolist()) == {1}  # settled before saving: a loaded index asks no builder
    Y = pool[T + KS.KT_SYN]
    for edit in ("swap", "member", "alive", "context", "syntax", "close", "hex", "short"):
        bad = pool.copy()
        if edit == "swap":  # names out of order: "p0" becomes "pz", before "p1"
            bad[bad[T + K.KT_BLOB] + 1] = 0x7A
        elif edit == "member":
            o = bad[T + K.KT_MEMBER]
            bad[o] = bad[o + 1]
        elif edit == "alive":
            bad[bad[T + K.KT_ALIVE]] = -1
        elif edit == "context":
            bad[bad[T + K.KT_FULL] + 2] = 51
        elif edit == "syntax":  # the string syntax block out of the pool
            bad[T + KS.KT_SYN] = len(bad) - 2
        elif edit == "close":  # a closing byte that is the escape byte
            bad[Y + KS.SY_CLOSE] = bad[Y + KS.SY_ESCAPE]
        elif edit == "hex":  # a byte the kernels' 256-entry tables cannot index
            bad[Y + KS.SY_HEX] = 300
        else:  # "0" given the short escape of a newline (a short escape byte, not "0"'s)
            o = bad[T + KS.KT_SHORT] + bad[T + KS.KT_NCP] - 11  # (characters "0".."9", "p")
            assert bad[bad[T + KS.KT_CP] + bad[T + KS.KT_NCP] - 11] == ord("0") and bad[o] == -1
            bad[o] = ord("n")
        with pytest.raises(ValueError, match="key set"):
            _check_keysets(ks, bad, n_terms)
    with pytest.raises(ValueError):
        _check_keysets([[len(pool), []]], pool, n_terms)
    index.serialize_to_disk(tmp_path / "ix")
    again = Index.deserialize_from_disk(tmp_path / "ix", llama3_vocab)
    assert again.accepts('{"p7":1,"p49":2}') and not again.accepts('{"p49":2,"p7":1}')
    assert np.array_equal(again.mask(again.initial_state), index.mask(index.initial_state))


class _Built:
    """A :class:`dotjson.ir.LazyRules` source with every rule built, some built natively."""

    def __init__(self, rules, native):
        self.rules, self.pending, self.native = rules, {}, native

    def known_language(self, name):
        return (None, None)


def test_key_sets_read_their_string_syntax_from_the_table():
    """The key set kernels know no JSON: names in a made-up string syntax (closed by ``'``, escaped
    by ``%``, ``%x`` and four hex digits, ``%'`` and ``%%``, controls never raw) decode as that
    syntax says, and JSON's quote and escapes are refused."""
    from dotjson import ir
    from dotjson.automaton import DEAD
    from dotjson.errors import GrammarError
    from dotjson.jsonschema.jsonstr import StringSyntax
    from dotjson.jsonschema.key_trie import KeySet

    syntax = StringSyntax(close=ord("'"), escape=ord("%"), hex_escape=ord("x"), low=0x20,
                          short=((ord("%"), ord("%")), (ord("'"), ord("'"))))

    def spelling(ch):
        raw = [] if ch in "'%" or ch < " " else [ir.Lit(ch)]
        short = [ir.Lit("%" + ch)] if ch in "'%" else []
        return ir.alt(*raw, *short, ir.Lit(f"%x{ord(ch):04x}"))

    def automaton(syntax):
        names = ["a'b", "ab", "a%", "b\n", "é"]
        keys = KeySet(KeyTrie(names), lambda js: np.ones(np.shape(js), dtype=np.bool_), lambda j: "end",
                      spelling=spelling, syntax=syntax)
        body = ir.alt(*(ir.seq(*map(spelling, nm), ir.Lit("'"), ir.Ref("end")) for nm in names))
        rules = {"start": ir.seq(ir.Lit("'"), ir.Ref("keys")), "keys": body, "end": ir.Lit("!")}
        return Automaton(ir.Grammar(ir.LazyRules(_Built(rules, {"keys": (keys, 0, len(names))})), "start"))

    a = automaton(syntax)

    def accepts(text):
        s = a.walk_bytes(a.start, text.encode())
        return s != DEAD and bool(a.accepting[s])

    for text in ("'a%'b'!", "'ab'!", "'a%%'!", "'a%x0027b'!", "'%x0061b'!", "'b%x000a'!", "'é'!", "'%x00e9'!"):
        assert accepts(text), text
    assert a._ktab  # (the key position was the native key set, not the rules' IR)
    for text in ('\'ab"!', "'a'b'!", "'a\\'b'!", "'a\\u0027b'!", "'b\n'!", "'a%'!", "'a%n'!", "'ab'"):
        assert not accepts(text), text
    bad = automaton(syntax._replace(close=ord("%")))  # (a key set table is written when reached)
    with pytest.raises(GrammarError, match="syntax.*closing byte is the escape byte"):
        bad.walk_bytes(bad.start, b"'a")


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_key_sets_random_walks_like_trie_rules(llama3_vocab, monkeypatch, tmp_path, seed):
    from dotjson import Index

    # random names (escapes, non-ASCII, astral), values, required members, nesting, open objects
    # and both property orders; random walks through the native index, masks compared with the
    # trie of rules at every step, the native index saved and loaded halfway
    rng = random.Random(seed)
    alphabet = list("abcp0123456789_") + ['"', "\\", "/", "\n", "\t", "\b", "é", "日", "\U0001f600", "\x7f",
                                           "\u2028", " "]
    for trial in range(4):
        n = rng.choice([70, 150, 400])
        names: set = set()
        while len(names) < n:
            pool = alphabet[:15] if rng.random() < 0.8 else alphabet
            names.add("".join(rng.choice(pool) for _ in range(rng.randint(0, 6))))
        names = sorted(names)
        rng.shuffle(names)
        props = {k: rng.choice([{"type": "integer"}, {"type": "string", "maxLength": 3}, {"type": "boolean"},
                                {"enum": [1, "x"]}]) for k in names}
        schema = {"type": "object", "properties": props,
                  "required": rng.sample(names, rng.randint(0, 3)) if rng.random() < 0.5 else []}
        if rng.random() < 0.3:
            schema = {"type": "object", "properties": {"o": schema, "z": {"type": "null"}}}
        kw = {"close_objects": rng.random() < 0.85, "property_order": rng.choice(["any", "schema"])}
        native = Index(schema, llama3_vocab, **kw)
        ref = _trie_rules_index(schema, llama3_vocab, monkeypatch, **kw)
        _random_walks_agree(native, ref, llama3_vocab, rng, tmp_path / f"{trial}", 60, (trial, kw), 0.97)
