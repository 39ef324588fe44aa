"""Normal forms: expressions (``and``/``not``), :meth:`NormalForms.dnf` (a sub-schema's union of
branches, remembered per expression), the product of two unions (:meth:`NormalForms.and2`),
its compaction past ``MAX_BRANCHES`` (:meth:`NormalForms.compact`), references inlined into a
product, and the parts of a schema normalised in context (beside the atoms around them).
"""

from __future__ import annotations

import warnings

from dotjson.errors import LimitExceededError, UnsupportedSchemaError
from dotjson.jsonschema.normalize.documents import _short
from dotjson.jsonschema.atoms import OBJECT, Addl, Enum, Pattern, Props, Required, RuleRef, Some, Types, types_of
from dotjson.jsonschema.values import MAX_APPLICATOR_DEPTH, FALSE, MAX_BRANCHES, TRUE


#: a negation's partial product is compacted (Normalizer.compact) once it has more branches
_COMPACT_AT = 16

#: the branch pairs the emptiness tests of one compact() may combine (normal forms of the
#: properties they look into): past it, the remaining branches are kept untested
_COMPACT_FUEL = 20_000

#: the work all compactions of one schema may do (branch pairs combined by their emptiness
#: tests and branch pairs compared for subsumption): past it a union is no longer compacted,
#: so a schema that is refused in the end is refused in bounded time
_COMPACT_BUDGET = 1_000_000

class _OutOfFuel(Exception):
    """A compact()'s emptiness tests ran out of fuel (never leaves Normalizer.compact)."""

def _too_many(err) -> bool:
    """Whether an UnsupportedSchemaError is a refusal for the size of a normal form."""
    return err.keyword in ("allOf", "oneOf") and "too many alternatives" in str(err)

class _InContext:
    """A part of a schema refused alone for its size, to normalise beside the schema's own atoms
    once they are known (:meth:`Normalizer._in_context`); ``key``: a dependency's key."""

    __slots__ = ("expr", "where", "err", "key", "absent")

    def __init__(self, expr, where, err):
        self.expr, self.where, self.err = expr, where, err
        self.key = self.absent = None

_DROPPED = object()  # (a part a lenient translation ignores)

# the object atoms that declare or admit keys (see NormalForms.compact)
_OPENING = frozenset({Props, Pattern, Addl, Some})


class NormalForms:
    """Expressions, their normal forms and products, compaction, parts in context. (A part of
    :class:`~dotjson.jsonschema.normalize.Normalizer`, whose constructor sets the state it reads.)"""

    @staticmethod
    def not_expr(e):
        if e == TRUE:
            return FALSE
        if e == FALSE:
            return TRUE
        if e[0] == "not":
            return e[1]
        return ("not", e)

    @staticmethod
    def and_expr(exprs):
        if len(exprs) == 1:  # one schema (a declared property's, most often): itself
            e = exprs[0]
            if e[0] not in ("and", "true"):
                return e
        out = []
        for e in exprs:
            if e == TRUE:
                continue
            if e == FALSE:
                return FALSE
            if e[0] == "and":
                out.extend(e[1])
            else:
                out.append(e)
        out = list(dict.fromkeys(out))
        if not out:
            return TRUE
        if len(out) == 1:
            return out[0]
        return ("and", tuple(out))

    def dnf(self, expr, ctx=()):
        """The normal form of ``expr``. ``ctx``: atoms the caller intersects the result D with
        anyway; D then need only satisfy D ∧ ctx ≡ expr ∧ ctx (the ``oneOf`` of the schema ask
        their overlaps beside ``ctx``; see :meth:`_part`). Remembered per expression (and
        context)."""
        if expr == TRUE:
            return [()]
        if expr == FALSE:
            return []
        cache, key = (self.dnf_ctx_cache, (expr, ctx)) if ctx else (self.dnf_cache, expr)
        hit = cache.get(key)
        if hit is not None:
            return hit
        if self.depth >= MAX_APPLICATOR_DEPTH:
            raise LimitExceededError(f"allOf/anyOf/oneOf/not/if/$ref nested deeper than {MAX_APPLICATOR_DEPTH} "
                                     f"levels, at {_short(self.expr_where(expr))}")
        self.depth += 1
        try:
            kind = expr[0]
            if kind == "loc":
                out = self._dnf_schema(expr[1], expr[2], ctx)
            elif kind == "and":
                try:
                    out = [()]
                    for e in expr[1]:
                        out = self.and2(out, self.dnf(e, ctx), self.expr_where(e))
                except UnsupportedSchemaError as err:
                    out = self._and_of_negations(expr[1], err)
            elif kind == "not":
                out = self.negate(self.dnf_strict(expr[1]), self.expr_where(expr[1]))
            elif kind == "enum":  # a value of a negated `const`/`enum` (see _differs)
                out = [(Enum(expr[1]),)]
            else:  # pragma: no cover
                raise AssertionError(expr)
        finally:
            self.depth -= 1
        cache[key] = out
        return out

    def _and_of_negations(self, exprs, err):
        """The normal form of a conjunction of negations ``exprs`` whose product is refused
        for its size (``err``), as one negation: ¬X1 ∧ ¬X2 ∧ … = ¬(X1 ∨ X2 ∨ …), which
        splits on a discriminator or takes object branches as witnesses where the product
        does not fit (the value a member must have to witness several negated object
        branches at once: opspec-io's ``not`` outside its number, object and string
        constraints, 11 · 14 · 11 alternatives). Re-raises ``err`` where that does not
        apply."""
        if not _too_many(err) or not all(e[0] == "not" for e in exprs):
            raise err
        return self.negate([br for e in exprs for br in self.dnf_strict(e[1])], self.expr_where(exprs[0][1]))

    def dnf_strict(self, expr):
        self.strict += 1
        try:
            if self.lenient:
                # a lenient DNF may have dropped keywords: recompute without the cache
                saved = self.dnf_cache
                self.dnf_cache = {}
                try:
                    return self.dnf(expr)
                finally:
                    self.dnf_cache = saved
            return self.dnf(expr)
        finally:
            self.strict -= 1

    def expr_where(self, e):
        while e[0] in ("not", "and"):
            e = e[1] if e[0] == "not" else e[1][0]
        if e[0] == "loc":
            return self.documents.where(e[1], e[2])
        return ""

    def and2(self, A, B, where):
        if self.fuel is not None:
            self.fuel -= max(1, len(A) * len(B))
            if self.fuel < 0:
                raise _OutOfFuel()
        if len(A) * len(B) > MAX_BRANCHES:
            # a product past the limit: its factors without their empty and subsumed branches
            # first (an allOf of if/then pairs is mostly contradictions)
            A, B = self.compact(A), self.compact(B)
            if (self.close_objects or self.property_order != "any") and \
                    sum(1 for a in A for b in B if types_of(a + b)) > MAX_BRANCHES:
                # rather than refuse the schema, the generation policies' language may lose the
                # documents of a branch that another branch holds in the specification's
                A, B = self.compact(A, policy=False), self.compact(B, policy=False)
        out = []
        squeezed = False
        for a in A:
            for b in B:
                c = a + b if b else a
                if not types_of(c):
                    continue
                out.append(tuple(dict.fromkeys(c)))
                if len(out) > MAX_BRANCHES:
                    out, squeezed = self._over(out, squeezed, where)
        res = []
        squeezed = False
        for c in out:
            if len(c) > 1 and any(type(a) is RuleRef for a in c):
                res.extend(self.expand_refs(c, where))
            else:
                res.append(c)
            if len(res) > MAX_BRANCHES:
                res, squeezed = self._over(res, squeezed, where)
        return res

    def _over(self, brs, squeezed, where, room=MAX_BRANCHES // 2):
        """``brs``, a union grown past ``MAX_BRANCHES``, compacted (:meth:`compact`), and
        whether it has been compacted before; refused when compacting does not bring it back
        to ``room`` (half the limit: a product grows by factors), or when it grows past the
        limit a second time after that."""
        if not squeezed:
            brs = self.compact(brs)
            if len(brs) > room and (self.close_objects or self.property_order != "any"):
                brs = self.compact(brs, policy=False)  # (as in and2)
            if len(brs) <= room:
                return brs, True
        raise UnsupportedSchemaError("too many alternatives after combining allOf/anyOf/oneOf "
                                     f"(more than {MAX_BRANCHES})", pointer=where, keyword="allOf")

    def compact(self, brs, policy=True) -> list:
        """The union of branches ``brs`` without the branches it does not need: those provably
        empty (:meth:`live_types`) and those another, weaker branch holds (each of its atoms
        implied by theirs: the same atom, a wider ``type``, a property's schema where they
        forbid the property, a typed atom of a type they exclude). Exact: the union's language
        is unchanged. The branches keep their order (the grammar's alternatives do).

        Under the generation policies the weaker branch must also not have the narrower policy
        language: with ``close_objects`` the object keywords that declare or admit keys (a
        declared property, ``patternProperties``, ``additionalProperties``, a witness) open
        keys, and with ``property_order="schema"`` the properties' order is the order objects
        are written in. There, a branch holds another only when the other adds no such object
        keyword and lists the same properties in the same order. ``policy=False`` leaves that
        condition out (the policy language may then lose documents; still only valid ones).
        """
        if self.compact_budget <= 0:
            return brs
        # (a branch with references is kept as it is: deciding it would expand them)
        keep = self._live(brs, keep_refs=True)
        if len(keep) < 2:
            return keep
        self.compact_budget -= len(keep) * len(keep) // 2
        policy = policy and (self.close_objects or self.property_order != "any")
        norm = (lambda x: x) if policy else (lambda x: x.undeclared() if type(x) is Props else x)
        facts = []
        # each branch's atoms normalized once (not once per pair of branches: a union of a few
        # hundred branches asked ~150,000 atoms again, 40% of some schemas' Index())
        normed = [br if policy else tuple(map(norm, br)) for br in keep]
        for br, nb in zip(keep, normed):
            absent = {x.name for x in br if type(x) is Props and x.schema == FALSE}
            facts.append((frozenset(nb), types_of(br), absent))
        order = sorted(range(len(keep)), key=lambda i: len(keep[i]))
        chosen: list = []
        for i in order:
            if any(self._implies(facts[i], normed[j]) and (not policy or self._same_objects(keep[j], keep[i]))
                   for j in chosen):
                continue
            chosen.append(i)
        chosen.sort()
        return [keep[i] for i in chosen]

    @staticmethod
    def _implies(fact, a) -> bool:
        """Whether a branch with ``fact`` (its atoms, its types, the properties it forbids)
        satisfies every atom of branch ``a`` (its atoms as ``fact``'s are normalized: a
        property's constraint not marked declared where the policy is left out, see
        :meth:`compact`; the name, types and kind are the atom's own)."""
        atoms, types, absent = fact
        for x in a:
            if x in atoms:
                continue
            k = type(x)
            if k is Types:
                if types <= x.allowed:
                    continue
                return False
            if k is Props and x.name in absent:
                continue
            T = x.applies_to
            if T is not None and not (types & T):
                continue
            return False
        return True

    @staticmethod
    def _same_objects(a, b) -> bool:
        """Whether branch ``b`` (a superset of ``a``'s atoms) holds no object keyword beyond
        ``a``'s that changes its policy language (see :meth:`compact`)."""
        extra = set(b).difference(a)
        if any(type(x) in _OPENING for x in extra):
            return False
        names_a = list(dict.fromkeys(x.name for x in a if type(x) is Props))
        names_b = list(dict.fromkeys(x.name for x in b if type(x) is Props))
        return names_a == names_b

    def _live(self, brs, base=(), keep_refs=False) -> list:
        """The branches of ``brs`` not provably empty beside the atoms ``base``
        (:meth:`live_types`), within the compaction fuel (a branch left untested is kept, and
        with ``keep_refs`` one holding a reference)."""
        keep = []
        outer = self.fuel is None
        if outer:
            self.fuel = min(_COMPACT_FUEL, self.compact_budget)
            start = self.fuel
        try:
            for br in brs:
                if self.fuel <= 0 or (keep_refs and any(type(a) is RuleRef for a in br)):
                    keep.append(br)
                    continue
                try:
                    if self.live_types(base + br if base else br):
                        keep.append(br)
                except (UnsupportedSchemaError, _OutOfFuel):
                    keep.append(br)
        finally:
            if outer:
                self.compact_budget -= start - max(self.fuel, 0)
                self.fuel = None
        return keep

    def inline(self, target, where):
        if target in self.inlining:
            raise UnsupportedSchemaError("a $ref cycle through allOf/not/if cannot be intersected "
                                         "(recursive schema combined with sibling keywords)",
                                         pointer=where, keyword="$ref")
        self.inlining.add(target)
        try:
            d = self.dnf(target)
            res = []
            for br in d:
                if len(br) == 1 and type(br[0]) is RuleRef:
                    res.extend(self.inline(br[0].target, where))
                else:
                    res.append(br)
            return res
        finally:
            self.inlining.discard(target)

    def expand_refs(self, c, where):
        # keep the atoms' order: it is the order of the properties in the grammar
        out = [()]
        for a in c:
            if type(a) is RuleRef:
                out = self.and2(out, self.inline(a.target, where), where)
            else:
                out = [b + (a,) for b in out]
        return out

    # A sub-schema's normal form does not know the schema around it, so a ``oneOf`` whose
    # branches are disjoint only beside its parent's atoms (``"required": ["type"]`` next to an
    # ``allOf`` holding ``oneOf`` branches that each give ``type`` one value, without requiring
    # it) needs every branch to negate every other: a product past MAX_BRANCHES, refused. Such a
    # part (an allOf entry or a dependency whose schema has a ``oneOf``, or one refused alone for
    # its size) is normalised *in context*: its normal form D only has to satisfy D ∧ C ≡ S ∧ C
    # for the atoms C its result is intersected with anyway (the schema's own, a dependency's key
    # present), which the ``oneOf`` it holds asks its overlaps beside. Other parts are untouched
    # (and their normal forms shared as before).

    def _part(self, e, where):
        """``dnf(e)``, or a part to normalise in context (:class:`_InContext`): a schema whose
        own ``oneOf`` asks its overlaps beside the atoms around it (its normal form is then
        never larger), or one refused alone for its size."""
        if e[0] == "loc":
            s = self.documents.get(e[1], e[2])
            if isinstance(s, dict) and "oneOf" in s:
                return _InContext(e, where, None)
        try:
            return self.dnf(e)
        except UnsupportedSchemaError as err:
            if not _too_many(err):
                raise
            return _InContext(e, where, err)

    def _dependent(self, e, name, absent, where):
        """The part of a dependency on key ``name`` (its schema ``e``): the key absent, or
        present and ``e`` (in context when ``e`` alone is refused for its size)."""
        d = self._part(e, where)
        if type(d) is _InContext:
            d.key = name
            d.absent = absent
            return d
        return absent + self.and2([(Required(name),)], d, where)

    def _in_context(self, d, around):
        """The normal form of part ``d`` (:class:`_InContext`) beside atoms ``around``, or
        ``_DROPPED`` when a lenient translation ignores it."""
        ctx = tuple(around)
        if d.key is not None:
            ctx += (Types(OBJECT), Required(d.key))
        try:
            D = self.dnf(d.expr, ctx)
        except UnsupportedSchemaError as err:
            if d.err is not None and _too_many(err):
                err = d.err  # (the error of the part alone: where the product first grew)
            if self.lenient and self.strict == 0:  # (as the keyword loop would have: the part ignored)
                warnings.warn(f"dotjson: ignoring {err.pointer or d.where or '/'} ({err}); the grammar "
                              "over-approximates", stacklevel=4)
                return _DROPPED
            if err.pointer is None:
                raise UnsupportedSchemaError(str(err), pointer=d.where, keyword=err.keyword) from None
            raise err from None
        if d.key is not None:
            return d.absent + self.and2([(Required(d.key),)], D, d.where)
        return D
