"""The internal grammar form: an EBNF tree over Unicode text, shared by every front end.

``dotjson.jsonschema`` (JSON Schema), ``dotjson.grammar`` (Lark text, via Lark's own loader) and
``dotjson.regex`` (regular expressions) all produce a :class:`Grammar` made of these nodes; the
automaton (``dotjson.automaton``) consumes it, and ``dotjson.grammar.to_lark`` renders it as Lark
text on demand. Nothing here parses text.

Nodes are immutable and hashable, so equal sub-grammars can be shared and memoized.

=============  ==============================================================================
node           language
=============  ==============================================================================
``Lit(s)``     the literal text ``s`` (encoded as UTF-8 by the automaton); ``Lit("")`` is ε
``Chars(r)``   one Unicode scalar value in the union of inclusive code-point ranges ``r``
               (sorted, non-overlapping, non-adjacent; surrogates D800-DFFF never included);
               ``Chars(())`` is the empty language
``Seq(xs)``    concatenation; ``Seq(())`` is ε
``Alt(xs)``    union; ``Alt(())`` is the empty language ∅
``Repeat``     ``item`` repeated ``min`` to ``max`` times (``max=None``: unbounded). Large bounds
               are fine: the automaton runs them with counters, never copies.
``Ref(name)``  the rule ``name`` of the grammar; rules may be recursive (not left-recursive)
``And(xs)``    intersection; every item must be regular (contain no ``Ref``)
``Diff(a, b)`` ``L(a) minus L(b)``; both regular
=============  ==============================================================================
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Iterator, Union

MAX_CODEPOINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)


@dataclass(frozen=True, slots=True)
class Lit:
    text: str


@dataclass(frozen=True, slots=True)
class Chars:
    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple["Node", ...]


@dataclass(frozen=True, slots=True)
class Alt:
    items: tuple["Node", ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    item: "Node"
    min: int
    max: int | None


@dataclass(frozen=True, slots=True)
class Ref:
    name: str


@dataclass(frozen=True, slots=True)
class And:
    items: tuple["Node", ...]


@dataclass(frozen=True, slots=True)
class Diff:
    left: "Node"
    right: "Node"


Node = Union[Lit, Chars, Seq, Alt, Repeat, Ref, And, Diff]


class Written:
    """A rule body the automaton writes straight into its store, in place of compiling the
    rule's IR body: a front end's description of a rule it makes in great numbers (a state of
    an object's automaton), given by a source's ``native`` mapping (:meth:`LazyRules.native`).

    ``alts()`` returns an alternation of sequences: a list of sequences, each a list whose items
    are IR nodes (compiled once each, by identity), rule names (``str``: a reference), nested
    alternations (lists of such sequences) or native specs (``tuple``: what the source's
    ``native`` mapping would give a rule, its term built in place; the front end guarantees
    that its language is not empty); ``[]`` is the empty sequence. The rule's IR body
    denotes the same language (the analyses, rendering and saving read it, and the reference
    tests compare the two). The front end guarantees what the automaton does not check here:
    every sequence consumes a byte before it reaches a rule this rule can reach again without
    consuming one (no left recursion through it), and the rule names it holds are the source's.
    """

    __slots__ = ("alts",)

    def __init__(self, alts) -> None:
        self.alts = alts

EPS = Seq(())
EMPTY = Alt(())


class LazyRules(Mapping):
    """Rule bodies produced on demand: the rules of a grammar that is compiled as it is used.

    ``source`` holds ``rules`` (a dict of the bodies built so far), ``pending`` (the names of the
    rules not built yet), ``body(name)``, which builds a pending rule, records it in ``rules``
    and returns it (building may add more rules, built or pending), and
    ``known_language(name)`` (see :meth:`known_language`). Looking a rule up
    builds it; iterating, ``len`` and ``items`` build every rule first (rendering a grammar as
    Lark text or saving it needs them all). Thread-safe.
    """

    def __init__(self, source) -> None:
        self._src = source
        self._lock = threading.RLock()

    def __getitem__(self, name: str) -> Node:
        body = self._src.rules.get(name)
        if body is not None:
            return body
        with self._lock:
            body = self._src.rules.get(name)
            if body is not None:
                return body
            if name in self._src.pending:
                return self._src.body(name)
        raise KeyError(name)

    def __contains__(self, name) -> bool:
        return name in self._src.rules or name in self._src.pending

    def known_language(self, name: str) -> tuple:
        """``(nullable, productive)`` of a rule, when the source knows them without building it
        or searching its body (``None`` for unknown); see :class:`dotjson.ir.analysis.Analysis`."""
        src = self._src
        if name not in src.rules and name not in src.pending:
            return (None, None)
        return src.known_language(name)

    def native(self, name: str):
        """A description of rule ``name`` the automaton builds natively instead of compiling its
        IR body (the source's ``native`` mapping; ``None`` for ordinary rules). The IR body
        denotes the same language: the analyses, rendering and saving read it."""
        nat = getattr(self._src, "native", None)
        return None if nat is None else nat.get(name)

    def texts_of(self, node: Node):
        """``(texts, chars)`` where ``node`` is an alternation of the source's spellings of
        ``texts`` (``chars`` is the source's spelling policy: each text a sequence of its
        characters' nodes, ``chars.enc_char(c)``), registered by the source (its
        ``text_alts``); ``None`` otherwise. The automaton builds such a node's term from its
        characters' terms at once, without walking the tree (a wide object's declared names, a
        few thousand characters), and knows it regular."""
        ta = getattr(self._src, "text_alts", None)
        hit = None if ta is None else ta.get(id(node))
        return hit[1:] if hit is not None and hit[0] is node else None

    def __bool__(self) -> bool:
        return bool(self._src.rules) or bool(self._src.pending)

    def force(self) -> None:
        """Build every pending rule."""
        with self._lock:
            pending = self._src.pending
            whole = getattr(self._src, "build_all", None)
            if whole is not None and pending:
                whole()  # the source may build rules in a shape meant for writing out in full
            while pending:
                self._src.body(next(iter(pending)))

    def __iter__(self) -> Iterator[str]:
        self.force()
        return iter(list(self._src.rules))

    def __len__(self) -> int:
        self.force()
        return len(self._src.rules)

    @property
    def n_built(self) -> int:
        """How many rule bodies exist so far (the rest are pending)."""
        return len(self._src.rules)


class FreeText(tuple):
    """A ``warm`` entry of :attr:`Grammar.shared`: ``(content, close, escape)``, a front end's
    fact about the text between two delimiters, handed to the engine as data: ``content`` (an
    IR node) is ``X*`` for an item ``X`` of many words, every text a key set's names may be
    spelt with belongs to it, ``close`` (a byte) is the delimiter that ends it, which no word
    of ``content`` holds but after the byte ``escape`` (JSON's string content, its closing
    quote and its backslash). The masker reads an open
    object's key position through it (:meth:`dotjson.masks.Masker._open_key_mask`): a key
    that is this content less finitely many names takes the same tokens as the content
    alone, except those that complete one of the names."""

    __slots__ = ()

    def __new__(cls, content, close: int, escape: int):
        return tuple.__new__(cls, (content, int(close), int(escape)))

    # by identity (an image's key holds it): a structural hash walks the whole content node
    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    def __ne__(self, other) -> bool:
        return self is not other


class KeyChars(tuple):
    """A ``warm`` entry of :attr:`Grammar.shared`: ``(spelling, syntax, chars)``, the characters
    ``chars`` of key-set names as ``spelling`` (a character's spellings, an IR node) writes them
    in string syntax ``syntax`` (see :class:`dotjson.jsonschema.key_trie.KeySet`). A store image
    reads their escapes once per process, so an index's first key set does not (~8 µs a
    character, for every schema)."""

    __slots__ = ()

    def __new__(cls, spelling, syntax, chars: str):
        return tuple.__new__(cls, (spelling, syntax, chars))


@dataclass
class Grammar:
    """A set of named rules and a start rule.

    Parameters
    ----------
    rules : Mapping of str to Node
        Rule bodies by name. Names are Lark rule names (lower-case, ``[a-z_][a-z0-9_]*``).
        A :class:`LazyRules` produces the bodies when they are first looked up.
    start : str
        Name of the start rule.
    families : sequence, optional
        Rule families: objects owning a set of rule names too large to write down, whose bodies
        are produced on demand (:class:`dotjson.jsonschema.objects_any_order.AnyOrderObject`). A lazily
        compiled schema shares its list, which grows as objects are built.
    shared : tuple, optional
        ``(rules, nodes)`` or ``(rules, nodes, warm)``: rules of ``rules`` (a mapping, or a
        tuple of ``(name, body)`` pairs; same names, same body objects) and nodes that many
        grammars share, such as the JSON base rules and the spellings of a string's characters.
        An automaton starts from a store where they are compiled once per process
        (:func:`dotjson.automaton.base_image`) instead of compiling them again. ``warm``: pairs
        ``(rule name, bytes)`` whose derivative classes, closed under those bytes, the store
        holds too (the JSON layer's whitespace), and :class:`KeyChars` entries, characters whose
        spellings in key-set names the store reads ahead (the JSON layer's printable ASCII).
    """

    rules: Mapping[str, Node] = field(default_factory=dict)
    start: str = "start"
    families: tuple = ()
    shared: tuple = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.start not in self.rules and bool(self.rules):
            raise KeyError(f"start rule {self.start!r} is not defined")


# ----------------------------------------------------------------------------- constructors
# Smart constructors: flatten, drop neutral elements, keep ∅ absorbing. Front ends should use
# these rather than the classes so that trivial structure never reaches the automaton.


def lit(text: str) -> Node:
    return Lit(text) if text else EPS


def seq(*items: Node) -> Node:
    """Concatenation: flattens nested sequences, drops ε, and is ∅ when an item is ∅.

    Type checks only, never deep equality: this is the hot path of every front end.
    """
    out: list[Node] = []
    for it in items:
        t = type(it)
        if t is Seq and id(it) not in SHARED:  # (a shared node stays whole: its program is kept)
            out.extend(it.items)
        elif t is Alt:
            if not it.items:
                return EMPTY
            out.append(it)
        elif t is Chars:
            if not it.ranges:
                return EMPTY
            out.append(it)
        elif t is Lit:
            if it.text:
                out.append(it)
        else:
            out.append(it)
    if not out:
        return EPS
    if len(out) == 1:
        return out[0]
    return Seq(tuple(out))


def alt(*items: Node) -> Node:
    """Union: flattens nested alternations, drops ∅, removes duplicates.

    Duplicates are found by value for leaves (``Ref``, ``Lit``, ``Chars``) and by identity for
    the rest: IR nodes do not cache their hash, and hashing big shared sub-trees would cost more
    than the duplicates it finds.
    """
    out: list[Node] = []
    seen: set = set()
    for it in items:
        parts = it.items if type(it) is Alt and id(it) not in SHARED else (it,)
        for p in parts:
            t = type(p)
            if t is Chars:
                if not p.ranges:
                    continue
                key = p
            elif t is Ref or t is Lit:
                key = p
            else:
                key = id(p)
            if key not in seen:
                seen.add(key)
                out.append(p)
    if not out:
        return EMPTY
    if len(out) == 1:
        return out[0]
    return Alt(tuple(out))


def repeat(item: Node, lo: int = 0, hi: int | None = None) -> Node:
    if lo < 0 or (hi is not None and hi < lo):
        return EMPTY
    if hi == 0:
        return EPS
    if item == EPS:
        return EPS
    if item == EMPTY or item == Chars(()):
        return EPS if lo == 0 else EMPTY
    if lo == 1 and hi == 1:
        return item
    return Repeat(item, lo, hi)


def opt(item: Node) -> Node:
    return repeat(item, 0, 1)


def chars(*ranges: tuple[int, int]) -> Chars:
    """Normalize code-point ranges: sort, merge, and cut out the surrogate block."""
    rs = sorted((lo, hi) for lo, hi in ranges if lo <= hi)
    merged: list[list[int]] = []
    for lo, hi in rs:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    out: list[tuple[int, int]] = []
    s_lo, s_hi = SURROGATES
    for lo, hi in merged:
        lo, hi = max(lo, 0), min(hi, MAX_CODEPOINT)
        if hi < s_lo or lo > s_hi:
            out.append((lo, hi))
        else:
            if lo < s_lo:
                out.append((lo, s_lo - 1))
            if hi > s_hi:
                out.append((s_hi + 1, hi))
    return Chars(tuple(r for r in out if r[0] <= r[1]))


def chars_complement(c: Chars) -> Chars:
    """All scalar values not in ``c``."""
    out = []
    prev = 0
    for lo, hi in c.ranges:
        if lo > prev:
            out.append((prev, lo - 1))
        prev = hi + 1
    if prev <= MAX_CODEPOINT:
        out.append((prev, MAX_CODEPOINT))
    return chars(*out)


def chars_union(*cs: Chars) -> Chars:
    return chars(*(r for c in cs for r in c.ranges))


def chars_intersect(a: Chars, b: Chars) -> Chars:
    # one pass over both sorted, merged range lists (their pieces stay sorted and apart)
    A, B = a.ranges, b.ranges
    out = []
    i = j = 0
    while i < len(A) and j < len(B):
        lo, hi = max(A[i][0], B[j][0]), min(A[i][1], B[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if A[i][1] < B[j][1]:
            i += 1
        else:
            j += 1
    return Chars(tuple(out))


ANY_CHAR = chars((0, MAX_CODEPOINT))


# ----------------------------------------------------------------------------- queries


#: nodes a front end keeps for the whole process and hands to many grammars (the language of a
#: pattern, a format or a number range: id -> node). The rule compiler compiles each as a
#: program of its own and keeps that program for every later automaton that meets the same node
#: (:data:`dotjson.automaton.rules._PROGRAMS`). The front end lets go of a node with
#: :func:`unshare` when its own cache drops it; bounded besides: emptied past :data:`MAX_SHARED`.
SHARED: dict[int, Node] = {}
MAX_SHARED = 16384


def share(node: Node) -> Node:
    """Mark ``node`` as kept by the front end for the whole process (see :data:`SHARED`); returns
    it. For regular nodes (no rule references): a program with one is not kept anyway."""
    if len(SHARED) >= MAX_SHARED:
        SHARED.clear()
    SHARED[id(node)] = node
    return node


def unshare(nodes) -> None:
    """The front end no longer keeps ``nodes`` (its cache of them was emptied): they are
    ordinary nodes again, freed with the grammars that hold them."""
    for node in nodes:
        if SHARED.get(id(node)) is node:
            del SHARED[id(node)]


def children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, (Seq, Alt, And)):
        return node.items
    if isinstance(node, Repeat):
        return (node.item,)
    if isinstance(node, Diff):
        return (node.left, node.right)
    return ()


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, pre-order (shared sub-trees are visited each time)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def _distinct(node: Node) -> Iterator[Node]:
    """Every distinct node (by identity) of the tree once: a DAG whose sub-trees are shared at
    every level (the 16 levels of the ``regex`` format's nesting) has exponentially many paths."""
    seen: set = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(children(n))


def refs(node: Node) -> set[str]:
    """Names of the rules a node references directly."""
    return {n.name for n in _distinct(node) if isinstance(n, Ref)}


def is_regular(node: Node) -> bool:
    """True when the node references no rule (so it may appear under And/Diff)."""
    return not any(isinstance(n, Ref) for n in _distinct(node))


def rename_refs(node: Node, names: dict, memo: dict) -> Node:
    """``node`` with every ``Ref(n)`` for ``n`` in ``names`` replaced by ``Ref(names[n])``
    (sub-trees without such a reference are kept as they are; ``memo`` is keyed by node id, so
    the caller keeps the nodes alive while it uses the memo)."""
    hit = memo.get(id(node))
    if hit is not None:
        return hit
    t = type(node)
    if t is Ref:
        out = Ref(names[node.name]) if node.name in names else node
    elif t is Seq or t is Alt or t is And:
        items = tuple(rename_refs(x, names, memo) for x in node.items)
        out = node if all(a is b for a, b in zip(items, node.items)) else t(items)
    elif t is Repeat:
        item = rename_refs(node.item, names, memo)
        out = node if item is node.item else Repeat(item, node.min, node.max)
    elif t is Diff:
        a, b = rename_refs(node.left, names, memo), rename_refs(node.right, names, memo)
        out = node if a is node.left and b is node.right else Diff(a, b)
    else:
        out = node
    memo[id(node)] = out
    return out
