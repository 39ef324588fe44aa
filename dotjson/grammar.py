"""Lark grammars ↔ the grammar IR.

* :func:`load_lark` reads Lark text with Lark's own loader (``lark.load_grammar``) and converts
  its EBNF trees (rules and terminal definitions) into IR. Terminal regexes go through
  :mod:`dotjson.regex`; nothing here parses grammar text by hand.
* :func:`json_base` is the JSON grammar of ``grammars/json.lark`` as IR, loaded once per process.
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

Everything else (alternation, repetition, variable-length sequences) is written with Lark's
rule operators (``|``, ``?``, ``*``, ``+``, ``~ n..m``), so Lark's Earley parser with
``lexer="dynamic"`` accepts exactly the IR's language.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Callable

from dotjson import ir
from dotjson.errors import GrammarError

__all__ = ["load_lark", "json_base", "json_base_grammar", "to_lark", "lark_parses", "lark_name"]


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
        Tree, Token = self.Tree, self.Token
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
    try:
        g, _ = lg.load_grammar(text, "<grammar>", [], False)
    except lark.exceptions.LarkError as e:
        raise GrammarError(f"invalid Lark grammar: {e}") from None
    if g.ignore:
        raise GrammarError(
            f"%ignore is not supported (ignored terminals {', '.join(g.ignore)}): write the "
            "whitespace into the rules where it may appear"
        )
    rules = _LarkToIR(g, text).convert()
    if start not in rules:
        raise GrammarError(f"start rule {start!r} is not defined in the grammar")
    return ir.Grammar(rules, start)


# ============================================================================ the JSON base


def _json_lark_text() -> str:
    try:
        from importlib.resources import files

        return files("dotjson.grammars").joinpath("json.lark").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, TypeError):
        # running from a checkout: grammars/ sits next to the package
        return (Path(__file__).resolve().parent.parent / "grammars" / "json.lark").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _json_rules() -> dict[str, ir.Node]:
    return dict(load_lark(_json_lark_text(), start="json_value").rules)


def _subst_ws(node: ir.Node, memo: dict) -> ir.Node:
    hit = memo.get(id(node))
    if hit is not None:
        return hit
    if isinstance(node, ir.Ref):
        out = ir.EPS if node.name == "ws" else node
    elif isinstance(node, ir.Seq):
        out = ir.seq(*(_subst_ws(x, memo) for x in node.items))
    elif isinstance(node, ir.Alt):
        out = ir.alt(*(_subst_ws(x, memo) for x in node.items))
    elif isinstance(node, ir.Repeat):
        out = ir.repeat(_subst_ws(node.item, memo), node.min, node.max)
    else:
        out = node
    memo[id(node)] = out
    return out


@functools.lru_cache(maxsize=2)
def _json_base(disallow_whitespace: bool) -> tuple[tuple[str, ir.Node], ...]:
    rules = _json_rules()
    if not disallow_whitespace:
        return tuple(rules.items())
    memo: dict = {}
    out = {name: _subst_ws(body, memo) for name, body in rules.items()}
    out["ws"] = ir.EPS
    return tuple(out.items())


def json_base(disallow_whitespace: bool = False) -> dict[str, ir.Node]:
    """The rules of ``grammars/json.lark`` as IR (a fresh dict over shared, immutable nodes).

    Parameters
    ----------
    disallow_whitespace : bool
        ``True``: the ``ws`` rule is ε and every reference to it is dropped (compact JSON).

    Returns
    -------
    dict of str to ir.Node
        Rules ``json_value``, ``json_object``, ``json_member``, ``json_array``, ``json_string``,
        ``json_string_content``, ``json_string_char``, ``json_number``, ``json_integer``,
        ``json_boolean``, ``json_null``, ``ws`` and helpers. Loaded once per process.
    """
    return dict(_json_base(bool(disallow_whitespace)))


def json_base_grammar(disallow_whitespace: bool = False, start: str = "json_value") -> ir.Grammar:
    """:func:`json_base` as a grammar, starting at ``start``."""
    return ir.Grammar(json_base(disallow_whitespace), start)


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
    if cp < 0x100:
        return f"\\x{cp:02x}"
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _esc_str_char(ch: str) -> str:
    """One character inside a "string" literal in Lark text."""
    if ch == "\\":
        return "\\\\"
    if ch == '"':
        return '\\"'
    cp = ord(ch)
    if 0x20 <= cp < 0x7F:
        return ch
    if cp < 0x100:
        return f"\\x{cp:02x}"
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _lark_string(text: str) -> str:
    return '"' + "".join(_esc_str_char(c) for c in text) + '"'


class _Renderer:
    def __init__(self, names: dict[str, str]):
        self.names = names
        self._fixed: dict[int, int | None] = {}
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

    # --- regex rendering (ref-free nodes)
    def rx(self, n: ir.Node, at_quote: bool = False) -> str:
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
                raise GrammarError("an intersection (And) must be directly followed by a closing quote to render as Lark")
            heads = "".join(f'(?=(?:{self.rx(x, True)})")' for x in n.items[1:])
            return heads + "(?:" + self.rx(n.items[0], True) + ")"
        if isinstance(n, ir.Diff):
            if not at_quote:
                raise GrammarError("a difference (Diff) must be directly followed by a closing quote to render as Lark")
            return f'(?!(?:{self.rx(n.right, True)})")(?:{self.rx(n.left, True)})'
        if isinstance(n, ir.Ref):
            raise GrammarError(f"rule reference {n.name!r} inside a regular sub-tree")
        raise TypeError(n)

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
    def expr(self, n: ir.Node) -> tuple[str, int]:
        """Render ``n`` as a Lark expression; returns (text, precedence 0=alt 1=seq 2=atom)."""
        if isinstance(n, ir.Lit):
            if not n.text:
                return "", 1
            return _lark_string(n.text), 2
        if isinstance(n, ir.Ref):
            return self.names[n.name], 2
        if isinstance(n, (ir.Chars,)) or (self.fixed_len(n) or 0) > 0:
            return "/" + self.rx(n) + "/", 2
        if isinstance(n, ir.Alt):
            if not n.items:
                return "/[^\\x00-\\U0010ffff]/", 2
            parts = [x for x in n.items if not _is_eps(x)]
            body = " | ".join(self.expr(x)[0] for x in parts)
            if len(parts) < len(n.items):
                return f"({body})?", 2
            return body, 0
        if isinstance(n, ir.Seq):
            return self.seq(n.items)
        if isinstance(n, ir.Repeat):
            inner, prec = self.expr(n.item)
            if not inner:
                return "", 1
            atom = inner if prec == 2 else f"({inner})"
            lo, hi = n.min, n.max
            if (lo, hi) == (0, None):
                return atom + "*", 2
            if (lo, hi) == (1, None):
                return atom + "+", 2
            if (lo, hi) == (0, 1):
                return atom + "?", 2
            if hi is None:
                return f"({atom} ~ {lo}) {atom}*", 1
            if lo == hi:
                return f"{atom} ~ {lo}", 1
            return f"{atom} ~ {lo}..{hi}", 1
        if isinstance(n, (ir.And, ir.Diff)):
            raise GrammarError(
                f"{type(n).__name__} must be directly followed by a closing-quote literal to render as Lark"
            )
        raise TypeError(n)

    def seq(self, items: tuple[ir.Node, ...]) -> tuple[str, int]:
        out: list[tuple[str, int]] = []
        i = 0
        while i < len(items):
            x = items[i]
            if _has_setop(x):
                nxt = items[i + 1] if i + 1 < len(items) else None
                if not (isinstance(nxt, ir.Lit) and nxt.text.startswith('"')):
                    raise GrammarError(
                        "an intersection or difference must be directly followed by the closing quote"
                    )
                out.append(("/" + self.rx(x, True) + '\\"/', 2))
                if len(nxt.text) > 1:
                    out.append((_lark_string(nxt.text[1:]), 2))
                i += 2
                continue
            s, prec = self.expr(x)
            if s:
                out.append((s, prec))
            i += 1
        if not out:
            return "", 1
        if len(out) == 1:
            return out[0]
        return " ".join(s if p >= 1 else f"({s})" for s, p in out), 1


def _is_eps(n: ir.Node) -> bool:
    return n == ir.EPS or n == ir.Lit("")


def _has_setop(n: ir.Node) -> bool:
    return any(isinstance(x, (ir.And, ir.Diff)) for x in ir.walk(n))


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
        text, _ = r.expr(body)
        lines.append(f"{names[name]}: {text}".rstrip())
    return "\n".join(lines) + "\n"


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
