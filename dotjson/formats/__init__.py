"""JSON Schema ``format`` values as languages over decoded strings: the registry.

Every ``format`` a JSON Schema draft defines has one :class:`Format` entry in :data:`FORMATS`:
its name, the function that builds its language (an IR node over decoded strings, full match;
``None`` when dotjson has no exact language for it), the draft that introduced it, whether the
language is exactly the format's (else *narrower*: valid strings refused, never the reverse,
as ``notes`` says), and notes. Everything else reads the registry: the schema translator
(:func:`format_to_ir`, :data:`UNSUPPORTED_FORMATS`), the warm-up, and the documentation's
format lists, which ``tools/gen_format_docs.py`` writes from it (``tests/test_formats.py``
fails when they are stale).

Adding a format is one entry here, pointing at a builder in its own module::

    Format("regex", regex_format.build, "draft-03", True, "ECMA-262 pattern syntax"),

then ``python3 tools/gen_format_docs.py`` and a test of the language in ``tests/``.

The builders live in :mod:`dotjson.formats.rfc` (dates, times, internet addresses, URIs, JSON
pointers, URI templates) and :mod:`dotjson.formats.idn` (``idn-hostname``, ``idn-email``).
Formats no draft defines (``int32``, ``jsonschema``, ...) are annotations for every validator:
:func:`format_to_ir` returns ``None`` for them too and the translator ignores them, exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from dotjson import ir
from dotjson.formats import idn, rfc

__all__ = ["Format", "FORMATS", "format_to_ir", "SUPPORTED_FORMATS", "UNSUPPORTED_FORMATS"]


@dataclass(frozen=True)
class Format:
    """One ``format`` a JSON Schema draft defines.

    Attributes
    ----------
    name : str
        The ``format`` value.
    build : callable or None
        ``() -> ir.Node``: the set of decoded strings the format accepts (ref-free, full
        match), built once per process; ``None`` when dotjson has no exact language for it
        (a schema asserting it raises ``UnsupportedSchemaError``).
    since : str
        The draft that defines it first (``"draft-04"``, ``"draft-07"``, ``"2019-09"``).
    exact : bool
        Whether the language is exactly the format's; ``False``: narrower (some valid strings
        refused, never an invalid one accepted), ``notes`` says which.
    notes : str
        The specification followed and, when not exact, what is refused (Markdown).
    warm : bool
        Whether :func:`dotjson.warmup` builds its language (``False`` for the IDN formats: ~0.2 s
        each and rare, built by the first schema that names them).
    """

    name: str
    build: Callable[[], ir.Node] | None
    since: str
    exact: bool
    notes: str
    warm: bool = True


FORMATS: tuple[Format, ...] = (
    Format("date", rfc.full_date, "draft-07", True,
           "RFC 3339 full-date; real month lengths; Feb 29 only in Gregorian leap years"),
    Format("time", rfc.full_time, "draft-07", True,
           "RFC 3339 full-time; `T`/`Z` either case; leap second `:60` only at 23:59 UTC (the local time "
           "the offset maps there)"),
    Format("date-time", rfc.date_time, "draft-04", True, "date `T` time"),
    Format("duration", rfc.duration, "2019-09", True, "RFC 3339 appendix A"),
    Format("email", rfc.email, "draft-04", False,
           "RFC 5321 Mailbox: dot-atom or quoted local part; hostname, `[IPv4]` or `[IPv6:…]` domain; "
           "**refused:** General-address-literal, A-labels (as `hostname`)"),
    Format("idn-email", idn.idn_email, "draft-07", False,
           "RFC 6531: `email` with UTF-8 in atext, qtext and quoted pairs; domain an `idn-hostname` "
           "(NFC not required, as the suite reads RFC 6531) or an address literal as `email`; "
           "**refused:** as `email` and `idn-hostname`", warm=False),
    Format("hostname", rfc.hostname, "draft-04", False,
           "RFC 1123 labels ≤ 63, total ≤ 253; **refused:** labels with `--` in positions 3–4 (all "
           "A-labels, `xn--…`): Punycode validity is not a practical regular language"),
    Format("idn-hostname", idn.idn_hostname, "draft-07", False,
           "IDNA2008 (RFC 5890–5893): U-labels of PVALID code points, the CONTEXTJ/CONTEXTO rules, "
           "hyphen rules, no leading mark, NFC, the Bidi rule over the whole name, separators "
           "`.` U+3002 U+FF0E U+FF61; LDH labels as `hostname`. **Refused:** A-labels (`xn--…`); "
           "U-labels whose A-label length is not provably ≤ 63 octets by a per-code-point digit "
           "bound (Latin ≤ 11, Greek/Cyrillic/Indic ≤ 9, CJK/Hangul ≤ 8 non-ASCII characters), "
           "names of 4+ labels not provably ≤ 253 octets (`n + 12K`, `K` non-ASCII); a "
           "second-of-composite mark not right after a starter (NFC check); code points newer than "
           "Python's `unicodedata`. **Slow to generate:** a mask inside the name costs 0.1–5 s on "
           "Llama 3 (`perf/bench_idn.py`; checking a document is fast): its length counts sit "
           "inside intersections, a new term per count", warm=False),
    Format("ipv4", rfc.ipv4, "draft-04", True, "dotted quad, no leading zeros"),
    Format("ipv6", rfc.ipv6, "draft-04", True, "RFC 4291 text forms, embedded IPv4"),
    Format("uuid", rfc.uuid, "2019-09", True, "8-4-4-4-12 hex, either case"),
    Format("uri", rfc.uri, "draft-04", True, "RFC 3986 ABNF"),
    Format("uri-reference", rfc.uri_reference, "draft-06", True, "RFC 3986 ABNF"),
    Format("iri", rfc.iri, "draft-07", True, "RFC 3987 ABNF"),
    Format("iri-reference", rfc.iri_reference, "draft-07", True, "RFC 3987 ABNF"),
    Format("json-pointer", rfc.json_pointer, "draft-06", True, "RFC 6901"),
    Format("relative-json-pointer", rfc.relative_json_pointer, "draft-07", True, "the relative JSON pointer draft"),
    Format("uri-template", rfc.uri_template, "draft-06", True,
           "RFC 6570 syntax, level 4 (operators, variable lists, prefix and explode modifiers)"),
    Format("regex", lambda: _ecma_pattern(), "draft-03", False,
           "ECMA-262 patterns, `u` flag (V8 the reference), as a regular under-approximation "
           "(`dotjson/jsonschema/ecma_pattern.py`; the exact language is not even context-free); "
           "**refused:** groups nested over 16 deep; `{m,n}` with bounds of equal length ≥ 3 and "
           "the same first digit, or `n` over 9 digits; class ranges other than two literals "
           "(non-ASCII: in different blocks), two `\\xHH` or two `\\uHHHH` (same `PP`: only "
           "`00`); more than one named group, `\\k` other than after a top-level one-letter "
           "group; backreferences; `\\0` in a class", warm=False),
)


def _ecma_pattern() -> ir.Node:
    from dotjson.jsonschema.ecma_pattern import pattern_language  # (the JSON layer's own module)

    return pattern_language()

_BY_NAME = {f.name: f for f in FORMATS}

SUPPORTED_FORMATS = frozenset(f.name for f in FORMATS if f.build is not None)

#: Formats a JSON Schema draft defines that dotjson cannot check exactly: a schema asserting one
#: raises ``UnsupportedSchemaError`` (a warning with ``lenient=True``), never ignored silently.
UNSUPPORTED_FORMATS = frozenset(f.name for f in FORMATS if f.build is None)


@functools.lru_cache(maxsize=None)
def format_to_ir(name: str) -> ir.Node | None:
    """The set of decoded strings a JSON Schema ``format`` accepts.

    Parameters
    ----------
    name : str
        The ``format`` value.

    Returns
    -------
    ir.Node or None
        A ref-free node over decoded strings (full match), or ``None`` when the format is not
        supported (the caller decides whether that is an error or an ignored annotation).
    """
    f = _BY_NAME.get(name)
    return f.build() if f is not None and f.build is not None else None
