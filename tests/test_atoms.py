"""Typed atoms (dotjson.jsonschema.atoms): tuples that read by name, made by the normaliser only."""

from __future__ import annotations

import copy
import inspect
from decimal import Decimal

import jsonschema
import pytest

from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema import atoms as A
from dotjson.jsonschema.compiler import Compiler
from dotjson.jsonschema.values import FALSE, TRUE

_E = ("loc", "", "/x")  # an expression
#: one atom of each kind, with the tuple it is
SAMPLES = [
    (A.Types(frozenset({"string"})), ("types", frozenset({"string"}))),
    (A.Enum((("s", "a"),)), ("enum", (("s", "a"),))),
    (A.NotEnum((("n",),)), ("notenum", (("n",),))),
    (A.RuleRef(_E), ("ruleref", _E)),
    (A.Num(Decimal(1), True, None, False), ("num", Decimal(1), True, None, False)),
    (A.Mult(Decimal(2)), ("mult", Decimal(2))),
    (A.NotMult(Decimal(2)), ("notmult", Decimal(2))),
    (A.Str(("pattern", "^a"), False), ("str", ("pattern", "^a"), False)),
    (A.Len(0, 3), ("len", 0, 3)),
    (A.Props("a", _E), ("props", "a", _E)),
    (A.Props("a", _E, declared=True), ("props", "a", _E, True)),
    (A.Required("a"), ("required", "a")),
    (A.Addl(FALSE, frozenset({"a"}), ("^b",)), ("addl", FALSE, frozenset({"a"}), ("^b",))),
    (A.Pattern("^b", _E), ("pattern", "^b", _E)),
    (A.PNames(_E), ("pnames", _E)),
    (A.NProps(1, None), ("nprops", 1, None)),
    (A.Some(A.PatternKeys("^b"), _E), ("some", ("p", "^b"), _E)),
    (A.Some(A.ExtraKeys(frozenset(), ()), TRUE), ("some", ("a", frozenset(), ()), TRUE)),
    (A.Some(A.SchemaKeys(_E), TRUE), ("some", ("n", _E), TRUE)),
    (A.Some(A.ViolatedBranch((A.Required("a"),)), TRUE), ("some", ("o", (("required", "a"),)), TRUE)),
    (A.Pos(0, _E), ("pos", 0, _E)),
    (A.Items(2, _E), ("items", 2, _E)),
    (A.NItems(0, 4), ("nitems", 0, 4)),
    (A.Contains(_E, 1, None), ("contains", _E, 1, None)),
    (A.Contains(_E, 1, None, 3), ("contains", _E, 1, None, 3)),
    (A.Unique("/uniqueItems"), ("unique", "/uniqueItems")),
]


def test_every_kind_has_a_sample():
    kinds = {c for c in vars(A).values() if inspect.isclass(c) and issubclass(c, A.Atom) and c is not A.Atom}
    assert kinds == {type(a) for a, _ in SAMPLES}


@pytest.mark.parametrize("atom, plain", SAMPLES, ids=[p[0] for _, p in SAMPLES])
def test_an_atom_is_the_tuple_it_was(atom, plain):
    """Equality, hash, order and printing are a plain tuple's (normal forms, memo keys and
    messages are unchanged); the tag is item 0 and the fields read by name."""
    assert atom == plain and hash(atom) == hash(plain) and repr(atom) == repr(plain)
    assert not atom < plain and not plain < atom
    assert atom[0] == atom.tag == plain[0]
    assert atom.fields() == plain[1:]
    assert copy.deepcopy(atom) == atom and type(copy.copy(atom)) is type(atom)
    assert atom.subschema in (None, *plain[1:])


def test_fields_by_name():
    p = A.Props("a", _E)
    assert (p.name, p.schema, p.declared, p.subschema) == ("a", _E, False, _E)
    assert A.Props("a", _E, declared=True).undeclared() == p
    c = A.Contains(_E, 1, 2, 3)
    assert (c.schema, c.lo, c.hi, c.start) == (_E, 1, 2, 3) and A.Contains(_E, 1, 2).start == 0
    n = A.Num(Decimal(1), False, Decimal(5), True)
    assert (n.lo, n.lo_excl, n.hi, n.hi_excl, n.applies_to) == (Decimal(1), False, Decimal(5), True, A.NUMBER)
    assert A.types_of((A.Types(A.NUMBER), A.Types(frozenset({"integer", "string"})), n)) == {"integer"}


#: schemas that use every keyword, and whose negations make the witnesses and negated kinds
SCHEMAS = [
    {"type": "string", "minLength": 1, "maxLength": 9, "pattern": "^a", "format": "date"},
    {"minimum": 1, "exclusiveMaximum": 9, "multipleOf": 0.5},
    {"enum": [1, "ab", [], {}]},
    {"properties": {"a": {"type": "integer"}}, "required": ["a"], "patternProperties": {"^b": {}},
     "additionalProperties": {"type": "string"}, "propertyNames": {"maxLength": 3}, "minProperties": 1,
     "maxProperties": 4, "dependentRequired": {"a": ["b"]}},
    {"prefixItems": [{}], "items": {"type": "null"}, "minItems": 1, "maxItems": 5, "contains": {"type": "null"}},
    {"uniqueItems": True},
    {"$defs": {"d": {"type": "integer"}}, "allOf": [{"$ref": "#/$defs/d"}, {"not": {"const": 3}}]},
    {"$defs": {"d": {"type": "integer"}}, "$ref": "#/$defs/d"},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_normaliser_makes_typed_atoms_only(schema):
    """Every atom of the normal form of a schema, and of its negation, is a typed atom (a
    :class:`Some`'s key spec typed too), and the satisfaction of a value read by name agrees
    with ``jsonschema``."""
    tr = Compiler(schema, disallow_whitespace=True, close_objects=False, lenient=False, resources=None,
                  property_order="any")
    root = ("loc", "", "")
    d = tr.dnf(root)
    assert d
    if "uniqueItems" in schema:
        with pytest.raises(UnsupportedSchemaError, match="cannot negate 'uniqueItems'"):
            tr.negate(d, "")
        nd = []
    else:
        nd = tr.negate(d, "")
    for D in (d, nd):
        for br in D:
            for a in br:
                assert isinstance(a, A.Atom), a
                _SEEN.add(type(a))
                if type(a) is A.Some:
                    assert isinstance(a.spec, A.KeySpec), a
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    for x in ({"a": 2, "b": "x"}, {"a": 2}, {"a": 1.5, "b": "x"}, {"a": 1, "b": 1, "c": 2, "d": 3, "e": 4}, [],
              [None], [None, None], [1, None], "ab", "2024-01-02", 1, 1.5, 3, 4, {}):
        assert tr.validate(x, root) == v.is_valid(x), x


_SEEN: set = set()


def test_the_schemas_make_every_kind():
    """(After the test above:) every kind but :class:`Some` of a negated object branch was made."""
    if not _SEEN:
        pytest.skip("run with test_the_normaliser_makes_typed_atoms_only")
    assert _SEEN == {type(a) for a, _ in SAMPLES}


def test_atoms_made_in_one_call_equal_the_constructors():
    e = ("loc", "", "/properties/a")
    made = A.Props.declaring([("a", e), ("b", TRUE)])
    assert made == [A.Props("a", e, declared=True), A.Props("b", TRUE, declared=True)]
    assert all(type(a) is A.Props and a.declared for a in made)
    assert A.Required.each(["a", "b"]) == [A.Required("a"), A.Required("b")]
    assert all(type(a) is A.Required for a in A.Required.each(["x"]))


@pytest.mark.parametrize("value", [[1], "a", ["a", None]])
def test_required_must_list_strings(value):
    from dotjson.errors import SchemaError
    from dotjson.jsonschema import schema_to_grammar

    with pytest.raises(SchemaError, match="required must be an array of strings") as info:
        schema_to_grammar({"properties": {"a": {}}, "required": value})
    assert info.value.pointer == "/required"
