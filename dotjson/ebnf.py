"""GBNF-style EBNF (llama.cpp's and XGrammar's grammar format) translated into Lark text.

Serving engines take grammars in this format (SGLang's ``ebnf`` requests, vLLM's
``structured_outputs={"grammar": ...}`` when not Lark). dotjson reads Lark, so the grammar is
rewritten rule for rule and loaded by :meth:`dotjson.Index.from_lark`:

=====================================  ==========================================
EBNF                                   Lark
=====================================  ==========================================
``root ::= a b | c``                   ``start: root`` and ``root: a b | c``
``"text"`` (``\\n \\t \\" \\\\ \\xHH``     the same string as a Lark literal
``\\uHHHH \\UHHHHHHHH`` escapes)
``[a-z\\n]``, ``[^"\\\\]``, ``.``          a one-character regex ``/[...]/``
``x*  x+  x?  ( ... )``                the same
``x{m}  x{m,}  x{m,n}``                ``x ~ m``, ``x ~ m x*``, ``x ~ m..n``
``# comment``                          dropped
=====================================  ==========================================

Rule names are made Lark rule names (lower case, ``-`` and ``.`` as ``_``). A rule ends where
the next ``name ::=`` begins, so rules may span lines. XGrammar's lookahead assertions
``(= ...)`` are refused (:class:`~dotjson.errors.GrammarError`): they can restrict the language,
and ignoring them silently could let text through that the grammar's author excluded.
"""

from __future__ import annotations

import re

from .errors import DotjsonTypeError, GrammarError

__all__ = ["ebnf_to_lark"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "]": "]",
               "[": "[", "-": "-", "^": "^", "/": "/", "0": "\0", "b": "\b", "f": "\f", "v": "\v",
               "a": "\a", ".": "."}


def _where(text: str, i: int) -> str:
    line = text.count("\n", 0, i) + 1
    col = i - (text.rfind("\n", 0, i) + 1) + 1
    return f"line {line}, column {col}"


def _escape(text: str, i: int) -> tuple[str, int]:
    """The character of the escape starting at ``text[i] == "\\\\"`` and the index after it."""
    if i + 1 >= len(text):
        raise GrammarError(f"Invalid EBNF: a backslash ends the grammar at {_where(text, i)}")
    c = text[i + 1]
    if c in "xuU":
        n = {"x": 2, "u": 4, "U": 8}[c]
        digits = text[i + 2 : i + 2 + n]
        if len(digits) != n or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise GrammarError(f"Invalid EBNF: \\{c} needs {n} hex digits at {_where(text, i)}")
        cp = int(digits, 16)
        if cp > 0x10FFFF:
            raise GrammarError(f"Invalid EBNF: code point {cp:#x} out of range at {_where(text, i)}")
        return chr(cp), i + 2 + n
    if c in _SIMPLE_ESC:
        return _SIMPLE_ESC[c], i + 2
    raise GrammarError(f"Invalid EBNF: unknown escape \\{c} at {_where(text, i)}")


def _tokens(text: str):
    """``(kind, value, position)``: NAME, DEF (``::=``), STR, CLASS (``(negated, items)``),
    ANY, REP (``(m, n or None)``), and the punctuation ``| ( ) * + ?``."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("::=", i):
            yield "DEF", None, i
            i += 3
        elif c == '"' or c == "'":
            j, out = i + 1, []
            while True:
                if j >= n:
                    raise GrammarError(f"Invalid EBNF: unterminated string at {_where(text, i)}")
                if text[j] == c:
                    break
                if text[j] == "\\":
                    ch, j = _escape(text, j)
                    out.append(ch)
                else:
                    out.append(text[j])
                    j += 1
            yield "STR", "".join(out), i
            i = j + 1
        elif c == "[":
            j = i + 1
            neg = j < n and text[j] == "^"
            if neg:
                j += 1
            items: list[tuple[int, int]] = []
            while True:
                if j >= n:
                    raise GrammarError(f"Invalid EBNF: unterminated character class at {_where(text, i)}")
                if text[j] == "]":
                    break
                if text[j] == "\\":
                    lo, j = _escape(text, j)
                else:
                    lo, j = text[j], j + 1
                hi = lo
                if j + 1 < n and text[j] == "-" and text[j + 1] != "]":
                    if text[j + 1] == "\\":
                        hi, j = _escape(text, j + 1)
                    else:
                        hi, j = text[j + 1], j + 2
                    if ord(hi) < ord(lo):
                        raise GrammarError(f"Invalid EBNF: range {lo!r}-{hi!r} is reversed at {_where(text, i)}")
                items.append((ord(lo), ord(hi)))
            yield "CLASS", (neg, items), i
            i = j + 1
        elif c == "{":
            m = re.compile(r"\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}").match(text, i)
            if not m:
                raise GrammarError(f"Invalid EBNF: expected {{m}}, {{m,}} or {{m,n}} at {_where(text, i)}")
            lo = int(m.group(1))
            hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
            if hi is not None and hi < lo:
                raise GrammarError(f"Invalid EBNF: repetition {{{lo},{hi}}} is reversed at {_where(text, i)}")
            yield "REP", (lo, hi), i
            i = m.end()
        elif c == "(" and text.startswith("(=", i):
            raise GrammarError(
                f"Unsupported EBNF: lookahead assertion '(=' at {_where(text, i)}; dotjson "
                f"enforces the grammar's language exactly and cannot ignore it (remove it: for "
                f"most grammars it only restates what the rule already requires)")
        elif c in "|()*+?":
            yield c, None, i
            i += 1
        elif c == ".":
            yield "ANY", None, i
            i += 1
        else:
            m = _NAME.match(text, i)
            if not m:
                raise GrammarError(f"Invalid EBNF: unexpected {c!r} at {_where(text, i)}")
            yield "NAME", m.group(0), i
            i = m.end()


def _lark_literal(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append('"')
    return "".join(out)


def _class_char(o: int) -> str:
    """One character of a regex class inside a Lark ``/.../`` literal. Lark turns ``\\uHHHH``
    into the character before the regex is parsed, so the class's own metacharacters get a
    backslash instead."""
    ch = chr(o)
    if ch in "\\]^-[/":
        return "\\" + ch
    if 0x20 < o < 0x7F:
        return ch
    return f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}"


def _lark_class(neg: bool, items) -> str:
    if not items:
        if neg:
            return "/[\\u0000-\\U0010ffff]/"
        raise GrammarError("Invalid EBNF: an empty character class [] matches nothing")
    body = "".join(_class_char(lo) if lo == hi else f"{_class_char(lo)}-{_class_char(hi)}"
                   for lo, hi in items)
    return f"/[{'^' if neg else ''}{body}]/"


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = list(_tokens(text))
        self.i = 0
        self.names: dict[str, str] = {}

    def peek(self, k: int = 0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else (None, None, len(self.text))

    def take(self, kind: str):
        t = self.peek()
        if t[0] != kind:
            raise GrammarError(f"Invalid EBNF: expected {kind}, got {t[0] or 'the end'} at "
                               f"{_where(self.text, t[2])}")
        self.i += 1
        return t

    def rule_name(self, name: str) -> str:
        got = self.names.get(name)
        if got is None:
            base = re.sub(r"[^a-z0-9_]", "_", name.lower()).lstrip("_") or "r"
            if not base[0].isalpha():
                base = "r_" + base
            if base == "start":
                base = "start_"
            got, k = base, 1
            while got in self.names.values():
                k += 1
                got = f"{base}_{k}"
            self.names[name] = got
        return got

    def at_rule_start(self) -> bool:
        return self.peek()[0] == "NAME" and self.peek(1)[0] == "DEF"

    def rules(self) -> list[tuple[str, str, int]]:
        out = []
        while self.peek()[0] is not None:
            if not self.at_rule_start():
                t = self.peek()
                raise GrammarError(f"Invalid EBNF: expected a rule 'name ::= ...' at {_where(self.text, t[2])}")
            _, name, pos = self.take("NAME")
            self.take("DEF")
            out.append((name, self.alternatives(top=True), pos))
        return out

    def alternatives(self, top: bool = False) -> str:
        alts = [self.sequence(top)]
        while self.peek()[0] == "|":
            self.i += 1
            alts.append(self.sequence(top))
        nonempty = [a for a in alts if a]
        if len(nonempty) == len(alts):
            return " | ".join(alts)
        if not nonempty:
            return ""
        return f"[{' | '.join(nonempty)}]"  # an empty alternative: the rest is optional

    def sequence(self, top: bool) -> str:
        items = []
        while True:
            kind = self.peek()[0]
            if kind is None or kind in "|)" or (top and self.at_rule_start()):
                break
            item = self.postfix()
            if item:
                items.append(item)
        return " ".join(items)

    def postfix(self) -> str:
        atom = self.primary()
        while True:
            kind, val, pos = self.peek()
            if kind in ("*", "+", "?"):
                self.i += 1
                atom = f"({atom}){kind}" if atom else ""
            elif kind == "REP":
                self.i += 1
                lo, hi = val
                if not atom:
                    continue
                if hi is None:
                    atom = f"({atom}) ~ {lo} ({atom})*" if lo else f"({atom})*"
                elif hi == 0:
                    atom = ""
                elif lo == hi:
                    atom = f"({atom}) ~ {lo}"
                else:
                    atom = f"[({atom}) ~ 1..{hi}]" if lo == 0 else f"({atom}) ~ {lo}..{hi}"
            else:
                return atom

    def primary(self) -> str:
        kind, val, pos = self.peek()
        self.i += 1
        if kind == "STR":
            return _lark_literal(val) if val else ""
        if kind == "CLASS":
            return _lark_class(*val)
        if kind == "ANY":
            return "/[\\u0000-\\U0010ffff]/"
        if kind == "NAME":
            return self.rule_name(val)
        if kind == "(":
            inner = self.alternatives()
            self.take(")")
            return f"({inner})" if inner else ""
        self.i -= 1
        raise GrammarError(f"Invalid EBNF: unexpected {kind or 'end of grammar'} at {_where(self.text, pos)}")


def ebnf_to_lark(text: str, start: str = "root") -> str:
    """Lark grammar text for a GBNF-style EBNF grammar whose start rule is ``start``.

    Raises
    ------
    DotjsonTypeError
        ``text`` is not a string.
    GrammarError
        Bad syntax (the message gives the line and column), a rule defined twice, a reference
        to an undefined rule, no ``start`` rule, or a lookahead assertion.
    """
    if not isinstance(text, str):
        raise DotjsonTypeError(f"Invalid grammar: expected EBNF text (str), got {type(text).__name__}")
    p = _Parser(text)
    rules = p.rules()
    defined: dict[str, int] = {}
    for name, _, pos in rules:
        if name in defined:
            raise GrammarError(f"Invalid EBNF: rule {name!r} is defined twice (again at {_where(text, pos)})")
        defined[name] = pos
    for name in p.names:
        if name not in defined:
            raise GrammarError(f"Invalid EBNF: rule {name!r} is used but never defined")
    if start not in defined:
        raise GrammarError(f"Invalid EBNF: no {start!r} rule (the start rule)")
    lines = [f"start: {p.rule_name(start)}"]
    for name, body, _ in rules:
        lines.append(f"{p.rule_name(name)}: {body}")
    return "\n".join(lines) + "\n"


def grammar_to_lark(text: str, start: str = "root") -> str:
    """A serving engine's grammar text as Lark: EBNF (rules written ``name ::= ...``) is
    translated by :func:`ebnf_to_lark`; text without ``::=`` is read as Lark already.

    Engines take both in one field (vLLM's ``structured_outputs.grammar``, SGLang's ``ebnf``).

    Raises
    ------
    DotjsonTypeError, GrammarError
        As :func:`ebnf_to_lark`, for EBNF text.
    """
    if isinstance(text, str) and "::=" not in text:
        return text
    return ebnf_to_lark(text, start)
