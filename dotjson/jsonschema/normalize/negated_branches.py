"""The negation of many object branches as witnesses, not as a product.

¬(B1 ∨ … ∨ Bk) is the product of the negated branches, one factor per branch
(:meth:`~dotjson.jsonschema.normalize.Normalizer.negate`); when each ``¬Bi`` is a union of
several negated object keywords (a property absent, a property's value invalid, an extra member,
…) that product has up to ``m**k`` alternatives, and past ``MAX_BRANCHES`` the schema was
refused. On objects, each factor is instead one atom, ``Some(ViolatedBranch(Oi), TRUE)``: "the object
violates the object keywords ``Oi`` of branch ``i``" — a *witness* the object automaton looks for
(one bit of its state, :class:`~dotjson.jsonschema.objects.ObjectRules`): a member whose value
fails what ``Oi`` asks of its key sets it, a required name of ``Oi`` left out stands for it. The
product of k such factors is one branch with k witnesses, and the value a member must have to be
one (the negation of a property's schema) is normalised only when a document reaches it. On the
other types the branches' object keywords say nothing, and ¬D there is the negation of the
branches without them. Exact; only with ``property_order="any"``, whose object automaton knows
which declared names it has seen.
"""

from __future__ import annotations

from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.atoms import (
    EVERY_TYPE, OBJECT, Addl, Enum, NotEnum, NProps, Pattern, PNames, Props, Required, RuleRef, Some, Types,
    ViolatedBranch, types_of,
)
from dotjson.jsonschema.values import TRUE

_OBJECT = Types(OBJECT)
_NOT_OBJECT = Types(EVERY_TYPE - OBJECT)
# the object keywords a negated branch's witness speaks of (the member count, `propertyNames`
# and witnesses inside a negated branch are negated as alternatives beside it)
_WITNESSED = frozenset({Props, Required, Pattern, Addl})
_OBJECT_ATOMS = _WITNESSED | {NProps, PNames, Some}


def negate_by_witnesses(nz, D, where, within=()):
    """The normal form of ¬D (``D`` a normal form) with one witness per object branch, or
    ``None`` where it does not apply: not ``property_order="any"``, a branch listing or
    excluding an object value (``enum``, ``not`` of a ``const``), a ``$ref`` that cannot be
    expanded, no object keyword in any branch. ``nz``: the
    :class:`~dotjson.jsonschema.normalize.Normalizer`; ``within``: atoms the result is
    intersected with anyway (as :meth:`~dotjson.jsonschema.normalize.Normalizer.negate`)."""
    if nz.property_order != "any":
        return None
    brs = []
    try:
        for br in D:
            brs.extend(nz.expand_refs(br, where) if any(type(a) is RuleRef for a in br) else [br])
    except UnsupportedSchemaError:
        return None
    if not any(type(a) in _OBJECT_ATOMS for br in brs for a in br):
        return None  # (nothing to witness: the product it is asked for instead of)
    objects, others = [], []
    for br in brs:
        if any(type(a) is RuleRef for a in br):
            return None
        if any(c[0] == "o" for a in br if type(a) is Enum or type(a) is NotEnum for c in a.values):
            return None  # (an object value listed or excluded: not a matter of members)
        # on another type than object, the branch's object keywords hold whatever they say
        others.append(tuple(a for a in br if type(a) not in _OBJECT_ATOMS))
        # (a branch listing its values, none an object, holds no object)
        if "object" in types_of(br) and not any(type(a) is Enum for a in br):
            objects.append(tuple(a for a in br if type(a) in _OBJECT_ATOMS))
    try:
        out = nz.negate(others, where, tuple(within) + (_NOT_OBJECT,))
        # on objects: each branch violated, by its member count or by a witness
        obj = [tuple(within) + (_OBJECT,)]
        for O in objects:
            core = tuple(a for a in O if type(a) in _WITNESSED)
            # (the member count, propertyNames and the witnesses of the branch itself are
            # negated as alternatives beside the witness: a count, a key, no such member)
            alts = [x for a in O if type(a) not in _WITNESSED for x in nz.neg_atom(a, where)]
            if core:
                alts.append((_OBJECT, Some(ViolatedBranch(core), TRUE)))
            obj = nz.and2(obj, alts, where)  # (no alternative: every object is in the branch)
            if not obj:
                break
    except UnsupportedSchemaError as e:
        if e.keyword != "allOf":
            raise
        return None
    return out + obj
