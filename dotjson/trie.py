"""The vocabulary's byte tries, in flat arrays the Numba kernels walk.

Two tries are built per vocabulary and :class:`PlainClass`: ``plain`` holds the tokens whose bytes
are characters of the class (complete UTF-8 characters; for JSON's class, none of them ``"``,
``\\`` or a control character below U+0020); ``special`` holds every other emittable token. Inside
a JSON string body a state is usually unchanged by any plain character, so a walk of the plain
trie can stop at the first node whose state is plain-invariant and take that node's whole subtree
at once; only the ~4% special tokens need a real walk there. The class is data handed down by the
JSON layer (:data:`dotjson.jsonschema.jsonstr.PLAIN_CLASS`); this module writes none of it.

Layout of one :class:`TokenTrie` (nodes numbered in pre-order, root 0, children sorted by byte):

- ``child_ptr[n] .. child_ptr[n+1]`` index ``child_byte`` / ``child_node``: the edges of node ``n``.
- ``tok_ptr[n] .. tok_ptr[n+1]`` index ``tok_ids``: the ids whose bytes end exactly at ``n``
  (several ids may share the same bytes).
- ``subtree_end[n]``: the subtree of ``n`` is the node range ``[n, subtree_end[n])``, so its token
  ids are ``tok_ids[tok_ptr[n] : tok_ptr[subtree_end[n]]]``.

Building is vectorised: the keys are packed into one byte buffer, sorted and turned into the
arrays above by Numba kernels (a merge sort over byte ranges, one pass that creates the nodes in
pre-order from consecutive longest common prefixes, counting passes for the CSR pointers), about
0.1 s for a 151k vocabulary. ``tests/test_trie.py`` checks them against a pure-Python reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ._kernels.jit import kernel
from ._kernels.group import group_by
from .automaton import plain_seq_arrays, utf8_sequences
from .errors import DotjsonValueError, VocabularyError


class PlainClass:
    """A *plain* character class, as data: the characters a state of the kind the walk's
    shortcuts look for is unchanged by (inside a JSON string body: every character but the quote,
    the backslash and the controls; the JSON layer's :data:`dotjson.jsonschema.jsonstr.PLAIN_CLASS`
    is that one, and the class every index uses). The token side writes none of it: the tries split
    tokens by a class given to them, the mask walk tests states against the same one.

    Built from code-point ranges (sorted, disjoint, no surrogate), into the tables each use reads:

    Attributes
    ----------
    ranges : tuple of (int, int)
        The inclusive code-point ranges, as given.
    ascii : numpy.ndarray
        ``bool[128]``: ASCII byte ``b`` is a plain character.
    high : numpy.ndarray
        ``int64[k, 2]``: the ranges from U+0080 on (clipped there).
    all_high : bool
        Every scalar value from U+0080 on is plain (the trie split's fast path).
    run_bytes : numpy.ndarray
        ``bool[256]``: the plain printable ASCII bytes (``0x20..0x7E``), the bytes of the special
        trie's ASCII runs (:func:`ascii_runs`).
    non_plain_words : numpy.ndarray
        ``uint64[4]``: the bytes no plain token holds (for JSON: the quote, the backslash, the
        controls, bytes no UTF-8 text has), a 256-bit set: a byte in it is a *delimiter* no
        plain token can pass (:mod:`dotjson.automaton.heads`).
    seqs : tuple of numpy.ndarray
        ``(pseq, plen)``: the UTF-8 byte-range sequences of the class
        (:func:`dotjson.automaton.plain_seq_arrays`), as the automaton's plain-invariance and
        plain-run kernels take them.

    Two classes of the same ranges are equal (and hash alike): caches are keyed by the class.
    """

    __slots__ = ("ranges", "ascii", "high", "all_high", "run_bytes", "non_plain_words", "seqs", "_hash")

    def __init__(self, ranges) -> None:
        try:
            rs = tuple((lo, hi) for lo, hi in ranges)
        except (TypeError, ValueError):
            rs = None
        if rs is None or not all(type(x) is int for r in rs for x in r):
            raise DotjsonValueError(f"Invalid plain class: expected (lo, hi) code-point pairs, got {ranges!r}")
        prev = -1
        for lo, hi in rs:
            if not (prev < lo <= hi <= 0x10FFFF) or (lo <= 0xDFFF and hi >= 0xD800):
                raise DotjsonValueError(
                    f"Invalid plain class range ({lo:#x}, {hi:#x}): expected sorted, disjoint ranges of "
                    f"code points 0..0x10FFFF without the surrogates 0xD800..0xDFFF")
            prev = hi
        self.ranges = rs
        self.ascii = np.array([any(lo <= b <= hi for lo, hi in rs) for b in range(0x80)], dtype=np.bool_)
        self.high = np.array([(max(lo, 0x80), hi) for lo, hi in rs if hi >= 0x80], dtype=np.int64).reshape(-1, 2)
        self.all_high = self.high.tolist() == [[0x80, 0xD7FF], [0xE000, 0x10FFFF]]
        self.run_bytes = np.array([b <= 0x7E and bool(self.ascii[b]) for b in range(256)], dtype=np.bool_)
        self.non_plain_words = np.packbits(~_plain_bytes(rs), bitorder="little").view("<u8").astype(np.uint64)
        self.seqs = plain_seq_arrays([sq for lo, hi in rs for sq in utf8_sequences(lo, hi)])
        self._hash = hash(rs)

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, PlainClass) and self.ranges == other.ranges)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"PlainClass({', '.join(f'({lo:#x}, {hi:#x})' for lo, hi in self.ranges)})"

    def holds(self, b: bytes) -> bool:
        """True when ``b`` is non-empty text of plain characters only (strict UTF-8)."""
        if not b:
            return False
        try:
            text = b.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            return False
        return all(any(lo <= ord(ch) <= hi for lo, hi in self.ranges) for ch in text)


def _plain_bytes(ranges) -> np.ndarray:
    """``[b]``: byte ``b`` may occur in the UTF-8 spelling of a character of ``ranges``."""
    out = np.zeros(256, dtype=np.bool_)
    for lo, hi in ranges:
        out[lo: min(hi, 0x7F) + 1] = True
        # beyond ASCII, per encoded length: the lead bytes of the range's ends and all between
        # them (a length's lead byte grows with the code point), and the continuation bytes
        for first, last in ((0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF)):
            x, y = max(lo, first), min(hi, last)
            if x <= y:
                enc = [chr(c).encode("utf-8", "surrogatepass")[0] for c in (x, y)]
                out[enc[0]: enc[1] + 1] = True
                out[0x80:0xC0] = True
    return out


def set_token_bits(bits: np.ndarray, ids) -> None:
    """Set the bits of token ids ``ids`` (an integer array, repeats allowed) in the ``uint32``
    bitset ``bits``: bit ``t & 31`` of word ``t >> 5``, the layout of every mask here."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size:
        np.bitwise_or.at(bits, ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))


@dataclass(frozen=True)
class TokenTrie:
    child_ptr: np.ndarray  # int32[n_nodes + 1]
    child_byte: np.ndarray  # uint8[n_edges]
    child_node: np.ndarray  # int32[n_edges]
    tok_ptr: np.ndarray  # int32[n_nodes + 1]
    tok_ids: np.ndarray  # int32[n_entries]
    subtree_end: np.ndarray  # int32[n_nodes]

    @property
    def n_nodes(self) -> int:
        return int(self.subtree_end.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "child_ptr": self.child_ptr,
            "child_byte": self.child_byte,
            "child_node": self.child_node,
            "tok_ptr": self.tok_ptr,
            "tok_ids": self.tok_ids,
            "subtree_end": self.subtree_end,
        }


@dataclass(frozen=True)
class VocabTries:
    """Both tries of a vocabulary plus the plain-token bitset.

    Attributes
    ----------
    plain, special : TokenTrie
    plain_bits : numpy.ndarray
        ``uint32[n_words]``: bit ``t`` set when token ``t`` is in the plain trie.
    n_words : int
        ``(max_token_id + 31) // 32``: words per packed token bitset.
    max_len : int
        Longest token, in bytes.
    plain_class : PlainClass
        The class the tokens were split by.
    """

    plain: TokenTrie
    special: TokenTrie
    plain_bits: np.ndarray
    n_words: int
    max_len: int
    plain_class: PlainClass

    def single_bytes(self) -> np.ndarray:
        """``bool[256]`` (read only): the bytes that some one-byte token is, in either trie;
        computed once (every index asks it of its vocabulary)."""
        hit = self.__dict__.get("_single_bytes")
        if hit is None:
            hit = np.zeros(256, dtype=bool)
            for t in (self.plain, self.special):
                lo, hi = int(t.child_ptr[0]), int(t.child_ptr[1])
                nodes = t.child_node[lo:hi]
                has_token = t.tok_ptr[nodes + 1] > t.tok_ptr[nodes]
                hit[t.child_byte[lo:hi][has_token]] = True
            hit.flags.writeable = False
            self.__dict__["_single_bytes"] = hit  # (frozen: set once, the same value any thread makes)
        return hit


BIG_SUBTREE = 1024


def big_subtree_bits(trie: TokenTrie, n_words: int,
                     min_tokens: int = BIG_SUBTREE) -> tuple[np.ndarray, np.ndarray]:
    """Dense token bitsets of the nodes whose subtree holds at least ``min_tokens`` tokens.

    A walk that takes a whole subtree (a plain-invariant state) sets its tokens' bits one by one;
    for the few dozen nodes near the root of a large vocabulary's plain trie that would be
    thousands of scattered writes per node, where OR-ing a precomputed bitset is a short
    vectorised loop. Llama 3's plain trie has 37 such nodes at 1,024 tokens (~0.6 MB).

    Returns
    -------
    index : numpy.ndarray
        ``int32[n_nodes]``: the row of a node's bitset in ``bits``, ``-1`` for a small subtree.
    bits : numpy.ndarray
        ``uint32[n_big, n_words]``.
    """
    sizes = trie.tok_ptr[trie.subtree_end] - trie.tok_ptr[:-1]
    nodes = np.flatnonzero(sizes >= min_tokens)
    index = np.full(trie.n_nodes, -1, dtype=np.int32)
    index[nodes] = np.arange(nodes.shape[0], dtype=np.int32)
    bits = np.zeros((nodes.shape[0], n_words), dtype=np.uint32)
    for k, c in enumerate(nodes):
        ids = trie.tok_ids[trie.tok_ptr[c]: trie.tok_ptr[trie.subtree_end[c]]].astype(np.int64)
        set_token_bits(bits[k], ids)
    return index, bits


#: More distinct character lengths of plain tokens than this: no length bitsets (see below).
MAX_LENGTH_ROWS = 512


def plain_length_bits(trie: TokenTrie, n_words: int,
                      tok_chars: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The plain tokens of at most ``k`` characters, for every ``k``, as cumulative bitsets.

    A state that takes any ``k`` plain characters in a row, each to one successor (a string
    body under a length bound: :func:`dotjson.automaton.states.plain_run`), allows exactly the
    plain tokens of at most ``k`` characters; with these rows its plain-trie walk is one OR.
    Llama 3: 120 rows, ~1.9 MB. A vocabulary with more than :data:`MAX_LENGTH_ROWS` distinct
    lengths gets no rows (the walk takes the trie node by node instead).

    ``tok_chars``: the tokens' characters in ``tok_ids``' order (:func:`plain_char_counts`),
    when the caller has them already.

    Returns
    -------
    row : numpy.ndarray
        ``int32[max_chars + 1]``: the row of ``bits`` holding the tokens of at most ``k``
        characters (row 0 is empty); every plain token has at most ``max_chars`` characters.
        Empty when the shortcut is off.
    bits : numpy.ndarray
        ``uint32[n_rows, n_words]``.
    """
    n = trie.n_nodes
    off = np.zeros((0,), dtype=np.int32), np.zeros((0, n_words), dtype=np.uint32)
    if n <= 1:
        return off
    lens = plain_char_counts(trie)[1] if tok_chars is None else tok_chars
    if np.count_nonzero(np.bincount(lens)) > MAX_LENGTH_ROWS:
        return off
    return length_rows(trie.tok_ids, lens, n_words)


def length_rows(ids: np.ndarray, lens: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens ``ids`` of lengths ``lens`` (at least one token) as cumulative bitsets, a row per
    distinct length: the tokens of length at most ``k`` are row ``row[min(k, len(row) - 1)]`` of
    ``bits`` (row 0 empty), ``(row, bits)`` as ``int32[max_len + 1]`` and ``uint32[rows,
    n_words]`` (:func:`plain_length_bits`, :func:`class_tables`)."""
    counts = np.bincount(lens)
    distinct = np.flatnonzero(counts)
    rank = np.cumsum(counts > 0)[lens]  # 1 for the shortest tokens; row 0: no token
    bits = np.zeros((distinct.size + 1, n_words), dtype=np.uint32)
    _cumulative_rows(np.asarray(ids, dtype=np.int64), rank.astype(np.int64), bits)
    row = np.zeros(int(distinct[-1]) + 1, dtype=np.int32)
    row[distinct] = np.arange(1, distinct.size + 1, dtype=np.int32)
    return np.maximum.accumulate(row), bits


#: At most this many byte classes' tables are kept per vocabulary and plain class
#: (:meth:`dotjson.Vocabulary._class_tables`; emptied when full): ~1-3 MB each on Llama 3.
MAX_CLASS_TABLES = 16


def class_tables(special: TokenTrie, plain: TokenTrie, n_words: int,
                 cmask: np.ndarray, plain_below: np.ndarray | None = None,
                 plain_tchars: np.ndarray | None = None) -> tuple:
    """The tables of a *counted class* at the root of a mask walk, for the byte class ``cmask``.

    A state ``C{lo,hi} rest`` whose rest starts with no byte of ``C``
    (:func:`dotjson.automaton.states.class_run`: a ``pattern``'s ``[0-9a-f]{8}-``, a date's
    digits) allows a token exactly when the bytes before its first byte outside ``C`` number
    ``p <= hi`` and either the token ends there or ``lo <= p`` and the rest of it is allowed by
    ``rest``'s successor on that byte: whatever ``p``, the successor is ``rest``'s. So its mask
    is the tokens of at most ``hi`` bytes all of ``C`` (one row of cumulative bitsets) and the
    walks from ``rest`` below the *exit edges* of depth ``lo .. hi`` — an edge from a node whose
    path is all of ``C`` to a child by a byte not of ``C``, ``p`` the node's depth — grouped by
    their byte: the nodes all of ``C`` are not visited (an alphanumeric class's are most of the
    plain trie's top levels, ~1 ms a position walked node by node on Llama 3).

    Parameters
    ----------
    special, plain : TokenTrie
    n_words : int
    cmask : numpy.ndarray
        ``bool[256]``: the class's bytes.
    plain_below, plain_tchars : numpy.ndarray, optional
        The plain trie's bytes below each node (:func:`plain_below_bytes`) and characters per
        token (:func:`plain_char_counts`), both or neither: a subtree whose every byte is of
        the class is then taken whole (its tokens a contiguous range, their lengths their
        characters: the class is ASCII) instead of visited node by node (an alphanumeric class
        is ~70,000 nodes of Llama 3's plain trie, most in such subtrees).

    Returns
    -------
    tuple
        ``(len_row, len_bits, exits, n_tokens, depth)``: the tokens (of either trie) all of ``C`` with at most
        ``k`` bytes are row ``len_row[min(k, len(len_row) - 1)]`` of ``len_bits``
        (``uint32[rows, n_words]``, row 0 empty); ``exits`` holds, for the special trie then
        the plain one, ``(ptr, depth, child)``: the exit edges by byte ``b`` are entries
        ``ptr[b] .. ptr[b + 1] - 1`` (``int32[257]``), sorted by the depth of their parent
        (``depth``), ``child`` the node the byte leads to; ``n_tokens``, how many tokens are all
        of ``C``; ``depth``, the deepest node whose path is all of ``C`` (an exit edge may leave
        from deeper than the longest such token: ``abc`` on the way to ``abc-`` with no token
        ``abc``).
    """
    cm = np.ascontiguousarray(cmask, dtype=np.uint8)
    toks, lens, exits = [], [], []
    deepest = 0
    # the class's ASCII bytes 1..127 as plain_below_bytes' two words (bit 0 there stands for a
    # byte no class holds: a subtree holding one is never taken whole)
    cw = np.packbits(cm[:128] != 0, bitorder="little").view("<u8").astype(np.uint64)
    cw[0] &= ~np.uint64(1)
    no_below = np.zeros(0, dtype=np.uint64)
    no_chars = np.zeros(0, dtype=np.int32)
    for t in (special, plain):
        whole = t is plain and plain_below is not None and plain_tchars is not None
        below = plain_below if whole else no_below
        tchars = np.asarray(plain_tchars, dtype=np.int32) if whole else no_chars
        n = t.n_nodes
        tk = np.empty(t.tok_ids.shape[0], dtype=np.int32)
        tl = np.empty(t.tok_ids.shape[0], dtype=np.int32)
        eb = np.empty(max(n, 1), dtype=np.int32)
        ed = np.empty(max(n, 1), dtype=np.int32)
        ec = np.empty(max(n, 1), dtype=np.int32)
        counts = np.zeros(3, dtype=np.int64)
        if n > 1:
            _class_exits_kernel(t.child_ptr, t.child_byte, t.child_node, t.tok_ptr, t.tok_ids,
                                t.subtree_end, cm, cw, below, tchars, tk, tl, eb, ed, ec,
                                np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32), counts)
        nt, ne = int(counts[0]), int(counts[1])
        deepest = max(deepest, int(counts[2]))
        toks.append(tk[:nt])
        lens.append(tl[:nt])
        eb, ed, ec = eb[:ne], ed[:ne], ec[:ne]
        order = np.lexsort((ed, eb))
        ptr = np.zeros(257, dtype=np.int32)
        np.cumsum(np.bincount(eb, minlength=256), out=ptr[1:])
        exits.append((ptr, np.ascontiguousarray(ed[order]), np.ascontiguousarray(ec[order])))
    ids = np.concatenate(toks)
    if ids.size == 0:
        return np.zeros(1, dtype=np.int32), np.zeros((1, n_words), dtype=np.uint32), tuple(exits), 0, deepest
    row, bits = length_rows(ids, np.concatenate(lens), n_words)
    return row, bits, tuple(exits), int(ids.size), deepest


@kernel
def _cumulative_rows(ids, rank, bits):
    """Set token ``ids[i]`` in row ``rank[i]`` of ``bits``, then OR each row into the next."""
    for i in range(ids.shape[0]):
        t = ids[i]
        bits[rank[i], t >> 5] |= np.uint32(1) << np.uint32(t & 31)
    for r in range(1, bits.shape[0]):
        for w in range(bits.shape[1]):
            bits[r, w] |= bits[r - 1, w]


@kernel
def _class_exits_kernel(child_ptr, child_byte, child_node, tok_ptr, tok_ids, subtree_end, cmask,
                        cwords, below, tchars, toks, lens, ex_byte, ex_depth, ex_child, st_node,
                        st_depth, counts):
    """:func:`class_tables` of one trie: a depth-first search from the root along the class's
    bytes, listing the tokens met (with their depth) and the edges that leave the class, and
    the deepest node met (``counts``: tokens, edges, depth). With ``below`` (the bytes below
    each node, :func:`plain_below_bytes`; empty: none) and ``tchars`` (characters per token), a
    child all of whose bytes below are of the class (``cwords``, its ASCII bytes as ``below``'s
    two words) is taken whole: its subtree's tokens, a contiguous range, with their characters
    as their lengths (the class being ASCII), and no edge below it leaves the class."""
    nt = 0
    ne = 0
    deepest = 0
    st_node[0] = 0
    st_depth[0] = 0
    sp = 1
    whole = below.shape[0] > 0
    c0 = cwords[0]
    c1 = cwords[1]
    while sp > 0:
        sp -= 1
        y = st_node[sp]
        d = st_depth[sp]
        deepest = max(deepest, d)
        if d > 0:
            for i in range(tok_ptr[y], tok_ptr[y + 1]):
                toks[nt] = tok_ids[i]
                lens[nt] = d
                nt += 1
        for e in range(child_ptr[y], child_ptr[y + 1]):
            z = child_node[e]
            if cmask[child_byte[e]] != 0:
                if whole and (below[2 * z] & ~c0) == 0 and (below[2 * z + 1] & ~c1) == 0:
                    # (a token trie's leaves are tokens: the deepest node is its longest token)
                    for i in range(tok_ptr[z], tok_ptr[subtree_end[z]]):
                        toks[nt] = tok_ids[i]
                        lens[nt] = tchars[i]
                        deepest = max(deepest, tchars[i])
                        nt += 1
                    continue
                st_node[sp] = z
                st_depth[sp] = d + 1
                sp += 1
            else:
                ex_byte[ne] = child_byte[e]
                ex_depth[ne] = d
                ex_child[ne] = z
                ne += 1
    counts[0] = nt
    counts[1] = ne
    counts[2] = deepest


def plain_char_counts(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray]:
    """The characters from the root to every node of ``trie``, and of every token.

    Returns
    -------
    node_chars : numpy.ndarray
        ``int32[n_nodes]``: the nodes on the path to a node whose incoming byte starts a
        character (is not a UTF-8 continuation byte).
    tok_chars : numpy.ndarray
        ``int32[len(tok_ids)]``: the characters of ``tok_ids[i]`` (its node's count), in
        ``tok_ids``' order, so a subtree's tokens and their lengths are one slice each.
    """
    n = trie.n_nodes
    if n <= 1:
        return np.zeros(n, dtype=np.int32), np.zeros(len(trie.tok_ids), dtype=np.int32)
    # nodes are numbered in preorder, a subtree is the range [y, subtree_end[y]): +1 at every
    # node entered by a character's first byte and -1 at its subtree's end, summed, counts them
    inc = np.zeros(n, dtype=np.bool_)
    inc[trie.child_node] = (trie.child_byte & 0xC0) != 0x80
    ys = np.flatnonzero(inc)
    acc = np.cumsum(np.bincount(ys, minlength=n + 1) - np.bincount(trie.subtree_end[ys], minlength=n + 1))[:n]
    acc = acc.astype(np.int32)
    return acc, np.repeat(acc, np.diff(trie.tok_ptr))


def plain_below_bytes(trie: TokenTrie) -> np.ndarray:
    """The bytes on the paths below every node of ``trie`` (not on the path to it), for the
    mask walk's class shortcut (:func:`dotjson._kernels.walk.walk_trie`): a node's subtree is
    taken whole when every byte below it takes the walk's state back to itself.

    Returns
    -------
    numpy.ndarray
        ``uint64[2 * n_nodes]``: for node ``y``, words ``2y`` and ``2y + 1`` hold the ASCII bytes
        1..127 below it (bit ``b`` of word ``b >> 6``); bit 0 stands for a byte 0 or a byte of
        0x80 or more below it (never in a class the walk reads, so such a subtree is walked).
    """
    out = np.zeros(2 * trie.n_nodes, dtype=np.uint64)
    if trie.n_nodes > 1:
        _below_kernel(trie.child_ptr, trie.child_byte, trie.child_node, out)
    return out


@kernel
def _below_kernel(child_ptr, child_byte, child_node, out):
    """:func:`plain_below_bytes`: nodes in preorder (a child after its parent), so one pass
    from the last node up ORs each child's edge byte and its own words into its parent's."""
    n = child_ptr.shape[0] - 1
    one = np.uint64(1)
    for y in range(n - 1, -1, -1):
        w0 = np.uint64(0)
        w1 = np.uint64(0)
        for e in range(child_ptr[y], child_ptr[y + 1]):
            b = np.uint64(child_byte[e])
            z = child_node[e]
            if b < 64:
                w0 |= one << b  # (byte 0 sets bit 0: as a byte past ASCII, no class holds it)
            elif b < 128:
                w1 |= one << (b - np.uint64(64))
            else:
                w0 |= one
            w0 |= out[2 * z]
            w1 |= out[2 * z + 1]
        out[2 * y] = w0
        out[2 * y + 1] = w1


@kernel
def _ascii_runs_kernel(child_ptr, child_byte, child_node, tok_ptr, tok_ids, is_run, fill,
                       run_ptr, run_toks, exit_ptr, exit_nodes):
    """Count (``fill`` False) or write the run tokens and exit nodes of every node (see
    :func:`ascii_runs`); one bounded depth-first search per node over run bytes only."""
    n = child_ptr.shape[0] - 1
    stack = np.empty(n + 1, dtype=np.int32)
    nr = 0
    ne = 0
    for c in range(n):
        if fill:
            nr = run_ptr[c]
            ne = exit_ptr[c]
        else:
            run_ptr[c] = nr
            exit_ptr[c] = ne
        sp = 1
        stack[0] = c
        while sp > 0:
            sp -= 1
            x = stack[sp]
            for e in range(child_ptr[x], child_ptr[x + 1]):
                d = child_node[e]
                if is_run[child_byte[e]]:
                    for i in range(tok_ptr[d], tok_ptr[d + 1]):
                        if fill:
                            run_toks[nr] = tok_ids[i]
                        nr += 1
                    if child_ptr[d + 1] > child_ptr[d]:
                        stack[sp] = d
                        sp += 1
                else:
                    if fill:
                        exit_nodes[ne] = d
                    ne += 1
    if not fill:
        run_ptr[n] = nr
        exit_ptr[n] = ne
    return 0


def ascii_runs(trie: TokenTrie, plain: PlainClass) -> tuple[np.ndarray, ...]:
    """For every node ``c``, the tokens and exits of the ASCII plain runs below it.

    In a state unchanged by every character of ``plain``, its printable ASCII bytes
    (``plain.run_bytes``: ``0x20..0x7E`` other than ``"`` and ``\\`` for JSON) leave the state as
    it is, so below a node ``c`` reached in such a state every token whose remaining bytes are all
    such bytes is allowed (``run_toks[run_ptr[c]:run_ptr[c+1]]``),
    and the walk need only continue at the *exits*: the nodes entered by another byte after a
    run (``exit_nodes[exit_ptr[c]:exit_ptr[c+1]]``), from the same state. In the special trie
    (tokens holding a quote, a backslash, a control or a partial character) most nodes lie on
    such runs: ``"name"`` is reached by ``"``, a run ``name`` and the exit ``"``.

    Returns
    -------
    in_byte, run_ptr, run_toks, exit_ptr, exit_nodes : numpy.ndarray
        ``in_byte[d]``: the byte of the edge into node ``d`` (0 at the root).
    """
    n = trie.n_nodes
    in_byte = np.zeros(n, dtype=np.uint8)
    in_byte[trie.child_node] = trie.child_byte
    run_ptr = np.zeros(n + 1, dtype=np.int64)
    exit_ptr = np.zeros(n + 1, dtype=np.int64)
    args = (trie.child_ptr, trie.child_byte, trie.child_node, trie.tok_ptr, trie.tok_ids, plain.run_bytes)
    _ascii_runs_kernel(*args, False, run_ptr, np.zeros(0, np.int32), exit_ptr, np.zeros(0, np.int32))
    run_toks = np.empty(int(run_ptr[n]), dtype=np.int32)
    exit_nodes = np.empty(int(exit_ptr[n]), dtype=np.int32)
    _ascii_runs_kernel(*args, True, run_ptr, run_toks, exit_ptr, exit_nodes)
    return in_byte, run_ptr, run_toks, exit_ptr, exit_nodes


# ---------------------------------------------------------------------------------------------
# Kernels (plain arrays in, arrays out; never raise)
# ---------------------------------------------------------------------------------------------


@kernel
def _key_less(blob, starts, lens, ids, pref, a, b):
    """(bytes, id) order of items ``a`` and ``b``.

    ``pref`` holds each key's first 8 bytes, zero-padded, big-endian: unequal prefixes order the
    keys as the bytes do (a zero pad only ties with a real zero byte), so most comparisons are
    one integer compare.
    """
    pa = pref[a]
    pb = pref[b]
    if pa != pb:
        return pa < pb
    sa = starts[a]
    sb = starts[b]
    la = lens[a]
    lb = lens[b]
    m = la if la < lb else lb
    for k in range(8 if m > 8 else m, m):
        x = blob[sa + k]
        y = blob[sb + k]
        if x != y:
            return x < y
    if la != lb:
        return la < lb
    return ids[a] < ids[b]


@kernel
def _prefixes(blob, starts, lens):
    n = starts.shape[0]
    pref = np.zeros(n, dtype=np.uint64)
    for i in range(n):
        s = starts[i]
        ln = lens[i]
        v = np.uint64(0)
        for k in range(8):
            v = v << np.uint64(8)
            if k < ln:
                v = v | np.uint64(blob[s + k])
        pref[i] = v
    return pref


@kernel
def _merge_sort_run(blob, starts, lens, ids, pref, src, dst, lo0, hi0):
    """Sort ``src[lo0:hi0]`` in place by (bytes, id), bottom-up merges through ``dst``."""
    n = hi0 - lo0
    width = 1
    a = src
    b = dst
    while width < n:
        lo = lo0
        while lo < hi0:
            mid = min(lo + width, hi0)
            hi = min(lo + 2 * width, hi0)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if _key_less(blob, starts, lens, ids, pref, a[j], a[i]):
                    b[k] = a[j]
                    j += 1
                else:
                    b[k] = a[i]
                    i += 1
                k += 1
            while i < mid:
                b[k] = a[i]
                i += 1
                k += 1
            while j < hi:
                b[k] = a[j]
                j += 1
                k += 1
            lo = hi
        a, b = b, a
        width *= 2
    if a is not src:
        for k in range(lo0, hi0):
            src[k] = a[k]


@kernel
def _sort_keys(blob, starts, lens, ids):
    """Item indices sorted by (bytes, id): a sort on the 8-byte prefixes, then each run of
    equal prefixes sorted by the full comparison. Returns int64 order."""
    n = starts.shape[0]
    pref = _prefixes(blob, starts, lens)
    order = np.argsort(pref, kind="mergesort").astype(np.int64)
    tmp = np.empty(n, dtype=np.int64)
    lo = 0
    while lo < n:
        hi = lo + 1
        while hi < n and pref[order[hi]] == pref[order[lo]]:
            hi += 1
        if hi - lo > 1:
            _merge_sort_run(blob, starts, lens, ids, pref, order, tmp, lo, hi)
        lo = hi
    return order


@kernel
def _build_trie_kernel(blob, starts, lens, ids, order, max_len):
    """The trie arrays of the items in ``order`` (sorted by bytes, then id; every len >= 1)."""
    m = order.shape[0]
    total = 0
    for k in range(m):
        total += lens[order[k]]
    cap = total + 1
    parent = np.empty(cap, dtype=np.int32)
    edge_byte = np.empty(cap, dtype=np.uint8)
    node_of = np.empty(m, dtype=np.int32)
    path = np.zeros(max_len + 1, dtype=np.int32)
    parent[0] = -1
    edge_byte[0] = 0
    n = 1
    prev_s = 0
    prev_l = 0
    for k in range(m):
        it = order[k]
        s = starts[it]
        ln = lens[it]
        lcp = 0
        mm = ln if ln < prev_l else prev_l
        while lcp < mm and blob[s + lcp] == blob[prev_s + lcp]:
            lcp += 1
        # Sorted keys create nodes depth-first with children in byte order: pre-order ids.
        for d in range(lcp, ln):
            parent[n] = path[d]
            edge_byte[n] = blob[s + d]
            path[d + 1] = n
            n += 1
        node_of[k] = path[ln]
        prev_s = s
        prev_l = ln

    # children grouped by parent (in id order: byte order), tokens by their node
    child_ptr, kids = group_by(parent[1:n], n)
    child_byte = edge_byte[1:n][kids]
    child_node = (kids + 1).astype(np.int32)
    tok_ptr, toks = group_by(node_of, n)
    tok_ids = np.empty(m, dtype=np.int32)
    for x in range(m):
        tok_ids[x] = ids[order[toks[x]]]

    size = np.ones(n, dtype=np.int32)
    for v in range(n - 1, 0, -1):
        size[parent[v]] += size[v]
    subtree_end = np.empty(n, dtype=np.int32)
    for v in range(n):
        subtree_end[v] = v + size[v]
    return child_ptr, child_byte, child_node, tok_ptr, tok_ids, subtree_end


@kernel
def check_trie(child_ptr, child_byte, child_node, tok_ptr, tok_ids, subtree_end, blob, offsets):
    """Check a loaded trie against the token bytes it must spell; its depth, or a negative code.

    The arrays' bounds must already hold (every pointer monotone and in range, ``child_node``
    and ``tok_ids`` in range, every child numbered after its parent). Then this verifies, in
    O(nodes + token bytes): each node but the root is the child of exactly one node; sibling
    bytes strictly increase; ``subtree_end`` is the pre-order end of each subtree; and every
    token id stored at a node has exactly the bytes on the path from the root to that node.

    Returns
    -------
    int
        The deepest node's depth (the longest token), or -1 (a node with no or two parents),
        -2 (siblings out of order), -3 (a subtree end), -4 (a token whose bytes differ from
        its path).
    """
    nn = subtree_end.shape[0]
    parent = np.full(nn, -1, dtype=np.int64)
    byte = np.zeros(nn, dtype=np.uint8)
    depth = np.zeros(nn, dtype=np.int64)
    deepest = 0
    for u in range(nn):
        prev = -1
        for e in range(child_ptr[u], child_ptr[u + 1]):
            v = child_node[e]
            if parent[v] != -1:
                return -1
            b = np.int64(child_byte[e])
            if b <= prev:
                return -2
            prev = b
            parent[v] = u
            byte[v] = child_byte[e]
            depth[v] = depth[u] + 1
            if depth[v] > deepest:
                deepest = depth[v]
    for v in range(1, nn):
        if parent[v] == -1:
            return -1
    # Pre-order: the subtree of u ends where its last child's subtree ends (u + 1 for a leaf).
    for u in range(nn - 1, -1, -1):
        a = child_ptr[u]
        b = child_ptr[u + 1]
        want = u + 1 if a == b else subtree_end[child_node[b - 1]]
        if subtree_end[u] != want:
            return -3
        if a < b and child_node[a] != u + 1:
            return -3
        for e in range(a + 1, b):
            if child_node[e] != subtree_end[child_node[e - 1]]:
                return -3
    for u in range(nn):
        for k in range(tok_ptr[u], tok_ptr[u + 1]):
            t = tok_ids[k]
            s = offsets[t]
            ln = offsets[t + 1] - s
            if ln != depth[u]:
                return -4
            v = u
            for i in range(ln - 1, -1, -1):
                if blob[s + i] != byte[v]:
                    return -4
                v = parent[v]
    return deepest


@kernel
def _plain_mask(blob, starts, lens, plain_ascii, high, all_high):
    """:meth:`PlainClass.holds` for every item: strict UTF-8 whose ASCII characters are plain
    (``plain_ascii``) and whose others lie in ``high`` (``int64[k, 2]`` code-point ranges; not
    looked at when ``all_high``: every one is plain)."""
    n = starts.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    for k in range(n):
        s = starts[k]
        e = s + lens[k]
        if e == s:
            continue
        ok = True
        i = s
        while i < e:
            c = blob[i]
            if c < 0x80:
                if not plain_ascii[c]:
                    ok = False
                    break
                i += 1
                continue
            lo = 0x80
            hi = 0xBF
            if 0xC2 <= c <= 0xDF:
                need = 1
            elif c == 0xE0:
                need = 2
                lo = 0xA0
            elif c == 0xED:
                need = 2
                hi = 0x9F
            elif 0xE1 <= c <= 0xEF:
                need = 2
            elif c == 0xF0:
                need = 3
                lo = 0x90
            elif 0xF1 <= c <= 0xF3:
                need = 3
            elif c == 0xF4:
                need = 3
                hi = 0x8F
            else:
                ok = False
                break
            if i + need >= e:
                ok = False
                break
            b1 = blob[i + 1]
            if b1 < lo or b1 > hi:
                ok = False
                break
            cp = np.int64(c & (0x3F >> need))
            for j in range(1, need + 1):
                bj = blob[i + j]
                if bj < 0x80 or bj > 0xBF:
                    ok = False
                    break
                cp = (cp << 6) | np.int64(bj & 0x3F)
            if not ok:
                break
            if not all_high:
                inside = False
                for r in range(high.shape[0]):
                    if high[r, 0] <= cp <= high[r, 1]:
                        inside = True
                        break
                if not inside:
                    ok = False
                    break
            i += need + 1
        out[k] = ok
    return out


# ---------------------------------------------------------------------------------------------
# Python wrappers
# ---------------------------------------------------------------------------------------------


def _pack(keys: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenate ``keys`` into one uint8 buffer; return (blob, starts, lens) with int64 offsets."""
    lens = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    starts = np.zeros(len(keys), dtype=np.int64)
    if len(keys) > 1:
        np.cumsum(lens[:-1], out=starts[1:])
    blob = np.frombuffer(b"".join(keys), dtype=np.uint8)
    if blob.shape[0] == 0:
        blob = np.zeros(1, dtype=np.uint8)
    return blob, starts, lens


def _trie_from_packed(blob, starts, lens, ids) -> TokenTrie:
    keep = lens > 0
    if not keep.all():
        starts, lens, ids = starts[keep], lens[keep], ids[keep]
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lens = np.ascontiguousarray(lens, dtype=np.int64)
    ids = np.ascontiguousarray(ids, dtype=np.int32)
    if starts.shape[0] == 0:
        z = np.zeros(1, dtype=np.int32)
        return TokenTrie(
            child_ptr=np.zeros(2, dtype=np.int32),
            child_byte=np.zeros(0, dtype=np.uint8),
            child_node=np.zeros(0, dtype=np.int32),
            tok_ptr=np.zeros(2, dtype=np.int32),
            tok_ids=np.zeros(0, dtype=np.int32),
            subtree_end=z + 1,
        )
    order = _sort_keys(blob, starts, lens, ids)
    max_len = int(lens.max())
    cp, cb, cn, tp, ti, se = _build_trie_kernel(blob, starts, lens, ids, order, max_len)
    return TokenTrie(child_ptr=cp, child_byte=cb, child_node=cn, tok_ptr=tp, tok_ids=ti, subtree_end=se)


def build_trie(items: list[tuple[bytes, int]]) -> TokenTrie:
    """Build one trie from ``(token_bytes, token_id)`` pairs (empty byte strings are skipped)."""
    keys = [b for b, _ in items]
    ids = np.fromiter((i for _, i in items), dtype=np.int64, count=len(items))
    blob, starts, lens = _pack(keys)
    return _trie_from_packed(blob, starts, lens, ids)


def build_vocab_tries(token_bytes: list[tuple[bytes, int]], max_token_id: int, plain: PlainClass) -> VocabTries:
    """Split emittable tokens into plain and special and build both tries.

    Parameters
    ----------
    token_bytes : list of (bytes, int)
        Every emittable (non-special, non-EOS) token's exact output bytes and its id.
    max_token_id : int
        One past the largest id (the logits width).
    plain : PlainClass
        The class whose tokens go to the plain trie (:meth:`PlainClass.holds`).

    Returns
    -------
    VocabTries
    """
    keys = [b for b, _ in token_bytes]
    ids = np.fromiter((i for _, i in token_bytes), dtype=np.int64, count=len(token_bytes))
    if ids.size and (ids.min() < 0 or ids.max() >= max_token_id):
        raise VocabularyError(f"Invalid token id: expected 0 <= id < {max_token_id}, got "
                         f"{int(ids.min()) if ids.min() < 0 else int(ids.max())}")
    blob, starts, lens = _pack(keys)
    return _vocab_tries_from_packed(blob, starts, lens, ids, max_token_id, plain)


def plain_split(blob, starts, lens, plain: PlainClass) -> np.ndarray:
    """``bool[n]``: item ``k`` (``blob[starts[k]:starts[k] + lens[k]]``) is a plain token."""
    if not starts.shape[0]:
        return np.zeros(0, dtype=np.bool_)
    return _plain_mask(blob, starts, lens, plain.ascii, plain.high, plain.all_high)


def _vocab_tries_from_packed(blob, starts, lens, ids, max_token_id: int, plain_class: PlainClass) -> VocabTries:
    keep = lens > 0
    if not keep.all():
        starts, lens, ids = starts[keep], lens[keep], ids[keep]
    plain = plain_split(blob, starts, lens, plain_class)
    n_words = (max_token_id + 31) // 32
    plain_bits = np.zeros(n_words, dtype=np.uint32)
    pids = ids[plain].astype(np.int64)
    set_token_bits(plain_bits, pids)
    sp = ~plain
    return VocabTries(
        plain=_trie_from_packed(blob, starts[plain], lens[plain], ids[plain]),
        special=_trie_from_packed(blob, starts[sp], lens[sp], ids[sp]),
        plain_bits=plain_bits,
        n_words=n_words,
        max_len=int(lens.max()) if lens.size else 0,
        plain_class=plain_class,
    )
