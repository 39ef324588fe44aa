"""``format: "regex"``: ECMA-262 patterns (dotjson/jsonschema/ecma_pattern.py, issue 29).

The reference is an ECMA-262 engine: V8's ``new RegExp(p, "u")``. Its verdicts are recorded in
``tests/data/ecma_patterns.json`` for every ``pattern``/``patternProperties`` key of the MaskBench
schemas (real-world patterns) and for patterns a random grammar generated (with mutations, so
about two thirds are invalid). The language must never accept an invalid pattern; on the
real-world patterns it must accept every valid one (its documented limits are elsewhere). With
``--runslow`` and Node.js installed, a fresh random corpus is checked against the engine itself.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from dotjson.automaton import Automaton
from dotjson.jsonschema import schema_to_grammar

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json"}
DATA = json.loads((Path(__file__).resolve().parent / "data" / "ecma_patterns.json").read_text())


@pytest.fixture(scope="module")
def regex_format():
    auto = Automaton(schema_to_grammar({"type": "string", "format": "regex"}, **EVERY_VALID))
    return lambda p: auto.matches(json.dumps(p).encode())


def _sample(rows, k, seed):
    rows = list(rows)
    random.Random(seed).shuffle(rows)
    return rows[:k]


def test_real_world_patterns_exactly(regex_format):
    # (a sample in the default run; --runslow: test_every_recorded_verdict)
    for p, valid in _sample(DATA["maskbench"], 150, 29):
        assert regex_format(p) == valid, p


def test_generated_patterns_never_invalid(regex_format):
    rows = _sample(DATA["generated"], 200, 29)
    accepted = [p for p, valid in rows if regex_format(p)]
    assert all(dict(rows)[p] for p in accepted), [p for p in accepted if not dict(rows)[p]]
    assert len(accepted) > 30  # (the language is not a trivial subset)


@pytest.mark.slow
def test_every_recorded_verdict(regex_format):
    for p, valid in DATA["maskbench"]:
        assert regex_format(p) == valid, p
    for p, valid in DATA["generated"]:
        assert not regex_format(p) or valid, p


@pytest.mark.parametrize("pattern, valid", [
    # the JSON-Schema-Test-Suite's ECMA-262 cases
    ("([abc])+\\s+$", True), ("^(abc]", False), ("\\a", False), ("(?P<name>x)", False), ("(?#comment)a", False),
    ("(?i)abc", False), ("(?<name>x)", True), ("(?<n>a)\\k<n>", True), ("(?<=a+)b", True), ("[]", True), ("[^]", True),
    ("\\cA", True),
    # early errors a regular language still decides
    ("a{2,1}", False), ("a{1,2}", True), ("a{10,9}", False), ("a{9,10}", True), ("a{100,200}", True),
    ("[z-a]", False), ("[a-z]", True), ("[\\x41-\\x5A]", True), ("[\\x5A-\\x41]", False), ("[\\u{5A}-A]", False),
    ("[\\u0000-\\u001F]", True), ("[\\u001F-\\u0000]", False), ("[а-я]", True),
    ("[\\u4e00-\\u9fa5]", True), ("[\\w-a]", False), ("[a-\\d]", False), ("[\\d-]", True), ("[--/]", True),
    ("\\01", False), ("\\0", True), ("^*", False), ("(?=a)*", False), ("a**", False), ("\\-", False), ("[\\-]", True),
    ("\\p{Lu}", True), ("\\p{lu}", False), ("\\p{Script=Greek}", True), ("\\p{sc=Grek}", True), ("\\p{Foo}", False),
    ("\\u{10FFFF}", True), ("\\u{110000}", False), ("{", False), ("a{", False), ("]", False), ("\\k<n>", False),
    ("(?<a>x)(?<a>y)", False),
])
def test_pattern_verdicts(regex_format, pattern, valid):
    assert regex_format(pattern) == valid


@pytest.mark.parametrize("pattern", [
    "(a)\\1", "((((((((((((((((((a))))))))))))))))))", "a{100,150}", "[ぁ-ぅ]", "(?<a>x)(?<b>y)",
    "((?<n>a))\\k<n>", "[\\0]", "[a-\\x7A]", "[\\u4e00-\\u4eff]",
])
def test_documented_limits_are_rejected(regex_format, pattern):
    # valid ECMA-262 patterns outside the regular under-approximation (ecma_pattern's docstring)
    assert not regex_format(pattern)


def test_regex_beside_pattern_and_property_names():
    # a regular language: intersected with `pattern`, used as a key language
    auto = Automaton(schema_to_grammar({"type": "string", "format": "regex", "pattern": "^/.+/$"}, **EVERY_VALID))
    assert auto.matches(b'"/a+/"') and not auto.matches(b'"/)/"') and not auto.matches(b'"a+"')
    auto = Automaton(schema_to_grammar({"type": "object", "propertyNames": {"format": "regex"}}, **EVERY_VALID))
    assert auto.matches(b'{"^a$": 1, "[0-9]+": 2}') and not auto.matches(b'{"(": 1}')


def test_the_generation_bound_leaves_a_regex_string_alone(smollm2_vocab):
    """With the library's defaults (the generation bounds) a ``format: regex`` string is not cut
    at 128 characters: the intersection of the pattern language with a length count made the
    first mask inside the value spend the emptiness search's fuel (a LimitExceededError).
    Masks inside the value work, and a pattern longer than the bound is a document."""
    from dotjson import Index

    index = Index({"type": "string", "format": "regex"}, smollm2_vocab)
    for prefix in (b'"', b'"^', b'"^(?:[a-z'):
        s = index._auto.walk_bytes(index.initial_state, prefix)
        assert s >= 0 and index.mask(s).any(), prefix
    long_pattern = "^(?:" + "|".join(f"item{i:03d}" for i in range(40)) + ")$"
    assert len(long_pattern) > 128 and index.accepts(json.dumps(long_pattern))


def _generate(seed: int, n: int) -> list[str]:
    """Random patterns from a small ECMA-262 grammar (classes, ranges in every spelling,
    quantifiers, groups, lookarounds, named groups, \\k, backreferences), a third mutated."""
    rng = random.Random(seed)

    def spell(v, in_class):
        c = chr(v)
        forms = [f"\\u{{{v:x}}}", f"\\u{{00{v:X}}}"]
        if c not in "\\]" + ("" if in_class else "^$.*+?()[]{}|-") and not 0xD800 <= v <= 0xDFFF:
            forms.append(c)
        if v <= 0xFF:
            forms += [f"\\x{v:02x}", f"\\x{v:02X}"]
        if v <= 0xFFFF:
            forms.append(f"\\u{v:04x}")
        if c in "^$\\.*+?()[]{}|/":
            forms.append("\\" + c)
        if 1 <= v <= 26:
            forms.append("\\c" + chr(64 + v))
        return rng.choice(forms)

    def cp():
        r = rng.random()
        return rng.randint(0x20, 0x7E) if r < 0.5 else rng.randint(0, 0x7FF) if r < 0.75 else \
            rng.randint(0x800, 0xFFFF) if r < 0.9 else rng.randint(0x10000, 0x10FFFF)

    def klass():
        out = "[" + ("^" if rng.random() < 0.3 else "")
        for _ in range(rng.randint(0, 4)):
            r = rng.random()
            if r < 0.4:
                a = cp()
                b = max(0, cp() if rng.random() < 0.3 else min(0x10FFFF, a + rng.randint(-3, 300)))
                out += spell(a, True) + "-" + spell(b, True)
            else:
                out += rng.choice(["\\d", "\\w", "\\p{L}", "-", spell(cp(), True)])
        return out + "]"

    def quant():
        a, b = rng.choice([0, 1, 9, 10, 99, 100, 999, 1000]), rng.choice([0, 1, 9, 10, 99, 100, 999, 1000])
        return rng.choice(["", "", "*", "+?", "?", f"{{{a}}}", f"{{{a},}}", f"{{{a},{b}}}"])

    def disj(d, names):
        return "|".join(alt(d, names) for _ in range(rng.choice([1, 1, 2])))

    def alt(d, names):
        return "".join(term(d, names) for _ in range(rng.randint(0, 4)))

    def term(d, names):
        r = rng.random()
        if r < 0.08:
            return rng.choice(["^", "$", "\\b", "\\B"])
        if r < 0.2 and d:
            return rng.choice(["(?=", "(?!", "(?<=", "(?<!"]) + disj(d - 1, names) + ")"
        if r < 0.35 and d:
            name = rng.choice(["n", "ab", None, None])
            if name:
                names.append(name)
            return (f"(?<{name}>" if name else rng.choice(["(", "(?:"])) + disj(d - 1, names) + ")" + quant()
        if r < 0.5:
            return klass() + quant()
        if r < 0.55 and names:
            return f"\\k<{rng.choice(names)}>"
        if r < 0.6:
            return f"\\{rng.randint(0, 3)}" + quant()
        return spell(cp(), False) + quant()

    out = set()
    while len(out) < n:
        p = disj(rng.randint(0, 3), [])
        if p and rng.random() < 0.3:
            i = rng.randrange(len(p))
            p = p[:i] + p[i + 1:] if rng.random() < 0.5 else p[:i] + rng.choice("()[]{}\\-?*|0,") + p[i:]
        out.add(p)
    return sorted(out)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js (V8) as the ECMA-262 reference")
def test_against_v8(regex_format):
    pats = _generate(2029, 2000)
    js = "const ps=JSON.parse(require('fs').readFileSync(0,'utf8'));" \
         "console.log(JSON.stringify(ps.map(p=>{try{new RegExp(p,'u');return true}catch(e){return false}})))"
    verdicts = json.loads(subprocess.run(["node", "-e", js], input=json.dumps(pats), capture_output=True, text=True,
                                         check=True).stdout)
    wrong = [p for p, ok in zip(pats, verdicts) if regex_format(p) and not ok]
    assert not wrong
