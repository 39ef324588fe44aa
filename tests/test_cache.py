"""IndexCache: keyed by schema text and options, bounded in bytes, thread-safe."""

from __future__ import annotations

import threading

import pytest

from dotjson import Guide, Index
from dotjson.cache import IndexCache
from dotjson.errors import DotjsonTypeError, DotjsonValueError, SchemaError

SCHEMA = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}},
          "required": ["b", "a"]}


def test_same_schema_same_index(smollm2_vocab):
    cache = IndexCache(smollm2_vocab)
    ix = cache.get(SCHEMA, disallow_whitespace=True)
    assert isinstance(ix, Index)
    # JSON text with other spacing is the same document
    assert cache.get('{"type": "object",  "properties": {"b": {"type": "integer"}, "a": '
                     '{"type": "string"}}, "required": ["b", "a"]}', disallow_whitespace=True) is ix
    assert (cache.hits, cache.misses) == (1, 1)
    # options are part of the key; so is property order (it is the generation order)
    assert cache.get(SCHEMA) is not ix
    swapped = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
               "required": ["b", "a"]}
    other = cache.get(swapped, disallow_whitespace=True)
    assert other is not ix
    assert ix.accepts('{"b":1,"a":"x"}') and not ix.accepts('{"a":"x","b":1}')
    assert other.accepts('{"a":"x","b":1}')
    assert len(cache) == 3
    assert cache.get_regex(r"\d{3}") is cache.get_regex(r"\d{3}")
    assert cache.get_lark('start: "yes" | "no"').accepts("no")
    assert len(cache) == 5 and cache.nbytes > 0
    cache.clear()
    assert len(cache) == 0


def test_bad_arguments(smollm2_vocab):
    cache = IndexCache(smollm2_vocab)
    with pytest.raises(DotjsonTypeError, match="Invalid option 'disallow_whitspace'"):
        cache.get(SCHEMA, disallow_whitspace=True)
    with pytest.raises(DotjsonTypeError, match="Invalid option 'close_objects' for a regex"):
        cache.get_regex("a", close_objects=False)
    with pytest.raises(DotjsonValueError, match="Invalid max_bytes"):
        IndexCache(smollm2_vocab, max_bytes=0)
    with pytest.raises(DotjsonTypeError, match="Invalid vocabulary"):
        IndexCache(object())
    # a schema error propagates, names where, and is not cached
    for _ in range(2):
        with pytest.raises(SchemaError, match="minimum"):
            cache.get({"type": "integer", "minimum": "zero"})
    with pytest.raises(SchemaError):
        cache.get('{"type": ')
    assert len(cache) == 0 and cache.misses == 3


def test_bounded_in_bytes(smollm2_vocab):
    cache = IndexCache(smollm2_vocab)
    first = cache.get({"type": "integer"})
    Guide(first).get_start_tokensets()  # memoize a mask: the index grows
    one = first.nbytes
    cache = IndexCache(smollm2_vocab, max_bytes=int(2.5 * one))
    ixs = [cache.get({"type": "integer", "maximum": m}) for m in range(5)]
    for ix in ixs:
        Guide(ix).get_start_tokensets()
    cache.get({"type": "integer", "maximum": 99})
    assert cache.nbytes <= cache.max_bytes
    assert 1 <= len(cache) < 6
    # the least recently used went first: the newest is there, the oldest not
    assert cache.get({"type": "integer", "maximum": 99}) is not None
    before = cache.misses
    assert cache.get({"type": "integer", "maximum": 0}) is not ixs[0]
    assert cache.misses == before + 1
    # each index is built with max_cache_bytes at most the bound
    assert cache.get({"type": "boolean"})._max_cache_bytes <= cache.max_bytes


def test_concurrent_requests_compile_once(smollm2_vocab):
    cache = IndexCache(smollm2_vocab)
    schema = {"type": "array", "items": {"type": "object", "properties": {"k": {"enum": [1, 2, 3]}}}}
    got, errors = [], []
    barrier = threading.Barrier(8)

    def worker():
        try:
            barrier.wait()
            ix = cache.get(schema)
            Guide(ix).get_start_tokensets()
            got.append(ix)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(got) == 8 and all(ix is got[0] for ix in got)
    assert cache.misses == 1 and cache.hits == 7
