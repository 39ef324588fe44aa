"""Rule families (:mod:`dotjson.ir.families`): the registry that saves and loads them.

A family defined here, in the test file, is saved and loaded through the registry alone: no edit
of :mod:`dotjson.serialization` or of the engine (the maintainer exercise of issue 27).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dotjson import Index, ir
from dotjson.errors import DotjsonTypeError, DotjsonValueError, IndexFormatError
from dotjson.ir.families import family_kinds, register_family


@register_family
class CountedAB:
    """``a^n b^n`` (a language no regular grammar has): rule ``<prefix>__<k>`` is the rest after
    ``k`` unmatched ``a``: another ``a`` (then ``<prefix>__<k+1>``) or the ``k`` closing ``b``.
    Infinitely many rules, each made when decoding first reaches it."""

    kind = "test_counted_ab"
    renderable = False
    why_no_text = "infinitely many rules"

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.start = f"{prefix}__0"
        self.made = 0  # bodies made (laziness is observable)

    def _k(self, name: str):
        head, sep, k = name.rpartition("__")
        return int(k) if head == self.prefix and sep and k.isdigit() else None

    def owns(self, name: str) -> bool:
        return self._k(name) is not None

    def body(self, name: str) -> ir.Node:
        k = self._k(name)
        self.made += 1
        return ir.alt(ir.seq(ir.lit("a"), ir.Ref(f"{self.prefix}__{k + 1}")), ir.lit("b" * k) if k else ir.EPS)

    def nullable(self, name: str) -> bool:
        return self._k(name) == 0

    def productive(self, name: str) -> bool:
        return True

    def bind(self, node_productive) -> None:
        pass  # (its rules refer to no rule outside the family)

    def to_json(self, enc) -> dict:
        return {"kind": self.kind, "prefix": self.prefix}

    @classmethod
    def from_json(cls, d: dict, dec) -> "CountedAB":
        if not isinstance(d["prefix"], str):
            raise ValueError("prefix is not text")
        return cls(d["prefix"])


def _grammar(fam):
    return ir.Grammar({"start": ir.seq(ir.lit("<"), ir.Ref(fam.start), ir.lit(">"))}, "start", families=[fam])


def _index_json(path):
    return json.loads((path / "index.json").read_text())


def _rewrite(path, meta):
    from dotjson.serialization import INDEX_FILES, write_manifest

    (path / "index.json").write_text(json.dumps(meta))
    write_manifest(path, INDEX_FILES)  # (a consistent directory: only the family is wrong)


def test_a_family_defined_outside_the_library_saves_and_loads(tmp_path, tiny_bpe_vocab):
    fam = CountedAB("ab")
    index = Index.from_grammar(_grammar(fam), tiny_bpe_vocab)
    assert index.accepts("<aabb>") and index.accepts("<>")
    assert not index.accepts("<aab>") and not index.accepts("<abb>")
    s = index._auto.walk_bytes(index.initial_state, b"<aa")
    before = index.mask(s)
    assert 0 < fam.made < 20  # lazily: only the counts visited
    index.serialize_to_disk(tmp_path / "ix")
    assert _index_json(tmp_path / "ix")["grammar"]["families"] == [{"kind": "test_counted_ab", "prefix": "ab"}]

    again = Index.deserialize_from_disk(tmp_path / "ix", tiny_bpe_vocab)
    (loaded,) = again._ir.families
    assert type(loaded) is CountedAB and loaded is not fam
    s2 = again._auto.walk_bytes(again.initial_state, b"<aa")
    assert (again.mask(s2) == before).all()
    assert again.accepts("<aabb>") and not again.accepts("<aab>")
    assert again.accepts("<" + "a" * 30 + "b" * 30 + ">")  # counts not reached before saving
    assert not again.accepts("<" + "a" * 30 + "b" * 29 + ">")


def test_loading_refuses_unknown_and_malformed_families(tmp_path, tiny_bpe_vocab):
    index = Index.from_grammar(_grammar(CountedAB("ab")), tiny_bpe_vocab)
    index.mask(index.initial_state)
    path = tmp_path / "ix"
    index.serialize_to_disk(path)
    meta = _index_json(path)

    meta["grammar"]["families"][0]["kind"] = "nonesuch"
    _rewrite(path, meta)
    with pytest.raises(IndexFormatError, match=r"is corrupt: unknown rule family kind 'nonesuch' \(this dotjson "
                                               r"loads any_order_object, .*test_counted_ab"):
        Index.deserialize_from_disk(path, tiny_bpe_vocab)

    meta["grammar"]["families"][0] = {"kind": "test_counted_ab"}  # no prefix
    _rewrite(path, meta)
    with pytest.raises(IndexFormatError, match="malformed rule family 'test_counted_ab': KeyError: 'prefix'"):
        Index.deserialize_from_disk(path, tiny_bpe_vocab)

    meta["grammar"]["families"][0] = {"kind": "test_counted_ab", "prefix": 7}
    _rewrite(path, meta)
    with pytest.raises(IndexFormatError, match="rule family 'test_counted_ab': prefix is not text"):
        Index.deserialize_from_disk(path, tiny_bpe_vocab)

    meta["grammar"]["families"][0] = ["test_counted_ab"]  # not an object: no kind
    _rewrite(path, meta)
    with pytest.raises(IndexFormatError, match="unknown rule family kind None"):
        Index.deserialize_from_disk(path, tiny_bpe_vocab)


def test_registration_is_checked(tmp_path, tiny_bpe_vocab):
    class Unregistered(CountedAB):
        kind = "test_unregistered"

    index = Index.from_grammar(_grammar(Unregistered("ab")), tiny_bpe_vocab)
    # saved, it could never be loaded: refused when saving
    with pytest.raises(DotjsonTypeError, match=r"Unregistered' \(kind 'test_unregistered'\) cannot be saved: its class is not registered"):
        index.serialize_to_disk(tmp_path / "ix")

    class SameKind(CountedAB):
        pass

    with pytest.raises(DotjsonValueError, match="kind 'test_counted_ab' is registered twice"):
        register_family(SameKind)

    class NoKind:
        def to_json(self, enc):
            return {}

        @classmethod
        def from_json(cls, d, dec):
            return cls()

    with pytest.raises(DotjsonTypeError, match="non-empty string attribute 'kind', got None"):
        register_family(NoKind)
    NoKind.kind = "test_no_loader"
    del NoKind.from_json
    with pytest.raises(DotjsonTypeError, match="kind 'test_no_loader'.*it has no from_json"):
        register_family(NoKind)
    assert "test_no_loader" not in family_kinds()


def test_the_json_layer_families_are_registered_in_a_fresh_process():
    """Loading an index is the first thing a process may do: the kinds of every family the JSON
    layer defines are registered once ``dotjson.Index`` is imported (the layer imports the
    modules that define them, which its builders otherwise import on first use)."""
    import importlib
    import pkgutil

    import dotjson.jsonschema

    for mod in pkgutil.iter_modules(dotjson.jsonschema.__path__):
        importlib.import_module(f"dotjson.jsonschema.{mod.name}")
    defined = {k for k in family_kinds() if not k.startswith("test_")}
    assert {"any_order_object", "lazy_number_dfa", "exponent_numbers", "unique_numbers", "unique_values",
            "unique_choices"} <= defined
    out = subprocess.run([sys.executable, "-c", "from dotjson import Index; from dotjson.ir.families import "
                          "family_kinds; print(' '.join(family_kinds()))"],
                         capture_output=True, text=True, check=True, timeout=120)
    assert set(out.stdout.split()) == defined
