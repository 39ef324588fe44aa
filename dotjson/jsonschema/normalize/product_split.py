"""A product of parts split on a discriminator, where multiplying them out is refused.

Parts that each speak of one property by listed values — ``dependencies`` each asking the same
property for a value of a list (mongodb-atlas' field mappings: ``"analyzer": {"properties":
{"type": {"enum": [...]}}}`` for 17 keys), an ``allOf`` of ``if``/``then`` pairs keyed on its
``const`` — are a product of unions with one factor per part: ``2**k`` alternatives, refused
past ``MAX_BRANCHES`` where compacting does not bring them down. Almost all of them are
contradictions once the property's value is fixed. So the product is split on that property
``p`` (as :meth:`~dotjson.jsonschema.normalize.Normalizer._negate_split` splits a negation): on
objects, ``p`` absent, ``p`` with a value of each group (the values every listed set either holds
or lacks), ``p`` with another value; and on the other types. In each case every branch of every
part is settled against the case — dropped where an atom on ``p`` contradicts it, the atom
dropped where the case implies it — and the parts left are multiplied. Exact: the cases
partition the values, and each branch means the same within its case.
"""

from __future__ import annotations

from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.atoms import EVERY_TYPE, OBJECT, Props, Required, Types, types_of
from dotjson.jsonschema.values import FALSE, MAX_BRANCHES

_OBJECT = Types(OBJECT)


def _finite(nz, e):
    """``("in", S)`` when schema expression ``e`` lists its values ``S`` (canonical),
    ``("out", S)`` when it is the negation of such a list, else ``None``."""
    neg = e[0] == "not"
    x = e[1] if neg else e
    if x[0] == "enum":
        vals = frozenset(x[1])
    else:
        vals = nz._finite_prop((Props("", x),), "") if x not in (FALSE,) and x[0] in ("loc", "and") else None
    if vals is None:
        return None
    return ("out" if neg else "in", vals)


def split_product(nz, base, parts, where):
    """The normal form of ``base`` (a normal form) times every union of ``parts``, split on the
    property that most parts speak of by listed values, or ``None`` when no property is spoken
    of so by two parts at least. ``nz``: the :class:`~dotjson.jsonschema.normalize.Normalizer`."""
    score: dict = {}
    for d in parts:
        names = {a.name for br in d for a in br
                 if type(a) is Props and a.schema != FALSE and _finite(nz, a.schema) is not None}
        for p in names:
            score[p] = score.get(p, 0) + 1
    if not score or max(score.values()) < 2:
        return None
    p = max(score, key=lambda k: (score[k], k))
    sets = {a.schema: _finite(nz, a.schema) for d in parts for br in d for a in br
            if type(a) is Props and a.name == p and a.schema != FALSE}
    listed = [v[1] for v in sets.values() if v is not None]
    sig: dict = {}
    for c in dict.fromkeys(c for S in listed for c in S):
        sig.setdefault(tuple(c in S for S in listed), []).append(c)
    every = tuple(c for g in sig.values() for c in g)
    # the cases: (their atoms, how an atom on p reads in it: a function of the listed set)
    cases = [((_OBJECT, Props(p, FALSE)), None)]
    for g in sig.values():
        cases.append(((_OBJECT, Required(p), Props(p, ("enum", tuple(g)))), frozenset(g)))
    cases.append(((_OBJECT, Required(p), Props(p, ("not", ("enum", every)))), frozenset()))

    def settle(br, case_vals, absent):
        keep = []
        for a in br:
            k = type(a)
            if k is Types:  # (every case is of objects)
                if "object" not in a.allowed:
                    return None
                continue
            if k is Required and a.name == p:
                if absent:
                    return None
                continue
            if k is Props and a.name == p:
                if absent:
                    continue  # (a property's schema says nothing while it is absent)
                if a.schema == FALSE:
                    return None
                v = sets.get(a.schema)
                if v is None:
                    keep.append(a)
                    continue
                inside = bool(case_vals) and case_vals <= v[1]
                if inside != (v[0] == "in"):
                    return None
                continue
            keep.append(a)
        return tuple(keep)

    def product(start, settled_parts):
        cur = [start]
        for d in settled_parts:
            cur = nz.and2(cur, _merged(list(dict.fromkeys(d))), where)
            if not cur:
                break
        return cur

    out = []
    nonobj = Types(EVERY_TYPE - OBJECT)
    for b in base:
        # other types: the object atoms say nothing there
        strip = [[tuple(a for a in br if a.applies_to != OBJECT) for br in d
                  if types_of(br + (nonobj,))] for d in parts]
        if types_of(b + (nonobj,)):
            out += product(b + (nonobj,), strip)
        for atoms, vals in cases:
            absent = vals is None
            settled = [[r for br in d for r in [settle(br, vals, absent)] if r is not None] for d in parts]
            if any(not d for d in settled):
                continue
            out += product(b + atoms, settled)
        if len(out) > MAX_BRANCHES:
            out, _ = nz._over(out, False, where)
    return [br for br in out if types_of(br)]


def _merged(d: list) -> list:
    """Union ``d`` with each pair of branches that differ only in a name being absent in one and
    required in the other (``X ∧ ¬k`` and ``X ∧ k``, a dependency its case settled) as ``X``."""
    while True:
        index = {}
        for i, br in enumerate(d):
            for a in br:
                req = type(a) is Required
                if req or (type(a) is Props and a.schema == FALSE):
                    rest = tuple(x for x in br if x is not a)
                    key = (rest, a.name, req)
                    other = index.get((rest, a.name, not req))
                    if other is not None and other != i:
                        j = other
                        return _merged([x for k, x in enumerate(d) if k not in (i, j)] + [rest])
                    index[key] = i
        return d
