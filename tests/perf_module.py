"""A script of ``perf/`` loaded as a module, for the tests that run it (``perf/`` is no package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

PERF = Path(__file__).resolve().parent.parent / "perf"


def perf_module(name: str):
    """``perf/<name>.py`` as a module (named ``_<name>``, apart from any ``<name>`` imported)."""
    spec = importlib.util.spec_from_file_location(f"_{name}", PERF / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
