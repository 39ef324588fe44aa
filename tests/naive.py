"""Slow references shared by the tests (the automaton's own reference is ``naive_automaton.py``)."""

from __future__ import annotations

import contextlib


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


def bits(mask) -> set:
    """The token ids set in a ``uint32`` bitset row."""
    import numpy as np

    return set(np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")).tolist())


def walk_against_reference(index, ref, toks, eos, accept, *, seeds, steps, choose=None, label=()) -> int:
    """Random walks over ``index`` and ``ref`` (the same grammar, ``ref`` the reference walk, e.g.
    ``Masker._family_masks = False``) from seeds ``0 .. seeds - 1``, ``steps`` tokens each: both
    masks equal at every state and both next states dead together; ``accept(text)`` holds for
    every text a walk may end (EOS allowed). ``choose(rng, choices)`` picks the next token id
    (default: any allowed one); ``label`` leads the assertion's message. Returns how many such
    ends the walks met."""
    import random

    finished = 0
    for seed in range(seeds):
        rng = random.Random(seed)
        s, r, path = index.initial_state, ref.initial_state, []
        for _ in range(steps):
            got, want = bits(index.mask(s)), bits(ref.mask(r))
            assert got == want, (*label, "".join(path), sorted(toks[t] if t < eos else t for t in got ^ want))
            if eos in got:
                assert accept("".join(path)), "".join(path)
                finished += 1
            choices = sorted(want - {eos})
            if not choices:
                break
            t = choose(rng, choices) if choose is not None else rng.choice(choices)
            path.append(toks[t])
            s, r = index.next_state(s, t), ref.next_state(r, t)
            assert (s < 0) == (r < 0)
    return finished


def generic_walk_index(*args, **kw):
    """``Index(*args, **kw)`` whose rule families leave their states' masks to the generic walk
    (``Masker._family_masks = False``: a rule per token prefix, exact by construction), the
    reference the families' own masks are compared with."""
    from dotjson import Index

    ref = Index(*args, **kw)
    ref._masker._family_masks = False
    return ref


@contextlib.contextmanager
def answers_of(module, name: str):
    """While the block runs, every answer of ``module.name`` (a kernel its caller reads off
    the module at each call), in order, in the list the block is given."""
    got = []
    real = getattr(module, name)

    def spy(*args):
        got.append(real(*args))
        return got[-1]

    setattr(module, name, spy)
    try:
        yield got
    finally:
        setattr(module, name, real)
