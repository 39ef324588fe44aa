"""Negation: the normal form of ¬D, atom by atom (a required property and its schema negated
together), as a product of negated branches (De Morgan) or split on a discriminator when that
product is too big; values excluded by a negated ``const``/``enum``.
"""

from __future__ import annotations

from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.normalize.negated_branches import negate_by_witnesses
from dotjson.jsonschema.normalize.forms import _COMPACT_AT
from dotjson.jsonschema.atoms import (
    EVERY_TYPE, OBJECT, Addl, Contains, Enum, ExtraKeys, Items, Len, Mult, NItems, NotEnum, NotMult, NProps, Num,
    Pattern, PatternKeys, PNames, Pos, Props, Required, RuleRef, SchemaKeys, Some, Str, Types, Unique,
    ViolatedBranch, types_of,
)
from dotjson.jsonschema.values import FALSE, MAX_BRANCHES, TRUE


# the atom of `type: object`, and of every other type
_OBJECT_TYPE = Types(OBJECT)
_NOT_OBJECT_TYPE = Types(EVERY_TYPE - OBJECT)

def _uncanon(c):
    """The Python value of canonical value ``c`` (:func:`~dotjson.jsonschema.values._canon`)."""
    k = c[0]
    if k == "n":
        return None
    if k == "b" or k == "x" or k == "s":
        return c[1]
    if k == "a":
        return [_uncanon(x) for x in c[1]]
    return {kk: _uncanon(x) for kk, x in c[1]}


class Negation:
    """¬D of a normal form D: negated atoms, branches and unions. (A part of
    :class:`~dotjson.jsonschema.normalize.Normalizer`, whose constructor sets the state it reads.)"""

    def negate(self, D, where, within=()):
        """The normal form of ¬D (``D`` a normal form); ``within``: atoms the result is
        intersected with anyway (a type), so that branches outside them are dropped as they
        are made, not after the product of every negated branch."""
        if not D:
            return [tuple(within)]
        if len(D) > 1 and any(type(a) is Props for a in within):
            # only what D holds beside `within` matters (the result is intersected with it):
            # branches it contradicts drop out, atoms it implies too (a discriminator's case
            # of a split, below: the branches of the other values go)
            Dw = []
            for br in D:
                y = self._atoms_beside(br, within)
                if y is None:
                    continue
                if not y:
                    return []  # D holds wherever `within` does
                Dw.append(y)
            if not Dw:
                return [tuple(within)]
            # (what they leave may hold one another: the product's alternatives that chose
            # an atom `within` implies are the branch that holds the rest)
            D = self.compact(Dw) if Dw != D else D
        if len(D) == 1:
            return self.and2([tuple(within)], self.neg_branch(D[0], where, types_of(within)), where)
        try:
            out = self._negate_product(D, where, within)
            if len(out) > MAX_BRANCHES:
                # (a product within the limit, its shared alternatives beside it past it)
                w = negate_by_witnesses(self, D, where, within)
                return out if w is None else w
            return out
        except UnsupportedSchemaError as e:
            if e.keyword != "allOf":
                raise
            try:
                out = self._negate_split(D, where, within)
            except UnsupportedSchemaError as e2:
                if e2.keyword != "allOf":
                    raise
                out = None
            if out is None:
                # one witness per negated object branch instead of their product
                out = negate_by_witnesses(self, D, where, within)
            if out is None:
                raise
            return out

    def _negate_product(self, D, where, within):
        # ¬(B1 ∨ … ∨ Bk) = ∧ ¬Bi, each ¬Bi a union of negated atoms: a product that grows by a
        # factor per branch. Alternatives that are empty or subsumed (`bar` absent, and `bar`
        # absent with more) go first, and the alternatives C every ¬Bi shares are factored out:
        # ∧ (C ∨ Ri) = C ∨ ∧ Ri (a value of another type, a shared property invalid ...)
        nbs = []
        types = types_of(within)
        for br in D:
            nb = self.neg_branch(br, where, types)
            nbs.append(self.compact(nb) if len(nb) > 1 else nb)
        common = set(nbs[0]).intersection(*nbs[1:])
        out = [tuple(within)]
        for nb in nbs:
            rest = [x for x in nb if x not in common] if common else nb
            out = self.and2(out, rest, where)
            if not out:
                break
            if len(out) > _COMPACT_AT:
                out = self.compact(out)
        if common:
            shared = self.and2([tuple(within)], [x for x in nbs[0] if x in common], where)
            out = shared + out
            if len(out) > _COMPACT_AT:
                out = self.compact(out)
        return out

    def _negate_split(self, D, where, within):
        """¬D split on a discriminator, or ``None`` without one: an object property ``p`` to
        which two branches or more give finitely many values (``"type": {"const": "Point"}``).
        On objects, ¬D is the union over the cases of ``p`` — absent, present with a value of
        one group (the values the same branches allow), present with another value — of the
        case with the negation of the branches that case leaves, restricted to it (their
        atoms on ``p`` are settled); on other types, ¬D itself. Each case negates a few
        branches where the product over all of them has one factor per branch."""
        if "object" not in types_of(within):
            return None  # (no object property to split on: already its "other types" part)
        best, V = None, None
        for p in dict.fromkeys(a.name for br in D for a in br if type(a) is Props):
            vs = [self._finite_prop(br, p) for br in D]
            if sum(v is not None for v in vs) > max(1, best and sum(v is not None for v in V) or 0):
                best, V = p, vs
        if best is None:
            return None
        p = best
        obj = _OBJECT_TYPE
        # values grouped by the branches that allow them
        sig: dict = {}
        for v in dict.fromkeys(x for vs in V if vs is not None for x in vs):
            sig.setdefault(tuple(i for i, vs in enumerate(V) if vs is not None and v in vs), []).append(v)
        allv = tuple(x for g in sig.values() for x in g)

        def rest(br, absent):
            # br on the case: its atoms on p settled (a finite one holds for the group's values;
            # any holds when p is absent; `required p` holds when p is present)
            return tuple(a for a in br if not ((type(a) is Props or type(a) is Required) and a.name == p
                                               and (absent or type(a) is Required or self._finite_prop((a,), p) is not None)))

        cases = []
        # p absent: the branches that do not require it
        cases.append(((obj, Props(p, FALSE)),
                      [rest(br, True) for br in D if Required(p) not in br]))
        for members, vals in sig.items():
            g = tuple(vals)
            cases.append(((obj, Required(p), Props(p, ("enum", g))),
                          [rest(br, False) for i, br in enumerate(D) if V[i] is None or i in members]))
        cases.append(((obj, Required(p), Props(p, ("not", ("enum", allv)))),
                      [rest(br, False) for i, br in enumerate(D) if V[i] is None]))
        out = self.negate(D, where, tuple(within) + (_NOT_OBJECT_TYPE,))
        for atoms, sub in cases:
            if any(not br for br in sub):
                continue  # a branch the case satisfies whole: no value of the case is outside D
            out = out + self.negate(sub, where, tuple(within) + atoms)
            if len(out) > MAX_BRANCHES:
                out, _ = self._over(out, False, where)
        return out

    def _finite_prop(self, br, p):
        """The values (canonical) branch ``br`` allows property ``p`` by a ``props`` atom whose
        schema lists them (an ``enum``/``const``), intersected over such atoms; ``None`` when
        none does."""
        out = None
        for a in br:
            if type(a) is Props and a.name == p and a.schema not in (TRUE, FALSE):
                key = ("finite-prop", a.schema)
                if key not in self.formats:
                    # (None while it is decided: a recursive schema asking again further down,
                    # through its own negated oneOf, finds no discriminator there instead of
                    # recursing without end)
                    self.formats[key] = vals = None
                    try:
                        d = self.dnf_strict(a.schema)
                        fins = [self.finite_branch(b) for b in d]
                        if d and all(f is not None for f in fins):
                            vals = frozenset(c for f in fins for c in f)
                    except UnsupportedSchemaError:
                        vals = None
                    self.formats[key] = vals
                vals = self.formats[key]
                if vals is not None:
                    out = vals if out is None else out & vals
        return out

    def neg_branch(self, br, where, types=EVERY_TYPE) -> list:
        """The normal form of ¬br (one branch): the union of its atoms' negations, except that a
        required property and its schemas are negated together: ¬(p present ∧ p's value in X)
        is "p's value, if present, in ¬X" (one alternative, not "p absent" beside "p present
        and not in X"). ``types``: the types the negation is wanted on (the rest is dropped by
        the caller); an atom that speaks only of types neither ``br`` nor ``types`` holds is
        true of every value ``br`` allows there, so it is left out, negation and all
        (``{"type": "string", "uniqueItems": true}``: a string, whose negation needs no
        "some two items equal")."""
        types = types & types_of(br)
        if types != EVERY_TYPE:
            br = tuple(a for a in br if a.applies_to is None or a.applies_to & types)
        req = {a.name for a in br if type(a) is Required}
        joint: dict = {}
        if req:
            for a in br:
                if type(a) is Props and a.name in req:
                    joint.setdefault(a.name, []).append(a.schema)
        out = []
        for a in br:
            k = type(a)
            if joint and k is Props and a.name in joint:
                continue
            if joint and k is Required and a.name in joint:
                ne = self.not_expr(self.and_expr(joint[a.name]))
                out.append((_OBJECT_TYPE, Props(a.name, ne)))
                continue
            out.extend(self.neg_atom(a, where, types))
        return out

    def neg_atom(self, a, where, types=EVERY_TYPE):
        """The normal form of ¬a (one atom); ``types`` as for :meth:`neg_branch` (a reference
        is negated on them only)."""
        k = type(a)
        if k is Types:
            return [(Types(EVERY_TYPE - a.allowed),)]
        if k is Enum:
            # (an excluded object or array value is expanded where it is built, and only there:
            # a branch that lists its values filters them instead; see without_values)
            return [(NotEnum(a.values),)]
        if k is NotEnum:
            return [(Enum(a.values),)]
        if k is RuleRef:
            return self.negate(self.inline(a.target, where), where, () if types == EVERY_TYPE else (Types(types),))
        # a typed atom holds for every value of another type: its negation is typed
        t = Types(a.applies_to)
        if k is Num:
            res = []
            if a.lo is not None:
                res.append((t, Num(None, False, a.lo, not a.lo_excl)))
            if a.hi is not None:
                res.append((t, Num(a.hi, not a.hi_excl, None, False)))
            return res
        if k is Mult:
            return [(t, NotMult(a.divisor))]
        if k is NotMult:
            return [(t, Mult(a.divisor))]
        if k is Str:
            return [(t, Str(a.handle, not a.positive))]
        if k is Len or k is NProps or k is NItems:
            res = []
            if a.lo > 0:
                res.append((t, k(0, a.lo - 1)))
            if a.hi is not None:
                res.append((t, k(a.hi + 1, None)))
            return res
        if k is Required:
            return [(t, Props(a.name, FALSE))]
        if k is Props:
            return [(t, Required(a.name), Props(a.name, self.not_expr(a.schema)))]
        if k is Pos:
            return [(t, NItems(a.index + 1, None), Pos(a.index, self.not_expr(a.schema)))]
        if k is Items:
            # some item from that position on violates the schema (a contains from there)
            return [(t, Contains(self.not_expr(a.schema), 1, None, a.start))]
        if k is Contains:
            res = []
            if a.lo > 0:
                res.append((t, Contains(a.schema, 0, a.lo - 1, a.start)))
            if a.hi is not None:
                res.append((t, Contains(a.schema, a.hi + 1, None, a.start)))
            return res
        # An object keyword over members fails on one member: some key it speaks of whose value
        # violates its schema (a `some` atom, a witness the object automaton looks for), and
        # the negation of a witness is the keyword again.
        if k is Pattern:
            return [(t, Some(PatternKeys(a.pattern), self.not_expr(a.schema)))]
        if k is Addl:
            return [(t, Some(ExtraKeys(a.names, a.patterns), self.not_expr(a.schema)))]
        if k is PNames:
            ne = self.not_expr(a.schema)
            self.dnf_strict(ne)  # (the names' negation: its errors now, not when decoding)
            return [(t, Some(SchemaKeys(ne), TRUE))]
        if k is Some:
            spec, v = a.spec, a.schema
            ks = type(spec)
            if ks is ViolatedBranch:  # a negated object branch (negated_branches): the branch again
                return [(t,) + spec.atoms]
            if ks is PatternKeys:
                return [(t, Pattern(spec.pattern, self.not_expr(v)))]
            if ks is ExtraKeys:
                return [(t, Addl(self.not_expr(v), spec.names, spec.patterns))]
            if v == TRUE:
                return [(t, PNames(self.not_expr(spec.schema)))]
        kwname = {"items": "items", "addl": "additionalProperties", "pattern": "patternProperties",
                  "pnames": "propertyNames", "unique": "uniqueItems", "some": "not"}.get(a.tag, a.tag)
        raise UnsupportedSchemaError(f"cannot negate {kwname!r} exactly (under not/oneOf/if)",
                                     pointer=where, keyword=kwname)

    def _differs(self, c) -> list:
        """The normal form of "not the object or array value ``c``" (canonical): another type,
        or for an object a key ``c`` lacks, a key of ``c`` missing or one of its values
        different, for an array another length or an item different. The values are
        expressions ``("enum", (value,))``, negated lazily, so nested values cost nothing
        until a document reaches them."""
        t = frozenset({"object" if c[0] == "o" else "array"})
        out = [(Types(EVERY_TYPE - t),)]
        ty = Types(t)
        if c[0] == "o":
            names = frozenset(k for k, _ in c[1])
            out.append((ty, Some(ExtraKeys(names, ()), TRUE)))
            for k, vc in c[1]:
                out.append((ty, Props(k, FALSE)))
                out.append((ty, Required(k), Props(k, self._not_value(vc))))
        else:
            n = len(c[1])
            if n > 0:
                out.append((ty, NItems(0, n - 1)))
            out.append((ty, NItems(n + 1, None)))
            for i, vc in enumerate(c[1]):
                out.append((ty, NItems(i + 1, None), Pos(i, self._not_value(vc))))
        return out

    def without_values(self, br, where):
        """Branch ``br`` as branches without an excluded object or array value (``not`` over
        an object/array ``const``/``enum``), or ``None`` when it excludes none of a type it
        allows or lists its values (they are filtered one by one)."""
        m = self.merge(br)
        if m.enum is not None or m.refs:
            return None
        ts = m.types
        structured = [c for c in m.not_enum if (c[0] == "o" and "object" in ts) or (c[0] == "a" and "array" in ts)]
        if not structured:
            return None
        scalars = tuple(sorted((c for c in m.not_enum if c[0] != "o" and c[0] != "a"), key=repr))
        out = [tuple(a for a in br if type(a) is not NotEnum) + ((NotEnum(scalars),) if scalars else ())]
        for c in sorted(structured, key=repr):
            out = self.and2(out, self._differs(c), where)
        return out

    def _not_value(self, c):
        """The expression of every value but canonical value ``c``."""
        self.literal_cache.setdefault(("v", c), _uncanon(c))
        return ("not", ("enum", (c,)))
