"""Character sets: the classes ECMA-262 and Python give ``\\d \\w \\s``, Unicode general
categories (``\\p{...}``), case closure under ``IGNORECASE``, and Python class bodies that
match exactly a set of code points.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata

from dotjson import ir
from dotjson.errors import UnsupportedSchemaError


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


def _class_body(c: ir.Chars) -> str:
    """The inside of a Python character class matching exactly ``c`` (escaped for re)."""
    out = []
    for lo, hi in c.ranges:
        out.append(escape_code_point(lo) if lo == hi else f"{escape_code_point(lo)}-{escape_code_point(hi)}")
    return "".join(out)


def escape_code_point(cp: int) -> str:
    """A code point as the ``\\x`` / ``\\u`` / ``\\U`` escape that Python's ``re`` (and Lark, in
    strings and regexes) reads, inside a character class or out of one."""
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
