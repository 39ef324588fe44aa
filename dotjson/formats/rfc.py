"""The formats written from their RFCs' ABNF: dates and times, internet addresses, URIs and IRIs,
JSON pointers, URI templates (registered in :data:`dotjson.formats.FORMATS`).

Each supported format is written from its RFC's ABNF as an IR node (small pieces go through
:func:`dotjson.regex.regex_to_ir` with full-match semantics). The JSON-Schema-Test-Suite's
``optional/format`` files are the acceptance test (``tests/test_formats.py``).

Exact where a regular language can be:

* ``date``/``date-time``: real month lengths and Gregorian leap years (Feb 29 only in years
  divisible by 4 and not by 100, or by 400); ``time``/``date-time``: a leap second ``:60`` only
  at 23:59 UTC, i.e. at the local time that the offset maps to 23:59 UTC (an ``And`` of an
  hour and a minute constraint, at the end of the string);
* ``hostname``: RFC 1123 labels of at most 63 characters, at most 253 characters in all.

Deliberately narrower than the RFCs (valid strings rejected, never the reverse):

* ``hostname`` (and e-mail domains): labels with ``--`` in positions 3–4, which includes every
  A-label (``xn--...``), are rejected, because Punycode validity is not a regular language.
* ``email``: no ``General-address-literal`` (only IPv4 and ``IPv6:`` literals).

Also: ``iri``, ``iri-reference`` (RFC 3987), ``json-pointer`` (RFC 6901),
``relative-json-pointer`` and ``uri-template`` (RFC 6570 syntax, up to level 4: literals,
expressions with an operator, variable lists, prefix and explode modifiers).
"""

from __future__ import annotations

import functools

from dotjson import ir
from dotjson.regex import regex_to_ir

__all__ = [
    "date_parts", "full_date", "full_time", "date_time", "duration", "ipv4", "ipv6", "hostname", "ldh_label", "email",
    "email_local", "address_literal", "uuid", "uri", "uri_reference", "iri", "iri_reference", "json_pointer",
    "relative_json_pointer", "uri_template",
]


def _r(pattern: str) -> ir.Node:
    return regex_to_ir(pattern, search=False)


_DIGIT = ir.chars((0x30, 0x39))
_HEXDIG = ir.chars((0x30, 0x39), (0x41, 0x46), (0x61, 0x66))


# ----------------------------------------------------------------------------- dates and times


def _two(n: int) -> str:
    return f"{n:02d}"


@functools.lru_cache(maxsize=None)
def date_parts() -> dict[str, ir.Node]:
    """The pieces of ``full-date``: ``year``, days ``d28``/``d30``/``d31``, months ``m31``/``m30``
    (by length; February apart), ``leap`` (the leap years: divisible by 4 and not by 100, or by
    400)."""
    mult4_nonzero = _r("([02468][48]|[2468]0|[13579][26])")
    mult4 = _r("([02468][048]|[13579][26])")
    return {
        "year": ir.repeat(_DIGIT, 4, 4),
        "d28": _r("(0[1-9]|1[0-9]|2[0-8])"),
        "d30": _r("(0[1-9]|[12][0-9]|30)"),
        "d31": _r("(0[1-9]|[12][0-9]|3[01])"),
        "m31": _r("(01|03|05|07|08|10|12)"),
        "m30": _r("(04|06|09|11)"),
        "leap": ir.alt(ir.seq(_DIGIT, _DIGIT, mult4_nonzero), ir.seq(mult4, ir.lit("00"))),
    }


@functools.lru_cache(maxsize=None)
def full_date() -> ir.Node:
    p = date_parts()
    # (the year read once for the 365 days every year has: one branch, not three)
    month_day = ir.alt(ir.seq(p["m31"], ir.lit("-"), p["d31"]), ir.seq(p["m30"], ir.lit("-"), p["d30"]),
                       ir.seq(ir.lit("02-"), p["d28"]))
    return ir.alt(ir.seq(p["year"], ir.lit("-"), month_day), ir.seq(p["leap"], ir.lit("-02-29")))


@functools.lru_cache(maxsize=None)
def full_time() -> ir.Node:
    hour = _r("([01][0-9]|2[0-3])")
    minute = _r("[0-5][0-9]")
    frac = ir.opt(ir.seq(ir.lit("."), ir.repeat(_DIGIT, 1, None)))
    z = ir.chars((0x5A, 0x5A), (0x7A, 0x7A))
    num_offset = ir.seq(ir.chars((0x2B, 0x2B), (0x2D, 0x2D)), hour, ir.lit(":"), minute)
    # (a trie on the hour's first digit, the rest shared: see _leap_second for why)
    rest = ir.seq(ir.lit(":"), minute, ir.lit(":"), minute, frac, ir.alt(z, num_offset))
    normal = ir.alt(ir.seq(ir.chars((0x30, 0x31)), _DIGIT, rest), ir.seq(ir.lit("2"), ir.chars((0x30, 0x33)), rest))
    return ir.alt(normal, _leap_second(hour, minute, frac, z))


def _leap_second(hour: ir.Node, minute: ir.Node, frac: ir.Node, z: ir.Node) -> ir.Node:
    """``HH:MM:60[.frac]`` and an offset that maps the local time ``HH:MM`` to 23:59 UTC.

    Local time is UTC plus the offset, so ``Z`` needs ``23:59``; ``+hh:mm`` needs ``HH:MM =
    hh:(mm-1)`` when ``mm >= 01`` and ``(hh-1):59`` when ``mm = 00``; ``-hh:mm`` needs ``HH:MM =
    (23-hh):(59-mm)``. The hours and the minutes are related independently, so the language is
    the intersection of two: one branch per local hour (24), fixing the offset's hour and whether
    its minutes are ``00``, and one per local minute (60), fixing the offset's minutes. (A DFA
    remembers ``(HH, MM)`` up to the offset: 1,440 states in one layer; written out without an
    intersection that is 15,343 terms.) One intersection for both signs and ``Z``: 1,189 terms
    for ``time`` as JSON text, against 2,095 for the earlier form (an intersection per sign and
    the 24 ``+hh:00`` cases listed apart), the same language (``tests/test_format_languages.py``).

    The ordinary times beside it (:func:`full_time`) are a trie on the hour's first digit with
    the rest shared, so that each derivative of that branch is a term the compiled format
    already holds: an old term id, sorted before the new intersection term in the alternation a
    state is, so the state's emptiness check stops at it and never searches the intersection
    (whose search visits every ``(HH, MM)`` pair: ~6,800 new terms in a value's first mask).
    """
    nonzero_minute = _r("(0[1-9]|[1-5][0-9])")
    tail60 = ir.seq(ir.lit(":60"), frac)

    def hour_side(hh: int) -> ir.Node:
        offsets = [
            ir.seq(ir.lit(f"+{_two(hh)}:"), nonzero_minute),  # +hh:mm, mm >= 01: local hh:(mm-1)
            ir.lit(f"+{_two((hh + 1) % 24)}:00"),  # +hh:00: local (hh-1):59
            ir.seq(ir.lit(f"-{_two(23 - hh)}:"), minute),
        ]
        if hh == 23:
            offsets.append(z)
        return ir.seq(ir.lit(f"{_two(hh)}:"), minute, tail60, ir.alt(*offsets))

    def minute_side(mm: int) -> ir.Node:
        offsets = [
            ir.seq(ir.lit("+"), hour, ir.lit(f":{_two((mm + 1) % 60)}")),
            ir.seq(ir.lit("-"), hour, ir.lit(f":{_two(59 - mm)}")),
        ]
        if mm == 59:
            offsets.append(z)
        return ir.seq(ir.lit(_two(mm)), tail60, ir.alt(*offsets))

    by_hour = ir.alt(*(hour_side(hh) for hh in range(24)))
    by_minute = ir.seq(hour, ir.lit(":"), ir.alt(*(minute_side(mm) for mm in range(60))))
    return ir.And((by_hour, by_minute))


# ----------------------------------------------------------------------------- duration


@functools.lru_cache(maxsize=None)
def duration() -> ir.Node:
    n = ir.repeat(_DIGIT, 1, None)

    def u(c: str) -> ir.Node:
        return ir.seq(n, ir.lit(c))

    second = u("S")
    minute = ir.seq(u("M"), ir.opt(second))
    hour = ir.seq(u("H"), ir.opt(minute))
    time = ir.seq(ir.lit("T"), ir.alt(hour, minute, second))
    day = u("D")
    week = u("W")
    month = ir.seq(u("M"), ir.opt(day))
    year = ir.seq(u("Y"), ir.opt(month))
    date = ir.seq(ir.alt(day, month, year), ir.opt(time))
    return ir.seq(ir.lit("P"), ir.alt(date, time, week))


# ----------------------------------------------------------------------------- internet


_DEC_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"


@functools.lru_cache(maxsize=None)
def ipv4() -> ir.Node:
    return _r(f"{_DEC_OCTET}(\\.{_DEC_OCTET}){{3}}")


@functools.lru_cache(maxsize=None)
def ipv6() -> ir.Node:
    h16 = ir.repeat(_HEXDIG, 1, 4)
    c = ir.lit(":")
    h16c = ir.seq(h16, c)
    ls32 = ir.alt(ir.seq(h16, c, h16), ipv4())
    dc = ir.lit("::")

    def before(k: int) -> ir.Node:
        # [ *k( h16 ":" ) h16 ]
        if k < 0:
            return ir.EPS
        return ir.opt(ir.seq(ir.repeat(h16c, 0, k), h16))

    return ir.alt(
        ir.seq(ir.repeat(h16c, 6, 6), ls32),
        ir.seq(dc, ir.repeat(h16c, 5, 5), ls32),
        ir.seq(before(0), dc, ir.repeat(h16c, 4, 4), ls32),
        ir.seq(before(1), dc, ir.repeat(h16c, 3, 3), ls32),
        ir.seq(before(2), dc, ir.repeat(h16c, 2, 2), ls32),
        ir.seq(before(3), dc, h16c, ls32),
        ir.seq(before(4), dc, ls32),
        ir.seq(before(5), dc, h16),
        ir.seq(before(6), dc),
    )


@functools.lru_cache(maxsize=None)
def ldh_label() -> ir.Node:
    """An RFC 1123 label: 1..63 letters, digits and hyphens, a letter or digit at both ends, and
    no ``--`` in positions 3-4 (which refuses every A-label, ``xn--...``)."""
    ld = ir.chars((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A))
    ldh = ir.chars_union(ld, ir.chars((0x2D, 0x2D)))
    return ir.alt(
        ld,
        ir.seq(ld, ld),
        ir.seq(ld, ldh, ld),
        ir.seq(ld, ldh, ldh, ld),
        ir.seq(ld, ldh, ir.alt(ir.seq(ld, ldh), ir.seq(ir.lit("-"), ld)), ir.repeat(ldh, 0, 58), ld),
    )


@functools.lru_cache(maxsize=None)
def hostname() -> ir.Node:
    label = ldh_label()
    structure = ir.seq(label, ir.repeat(ir.seq(ir.lit("."), label), 0, None))
    return ir.And((structure, ir.repeat(ir.ANY_CHAR, 1, 253)))


def email_local(extra: ir.Chars | None = None) -> ir.Node:
    """RFC 5321 Local-part (dot-string or quoted string); ``extra``: the characters RFC 6531
    adds to atext, qtext and quoted pairs (UTF8-non-ascii)."""
    def plus(c: ir.Node) -> ir.Node:
        return c if extra is None else ir.chars_union(c, extra)

    atext = plus(_r("[A-Za-z0-9!#$%&'*+\\-/=?^_`{|}~]"))
    atom = ir.repeat(atext, 1, None)
    dot_string = ir.seq(atom, ir.repeat(ir.seq(ir.lit("."), atom), 0, None))
    qtext = plus(ir.chars((32, 33), (35, 91), (93, 126)))
    qpair = ir.seq(ir.lit("\\"), plus(ir.chars((32, 126))))
    quoted = ir.seq(ir.lit('"'), ir.repeat(ir.alt(qtext, qpair), 0, None), ir.lit('"'))
    return ir.alt(dot_string, quoted)


@functools.lru_cache(maxsize=None)
def address_literal() -> ir.Node:
    """``[IPv4]`` or ``[IPv6:...]`` (RFC 5321 address literals, less General-address-literal)."""
    return ir.seq(ir.lit("["), ir.alt(ipv4(), ir.seq(ir.lit("IPv6:"), ipv6())), ir.lit("]"))


@functools.lru_cache(maxsize=None)
def email() -> ir.Node:
    return ir.seq(email_local(), ir.lit("@"), ir.alt(address_literal(), hostname()))


@functools.lru_cache(maxsize=None)
def uuid() -> ir.Node:
    h = _HEXDIG
    return ir.seq(
        ir.repeat(h, 8, 8), ir.lit("-"), ir.repeat(h, 4, 4), ir.lit("-"), ir.repeat(h, 4, 4), ir.lit("-"),
        ir.repeat(h, 4, 4), ir.lit("-"), ir.repeat(h, 12, 12),
    )


# ----------------------------------------------------------------------------- URIs and IRIs

_UCSCHAR = ir.chars(
    (0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF), (0x10000, 0x1FFFD), (0x20000, 0x2FFFD),
    (0x30000, 0x3FFFD), (0x40000, 0x4FFFD), (0x50000, 0x5FFFD), (0x60000, 0x6FFFD), (0x70000, 0x7FFFD),
    (0x80000, 0x8FFFD), (0x90000, 0x9FFFD), (0xA0000, 0xAFFFD), (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD),
    (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD),
)
_IPRIVATE = ir.chars((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))


@functools.lru_cache(maxsize=None)
def _uri_parts(iri: bool) -> dict[str, ir.Node]:
    """RFC 3986 (``iri=False``) or RFC 3987 (``iri=True``) productions."""
    unreserved = _r("[A-Za-z0-9\\-._~]")
    if iri:
        unreserved = ir.chars_union(unreserved, _UCSCHAR)
    sub_delims = _r("[!$&'()*+,;=]")
    pct = ir.seq(ir.lit("%"), _HEXDIG, _HEXDIG)
    ch = ir.alt(ir.chars_union(unreserved, sub_delims), pct)  # unreserved / pct / sub-delims
    colon_at = ir.chars((0x3A, 0x3A), (0x40, 0x40))
    pchar = ir.alt(ir.chars_union(unreserved, sub_delims, colon_at), pct)
    scheme = _r("[A-Za-z][A-Za-z0-9+\\-.]*")
    userinfo = ir.repeat(ir.alt(ch, ir.lit(":")), 0, None)
    ipvfuture = ir.seq(
        ir.chars((0x56, 0x56), (0x76, 0x76)), ir.repeat(_HEXDIG, 1, None), ir.lit("."),
        ir.repeat(ir.alt(ir.chars_union(_r("[A-Za-z0-9\\-._~]"), sub_delims, ir.chars((0x3A, 0x3A)))), 1, None),
    )
    ip_literal = ir.seq(ir.lit("["), ir.alt(ipv6(), ipvfuture), ir.lit("]"))
    reg_name = ir.repeat(ch, 0, None)  # includes IPv4address
    host = ir.alt(ip_literal, reg_name)
    port = ir.repeat(_DIGIT, 0, None)
    authority = ir.seq(ir.opt(ir.seq(userinfo, ir.lit("@"))), host, ir.opt(ir.seq(ir.lit(":"), port)))
    segment = ir.repeat(pchar, 0, None)
    segment_nz = ir.repeat(pchar, 1, None)
    segment_nz_nc = ir.repeat(ir.alt(ir.chars_union(unreserved, sub_delims, ir.chars((0x40, 0x40))), pct), 1, None)
    slash_segs = ir.repeat(ir.seq(ir.lit("/"), segment), 0, None)
    path_abempty = slash_segs
    path_absolute = ir.seq(ir.lit("/"), ir.opt(ir.seq(segment_nz, slash_segs)))
    path_noscheme = ir.seq(segment_nz_nc, slash_segs)
    path_rootless = ir.seq(segment_nz, slash_segs)
    qchars = ir.chars_union(unreserved, sub_delims, colon_at, ir.chars((0x2F, 0x2F), (0x3F, 0x3F)))
    query = ir.repeat(ir.alt(ir.chars_union(qchars, _IPRIVATE) if iri else qchars, pct), 0, None)
    fragment = ir.repeat(ir.alt(qchars, pct), 0, None)
    tail = ir.seq(ir.opt(ir.seq(ir.lit("?"), query)), ir.opt(ir.seq(ir.lit("#"), fragment)))
    hier = ir.alt(ir.seq(ir.lit("//"), authority, path_abempty), path_absolute, path_rootless, ir.EPS)
    uri = ir.seq(scheme, ir.lit(":"), hier, tail)
    rel_part = ir.alt(ir.seq(ir.lit("//"), authority, path_abempty), path_absolute, path_noscheme, ir.EPS)
    relative = ir.seq(rel_part, tail)
    return {"uri": uri, "reference": ir.alt(uri, relative)}


# ----------------------------------------------------------------------------- JSON pointers


@functools.lru_cache(maxsize=None)
def json_pointer() -> ir.Node:
    unescaped = ir.chars_complement(ir.chars((0x2F, 0x2F), (0x7E, 0x7E)))
    token = ir.repeat(ir.alt(unescaped, ir.lit("~0"), ir.lit("~1")), 0, None)
    return ir.repeat(ir.seq(ir.lit("/"), token), 0, None)


@functools.lru_cache(maxsize=None)
def relative_json_pointer() -> ir.Node:
    nonneg = _r("(0|[1-9][0-9]*)")
    return ir.seq(nonneg, ir.alt(ir.lit("#"), json_pointer()))


# ----------------------------------------------------------------------------- URI templates


@functools.lru_cache(maxsize=None)
def uri_template() -> ir.Node:
    """RFC 6570 section 2 (level 4 syntax): ``*( literals / expression )``."""
    pct = ir.seq(ir.lit("%"), _HEXDIG, _HEXDIG)
    # literals: any character except CTL, SP, DQUOTE, "%" (outside pct-encoded), "<", ">", "\\",
    # "^", "`", "{", "|", "}". The apostrophe (%x27) is accepted as the JSON-Schema-Test-Suite
    # says ("an apostrophe in a literal is valid"), although the RFC's ABNF (%x26 / %x28-3B)
    # leaves it out.
    literal_ch = ir.chars_union(
        ir.chars((0x21, 0x21), (0x23, 0x24), (0x26, 0x3B), (0x3D, 0x3D), (0x3F, 0x5B), (0x5D, 0x5D),
                 (0x5F, 0x5F), (0x61, 0x7A), (0x7E, 0x7E)),
        _UCSCHAR, _IPRIVATE,
    )
    literals = ir.alt(literal_ch, pct)
    operator = ir.chars(*((ord(c), ord(c)) for c in "+#./;?&=,!@|"))
    varchar = ir.alt(ir.chars((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)), pct)
    varname = ir.seq(varchar, ir.repeat(ir.seq(ir.opt(ir.lit(".")), varchar), 0, None))
    max_length = ir.seq(ir.chars((0x31, 0x39)), ir.repeat(_DIGIT, 0, 3))
    modifier = ir.alt(ir.seq(ir.lit(":"), max_length), ir.lit("*"))
    varspec = ir.seq(varname, ir.opt(modifier))
    variable_list = ir.seq(varspec, ir.repeat(ir.seq(ir.lit(","), varspec), 0, None))
    expression = ir.seq(ir.lit("{"), ir.opt(operator), variable_list, ir.lit("}"))
    return ir.repeat(ir.alt(literals, expression), 0, None)


# ----------------------------------------------------------------------------- the registry's builders


def date_time() -> ir.Node:
    return ir.seq(full_date(), ir.chars((0x54, 0x54), (0x74, 0x74)), full_time())


def uri() -> ir.Node:
    return _uri_parts(False)["uri"]


def uri_reference() -> ir.Node:
    return _uri_parts(False)["reference"]


def iri() -> ir.Node:
    return _uri_parts(True)["uri"]


def iri_reference() -> ir.Node:
    return _uri_parts(True)["reference"]
