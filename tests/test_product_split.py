"""Issue 32: a product of parts split on a discriminator (``normalize/product_split.py``).

``dependentSchemas`` (``dependencies``) that each ask one property for a value of a list
multiply out to ``2**k`` alternatives (refused past 256 until now); split on that property's
value almost all of them are contradictions. Every
verdict is the ``jsonschema`` package's (Draft 2020-12), in the "every valid document"
configuration (accepted exactly when valid) and in the default one (no invalid document
accepted), nested under a property and under a recursive ``$ref`` too.
"""

from __future__ import annotations

import jsonschema
import pytest

from dotjson.jsonschema.normalize import keywords, product_split
from test_negated_branches import spy_on
from test_schema_negation import _check, _documents, _forms

_TYPES = [f"t{i}" for i in range(12)]

CASES = {
    # mongodb-atlas' field mappings: each key allowed only beside some values of `type`
    "dependencies-on-a-discriminator": (
        {"type": "object", "properties": {"type": {"enum": _TYPES}},
         "dependentSchemas": {f"k{i}": {"properties": {"type": {"enum": _TYPES[i % 4::3]}}} for i in range(14)}},
        [{}, {"type": "t0"}, {"k0": 1}, {"type": "t0", "k0": 1}, {"type": "t1", "k0": 1}, {"type": "t3", "k0": 1},
         {"type": "t3", "k0": 1, "k3": 2}, {"type": "t4", "k1": 1, "k5": 1}, {"type": "x", "k1": 1}, {"type": "t9"},
         {"k1": 1, "k2": 2, "k13": 3}]),
}
_KEYS = ["type", "k0", "k1", "k2", "k3", "k5", "k11", "k13", "zz"]
_SCALARS = ["t0", "t1", "t2", "t3", "t4", "t5", "t9", "t11", "x", 0, 1, None]


@pytest.fixture
def split(monkeypatch):
    return spy_on(monkeypatch, product_split.split_product, keywords)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_is_exact(name, tiny_bpe_vocab, split):
    # every-valid: accepted exactly when valid; default: no invalid document accepted
    schema, listed = CASES[name]
    docs = _documents(listed, n=60, keys=_KEYS, scalars=_SCALARS)
    for form, s, ds in _forms(schema, docs):
        split.clear()
        kept = _check(s, ds, tiny_bpe_vocab)
        assert split and all(split), (name, form)
        valid = sum(jsonschema.Draft202012Validator(s).is_valid(d) for d in ds)
        assert 0 < kept <= valid < len(ds), (name, form)
