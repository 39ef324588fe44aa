"""JSON inside text: JSON Schemas as rules of a larger grammar.

Three front ends build one kind of grammar, a plain part (rules written out) with any number of
JSON Schemas embedded, each compiled lazily like the schema of an :class:`~dotjson.Index`:

* ``%json { … }`` in Lark text (llguidance's spelling; it stands where a rule reference could)
  and the Python form, ``schemas={"name": schema}`` (:func:`load_lark_with_json`);
* tool calls: free text until a trigger, then a tag's schema, then free text again
  (:func:`tools_grammar`);
* reasoning first: text until an end tag such as ``</think>``, then the schema
  (:func:`reasoning_grammar`).

Every embedded schema gets a :class:`~dotjson.jsonschema.compiler.Compiler` of its own, with its
own options (:class:`JsonSchema`), whose rule names carry a namespace prefix (``j3_…``) so that
the rules of many schemas and the plain ones live in one grammar; the JSON base rules are
shared by the schemas with the same whitespace setting. Phase 1 (resolving and normalising, where
schema errors surface) runs when the grammar is built; a schema's rules are built when the
automaton first reaches them, so a tool whose trigger is never written is never compiled.

Free text is a right-linear family of rules, one per state of the Aho-Corasick automaton of
the triggers (:func:`free_text`): every position of text that is not inside a partial trigger is
the same automaton state, so its mask is computed once.
"""

from __future__ import annotations

import weakref

import json
import re
from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any

from dotjson import ir
from dotjson.errors import DotjsonTypeError, GrammarError, LimitExceededError, SchemaError

__all__ = ["JsonSchema", "Tag", "load_lark_with_json", "tools_grammar", "reasoning_grammar", "free_text"]

#: The options an embedded schema takes (those of :class:`~dotjson.Index`).
SCHEMA_OPTIONS = ("disallow_whitespace", "close_objects", "property_order", "whitespace", "lenient",
                  "spellings", "bounds", "resources")
#: The key of a ``%json`` schema that holds its options (removed before it is compiled).
OPTIONS_KEY = "x-dotjson"


@dataclass(frozen=True)
class JsonSchema:
    """A JSON Schema with the options it is compiled with, for use inside a grammar.

    Parameters
    ----------
    schema : dict, bool or str
        The schema (a parsed value or JSON text).
    disallow_whitespace, close_objects, property_order, whitespace, lenient, spellings, bounds, resources
        As for :class:`~dotjson.Index`; each embedded schema has its own.

    Examples
    --------
    >>> JsonSchema({"type": "object"}, close_objects=False)       # doctest: +SKIP
    """

    schema: Any
    disallow_whitespace: bool = False
    close_objects: bool = True
    property_order: str = "schema"
    whitespace: str = "bounded"
    lenient: bool = False
    spellings: Any = None
    bounds: Any = None
    resources: Any = field(default=None, compare=False)

    def spelling(self) -> str:
        """The string spelling policy this schema is compiled with (``spellings=None`` resolved
        as :class:`~dotjson.Index` resolves it)."""
        from dotjson.jsonschema.jsonstr import default_spellings

        return default_spellings(self.spellings, disallow_whitespace=bool(self.disallow_whitespace),
                                 close_objects=bool(self.close_objects),
                                 property_order=self.property_order, whitespace=self.whitespace)

    @classmethod
    def of(cls, value, where: str = "") -> "JsonSchema":
        """``value`` as a :class:`JsonSchema`: itself, or a schema (dict, bool, JSON text) whose
        ``"x-dotjson"`` member, if any, holds its options."""
        if isinstance(value, JsonSchema):
            return value
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).decode("utf-8")
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                raise SchemaError(f"{where}schema is not valid JSON: {e}", pointer="") from None
        if isinstance(value, dict) and OPTIONS_KEY in value:
            opts = value[OPTIONS_KEY]
            if not isinstance(opts, dict):
                raise SchemaError(f"{where}{OPTIONS_KEY} must be an object of options, got {opts!r}",
                                  pointer=f"/{OPTIONS_KEY}")
            bad = sorted(set(opts) - set(SCHEMA_OPTIONS) - {"resources"})
            if bad:
                raise SchemaError(f"{where}unknown option {bad[0]!r} in {OPTIONS_KEY} (expected one of "
                                  f"{', '.join(SCHEMA_OPTIONS)})", pointer=f"/{OPTIONS_KEY}/{bad[0]}")
            value = {k: v for k, v in value.items() if k != OPTIONS_KEY}
            return cls(value, **opts)
        if not isinstance(value, (dict, bool)):
            raise DotjsonTypeError(f"Invalid schema: expected a JSON Schema (dict, bool, JSON text) or a "
                                   f"dotjson.JsonSchema, got {type(value).__name__}")
        return cls(value)


@dataclass(frozen=True)
class Tag:
    """A tool call's spelling: ``begin``, the schema's JSON value, ``end``.

    Parameters
    ----------
    begin : str
        The text that opens the call (``"<tool_call>\\n"``); it must start with one of the
        triggers of :func:`tools_grammar` (by default each tag's ``begin`` is its own trigger).
    schema : JsonSchema, dict, bool or str
        The value's schema.
    end : str
        The text that closes the call (``"\\n</tool_call>"``; may be empty).
    """

    begin: str
    schema: Any
    end: str = ""


# ============================================================================ special tokens

#: The first byte of a special token's marker: 0xFF never occurs in UTF-8 text.
_MARK = "\udcff"
_MAX_SPECIAL = 1 << 24


def special_token(token_id: int) -> str:
    """The text that stands for special token ``token_id`` in a grammar (in a tag's ``begin``,
    ``end`` or trigger, or ``<[id]>`` in Lark text): Llama 3.1's ``<|python_tag|>`` (128010) or
    Mistral's ``[TOOL_CALLS]`` control token write no text, and only that token id matches.

    Inside the automaton it is the byte 0xFF and four bytes 0x80-0xBF holding the id (written as
    lone surrogates U+DC80-U+DCFF, the raw bytes of ``surrogateescape``): no UTF-8 text holds
    0xFF, and no character starts with 0x80-0xBF, so text never reaches or leaves a marker; the
    index maps the token id to its marker and refuses text tokens holding 0xFF
    (:class:`dotjson.Index`).
    """
    if isinstance(token_id, bool) or not isinstance(token_id, int) or not 0 <= token_id < _MAX_SPECIAL:
        raise DotjsonTypeError(f"Invalid special token id: expected an integer in [0, {_MAX_SPECIAL}), "
                               f"got {token_id!r}")
    return _MARK + "".join(chr(0xDC80 + ((token_id >> s) & 0x3F)) for s in (18, 12, 6, 0))


def special_marker_bytes(token_id: int) -> bytes:
    """The automaton bytes of :func:`special_token`."""
    return special_token(token_id).encode("utf-8", "surrogateescape")


def has_special(text: str) -> bool:
    """True when ``text`` holds a special token's marker."""
    return _MARK in text


_SPECIAL_REF = re.compile(r"<\[(\d+)\]>")


# ============================================================================ the grammar source


class _Pending:
    """The names not built yet of several compilers (their ``pending`` dicts, disjoint)."""

    def __init__(self, maps: list):
        self.maps = maps

    def __contains__(self, name) -> bool:
        return any(name in m for m in self.maps)

    def __iter__(self):
        for m in self.maps:
            yield from list(m)

    def __bool__(self) -> bool:
        return any(self.maps)


class EmbeddedSchemas:
    """The rule source (:class:`dotjson.ir.LazyRules`) of a grammar holding JSON Schemas.

    ``plain`` holds the rules written out (a Lark grammar's, free text); :meth:`add` compiles a
    schema's phase 1 and returns the node of its value (a reference to a rule built on demand).
    """

    def __init__(self, plain: dict):
        self.plain = plain
        self.compilers: dict[str, Any] = {}   # namespace -> Compiler
        self._grammar_ref = None              # the grammar (weakly), once grammar() made it
        self.rules = ChainMap(plain)
        self.pending = _Pending([])
        self.native = ChainMap()
        self.families: list = []
        self._bases: dict = {}                # (disallow_whitespace, whitespace, spelling) -> base prefix
        self._taken = set(plain)

    def _fresh_prefix(self, stem: str) -> str:
        """``stem_`` (or ``stemxK_``): a prefix no rule name of the grammar starts with."""
        k = 0
        while True:
            p = f"{stem}_" if k == 0 else f"{stem}x{k}_"
            if not any(n.startswith(p) for n in self._taken):
                return p
            k += 1

    def base_prefix(self, js: JsonSchema) -> str:
        """The prefix of the JSON base rules of ``js``'s whitespace setting and string spelling:
        none for the default one (bounded whitespace, canonical spellings; unless the grammar has
        rules of those names), ``jc_`` compact, ``jw_`` any JSON whitespace, ``jb_`` another
        spelling."""
        key = (bool(js.disallow_whitespace), "bounded" if js.disallow_whitespace else js.whitespace,
               js.spelling())
        p = self._bases.get(key)
        if p is None:
            if key == _DEFAULT_BASE and not (self._taken & _base_names()):
                p = ""
            else:
                p = self._fresh_prefix("jc" if key[0] else "jw" if key[1] == "json" else "jb")
            self._bases[key] = p
            self._taken |= {p + n for n in _base_names()}
        return p

    def add(self, js: JsonSchema, where: str = "") -> ir.Node:
        """Phase 1 of schema ``js`` (errors now, prefixed with ``where``); the node of its value."""
        from dotjson.jsonschema.jsonbase import JSON_WS, WHITESPACE_MODES
        from dotjson.jsonschema import _load
        from dotjson.jsonschema.compiler import Compiler
        from dotjson.jsonschema.dynamic import Restart
        from dotjson.jsonschema.values import FALSE, TRUE
        from dotjson.jsonschema.objects_any_order import PROPERTY_ORDERS

        try:
            if js.property_order not in PROPERTY_ORDERS:
                raise SchemaError(f"property_order must be one of {PROPERTY_ORDERS}, got {js.property_order!r}")
            if js.whitespace not in WHITESPACE_MODES:
                raise SchemaError(f"whitespace must be one of {WHITESPACE_MODES}, got {js.whitespace!r}")
            schema = _load(js.schema)
            resources = {k: _load(v) for k, v in js.resources.items()} if js.resources else None
            bp = self.base_prefix(js)
            ns = self._fresh_prefix(f"j{len(self.compilers) + 1}")
            self._taken.add(ns)
            nfam = len(self.families)
            for dynamic in (False, True):  # (as schema_to_grammar: dynamic scopes where needed)
                tr = Compiler(schema, disallow_whitespace=bool(js.disallow_whitespace),
                              close_objects=bool(js.close_objects), lenient=bool(js.lenient),
                              resources=resources, property_order=js.property_order,
                              spellings=js.spelling(), bounds=js.bounds, namespace=ns, base_prefix=bp)
                tr.families = self.families  # one list: objects of every schema add their families
                if js.whitespace == "json" and not js.disallow_whitespace:
                    tr.rules[bp + "ws"] = JSON_WS
                if dynamic:
                    tr.track_dynamic_scope()
                tr.restartable = not dynamic
                root_expr = TRUE if schema is True else FALSE if schema is False else ("loc", "", "")
                try:
                    tr.prepare(root_expr)
                    root = tr.node_of(root_expr)
                except Restart:
                    del self.families[nfam:]  # (the first attempt's)
                    continue
                tr.restartable = False
                break
        except RecursionError:
            raise LimitExceededError(f"{where}schema nesting too deep to normalise") from None
        except SchemaError as e:
            if not where:
                raise
            raise type(e)(f"{where}{_message_of(e)}", pointer=e.pointer, keyword=e.keyword) from None
        self.compilers[ns] = tr
        tr.grammar_ref = self._grammar_ref  # (None until grammar() made it; see there)
        self.rules.maps.append(tr.rules)
        self.pending.maps.append(tr.pending)
        self.native.maps.append(tr.native)
        return root

    def _owner(self, name: str):
        i = name.find("_")
        return self.compilers.get(name[: i + 1]) if i > 0 else None

    def body(self, name: str) -> ir.Node:
        tr = self._owner(name)
        if tr is None or name not in tr.pending:
            raise KeyError(name)
        return tr.body(name)

    def known_language(self, name: str) -> tuple:
        tr = self._owner(name)
        return tr.known_language(name) if tr is not None else (None, None)

    def build_all(self) -> None:
        for tr in self.compilers.values():
            tr.build_all()

    def grammar(self, start: str) -> ir.Grammar:
        """The grammar: the plain rules and every schema's, lazily; the JSON base rules of the
        default whitespace setting shared with the process's precompiled image."""
        from dotjson.jsonschema.jsonbase import json_base_items, warm_items
        from dotjson.jsonschema import shared_nodes

        shared = ()
        if self._bases.get(_DEFAULT_BASE) == "":
            shared = (json_base_items(False, _DEFAULT_BASE[2]), shared_nodes(_DEFAULT_BASE[2]), warm_items(_DEFAULT_BASE[2]))
        rules = ir.LazyRules(self)
        g = ir.Grammar(rules, start, families=self.families, shared=shared)
        # (what families reading their items with an automaton of their own need: weakly, the
        # grammar owning this source through its rules)
        self._grammar_ref = weakref.ref(g)
        for tr in self.compilers.values():
            tr.grammar_ref = self._grammar_ref
        # once nothing can ask for a rule, the compilers let go of what refers back to them
        # (jsonschema._assemble does the same for a schema's own grammar)
        weakref.finalize(rules, self.release)
        return g

    def release(self) -> None:
        """Let go of the schemas' compilers and what they made (:meth:`Compiler.release`)."""
        compilers = list(self.compilers.values())
        self.compilers.clear()
        for tr in compilers:
            tr.release()


def _message_of(e: SchemaError) -> str:
    """``e``'s message without the `` at <pointer>`` its constructor appends."""
    msg = str(e)
    if e.pointer is not None:
        tail = f" at {e.pointer or '/'}"
        if msg.endswith(tail):
            msg = msg[: -len(tail)]
    return msg


_BASE_NAMES: frozenset = frozenset()
#: The base rules named without a prefix: bounded whitespace, canonical spellings (the defaults).
_DEFAULT_BASE = (False, "bounded", "canonical")


def _base_names() -> frozenset:
    global _BASE_NAMES
    if not _BASE_NAMES:
        from dotjson.jsonschema.jsonbase import json_base_items

        _BASE_NAMES = frozenset(k for k, _ in json_base_items(False))
    return _BASE_NAMES


# ============================================================================ %json in Lark text


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


_JSON_KW = re.compile(r"%json\b")


def _find_json_blocks(text: str):
    """``(start, brace, end, value)`` of every ``%json { … }`` of Lark text, outside string
    literals, regexes and comments (the JSON object read by Python's JSON decoder), and
    ``(start, None, end, token_id)`` of every ``<[id]>``."""
    out = []
    i, n = 0, len(text)
    dec = json.JSONDecoder()
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):  # a comment (a regex is never empty)
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == '"' or c == "/":
            # a string literal or a regex: up to the unescaped closing delimiter on this line
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "<":
            m = _SPECIAL_REF.match(text, i)
            if m is not None:  # llguidance's <[id]>: a special token by id
                out.append((i, None, m.end(), int(m.group(1))))
                i = m.end()
                continue
        if c == "%" and _JSON_KW.match(text, i):
            j = i + 5
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j >= n or text[j] != "{":
                line, col = _line_col(text, i)
                raise GrammarError(f"%json at line {line}, column {col}: expected a JSON object "
                                   "(\"{\") after %json")
            try:
                value, end = dec.raw_decode(text, j)
            except json.JSONDecodeError as e:
                line, col = _line_col(text, e.pos)
                raise GrammarError(f"%json at line {_line_col(text, i)[0]}: the schema is not valid "
                                   f"JSON: {e.msg} at line {line}, column {col}") from None
            out.append((i, j, end, value))
            i = end
            continue
        i += 1
    return out


def load_lark_with_json(text: str, start: str = "start", schemas=None) -> ir.Grammar:
    """Lark text whose rules may hold JSON Schemas, as a lazily compiled grammar.

    Parameters
    ----------
    text : str
        Lark grammar text. ``%json { … }`` (a JSON object: the schema, as llguidance spells it)
        stands for the JSON values the schema accepts, wherever a rule reference may stand:
        ``start: "Answer: " data`` and ``data: %json {"type": "integer"}``. A schema's
        ``"x-dotjson"`` member holds its options (``{"close_objects": false, "whitespace":
        "json", "property_order": "any", "disallow_whitespace": true}``).
    start : str
        The start rule.
    schemas : mapping of str to schema, optional
        The Python form: rule name → schema (a dict, JSON text, or a :class:`JsonSchema` with its
        options); the rule is defined by the schema and may be used by the text.

    Raises
    ------
    GrammarError
        The Lark text is malformed, a ``%json`` is not followed by a JSON object (line and
        column named), a rule of ``schemas`` is also defined by the text.
    SchemaError, UnsupportedSchemaError
        An embedded schema is malformed or unsupported: the message names the ``%json``'s line
        and column (or the rule), the exception's ``pointer`` the place inside the schema.
    """
    from dotjson.grammar import load_lark

    blocks = _find_json_blocks(text)
    schemas = dict(schemas or {})
    if not blocks and not schemas:
        return load_lark(text, start)
    idents = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    stem, k = "dotjson_json_", 0
    while any(name.startswith(stem) for name in idents):
        k += 1
        stem = f"dotjson{k}_json_"
    # each %json { … } becomes a reference to a rule of its own; the newlines the schema spanned
    # are put back at the end of its line, so that Lark's errors name the lines as written
    parts, places, pos = [], [], 0
    for b, (s0, brace, e, value) in enumerate(blocks):
        if brace is None:  # a special token: a literal of its marker
            if value >= _MAX_SPECIAL:
                line, col = _line_col(text, s0)
                raise GrammarError(f"<[{value}]> at line {line}, column {col}: not a token id")
            marker = "".join(f"\\u{ord(ch):04x}" for ch in special_token(value))
            parts += [text[pos:s0], f'"{marker}"']
            pos = e
            continue
        name = f"{stem}{b}"
        parts += [text[pos:s0], name]
        places.append((name, value, *_line_col(text, s0)))
        pos = e
        nl = text.count("\n", s0, e)
        if nl:
            eol = text.find("\n", e)
            eol = len(text) if eol < 0 else eol
            if b + 1 == len(blocks) or eol < blocks[b + 1][0]:
                parts.append(text[pos:eol] + "\n" * nl)
                pos = eol
    parts.append(text[pos:])
    src = "".join(parts)
    defined = set(re.findall(r"^\s*[?!]?([a-z_][a-z0-9_]*)\s*(?:\{[^}]*\})?\s*:", text, re.M))
    for name in schemas:
        if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise GrammarError(f"schemas: {name!r} is not a Lark rule name (lower case letters, digits, _)")
        if name in defined:
            raise GrammarError(f"schemas: rule {name!r} is defined both by the grammar text and by schemas=")
    src += "\n" + "".join(f"\n{name}: \"\\u0000\"" for name, *_ in places) + "".join(
        f"\n{name}: \"\\u0000\"" for name in schemas) + "\n"
    g = load_lark(src, start)
    plain = dict(g.rules)
    src_rules = EmbeddedSchemas({})
    src_rules._taken |= set(plain)
    for name, value, line, col in places:
        js = JsonSchema.of(value, where=f"%json at line {line}, column {col}: ")
        plain[name] = src_rules.add(js, where=f"%json at line {line}, column {col}: ")
    for name, value in schemas.items():
        js = JsonSchema.of(value, where=f"schema of rule {name!r}: ")
        plain[name] = src_rules.add(js, where=f"schema of rule {name!r}: ")
    src_rules.plain.update(plain)
    return src_rules.grammar(start)


# ============================================================================ free text


def free_text(triggers, fire, rules: dict, prefix: str, may_end: bool = True) -> ir.Node:
    """Free text up to the first of ``triggers``, as right-linear rules added to ``rules``.

    The rules are the states of the Aho-Corasick automaton of the triggers over Unicode
    characters, ``<prefix>_<q>`` for each proper prefix ``q`` of a trigger that the text so far
    ends with: the text before any trigger's first character is always the first rule, so every
    such position is the same automaton state (one mask, computed once). Writing a trigger's
    last character goes on with ``fire(k)`` (``k`` the trigger's index); ``may_end``: the text
    may end anywhere before a trigger (else only a trigger ends it).

    Returns the node of the text's start. Raises :class:`GrammarError` for an empty trigger or
    one that contains another (it could never be written: the other fires first).
    """
    triggers = list(triggers)
    for i, t in enumerate(triggers):
        if not isinstance(t, str) or not t:
            raise GrammarError(f"trigger {i}: expected a non-empty string, got {t!r}")
        for j, u in enumerate(triggers):
            if i != j and u in t and (u != t or j < i):
                raise GrammarError(f"trigger {t!r} contains trigger {u!r}: it could never be written "
                                   "(the shorter one fires first); give each tag a trigger of its own "
                                   "prefix, or one shared trigger")
    prefixes = sorted({t[:n] for t in triggers for n in range(len(t))}, key=lambda p: (len(p), p))
    index = {p: k for k, p in enumerate(prefixes)}
    done = {t: k for k, t in enumerate(triggers)}
    alphabet = sorted({c for t in triggers for c in t})

    def name(p: str) -> str:
        return f"{prefix}_{index[p]}"

    def step(p: str, c: str):
        s = p + c
        for t, k in done.items():
            if s.endswith(t):
                return ("fire", k)
        while s and s not in index:
            s = s[1:]
        return ("go", s)

    for p in prefixes:
        alts, explicit = [], []
        for c in alphabet:
            kind, x = step(p, c)
            if kind == "fire":
                alts.append(ir.seq(ir.lit(c), fire(x)))
                explicit.append(c)
            elif x != "":
                alts.append(ir.seq(ir.lit(c), ir.Ref(name(x))))
                explicit.append(c)
        others = ir.chars_complement(ir.chars(*((ord(c), ord(c)) for c in explicit)))
        alts.insert(0, ir.seq(others, ir.Ref(name(""))))
        if may_end:
            alts.append(ir.EPS)
        rules[name(p)] = ir.alt(*alts)
    return ir.Ref(name(""))


ANY_TEXT = ir.repeat(ir.ANY_CHAR, 0, None)


def _check_text(value, what: str) -> str:
    if not isinstance(value, str):
        raise DotjsonTypeError(f"Invalid {what}: expected a string, got {type(value).__name__}")
    return value


# ============================================================================ tool calls


def tools_grammar(tags, triggers=None, max_calls=None, text: bool = True) -> ir.Grammar:
    """Free text and tool calls: a grammar for a model that may call tools inside its own tags.

    Parameters
    ----------
    tags : sequence of Tag or (begin, schema, end)
        The calls: ``begin``, a JSON value of ``schema``, ``end``.
    triggers : sequence of str, optional
        The strings that start a call: free text runs until one is written, then one of the
        tags whose ``begin`` starts with it must follow. By default every tag's ``begin``.
    max_calls : int, optional
        At most this many calls (after the last one: any text, no trigger fires). Default: any
        number.
    text : bool, default True
        ``False``: no free text around the calls (the output is one or more calls, up to
        ``max_calls``, with nothing between them).

    Each tag's schema is compiled (phase 2) only when its ``begin`` is being written.
    """
    tags = [t if isinstance(t, Tag) else Tag(*t) for t in tags]
    if not tags:
        raise GrammarError("tools_grammar: expected at least one tag")
    if max_calls is not None:
        if isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1:
            raise GrammarError(f"max_calls: expected a positive integer or None, got {max_calls!r}")
    for i, t in enumerate(tags):
        _check_text(t.begin, f"begin of tag {i}")
        _check_text(t.end, f"end of tag {i}")
        if not t.begin:
            raise GrammarError(f"tag {i}: begin must not be empty (it is what starts the call)")
    triggers = list(dict.fromkeys(t.begin for t in tags)) if triggers is None else list(triggers)
    src = EmbeddedSchemas({})
    values = [src.add(JsonSchema.of(t.schema, where=f"tag {i}: "), where=f"tag {i} ({t.begin!r}): ")
              for i, t in enumerate(tags)]
    for i, t in enumerate(tags):
        if not any(t.begin.startswith(tr) for tr in triggers):
            raise GrammarError(f"tag {i}: begin {t.begin!r} starts with none of the triggers {triggers!r}")
    plain = src.plain
    src._taken |= {"start"}
    stem = src._fresh_prefix("text")[:-1]

    def after(k: int, nxt: ir.Node) -> ir.Node:
        tr = triggers[k]
        return ir.alt(*(ir.seq(ir.lit(t.begin[len(tr):]), values[i], ir.lit(t.end), nxt)
                        for i, t in enumerate(tags) if t.begin.startswith(tr)))

    n_sets = 1 if max_calls is None else max_calls
    if text:
        starts = [ir.Ref(f"{stem}{n}_0") for n in range(n_sets)]
        for n in range(n_sets):
            nxt = ir.Ref(f"{stem}{n + 1}") if max_calls is not None else ir.Ref(f"{stem}0")
            free_text(triggers, lambda k, nxt=nxt: after(k, nxt), plain, f"{stem}{n}")
            plain[f"{stem}{n}"] = ir.Ref(f"{stem}{n}_0")
        if max_calls is not None:
            plain[f"{stem}{max_calls}"] = ANY_TEXT
        # the text's first rule is the start itself: the text before any trigger is then one
        # automaton state from the first position on
        return src.grammar(starts[0].name)
    else:
        call = ir.alt(*(ir.seq(ir.lit(t.begin), values[i], ir.lit(t.end)) for i, t in enumerate(tags)))
        plain["start"] = ir.seq(call, ir.repeat(call, 0, None if max_calls is None else max_calls - 1))
    return src.grammar("start")


#: Tool-call spellings of common model families, for :func:`tool_tags`: the text before the
#: tool's name, between the name and the arguments, after the arguments, the trigger, and the
#: name of the arguments' member.
TOOL_FORMATS = {
    # Hermes 2/3, Qwen 2.5/3: <tool_call>\n{"name": "get_weather", "arguments": {...}}\n</tool_call>
    "hermes": ('<tool_call>\n{"name": "', '", "arguments": ', '}\n</tool_call>', "<tool_call>"),
    # Llama 3.1/3.2 JSON tool calling (the prompt format's custom tools): {"name": ..., "parameters": ...}
    "llama3": ('{"name": "', '", "parameters": ', '}', '{"name": "'),
    # Mistral (v3 tokenizers): [TOOL_CALLS][{"name": "get_weather", "arguments": {...}}]
    "mistral": ('[TOOL_CALLS][{"name": "', '", "arguments": ', '}]', "[TOOL_CALLS]"),
}
TOOL_FORMATS["qwen"] = TOOL_FORMATS["hermes"]
# Llama 3.1's built-in tool format: <|python_tag|> (the special token 128010 of its tokenizer,
# no text) then the call; for Llama 3 vocabularies only
TOOL_FORMATS["llama3_python_tag"] = (special_token(128010) + '{"name": "', '", "parameters": ', '}',
                                     special_token(128010))


def tool_tags(tools, family: str = "hermes", **schema_options):
    """The tags and triggers of ``tools`` in a model family's tool-call format.

    Parameters
    ----------
    tools : sequence
        Tools as OpenAI's API writes them (``{"type": "function", "function": {"name": ...,
        "parameters": {...}}}``) or just their ``function`` objects (``{"name", "parameters"}``).
    family : {"hermes", "qwen", "llama3", "llama3_python_tag", "mistral"}
        The format (:data:`TOOL_FORMATS`; ``llama3_python_tag`` starts each call with Llama 3's
        special token ``<|python_tag|>``, id 128010). The tool's name is part of the tag's fixed text, so
        only the schema of the tool being called is ever compiled.
    **schema_options
        Options of every tool's :class:`JsonSchema` (``disallow_whitespace``, ...).

    Returns
    -------
    (list of Tag, list of str)
        The tags and the triggers, for :func:`tools_grammar` / :meth:`dotjson.Index.from_tags`.
    """
    if family not in TOOL_FORMATS:
        raise GrammarError(f"family must be one of {sorted(TOOL_FORMATS)}, got {family!r}")
    pre, mid, post, trigger = TOOL_FORMATS[family]
    tags = []
    for i, tool in enumerate(tools):
        f = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not f["name"]:
            raise SchemaError(f"tool {i}: expected {{'name': str, 'parameters': schema}} (or OpenAI's "
                              f"{{'type': 'function', 'function': {{...}}}}), got {tool!r}", pointer="")
        name = f["name"]
        if any(c in name for c in '"\\') or any(ord(c) < 0x20 for c in name):
            raise SchemaError(f"tool {i}: name {name!r} holds a character JSON would escape", pointer="")
        params = f.get("parameters", {"type": "object"})
        tags.append(Tag(f"{pre}{name}{mid}", JsonSchema(params, **schema_options), post))
    return tags, [trigger]


# ============================================================================ reasoning first


#: What may stand between the reasoning's end tag and the JSON document: up to two line breaks.
AFTER_REASONING = ir.repeat(ir.alt(ir.lit("\n"), ir.lit("\r\n")), 0, 2)


def reasoning_grammar(schema: JsonSchema, end: str = "</think>", begin: str | None = None,
                      max_chars: int | None = None) -> ir.Grammar:
    """Unconstrained text until ``end``, then a JSON document of ``schema``.

    Parameters
    ----------
    schema : JsonSchema
        The schema and its options.
    end : str
        The tag that ends the reasoning (``"</think>"``); the text before it never holds it.
    begin : str, optional
        A tag the output starts with (``"<think>"``); ``None`` when the prompt already opened
        the reasoning (Qwen3's and DeepSeek-R1's templates do).
    max_chars : int, optional
        At most this many characters of reasoning (then ``end`` must follow). Unbounded text is
        one automaton state (one mask); bounded text is a state per character, the count held
        in the state.

    The document after ``end`` is the schema's (``ws value ws``, see ``docs/grammar.md``),
    after at most two line breaks (so ``</think>\n\n{`` fits even with compact JSON).
    """
    _check_text(end, "reasoning end tag")
    if not end:
        raise GrammarError("the reasoning end tag must not be empty")
    if begin is not None:
        _check_text(begin, "reasoning begin tag")
    src = EmbeddedSchemas({})
    value = src.add(schema)
    ws = ir.EPS if schema.disallow_whitespace else ir.Ref(src.base_prefix(schema) + "ws")
    doc = ir.seq(AFTER_REASONING, ws, value, ws)
    plain = src.plain
    src._taken |= {"start"}
    stem = src._fresh_prefix("think")[:-1]
    if max_chars is None:
        text = free_text([end], lambda k: doc, plain, stem, may_end=False)
    else:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 0:
            raise GrammarError(f"max_chars: expected a non-negative integer or None, got {max_chars!r}")
        text = ir.seq(ir.Diff(ir.repeat(ir.ANY_CHAR, 0, max_chars),
                              ir.seq(ANY_TEXT, ir.lit(end), ANY_TEXT)), ir.lit(end), doc)
    if not begin and isinstance(text, ir.Ref):
        return src.grammar(text.name)  # (one state for the whole unbounded text, from its start)
    plain["start"] = ir.seq(ir.lit(begin or ""), text)
    return src.grammar("start")
