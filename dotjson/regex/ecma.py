"""ECMA-262 → Python: the lexical rewrite of the spellings Python's parser reads differently
(``.``, ``\\d \\w \\s`` and their negations, ``$``, ``[^]``, ``\\u{...}``, surrogate-pair escapes,
``\\cX``, annex-B identity escapes, ``(?<name>``, ``\\p{...}``).
"""

from __future__ import annotations

import re

from dotjson import ir
from dotjson.errors import SchemaError, UnsupportedSchemaError
from dotjson.regex.charsets import ECMA_SPACE, _ASCII_DIGIT, _ASCII_WORD, _class_body, escape_code_point, _unicode_property


_HEX = "0123456789abcdefABCDEF"

_ECMA_ESCAPE_LETTERS = set("dDwWsSbBfnrtvcxuk0123456789pP")


def _read_u(pattern: str, j: int) -> tuple[int, int] | None:
    """Parse a \\u escape starting at pattern[j] == 'u'; return (code point, next index)."""
    n = len(pattern)
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


def _escape(pattern: str, i: int, in_class: bool, out: list[str]) -> int:
    """Append to ``out`` the Python spelling of the ECMA escape at ``pattern[i] == "\\"`` (inside a
    class when ``in_class``); return the index after it."""
    n = len(pattern)
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
        r = _read_u(pattern, i + 1)
        if r is None:
            out.append("u")
            i += 2
        else:
            out.append(escape_code_point(r[0]))
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
            out.append(escape_code_point(ord(pattern[i + 2]) % 32))
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
    return i


def _ecma_to_python(pattern: str) -> str:
    """Rewrite the ECMA-262 spellings that Python's parser reads differently.

    This is a lexical pass (escape and class state only); the structure is left to
    ``re._parser``. Escapes are :func:`_escape`'s.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    class_start = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i = _escape(pattern, i, in_class, out)
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
