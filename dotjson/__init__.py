"""dotjson: exact, lazy JSON-Schema-constrained decoding.

Public surface: :class:`Vocabulary`, :class:`Index`, :class:`Guide`, :class:`BatchedTokenSet`,
:class:`LogitsProcessor`. Nothing is compiled at import; call :func:`warmup` in servers.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "Vocabulary": "dotjson.vocabulary",
    "Index": "dotjson.index",
    "Guide": "dotjson.guide",
    "BatchedTokenSet": "dotjson.tokenset",
    "LogitsProcessor": "dotjson.processor",
    "warmup": "dotjson.warmup",
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
