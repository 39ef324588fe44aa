"""dotjson: exact, lazy JSON-Schema-constrained decoding.

Public surface: :class:`Vocabulary`, :class:`Index`, :class:`Guide`, :class:`BatchedTokenSet`,
:class:`LogitsProcessor`. Nothing is compiled at import; call :func:`warmup` in servers.
"""

from __future__ import annotations

import importlib
import os

# Numba's OpenMP worker threads spin after a parallel kernel by default, and on a CPU they starve
# a model's forward pass running beside them (measured: 0.27 s → 1.9 s per SmolLM2 step). Idle
# OpenMP threads should sleep. This only takes effect if OpenMP was not initialised yet (import
# dotjson before torch, or export OMP_WAIT_POLICY=PASSIVE yourself); an explicit setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

_LAZY = {
    "Vocabulary": "dotjson.vocabulary",
    "Index": "dotjson.index",
    "Guide": "dotjson.guide",
    "BatchedTokenSet": "dotjson.tokenset",
    "LogitsProcessor": "dotjson.processor",
    "warmup": "dotjson._warmup",
    "JsonSchema": "dotjson.embed",
    "Tag": "dotjson.embed",
    "IndexCache": "dotjson.cache",
    "fill_next_token_bitmask": "dotjson.batch",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'dotjson' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
