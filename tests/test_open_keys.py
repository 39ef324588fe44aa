"""An open object's key positions read through shared heads (``Masker._open_key_mask``): a state
``(K | Diff(L, N) Y) R`` -- the key set of the members offered beside an undeclared key, ``L``
the JSON string content (the front end's ``ir.FreeText`` fact) less the declared names' rests --
takes the mask of ``L Y R`` (a head every such position of every index shares, and its exits
walked from what follows), except the tokens completing a declared name: those are walked from
the state one by one, and where the key's prefix is a whole name the tokens starting with its
closing quote are that member's (its value's head, shared by every member of that value).

Checked: the masks at every byte of documents, and along random token walks, against the same
index walking those states whole (``_open_keys = False``) and against the reference walk (no
shortcut at all), on the three shipped vocabularies; names that are prefixes of others,
non-ASCII names, names holding a quote, a backslash or a control character, the empty name,
names spelt whole in one token with their quote and colon (``name":``), objects of many names
(the names' walk instead of their list), required members, members that cannot complete,
``patternProperties`` and ``propertyNames`` (not this shape: walked whole), an undeclared
member's own schema, both spelling policies, both property orders, JSON's whitespace; the
shortcut taken where it should be.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Index, masks
from dotjson._kernels import walk

from naive import assert_same_masks, walk_against_reference

NAMES = ["alpha", "alphabet", "alp", "name", "names", "id", "type", "value", "description",
         "caf\u00e9", "\u65e5\u672c", 'quote"d', "back\\slash", "tab\tx", "", "p1", "p10",
         "__", "x_", "x__"]  # (Llama 3 spells ``__":\n``, ``_"`` and ``_",`` in one token: a name's end)


def _object(names, **extra):
    kinds = [{"type": "integer"}, {"type": "string"}, {"type": "boolean"},
             {"type": "object", "properties": {"alpha": {"type": "integer"}, "id": {"type": "string"}}},
             {"type": "array", "items": {"type": "integer"}}, {"type": "string", "minLength": 1}]
    return {"type": "object", "properties": {n: kinds[i % len(kinds)] for i, n in enumerate(names)}, **extra}


_SCHEMAS = {
    "open": _object(NAMES),
    "required": _object(NAMES, required=["id", "alpha"]),
    "typed extras": _object(NAMES[:9], additionalProperties={"type": "integer"}),
    "object extras": _object(NAMES[:6], additionalProperties={"type": "object", "properties": {"k": {"type": "string"}}}),
    "many names": _object(NAMES + [f"m{i:03d}" for i in range(120)]),
    "dead member": {**_object(NAMES[:8]), "properties": {
        **_object(NAMES[:8])["properties"], "alp": {"type": "string", "minLength": 3, "maxLength": 2}}},
    "patterns": _object(NAMES[:8], patternProperties={"^x_": {"type": "integer"}}),
    "property names": _object(NAMES[:8], propertyNames={"maxLength": 12}),
    "nested": {"type": "object", "properties": {
        "alpha": _object(NAMES[:9]), "items": {"type": "array", "items": _object(NAMES[3:12])},
        "name": {"type": "string"}}},
}

def _value(schema, k):
    t = schema.get("type")
    if t == "integer":
        return k
    if t == "string":
        return "v" * (k % 3 + schema.get("minLength", 0))
    if t == "boolean":
        return k % 2 == 0
    if t == "array":
        return list(range(k % 3))
    return {"alpha": k, "id": "i"} if k % 2 else {}


def _doc(case, names, extra=None):
    """A document of ``_SCHEMAS[case]`` holding ``names`` (declared ones in schema order;
    others undeclared, with value ``extra`` or a JSON value of every kind in turn)."""
    props = _SCHEMAS[case]["properties"]
    order = list(props)
    declared = iter(sorted((n for n in names if n in props), key=order.index))
    names = [next(declared) if n in props else n for n in names]  # (schema order, extras kept in place)
    anys = [[1, {"a": None}], "s", 2.5, {"k": "v", "z": [True]}, None, ""]
    return {n: _value(props[n], i) if n in props else (extra if extra is not None else anys[i % len(anys)])
            for i, n in enumerate(names)}


_DOCS = {
    "open": [_doc("open", ["alpha", "alphabet", "zeta", "alp", "caf\u00e9", "", "quote\"d", "back\\slash",
                           "tab\tx", "name", "names", "nam", "\u65e5\u672c", "description", "p1", "p10", "alphab"]),
             _doc("open", ["name", "id", "x"]), {}, {"": False},
             _doc("open", ["x", "x_", "x__", "__", "_", "x___"])],
    "required": [_doc("required", ["alpha", "zz", "id", "name"]), _doc("required", ["alpha", "id"])],
    "typed extras": [_doc("typed extras", ["alpha", "other", "name", "id", "names_"], 3)],
    "object extras": [_doc("object extras", ["alpha", "o", "name", "id"], {"k": "v", "z": 1})],
    "many names": [_doc("many names", ["alpha", "other", "name", "m007", "m119"])],
    "dead member": [_doc("dead member", ["alpha", "alphabet", "zeta", "name"])],
    "patterns": [_doc("patterns", ["alpha", "x_1", "y", "name"], 2)],
    "property names": [_doc("property names", ["alpha", "short", "name"])],
    "nested": [{"alpha": {"alp": True, "q": "s"}, "items": [{"name": 1, "z": "s", "id": False}, {}], "name": "n",
                "w": 1}],
}
_TEXTS = {case: [json.dumps(d, ensure_ascii=False, separators=(",", ":")) for d in docs] +
          [json.dumps(docs[0], ensure_ascii=False, indent=1)] for case, docs in _DOCS.items()}


def _indexes(schema, vocab, **kw):
    fast = Index(schema, vocab, close_objects=False, **kw)
    slow = Index(schema, vocab, close_objects=False, **kw)
    slow._masker._open_keys = False
    ref = Index(schema, vocab, close_objects=False, **kw)
    m = ref._masker
    m._plain_runs, m._heads, m._special_mode, m._class_roots, m._key_roots = False, False, walk.WALK_ALL, False, False
    return fast, slow, ref


class _Count:
    """Counts the masks the shortcut answered while the block runs."""

    def __enter__(self):
        self.n = 0
        self.real = real = masks.Masker._open_key_mask

        def spy(m, state):
            got = real(m, state)
            self.n += got is not None
            return got

        masks.Masker._open_key_mask = spy
        return self

    def __exit__(self, *exc):
        masks.Masker._open_key_mask = self.real


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("case", sorted(_SCHEMAS))
def test_open_key_masks_equal_the_walk(request, vocab_name, case):
    vocab = request.getfixturevalue(vocab_name)
    fast, slow, ref = _indexes(_SCHEMAS[case], vocab)
    with _Count() as c:
        for text in _TEXTS[case]:
            data = text.encode()
            assert fast._auto.matches(data), text
            assert_same_masks(fast, slow, data)
            assert_same_masks(fast, ref, data)
    if case not in ("patterns", "property names"):
        assert c.n > 0  # (the shortcut answered: the test compares it, not the walk with itself)


@pytest.mark.parametrize("order,spellings,ws", [("schema", "any", "bounded"), ("any", "canonical", "bounded"),
                                                 ("schema", "canonical", "json"), ("any", "any", "json")])
def test_open_key_masks_in_every_configuration(llama3_vocab, order, spellings, ws):
    schema = _SCHEMAS["required"] if order == "schema" else _SCHEMAS["open"]
    kw = dict(property_order=order, spellings=spellings, whitespace=ws)
    fast, slow, ref = _indexes(schema, llama3_vocab, **kw)
    texts = _TEXTS["required"] + ['{\n  "alpha" : 0,\t"id" : "i" }']
    if spellings == "any":
        texts.append('{"\\u0061lpha":1,"id":"i","\\u00e9t\\u00e9":3}')
    with _Count() as c:
        for text in texts:
            data = text.encode()
            if not fast._auto.matches(data):
                assert not ref._auto.matches(data), text
                continue
            assert_same_masks(fast, slow, data)
            assert_same_masks(fast, ref, data)
    assert c.n > 0


@pytest.mark.parametrize("case", ["open", "typed extras", "many names", "nested"])
def test_random_token_walks_agree(llama3_vocab, case):
    """Token walks (any allowed token: quotes, colons and values inside one token, a declared
    name's ``name":`` token among them) agree with the reference walk at every state."""
    fast, _, ref = _indexes(_SCHEMAS[case], llama3_vocab)
    toks = [llama3_vocab.token_bytes(i).decode("utf-8", "replace") for i in range(llama3_vocab.max_token_id())]
    eos = llama3_vocab.eos_token_ids[0]

    def prefer_keys(rng, choices):  # (mostly tokens holding a quote: keys and their ends)
        quoted = [t for t in choices if '"' in toks[t]]
        return rng.choice(quoted if quoted and rng.random() < 0.7 else choices)

    with _Count() as c:
        walk_against_reference(fast, ref, toks, eos, lambda s: True, seeds=6, steps=40,
                               choose=prefer_keys, label=(case,))
    assert c.n > 0


def test_the_shortcut_is_taken_at_every_key_position(llama3_vocab):
    """Each position of an open object's key while a name may still be spelt -- just after its
    opening quote, inside it, at a whole name -- is answered by the shortcut, not walked whole."""
    schema = _SCHEMAS["open"]
    text = '{"alphabet":"x","zeta":1,"description":true}'
    idx = Index(schema, llama3_vocab, close_objects=False)
    assert idx._auto.matches(text.encode())
    answered = []
    for i in range(len(text) + 1):
        s = idx._auto.walk_bytes(idx.initial_state, text[:i].encode())
        with idx._auto.lock:
            ks = idx._auto.key_state(s, idx._masker._limit)
            got = idx._masker._open_key_mask(ks)
        if got is not None:
            answered.append(text[:i])
            assert np.array_equal(got, idx.mask(s))
    # the first key's positions, the second's, the third's
    for prefix in ('{"', '{"alpha', '{"alphabet', '{"alphabet":"x","', '{"alphabet":"x","zeta":1,"',
                   '{"alphabet":"x","zeta":1,"desc', '{"alphabet":"x","zeta":1,"description'):
        assert prefix in answered, prefix
    # a string value, and a key no name starts with (``"ze``: a plain string's head)
    assert '{"alphabet":"x' not in answered and '{"alphabet":"x","ze' not in answered


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("case", ["open", "required", "typed extras", "nested"])
def test_any_order_key_positions_equal_the_walk(request, vocab_name, case):
    """In any order the names not seen yet are a trie written out, a name alone in its branch
    inline (``b'a' b'm' b'e' b'"' ws : ws V next``, or at a whole name ``b'"' ws : ...``):
    those branches read as chains (``_chain_word``), each a word of the undeclared key's
    ``N``, and the masks still equal the walk and the reference, across seen names (a seen
    name is in ``N`` but spelt by no branch)."""
    vocab = request.getfixturevalue(vocab_name)
    fast, slow, ref = _indexes(_SCHEMAS[case], vocab, property_order="any")
    texts = _TEXTS[case] + [json.dumps(dict(reversed(list(d.items()))), ensure_ascii=False, separators=(",", ":"))
                            for d in _DOCS[case][:1]]
    with _Count() as c:
        for text in texts:
            data = text.encode()
            assert fast._auto.matches(data), text
            assert_same_masks(fast, slow, data)
            assert_same_masks(fast, ref, data)
    assert c.n > 0


def test_any_order_chains_are_answered(llama3_vocab, monkeypatch):
    """Where one name is left under the key's prefix (``"ty`` once ``type`` is the only name
    starting so), at a whole name with no longer one (``"type``), and at one whose longer one
    was seen already (``"alpha``), the shortcut answers (a chain beside the undeclared key),
    equal to the walk; where a chain's word is not one of ``N``'s it refuses."""
    schema = _object(["type", "alpha", "alphabet", "id"])  # (integer, string, boolean, object)
    text = '{"alphabet":true,"type":1,"alpha":"s","id":{},"zz":2}'
    idx = Index(schema, llama3_vocab, close_objects=False, property_order="any")
    slow = Index(schema, llama3_vocab, close_objects=False, property_order="any")
    slow._masker._open_keys = False
    assert idx._auto.matches(text.encode())
    m = idx._masker
    answered = []
    for i in range(len(text) + 1):
        s = idx._auto.walk_bytes(idx.initial_state, text[:i].encode())
        with idx._auto.lock:
            ks = idx._auto.key_state(s, m._limit)
            got = m._open_key_mask(ks)
        if got is not None:
            answered.append(text[:i])
            s2 = slow._auto.walk_bytes(slow.initial_state, text[:i].encode())
            assert np.array_equal(got, slow.mask(s2)), text[:i]
    for prefix in ('{"alphabet":true,"ty', '{"alphabet":true,"type', '{"alphabet":true,"type":1,"alp',
                   '{"alphabet":true,"type":1,"alpha', '{"alphabet":true,"type":1,"alpha":"s","i'):
        assert prefix in answered, prefix
    # the check is what keeps it exact: N's words without the chain's, and it refuses
    fresh = Index(schema, llama3_vocab, close_objects=False, property_order="any")
    s = fresh._auto.walk_bytes(fresh.initial_state, b'{"alphabet":true,"ty')
    fm = fresh._masker
    real = type(fm)._words
    monkeypatch.setattr(type(fm), "_words", lambda self, t: tuple(w for w in (real(self, t) or ()) if w != b"pe"))
    with fresh._auto.lock:
        assert fm._open_key_mask(fresh._auto.key_state(s, fm._limit)) is None


def test_the_vocabulary_table_reads_escapes(llama3_vocab):
    """The table of tokens by their text before an unescaped closing quote: an escaped quote is
    text, and a token holding only escaped quotes is in no entry."""
    idx = Index(_SCHEMAS["open"], llama3_vocab, close_objects=False)
    holding, starting, index = idx._masker._close_sets(ord('"'), ord("\\"))
    v = llama3_vocab
    for text, ids in index.items():
        for i in ids[:3]:
            b = v.token_bytes(i)
            assert b.startswith(text) and b[len(text):len(text) + 1] == b'"'
            assert not text.endswith(b"\\") or text.endswith(b"\\\\")
    some = [i for i in range(v.max_token_id()) if v.token_bytes(i) == b'\\"']
    for i in some:
        assert all(i not in ids for ids in index.values())
    assert all((starting[i >> 5] >> (i & 31)) & 1 for i in index.get(b"", []))


def test_the_module_imports_first():
    """``dotjson.open_keys`` is a part of ``dotjson.masks`` (which imports it): imported on its
    own, first in a process, it must not meet the masker half made."""
    import subprocess
    import sys

    got = subprocess.run([sys.executable, "-c", "import dotjson.open_keys, dotjson.masks"],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr


def _reference_term_words(x, ti, pool, bw, memo, cap):
    """The words of a term as ``open_keys._term_words`` first computed them (a recursive call per
    byte of a name): the reference its chain loop is checked against."""
    from dotjson.automaton import kernels as K

    hit = memo.get(x, 0)
    if hit != 0:
        return hit
    k = ti.item(x, 0)
    if x == K.EPS:
        out = (b"",)
    elif x == K.EMPTY:
        out = ()
    elif k == K.K_BYTES:
        out = [bytes((b,)) for b in range(256) if (bw.item(ti.item(x, 1), b >> 6) >> (b & 63)) & 1]
        out = tuple(out) if len(out) <= 4 else None
    elif k == K.K_SEQ:
        head = _reference_term_words(ti.item(x, 1), ti, pool, bw, memo, cap)
        rest = _reference_term_words(ti.item(x, 2), ti, pool, bw, memo, cap) if type(head) is tuple else head
        if type(head) is not tuple or type(rest) is not tuple:
            out = head if type(head) is not tuple else rest
        elif len(head) * len(rest) > cap:
            out = "too many"
        else:
            out = tuple(u + v for u in head for v in rest)
    elif k == K.K_ALT:
        o, n = ti.item(x, 1), ti.item(x, 2)
        got, out = [], None
        for j in range(n):
            sub = _reference_term_words(pool.item(o + j), ti, pool, bw, memo, cap)
            if type(sub) is not tuple:
                out = sub
                break
            got.extend(sub)
        else:
            out = tuple(got) if len(got) <= cap and n <= cap else "too many"
    else:
        out = None
    memo[x] = out
    return out


@pytest.mark.parametrize("case", ["open", "many names", "nested"])
def test_the_names_words_equal_the_reference(llama3_vocab, case):
    """Every term whose words the key positions of a document asked for (the names' rests, their
    alternations, the chains' tails memoized on the way) has the words the recursive reference
    finds, in the same order, with the same verdicts past the cap (several caps)."""
    from dotjson import open_keys
    from dotjson.automaton import kernels as K

    idx = Index(_SCHEMAS[case], llama3_vocab, close_objects=False)
    doc = _TEXTS[case][0].encode()
    for i in range(len(doc) + 1):
        s = idx._auto.walk_bytes(idx.initial_state, doc[:i])
        if s >= 0:
            idx.mask(s)
    memo = idx._masker._word_memo
    assert len(memo) > 15
    S = idx._auto.store
    ti, pool, bw = S[K.S_TI], S[K.S_POOL], S[K.S_BW]
    for t, got in list(memo.items()):
        assert got == _reference_term_words(t, ti, pool, bw, {}, idx._masker._OPEN_KEY_WORDS), t
        for cap in (1, 2, 5, 64):
            assert open_keys._term_words(t, ti, pool, bw, {}, cap) == _reference_term_words(t, ti, pool, bw, {}, cap)
