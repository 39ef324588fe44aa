"""Objects whose properties may come in any order (``property_order="any"``), built lazily.

With ``property_order="any"`` an object's declared properties may appear in any order, each at
most once, with extra members (where the schema allows them) anywhere. The grammar state must
remember which declared properties were seen: ``2**n`` sets for ``n`` properties, far too many to
write down. So the object is not a set of rules but a *rule family*, :class:`AnyOrderObject`:
its rules are named ``<prefix>__seen_<mask>_<count>`` (the hexadecimal bit mask of the declared
properties seen so far, and the member count, capped, for ``minProperties``/``maxProperties``)
and their bodies are produced on demand, when the automaton first expands the name. Only the
sets a document actually visits are ever built; starting a 1,000-property object costs one rule
body (its 1,000 alternatives), as in schema order.

Exactness: ``required`` (every required property seen before the object closes),
``minProperties``/``maxProperties`` (the count), ``patternProperties``/``additionalProperties``
(the extra-member rule the translator built for schema order, unchanged: a key that is not
declared, split by the patterns it matches) and ``dependentRequired`` (distributed into
branches by the translator before objects are built) are all kept. As in schema order, two extra
members may share a key (a context-free grammar cannot exclude that in general).

Every body alternative starts with ``,`` or a key's ``"``, so family rules are never left
recursive and none is nullable except by its end-of-object alternative.
"""

from __future__ import annotations

from collections.abc import Mapping

from dotjson import ir
from dotjson.ir import EPS, Ref

__all__ = ["AnyOrderObject", "any_order_object", "expand_families", "family_of", "rules_with_families"]

PROPERTY_ORDERS = ("schema", "any")


def any_order_object(tr, declared, extra, plo: int, phi) -> ir.Node:
    """The object node for the schema translator: ``{}`` where allowed, else ``{`` family ``}``.

    ``declared``: ``(name, value expression, required)`` per declared property (required names
    outside ``properties`` included); ``extra``: the extra-member node or ``None``.
    """
    members = [ir.seq(ir.lit('"'), tr.enc_text(name), ir.lit('"'), tr.colon, tr.node_of(ve))
               for name, ve, _ in declared]
    tr.counter += 1
    fam = AnyOrderObject(f"obj{tr.counter}", members, [req for _, _, req in declared], extra, tr.sep, plo, phi)
    tr.families.append(fam)
    empty_ok = plo == 0 and not any(req for _, _, req in declared)
    empty = ir.seq(ir.lit("{"), tr.ws, ir.lit("}")) if empty_ok else ir.EMPTY
    return ir.alt(empty, ir.seq(ir.lit("{"), tr.ws, Ref(fam.start), tr.ws, ir.lit("}")))


class AnyOrderObject:
    """A rule family: the members of one object in any order, each declared one at most once.

    Parameters
    ----------
    prefix : str
        Unique rule-name prefix; the family owns the names ``<prefix>__seen_...``.
    members : list of ir.Node
        One node per declared property: ``"key" ws : ws value``.
    required : list of bool
        Whether each member must appear.
    extra : ir.Node or None
        One extra (undeclared) member, or ``None`` when the object allows none.
    sep : ir.Node
        The separator between members (``ws , ws``).
    plo, phi : int, int or None
        ``minProperties`` / ``maxProperties``.
    """

    def __init__(self, prefix, members, required, extra, sep, plo=0, phi=None):
        self.prefix = prefix
        self.tag = f"{prefix}__seen_"
        self.members = list(members)
        self.required = [bool(r) for r in required]
        self.extra = extra
        self.sep = sep
        self.plo = plo
        self.phi = phi
        self.cap = max(1, phi if phi is not None else plo)
        self.req_mask = sum(1 << j for j, r in enumerate(self.required) if r)
        self.n = len(self.members)
        # which members (and the extra rule) can derive a text: structurally here, exactly once
        # the automaton knows its rules' productivity (finalize)
        self.finalize(lambda m: m != ir.EMPTY)
        self._bodies: dict = {}

    # ------------------------------------------------------------------ names
    def owns(self, name: str) -> bool:
        return name.startswith(self.tag)

    def name(self, mask: int, c: int) -> str:
        return f"{self.tag}{mask:x}_{c}"

    def parse(self, name: str) -> tuple[int, int]:
        m, c = name[len(self.tag):].split("_")
        return int(m, 16), int(c)

    @property
    def start(self) -> str:
        """The rule of an object with no member read yet (its caller wraps it in ``{`` ... ``}``)."""
        return self.name(0, 0)

    def static_nodes(self) -> list:
        """Every IR node the family's bodies are made of (their rule references are static)."""
        return self.members + ([self.extra] if self.extra is not None else []) + [self.sep]

    # ------------------------------------------------------------------ rules
    def _inc(self, c: int):
        if self.phi is not None:
            return c + 1 if c + 1 <= self.phi else None
        return min(c + 1, self.cap)

    def body(self, name: str) -> ir.Node:
        hit = self._bodies.get(name)
        if hit is not None:
            return hit
        mask, c = self.parse(name)
        sp = self.sep if c > 0 else EPS
        alts = []
        c2 = self._inc(c)
        if c2 is not None:
            if self._extra_ok and self.productive(self.name(mask, c2)):
                alts.append(ir.seq(sp, self.extra, Ref(self.name(mask, c2))))
            ok = self._ok_mask & ~mask
            for j in range(self.n):
                if ok >> j & 1 and self.productive(self.name(mask | 1 << j, c2)):
                    alts.append(ir.seq(sp, self.members[j], Ref(self.name(mask | 1 << j, c2))))
        if self.nullable(name):
            alts.append(EPS)
        node = ir.alt(*alts)
        self._bodies[name] = node
        return node

    def nullable(self, name: str) -> bool:
        mask, c = self.parse(name)
        return c > 0 and c >= self.plo and self.req_mask & ~mask == 0

    def productive(self, name: str, member_ok=None) -> bool:
        """Can the object still be completed from this rule? ``member_ok(node)``: productivity of
        a member node (during the automaton's fixpoint); by default, :meth:`finalize`'s answer."""
        mask, c = self.parse(name)
        if member_ok is None:
            ok_mask, extra_ok = self._ok_mask, self._extra_ok
        else:
            ok_mask = sum(1 << j for j, m in enumerate(self.members) if member_ok(m))
            extra_ok = self.extra is not None and member_ok(self.extra)
        missing = self.req_mask & ~mask
        if missing & ~ok_mask:
            return False  # a required member left to read has no value at all
        need = missing.bit_count()
        low = max(self.plo, 1 if c == 0 else 0)
        if self.phi is not None and c + need > self.phi:
            return False
        if extra_ok:
            return self.phi is None or max(low, c + need) <= self.phi
        avail = (ok_mask & ~mask).bit_count()
        return c + avail >= low and (self.phi is None or max(low, c + need) <= self.phi)

    def finalize(self, member_ok) -> None:
        """Fix which members can derive a text (once the static rules' productivity is known)."""
        self._bodies = {}
        self._ok_mask = sum(1 << j for j, m in enumerate(self.members) if member_ok(m))
        self._extra_ok = self.extra is not None and member_ok(self.extra)

    def substitute(self, fn) -> None:
        """Rewrite the member and extra nodes (the translator's pruning of dead rules)."""
        self.members = [fn(m) for m in self.members]
        if self.extra is not None:
            self.extra = fn(self.extra)
        self.finalize(lambda m: m != ir.EMPTY)
        self._bodies.clear()


    # ------------------------------------------------------------------ persistence
    def to_json(self, enc) -> dict:
        """Plain JSON values (``enc``: IR node to JSON, as :mod:`dotjson.serialization` writes)."""
        return {"kind": "any_order_object", "prefix": self.prefix, "members": [enc(m) for m in self.members],
                "required": self.required, "extra": None if self.extra is None else enc(self.extra),
                "sep": enc(self.sep), "plo": self.plo, "phi": self.phi}

    @classmethod
    def from_json(cls, d: dict, dec) -> "AnyOrderObject":
        """The family :meth:`to_json` wrote (``dec``: JSON to IR node); ``ValueError`` if malformed."""
        if not isinstance(d, dict) or d.get("kind") != "any_order_object":
            raise ValueError("unknown rule family")
        members = [dec(m) for m in d["members"]]
        required = d["required"]
        plo, phi = d["plo"], d["phi"]
        if (not isinstance(d["prefix"], str) or not isinstance(required, list) or len(required) != len(members)
                or not all(isinstance(r, bool) for r in required) or not isinstance(plo, int)
                or not (phi is None or isinstance(phi, int))):
            raise ValueError("malformed rule family")
        extra = None if d["extra"] is None else dec(d["extra"])
        return cls(d["prefix"], members, required, extra, dec(d["sep"]), plo, phi)


def family_of(grammar: ir.Grammar, name: str):
    """The rule family of ``grammar`` that owns rule ``name``, or ``None``."""
    for fam in getattr(grammar, "families", ()):
        if fam.owns(name):
            return fam
    return None


class _FamilyRules(Mapping):
    """A grammar's rules with its families' rules looked up on demand (for the automaton and the
    analyses of :mod:`dotjson.ir.analysis`). Iteration covers the named rules only."""

    def __init__(self, rules, families):
        self._rules = rules
        self._families = families
        self._known = getattr(rules, "known_language", None)
        self._analysis = None
        self._final: set = set()
        self._finalizing: set = set()

    def bind_analysis(self, analysis) -> None:
        """The analysis that asks (:class:`dotjson.ir.analysis.Analysis` calls this): a family's
        members are settled with its exact productivity before the family answers for itself."""
        self._analysis = analysis

    def _family(self, name):
        for fam in self._families:
            if fam.owns(name):
                return fam
        return None

    def __getitem__(self, name):
        if name in self._rules:
            return self._rules[name]
        fam = self._family(name)
        if fam is None:
            raise KeyError(name)
        return fam.body(name)

    def __contains__(self, name) -> bool:
        return name in self._rules or self._family(name) is not None

    def __iter__(self):
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def known_language(self, name: str) -> tuple:
        """A family rule is nullable exactly by its end-of-object alternative (every other one
        starts with ``,`` or a key), and then productive."""
        fam = self._family(name) if name not in self._rules else None
        if fam is not None:
            if fam.nullable(name):
                return (True, True)
            if self._analysis is None or id(fam) in self._finalizing:
                return (False, None)
            if id(fam) not in self._final:
                # which members have a value at all, exactly (a recursive schema may ask about
                # this family meanwhile: it then gets "unknown" and the analysis searches)
                self._finalizing.add(id(fam))
                try:
                    fam.finalize(self._analysis.node_productive)
                finally:
                    self._finalizing.discard(id(fam))
                self._final.add(id(fam))
            # the count and required-member arithmetic of AnyOrderObject.productive, exact now
            return (False, fam.productive(name))
        return self._known(name) if self._known is not None else (None, None)


def rules_with_families(grammar: ir.Grammar):
    """``grammar.rules``, or a mapping that also answers for the rules of its families."""
    fams = getattr(grammar, "families", ())
    # a list may still grow (a lazily compiled schema adds families as it builds objects)
    return _FamilyRules(grammar.rules, fams) if fams or isinstance(fams, list) else grammar.rules


def expand_families(grammar: ir.Grammar, limit: int = 20_000) -> ir.Grammar:
    """A plain grammar with every family rule reachable from the start written out.

    For rendering (Lark text, the test oracle): the number of rules grows with the number of
    property subsets, so past ``limit`` rules a :class:`~dotjson.errors.GrammarError` says so.
    """
    force = getattr(grammar.rules, "force", None)
    if force is not None:
        force()  # a lazily compiled schema: its objects (and families) exist once built
    fams = getattr(grammar, "families", ())
    if not fams:
        return grammar
    from dotjson.errors import GrammarError

    rules = dict(grammar.rules)
    todo = []
    seen = set()

    def scan(node):
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ir.Ref):
                if n.name not in rules and n.name not in seen:
                    seen.add(n.name)
                    todo.append(n.name)
            else:
                stack.extend(ir.children(n))

    for body in grammar.rules.values():
        scan(body)
    while todo:
        name = todo.pop()
        fam = family_of(grammar, name)
        if fam is None:
            raise GrammarError(f"undefined rule {name!r}")
        if not fam.productive(name):
            rules[name] = ir.EMPTY
            continue
        body = fam.body(name)
        rules[name] = body
        if len(rules) > limit:
            raise GrammarError(f"property_order='any': more than {limit} rules to write out (the objects "
                               "have too many property subsets to render as one grammar text)")
        scan(body)
    return ir.Grammar(rules, grammar.start)
