"""Guide: a batch of cursors over one shared :class:`~dotjson.index.Index`."""

from __future__ import annotations

import numpy as np

from .errors import (
    DotjsonError,
    DotjsonIndexError,
    DotjsonTypeError,
    DotjsonValueError,
    TokenNotAllowedError,
)
from .index import FINISHED, Index, _as_int
from .tokenset import BatchedTokenSet

def _as_token_array(sampled_tokens, batch_size: int) -> list[int]:
    """One Python int per row, or a DotjsonTypeError / DotjsonValueError naming the problem."""
    x = sampled_tokens
    if type(x) is list and len(x) == batch_size and all(type(t) is int for t in x):
        return x  # the common case, without a NumPy round trip
    if hasattr(x, "detach"):  # torch tensor, any device
        x = x.detach().to("cpu").numpy()
    if x is None or isinstance(x, (str, bytes, dict, set)):
        raise DotjsonTypeError(
            f"Invalid sampled_tokens: expected one integer token id per row (a list, array or "
            f"tensor), got {type(x).__name__}"
        )
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged nesting and the like
        raise DotjsonTypeError(f"Invalid sampled_tokens: expected integer token ids ({exc})") from None
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise DotjsonTypeError(
            f"Invalid sampled_tokens: expected integer token ids, got dtype {arr.dtype}"
            + (f" (first element {arr.reshape(-1).tolist()[0]!r})" if arr.size else "")
        )
    flat = arr.reshape(-1)
    if flat.shape[0] != batch_size:
        raise DotjsonValueError(
            f"Invalid sampled_tokens: expected one token id per row ({batch_size} rows), "
            f"got {flat.shape[0]}"
        )
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(flat) | (np.mod(flat, 1) != 0) if flat.size else np.zeros(0, bool)
        if np.any(bad):
            raise DotjsonTypeError(
                f"Invalid sampled_tokens: expected integer token ids, got {float(flat[np.argmax(bad)])!r} "
                f"in row {int(np.argmax(bad))}"
            )
    return [int(t) for t in flat.tolist()]


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
    reach states not seen before are computed one after the other (they share the index's lock,
    and the Python part of a fresh mask holds the GIL).

    Examples
    --------
    >>> guide = Guide(index, batch_size=4)                    # doctest: +SKIP
    >>> token_set = guide.get_start_tokensets()               # doctest: +SKIP
    >>> token_set = guide.get_next_tokensets([42, 42, 7, 9])  # doctest: +SKIP
    """

    def __init__(self, index: Index, batch_size: int = 1):
        if not isinstance(index, Index):
            raise DotjsonTypeError(f"Invalid index: expected a dotjson.Index, got {type(index).__name__}")
        batch_size = _as_int(batch_size, "batch_size")
        if batch_size < 1:
            raise DotjsonValueError(f"Invalid batch_size: expected a positive integer, got {batch_size!r}")
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
        """Current state id of each row (``-3`` for a finished row; see
        :meth:`Index.next_state` for what an id is); a copy."""
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

        Parameters
        ----------
        n : int
            How many tokens to undo (``0`` does nothing).
        rows : int or sequence of int, optional
            Distinct row numbers, ``0 <= row < batch_size``; default every row.

        Raises
        ------
        DotjsonTypeError
            ``n`` or a row is not an integer.
        DotjsonValueError
            ``n < 0``, a row listed twice, or a row with fewer than ``n`` tokens to undo.
        DotjsonIndexError
            A row outside the batch.

        Every argument is checked before any row changes: after an error the guide is as it was.
        """
        n = _as_int(n, "rollback count n")
        if n < 0:
            raise DotjsonValueError(f"Invalid rollback: expected n >= 0, got {n}")
        if rows is None:
            rows = list(range(self.batch_size))
        else:
            if isinstance(rows, (str, bytes)):
                raise DotjsonTypeError(f"Invalid rows: expected integers, got {type(rows).__name__}")
            seq = [rows] if np.ndim(rows) == 0 else list(np.asarray(rows, dtype=object).reshape(-1))
            rows = [_as_int(r, "row") for r in seq]
        seen = set()
        for r in rows:
            if not 0 <= r < self.batch_size:
                raise DotjsonIndexError(f"Invalid row {r}: the batch has {self.batch_size} rows")
            if r in seen:
                raise DotjsonValueError(f"Invalid rows: row {r} is listed twice")
            seen.add(r)
            if len(self._history[r]) - 1 < n:
                raise DotjsonValueError(
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
            A row's token is not allowed in its state (or is outside the vocabulary).
        DotjsonTypeError, DotjsonValueError
            ``sampled_tokens`` is not one integer per row.
        LimitExceededError
            A budget of the index (``max_states``, ``max_cache_bytes``) ran out while computing
            the next states or their token sets.

        The new states and their token sets are computed before any row moves: after any error
        the guide is exactly as it was, so the call can be retried.
        """
        nxt = self._next_states(sampled_tokens)
        token_sets = self._tokensets(nxt)
        self._commit(nxt)
        return token_sets

    def advance(self, sampled_tokens) -> None:
        """Like :meth:`get_next_tokensets` without computing the next token sets.

        Every row's token is checked before any row changes: on :class:`TokenNotAllowedError`
        the guide is left as it was.
        """
        self._commit(self._next_states(sampled_tokens))

    def _next_states(self, sampled_tokens) -> list[int]:
        toks = _as_token_array(sampled_tokens, self.batch_size)
        n_ids = self._vocab_size
        nxt = []
        for r in range(self.batch_size):
            s = self._history[r][-1]
            t = toks[r]
            if not 0 <= t < n_ids:
                raise TokenNotAllowedError(
                    f"token {t} is not allowed in row {r}: it is outside the vocabulary "
                    f"(expected 0 <= id < {n_ids})"
                )
            ns = self.index._next_state(s, t)
            if ns == -2:
                what = "finished row (only EOS is allowed)" if s == FINISHED else "state"
                raise TokenNotAllowedError(
                    f"token {t} ({self._describe(t)}) is not allowed in row {r}'s {what}"
                )
            nxt.append(ns)
        return nxt

    def _commit(self, nxt: list[int]) -> None:
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

    # ------------------------------------------------------------------ one row: serving engines

    def _row(self, row) -> int:
        r = _as_int(row, "row")
        if not 0 <= r < self.batch_size:
            raise DotjsonIndexError(f"Invalid row {r}: the batch has {self.batch_size} rows")
        return r

    def state_of(self, row: int = 0) -> int:
        """The current state id of one row (see :attr:`states`)."""
        return self._history[self._row(row)][-1]

    def num_tokens(self, row: int = 0) -> int:
        """How many tokens the row has taken since its start (what :meth:`rollback` can undo)."""
        return len(self._history[self._row(row)]) - 1

    def validate_tokens(self, tokens, row: int = 0) -> int:
        """The length of the longest prefix of ``tokens`` the row accepts, token by token.

        Nothing changes: the row stays where it is (speculative decoding checks a draft with
        this, then :meth:`accept_tokens` the accepted part).

        Parameters
        ----------
        tokens : sequence of int, numpy.ndarray or torch.Tensor
            Candidate token ids, in order; EOS counts as a token (accepted where the document
            may end, and then only EOS again).
        row : int, default 0

        Returns
        -------
        int
            ``0 <= n <= len(tokens)``: ``tokens[:n]`` is accepted, ``tokens[n]`` (if any) is not.
        """
        from .lookahead import validate_tokens

        return validate_tokens(self.index, self.state_of(row), tokens)

    def accept_tokens(self, tokens, row: int = 0) -> None:
        """Advance one row by a sequence of tokens (the others do not move).

        Raises
        ------
        TokenNotAllowedError
            Some token is not accepted; the message names the first. The row is left as it
            was (all or nothing), so a caller can :meth:`validate_tokens` first and accept the
            valid prefix.
        """
        from .lookahead import _token_list, walk_tokens

        r = self._row(row)
        toks = _token_list(tokens)
        states = walk_tokens(self.index, self._history[r][-1], toks)
        if len(states) < len(toks):
            t = toks[len(states)]
            raise TokenNotAllowedError(
                f"token {t} ({self._describe(t)}) is not allowed in row {r} after "
                f"{len(states)} of the {len(toks)} tokens given"
            )
        self._history[r].extend(states)
        self._last = None

    def draft_tokensets(self, tokens, row: int = 0):
        """The allowed tokens at each position of a draft, for speculative decoding.

        Row ``i`` of the result is what the guide's row allows after the first ``i`` draft
        tokens, for ``i = 0 .. n`` where ``n = validate_tokens(tokens, row)``: the masks a
        verifier applies to the target model's ``n + 1`` logits rows (positions past the first
        rejected draft token are never sampled from). The guide does not move.

        Returns
        -------
        BatchedTokenSet
            ``n + 1`` rows.
        """
        from .lookahead import draft_masks

        return BatchedTokenSet(draft_masks(self.index, self.state_of(row), tokens), self._vocab_size)

    def fast_forward_bytes(self, row: int = 0, max_bytes: int = 256) -> bytes:
        """What every valid continuation of the row writes next (jump-forward decoding).

        For example ``b'"name":'`` after ``{`` when ``name`` is the object's first key and
        required, with ``disallow_whitespace=True``. Empty when the row may end here (EOS is an
        alternative), has two or more possible next bytes, or is finished. At most
        ``max_bytes`` bytes. The guide does not move.
        """
        from .lookahead import forced_bytes

        return forced_bytes(self.index, self.state_of(row), max_bytes)

    def fast_forward_tokens(self, row: int = 0, max_tokens: int = 64) -> list[int]:
        """Token ids that write a prefix of :meth:`fast_forward_bytes`, longest token first.

        Each is allowed in turn, so a loop may :meth:`accept_tokens` them without a forward
        pass. The greedy choice need not be the tokenizer's own tokenization of those bytes
        (an engine that retokenizes, like SGLang's jump-forward, can use the bytes instead).
        The guide does not move.
        """
        from .lookahead import forced_tokens

        return forced_tokens(self.index, self.state_of(row), max_tokens)

    def _describe(self, t: int) -> str:
        try:
            return repr(self.index.vocabulary.token_bytes(t))
        except DotjsonError:
            return "unknown id"

    def _tokensets(self, states=None):
        idx = self.index
        if states is None:
            states = [h[-1] for h in self._history]
        bits = np.empty((self.batch_size, idx._n_words), dtype=np.uint32)
        # Fresh states (not memoized) are computed once each, one after the other: the rows of
        # one index share its lock for a whole fresh mask, so threads would only queue on it
        idx._fill_masks(states, bits)
        return BatchedTokenSet(bits, self._vocab_size)
