"""Merging: a normal-form branch (a tuple of atoms) as a typed node
(:class:`~dotjson.jsonschema.nodes.Branch`), remembered per branch.
"""

from __future__ import annotations

from dotjson.jsonschema.nodes import (
    NO_ARRAY, NO_NUMBER, NO_OBJECT, NO_STRING, ArrayNode, Branch, NumberNode, ObjectNode, StringNode,
)
from dotjson.jsonschema.atoms import (
    EVERY_TYPE, Addl, Contains, Enum, Items, Len, Mult, NItems, NotEnum, NotMult, NProps, Num, Pattern, PNames,
    Pos, Props, Required, RuleRef, Some, Str, Types, Unique,
)


# the atoms of each typed node (see _merge)
_OBJECT_ATOMS = frozenset({Props, Required, Addl, Pattern, PNames, NProps, Some})

_NUMBER_ATOMS = frozenset({Num, Mult, NotMult})

_STRING_ATOMS = frozenset({Str, Len})

_ARRAY_ATOMS = frozenset({Pos, Items, NItems, Contains, Unique})

#: the sets of JSON types merged branches hold, one instance each (see _merge)
_TYPE_SETS: dict = {}

def _narrowed(lo, hi, a) -> tuple:
    """Count bounds ``lo``, ``hi`` (``None``: unbounded) narrowed by a count atom (:class:`Len`,
    :class:`NItems`, :class:`NProps`)."""
    return max(lo, a.lo), (hi if a.hi is None else a.hi if hi is None else min(hi, a.hi))

def _push(seq, x) -> tuple:
    """``seq`` (a tuple) with ``x`` appended: a new tuple. Tuples, not lists: a merged node
    stays in the memo for the compiler's lifetime, and the collector tracks every list for good
    but untracks a tuple of untracked items (expressions, Decimals, names) on its first pass;
    almost every entry holds one item."""
    return (*seq, x)

def _put(mapping, key, x) -> dict:
    """``mapping`` with ``x`` appended to ``mapping[key]`` (a tuple, see :func:`_push`):
    ``mapping`` itself, or a new dict in place of the shared empty one
    (:data:`~dotjson.jsonschema.nodes.NO_ENTRIES`)."""
    if not mapping:
        return {key: (x,)}
    es = mapping.get(key)
    mapping[key] = (x,) if es is None else (*es, x)
    return mapping


class Merger:
    """Normal-form branches merged into typed nodes, remembered: a part the
    :class:`~dotjson.jsonschema.normalize.Normalizer` holds, whose :meth:`merge` it calls as
    ``nz.merge(br)``. It depends on nothing of the normaliser: merging reads the atoms alone."""

    __slots__ = ("_memo", "_kept")

    def __init__(self):
        self._memo: dict = {}  # id(branch) -> its typed node
        self._kept: list = []  # the branches merged (alive, so that their ids stay theirs)

    def merge(self, br) -> Branch:
        """The typed node of normal-form branch ``br`` (:class:`~dotjson.jsonschema.nodes.Branch`:
        its atoms merged, one node per JSON type it constrains). Callers only read it."""
        # remembered by identity (branches live in dnf_cache; the memo keeps them alive): the
        # branch of a 10,000-property object is merged once, not once per question about it
        # (no (branch, node) pair per entry: one more tracked object each for the collector)
        hit = self._memo.get(id(br))
        if hit is not None:
            return hit
        m = self._memo[id(br)] = _merge(br)
        self._kept.append(br)
        return m


def _merge(br) -> Branch:
    b = Branch(EVERY_TYPE)
    types = EVERY_TYPE
    # A node is made when the branch first has an atom of its kind (most branches use two
    # or three kinds), and so is each container: merged branches stay in a memo for the
    # compiler's lifetime, and every container left empty would be one more object for the
    # collector to track.
    for a in br:
        k = type(a)
        if k is Types:
            types = types & a.allowed
        elif k is Enum:
            # a dict, not a set: its values keep the schema's order, so whatever iterates
            # them (a propertyNames key language, an array's item values) renders the same
            # grammar in every process (a set of strings iterates in PYTHONHASHSEED's order)
            if b.enum is None:
                b.enum = dict.fromkeys(a.values)
            else:
                keep = set(a.values)
                b.enum = {c: None for c in b.enum if c in keep}
        elif k is NotEnum:
            if not b.not_enum:
                b.not_enum = set()
            b.not_enum.update(a.values)
        elif k is RuleRef:
            b.refs = _push(b.refs, a.target)
        elif k in _OBJECT_ATOMS:
            o = b.object
            if o is NO_OBJECT:
                o = b.object = ObjectNode()
            if k is Props:
                o.properties = _put(o.properties, a.name, a.schema)
                if len(a) > 3:  # (Props.declared, read inline: once per property of every branch merged)
                    if not o.declared:
                        o.declared = {}
                    o.declared[a.name] = None
            elif k is Required:
                if not o.required:
                    o.required = {}
                o.required[a.name] = None
            elif k is Addl:
                o.additional = _push(o.additional, a.fields())
            elif k is Pattern:
                o.patterns = _push(o.patterns, a.fields())
            elif k is PNames:
                o.property_names = _push(o.property_names, a.schema)
            elif k is Some:
                o.some = _push(o.some, a.fields())
            else:  # NProps
                o.min_properties, o.max_properties = _narrowed(o.min_properties, o.max_properties, a)
        elif k in _NUMBER_ATOMS:
            n = b.number
            if n is NO_NUMBER:
                n = b.number = NumberNode()
            if k is Num:
                lo, lox, hi, hix = a.lo, a.lo_excl, a.hi, a.hi_excl
                if lo is not None and (n.lo is None or lo > n.lo or (lo == n.lo and lox)):
                    n.lo, n.lo_excl = lo, lox
                if hi is not None and (n.hi is None or hi < n.hi or (hi == n.hi and hix)):
                    n.hi, n.hi_excl = hi, hix
            elif k is Mult:
                n.multiples = _push(n.multiples, a.divisor)
            else:  # NotMult
                n.not_multiples = _push(n.not_multiples, a.divisor)
        elif k in _STRING_ATOMS:
            t = b.string
            if t is NO_STRING:
                t = b.string = StringNode()
            if k is Str:
                if a.positive:
                    t.patterns = _push(t.patterns, a.handle)
                else:
                    t.not_patterns = _push(t.not_patterns, a.handle)
            else:  # Len
                t.min_length, t.max_length = _narrowed(t.min_length, t.max_length, a)
        elif k in _ARRAY_ATOMS:
            r = b.array
            if r is NO_ARRAY:
                r = b.array = ArrayNode()
            if k is Pos:
                r.prefix = _put(r.prefix, a.index, a.schema)
            elif k is Items:
                r.items = _push(r.items, a.fields())
            elif k is NItems:
                r.min_items, r.max_items = _narrowed(r.min_items, r.max_items, a)
            elif k is Contains:
                r.contains = _push(r.contains, a.fields())
            else:  # Unique
                r.unique = a.where
        else:  # pragma: no cover - every kind is above
            raise AssertionError(a)
    # one frozenset per set of types (at most 2 ** 7), not one per branch merged: the collector
    # tracks every frozenset for good
    b.types = _TYPE_SETS.setdefault(types, types)
    return b
