"""Sizes: no module of the package over ~1,000 lines and no function over ~150, so that a module
holds one concept and a function reads on a screen or two (issue 27).

Measured on the source: a module's lines, and a function's from its ``def`` to its last line with
its docstring left out (a numpydoc parameter list is documentation, not code); methods and
nested functions count on their own. Generated data is exempt. The reference twins of the engine
(``tests/naive_automaton.py`` ...) are test code, not package modules. What is over today is
listed in :data:`OVER`, each entry with why, and the list can only shrink: an entry already under
its limit fails the test as well (remove it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import dotjson

PKG = Path(dotjson.__file__).resolve().parent

MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 150

#: Generated tables, not code anyone edits by hand (each written by a script in ``tools/``).
GENERATED = {
    "formats/_idna_data.py": "the IDNA2008 tables, written by tools/gen_idna_tables.py",
}

#: Over a limit today: ``module`` or ``module:function``. The engine's modules, which the lead is
#: restructuring; an entry leaves the list with the change that brings it under the limit.
OVER: dict[str, str] = {
    # (empty since 2026-12-02: index.py's masks are dotjson/masks.py; rows._row keeps its hot
    # term kinds inline and calls helpers for REP, AND and DIFF rows: split into one helper per
    # kind, the fresh masks were 5-7% slower. A new entry needs its reason here.)
}


def _docstring_lines(node) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0].end_lineno - body[0].lineno + 1
    return 0


def _functions(tree):
    """(qualified name, lines without the docstring) of every function, methods and nested
    functions included."""
    stack = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield name, child.end_lineno - child.lineno + 1 - _docstring_lines(child)
                stack.append((child, name + "."))
            else:
                stack.append((child, prefix))


def _sizes() -> dict[str, int]:
    """Every module over MAX_MODULE_LINES and function over MAX_FUNCTION_LINES, with its size."""
    over = {}
    paths = sorted(PKG.rglob("*.py"))
    assert len(paths) > 50  # the package's modules were found
    for path in paths:
        rel = path.relative_to(PKG).as_posix()
        if rel in GENERATED:
            continue
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if n > MAX_MODULE_LINES:
            over[rel] = n
        for name, lines in _functions(ast.parse(text)):
            if lines > MAX_FUNCTION_LINES:
                over[f"{rel}:{name}"] = lines
    return over


def test_no_module_or_function_is_over_its_size():
    over = _sizes()
    new = {k: v for k, v in over.items() if k not in OVER}
    assert new == {}, (f"over {MAX_MODULE_LINES} lines (module) or {MAX_FUNCTION_LINES} lines without "
                       f"the docstring (function): split it by concept: {new}")


def test_the_list_of_what_is_over_only_shrinks():
    over = _sizes()
    shrunk = sorted(k for k in OVER if k not in over)
    assert shrunk == [], f"under the limit now (or gone): remove it from OVER: {shrunk}"
    for rel in GENERATED:
        assert (PKG / rel).is_file(), rel

