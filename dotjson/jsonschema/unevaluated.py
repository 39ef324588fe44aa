"""What a valid instance has evaluated: ``unevaluatedProperties`` / ``unevaluatedItems``.

Annotations are collected only from the sub-schemas that *pass*, so what an instance has
evaluated depends on which ``anyOf``/``oneOf`` branches hold, whether ``if`` holds, which
``dependentSchemas`` keys are present, at any depth under ``allOf`` and ``$ref``.
:func:`cases` writes that dependence down as a short list of *cases* ``(D, E)``: ``D`` a normal
form (a condition on the instance), ``E`` what the instance has evaluated when it satisfies ``D``.
For every instance ``v`` valid against the schema:

- *sound*: ``v`` in ``D`` implies ``E`` is part of what ``v`` has evaluated;
- *complete*: some case has ``v`` in ``D`` and ``E`` exactly what ``v`` has evaluated.

Because evaluating more only weakens ``unevaluated*`` ("every member nobody evaluated
satisfies ``e``"), the keyword is then exactly the union over the cases of ``D`` and
"what ``E`` leaves unevaluated satisfies ``e``" (the schema's other keywords stay conjuncts,
so a case's condition need not imply them). That is what lets a branch that may or may not
hold be a case of its own *or* contribute nothing (``anyOf``: no ``¬branch`` needed), and
``if`` without an ``else`` that evaluates something be ``if`` *or* nothing.

``E`` is, for properties, ``(names, patterns)`` of ``properties``/``patternProperties``; for
items, ``(n, contains)``: the first ``n`` items (``prefixItems``) and those matching one of the
``contains`` sub-schemas (draft 2020-12); or :data:`ALL` (``additionalProperties``, ``items``,
a nested ``unevaluated*``).
"""

from __future__ import annotations

from dotjson.jsonschema.atoms import Addl, Items, Required
from dotjson.jsonschema.values import FALSE, TRUE

#: everything is evaluated (``additionalProperties``, ``items``, a nested ``unevaluated*``)
ALL = "all"
NONE = {"props": (frozenset(), frozenset()), "items": (0, frozenset())}
#: distinct evaluated sets a schema's cases may have (past it the keyword is refused, by name)
MAX_CASES = 64
#: in-place applicators (allOf, $ref ...) followed below one ``unevaluated*``
MAX_DEPTH = 48


class NotStatic(Exception):
    """What is evaluated cannot be written as cases (the message says why)."""


def merge(parts, what):
    """What several sub-schemas that all hold evaluate together."""
    if any(p == ALL for p in parts):
        return ALL
    if what == "props":
        return (frozenset().union(*(p[0] for p in parts)), frozenset().union(*(p[1] for p in parts)))
    return (max(p[0] for p in parts), frozenset().union(*(p[1] for p in parts)))


class _Cases:
    """One ``unevaluated*`` keyword's case analysis (a walk of the in-place applicators)."""

    def __init__(self, nz, what, where):
        self.nz, self.what, self.where = nz, what, where
        self.stack: set = set()

    def group(self, pairs):
        """Cases with the same evaluated set as one (their conditions' union)."""
        out: dict = {}
        for d, e in pairs:
            if d:
                out.setdefault(e, []).extend(d)
        if len(out) > MAX_CASES:
            raise NotStatic(f"more than {MAX_CASES} distinct sets of evaluated "
                            f"{'properties' if self.what == 'props' else 'items'}")
        return [(d, e) for e, d in out.items()]

    def product(self, A, B):
        nz, w = self.nz, self.where
        return self.group([(da if db == [()] else db if da == [()] else nz.and2(da, db, w), merge([ea, eb], self.what))
                           for da, ea in A for db, eb in B])

    def strict(self, cs, expr):
        """Cases of a sub-schema that may fail: a case evaluating something holds only where
        the sub-schema does (one evaluating nothing is sound anywhere)."""
        if all(e == NONE[self.what] for _, e in cs):
            return [([()], NONE[self.what])]
        nz = self.nz
        D = nz.dnf(expr)
        return self.group([(nz.and2(D, d, self.where) if d != [()] else D, e) if e != NONE[self.what]
                           else ([()], e) for d, e in cs])

    def of_expr(self, expr):
        if expr == TRUE or expr == FALSE:
            return [([()], NONE[self.what])]
        if expr[0] != "loc":  # pragma: no cover (sub-schemas of a schema are locations)
            raise NotStatic("a sub-schema that is not a schema location")
        return self.of(expr[1], expr[2])

    def of(self, doc, ptr, top=False):
        """The cases of the schema at ``(doc, ptr)`` (``top``: its own ``unevaluated*`` left out)."""
        nz, what = self.nz, self.what
        s = nz.documents.get(doc, ptr)
        if isinstance(s, bool):
            return [([()], NONE[what])]
        if not isinstance(s, dict):
            raise NotStatic(f"a sub-schema at {nz.documents.where(doc, ptr) or '/'} that is not a schema")
        key = (doc, ptr, top)
        if key in self.stack or len(self.stack) > MAX_DEPTH:
            raise NotStatic("in-place applicators ($ref, allOf ...) that refer back to themselves")
        self.stack.add(key)
        try:
            return self._of(s, doc, ptr, top)
        finally:
            self.stack.discard(key)

    def _own(self, s, doc, ptr, top, draft):
        what = self.what
        if what == "props":
            if "additionalProperties" in s or (not top and "unevaluatedProperties" in s):
                return ALL
            names, pats = s.get("properties"), s.get("patternProperties")
            return (frozenset(names) if isinstance(names, dict) else frozenset(),
                    frozenset(pats) if isinstance(pats, dict) else frozenset())
        if not top and "unevaluatedItems" in s:
            return ALL
        items = s.get("items")
        if draft >= 2020:
            if "items" in s:
                return ALL
            pre = s.get("prefixItems")
            n = len(pre) if isinstance(pre, list) else 0
        else:
            if isinstance(items, (dict, bool)) or (isinstance(items, list) and "additionalItems" in s):
                return ALL
            n = len(items) if isinstance(items, list) else 0
        cont = frozenset()
        if "contains" in s:
            if draft < 2020:
                raise NotStatic("contains beside unevaluatedItems before draft 2020-12")
            # (the items matching it are evaluated: which ones, the instance decides)
            cont = frozenset({self.nz._sub(s, doc, ptr, "contains")})
        return (n, cont)

    def _of(self, s, doc, ptr, top):
        nz, what = self.nz, self.what
        draft = nz.documents.docs[doc].draft
        if "$ref" in s and draft <= 7:
            return self.of_expr(nz.documents.ref_target(doc, ptr, s["$ref"], "$ref"))
        own = self._own(s, doc, ptr, top, draft)
        if own == ALL:
            return [([()], ALL)]
        for kw in ("$recursiveRef", "dependencies"):
            if kw in s:
                raise NotStatic(f"{kw} beside it")
        acc = [([()], own)]
        for kw in ("$ref", "$dynamicRef"):
            if kw in s and (kw == "$ref" or draft >= 2020):
                target = nz.documents.ref_target(doc, ptr, s[kw], kw)
                if target is None or target == TRUE:
                    raise NotStatic(f"{kw} that does not resolve")
                acc = self.product(acc, self.of_expr(target))
        if isinstance(s.get("allOf"), list):
            for i in range(len(s["allOf"])):
                acc = self.product(acc, self.of_expr(nz._sub(s, doc, ptr, "allOf", i)))
        if isinstance(s.get("anyOf"), list):
            # each branch: its own cases where it holds, or nothing (some branch holds in a valid
            # instance; the one that does gives its exact case, the rest contribute nothing)
            for i in range(len(s["anyOf"])):
                x = nz._sub(s, doc, ptr, "anyOf", i)
                cs = self.strict(self.of_expr(x), x)
                if any(e != NONE[what] for _, e in cs):
                    acc = self.product(acc, self.group(cs + [([()], NONE[what])]))
        if isinstance(s.get("oneOf"), list):
            # exactly one branch holds: its cases
            alts = []
            for i in range(len(s["oneOf"])):
                x = nz._sub(s, doc, ptr, "oneOf", i)
                alts.extend(self.strict(self.of_expr(x), x))
            acc = self.product(acc, self.group(alts))
        if "if" in s and draft >= 7:
            x = nz._sub(s, doc, ptr, "if")
            held = self.of_expr(x)
            if "then" in s:
                held = self.product(held, self.of_expr(nz._sub(s, doc, ptr, "then")))
            held = self.strict(held, x)
            failed = self.of_expr(nz._sub(s, doc, ptr, "else")) if "else" in s else [([()], NONE[what])]
            if any(e != NONE[what] for _, e in failed):
                NI = nz.negate(nz.dnf_strict(x), self.where)
                failed = [(nz.and2(NI, d, self.where), e) for d, e in failed]
            acc = self.product(acc, self.group(held + failed))
        dep = s.get("dependentSchemas")
        if what == "props" and isinstance(dep, dict) and draft >= 2019:
            for name in dep:
                cs = self.of_expr(nz._sub(s, doc, ptr, "dependentSchemas", name))
                if any(e != NONE[what] for _, e in cs):
                    # applies when its key is present (and must hold then)
                    req = [(Required(name),)]
                    cs = [(nz.and2(req, d, self.where), e) for d, e in cs]
                    acc = self.product(acc, self.group(cs + [([()], NONE[what])]))
        return acc


def cases(nz, doc, ptr, what, where):
    """The cases ``[(D, E)]`` of the schema at ``(doc, ptr)`` for its ``unevaluated*`` keyword
    (``what``: ``"props"`` or ``"items"``); raises :class:`NotStatic` where they cannot be
    written (past :data:`MAX_CASES`, ``$recursiveRef``, in-place applicators that loop)."""
    return _Cases(nz, what, where).of(doc, ptr, top=True)


def keyword(nz, doc, ptr, what, e, where):
    """The normal form of ``unevaluated*: e`` at ``(doc, ptr)``: ``None`` when it constrains
    nothing, else a list of branches (each ``D`` of a case beside its ``addl``/``items`` atom)."""
    cs = cases(nz, doc, ptr, what, where)
    out = []
    for d, ev in cs:
        if ev == ALL:
            out.extend(d)
            continue
        out.extend(nz.and2(d, [(atom(nz, what, ev, e, where),)], where) if d != [()] else
                   [(atom(nz, what, ev, e, where),)])
    if len(cs) == 1 and cs[0][1] == ALL:
        return None
    return out


def atom(nz, what, ev, e, where):
    """The atom saying that what ``ev`` leaves unevaluated satisfies ``e``."""
    if what == "props":
        for pat in ev[1]:
            nz.regex(pat, where, "patternProperties")
        return Addl(e, ev[0], tuple(sorted(ev[1])))
    n, cont = ev
    if cont:  # an item past the first n matches one of the contains schemas, or e
        e = nz.not_expr(nz.and_expr([nz.not_expr(c) for c in sorted(cont, key=repr)] + [nz.not_expr(e)]))
    return Items(n, e)


