"""Guide: a batch of cursors over one shared :class:`~dotjson.index.Index`."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .errors import TokenNotAllowedError
from .index import FINISHED, Index
from .tokenset import BatchedTokenSet

_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="dotjson")
    return _POOL


def _as_token_array(sampled_tokens, batch_size: int):
    x = sampled_tokens
    if type(x) is list and len(x) == batch_size and all(type(t) is int for t in x):
        return x  # the common case, without a NumPy round trip
    if hasattr(x, "detach"):  # torch tensor, any device
        x = x.detach().to("cpu").numpy()
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        if arr.size and not np.all(np.equal(np.mod(arr, 1), 0)):
            raise TypeError(f"Invalid sampled_tokens: expected integer token ids, got dtype {arr.dtype}")
        if arr.size == 0 and arr.dtype.kind not in "iuf":
            raise TypeError(f"Invalid sampled_tokens: expected integer token ids, got dtype {arr.dtype}")
    arr = arr.reshape(-1).astype(np.int64, copy=False)
    if arr.shape[0] != batch_size:
        raise ValueError(
            f"Invalid sampled_tokens: expected one token id per row ({batch_size} rows), "
            f"got {arr.shape[0]}"
        )
    return arr


class Guide:
    """Per-row decoding cursors over a shared index.

    Parameters
    ----------
    index : Index
        The compiled grammar; shared, never modified in a way callers can see.
    batch_size : int, default 1
        Number of sequences (rows) decoded together.

    Notes
    -----
    Each row holds one automaton state. ``get_next_tokensets`` advances every row by its sampled
    token and returns the allowed tokens of the new states. A row that sampled EOS is finished:
    only EOS is allowed for it afterwards. The heavy parts run in Numba kernels that release the
    GIL, so the call may run in a thread while the model computes its forward pass; rows that
    reach states not seen before are computed in parallel.

    Examples
    --------
    >>> guide = Guide(index, batch_size=4)                    # doctest: +SKIP
    >>> token_set = guide.get_start_tokensets()               # doctest: +SKIP
    >>> token_set = guide.get_next_tokensets([42, 42, 7, 9])  # doctest: +SKIP
    """

    def __init__(self, index: Index, batch_size: int = 1):
        if not isinstance(index, Index):
            raise TypeError(f"Invalid index: expected a dotjson.Index, got {type(index).__name__}")
        if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"Invalid batch_size: expected a positive integer, got {batch_size!r}")
        self.index = index
        self.batch_size = int(batch_size)
        self._vocab_size = index.vocabulary.max_token_id()
        self.reset()

    # ------------------------------------------------------------------ state

    @property
    def vocabulary(self):
        """The index's vocabulary."""
        return self.index.vocabulary

    @property
    def states(self) -> np.ndarray:
        """Current automaton state of each row (``-3`` for a finished row); a copy."""
        return np.asarray([h[-1] for h in self._history], dtype=np.int64)

    def reset(self) -> None:
        """Put every row back at the start of a document."""
        s0 = self.index.initial_state
        self._history: list[list[int]] = [[s0] for _ in range(self.batch_size)]
        self._last = None

    def is_finished(self) -> np.ndarray:
        """Boolean per row: True once the row sampled EOS."""
        return np.asarray([h[-1] == FINISHED for h in self._history], dtype=bool)

    def is_accepting(self) -> np.ndarray:
        """Boolean per row: True when the row's text is a complete document (EOS allowed)."""
        return np.asarray(
            [h[-1] == FINISHED or self.index.is_accepting(h[-1]) for h in self._history], dtype=bool
        )

    def rollback(self, n: int, rows=None) -> None:
        """Undo the last ``n`` tokens of the given rows (all rows by default).

        Raises
        ------
        ValueError
            A row has fewer than ``n`` tokens to undo; no row is changed then.
        """
        if n < 0:
            raise ValueError(f"Invalid rollback: expected n >= 0, got {n}")
        rows = range(self.batch_size) if rows is None else [int(r) for r in np.atleast_1d(rows)]
        for r in rows:
            if not 0 <= r < self.batch_size:
                raise IndexError(f"Invalid row {r}: the batch has {self.batch_size} rows")
            if len(self._history[r]) - 1 < n:
                raise ValueError(
                    f"Invalid rollback: row {r} has {len(self._history[r]) - 1} tokens, cannot undo {n}"
                )
        for r in rows:
            if n:
                del self._history[r][-n:]
        self._last = None

    # ------------------------------------------------------------------ token sets

    def get_start_tokensets(self):
        """Reset every row and return the tokens allowed at the start of a document.

        Returns
        -------
        BatchedTokenSet
        """
        self.reset()
        return self._tokensets()

    def get_next_tokensets(self, sampled_tokens):
        """Advance each row by its sampled token and return the tokens allowed next.

        Parameters
        ----------
        sampled_tokens : list, numpy.ndarray or torch.Tensor
            One token id per row.

        Returns
        -------
        BatchedTokenSet

        Raises
        ------
        TokenNotAllowedError
            A row's token is not allowed in its state; the guide is left unchanged.
        """
        self.advance(sampled_tokens)
        return self._tokensets()

    def advance(self, sampled_tokens) -> None:
        """Like :meth:`get_next_tokensets` without computing the next token sets.

        Every row's token is checked before any row changes: on :class:`TokenNotAllowedError`
        the guide is left as it was.
        """
        toks = _as_token_array(sampled_tokens, self.batch_size)
        nxt = []
        for r in range(self.batch_size):
            s = self._history[r][-1]
            t = int(toks[r])
            ns = self.index.next_state(s, t)
            if ns == -2:
                what = "finished row (only EOS is allowed)" if s == FINISHED else "state"
                raise TokenNotAllowedError(
                    f"token {t} ({self._describe(t)}) is not allowed in row {r}'s {what}"
                )
            nxt.append(ns)
        for r, ns in enumerate(nxt):
            self._history[r].append(ns)

    def current_tokensets(self):
        """The allowed tokens of the rows' current states (no advance)."""
        return self._tokensets()

    def forced_tokens(self) -> np.ndarray:
        """Per row, the only allowed token when exactly one is allowed, else ``-1``.

        A loop can append a forced token without running the model's forward pass.
        """
        return self._tokensets().forced_tokens()

    def _describe(self, t: int) -> str:
        try:
            return repr(self.index.vocabulary.token_bytes(t))
        except Exception:
            return "unknown id"

    def _tokensets(self):
        idx = self.index
        states = [h[-1] for h in self._history]
        bits = np.empty((self.batch_size, idx._n_words), dtype=np.uint32)
        # Fresh states (not memoized) are computed once each, in parallel when several.
        idx.fill_masks(states, bits, _pool().map)
        return BatchedTokenSet(bits, self._vocab_size)
