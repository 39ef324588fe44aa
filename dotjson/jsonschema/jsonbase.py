"""The JSON grammar as IR: the rules of ``grammars/json.lark`` and the whitespace between tokens.

Every JSON Schema grammar is built over these base rules (``json_value``, ``json_string``,
``json_string_char``, ``ws``, ...): :func:`json_base` loads ``grammars/json.lark`` once per
process (through :func:`dotjson.grammar.load_lark`, Lark's own loader) and hands out its rules
for one setting of whitespace, rule-name prefix and string spellings. The whitespace facts live
here once: :data:`WHITESPACE_MODES`, the bytes JSON allows between tokens
(:data:`JSON_WS_BYTES`) and the ``ws`` rule of ``whitespace="json"`` (:data:`JSON_WS`).
"""

from __future__ import annotations

import functools
from pathlib import Path

from dotjson import ir
from dotjson.grammar import load_lark
from dotjson.jsonschema.jsonstr import spellings as _spellings

__all__ = ["json_base", "json_base_items", "json_base_grammar", "WHITESPACE_MODES", "JSON_WS_BYTES", "JSON_WS",
           "WARM_ROWS", "KEY_CHARS", "warm_items", "QUOTE", "punctuation"]

#: ``whitespace=`` modes: ``"bounded"`` (the ``ws`` rule of ``grammars/json.lark``) and ``"json"``
#: (RFC 8259: any run of space, tab, line feed and carriage return between tokens).
WHITESPACE_MODES = ("bounded", "json")
#: The bytes RFC 8259 allows between tokens: tab, line feed, carriage return, space.
JSON_WS_BYTES = b"\t\n\r "
#: The ``ws`` rule of ``whitespace="json"``: any run of :data:`JSON_WS_BYTES`.
JSON_WS = ir.repeat(ir.chars(*((b, b) for b in JSON_WS_BYTES)), 0, None)
#: The rows a base image computes ahead (``ir.Grammar.shared``'s ``warm``): the whitespace rule
#: between tokens (named ``ws`` in every whitespace mode) under its own bytes.
WARM_ROWS = (("ws", JSON_WS_BYTES),)
#: The characters a base image reads the key-set spellings of ahead (``ir.KeyChars``): printable
#: ASCII, what nearly every property name is made of.
KEY_CHARS = "".join(map(chr, range(0x20, 0x7F)))


#: A string's quote: one node for the process, so that every index finds it compiled in its base
#: image (the automaton compiles a node once per store, by identity: a quote made per object was
#: a program and a term of its own in each object's first state, ~25 us).
QUOTE = ir.Lit('"')

#: ``punctuation``'s nodes per whitespace setting and base prefix (a few: bounded)
_PUNCT: dict = {}


def punctuation(disallow_whitespace: bool, prefix: str = "") -> tuple:
    """``(ws, sep, colon)`` between JSON tokens, for a grammar whose base rules carry ``prefix``:
    the whitespace (a reference to the base rule ``ws``, or ε), ``ws "," ws`` and ``ws ":" ws``.
    The same node objects at every call (for up to 64 settings), so that the base image holds
    their terms and no index compiles them again (a schema's objects write them in every state
    and member: ~40 us each, once per index, in its first masks)."""
    key = (bool(disallow_whitespace), prefix)
    hit = _PUNCT.get(key)
    if hit is None:
        ws = ir.EPS if disallow_whitespace else ir.Ref(prefix + "ws")
        hit = (ws, ir.seq(ws, ir.lit(","), ws), ir.seq(ws, ir.lit(":"), ws))
        if len(_PUNCT) < 64:
            _PUNCT[key] = hit
    return hit


@functools.lru_cache(maxsize=None)
def warm_items(spellings: str = "any") -> tuple:
    """``ir.Grammar.shared``'s ``warm`` for spelling policy ``spellings`` (one tuple per policy
    and process: the image is found by it): :data:`WARM_ROWS`, then the escapes of
    :data:`KEY_CHARS` in declared names (the policy's ``lit_char``) and in any key
    (``enc_char``) under JSON's string syntax, which every object's first key set reads."""
    from dotjson.jsonschema.jsonstr import STRING_SYNTAX

    sp = _spellings(spellings)
    spell = dict.fromkeys((sp.lit_char, sp.enc_char))
    # the content of an undeclared key, spelt as the policy spells a key's characters: every
    # declared name's spellings belong to it, and no word of it holds the closing quote raw
    free = (ir.FreeText(sp.json_string_content(), STRING_SYNTAX.close, STRING_SYNTAX.escape),)
    return WARM_ROWS + tuple(ir.KeyChars(f, STRING_SYNTAX, KEY_CHARS) for f in spell) + free


def _json_lark_text() -> str:
    try:
        from importlib.resources import files

        return files("dotjson.grammars").joinpath("json.lark").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, TypeError):
        # running from a checkout: grammars/ sits next to the package
        return (Path(__file__).resolve().parents[2] / "grammars" / "json.lark").read_text(encoding="utf-8")


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


@functools.lru_cache(maxsize=4)
def _json_base(disallow_whitespace: bool, spellings: str = "any") -> tuple[tuple[str, ir.Node], ...]:
    rules = _json_rules()
    if spellings != "any":
        rules = dict(rules)
        # one string character as the policy spells it (the lexical pieces of json.lark stay,
        # unreferenced: grammars that name them get every spelling)
        rules["json_string_char"] = _spellings(spellings).JSON_STRING_CHAR
    if not disallow_whitespace:
        return tuple(rules.items())
    memo: dict = {}
    out = {name: _subst_ws(body, memo) for name, body in rules.items()}
    out["ws"] = ir.EPS
    return tuple(out.items())


@functools.lru_cache(maxsize=16)
def _json_base_prefixed(disallow_whitespace: bool, prefix: str, spellings: str = "any") -> tuple[tuple[str, ir.Node], ...]:
    items = _json_base(disallow_whitespace, spellings)
    names = {k: prefix + k for k, _ in items}
    memo: dict = {}
    return tuple((prefix + k, ir.rename_refs(v, names, memo)) for k, v in items)


def json_base(disallow_whitespace: bool = False, prefix: str = "", spellings: str = "any") -> dict[str, ir.Node]:
    """The rules of ``grammars/json.lark`` as IR (a fresh dict over shared, immutable nodes).

    Parameters
    ----------
    disallow_whitespace : bool
        ``True``: the ``ws`` rule is ε and every reference to it is dropped (compact JSON).
    prefix : str, default ""
        Prepended to every rule name (and reference): the base rules of one whitespace setting
        in a grammar holding schemas with different settings (:mod:`dotjson.embed`).
    spellings : {"any", "canonical"}
        ``"canonical"``: ``json_string_char`` spells a character raw wherever JSON allows it
        (:mod:`dotjson.jsonschema.jsonstr`'s generation policy); ``"any"``: every JSON spelling.

    Returns
    -------
    dict of str to ir.Node
        Rules ``json_value``, ``json_object``, ``json_member``, ``json_array``, ``json_string``,
        ``json_string_content``, ``json_string_char``, ``json_number``, ``json_integer``,
        ``json_boolean``, ``json_null``, ``ws`` and helpers. Loaded once per process.
    """
    if prefix:
        return dict(_json_base_prefixed(bool(disallow_whitespace), prefix, spellings))
    return dict(_json_base(bool(disallow_whitespace), spellings))


def json_base_items(disallow_whitespace: bool = False, spellings: str = "any") -> tuple[tuple[str, ir.Node], ...]:
    """:func:`json_base` as the process's one immutable tuple of ``(name, body)`` pairs: the same
    object at every call, so that it can stand for the base rules in a cache key
    (:func:`dotjson.automaton.base_image`)."""
    return _json_base(bool(disallow_whitespace), spellings)


def json_base_grammar(disallow_whitespace: bool = False, start: str = "json_value") -> ir.Grammar:
    """:func:`json_base` as a grammar, starting at ``start``."""
    return ir.Grammar(json_base(disallow_whitespace), start)


