"""``oneOf``: each branch of each sub-schema with the negation of every other sub-schema it may
overlap, what a negation leaves beside a branch's atoms, and the witnesses of a closed object.
"""

from __future__ import annotations

from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.normalize.negated_branches import negate_by_witnesses
from dotjson.jsonschema.normalize.forms import _OutOfFuel, _too_many
from dotjson.jsonschema.atoms import Addl, Enum, ExtraKeys, Pattern, Props, Required, RuleRef, Some, Types, types_of
from dotjson.jsonschema.values import FALSE, MAX_BRANCHES, TRUE


#: how a ``oneOf`` whose exact normal form is refused says so (:func:`refused_for_size` reads it)
_OVERLAP = "oneOf branches that may overlap, and whose negation is not expressible"


def _overlap_refusal(err, where) -> UnsupportedSchemaError:
    return UnsupportedSchemaError(f"{_OVERLAP} ({err})", pointer=where, keyword="oneOf")


def refused_for_size(err) -> bool:
    """Whether ``err`` refuses a ``oneOf`` because its exact negations are too many alternatives
    (what ``jsonschema._compile_root`` answers with a pass that closes its branches)."""
    return err.keyword == "oneOf" and str(err).startswith(_OVERLAP) and _too_many(err)


def _extra_witness(a) -> bool:
    """Whether atom ``a`` is a witness of an extra member (a negated ``additionalProperties``)."""
    return type(a) is Some and type(a.spec) is ExtraKeys

class _OneOf:
    """A ``oneOf`` met in a schema's keywords: made a normal form once the schema's own atoms
    are known (:meth:`Normalizer.one_of` asks its overlaps beside them)."""

    __slots__ = ("exprs", "where")

    def __init__(self, exprs, where):
        self.exprs, self.where = exprs, where


class OneOf:
    """The normal form of ``oneOf`` (exactly one sub-schema holds). (A part of
    :class:`~dotjson.jsonschema.normalize.Normalizer`, whose constructor sets the state it reads.)"""

    #: whether a ``oneOf`` refused for its size is made again with its object branches closed as
    #: the ``close_objects`` policy closes them (:meth:`one_of`): set only for a second phase 1
    #: over a schema the exact normal forms refused (``jsonschema._compile_root``), so that no
    #: schema translated exactly before is narrowed, and no exact route (a part normalised in
    #: context) is cut short
    oneof_closing = False

    def one_of(self, exprs, where, context=(), witnesses=False, closed=False):
        """The normal form of ``oneOf``: each branch of each sub-schema, with the negation of
        every *other* sub-schema it may overlap (exactly one holds). A pair proven disjoint
        (:meth:`branch_empty`) needs no negation: the branch implies it. ``context``: atoms
        of the schema around the ``oneOf`` (its ``type`` ...), which the result is intersected
        with anyway: two branches that overlap only outside it are disjoint here.

        Where that is refused for its size (with ``property_order="any"``), it is made again
        with ``witnesses``: the sub-schemas a branch overlaps negated together, each object
        branch of them one witness (:func:`~dotjson.jsonschema.normalize.negated_branches.negate_by_witnesses`)
        instead of a factor of a product. Where it is still refused, the generation policy closes
        objects (``close_objects``) and :attr:`oneof_closing` is set, it is made again ``closed``: each object branch the
        policy would close is closed here, to the names it and ``context`` speak of
        (:meth:`_closed_branch`), so that branches overlapping only through members another
        branch does not declare (GeoJSON's geometries beside its collections) are disjoint.
        (With ``closed``, an empty list where the policy closes no branch: the refusal stands.)
        That is narrower than the policy alone (a name declared only by a schema intersected
        later is not one of the branch's), never wider: every document is still one branch's
        and no other's."""
        Ds = [self.dnf(e) for e in exprs]
        # the branches made (closed where ``closed``); the others they may overlap stay as the
        # schema says (a document of a closed branch must still satisfy no other sub-schema)
        As = [[self._closed_branch(a, context) for a in D] for D in Ds] if closed else Ds
        if closed and all(b is a for D, B in zip(Ds, As) for a, b in zip(D, B)):
            return []  # (the policy closes no branch: the caller's refusal stands)
        # per branch of each sub-schema: groups of its types, each with the other sub-schemas it
        # may overlap on those types (a string two object branches both allow overlaps; their
        # objects may not)
        plan = []
        any_overlap = False
        for i, D in enumerate(As):
            for a in D:
                over: dict = {}
                for j in range(len(Ds)):
                    if j != i:
                        for b in Ds[j]:
                            for t in self.live_types(context + a + b):
                                over.setdefault(t, set()).add(j)
                groups: dict = {}
                for t in types_of(context + a):
                    groups.setdefault(frozenset(over.get(t, ())), set()).add(t)
                any_overlap = any_overlap or any(groups)
                plan.append((a, groups))
        if not any_overlap:
            return [br for D in As for br in D]
        # exactly one: A_i ∧ ¬A_j, on each type, for the j that A_i may overlap there
        negs: dict = {}
        retry = None
        try:
            self.strict += 1
            out = []
            for a, groups in plan:
                if len(groups) == 1 and frozenset() in groups:
                    out.append(a)
                    continue
                fin = self.finite_branch(a)
                if fin is not None:
                    # finitely many values (an enum): those that satisfy no other sub-schema
                    js = sorted(set().union(*groups))
                    keep = tuple(c for c in fin
                                 if not any(self.validate(self.literal_cache[("v", c)], exprs[j]) for j in js))
                    if keep:
                        out.append((Enum(keep),))
                    continue
                for js, ts in groups.items():
                    ty = Types(frozenset(ts))
                    cur = [a + (ty,)]
                    if witnesses and js:
                        key = ("w", frozenset(js), ty)
                        if key not in negs:
                            union = [br for j in sorted(js) for br in self.dnf_strict(exprs[j])]
                            negs[key] = negate_by_witnesses(self, union, where, (ty,))
                        if negs[key] is not None:
                            out.extend(self.and2(cur, negs[key], where))
                            if len(out) > MAX_BRANCHES:
                                out, _ = self._over(out, False, where, MAX_BRANCHES * 3 // 4)
                            continue
                    try:
                        # each ¬A_j beside this branch (what the branch leaves of it); the
                        # alternatives they all share are factored out: ∧ (C ∨ R_j) = C ∨ ∧ R_j
                        factors = []
                        for j in sorted(js):
                            key = (j, ty)
                            if key not in negs:
                                negs[key] = self.negate(self.dnf_strict(exprs[j]), where, (ty,))
                            nj = self._beside(negs[key], context + a + (ty,))
                            if nj is None:
                                continue  # the branch implies ¬A_j: nothing to multiply
                            factors.append(nj)
                        common = set(factors[0]).intersection(*factors[1:]) if len(factors) > 1 else ()
                        for nj in factors:
                            cur = self.and2(cur, [x for x in nj if x not in common] if common else nj, where)
                            if not cur:
                                break
                        if common:
                            cur = self.and2([a + (ty,)], [x for x in factors[0] if x in common], where) + cur
                    except UnsupportedSchemaError as e:
                        if e.keyword != "allOf" or len(js) < 2:
                            raise
                        # ¬A1 ∧ ¬A2 … as one negation, ¬(A1 ∨ A2 …): a discriminator the
                        # sub-schemas share splits it (negate), where their product is too big
                        key = (frozenset(js), ty)
                        if key not in negs:
                            union = [br for j in sorted(js) for br in self.dnf_strict(exprs[j])]
                            negs[key] = self.negate(union, where, (ty,))
                        cur = self.and2([a + (ty,)], negs[key], where)
                    out.extend(cur)
                    if len(out) > MAX_BRANCHES:
                        # (a union grows by addition here: compacted each time it passes the limit)
                        out, _ = self._over(out, False, where, MAX_BRANCHES * 3 // 4)
            return out
        except UnsupportedSchemaError as e:
            if not witnesses and not closed and _too_many(e) and self.property_order == "any":
                retry = "witnesses"
            elif not closed and _too_many(e) and self.close_objects and self.oneof_closing:
                retry = "closed"
            else:
                raise _overlap_refusal(e, where) from None
            refusal = e
        finally:
            self.strict -= 1
        if retry == "witnesses":
            try:
                return self.one_of(exprs, where, context, witnesses=True)
            except UnsupportedSchemaError as e:
                if not (self.close_objects and self.oneof_closing and "too many alternatives" in str(e)):
                    raise
        got = self.one_of(exprs, where, context, closed=True)
        if not got:  # (nothing the policy closes, or nothing left: the refusal stands)
            raise _overlap_refusal(refusal, where) from None
        return got

    def _closed_branch(self, a, context):
        """Branch ``a`` with its objects closed as the ``close_objects`` policy closes them
        (``additionalProperties: false`` beside the names and patterns that ``a`` and
        ``context`` speak of), where the policy would: the branch declares a name it may hold
        or a pattern, and has no ``additionalProperties`` and no witness of its own; else ``a``
        itself (a ``$ref`` branch too: its atoms are behind the reference)."""
        atoms = tuple(context) + tuple(a)
        if any(type(x) in (RuleRef, Addl, Some) for x in atoms) or "object" not in types_of(atoms):
            return a
        if not any((type(x) is Props and x.declared and x.schema != FALSE) or type(x) is Pattern for x in atoms):
            return a
        names = frozenset(x.name for x in atoms if type(x) in (Props, Required))
        pats = tuple(sorted({x.pattern for x in atoms if type(x) is Pattern}))
        return a + (Addl(FALSE, names, pats),)

    def _beside(self, N, base):
        """The branches of union ``N`` that may hold beside the atoms ``base`` (the others are
        provably empty with it), or ``None`` when ``base`` implies one of them (then ``base ∧ N``
        is ``base``): a negation multiplied into a ``oneOf`` branch keeps only what that branch
        leaves it. Exact; bounded by the compaction budget like :meth:`compact`."""
        if any(type(x) is RuleRef for x in base):
            # (a branch that is a $ref: its atoms, when it is one branch)
            try:
                exp = self.expand_refs(base, "")
            except UnsupportedSchemaError:
                exp = ()
            if len(exp) == 1:
                base = exp[0]
        N = self._witnesses_beside(N, base)
        if self.compact_budget <= 0:
            return N
        N = [y for y in (self._atoms_beside(x, base) for x in N) if y is not None]
        fact = (frozenset(base), types_of(base), {x.name for x in base if type(x) is Props and x.schema == FALSE})
        if any(self._implies(fact, x) for x in N):
            return None
        if len(N) < 2:
            return N
        return self._live(N, base)

    def _atoms_beside(self, x, base):
        """Branch ``x`` without the atoms ``base`` implies, or ``None`` when one contradicts it
        (a property's value outside a schema that ``base`` gives it: the same schema, or one
        disjoint from it, as a ``oneOf``'s discriminator without ``required``)."""
        vals: dict = {}
        for a in base:
            if type(a) is Props:
                vals.setdefault(a.name, []).append(a.schema)
        out = []
        for a in x:
            if a in base:
                continue
            if type(a) is Props and a.name in vals and a.schema not in (TRUE, FALSE):
                v = a.schema
                mine = vals[a.name]
                if v[0] == "not" and any(self._same_schema(e, v[1]) for e in mine):
                    # its value would be outside the schema it must be in: the property absent
                    # (none of it where it is required)
                    if Required(a.name) in x or Required(a.name) in base:
                        return None
                    out.append(Props(a.name, FALSE))
                    continue
                neg = self.not_expr(v)
                try:
                    if any(self.expr_empty(self.and_expr([e, neg])) for e in mine):
                        continue  # every value base allows satisfies it
                except (UnsupportedSchemaError, _OutOfFuel):
                    pass
            out.append(a)
        return tuple(out)

    def _same_schema(self, e1, e2) -> bool:
        """Whether two expressions are the same schema: equal, or equal JSON in one document
        under the same base URI (its references then resolve alike)."""
        if e1 == e2:
            return True
        if e1[0] != "loc" or e2[0] != "loc" or e1[1] != e2[1]:
            return False
        ds = self.documents
        s1, s2 = ds.get(e1[1], e1[2]), ds.get(e2[1], e2[2])
        return type(s1) is type(s2) and s1 == s2 and ds.base_uri(e1[1], e1[2]) == ds.base_uri(e2[1], e2[2])

    def _witnesses_beside(self, N, base, most=4):
        """``N`` with each witness of an extra member (``some`` of an ``additionalProperties``)
        beside a closed object (``base`` allows no key outside its names) written as the
        required members it can be: ``{"properties": {"a": …}, "additionalProperties": false}``
        beside ``¬{"properties": {"b": …}, "additionalProperties": false}`` needs a member
        outside ``b``, i.e. ``a`` (one object bit fewer for each of a ``oneOf``'s branches).
        Left as it is when it may be more than ``most`` names."""
        closed = [x for x in base if type(x) is Addl and x.schema == FALSE and not x.patterns]
        if not closed or not any(_extra_witness(a) for x in N for a in x):
            return N
        allowed = frozenset.intersection(*(frozenset(x.names) for x in closed))
        out = []
        for x in N:
            alts = [()]
            for a in x:
                if _extra_witness(a):
                    names, pats = a.spec.names, a.spec.patterns
                    ks = sorted(k for k in allowed if k not in names and not any(self.key_matches(k, q) for q in pats))
                    if len(ks) > most:
                        alts = [y + (a,) for y in alts]
                        continue
                    one = [(Required(k),) + ((Props(k, a.schema),) if a.schema != TRUE else ()) for k in ks]
                    alts = [y + z for y in alts for z in one]
                else:
                    alts = [y + (a,) for y in alts]
            out.extend(tuple(dict.fromkeys(y)) for y in alts)
        return out
