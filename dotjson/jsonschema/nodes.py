"""Phase 1's typed nodes: a branch of a sub-schema's normal form, merged, one node per JSON type.

The normal form of a sub-schema (:meth:`~dotjson.jsonschema.normalize.Normalizer.dnf`) is a
union of branches, the ``anyOf`` of the schema: ``oneOf`` becomes branches proven pairwise
disjoint (or rewritten with negations), ``allOf`` a product, ``not`` negated atom by atom. Each
branch is a conjunction of keyword atoms; ``Normalizer.merge``
(:class:`~dotjson.jsonschema.normalize.merge.Merger`) turns it into one :class:`Branch`:

* what every value must satisfy whatever its type: the allowed ``types``, the ``enum`` values
  (``None``: any), the values excluded (``not_enum``), and the ``$ref`` targets it must satisfy
  too (``refs``, expressions the compiler expands);
* one node per JSON type with constraints of that type: :class:`NumberNode`,
  :class:`StringNode`, :class:`ArrayNode`, :class:`ObjectNode`. A type without constraints
  shares its empty node (``NO_NUMBER`` ...), so a branch costs one object per kind it uses. Their
  entries are tuples (a list is tracked by the collector for good; a tuple of expressions is
  untracked at its first collection), their ``types`` one shared frozenset per set of types.

Sub-schemas below a keyword (a property's schema, ``items`` ...) stay *expressions* (see
:mod:`dotjson.jsonschema.normalize`): a node refers to them, and the compiler makes each a
rule reference whose body is built when the automaton first reaches it. Nothing here builds
grammar. Nodes are read-only once merged (the empty nodes are shared by every branch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal


class _NoEntries(Mapping):
    """The empty, read-only mapping a node holds until it has an entry of that kind."""

    __slots__ = ()
    __hash__ = object.__hash__  # one shared instance: a dataclass default must be hashable

    def __getitem__(self, key):
        raise KeyError(key)

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0

    def get(self, key, default=None):
        return default

    def __repr__(self) -> str:
        return "{}"


NO_ENTRIES: Mapping = _NoEntries()


@dataclass(slots=True, eq=False)
class NumberNode:
    """Numeric constraints: the tightest bounds, and the divisors a number must (not) have."""

    lo: Decimal | None = None
    lo_excl: bool = False
    hi: Decimal | None = None
    hi_excl: bool = False
    multiples: tuple = ()      # multipleOf, each
    not_multiples: tuple = ()  # negated multipleOf, each


@dataclass(slots=True, eq=False)
class StringNode:
    """String constraints: the languages a string's text must (not) be in (pattern, format,
    ``const`` of a string under ``not`` ...: handles of :meth:`Normalizer.str_node`) and its
    length in characters."""

    patterns: tuple = ()       # handles of languages the text must be in
    not_patterns: tuple = ()   # ... must not be in
    min_length: int = 0
    max_length: int | None = None


@dataclass(slots=True, eq=False)
class ArrayNode:
    """Array constraints: schemas by position, of the items from a position on, the item count,
    ``contains`` counters and ``uniqueItems``."""

    prefix: Mapping = NO_ENTRIES   # index -> (expr, ...) (prefixItems, items as a list)
    items: tuple = ()              # (first index, expr): items from there on
    min_items: int = 0
    max_items: int | None = None
    contains: tuple = ()           # (expr, min, max) or (expr, min, max, first position counted)
    unique: object = None          # the uniqueItems keyword's place, when true

    def positions(self) -> tuple[list, list]:
        """The schemas of each item position up to the last one ``prefix`` or ``items`` names
        (a list of expressions per position), and those of every item after them."""
        k = max([i + 1 for i in self.prefix] + [j for j, _ in self.items] + [0])
        return ([list(self.prefix.get(i, ())) + [e for j, e in self.items if j <= i] for i in range(k)],
                [e for _, e in self.items])


@dataclass(slots=True, eq=False)
class ObjectNode:
    """Object constraints: declared properties and their schemas (in schema order), required
    names, the extra-member schemas of each ``additionalProperties`` (with the names and patterns
    it leaves out), ``patternProperties``, ``propertyNames`` and the member count."""

    properties: Mapping = NO_ENTRIES   # name -> (expr, ...)
    declared: Mapping = NO_ENTRIES     # the names a `properties` keyword declares (an ordered set;
    #                                    `not`/dependencies constrain names without declaring them)
    required: Mapping = NO_ENTRIES     # name -> None (an ordered set)
    additional: tuple = ()             # (expr, declared names, patterns)
    patterns: tuple = ()               # (pattern, expr)
    property_names: tuple = ()         # expr, each
    some: tuple = ()                   # (key spec, expr): a member the object must hold (a
    #                                    witness against a negated object keyword; see Normalizer.key_in)
    min_properties: int = 0
    max_properties: int | None = None


NO_NUMBER = NumberNode()
NO_STRING = StringNode()
NO_ARRAY = ArrayNode()
NO_OBJECT = ObjectNode()


@dataclass(slots=True, eq=False)
class Branch:
    """One branch of a normal form, merged (see the module docstring)."""

    types: frozenset
    enum: dict | None = None           # canonical values, in the schema's order
    not_enum: frozenset | set = frozenset()
    refs: tuple = ()                   # $ref targets (expressions) the value must satisfy too
    number: NumberNode = NO_NUMBER
    string: StringNode = NO_STRING
    array: ArrayNode = NO_ARRAY
    object: ObjectNode = NO_OBJECT
