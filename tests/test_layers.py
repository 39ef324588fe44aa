"""Layering: the generic layers (grammar IR and rule families, derivative engine, hot loops,
token tries, regexes) know nothing of JSON Schema."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import dotjson

PKG = Path(dotjson.__file__).resolve().parent

GENERIC = ("ir", "automaton", "_kernels", "regex", "vocabulary")
#: (``grammar.py`` is Lark text <-> the IR for any grammar; the JSON grammar over it is the JSON
#: layer's, :mod:`dotjson.jsonschema.jsonbase`)
GENERIC_FILES = ("trie.py", "grammar.py", "masks.py")
JSON_LAYER = ("dotjson.jsonschema", "dotjson.formats")
#: Tooling beside the library (the command line, model loading, test tokenizers) and the alias the
#: README's quickstart imports: the library uses none of it.
TOOLING = ("dotjson.tools", "dotjson.models")
#: The modules that may import the tooling: the tooling itself, its alias and ``python -m dotjson``.
TOOLING_FILES = ("tools", "models.py", "__main__.py")


def _imports(path):
    """(line, dotted names) of every import in one module, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = path.relative_to(PKG.parent).with_suffix("").parts
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg[: len(pkg) - node.level])
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            yield node.lineno, [name] + [f"{name}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            yield node.lineno, [a.name for a in node.names]


def _offenders(paths, layer):
    return [f"{path.relative_to(PKG)}:{line}" for path in paths for line, names in _imports(path)
            if any(n == j or n.startswith(j + ".") for n in names for j in layer)]


def test_generic_layers_import_nothing_of_the_json_layer():
    """The grammar IR (with the rule-family protocol), the derivative engine and the hot loops
    take JSON facts as data: none of their modules imports a JSON Schema module."""
    paths = [p for d in GENERIC for p in (PKG / d).rglob("*.py")] + [PKG / f for f in GENERIC_FILES]
    assert _offenders(paths, JSON_LAYER) == []


def test_the_library_imports_nothing_of_the_tooling():
    """The command line, model loading and the test tokenizers sit beside the library: no library
    module imports them, so the library never pulls in ``transformers`` model code or a tokenizer
    builder by accident."""
    paths = [p for p in PKG.rglob("*.py")
             if p.relative_to(PKG).parts[0] not in TOOLING_FILES]
    assert len(paths) > 50  # the library's modules were found
    assert _offenders(paths, TOOLING) == []
    # the one path users import (the README's quickstart) is the tooling's own function
    import dotjson.models
    import dotjson.tools.models

    assert dotjson.models.converted_model_dir is dotjson.tools.models.converted_model_dir
    assert set(dotjson.models.__all__) <= set(vars(dotjson.models))


def test_json_layer_modules_live_under_jsonschema():
    """The JSON-only modules moved under ``dotjson/jsonschema/`` have no second copy at the top
    level, and the compatibility alias ``dotjson.schema`` is gone (no user imports it)."""
    for name in ("key_trie", "pattern_keys", "objects_any_order", "jsonstr", "schema"):
        assert not (PKG / f"{name}.py").exists(), name
    for name in ("key_trie", "pattern_keys", "objects_any_order", "jsonstr"):
        assert (PKG / "jsonschema" / f"{name}.py").exists(), name


# ------------------------------------------------------------------------------ one definition each

#: Modules that still write a budget default of their own, each with why; the lead's engine work
#: removes them (the entry must then go: the test checks that each one still offends).
BUDGETS_PENDING: dict = {}


def _literal(node) -> bool:
    """A number written out: ``200_000``, ``1 << 30``, ``-1``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return _literal(node.left) and _literal(node.right)
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    return False


def _budget_defaults_written_out(path, names) -> list[str]:
    """Where one module writes a budget's default as a number: a parameter's default, a keyword
    argument, ``options.get(name, default)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            pos = a.posonlyargs + a.args
            pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults))
            pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            where += [f"{node.lineno} {p.arg}" for p, d in pairs if p.arg in names and _literal(d)]
        elif isinstance(node, ast.Call):
            where += [f"{node.lineno} {k.arg}" for k in node.keywords if k.arg in names and _literal(k.value)]
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "get" and len(node.args) == 2
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value in names
                    and _literal(node.args[1])):
                where.append(f"{node.lineno} {node.args[0].value}")
    return where


def test_the_budget_defaults_have_one_definition():
    """``max_states``, ``max_cache_bytes``, ``fuel`` and ``max_store_bytes`` default to the values of
    ``dotjson._config.BUDGETS`` everywhere, and no module but ``_config`` writes one out."""
    from dotjson._config import BUDGET_NAMES

    found = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel != "_config.py":
            hits = _budget_defaults_written_out(path, set(BUDGET_NAMES))
            if hits:
                found[rel] = hits
    assert set(found) - set(BUDGETS_PENDING) == set(), found
    stale = set(BUDGETS_PENDING) - set(found)
    assert not stale, f"no longer writes a budget default: remove {stale} from BUDGETS_PENDING"


def test_the_budget_defaults_are_the_ones_documented():
    """Every constructor taking a budget defaults to ``BUDGETS``' value, and ``Index``'s docstring
    states the same defaults (prose cannot read the table: it is checked against it)."""
    import inspect
    import re

    from dotjson import Index
    from dotjson._config import BUDGET_NAMES, BUDGETS, Budgets
    from dotjson.automaton import Automaton

    for f in (Index.__init__, Index.from_grammar, Automaton.__init__):
        params = inspect.signature(f).parameters
        for name in BUDGET_NAMES:
            if name in params:
                assert params[name].default == getattr(BUDGETS, name), (f.__qualname__, name)

    def spelled(v):
        return f"{v >> 30} GiB" if v >= 1 << 30 and v % (1 << 30) == 0 else f"{v:_}"

    for doc in (Index.__doc__, Budgets.__doc__):
        said = dict(re.findall(r"^\s*(\w+) : int, default (\S+(?: GiB)?)\s*$", doc, flags=re.M))
        assert {n: said.get(n) for n in BUDGET_NAMES} == {n: spelled(getattr(BUDGETS, n)) for n in BUDGET_NAMES}
    # the options an IndexCache forwards are the budgets' names
    from dotjson.cache import _OPTIONS

    assert all(set(BUDGET_NAMES) <= opts for opts in _OPTIONS.values())


def test_every_package_is_installed():
    """A module split into a package is installed: ``pyproject.toml`` lists the packages one by
    one (``[tool.setuptools] packages``), and one missing from the list is missing from the wheel
    (an ImportError after ``pip install .``, never seen in an editable checkout)."""
    import tomllib

    conf = tomllib.loads((PKG.parent / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(conf["tool"]["setuptools"]["packages"])
    found = {".".join(("dotjson",) + p.parent.relative_to(PKG).parts) for p in PKG.rglob("__init__.py")}
    assert "dotjson.jsonschema" in found
    assert found - listed == set()


# ------------------------------------------------------------------------------ JSON facts as data

#: The layers that take JSON's string syntax as data (the JSON layer's
#: :data:`dotjson.jsonschema.jsonstr.STRING_SYNTAX` and plain class) and write none of it: the
#: derivative engine, its hot loops, the grammar IR, the token side. (``grammar.py``, ``regex/``
#: and ``ebnf.py`` are generic too, but quote and escape Lark's and regexes' own syntax.)
NO_JSON_SYNTAX = ("ir", "automaton", "_kernels", "vocabulary")
NO_JSON_SYNTAX_FILES = ("trie.py", "masks.py")
#: Modules that still write a JSON string fact of their own, each with why; the entry must go
#: when it no longer offends (the test checks that each one still does).
JSON_FACTS_PENDING: dict = {}

#: JSON's quote, backslash and the ``u`` of ``\uXXXX``, as bytes
_JSON_BYTES = frozenset((0x22, 0x5C, 0x75))


def _json_text(v) -> bool:
    """A short constant made of JSON's quote and backslash only: ``'"'``, ``b'\\'``, ``'\\"'``."""
    if isinstance(v, bytes):
        v = v.decode("latin-1")
    return isinstance(v, str) and 0 < len(v) <= 4 and set(v) <= {'"', "\\"}


def _json_literals(text: str) -> list[int]:
    """The lines of ``text`` that write a JSON string fact: the quote, the backslash or ``u`` as a
    byte compared with, indexed by, stored or passed (``b == 34``, ``seen[117]``,
    ``cand[k] = 92``, ``deriv(t, 0x5C)``); the quote or backslash as text compared with or
    ``ord``-ed, or as bytes anywhere; the short-escape table (``bfnrt``); a range table written
    around the quote or the backslash (``(0x20, 0x21), (0x23, 0x5B)``). Arithmetic with such a
    number, a count (``range(117)``, ``np.zeros(34)``) or a backslash in a path prefix are not
    JSON and not flagged."""
    def const(n, test):
        return isinstance(n, ast.Constant) and test(n.value)

    def byte(v):
        return type(v) is int and v in _JSON_BYTES

    lines = []
    for node in ast.walk(ast.parse(text)):
        hits = []
        if isinstance(node, ast.Compare):
            hits = [c for c in (node.left, *node.comparators) if const(c, byte) or const(c, _json_text)]
        elif isinstance(node, ast.Subscript):
            hits = [node.slice] if const(node.slice, byte) else []
        elif isinstance(node, ast.Assign):
            if const(node.value, byte) and any(isinstance(t, ast.Subscript) for t in node.targets):
                hits = [node.value]
        elif isinstance(node, ast.Call):
            # (passed beside other arguments: a count alone, or a range's bound, is not a byte)
            counted = len(node.args) < 2 or (isinstance(node.func, ast.Name) and node.func.id == "range")
            hits = [] if counted else [a for a in node.args if const(a, byte)]
            if isinstance(node.func, ast.Name) and node.func.id == "ord":
                hits += [a for a in node.args if const(a, _json_text)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            v = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            if "bfnrt" in v or (isinstance(node.value, bytes) and _json_text(v)):
                hits = [node]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            ints = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is int}
            if {0x21, 0x23} <= ints or {0x5B, 0x5D} <= ints:
                hits = [node]
        lines += [h.lineno for h in hits]
    return sorted(set(lines))


def test_the_json_literal_check_is_precise():
    """What :func:`_json_literals` flags (each way a JSON string fact was once written in the
    engine) and what it lets pass (the same numbers and characters meaning something else)."""
    flagged = [
        "if b == 34:\n    pass",
        "if s >= e or b < 32 or b == 0x22:\n    pass",
        "seen[117] = True",
        "cand[k] = 92",
        "after = self.deriv(t, 0x5C)",
        "_SHORT_ESCAPES = tuple(b'\"\\\\/bfnrt')",
        "q = ord('\"')",
        "if ch in '\"\\\\':\n    pass",
        "x = b'\\\\'",
        "PLAIN_RANGES = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF))",
    ]
    passed = [
        "n = 34 * k + 92",
        "for i in range(117):\n    pass",
        "buf = np.zeros(34, dtype=np.int32)",
        "if s.startswith(('/', './', '~', '\\\\')):\n    pass",
        "msg = f'expected a \"{name}\" here'",
        "ranges = ((0x20, 0x7E), (0xA0, 0xFF))",
        "x = cand[k]",
    ]
    assert [t for t in flagged if not _json_literals(t)] == []
    assert [t for t in passed if _json_literals(t)] == []


def test_generic_layers_write_no_json_string_syntax():
    """JSON's string syntax (the quote, the backslash, ``\\uXXXX``, the short escapes, the plain
    class) has one definition, in the JSON layer: the engine's key sets read it from their tables,
    and no module of the engine, the IR or the token side writes a byte of it."""
    paths = [p for d in NO_JSON_SYNTAX for p in (PKG / d).rglob("*.py")] + [PKG / f for f in NO_JSON_SYNTAX_FILES]
    assert len(paths) > 30  # the layers' modules were found
    found = {}
    for path in paths:
        lines = _json_literals(path.read_text(encoding="utf-8"))
        if lines:
            found[path.relative_to(PKG).as_posix()] = lines
    assert set(found) - set(JSON_FACTS_PENDING) == set(), found
    stale = set(JSON_FACTS_PENDING) - set(found)
    assert not stale, f"no longer writes a JSON fact: remove {stale} from JSON_FACTS_PENDING"


def test_the_plain_class_an_index_uses_is_the_json_layers(tiny_bpe_vocab):
    """The plain class is defined once, by the JSON layer (its plain characters, as the token
    side takes them), and an index hands that one down: its tries, its masks' walk tables,
    plain sequences and delimiters are the class's."""
    from dotjson import Index
    from dotjson.jsonschema.jsonstr import PLAIN_CHARS, PLAIN_CLASS
    from dotjson.trie import PlainClass

    # the plain characters less ECMAScript's line terminators U+2028 and U+2029 (jsonstr.PLAIN_CLASS)
    assert isinstance(PLAIN_CLASS, PlainClass)
    for c in (0x20, 0x7E, 0xE9, 0x2027, 0x2028, 0x2029, 0x202A, 0xD7FF, 0xE000, 0x10FFFF):
        assert any(lo <= c <= hi for lo, hi in PLAIN_CLASS.ranges) == (
            any(lo <= c <= hi for lo, hi in PLAIN_CHARS.ranges) and c not in (0x2028, 0x2029)), hex(c)
        assert PLAIN_CLASS.holds(chr(c).encode()) == (c not in (0x2028, 0x2029)), hex(c)
    for index in (Index({"type": "string"}, tiny_bpe_vocab),
                  Index.from_regex('a+b', tiny_bpe_vocab)):
        assert index._plain is PLAIN_CLASS and index._masker._plain is PLAIN_CLASS
        assert index._tries is tiny_bpe_vocab.tries_for(PLAIN_CLASS) is index._masker._tries
        assert index._tries.plain_class is PLAIN_CLASS
        assert index._masker._walk_tables is tiny_bpe_vocab._walk_tables(PLAIN_CLASS)
    # no module holds another one (the token side's modules hold none at all)
    import importlib
    import sys

    for p in PKG.rglob("*.py"):
        rel = p.relative_to(PKG.parent).with_suffix("").parts
        if "tools" not in rel and rel[-1] != "__main__":
            importlib.import_module(".".join(rel[:-1] if rel[-1] == "__init__" else rel))
    held = {(name, k): v for name, m in list(sys.modules.items()) if name.startswith("dotjson")
            for k, v in vars(m).items() if isinstance(v, PlainClass)}
    assert all(v is PLAIN_CLASS for v in held.values()), held
    assert {name for name, _ in held} == {"dotjson.jsonschema.jsonstr", "dotjson.index"}


#: A toy plain class: printable ASCII but ``a``, and no character beyond ASCII
_TOY = ((0x20, 0x60), (0x62, 0x7E))


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "tag": {"type": "string"}},
     "required": ["name"]},
    {"type": "array", "items": {"type": "string", "format": "date"}, "maxItems": 3},
    {"type": "object", "additionalProperties": {"type": "string", "minLength": 2}},
])
def test_masks_are_the_same_under_another_plain_class(schema, tiny_bpe_vocab, monkeypatch):
    """The class only decides which tokens the walk's shortcuts may take whole: an index handed
    a toy class (its own tries, walk tables, plain runs and heads) allows exactly the tokens the
    JSON class's index allows, at every byte of a few documents."""
    from dotjson import Index
    from dotjson import index as index_mod
    from dotjson.trie import PlainClass

    from naive import assert_same_masks

    toy = PlainClass(_TOY)
    ref = Index(schema, tiny_bpe_vocab)
    monkeypatch.setattr(index_mod, "PLAIN_CLASS", toy)
    other = Index(schema, tiny_bpe_vocab)
    assert other._plain is toy and other._tries is tiny_bpe_vocab.tries_for(toy)
    assert not np.array_equal(other._tries.plain_bits, ref._tries.plain_bits)
    docs = [b'{"name": "ab\\u00e9cd", "tag": "a\\"b"}', b'["2024-02-29", "1999-12-31"]',
            b'{"aa": "xyz", "a\\nb": "\xc3\xa9\xc3\xa9"}']
    for doc in docs:
        assert_same_masks(ref, other, doc)
