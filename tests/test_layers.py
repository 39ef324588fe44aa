"""Layering: the generic layers (grammar IR and rule families, derivative engine, hot loops,
token tries, regexes) know nothing of JSON Schema."""

from __future__ import annotations

from pathlib import Path

import dotjson

PKG = Path(dotjson.__file__).resolve().parent

GENERIC = ("ir", "automaton", "_kernels")
GENERIC_FILES = ("trie.py", "regex.py")
JSON_LAYER = ("dotjson.jsonschema", "dotjson.formats")
#: Tooling beside the library (the command line, model loading, test tokenizers) and the alias the
#: README's quickstart imports: the library uses none of it.
TOOLING = ("dotjson.tools", "dotjson.models")
#: The modules that may import the tooling: the tooling itself, its alias and ``python -m dotjson``.
TOOLING_FILES = ("tools", "models.py", "__main__.py")


def _imports(path):
    """(line, dotted names) of every import in one module, relative imports resolved."""
    import ast

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


def test_json_layer_modules_live_under_jsonschema():
    """The JSON-only modules moved under ``dotjson/jsonschema/`` have no second copy at the top
    level, and the compatibility alias ``dotjson.schema`` is gone (no user imports it)."""
    for name in ("key_trie", "pattern_keys", "objects_any_order", "jsonstr", "schema"):
        assert not (PKG / f"{name}.py").exists(), name
    for name in ("key_trie", "pattern_keys", "objects_any_order", "jsonstr"):
        assert (PKG / "jsonschema" / f"{name}.py").exists(), name
