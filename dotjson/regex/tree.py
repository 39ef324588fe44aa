"""``re._parser`` trees: parsing (quantifier counts past ``re``'s limit through placeholders),
questions about parsed items (anchors, lookarounds) and their conversion to IR nodes
(:class:`_Converter`).
"""

from __future__ import annotations

import re
import warnings

from dotjson import ir
from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError
from dotjson.regex.charsets import _ANY, _ASCII_DIGIT, _ASCII_WORD, _case_close, _python_category

try:  # Python >= 3.11
    from re import _constants as _C
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _C  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]


class _Converter:
    """Converts a ``re._parser`` tree into IR nodes."""

    def __init__(self, pattern: str, ecma: bool, error: type[Exception], big=None):
        self.pattern = pattern
        self.ecma = ecma
        self.error = error
        self.big = big or {}  # placeholder -> quantifier count (see _big_counts)

    def unsupported(self, what: str) -> Exception:
        kind = UnsupportedSchemaError if self.error is SchemaError else GrammarError
        if kind is UnsupportedSchemaError:
            return UnsupportedSchemaError(f"pattern {self.pattern!r}: {what} is not supported", keyword="pattern")
        return GrammarError(f"regular expression {self.pattern!r}: {what} is not supported")

    # --- character sets
    def category(self, cat, flags: int) -> ir.Chars:
        ascii_only = bool(flags & re.ASCII)
        name = {
            _C.CATEGORY_DIGIT: ("digit", False), _C.CATEGORY_NOT_DIGIT: ("digit", True),
            _C.CATEGORY_SPACE: ("space", False), _C.CATEGORY_NOT_SPACE: ("space", True),
            _C.CATEGORY_WORD: ("word", False), _C.CATEGORY_NOT_WORD: ("word", True),
        }.get(cat)
        if name is None:
            raise self.unsupported(f"category {cat}")
        base, neg = name
        if ascii_only:
            cls = {"digit": _ASCII_DIGIT, "word": _ASCII_WORD, "space": ir.chars((9, 13), (32, 32))}[base]
        else:
            cls = _python_category(base)
        return ir.chars_complement(cls) if neg else cls

    def char_set(self, op, av, flags: int) -> ir.Chars:
        ic = bool(flags & re.IGNORECASE)
        ascii_only = bool(flags & re.ASCII)
        if op is _C.LITERAL:
            c = ir.chars((av, av))
            return _case_close(c, ascii_only) if ic else c
        if op is _C.NOT_LITERAL:
            c = ir.chars((av, av))
            return ir.chars_complement(_case_close(c, ascii_only) if ic else c)
        if op is _C.ANY:
            return _ANY if flags & re.DOTALL else ir.chars_complement(ir.chars((10, 10)))
        if op is _C.IN:
            negate = False
            parts: list[ir.Chars] = []
            for iop, iav in av:
                if iop is _C.NEGATE:
                    negate = True
                elif iop is _C.LITERAL:
                    parts.append(ir.chars((iav, iav)))
                elif iop is _C.RANGE:
                    parts.append(ir.chars((iav[0], iav[1])))
                elif iop is _C.CATEGORY:
                    parts.append(self.category(iav, flags))
                else:
                    raise self.unsupported(f"class item {iop}")
            c = ir.chars_union(*parts) if parts else ir.Chars(())
            if ic:
                c = _case_close(c, ascii_only)
            return ir.chars_complement(c) if negate else c
        raise AssertionError(op)

    # --- structure
    def seq(self, items, flags: int) -> ir.Node:
        return _seq_lits([self.item(op, av, flags) for op, av in items])

    def item(self, op, av, flags: int) -> ir.Node:
        if op in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN):
            return self.char_set(op, av, flags)
        if op is _C.BRANCH:
            return ir.alt(*(self.seq(b, flags) for b in av[1]))
        if op is _C.SUBPATTERN:
            _group, add, delete, p = av
            return self.seq(p, (flags | add) & ~delete)
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT):
            lo, hi, p = av
            big = self.big
            lo, hi = big.get(lo, lo), (None if hi == _C.MAXREPEAT else big.get(hi, hi))
            return ir.repeat(self.seq(p, flags), lo, hi)
        if op is _C.AT:
            raise self.unsupported(f"anchor {_anchor_name(av)} away from the pattern's start or end")
        if op in (_C.GROUPREF, getattr(_C, "GROUPREF_EXISTS", None)):
            raise self.unsupported("backreference")
        if op in (_C.ASSERT, _C.ASSERT_NOT):
            raise self.unsupported("lookaround assertion")
        if op is getattr(_C, "POSSESSIVE_REPEAT", None):
            raise self.unsupported("possessive quantifier")
        if op is getattr(_C, "ATOMIC_GROUP", None):
            raise self.unsupported("atomic group")
        raise self.unsupported(f"construct {op}")


def _seq_lits(nodes: list[ir.Node]) -> ir.Node:
    """Concatenate, joining runs of single characters into one literal."""
    out: list[ir.Node] = []
    run: list[str] = []
    for n in nodes:
        if isinstance(n, ir.Chars) and len(n.ranges) == 1 and n.ranges[0][0] == n.ranges[0][1]:
            run.append(chr(n.ranges[0][0]))
        elif isinstance(n, ir.Lit):
            run.append(n.text)
        else:
            if run:
                out.append(ir.lit("".join(run)))
                run = []
            out.append(n)
    if run:
        out.append(ir.lit("".join(run)))
    return ir.seq(*out)


def _anchor_name(av) -> str:
    return {
        _C.AT_BEGINNING: "^", _C.AT_BEGINNING_STRING: "\\A", _C.AT_END: "$", _C.AT_END_STRING: "$",
        _C.AT_BOUNDARY: "\\b", _C.AT_NON_BOUNDARY: "\\B",
    }.get(av, str(av))


def _is_start(op, av, flags: int) -> bool:
    return op is _C.AT and (av is _C.AT_BEGINNING_STRING or (av is _C.AT_BEGINNING and not flags & re.MULTILINE))


def _is_end(op, av, flags: int, ecma: bool) -> bool:
    if op is not _C.AT:
        return False
    if av is _C.AT_END_STRING:
        return True
    # Python's '$' also matches before a final newline; only the full-match dialect can ignore that
    return av is _C.AT_END and not ecma and not flags & re.MULTILINE


def _holds_op(items, ops) -> bool:
    """Whether parsed ``items`` hold one of the opcodes ``ops``, at any nesting (alternatives,
    groups, repetitions)."""
    for op, av in items:
        if op in ops:
            return True
        if op is _C.BRANCH and any(_holds_op(b, ops) for b in av[1]):
            return True
        if op is _C.SUBPATTERN and _holds_op(av[3], ops):
            return True
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT) and _holds_op(av[2], ops):
            return True
    return False


def _has_anchor(items) -> bool:
    return _holds_op(items, (_C.AT,))


def _has_look(items) -> bool:
    return _holds_op(items, (_C.ASSERT, _C.ASSERT_NOT))

#: Quantifier counts from this up are parsed through a placeholder (``re`` refuses counts of
#: ``2**32 - 1`` and more; the automaton takes any): ``_BIG_COUNT + rank`` among them.
_BIG_COUNT = 1 << 31

_QUANT = re.compile(r"\{(\d+)(?:(,)(\d*))?\}")


def _big_counts(text: str) -> tuple[str, dict[int, int]]:
    """``text`` with each quantifier count of at least :data:`_BIG_COUNT` replaced by a
    placeholder in the same order, and the placeholders' counts (outside character classes,
    unescaped ``{``; nothing else in a pattern has the form of a quantifier there)."""
    found = []  # (start, end, count) of each big number
    i, n, in_class = 0, len(text), False
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            j = i + 1
            if j < n and text[j] == "^":
                j += 1
            if j < n and text[j] == "]":  # a leading ']' is a member
                j += 1
            i = j
            continue
        elif ch == "{":
            m = _QUANT.match(text, i)
            if m is not None:
                for g in (1, 3):
                    if m.group(g) and int(m.group(g)) >= _BIG_COUNT:
                        found.append((m.start(g), m.end(g), int(m.group(g))))
                i = m.end()
                continue
        i += 1
    if not found:
        return text, {}
    rank = {v: _BIG_COUNT + k for k, v in enumerate(sorted({v for _, _, v in found}))}
    out, last = [], 0
    for a, b, v in found:
        out += [text[last:a], str(rank[v])]
        last = b
    out.append(text[last:])
    return "".join(out), {p: v for v, p in rank.items()}


def _parse(translated: str, pattern: str, error: type[Exception], flags: int = 0):
    """The ``re._parser`` tree of ``translated`` and the counts of its placeholders
    (:func:`_big_counts`)."""
    translated, big = _big_counts(translated)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _sre_parse.parse(translated, flags), big
    except re.error as e:
        if error is SchemaError:
            raise SchemaError(f"invalid regular expression {pattern!r}: {e}", keyword="pattern") from None
        raise GrammarError(f"invalid regular expression {pattern!r}: {e}") from None
    except (OverflowError, RecursionError) as e:
        raise error(f"regular expression {pattern!r} is too large: {e}") from None
