"""Grammar analyses, lazy and incremental: nullable, productive, left recursion.

One home for the analyses that the schema compiler and the automaton both need. They work on any
``Mapping`` of rule bodies, including one whose bodies are produced on demand
(:class:`dotjson.ir.LazyRules`): a question about a rule looks at the bodies it needs and no more,
and every answer is remembered, so the total work over a decoding session is proportional to the
part of the grammar that session reached.

Both properties are least fixpoints of monotone boolean equations, one per rule (``r`` is
nullable when its body can derive ε, productive when it can derive some finite text). A question
is answered in two steps:

1. a depth-first *witness search* from the rule asked about, trying first the alternatives with
   the fewest unknown rules (an object whose properties are all optional is productive through
   ``{}`` without looking at any property's schema; a chain of optional members is crossed without
   opening the members). A ``True`` found this way is final: the equations are monotone.
2. When the search ends without a witness, an exact fixpoint over the rules it visited (and any
   it still needs) settles them all. A rule on the search stack counted as ``False`` meanwhile,
   which is why a plain search cannot conclude ``False`` by itself.

Both steps iterate with explicit stacks: a chain of ten thousand rules costs no recursion. A
rule's builder may answer for it (``known_language``) by asking this analysis about other rules
(an any-order object asks about its members' values); such a question, asked while a solver is
already settling rules, is not answered by a nested search: it raises :class:`_Pending` to the
solver's own loop, which settles that rule first and then asks the builder again; a question
about a rule the loop is already settling raises :class:`Unsettled`, and the builder answers
"not known" (the analysis then reads the rule's body). So the depth of the Python stack never
grows with the grammar (nothing here depends on the interpreter's recursion limit).

``And``/``Diff`` operands are regular (no references). Their nullability is computed directly;
their emptiness is not decidable from the IR alone, so the productive analysis takes a callback
(the automaton checks it exactly on its terms); without one they count as non-empty (an
over-approximation that the automaton corrects).
"""

from __future__ import annotations

from typing import Callable, Mapping

from dotjson._weak import weak_method
from dotjson.errors import GrammarError

from . import And, Alt, Chars, Diff, Lit, Node, Ref, Repeat, Seq

# A condition is True, False, a rule name, or (is_and, tuple of conditions).
_AND, _OR = True, False


def _mk(is_and: bool, parts: list):
    out = []
    for p in parts:
        if p is True:
            if is_and:
                continue
            return True
        if p is False:
            if is_and:
                return False
            continue
        out.append(p)
    if not out:
        return is_and  # empty AND is True, empty OR is False
    if len(out) == 1:
        return out[0]
    return (is_and, tuple(out))


def all_of(*conds):
    """The condition "every one of ``conds``" (each ``True``, ``False``, a rule name or a
    condition): what a builder may answer for a rule's productivity instead of a boolean (see
    :class:`Analysis`)."""
    return _mk(_AND, list(conds))


def _parts(f, items, decisive: bool) -> list:
    """Conditions of ``items``, stopping at the first one equal to ``decisive`` (``False`` ends
    a sequence, ``True`` an alternation): a key's spelling is never looked at once its opening
    quote has decided."""
    out = []
    for x in items:
        c = f(x)
        out.append(c)
        if c is decisive:
            break
    return out


_NO_MEMO: Mapping = {}  # (read only)


def is_regular(node: Node, memo: dict, base: Mapping = _NO_MEMO) -> bool:
    """True when ``node`` references no rule; shared sub-trees are visited once (``memo``,
    by identity, holds the nodes it answered for; ``base``, read-only, more of them)."""
    hit = memo.get(id(node))
    if hit is None:
        hit = base.get(id(node))
    if hit is not None:
        return hit[1]
    stack = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in memo:
            continue
        hit = base.get(id(n))
        if hit is not None:
            memo[id(n)] = hit
            continue
        t = type(n)
        if t is Ref:
            memo[id(n)] = (n, False)
            continue
        if t is Lit or t is Chars:
            memo[id(n)] = (n, True)
            continue
        kids = (n.item,) if t is Repeat else (n.left, n.right) if t is Diff else n.items
        if not expanded:
            stack.append((n, True))
            stack.extend((k, False) for k in kids if id(k) not in memo)
        else:
            memo[id(n)] = (n, all(memo[id(k)][1] for k in kids))
    return memo[id(node)][1]


def regular_nullable(node: Node) -> bool:
    """Nullability of a node without rule references (operands of ``And``/``Diff``)."""
    t = type(node)
    if t is Lit:
        return node.text == ""
    if t is Chars:
        return False
    if t is Seq or t is And:
        return all(regular_nullable(x) for x in node.items)
    if t is Alt:
        return any(regular_nullable(x) for x in node.items)
    if t is Repeat:
        return node.min == 0 or regular_nullable(node.item)
    if t is Diff:
        return regular_nullable(node.left) and not regular_nullable(node.right)
    raise GrammarError("And() and Diff() operands must be regular (no rule references)")


_MISS = object()


class Unsettled(Exception):
    """Raised into a rule's builder that asks, while it answers for a rule, about a rule the
    analysis is settling at that moment (a recursive schema asking about itself): the builder
    answers "not known" (``None``), and the analysis reads the rule's body instead."""


class _Pending(Exception):
    """A question the solver's loop must settle first (asked from inside a builder's hint)."""

    def __init__(self, solver, name):
        super().__init__(name)
        self.solver = solver
        self.name = name


class _Solver:
    """Demand-driven least fixpoint of one family of monotone equations over rules."""

    def __init__(self, rules: Mapping, cond_of: Callable[[Node], object], hint=None):
        self.rules = rules
        self.cond_of_node = cond_of
        self.known: dict[str, bool] = {}
        self._conds: dict[str, object] = {}
        self._hint = hint
        # the rules the loop of solve() is settling, outermost first (None: not solving)
        self._todo: dict[str, None] | None = None
        self._no_hint: set[str] = set()  # rules whose hint answered None in this search

    def get(self, name: str):
        v = self.known.get(name)
        if v is None and self._hint is not None and name not in self._no_hint:
            try:
                v = self._hint(name)
            except Unsettled:
                v = None  # its builder asked about a rule being settled: read the body
            if v is None:
                # not asked again while this search lasts (it would not know more before its
                # end, and the body answers exactly): a recursive schema's rules are otherwise
                # asked once per visit
                self._no_hint.add(name)
            if v is True or v is False:
                self.known[name] = v
            elif v is not None:
                # a condition the rule's builder knows to be equivalent to its body's: the
                # search goes on through it without building the body
                if name not in self._conds:
                    self._conds[name] = v
                v = None
        return v

    def cond(self, name: str):
        c = self._conds.get(name)
        if c is None:
            try:
                body = self.rules[name]
            except KeyError:
                raise GrammarError(f"undefined rule {name!r}") from None
            c = self._conds[name] = self.cond_of_node(body)
        return c

    # Three-valued evaluation: True, False, or None (depends on rules not known yet). Also
    # returns the cheapest unknown rule to look at next and whether a provisional value was used.
    def _eval(self, c, prov: set):
        if c is True or c is False:
            return c, 0, None, False
        if type(c) is str:
            v = self.get(c)
            if v is not None:
                return v, 0, None, False
            if c in prov:
                return False, 0, None, True
            return None, 1, c, False
        is_and, parts = c
        tainted = False
        best_cost, best_pick = None, None
        unknown = False
        for p in parts:
            v, cost, pick, tn = self._eval(p, prov)
            tainted = tainted or tn
            if v is None:
                unknown = True
                if is_and:
                    best_cost = cost if best_cost is None else best_cost + cost
                    if best_pick is None:
                        best_pick = pick
                elif best_cost is None or cost < best_cost:
                    best_cost, best_pick = cost, pick
            elif v is not is_and:  # False in an AND, True in an OR: decided
                return v, 0, None, tainted and is_and
        if unknown:
            return None, best_cost, best_pick, tainted
        return is_and, 0, None, tainted

    def solve(self, root: str) -> bool:
        v = self.known.get(root)
        if v is not None:
            return v
        todo = self._todo
        if todo is not None:
            # asked from inside a builder's hint while this solver settles other rules: the loop
            # below settles it first (no nested search), or, settling it already, says so
            if root in todo:
                raise Unsettled(root)
            raise _Pending(self, root)
        todo = self._todo = {root: None}
        try:
            while todo:
                x = next(reversed(todo))
                try:
                    self._settle(x)
                except _Pending as p:
                    if p.solver is not self:
                        raise
                    # settle p.name, then start x over: what x's search settled stays known
                    # (True is final, False was recorded only when no provisional value was
                    # used), and each restart adds a rule to settle, so the loop ends
                    todo[p.name] = None
                    continue
                del todo[x]
        finally:
            self._todo = None
        return self.known[root]

    def _settle(self, root: str) -> None:
        self._no_hint.clear()
        v = self.get(root)
        if v is not None:
            return
        # 1. witness search
        prov: set[str] = set()       # on the stack, or failed during this search
        visited: list[str] = []      # in finishing order
        stack = [root]
        prov.add(root)
        while stack:
            x = stack[-1]
            v, _, pick, tainted = self._eval(self.cond(x), prov)
            if v is None:
                prov.add(pick)
                stack.append(pick)
                continue
            stack.pop()
            visited.append(x)
            if v:
                self.known[x] = True
                prov.discard(x)
            elif not tainted:
                self.known[x] = False
                prov.discard(x)
        if root in self.known:
            return
        # 2. exact fixpoint over what the search saw (and what it still needs)
        group = [x for x in visited if x not in self.known]
        members = set(group)
        proven: set[str] = set()
        changed = True
        while changed:
            changed = False
            for x in group:
                if x in proven:
                    continue
                r = self._fix_eval(self.cond(x), proven, members, group)
                if r:
                    proven.add(x)
                    changed = True
        for x in group:
            self.known[x] = x in proven

    def _fix_eval(self, c, proven, members, group) -> bool:
        if c is True or c is False:
            return c
        if type(c) is str:
            v = self.get(c)
            if v is not None:
                return v
            if c in proven:
                return True
            if c not in members:
                members.add(c)
                group.append(c)  # visited by the ongoing pass, so the fixpoint waits for it
            return False
        is_and, parts = c
        if is_and:
            return all(self._fix_eval(p, proven, members, group) for p in parts)
        return any(self._fix_eval(p, proven, members, group) for p in parts)


class Analysis:
    """Lazy nullable / productive / left-recursion analyses of a rule mapping.

    Parameters
    ----------
    rules : Mapping of str to Node
        Rule bodies; may produce them on demand.
    setop_productive : callable, optional
        ``f(node) -> bool`` deciding exactly whether an ``And``/``Diff`` node's language is
        non-empty. Without it they count as non-empty.

    Notes
    -----
    When ``rules`` has a method ``known_language(name)`` returning ``(nullable, productive)``
    (each ``True``, ``False`` or ``None`` for "unknown"), its answers are taken without building
    the rule: the schema compiler knows that a JSON value is never empty text, and that
    ``{"type": "string"}`` has values, before it compiles anything. A productivity answer may also
    be a condition (:func:`all_of` over rule names) that the rule's builder guarantees to be
    equivalent to its body's: an object's state is productive exactly when the value of its next
    required member and the state after that member are; the search then goes on through the
    condition and the body is built only when the automaton reaches the rule.
    """

    def __init__(self, rules: Mapping, setop_productive: Callable[[Node], bool] | None = None):
        self.rules = rules
        self._setop = setop_productive
        # memos keyed by node identity; ``_keep`` holds the nodes (an id cannot be reused) so
        # that an entry is a plain value, not one more tracked tuple for the collector to walk
        self._nmemo: dict[int, object] = {}
        self._pmemo: dict[int, object] = {}
        self._keep: list = []
        known = getattr(rules, "known_language", None)
        nh = ph = both = None
        if known is not None:
            # one question to the rules answers both analyses (a new rule is asked both)
            last = [None, None]

            def both(name):
                if last[0] != name:
                    last[0], last[1] = name, known(name)
                return last[1]

            def nh(name):
                return both(name)[0]

            def ph(name):
                return both(name)[1]
        # (the solvers call back into this analysis weakly: no cycle, see dotjson._weak)
        self._both = both
        self._null = _Solver(rules, weak_method(self._ncond), nh)
        self._prod = _Solver(rules, weak_method(self._pcond), ph)
        bind = getattr(rules, "bind_analysis", None)
        if bind is not None:
            bind(self)
        self._left_ok: set[str] = set()
        self._lmemo: dict[int, tuple] = {}

    # ---------------------------------------------------------------- conditions
    def _ncond(self, node: Node):
        hit = self._nmemo.get(id(node), _MISS)
        if hit is not _MISS:
            return hit
        t = type(node)
        if t is Ref:
            c = node.name
        elif t is Lit:
            c = node.text == ""
        elif t is Chars:
            c = False
        elif t is Seq:
            c = _mk(_AND, _parts(self._ncond, node.items, False))
        elif t is Alt:
            c = _mk(_OR, _parts(self._ncond, node.items, True))
        elif t is Repeat:
            c = True if node.min == 0 else self._ncond(node.item)
        elif t is And or t is Diff:
            c = regular_nullable(node)
        else:
            raise GrammarError(f"unknown grammar node {node!r}")
        self._nmemo[id(node)] = c
        self._keep.append(node)
        return c

    def _pcond(self, node: Node):
        hit = self._pmemo.get(id(node), _MISS)
        if hit is not _MISS:
            return hit
        t = type(node)
        if t is Ref:
            c = node.name
        elif t is Lit:
            c = True
        elif t is Chars:
            c = bool(node.ranges)
        elif t is Seq:
            c = _mk(_AND, _parts(self._pcond, node.items, False))
        elif t is Alt:
            c = _mk(_OR, _parts(self._pcond, node.items, True))
        elif t is Repeat:
            c = True if node.min == 0 else self._pcond(node.item)
        elif t is And or t is Diff:
            c = True if self._setop is None else bool(self._setop(node))
        else:
            raise GrammarError(f"unknown grammar node {node!r}")
        self._pmemo[id(node)] = c
        self._keep.append(node)
        return c

    # ---------------------------------------------------------------- questions
    def settled(self, name: str):
        """``(nullable, productive)`` of rule ``name`` where both are known without a search:
        answered before, or both told outright by the rules' ``known_language``; ``None``
        otherwise (then ask :meth:`nullable` and :meth:`productive`). A new rule id asks this
        first: the object automaton's builders answer most of their rules outright, and the
        searches' set-up for such an answer cost ~5 us a rule."""
        null, prod = self._null, self._prod
        n, p = null.known.get(name), prod.known.get(name)
        if n is not None and p is not None:
            return n, p
        both = self._both
        if both is None or null._todo is not None or prod._todo is not None:
            return None  # (inside a search: its own bookkeeping answers)
        try:
            kn, kp = both(name)
        except Unsettled:
            return None
        if n is None:
            n = kn if kn is True or kn is False else None
        if p is None:
            p = kp if kp is True or kp is False else None
        if n is None or p is None:
            return None
        null.known.setdefault(name, n)
        prod.known.setdefault(name, p)
        return n, p

    def nullable(self, name: str) -> bool:
        """Whether rule ``name`` derives the empty text."""
        return self._null.solve(name)

    def productive(self, name: str) -> bool:
        """Whether rule ``name`` derives at least one finite text (exact)."""
        return self._prod.solve(name)

    def node_nullable(self, node: Node) -> bool:
        c = self._ncond(node)
        return self._eval_with(c, self.nullable)

    def node_productive(self, node: Node) -> bool:
        c = self._pcond(node)
        return self._eval_with(c, self.productive)

    @staticmethod
    def _eval_with(c, ask) -> bool:
        return _eval_cond(c, ask)

    def snapshot(self) -> tuple:
        """Everything settled so far, for :meth:`restore` into an analysis of a grammar that
        holds the same rules (same names, same body objects: the memos are keyed by node
        identity, and the nodes stay alive with this analysis)."""
        return (dict(self._null.known), dict(self._prod.known), dict(self._null._conds),
                dict(self._prod._conds), dict(self._nmemo), dict(self._pmemo), dict(self._lmemo),
                set(self._left_ok))

    def restore(self, snap: tuple) -> None:
        """Start from a :meth:`snapshot` (copied: this analysis goes on alone)."""
        nk, pk, nc, pc, nm, pm, lm, ok = snap
        self._null.known.update(nk)
        self._prod.known.update(pk)
        self._null._conds.update(nc)
        self._prod._conds.update(pc)
        self._nmemo.update(nm)
        self._pmemo.update(pm)
        self._lmemo.update(lm)
        self._left_ok.update(ok)

    def known(self) -> tuple[dict, dict]:
        """``(nullable, productive)`` answers settled so far, by rule name."""
        return dict(self._null.known), dict(self._prod.known)

    def seed(self, nullable: Mapping, productive: Mapping) -> None:
        """Install answers computed earlier (a saved automaton)."""
        self._null.known.update({str(k): bool(v) for k, v in nullable.items()})
        self._prod.known.update({str(k): bool(v) for k, v in productive.items()})

    def left_refs(self, node: Node) -> tuple[str, ...]:
        """Rules reachable from ``node`` before any character is consumed, once each, in the
        order the node meets them (deterministic without sorting)."""
        hit = self._lmemo.get(id(node))
        if hit is not None:
            return hit
        out: dict[str, None] = {}
        self._left(node, out)
        refs = tuple(out)  # of strings: untracked by the collector
        self._lmemo[id(node)] = refs
        self._keep.append(node)
        return refs

    def _left(self, node: Node, out: dict) -> bool:
        t = type(node)
        if t is Lit:
            return not node.text
        if t is Chars:
            return False
        if t is Ref:
            out[node.name] = None
            return self.nullable(node.name)
        if t is Seq:
            for x in node.items:
                if not self._left(x, out):
                    return False
            return True
        if t is Alt:
            r = False
            for x in node.items:
                r = self._left(x, out) or r
            return r
        if t is Repeat:
            r = self._left(node.item, out)
            return r or node.min == 0
        return self.node_nullable(node)

    def check_left_recursion(self, name: str) -> None:
        """Raise :class:`GrammarError` when rule ``name`` reaches a rule that reaches itself
        before consuming input. Incremental: rules already checked are not walked again."""
        if name in self._left_ok:
            return
        colour: dict[str, int] = {name: 1}
        stack = [(name, iter(self.left_refs(self.rules[name])))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                self._left_ok.add(node)
                stack.pop()
                continue
            if nxt in self._left_ok:
                continue
            c = colour.get(nxt, 0)
            if c == 1:
                cycle = [s for s, _ in stack] + [nxt]
                cycle = cycle[cycle.index(nxt):]
                raise GrammarError(
                    "left-recursive rules (a rule reaches itself without consuming input): "
                    + " -> ".join(cycle)
                )
            if c == 0:
                if nxt not in self.rules:
                    raise GrammarError(f"rule {node!r} references undefined rule {nxt!r}")
                colour[nxt] = 1
                stack.append((nxt, iter(self.left_refs(self.rules[nxt]))))


def _eval_cond(c, ask) -> bool:
    """A condition's value, ``ask(name)`` for each rule it names. Conditions are shallow (one
    rule body): plain recursion (a module function: a nested one calling itself is a reference
    cycle, left to the collector at every call)."""
    if c is True or c is False:
        return c
    if type(c) is str:
        return ask(c)
    is_and, parts = c
    return all(_eval_cond(p, ask) for p in parts) if is_and else any(_eval_cond(p, ask) for p in parts)
