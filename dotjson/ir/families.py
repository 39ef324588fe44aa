"""Rule families: sets of rules too large to write down, whose bodies are made on demand.

A grammar may hold *families* (``ir.Grammar.families``). A family is any object with

* ``owns(name) -> bool``: whether rule ``name`` is one of its rules;
* ``body(name) -> ir.Node``: that rule's body, made when first asked;
* ``nullable(name) -> bool`` and ``productive(name) -> bool | None``: the rule's language, from
  the family's own knowledge (``None``: not known yet);
* ``bind(node_productive)``: the callback it uses to ask the analysis about its members;
* optionally ``prefix``: a string such that every name it owns starts with ``<prefix>__`` (its
  names are then found without asking every family).

The automaton and the analyses read a grammar's rules through :func:`rules_with_families`, which
looks family rules up on demand; :func:`expand_families` writes the reachable ones out (for
rendering). Nothing here knows what a family stands for: ``property_order="any"`` JSON objects
(:mod:`dotjson.jsonschema.objects_any_order`) are today's one kind.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping

from dotjson import ir
from dotjson._weak import weak_method
from dotjson.ir.analysis import Unsettled

__all__ = ["family_of", "rules_with_families", "expand_families"]


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
        self._owner: dict = {}  # family rule name -> its family
        # families by their ``prefix`` (a family's names are ``<prefix>__...``): a name is looked
        # up by its own prefixes, not asked of every family (a schema may make a thousand);
        # families without one (or a prefix met twice) are asked one by one
        self._by_prefix: dict = {}
        self._unindexed: list = []
        self._n_indexed = 0

    def bind_analysis(self, analysis) -> None:
        """The analysis that asks (:class:`dotjson.ir.analysis.Analysis` calls this): a family's
        members are settled with its exact productivity before the family answers for itself."""
        self._analysis = weakref.ref(analysis)  # (it holds these rules: no cycle)

    def _family(self, name):
        hit = self._owner.get(name)
        if hit is not None:
            return hit
        fams = self._families
        while self._n_indexed < len(fams):  # (the list grows as a lazily compiled schema builds)
            fam = fams[self._n_indexed]
            self._n_indexed += 1
            prefix = getattr(fam, "prefix", None)
            if isinstance(prefix, str) and prefix not in self._by_prefix:
                self._by_prefix[prefix] = fam
            else:
                self._unindexed.append(fam)
        i = name.find("__")
        while i > 0:
            fam = self._by_prefix.get(name[:i])
            if fam is not None and fam.owns(name):
                self._owner[name] = fam  # (asked of every family rule by every lookup)
                return fam
            i = name.find("__", i + 1)
        for fam in self._unindexed:
            if fam.owns(name):
                self._owner[name] = fam
                return fam
        return None  # (not remembered: the list of families may still grow)

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
        """A family rule's nullability is the family's own answer (``fam.nullable``; a nullable
        one is productive); its productivity comes from ``fam.productive`` once the family is
        bound to this analysis (``fam.bind``), which settles the members' productivity first."""
        fam = self._family(name) if name not in self._rules else None
        if fam is not None:
            if fam.nullable(name):
                return (True, True)
            analysis = self._analysis() if self._analysis is not None else None
            if analysis is None:
                return (False, None)
            if id(fam) not in self._final:
                # members' productivity, exactly and one member at a time, from this analysis
                fam.bind(weak_method(analysis.node_productive))
                self._final.add(id(fam))
            # the family's own arithmetic (e.g. AnyOrderObject's counts and required members;
            # None while a member's own productivity is being settled: the analysis then searches)
            try:
                return (False, fam.productive(name))
            except Unsettled:  # a member asked about a rule the analysis is settling now
                return (False, None)
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
        if getattr(fam, "renderable", True) is False:
            why = getattr(fam, "why_no_text", "its rules are made only as decoding reaches them")
            raise GrammarError(f"rule family {getattr(fam, 'kind', type(fam).__name__)!r} has no grammar text ({why})")
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
