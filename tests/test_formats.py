"""dotjson.formats against the JSON-Schema-Test-Suite's optional/format files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dotjson import ir
from dotjson.errors import GrammarError, UnsupportedSchemaError
from dotjson.formats import SUPPORTED_FORMATS, UNSUPPORTED_FORMATS, format_to_ir
from dotjson.grammar import lark_parses, to_lark, to_python_regex
from dotjson.jsonschema.jsonstr import encode_string_language
from dotjson.jsonschema import schema_to_grammar


def _format_dir() -> Path | None:
    here = Path(__file__).resolve().parent
    for cand in (
        here / "data" / "json-schema-test-suite" / "draft2020-12" / "optional" / "format",
        here.parent.parent / "shared" / "data" / "json-schema-test-suite" / "draft2020-12" / "optional" / "format",
        Path("/work/shared/data/json-schema-test-suite/draft2020-12/optional/format"),
    ):
        if cand.is_dir():
            return cand
    return None


# Valid instances we reject on purpose (never the other way round): A-labels need a Punycode
# decoder, which is not a regular language, so hostnames with "--" in positions 3-4 are refused;
# a U-label's A-label length is bounded by a per-code-point digit bound (dotjson.formats.idn),
# which a 52-letter Greek label (61 octets as an A-label) exceeds.
_GREEK = "\u03c0\u03b1\u03c1\u03ac\u03b4\u03b5\u03b9\u03b3\u03bc\u03b1"  # (the suite's label starts so)
KNOWN_REJECTED_VALID = {
    ("idn-hostname", "xn--ihqwcrb4cv8a8dqg056pqjye"),
    ("hostname", "xn--9n2bp8q.xn--9t4b11yi5a"),
    ("hostname", "xn--zca29lwxobi7a"),
    ("hostname", "xn--qmbc"),
    ("hostname", "xn--ll-0ea"),
    ("hostname", "xn--wva3je"),
    ("hostname", "xn--4dbc5h"),
    ("hostname", "xn--4dbc8h"),
    ("hostname", "xn--k8j5u"),
    ("hostname", "xn--bck0j"),
    ("hostname", "xn--vek778f"),
    ("hostname", "xn--ngba1o"),
    ("hostname", "xn--0-gyc"),
    ("hostname", "xn--11b2ezcw70k"),
    ("hostname", "xn--11b2ezcs70k"),
    ("hostname", "xn--ngba5hb2804a"),
}


def _known(name: str, s: str) -> bool:
    return (name, s) in KNOWN_REJECTED_VALID or (name == "idn-hostname" and s.startswith(_GREEK) and len(s) > 50)


def _matcher(name: str):
    """``s -> bool`` for a format's language: its Python regex when it renders as one, else
    dotjson's automaton over the decoded string's UTF-8."""
    node = format_to_ir(name)
    try:
        rx = re.compile(to_python_regex(node))
        return lambda s: rx.fullmatch(s) is not None
    except GrammarError:  # (an intersection inside the string: no regex text)
        from dotjson.automaton import Automaton

        auto = Automaton(ir.Grammar({"start": node}, "start"))
        return lambda s: auto.matches(s.encode("utf-8", "surrogatepass"))


def _cases(name: str):
    d = _format_dir()
    if d is None:
        pytest.skip("JSON-Schema-Test-Suite not available")
    path = d / f"{name}.json"
    if not path.exists():
        pytest.skip(f"no test file for {name}")
    out = []
    for group in json.loads(path.read_text(encoding="utf-8")):
        for case in group["tests"]:
            if isinstance(case["data"], str):
                out.append((case["data"], case["valid"], case["description"]))
    return out


@pytest.mark.parametrize("name", sorted(SUPPORTED_FORMATS - {"regex"}))
def test_format_against_suite(name):
    # (regex: its ~15,000-node language is no Python regex of sane size; tests/test_ecma_pattern.py)
    match = _matcher(name)
    cases = _cases(name)
    wrong, known = [], 0
    for s, valid, desc in cases:
        got = match(s)
        if got == valid:
            continue
        if valid and _known(name, s):
            known += 1
            continue
        wrong.append((s, valid, desc))
    assert not wrong, wrong
    # soundness: no invalid instance is ever accepted
    assert all(not (match(s) and not valid) for s, valid, _ in cases)
    print(f"{name}: {len(cases) - known} of {len(cases)} as the suite says, {known} valid rejected on purpose")


@pytest.mark.parametrize("name", ["unknown", "made-up"])
def test_unsupported_formats_are_none(name):
    assert format_to_ir(name) is None


@pytest.mark.parametrize("name", sorted(UNSUPPORTED_FORMATS))
def test_unsupported_draft_formats_are_never_silent(name):
    # a format a draft defines but dotjson cannot check: a named error, or a warning when lenient
    schema = {"type": "object", "properties": {"x": {"type": "string", "format": name}}}
    with pytest.raises(UnsupportedSchemaError) as e:
        schema_to_grammar(schema)
    assert e.value.keyword == "format" and e.value.pointer == "/properties/x/format"
    with pytest.warns(UserWarning, match=name):
        schema_to_grammar(schema, lenient=True)
    # formats no draft defines are annotations for every validator: ignored, exactly
    schema_to_grammar({"type": "string", "format": "int32"})


def test_uri_template_in_a_schema():
    g = to_lark(schema_to_grammar({"type": "string", "format": "uri-template"}, spellings="any"))
    assert lark_parses(g, '"http://example.com/dictionary/{term:1}/{term}"')
    assert lark_parses(g, '"\\u0041{?x,y*}"')  # every JSON spelling: \u0041 is "A"
    canonical = to_lark(schema_to_grammar({"type": "string", "format": "uri-template"}))
    assert lark_parses(canonical, '"A{?x,y*}"') and not lark_parses(canonical, '"\\u0041{?x,y*}"')
    assert not lark_parses(g, '"a\\\\b"')  # the decoded string a\b: a backslash is no literal
    assert not lark_parses(g, '"http://example.com/resource/{"')
    assert not lark_parses(g, '"{v:10000}"')


def test_every_format_is_ref_free_and_cached():
    for name in SUPPORTED_FORMATS:
        node = format_to_ir(name)
        assert ir.is_regular(node)
        assert format_to_ir(name) is node


def test_every_format_has_strings():
    # the schema compiler takes a required `{"type": "string", "format": f}` member as having a
    # value without building its language (Compiler._inhabited): every format must have one
    from dotjson.automaton import Automaton

    for name in sorted(SUPPORTED_FORMATS):
        g = schema_to_grammar({"type": "string", "format": name}, check_language=False)
        Automaton(g)  # raises EmptyLanguageError on an empty language


def test_leap_seconds_exhaustive():
    rx = re.compile(to_python_regex(format_to_ir("time")))
    for hh in range(24):
        for mm in range(60):
            for sign in "+-":
                for oh, om in [(0, 0), (0, 1), (1, 30), (5, 59), (23, 0), (23, 59), (hh, mm)]:
                    s = f"{hh:02}:{mm:02}:60{sign}{oh:02}:{om:02}"
                    off = (oh * 60 + om) * (1 if sign == "+" else -1)
                    want = (hh * 60 + mm - off) % 1440 == 23 * 60 + 59
                    assert (rx.fullmatch(s) is not None) == want, s


def test_leap_years():
    rx = re.compile(to_python_regex(format_to_ir("date")))
    import calendar

    for y in list(range(0, 2500, 1)) + [9996, 9999]:
        assert (rx.fullmatch(f"{y:04}-02-29") is not None) == calendar.isleap(y), y
    assert rx.fullmatch("2023-02-28") and not rx.fullmatch("2023-02-30")


@pytest.mark.parametrize(
    "name, samples",
    [
        ("date-time", ["1963-06-19T08:30:06.283185Z", "1998-12-31T15:59:60.123-08:00", "1990-02-31T15:59:59Z",
                       "1998-12-31T23:59:60+01:00"]),
        ("email", ['"joe bloggs"@example.com', "joe.bloggs@[IPv6:::1]", "te..st@example.com"]),
        ("hostname", ["www.example.com", "-bad.com", "a" * 64 + ".com"]),
        ("uri", ["http://foo.bar/?baz=qux#quux", "//foo.bar", "http://example.com/%6G"]),
        ("uuid", ["2EB8AA08-AA98-11EA-B4AA-73B441D16380", "2eb8aa08aa9811eab4aa73b441d16380"]),
        ("ipv6", ["::1", "1::d6::42", "1:2::192.168.0.1"]),
    ],
)
def test_formats_through_json_strings_and_lark(name, samples):
    # the grammar as schema.py builds it: a quoted JSON string whose content spells the format
    node = format_to_ir(name)
    g = ir.Grammar({"start": ir.seq(ir.lit('"'), encode_string_language(node), ir.lit('"'))})
    text = to_lark(g)
    rx = re.compile(to_python_regex(node))
    for s in samples:
        want = rx.fullmatch(s) is not None
        assert lark_parses(text, json.dumps(s)) == want, s
        # the same text with every ASCII letter spelled as \\u00XX
        escaped = '"' + "".join(f"\\u{ord(c):04X}" if c.isalpha() else json.dumps(c)[1:-1] for c in s) + '"'
        assert lark_parses(text, escaped) == want, escaped


def test_docs_format_lists_come_from_the_registry():
    # README, docs/keywords.md and docs/grammar.md list the formats between markers that
    # tools/gen_format_docs.py writes from dotjson.formats.FORMATS: stale lists fail here
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "tools" / "gen_format_docs.py"
    spec = importlib.util.spec_from_file_location("gen_format_docs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.stale() == [], "run python3 tools/gen_format_docs.py"
    assert "idn-hostname" in mod.region("supported") and "regex" in mod.region("supported")
    assert mod.region("unsupported") == ""  # (every format a draft defines has a language)


def test_registry_entries_are_whole():
    from dotjson.formats import FORMATS

    names = [f.name for f in FORMATS]
    assert len(names) == len(set(names))
    for f in FORMATS:
        assert f.since in ("draft-03", "draft-04", "draft-06", "draft-07", "2019-09", "2020-12") and f.notes
        assert f.exact or "refused" in f.notes.lower() or "unsupported" in f.notes, f.name  # narrower says where
