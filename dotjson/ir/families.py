"""Rule families: sets of rules too large to write down, whose bodies are made on demand.

A grammar may hold *families* (``ir.Grammar.families``). A family is any object with

* ``owns(name) -> bool``: whether rule ``name`` is one of its rules;
* ``body(name) -> ir.Node``: that rule's body, made when first asked;
* ``nullable(name) -> bool`` and ``productive(name) -> bool | None``: the rule's language, from
  the family's own knowledge (``None``: not known yet);
* ``bind(node_productive)``: the callback it uses to ask the analysis about its members;
* optionally ``prefix``: a string such that every name it owns starts with ``<prefix>__`` (its
  names are then found without asking every family);
* optionally ``renderable = False`` (with ``why_no_text``): its rules are never written out as
  grammar text;
* for saving (:mod:`dotjson.serialization`): a ``kind`` (a name unique among families),
  ``to_json(enc) -> dict`` (plain JSON values with ``"kind": kind``; ``enc`` turns an IR node
  into JSON) and a class method ``from_json(d, dec)`` (``dec`` the inverse of ``enc``; a
  malformed ``d`` raises ``ValueError``, ``KeyError`` or ``TypeError``), the class registered
  with :func:`register_family`. A family that reads the grammar's own rules may define
  ``attach(grammar)``, called once the loaded grammar exists.

A family whose rules are cheap one at a time but too many for a token mask's walk (which expands
every token prefix the vocabulary's tries reach from a state) can tell the two apart:
:func:`token_walk_id` is non-zero while this thread computes a token mask (the mask code runs it
inside :func:`token_walk`), and the same number for every body asked during that one walk, so
the family can count what one mask builds and refuse at once past a budget.

The automaton and the analyses read a grammar's rules through :func:`rules_with_families`, which
looks family rules up on demand; :func:`expand_families` writes the reachable ones out (for
rendering); :func:`family_to_json` and :func:`family_from_json` save and load one through the
registry. Nothing here knows what a family stands for: the JSON Schema layer's families
(any-order objects, number automata, ``uniqueItems``) register themselves where they are defined,
and the modules that define them are imported with that layer (``dotjson.jsonschema``), so a
saved index loads in a fresh process.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Mapping

from dotjson import ir
from dotjson._weak import weak_method
from dotjson.ir.analysis import Unsettled

__all__ = ["family_of", "rules_with_families", "expand_families", "register_family", "family_kinds",
           "family_to_json", "family_from_json", "token_walk", "token_walk_id", "not_a_token_walk"]


class _WalkScope(threading.local):
    depth = 0
    walk = 0
    saved = None  # the scopes :func:`not_a_token_walk` set aside


_SCOPE = _WalkScope()
_WALKS = itertools.count(1)


class _TokenWalk:
    __slots__ = ()

    def __enter__(self):
        sc = _SCOPE
        if sc.depth == 0:
            sc.walk = next(_WALKS)
        sc.depth += 1

    def __exit__(self, *exc):
        sc = _SCOPE
        sc.depth -= 1
        if sc.depth == 0:
            sc.walk = 0


_TOKEN_WALK = _TokenWalk()


def token_walk() -> _TokenWalk:
    """The scope of one token mask's computation in this thread, a context manager (nested
    scopes are one walk; entering and leaving it costs ~0.4 µs)."""
    return _TOKEN_WALK


class _NotATokenWalk:
    __slots__ = ()

    def __enter__(self):
        sc = _SCOPE
        if sc.saved is None:
            sc.saved = []
        sc.saved.append((sc.depth, sc.walk))
        sc.depth = sc.walk = 0

    def __exit__(self, *exc):
        sc = _SCOPE
        sc.depth, sc.walk = sc.saved.pop()


_NOT_A_TOKEN_WALK = _NotATokenWalk()


def not_a_token_walk() -> _NotATokenWalk:
    """A scope inside a token mask's computation that is not part of it (a context manager): a
    family reading its own automaton of item texts there (a search for a completion, a state of
    it) reads, as :func:`token_walk_id` ``0`` tells the families that automaton reaches (a
    ``uniqueItems`` array nested in another's items), so they do not count what it makes against
    the mask."""
    return _NOT_A_TOKEN_WALK


def token_walk_id() -> int:
    """A number identifying the token mask this thread is computing (the same for the whole
    walk, a new one for each), ``0`` when it computes none (reading a document, a state's
    successor, an emptiness question)."""
    return _SCOPE.walk


#: family kind -> the class that loads it (its ``from_json``), filled by :func:`register_family`
_KINDS: dict = {}


def register_family(cls):
    """Register a rule family class for saving and loading (a class decorator).

    Parameters
    ----------
    cls : type
        A family class with a class attribute ``kind`` (a non-empty string, unique among
        families), a ``to_json(enc)`` method and a class method ``from_json(d, dec)``.

    Returns
    -------
    type
        ``cls`` itself, so that ``@register_family`` stands above the class.

    Raises
    ------
    DotjsonTypeError
        ``cls`` lacks a string ``kind``, ``to_json`` or ``from_json``.
    DotjsonValueError
        Another class already registered the same ``kind``.
    """
    from dotjson.errors import DotjsonTypeError, DotjsonValueError

    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise DotjsonTypeError(f"Invalid rule family {getattr(cls, '__qualname__', cls)!r}: expected a class "
                               f"with a non-empty string attribute 'kind', got {kind!r}")
    for method in ("to_json", "from_json"):
        if not callable(getattr(cls, method, None)):
            raise DotjsonTypeError(f"Invalid rule family {cls.__qualname__!r} (kind {kind!r}): it has no {method}")
    prev = _KINDS.get(kind)
    # (the same class registered again, e.g. by a reloaded module, replaces itself)
    if prev is not None and (prev.__module__, prev.__qualname__) != (cls.__module__, cls.__qualname__):
        raise DotjsonValueError(f"rule family kind {kind!r} is registered twice: by "
                                f"{prev.__module__}.{prev.__qualname__} and {cls.__module__}.{cls.__qualname__}")
    _KINDS[kind] = cls
    return cls


def family_kinds() -> tuple:
    """The registered family kinds, sorted (the kinds a saved index may hold)."""
    return tuple(sorted(_KINDS))


def family_to_json(fam, enc) -> dict:
    """``fam.to_json(enc)``, checked: its class is the one registered for its kind, and the kind
    is written; ``enc`` turns an IR node into JSON.

    Raises
    ------
    DotjsonTypeError
        ``fam``'s class is not registered (an index holding it could be saved but never loaded).
    """
    kind = getattr(fam, "kind", None)
    if not isinstance(kind, str) or _KINDS.get(kind) is not type(fam):
        from dotjson.errors import DotjsonTypeError

        raise DotjsonTypeError(f"rule family {type(fam).__qualname__!r} (kind {kind!r}) cannot be saved: its class "
                               "is not registered (dotjson.ir.families.register_family)")
    d = fam.to_json(enc)
    if not isinstance(d, dict) or d.get("kind") != kind:
        from dotjson.errors import DotjsonTypeError

        raise DotjsonTypeError(f"rule family {type(fam).__qualname__!r}: to_json must return a dict with "
                               f"'kind': {kind!r}")
    return d


def family_from_json(d, dec):
    """The family :func:`family_to_json` wrote, made by the ``from_json`` of the class registered
    for its kind (``dec`` turns JSON back into an IR node).

    Raises
    ------
    ValueError
        ``d`` is not a family of a registered kind (the message names the kind), or is malformed;
        the loader (:mod:`dotjson.serialization`) reports it as an
        :class:`~dotjson.errors.IndexFormatError` naming the directory.
    """
    kind = d.get("kind") if isinstance(d, dict) else None
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown rule family kind {kind!r} (this dotjson loads {', '.join(family_kinds())})")
    try:
        return cls.from_json(d, dec)
    except (KeyError, TypeError, ArithmeticError) as e:
        raise ValueError(f"malformed rule family {kind!r}: {type(e).__name__}: {e}") from None
    except ValueError as e:
        raise ValueError(f"rule family {kind!r}: {e}") from None


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

    def texts_of(self, node):
        """The rules' :meth:`dotjson.ir.LazyRules.texts_of` (``None`` where they have none)."""
        f = getattr(self._rules, "texts_of", None)
        return None if f is None else f(node)

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
