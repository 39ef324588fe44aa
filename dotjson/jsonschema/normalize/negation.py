"""Negation: the normal form of ¬D, atom by atom (a required property and its schema negated
together), as a product of negated branches (De Morgan) or split on a discriminator when that
product is too big; values excluded by a negated ``const``/``enum``.
"""

from __future__ import annotations

from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.normalize.negated_branches import negate_by_witnesses
from dotjson.jsonschema.normalize.forms import _COMPACT_AT
from dotjson.jsonschema.values import _ATOM_TYPES, _U, FALSE, MAX_BRANCHES, TRUE, _types_of


# the atom of `type: object`
_OBJECT_TYPE = ("types", frozenset({"object"}))

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
        if len(D) > 1 and any(a[0] == "props" for a in within):
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
            return self.and2([tuple(within)], self.neg_branch(D[0], where, _types_of(within)), where)
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
        types = _types_of(within)
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
        if "object" not in _types_of(within):
            return None  # (no object property to split on: already its "other types" part)
        best, V = None, None
        for p in dict.fromkeys(a[1] for br in D for a in br if a[0] == "props"):
            vs = [self._finite_prop(br, p) for br in D]
            if sum(v is not None for v in vs) > max(1, best and sum(v is not None for v in V) or 0):
                best, V = p, vs
        if best is None:
            return None
        p = best
        obj = ("types", frozenset({"object"}))
        # values grouped by the branches that allow them
        sig: dict = {}
        for v in dict.fromkeys(x for vs in V if vs is not None for x in vs):
            sig.setdefault(tuple(i for i, vs in enumerate(V) if vs is not None and v in vs), []).append(v)
        allv = tuple(x for g in sig.values() for x in g)

        def rest(br, absent):
            # br on the case: its atoms on p settled (a finite one holds for the group's values;
            # any holds when p is absent; `required p` holds when p is present)
            return tuple(a for a in br if not (a[0] in ("props", "required") and a[1] == p
                                               and (absent or a[0] == "required" or self._finite_prop((a,), p) is not None)))

        cases = []
        # p absent: the branches that do not require it
        cases.append(((obj, ("props", p, FALSE)),
                      [rest(br, True) for br in D if ("required", p) not in br]))
        for members, vals in sig.items():
            g = tuple(vals)
            cases.append(((obj, ("required", p), ("props", p, ("enum", g))),
                          [rest(br, False) for i, br in enumerate(D) if V[i] is None or i in members]))
        cases.append(((obj, ("required", p), ("props", p, ("not", ("enum", allv)))),
                      [rest(br, False) for i, br in enumerate(D) if V[i] is None]))
        nonobj = ("types", _U - {"object"})
        out = self.negate(D, where, tuple(within) + (nonobj,))
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
            if a[0] == "props" and a[1] == p and a[2] not in (TRUE, FALSE):
                key = ("finite-prop", a[2])
                if key not in self.formats:
                    # (None while it is decided: a recursive schema asking again further down,
                    # through its own negated oneOf, finds no discriminator there instead of
                    # recursing without end)
                    self.formats[key] = vals = None
                    try:
                        d = self.dnf_strict(a[2])
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

    def neg_branch(self, br, where, types=_U) -> list:
        """The normal form of ¬br (one branch): the union of its atoms' negations, except that a
        required property and its schemas are negated together: ¬(p present ∧ p's value in X)
        is "p's value, if present, in ¬X" (one alternative, not "p absent" beside "p present
        and not in X"). ``types``: the types the negation is wanted on (the rest is dropped by
        the caller); an atom that speaks only of types neither ``br`` nor ``types`` holds is
        true of every value ``br`` allows there, so it is left out, negation and all
        (``{"type": "string", "uniqueItems": true}``: a string, whose negation needs no
        "some two items equal")."""
        types = types & _types_of(br)
        if types != _U:
            br = tuple(a for a in br if a[0] not in _ATOM_TYPES or _ATOM_TYPES[a[0]] & types)
        req = {a[1] for a in br if a[0] == "required"}
        joint: dict = {}
        if req:
            for a in br:
                if a[0] == "props" and a[1] in req:
                    joint.setdefault(a[1], []).append(a[2])
        out = []
        for a in br:
            k = a[0]
            if joint and k == "props" and a[1] in joint:
                continue
            if joint and k == "required" and a[1] in joint:
                ne = self.not_expr(self.and_expr(joint[a[1]]))
                out.append((_OBJECT_TYPE, ("props", a[1], ne)))
                continue
            out.extend(self.neg_atom(a, where, types))
        return out

    def neg_atom(self, a, where, types=_U):
        """The normal form of ¬a (one atom); ``types`` as for :meth:`neg_branch` (a reference
        is negated on them only)."""
        k = a[0]
        if k == "types":
            return [(("types", _U - a[1]),)]
        if k == "enum":
            # (an excluded object or array value is expanded where it is built, and only there:
            # a branch that lists its values filters them instead; see without_values)
            return [(("notenum", a[1]),)]
        if k == "notenum":
            return [(("enum", a[1]),)]
        if k == "ruleref":
            return self.negate(self.inline(a[1], where), where, () if types == _U else (("types", types),))
        T = _ATOM_TYPES[k]
        # a typed atom holds for every value of another type: its negation is typed
        t = ("types", T)
        if k == "num":
            _, lo, lox, hi, hix = a
            res = []
            if lo is not None:
                res.append((t, ("num", None, False, lo, not lox)))
            if hi is not None:
                res.append((t, ("num", hi, not hix, None, False)))
            return res
        if k == "mult":
            return [(t, ("notmult", a[1]))]
        if k == "notmult":
            return [(t, ("mult", a[1]))]
        if k == "str":
            return [(t, ("str", a[1], not a[2]))]
        if k in ("len", "nprops", "nitems"):
            _, lo, hi = a
            res = []
            if lo > 0:
                res.append((t, (k, 0, lo - 1)))
            if hi is not None:
                res.append((t, (k, hi + 1, None)))
            return res
        if k == "required":
            return [(t, ("props", a[1], FALSE))]
        if k == "props":
            return [(t, ("required", a[1]), ("props", a[1], self.not_expr(a[2])))]
        if k == "pos":
            return [(t, ("nitems", a[1] + 1, None), ("pos", a[1], self.not_expr(a[2])))]
        if k == "items":
            # some item from that position on violates the schema (a contains from there)
            ne = self.not_expr(a[2])
            return [(t, ("contains", ne, 1, None) if a[1] == 0 else ("contains", ne, 1, None, a[1]))]
        if k == "contains":
            e, lo, hi = a[1], a[2], a[3]
            tail = a[4:]  # (the first position it counts from, when not 0)
            res = []
            if lo > 0:
                res.append((t, ("contains", e, 0, lo - 1) + tail))
            if hi is not None:
                res.append((t, ("contains", e, hi + 1, None) + tail))
            return res
        # An object keyword over members fails on one member: some key it speaks of whose value
        # violates its schema (a `some` atom, a witness the object automaton looks for), and
        # the negation of a witness is the keyword again.
        if k == "pattern":
            return [(t, ("some", ("p", a[1]), self.not_expr(a[2])))]
        if k == "addl":
            return [(t, ("some", ("a", a[2], a[3]), self.not_expr(a[1])))]
        if k == "pnames":
            ne = self.not_expr(a[1])
            self.dnf_strict(ne)  # (the names' negation: its errors now, not when decoding)
            return [(t, ("some", ("n", ne), TRUE))]
        if k == "some":
            spec, v = a[1], a[2]
            if spec[0] == "o":  # a negated object branch (negated_branches): the branch again
                return [(t,) + spec[1]]
            if spec[0] == "p":
                return [(t, ("pattern", spec[1], self.not_expr(v)))]
            if spec[0] == "a":
                return [(t, ("addl", self.not_expr(v), spec[1], spec[2]))]
            if v == TRUE:
                return [(t, ("pnames", self.not_expr(spec[1])))]
        kwname = {"items": "items", "addl": "additionalProperties", "pattern": "patternProperties",
                  "pnames": "propertyNames", "unique": "uniqueItems", "some": "not"}.get(k, k)
        raise UnsupportedSchemaError(f"cannot negate {kwname!r} exactly (under not/oneOf/if)",
                                     pointer=where, keyword=kwname)

    def _differs(self, c) -> list:
        """The normal form of "not the object or array value ``c``" (canonical): another type,
        or for an object a key ``c`` lacks, a key of ``c`` missing or one of its values
        different, for an array another length or an item different. The values are
        expressions ``("enum", (value,))``, negated lazily, so nested values cost nothing
        until a document reaches them."""
        t = frozenset({"object" if c[0] == "o" else "array"})
        out = [(("types", _U - t),)]
        ty = ("types", t)
        if c[0] == "o":
            names = frozenset(k for k, _ in c[1])
            out.append((ty, ("some", ("a", names, ()), TRUE)))
            for k, vc in c[1]:
                out.append((ty, ("props", k, FALSE)))
                out.append((ty, ("required", k), ("props", k, self._not_value(vc))))
        else:
            n = len(c[1])
            if n > 0:
                out.append((ty, ("nitems", 0, n - 1)))
            out.append((ty, ("nitems", n + 1, None)))
            for i, vc in enumerate(c[1]):
                out.append((ty, ("nitems", i + 1, None), ("pos", i, self._not_value(vc))))
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
        out = [tuple(a for a in br if a[0] != "notenum") + ((("notenum", scalars),) if scalars else ())]
        for c in sorted(structured, key=repr):
            out = self.and2(out, self._differs(c), where)
        return out

    def _not_value(self, c):
        """The expression of every value but canonical value ``c``."""
        self.literal_cache.setdefault(("v", c), _uncanon(c))
        return ("not", ("enum", (c,)))
