"""Rules: the grammar's rule analyses and the compilation of rule bodies (IR) into terms.

This is the only place that reads the IR grammar. Its interface with the rest of the automaton:

* ``Rules(grammar, build, is_empty, set_body, add_rule)``: ``grammar.rules`` maps a rule's name to
  its IR body and may produce bodies on demand (:class:`dotjson.ir.LazyRules`); the rules of the
  grammar's families (e.g. the JSON layer's any-order objects) are looked up the same way;
  ``build(prog, words, n_slots)`` runs a builder program in the term store (see
  :func:`dotjson.automaton.terms.build`) and returns ``(term, slots)``; ``add_rule(n)`` makes
  room for ``n`` rule ids in every array indexed by rule id;
* ``rules.names``, ``rules.index[name]``, ``rules.nullable[i]``: the rules that have an id so far;
* ``rules.body(i)``: the term of rule ``i``'s body (compiled on first use);
* ``rules.ref(name)``: the term ``REF name`` (∅ for an unproductive rule).

Everything is decided lazily, when a rule is first reached, by :class:`dotjson.ir.analysis.Analysis`
(nullable, productive, left recursion; each answer remembered): a rule gets its id when a
compiled body first refers to it and it is productive (an unproductive reference compiles to ∅);
its left recursion is checked before its body is compiled. Productivity is exact: an
``And``/``Diff`` node is compiled in the store and asked of the emptiness kernel
(:meth:`Rules.setop_productive`). A grammar given as a plain ``dict`` (Lark, regex, a caller's
IR) is small, and its reachable rules are checked up front (:meth:`Rules.check`), so that an
undefined or left-recursive rule is an error at construction.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from .. import ir
from .._weak import weak_method
from ..errors import GrammarError, LimitExceededError
from ..ir import SHARED as _SHARED
from ..ir.analysis import Analysis, is_regular
from ..ir.families import rules_with_families
from . import kernels as K
from .counters import BAND, LANE_SHARE, N_LANES, SPLIT, Lanes  # larger counts live in lanes (see counters.py)
from .utf8 import _range_mask, utf8_sequences

_M64 = (1 << 64) - 1

#: builder programs of IR nodes compiled before in this process, for every automaton that meets
#: the same node object again: ``(id(node), image) -> (node, image, prog, words, n_slots,
#: holes)``. The JSON layer keeps its regular languages once per process (encoded patterns and
#: formats: ``jsonschema.values._ENC_CACHE``; number ranges: ``jsonschema.numbers._NUMBER_LANGUAGES``),
#: and turning such a node into its program is a Python walk over every node of it (a
#: ``minimum: 0`` number: ~500 nodes, 0.4-0.6 ms, in the first mask that reaches it, in every
#: new index): the program is kept instead and run in the new store (one kernel call). A program
#: is kept only where it is the same in any store started from the same base image (``image``:
#: its rules' snapshot, or ``None``): no rule reference (a rule id is an index's own), no count
#: standing in a lane (ditto); a term this store had compiled before (``OP_TERM`` of a node
#: compiled by an earlier program here, or of a character class met before) is a *hole*,
#: ``(node, offsets)``, filled with that node's term in the store that runs the program.
_PROGRAMS: dict = {}
#: the programs kept are bounded by their length in all (2M opcodes and operands: 16 MiB at
#: most): past it they are dropped, all at once
#: (the cache refills with what later schemas meet)
MAX_PROGRAM_OPS = 1 << 21
#: ... and only programs of at least this many opcodes and operands are kept (a shorter one
#: costs less to make again than its entry)
MIN_PROGRAM_OPS = 128
_program_ops = [0]


def _words(mask: int) -> tuple[int, int, int, int]:
    return tuple((mask >> (64 * i)) & _M64 for i in range(4))


_BYTE_WORDS = [_words(1 << b) for b in range(256)]


class Rules:
    """Rule analyses and body compilation for one grammar (see the module docstring)."""

    def __init__(self, grammar: ir.Grammar, build, is_empty, set_body, add_rule, native=None):
        self.grammar = grammar
        self.src = rules_with_families(grammar)
        # rules the automaton builds natively, not from their IR body (a wide object's key
        # position: :func:`dotjson.automaton.keysets.keys_root`); ``native(spec)`` makes the term
        self._native_of = getattr(grammar.rules, "native", None) if native is not None else None
        self._native_body = native
        # alternations of texts' spellings the source registered (LazyRules.texts_of): their
        # terms built from the characters' at once; per spelling policy, (OP_TERM, the term of
        # its node in this store) for each ASCII character (None: not asked yet)
        self._texts_of = getattr(self.src, "texts_of", None)
        self._char_luts: dict = {}
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.nullable: list[bool] = []
        self._build = build
        self._is_empty = is_empty
        self._set_body = set_body
        self._add_rule = add_rule
        self._refs: dict[int, int] = {}  # rule id -> its REF term
        self._written: dict[int, int] = {}  # rule id -> the term of its written body
        self._compiled: dict[int, int] = {}  # id(node) -> term; the nodes kept in _keep
        self._keep: list = []
        self._regular: dict[int, tuple] = {}
        self._chars: dict[ir.Chars, int] = {}
        # the same memos of the base image this store started from (start_from), read-only and
        # shared by every automaton that starts from it: looked up after this one's own (a
        # copy per automaton was ~1,200 entries for the collector to walk while they are young)
        self._base_compiled: dict[int, int] = {}
        self._base_regular: dict[int, tuple] = {}
        self._base_chars: dict[ir.Chars, int] = {}
        self._done: list[bool] = []
        self.analysis = Analysis(self.src, weak_method(self.setop_productive))
        # counts of at least counters.BAND: the lanes that stand for them (saved with an index)
        self.lanes = Lanes()
        self._split: dict[int, ir.Node] = {}  # id(R{lo,hi}) -> R{lo} R{0,hi-lo} (hi a lane count)
        self._image = None  # the base image's rules this store started from (start_from)

    # ------------------------------------------------------------------ analyses

    def check(self) -> None:
        """The start rule exists; for a plain ``dict`` grammar, every reachable rule is defined
        and none is left recursive (a lazily produced grammar is checked as it is reached)."""
        rules = self.src
        start = self.grammar.start
        if start not in rules:
            raise GrammarError(f"undefined start rule {start!r}")
        if isinstance(rules, dict):
            seen = {start}
            order = [start]
            for n in order:
                for r in sorted(ir.refs(rules[n])):
                    if r not in rules:
                        raise GrammarError(f"rule {n!r} references undefined rule {r!r}")
                    if r not in seen:
                        seen.add(r)
                        order.append(r)
            for n in order:
                self.analysis.check_left_recursion(n)

    def setop_productive(self, node: ir.Node) -> bool:
        """Exact non-emptiness of an ``And``/``Diff`` node: compiled in the store, asked of the
        emptiness kernel (the analysis calls this; the automaton's lock is held or taken)."""
        t = self.compile_node(node)
        return t != K.EMPTY and not self._is_empty(t)

    def productive(self, name: str) -> bool:
        """Whether rule ``name`` derives some finite text (exact, decided on first question)."""
        return self.analysis.productive(name)

    def rule_id(self, name: str) -> int | None:
        """The id of productive rule ``name``, assigned on first use; ``None`` when the rule is
        unproductive (a reference to it is ∅). Call with the automaton's lock held."""
        idx = self.index.get(name)
        if idx is not None:
            return idx
        if name not in self.src:
            raise GrammarError(f"undefined rule {name!r}")
        got = self.analysis.settled(name)  # (an answer the rules' builder gives outright)
        if got is not None:
            nul, prod = got
            if not prod:
                return None
        else:
            if not self.analysis.productive(name):
                return None
            nul = self.analysis.nullable(name)
            idx = self.index.get(name)  # the analyses may compile (And/Diff) and so register rules
            if idx is not None:
                return idx
        idx = len(self.names)
        self._add_rule(idx + 1)  # arrays indexed by rule id first: a REF term follows
        self.names.append(name)
        self.nullable.append(nul)
        self._done.append(False)
        self.index[name] = idx
        return idx

    def known(self) -> tuple[dict, dict]:
        """``(nullable, productive)`` answers settled so far (saved with the store)."""
        return self.analysis.known()

    def snapshot(self) -> tuple:
        """The rule ids, compiled nodes and analysis answers so far (see
        :func:`dotjson.automaton.base_image`); the nodes stay alive with this object."""
        return (list(self.names), dict(self.index), list(self.nullable), list(self._done),
                {**self._base_compiled, **self._compiled}, {**self._base_chars, **self._chars},
                {**self._base_regular, **self._regular}, self.analysis.snapshot(),
                tuple(self.lanes.anchors))

    def start_from(self, snap: tuple) -> None:
        """Continue from a :meth:`snapshot` taken over the same shared rules and nodes, whose
        terms are in this automaton's store (copied from the snapshot's)."""
        names, index, nullable, done, compiled, chars, regular, analysis, lanes = snap
        self._image = snap
        self.lanes = Lanes(lanes)
        self.names = list(names)
        self.index = dict(index)
        self.nullable = list(nullable)
        self._done = list(done)
        self._base_compiled, self._base_chars, self._base_regular = compiled, chars, regular
        self._compiled, self._chars, self._regular = {}, {}, {}
        self.analysis.restore(analysis)

    def restore(self, names, nullable, known_nullable, known_productive) -> None:
        """Install the rule ids and analysis answers of a saved store (validated by the caller)."""
        self.names = list(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.nullable = list(nullable)
        self._done = [False] * len(self.names)
        self.analysis.seed(known_nullable, known_productive)

    # ------------------------------------------------------------------ IR → terms

    def ref(self, name: str) -> int:
        """The term ``REF name`` (∅ for an unproductive rule), built once per rule."""
        idx = self.rule_id(name)
        if idx is None:
            return K.EMPTY
        t = self._refs.get(idx)
        if t is None:
            t, _ = self._build([K.OP_REF, idx, int(self.nullable[idx])], [], 0)
            self._refs[idx] = t
        return t

    def tail_term(self, name: str) -> int:
        """What a key set's member is followed by (:meth:`dotjson.automaton.Automaton._key_tail`):
        a written rule's body itself, compiled now (the derivative that asked goes on into it at
        once: one exit to Python, not a second one to compile the rule it refers to), or
        ``REF name``."""
        if type(self.native_spec(name)) is not ir.Written:
            return self.ref(name)
        idx = self.rule_id(name)
        if idx is None:
            return K.EMPTY
        t = self._written.get(idx)
        if t is None:
            t = self.body(idx) if not self._done[idx] else self.ref(name)
        return t

    def body(self, i: int) -> int:
        """Compile rule ``i``'s body (its left recursion checked first), record it, return its
        term."""
        name = self.names[i]
        spec = self.native_spec(name)
        if type(spec) is ir.Written:
            t = self._written[i] = self.written_term(spec.alts())  # no IR body, no left-recursion search
        elif spec is not None:
            t = self._native_body(spec)  # its IR body is never built (the analyses may build it)
        else:
            self.analysis.check_left_recursion(name)
            t = self.compile_node(self.src[name])
        self._set_body(i, t)
        self._done[i] = True
        return t

    def native_spec(self, name: str):
        """What the automaton builds rule ``name``'s body from natively, or ``None`` (see
        :meth:`dotjson.ir.LazyRules.native`)."""
        f = self._native_of
        return None if f is None else f(name)

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
            if self.native_spec(self.names[j]) is not None:
                continue  # a key set, a written body: a byte before any rule (or asked later)
            for n in self.analysis.left_refs(self.src[self.names[j]]):
                k = self.rule_id(n)
                if k is not None and not self._done[k]:
                    stack.append(k)

    def compile_node(self, root: ir.Node) -> int:
        """The term of an IR node: one builder program, run once in the store.

        Front ends share sub-grammars by identity (the key language of 1,000 properties is one
        object used in every gap): each object is compiled once (a slot within a program, a
        memo entry across programs; the memo keeps the node so that its id cannot be reused).
        """
        if type(root) is ir.Ref:  # (a front end makes a new one per use: no memo by identity)
            return self.ref(root.name)
        compiled, base = self._compiled, self._base_compiled
        hit = compiled.get(id(root))
        if hit is None:
            hit = base.get(id(root))
        if hit is not None:
            return hit
        kept = _PROGRAMS.get((id(root), id(self._image)))
        if kept is not None and kept[0] is root and kept[1] is self._image:
            return self._run_kept(root, kept)
        prog: list[int] = []
        words: list[tuple] = []
        slot_nodes: list = []
        slot_of: dict[int, int] = {}
        chars_slots: list[tuple] = []
        holes: list | None = []  # (offset, node) of this store's own terms; None: not portable
        texts_of = self._texts_of
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            if not done and type(node) is ir.Repeat and node.max is not None and 0 < node.min < node.max \
                    and (node.max >= BAND or node.max - node.min >= SPLIT):
                node = self._split_repeat(node)
            key = id(node)
            hit = compiled.get(key)
            if hit is not None:
                if holes is not None:
                    holes.append((len(prog) + 1, node))
                prog += [K.OP_TERM, hit]
                continue
            hit = base.get(key)
            if hit is not None:
                prog += [K.OP_TERM, hit]
                continue
            if _SHARED.get(key) is node and node is not root:
                # a language the front end keeps for the process: a program of its own, kept
                # for the next automaton that meets it (a hole in this one's)
                if holes is not None:
                    holes.append((len(prog) + 1, node))
                prog += [K.OP_TERM, self.compile_node(node)]
                continue
            k = slot_of.get(key)
            if k is not None:
                prog += [K.OP_LOAD, k]
                continue
            if not done and texts_of is not None and type(node) is ir.Alt:
                got = texts_of(node)
                if got is not None:
                    # the spellings of texts: the program a walk of its tree writes, from the
                    # characters' terms (one lookup each)
                    prog += self._texts_program(*got)
                    holes = None  # (the characters' terms may be this store's own)
                    slot_of[key] = len(slot_nodes)
                    prog += [K.OP_SAVE, len(slot_nodes)]
                    slot_nodes.append(node)
                    continue
            if isinstance(node, ir.Lit):
                # (a lone surrogate U+DC80-U+DCFF is the raw byte 0x80-0xFF: special tokens'
                # markers, dotjson.embed.special_token; no character's UTF-8 holds 0xFF)
                data = node.text.encode("utf-8", "surrogateescape")
                for b in data:
                    prog += [K.OP_BYTES, len(words)]
                    words.append(_BYTE_WORDS[b])
                prog += [K.OP_SEQ, len(data)]
                continue
            if isinstance(node, ir.Chars):
                t = self._chars.get(node)
                if t is not None:
                    if holes is not None:
                        holes.append((len(prog) + 1, node))
                    prog += [K.OP_TERM, t]
                    continue
                t = self._base_chars.get(node)
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
                holes = None  # (a rule id is this index's own)
                i = self.rule_id(node.name)
                if i is None:
                    prog.append(K.OP_EMPTY)
                else:
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
                try:
                    lo = self.lanes.value(node.min)
                    hi = K.INF if node.max is None else self.lanes.value(node.max)
                except OverflowError:
                    raise LimitExceededError(
                        f"repetition count {node.min if node.max is None else node.max}: more "
                        f"than {N_LANES} different counts of at least {BAND} (a minLength/"
                        f"maxLength/minItems/maxItems/minProperties/maxProperties/minContains/"
                        f"maxContains or a regex quantifier) that are more than "
                        f"{LANE_SHARE} apart"
                    ) from None
                if node.min >= BAND or (node.max is not None and node.max >= BAND):
                    holes = None  # (a lane is this index's own)
                prog += [K.OP_REP, lo, hi]
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
        if holes is not None and len(prog) >= MIN_PROGRAM_OPS:
            self._keep_program(root, prog, words, len(slot_nodes), holes)
        t, slots = self._build(prog, words, len(slot_nodes))
        for k, node in enumerate(slot_nodes):
            self._compiled[id(node)] = int(slots[k])
        self._keep.extend(slot_nodes)
        for node, k in chars_slots:
            self._chars[node] = int(slots[k])
        return t

    def _texts_program(self, texts: tuple, policy) -> list:
        """Postfix code of the alternation of the spellings of ``texts`` (printable ASCII, none
        empty, at least two) under spelling policy ``policy`` (each text the sequence of
        ``policy.enc_char`` of its characters): the code a walk of that tree writes (each
        character's term, ``SEQ`` of a text's, ``ALT`` of the texts), from the characters' terms
        in this store, with C-level iteration (~0.05 us a character, against ~0.5 for a walk)."""
        hit = self._char_luts.get(id(policy))
        if hit is None or hit[0] is not policy:
            hit = self._char_luts[id(policy)] = (policy, [None] * 128)
        pairs = hit[1]  # character code -> (OP_TERM, its term)
        for ch in set("".join(texts)):
            c = ord(ch)
            if pairs[c] is None:
                pairs[c] = (K.OP_TERM, self.compile_node(policy.enc_char(ch)))
        out: list = []
        ext, get = out.extend, pairs.__getitem__
        for t in texts:
            ext(chain.from_iterable(map(get, t.encode("ascii"))))
            if len(t) > 1:
                ext((K.OP_SEQ, len(t)))
        ext((K.OP_ALT, len(texts)))
        return out

    def _keep_program(self, root: ir.Node, prog: list, words: list, n_slots: int, holes: list) -> None:
        """Keep ``root``'s program for the automata that meet it later (see :data:`_PROGRAMS`)."""
        if _program_ops[0] + len(prog) > MAX_PROGRAM_OPS:
            _PROGRAMS.clear()
            _program_ops[0] = 0
        p = np.asarray(prog, dtype=np.int64)
        w = np.asarray(words, dtype=np.uint64) if words else np.zeros((0, 4), dtype=np.uint64)
        by_node: dict[int, tuple] = {}  # (a character class recurs: filled once, wherever it is)
        for off, node in holes:
            by_node.setdefault(id(node), (node, []))[1].append(off)
        holes = tuple((node, np.asarray(offs, dtype=np.int64)) for node, offs in by_node.values())
        _PROGRAMS[(id(root), id(self._image))] = (root, self._image, p, w, n_slots, holes)
        _program_ops[0] += len(prog)

    def _run_kept(self, root: ir.Node, kept: tuple) -> int:
        """Run a program kept by another automaton (:meth:`_keep_program`) in this store: its
        holes filled with this store's terms of their nodes, ``root``'s term remembered."""
        _, _, prog, words, n_slots, holes = kept
        if holes:
            prog = prog.copy()
            for node, offs in holes:
                prog[offs] = self._chars_term(node) if type(node) is ir.Chars else self.compile_node(node)
        t, _ = self._build(prog, words, n_slots)
        self._compiled[id(root)] = t
        self._keep.append(root)
        return t

    def _chars_term(self, node: ir.Chars) -> int:
        """This store's term of character class ``node`` (compiled now if it has none)."""
        t = self._chars.get(node)
        if t is None:
            t = self._base_chars.get(node)
        return self.compile_node(node) if t is None else t

    def written_term(self, alts) -> int:
        """The term of a :class:`~dotjson.ir.Written` body's alternation ``alts``: one builder
        program over the terms of its nodes (compiled once each, by identity), references to its
        rule names and the terms of its native specs (built first)."""
        prog: list[int] = []
        self._emit_alts(alts, prog)
        prog += [K.OP_SAVE, 0]
        t, _ = self._build(prog, [], 1)
        return t

    def _emit_alts(self, alts, prog: list) -> None:
        """Postfix code of a written alternation (nested two or three deep: plain recursion)."""
        for sq in alts:
            if not sq:
                prog.append(K.OP_EPS)
                continue
            for x in sq:
                tx = type(x)
                if tx is ir.Ref:
                    x, tx = x.name, str
                if tx is str:
                    i = self.rule_id(x)
                    if i is None:
                        prog.append(K.OP_EMPTY)
                    else:
                        prog += [K.OP_REF, i, int(self.nullable[i])]
                elif tx is list:
                    self._emit_alts(x, prog)
                elif tx is tuple:  # a native spec: the term the automaton makes of it (a key set)
                    prog += [K.OP_TERM, self._native_body(x)]
                else:
                    prog += [K.OP_TERM, self.compile_node(x)]
            prog += [K.OP_SEQ, len(sq)]
        prog += [K.OP_ALT, len(alts)]

    def diff_term(self, left: ir.Node, right: int) -> int:
        """The term of node ``left`` less the language of term ``right`` (a native key set:
        :meth:`dotjson.automaton.Automaton._keys_body`), built as one program. Both languages
        are regular (``left`` may end with a reference to a regular rule, the key set's tail:
        a key's colon), so the emptiness search over their difference ends."""
        lt = self.compile_node(left)
        t, _ = self._build([K.OP_TERM, lt, K.OP_TERM, right, K.OP_DIFF, K.OP_SAVE, 0], [], 1)
        return t

    def _split_repeat(self, node: ir.Repeat) -> ir.Node:
        """``R{lo,hi}`` as ``R{lo} R{0,hi-lo}`` (the same language, unambiguously): a lane
        count (``hi`` at least :data:`~.counters.BAND`) is then the only bound of its
        repetition, which a shape needs (one offset for both bounds), and a wide real range
        (:data:`~.counters.SPLIT`) does not put a shape's upper marker past the band."""
        got = self._split.get(id(node))
        if got is None:
            got = ir.seq(ir.repeat(node.item, node.min, node.min), ir.repeat(node.item, 0, node.max - node.min))
            self._split[id(node)] = got
            self._keep.append(node)
        return got

    def _is_reg(self, node: ir.Node) -> bool:
        if self._texts_of is not None and type(node) is ir.Alt and self._texts_of(node) is not None:
            return True  # (texts' spellings: no rule in them, known without a walk)
        return is_regular(node, self._regular, self._base_regular)
