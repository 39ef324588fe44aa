"""The object automaton's member rules hold the state after the member in place
(``ObjectRules.inline_next``, issue 24), and the automaton writes the states and members of an
object with a native key position straight into its store (``ObjectRules.written``: no IR body
compiled): the masks must be those of the rule-per-state structure compiled from IR bodies at
every position of real documents, and a document must pass from member to member without a rule
of its own per state.

The reference is the same compiler with ``inline_next = False`` and ``written = False`` (the
structure of main before those changes), run on the same documents with the same tokenizer.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from dotjson import Index
from dotjson.errors import DotjsonError
from dotjson.jsonschema.objects import ObjectRules

SUBSET = Path(__file__).parent / "data" / "maskbench" / "subset.jsonl"

#: a quick selection of the subset (~2 s in a test run): nested objects, required and optional members, arrays
#: of objects, objects open to undeclared keys
QUICK = ["BFCL_java_0", "Github_medium---o10079", "Glaiveai2K---analyze_health_data_ecfa5553",
         "Kubernetes---kb_1003_Normalized", "JsonSchemaStore---artifacts"]


def _rows(ids=None):
    rows = [json.loads(line) for line in SUBSET.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if ids is None or r["id"] in ids]


def _ids(tokenizer, data) -> list[int]:
    return list(tokenizer.encode(json.dumps(data, separators=(",", ":"), ensure_ascii=False), add_special_tokens=False))


@contextmanager
def _structure(inline: bool, written: bool | None = None, states: bool | None = None):
    """The member rules' structure while the block runs (the flags are read when a member's rule
    is built: lazily, by the masks, so they must hold while those are computed too); ``written``
    defaults to ``inline`` (the new structure, or the reference), ``states`` (the states after a
    member written in place, ``ObjectRules.inline_states``) to ``written``."""
    saved = ObjectRules.inline_next, ObjectRules.written, ObjectRules.inline_states
    ObjectRules.inline_next = inline
    ObjectRules.written = inline if written is None else written
    ObjectRules.inline_states = ObjectRules.written if states is None else states
    try:
        yield
    finally:
        ObjectRules.inline_next, ObjectRules.written, ObjectRules.inline_states = saved


def _masks(index: Index, ids, inline: bool, written: bool | None = None, states: bool | None = None) -> list:
    with _structure(inline, written, states):
        out, s = [], index.initial_state
        for t in ids:
            out.append(index.mask(s).copy())
            s = index.next_state(s, t)
        out.append(index.mask(s).copy())
        return out


def _compare(rows, vocab, tokenizer, docs_per_schema: int, written: bool = True, states: bool | None = None) -> int:
    checked = 0
    for row in rows:
        docs = [c["data"] for c in row.get("tests", []) if c.get("valid")][:docs_per_schema]
        for close in (True, False):
            for data in docs:
                ids = _ids(tokenizer, data)
                try:
                    with _structure(True, written, states):
                        new = Index(row["schema"], vocab, close_objects=close)
                    with _structure(False):
                        old = Index(row["schema"], vocab, close_objects=close)
                except DotjsonError:
                    break
                try:
                    a = _masks(new, ids, True, written, states)
                except DotjsonError as e:  # (a limit met inside the document: the same in both)
                    with pytest.raises(type(e)):
                        _masks(old, ids, False)
                    continue
                b = _masks(old, ids, False)
                for k, (x, y) in enumerate(zip(a, b)):
                    assert np.array_equal(x, y), (row["id"], close, k)
                checked += len(a)
    return checked


@pytest.mark.parametrize("written,states", [(True, True), (True, False), (False, False)])
def test_inlined_next_state_keeps_every_mask(llama3_vocab, llama3_tokenizer, written, states):
    assert _compare(_rows(QUICK), llama3_vocab, llama3_tokenizer, 1, written, states) > 300


def test_written_bodies_build_no_ir_body(llama3_vocab, llama3_tokenizer):
    """The states and members of an object with a native key position are written into the
    store from data: along a document the automaton compiles them, but not one of their IR
    bodies is built (with ``written = False`` every one of them is), but the first state's, which
    the analyses build to decide that it is productive (an empty object closes before it)."""
    schema = {"type": "object", "properties": {f"p{k}": {"type": "integer"} for k in range(8)}}
    data = {f"p{k}": k for k in range(8)}
    ids = _ids(llama3_tokenizer, data)
    for written in (True, False):
        with _structure(True, written, states=False):
            ix = Index(schema, llama3_vocab, close_objects=False)
        _masks(ix, ids, True, written, states=False)
        compiled = _object_rules(ix, compiled=True)
        built = _object_rules(ix, compiled=False)
        assert len(compiled) >= 8, compiled
        both = built & compiled
        assert (len(both) <= 1 and not any("_m_" in n for n in both)) if written else both == compiled, (written, both)


@pytest.mark.parametrize("close", [True, False])
def test_states_after_members_are_written_in_place(llama3_vocab, llama3_tokenizer, close):
    """With ``inline_states`` an object's members and the states after them have no rule at
    all, open to undeclared members or not: what follows a member's name is built in place
    from data when the key set asks for it, the undeclared members' loop a repetition. Along a
    document of 8 members (and undeclared ones between them, where allowed) the automaton
    compiles the object's first state alone, and builds not one IR body of the others."""
    schema = {"type": "object", "properties": {f"p{k}": {"type": "integer"} for k in range(8)},
              "required": ["p7"]}
    data = {f"p{k}": k for k in range(8)}
    if not close:
        data = {"x": [1], **{f"p{k}": k for k in range(4)}, "y": {"z": 1}, **{f"p{k}": k for k in range(4, 8)}}
    ids = _ids(llama3_tokenizer, data)
    with _structure(True, True, states=True):
        ix = Index(schema, llama3_vocab, close_objects=close)
    masks = _masks(ix, ids, True, True, states=True)
    with _structure(False):
        ref = Index(schema, llama3_vocab, close_objects=close)
    for k, (x, y) in enumerate(zip(masks, _masks(ref, ids, False))):
        assert np.array_equal(x, y), k
    compiled = _object_rules(ix, compiled=True)
    assert compiled == {n for n in compiled if re.search(r"_s_0_0_0$", n)} and len(compiled) == 1, compiled
    assert not _object_rules(ix, compiled=False) - compiled, _object_rules(ix, compiled=False)


def test_a_document_passes_members_without_a_rule_per_state(llama3_vocab, llama3_tokenizer):
    """Along a document of 8 members of a closed object, the states after the members are not
    built as rules (an open object's states still are where a token may run through a whole
    extra member, e.g. ``0":1,`` after ``"p1``: the extra members loop on the state's rule)."""
    schema = {"type": "object", "properties": {f"p{k}": {"type": "integer"} for k in range(8)},
              "required": [f"p{k}" for k in range(8)]}
    data = {f"p{k}": k for k in range(8)}
    ids = _ids(llama3_tokenizer, data)
    built = {}
    for inline in (True, False):
        with _structure(inline, states=False):
            ix = Index(schema, llama3_vocab, close_objects=True)
        _masks(ix, ids, inline, states=False)
        built[inline] = _state_rules_built(ix)
    assert built[False] >= 8 and built[True] <= 1, built


def test_an_open_object_refers_to_the_state_its_extra_members_loop_on(llama3_vocab, llama3_tokenizer):
    """Where extra members may follow a member, the member's rule refers to the state's rule
    (which the extra members loop on, and which a token running through a whole extra member
    builds at every key position) instead of compiling the state a second time in place."""
    schema = {"type": "object", "properties": {f"p{k}": {"type": "integer"} for k in range(8)}}
    data = {f"p{k}": k for k in range(8)}
    with _structure(True, written=False):  # (the IR bodies are what is looked at)
        ix = Index(schema, llama3_vocab, close_objects=False)
    _masks(ix, _ids(llama3_tokenizer, data), True, written=False)
    built = ix.ir.rules._src.rules
    members = {n: b for n, b in built.items() if re.search(r"_m_\d+_\d+_\d+$", n)}
    assert len(members) >= 7
    for name, body in members.items():
        refs = [x.name for x in getattr(body, "items", ()) if type(x).__name__ == "Ref"]
        assert any(re.search(r"_s_\d+_\d+_\d+$", r) for r in refs), (name, body)


def _state_rules_built(index) -> int:
    """How many of the object automaton's state rules (``..._s_i_c_mask``) the automaton has
    compiled a body for (from IR or written)."""
    return sum(1 for name in _object_rules(index, compiled=True) if re.search(r"_s_\d+_\d+_\d+$", name))


def _object_rules(index, compiled: bool) -> set:
    """The object automaton's state and member rules whose body the automaton has compiled
    (``compiled``), or whose IR body has been built."""
    if compiled:
        rules = index._auto.rules
        names = {n for n, done in zip(rules.names, rules._done) if done}
    else:
        names = set(index.ir.rules._src.rules)  # (the bodies made so far, not the pending ones)
    return {n for n in names if re.search(r"_[sm]_\d+_\d+_\d+$", n)}


@pytest.mark.slow
def test_inlined_next_state_keeps_every_mask_on_the_subset(llama3_vocab, llama3_tokenizer):
    assert _compare(_rows(), llama3_vocab, llama3_tokenizer, 3) > 5000


def test_an_open_objects_first_mask_leaves_its_extra_keys_unbuilt(llama3_vocab):
    """An extra member is its key's opening quote, then a rule of its own for the rest: the mask
    at an open object's ``{`` (whose tokens end at ``{"``) builds the extra-member rule but not
    the rest, the undeclared keys' language (the names' difference, ~0.1 ms of the time to first
    mask). After a key's opening quote the state, that rule first in one of its branches, still
    allows every plain token at once (``plain_open`` looks into the rule's body), and the masks
    at every byte are those of the plain trie walked node by node."""
    from naive import assert_same_masks

    schema = {"type": "object", "properties": {f"p{k}": {"type": "integer"} for k in range(20)}}
    ix = Index(schema, llama3_vocab, close_objects=False)
    ix.mask(ix.initial_state)
    rules = ix._auto.rules

    def built(pattern):
        return [n for n, done in zip(rules.names, rules._done) if done and re.fullmatch(pattern, n)]

    assert built(r"extra\d*") and not built(r"extra\d*_r"), rules.names
    from dotjson.automaton import kernels as K

    s = ix._auto.walk_bytes(ix.initial_state, b'{"')
    pseq, plen = ix._plain.seqs
    assert ix._auto._run(K.plain_open, s, pseq, plen) == 1
    assert built(r"extra\d*_r")
    slow = Index(schema, llama3_vocab, close_objects=False)
    slow._masker._plain_runs = False
    slow._masker._heads = False
    fast = Index(schema, llama3_vocab, close_objects=False)
    assert_same_masks(fast, slow, b'{"p3":1,"zz":2,"p1\\u0030":5,"w":{"a":[]},"p17":3}')
    # without declared names the extra member is one rule: a map's key start stays
    # plain-invariant (a reference first in the state would make it neither that nor a head)
    mp = Index({"type": "object", "additionalProperties": {"type": "integer"}}, llama3_vocab, close_objects=False)
    s = mp._auto.walk_bytes(mp.initial_state, b'{"')
    assert mp._auto._run(K.plain_inv, s, pseq, plen) == 1
