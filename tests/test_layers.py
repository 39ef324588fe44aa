"""Layering: the generic layers (grammar IR and rule families, derivative engine, hot loops,
token tries, regexes) know nothing of JSON Schema."""

from __future__ import annotations

from pathlib import Path

import dotjson

PKG = Path(dotjson.__file__).resolve().parent

GENERIC = ("ir", "automaton", "_kernels")
GENERIC_FILES = ("trie.py", "regex.py")
JSON_LAYER = ("dotjson.jsonschema", "dotjson.objects_any_order", "dotjson.key_trie", "dotjson.jsonstr",
              "dotjson.pattern_keys", "dotjson.formats")


def test_generic_layers_import_nothing_of_the_json_layer():
    """The grammar IR (with the rule-family protocol), the derivative engine and the hot loops
    take JSON facts as data: none of their modules imports a JSON Schema module."""
    import ast

    paths = [p for d in GENERIC for p in (PKG / d).rglob("*.py")] + [PKG / f for f in GENERIC_FILES]
    bad = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        pkg = path.relative_to(PKG.parent).with_suffix("").parts
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = list(pkg[: len(pkg) - node.level])
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                names = [name] + [f"{name}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == j or n.startswith(j + ".") for n in names for j in JSON_LAYER):
                bad.append(f"{path.relative_to(PKG)}:{node.lineno}")
    assert bad == []
