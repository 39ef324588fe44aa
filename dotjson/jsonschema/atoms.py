"""Phase 1's atoms: the conjuncts of a normal-form branch, one small immutable class per kind.

A sub-schema's normal form (:meth:`~dotjson.jsonschema.normalize.Normalizer.dnf`) is a list of
branches, each a tuple of atoms: ``type``, a numeric bound, a string language, one property's
schema, one required name, ... An atom is a :class:`tuple` whose item 0 is its kind's tag
(``"types"``, ``"num"``, ``"props"`` ...) followed by its fields, read by name (``a.name``,
``a.schema``): a tuple so that hashing, equality and ordering — what normal forms are made of
(``dict.fromkeys`` over a product, sets of atoms compared for subsumption, branches as memo keys)
— cost what they cost on a plain tuple (phase 1 spends much of its time hashing atoms; a frozen
dataclass hashes ~2.5× slower), and so that an atom prints as the tuple it is. Readers tell kinds
apart by class (``type(a) is Props``); :attr:`Atom.applies_to` says which JSON types an atom
constrains (it holds for every value of another type).

Sub-schemas inside an atom (a property's schema, ``items`` ...) are *expressions* (see
:mod:`dotjson.jsonschema.normalize`); :attr:`Atom.subschema` is the one an atom refers to.

The witnesses of negated object keywords (:class:`Some`) name the keys they speak of by a key
spec, typed the same way: :class:`PatternKeys`, :class:`ExtraKeys`, :class:`SchemaKeys`,
:class:`ViolatedBranch`.
"""

from __future__ import annotations

from typing import ClassVar

try:  # the C accessor namedtuple uses (CPython)
    from _collections import _tuplegetter as _getter
except ImportError:  # pragma: no cover - another implementation
    from operator import itemgetter

    def _getter(i, doc):
        return property(itemgetter(i), doc=doc)

__all__ = [
    "Atom", "Types", "Enum", "NotEnum", "RuleRef", "Num", "Mult", "NotMult", "Str", "Len", "Props",
    "Required", "Addl", "Pattern", "PNames", "NProps", "Some", "Pos", "Items", "NItems", "Contains",
    "Unique", "KeySpec", "PatternKeys", "ExtraKeys", "SchemaKeys", "ViolatedBranch", "types_of",
    "NUMBER", "STRING", "ARRAY", "OBJECT", "EVERY_TYPE",
]

_new = tuple.__new__

#: the JSON types of the data model (``nonint``: a number that is not an integer)
EVERY_TYPE = frozenset({"null", "boolean", "integer", "nonint", "string", "array", "object"})
NUMBER = frozenset({"integer", "nonint"})
STRING = frozenset({"string"})
ARRAY = frozenset({"array"})
OBJECT = frozenset({"object"})


class Atom(tuple):
    """One conjunct of a normal-form branch: a tuple ``(tag, field, ...)`` (see the module
    docstring). Subclasses are the kinds; construct them by their fields, never from a tuple."""

    __slots__ = ()
    #: the kind's tag, item 0 of every atom of the kind
    tag: ClassVar[str] = ""
    #: the JSON types the atom constrains (it holds for every value of another type); ``None``:
    #: it speaks of every value (``types``, ``enum``, ``not`` of an ``enum``, ``$ref``)
    applies_to: ClassVar[frozenset | None] = None
    #: the sub-schema expression the atom refers to, where it has one
    subschema = None

    def __getnewargs__(self):  # (copying rebuilds an atom from its fields, not from its items)
        return self[1:]  # (a slice of a tuple subclass is a plain tuple)

    def fields(self) -> tuple:
        """The atom's fields, in order, as a plain tuple (its items after the tag)."""
        return self[1:]  # (a slice of a tuple subclass is a plain tuple)


# ----------------------------------------------------------------------------- any value

class Types(Atom):
    """``type``: the value's JSON type is one of :attr:`allowed`."""

    __slots__ = ()
    tag = "types"
    allowed = _getter(1, "the JSON types allowed (a frozenset of EVERY_TYPE's names)")

    def __new__(cls, allowed: frozenset):
        return _new(cls, ("types", allowed))


class Enum(Atom):
    """``enum``/``const``: the value is one of :attr:`values`."""

    __slots__ = ()
    tag = "enum"
    values = _getter(1, "canonical values (values._canon), in the schema's order, distinct")

    def __new__(cls, values: tuple):
        return _new(cls, ("enum", values))


class NotEnum(Atom):
    """A negated ``enum``/``const``: the value is none of :attr:`values`."""

    __slots__ = ()
    tag = "notenum"
    values = _getter(1, "canonical values excluded")

    def __new__(cls, values: tuple):
        return _new(cls, ("notenum", values))


class RuleRef(Atom):
    """``$ref`` (and ``$dynamicRef``/``$recursiveRef``): the value satisfies :attr:`target` too."""

    __slots__ = ()
    tag = "ruleref"
    target = _getter(1, "the referred schema's expression")
    subschema = target

    def __new__(cls, target):
        return _new(cls, ("ruleref", target))


# ----------------------------------------------------------------------------- numbers

class Num(Atom):
    """``minimum``/``maximum`` and their exclusive forms: a number within the bounds."""

    __slots__ = ()
    tag = "num"
    applies_to = NUMBER
    lo = _getter(1, "the lower bound (a Decimal), or None")
    lo_excl = _getter(2, "whether the lower bound is excluded")
    hi = _getter(3, "the upper bound (a Decimal), or None")
    hi_excl = _getter(4, "whether the upper bound is excluded")

    def __new__(cls, lo, lo_excl: bool, hi, hi_excl: bool):
        return _new(cls, ("num", lo, lo_excl, hi, hi_excl))


class Mult(Atom):
    """``multipleOf``: a number that is a multiple of :attr:`divisor`."""

    __slots__ = ()
    tag = "mult"
    applies_to = NUMBER
    divisor = _getter(1, "a positive Decimal")

    def __new__(cls, divisor):
        return _new(cls, ("mult", divisor))


class NotMult(Atom):
    """A negated ``multipleOf``: a number that is not a multiple of :attr:`divisor`."""

    __slots__ = ()
    tag = "notmult"
    applies_to = NUMBER
    divisor = _getter(1, "a positive Decimal")

    def __new__(cls, divisor):
        return _new(cls, ("notmult", divisor))


# ----------------------------------------------------------------------------- strings

class Str(Atom):
    """``pattern``/``format`` (or their negation): a string whose text is (not) in a language."""

    __slots__ = ()
    tag = "str"
    applies_to = STRING
    handle = _getter(1, "the language: ('pattern', regex) or ('format', name) "
                        "(Normalizer.str_node builds it)")
    positive = _getter(2, "True: the text must be in it; False: must not be")

    def __new__(cls, handle: tuple, positive: bool):
        return _new(cls, ("str", handle, positive))


class Len(Atom):
    """``minLength``/``maxLength``: a string of :attr:`lo` to :attr:`hi` characters."""

    __slots__ = ()
    tag = "len"
    applies_to = STRING
    lo = _getter(1, "the fewest characters (an int, 0 when unbounded)")
    hi = _getter(2, "the most characters, or None")

    def __new__(cls, lo: int, hi):
        return _new(cls, ("len", lo, hi))


# ----------------------------------------------------------------------------- objects

class Props(Atom):
    """A property's schema (``properties``, a dependency ...): member :attr:`name`, if
    present, satisfies :attr:`schema` (``FALSE``: the name is absent).

    :attr:`declared` marks the atoms of a ``properties`` keyword (``close_objects`` closes
    only objects that declare names; ``not`` and dependencies constrain a value without
    declaring it); it is an item of the tuple only when true, so an undeclared atom is the
    3-tuple ``("props", name, schema)``.
    """

    __slots__ = ()
    tag = "props"
    applies_to = OBJECT
    name = _getter(1, "the member's name")
    schema = _getter(2, "its value's schema (an expression)")
    subschema = schema

    def __new__(cls, name: str, schema, declared: bool = False):
        return _new(cls, ("props", name, schema, True) if declared else ("props", name, schema))

    @staticmethod
    def declaring(members) -> list:
        """``Props(name, schema, declared=True)`` for each ``(name, schema)`` of ``members`` (a
        ``properties`` keyword's), made in one call: a wide object's thousand members cost
        the class call's Python frame once, not once each (~0.3 us an atom)."""
        return [_new(Props, ("props", name, schema, True)) for name, schema in members]

    @property
    def declared(self) -> bool:
        """Whether a ``properties`` keyword declares the name."""
        return len(self) > 3

    def undeclared(self) -> Props:
        """The same constraint, not marked declared."""
        return self if len(self) == 3 else _new(Props, self[:3])


class Required(Atom):
    """A required name: the object has member :attr:`name`."""

    __slots__ = ()
    tag = "required"
    applies_to = OBJECT
    name = _getter(1, "the member's name")

    def __new__(cls, name: str):
        return _new(cls, ("required", name))

    @staticmethod
    def each(names) -> list:
        """``Required(name)`` for each of ``names``, made in one call (see :meth:`Props.declaring`)."""
        return [_new(Required, ("required", name)) for name in names]


class Addl(Atom):
    """``additionalProperties`` (or ``unevaluatedProperties`` read as it): every member
    neither named in :attr:`names` nor matched by one of :attr:`patterns` satisfies
    :attr:`schema`."""

    __slots__ = ()
    tag = "addl"
    applies_to = OBJECT
    schema = _getter(1, "the extra members' schema (an expression)")
    names = _getter(2, "the names it leaves out (a frozenset)")
    patterns = _getter(3, "the patterns it leaves out (a sorted tuple of regexes)")
    subschema = schema

    def __new__(cls, schema, names: frozenset, patterns: tuple):
        return _new(cls, ("addl", schema, names, patterns))


class Pattern(Atom):
    """One ``patternProperties`` entry: every member whose name :attr:`pattern` matches
    satisfies :attr:`schema`."""

    __slots__ = ()
    tag = "pattern"
    applies_to = OBJECT
    pattern = _getter(1, "the regex (ECMA-262 source)")
    schema = _getter(2, "the members' schema (an expression)")
    subschema = schema

    def __new__(cls, pattern: str, schema):
        return _new(cls, ("pattern", pattern, schema))


class PNames(Atom):
    """``propertyNames``: every member's name, as a string, satisfies :attr:`schema`."""

    __slots__ = ()
    tag = "pnames"
    applies_to = OBJECT
    schema = _getter(1, "the names' schema (an expression)")
    subschema = schema

    def __new__(cls, schema):
        return _new(cls, ("pnames", schema))


class NProps(Atom):
    """``minProperties``/``maxProperties``: :attr:`lo` to :attr:`hi` members."""

    __slots__ = ()
    tag = "nprops"
    applies_to = OBJECT
    lo = _getter(1, "the fewest members (an int)")
    hi = _getter(2, "the most members, or None")

    def __new__(cls, lo: int, hi):
        return _new(cls, ("nprops", lo, hi))


class Some(Atom):
    """A witness: the object has a member whose key :attr:`spec` names and whose value
    satisfies :attr:`schema` (a negated ``patternProperties``/``additionalProperties``/
    ``propertyNames``); with a :class:`ViolatedBranch` spec (and ``schema`` ``TRUE``), the
    object violates that negated object branch."""

    __slots__ = ()
    tag = "some"
    applies_to = OBJECT
    spec = _getter(1, "the keys it speaks of (a KeySpec)")
    schema = _getter(2, "the member's value's schema (an expression)")
    subschema = schema

    def __new__(cls, spec: KeySpec, schema):
        return _new(cls, ("some", spec, schema))


# ----------------------------------------------------------------------------- arrays

class Pos(Atom):
    """``prefixItems`` (``items`` as a list): the item at :attr:`index`, if any, satisfies
    :attr:`schema`."""

    __slots__ = ()
    tag = "pos"
    applies_to = ARRAY
    index = _getter(1, "the position (from 0)")
    schema = _getter(2, "the item's schema (an expression)")
    subschema = schema

    def __new__(cls, index: int, schema):
        return _new(cls, ("pos", index, schema))


class Items(Atom):
    """``items`` (``additionalItems``, ``unevaluatedItems`` read as it): every item from
    position :attr:`start` on satisfies :attr:`schema`."""

    __slots__ = ()
    tag = "items"
    applies_to = ARRAY
    start = _getter(1, "the first position it constrains")
    schema = _getter(2, "the items' schema (an expression)")
    subschema = schema

    def __new__(cls, start: int, schema):
        return _new(cls, ("items", start, schema))


class NItems(Atom):
    """``minItems``/``maxItems``: :attr:`lo` to :attr:`hi` items."""

    __slots__ = ()
    tag = "nitems"
    applies_to = ARRAY
    lo = _getter(1, "the fewest items (an int)")
    hi = _getter(2, "the most items, or None")

    def __new__(cls, lo: int, hi):
        return _new(cls, ("nitems", lo, hi))


class Contains(Atom):
    """``contains`` with ``minContains``/``maxContains``: :attr:`lo` to :attr:`hi` items
    from position :attr:`start` on satisfy :attr:`schema`.

    :attr:`start` is an item of the tuple only when it is not 0 (the negation of ``items``
    from a position on), so an ordinary atom is the 4-tuple ``("contains", schema, lo, hi)``.
    """

    __slots__ = ()
    tag = "contains"
    applies_to = ARRAY
    schema = _getter(1, "the schema the counted items satisfy (an expression)")
    lo = _getter(2, "the fewest such items (an int)")
    hi = _getter(3, "the most such items, or None")
    subschema = schema

    def __new__(cls, schema, lo: int, hi, start: int = 0):
        return _new(cls, ("contains", schema, lo, hi, start) if start else ("contains", schema, lo, hi))

    @property
    def start(self) -> int:
        """The first position counted."""
        return self[4] if len(self) > 4 else 0


class Unique(Atom):
    """``uniqueItems: true``: no two items are equal."""

    __slots__ = ()
    tag = "unique"
    applies_to = ARRAY
    where = _getter(1, "the keyword's place (for messages)")

    def __new__(cls, where: str):
        return _new(cls, ("unique", where))


# ----------------------------------------------------------------------------- key specs

class KeySpec(tuple):
    """The keys a :class:`Some` witness speaks of: a tuple ``(tag, field, ...)`` like an atom."""

    __slots__ = ()
    tag: ClassVar[str] = ""

    def __getnewargs__(self):
        return self[1:]  # (a slice of a tuple subclass is a plain tuple)


class PatternKeys(KeySpec):
    """The keys :attr:`pattern` matches (a negated ``patternProperties`` entry)."""

    __slots__ = ()
    tag = "p"
    pattern = _getter(1, "the regex (ECMA-262 source)")

    def __new__(cls, pattern: str):
        return _new(cls, ("p", pattern))


class ExtraKeys(KeySpec):
    """The keys neither in :attr:`names` nor matched by :attr:`patterns`: the extra members
    of a negated ``additionalProperties``."""

    __slots__ = ()
    tag = "a"
    names = _getter(1, "a frozenset of names")
    patterns = _getter(2, "a tuple of regexes")

    def __new__(cls, names: frozenset, patterns: tuple):
        return _new(cls, ("a", names, patterns))


class SchemaKeys(KeySpec):
    """The keys that satisfy :attr:`schema` as strings (a negated ``propertyNames``: the
    negation of its schema)."""

    __slots__ = ()
    tag = "n"
    schema = _getter(1, "a string schema (an expression)")

    def __new__(cls, schema):
        return _new(cls, ("n", schema))


class ViolatedBranch(KeySpec):
    """A negated object branch (:mod:`~dotjson.jsonschema.normalize.negated_branches`): its
    object keywords :attr:`atoms` (``Props``, ``Required``, ``Pattern``, ``Addl``), one of
    which the object violates."""

    __slots__ = ()
    tag = "o"
    atoms = _getter(1, "a tuple of atoms")

    def __new__(cls, atoms: tuple):
        return _new(cls, ("o", atoms))


def types_of(br) -> frozenset:
    """The JSON types branch ``br`` (a tuple of atoms) allows by its :class:`Types` atoms."""
    t = EVERY_TYPE
    for a in br:
        if type(a) is Types:
            t = t & a.allowed
    return t
