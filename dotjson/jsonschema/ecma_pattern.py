"""``format: "regex"``: ECMA-262 regular expression patterns (Unicode mode) as a language over decoded strings.

JSON Schema's ``regex`` format is "a regular expression valid according to the ECMA-262
dialect"; the JSON-Schema-Test-Suite (``optional/format/regex.json``, ``ecmascript-regex.json``)
reads that as a pattern a ``u``-flag ``RegExp`` accepts (``\\a`` is refused, ``(?<n>a)\\k<n>``,
``[^]`` and variable-width lookbehind are accepted, Python's ``(?P<n>…)`` and ``(?i)`` are not).
The reference is an ECMA-262 engine (V8: ``new RegExp(p, "u")``); ``tests/test_ecma_pattern.py``
compares with it where Node.js is installed.

Patterns nest groups, so their syntax is context-free; and some of the specification's early
errors are not even that (``{m,n}`` needs ``m <= n``, a class range ``[x-y]`` needs ``x <= y``,
group names must be distinct and ``\\k<name>`` must name one, ``\\N`` needs ``N`` capturing
groups). The string languages of dotjson are regular (``And``/``Diff`` of a string language with
``pattern``, lengths or ``propertyNames`` need it), so this is a *regular under-approximation*:
every string it accepts is a valid pattern; a valid pattern is rejected only when it

* nests groups or lookarounds deeper than :data:`MAX_NESTING` (16) levels;
* has ``{m,n}`` with ``m`` and ``n`` of the same number of significant digits (leading zeros
  aside), at least 3, and the same first digit (``{100,150}``; ``{100,200}`` is accepted), or
  more than 9 significant digits in ``n``;
* has a class range ``x-y`` whose endpoints are not both literal characters, both ``\\xHH`` or
  both ``\\uHHHH`` escapes (``[\\t-\\r]``, ``[a-\\x7A]``, ``\\u{…}`` endpoints are rejected); or
  non-ASCII literals in the same block (16 code points below U+4000, 256 below U+10000, a plane
  above: ``[а-я]``, ``[ぁ-ゖ]``, ``[一-龥]`` are accepted, ``[ぁ-ぅ]`` is not); or ``\\uPPHH`` escapes
  with the same ``PP`` other than ``00`` (``[\\u4e00-\\u9fa5]`` and ``[\\u0000-\\u001F]`` are
  accepted, ``[\\u4e00-\\u4eff]`` is not) or a surrogate ``PP``; or ``\\0`` inside a class;
* has more than one named group, a group name that is not an ASCII identifier, or ``\\k<name>``
  other than after a top-level group with a one-character name (``(?<n>a)\\k<n>`` is accepted);
* has a backreference (``\\1`` and up: the count of capturing groups is not tracked).

``\\p{…}``/``\\P{…}`` take the property names and values V8 11.3 accepts in Node.js 20.20 (its ICU: Unicode 17.0):
:data:`_GC`, :data:`_BINARY`, :data:`_SCRIPTS` (probed with ``new RegExp``).
"""

from __future__ import annotations

import functools

from dotjson import ir

#: group and lookaround nesting the language follows exactly (deeper: rejected)
MAX_NESTING = 16


# ----------------------------------------------------------------------------- property tables
# (V8 / Node.js 20: every General_Category value and alias, binary property and Script value
# `new RegExp("\\p{…}", "u")` accepts, from Unicode's alias lists; Script_Extensions takes the
# Script values)
_GC = (
    "C Other Cc Control cntrl Cf Format Cn Unassigned Co Private_Use Cs Surrogate L Letter LC "
    "Cased_Letter Ll Lowercase_Letter Lm Modifier_Letter Lo Other_Letter Lt Titlecase_Letter Lu "
    "Uppercase_Letter M Mark Combining_Mark Mc Spacing_Mark Me Enclosing_Mark Mn Nonspacing_Mark "
    "N Number Nd Decimal_Number digit Nl Letter_Number No Other_Number P Punctuation punct Pc "
    "Connector_Punctuation Pd Dash_Punctuation Pe Close_Punctuation Pf Final_Punctuation Pi "
    "Initial_Punctuation Po Other_Punctuation Ps Open_Punctuation S Symbol Sc Currency_Symbol Sk "
    "Modifier_Symbol Sm Math_Symbol So Other_Symbol Z Separator Zl Line_Separator Zp "
    "Paragraph_Separator Zs Space_Separator "
).split()

_BINARY = (
    "ASCII ASCII_Hex_Digit AHex Alphabetic Alpha Any Assigned Bidi_Control Bidi_C Bidi_Mirrored "
    "Bidi_M Case_Ignorable CI Cased Changes_When_Casefolded CWCF Changes_When_Casemapped CWCM "
    "Changes_When_Lowercased CWL Changes_When_NFKC_Casefolded CWKCF Changes_When_Titlecased CWT "
    "Changes_When_Uppercased CWU Dash Default_Ignorable_Code_Point DI Deprecated Dep Diacritic "
    "Dia Emoji Emoji_Component EComp Emoji_Modifier EMod Emoji_Modifier_Base EBase "
    "Emoji_Presentation EPres Extended_Pictographic ExtPict Extender Ext Grapheme_Base Gr_Base "
    "Grapheme_Extend Gr_Ext Hex_Digit Hex IDS_Binary_Operator IDSB IDS_Trinary_Operator IDST "
    "ID_Continue IDC ID_Start IDS Ideographic Ideo Join_Control Join_C Logical_Order_Exception "
    "LOE Lowercase Lower Math Noncharacter_Code_Point NChar Pattern_Syntax Pat_Syn "
    "Pattern_White_Space Pat_WS Quotation_Mark QMark Radical Regional_Indicator RI "
    "Sentence_Terminal STerm Soft_Dotted SD Terminal_Punctuation Term Unified_Ideograph UIdeo "
    "Uppercase Upper Variation_Selector VS White_Space space XID_Continue XIDC XID_Start XIDS "
).split()

_SCRIPTS = (
    "Adlam Adlm Aghb Ahom Anatolian_Hieroglyphs Arab Arabic Armenian Armi Armn Avestan Avst Bali "
    "Balinese Bamu Bamum Bass Bassa_Vah Batak Batk Beng Bengali Berf Beria_Erfe Bhaiksuki Bhks "
    "Bopo Bopomofo Brah Brahmi Brai Braille Bugi Buginese Buhd Buhid Cakm Canadian_Aboriginal "
    "Cans Cari Carian Caucasian_Albanian Chakma Cham Cher Cherokee Chorasmian Chrs Common Copt "
    "Coptic Cpmn Cprt Cuneiform Cypriot Cypro_Minoan Cyrillic Cyrl Deseret Deva Devanagari Diak "
    "Dives_Akuru Dogr Dogra Dsrt Dupl Duployan Egyp Egyptian_Hieroglyphs Elba Elbasan Elym "
    "Elymaic Ethi Ethiopic Gara Garay Geor Georgian Glag Glagolitic Gong Gonm Goth Gothic Gran "
    "Grantha Greek Grek Gujarati Gujr Gukh Gunjala_Gondi Gurmukhi Guru Gurung_Khema Han Hang "
    "Hangul Hani Hanifi_Rohingya Hano Hanunoo Hatr Hatran Hebr Hebrew Hira Hiragana Hluw Hmng "
    "Hmnp Hung Imperial_Aramaic Inherited Inscriptional_Pahlavi Inscriptional_Parthian Ital Java "
    "Javanese Kaithi Kali Kana Kannada Katakana Kawi Kayah_Li Khar Kharoshthi Khitan_Small_Script "
    "Khmer Khmr Khoj Khojki Khudawadi Kirat_Rai Kits Knda Krai Kthi Lana Lao Laoo Latin Latn Lepc "
    "Lepcha Limb Limbu Lina Linb Linear_A Linear_B Lisu Lyci Lycian Lydi Lydian Mahajani Mahj "
    "Maka Makasar Malayalam Mand Mandaic Mani Manichaean Marc Marchen Masaram_Gondi Medefaidrin "
    "Medf Meetei_Mayek Mend Mende_Kikakui Merc Mero Meroitic_Cursive Meroitic_Hieroglyphs Miao "
    "Mlym Modi Mong Mongolian Mro Mroo Mtei Mult Multani Myanmar Mymr Nabataean Nag_Mundari Nagm "
    "Nand Nandinagari Narb Nbat New_Tai_Lue Newa Nko Nkoo Nshu Nushu Nyiakeng_Puachue_Hmong Ogam "
    "Ogham Ol_Chiki Ol_Onal Olck Old_Hungarian Old_Italic Old_North_Arabian Old_Permic "
    "Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Onao Oriya Orkh Orya Osage "
    "Osge Osma Osmanya Ougr Pahawh_Hmong Palm Palmyrene Pau_Cin_Hau Pauc Perm Phag Phags_Pa Phli "
    "Phlp Phnx Phoenician Plrd Prti Psalter_Pahlavi Qaac Qaai Rejang Rjng Rohg Runic Runr "
    "Samaritan Samr Sarb Saur Saurashtra Sgnw Sharada Shavian Shaw Shrd Sidd Siddham Sidetic Sidt "
    "SignWriting Sind Sinh Sinhala Sogd Sogdian Sogo Sora Sora_Sompeng Soyo Soyombo Sund "
    "Sundanese Sunu Sunuwar Sylo Syloti_Nagri Syrc Syriac Tagalog Tagb Tagbanwa Tai_Le Tai_Tham "
    "Tai_Viet Tai_Yo Takr Takri Tale Talu Tamil Taml Tang Tangsa Tangut Tavt Tayo Telu Telugu "
    "Tfng Tglg Thaa Thaana Thai Tibetan Tibt Tifinagh Tirh Tirhuta Tnsa Todhri Todr Tolong_Siki "
    "Tols Toto Tulu_Tigalari Tutg Ugar Ugaritic Unknown Vai Vaii Vith Vithkuqi Wancho Wara "
    "Warang_Citi Wcho Xpeo Xsux Yezi Yezidi Yi Yiii Zanabazar_Square Zanb Zinh Zyyy Zzzz "
).split()


MAX = ir.MAX_CODEPOINT
ANY = ir.ANY_CHAR
_SYNTAX = "^$\\.*+?()[]{}|"


def _ch(text: str) -> ir.Chars:
    return ir.chars(*((ord(c), ord(c)) for c in text))


def _minus(c: ir.Chars, text: str) -> ir.Chars:
    return ir.chars_intersect(c, ir.chars_complement(_ch(text)))


_DIGIT = ir.chars((0x30, 0x39))
_NZ = ir.chars((0x31, 0x39))
_HEX = ir.chars((0x30, 0x39), (0x41, 0x46), (0x61, 0x66))
_LETTER = ir.chars((0x41, 0x5A), (0x61, 0x7A))
_ID_START = ir.chars((0x24, 0x24), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_ID_PART = ir.chars_union(_ID_START, _DIGIT)
_NAME = ir.seq(_ID_START, ir.repeat(_ID_PART, 0, None))
_ZEROS = ir.repeat(ir.lit("0"), 0, None)
_ANYS = ir.repeat(ANY, 0, None)


@functools.lru_cache(maxsize=None)
def _hex_digit(d: int) -> ir.Node:
    c = "0123456789abcdef"[d]
    return ir.lit(c) if d < 10 else _ch(c + c.upper())


@functools.lru_cache(maxsize=None)
def _hex_digits(lo: int, hi: int) -> ir.Node:
    """One hex digit in ``lo..hi`` (either case)."""
    out = []
    for d in range(lo, hi + 1):
        c = "0123456789abcdef"[d]
        out.append((ord(c), ord(c)))
        if d >= 10:
            out.append((ord(c.upper()), ord(c.upper())))
    return ir.chars(*out)


@functools.lru_cache(maxsize=None)
def _hex_fixed(lo: int, hi: int, width: int) -> ir.Node:
    """``width`` hex digits (leading zeros included) whose value is in ``lo..hi``."""
    if lo > hi:
        return ir.EMPTY
    if width == 0:
        return ir.EPS
    unit = 16 ** (width - 1)
    a, b = lo // unit, hi // unit
    if a == b:
        return ir.seq(_hex_digit(a), _hex_fixed(lo % unit, hi % unit, width - 1))
    parts = [ir.seq(_hex_digit(a), _hex_fixed(lo % unit, unit - 1, width - 1))]
    if b - a > 1:
        parts.append(ir.seq(_hex_digits(a + 1, b - 1), ir.repeat(_HEX, width - 1, width - 1)))
    parts.append(ir.seq(_hex_digit(b), _hex_fixed(0, hi % unit, width - 1)))
    return ir.alt(*parts)


@functools.lru_cache(maxsize=None)
def _hex_var(lo: int, hi: int) -> ir.Node:
    """A hex number in ``lo..hi`` with any number of leading zeros (at least one digit)."""
    parts = []
    if lo == 0:
        parts.append(ir.repeat(ir.lit("0"), 1, None))
        lo = 1
    width = 1
    while lo <= hi:
        top = 16 ** width - 1
        if lo <= top:
            parts.append(ir.seq(_ZEROS, _hex_fixed(max(lo, 16 ** (width - 1)), min(hi, top), width)))
            lo = top + 1
        width += 1
    return ir.alt(*parts)


# ----------------------------------------------------------------------------- escapes and atoms

#: single-character escapes after a backslash and the value they stand for, in classes
#: (``\b`` is a backspace there, ``\-`` a hyphen) and outside (identity escapes, controls)
_CONTROL = {"f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_IDENTITY = _SYNTAX + "/"
_UNICODE_ESC = ir.alt(ir.seq(ir.lit("u"), ir.repeat(_HEX, 4, 4)),
                      ir.seq(ir.lit("u{"), _hex_var(0, MAX), ir.lit("}")))
_CHAR_ESCAPE = ir.alt(
    _ch("".join(_CONTROL) + _IDENTITY),
    ir.seq(ir.lit("c"), _LETTER),
    ir.seq(ir.lit("x"), _HEX, _HEX),
    _UNICODE_ESC,
)


def _names(*groups) -> ir.Node:
    return ir.alt(*(ir.lit(x) for g in groups for x in g))


@functools.lru_cache(maxsize=None)
def _property() -> ir.Node:
    """``p{…}``/``P{…}`` (after the backslash)."""
    gc = _names(_GC)
    value = ir.alt(
        _names(_GC, _BINARY),
        ir.seq(ir.alt(ir.lit("General_Category="), ir.lit("gc=")), gc),
        ir.seq(ir.alt(ir.lit("Script="), ir.lit("sc="), ir.lit("Script_Extensions="), ir.lit("scx=")),
               _names(_SCRIPTS)),
    )
    return ir.seq(_ch("pP"), ir.lit("{"), value, ir.lit("}"))


def _class_escape_set() -> ir.Node:
    return ir.alt(_ch("dDsSwW"), _property())


@functools.lru_cache(maxsize=None)
def _endpoint(lo: int, hi: int, dash: bool = True) -> ir.Node:
    """The spellings of a class atom (not a class escape) with a value in ``lo..hi``, as a class
    range's endpoint: a literal character (``-`` only where ``dash``), a one-letter escape,
    ``\\cX``, ``\\0``, ``\\xHH``, ``\\uHHHH`` (not a surrogate) and ``\\u{…}``."""
    if lo > hi:
        return ir.EMPTY
    parts = []
    lit_chars = _minus(ir.chars((lo, hi)), "\\]" if dash else "\\]-")
    if lit_chars.ranges:
        parts.append(lit_chars)
    one = [c for c, v in _CONTROL.items() if lo <= v <= hi] + [c for c in _IDENTITY + "-" if lo <= ord(c) <= hi]
    if lo <= 8 <= hi:
        one.append("b")
    esc = []
    if one:
        esc.append(_ch("".join(one)))
    ctl = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if lo <= ord(c) % 32 <= hi]
    if ctl:
        esc.append(ir.seq(ir.lit("c"), _ch("".join(ctl))))
    if lo <= 0xFF:
        esc.append(ir.seq(ir.lit("x"), _hex_fixed(lo, min(hi, 0xFF), 2)))
    bmp = [(a, b) for a, b in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), min(hi, 0xFFFF))) if a <= b]
    for a, b in bmp:
        esc.append(ir.seq(ir.lit("u"), _hex_fixed(a, b, 4)))
    esc.append(ir.seq(ir.lit("u{"), _hex_var(lo, hi), ir.lit("}")))
    parts.append(ir.seq(ir.lit("\\"), ir.alt(*esc)))
    return ir.alt(*parts)


def _literal_from(v: int) -> ir.Chars:
    r"""Literal class characters (not ``\`` or ``]``) from ``v`` on."""
    return _minus(ir.chars((v, MAX)), "\\]")


def _hex_pairs(after: str) -> ir.Node:
    """``HH<after>HH``: two 2-digit hex numbers, the first at most the second (16 alternatives
    alive after the first digit, one after the second)."""
    out = []
    for h in range(16):
        lows = []
        for lo in range(16):
            second = ir.alt(ir.seq(_hex_digits(h + 1, 15), _HEX) if h < 15 else ir.EMPTY,
                            ir.seq(_hex_digit(h), _hex_digits(lo, 15)))
            lows.append(ir.seq(_hex_digit(lo), ir.lit(after), second))
        out.append(ir.seq(_hex_digit(h), ir.alt(*lows)))
    return ir.alt(*out)


@functools.lru_cache(maxsize=None)
def _ranges() -> tuple[ir.Node, ir.Node]:
    r"""``x-y`` with ``x <= y`` within the forms the module docstring lists: (ranges whose ``x``
    is not a literal ``-``, all ranges). Both endpoints are literal characters, or ``\xHH``
    escapes, or ``\uHHHH`` escapes; the alternatives are factored by their first characters, so
    that a state inside a class holds few of them."""
    parts = []
    for v in range(0x80):  # ASCII literal first endpoints: exact
        c = chr(v)
        if c not in "\\]-":
            parts.append(ir.seq(ir.chars((v, v)), ir.lit("-"), _literal_from(v)))
    # non-ASCII literal endpoints: x's 256-block before y's; within one below U+4000, x's
    # 16-block before y's
    for h in range(0x100):
        a, b = max(h * 256, 0x80), h * 256 + 255
        parts.append(ir.seq(ir.chars((a, b)), ir.lit("-"), ir.chars((b + 1, MAX))))
        if h < 0x40:
            for s in range(a, b + 1 - 16, 16):
                parts.append(ir.seq(ir.chars((s, s + 15)), ir.lit("-"), ir.chars((s + 16, b))))
    for plane in range(1, 17):  # supplementary planes
        a, b = plane * 0x10000, plane * 0x10000 + 0xFFFF
        if b < MAX:
            parts.append(ir.seq(ir.chars((a, b)), ir.lit("-"), ir.chars((b + 1, MAX))))
    hh = ir.repeat(_HEX, 2, 2)
    bmp_after = {}
    for p in range(1, 0xFF):  # \uHHHH endpoints whose first two hex digits increase
        if not 0xD8 <= p <= 0xDF:
            gt = ir.alt(*(_hex_fixed(a, b, 2) for a, b in ((p + 1, 0xD7), (max(p + 1, 0xE0), 0xFF)) if a <= b))
            bmp_after[p] = ir.seq(_hex_fixed(p, p, 2), hh, ir.lit("-\\u"), gt, hh)
    u_any = ir.alt(*(_hex_fixed(a, b, 2) for a, b in ((1, 0xD7), (0xE0, 0xFF))))
    escapes = ir.alt(
        ir.seq(ir.lit("x"), _hex_pairs("-\\x")),
        ir.seq(ir.lit("u"), ir.alt(
            # \u00HH: the last two digits compared, or a later \uPPHH
            ir.seq(ir.lit("00"), ir.alt(_hex_pairs("-\\u00"), ir.seq(hh, ir.lit("-\\u"), u_any, hh))),
            *bmp_after.values())),
    )
    nd = ir.alt(*parts, ir.seq(ir.lit("\\"), escapes))
    return nd, ir.alt(nd, ir.seq(ir.lit("--"), _literal_from(0x2D)))


@functools.lru_cache(maxsize=None)
def _class() -> ir.Node:
    """``[…]`` / ``[^…]``: ClassRanges as a regular language (a ``-`` between two atoms makes a
    range; leading, trailing and after-range ``-`` are literal)."""
    nodash = ir.alt(_minus(ANY, "\\]-"), ir.seq(ir.lit("\\"), ir.alt(_ch("b-"), _class_escape_set(), _CHAR_ESCAPE)))
    atom = ir.alt(ir.lit("-"), nodash)
    rng_nd, rng = _ranges()
    # R = (RANGE | A D* RANGE_nd)* (ε | A D* -?)
    singles = ir.seq(atom, ir.repeat(nodash, 0, None))
    body = ir.seq(ir.repeat(ir.alt(rng, ir.seq(singles, rng_nd)), 0, None),
                  ir.opt(ir.seq(singles, ir.opt(ir.lit("-")))))
    return ir.seq(ir.lit("["), ir.opt(ir.lit("^")), body, ir.lit("]"))


# ----------------------------------------------------------------------------- quantifiers


def _num(n: int) -> ir.Node:
    """A decimal number of ``n`` significant digits (0: the number 0), leading zeros allowed."""
    if n == 0:
        return ir.repeat(ir.lit("0"), 1, None)
    return ir.seq(_ZEROS, _NZ, ir.repeat(_DIGIT, n - 1, n - 1))


def _at_least(a: int, width: int) -> ir.Node:
    """``width`` digits (no leading zero) whose value is at least ``a`` (``a`` has ``width`` digits)."""
    s = str(a)
    parts = []
    for i in range(width):
        d = int(s[i])
        if d < 9:
            parts.append(ir.seq(ir.lit(s[:i]), ir.chars((0x30 + d + 1, 0x39)), ir.repeat(_DIGIT, width - i - 1, width - i - 1)))
    parts.append(ir.lit(s))
    return ir.alt(*parts)


@functools.lru_cache(maxsize=None)
def _quantifier() -> ir.Node:
    digits = ir.repeat(_DIGIT, 1, None)
    pairs = [ir.seq(_num(0), ir.lit(","), ir.alt(*(_num(k) for k in range(0, 10))))]
    for m in range(1, 9):  # fewer significant digits in m than in n (n at most 9)
        pairs.append(ir.seq(_num(m), ir.lit(","), ir.alt(*(_num(k) for k in range(m + 1, 10)))))
    for a in range(1, 100):  # one or two digits each: compared exactly
        w = len(str(a))
        pairs.append(ir.seq(_ZEROS, ir.lit(str(a)), ir.lit(","), _ZEROS, _at_least(a, w)))
    for w in range(3, 10):  # more: the first digits differ
        for d in range(1, 9):
            pairs.append(ir.seq(_ZEROS, ir.lit(str(d)), ir.repeat(_DIGIT, w - 1, w - 1), ir.lit(","), _ZEROS,
                                ir.chars((0x30 + d + 1, 0x39)), ir.repeat(_DIGIT, w - 1, w - 1)))
    braces = ir.seq(ir.lit("{"), ir.alt(digits, ir.seq(digits, ir.lit(",")), *pairs), ir.lit("}"))
    return ir.seq(ir.alt(_ch("*+?"), braces), ir.opt(ir.lit("?")))


# ----------------------------------------------------------------------------- the pattern


@functools.lru_cache(maxsize=None)
def pattern_language(depth: int = MAX_NESTING) -> ir.Node:
    r"""The decoded strings accepted as ECMA-262 patterns (``u`` flag), within the limits the
    module docstring lists: groups and lookarounds nested at most ``depth`` deep, at most one
    named group, ``\k<c>`` beside a top-level group named ``c``, no ``\0`` before a digit
    (``\01`` is no escape)."""
    atom_escape = ir.alt(_class_escape_set(), _CHAR_ESCAPE)
    other = ir.alt(_minus(ANY, _SYNTAX + "0123456789"), ir.lit("."), ir.seq(ir.lit("\\"), atom_escape), _class())
    assertion = ir.alt(ir.lit("^"), ir.lit("$"), ir.lit("\\b"), ir.lit("\\B"))
    quant = _quantifier()
    zero = ir.lit("\\0")
    digit_term = ir.seq(_DIGIT, ir.opt(quant))
    plain_open = ir.alt(ir.lit("("), ir.lit("(?:"))
    look = ir.alt(ir.lit("(?="), ir.lit("(?!"), ir.lit("(?<="), ir.lit("(?<!"))
    named_open = ir.seq(ir.lit("(?<"), _NAME, ir.lit(">"))

    def disjunction(nd, one=None):
        """Alternatives of terms (``nd``: those not starting with a digit; ``\0`` never before a
        digit), with ``one`` once in one of them when given."""
        seq0 = ir.seq(ir.repeat(ir.alt(nd, digit_term, ir.seq(ir.repeat(zero, 1, None), nd)), 0, None),
                      ir.repeat(zero, 0, None))
        if one is None:
            return ir.seq(seq0, ir.repeat(ir.seq(ir.lit("|"), seq0), 0, None))
        return ir.seq(ir.repeat(ir.seq(seq0, ir.lit("|")), 0, None), seq0, one, seq0,
                      ir.repeat(ir.seq(ir.lit("|"), seq0), 0, None))

    d0 = d1 = inner = None  # the disjunction one level down: without a named group / with one
    for _ in range(depth + 1):
        nd0 = [ir.seq(other, ir.opt(quant)), ir.seq(zero, quant), assertion]
        t1 = ir.EMPTY
        if d0 is not None:
            nd0 += [ir.seq(plain_open, d0, ir.lit(")"), ir.opt(quant)), ir.seq(look, d0, ir.lit(")"))]
            t1 = ir.alt(ir.seq(ir.alt(ir.seq(plain_open, d1), ir.seq(named_open, d0)), ir.lit(")"), ir.opt(quant)),
                        ir.seq(look, d1, ir.lit(")")))
        nd0 = ir.alt(*nd0)
        inner = d0
        d0, d1 = disjunction(nd0), (disjunction(nd0, t1) if t1 != ir.EMPTY else ir.EMPTY)
    if inner is None:
        return ir.alt(d0, d1)

    def seq_of(nd):
        return ir.seq(ir.repeat(ir.alt(nd, digit_term, ir.seq(ir.repeat(zero, 1, None), nd)), 0, None),
                      ir.repeat(zero, 0, None))

    # \k<c> after a top-level group named c (one character): the part before the group is
    # shared by every c, so a state before it is one term, not one per name
    seq0 = seq_of(nd0)
    before = ir.seq(ir.repeat(ir.seq(seq0, ir.lit("|")), 0, None), seq0, ir.lit("(?<"))
    named = []
    for lo, hi in _ID_START.ranges:
        for cp in range(lo, hi + 1):
            c = chr(cp)
            seq_k = seq_of(ir.alt(nd0, ir.seq(ir.lit(f"\\k<{c}>"), ir.opt(quant))))
            named.append(ir.seq(ir.lit(c + ">"), inner, ir.lit(")"), ir.opt(quant), seq_k,
                                ir.repeat(ir.seq(ir.lit("|"), seq_k), 0, None)))
    return ir.alt(d0, d1, ir.seq(before, ir.alt(*named)))
