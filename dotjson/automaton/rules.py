"""Rules: the grammar's rule analyses and the compilation of rule bodies (IR) into terms.

This is the only place that reads the IR grammar. Its interface with the rest of the automaton:

* ``Rules(grammar, build)``: ``grammar.rules[name]`` is a rule's IR body, ``grammar.start`` the
  start rule; ``build(prog, words, n_slots)`` runs a builder program in the term store (see
  :func:`dotjson.automaton.kernels.build`) and returns ``(term, slots)``;
* ``rules.nullable[i]``, ``rules.productive`` (names), ``rules.index[name]``;
* ``rules.body(i)``: the term of rule ``i``'s body (compiled on first use; ∅ when unproductive);
* ``rules.ref(name)``: the term ``REF name`` (∅ for an unproductive rule).

Rule families (``grammar.families``, e.g. :class:`dotjson.objects_any_order.AnyOrderObject`)
own rule names that are not in ``grammar.rules``: such a rule gets its id when first referenced
(``add_rule(n_rules)`` lets the automaton grow every array indexed by rule id), its nullability
from the family, and its body from the family on first expansion.

Analyses run once, on the rules reachable from the start: nullability (a fixpoint), left
recursion (rejected with the cycle named) and productivity; rules holding ``And``/``Diff`` are
compiled up front and checked exactly for emptiness (``is_empty``), since the IR-level
productivity over-approximates them.
"""

from __future__ import annotations


from .. import ir
from ..errors import GrammarError
from ..objects_any_order import family_of
from . import kernels as K
from .utf8 import _range_mask, utf8_sequences

_M64 = (1 << 64) - 1


def _words(mask: int) -> tuple[int, int, int, int]:
    return tuple((mask >> (64 * i)) & _M64 for i in range(4))


class Rules:
    """Rule analyses and body compilation for one grammar (see the module docstring)."""

    def __init__(self, grammar: ir.Grammar, build, is_empty, set_body, add_rule=None):
        self.grammar = grammar
        self.names = list(grammar.rules)
        self.n_static = len(self.names)
        self._add_rule = add_rule
        self.index = {n: i for i, n in enumerate(self.names)}
        self._build = build
        self._is_empty = is_empty
        self._set_body = set_body
        self._compiled: dict[int, tuple] = {}
        self._regular: dict[int, tuple] = {}
        self._chars: dict[ir.Chars, int] = {}
        self.nullable = [False] * len(self.names)
        self.productive: set[str] = set()
        self.left: dict[str, set[str]] = {}
        self._done = [False] * len(self.names)

    # ------------------------------------------------------------------ analyses

    def analyse(self) -> None:
        rules = self.grammar.rules
        start = self.grammar.start
        if start not in rules:
            raise GrammarError(f"undefined start rule {start!r}")
        # Only the rules reachable from the start matter; callees first, so that the fixpoints
        # below settle in one or two passes.
        order: list[str] = []
        seen = {start}
        fam_seen: set[int] = set()
        scan = _Scanner()
        stack = [(start, iter(sorted(scan(rules[start])[0])))]
        while stack:
            name, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                order.append(name)
                stack.pop()
                continue
            if nxt not in rules:
                fam = family_of(self.grammar, nxt)
                if fam is None:
                    raise GrammarError(f"rule {name!r} references undefined rule {nxt!r}")
                # a lazy rule family: its rules are made on demand; what they reference is static
                if id(fam) not in fam_seen:
                    fam_seen.add(id(fam))
                    for node in fam.static_nodes():
                        for r in sorted(scan(node)[0]):
                            if r not in rules and family_of(self.grammar, r) is None:
                                raise GrammarError(f"rule {nxt!r} references undefined rule {r!r}")
                            if r in rules and r not in seen:
                                seen.add(r)
                                stack.append((r, iter(sorted(scan(rules[r])[0]))))
                continue
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(sorted(scan(rules[nxt])[0]))))
        reach = {n: rules[n] for n in order}
        nullable: set[str] = set()
        changed = True
        while changed:
            changed = False
            for n in order:
                if n not in nullable and _ir_nullable(reach[n], nullable):
                    nullable.add(n)
                    changed = True
        self.left = _check_left_recursion(reach, nullable)
        self.nullable = [n in nullable for n in self.names[: self.n_static]]
        self.nullable += [family_of(self.grammar, n).nullable(n) for n in self.names[self.n_static:]]
        banned: set[str] = set()
        # Bodies compile lazily (on first expansion), except those holding And/Diff: IR-level
        # productivity over-approximates them, so they are compiled and checked exactly now, and
        # rules found empty are dropped until nothing changes.
        setop_rules = [n for n in order if scan(reach[n])[1]]
        while True:
            # family rules registered in a previous round keep their ids (their names and
            # nullability do not depend on productivity); their bodies are compiled again
            self.productive = _productive_rules(reach, banned, order, self.grammar.families)
            self._compiled.clear()
            for i in range(len(self.names)):
                self._set_body(i, -1)
                self._done[i] = False
            empty = set()
            for n in setop_rules:
                if n in self.productive:
                    if self._is_empty(self.body(self.index[n])):
                        empty.add(n)
            if not empty:
                break
            banned |= empty

    # ------------------------------------------------------------------ IR → terms

    def family_rule(self, name: str) -> int | None:
        """The id of a rule of a lazy family, registered now if new; ``None`` if no family owns
        ``name``. Call with the automaton's lock held."""
        idx = self.index.get(name)
        if idx is not None:
            return idx
        fam = family_of(self.grammar, name)
        if fam is None:
            return None
        idx = len(self.names)
        if self._add_rule is not None:
            self._add_rule(idx + 1)  # arrays indexed by rule id first: a REF term may follow
        self.names.append(name)
        self.nullable.append(fam.nullable(name))
        self._done.append(False)
        self.index[name] = idx
        return idx

    def ref(self, name: str) -> int:
        idx = self.index.get(name)
        if idx is None:
            idx = self.family_rule(name)
        if idx is None:
            raise GrammarError(f"undefined rule {name!r}")
        if name not in self.productive:
            return K.EMPTY
        t, _ = self._build([K.OP_REF, idx, int(self.nullable[idx])], [], 0)
        return t

    def body(self, i: int) -> int:
        """Compile rule ``i``'s body (∅ for an unproductive rule), record it, return its term."""
        name = self.names[i]
        if name in self.productive:
            src = self.grammar.rules.get(name) if i < self.n_static else None
            if src is None:
                src = family_of(self.grammar, name).body(name)
            t = self.compile_node(src)
        else:
            t = K.EMPTY
        self._set_body(i, t)
        self._done[i] = True
        return t

    def mark_compiled(self, done) -> None:
        """Record which rule bodies a loaded store already holds."""
        self._done = [bool(x) for x in done]

    def body_closure(self, i: int) -> None:
        """Compile rule ``i`` and every rule it reaches before consuming a byte (the derivative
        that asked for ``i`` will ask for those next: one exit to Python, not one per rule of a
        chain of 10,000)."""
        stack = [i]
        while stack:
            j = stack.pop()
            if self._done[j]:
                continue
            self.body(j)
            for n in self.left.get(self.names[j], ()):
                k = self.index.get(n)
                if k is None:
                    k = self.family_rule(n)
                if not self._done[k] and n in self.productive:
                    stack.append(k)

    def compile_node(self, root: ir.Node) -> int:
        """The term of an IR node: one builder program, run once in the store.

        Front ends share sub-grammars by identity (the key language of 1,000 properties is one
        object used in every gap): each object is compiled once (a slot within a program, a
        memo entry across programs; the memo keeps the node so that its id cannot be reused).
        """
        hit = self._compiled.get(id(root))
        if hit is not None:
            return hit[1]
        prog: list[int] = []
        words: list[tuple] = []
        slot_nodes: list = []
        slot_of: dict[int, int] = {}
        chars_slots: list[tuple] = []
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            key = id(node)
            hit = self._compiled.get(key)
            if hit is not None:
                prog += [K.OP_TERM, hit[1]]
                continue
            k = slot_of.get(key)
            if k is not None:
                prog += [K.OP_LOAD, k]
                continue
            if isinstance(node, ir.Lit):
                data = node.text.encode("utf-8")
                for b in data:
                    prog += [K.OP_BYTES, len(words)]
                    words.append(_words(1 << b))
                prog += [K.OP_SEQ, len(data)]
                continue
            if isinstance(node, ir.Chars):
                t = self._chars.get(node)
                if t is not None:
                    prog += [K.OP_TERM, t]
                    continue
                n_alts = 0
                for lo, hi in node.ranges:
                    for sq in utf8_sequences(lo, hi):
                        for a, b in sq:
                            prog += [K.OP_BYTES, len(words)]
                            words.append(_words(_range_mask(a, b)))
                        prog += [K.OP_SEQ, len(sq)]
                        n_alts += 1
                prog += [K.OP_ALT, n_alts]
                chars_slots.append((node, len(slot_nodes)))
            elif isinstance(node, ir.Ref):
                if node.name not in self.index and self.family_rule(node.name) is None:
                    raise GrammarError(f"undefined rule {node.name!r}")
                if node.name not in self.productive:
                    prog.append(K.OP_EMPTY)
                else:
                    i = self.index[node.name]
                    prog += [K.OP_REF, i, int(self.nullable[i])]
                continue
            elif not done:
                if isinstance(node, ir.And) and not all(self._is_reg(x) for x in node.items):
                    raise GrammarError("And() operands must be regular (no rule references)")
                if isinstance(node, ir.Diff) and not (
                    self._is_reg(node.left) and self._is_reg(node.right)
                ):
                    raise GrammarError("Diff() operands must be regular (no rule references)")
                if not isinstance(node, (ir.Seq, ir.Alt, ir.Repeat, ir.And, ir.Diff)):
                    raise GrammarError(f"unknown grammar node {node!r}")
                stack.append((node, True))
                for c in reversed(ir.children(node)):
                    stack.append((c, False))
                continue
            elif isinstance(node, ir.Seq):
                prog += [K.OP_SEQ, len(node.items)]
            elif isinstance(node, ir.Alt):
                prog += [K.OP_ALT, len(node.items)]
            elif isinstance(node, ir.Repeat):
                prog += [K.OP_REP, node.min, K.INF if node.max is None else node.max]
            elif isinstance(node, ir.And):
                prog += [K.OP_AND, len(node.items)]
            else:
                prog.append(K.OP_DIFF)
            slot_of[key] = len(slot_nodes)
            prog += [K.OP_SAVE, len(slot_nodes)]
            slot_nodes.append(node)
        if not slot_nodes or slot_nodes[-1] is not root:
            slot_of[id(root)] = len(slot_nodes)
            prog += [K.OP_SAVE, len(slot_nodes)]
            slot_nodes.append(root)
        t, slots = self._build(prog, words, len(slot_nodes))
        for k, node in enumerate(slot_nodes):
            self._compiled[id(node)] = (node, int(slots[k]))
        for node, k in chars_slots:
            self._chars[node] = int(slots[k])
        return t

    def _is_reg(self, node: ir.Node) -> bool:
        hit = self._regular.get(id(node))
        if hit is None:
            hit = (node, ir.is_regular(node))
            self._regular[id(node)] = hit
        return hit[1]


def _check_left_recursion(rules, nullable: set[str]) -> dict[str, set[str]]:
    """Raise for left recursion; return each rule's left references (rules reached before any
    byte is consumed)."""
    left: dict[str, set[str]] = {n: set() for n in rules}
    for n, body in rules.items():
        _left_refs(body, nullable, left[n])
    # Cycle detection in the left-call graph.
    color: dict[str, int] = {}
    for root in rules:
        if root in color:
            continue
        stack = [(root, iter(sorted(left[root])))]
        color[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
                continue
            c = color.get(nxt, 0)
            if c == 1:
                cycle = [s for s, _ in stack] + [nxt]
                cycle = cycle[cycle.index(nxt) :]
                raise GrammarError(
                    "left-recursive rules (a rule reaches itself without consuming input): "
                    + " -> ".join(cycle)
                )
            if c == 0:
                color[nxt] = 1
                stack.append((nxt, iter(sorted(left.get(nxt, ())))))  # family rules: none
    return left


def _ir_nullable(node: ir.Node, nullable_rules: set[str]) -> bool:
    if isinstance(node, ir.Lit):
        return node.text == ""
    if isinstance(node, ir.Chars):
        return False
    if isinstance(node, ir.Seq):
        return all(_ir_nullable(x, nullable_rules) for x in node.items)
    if isinstance(node, ir.Alt):
        return any(_ir_nullable(x, nullable_rules) for x in node.items)
    if isinstance(node, ir.Repeat):
        return node.min == 0 or _ir_nullable(node.item, nullable_rules)
    if isinstance(node, ir.Ref):
        return node.name in nullable_rules
    if isinstance(node, ir.And):
        return all(_ir_nullable(x, nullable_rules) for x in node.items)
    if isinstance(node, ir.Diff):
        return _ir_nullable(node.left, nullable_rules) and not _ir_nullable(
            node.right, nullable_rules
        )
    return False


def _productive_rules(rules: dict, banned: set[str], order=None, families=()) -> set[str]:
    productive: set[str] = _FamilySet(families) if families else set()
    order = list(rules) if order is None else order
    changed = True
    while changed:
        changed = False
        for n in order:
            if n not in productive and n not in banned and _ir_productive(rules[n], productive):
                productive.add(n)
                changed = True
    if families:
        productive.settle()
    return productive


class _FamilySet(set):
    """The productive rule names: the static ones as a set, a lazy family's by asking it."""

    def __init__(self, families):
        super().__init__()
        self.families = families
        self.live = True  # during the fixpoint: family answers follow the growing set

    def _member_ok(self, node) -> bool:
        return _ir_productive(node, self)

    def __contains__(self, name) -> bool:
        if set.__contains__(self, name):
            return True
        for fam in self.families:
            if fam.owns(name):
                return fam.productive(name, self._member_ok if self.live else None)
        return False

    def settle(self) -> None:
        for fam in self.families:
            fam.finalize(self._member_ok)
        self.live = False


class _Scanner:
    """``(rule names referenced, holds And/Diff)`` of IR nodes, each shared sub-tree scanned once
    (front ends share sub-grammars by identity; a plain walk would revisit them per use)."""

    def __init__(self):
        self._memo: dict[int, tuple] = {}

    def __call__(self, node: ir.Node) -> tuple[frozenset, bool]:
        hit = self._memo.get(id(node))
        if hit is not None:
            return hit[1]
        if isinstance(node, ir.Ref):
            r = (frozenset((node.name,)), False)
        else:
            kids = ir.children(node)
            names: frozenset = frozenset()
            setop = isinstance(node, (ir.And, ir.Diff))
            for k in kids:
                kn, ks = self(k)
                if kn:
                    names = names | kn
                setop = setop or ks
            r = (names, setop)
        self._memo[id(node)] = (node, r)
        return r


def _ir_productive(node: ir.Node, productive: set[str]) -> bool:
    # An over-approximation for And/Diff (their emptiness is checked exactly on terms).
    if isinstance(node, ir.Lit):
        return True
    if isinstance(node, ir.Chars):
        return bool(node.ranges)
    if isinstance(node, ir.Seq):
        return all(_ir_productive(x, productive) for x in node.items)
    if isinstance(node, ir.Alt):
        return any(_ir_productive(x, productive) for x in node.items)
    if isinstance(node, ir.Repeat):
        return node.min == 0 or _ir_productive(node.item, productive)
    if isinstance(node, ir.Ref):
        return node.name in productive
    if isinstance(node, ir.And):
        return all(_ir_productive(x, productive) for x in node.items)
    if isinstance(node, ir.Diff):
        return _ir_productive(node.left, productive)
    return False


def _left_refs(node: ir.Node, nullable: set[str], out: set[str]) -> bool:
    """Collect refs reachable before any byte is consumed; return whether ``node`` is nullable."""
    if isinstance(node, ir.Ref):
        out.add(node.name)
        return node.name in nullable
    if isinstance(node, ir.Seq):
        for x in node.items:
            if not _left_refs(x, nullable, out):
                return False
        return True
    if isinstance(node, ir.Alt):
        r = False
        for x in node.items:
            r = _left_refs(x, nullable, out) or r
        return r
    if isinstance(node, ir.Repeat):
        r = _left_refs(node.item, nullable, out)
        return r or node.min == 0
    if isinstance(node, (ir.And, ir.Diff)):
        return _ir_nullable(node, nullable)
    return _ir_nullable(node, nullable)


