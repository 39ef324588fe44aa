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
:func:`.anchors._anchored`). The language is always over Unicode scalar values (decoded characters). ECMA lookaheads and
lookbehinds are exact: a condition on the rest of the text (or on what came before) at one
position is an intersection or a difference with it (``ir.And``/``ir.Diff``; see
:func:`.lookarounds._with_lookarounds`), except inside repeated groups (but for ``(?:(?!A)c)*`` at the end) and
lookbehinds inside groups or after a lookahead. Constructs that are not regular, or whose
meaning depends on context we do not track (backreferences, those lookarounds, every
lookaround of a Python pattern (a Lark terminal's would look past its own text), word
boundaries, multiline anchors, anchors inside groups of a Python pattern or beside a
lookaround, possessive quantifiers and atomic groups)
raise :class:`~dotjson.errors.UnsupportedSchemaError` (ECMA) or
:class:`~dotjson.errors.GrammarError` (Python); a malformed pattern raises
:class:`~dotjson.errors.SchemaError` (ECMA) or :class:`~dotjson.errors.GrammarError` (Python).

The modules, by concept: :mod:`.charsets` (character classes, Unicode categories, case
closure), :mod:`.ecma` (the ECMA → Python rewrite), :mod:`.tree` (``re._parser`` trees parsed
and converted), :mod:`.anchors` (``^``/``$`` at the edges, between items, inside groups),
:mod:`.lookarounds` (lookaheads and lookbehinds as ``And``/``Diff``); this module holds the
entry points.
"""

from __future__ import annotations

import functools
import re

from dotjson import ir
from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError
from dotjson.regex.anchors import _anchored, _expand_edges, _middle_anchors
from dotjson.regex.charsets import ECMA_LINE_TERMINATORS, ECMA_SPACE, _ANY_STAR
from dotjson.regex.ecma import _ecma_to_python
from dotjson.regex.lookarounds import _with_lookarounds
from dotjson.regex.tree import _anchor_name, _C, _Converter, _has_anchor, _has_look, _is_end, _is_start, _parse, _seq_lits

__all__ = ["regex_to_ir", "python_regex_to_ir", "regex_to_grammar", "ECMA_SPACE", "ECMA_LINE_TERMINATORS"]


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
