"""The reference derivative engine: dotjson's pure-Python automaton before the Numba port.

Kept unchanged in meaning (only its imports and its recursion-limit bump differ: it recurses once
per rule of a rule chain, so tests give it moderate grammars) as the naive twin that
``tests/test_native_automaton.py`` checks the kernels of :mod:`dotjson.automaton` against. It
follows the grammar's rule handling: rule families (``property_order="any"``) and lazily
produced rules with :class:`dotjson.ir.analysis.Analysis`.

A lazily expanded byte automaton for a grammar in the IR (:mod:`dotjson.ir`).

States are *byte-level regular terms* with rule references, interned by structure (hash-consing),
and transitions are their Brzozowski derivatives (all bytes of a state in one pass, as
derivative classes), computed only when decoding first needs them.

Why derivatives:

- Exact by construction: the derivative of a term by a byte denotes exactly the suffixes that
  complete the text so far, so the mask ``{t : derivative(state, t) ≠ ∅}`` forbids nothing valid
  and allows nothing invalid.
- Lazy by construction: a state exists only once a derivative produced it; counted repetition
  ``R{m,M}`` derives to ``R' R{m-1,M-1}``, so a bound of 100000 costs nothing until the output
  reaches it, and never more than the output actually uses.
- Recursion (``$ref`` cycles) is a rule reference ``REF r`` expanded one level per derivative;
  the pending continuations (``"]"``, ``"}"`` …) pile up in the term, which is the stack.
- Intersection and difference (``pattern`` ∩ length, object keys other than the declared ones)
  derive component-wise; their (rare) emptiness is checked by a bounded search.

Every state handed out is *live*: a term that cannot reach acceptance is the dead state, never a
state. For terms without ``AND``/``DIFF`` a syntactically non-empty term is non-empty because a
reference to an unproductive rule is ∅ (decided when the reference is first made, by
:mod:`dotjson.ir.analysis`); terms with them are checked explicitly.

The transition table ``trans`` (``int32[n_states, 256]``; ``-1`` not yet computed, ``-2`` dead) is
what the Numba kernels read; they return to Python when they meet a row that is not filled yet.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

from dotjson import ir
from dotjson.errors import GrammarError, LimitExceededError
from dotjson.ir.analysis import Analysis, is_regular
from dotjson.automaton.utf8 import _range_mask, utf8_sequences  # shared: not the engine under test
from dotjson.ir.families import rules_with_families

# Term kinds.
from dotjson.automaton.store import K_ALT, K_AND, K_BYTES, K_DIFF, K_EMPTY, K_EPS, K_REF, K_REP, K_SEQ  # the layout, shared

UNKNOWN = -1
DEAD = -2
INF = -1  # "no upper bound" in a REP term

_ALL_BYTES = (1 << 256) - 1


# --------------------------------------------------------------------------------------- UTF-8


# ----------------------------------------------------------------------------------- automaton


class Automaton:
    """Byte automaton of an IR grammar, expanded on demand.

    Parameters
    ----------
    grammar : dotjson.ir.Grammar
        The grammar; its start rule's language is the set of accepted documents.
    max_states : int
        Budget on the number of interned states; past it, :class:`LimitExceededError`.
    fuel : int
        Budget on the derivative steps of one emptiness search (``AND``/``DIFF`` terms).
    """

    def __init__(self, grammar: ir.Grammar, *, max_states: int = 1_000_000, fuel: int = 200_000):
        self.grammar = grammar
        self.max_states = max_states
        self.fuel = fuel
        self.lock = threading.RLock()
        # term store
        self._nodes: list[tuple] = []
        self._ids: dict[tuple, int] = {}
        self._nullable: list[bool] = []
        self._hasbool: list[bool] = []
        self._hasrep: list[bool] = []
        self._rows: dict[int, tuple] = {}
        self._deriv: dict[int, int] = {}
        self._seqs: dict[int, int] = {}
        self._inf: dict[int, bool] = {}
        self._empty: dict[int, bool] = {}
        self._clamp: dict[int, int] = {}
        self._chars_cache: dict[ir.Chars, int] = {}
        self.EMPTY = self._mk((K_EMPTY,), False)
        self.EPS = self._mk((K_EPS,), True)
        # rules
        self._rule_index: dict[str, int] = {}
        self._names: list[str] = []
        self._compiled: dict[int, tuple] = {}
        self._regular: dict[int, tuple] = {}
        self._rule_body: list[int | None] = []
        self._rule_nullable: list[bool | None] = []
        self._rules = rules_with_families(grammar)
        self._analysis = Analysis(self._rules, self._setop_productive)
        self._compile_rules()
        # states
        self._state_of: dict[int, int] = {}
        self._term_of: list[int] = []
        cap = 64
        self.trans = np.full((cap, 256), UNKNOWN, dtype=np.int32)
        self.accepting = np.zeros(cap, dtype=np.bool_)
        self.plain_inv = np.full(cap, -1, dtype=np.int8)
        self.row_ready = np.zeros(cap, dtype=np.bool_)
        self.start_term = self.ref_term(grammar.start)
        if self.is_empty(self.start_term):
            raise GrammarError("the grammar's language is empty: no document can satisfy it")
        self.start = self.state(self.start_term)

    # ------------------------------------------------------------------ term construction

    def _mk(self, key: tuple, nullable: bool, hasbool: bool = False, hasrep: bool = False) -> int:
        tid = self._ids.get(key)
        if tid is None:
            tid = len(self._nodes)
            self._nodes.append(key)
            self._ids[key] = tid
            self._nullable.append(nullable)
            self._hasbool.append(hasbool)
            self._hasrep.append(hasrep)
        return tid

    def bytes_(self, mask: int) -> int:
        if mask == 0:
            return self.EMPTY
        return self._mk((K_BYTES, mask), False)

    def seq(self, a: int, b: int) -> int:
        """Concatenation, kept right-nested: ``SEQ(SEQ(x, y), b) = SEQ(x, SEQ(y, b))``.

        Iterative: appending a continuation to a long chain (the remainder of a rule with a
        thousand properties) must not recurse once per item.
        """
        if a == self.EMPTY or b == self.EMPTY:
            return self.EMPTY
        if a == self.EPS:
            return b
        if b == self.EPS:
            return a
        if self._nodes[a][0] != K_SEQ:
            return self._cons(a, b)
        key = (a << 32) | b
        r = self._seqs.get(key)
        if r is None:
            r = b
            for x in reversed(self._chain(a)):
                r = self._cons(x, r)
            self._seqs[key] = r
        return r

    def _cons(self, a: int, b: int) -> int:
        """``SEQ(a, b)`` for a non-sequence ``a`` (neither ∅ nor ε)."""
        return self._mk(
            (K_SEQ, a, b),
            self._nullable[a] and self._nullable[b],
            self._hasbool[a] or self._hasbool[b],
            self._hasrep[a] or self._hasrep[b],
        )

    def _chain(self, t: int) -> list[int]:
        """The items of a right-nested sequence (``[t]`` for a non-sequence)."""
        out = []
        n = self._nodes[t]
        while n[0] == K_SEQ:
            out.append(n[1])
            t = n[2]
            n = self._nodes[t]
        out.append(t)
        return out

    def seq_list(self, items) -> int:
        out = self.EPS
        for t in reversed(list(items)):
            out = self.seq(t, out)
        return out

    def alt(self, items) -> int:
        flat: set[int] = set()
        for t in items:
            if t == self.EMPTY:
                continue
            n = self._nodes[t]
            if n[0] == K_ALT:
                flat.update(n[1])
            else:
                flat.add(t)
        if not flat:
            return self.EMPTY
        if len(flat) == 1:
            return next(iter(flat))
        # Merge single-byte alternatives into one byte set.
        byte_terms = [t for t in flat if self._nodes[t][0] == K_BYTES]
        if len(byte_terms) > 1:
            m = 0
            for t in byte_terms:
                m |= self._nodes[t][1]
                flat.discard(t)
            flat.add(self.bytes_(m))
            if len(flat) == 1:
                return next(iter(flat))
        key = tuple(sorted(flat))
        return self._mk(
            (K_ALT, key),
            any(self._nullable[t] for t in key),
            any(self._hasbool[t] for t in key),
            any(self._hasrep[t] for t in key),
        )

    def rep(self, item: int, lo: int, hi: int) -> int:
        """``item{lo,hi}``; ``hi == INF`` for no upper bound."""
        if hi != INF and hi < lo:
            return self.EMPTY
        if item == self.EMPTY:
            return self.EPS if lo == 0 else self.EMPTY
        if item == self.EPS or hi == 0:
            return self.EPS
        if self._nullable[item]:
            lo = 0
        if lo == 1 and hi == 1:
            return item
        return self._mk(
            (K_REP, item, lo, hi), lo == 0 or self._nullable[item], self._hasbool[item], True
        )

    def and_(self, items) -> int:
        flat: set[int] = set()
        for t in items:
            if t == self.EMPTY:
                return self.EMPTY
            n = self._nodes[t]
            if n[0] == K_AND:
                flat.update(n[1])
            else:
                flat.add(t)
        if len(flat) == 1:
            return next(iter(flat))
        if self.EPS in flat:
            return self.EPS if all(self._nullable[t] for t in flat) else self.EMPTY
        key = tuple(sorted(flat))
        return self._mk((K_AND, key), all(self._nullable[t] for t in key), True, False)

    def diff(self, a: int, b: int) -> int:
        if a == self.EMPTY:
            return self.EMPTY
        if b == self.EMPTY:
            return a
        if a == b:
            return self.EMPTY
        if b == self.EPS:
            if not self._nullable[a]:
                return a
        return self._mk((K_DIFF, a, b), self._nullable[a] and not self._nullable[b], True, False)

    def ref_term(self, name: str) -> int:
        """The term ``REF name``; ∅ when the rule derives no finite text (exact, decided lazily)."""
        idx = self._rule_id(name)
        if not self._analysis.productive(name):
            return self.EMPTY
        nul = self._rule_nullable[idx]
        if nul is None:
            nul = self._rule_nullable[idx] = self._analysis.nullable(name)
        return self._mk((K_REF, idx), nul, False, False)

    # ------------------------------------------------------------------ IR → terms

    def _rule_id(self, name: str) -> int:
        """The index of rule ``name``, assigned on first use (rules may be produced on demand)."""
        idx = self._rule_index.get(name)
        if idx is None:
            if name not in self._rules:
                raise GrammarError(f"undefined rule {name!r}")
            idx = len(self._names)
            self._names.append(name)
            self._rule_index[name] = idx
            self._rule_body.append(None)
            self._rule_nullable.append(None)
        return idx

    def _compile_rules(self) -> None:
        """Check the start rule. Everything else is decided lazily, when a rule is first reached
        (:mod:`dotjson.ir.analysis`: nullable, productive, left recursion). A grammar given as a
        plain ``dict`` (Lark, regex, a caller's IR) is small: its reachable rules are checked for
        left recursion up front, so such errors surface at construction."""
        rules = self._rules
        if self.grammar.start not in rules:
            raise GrammarError(f"undefined start rule {self.grammar.start!r}")
        if isinstance(rules, dict):
            seen = {self.grammar.start}
            order = [self.grammar.start]
            for n in order:
                for r in sorted(ir.refs(rules[n])):
                    if r not in rules:
                        raise GrammarError(f"rule {n!r} references undefined rule {r!r}")
                    if r not in seen:
                        seen.add(r)
                        order.append(r)
            for n in order:
                self._analysis.check_left_recursion(n)

    def _setop_productive(self, node: ir.Node) -> bool:
        """Exact non-emptiness of an ``And``/``Diff`` node (for the productive analysis)."""
        with self.lock:
            t = self.compile_node(node)
            return t != self.EMPTY and not (self._hasbool[t] and self.is_empty(t))

    def _body(self, i: int) -> int:
        """The compiled body of rule ``i`` (compiled on first use)."""
        body = self._rule_body[i]
        if body is None:
            with self.lock:
                body = self._rule_body[i]
                if body is None:
                    name = self._names[i]
                    if self._analysis.productive(name):
                        self._analysis.check_left_recursion(name)
                        body = self.compile_node(self._rules[name])
                    else:
                        body = self.EMPTY
                    self._rule_body[i] = body
        return body

    def compile_node(self, node: ir.Node) -> int:
        # Front ends share sub-grammars by identity (the key language of 1,000 properties is
        # one object used in every gap); compile each object once. The node is kept in the memo
        # so that its id cannot be reused.
        hit = self._compiled.get(id(node))
        if hit is not None:
            return hit[1]
        t = self._compile_node(node)
        self._compiled[id(node)] = (node, t)
        return t

    def _is_regular(self, node: ir.Node) -> bool:
        return is_regular(node, self._regular)

    def _compile_node(self, node: ir.Node) -> int:
        if isinstance(node, ir.Lit):
            return self.seq_list([self.bytes_(1 << b) for b in node.text.encode("utf-8")])
        if isinstance(node, ir.Chars):
            return self.chars_term(node)
        if isinstance(node, ir.Seq):
            return self.seq_list([self.compile_node(x) for x in node.items])
        if isinstance(node, ir.Alt):
            return self.alt([self.compile_node(x) for x in node.items])
        if isinstance(node, ir.Repeat):
            hi = INF if node.max is None else node.max
            return self.rep(self.compile_node(node.item), node.min, hi)
        if isinstance(node, ir.Ref):
            return self.ref_term(node.name)
        if isinstance(node, ir.And):
            if not all(self._is_regular(x) for x in node.items):
                raise GrammarError("And() operands must be regular (no rule references)")
            return self.and_([self.compile_node(x) for x in node.items])
        if isinstance(node, ir.Diff):
            if not (self._is_regular(node.left) and self._is_regular(node.right)):
                raise GrammarError("Diff() operands must be regular (no rule references)")
            return self.diff(self.compile_node(node.left), self.compile_node(node.right))
        raise GrammarError(f"unknown grammar node {node!r}")

    def chars_term(self, c: ir.Chars) -> int:
        t = self._chars_cache.get(c)
        if t is not None:
            return t
        alts = []
        for lo, hi in c.ranges:
            for sq in utf8_sequences(lo, hi):
                alts.append(self.seq_list([self.bytes_(_range_mask(a, b)) for a, b in sq]))
        t = self.alt(alts)
        self._chars_cache[c] = t
        return t

    # ------------------------------------------------------------------ derivatives

    def nullable(self, t: int) -> bool:
        return self._nullable[t]

    def deriv(self, t: int, byte: int) -> int:
        """The derivative of ``t`` by one byte (∅ when ``t`` cannot consume it).

        Builds only the one successor it needs; deep in a trie walk a state is usually asked for
        one or two bytes, where a whole row would build a term for every byte class.
        """
        rows = self._rows.get(t)
        if rows is not None:
            for m, d in rows:
                if (m >> byte) & 1:
                    return d
            return self.EMPTY
        key = t * 256 + byte
        r = self._deriv.get(key)
        if r is not None:
            return r
        n = self._nodes[t]
        k = n[0]
        if k == K_BYTES:
            r = self.EPS if (n[1] >> byte) & 1 else self.EMPTY
        elif k == K_SEQ:
            # d(a b) = d(a) b ∪ [a nullable] d(b), walked along the chain of nullable heads
            parts = []
            cur = t
            while True:
                nc = self._nodes[cur]
                if nc[0] != K_SEQ:
                    parts.append(self.deriv(cur, byte))
                    break
                a, b = nc[1], nc[2]
                parts.append(self.seq(self.deriv(a, byte), b))
                if not self._nullable[a]:
                    break
                cur = b
                known = self._deriv.get(cur * 256 + byte)
                if known is not None:
                    parts.append(known)
                    break
            r = self.alt(parts)
        elif k == K_ALT:
            r = self.alt([self.deriv(x, byte) for x in n[1]])
        elif k == K_REP:
            item, lo, hi = n[1], n[2], n[3]
            d = self.deriv(item, byte)
            if d == self.EMPTY:
                r = self.EMPTY
            else:
                r = self.seq(d, self.rep(item, max(lo - 1, 0), INF if hi == INF else hi - 1))
        elif k == K_REF:
            r = self.deriv(self._body(n[1]), byte)
        elif k == K_AND:
            r = self.and_([self.deriv(x, byte) for x in n[1]])
        elif k == K_DIFF:
            r = self.diff(self.deriv(n[1], byte), self.deriv(n[2], byte))
        else:
            r = self.EMPTY
        self._deriv[key] = r
        return r

    def row_derivs(self, t: int) -> tuple:
        """All derivatives of ``t`` at once: ``((mask, term), ...)`` with disjoint byte masks and
        distinct non-empty terms; bytes in no mask lead to ∅.

        One recursive pass per term (memoized), instead of one pass per byte class: the
        derivative classes of a sequence are the product of its parts' classes.
        """
        r = self._rows.get(t)
        if r is not None:
            return r
        n = self._nodes[t]
        k = n[0]
        if k == K_BYTES:
            r = ((n[1], self.EPS),)
        elif k == K_SEQ:
            parts = []
            cur = t
            while True:
                nc = self._nodes[cur]
                if nc[0] != K_SEQ:
                    parts.append(self.row_derivs(cur))
                    break
                a, b = nc[1], nc[2]
                parts.append(tuple((m, self.seq(d, b)) for m, d in self.row_derivs(a)))
                if not self._nullable[a]:
                    break
                cur = b
                known = self._rows.get(cur)
                if known is not None:
                    parts.append(known)
                    break
            r = parts[0] if len(parts) == 1 else self._union(parts)
        elif k == K_ALT:
            r = self._union([self.row_derivs(x) for x in n[1]])
        elif k == K_REP:
            item, lo, hi = n[1], n[2], n[3]
            rest = self.rep(item, max(lo - 1, 0), INF if hi == INF else hi - 1)
            r = tuple((m, self.seq(d, rest)) for m, d in self.row_derivs(item))
        elif k == K_REF:
            r = self.row_derivs(self._body(n[1]))
        elif k == K_AND:
            items = n[1]
            r = self.row_derivs(items[0])
            for x in items[1:]:
                q = self.row_derivs(x)
                out: dict[int, int] = {}
                for m1, d1 in r:
                    for m2, d2 in q:
                        m = m1 & m2
                        if m:
                            d = self.and_((d1, d2))
                            if d != self.EMPTY:
                                out[d] = out.get(d, 0) | m
                r = tuple((m, d) for d, m in out.items())
        elif k == K_DIFF:
            q = self.row_derivs(n[2])
            uq = 0
            for m2, _ in q:
                uq |= m2
            out = {}
            for m1, d1 in self.row_derivs(n[1]):
                for m2, d2 in q:
                    m = m1 & m2
                    if m:
                        d = self.diff(d1, d2)
                        if d != self.EMPTY:
                            out[d] = out.get(d, 0) | m
                m = m1 & ~uq
                if m:
                    out[d1] = out.get(d1, 0) | m
            r = tuple((m, d) for d, m in out.items())
        else:
            r = ()
        self._rows[t] = r
        return r

    def _union(self, rows: list) -> tuple:
        """Union of many derivative-class lists at once.

        One partition refinement over all the byte masks, then one ``alt`` per cell: linear in
        the number of alternatives, where merging pairwise rebuilt a growing alternation at every
        step (quadratic in the properties of a large object).
        """
        cells: list[list] = [[_ALL_BYTES, []]]
        for row in rows:
            for m, d in row:
                nxt = []
                for cell in cells:
                    cm = cell[0]
                    x = cm & m
                    if not x:
                        nxt.append(cell)
                    elif x == cm:
                        cell[1].append(d)
                        nxt.append(cell)
                    else:
                        nxt.append([cm & ~m, cell[1]])
                        nxt.append([x, cell[1] + [d]])
                cells = nxt
        out: dict[int, int] = {}
        for cm, ds in cells:
            if ds:
                d = ds[0] if len(ds) == 1 else self.alt(ds)
                if d != self.EMPTY:
                    out[d] = out.get(d, 0) | cm
        return tuple((m, d) for d, m in out.items())

    # ------------------------------------------------------------------ emptiness

    def is_empty(self, t: int) -> bool:
        """True when ``t`` denotes ∅ (exact; a bounded search for AND/DIFF terms)."""
        if t == self.EMPTY:
            return True
        if not self._hasbool[t]:
            return False
        r = self._empty.get(t)
        if r is not None:
            return r
        n = self._nodes[t]
        k = n[0]
        if k == K_SEQ:
            r = any(self.is_empty(x) for x in self._chain(t))
        elif k == K_ALT:
            r = all(self.is_empty(x) for x in n[1])
        elif k == K_REP:
            r = n[2] > 0 and self.is_empty(n[1])
        elif k == K_DIFF and not self._hasbool[n[1]] and not self._hasbool[n[2]] and self._infinite(
            n[1]
        ) and not self._infinite(n[2]):
            r = False  # an infinite language minus a finite one is never empty
        else:
            r = not self._search_nonempty(t)
        self._empty[t] = r
        return r

    def _infinite(self, t: int) -> bool:
        """For AND/DIFF/REF-free terms: does the language contain infinitely many strings?"""
        r = self._inf.get(t)
        if r is not None:
            return r
        n = self._nodes[t]
        k = n[0]
        if k == K_REP:
            r = n[3] == INF or self._infinite(n[1])
        elif k == K_SEQ:
            r = any(self._infinite(x) for x in self._chain(t))
        elif k == K_ALT:
            r = any(self._infinite(x) for x in n[1])
        else:
            r = False  # REF never occurs under AND/DIFF (checked at compile time)
        self._inf[t] = r
        return r

    def _search_nonempty(self, t: int) -> bool:
        seen = {t}
        queue = deque([t])
        steps = 0
        while queue:
            u = queue.popleft()
            if self._nullable[u]:
                return True
            for _, v in self.row_derivs(u):
                steps += 1
                if steps > self.fuel:
                    raise LimitExceededError(
                        f"emptiness search exceeded its fuel ({self.fuel} derivative steps); "
                        "raise `fuel` or simplify the pattern/length combination"
                    )
                if v in seen:
                    continue
                # Sub-terms already known empty prune the search.
                if self._hasbool[v] and self._empty.get(v) is True:
                    continue
                seen.add(v)
                queue.append(v)
        return False

    # ------------------------------------------------------------------ clamping (mask keys)

    def clamp(self, t: int, limit: int) -> int:
        """A term with the same one-token behaviour as ``t`` for tokens of at most ``limit - 1``
        bytes: counters far from their bounds are replaced by unbounded ones, so the states of a
        long counted repetition share one memoized mask (and one self-looping walk).
        AND/DIFF sub-terms are left exact (their emptiness depends on the exact counts)."""
        if not self._hasrep[t]:
            return t
        key = t * 4096 + limit
        r = self._clamp.get(key)
        if r is not None:
            return r
        n = self._nodes[t]
        k = n[0]
        if k == K_SEQ:
            r = self.seq_list([self.clamp(x, limit) for x in self._chain(t)])
        elif k == K_ALT:
            r = self.alt([self.clamp(x, limit) for x in n[1]])
        elif k == K_REP:
            item, lo, hi = n[1], n[2], n[3]
            if not self._hasbool[item]:
                item = self.clamp(item, limit)
                lo = min(lo, limit)
                if hi != INF and hi > limit:
                    hi = INF
            r = self.rep(item, lo, hi)
        else:
            r = t
        self._clamp[key] = r
        return r

    # ------------------------------------------------------------------ states

    def state(self, t: int) -> int:
        """The state id of live term ``t`` (interned)."""
        s = self._state_of.get(t)
        if s is not None:
            return s
        with self.lock:
            s = self._state_of.get(t)
            if s is not None:
                return s
            s = len(self._term_of)
            if s >= self.max_states:
                raise LimitExceededError(
                    f"the automaton reached its budget of {self.max_states} states "
                    "(Index option max_states)"
                )
            if s >= self.trans.shape[0]:
                self._grow(2 * self.trans.shape[0])
            self._term_of.append(t)
            self.accepting[s] = self._nullable[t]
            self._state_of[t] = s
            return s

    def _grow(self, cap: int) -> None:
        old = self.trans.shape[0]
        trans = np.full((cap, 256), UNKNOWN, dtype=np.int32)
        trans[:old] = self.trans
        acc = np.zeros(cap, dtype=np.bool_)
        acc[:old] = self.accepting
        inv = np.full(cap, -1, dtype=np.int8)
        inv[:old] = self.plain_inv
        ready = np.zeros(cap, dtype=np.bool_)
        ready[:old] = self.row_ready
        # Publish whole arrays: a kernel running on the old ones keeps valid memory and merely
        # asks again for rows it does not see.
        self.trans, self.accepting, self.plain_inv, self.row_ready = trans, acc, inv, ready

    @property
    def n_states(self) -> int:
        return len(self._term_of)

    def term_of(self, s: int) -> int:
        return self._term_of[s]

    def fill_row(self, s: int) -> None:
        """Compute every byte transition of state ``s``."""
        if self.row_ready[s]:
            return
        with self.lock:
            if self.row_ready[s]:
                return
            t = self._term_of[s]
            row = np.full(256, DEAD, dtype=np.int32)
            for cls, u in self.row_derivs(t):
                if self._hasbool[u] and self.is_empty(u):
                    continue
                row[_mask_to_bytes(cls)] = self.state(u)
            self.trans[s] = row
            self.row_ready[s] = True

    def fill_entry(self, s: int, byte: int) -> int:
        """Compute the one transition of state ``s`` on ``byte``."""
        with self.lock:
            r = int(self.trans[s, byte])
            if r != UNKNOWN:
                return r
            u = self.deriv(self._term_of[s], byte)
            if u == self.EMPTY or (self._hasbool[u] and self.is_empty(u)):
                r = DEAD
            else:
                r = self.state(u)
            self.trans[s, byte] = r
            return r

    def step(self, s: int, byte: int) -> int:
        """Successor of state ``s`` on ``byte``, or ``DEAD``."""
        r = int(self.trans[s, byte])
        if r == UNKNOWN:
            r = self.fill_entry(s, byte)
        return r

    def walk_bytes(self, s: int, data: bytes) -> int:
        for b in data:
            s = self.step(s, b)
            if s < 0:
                return DEAD
        return s

    def matches(self, data: bytes) -> bool:
        """True when ``data`` is a complete document of the grammar."""
        s = self.walk_bytes(self.start, data)
        return s >= 0 and bool(self.accepting[s])

    def is_prefix(self, data: bytes) -> bool:
        """True when ``data`` can still be completed into a document."""
        return self.walk_bytes(self.start, data) >= 0

    def compute_plain_inv(self, s: int, plain_seqs: list[list[tuple[int, int]]]) -> bool:
        """Is state ``s`` unchanged by every plain JSON string character?

        ``plain_seqs`` are the UTF-8 byte-range sequences of the plain characters. When true, every
        token made only of plain characters is allowed from ``s`` and leads back to ``s``.
        """
        v = self.plain_inv[s]
        if v >= 0:
            return bool(v)
        with self.lock:
            return self._compute_plain_inv(s, plain_seqs)

    def _compute_plain_inv(self, s: int, plain_seqs) -> bool:
        ok = True
        # Cheap necessary condition first: a plain-invariant state loops on 'a'.
        if self.step(s, 0x61) != s:
            self.plain_inv[s] = 0
            return False
        for sq in plain_seqs:
            frontier = {s}
            for lo, hi in sq:
                nxt = set()
                for u in frontier:
                    self.fill_row(u)
                    row = self.trans[u, lo : hi + 1]
                    nxt.update(int(x) for x in np.unique(row))
                frontier = nxt
                if any(u < 0 for u in frontier):
                    ok = False
                    break
            if not ok or frontier != {s}:
                ok = False
                break
        self.plain_inv[s] = 1 if ok else 0
        return ok

    def describe(self, s: int, limit: int = 400) -> str:
        """A readable rendering of state ``s``'s term (for debugging)."""
        return self._show(self._term_of[s], limit)

    def _show(self, t: int, limit: int) -> str:
        n = self._nodes[t]
        k = n[0]
        if k == K_EMPTY:
            out = "∅"
        elif k == K_EPS:
            out = "ε"
        elif k == K_BYTES:
            bs = [b for b in range(256) if (n[1] >> b) & 1]
            out = repr(bytes(bs[:1])) if len(bs) == 1 else f"[{len(bs)} bytes]"
        elif k == K_SEQ:
            out = " ".join(self._show(x, limit) for x in self._chain(t)[:64])
        elif k == K_ALT:
            out = "(" + " | ".join(self._show(x, limit) for x in n[1]) + ")"
        elif k == K_REP:
            out = f"({self._show(n[1], limit)}){{{n[2]},{'' if n[3] == INF else n[3]}}}"
        elif k == K_REF:
            out = list(self._rule_index)[n[1]]
        elif k == K_AND:
            out = "(" + " & ".join(self._show(x, limit) for x in n[1]) + ")"
        else:
            out = f"({self._show(n[1], limit)} - {self._show(n[2], limit)})"
        return out if len(out) <= limit else out[:limit] + "…"


# ------------------------------------------------------------------------------ helpers

_MASK_BYTES: dict[int, np.ndarray] = {}


def _mask_to_bytes(mask: int) -> np.ndarray:
    r = _MASK_BYTES.get(mask)
    if r is None:
        r = np.asarray([b for b in range(256) if (mask >> b) & 1], dtype=np.intp)
        if len(_MASK_BYTES) < 65536:
            _MASK_BYTES[mask] = r
    return r


# ------------------------------------------------------------------------------ persistence


def export_state(a: Automaton) -> dict:
    """The automaton's term store and tables, as plain JSON-able values and arrays."""
    with a.lock:
        n = a.n_states
        nodes = []
        for node in a._nodes:
            k = node[0]
            if k == K_BYTES:
                nodes.append([k, format(node[1], "x")])
            elif k in (K_ALT, K_AND):
                nodes.append([k, list(node[1])])
            else:
                nodes.append(list(node))
        return {
            "meta": {
                "rules": list(a._rule_index),
                "rule_body": [-1 if b is None else b for b in a._rule_body],
                "rule_nullable": a._rule_nullable,
                "analysis": [sorted(d.items()) for d in a._analysis.known()],
                "nodes": nodes,
                "state_terms": a._term_of[:n],
                "start_term": a.start_term,
                "max_states": a.max_states,
                "fuel": a.fuel,
            },
            "arrays": {
                "trans": a.trans[:n].copy(),
                "accepting": a.accepting[:n].copy(),
                "plain_inv": a.plain_inv[:n].copy(),
                "row_ready": a.row_ready[:n].copy(),
            },
        }


def import_state(grammar: ir.Grammar, meta: dict, arrays: dict) -> Automaton:
    """Rebuild an automaton saved by :func:`export_state`; validates everything it reads."""
    a = Automaton.__new__(Automaton)
    a.grammar = grammar
    a.max_states = int(meta["max_states"])
    a.fuel = int(meta["fuel"])
    a.lock = threading.RLock()
    a._nodes, a._ids = [], {}
    a._nullable, a._hasbool, a._hasrep = [], [], []
    a._rows, a._deriv, a._inf, a._empty, a._clamp, a._chars_cache = {}, {}, {}, {}, {}, {}
    a._seqs = {}
    names = [str(x) for x in meta["rules"]]
    a._rules = rules_with_families(grammar)
    if len(set(names)) != len(names) or not all(n in a._rules for n in names):
        raise ValueError("rule names do not match the saved grammar")
    a._rule_index = {n: i for i, n in enumerate(names)}
    a._rule_nullable = [None if x is None else bool(x) for x in meta["rule_nullable"]]
    a._analysis = Analysis(a._rules, a._setop_productive)
    nul_known, prod_known = meta["analysis"]
    a._analysis.seed(dict(nul_known), dict(prod_known))
    n_rules = len(names)
    if len(a._rule_nullable) != n_rules:
        raise ValueError("rule table sizes differ")
    for i, raw in enumerate(meta["nodes"]):
        k = int(raw[0])
        def child(x):
            x = int(x)
            if not 0 <= x < i:
                raise ValueError(f"node {i} refers to node {x}")
            return x
        if k == K_EMPTY or k == K_EPS:
            key = (k,)
            nul, hb, hr = k == K_EPS, False, False
        elif k == K_BYTES:
            m = int(raw[1], 16)
            if not 0 < m < (1 << 256):
                raise ValueError("byte mask out of range")
            key, nul, hb, hr = (k, m), False, False, False
        elif k == K_SEQ:
            x, y = child(raw[1]), child(raw[2])
            key = (k, x, y)
            nul = a._nullable[x] and a._nullable[y]
            hb, hr = a._hasbool[x] or a._hasbool[y], a._hasrep[x] or a._hasrep[y]
        elif k in (K_ALT, K_AND):
            xs = tuple(child(x) for x in raw[1])
            key = (k, xs)
            f = any if k == K_ALT else all
            nul = f(a._nullable[x] for x in xs)
            hb = k == K_AND or any(a._hasbool[x] for x in xs)
            hr = k == K_ALT and any(a._hasrep[x] for x in xs)
        elif k == K_REP:
            x, lo, hi = child(raw[1]), int(raw[2]), int(raw[3])
            if lo < 0 or hi < INF:
                raise ValueError("repeat bounds out of range")
            key, nul, hb, hr = (k, x, lo, hi), lo == 0 or a._nullable[x], a._hasbool[x], True
        elif k == K_REF:
            r = int(raw[1])
            if not 0 <= r < n_rules:
                raise ValueError("rule index out of range")
            if a._rule_nullable[r] is None:
                raise ValueError("a rule reference without its nullability")
            key, nul, hb, hr = (k, r), a._rule_nullable[r], False, False
        elif k == K_DIFF:
            x, y = child(raw[1]), child(raw[2])
            key, nul, hb, hr = (k, x, y), a._nullable[x] and not a._nullable[y], True, False
        else:
            raise ValueError(f"unknown node kind {k}")
        a._nodes.append(key)
        a._ids[key] = i
        a._nullable.append(nul)
        a._hasbool.append(hb)
        a._hasrep.append(hr)
    n_nodes = len(a._nodes)
    if n_nodes < 2 or a._nodes[0] != (K_EMPTY,) or a._nodes[1] != (K_EPS,):
        raise ValueError("term store does not start with ∅ and ε")
    a.EMPTY, a.EPS = 0, 1
    bodies = [int(x) for x in meta["rule_body"]]
    if len(bodies) != n_rules or not all(-1 <= x < n_nodes for x in bodies):
        raise ValueError("rule bodies out of range")
    a._rule_body = [None if x < 0 else x for x in bodies]
    a._names = names
    a._compiled, a._regular = {}, {}
    terms = [int(x) for x in meta["state_terms"]]
    if not all(0 <= t < n_nodes for t in terms) or len(set(terms)) != len(terms):
        raise ValueError("state terms out of range")
    n = len(terms)
    trans = np.asarray(arrays["trans"])
    if trans.dtype != np.int32 or trans.shape != (n, 256):
        raise ValueError("transition table has the wrong shape")
    if n and (trans.min() < DEAD or trans.max() >= n):
        raise ValueError("transition table refers to unknown states")
    cap = max(64, n)
    a.trans = np.full((cap, 256), UNKNOWN, dtype=np.int32)
    a.trans[:n] = trans
    a.accepting = np.zeros(cap, dtype=np.bool_)
    a.plain_inv = np.full(cap, -1, dtype=np.int8)
    a.row_ready = np.zeros(cap, dtype=np.bool_)
    for name, dst, dt in (
        ("accepting", a.accepting, np.bool_),
        ("plain_inv", a.plain_inv, np.int8),
        ("row_ready", a.row_ready, np.bool_),
    ):
        src = np.asarray(arrays[name])
        if src.dtype != dt or src.shape != (n,):
            raise ValueError(f"{name} has the wrong shape")
        dst[:n] = src
    a._term_of = terms
    a._state_of = {t: s for s, t in enumerate(terms)}
    a.start_term = int(meta["start_term"])
    if a.start_term not in a._state_of:
        raise ValueError("start state missing")
    a.start = a._state_of[a.start_term]
    for s, t in enumerate(terms):
        if bool(a.accepting[s]) != a._nullable[t]:
            raise ValueError("accepting flags disagree with the terms")
    return a
