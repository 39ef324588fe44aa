"""Regular expressions → the grammar IR, through Python's own regex parser.

Two dialects enter here:

* ECMA-262 patterns as JSON Schema's ``pattern`` and ``patternProperties`` use them
  (:func:`regex_to_ir`). The few places where ECMA syntax reads differently from Python's are
  rewritten token by token before parsing (``.``, ``\\d \\w \\s`` and their negations, ``$``,
  ``[^]``, ``\\u{...}``, surrogate-pair escapes, ``\\cX``, annex-B identity escapes, ``(?<name>``,
  ``\\p{...}``); the pattern is then parsed by ``re._parser`` and its tree converted.
* Python patterns, as Lark terminals (``/.../flags``) and :func:`regex_to_grammar` use them
  (:func:`python_regex_to_ir`).

ECMA ``^`` and ``$`` are exact anywhere, repeated groups included (``(^a|b$)*``; see
:func:`_anchored`). The language is always over Unicode scalar values (decoded characters). ECMA lookaheads and
lookbehinds are exact: a condition on the rest of the text (or on what came before) at one
position is an intersection or a difference with it (``ir.And``/``ir.Diff``; see
:func:`_with_lookarounds`), except inside repeated groups (but for ``(?:(?!A)c)*`` at the end) and
lookbehinds inside groups or after a lookahead. Constructs that are not regular, or whose
meaning depends on context we do not track (backreferences, those lookarounds, every
lookaround of a Python pattern (a Lark terminal's would look past its own text), word
boundaries, multiline anchors, anchors inside groups of a Python pattern or beside a
lookaround, possessive quantifiers and atomic groups)
raise :class:`~dotjson.errors.UnsupportedSchemaError` (ECMA) or
:class:`~dotjson.errors.GrammarError` (Python); a malformed pattern raises
:class:`~dotjson.errors.SchemaError` (ECMA) or :class:`~dotjson.errors.GrammarError` (Python).
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
import warnings

from dotjson import ir
from dotjson.ir.analysis import regular_nullable
from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError

try:  # Python >= 3.11
    from re import _constants as _C
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _C  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = ["regex_to_ir", "python_regex_to_ir", "regex_to_grammar", "ECMA_SPACE", "ECMA_LINE_TERMINATORS"]

# More alternatives than this from distributing anchors over groups is refused.
_MAX_ANCHOR_ALTERNATIVES = 256

ECMA_LINE_TERMINATORS = ir.chars((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
# ECMA-262 WhiteSpace ∪ LineTerminator (what \s matches).
ECMA_SPACE = ir.chars(
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)
_ASCII_DIGIT = ir.chars((0x30, 0x39))
_ASCII_WORD = ir.chars((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_ANY = ir.ANY_CHAR
_ANY_STAR = ir.repeat(_ANY, 0, None)


# ============================================================================ char-set helpers


def _class_body(c: ir.Chars) -> str:
    """The inside of a Python character class matching exactly ``c`` (escaped for re)."""
    out = []
    for lo, hi in c.ranges:
        out.append(_esc_class_char(lo) if lo == hi else f"{_esc_class_char(lo)}-{_esc_class_char(hi)}")
    return "".join(out)


def _esc_class_char(cp: int) -> str:
    if cp < 0x100:
        return f"\\x{cp:02x}"
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


@functools.lru_cache(maxsize=None)
def _python_category(name: str) -> ir.Chars:
    """Code points Python's Unicode ``\\d``/``\\s``/``\\w`` match, found by ``re`` itself."""
    pattern = {"digit": r"\d+", "space": r"\s+", "word": r"\w+"}[name]
    text = "".join(map(chr, range(0, 0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))
    ranges = []
    for m in re.finditer(pattern, text):
        lo, hi = ord(text[m.start()]), ord(text[m.end() - 1])
        if lo <= 0xD7FF < hi:  # runs never cross the removed surrogate block by construction
            ranges += [(lo, 0xD7FF), (0xE000, hi)]
        else:
            ranges.append((lo, hi))
    return ir.chars(*ranges)


@functools.lru_cache(maxsize=None)
def _case_groups(ascii_only: bool) -> tuple[tuple[int, ...], ...]:
    """Sets of code points that Python's IGNORECASE matching treats as equal."""
    if ascii_only:
        return tuple((c, c + 32) for c in range(0x41, 0x5B))
    import _sre

    try:
        from re._casefix import _EXTRA_CASES as extra
    except ImportError:  # pragma: no cover
        extra = {}
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    tolower = _sre.unicode_tolower
    for c in range(0x110000):
        lo = tolower(c)
        if lo != c:
            union(c, lo)
    for lo, others in extra.items():
        for o in others:
            union(lo, o)
    groups: dict[int, list[int]] = {}
    for c in list(parent):
        groups.setdefault(find(c), []).append(c)
    for root, members in groups.items():
        if root not in members:
            members.append(root)
    return tuple(tuple(sorted(g)) for g in groups.values())


def _contains(c: ir.Chars, cp: int) -> bool:
    i = bisect.bisect_right(c.ranges, (cp, 0x110000)) - 1
    return i >= 0 and c.ranges[i][0] <= cp <= c.ranges[i][1]


def _case_close(c: ir.Chars, ascii_only: bool) -> ir.Chars:
    extra = []
    for g in _case_groups(ascii_only):
        if any(_contains(c, m) for m in g):
            extra.extend((m, m) for m in g)
    return ir.chars(*c.ranges, *extra) if extra else c


@functools.lru_cache(maxsize=None)
def _general_category(prefix: str) -> ir.Chars:
    ranges = []
    start = None
    for cp in range(0x110000 + 1):
        ok = cp <= 0x10FFFF and unicodedata.category(chr(cp)).startswith(prefix)
        if ok and start is None:
            start = cp
        elif not ok and start is not None:
            ranges.append((start, cp - 1))
            start = None
    return ir.chars(*ranges)


_GC_LONG = {
    "letter": "L", "cased_letter": "LC", "uppercase_letter": "Lu", "lowercase_letter": "Ll",
    "titlecase_letter": "Lt", "modifier_letter": "Lm", "other_letter": "Lo", "mark": "M",
    "nonspacing_mark": "Mn", "spacing_mark": "Mc", "enclosing_mark": "Me", "number": "N",
    "decimal_number": "Nd", "digit": "Nd", "letter_number": "Nl", "other_number": "No",
    "punctuation": "P", "punct": "P", "connector_punctuation": "Pc", "dash_punctuation": "Pd",
    "open_punctuation": "Ps", "close_punctuation": "Pe", "initial_punctuation": "Pi",
    "final_punctuation": "Pf", "other_punctuation": "Po", "symbol": "S", "math_symbol": "Sm",
    "currency_symbol": "Sc", "modifier_symbol": "Sk", "other_symbol": "So", "separator": "Z",
    "space_separator": "Zs", "line_separator": "Zl", "paragraph_separator": "Zp", "other": "C",
    "control": "Cc", "cntrl": "Cc", "format": "Cf", "surrogate": "Cs", "private_use": "Co",
    "unassigned": "Cn",
}


def _unicode_property(name: str, pattern: str) -> ir.Chars:
    key = name.split("=", 1)[1] if "=" in name else name
    if "=" in name and name.split("=", 1)[0] not in ("General_Category", "gc"):
        raise UnsupportedSchemaError(f"pattern {pattern!r}: Unicode property \\p{{{name}}} is not supported", keyword="pattern")
    cat = _GC_LONG.get(key.lower(), key)
    if cat == "LC":
        return ir.chars_union(_general_category("Lu"), _general_category("Ll"), _general_category("Lt"))
    if cat in ("Any",):
        return _ANY
    if cat == "ASCII":
        return ir.chars((0, 0x7F))
    valid = {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P",
             "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl",
             "Zp", "C", "Cc", "Cf", "Cs", "Co", "Cn"}
    if cat not in valid:
        raise UnsupportedSchemaError(f"pattern {pattern!r}: Unicode property \\p{{{name}}} is not supported", keyword="pattern")
    return _general_category(cat)


# ============================================================================ ECMA → Python


_HEX = "0123456789abcdefABCDEF"
_ECMA_ESCAPE_LETTERS = set("dDwWsSbBfnrtvcxuk0123456789pP")


def _ecma_to_python(pattern: str) -> str:
    """Rewrite the ECMA-262 spellings that Python's parser reads differently.

    This is a lexical pass (escape and class state only); the structure is left to
    ``re._parser``.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    class_start = False

    def code_escape(cp: int) -> str:
        return _esc_class_char(cp)

    def read_u(j: int) -> tuple[int, int] | None:
        """Parse a \\u escape starting at pattern[j] == 'u'; return (code point, next index)."""
        if j + 1 < n and pattern[j + 1] == "{":
            k = pattern.find("}", j + 2)
            body = pattern[j + 2 : k] if k > 0 else ""
            if k > 0 and body and all(ch in _HEX for ch in body) and int(body, 16) <= 0x10FFFF:
                return int(body, 16), k + 1
            return None
        body = pattern[j + 1 : j + 5]
        if len(body) == 4 and all(ch in _HEX for ch in body):
            cp = int(body, 16)
            nxt = j + 5
            # a UTF-16 surrogate pair spelled as two escapes is one astral character
            if 0xD800 <= cp <= 0xDBFF and pattern[nxt : nxt + 2] == "\\u":
                low = pattern[nxt + 2 : nxt + 6]
                if len(low) == 4 and all(ch in _HEX for ch in low) and 0xDC00 <= int(low, 16) <= 0xDFFF:
                    return 0x10000 + ((cp - 0xD800) << 10) + (int(low, 16) - 0xDC00), nxt + 6
            return cp, nxt
        return None

    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                raise SchemaError(f"invalid regular expression {pattern!r}: trailing backslash", keyword="pattern")
            e = pattern[i + 1]
            if e in "dDwWsS":
                cls = {"d": _ASCII_DIGIT, "w": _ASCII_WORD, "s": ECMA_SPACE}[e.lower()]
                if e.isupper():
                    cls = ir.chars_complement(cls)
                body = _class_body(cls)
                i += 2
                if in_class:
                    # annex B: a class escape next to '-' is no range end: keep the '-' literal
                    if out and out[-1] == "-":
                        out[-1] = "\\-"
                    out.append(body)
                    if i < n and pattern[i] == "-":
                        out.append("\\-")
                        i += 1
                else:
                    out.append(f"[{body}]")
            elif e in "pP":
                m = re.match(r"\{([A-Za-z_=]+)\}", pattern[i + 2 :])
                if not m:
                    raise SchemaError(f"invalid regular expression {pattern!r}: bad \\{e} escape", keyword="pattern")
                cls = _unicode_property(m.group(1), pattern)
                if e == "P":
                    cls = ir.chars_complement(cls)
                body = _class_body(cls) if cls.ranges else ""
                if in_class:
                    if out and out[-1] == "-":
                        out[-1] = "\\-"
                    out.append(body)
                    if i + 2 + m.end() < n and pattern[i + 2 + m.end()] == "-":
                        out.append("\\-")
                        i += 1
                else:
                    out.append(f"[{body}]" if body else "[^\\x00-\\U0010ffff]")
                i += 2 + m.end()
            elif e == "u":
                r = read_u(i + 1)
                if r is None:
                    out.append("u")
                    i += 2
                else:
                    out.append(code_escape(r[0]))
                    i = r[1]
            elif e == "x":
                body = pattern[i + 2 : i + 4]
                if len(body) == 2 and all(ch in _HEX for ch in body):
                    out.append("\\x" + body)
                    i += 4
                else:
                    out.append("x")
                    i += 2
            elif e == "c":
                if i + 2 < n and pattern[i + 2].isascii() and pattern[i + 2].isalpha():
                    out.append(code_escape(ord(pattern[i + 2]) % 32))
                    i += 3
                else:
                    out.append("\\\\c")
                    i += 2
            elif e == "k":
                raise UnsupportedSchemaError(
                    f"pattern {pattern!r}: backreference \\k is not supported (not a regular language)",
                    keyword="pattern",
                )
            elif e == "b" and in_class:
                out.append("\\x08")
                i += 2
            elif e == "0" and not (i + 2 < n and pattern[i + 2].isdigit()):
                out.append("\\x00")
                i += 2
            elif e.isascii() and e.isalpha() and e not in _ECMA_ESCAPE_LETTERS:
                out.append(e)  # annex B identity escape: \a is 'a', \Z is 'Z'
                i += 2
            elif e == "-" or e == "/":
                out.append("\\" + e)
                i += 2
            else:
                out.append(pattern[i : i + 2])
                i += 2
            class_start = False
            continue
        if in_class:
            if ch == "]" and not class_start:
                in_class = False
                out.append("]")
            elif ch == "[":
                out.append("\\[")
            elif ch in "&~|" and i + 1 < n and pattern[i + 1] == ch:
                out.append("\\" + ch)  # Python warns about possible set operations
            else:
                out.append(ch)
            class_start = False
            i += 1
            continue
        if ch == "[":
            if pattern.startswith("[^]", i):
                out.append("[\\x00-\\U0010ffff]")
                i += 3
            elif pattern.startswith("[]", i):
                out.append("[^\\x00-\\U0010ffff]")
                i += 2
            else:
                in_class = True
                if pattern.startswith("[^", i):
                    out.append("[^")
                    i += 2
                else:
                    out.append("[")
                    i += 1
                # ']' right after '[' closes an empty class in ECMA, but is literal in Python
                class_start = False
                if i < n and pattern[i] == "]":
                    # ECMA: "[^]..." / "[]..." were handled above; nothing else can start with ']'
                    pass
            continue
        if ch == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif ch == "$":
            out.append("\\Z")
        elif ch == "(" and pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
            out.append("(?P<")
            i += 3
            continue
        elif ch == "{" and pattern.startswith("{,", i):
            out.append("\\{")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


# ============================================================================ sre tree → IR


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


def _convert(parsed, pattern: str, *, ecma: bool, search: bool, error: type[Exception]) -> ir.Node:
    parsed, big = parsed
    conv = _Converter(pattern, ecma, error, big)
    flags0 = parsed.state.flags
    items = list(parsed)
    try:
        return _convert_items(conv, items, flags0, ecma=ecma, search=search)
    except UnsupportedSchemaError:
        # anchors where the edge rules below do not reach them (``(a|$)(b|^)``, more than
        # _MAX_ANCHOR_ALTERNATIVES distributed): the four parts of the whole pattern
        if not ecma or _has_look(items) or not _has_anchor(items):
            raise
        return _anchored(conv, [(it, flags0) for it in items], False, False, search)


def _convert_items(conv: _Converter, items: list, flags0: int, *, ecma: bool, search: bool) -> ir.Node:
    alts = _expand_edges(items, [flags0] * len(items), conv)
    out = []
    for its, fls in alts:
        sa = ea = False
        k = 0
        while k < len(its) and its[k][0] is _C.AT:
            op, av = its[k]
            if _is_start(op, av, fls[k]):
                sa = True
            elif _is_end(op, av, fls[k], ecma):
                break
            else:
                raise conv.unsupported(f"anchor {_anchor_name(av)}")
            k += 1
        j = len(its)
        while j > k and its[j - 1][0] is _C.AT:
            op, av = its[j - 1]
            if _is_end(op, av, fls[j - 1], ecma):
                ea = True
            elif _is_start(op, av, fls[j - 1]) and j - 1 == 0:
                sa = True
            else:
                raise conv.unsupported(f"anchor {_anchor_name(av)} at the end")
            j -= 1
        # leading run may contain a '$' (e.g. "^$"): then everything after it must be anchors
        body_items = list(zip(its[k:j], fls[k:j]))
        if ecma and any(op is _C.AT for (op, av), f in body_items):
            body_items, sa, ea, whole = _middle_anchors(conv, body_items, sa, ea)
            if whole is not None:
                out.append(whole)
                continue
        for (op, av), f in body_items:
            if op is _C.AT:
                raise conv.unsupported(f"anchor {_anchor_name(av)} in the middle of the pattern")
        if any(_has_anchor([it]) for it, _ in body_items):
            if not ecma or any(_has_look([it]) for it, _ in body_items):
                raise conv.unsupported("anchor inside a repeated or nested group away from the pattern's edges")
            out.append(_anchored(conv, body_items, sa, ea, search))
            continue
        if ecma and any(_has_look([it]) for it, _ in body_items):
            # (ECMA patterns only: in a Lark terminal a lookaround would look past the
            # terminal's own text, at what the lexer reads next)
            pre = ir.EPS if sa or not search else _ANY_STAR
            post = ir.EPS if ea or not search else _ANY_STAR
            out.append(_with_lookarounds(conv, body_items, pre, post))
            continue
        body = _seq_lits([conv.item(op, av, f) for (op, av), f in body_items])
        if search:
            body = ir.seq(ir.EPS if sa else _ANY_STAR, body, ir.EPS if ea else _ANY_STAR)
        out.append(body)
    return ir.alt(*out)


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


# ============================================================================ lookarounds
# A lookaround is a condition on the whole text at one position: a lookahead ``(?=A)`` on the
# rest of it (it starts with a match of A: ``A·Σ*``), a lookbehind ``(?<=B)`` on what came
# before (it ends with one: ``Σ*·B``). Converted right to left with the language of the rest
# of the text (the *continuation*), a lookahead is an intersection (``And``) or, negated, a
# difference (``Diff``) with that continuation; lookbehinds are met left to right with the
# language of the text before them. ECMA-262 and Python agree on this (no captures are
# referred to: backreferences stay refused), and every language here is regular.


def _has_look(items) -> bool:
    return _holds_op(items, (_C.ASSERT, _C.ASSERT_NOT))


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
    return ir.seq(before, _ahead(conv, right, post))


def _ahead(conv: _Converter, items: list, cont: ir.Node) -> ir.Node:
    """``items · cont`` with the lookaheads (and end anchors) of ``items`` holding."""
    for (op, av), f in reversed(items):
        if op in (_C.ASSERT, _C.ASSERT_NOT):
            if av[0] < 0:
                raise conv.unsupported("lookbehind after a lookahead or inside a group")
            a = _ahead(conv, [(it, f) for it in av[1]], _ANY_STAR)
            cont = _and(cont, a) if op is _C.ASSERT else _diff(cont, a)
        elif op is _C.AT:
            if not _is_end(op, av, f, conv.ecma):
                raise conv.unsupported(f"anchor {_anchor_name(av)} inside a lookahead")
            cont = ir.EPS if regular_nullable(cont) else ir.EMPTY  # the end of the text: nothing follows
        elif op is _C.BRANCH and _has_look([(op, av)]) or op is _C.BRANCH and _has_anchor([(op, av)]):
            cont = ir.alt(*(_ahead(conv, [(it, f) for it in b], cont) for b in av[1]))
        elif op is _C.SUBPATTERN and (_has_look([(op, av)]) or _has_anchor([(op, av)])):
            _g, add, delete, p = av
            g = (f | add) & ~delete
            cont = _ahead(conv, [(it, g) for it in p], cont)
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT) and (_has_look([(op, av)]) or _has_anchor([(op, av)])):
            cont = ir.seq(_tempered(conv, av, f, cont), cont)
        else:
            cont = ir.seq(conv.item(op, av, f), cont)
    return cont


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


# ============================================================================ public API


@functools.lru_cache(maxsize=4096)
def regex_to_ir(pattern: str, *, search: bool = True) -> ir.Node:
    """The set of strings an ECMA-262 pattern accepts, as an IR node over decoded characters.

    Parameters
    ----------
    pattern : str
        An ECMA-262 regular expression, as JSON Schema's ``pattern`` holds it.
    search : bool, default True
        JSON Schema semantics: the pattern may match anywhere in the string (an implicit
        ``.*`` on each side unless ``^``/``$`` anchor that side, per alternative). ``False``:
        the whole string must match.

    Returns
    -------
    ir.Node
        A ref-free node.

    Raises
    ------
    UnsupportedSchemaError
        For backreferences, lookarounds inside repeated groups (lookbehinds inside any group or
        after a lookahead), ``\\b``/``\\B``, anchors away from the edges, and
        unsupported ``\\p{...}`` properties.
    SchemaError
        For a malformed pattern.
    """
    if not isinstance(pattern, str):
        raise SchemaError(f"pattern must be a string, got {type(pattern).__name__}", keyword="pattern")
    translated = _ecma_to_python(pattern)
    parsed = _parse(translated, pattern, SchemaError)
    return _convert(parsed, pattern, ecma=True, search=search, error=SchemaError)


@functools.lru_cache(maxsize=4096)
def python_regex_to_ir(pattern: str, flags: str = "", *, search: bool = False) -> ir.Node:
    """The language of a Python regular expression (as Lark terminals write them).

    Parameters
    ----------
    pattern : str
        A Python ``re`` pattern.
    flags : str
        Lark's flag letters: any of ``imsux`` (``l`` is refused: locale-dependent).
    search : bool, default False
        Full-match semantics by default (a terminal matches exactly its text).

    Raises
    ------
    GrammarError
        For malformed patterns and non-regular or context-dependent constructs.
    """
    f = 0
    for ch in flags:
        if ch == "i":
            f |= re.IGNORECASE
        elif ch == "m":
            f |= re.MULTILINE
        elif ch == "s":
            f |= re.DOTALL
        elif ch == "x":
            f |= re.VERBOSE
        elif ch == "u":
            pass
        else:
            raise GrammarError(f"regular expression {pattern!r}: flag {ch!r} is not supported")
    parsed = _parse(pattern, pattern, GrammarError, f)
    return _convert(parsed, pattern, ecma=False, search=search, error=GrammarError)


def regex_to_grammar(pattern: str) -> ir.Grammar:
    """A grammar whose language is the texts a Python-syntax regex fully matches.

    This is what ``Index.from_regex`` compiles (like outlines-core's index from a regex): the
    output text, as a whole, must match ``pattern``.

    Parameters
    ----------
    pattern : str
        A Python ``re`` pattern (inline flags such as ``(?i)`` allowed).

    Returns
    -------
    ir.Grammar
        One rule, ``start``.
    """
    return ir.Grammar({"start": python_regex_to_ir(pattern)}, "start")
