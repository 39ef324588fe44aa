"""Looking ahead of a state: forced bytes and tokens (jump-forward decoding), draft tokens
(speculative decoding).

Jump-forward decoding appends, without a forward pass, what every valid continuation must write
next: after ``{`` in an object whose first key is required, ``"name":`` is certain. The bytes
are read off the automaton: from the row's state, while the state is not accepting (EOS is not
an alternative) and exactly one byte leads to a live state, that byte is forced. Tokens for those
bytes are chosen greedily, longest token first, among the tokens whose bytes are a prefix of the
forced bytes; each is allowed by construction (any continuation that starts with the forced bytes
is still valid), and each is checked against the index anyway.

Speculative decoding hands the guide a row of draft tokens: :func:`validate_tokens` says how many
of them are accepted in a row, :func:`draft_masks` gives the allowed tokens before each of them.
Neither moves the row.
"""

from __future__ import annotations

import numpy as np

from .automaton import DEAD
from .errors import DotjsonTypeError, DotjsonValueError
from .automaton.ids import VIRT as _VIRT
from .index import _as_int

__all__ = ["forced_bytes", "forced_tokens", "validate_tokens", "draft_masks"]

#: Default bound on one jump (bytes): a forced literal is rarely longer, and a bound keeps a
#: pathological grammar (a long ``const``) from one long step.
MAX_FORCED_BYTES = 256


def _check_limit(x, what: str) -> int:
    v = _as_int(x, what)
    if v < 0:
        raise DotjsonValueError(f"Invalid {what}: expected a non-negative integer, got {v}")
    return v


def forced_bytes(index, state: int, max_bytes: int = MAX_FORCED_BYTES) -> bytes:
    """The bytes every valid continuation of ``state`` writes next (at most ``max_bytes``).

    Empty when the state is accepting (ending is an alternative), finished, dead, or has two
    or more live next bytes.
    """
    max_bytes = _check_limit(max_bytes, "max_bytes")
    if state < 0:
        return b""
    a = index._auto
    s = index._exact(state) if state >= _VIRT else state
    out = bytearray()
    while len(out) < max_bytes:
        if a.accepting[s]:
            break
        a.fill_row(s)
        row = a.trans[s]
        live = np.flatnonzero(row >= 0)
        if live.shape[0] != 1:
            break
        b = int(live[0])
        out.append(b)
        s = int(row[b])
    return bytes(out)


def _longest_token(tries, data: bytes) -> tuple[int, int]:
    """``(token id, length)`` of the longest token whose bytes are a prefix of ``data``, over
    both tries; ``(-1, 0)`` when none is."""
    best, best_len = -1, 0
    for trie in (tries.plain, tries.special):
        cp, cb, cn, tp, ti = trie.child_ptr, trie.child_byte, trie.child_node, trie.tok_ptr, trie.tok_ids
        node = 0
        for depth, b in enumerate(data, 1):
            lo, hi = int(cp[node]), int(cp[node + 1])
            j = lo + int(np.searchsorted(cb[lo:hi], b))  # children are sorted by byte
            if j >= hi or cb[j] != b:
                break
            node = int(cn[j])
            if tp[node + 1] > tp[node] and depth > best_len:
                best, best_len = int(ti[tp[node]]), depth
    return best, best_len


def forced_tokens(index, state: int, max_tokens: int = 64,
                  max_bytes: int = MAX_FORCED_BYTES) -> list[int]:
    """Tokens writing a prefix of :func:`forced_bytes` (longest token first), each allowed in
    turn from ``state``; at most ``max_tokens``."""
    max_tokens = _check_limit(max_tokens, "max_tokens")
    data = forced_bytes(index, state, max_bytes)
    tries = index._tries
    toks: list[int] = []
    s = state
    while data and len(toks) < max_tokens:
        t, n = _longest_token(tries, data)
        if t < 0:
            break
        ns = index._next_state(s, t)
        if ns < 0:  # pragma: no cover - a forced prefix is always allowed
            raise AssertionError(f"forced token {t} not allowed")
        toks.append(t)
        s = ns
        data = data[n:]
    return toks


def _token_list(tokens) -> list[int]:
    if hasattr(tokens, "detach"):
        tokens = tokens.detach().to("cpu").numpy()
    if isinstance(tokens, (str, bytes, dict, set)) or tokens is None:
        raise DotjsonTypeError(
            f"Invalid tokens: expected a sequence of integer token ids, got {type(tokens).__name__}")
    if isinstance(tokens, np.ndarray):
        if tokens.ndim != 1 or tokens.dtype.kind not in "iu":
            raise DotjsonTypeError(
                f"Invalid tokens: expected a 1-D integer array, got {tokens.dtype} {tokens.shape}")
        return [int(t) for t in tokens.tolist()]
    try:
        seq = list(tokens)
    except TypeError:
        raise DotjsonTypeError(
            f"Invalid tokens: expected a sequence of integer token ids, got {type(tokens).__name__}"
        ) from None
    return [_as_int(t, "token id") for t in seq]


def walk_tokens(index, state: int, tokens) -> list[int]:
    """The states after each accepted token of ``tokens`` from ``state``, stopping before the
    first token not allowed (so ``len`` of the result is the accepted prefix's length)."""
    n_ids = index._vocab.max_token_id()
    out = []
    s = state
    for t in _token_list(tokens):
        if not 0 <= t < n_ids:
            break
        s = index._next_state(s, t)
        if s == DEAD:
            break
        out.append(s)
    return out


def validate_tokens(index, state: int, tokens) -> int:
    """How many of ``tokens``, from the first, are accepted in turn from ``state``."""
    return len(walk_tokens(index, state, tokens))


def draft_masks(index, state: int, tokens) -> np.ndarray:
    """The allowed-token bitsets before each accepted draft token and after the last:
    ``uint32[k + 1, n_words]``, ``k`` the accepted prefix's length."""
    states = [state] + walk_tokens(index, state, tokens)
    out = np.empty((len(states), index._n_words), dtype=np.uint32)
    index._fill_masks(states, out)
    return out
