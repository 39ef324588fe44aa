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
