"""The store's memo table and the mask key of large terms (issue 33).

A new schema with ``format: date-time`` stalled 175-440 ms in one mask: the mask key of the
first state inside the string (``clamp``) visited the format's ~2,400-term language, and every
visit was a memo lookup whose slot came from a hash that sent runs of consecutive term ids (keys
``t << 8 | byte``, ``t << 16 | limit``) to one slot, so linear probing walked long runs; and the
clamp re-interned every node even where it changed nothing. These tests pin both causes down
without timing anything.
"""

from __future__ import annotations

import numpy as np

from dotjson import Index
from dotjson.automaton import kernels as K


def _longest_run(slots: np.ndarray, size: int) -> int:
    """The longest run of occupied slots after inserting ``slots`` with linear probing."""
    used = np.zeros(size, dtype=bool)
    for s in slots:
        i = int(s) % size
        while used[i]:
            i = (i + 1) % size
        used[i] = True
    run = best = 0
    for u in np.concatenate([used, used]):  # (a run may wrap around)
        run = run + 1 if u else 0
        best = max(best, run)
    return min(best, size)


def test_memo_keys_of_consecutive_terms_spread_over_the_table():
    size = 8192
    for shift, low in ((8, 0x22), (16, 129), (29, 7)):  # derivative, clamp, sequence keys
        keys = [(np.int64(3) << 58) | (np.int64(t) << shift) | low for t in range(4096)]
        slots = np.array([K._mslot(k) & (size - 1) for k in keys])
        # a uniform hash: ~3,220 distinct slots of 8,192 for 4,096 keys, runs of a few dozen;
        # the hash this replaced gave 64 (derivative keys) and 218 (clamp keys) distinct slots
        assert len(set(slots.tolist())) > 2800, shift
        assert _longest_run(slots, size) < 200, shift
        assert (slots >= 0).all()


def test_clamping_a_format_language_builds_no_term(llama3_vocab):
    # nothing in a date-time string is far from its bounds: its clamp is the term itself, found
    # without re-interning any of its nodes
    index = Index({"type": "object", "properties": {"when": {"type": "string",
                   "format": "date-time"}}, "required": ["when"]}, llama3_vocab)
    s = index._walk_text(b'{"when": "')
    a = index._auto
    t = a.term_of(s)
    n = a.n_terms
    assert a.clamp(t, index._limit) == t
    assert a.n_terms == n
    # and the document is still decided exactly, through the memoized masks
    assert index.accepts('{"when": "2023-04-15T19:30:00Z"}')
    assert not index.accepts('{"when": "2023-02-30T19:30:00Z"}')


def test_clamp_still_rewrites_far_counters(llama3_vocab):
    # the no-rebuild shortcut must not hide a change below an unchanged node
    index = Index({"type": "array", "items": {"type": "string", "maxLength": 100000}},
                  llama3_vocab)
    s = index._walk_text(b'["abc')
    if s >= 1 << 62:  # a counter-carrying id: its exact state
        s = index._exact(s)
    a = index._auto
    t = a.term_of(s)
    c = a.clamp(t, index._limit)
    assert c != t
    assert a.clamp(c, index._limit) == c


def test_a_format_is_compiled_once_per_process(llama3_vocab):
    # a new schema naming date-time starts from a store image holding the format's language
    # compiled: its index compiles none of the format's terms when decoding reaches the string
    def schema(k):
        return {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
                f"x{k}": {"type": "integer"}}, "required": ["when"]}

    first = Index(schema(0), llama3_vocab)
    second = Index(schema(1), llama3_vocab)
    a = second._auto
    extra = second.ir.shared[1][-1]  # the format's language, after the spellings
    assert extra is first.ir.shared[1][-1]
    assert a.rules._base_compiled.get(id(extra)) is not None
    n0 = a.n_terms
    s = second._walk_text(b'{"when": "2023-')
    assert s >= 0
    # the walk derived a few terms; compiling the format's language would add ~2,400
    assert a.n_terms - n0 < 400
    for index in (first, second):
        assert index.accepts('{"when": "2023-04-15T19:30:00Z"}')
        assert index.accepts('{"when": "1998-12-31T15:59:60.123-08:00"}')  # a leap second
        assert index.accepts('{"when": "2024-02-29T00:00:00Z"}')
        assert not index.accepts('{"when": "2023-02-29T19:30:00Z"}')
        assert not index.accepts('{"when": "2023-04-15 19:30:00Z"}')


def test_many_formats_still_compile(llama3_vocab):
    # more formats than the image takes: compiled in the index's own store, same verdicts
    props = {f: {"type": "string", "format": f} for f in ("date", "time", "email", "uuid", "ipv4")}
    index = Index({"type": "object", "properties": props, "required": list(props)}, llama3_vocab)
    doc = ('{"date": "2023-04-15", "time": "19:30:00Z", "email": "a@b.co", '
           '"uuid": "123e4567-e89b-12d3-a456-426614174000", "ipv4": "10.0.0.1"}')
    assert index.accepts(doc)
    assert not index.accepts(doc.replace("10.0.0.1", "10.0.0.256"))
