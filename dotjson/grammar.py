"""Lark grammars ↔ the grammar IR.

* :func:`load_lark` reads Lark text with Lark's own loader (``lark.load_grammar``) and converts
  its EBNF trees (rules and terminal definitions) into IR. Terminal regexes go through
  :mod:`dotjson.regex`; nothing here parses grammar text by hand.
* :func:`to_lark` renders any IR grammar as Lark text that describes the same language.
* :func:`lark_parses` runs Lark's Earley parser as a reference oracle.

Rendering and exactness
-----------------------
Lark's dynamic lexer asks each terminal's regex for *one* match at a position (Python's
backtracking ``re.match``, not the longest), so a terminal whose language holds two strings,
one a prefix of the other, can make Lark miss parses. :func:`to_lark` therefore emits only
terminals with a single possible match length at any position:

* literals (``"..."``) and fixed-length ref-free sub-trees (one ``/regex/``, e.g.
  ``/\\\\u[0-9a-fA-F]{4}/``);
* intersections and differences (``And``/``Diff``), which the IR only allows inside JSON strings
  directly before the closing quote: they render as one regex that ends with that quote,
  ``/(?=(?:B)")(?:A)"/`` and ``/(?!(?:B)")(?:A)"/``; a JSON string content ends at its first
  unescaped quote, so the match length is again unique.

* a ref-free run of JSON string content followed by its closing quote, when an escape-state
  analysis proves the content never holds an unescaped quote nor ends inside an escape: such a
  terminal ends at the first unescaped quote.

Everything else (alternation, repetition, variable-length sequences) is written with Lark's
rule operators (``|``, ``?``, ``*``, ``+``, ``~ n..m``), so Lark's Earley parser with
``lexer="dynamic"`` accepts exactly the IR's language. Because Lark distributes inline
alternatives and optional items over a rule's expansions (exponential in their number),
sequences hold only atoms that do not multiply; the rest is hoisted into helper rules
``_rN``, one per shared IR node. See ``docs/grammar.md``.
"""

from __future__ import annotations

import functools
import re
from typing import Callable

from dotjson import ir
from dotjson.errors import GrammarError
from dotjson.regex.charsets import escape_code_point as _esc_cp

__all__ = ["load_lark", "to_lark", "to_python_regex", "lark_parses", "lark_name"]


# ============================================================================ Lark → IR


def _lark():
    import lark
    from lark import load_grammar as lg

    return lark, lg


class _LarkToIR:
    """Converts the EBNF trees of a loaded Lark grammar into IR nodes."""

    def __init__(self, grammar, source: str):
        from lark import Token, Tree

        self.Tree, self.Token = Tree, Token
        self.source = source
        self.term_trees = {name: tp for name, tp in grammar.term_defs}
        self.rule_defs = {str(name): (tuple(params), tree) for name, params, tree, _opts in grammar.rule_defs}
        self.terms: dict[str, ir.Node] = {}
        self.in_progress: set[str] = set()
        self.rules: dict[str, ir.Node] = {}
        self.templates: dict[tuple, str] = {}

    # --- terminals
    def terminal(self, name: str) -> ir.Node:
        hit = self.terms.get(name)
        if hit is not None:
            return hit
        if name not in self.term_trees:
            raise GrammarError(f"terminal {name} is used but not defined")
        tree, _prio = self.term_trees[name]
        if tree is None:
            raise GrammarError(f"terminal {name} is only %declare'd: its language is unknown")
        if name in self.in_progress:
            raise GrammarError(f"terminal {name} is recursive")
        self.in_progress.add(name)
        node = self.node(tree, {})
        self.in_progress.discard(name)
        self.terms[name] = node
        return node

    # --- literals
    def literal(self, tok) -> ir.Node:
        _, lg = _lark()
        from lark.lexer import PatternStr

        try:
            pat = lg._literal_to_pattern(tok)
        except Exception as e:  # lark's GrammarError and friends
            raise GrammarError(f"bad literal {tok!s}: {e}") from None
        flags = "".join(pat.flags)
        if isinstance(pat, PatternStr):
            if "i" in flags:
                from dotjson.regex import python_regex_to_ir

                return python_regex_to_ir(re.escape(pat.value), "i")
            return ir.lit(pat.value)
        from dotjson.regex import python_regex_to_ir

        return python_regex_to_ir(pat.value, flags)

    def char_range(self, a, b) -> ir.Node:
        _, lg = _lark()
        sa, sb = lg.eval_escaping(a.value[1:-1]), lg.eval_escaping(b.value[1:-1])
        sa, sb = sa.replace("\\\\", "\\"), sb.replace("\\\\", "\\")
        if len(sa) != 1 or len(sb) != 1:
            raise GrammarError(f"bad range {a}..{b}: both ends must be one character")
        return ir.chars((ord(sa), ord(sb)))

    # --- trees
    def node(self, t, env: dict[str, ir.Node]) -> ir.Node:
        Token = self.Token
        from lark.grammar import NonTerminal, Terminal

        if isinstance(t, Terminal):
            return self.terminal(t.name)
        if isinstance(t, NonTerminal):
            if t.name in env:
                return env[t.name]
            if t.name not in self.rule_defs:
                raise GrammarError(f"rule {t.name} is used but not defined")
            if self.rule_defs[t.name][0]:
                raise GrammarError(f"template {t.name} used without arguments")
            return ir.Ref(t.name)
        if isinstance(t, Token):
            raise GrammarError(f"unexpected token {t!r} in grammar tree")
        d = t.data
        if d == "expansions":
            return _merge_char_alts(ir.alt(*(self.node(c, env) for c in t.children)))
        if d == "expansion":
            return ir.seq(*(self.node(c, env) for c in t.children))
        if d == "alias":
            return self.node(t.children[0], env)
        if d == "value":
            return self.node(t.children[0], env)
        if d == "maybe":
            return ir.opt(self.node(t.children[0], env))
        if d == "literal":
            return self.literal(t.children[0])
        if d == "range":
            return self.char_range(*t.children)
        if d == "expr":
            inner = self.node(t.children[0], env)
            op = t.children[1]
            if op == "?":
                return ir.opt(inner)
            if op == "*":
                return ir.repeat(inner, 0, None)
            if op == "+":
                return ir.repeat(inner, 1, None)
            if op == "~":
                nums = [int(x) for x in t.children[2:]]
                lo, hi = (nums[0], nums[0]) if len(nums) == 1 else nums
                if hi < lo:
                    raise GrammarError(f"bad repetition range {lo}..{hi}")
                return ir.repeat(inner, lo, hi)
            raise GrammarError(f"unknown operator {op!r}")
        if d == "template_usage":
            return self.template(t.children[0].name, [self.node(c, env) for c in t.children[1:]])
        raise GrammarError(f"unsupported Lark construct {d!r}")

    def template(self, name: str, args: list[ir.Node]) -> ir.Node:
        if name not in self.rule_defs:
            raise GrammarError(f"template {name} is used but not defined")
        params, tree = self.rule_defs[name]
        if len(params) != len(args):
            raise GrammarError(f"template {name} takes {len(params)} arguments, got {len(args)}")
        key = (name, tuple(args))
        inst = self.templates.get(key)
        if inst is None:
            base = name.lstrip("_") or "t"
            inst = f"{'_' if name.startswith('_') else ''}{base}__tpl{len(self.templates)}"
            self.templates[key] = inst
            self.rules[inst] = ir.EPS  # placeholder so recursive instances resolve
            self.rules[inst] = self.node(tree, dict(zip(params, args)))
        return ir.Ref(inst)

    def convert(self) -> dict[str, ir.Node]:
        for name, (params, tree) in self.rule_defs.items():
            if params:
                continue
            self.rules[name] = self.node(tree, {})
        return self.rules


def _merge_char_alts(n: ir.Node) -> ir.Node:
    """``"a" | "b" | /[0-9]/`` → one character class."""
    if not isinstance(n, ir.Alt):
        return n
    cs, rest = [], []
    for x in n.items:
        if isinstance(x, ir.Chars):
            cs.append(x)
        elif isinstance(x, ir.Lit) and len(x.text) == 1:
            cs.append(ir.chars((ord(x.text), ord(x.text))))
        else:
            rest.append(x)
    if len(cs) < 2:
        return n
    return ir.alt(ir.chars_union(*cs), *rest)


def load_lark(text: str, start: str = "start") -> ir.Grammar:
    """Load Lark grammar text (with Lark's own loader) into the IR.

    Parameters
    ----------
    text : str
        Lark grammar text. Supports rules, terminals, string literals (``"..."i``), regexes
        with flags, ``"a".."z"`` ranges, ``? * + ~ n ~ n..m``, ``[...]``, grouping, aliases,
        templates, and ``%import`` (e.g. ``common.INT``).
    start : str
        The start rule.

    Returns
    -------
    ir.Grammar

    Raises
    ------
    GrammarError
        For grammar text Lark rejects, ``%ignore`` (which changes the language in ways this
        IR does not model exactly), ``%declare``'d terminals, and regexes that are not
        regular (lookarounds, backreferences).
    """
    lark, lg = _lark()
    import lark.lexer as lark_lexer

    # Lark builds the parser for its own meta-grammar on first use and, when interegular is
    # installed, checks that fixed, known-good grammar's terminals for collisions: ~0.5 s of a
    # process's start-up for nothing. The check never runs on the user's grammar here.
    saved = getattr(lark_lexer, "has_interegular", False)
    lark_lexer.has_interegular = False
    try:
        g, _ = lg.load_grammar(text, "<grammar>", [], False)
    except lark.exceptions.LarkError as e:
        raise GrammarError(f"invalid Lark grammar: {e}") from None
    finally:
        lark_lexer.has_interegular = saved
    if g.ignore:
        raise GrammarError(
            f"%ignore is not supported (ignored terminals {', '.join(g.ignore)}): write the "
            "whitespace into the rules where it may appear"
        )
    rules = _LarkToIR(g, text).convert()
    if start not in rules:
        raise GrammarError(f"start rule {start!r} is not defined in the grammar")
    return ir.Grammar(rules, start)


# ============================================================================ IR → Lark

_RULE_NAME = re.compile(r"_?[a-z][_a-z0-9]*\Z")
_RE_SPECIAL = set("\\.^$*+?{}[]|()/-#&~ \"'")


def lark_name(name: str) -> str:
    """A valid Lark rule name for ``name`` (identity for names that already are)."""
    if _RULE_NAME.match(name):
        return name
    s = re.sub(r"[^_a-z0-9]", "_", name.lower())
    s = s.lstrip("_")
    if not s or not s[0].isalpha():
        s = "r_" + s
    return s




def _esc_rx_char(cp: int) -> str:
    """One character inside a /regex/ in Lark text (Lark then evaluates \\x, \\u escapes)."""
    ch = chr(cp)
    if ch in _RE_SPECIAL:
        return "\\" + ch
    if 0x21 <= cp < 0x7F:
        return ch
    return _esc_cp(cp)


def _esc_str_char(ch: str) -> str:
    """One character inside a "string" literal in Lark text."""
    if ch == "\\":
        return "\\\\"
    if ch == '"':
        return '\\"'
    cp = ord(ch)
    if 0x20 <= cp < 0x7F:
        return ch
    return _esc_cp(cp)


def _lark_string(text: str) -> str:
    return '"' + "".join(_esc_str_char(c) for c in text) + '"'


#: the longest regular expression text :class:`_Renderer` spells out for one node
_MAX_RX_TEXT = 4_000_000


class _Renderer:
    def __init__(self, names: dict[str, str], end: str = '"'):
        self.names = names
        self.used = set(names.values())
        self.aux: dict[int, str] = {}
        self.aux_lines: list[tuple[str, str | None]] = []
        self._counter = 0
        self.end = end  # regex text of what directly follows an And/Diff
        self._fixed: dict[int, int | None] = {}
        self._qmemo: dict[int, frozenset] = {}
        self._flags: dict[int, tuple[bool, bool]] = {}
        self._rx: dict[tuple[int, bool], str] = {}
        self._keep: list = []

    # --- analysis
    def fixed_len(self, n: ir.Node) -> int | None:
        """The length of every string of a ref-free, And/Diff-free node, if all are equal."""
        k = id(n)
        if k in self._fixed:
            return self._fixed[k]
        self._keep.append(n)
        if isinstance(n, ir.Lit):
            out = len(n.text)
        elif isinstance(n, ir.Chars):
            out = 1
        elif isinstance(n, ir.Seq):
            out = 0
            for x in n.items:
                f = self.fixed_len(x)
                if f is None:
                    out = None
                    break
                out += f
        elif isinstance(n, ir.Alt):
            fs = {self.fixed_len(x) for x in n.items}
            out = fs.pop() if len(fs) == 1 else None
        elif isinstance(n, ir.Repeat):
            f = self.fixed_len(n.item)
            out = f * n.min if (f is not None and n.max == n.min) else None
        else:
            out = None
        self._fixed[k] = out
        return out

    # --- memoized structure flags: (references a rule, contains And/Diff)
    def flags(self, n: ir.Node) -> tuple[bool, bool]:
        k = id(n)
        hit = self._flags.get(k)
        if hit is not None:
            return hit
        self._keep.append(n)
        if isinstance(n, ir.Ref):
            out = (True, False)
        elif isinstance(n, (ir.Lit, ir.Chars)):
            out = (False, False)
        else:
            has_ref, has_set = False, isinstance(n, (ir.And, ir.Diff))
            for c in ir.children(n):
                r, st = self.flags(c)
                has_ref |= r
                has_set |= st
            out = (has_ref, has_set)
        self._flags[k] = out
        return out

    def has_setop(self, n: ir.Node) -> bool:
        return self.flags(n)[1]

    def regular(self, n: ir.Node) -> bool:
        return not self.flags(n)[0]

    # --- quote safety: strings that, read as JSON string content, never end inside an escape
    # and never contain an unescaped quote. Then x followed by '"' matches at one length only.
    def quote_safe(self, n: ir.Node) -> bool:
        return all(f[0] == _N for f in self._qfuns(n))

    def _seq_funs(self, items) -> frozenset:
        out = frozenset((_ID,))
        for x in items:
            if self.has_setop(x) and any(f[0] != _N for f in out):
                # a lookahead must start at a character boundary of the JSON content
                return frozenset({(_D, _D)})
            fx = self._qfuns(x)
            out = frozenset(_compose(a, b) for a in out for b in fx)
        return out

    def _qfuns(self, n: ir.Node) -> frozenset:
        k = id(n)
        hit = self._qmemo.get(k)
        if hit is not None:
            return hit
        self._keep.append(n)
        if isinstance(n, ir.Lit):
            f = _ID
            for ch in n.text:
                f = _compose(f, _char_fun(ord(ch)))
            out = frozenset((f,))
        elif isinstance(n, ir.Chars):
            out = frozenset(_chars_funs(n))
        elif isinstance(n, ir.Seq):
            out = self._seq_funs(n.items)
        elif isinstance(n, ir.Alt):
            out = frozenset().union(*(self._qfuns(x) for x in n.items)) if n.items else frozenset()
        elif isinstance(n, ir.Repeat):
            out = _repeat_funs(self._qfuns(n.item), n.min, n.max)
        elif isinstance(n, ir.And):
            sets = [self._qfuns(x) for x in n.items]
            out = frozenset.intersection(*sets) if sets else frozenset()
        elif isinstance(n, ir.Diff):
            out = self._qfuns(n.left)
            if not self.quote_safe(n.right):
                out = frozenset({(_D, _D)})  # poison: the lookahead would be inexact
        else:
            out = frozenset({(_D, _D)})
        if isinstance(n, ir.And) and not all(self.quote_safe(x) for x in n.items):
            out = frozenset({(_D, _D)})
        self._qmemo[k] = out
        return out

    # --- regex rendering (ref-free nodes)
    def rx(self, n: ir.Node, at_quote: bool = False) -> str:
        key = (id(n), at_quote)
        hit = self._rx.get(key)
        if hit is None:
            self._keep.append(n)
            hit = self._rx[key] = self._rx_uncached(n, at_quote)
            if len(hit) > _MAX_RX_TEXT:
                # (a node shared at every level, as format regex's 16 levels of nesting, is
                # spelled out again at each: the text doubles per level)
                raise GrammarError(f"a regular sub-language has no grammar text of a sane size (over "
                                   f"{_MAX_RX_TEXT // 1_000_000} MB as one regular expression)")
        return hit

    def _rx_uncached(self, n: ir.Node, at_quote: bool) -> str:
        if isinstance(n, ir.Lit):
            return "".join(_esc_rx_char(ord(c)) for c in n.text)
        if isinstance(n, ir.Chars):
            return self.rx_class(n)
        if isinstance(n, ir.Seq):
            if not n.items:
                return "(?:)"
            last = len(n.items) - 1
            return "".join(self.rx(x, at_quote and i == last) for i, x in enumerate(n.items))
        if isinstance(n, ir.Alt):
            if not n.items:
                return "[^\\x00-\\U0010ffff]"
            return "(?:" + "|".join(self.rx(x, at_quote) for x in n.items) + ")"
        if isinstance(n, ir.Repeat):
            inner = self.rx_atomish(n.item, at_quote and n.max is not None and n.max <= 1)
            return inner + _rx_quant(n.min, n.max)
        if isinstance(n, ir.And):
            if not at_quote:
                raise GrammarError("an intersection (And) not directly followed by a closing quote has no grammar text "
                                   "(Lark lookaheads are anchored at the quote; the automaton checks it)")
            heads = "".join(f"(?=(?:{self.rx(x, True)}){self.end})" for x in n.items[1:])
            return heads + "(?:" + self.rx(n.items[0], True) + ")"
        if isinstance(n, ir.Diff):
            if not at_quote:
                raise GrammarError("a difference (Diff) not directly followed by a closing quote has no grammar text "
                                   "(Lark lookaheads are anchored at the quote; the automaton checks it)")
            return f"(?!(?:{self.rx(n.right, True)}){self.end})(?:{self.rx(n.left, True)})"
        if isinstance(n, ir.Ref):
            raise GrammarError(f"rule reference {n.name!r} inside a regular sub-tree")
        raise GrammarError(f"cannot render {type(n).__name__} {n!r} as a Lark regular expression")

    def rx_atomish(self, n: ir.Node, at_quote: bool) -> str:
        s = self.rx(n, at_quote)
        if isinstance(n, (ir.Chars, ir.Alt)) or (isinstance(n, ir.Lit) and len(n.text) == 1):
            return s
        return "(?:" + s + ")"

    def rx_class(self, c: ir.Chars) -> str:
        if not c.ranges:
            return "[^\\x00-\\U0010ffff]"
        if len(c.ranges) == 1 and c.ranges[0][0] == c.ranges[0][1]:
            return _esc_rx_char(c.ranges[0][0])
        body = "".join(
            _esc_rx_char(lo) if lo == hi else f"{_esc_rx_char(lo)}-{_esc_rx_char(hi)}" for lo, hi in c.ranges
        )
        return f"[{body}]"

    # --- rule expressions
    # Lark distributes every inline alternative, ``?``, ``*`` and ``~ n..m`` of a sequence over
    # the rule's expansions (``a: (b|c) d? (e|f)`` becomes 8 expansions), so a sequence only
    # holds atoms that do not multiply; anything else is hoisted into a helper rule, one per
    # shared IR node.
    def body(self, n: ir.Node) -> str:
        """A rule's right-hand side."""
        if isinstance(n, ir.Alt) and n.items:
            parts = [x for x in n.items if not _is_eps(x)]
            text = " | ".join(self.branch(x) or '""' for x in parts)
            if len(parts) < len(n.items):
                text = f"{text} | " if text else ""
            return text
        return self.branch(n)

    def branch(self, n: ir.Node) -> str:
        """One alternative: atoms separated by spaces (or one repetition)."""
        if isinstance(n, ir.Seq):
            return self.seq(n.items)
        if not isinstance(n, (ir.Lit, ir.Ref)) and not self.has_setop(n) and (self.fixed_len(n) or 0) > 0:
            return "/" + self.rx(n) + "/"
        if isinstance(n, ir.Repeat):
            if isinstance(n.item, ir.Alt) and n.item.items and not any(_is_eps(x) for x in n.item.items):
                inner = "(" + self.body(n.item) + ")"  # multiplies this rule only
            else:
                inner = self.atom(n.item)
            if not inner:
                return ""
            if not _SIMPLE_ATOM.fullmatch(inner) and not (inner.startswith("(") and inner.endswith(")")):
                inner = f"({inner})"
            lo, hi = n.min, n.max
            if (lo, hi) == (0, None):
                return inner + "*"
            if (lo, hi) == (1, None):
                return inner + "+"
            if (lo, hi) == (0, 1):
                return inner + "?"
            if hi is None:
                return f"({inner} ~ {lo}) {inner}*"
            if lo == hi:
                return f"{inner} ~ {lo}"
            return f"{inner} ~ {lo}..{hi}"
        return self.atom(n)

    def atom(self, n: ir.Node) -> str:
        """Text that adds no expansions to the enclosing rule ("" for ε)."""
        if isinstance(n, ir.Lit):
            return _lark_string(n.text) if n.text else ""
        if isinstance(n, ir.Ref):
            return self.names[n.name]
        if _is_eps(n):
            return ""
        if isinstance(n, ir.Chars) or (not self.has_setop(n) and (self.fixed_len(n) or 0) > 0):
            return "/" + self.rx(n) + "/"
        if isinstance(n, (ir.Alt)) and not n.items:
            return "/[^\\x00-\\U0010ffff]/"
        if isinstance(n, ir.Seq):
            return self.seq(n.items)
        if isinstance(n, ir.Repeat) and (n.min, n.max) == (1, None):
            inner = self.atom(n.item)
            return inner + "+" if inner and _SIMPLE_ATOM.fullmatch(inner) else self.hoist(n)
        if isinstance(n, (ir.And, ir.Diff)):
            raise GrammarError(
                f"{type(n).__name__} not directly followed by a closing quote has no grammar text (Lark "
                "lookaheads are anchored at the quote; the automaton checks it)"
            )
        return self.hoist(n)

    def hoist(self, n: ir.Node) -> str:
        k = id(n)
        name = self.aux.get(k)
        if name is None:
            name = self.fresh()
            self.aux[k] = name
            self._keep.append(n)
            self.aux_lines.append((name, None))
            idx = len(self.aux_lines) - 1
            self.aux_lines[idx] = (name, self.body(n))
        return name

    def fresh(self) -> str:
        while True:
            self._counter += 1
            name = f"_r{self._counter}"
            if name not in self.used:
                return name

    def seq(self, items: tuple[ir.Node, ...]) -> str:
        out: list[str] = []
        i, n = 0, len(items)
        while i < n:
            x = items[i]
            if not _is_quote_lit(x) and self.regular(x):
                # a ref-free run up to a closing quote: one terminal when it provably ends at the
                # first unescaped quote (then it has a single match length)
                k = i
                while k < n and not _is_quote_lit(items[k]) and self.regular(items[k]):
                    k += 1
                if k < n and _is_quote_lit(items[k]) and all(f[0] == _N for f in self._seq_funs(items[i:k])):
                    head = ""
                    if out and out[-1] == '"\\""':
                        out.pop()
                        head = '\\"'
                    body = "".join(self.rx(y, j == k - i - 1) for j, y in enumerate(items[i:k]))
                    out.append("/" + head + body + '\\"/')
                    if len(items[k].text) > 1:
                        out.append(_lark_string(items[k].text[1:]))
                    i = k + 1
                    continue
            tag = _text_without(x)
            if tag is not None and i + 1 < n and isinstance(items[i + 1], ir.Lit) \
                    and items[i + 1].text.startswith(tag[0]):
                # bounded text that never holds the tag, then the tag (reasoning before a schema,
                # dotjson.embed): the text ends at the tag's first occurrence, which a lookahead
                # finds (a regex the oracle reads greedily, ending just before the tag)
                lo, hi = tag[1], tag[2]
                if hi != 0:  # (Lark refuses terminals that match the empty text: `/x+/?`)
                    out.append("/(?:(?!" + "".join(_esc_rx_char(ord(c)) for c in tag[0]) + ")[\\s\\S])"
                               + _rx_quant(max(lo, 1), hi) + "/" + ("?" if lo == 0 else ""))
                i += 1
                continue
            if self.has_setop(x):
                raise GrammarError(
                    "an intersection or difference must be directly followed by the closing quote of a "
                    "JSON string, and its operands must be JSON string contents"
                )
            if not isinstance(x, ir.Ref) and self.fixed_len(x) is not None:
                # a run of fixed-length items is one terminal (still a single match length)
                j = i
                while j < n and self.fixed_len(items[j]) is not None:
                    j += 1
                run = [y for y in items[i:j] if not _is_eps(y)]
                if len(run) > 1:
                    if all(isinstance(y, ir.Lit) for y in run):
                        out.append(_lark_string("".join(y.text for y in run)))
                    else:
                        out.append("/" + "".join(self.rx(y) for y in run) + "/")
                    i = j
                    continue
            s = self.atom(x)
            if s:
                out.append(s)
            i += 1
        return " ".join(out)


def _text_without(n: ir.Node):
    """``(tag, lo, hi)`` when ``n`` is ``Diff(any{lo,hi}, any* tag any*)``: text of ``lo`` to
    ``hi`` characters that never holds ``tag`` (:func:`dotjson.embed.reasoning_grammar`)."""
    if not isinstance(n, ir.Diff) or not isinstance(n.left, ir.Repeat) or n.left.item != ir.ANY_CHAR:
        return None
    r = n.right
    anyt = ir.Repeat(ir.ANY_CHAR, 0, None)
    if isinstance(r, ir.Seq) and len(r.items) == 3 and r.items[0] == anyt and r.items[2] == anyt \
            and isinstance(r.items[1], ir.Lit):
        return r.items[1].text, n.left.min, n.left.max
    return None


def _is_quote_lit(n: ir.Node) -> bool:
    return isinstance(n, ir.Lit) and n.text.startswith('"')


_SIMPLE_ATOM = re.compile(r'[A-Za-z_][A-Za-z_0-9]*|"(?:[^"\\]|\\.)*"|/(?:[^/\\]|\\.)*/')


# escape-state functions: state N (normal) or A (after a backslash), D = an unescaped quote seen
_N, _A, _D = 0, 1, 2
_ID = (_N, _A)


def _char_fun(cp: int) -> tuple[int, int]:
    if cp == 0x5C:
        return (_A, _N)
    if cp == 0x22:
        return (_D, _N)
    return (_N, _N)


def _chars_funs(c: ir.Chars) -> set:
    out = set()
    for lo, hi in c.ranges:
        if lo <= 0x22 <= hi:
            out.add(_char_fun(0x22))
        if lo <= 0x5C <= hi:
            out.add(_char_fun(0x5C))
        if hi - lo + 1 > (lo <= 0x22 <= hi) + (lo <= 0x5C <= hi):
            out.add((_N, _N))
    return out


def _compose(f: tuple[int, int], g: tuple[int, int]) -> tuple[int, int]:
    return tuple(_D if s == _D else g[s] for s in f)  # type: ignore[return-value]


def _repeat_funs(s: frozenset, lo: int, hi: int | None) -> frozenset:
    """Functions of strings made of ``lo..hi`` strings whose functions are in ``s``."""
    powers: list[frozenset] = [frozenset((_ID,))]
    seen = {powers[0]: 0}
    limit = hi if hi is not None else None
    while True:
        k = len(powers)
        if limit is not None and k > limit:
            break
        nxt = frozenset(_compose(a, b) for a in powers[-1] for b in s)
        if nxt in seen:  # the sequence of power sets is periodic from here on
            start = seen[nxt]
            cycle = powers[start:]
            out: set = set()
            top = hi if hi is not None else lo + len(powers) + len(cycle)
            for j in range(lo, min(top, lo + len(powers) + len(cycle)) + 1):
                idx = j if j < len(powers) else start + (j - start) % len(cycle)
                out |= powers[idx]
            return frozenset(out)
        seen[nxt] = k
        powers.append(nxt)
    return frozenset().union(*powers[lo : hi + 1]) if hi is not None else frozenset()


def _is_eps(n: ir.Node) -> bool:
    return n == ir.EPS or n == ir.Lit("")


def _rx_quant(lo: int, hi: int | None) -> str:
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if (lo, hi) == (0, 1):
        return "?"
    if hi is None:
        return f"{{{lo},}}"
    if lo == hi:
        return f"{{{lo}}}"
    return f"{{{lo},{hi}}}"


def to_lark(g: ir.Grammar) -> str:
    """Render an IR grammar as Lark text describing exactly the same language.

    Parameters
    ----------
    g : ir.Grammar
        Any IR grammar; ``And``/``Diff`` nodes must sit directly before a closing-quote
        literal (as the JSON Schema translator emits them).

    Returns
    -------
    str
        Lark grammar text whose ``start`` rule is ``g.start``. Load it with
        ``lark.Lark(text, parser="earley", lexer="dynamic")`` (or use :func:`lark_parses`).

    Raises
    ------
    GrammarError
        If an ``And``/``Diff`` is not followed by a closing quote.
    """
    from .ir.families import expand_families

    g = expand_families(g)
    used: set[str] = set()
    names: dict[str, str] = {}
    for name in g.rules:
        base = lark_name(name)
        cand, k = base, 1
        while cand in used or (cand == "start" and name != g.start):
            k += 1
            cand = f"{base}_{k}"
        used.add(cand)
        names[name] = cand
    lines = ["// generated by dotjson: the language the index enforces", ""]
    r = _Renderer(names)
    if not g.rules:
        lines.append("start: /[^\\x00-\\U0010ffff]/")
        return "\n".join(lines) + "\n"
    if names[g.start] != "start":
        if "start" in used:
            # rename a user rule called start so the entry point can be "start"
            raise GrammarError("internal: rule name 'start' collides")  # pragma: no cover
        lines.append(f"start: {names[g.start]}")
    for name, body in g.rules.items():
        lines.append(f"{names[name]}: {r.body(body)}".rstrip())
    if r.aux_lines:
        lines.append("")
        lines.append("// helper rules (sub-expressions, one per shared node)")
        lines.extend(f"{n}: {b}".rstrip() for n, b in r.aux_lines)
    return "\n".join(lines) + "\n"


def to_python_regex(node: ir.Node) -> str:
    """A Python regex whose *full-match* language is the language of a ref-free node.

    ``And``/``Diff`` become lookaheads anchored at ``\\Z``, so they may only end the node
    (as in JSON-string languages). Meant for tests and debugging: ``re.fullmatch(rx, s)``.

    Raises
    ------
    GrammarError
        If the node references a rule, or has an ``And``/``Diff`` that does not end it.
    """
    return _Renderer({}, end="\\Z").rx(node, True)


# ============================================================================ the oracle


@functools.lru_cache(maxsize=64)
def _oracle(lark_text: str, start: str) -> Callable[[str], bool]:
    import lark

    parser = lark.Lark(lark_text, parser="earley", lexer="dynamic_complete", start=start)
    # Lark's dynamic lexer takes the *first* backtracking match of a terminal's regex and, with
    # complete_lex, every prefix match of it; Python's re does not return the longest match
    # first (``a|ab`` on "ab" gives "a"), so some splits would never be tried. Matching the
    # longest full match instead makes "all prefixes of the longest" cover every split.
    xparser = parser.parser.parser
    regexps = xparser.term_matcher.__self__.regexps

    def longest(term, text, index=0):
        rx = regexps[term.name]
        if rx.match(text, index) is None:
            return None
        for end in range(len(text), index, -1):
            m = rx.fullmatch(text, index, end)
            if m is not None:
                return m
        return None

    xparser.term_matcher = longest

    def parses(text: str) -> bool:
        try:
            parser.parse(text)
            return True
        except lark.exceptions.UnexpectedInput:
            return False

    return parses


def lark_parses(lark_text: str, text: str, start: str = "start") -> bool:
    """Whether Lark's Earley parser accepts ``text`` under ``lark_text`` (a reference oracle).

    Uses ``lexer="dynamic_complete"`` with a longest-match terminal matcher so that every way
    of splitting the text into terminals is explored, for any terminal regexes.

    Parameters
    ----------
    lark_text : str
        Lark grammar text.
    text : str
        The candidate document.
    start : str
        Start rule.

    Returns
    -------
    bool
    """
    return _oracle(lark_text, start)(text)
