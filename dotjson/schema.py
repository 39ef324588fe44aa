"""JSON Schema → grammar IR: the first stage of the pipeline.

:func:`schema_to_grammar` translates a JSON Schema (drafts 4, 6, 7, 2019-09 and 2020-12; ``$schema``
picks the dialect, 2020-12 by default) into an :class:`~dotjson.ir.Grammar` whose language is the set
of JSON texts the schema accepts, under dotjson's formatting rules (bounded whitespace between
tokens, or none). A keyword that cannot be enforced exactly raises
:class:`~dotjson.errors.UnsupportedSchemaError`; a malformed schema raises
:class:`~dotjson.errors.SchemaError`. Both carry the JSON pointer of the sub-schema at fault.

How it works
------------
Every sub-schema is first normalised into *disjunctive normal form*: a list of branches, each a
conjunction of *atoms* (``type``, a numeric bound, a string language, one property, one required
name, ...). ``allOf`` is a product of branches, ``anyOf`` a union, ``oneOf`` a union of branches that
are proven pairwise disjoint (or rewritten as ``A ∧ ¬B ∨ B ∧ ¬A`` when the negations are
expressible), ``not`` negates atom by atom (De Morgan), ``if``/``then``/``else`` becomes
``(if ∧ then) ∨ (¬if ∧ else)``. A branch is then compiled per JSON type:

* numbers: a small DFA over the number's characters (digit-by-digit comparison with each bound,
  remainders for ``multipleOf``) converted to a regular IR node (or right-linear rules when the
  DFA has cycles, i.e. ``multipleOf``);
* strings: ``ir.And``/``ir.Diff`` of the encoded pattern, format, length and enum languages, placed
  directly between the quotes;
* arrays: nested optional prefix items, then a counted ``ir.Repeat`` (``minItems: 5000`` is one
  node), plus a counter automaton for ``contains``;
* objects: a right-linear automaton over the declared properties in schema order (see
  ``docs/keywords.md``), extra members allowed between them where the schema allows extras.

Each ``$ref`` target (and every other sub-schema) becomes one named rule, reused everywhere, so
recursive schemas work to any depth.
"""

from __future__ import annotations

import itertools
import json
import re
import warnings
from decimal import Decimal, InvalidOperation
from urllib.parse import unquote, urldefrag, urljoin

from dotjson import ir
from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError
from dotjson.ir import EMPTY, EPS, Ref, lit, repeat


def seq(*items: ir.Node) -> ir.Node:
    """``ir.seq`` with type checks instead of deep equality (the hot path of translation)."""
    out: list = []
    for it in items:
        t = type(it)
        if t is ir.Seq:
            out.extend(it.items)
        elif t is ir.Alt:
            if not it.items:
                return EMPTY
            out.append(it)
        elif t is ir.Chars:
            if not it.ranges:
                return EMPTY
            out.append(it)
        elif t is ir.Lit:
            if it.text:
                out.append(it)
        else:
            out.append(it)
    if not out:
        return EPS
    if len(out) == 1:
        return out[0]
    return ir.Seq(tuple(out))


def alt(*items: ir.Node) -> ir.Node:
    """``ir.alt`` without hashing big sub-trees (IR nodes do not cache their hash)."""
    out: list = []
    seen: set = set()
    for it in items:
        parts = it.items if type(it) is ir.Alt else (it,)
        for p in parts:
            if type(p) is ir.Chars and not p.ranges:
                continue
            key = p if type(p) in (ir.Ref, ir.Lit) else id(p)
            if key not in seen:
                seen.add(key)
                out.append(p)
    if not out:
        return EMPTY
    if len(out) == 1:
        return out[0]
    return ir.Alt(tuple(out))


def _refs(node: ir.Node, visited: set) -> set:
    """Rule names referenced anywhere under ``node`` (shared sub-trees visited once)."""
    found = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in visited:
            continue
        visited.add(id(n))
        t = type(n)
        if t is ir.Ref:
            found.add(n.name)
        elif t is ir.Seq or t is ir.Alt:
            stack.extend(n.items)
        elif t is ir.Repeat:
            stack.append(n.item)
        # And/Diff are regular (no references inside), Lit/Chars are leaves
    return found

__all__ = ["schema_to_grammar", "check_schema", "IGNORED_KEYWORDS", "UNSUPPORTED_KEYWORDS"]

# ----------------------------------------------------------------------------- vocabulary

_DIALECTS = {
    "json-schema.org/draft-04/schema": 4,
    "json-schema.org/draft-06/schema": 6,
    "json-schema.org/draft-07/schema": 7,
    "json-schema.org/draft/2019-09/schema": 2019,
    "json-schema.org/draft/2020-12/schema": 2020,
}

#: Keywords that never constrain an instance (annotations, metadata, identifiers); ignored.
IGNORED_KEYWORDS = frozenset({
    "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "$comment",
    "$defs", "definitions", "title", "description", "default", "examples", "readOnly", "writeOnly",
    "deprecated", "contentMediaType", "contentEncoding", "contentSchema", "discriminator", "nullable",
})

#: Keywords dotjson recognises but compiles only in restricted forms (otherwise UnsupportedSchemaError).
UNSUPPORTED_KEYWORDS = frozenset({
    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef", "uniqueItems",
})

_U = frozenset({"null", "boolean", "integer", "nonint", "string", "array", "object"})
_NUM = frozenset({"integer", "nonint"})
_TYPE_NAMES = {
    "null": frozenset({"null"}), "boolean": frozenset({"boolean"}), "integer": frozenset({"integer"}),
    "number": _NUM, "string": frozenset({"string"}), "array": frozenset({"array"}),
    "object": frozenset({"object"}),
}
_ATOM_TYPES = {
    "num": _NUM, "mult": _NUM, "notmult": _NUM,
    "str": frozenset({"string"}), "len": frozenset({"string"}),
    "props": frozenset({"object"}), "required": frozenset({"object"}), "addl": frozenset({"object"}),
    "pattern": frozenset({"object"}), "pnames": frozenset({"object"}), "nprops": frozenset({"object"}),
    "pos": frozenset({"array"}), "items": frozenset({"array"}), "nitems": frozenset({"array"}),
    "contains": frozenset({"array"}), "unique": frozenset({"array"}),
}

TRUE = ("true",)
FALSE = ("false",)

MAX_BRANCHES = 256          # DNF branches of one sub-schema
MAX_DFA_STATES = 4000       # number automaton
MAX_OBJECT_STATES = 50000   # object automaton states (properties × counter)
MAX_PATTERN_CLASSES = 16    # key classes from patternProperties (2 ** patterns)
_RECURSION_LIMIT = 6000    # nested sub-schemas are translated recursively
MAX_FLOATING = 4           # required names outside `properties`, placed in any order
MAX_UNIQUE_VALUES = 8       # uniqueItems over a finite item domain
_DEFAULT_BASE = "https://dotjson.invalid/schema.json"

_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SUBSCHEMA_ONE = ("additionalProperties", "additionalItems", "items", "contains", "not", "if", "then", "else",
                  "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contentSchema")


def _esc(token) -> str:
    token = str(token)
    if "~" not in token and "/" not in token:
        return token
    return token.replace("~", "~0").replace("/", "~1")


def _unesc(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


# ----------------------------------------------------------------------------- JSON values


def _dec(v) -> Decimal:
    if isinstance(v, Decimal):
        return v
    if isinstance(v, int):
        return Decimal(v)
    return Decimal(repr(v))


def _canon(v):
    """A hashable key with JSON Schema equality (1 == 1.0, true != 1, key order irrelevant)."""
    if v is None:
        return ("n",)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float, Decimal)):
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise SchemaError(f"non-finite number {v!r} in a schema")
        return ("x", _dec(v))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("a", tuple(_canon(x) for x in v))
    if isinstance(v, dict):
        return ("o", tuple(sorted((k, _canon(x)) for k, x in v.items())))
    raise SchemaError(f"not a JSON value: {type(v).__name__}")


def _type_of(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "nonint"
    if isinstance(v, Decimal):
        return "integer" if v == v.to_integral_value() else "nonint"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


# ----------------------------------------------------------------------------- IR matcher
# Membership of a (short) decoded string in a ref-free IR language: used to filter enum values
# against patterns/formats and to decide which patternProperties a declared name matches.


def _ir_match(node: ir.Node, s: str) -> bool:
    memo: dict = {}

    def ends(n, i):
        key = (id(n), i)
        hit = memo.get(key)
        if hit is not None:
            return hit
        if isinstance(n, ir.Lit):
            out = frozenset({i + len(n.text)}) if s.startswith(n.text, i) else frozenset()
        elif isinstance(n, ir.Chars):
            out = frozenset()
            if i < len(s):
                cp = ord(s[i])
                if any(lo <= cp <= hi for lo, hi in n.ranges):
                    out = frozenset({i + 1})
        elif isinstance(n, ir.Seq):
            cur = {i}
            for it in n.items:
                nxt = set()
                for p in cur:
                    nxt |= ends(it, p)
                cur = nxt
                if not cur:
                    break
            out = frozenset(cur)
        elif isinstance(n, ir.Alt):
            acc = set()
            for it in n.items:
                acc |= ends(it, i)
            out = frozenset(acc)
        elif isinstance(n, ir.Repeat):
            cur = frozenset({i})
            res = set()
            k = 0
            while True:
                if k >= n.min:
                    before = len(res)
                    res |= cur
                    if k > n.min and len(res) == before:
                        break
                if n.max is not None and k >= n.max:
                    break
                nxt = set()
                for p in cur:
                    nxt |= ends(n.item, p)
                nxt = frozenset(nxt)
                if not nxt:
                    break
                if k < n.min and nxt == cur:
                    k = n.min  # a fixed point: further repetitions change nothing
                    continue
                cur = nxt
                k += 1
            out = frozenset(res)
        elif isinstance(n, ir.And):
            acc = None
            for it in n.items:
                e = ends(it, i)
                acc = set(e) if acc is None else acc & e
            out = frozenset(acc or ())
        elif isinstance(n, ir.Diff):
            out = ends(n.left, i) - ends(n.right, i)
        else:
            raise GrammarError("cannot match a rule reference")
        memo[key] = out
        return out

    return len(s) in ends(node, 0)


# ----------------------------------------------------------------------------- numbers
# A DFA over the characters of a JSON number, product of a syntax automaton and "trackers"
# (comparison with a constant, integrality, remainder modulo a multipleOf).

_NUM_ALPHABET = "-+.eE0123456789"
_SYNTAX = {
    "S": {"-": "M", "0": "Z", **{d: "I" for d in "123456789"}},
    "M": {"0": "Z", **{d: "I" for d in "123456789"}},
    "Z": {".": "D", "e": "X", "E": "X"},
    "I": {".": "D", "e": "X", "E": "X", **{d: "I" for d in "0123456789"}},
    "D": {d: "F" for d in "0123456789"},
    "F": {"e": "X", "E": "X", **{d: "F" for d in "0123456789"}},
    "X": {"+": "Y", "-": "Y", **{d: "P" for d in "0123456789"}},
    "Y": {d: "P" for d in "0123456789"},
    "P": {d: "P" for d in "0123456789"},
}
_SYNTAX_ACCEPT = frozenset("ZIFP")
_EXP_PHASES = frozenset("XYP")


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


class _CmpTracker:
    """Compares the number read with the constant ``c``; accepts per ``op``."""

    def __init__(self, c: Decimal, op: str):
        self.c, self.op = c, op
        mag = abs(c)
        t = format(mag, "f")
        ip, _, fp = t.partition(".")
        ip = ip.lstrip("0")
        fp = fp.rstrip("0")
        self.CI, self.CF = ip, fp
        self.csign = _cmp(c, 0)
        self.init = (False, True, "i", 0, 0, 0)

    def step(self, ts, ph, ch, ph2):
        neg, zero, stage, a, j, st = ts
        if ch == "-" and ph2 in ("M",):
            return (True, zero, stage, a, j, st)
        if ph2 in _EXP_PHASES:
            return ts
        if ph2 == "Z":
            return ts
        if ph2 == "I":
            L = len(self.CI)
            n = a
            if n < L and st == 0:
                st = _cmp(ch, self.CI[n])
            n = min(n + 1, L + 1)
            if n > L:
                st = 0
            return (neg, False, "i", n, 0, st)
        if ch == ".":
            return (neg, zero, "f", self._final_int(a, st), 0, 0)
        if ph2 == "F":
            icmp = a
            if icmp != 0:
                return (neg, zero and ch == "0", "f", icmp, 0, 0)
            if st == 0:
                cd = self.CF[j] if j < len(self.CF) else "0"
                st = _cmp(ch, cd)
            j = min(j + 1, len(self.CF))
            if st != 0:
                j = 0
            return (neg, zero and ch == "0", "f", 0, j, st)
        return ts

    def _final_int(self, n, st):
        L = len(self.CI)
        if n < L:
            return -1
        if n > L:
            return 1
        return st

    def accept(self, ts) -> bool:
        neg, zero, stage, a, j, st = ts
        if stage == "i":
            mag = self._final_int(a, st)
            if mag == 0 and self.CF:
                mag = -1  # equal integer parts, no fraction digits: below c
        elif a != 0:
            mag = a
        elif st != 0:
            mag = st
        else:
            mag = -1 if j < len(self.CF) else 0
        if zero:
            r = -self.csign
        elif not neg:
            r = 1 if self.csign <= 0 else mag
        else:
            r = -1 if self.csign >= 0 else -mag
        op = self.op
        if op == "ge":
            return r >= 0
        if op == "gt":
            return r > 0
        if op == "le":
            return r <= 0
        if op == "lt":
            return r < 0
        if op == "eq":
            return r == 0
        return r != 0


class _IntTracker:
    """Integral values only (fraction digits all zero); ``negate``: some nonzero fraction digit.

    ``syntactic`` (draft 4, where an integer is a number written without fraction or exponent):
    no ``.`` at all; ``negate``: a ``.`` or an exponent.
    """

    def __init__(self, negate: bool, syntactic: bool = False):
        self.negate = negate
        self.syntactic = syntactic
        self.init = False

    def step(self, ts, ph, ch, ph2):
        if self.syntactic:
            if ph2 == "D" or ph2 in _EXP_PHASES:
                return True if self.negate else None
            return ts
        if ph2 in _EXP_PHASES:
            return None
        if ph2 == "F" and ch != "0":
            return None if not self.negate else True
        return ts

    def accept(self, ts) -> bool:
        return ts if self.negate else True


class _ModTracker:
    """Multiple of ``a · 10^-s`` (``negate``: not a multiple)."""

    def __init__(self, a: int, s: int, negate: bool):
        self.a, self.s, self.negate = a, s, negate
        self.init = (0, 0, False)

    def step(self, ts, ph, ch, ph2):
        r, j, dead = ts
        if ph2 in _EXP_PHASES:
            return None
        if dead or not ch.isdigit():
            return ts
        d = ord(ch) - 48
        if ph2 in ("Z", "I"):
            return ((r * 10 + d) % self.a, 0, False)
        if j < self.s:
            return ((r * 10 + d) % self.a, j + 1, False)
        if d != 0:
            return None if not self.negate else (0, 0, True)
        return ts

    def accept(self, ts) -> bool:
        r, j, dead = ts
        ok = (r * pow(10, self.s - j, self.a)) % self.a == 0
        if self.negate:
            return dead or not ok
        return ok


def _number_dfa(trackers, allow_exp: bool):
    init = ("S", tuple(t.init for t in trackers))
    index = {init: 0}
    states = [init]
    trans: list[dict[str, int]] = []
    k = 0
    while k < len(states):
        ph, tss = states[k]
        row: dict[str, int] = {}
        for ch, ph2 in _SYNTAX[ph].items():
            if ph2 in _EXP_PHASES and not allow_exp:
                continue
            new = []
            for t, ts in zip(trackers, tss):
                ns = t.step(ts, ph, ch, ph2)
                if ns is None:
                    break
                new.append(ns)
            else:
                key = (ph2, tuple(new))
                idx = index.get(key)
                if idx is None:
                    idx = index[key] = len(states)
                    states.append(key)
                    if len(states) > MAX_DFA_STATES:
                        return None
                row[ch] = idx
        trans.append(row)
        k += 1
    accept = [ph in _SYNTAX_ACCEPT and all(t.accept(ts) for t, ts in zip(trackers, tss)) for ph, tss in states]
    return trans, accept


def _minimize(trans, accept):
    n = len(trans)
    # keep only states that can reach an accepting state
    rev: list[list[int]] = [[] for _ in range(n)]
    for s, row in enumerate(trans):
        for t in row.values():
            rev[t].append(s)
    live = set(i for i in range(n) if accept[i])
    stack = list(live)
    while stack:
        t = stack.pop()
        for s in rev[t]:
            if s not in live:
                live.add(s)
                stack.append(s)
    if 0 not in live:
        return None
    trans = [{c: t for c, t in row.items() if t in live} for row in trans]
    block = [1 if accept[i] else 0 for i in range(n)]
    nblocks = len(set(block[i] for i in live))
    while True:
        sigs = {}
        newblock = [0] * n
        for i in sorted(live):
            sig = (block[i], tuple(sorted((c, block[t]) for c, t in trans[i].items())))
            newblock[i] = sigs.setdefault(sig, len(sigs))
        if len(sigs) == nblocks:
            block = newblock
            break
        nblocks = len(sigs)
        block = newblock
    # renumber so the start state is 0
    order = {block[0]: 0}
    for i in sorted(live):
        order.setdefault(block[i], len(order))
    m = len(order)
    mtrans: list[dict[str, int]] = [dict() for _ in range(m)]
    macc = [False] * m
    for i in live:
        b = order[block[i]]
        macc[b] = accept[i]
        for c, t in trans[i].items():
            mtrans[b][c] = order[block[t]]
    return mtrans, macc


def _chars_of(cs) -> ir.Node:
    return ir.chars(*((ord(c), ord(c)) for c in cs))


def _dfa_to_ir(trans, accept, rule_prefix: str, rules: dict) -> ir.Node:
    """A regular node when the DFA's only cycles are self-loops; right-linear rules otherwise."""
    n = len(trans)
    # cycle detection ignoring self-loops
    color = [0] * n
    cyclic = False
    stack = [(0, iter(trans[0].values()))]
    color[0] = 1
    while stack and not cyclic:
        s, it = stack[-1]
        for t in it:
            if t == s:
                continue
            if color[t] == 1:
                cyclic = True
                break
            if color[t] == 0:
                color[t] = 1
                stack.append((t, iter(trans[t].values())))
                break
        else:
            color[s] = 2
            stack.pop()

    def grouped(s):
        by: dict[int, list[str]] = {}
        for c, t in trans[s].items():
            by.setdefault(t, []).append(c)
        return sorted(by.items())

    if not cyclic:
        memo: dict[int, ir.Node] = {}

        def expr(s):
            hit = memo.get(s)
            if hit is not None:
                return hit
            loop = None
            outs = []
            for t, cs in grouped(s):
                if t == s:
                    loop = _chars_of(cs)
                else:
                    outs.append(seq(_chars_of(cs), expr(t)))
            body = alt(*(([EPS] if accept[s] else []) + outs))
            if loop is not None:
                body = seq(repeat(loop, 0, None), body)
            memo[s] = body
            return body

        return expr(0)
    names = [f"{rule_prefix}_{i}" for i in range(n)]
    for s in range(n):
        outs = [seq(_chars_of(cs), Ref(names[t])) for t, cs in grouped(s)]
        rules[names[s]] = alt(*(([EPS] if accept[s] else []) + outs))
    return Ref(names[0])


# ----------------------------------------------------------------------------- the translator


class _Doc:
    __slots__ = ("uri", "root", "draft", "label")

    def __init__(self, uri, root, draft, label):
        self.uri, self.root, self.draft, self.label = uri, root, draft, label


def _draft_of(schema, default=2020) -> int:
    if isinstance(schema, dict):
        s = schema.get("$schema")
        if isinstance(s, str):
            key = s.split("://", 1)[-1].rstrip("#")
            return _DIALECTS.get(key, default)
    return default


class _Translator:
    def __init__(self, schema, *, disallow_whitespace, close_objects, lenient, resources, property_order="schema"):
        from dotjson import grammar as _grammar
        from dotjson import jsonstr as _jsonstr

        self.jsonstr = _jsonstr
        self.close_objects = close_objects
        self.property_order = property_order
        self.families: list = []         # lazy rule families (property_order="any" objects)
        self.lenient = lenient
        self.strict = 0
        self.base = _grammar.json_base(disallow_whitespace)
        self.ws = EPS if disallow_whitespace else Ref("ws")
        self.sep = seq(self.ws, lit(","), self.ws)
        self.colon = seq(self.ws, lit(":"), self.ws)
        self.rules: dict[str, ir.Node] = {}
        self.rule_of: dict = {}          # expr -> rule name (or node, for inlined ones)
        self.in_progress: dict = {}      # expr -> [rule name, referenced-recursively flag]
        self.names_used: set[str] = set(self.base) | {"start"}
        self.dnf_cache: dict = {}
        self.inlining: set = set()
        self.docs: dict[str, _Doc] = {}
        self.resources: dict[str, tuple[str, str]] = {}   # uri -> (doc key, pointer)
        self.anchors: dict[tuple[str, str], tuple[str, str]] = {}
        self.dyn_anchor_count: dict[str, int] = {}
        self.recursive_anchor = False
        self.base_of: dict[tuple[str, str], str] = {}
        self.pending_resources = dict(resources or {})
        self.regex_cache: dict[str, ir.Node] = {}
        self.enc_cache: dict = {}
        self.literal_cache: dict = {}
        self.number_cache: dict = {}
        self.string_cache: dict = {}
        self.formats: dict = {}
        self.empty_cache: dict = {}
        self.keep: list = []
        self.counter = 0
        root_draft = _draft_of(schema)
        self.root_draft = root_draft
        # draft 4: `integer` is a number written without fraction or exponent (1.0 is not one)
        self.syntactic_int = root_draft == 4
        base = _DEFAULT_BASE
        self._add_doc("", schema, base, root_draft, label="")

    # ------------------------------------------------------------------ errors
    def unsupported(self, msg, ptr, kw):
        err = UnsupportedSchemaError(msg, pointer=ptr, keyword=kw)
        if self.lenient and self.strict == 0:
            warnings.warn(f"dotjson: ignoring {kw!r} ({err}); the grammar over-approximates", stacklevel=4)
            return None
        raise err

    def where(self, doc, ptr):
        label = self.docs[doc].label
        return f"{label}#{ptr}" if label else ptr

    # ------------------------------------------------------------------ documents and references
    def _add_doc(self, key, schema, base, draft, label):
        self.docs[key] = _Doc(base, schema, draft, label)
        self._index(key, schema, "", base, draft)
        uri = urldefrag(base)[0]
        self.resources.setdefault(uri, (key, ""))

    def _index(self, doc, s, ptr, base, draft):
        stack = [(s, ptr, base)]
        while stack:
            s, ptr, base = stack.pop()
            if not isinstance(s, dict):
                continue
            idk = "id" if draft == 4 else "$id"
            sid = s.get(idk)
            if isinstance(sid, str) and not ("$ref" in s and draft <= 7):
                if draft <= 7 and sid.startswith("#"):
                    self.anchors[(urldefrag(base)[0], sid[1:])] = (doc, ptr)
                else:
                    base = _join(base, sid)
                    uri, frag = urldefrag(base)
                    if frag and not frag.startswith("/"):
                        self.anchors[(uri, frag)] = (doc, ptr)
                    self.resources.setdefault(uri, (doc, ptr))
                    base = uri
            self.base_of[(doc, ptr)] = base
            anc = s.get("$anchor")
            if isinstance(anc, str):
                self.anchors[(urldefrag(base)[0], anc)] = (doc, ptr)
            dan = s.get("$dynamicAnchor")
            if isinstance(dan, str):
                self.anchors.setdefault((urldefrag(base)[0], dan), (doc, ptr))
                self.dyn_anchor_count[dan] = self.dyn_anchor_count.get(dan, 0) + 1
            if s.get("$recursiveAnchor") is True and ptr != "":
                self.recursive_anchor = True
            for kw in _SUBSCHEMA_MAPS:
                m = s.get(kw)
                if isinstance(m, dict):
                    for k, v in m.items():
                        if isinstance(v, (dict, bool)):
                            stack.append((v, f"{ptr}/{kw}/{_esc(k)}", base))
            for kw in _SUBSCHEMA_LISTS:
                m = s.get(kw)
                if isinstance(m, list):
                    for i, v in enumerate(m):
                        stack.append((v, f"{ptr}/{kw}/{i}", base))
            for kw in _SUBSCHEMA_ONE:
                m = s.get(kw)
                if isinstance(m, dict):
                    stack.append((m, f"{ptr}/{kw}", base))

    def get(self, doc, ptr):
        node = self.docs[doc].root
        if ptr == "":
            return node
        for tok in ptr.split("/")[1:]:
            tok = _unesc(tok)
            if isinstance(node, dict) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
            else:
                return _MISSING
        return node

    def base_uri(self, doc, ptr):
        p = ptr
        while True:
            b = self.base_of.get((doc, p))
            if b is not None:
                return b
            if p == "":
                return self.docs[doc].uri
            p = p.rsplit("/", 1)[0]

    def resolve(self, doc, ptr, ref, kw="$ref"):
        if not isinstance(ref, str):
            raise SchemaError(f"{kw} must be a string", self.where(doc, ptr), kw)
        full = _join(self.base_uri(doc, ptr), ref)
        uri, frag = urldefrag(full)
        if uri not in self.resources:
            found = None
            for cand in (uri, uri.rstrip("#")):
                if cand in self.pending_resources:
                    found = cand
                    break
            if found is None:
                return self.unsupported(f"cannot resolve {kw} {ref!r} (no such resource; remote schemas are "
                                        "not fetched: pass them in `resources`)", self.where(doc, ptr), kw) or TRUE
            sch = self.pending_resources.pop(found)
            key = found
            self._add_doc(key, sch, found, _draft_of(sch, self.root_draft), label=found)
            self.resources[uri] = (key, "")
        rdoc, rptr = self.resources[uri]
        frag = unquote(frag)
        if frag == "":
            target = (rdoc, rptr)
        elif frag.startswith("/"):
            target = (rdoc, rptr + frag)
        else:
            hit = self.anchors.get((uri, frag))
            if hit is None:
                raise SchemaError(f"{kw} {ref!r}: no anchor {frag!r}", self.where(doc, ptr), kw)
            target = hit
        if self.get(*target) is _MISSING:
            raise SchemaError(f"{kw} {ref!r} points to nothing", self.where(doc, ptr), kw)
        return ("loc",) + target

    # ------------------------------------------------------------------ expressions
    @staticmethod
    def not_expr(e):
        if e == TRUE:
            return FALSE
        if e == FALSE:
            return TRUE
        if e[0] == "not":
            return e[1]
        return ("not", e)

    @staticmethod
    def and_expr(exprs):
        out = []
        for e in exprs:
            if e == TRUE:
                continue
            if e == FALSE:
                return FALSE
            if e[0] == "and":
                out.extend(e[1])
            else:
                out.append(e)
        out = list(dict.fromkeys(out))
        if not out:
            return TRUE
        if len(out) == 1:
            return out[0]
        return ("and", tuple(out))

    def dnf(self, expr):
        if expr == TRUE:
            return [()]
        if expr == FALSE:
            return []
        hit = self.dnf_cache.get(expr)
        if hit is not None:
            return hit
        kind = expr[0]
        if kind == "loc":
            out = self._dnf_schema(expr[1], expr[2])
        elif kind == "and":
            out = [()]
            for e in expr[1]:
                out = self.and2(out, self.dnf(e), self.expr_where(e))
        elif kind == "not":
            out = self.negate(self.dnf_strict(expr[1]), self.expr_where(expr[1]))
        else:  # pragma: no cover
            raise AssertionError(expr)
        self.dnf_cache[expr] = out
        return out

    def dnf_strict(self, expr):
        self.strict += 1
        try:
            if self.lenient:
                # a lenient DNF may have dropped keywords: recompute without the cache
                saved = self.dnf_cache
                self.dnf_cache = {}
                try:
                    return self.dnf(expr)
                finally:
                    self.dnf_cache = saved
            return self.dnf(expr)
        finally:
            self.strict -= 1

    def expr_where(self, e):
        while e[0] in ("not", "and"):
            e = e[1] if e[0] == "not" else e[1][0]
        if e[0] == "loc":
            return self.where(e[1], e[2])
        return ""

    def and2(self, A, B, where):
        out = []
        for a in A:
            for b in B:
                c = a + b if b else a
                if not _types_of(c):
                    continue
                out.append(tuple(dict.fromkeys(c)))
                if len(out) > MAX_BRANCHES:
                    raise UnsupportedSchemaError("too many alternatives after combining allOf/anyOf/oneOf "
                                                 f"(more than {MAX_BRANCHES})", pointer=where, keyword="allOf")
        res = []
        for c in out:
            if len(c) > 1 and any(a[0] == "ruleref" for a in c):
                res.extend(self.expand_refs(c, where))
            else:
                res.append(c)
            if len(res) > MAX_BRANCHES:
                raise UnsupportedSchemaError("too many alternatives after combining allOf/anyOf/oneOf "
                                             f"(more than {MAX_BRANCHES})", pointer=where, keyword="allOf")
        return res

    def inline(self, target, where):
        if target in self.inlining:
            raise UnsupportedSchemaError("a $ref cycle through allOf/not/if cannot be intersected "
                                         "(recursive schema combined with sibling keywords)",
                                         pointer=where, keyword="$ref")
        self.inlining.add(target)
        try:
            d = self.dnf(target)
            res = []
            for br in d:
                if len(br) == 1 and br[0][0] == "ruleref":
                    res.extend(self.inline(br[0][1], where))
                else:
                    res.append(br)
            return res
        finally:
            self.inlining.discard(target)

    def expand_refs(self, c, where):
        # keep the atoms' order: it is the order of the properties in the grammar
        out = [()]
        for a in c:
            if a[0] == "ruleref":
                out = self.and2(out, self.inline(a[1], where), where)
            else:
                out = [b + (a,) for b in out]
        return out

    # ------------------------------------------------------------------ negation
    def negate(self, D, where):
        out = [()]
        for br in D:
            nb = []
            for a in br:
                nb.extend(self.neg_atom(a, where))
            out = self.and2(out, nb, where)
            if not out:
                break
        return out

    def neg_atom(self, a, where):
        k = a[0]
        if k == "types":
            return [(("types", _U - a[1]),)]
        if k == "enum":
            return [(("notenum", a[1]),)]
        if k == "notenum":
            return [(("enum", a[1]),)]
        if k == "ruleref":
            return self.negate(self.inline(a[1], where), where)
        T = _ATOM_TYPES[k]
        # a typed atom holds for every value of another type: its negation is typed
        t = ("types", T)
        if k == "num":
            _, lo, lox, hi, hix = a
            res = []
            if lo is not None:
                res.append((t, ("num", None, False, lo, not lox)))
            if hi is not None:
                res.append((t, ("num", hi, not hix, None, False)))
            return res
        if k == "mult":
            return [(t, ("notmult", a[1]))]
        if k == "notmult":
            return [(t, ("mult", a[1]))]
        if k == "str":
            return [(t, ("str", a[1], not a[2]))]
        if k in ("len", "nprops", "nitems"):
            _, lo, hi = a
            res = []
            if lo > 0:
                res.append((t, (k, 0, lo - 1)))
            if hi is not None:
                res.append((t, (k, hi + 1, None)))
            return res
        if k == "required":
            return [(t, ("props", a[1], FALSE))]
        if k == "props":
            return [(t, ("required", a[1]), ("props", a[1], self.not_expr(a[2])))]
        if k == "pos":
            return [(t, ("nitems", a[1] + 1, None), ("pos", a[1], self.not_expr(a[2])))]
        if k == "items" and a[1] == 0:
            return [(t, ("contains", self.not_expr(a[2]), 1, None))]
        if k == "contains":
            _, e, lo, hi = a
            res = []
            if lo > 0:
                res.append((t, ("contains", e, 0, lo - 1)))
            if hi is not None:
                res.append((t, ("contains", e, hi + 1, None)))
            return res
        kwname = {"items": "items", "addl": "additionalProperties", "pattern": "patternProperties",
                  "pnames": "propertyNames", "unique": "uniqueItems"}.get(k, k)
        raise UnsupportedSchemaError(f"cannot negate {kwname!r} exactly (under not/oneOf/if)",
                                     pointer=where, keyword=kwname)

    # ------------------------------------------------------------------ keywords → DNF
    def _dnf_schema(self, doc, ptr):
        s = self.get(doc, ptr)
        where = self.where(doc, ptr)
        if s is True:
            return [()]
        if s is False:
            return []
        if not isinstance(s, dict):
            raise SchemaError(f"a schema must be an object or a boolean, got {type(s).__name__}", where)
        draft = self.docs[doc].draft
        atoms: list = []
        parts: list = []
        P = f"{ptr}/"

        def sub(kw, *more):
            p = P + _esc(kw) + "".join("/" + _esc(str(m)) for m in more)
            v = self.get(doc, p)
            if not isinstance(v, (dict, bool)):
                raise SchemaError(f"{kw} must hold a schema (an object or a boolean)", self.where(doc, p), kw)
            if v is True:
                return TRUE
            if v is False:
                return FALSE
            return ("loc", doc, p)

        if "$ref" in s and draft <= 7:
            return [(("ruleref", self.resolve(doc, ptr, s["$ref"])),)]

        for kw, val in s.items():
            try:
                self._keyword(kw, val, s, doc, ptr, draft, atoms, parts, sub)
            except UnsupportedSchemaError as e:
                if self.lenient and self.strict == 0:
                    warnings.warn(f"dotjson: ignoring {kw!r} at {where or '/'} ({e}); the grammar "
                                  "over-approximates", stacklevel=3)
                    continue
                if e.pointer is None:
                    raise UnsupportedSchemaError(str(e), pointer=f"{P}{_esc(kw)}", keyword=kw) from None
                raise
            except SchemaError as e:
                if e.pointer is None:
                    raise SchemaError(str(e), pointer=f"{P}{_esc(kw)}", keyword=kw) from None
                raise
        out = [tuple(atoms)]
        if atoms and not _types_of(out[0]):
            return []
        for d in parts:
            out = self.and2(out, d, where)
            if not out:
                break
        return out

    def _keyword(self, kw, val, s, doc, ptr, draft, atoms, parts, sub):
        where = self.where(doc, ptr)
        kwhere = f"{where}/{_esc(kw)}"
        if kw in IGNORED_KEYWORDS:
            return
        if kw == "$ref":
            target = self.resolve(doc, ptr, val)
            atoms.append(("ruleref", target))
        elif kw == "$dynamicRef" and draft >= 2020:
            target = self.resolve(doc, ptr, val, kw)
            if target != TRUE:
                frag = urldefrag(val)[1]
                tgt = self.get(target[1], target[2])
                name = tgt.get("$dynamicAnchor") if isinstance(tgt, dict) else None
                if name == frag and self.dyn_anchor_count.get(name, 0) > 1:
                    self.unsupported("$dynamicRef with several candidate $dynamicAnchors is not supported",
                                     kwhere, kw)
                    return
                atoms.append(("ruleref", target))
        elif kw == "$recursiveRef" and draft == 2019:
            if self.recursive_anchor:
                self.unsupported("$recursiveRef with nested $recursiveAnchor is not supported", kwhere, kw)
                return
            atoms.append(("ruleref", self.resolve(doc, ptr, val, kw)))
        elif kw == "type":
            names = val if isinstance(val, list) else [val]
            ts = frozenset()
            for t in names:
                if not isinstance(t, str) or t not in _TYPE_NAMES:
                    raise SchemaError(f"unknown type {t!r}", kwhere, kw)
                ts |= _TYPE_NAMES[t]
            atoms.append(("types", ts))
        elif kw == "enum":
            if not isinstance(val, list):
                raise SchemaError("enum must be an array", kwhere, kw)
            atoms.append(("enum", self.values(val)))
        elif kw == "const" and draft >= 6:
            atoms.append(("enum", self.values([val])))
        elif kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if kw.startswith("exclusive") and draft == 4:
                if not isinstance(val, bool):
                    raise SchemaError(f"{kw} must be a boolean in draft 4", kwhere, kw)
                return  # read together with minimum/maximum
            c = _number(val, kwhere, kw)
            if kw == "minimum":
                atoms.append(("num", c, draft == 4 and s.get("exclusiveMinimum") is True, None, False))
            elif kw == "maximum":
                atoms.append(("num", None, False, c, draft == 4 and s.get("exclusiveMaximum") is True))
            elif kw == "exclusiveMinimum":
                atoms.append(("num", c, True, None, False))
            else:
                atoms.append(("num", None, False, c, True))
        elif kw == "multipleOf":
            c = _number(val, kwhere, kw)
            if c <= 0:
                raise SchemaError("multipleOf must be greater than 0", kwhere, kw)
            atoms.append(("mult", c))
        elif kw in ("minLength", "maxLength"):
            n = _count(val, kwhere, kw)
            atoms.append(("len", n, None) if kw == "minLength" else ("len", 0, n))
        elif kw == "pattern":
            self.regex(val, kwhere, kw)
            atoms.append(("str", ("pattern", val), True))
        elif kw == "format":
            if not isinstance(val, str):
                raise SchemaError("format must be a string", kwhere, kw)
            if self.format_node(val) is not None:
                atoms.append(("str", ("format", val), True))
            elif val in _UNSUPPORTED_FORMATS:
                self.unsupported(f"format {val!r} has no exact string language in dotjson.formats "
                                 "(lenient=True ignores it)", kwhere, kw)
        elif kw == "properties":
            if not isinstance(val, dict):
                raise SchemaError("properties must be an object", kwhere, kw)
            for name in val:
                atoms.append(("props", name, sub(kw, name)))
        elif kw == "required":
            if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
                raise SchemaError("required must be an array of strings", kwhere, kw)
            for name in val:
                atoms.append(("required", name))
        elif kw == "additionalProperties":
            atoms.append(self.addl_atom(s, sub(kw), kwhere))
        elif kw == "unevaluatedProperties":
            e = sub(kw)
            if e == TRUE or "additionalProperties" in s:
                return
            if any(k in s for k in _APPLICATORS):
                self.unsupported("unevaluatedProperties next to applicators (allOf/anyOf/oneOf/not/if/$ref/"
                                 "dependentSchemas) is not supported", kwhere, kw)
                return
            atoms.append(self.addl_atom(s, e, kwhere))
        elif kw == "patternProperties":
            if not isinstance(val, dict):
                raise SchemaError("patternProperties must be an object", kwhere, kw)
            for p in val:
                self.regex(p, f"{kwhere}/{_esc(p)}", kw)
                atoms.append(("pattern", p, sub(kw, p)))
        elif kw == "propertyNames" and draft >= 6:
            atoms.append(("pnames", sub(kw)))
        elif kw in ("minProperties", "maxProperties"):
            n = _count(val, kwhere, kw)
            atoms.append(("nprops", n, None) if kw == "minProperties" else ("nprops", 0, n))
        elif kw == "dependentRequired" and draft >= 2019 or kw == "dependencies":
            if not isinstance(val, dict):
                raise SchemaError(f"{kw} must be an object", kwhere, kw)
            for name, dep in val.items():
                absent = [(("types", frozenset({"object"})), ("props", name, FALSE)), (("types", _U - {"object"}),)]
                if isinstance(dep, list):
                    if not all(isinstance(x, str) for x in dep):
                        raise SchemaError(f"{kw} entries must be arrays of strings", f"{kwhere}/{_esc(name)}", kw)
                    present = [(("required", name),) + tuple(("required", d) for d in dep)]
                    parts.append(absent + present)
                elif kw == "dependencies" and isinstance(dep, (dict, bool)):
                    d = self.and2([(("required", name),)], self.dnf(sub(kw, name)), kwhere)
                    parts.append(absent + d)
                else:
                    raise SchemaError(f"{kw} entries must be arrays of strings", f"{kwhere}/{_esc(name)}", kw)
        elif kw == "dependentSchemas" and draft >= 2019:
            if not isinstance(val, dict):
                raise SchemaError(f"{kw} must be an object", kwhere, kw)
            for name in val:
                absent = [(("types", frozenset({"object"})), ("props", name, FALSE)), (("types", _U - {"object"}),)]
                d = self.and2([(("required", name),)], self.dnf(sub(kw, name)), kwhere)
                parts.append(absent + d)
        elif kw == "prefixItems" and draft >= 2020:
            if not isinstance(val, list):
                raise SchemaError("prefixItems must be an array", kwhere, kw)
            for i in range(len(val)):
                atoms.append(("pos", i, sub(kw, i)))
        elif kw == "items":
            if isinstance(val, list) and draft <= 2019:
                for i in range(len(val)):
                    atoms.append(("pos", i, sub(kw, i)))
            elif isinstance(val, (dict, bool)):
                start = len(s.get("prefixItems", ())) if draft >= 2020 and isinstance(s.get("prefixItems"), list) else 0
                atoms.append(("items", start, sub(kw)))
            else:
                raise SchemaError("items must be a schema" + (" or an array of schemas" if draft <= 2019 else ""),
                                  kwhere, kw)
        elif kw == "additionalItems" and draft <= 2019:
            if isinstance(s.get("items"), list):
                atoms.append(("items", len(s["items"]), sub(kw)))
        elif kw == "unevaluatedItems":
            e = sub(kw)
            if e == TRUE:
                return
            if any(k in s for k in _APPLICATORS) or "contains" in s:
                self.unsupported("unevaluatedItems next to applicators or contains is not supported", kwhere, kw)
                return
            items = s.get("items")
            if draft >= 2020:
                if "items" in s:
                    return
                pre = s.get("prefixItems")
                atoms.append(("items", len(pre) if isinstance(pre, list) else 0, e))
            else:
                if isinstance(items, list):
                    if "additionalItems" in s:
                        return
                    atoms.append(("items", len(items), e))
                elif items is None:
                    atoms.append(("items", 0, e))
        elif kw in ("minItems", "maxItems"):
            n = _count(val, kwhere, kw)
            atoms.append(("nitems", n, None) if kw == "minItems" else ("nitems", 0, n))
        elif kw == "contains" and draft >= 6:
            lo, hi = 1, None
            if draft >= 2019:
                if "minContains" in s:
                    lo = _count(s["minContains"], f"{where}/minContains", "minContains")
                if "maxContains" in s:
                    hi = _count(s["maxContains"], f"{where}/maxContains", "maxContains")
            atoms.append(("contains", sub(kw), lo, hi))
        elif kw == "uniqueItems":
            if not isinstance(val, bool):
                raise SchemaError("uniqueItems must be a boolean", kwhere, kw)
            if val:
                atoms.append(("unique", kwhere))
        elif kw == "allOf":
            for i in range(_nonempty_list(val, kwhere, kw)):
                parts.append(self.dnf(sub(kw, i)))
        elif kw == "anyOf":
            u = []
            for i in range(_nonempty_list(val, kwhere, kw)):
                u.extend(self.dnf(sub(kw, i)))
            parts.append(u)
        elif kw == "oneOf":
            n = _nonempty_list(val, kwhere, kw)
            parts.append(self.one_of([sub(kw, i) for i in range(n)], kwhere))
        elif kw == "not":
            parts.append(self.negate(self.dnf_strict(sub(kw)), kwhere))
        elif kw == "if" and draft >= 7:
            then = sub("then") if "then" in s else None
            els = sub("else") if "else" in s else None
            if then is None and els is None:
                return
            I = self.dnf(sub(kw)) if els is None or then is not None else None
            if then is None:
                # (if ∧ true) ∨ (¬if ∧ else)  ≡  if ∨ else
                parts.append(self.dnf(sub(kw)) + self.dnf(els))
                return
            NI = self.negate(self.dnf_strict(sub(kw)), kwhere)
            T = self.and2(I, self.dnf(then), kwhere)
            E = NI if els is None else self.and2(NI, self.dnf(els), kwhere)
            parts.append(T + E)
        # everything else: not a keyword of this dialect (or an annotation): no constraint

    def addl_atom(self, s, e, where):
        props = s.get("properties", {})
        pats = s.get("patternProperties", {})
        if not isinstance(props, dict) or not isinstance(pats, dict):
            raise SchemaError("properties/patternProperties must be objects", where)
        for p in pats:
            self.regex(p, where, "patternProperties")
        return ("addl", e, frozenset(props), tuple(sorted(pats)))

    def format_node(self, name):
        key = ("format", name)
        if key not in self.formats:
            self.formats[key] = _format_node(name)
        return self.formats[key]

    def enc_pattern(self, p, where):
        self.regex(p, where, "patternProperties")
        return self.enc_handle(("pattern", p))

    def enc_handle(self, key):
        """Encoded (JSON spelling) language of a string-language handle, cached per process."""
        hit = _ENC_CACHE.get(key)
        if hit is None:
            if len(_ENC_CACHE) > 4096:
                _ENC_CACHE.clear()
            hit = _ENC_CACHE[key] = self.jsonstr.encode_string_language(self.str_node(key))
        return hit

    def str_node(self, key):
        """The decoded-string language of a ('pattern', p) or ('format', name) handle."""
        if key[0] == "pattern":
            return self.regex_cache[key[1]]
        return self.formats[key]

    def values(self, vals):
        out = []
        for v in vals:
            c = _canon(v)
            self.literal_cache.setdefault(("v", c), v)
            out.append(c)
        return tuple(dict.fromkeys(out))

    def regex(self, pattern, where, kw):
        hit = self.regex_cache.get(pattern)
        if hit is not None:
            return hit
        hit = _REGEX_CACHE.get(pattern) if isinstance(pattern, str) else None
        if hit is not None:
            self.regex_cache[pattern] = hit
            return hit
        if not isinstance(pattern, str):
            raise SchemaError(f"{kw} must be a string", where, kw)
        from dotjson.regex import regex_to_ir

        try:
            node = regex_to_ir(pattern, search=True)
        except UnsupportedSchemaError as e:
            raise UnsupportedSchemaError(f"pattern {pattern!r}: {e}", pointer=where, keyword=kw) from None
        except (SchemaError, GrammarError) as e:
            raise SchemaError(f"pattern {pattern!r}: {e}", pointer=where, keyword=kw) from None
        self.regex_cache[pattern] = node
        if len(_REGEX_CACHE) > 4096:
            _REGEX_CACHE.clear()
        _REGEX_CACHE[pattern] = node
        return node

    def one_of(self, exprs, where):
        Ds = [self.dnf(e) for e in exprs]
        disjoint = True
        for i in range(len(Ds)):
            for j in range(i + 1, len(Ds)):
                for a in Ds[i]:
                    for b in Ds[j]:
                        if not self.branch_empty(a + b):
                            disjoint = False
                            break
                    if not disjoint:
                        break
                if not disjoint:
                    break
            if not disjoint:
                break
        if disjoint:
            return [br for D in Ds for br in D]
        # exactly one: A_i ∧ ¬A_j for all j != i
        try:
            self.strict += 1
            negs = [self.negate(self.dnf_strict(e), where) for e in exprs]
            out = []
            for i, D in enumerate(Ds):
                cur = D
                for j in range(len(Ds)):
                    if j != i:
                        cur = self.and2(cur, negs[j], where)
                out.extend(cur)
            return out
        except UnsupportedSchemaError as e:
            raise UnsupportedSchemaError("oneOf branches that may overlap, and whose negation is not "
                                         f"expressible ({e})", pointer=where, keyword="oneOf") from None
        finally:
            self.strict -= 1

    # ------------------------------------------------------------------ merging a branch
    def merge(self, br):
        m = _Merged()
        types = _U
        for a in br:
            k = a[0]
            if k == "types":
                types = types & a[1]
            elif k == "enum":
                m.enum = set(a[1]) if m.enum is None else m.enum & set(a[1])
            elif k == "notenum":
                m.notenum.update(a[1])
            elif k == "num":
                _, lo, lox, hi, hix = a
                if lo is not None and (m.lo is None or lo > m.lo or (lo == m.lo and lox)):
                    m.lo, m.lox = lo, lox
                if hi is not None and (m.hi is None or hi < m.hi or (hi == m.hi and hix)):
                    m.hi, m.hix = hi, hix
            elif k == "mult":
                m.mults.append(a[1])
            elif k == "notmult":
                m.notmults.append(a[1])
            elif k == "str":
                (m.spos if a[2] else m.sneg).append(a[1])
            elif k == "len":
                m.slo = max(m.slo, a[1])
                if a[2] is not None:
                    m.shi = a[2] if m.shi is None else min(m.shi, a[2])
            elif k == "props":
                m.props.setdefault(a[1], []).append(a[2])
            elif k == "required":
                m.required.setdefault(a[1], None)
            elif k == "addl":
                m.addls.append(a[1:])
            elif k == "pattern":
                m.patterns.append((a[1], a[2]))
            elif k == "pnames":
                m.pnames.append(a[1])
            elif k == "nprops":
                m.plo = max(m.plo, a[1])
                if a[2] is not None:
                    m.phi = a[2] if m.phi is None else min(m.phi, a[2])
            elif k == "pos":
                m.pos.setdefault(a[1], []).append(a[2])
            elif k == "items":
                m.items.append((a[1], a[2]))
            elif k == "nitems":
                m.ilo = max(m.ilo, a[1])
                if a[2] is not None:
                    m.ihi = a[2] if m.ihi is None else min(m.ihi, a[2])
            elif k == "contains":
                m.contains.append(a[1:])
            elif k == "unique":
                m.unique = a[1]
            elif k == "ruleref":
                m.rulerefs.append(a[1])
        m.types = types
        return m

    def branch_empty(self, br) -> bool:
        """True when the conjunction provably accepts no value (used for oneOf disjointness)."""
        if not _types_of(br):
            return True
        if any(a[0] == "ruleref" for a in br):
            try:
                return all(self.branch_empty(b) for b in self.expand_refs(br, ""))
            except UnsupportedSchemaError:
                return False
        m = self.merge(br)
        if m.enum is not None:
            return not any(self.satisfies(self.literal_cache[("v", c)], br) for c in m.enum)
        for t in m.types:
            if not self.type_empty(m, t):
                return False
        return True

    def type_empty(self, m, t) -> bool:
        if t == "null":
            return ("n",) in m.notenum
        if t == "boolean":
            return ("b", True) in m.notenum and ("b", False) in m.notenum
        if t in ("integer", "nonint"):
            if m.lo is not None and m.hi is not None:
                if m.lo > m.hi or (m.lo == m.hi and (m.lox or m.hix)):
                    return True
                if t == "integer" and not m.lox and not m.hix and not m.mults:
                    import math
                    if math.floor(m.hi) < math.ceil(m.lo):
                        return True
            return False
        if t == "string":
            return m.shi is not None and m.slo > m.shi
        if t == "array":
            if m.ihi is not None and m.ilo > m.ihi:
                return True
            for i, es in m.pos.items():
                if i < m.ilo and self.expr_empty(self.and_expr(es)):
                    return True
            return False
        if t == "object":
            if m.phi is not None and (m.plo > m.phi or len(m.required) > m.phi):
                return True
            for name in m.required:
                es = list(m.props.get(name, []))
                for e, names, pats in m.addls:
                    if name not in names and not pats:
                        es.append(e)
                if self.expr_empty(self.and_expr(es)):
                    return True
            return False
        return False

    def expr_empty(self, e) -> bool:
        if e == FALSE:
            return True
        if e == TRUE:
            return False
        hit = self.empty_cache.get(e)
        if hit is not None:
            return hit
        # a recursive schema re-entering itself: not provably empty (stay conservative)
        self.empty_cache[e] = False
        try:
            res = all(self.branch_empty(br) for br in self.dnf(e))
        except UnsupportedSchemaError:
            res = False
        self.empty_cache[e] = res
        return res

    # ------------------------------------------------------------------ validating values (enum filters)
    def validate(self, v, e) -> bool:
        if e == TRUE:
            return True
        if e == FALSE:
            return False
        return any(self.satisfies(v, br) for br in self.dnf(e))

    def satisfies(self, v, br) -> bool:
        t = _type_of(v)
        for a in br:
            k = a[0]
            if k == "types":
                if t not in a[1]:
                    return False
                continue
            if k == "enum":
                if _canon(v) not in a[1]:
                    return False
                continue
            if k == "notenum":
                if _canon(v) in a[1]:
                    return False
                continue
            if k == "ruleref":
                if not self.validate(v, a[1]):
                    return False
                continue
            if t not in _ATOM_TYPES[k]:
                continue
            if not self.sat_atom(v, a):
                return False
        return True

    def sat_atom(self, v, a) -> bool:
        k = a[0]
        if k == "num":
            x = _dec(v)
            _, lo, lox, hi, hix = a
            if lo is not None and (x < lo or (lox and x == lo)):
                return False
            if hi is not None and (x > hi or (hix and x == hi)):
                return False
            return True
        if k == "mult":
            return _dec(v) % a[1] == 0
        if k == "notmult":
            return _dec(v) % a[1] != 0
        if k == "str":
            return _ir_match(self.str_node(a[1]), v) == a[2]
        if k == "len":
            return len(v) >= a[1] and (a[2] is None or len(v) <= a[2])
        if k == "props":
            return a[1] not in v or self.validate(v[a[1]], a[2])
        if k == "required":
            return a[1] in v
        if k == "addl":
            _, e, names, pats = a
            return all(self.validate(x, e) for key, x in v.items()
                       if key not in names and not any(self.key_matches(key, p) for p in pats))
        if k == "pattern":
            return all(self.validate(x, a[2]) for key, x in v.items() if self.key_matches(key, a[1]))
        if k == "pnames":
            return all(self.validate(key, a[1]) for key in v)
        if k == "nprops" or k == "nitems":
            return len(v) >= a[1] and (a[2] is None or len(v) <= a[2])
        if k == "pos":
            return len(v) <= a[1] or self.validate(v[a[1]], a[2])
        if k == "items":
            return all(self.validate(x, a[2]) for x in v[a[1]:])
        if k == "contains":
            n = sum(1 for x in v if self.validate(x, a[1]))
            return n >= a[2] and (a[3] is None or n <= a[3])
        if k == "unique":
            cs = [_canon(x) for x in v]
            return len(set(cs)) == len(cs)
        return True  # pragma: no cover

    def key_matches(self, key, pattern) -> bool:
        return _ir_match(self.regex(pattern, "", "patternProperties"), key)

    # ------------------------------------------------------------------ rules
    def new_name(self, hint: str) -> str:
        h = _NAME_JUNK.sub("_", hint.lower()).strip("_")[-40:].strip("_")
        base = f"s_{h}" if h else "s"
        self.counter += 1
        name = base
        while name in self.names_used:
            self.counter += 1
            name = f"{base}_{self.counter}"
        self.names_used.add(name)
        return name

    def node_of(self, e) -> ir.Node:
        """The IR node of an expression's language (a Ref to its rule, or a small inline node)."""
        if e == TRUE:
            return Ref("json_value")
        if e == FALSE:
            return EMPTY
        hit = self.rule_of.get(e)
        if hit is not None:
            return hit
        prog = self.in_progress.get(e)
        if prog is not None:
            prog[1] = True
            return Ref(prog[0])
        name = self.new_name(self.hint(e))
        prog = [name, False]
        self.in_progress[e] = prog
        try:
            body = self.build(e)
        except UnsupportedSchemaError as err:
            if not (self.lenient and self.strict == 0):
                raise
            # values sit in positive positions only: any JSON value over-approximates
            warnings.warn(f"dotjson: ignoring the schema at {self.expr_where(e) or '/'} ({err}); the grammar "
                          "over-approximates", stacklevel=3)
            body = Ref("json_value")
        finally:
            del self.in_progress[e]
        if not prog[1] and (_small(body) or body == EMPTY):
            self.names_used.discard(name)
            self.rule_of[e] = body
            return body
        self.rules[name] = body
        self.rule_of[e] = Ref(name)
        return Ref(name)

    def hint(self, e) -> str:
        if e[0] == "loc":
            toks = [t for t in e[2].split("/") if t and t not in ("properties", "$defs", "definitions", "items")]
            return "_".join(toks[-2:]) or "root"
        if e[0] == "not":
            return "not_" + self.hint(e[1])
        if e[0] == "and":
            return "all_" + self.hint(e[1][0])
        return e[0]

    def build(self, e) -> ir.Node:
        where = self.expr_where(e)
        nodes = []
        for br in self.dnf(e):
            if len(br) == 1 and br[0][0] == "ruleref":
                nodes.append(self.node_of(br[0][1]))
            else:
                nodes.append(self.build_branch(br, where))
        return alt(*nodes)

    def build_branch(self, br, where) -> ir.Node:
        if any(a[0] == "ruleref" for a in br):
            return alt(*(self.build_branch(b, where) for b in self.expand_refs(br, where)))
        m = self.merge(br)
        if m.enum is not None:
            vals = [c for c in m.enum if self.satisfies(self.literal_cache[("v", c)], br)]
            vals.sort(key=repr)
            if self.syntactic_int and "nonint" not in m.types:
                # draft 4: an integral enum value under `type: integer` has no `1.0` spelling
                return alt(*(self.number_node(c[1], False, c[1], False, (), (), (), True, False, "")
                             if c[0] == "x" else self.literal(c) for c in vals))
            return alt(*(self.literal(c) for c in vals))
        out = []
        ts = m.types
        if "null" in ts and ("n",) not in m.notenum:
            out.append(lit("null"))
        if "boolean" in ts:
            for b in (True, False):
                if ("b", b) not in m.notenum:
                    out.append(lit("true" if b else "false"))
        if ts & _NUM:
            out.append(self.build_number(m, "integer" in ts, "nonint" in ts, where))
        if "string" in ts:
            out.append(self.build_string(m))
        if "array" in ts:
            out.append(self.build_array(m, where))
        if "object" in ts:
            out.append(self.build_object(m, where))
        return alt(*out)

    # ------------------------------------------------------------------ literals
    def literal(self, c) -> ir.Node:
        key = ("lit", c)
        hit = self.literal_cache.get(key)
        if hit is not None:
            return hit
        k = c[0]
        if k == "n":
            node = lit("null")
        elif k == "b":
            node = lit("true" if c[1] else "false")
        elif k == "x":
            node = self.number_node(c[1], False, c[1], False, (), (), (), True, True, "")
        elif k == "s":
            node = seq(lit('"'), self.enc_text((c[1])), lit('"'))
        elif k == "a":
            if not c[1]:
                node = seq(lit("["), self.ws, lit("]"))
            else:
                items = [self.literal(x) for x in c[1]]
                body = [items[0]]
                for x in items[1:]:
                    body += [self.sep, x]
                node = seq(lit("["), self.ws, *body, self.ws, lit("]"))
        else:
            pairs = c[1]
            if not pairs:
                node = seq(lit("{"), self.ws, lit("}"))
            else:
                mems = [seq(lit('"'), self.enc_text((kk)), lit('"'), self.colon, self.literal(vv)) for kk, vv in pairs]
                orders = itertools.permutations(mems) if len(mems) <= 3 else [mems]
                alts = []
                for order in orders:
                    body = [order[0]]
                    for x in order[1:]:
                        body += [self.sep, x]
                    alts.append(seq(lit("{"), self.ws, *body, self.ws, lit("}")))
                node = alt(*alts)
        self.literal_cache[key] = node
        return node

    def enc_text(self, text: str) -> ir.Node:
        """All JSON spellings of the string ``text`` (between the quotes), cached per character."""
        parts = []
        for ch in text:
            hit = _ENC_CHAR.get(ch)
            if hit is None:
                hit = _ENC_CHAR[ch] = self.jsonstr.encode_chars(ir.Chars(((ord(ch), ord(ch)),)))
            parts.append(hit)
        return seq(*parts)

    def enc(self, node) -> ir.Node:
        # keyed by identity: IR nodes do not cache their hash, and format languages are big
        hit = self.enc_cache.get(id(node))
        if hit is None:
            self.keep.append(node)
            hit = self.enc_cache[id(node)] = self.jsonstr.encode_string_language(node)
        return hit

    # ------------------------------------------------------------------ numbers
    def build_number(self, m, allow_int, allow_nonint, where) -> ir.Node:
        ne = tuple(sorted(c[1] for c in m.notenum if c[0] == "x"))
        return self.number_node(m.lo, m.lox, m.hi, m.hix, tuple(m.mults), tuple(m.notmults), ne,
                                allow_int, allow_nonint, where)

    def number_node(self, lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint, where) -> ir.Node:
        if lo is None and hi is None and not mults and not notmults and not ne:
            if allow_int and allow_nonint:
                return Ref("json_number")
        key = (lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint)
        hit = self.number_cache.get(key)
        if hit is not None:
            return hit
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lox or hix))):
            self.number_cache[key] = EMPTY
            return EMPTY
        trackers = []
        consts = []
        if lo is not None and hi is not None and lo == hi:
            trackers.append(_CmpTracker(lo, "eq"))
            consts.append(lo)
        else:
            if lo is not None:
                trackers.append(_CmpTracker(lo, "gt" if lox else "ge"))
                consts.append(lo)
            if hi is not None:
                trackers.append(_CmpTracker(hi, "lt" if hix else "le"))
                consts.append(hi)
        for c in ne:
            trackers.append(_CmpTracker(c, "ne"))
            consts.append(c)
        if not allow_nonint:
            trackers.append(_IntTracker(False, self.syntactic_int))
        elif not allow_int:
            trackers.append(_IntTracker(True, self.syntactic_int))
        for mm, neg in [(x, False) for x in mults] + [(x, True) for x in notmults]:
            sign, digits, exp = mm.normalize().as_tuple()
            a = int("".join(map(str, digits)) or "0")
            s = -exp if exp < 0 else 0
            if exp > 0:
                a *= 10 ** exp
            if a > 10000:
                r = self.unsupported(f"multipleOf {mm} needs a remainder automaton with more than 10000 states",
                                     where, "multipleOf")
                if r is None:
                    continue
            trackers.append(_ModTracker(a, s, neg))
        allow_exp = allow_int and allow_nonint and not mults and not notmults and all(c == 0 for c in consts)
        dfa = _number_dfa(trackers, allow_exp)
        if dfa is None:
            self.unsupported("numeric bounds too large to compile", where, "maximum")
            node = Ref("json_number") if allow_int and allow_nonint else Ref("json_integer")
        else:
            mn = _minimize(*dfa)
            if mn is None:
                node = EMPTY
            else:
                self.counter += 1
                node = _dfa_to_ir(mn[0], mn[1], f"num{self.counter}", self.rules)
        self.number_cache[key] = node
        return node

    # ------------------------------------------------------------------ strings
    def string_content(self, m) -> ir.Node:
        """The encoded content language (between the quotes) of the merged string constraints."""
        key = (tuple(m.spos), tuple(m.sneg), m.slo, m.shi,
               tuple(sorted(c[1] for c in m.notenum if c[0] == "s")))
        hit = self.string_cache.get(key)
        if hit is not None:
            return hit
        pos = [self.enc_handle(h) for h in dict.fromkeys(m.spos)]
        if m.slo > 0 or m.shi is not None:
            pos.append(self.jsonstr.string_of_length(m.slo, m.shi))
        neg = [self.enc_handle(h) for h in dict.fromkeys(m.sneg)] + [self.enc_text((s)) for s in key[4]]
        if any(p == EMPTY for p in pos):
            content = EMPTY
        else:
            if not pos:
                content = self.jsonstr.json_string_content()
            elif len(pos) == 1:
                content = pos[0]
            else:
                content = ir.And(tuple({id(x): x for x in pos}.values()))
            neg = [x for x in neg if x != EMPTY]
            if neg:
                content = ir.Diff(content, alt(*neg))
        self.string_cache[key] = content
        return content

    def build_string(self, m) -> ir.Node:
        if not m.spos and not m.sneg and m.slo == 0 and m.shi is None and not any(c[0] == "s" for c in m.notenum):
            return Ref("json_string")
        content = self.string_content(m)
        if content == EMPTY:
            return EMPTY
        return seq(lit('"'), content, lit('"'))

    def key_language(self, e) -> ir.Node:
        """Encoded content language of the strings an expression accepts (for propertyNames)."""
        if e == TRUE:
            return self.jsonstr.json_string_content()
        if e == FALSE:
            return EMPTY
        alts = []
        branches = []
        for br in self.dnf(e):
            if any(a[0] == "ruleref" for a in br):
                branches.extend(self.inline(br[0][1], self.expr_where(e)) if len(br) == 1
                                else self.expand_refs(br, self.expr_where(e)))
            else:
                branches.append(br)
        for br in branches:
            m = self.merge(br)
            if "string" not in m.types:
                continue
            if m.enum is not None:
                alts.extend(self.enc_text((c[1])) for c in m.enum
                            if c[0] == "s" and self.satisfies(c[1], br))
                continue
            alts.append(self.string_content(m))
        return alt(*alts)

    # ------------------------------------------------------------------ arrays
    def build_array(self, m, where) -> ir.Node:
        lo, hi = m.ilo, m.ihi
        K = max([i + 1 for i in m.pos] + [k for k, _ in m.items] + [0])
        pos_exprs = []
        for i in range(K):
            es = list(m.pos.get(i, []))
            es += [e for k, e in m.items if k <= i]
            pos_exprs.append(self.and_expr(es))
        rest = self.and_expr([e for _, e in m.items])
        for i, e in enumerate(pos_exprs):
            if e == FALSE:
                hi = i if hi is None else min(hi, i)
                break
        if rest == FALSE:
            hi = K if hi is None else min(hi, K)
        if hi is not None and lo > hi:
            return EMPTY
        contains = [c for c in m.contains if not (c[1] == 0 and c[2] is None)]
        if m.unique and not (hi is not None and hi <= 1):
            node = self.unique_array(m, pos_exprs, rest, lo, hi, contains, where)
            if node is not None:
                return node
        if contains:
            node = self.contains_array(m, pos_exprs, rest, lo, hi, contains, where)
            if node is not None:
                return node
        ws, sep = self.ws, self.sep
        empty = seq(lit("["), ws, lit("]")) if lo == 0 else EMPTY

        def tail(i):
            # items from position i on (i >= 1), each preceded by a comma
            if i < K:
                if hi is not None and i >= hi:
                    return EPS
                more = seq(sep, self.node_of(pos_exprs[i]), tail(i + 1))
                return alt(EPS, more) if i >= lo else more
            rlo = max(0, lo - K)
            rhi = None if hi is None else hi - K
            if rest == FALSE:
                return EPS
            return repeat(seq(sep, self.node_of(rest)), rlo, rhi)

        if hi == 0:
            return empty
        first = self.node_of(pos_exprs[0]) if K > 0 else self.node_of(rest)
        if K > 0:
            body = seq(first, tail(1))
        else:
            rlo = max(0, lo - 1)
            rhi = None if hi is None else hi - 1
            body = seq(first, repeat(seq(sep, first), rlo, rhi))
        return alt(empty, seq(lit("["), ws, body, ws, lit("]")))

    def finite_values(self, e):
        if e == FALSE:
            return []
        if e == TRUE:
            return None
        out = {}
        for br in self.dnf(e):
            if any(a[0] == "ruleref" for a in br):
                try:
                    brs = self.expand_refs(br, "")
                except UnsupportedSchemaError:
                    return None
            else:
                brs = [br]
            for b in brs:
                m = self.merge(b)
                if m.enum is not None:
                    cs = [c for c in m.enum if self.satisfies(self.literal_cache[("v", c)], b)]
                elif m.types <= {"null", "boolean"}:
                    cs = []
                    for c in ([("n",)] if "null" in m.types else []) + \
                             ([("b", True), ("b", False)] if "boolean" in m.types else []):
                        self.literal_cache.setdefault(("v", c), None if c[0] == "n" else c[1])
                        if c not in m.notenum:
                            cs.append(c)
                else:
                    return None
                for c in cs:
                    out[c] = None
        return list(out)

    def unique_array(self, m, pos_exprs, rest, lo, hi, contains, where):
        vals = None
        if not pos_exprs and not contains:
            vals = self.finite_values(rest)
        if vals is None or len(vals) > MAX_UNIQUE_VALUES:
            self.unsupported("uniqueItems is only supported for items drawn from a small finite set "
                             "(enum, const, boolean, null)", m.unique, "uniqueItems")
            return None
        vals = sorted(vals, key=repr)
        lits = [self.literal(c) for c in vals]
        cap = len(vals) if hi is None else min(hi, len(vals))
        if lo > cap:
            return EMPTY
        self.counter += 1
        prefix = f"uniq{self.counter}"
        names = {}

        def state(used: int, count: int):
            key = used
            if key in names:
                return Ref(names[key])
            name = names[key] = f"{prefix}_{used}"
            alts = [EPS] if count >= lo else []
            if count < cap:
                for i, node in enumerate(lits):
                    if not used & (1 << i):
                        alts.append(seq(self.sep, node, state(used | (1 << i), count + 1)))
            self.rules[name] = alt(*alts)
            return Ref(name)

        firsts = [seq(node, state(1 << i, 1)) for i, node in enumerate(lits)] if cap >= 1 else []
        empty = seq(lit("["), self.ws, lit("]")) if lo == 0 else EMPTY
        return alt(empty, *(seq(lit("["), self.ws, f, self.ws, lit("]")) for f in firsts))

    def contains_array(self, m, pos_exprs, rest, lo, hi, contains, where):
        if len(contains) > 1 or pos_exprs or hi is not None:
            self.unsupported("contains is supported without prefixItems/maxItems and only once per array",
                             where, "contains")
            return None
        e, clo, chi = contains[0]
        if lo > max(clo, 1):
            self.unsupported("contains with minItems above minContains is not supported", where, "contains")
            return None
        y = self.node_of(self.and_expr([rest, e]))
        n_expr = None
        try:
            self.strict += 1
            n_expr = self.and_expr([rest, self.not_expr(e)])
            self.dnf(n_expr)
        except UnsupportedSchemaError:
            n_expr = None
        finally:
            self.strict -= 1
        if n_expr is None and chi is not None:
            self.unsupported("maxContains needs the negation of the contains schema, which is not expressible",
                             where, "maxContains")
            return None
        x = self.node_of(rest)
        nn = self.node_of(n_expr) if n_expr is not None else x
        cap = chi if chi is not None else clo
        self.counter += 1
        prefix = f"contains{self.counter}"

        def name(c, started):
            return f"{prefix}_{c}_{int(started)}"

        for c in range(cap + 1):
            for started in (False, True):
                sp = self.sep if started else EPS
                alts = []
                if started and c >= clo:
                    alts.append(EPS)
                if n_expr is None and c >= cap:
                    alts.append(seq(sp, x, Ref(name(c, True))))
                else:
                    alts.append(seq(sp, nn, Ref(name(c, True))))
                    if chi is None or c + 1 <= chi:
                        alts.append(seq(sp, y, Ref(name(min(c + 1, cap), True))))
                self.rules[name(c, started)] = alt(*alts)
        empty = seq(lit("["), self.ws, lit("]")) if clo == 0 else EMPTY
        return alt(empty, seq(lit("["), self.ws, Ref(name(0, False)), self.ws, lit("]")))

    # ------------------------------------------------------------------ objects
    def build_object(self, m, where) -> ir.Node:
        props = {k: list(v) for k, v in m.props.items()}
        for r in m.required:
            props.setdefault(r, [])
        required = m.required
        plo, phi = m.plo, m.phi
        if phi is not None and (plo > phi or len(required) > phi):
            return EMPTY
        closed = self.close_objects and not m.addls and (m.props or m.patterns)
        pn = self.and_expr(m.pnames) if m.pnames else None
        declared = []
        for name, es in props.items():
            es = list(es)
            for p, e in m.patterns:
                if self.key_matches(name, p):
                    es.append(e)
            for e, names, pats in m.addls:
                if name not in names and not any(self.key_matches(name, q) for q in pats):
                    es.append(e)
            if pn is not None and not self.validate(name, pn):
                es.append(FALSE)
            ve = self.and_expr(es)
            if ve == FALSE or (name in required and self.expr_empty(ve)):
                if name in required:
                    return EMPTY
                continue
            declared.append((name, ve, name in required))
        # extra members: keys that are not declared, split by which patterns they match
        classes = []
        if True:  # (closed objects keep their patternProperties keys; only the rest is shut)
            pats = list(dict.fromkeys([p for p, _ in m.patterns] + [q for _, _, qs in m.addls for q in qs]))
            fixed_members, fixed_names = [], []
            if 2 ** len(pats) > MAX_PATTERN_CLASSES and not same_pattern_schemas(m):
                # finite patterns (`^SHA-256$`) become listed keys; classes range over the rest
                split = split_patterns(pats, lambda p: self.regex(p, where, "patternProperties"),
                                       MAX_PATTERN_CLASSES)
                if split is not None:
                    pats = split[1]
                    fixed_members, fixed_names = fixed_key_members(self, split[0], m, set(props), pn)
            if 2 ** len(pats) > MAX_PATTERN_CLASSES:
                groups = {}
                for p, e in m.patterns:
                    groups.setdefault(p, []).append(e)
                same = len({tuple(v) for v in groups.values()}) == 1 and not any(qs for _, _, qs in m.addls)
                if not same:
                    r = self.unsupported(f"more than {MAX_PATTERN_CLASSES.bit_length() - 1} patternProperties "
                                         "with different schemas", where, "patternProperties")
                    if r is None:
                        pats = []
                subsets = [(), tuple(pats)] if same else [()]
                union_mode = same
            else:
                subsets = [T for r in range(len(pats) + 1) for T in itertools.combinations(pats, r)]
                union_mode = False
            pn_lang = self.key_language(pn) if pn is not None else None
            declared_names = [self.enc_text((n)) for n in props]
            for T in subsets:
                Tset = set(T)
                es = [e for p, e in m.patterns if p in Tset]
                es += [e for e, names, qs in m.addls if not (set(qs) & Tset)]
                if not T and closed:
                    es.append(FALSE)
                ve = self.and_expr(es)
                if ve == FALSE:
                    continue
                if union_mode and T:
                    pos = [alt(*(self.enc_pattern(p, where) for p in T))]
                    neg = list(declared_names)
                else:
                    pos = [self.enc_pattern(p, where) for p in T]
                    neg = [self.enc_pattern(q, where) for q in pats if q not in Tset]
                    neg += declared_names + fixed_names
                if pn_lang is not None:
                    if pn_lang == EMPTY:
                        continue
                    pos.append(pn_lang)
                if not pos:
                    content = self.jsonstr.json_string_content()
                elif len(pos) == 1:
                    content = pos[0]
                else:
                    content = ir.And(tuple(pos))
                if neg:
                    content = ir.Diff(content, alt(*neg))
                classes.append(seq(lit('"'), content, lit('"'), self.colon, self.node_of(ve)))
            classes.extend(fixed_members)
        X = None
        if classes:
            # one rule for "an extra member" (it recurs in every state of the automaton below)
            self.counter += 1
            xname = f"extra{self.counter}"
            self.rules[xname] = alt(*classes)
            X = Ref(xname)
        if self.property_order == "any":
            return any_order_object(self, declared, X, plo, phi)
        # required names that `properties` does not declare have no schema position: they may
        # appear anywhere extras may (tracked by a bit mask), when there are few of them
        floating = [d for d in declared if d[0] not in m.props]
        if len(floating) > MAX_FLOATING:
            floating = []
        chain = [d for d in declared if not floating or d[0] in m.props]

        def member(name, ve):
            return seq(lit('"'), self.enc_text(name), lit('"'), self.colon, self.node_of(ve))

        members = [member(name, ve) for name, ve, _ in chain]
        fmembers = [member(name, ve) for name, ve, _ in floating]
        full = (1 << len(floating)) - 1
        reqs = [req for _, _, req in chain]
        n = len(chain)
        open_ = seq(lit("{"), self.ws)
        close = seq(self.ws, lit("}"))
        empty_ok = not any(reqs) and plo == 0 and not floating
        empty = seq(lit("{"), self.ws, lit("}")) if empty_ok else EMPTY
        if n == 0 and not floating:
            if X is None:
                return empty
            if phi == 0:
                return empty
            rlo = max(plo - 1, 0)
            rhi = None if phi is None else phi - 1
            return alt(empty, seq(open_, X, repeat(seq(self.sep, X), rlo, rhi), close))
        cap = max(1, phi if phi is not None else plo)
        nstates = (n + 1) * 2 * (cap + 1) * (full + 1)
        if nstates > MAX_OBJECT_STATES:
            r = self.unsupported("object too large for its minProperties/maxProperties counter", where,
                                 "maxProperties")
            if r is None:
                plo, phi, cap = 0, None, 1
        has_s = X is not None or bool(floating)
        self.counter += 1
        prefix = f"obj{self.counter}"
        made: dict = {}
        todo = []

        def ref(kind, i, c, mask):
            key = (kind if has_s else "K", i, c, mask)
            nm = made.get(key)
            if nm is None:
                nm = made[key] = f"{prefix}_{key[0].lower()}{i}_{c}" + (f"_{mask}" if floating else "")
                todo.append(key)
            return Ref(nm)

        def inc(c):
            if phi is not None:
                return c + 1 if c + 1 <= phi else None
            return min(c + 1, cap)

        def body(kind, i, c, mask):
            sp = self.sep if c > 0 else EPS
            alts = []
            c2 = inc(c)
            if kind == "S" and c2 is not None:
                if X is not None:
                    alts.append(seq(sp, X, ref("S", i, c2, mask)))
                for j, fm in enumerate(fmembers):
                    if not mask & (1 << j):
                        alts.append(seq(sp, fm, ref("S", i, c2, mask | (1 << j))))
            if i < n:
                if c2 is not None:
                    alts.append(seq(sp, members[i], ref("S", i + 1, c2, mask)))
                if not reqs[i]:
                    alts.append(ref("K", i + 1, c, mask))
            elif c > 0 and c >= plo and mask == full:
                alts.append(EPS)
            return alt(*alts)

        start = ref("S", 0, 0, 0)
        while todo:
            key = todo.pop()
            self.rules[made[key]] = body(*key)
        return alt(empty, seq(open_, start, close))


class _Merged:
    __slots__ = ("types", "enum", "notenum", "lo", "lox", "hi", "hix", "mults", "notmults", "spos", "sneg",
                 "slo", "shi", "props", "required", "addls", "patterns", "pnames", "plo", "phi", "pos", "items",
                 "ilo", "ihi", "contains", "unique", "rulerefs")

    def __init__(self):
        self.types = _U
        self.enum = None
        self.notenum = set()
        self.lo = self.hi = None
        self.lox = self.hix = False
        self.mults, self.notmults = [], []
        self.spos, self.sneg = [], []
        self.slo, self.shi = 0, None
        self.props: dict = {}
        self.required: dict = {}
        self.addls, self.patterns, self.pnames = [], [], []
        self.plo, self.phi = 0, None
        self.pos: dict = {}
        self.items = []
        self.ilo, self.ihi = 0, None
        self.contains = []
        self.unique = None
        self.rulerefs = []


_MISSING = object()
_NAME_JUNK = re.compile(r"[^a-z0-9_]+")
# per-process caches of immutable languages (patterns and formats recur across schemas)
_REGEX_CACHE: dict = {}
_ENC_CACHE: dict = {}
_ENC_CHAR: dict = {}
_APPLICATORS = ("allOf", "anyOf", "oneOf", "not", "if", "$ref", "$dynamicRef", "$recursiveRef",
                "dependentSchemas", "dependencies")


def _types_of(br) -> frozenset:
    t = _U
    for a in br:
        if a[0] == "types":
            t = t & a[1]
    return t


def _small(node) -> bool:
    if isinstance(node, (ir.Ref, ir.Lit)):
        return True
    if isinstance(node, ir.Alt) and len(node.items) <= 4:
        return all(isinstance(x, (ir.Ref, ir.Lit)) for x in node.items)
    return False


def _join(base: str, ref: str) -> str:
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    try:
        return urljoin(base, ref)
    except ValueError:
        return ref


def _number(val, where, kw) -> Decimal:
    if isinstance(val, bool) or not isinstance(val, (int, float)):
        raise SchemaError(f"{kw} must be a number", where, kw)
    try:
        d = _dec(val)
    except (InvalidOperation, ValueError):
        raise SchemaError(f"{kw} must be a finite number", where, kw) from None
    if not d.is_finite():
        raise SchemaError(f"{kw} must be a finite number", where, kw)
    return d


def _count(val, where, kw) -> int:
    if isinstance(val, bool) or not isinstance(val, (int, float)) or val < 0 or (
            isinstance(val, float) and not val.is_integer()):
        raise SchemaError(f"{kw} must be a non-negative integer", where, kw)
    return int(val)


def _nonempty_list(val, where, kw) -> int:
    if not isinstance(val, list) or not val:
        raise SchemaError(f"{kw} must be a non-empty array of schemas", where, kw)
    return len(val)


from dotjson.formats import UNSUPPORTED_FORMATS as _UNSUPPORTED_FORMATS  # noqa: E402
from dotjson.objects_any_order import PROPERTY_ORDERS, any_order_object  # noqa: E402
from dotjson.pattern_keys import fixed_key_members, same_pattern_schemas, split_patterns  # noqa: E402


def _format_node(name: str):
    try:
        from dotjson.formats import format_to_ir
    except ImportError:  # pragma: no cover - formats module not available
        return None
    return format_to_ir(name)


def _left_recursion_check(rules: dict, value_rules: set, where_of) -> None:
    """Raise SchemaError when a sub-schema rule reaches itself without consuming input.

    Only the rules of sub-schemas (``value_rules``) can form such a cycle (through ``$ref``
    aliases and ``anyOf`` branches); every other rule starts with a token. No JSON value is
    empty, so a reference counts as non-nullable.
    """

    def null(n) -> bool:
        t = type(n)
        if t is ir.Lit:
            return n.text == ""
        if t is ir.Seq:
            return all(null(x) for x in n.items)
        if t is ir.Alt:
            return any(null(x) for x in n.items)
        if t is ir.Repeat:
            return n.min == 0 or null(n.item)
        return False

    def left(n, acc):
        t = type(n)
        if t is ir.Ref:
            acc.add(n.name)
        elif t is ir.Seq:
            for x in n.items:
                left(x, acc)
                if not null(x):
                    break
        elif t is ir.Alt:
            for x in n.items:
                left(x, acc)
        elif t is ir.Repeat:
            left(n.item, acc)

    graph = {}
    for name in value_rules:
        acc: set = set()
        left(rules[name], acc)
        graph[name] = [x for x in acc if x in value_rules]
    color = dict.fromkeys(graph, 0)
    for root in graph:
        if color[root]:
            continue
        stack = [(root, iter(graph[root]))]
        color[root] = 1
        while stack:
            s, it = stack[-1]
            for t in it:
                if color[t] == 1:
                    raise SchemaError("a $ref cycle that never consumes input (left recursion): the schema "
                                      "refers to itself without descending into a property or item",
                                      where_of(t), "$ref")
                if color[t] == 0:
                    color[t] = 1
                    stack.append((t, iter(graph[t])))
                    break
            else:
                color[s] = 2
                stack.pop()


def _prune_unproductive(rules: dict, start: str, families=()) -> dict:
    """Replace references to rules that derive no finite text (an infinite ``required`` recursion)
    by the empty language, so the automaton never enters a value it cannot finish."""
    deps: dict[str, set] = {}
    refs_of: dict[str, set] = {}
    for name, body in rules.items():
        r = _refs(body, set())
        refs_of[name] = r
        for x in r:
            deps.setdefault(x, set()).add(name)
    productive: set = set()

    def prod(n) -> bool:
        t = type(n)
        if t is ir.Lit or t is ir.And or t is ir.Diff:
            return True
        if t is ir.Chars:
            return bool(n.ranges)
        if t is ir.Seq:
            return all(prod(x) for x in n.items)
        if t is ir.Alt:
            return any(prod(x) for x in n.items)
        if t is ir.Repeat:
            return n.min == 0 or prod(n.item)
        # a lazy family's rules are left to the automaton's exact check
        return n.name in productive or any(f.owns(n.name) for f in families)

    work = list(rules)
    while work:
        name = work.pop()
        if name in productive or name not in rules:
            continue
        if prod(rules[name]):
            productive.add(name)
            work.extend(d for d in deps.get(name, ()) if d not in productive)
    dead = set(rules) - productive
    if not dead:
        return rules
    if start in dead:
        raise SchemaError("the schema accepts no JSON value (its language is empty: a required value "
                          "recurses forever)", pointer="")

    def sub(n):
        t = type(n)
        if t is ir.Ref:
            return EMPTY if n.name in dead else n
        if t is ir.Seq:
            return seq(*(sub(x) for x in n.items))
        if t is ir.Alt:
            return alt(*(sub(x) for x in n.items))
        if t is ir.Repeat:
            return repeat(sub(n.item), n.min, n.max)
        return n

    for f in families:
        f.substitute(sub)
    return {k: (sub(v) if refs_of[k] & dead else v) for k, v in rules.items() if k not in dead}


def _load(schema):
    if isinstance(schema, (bytes, bytearray)):
        schema = schema.decode("utf-8")
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise SchemaError(f"schema is not valid JSON: {e}", pointer="") from None
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a schema must be a JSON object or a boolean, got {type(schema).__name__}", pointer="")
    return schema


def schema_to_grammar(schema, *, disallow_whitespace: bool = False, close_objects: bool = True,
                      lenient: bool = False, resources=None, property_order: str = "schema",
                      whitespace: str = "bounded") -> ir.Grammar:
    """Translate a JSON Schema into a grammar whose language is exactly the documents it accepts.

    Parameters
    ----------
    schema : dict, bool or str
        The schema, as a Python object or JSON text. ``$schema`` selects the dialect (drafts 4, 6,
        7, 2019-09, 2020-12); without it, 2020-12.
    disallow_whitespace : bool, default False
        ``True``: compact JSON, no whitespace anywhere. ``False``: bounded whitespace (the ``ws`` rule
        of ``grammars/json.lark``) between syntax tokens and around the document.
    close_objects : bool, default True
        A generation policy. ``True``: objects that declare ``properties``/``patternProperties``
        but say nothing about ``additionalProperties`` are closed (no extra keys), as XGrammar and
        OpenAI's strict mode do. ``False`` follows the specification (extra keys allowed).
    lenient : bool, default False
        Downgrade :class:`UnsupportedSchemaError` to a warning for keywords whose neglect still
        yields valid JSON; the grammar then over-approximates the schema.
    resources : mapping of str to schema, optional
        Schemas for remote ``$ref`` URIs (nothing is fetched from the network).
    property_order : {"schema", "any"}, default "schema"
        ``"schema"``: declared properties in the schema's order. ``"any"``: in any order, each at
        most once, built lazily (:mod:`dotjson.objects_any_order`; the grammar then holds rule
        families, written out by :func:`dotjson.grammar.to_lark` for small objects only).
    whitespace : {"bounded", "json"}, default "bounded"
        Without ``disallow_whitespace``: ``"bounded"`` is the ``ws`` rule of ``grammars/json.lark``
        (one line break, 20 blanks); ``"json"`` is any whitespace JSON allows between tokens.

    Returns
    -------
    ir.Grammar
        Start rule ``"start"``: optional ``ws``, the value, optional ``ws``. Rule bodies share the
        base rules of :func:`dotjson.grammar.json_base`.

    Raises
    ------
    UnsupportedSchemaError
        A keyword (named, with the JSON pointer of its schema) that cannot be enforced exactly.
    SchemaError
        A malformed schema, or one that accepts no value at all.
    """
    if property_order not in PROPERTY_ORDERS:
        raise SchemaError(f"property_order must be one of {PROPERTY_ORDERS}, got {property_order!r}")
    from dotjson.grammar import JSON_WS, WHITESPACE_MODES

    if whitespace not in WHITESPACE_MODES:
        raise SchemaError(f"whitespace must be one of {WHITESPACE_MODES}, got {whitespace!r}")
    schema = _load(schema)
    if resources:
        resources = {k: _load(v) for k, v in resources.items()}
    tr = _Translator(schema, disallow_whitespace=disallow_whitespace, close_objects=close_objects,
                     lenient=lenient, resources=resources, property_order=property_order)
    import sys

    limit = sys.getrecursionlimit()
    raised = max(limit, _RECURSION_LIMIT)
    sys.setrecursionlimit(raised)
    try:
        root = tr.node_of(TRUE if schema is True else FALSE if schema is False else ("loc", "", ""))
    except RecursionError:
        raise UnsupportedSchemaError("schema nesting too deep", pointer="") from None
    finally:
        # Restore, unless another thread (an automaton sizing it for its rule chains) raised it
        # further meanwhile: lowering it under that thread's feet would break it.
        if sys.getrecursionlimit() == raised:
            sys.setrecursionlimit(limit)
    if root == EMPTY:
        raise SchemaError("the schema accepts no JSON value (its language is empty)", pointer="")
    where_by_rule = {}
    for e, node in tr.rule_of.items():
        if isinstance(node, Ref) and node.name in tr.rules:
            where_by_rule[node.name] = tr.expr_where(e)
    _left_recursion_check(tr.rules, set(where_by_rule), lambda r: where_by_rule.get(r, ""))
    rules = dict(tr.base)
    if whitespace == "json" and not disallow_whitespace:
        rules["ws"] = JSON_WS
    rules.update(tr.rules)
    ws = tr.ws
    rules["start"] = seq(ws, root, ws)
    rules = _prune_unproductive(rules, "start", tr.families)
    return ir.Grammar(rules, "start", families=tuple(tr.families))


def check_schema(schema, *, disallow_whitespace: bool = False, close_objects: bool = True,
                 lenient: bool = False, resources=None, property_order: str = "schema",
                 whitespace: str = "bounded") -> None:
    """Raise the error :func:`schema_to_grammar` would raise, and nothing otherwise.

    Translation is fast (milliseconds), so the check is the translation itself.

    Raises
    ------
    UnsupportedSchemaError, SchemaError
        As :func:`schema_to_grammar`.
    """
    schema_to_grammar(schema, disallow_whitespace=disallow_whitespace, close_objects=close_objects,
                      lenient=lenient, resources=resources, property_order=property_order,
                      whitespace=whitespace)
