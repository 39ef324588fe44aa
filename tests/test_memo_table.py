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
