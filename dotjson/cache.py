"""An index cache shared across requests: one :class:`~dotjson.Index` per schema and options.

A serving engine sees the same schema again and again (one per tool, per endpoint); compiling it
once and keeping its memoized masks is most of the win. :class:`IndexCache` is what every
integration (:mod:`dotjson.integrations.vllm`, :mod:`dotjson.integrations.sglang`) holds: keyed
by the kind of source (JSON Schema, regex, Lark), its text and the options; bounded in bytes
(least recently used first out, the sizes re-read at each insertion since indexes grow as they
are used); thread-safe, and a schema requested by several threads at once is compiled once.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from concurrent.futures import Future

from ._config import BUDGET_NAMES, BUDGETS
from .errors import DotjsonTypeError, DotjsonValueError
from .index import Index, _as_int, _check_vocabulary

__all__ = ["IndexCache"]

_KINDS = ("json", "regex", "lark")

#: The options each kind of source takes (``Index``'s own names; every kind takes the budgets).
_OPTIONS = {
    "json": {"disallow_whitespace", "close_objects", "lenient", "property_order", "whitespace",
             "spellings", "bounds", "resources", *BUDGET_NAMES},
    "regex": set(BUDGET_NAMES),
    "lark": set(BUDGET_NAMES),
}


def _canonical(kind: str, source) -> str:
    """The text a source is keyed by: JSON Schemas parsed and re-dumped (same document, same
    key, whatever the spacing; key order kept, since it is the property order), regex and Lark
    text as given."""
    if kind != "json":
        if not isinstance(source, str):
            raise DotjsonTypeError(
                f"Invalid {kind} source: expected text (str), got {type(source).__name__}")
        return source
    if isinstance(source, (bytes, bytearray)):
        source = bytes(source).decode("utf-8", "surrogateescape")
    if isinstance(source, str):
        try:
            source = json.loads(source)
        except ValueError:
            return "text:" + source  # Index(...) raises the SchemaError, naming where
    if hasattr(source, "model_json_schema") and isinstance(source, type):
        source = source.model_json_schema()
    try:
        return json.dumps(source, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise DotjsonTypeError(
            f"Invalid schema: expected JSON text or a JSON value (dict, list, bool...), got "
            f"{type(source).__name__} ({exc})") from None


class IndexCache:
    """Compiled indexes for one vocabulary, kept across requests.

    Parameters
    ----------
    vocabulary : dotjson.Vocabulary
        The model's vocabulary; every index of the cache is built for it.
    max_bytes : int, default 2 GiB
        Bound on the memory of the cached indexes (:attr:`Index.nbytes`, which grows as their
        masks are memoized). Past it the least recently used indexes are dropped (an index still
        in use by a guide stays alive for that guide; it is only no longer shared). Each index is
        also built with ``max_cache_bytes`` at most this bound.

    Examples
    --------
    >>> cache = IndexCache(vocabulary)                                          # doctest: +SKIP
    >>> index = cache.get({"type": "object"}, disallow_whitespace=True)         # doctest: +SKIP
    >>> cache.get('{"type":"object"}', disallow_whitespace=True) is index       # doctest: +SKIP
    True
    """

    def __init__(self, vocabulary, max_bytes: int = 2 << 30):
        _check_vocabulary(vocabulary)
        max_bytes = _as_int(max_bytes, "max_bytes")
        if max_bytes < 1:
            raise DotjsonValueError(f"Invalid max_bytes: expected a positive integer, got {max_bytes}")
        self.vocabulary = vocabulary
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple, Index] = OrderedDict()
        self._building: dict[tuple, Future] = {}
        self.hits = 0
        self.misses = 0

    # ------------------------------------------------------------------ lookups

    def get(self, schema, **options) -> Index:
        """The index of a JSON Schema (JSON text, a parsed value or a Pydantic model class).

        ``options`` are :class:`~dotjson.Index`'s keyword arguments (``disallow_whitespace``,
        ``close_objects``, ``property_order``, ``whitespace``, ``spellings``, ``bounds``, ``lenient``, ``resources``,
        ``max_states``, ``max_cache_bytes``, ``fuel``); an unknown one is a
        :class:`~dotjson.errors.DotjsonTypeError`.
        """
        return self.get_kind("json", schema, **options)

    def get_regex(self, pattern: str, **options) -> Index:
        """The index of a regular expression (:meth:`Index.from_regex`)."""
        return self.get_kind("regex", pattern, **options)

    def get_lark(self, grammar: str, **options) -> Index:
        """The index of a Lark grammar (:meth:`Index.from_lark`)."""
        return self.get_kind("lark", grammar, **options)

    def get_kind(self, kind: str, source, **options) -> Index:
        """The index of ``source`` read as ``kind`` (``"json"``, ``"regex"`` or ``"lark"``)."""
        if kind not in _KINDS:
            raise DotjsonValueError(f"Invalid kind {kind!r}: expected one of {', '.join(_KINDS)}")
        unknown = sorted(set(options) - _OPTIONS[kind])
        if unknown:
            raise DotjsonTypeError(
                f"Invalid option {unknown[0]!r} for a {kind} index: expected one of "
                f"{', '.join(sorted(_OPTIONS[kind]))}")
        key = (kind, _canonical(kind, source),
               json.dumps(options, sort_keys=True, ensure_ascii=False, default=repr))
        with self._lock:
            index = self._entries.get(key)
            if index is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return index
            fut = self._building.get(key)
            owner = fut is None
            if owner:
                fut = self._building[key] = Future()
                self.misses += 1
            else:
                self.hits += 1
        if not owner:
            return fut.result()  # compiled by another thread; its error is raised here too
        try:
            index = self._build(kind, source, options)
        except BaseException as exc:
            with self._lock:
                del self._building[key]
            fut.set_exception(exc)
            raise
        with self._lock:
            del self._building[key]
            self._entries[key] = index
            self._evict()
        fut.set_result(index)
        return index

    def _build(self, kind: str, source, options: dict) -> Index:
        opts = dict(options)
        opts["max_cache_bytes"] = min(_as_int(opts.get("max_cache_bytes", BUDGETS.max_cache_bytes), "max_cache_bytes"),
                                      self.max_bytes)
        if kind == "json":
            return Index(source, self.vocabulary, **opts)
        if kind == "regex":
            return Index.from_regex(source, self.vocabulary, **opts)
        return Index.from_lark(source, self.vocabulary, **opts)

    def _evict(self) -> None:
        """Drop least recently used entries until the cache fits (call with the lock held); the
        newest entry stays even alone over the bound (it is in use)."""
        total = self._nbytes_locked()
        while total > self.max_bytes and len(self._entries) > 1:
            _, old = self._entries.popitem(last=False)
            total -= old.nbytes

    # ------------------------------------------------------------------ introspection

    def _nbytes_locked(self) -> int:
        return sum(ix.nbytes for ix in self._entries.values())

    @property
    def nbytes(self) -> int:
        """Memory of the cached indexes now (:attr:`Index.nbytes` summed)."""
        with self._lock:
            return self._nbytes_locked()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Drop every cached index."""
        with self._lock:
            self._entries.clear()

    def __repr__(self) -> str:
        return (f"IndexCache(entries={len(self)}, nbytes={self.nbytes}, max_bytes={self.max_bytes}, "
                f"hits={self.hits}, misses={self.misses})")
