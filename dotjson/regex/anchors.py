"""Anchors: ``^``/``$`` at a pattern's edges (groups holding them distributed), between the items
of its top-level sequence, and inside (repeated) groups, where a part of the pattern is kept as
four languages by the anchors its words hold (see :func:`_eps_if`).
"""

from __future__ import annotations

from dotjson import ir
from dotjson.ir.analysis import regular_nullable
from dotjson.regex.charsets import _ANY_STAR
from dotjson.regex.tree import _anchor_name, _C, _Converter, _has_anchor, _has_look, _is_end, _is_start, _seq_lits


# More alternatives than this from distributing anchors over groups is refused.
_MAX_ANCHOR_ALTERNATIVES = 256


def _expand_edges(items: list, flags_list: list, conv: _Converter, depth: int = 0) -> list[tuple[list, list]]:
    """Distribute groups holding anchors at the sequence's first or last position.

    Returns alternatives, each a flat list of (op, av) with a parallel list of flags, where
    anchors only remain as leading or trailing runs.
    """
    if depth > 32:
        raise conv.unsupported("deeply nested anchors")
    # find first / last non-anchor positions
    k = 0
    while k < len(items) and items[k][0] is _C.AT:
        k += 1
    j = len(items) - 1
    while j >= k and items[j][0] is _C.AT:
        j -= 1
    if k > j:
        return [(items, flags_list)]
    for pos in (k, j):
        op, av = items[pos]
        if op is _C.BRANCH and _has_anchor([items[pos]]):
            out = []
            for b in av[1]:
                new = items[:pos] + list(b) + items[pos + 1 :]
                nfl = flags_list[:pos] + [flags_list[pos]] * len(b) + flags_list[pos + 1 :]
                out.extend(_expand_edges(new, nfl, conv, depth + 1))
                if len(out) > _MAX_ANCHOR_ALTERNATIVES:
                    raise conv.unsupported("too many anchored alternatives")
            return out
        if op is _C.SUBPATTERN and _has_anchor([items[pos]]):
            _g, add, delete, p = av
            f = (flags_list[pos] | add) & ~delete
            new = items[:pos] + list(p) + items[pos + 1 :]
            nfl = flags_list[:pos] + [f] * len(p) + flags_list[pos + 1 :]
            return _expand_edges(new, nfl, conv, depth + 1)
    return [(items, flags_list)]


def _middle_anchors(conv: _Converter, items: list, sa: bool, ea: bool):
    """``^`` and ``$`` between the items of an ECMA pattern's top-level sequence (``/^x$/``,
    ``^$[a-z]*$``): a ``^`` holds only at the text's start, so what comes before it matches the
    empty text there (or the alternative matches nothing), and a ``$`` only at its end, so what
    follows it matches the empty text. Returns ``(items, sa, ea, whole)``: the items between
    the last ``^`` and the first ``$`` with the anchoring they give, or ``whole``, the
    alternative's language when the anchors decide it (``ir.EMPTY``, or the empty text when a
    ``$`` comes before a ``^``)."""
    items = _same_start(items, sa)
    starts, ends = [], []
    for i, ((op, av), f) in enumerate(items):
        if op is _C.AT:
            if _is_start(op, av, f):
                starts.append(i)
            elif _is_end(op, av, f, True):
                ends.append(i)
            else:
                raise conv.unsupported(f"anchor {_anchor_name(av)} in the middle of the pattern")

    def nullable(part) -> bool:
        rest = [(it, f) for it, f in part if it[0] is not _C.AT]
        if any(_has_look([it]) or _has_anchor([it]) for it, _ in rest):
            raise conv.unsupported("lookaround or anchor beside an anchor in the middle of the pattern")
        return regular_nullable(_seq_lits([conv.item(op, av, f) for (op, av), f in rest]))

    s = starts[-1] if starts else -1
    e = ends[0] if ends else len(items)
    if e < s:  # `$` before `^`: only the empty text, if every item matches it
        return [], True, True, (ir.EPS if nullable(items) else ir.EMPTY)
    if s >= 0:
        if not nullable(items[:s]):
            return [], sa, ea, ir.EMPTY
        items, e, sa = items[s + 1:], e - s - 1, True
    if e < len(items):
        if not nullable(items[e + 1:]):
            return [], sa, ea, ir.EMPTY
        items, ea = items[:e], True
    return items, sa, ea, None

def _same_start(items: list, sa: bool) -> list:
    r"""``items`` (``(item, flags)`` pairs of a top-level sequence, after a ``^`` where ``sa``)
    without each ``^`` that only lookarounds and ``^`` separate from an earlier ``^``: it stands
    where that one does (nothing between them reads a character), so it holds wherever that one
    does (ci's ``^(?!.*\/)^(.*[^.]+.*)$`` is ``^(?!.*\/)(.*[^.]+.*)$``)."""
    out, start_only = [], sa
    for (op, av), f in items:
        if op is _C.AT and _is_start(op, av, f):
            if start_only:
                continue
            start_only = True
        elif not (op in (_C.ASSERT, _C.ASSERT_NOT)):
            start_only = False
        out.append(((op, av), f))
    return out


# --- anchors inside groups: the four kinds of matched words
#
# An ECMA pattern with ``^``/``$`` nested in groups (``(a|^b)*``, ``(x($|/))*``) is read as a
# language over characters and two markers, ``^`` and ``$``, that consume nothing: a match of
# the pattern is one of its words whose every ``^`` stands where no character has been read yet
# (the text's start) and whose every ``$`` where no character follows (its end). A part of the
# pattern is kept as four languages of characters, by the markers its words hold: ``n`` none,
# ``s`` a ``^`` (then all its characters follow it), ``e`` a ``$`` (all its characters precede
# it), ``b`` both (the whole text). The search language is ``.*n.* | s.* | .*e | b``.

_NO_PARTS = (ir.EMPTY, ir.EMPTY, ir.EMPTY, ir.EMPTY)


def _eps_if(node: ir.Node) -> ir.Node:
    """The empty text if ``node`` matches it, else nothing."""
    return ir.EPS if regular_nullable(node) else ir.EMPTY


def _parts_seq2(x: tuple, y: tuple) -> tuple:
    """The four parts of ``x`` followed by ``y``: a ``^`` in ``y`` needs ``x``'s characters
    empty, a ``$`` in ``x`` needs ``y``'s characters empty."""
    xn, xs, xe, xb = x
    yn, ys, ye, yb = y
    ex = [_eps_if(p) for p in x]
    ey = [_eps_if(p) for p in y]
    n = ir.seq(xn, yn)
    s = ir.alt(ir.seq(xs, yn), ir.seq(ir.alt(ex[0], ex[1]), ys))
    e = ir.alt(ir.seq(xn, ye), ir.seq(xe, ir.alt(ey[0], ey[2])))
    b = ir.alt(ir.seq(xs, ye), ir.seq(ir.alt(ex[0], ex[1]), yb), ir.seq(xb, ir.alt(ey[0], ey[2])),
               ir.seq(ir.alt(ex[2], ex[3]), ir.alt(ey[1], ey[3])))
    return n, s, e, b


def _parts_repeat(x: tuple, lo: int, hi) -> tuple:
    """The four parts of ``x{lo,hi}`` (``hi`` None: unbounded). The iterations are in order; the
    last one holding a ``^`` (the first holding a ``$``) has only iterations that read nothing
    before (after) it, which may be left out, unless they are needed to reach ``lo``."""
    xn, xs, xe, xb = x
    en, es, ee = regular_nullable(xn), regular_nullable(xs), regular_nullable(xe)
    if hi == 0:
        return ir.EPS, ir.EMPTY, ir.EMPTY, ir.EMPTY
    pre, post = en or es, en or ee   # an iteration that reads nothing may come before / after
    dec = (lambda k: None if k is None else k - 1)
    n = ir.repeat(xn, lo, hi)
    s = ir.seq(xs, ir.repeat(xn, 0 if pre else max(lo - 1, 0), dec(hi)))
    e = ir.seq(ir.repeat(xn, 0 if post else max(lo - 1, 0), dec(hi)), xe)
    bs = [xb] if lo <= 1 or pre or post else []
    if hi is None or hi >= 2:
        mid_lo = 0 if pre or post else max(lo - 2, 0)
        bs.append(ir.seq(xs, ir.repeat(xn, mid_lo, None if hi is None else hi - 2), xe))
        if ee and es and (lo <= 2 or pre or post or regular_nullable(xb)):
            bs.append(ir.EPS)
    return n, s, e, ir.alt(*bs)


def _parts(conv: "_Converter", op, av, f: int) -> tuple:
    """The four parts (``n``, ``s``, ``e``, ``b``) of one parsed item under flags ``f``."""
    if not _has_anchor([(op, av)]):
        return conv.item(op, av, f), ir.EMPTY, ir.EMPTY, ir.EMPTY
    if op is _C.AT:
        if _is_start(op, av, f):
            return ir.EMPTY, ir.EPS, ir.EMPTY, ir.EMPTY
        if _is_end(op, av, f, True):
            return ir.EMPTY, ir.EMPTY, ir.EPS, ir.EMPTY
        raise conv.unsupported(f"anchor {_anchor_name(av)} inside a group")
    if op is _C.BRANCH:
        alts = [_parts_items(conv, [(it, f) for it in b]) for b in av[1]]
        return tuple(ir.alt(*(a[i] for a in alts)) for i in range(4))
    if op is _C.SUBPATTERN:
        _group, add, delete, p = av
        g = (f | add) & ~delete
        return _parts_items(conv, [(it, g) for it in p])
    if op in (_C.MAX_REPEAT, _C.MIN_REPEAT):
        lo, hi, p = av
        lo, hi = conv.big.get(lo, lo), (None if hi == _C.MAXREPEAT else conv.big.get(hi, hi))
        return _parts_repeat(_parts_items(conv, [(it, f) for it in p]), lo, hi)
    raise conv.unsupported(f"anchor inside construct {op}")


def _parts_items(conv: "_Converter", items: list) -> tuple:
    """The four parts of a sequence of ``((op, av), flags)`` items."""
    out = (ir.EPS, ir.EMPTY, ir.EMPTY, ir.EMPTY)
    for (op, av), f in items:
        out = _parts_seq2(out, _parts(conv, op, av, f))
    return out


def _anchored(conv: "_Converter", items: list, sa: bool, ea: bool, search: bool) -> ir.Node:
    """An ECMA alternative whose items hold ``^``/``$`` inside groups (``sa``/``ea``: anchored
    at its start/end as well), exactly: the union of its four parts, each where it may stand in
    the text (see the comment above :func:`_eps_if`)."""
    n, s, e, b = _parts_items(conv, items)
    if sa:
        n, s, e, b = _parts_seq2((ir.EMPTY, ir.EPS, ir.EMPTY, ir.EMPTY), (n, s, e, b))
    if ea:
        n, s, e, b = _parts_seq2((n, s, e, b), (ir.EMPTY, ir.EMPTY, ir.EPS, ir.EMPTY))
    if not search:
        return ir.alt(n, s, e, b)
    return ir.alt(ir.seq(_ANY_STAR, n, _ANY_STAR), ir.seq(s, _ANY_STAR), ir.seq(_ANY_STAR, e), b)
