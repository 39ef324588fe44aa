"""Lookarounds (ECMA-262 patterns only: in a Lark terminal a lookaround would look past the
terminal's own text).

A lookaround is a condition on the whole text at one position: a lookahead ``(?=A)`` on the
rest of it (it starts with a match of A: ``A·Σ*``), a lookbehind ``(?<=B)`` on what came
before (it ends with one: ``Σ*·B``). Converted right to left with the language of the rest
of the text (the *continuation*), a lookahead is an intersection (``And``) or, negated, a
difference (``Diff``) with that continuation; lookbehinds are met left to right with the
language of the text before them. ECMA-262 and Python agree on this (no captures are
referred to: backreferences stay refused), and every language here is regular.
"""

from __future__ import annotations

from dotjson import ir
from dotjson.ir.analysis import regular_nullable
from dotjson.regex.charsets import _ANY_STAR
from dotjson.regex.tree import _anchor_name, _C, _Converter, _has_anchor, _has_look, _is_end, _is_start, _seq_lits


def _and(a: ir.Node, b: ir.Node) -> ir.Node:
    if a == ir.EMPTY or b == ir.EMPTY:
        return ir.EMPTY
    if b is _ANY_STAR:
        return a
    return ir.And((a, b))


def _diff(a: ir.Node, b: ir.Node) -> ir.Node:
    if a == ir.EMPTY:
        return ir.EMPTY
    return ir.Diff(a, b)


def _with_lookarounds(conv: _Converter, items: list, pre: ir.Node, post: ir.Node) -> ir.Node:
    """The texts ``pre · items · post`` with the lookarounds of ``items`` (pairs ``((op, av),
    flags)``) holding where they stand."""
    last_behind = -1
    for i, ((op, av), f) in enumerate(items):
        if op in (_C.ASSERT, _C.ASSERT_NOT) and av[0] < 0:
            last_behind = i
    left, right = items[: last_behind + 1], items[last_behind + 1 :]
    before = pre
    for (op, av), f in left:
        if op in (_C.ASSERT, _C.ASSERT_NOT):
            if av[0] >= 0:
                raise conv.unsupported("lookahead before a lookbehind")
            sub = list(av[1])
            if _has_look(sub) or _has_anchor(sub):
                raise conv.unsupported("lookaround or anchor inside a lookbehind")
            b = ir.seq(_ANY_STAR, _seq_lits([conv.item(o, a, f) for o, a in sub]))
            before = _and(before, b) if op is _C.ASSERT else _diff(before, b)
        elif _has_look([(op, av)]):
            raise conv.unsupported("lookbehind inside a group")
        else:
            before = ir.seq(before, conv.item(op, av, f))
    return ir.seq(before, _ahead(conv, right, post, start=pre is ir.EPS and not left))


def _ahead(conv: _Converter, items: list, cont: ir.Node, start: bool = False) -> ir.Node:
    """``items · cont`` with the lookaheads (and end anchors) of ``items`` holding; ``start``:
    ``items`` begin at the text's start, where a ``^`` that nothing before it in ``items``
    reads past holds (``^(?!^lucene\\.|builtin\\.)``: the inner ``^`` is the outer one's place)."""
    # at0[i]: item i stands at the text's start (every item before it reads nothing)
    at0, here = [], start
    for (op, av), f in items:
        at0.append(here)
        here = here and (op is _C.AT or op in (_C.ASSERT, _C.ASSERT_NOT))
    for i in range(len(items) - 1, -1, -1):
        (op, av), f = items[i]
        if op in (_C.ASSERT, _C.ASSERT_NOT):
            if av[0] < 0:
                raise conv.unsupported("lookbehind after a lookahead or inside a group")
            avoid = _avoiding(conv, av[1], f) if op is _C.ASSERT_NOT else None
            if avoid is not None:  # (?!.*S): the texts that avoid it, intersected
                cont = _and(cont, avoid)
                continue
            a = _ahead(conv, [(it, f) for it in av[1]], _ANY_STAR, at0[i])
            cont = _and(cont, a) if op is _C.ASSERT else _diff(cont, a)
        elif op is _C.AT:
            if at0[i] and _is_start(op, av, f):
                continue  # (a `^` at the text's start holds)
            if not _is_end(op, av, f, conv.ecma):
                raise conv.unsupported(f"anchor {_anchor_name(av)} inside a lookahead")
            cont = ir.EPS if regular_nullable(cont) else ir.EMPTY  # the end of the text: nothing follows
        elif op is _C.BRANCH and _has_look([(op, av)]) or op is _C.BRANCH and _has_anchor([(op, av)]):
            cont = ir.alt(*(_ahead(conv, [(it, f) for it in b], cont, at0[i]) for b in av[1]))
        elif op is _C.SUBPATTERN and (_has_look([(op, av)]) or _has_anchor([(op, av)])):
            _g, add, delete, p = av
            g = (f | add) & ~delete
            cont = _ahead(conv, [(it, g) for it in p], cont, at0[i])
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT) and (_has_look([(op, av)]) or _has_anchor([(op, av)])):
            cont = ir.seq(_tempered(conv, av, f, cont), cont)
        else:
            cont = ir.seq(conv.item(op, av, f), cont)
    return cont


#: the longest literal ``S`` of a ``(?!.*S)`` written as the texts that avoid it (see
#: :func:`_avoiding`); and the most IR nodes that language may take
MAX_AVOID_LITERAL = 16
MAX_AVOID_NODES = 4000


def _avoiding(conv: _Converter, items: list, f: int) -> ir.Node | None:
    """The texts that a negative lookahead ``(?!D*S)`` (``D`` one character class repeated from
    0, ``S`` a literal whose characters ``D`` holds: ``(?!.*://)``, ``(?!.*\\.\\.)``) allows at the
    text's position, as a language with no ``Diff``; ``None`` for any other lookahead.

    ``Diff(rest, D*·S·Σ*)`` is the same language, but once a text has read ``S`` the difference
    is empty while no constructor can tell: proving it searched the whole rest (``(.{1,63}\\.){1,127}``
    after ``(?!.*://)``: past any fuel, a mask raised ``LimitExceededError`` mid-document,
    MaskBench JsonSchemaStore---aerleon-definitions). Here the texts with no prefix in
    ``D*·S`` are ``N·(ε | E·Σ*)``: ``N`` the texts over ``D`` in which ``S`` does not occur (the
    Knuth-Morris-Pratt automaton of ``S``, every state accepting, written as an expression by
    eliminating its states), ``E`` the characters outside ``D``; their derivative after ``S`` is ∅
    by construction, and the intersection with it too."""
    if len(items) < 2:
        return None
    (op, av), rest = items[0], items[1:]
    if op not in (_C.MAX_REPEAT, _C.MIN_REPEAT):
        return None
    lo, hi, p = av
    if lo != 0 or hi != _C.MAXREPEAT or len(p) != 1 or p[0][0] not in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN):
        return None
    d = conv.char_set(p[0][0], p[0][1], f)
    text = []
    for op2, av2 in rest:
        if op2 is not _C.LITERAL or conv.char_set(op2, av2, f).ranges != ((av2, av2),):
            return None  # (a class, as under IGNORECASE: not one literal)
        if not ir.chars_intersect(d, ir.chars((av2, av2))).ranges:
            return None  # (S leaves D: the first line's end would matter)
        text.append(av2)
    if len(text) > MAX_AVOID_LITERAL:
        return None
    n = _no_occurrence(d, text)
    if n is None:
        return None
    e = ir.chars_complement(d)
    return ir.seq(n, ir.alt(ir.EPS, ir.seq(e, _ANY_STAR))) if e.ranges else n


def _no_occurrence(d: ir.Chars, text: list) -> ir.Node | None:
    """The texts over the characters ``d`` in which the sequence of code points ``text`` does
    not occur (``None`` past :data:`MAX_AVOID_NODES`): the KMP automaton of ``text`` (state
    ``i``: the longest prefix of ``text`` the text read ends with; ``len(text)`` is dead), its
    states eliminated from the last (Arden: ``X = A·X | B`` is ``A*·B``)."""
    m = len(text)
    fail = [0] * m  # the KMP prefix function
    k = 0
    for i in range(1, m):
        while k and text[i] != text[k]:
            k = fail[k - 1]
        if text[i] == text[k]:
            k += 1
        fail[i] = k

    def step(i: int, c: int) -> int:  # (i < m)
        while i and text[i] != c:
            i = fail[i - 1]
        return i + 1 if text[i] == c else 0

    syms = sorted(set(text))
    other = ir.chars_intersect(d, ir.chars_complement(ir.chars(*((c, c) for c in syms))))

    def union(a, b):
        return b if a is None else a if b is None else ir.alt(a, b)

    # coef[i][j]: the characters (then expressions) taking state i to j; every state accepts
    coef = [[None] * m for _ in range(m)]
    for i in range(m):
        for c in syms:
            j = step(i, c)
            if j < m:
                coef[i][j] = union(coef[i][j], ir.chars((c, c)))
        if other.ranges:
            coef[i][0] = union(coef[i][0], other)
    const = [ir.EPS] * m
    for k in range(m - 1, 0, -1):
        loop = ir.repeat(coef[k][k], 0, None) if coef[k][k] is not None else ir.EPS
        for i in range(k):
            if coef[i][k] is None:
                continue
            pre = ir.seq(coef[i][k], loop)
            const[i] = union(const[i], ir.seq(pre, const[k]))
            for j in range(k):
                if coef[k][j] is not None:
                    coef[i][j] = union(coef[i][j], ir.seq(pre, coef[k][j]))
            coef[i][k] = None
        if _size(const + [c for row in coef for c in row]) > MAX_AVOID_NODES:
            return None
    return ir.seq(ir.repeat(coef[0][0], 0, None), const[0]) if coef[0][0] is not None else const[0]


def _size(nodes) -> int:
    """IR nodes in ``nodes`` (``None`` for none), shared ones counted each time (:func:`ir.walk`)."""
    return sum(1 for x in nodes if x is not None for _ in ir.walk(x))


def _tempered(conv: _Converter, av, f: int, cont: ir.Node) -> ir.Node:
    """A repeated group ``(?:(?!A)c){m,n}`` (one character class ``c`` after a negative
    lookahead) at the end of the text: the strings of ``c{m,n}`` in which no position starts a
    match of ``A``. Other repeated lookarounds are refused."""
    lo, hi, p = av
    items = list(p)
    while len(items) == 1 and items[0][0] is _C.SUBPATTERN:
        _g, add, delete, inner = items[0][1]
        f = (f | add) & ~delete
        items = list(inner)
    if (cont != ir.EPS or len(items) != 2 or items[0][0] is not _C.ASSERT_NOT or items[0][1][0] < 0
            or items[1][0] not in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN)):
        raise conv.unsupported("lookaround inside a repeated group")
    a = _ahead(conv, [(it, f) for it in items[0][1][1]], _ANY_STAR)
    if regular_nullable(a):
        return ir.repeat(conv.char_set(*items[1], f), 0, 0) if lo == 0 else ir.EMPTY
    c = conv.char_set(items[1][0], items[1][1], f)
    # no position of the run starts A·Σ*: a match of A inside the run (A's text may not
    # reach past the end: nothing follows the run)
    return ir.Diff(ir.repeat(c, lo, None if hi == _C.MAXREPEAT else hi), ir.seq(_ANY_STAR, a))
