"""Slow references shared by the tests (the automaton's own reference is ``naive_automaton.py``)."""

from __future__ import annotations


def allowed_tokens(index, vocab, prefix: bytes) -> set[int]:
    """The tokens allowed after ``prefix``, by trying every token's bytes on the index from scratch."""
    out = set()
    for t in range(vocab.max_token_id()):
        if t in vocab.eos_token_ids:
            if index.accepts(prefix):
                out.add(t)
            continue
        b = vocab.token_bytes(t)
        if b and index.is_prefix(prefix + b):
            out.add(t)
    return out


def reference_mask(ref, state: int, vocab) -> set[int]:
    """The tokens allowed in ``state`` of the reference automaton ``ref``
    (``naive_automaton.Automaton``): EOS when it accepts, every token whose bytes it can walk."""
    out = set()
    for t in range(vocab.max_token_id()):
        if t in vocab.eos_token_ids:
            if ref.accepting[state]:
                out.add(t)
            continue
        b = vocab.token_bytes(t)
        if b and ref.walk_bytes(state, b) >= 0:
            out.add(t)
    return out


def assert_same_masks(a, b, data: bytes) -> None:
    """Indexes ``a`` and ``b`` (one of them the reference: a shortcut turned off, an older
    language) reach a state at the same byte prefixes of ``data`` and give it the same mask."""
    import numpy as np

    for i in range(len(data) + 1):
        x = a._auto.walk_bytes(a.initial_state, data[:i])
        y = b._auto.walk_bytes(b.initial_state, data[:i])
        assert (x < 0) == (y < 0), data[:i]
        if x >= 0:
            assert np.array_equal(a.mask(x), b.mask(y)), data[:i]
