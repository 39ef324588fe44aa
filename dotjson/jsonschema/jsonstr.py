"""Languages over decoded strings → languages over their JSON string spellings.

A JSON string's content (the text between the quotes) may spell each character in several
ways: the character itself (unless it is ``"``, ``\\`` or a control character U+0000–U+001F),
a short escape (``\\" \\\\ \\/ \\b \\f \\n \\r \\t``), ``\\uXXXX`` with hex digits of either case for
every BMP character, and a UTF-16 surrogate pair ``\\uD8xx\\uDCxx`` for astral characters.
Lone surrogates are never produced.

:func:`encode_string_language` maps a language over decoded strings to the language of all
spellings of its strings. Because decoding is a function, the mapping is a homomorphism that
also commutes with intersection and difference, so it is applied to the leaves
(:class:`~dotjson.ir.Lit`, :class:`~dotjson.ir.Chars`) and the tree is rebuilt.
"""

from __future__ import annotations

import bisect
import functools
from typing import NamedTuple

from dotjson import ir
from dotjson.trie import PlainClass
from dotjson.errors import DotjsonTypeError, GrammarError, SchemaError

__all__ = ["encode_string_language", "encode_chars", "enc_char", "enc_text", "json_string_content",
           "string_of_length", "JSON_STRING_CHAR", "SPELLINGS", "Spellings", "spellings", "default_spellings",
           "StringSyntax", "STRING_SYNTAX", "PLAIN_CHARS", "PLAIN_CLASS"]


class StringSyntax(NamedTuple):
    """A string syntax as data for the generic engine: how the text between a string's quotes
    ends, escapes and spells a character. The engine's key sets (``dotjson.automaton.keysets``)
    read it from their tables instead of knowing JSON; :data:`STRING_SYNTAX` is JSON's.

    Attributes
    ----------
    close : int
        The byte that ends the string (the closing quote).
    escape : int
        The byte that starts an escape (the backslash).
    hex_escape : int
        After ``escape``, the byte that starts a code unit written in hex digits (``u``).
    low : int
        The least byte a character may be written raw with (below it: escaped only).
    short : tuple of (int, int)
        ``(code point, byte)``: the characters with a one-byte escape, and the byte that follows
        ``escape`` in it (distinct code points; in the order the spellings list them).
    """

    close: int
    escape: int
    hex_escape: int
    low: int
    short: tuple


#: JSON's string syntax (RFC 8259 §7): ``"`` closes, ``\\`` escapes, ``\\uXXXX`` spells a UTF-16
#: code unit, U+0000-U+001F only escaped, and eight one-byte escapes. The one definition of these
#: facts: the spellings below and the engine's key set tables are written from it.
STRING_SYNTAX = StringSyntax(
    close=0x22, escape=0x5C, hex_escape=0x75, low=0x20,
    short=((0x22, 0x22), (0x5C, 0x5C), (0x2F, 0x2F), (0x08, 0x62), (0x0C, 0x66), (0x0A, 0x6E), (0x0D, 0x72),
           (0x09, 0x74)),
)
_ESC = chr(STRING_SYNTAX.escape)
#: each character's short escape, as text
_SHORT = {cp: _ESC + chr(b) for cp, b in STRING_SYNTAX.short}
# characters JSON does not let stand raw in a string: the quote, the backslash, U+0000-U+001F
_NEEDY = ir.chars((0x00, STRING_SYNTAX.low - 1), (STRING_SYNTAX.close, STRING_SYNTAX.close),
                  (STRING_SYNTAX.escape, STRING_SYNTAX.escape))
#: The *plain* characters: those a JSON string takes as themselves (every one but the quote, the
#: backslash and U+0000-U+001F; surrogates are no characters).
PLAIN_CHARS = ir.chars_complement(_NEEDY)
#: The characters the token side takes as *plain* (:class:`dotjson.trie.PlainClass`): the class
#: every :class:`~dotjson.Index` hands down to its vocabulary's tries and its mask walk. The plain
#: characters less U+2028 and U+2029, ECMAScript's line terminators beyond ``\n`` and ``\r``:
#: a regex's ``.`` (and a class negating only line terminators) then takes every plain character,
#: so that a ``.*`` of a ``pattern`` or ``patternProperties`` key is a state every plain token
#: keeps (the walk's shortcuts), not a walk of the whole vocabulary (5-8 ms at its first mask);
#: the few tokens holding either character are walked with the special ones (none of Llama 3's).
PLAIN_CLASS = PlainClass([r for lo, hi in PLAIN_CHARS.ranges
                          for r in ((lo, min(hi, 0x2027)), (max(lo, 0x202A), hi)) if r[0] <= r[1]])


def _digit_chars(digits: tuple[int, ...]) -> ir.Chars:
    rs = []
    for d in digits:
        if d < 10:
            rs.append((0x30 + d, 0x30 + d))
        else:
            rs.append((0x61 + d - 10, 0x61 + d - 10))
            rs.append((0x41 + d - 10, 0x41 + d - 10))
    return ir.chars(*rs)


_HEX = _digit_chars(tuple(range(16)))


def _clip(ranges: tuple[tuple[int, int], ...], lo: int, hi: int) -> tuple[tuple[int, int], ...]:
    out = []
    # (sorted and apart: start at the first range ending at or after lo, stop past hi; a class
    # of a thousand ranges is clipped 16 times per hex digit)
    for k in range(max(bisect.bisect_left(ranges, (lo, lo)) - 1, 0), len(ranges)):
        a, b = ranges[k]
        if a > hi:
            break
        a, b = max(a, lo), min(b, hi)
        if a <= b:
            out.append((a - lo, b - lo))
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def _hex_lang(ranges: tuple[tuple[int, int], ...], width: int) -> ir.Node:
    """Spellings, as ``width`` hex digits (either case), of the numbers in ``ranges``.

    A digit trie with shared sub-tries: digits whose remaining sets are equal share one
    branch, and a full block is ``Repeat(hex digit, w, w)``, so a large range costs
    O(width × 16) nodes, not one alternative per number.
    """
    if not ranges:
        return ir.EMPTY
    if width == 0:
        return ir.EPS
    full = 16**width - 1
    if ranges == ((0, full),):
        return ir.repeat(_HEX, width, width)
    block = 16 ** (width - 1)
    groups: dict[tuple, list[int]] = {}
    for d in range(16):
        sub = _clip(ranges, d * block, (d + 1) * block - 1)
        if sub:
            groups.setdefault(sub, []).append(d)
    return ir.alt(*(ir.seq(_digit_chars(tuple(ds)), _hex_lang(sub, width - 1)) for sub, ds in groups.items()))


@functools.lru_cache(maxsize=65536)
def encode_chars(c: ir.Chars) -> ir.Node:
    """Every JSON spelling of one character of ``c`` (as string content).

    Parameters
    ----------
    c : ir.Chars
        A set of Unicode scalar values (surrogates D800-DFFF in it are dropped).

    Raises
    ------
    SchemaError
        ``c`` holds surrogates only: the character of a string value that no UTF-8 JSON text
        can carry.

    Returns
    -------
    ir.Node
        A ref-free node: plain characters, short escapes, ``\\uXXXX`` and surrogate pairs.
    """
    if any(lo <= 0xDFFF and hi >= 0xD800 for lo, hi in c.ranges):
        scalars = ir.chars(*c.ranges)  # drops D800-DFFF
        if not scalars.ranges:
            # A string value (const, enum, property name, pattern literal) holding an unpaired
            # surrogate: no UTF-8 text holds one, and its only JSON spelling, a lone \\uD8xx
            # escape, decodes to a string that is not Unicode (RFC 8259 §8.2). Never produced.
            cp = c.ranges[0][0]
            raise SchemaError(
                f"a string holds the lone surrogate U+{cp:04X}: expected Unicode scalar values "
                f"(a JSON document generated as UTF-8 cannot carry an unpaired surrogate)"
            )
        c = scalars
    parts: list[ir.Node] = []
    plain = ir.chars_intersect(c, PLAIN_CHARS)
    if plain.ranges:
        parts.append(plain)
    for cp, esc in _SHORT.items():
        if _has(c, cp):
            parts.append(ir.Lit(esc))
    bmp = _clip(c.ranges, 0, 0xFFFF)
    if bmp:
        parts.append(ir.seq(ir.Lit("\\u"), _hex_lang(bmp, 4)))
    astral = _clip(c.ranges, 0x10000, 0x10FFFF)
    if astral:
        # group by high surrogate: pieces sharing a low-surrogate set share one branch
        groups: dict[tuple, list[tuple[int, int]]] = {}
        for lo, hi in astral:
            hlo, hhi = lo >> 10, hi >> 10
            llo, lhi = lo & 0x3FF, hi & 0x3FF
            if hlo == hhi:
                groups.setdefault(((llo, lhi),), []).append((hlo, hlo))
            else:
                groups.setdefault(((llo, 0x3FF),), []).append((hlo, hlo))
                if hhi - hlo > 1:
                    groups.setdefault(((0, 0x3FF),), []).append((hlo + 1, hhi - 1))
                groups.setdefault(((0, lhi),), []).append((hhi, hhi))
        # merge, per high value, the low sets (a high value can appear in several groups)
        per_high: dict[int, list[tuple[int, int]]] = {}
        full_highs: list[tuple[int, int]] = []
        for lows, highs in groups.items():
            for a, b in highs:
                if lows == ((0, 0x3FF),):
                    full_highs.append((a, b))
                else:
                    for h in range(a, b + 1):
                        per_high.setdefault(h, []).extend(lows)
        by_lows: dict[tuple, list[tuple[int, int]]] = {}
        if full_highs:
            by_lows[((0, 0x3FF),)] = list(full_highs)
        for h, lows in per_high.items():
            merged = ir.chars(*lows).ranges  # offsets (< 0x400): a plain sort and merge
            by_lows.setdefault(merged, []).append((h, h))
        for lows, highs in by_lows.items():
            # ir.chars only sorts and merges here: these are offsets (< 0x400), not code points
            hi_ranges = tuple((a + 0xD800, b + 0xD800) for a, b in ir.chars(*highs).ranges)
            lo_ranges = tuple((a + 0xDC00, b + 0xDC00) for a, b in lows)
            parts.append(
                ir.seq(ir.Lit("\\u"), _hex_lang(hi_ranges, 4), ir.Lit("\\u"), _hex_lang(lo_ranges, 4))
            )
    return ir.alt(*parts)


def _has(c: ir.Chars, cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in c.ranges)


def _encode_lit(text: str) -> ir.Node:
    return ir.seq(*(encode_chars(ir.Chars(((ord(ch), ord(ch)),))) for ch in text))


def encode_string_language(node: ir.Node, encode=encode_chars) -> ir.Node:
    """The JSON string contents that spell exactly the decoded strings of ``node``.

    Parameters
    ----------
    node : ir.Node
        A ref-free language over decoded strings (Unicode scalar values).
    encode : callable, default :func:`encode_chars`
        The spellings of one character of a set (:func:`encode_chars`: every JSON spelling;
        ``spellings("canonical").encode_chars``: no gratuitous escape).

    Returns
    -------
    ir.Node
        The language of their spellings between the quotes (no quotes included).

    Raises
    ------
    GrammarError
        If ``node`` references a rule (string languages must be regular).
    """
    memo: dict[int, ir.Node] = {}

    def go(n: ir.Node) -> ir.Node:
        key = id(n)
        hit = memo.get(key)
        if hit is not None:
            return hit
        if isinstance(n, ir.Lit):
            out = ir.seq(*(encode(ir.Chars(((ord(ch), ord(ch)),))) for ch in n.text))
        elif isinstance(n, ir.Chars):
            out = encode(n) if n.ranges else ir.EMPTY
        elif isinstance(n, ir.Seq):
            out = ir.seq(*(go(x) for x in n.items))
        elif isinstance(n, ir.Alt):
            out = ir.alt(*(go(x) for x in n.items))
        elif isinstance(n, ir.Repeat):
            out = ir.repeat(go(n.item), n.min, n.max)
        elif isinstance(n, ir.And):
            out = ir.And(tuple(go(x) for x in n.items))
        elif isinstance(n, ir.Diff):
            out = ir.Diff(go(n.left), go(n.right))
        elif isinstance(n, ir.Ref):
            raise GrammarError(f"a string language cannot reference rule {n.name!r}")
        else:  # pragma: no cover
            raise DotjsonTypeError(f"not an IR node: {n!r}")
        memo[key] = out
        memo[-key - 1] = n  # keep n alive so its id is not reused during this call
        return out

    try:
        return go(node)
    finally:
        go = None  # (it refers to itself through its closure: a reference cycle left to the collector)


JSON_STRING_CHAR = encode_chars(ir.ANY_CHAR)


#: per-process: character -> every JSON spelling of it (see :func:`enc_char`)
ENC_CHAR: dict = {}


def enc_char(ch: str) -> ir.Node:
    """Every JSON spelling of the character ``ch`` as string content: one node per character and
    process, shared by every schema (names, literals, key tries), so that an automaton compiles it
    once (the printable ASCII ones are in the store image every automaton starts from)."""
    hit = ENC_CHAR.get(ch)
    if hit is None:
        hit = ENC_CHAR[ch] = encode_chars(ir.Chars(((ord(ch), ord(ch)),)))
    return hit


_SHORT_TEXT: dict = {}


def enc_text(text: str) -> ir.Node:
    """All JSON spellings of ``text`` (between the quotes): a sequence of :func:`enc_char` nodes,
    short texts cached per process (the tails of names in a key trie recur in every state of a
    wide object, literals recur across schemas: one node each, compiled once per automaton)."""
    return _text_of(text, enc_char, _SHORT_TEXT)


def _text_of(text: str, char, memo: dict) -> ir.Node:
    """The sequence of ``char(ch)`` over ``text``, memoized in ``memo`` for short texts."""
    hit = memo.get(text)
    if hit is not None:
        return hit
    node = ir.seq(*map(char, text))
    if len(text) <= 8 and len(memo) < 100_000:
        memo[text] = node
    return node


def json_string_content() -> ir.Node:
    """Any JSON string content (the text between the quotes).

    Returns
    -------
    ir.Node
        ``json_string_char*``.
    """
    return ir.repeat(JSON_STRING_CHAR, 0, None)


def string_of_length(min_len: int = 0, max_len: int | None = None) -> ir.Node:
    """JSON string content of ``min_len`` to ``max_len`` characters (escapes count as one).

    Parameters
    ----------
    min_len : int
        Fewest characters.
    max_len : int or None
        Most characters; ``None`` for no limit. Large bounds stay a counted ``Repeat``.
    """
    if min_len < 0 or (max_len is not None and max_len < min_len):
        return ir.EMPTY
    return ir.repeat(JSON_STRING_CHAR, min_len, max_len)


# ============================================================================ spelling policies
#
# Generation mode (``spellings="canonical"``, the default): a model writes a string the way
# ``json.dumps(..., ensure_ascii=False)`` would. A schema's own strings (declared keys, ``enum``
# and ``const`` strings) have exactly that one spelling; free string contents spell every
# character that JSON lets stand raw only raw, and keep the escapes of the others (``\"``,
# ``\\``, the control characters: their short escapes and ``\u00XX`` in either case). A
# ``\u0061`` for ``a``, ``\/``, or a surrogate pair for a character UTF-8 carries raw is a
# spelling no model needs and a small one wanders into. ``spellings="any"``: every JSON
# spelling of every string (the "every valid document" configuration's default).
#
# Exactness of the sub-language: a content language holds every canonical content spelling of a
# string or none of them, so intersections and differences of content languages stay exact; a
# literal's one spelling is a subset of its content spellings, so a literal is only ever on the
# positive side. What a Diff takes away (a declared name out of the extra keys, an excluded enum
# value out of a string type) is the content encoding of the text.

#: ``spellings=`` modes
SPELLINGS = ("canonical", "any")

# the short escapes of the characters that need one (not ``\\/``)
_SHORT_NEEDED = {cp: e for cp, e in _SHORT.items() if _has(_NEEDY, cp)}


@functools.lru_cache(maxsize=65536)
def _canonical_chars(c: ir.Chars) -> ir.Node:
    """The canonical content spellings of one character of ``c``: raw where JSON allows it
    raw; a character that needs an escape keeps all of its escapes (short, ``\\u00XX``)."""
    if any(lo <= 0xDFFF and hi >= 0xD800 for lo, hi in c.ranges):
        scalars = ir.chars(*c.ranges)  # drops D800-DFFF
        if not scalars.ranges:
            encode_chars(c)  # raises the lone-surrogate SchemaError (c holds nothing else)
        # (only then: every spelling of a class this wide, \u escapes and surrogate pairs, is a
        # hex trie that costs ~0.5 ms per distinct class, e.g. each "any key character but the
        # ones some name continues with" of an open object's undeclared keys)
        c = scalars
    parts: list[ir.Node] = []
    plain = ir.chars_intersect(c, PLAIN_CHARS)
    if plain.ranges:
        parts.append(plain)
    needy = ir.chars_intersect(c, _NEEDY)
    if needy.ranges:
        for cp, esc in _SHORT_NEEDED.items():
            if _has(needy, cp):
                parts.append(ir.Lit(esc))
        parts.append(ir.seq(ir.Lit("\\u"), _hex_lang(needy.ranges, 4)))
    return ir.alt(*parts)


class Spellings:
    """One spelling policy: the encoders a schema compiler builds its string languages with.

    Attributes and methods mirror the module's functions: :meth:`encode_chars`,
    :meth:`enc_char`, :meth:`enc_text` (content: every spelling of a character the policy
    allows; what a ``Diff`` takes away), :meth:`lit_char`, :meth:`lit_text` (a schema's own
    string: its one canonical spelling, or every spelling under ``"any"``),
    :attr:`JSON_STRING_CHAR`, :meth:`json_string_content`, :meth:`string_of_length`,
    :meth:`encode_string_language`.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.canonical = name == "canonical"
        if self.canonical:
            self.encode_chars = _canonical_chars
            self._char: dict = {}
            self._lit: dict = {}
            self._text: dict = {}
            self._ltext: dict = {}
        else:
            self.encode_chars = encode_chars
            self.enc_char = self.lit_char = enc_char
            self.enc_text = self.lit_text = enc_text
        self.JSON_STRING_CHAR = self.encode_chars(ir.ANY_CHAR)

    def __repr__(self) -> str:
        return f"Spellings({self.name!r})"

    def enc_char(self, ch: str) -> ir.Node:  # (canonical; "any" binds the module's function)
        hit = self._char.get(ch)
        if hit is None:
            hit = self._char[ch] = self.encode_chars(ir.Chars(((ord(ch), ord(ch)),)))
        return hit

    def enc_text(self, text: str) -> ir.Node:
        return _text_of(text, self.enc_char, self._text)

    def lit_char(self, ch: str) -> ir.Node:
        """The one canonical spelling of ``ch`` (as ``json.dumps(ensure_ascii=False)`` writes it)."""
        hit = self._lit.get(ch)
        if hit is None:
            cp = ord(ch)
            if 0xD800 <= cp <= 0xDFFF:
                encode_chars(ir.Chars(((cp, cp),)))  # the lone-surrogate SchemaError
            if cp in _SHORT_NEEDED:
                hit = ir.Lit(_SHORT_NEEDED[cp])
            elif cp < 0x20:
                hit = ir.Lit(f"\\u{cp:04x}")
            else:
                hit = ir.Lit(ch)
            self._lit[ch] = hit
        return hit

    def lit_text(self, text: str) -> ir.Node:
        return _text_of(text, self.lit_char, self._ltext)

    def json_string_content(self) -> ir.Node:
        """Any string content this policy spells (``json_string_char*``)."""
        return ir.repeat(self.JSON_STRING_CHAR, 0, None)

    def string_of_length(self, min_len: int = 0, max_len: int | None = None) -> ir.Node:
        """String content of ``min_len`` to ``max_len`` characters (see :func:`string_of_length`)."""
        if min_len < 0 or (max_len is not None and max_len < min_len):
            return ir.EMPTY
        return ir.repeat(self.JSON_STRING_CHAR, min_len, max_len)

    def encode_string_language(self, node: ir.Node) -> ir.Node:
        """:func:`encode_string_language` under this policy."""
        return encode_string_language(node, self.encode_chars)


_POLICIES = {name: Spellings(name) for name in SPELLINGS}


def spellings(name: str) -> Spellings:
    """The :class:`Spellings` of mode ``name`` (one of :data:`SPELLINGS`), shared per process.

    Raises
    ------
    SchemaError
        ``name`` is not a mode.
    """
    hit = _POLICIES.get(name) if isinstance(name, str) else None
    if hit is None:
        raise SchemaError(f"spellings must be one of {SPELLINGS}, got {name!r}")
    return hit


def default_spellings(spellings_, *, disallow_whitespace=False, close_objects=True, property_order="schema",
                      whitespace="bounded") -> str:
    """The mode ``spellings=None`` means: ``"any"`` in the "every valid document" configuration
    (``property_order="any"``, ``close_objects=False``, ``whitespace="json"``), else
    ``"canonical"``; an explicit mode is returned as it is."""
    if spellings_ is not None:
        return spellings_
    every_valid = property_order == "any" and not close_objects and whitespace == "json" and not disallow_whitespace
    return "any" if every_valid else "canonical"
