"""Key positions walked by their names (``Masker._keys_mask``, ``_kernels.keywalk``): a state whose
head is an object's key set (``K_KEYS(C, p, d) rest``, or a rule whose body is one: the key
position of an object of many members, or of any object in any order) takes the tokens spelling
an offered name's rest from a joint walk of the tries and the sorted names, and makes a state
only where a token leaves the names (a whole name and its closing quote, an escape), instead of a
state per prefix of a name at every key position.

Checked: the masks at every byte of documents against the same index walking key positions as
any state (``_key_roots = False``) and against the reference walk (no shortcut at all), on the
three shipped vocabularies, in both property orders and both spelling policies, with names that
are prefixes of others, non-ASCII names, names holding a quote, a backslash or a control
character, the empty name, members that cannot complete (a required member's value with no
instance, ``maxProperties``), nested objects; the shortcut taken where it should be; the
fallback when its frames do not fit.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Index
from dotjson._kernels import entries, keywalk, walk

from naive import answers_of, assert_same_masks

NAMES = ["alpha", "alphabet", "alp", "beta", "id", "name", "type", "value", "values", "x_y",
         "caf\u00e9", "\u65e5\u672c", 'quote"d', "back\\slash", "tab\tx", "", "enabled",
         "description", "p1", "p10", "p11"] + [f"q{i}" for i in range(12)]


def _object(names, **extra):
    kinds = [{"type": "integer"}, {"type": "string"}, {"type": "boolean"},
             {"type": "object", "properties": {"alpha": {"type": "integer"}, "id": {"type": "string"}}},
             {"type": "array", "items": {"type": "integer"}}]
    return {"type": "object", "properties": {n: kinds[i % len(kinds)] for i, n in enumerate(names)},
            "additionalProperties": False, **extra}


_SCHEMAS = {
    "wide": _object(NAMES),
    "required": _object(NAMES, required=["id", "alpha", "caf\u00e9"]),
    "max": _object(NAMES, maxProperties=3, required=["id"]),
    "dead member": {**_object(NAMES[:12]), "properties": {
        **_object(NAMES[:12])["properties"], "alp": {"type": "string", "minLength": 3, "maxLength": 2}}},
    "nested": {"type": "object", "additionalProperties": False, "properties": {
        "alpha": _object(NAMES[:9]), "alphabet": {"type": "array", "items": _object(NAMES[5:20])},
        **{f"q{i}": {"type": "integer"} for i in range(10)}}},
}


def _value(schema, k):
    t = schema.get("type")
    if t == "integer":
        return k
    if t == "string":
        return "v" * (k % 3)
    if t == "boolean":
        return k % 2 == 0
    if t == "array":
        items = schema["items"]
        return [_value(items, k)] if items["type"] == "object" else list(range(k % 3))
    return _doc(schema, list(schema["properties"])[k % 4::3][:3], k)  # (in schema order)


def _doc(schema, names, k=0):
    """A document of ``schema`` (one of the objects above) holding members ``names``."""
    return {n: _value(schema["properties"][n], k + i) for i, n in enumerate(names)}


_DOCS = {
    "wide": [["alpha", "alphabet", "alp", "caf\u00e9", "", 'quote"d', "tab\tx", "back\\slash",
              "\u65e5\u672c", "p11", "q3", "description"]],
    "required": [["id", "caf\u00e9", "alpha", "q0"]],
    "max": [["id", "p10", "values"]],
    "dead member": [["alpha", "alphabet", "beta"]],
    "nested": [["q3", "alphabet", "alpha"]],
}


def _texts(doc, spellings):
    out = [json.dumps(doc, ensure_ascii=False, separators=(",", ":"))]
    if spellings == "any":  # other spellings of the names: escapes the joint walk hands over
        out.append(json.dumps(doc, ensure_ascii=True, separators=(", ", ": ")).replace("alpha", "\\u0061lpha"))
    return out


def _indexes(schema, vocab, **kw):
    fast = Index(schema, vocab, **kw)
    slow = Index(schema, vocab, **kw)
    slow._masker._key_roots = False
    ref = Index(schema, vocab, **kw)
    m = ref._masker
    m._plain_runs, m._heads, m._special_mode, m._class_roots, m._key_roots = False, False, walk.WALK_ALL, False, False
    return fast, slow, ref


@pytest.mark.parametrize("vocab_name", ["llama3_vocab", "qwen_vocab", "smollm2_vocab"])
@pytest.mark.parametrize("case", sorted(_SCHEMAS))
@pytest.mark.parametrize("order,spellings", [("schema", "canonical"), ("any", "canonical"), ("any", "any")])
def test_key_position_masks_equal_the_walk(request, vocab_name, case, order, spellings):
    vocab = request.getfixturevalue(vocab_name)
    fast, slow, ref = _indexes(_SCHEMAS[case], vocab, property_order=order, spellings=spellings)
    props = list(_SCHEMAS[case]["properties"])
    for names in _DOCS[case]:
        if order == "schema":
            names = sorted(names, key=props.index)
        for text in _texts(_doc(_SCHEMAS[case], names), spellings):
            data = text.encode()
            assert fast._auto.matches(data), text
            assert_same_masks(fast, slow, data)
            assert_same_masks(fast, ref, data)


def _answers(index, text: bytes):
    """``keys_mask``'s answers (through its packed twin, which the masker calls) for the masks
    at every byte of ``text`` on a fresh index."""
    with answers_of(entries, "keys_mask_packed") as got:
        for i in range(len(text) + 1):
            s = index._auto.walk_bytes(index.initial_state, text[:i])
            if s >= 0:
                index.mask(s)
    return got


def test_the_shortcut_is_taken_at_key_positions(llama3_vocab):
    """At a key position (after ``{"`` and each member's ``,"``, and inside a name) the joint
    walk answers; the states it makes are the tokens' ways out of the names, not their prefixes."""
    schema = _object(NAMES)
    text = json.dumps({"alpha": 1, "alphabet": "xy", "p10": [3], "q2": {"alpha": 2}},
                      separators=(",", ":")).encode()
    assert Index(schema, llama3_vocab)._auto.matches(text)
    got = _answers(Index(schema, llama3_vocab, property_order="any"), text)
    # the key positions: {" and ," four times, inside "alpha", "alphabet", "p10", "q2" (the
    # nested object's key set is written in place: walked)
    assert got.count(walk.DONE) >= 4 + 14
    fast = Index(schema, llama3_vocab, property_order="any")
    slow = Index(schema, llama3_vocab, property_order="any")
    slow._masker._key_roots = False
    for ix in (fast, slow):
        s = ix._auto.walk_bytes(ix.initial_state, b'{"alpha":1,"')
        ix.mask(s)
    assert fast._auto.n_states < slow._auto.n_states - 20


def test_members_completion_is_asked_once_per_node(llama3_vocab):
    """Where the builder cannot vouch for members (required members: a member's tail completes
    only if the required ones still fit), the names' walk lists every member a node's edges wait
    for in one answer (``ASK``), not an exit per member, and the masks stay the walk's."""
    schema = _object(NAMES, required=["id", "alpha", "caf\u00e9"], maxProperties=6)
    fast, slow, ref = _indexes(schema, llama3_vocab, property_order="any")
    got = _answers(fast, b'{"')
    assert keywalk.ASK in got and got[-1] == walk.DONE
    assert got.count(keywalk.ASK) < len(NAMES) // 4
    text = json.dumps(_doc(schema, ["id", "q4", "alpha", "caf\u00e9"]), separators=(",", ":")).encode()
    assert_same_masks(fast, slow, text)
    assert_same_masks(fast, ref, text)


def test_frames_that_do_not_fit_fall_back_to_the_walk(llama3_vocab):
    schema = _object(NAMES)
    fast, slow, _ = _indexes(schema, llama3_vocab, property_order="any")
    fast._masker._class_reserve = fast._masker._scratch().st_node.shape[0]  # (no room for a frame)
    text = json.dumps(_doc(schema, _DOCS["wide"][0]), ensure_ascii=False, separators=(",", ":")).encode()
    assert walk.NO_ROOM in _answers(fast, text[:40])
    assert_same_masks(fast, slow, text)


def test_an_open_object_and_a_small_one_are_walked_as_before(llama3_vocab):
    """A key set beside an undeclared key (an alternation at the head) and a small object's
    names written in place are no key position of this walk: their masks are the walk's."""
    for schema in ({"type": "object", "properties": {n: {"type": "integer"} for n in NAMES}},
                   {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}}):
        fast, slow, _ = _indexes(schema, llama3_vocab, close_objects=False, property_order="any")
        text = b'{"a":1,"alpha":2,"zz":3}' if "alpha" in schema["properties"] else b'{"a":1,"b":[]}'
        assert_same_masks(fast, slow, text)
