"""Checking an existing document against an index: where it fails and what was expected there.

:meth:`dotjson.Index.check` runs a text (``str``/``bytes``) or a token sequence (a list of token
ids, as a tokenizer encodes a document for teacher forcing) through the index's automaton and
returns a :class:`CheckResult`: whether the input is a complete valid document, the first byte
(and token) the grammar forbids, the prefix that was still fine, and a short list of what was
allowed at that point. Nothing is built but the states the input visits (plus, for a rejected
token sequence, the allowed-token mask of the state it failed in).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import LimitExceededError

__all__ = ["CheckResult", "check"]

#: Most entries listed in :attr:`CheckResult.expected` / :attr:`CheckResult.expected_tokens`.
MAX_EXPECTED = 12


@dataclass(frozen=True)
class CheckResult:
    """The outcome of :meth:`dotjson.Index.check`.

    Attributes
    ----------
    ok : bool
        True when the input is a complete valid document (for tokens: every token allowed, and
        either an allowed EOS token last or the text complete).
    reason : str
        ``"ok"``; ``"rejected"`` (a byte or token the grammar forbids at :attr:`position`);
        ``"incomplete"`` (every byte allowed, but the document is not finished);
        ``"after_eos"`` (a token after an EOS token).
    position : int
        Byte offset of the first forbidden byte; the input's length when nothing was forbidden.
    token_index : int or None
        For token sequences, the index of the first forbidden token (``None`` for text input, or
        when every token was allowed).
    valid_prefix : bytes
        The longest prefix of the input that can still be completed into a valid document.
    expected : tuple of str
        What could come at :attr:`position`: byte ranges written like ``'0'-'9'``, ``'"'``,
        ``0xC2-0xDF``, and ``<end>`` when the document may end there (at most
        :data:`MAX_EXPECTED` entries, the first ones in byte order).
    expected_tokens : tuple of (int, bytes)
        For a rejected token: up to :data:`MAX_EXPECTED` allowed token ids with their bytes (the
        lowest ids); empty otherwise.
    n_expected_tokens : int
        How many tokens (EOS included) the state at the failing token allows; 0 for text input;
        -1 where that state's mask is refused by a limit (a token mask inside a ``uniqueItems``
        array of free values, :class:`~dotjson.errors.LimitExceededError`; :attr:`expected`
        still says which bytes may come).
    """

    ok: bool
    reason: str
    position: int
    token_index: int | None = None
    valid_prefix: bytes = b""
    expected: tuple = field(default_factory=tuple)
    expected_tokens: tuple = field(default_factory=tuple)
    n_expected_tokens: int = 0

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.ok:
            return "ok: a complete valid document"
        where = f"byte {self.position}" + (f" (token {self.token_index})" if self.token_index is not None else "")
        tail = self.valid_prefix[-40:].decode("utf-8", "replace")
        exp = ", ".join(self.expected) or "nothing"
        if self.reason == "incomplete":
            return f"incomplete at {where}: after ...{tail!r} expected {exp}"
        if self.reason == "after_eos":
            return f"token {self.token_index} follows an EOS token"
        return f"rejected at {where}: after ...{tail!r} expected {exp}"


def _show_byte(b: int) -> str:
    if 0x20 <= b < 0x7F:
        return repr(chr(b))
    return f"0x{b:02X}"


def expected_bytes(auto, state: int, limit: int = MAX_EXPECTED) -> tuple:
    """The bytes allowed in ``state`` as short range descriptions (``<end>`` if accepting)."""
    auto.fill_row(state)
    row = auto.trans[state]
    ok = np.flatnonzero(row >= 0)
    out = []
    if auto.accepting[state]:
        out.append("<end>")
    i = 0
    while i < len(ok) and len(out) < limit:
        j = i
        while j + 1 < len(ok) and ok[j + 1] == ok[j] + 1:
            j += 1
        lo, hi = int(ok[i]), int(ok[j])
        out.append(_show_byte(lo) if lo == hi else f"{_show_byte(lo)}-{_show_byte(hi)}")
        i = j + 1
    if i < len(ok):
        out.append("...")
    return tuple(out)


def _walk(auto, state: int, data: bytes):
    """(state after the longest allowed prefix, its length): ``len(data)`` when all is allowed."""
    for i, b in enumerate(data):
        nxt = auto.step(state, b)
        if nxt < 0:
            return state, i
        state = nxt
    return state, len(data)


def _walk_text(index, auto, data: bytes):
    """:func:`_walk` through the index's ids, a token's length at a time (a counter far from
    its bounds stays in the id); byte by byte from the exact state only in a refused chunk.
    Returns (ordinary state after the longest allowed prefix, its length)."""
    s = index.initial_state
    for i, chunk in index._text_chunks(data):
        s2 = index._advance_bytes(s, chunk)
        if s2 < 0:
            e, n = _walk(auto, index._exact(s), chunk)
            return e, i + n
        s = s2
    return index._exact(s), len(data)


def check(index, doc) -> CheckResult:
    """Check ``doc`` (text, bytes, or a sequence of token ids) against ``index``.

    See :meth:`dotjson.Index.check`.
    """
    auto = index._auto
    if isinstance(doc, (str, bytes, bytearray, memoryview)):
        data = doc.encode("utf-8") if isinstance(doc, str) else bytes(doc)
        s, n = _walk_text(index, auto, data)
        if n < len(data):
            return CheckResult(False, "rejected", n, None, data[:n], expected_bytes(auto, s))
        if auto.accepting[s]:
            return CheckResult(True, "ok", n, None, data)
        return CheckResult(False, "incomplete", n, None, data, expected_bytes(auto, s))
    return _check_tokens(index, auto, _token_ids(doc))


def _token_ids(doc) -> list[int]:
    """``doc`` as a list of token ids: a list, tuple, 1-D array or tensor of integers."""
    from .errors import DotjsonTypeError

    kinds = "text (str or bytes) or a sequence of token ids (a list, tuple, 1-D array or tensor of integers)"
    if isinstance(doc, (list, tuple)):
        seq = doc
    elif hasattr(doc, "tolist") and hasattr(doc, "shape"):  # NumPy arrays, torch tensors
        seq = doc.tolist()
        if not isinstance(seq, list):
            raise DotjsonTypeError(f"Invalid doc: expected {kinds}, got a 0-d {type(doc).__name__}")
    else:
        raise DotjsonTypeError(f"Invalid doc: expected {kinds}, got {type(doc).__name__}")
    out = []
    for i, t in enumerate(seq):
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
            raise DotjsonTypeError(f"Invalid doc: expected integer token ids, got {t!r} at index {i}")
        out.append(int(t))
    return out


def _check_tokens(index, auto, ids: list[int]) -> CheckResult:
    vocab = index.vocabulary
    eos = set(int(t) for t in vocab.eos_token_ids)
    s = index.initial_state  # an index id: a counter far from its bounds stays in it
    pos = 0
    done: list[bytes] = []
    for k, tok in enumerate(ids):
        if tok in eos:
            prefix = b"".join(done)
            if not index.is_accepting(s):
                return _rejected_token(index, auto, s, k, pos, prefix)
            if k + 1 < len(ids):
                return CheckResult(False, "after_eos", pos, k + 1, prefix)
            return CheckResult(True, "ok", pos, None, prefix)
        data = vocab.token_bytes(tok) if 0 <= tok < vocab.max_token_id() else b""
        if not data:  # an unknown id or a special token: never text
            return _rejected_token(index, auto, s, k, pos, b"".join(done))
        s2 = index._next_state(s, tok)
        if s2 < 0:
            inner, n = _walk(auto, index._exact(s), data)
            return _rejected_token(index, auto, s, k, pos + n, b"".join(done) + data[:n], inner=inner)
        s = s2
        pos += len(data)
        done.append(data)
    text = b"".join(done)
    if index.is_accepting(s):
        return CheckResult(True, "ok", pos, None, text)
    return CheckResult(False, "incomplete", pos, None, text, expected_bytes(auto, index._exact(s)))


def _rejected_token(index, auto, s, k, pos, prefix, inner=None) -> CheckResult:
    try:
        mask = index.mask(s)
    except LimitExceededError:  # (a mask refused by name: the bytes below still say what may come)
        mask = None
    toks, n_allowed = (), -1
    if mask is not None:
        bits = np.unpackbits(mask.astype("<u4").view(np.uint8), bitorder="little")
        allowed = np.flatnonzero(bits)
        vocab = index.vocabulary
        toks = tuple((int(t), vocab.token_bytes(int(t)) if int(t) < vocab.max_token_id() else b"")
                     for t in allowed[:MAX_EXPECTED])
        n_allowed = int(len(allowed))
    # the bytes: at the failing byte inside the token (the token's allowed part already walked)
    at = inner if inner is not None else index._exact(s)
    return CheckResult(False, "rejected", pos, k, prefix, expected_bytes(auto, at), toks, n_allowed)
