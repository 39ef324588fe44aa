"""Batched sets of allowed tokens, stored as packed bitsets (one row per sequence).

A :class:`BatchedTokenSet` is what :meth:`dotjson.Guide.get_start_tokensets` and
:meth:`dotjson.Guide.get_next_tokensets` return, and what :class:`dotjson.LogitsProcessor`
consumes. Row ``r`` allows token ``t`` iff ``(bits[r, t >> 5] >> (t & 31)) & 1``; token ids at or
above ``vocab_size`` are never allowed (their padding bits are ignored even if set).
"""

from __future__ import annotations

import operator

import numpy as np

from dotjson._kernels import mask as _k
from dotjson.errors import DotjsonIndexError, DotjsonTypeError, DotjsonValueError

__all__ = ["BatchedTokenSet", "TokenSetRow"]


def _n_words(vocab_size: int) -> int:
    return (vocab_size + 31) // 32


def _check_token_id(token_id) -> int:
    if isinstance(token_id, (bool, np.bool_)):
        raise DotjsonTypeError("Invalid token id: expected an integer, got bool")
    try:
        t = operator.index(token_id)
    except TypeError:
        raise DotjsonTypeError(
            f"Invalid token id: expected an integer, got {type(token_id).__name__}"
        ) from None
    if t < 0:
        raise DotjsonValueError(f"Invalid token id: expected a non-negative integer, got {t}")
    return t


class BatchedTokenSet:
    """The tokens allowed next, for every sequence of a batch, as packed bitsets.

    Parameters
    ----------
    bits : numpy.ndarray
        ``uint32`` array of shape ``(batch, (vocab_size + 31) // 32)``, C-contiguous. Bit
        ``t & 31`` of word ``t >> 5`` of row ``r`` says whether token ``t`` is allowed in row
        ``r``. The array is used as given, not copied.
    vocab_size : int
        One past the largest token id (:meth:`dotjson.Vocabulary.max_token_id`). Bits of ids
        ``>= vocab_size`` are ignored.

    Notes
    -----
    ``len(token_set)`` is the number of **allowed tokens** of a one-row set (the usage page's
    ``allowed_count = len(next_token_set)`` with ``Guide(index, batch_size=1)``). For a set of
    several rows "the number of allowed tokens" has one answer per row, so ``len`` refuses to
    pick one: it raises :class:`~dotjson.errors.DotjsonTypeError` pointing to
    :meth:`num_allowed` (the counts of every row) and :attr:`batch_size` (the number of rows).
    A set of zero rows has length 0. ``bool(token_set)`` is True when some row allows some
    token.

    Iterating and indexing go by rows, whatever the batch size: ``for row in token_set`` and
    ``token_set[i]`` give one :class:`TokenSetRow` per sequence, whose ``len`` is that row's
    count, so ``len(token_set) == len(token_set[0])`` for one row.

    Examples
    --------
    >>> ts = guide.get_next_tokensets(sampled)          # doctest: +SKIP
    >>> ts.num_allowed()                                 # doctest: +SKIP
    array([   1, 9021])
    >>> ts.forced_tokens()     # row 0 has one choice: no forward pass needed  # doctest: +SKIP
    array([ 90,  -1])
    >>> list(ts[0])                                      # doctest: +SKIP
    [90]
    """

    __slots__ = ("_bits", "_vocab_size")

    def __init__(self, bits: np.ndarray, vocab_size: int):
        try:
            vocab_size = operator.index(vocab_size)
        except TypeError:
            raise DotjsonTypeError(
                f"Invalid vocab_size: expected an integer, got {type(vocab_size).__name__}"
            ) from None
        if vocab_size < 0:
            raise DotjsonValueError(f"Invalid vocab_size: expected a non-negative integer, got {vocab_size}")
        if not isinstance(bits, np.ndarray):
            raise DotjsonTypeError(f"Invalid bits: expected a numpy.ndarray, got {type(bits).__name__}")
        if bits.dtype != np.uint32:
            raise DotjsonTypeError(f"Invalid bits: expected dtype uint32, got {bits.dtype}")
        expected = _n_words(vocab_size)
        if bits.ndim != 2 or bits.shape[1] != expected:
            raise DotjsonValueError(
                f"Invalid bits: expected shape (batch, {expected}) for vocab_size {vocab_size}, "
                f"got {bits.shape}"
            )
        if not bits.flags.c_contiguous:
            raise DotjsonValueError("Invalid bits: expected a C-contiguous array, got a strided view")
        self._bits = bits
        self._vocab_size = vocab_size

    # ------------------------------------------------------------------ shape

    @property
    def bits(self) -> np.ndarray:
        """The packed bitsets, ``uint32`` ``(batch, n_words)``, read-only (for custom samplers)."""
        view = self._bits.view()
        view.flags.writeable = False
        return view

    @property
    def vocab_size(self) -> int:
        """One past the largest token id a row can allow."""
        return self._vocab_size

    @property
    def batch_size(self) -> int:
        """Number of rows (sequences); ``len(self)`` counts allowed tokens instead."""
        return self._bits.shape[0]

    def __len__(self) -> int:
        """Number of allowed tokens of a one-row set (0 for a set of no rows).

        Raises
        ------
        DotjsonTypeError
            The set has several rows: use :meth:`num_allowed` (one count per row) or
            :attr:`batch_size` (the number of rows).
        """
        n = self._bits.shape[0]
        if n == 0:
            return 0
        if n != 1:
            raise DotjsonTypeError(
                f"len() of a BatchedTokenSet of {n} rows is ambiguous: expected a set of one row; "
                f"use num_allowed() for the allowed-token count of each row, batch_size for the "
                f"number of rows"
            )
        return len(TokenSetRow(self._bits[0], self._vocab_size))

    def __bool__(self) -> bool:
        """True when some row allows some token."""
        return bool(self._bits.shape[0]) and bool(np.any(self.num_allowed()))

    # ------------------------------------------------------------------ queries

    def contains(self, token_id: int) -> np.ndarray:
        """Whether each row allows ``token_id``.

        Parameters
        ----------
        token_id : int
            A token id; ids ``>= vocab_size`` are allowed by no row.

        Returns
        -------
        numpy.ndarray
            ``bool`` array of shape ``(batch,)``.
        """
        t = _check_token_id(token_id)
        if t >= self._vocab_size:
            return np.zeros(self._bits.shape[0], dtype=bool)
        return ((self._bits[:, t >> 5] >> np.uint32(t & 31)) & np.uint32(1)).astype(bool)

    def num_allowed(self) -> np.ndarray:
        """Number of allowed tokens of each row, ``int64`` array of shape ``(batch,)``.

        A row with exactly one allowed token needs no forward pass (see :meth:`forced_tokens`);
        a row with none is a dead end.
        """
        out = np.empty(self._bits.shape[0], dtype=np.int64)
        _k.popcount_rows(self._bits, self._vocab_size, out)
        return out

    def forced_tokens(self) -> np.ndarray:
        """For each row, its single allowed token id, or -1 where it allows none or several.

        Returns
        -------
        numpy.ndarray
            ``int64`` array of shape ``(batch,)``.
        """
        out = np.empty(self._bits.shape[0], dtype=np.int64)
        _k.forced_tokens(self._bits, self._vocab_size, out)
        return out

    def to_bool_mask(self) -> np.ndarray:
        """Dense ``bool`` array of shape ``(batch, vocab_size)``, True where a token is allowed."""
        little = self._bits.astype("<u4", copy=False)
        unpacked = np.unpackbits(little.view(np.uint8), axis=1, bitorder="little")
        return unpacked[:, : self._vocab_size].astype(bool)

    # ------------------------------------------------------------------ rows

    def __getitem__(self, index):
        """``ts[i]``: row ``i`` as a :class:`TokenSetRow`; ``ts[i:j]``: a new set of those rows."""
        if isinstance(index, slice):
            try:
                rows = self._bits[index]
            except (TypeError, ValueError) as exc:  # a zero step, non-integer bounds
                raise DotjsonTypeError(f"Invalid row slice {index!r}: {exc}") from None
            return BatchedTokenSet(np.ascontiguousarray(rows), self._vocab_size)
        try:
            i = operator.index(index)
        except TypeError:
            raise DotjsonTypeError(
                f"Invalid row index: expected an integer or a slice, got {type(index).__name__}"
            ) from None
        n = self._bits.shape[0]
        if not -n <= i < n:
            raise DotjsonIndexError(f"Invalid row index: expected -{n} <= index < {n}, got {i}")
        return TokenSetRow(self._bits[i % n], self._vocab_size)

    def __iter__(self):
        for i in range(self._bits.shape[0]):
            yield TokenSetRow(self._bits[i], self._vocab_size)

    def __repr__(self) -> str:
        counts = self.num_allowed()
        shown = ", ".join(str(int(c)) for c in counts[:8])
        more = ", ..." if counts.shape[0] > 8 else ""
        return (
            f"BatchedTokenSet(batch_size={counts.shape[0]}, vocab_size={self._vocab_size}, "
            f"num_allowed=[{shown}{more}])"
        )


class TokenSetRow:
    """The allowed tokens of one sequence: a read-only set of ids backed by one bitset row.

    ``len(row)`` is the number of allowed tokens; iterating, :meth:`tolist` and
    :meth:`to_numpy` give the ids in ascending order; ``token_id in row`` tests membership.
    """

    __slots__ = ("_bits", "_vocab_size")

    def __init__(self, bits_row: np.ndarray, vocab_size: int):
        self._bits = bits_row
        self._vocab_size = vocab_size

    @property
    def bits(self) -> np.ndarray:
        """This row's packed bitset, ``uint32`` ``(n_words,)``, read-only."""
        view = self._bits.view()
        view.flags.writeable = False
        return view

    def __len__(self) -> int:
        out = np.empty(1, dtype=np.int64)
        _k.popcount_rows(self._bits.reshape(1, -1), self._vocab_size, out)
        return int(out[0])

    def __contains__(self, token_id) -> bool:
        try:
            t = operator.index(token_id)
        except TypeError:
            return False
        if not 0 <= t < self._vocab_size:
            return False
        return bool((int(self._bits[t >> 5]) >> (t & 31)) & 1)

    def to_numpy(self) -> np.ndarray:
        """The allowed ids, ascending, as an ``int64`` array."""
        out = np.empty(len(self), dtype=np.int64)
        _k.list_ids(self._bits, self._vocab_size, out)
        return out

    def tolist(self) -> list[int]:
        """The allowed ids, ascending, as a list of ints."""
        return self.to_numpy().tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        ids = self.to_numpy()
        shown = ", ".join(str(int(t)) for t in ids[:10])
        more = ", ..." if ids.shape[0] > 10 else ""
        return f"TokenSetRow(len={ids.shape[0]}, ids=[{shown}{more}])"
