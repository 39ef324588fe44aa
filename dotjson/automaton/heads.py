"""Heads: the part of a state's mask that does not depend on what follows the current item,
computed once per process and vocabulary and shared by every automaton.

A state ``A c`` whose term is a sequence through a *delimiter* (a byte class no plain token
holds, e.g. a JSON string's closing quote: ``A`` ends with it) allows exactly

* the tokens that are prefixes of a word of ``A`` (they never reach ``c``), and
* the tokens ``u v`` where ``u`` is a word of ``A`` (the token passes the delimiter at a trie
  node where ``A``'s state accepts: an *exit*) and ``v`` a prefix of a word of ``c``.

The first set and the exits depend on ``A`` and the vocabulary only: every position of every
schema with the same head (the rest of a ``date-time`` string, of a ``uri``, of a bounded string)
shares them, and only the exits' subtrees are walked from ``c``'s state (a few tokens holding the
delimiter). No plain token holds the delimiter, so the plain trie is decided by the head alone.

Sharing across automata needs the head's *structure*, not its term id (each automaton has its
own store): :class:`Interner` gives each term a process-wide id, hash-consed over the kind,
the children's ids and the fields, exactly (lists compared, not hashed), and remembers it per
automaton term. Terms that mean something only in their own automaton are not shared: a
reference to a rule of the schema (a base image's rules are the same in every automaton
started from it), a key set, a repetition counted by markers.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from .._config import MAX_HEAD_CACHE_BYTES, MAX_HEAD_IDS
from .._kernels.jit import kernel
from .store import BAND, K_ALT, K_AND, K_BYTES, K_DIFF, K_EMPTY, K_EPS, K_REF, K_REP, K_SEQ

#: :func:`intern` answers: a term not shared across automata; the tables must grow first.
UNSHARED = -1
GROW_TABLE, GROW_POOL, GROW_STACK, GROW_BUF = -3, -4, -5, -6
#: ``gid_of`` of a term not interned yet.
UNKNOWN_GID = -2

_M = np.uint64(0x9E3779B97F4A7C15)


@kernel
def _mix(h, x):
    h = (h ^ np.uint64(x)) * _M
    return h ^ (h >> np.uint64(29))


@kernel
def _find(gk, ght, gpool, kind, f1, f2, f3, f4, lst, n):
    """The slot of the key in ``ght`` (its gid, or -1 where it would go)."""
    h = _mix(_mix(_mix(_mix(_mix(np.uint64(kind), f1), f2), f3), f4), n)
    for i in range(n):
        h = _mix(h, lst[i])
    mask = ght.shape[0] - 1
    i = np.int64(h & np.uint64(mask))
    while True:
        g = ght[i]
        if g < 0:
            return i
        if gk[g, 0] == kind:
            if kind == K_ALT or kind == K_AND:
                if gk[g, 1] == n:
                    off = gk[g, 2]
                    same = True
                    for x in range(n):
                        if gpool[off + x] != lst[x]:
                            same = False
                            break
                    if same:
                        return i
            elif gk[g, 1] == f1 and gk[g, 2] == f2 and gk[g, 3] == f3 and gk[g, 4] == f4:
                return i
        i = (i + 1) & mask


@kernel(python=True)
def intern(ti, bw, pool, gid_of, rule_gid, gk, ght, gpool, gctl, stack, buf, t):
    """The process-wide id of term ``t`` (see the module docstring); :data:`UNSHARED`, or
    ``GROW_*`` when a table or scratch array is full (grow it and call again: the terms
    interned so far stay in ``gid_of``).

    ``ti``/``bw``/``pool``: the automaton's term arrays; ``gid_of[t]``: the answer memoized per
    term (:data:`UNKNOWN_GID` before); ``rule_gid[r]``: the id of rule ``r`` or -1 (not shared);
    ``gk[g] = (kind, f1, f2, f3, f4)``, ``ght`` (open addressing over gids, -1 empty, at most
    half full), ``gpool`` (the sorted child ids of ``ALT``/``AND`` keys), ``gctl = (n_gids,
    pool_used)``: the interner's tables.
    """
    sp = 0
    stack[sp] = t
    sp += 1
    while sp > 0:
        x = stack[sp - 1]
        if gid_of[x] != UNKNOWN_GID:
            sp -= 1
            continue
        kind = ti[x, 0]
        # children first
        pending = False
        listed = kind == K_ALT or kind == K_AND
        nk = ti[x, 2] if listed else 2 if kind == K_SEQ or kind == K_DIFF else 1 if kind == K_REP else 0
        for j in range(nk):
            y = pool[ti[x, 1] + j] if listed else ti[x, 1 + j]
            if gid_of[y] == UNKNOWN_GID:
                if sp >= stack.shape[0]:
                    return GROW_STACK
                stack[sp] = y
                sp += 1
                pending = True
        if pending:
            continue
        g = UNSHARED
        n = 0
        f1 = np.int64(0)
        f2 = np.int64(0)
        f3 = np.int64(0)
        f4 = np.int64(0)
        ok = True
        if kind == K_EMPTY or kind == K_EPS:
            g = kind  # (ids 0 and 1 in every table)
            ok = False
        elif kind == K_BYTES:
            j = ti[x, 1]
            f1 = np.int64(bw[j, 0])
            f2 = np.int64(bw[j, 1])
            f3 = np.int64(bw[j, 2])
            f4 = np.int64(bw[j, 3])
        elif kind == K_SEQ or kind == K_DIFF:
            f1 = gid_of[ti[x, 1]]
            f2 = gid_of[ti[x, 2]]
            ok = f1 >= 0 and f2 >= 0
        elif kind == K_REP:
            f1 = gid_of[ti[x, 1]]
            f2 = ti[x, 2]
            f3 = ti[x, 3]
            ok = f1 >= 0 and f2 < BAND and f3 < BAND
        elif kind == K_REF:
            r = ti[x, 1]
            f1 = rule_gid[r] if r < rule_gid.shape[0] else -1
            ok = f1 >= 0
        elif kind == K_ALT or kind == K_AND:
            off, n = ti[x, 1], ti[x, 2]
            if n > buf.shape[0]:
                return GROW_BUF
            for j in range(n):
                v = gid_of[pool[off + j]]
                if v < 0:
                    ok = False
                    break
                buf[j] = v
            if ok:
                buf[:n].sort()
        else:  # K_KEYS and anything else: meaningful in this automaton only
            ok = False
        if ok:
            i = _find(gk, ght, gpool, kind, f1, f2, f3, f4, buf, n)
            g = ght[i]
            if g < 0:
                g = gctl[0]
                if g >= gk.shape[0] or 2 * (g + 1) > ght.shape[0]:
                    return GROW_TABLE
                if kind == K_ALT or kind == K_AND:
                    po = gctl[1]
                    if po + n > gpool.shape[0]:
                        return GROW_POOL
                    gpool[po: po + n] = buf[:n]
                    gctl[1] = po + n
                    f1 = n
                    f2 = po
                gk[g, 0] = kind
                gk[g, 1] = f1
                gk[g, 2] = f2
                gk[g, 3] = f3
                gk[g, 4] = f4
                ght[i] = g
                gctl[0] = g + 1
        gid_of[x] = g
        sp -= 1
    return gid_of[t]


@kernel
def intern_all(ti, bw, pool, gid_of, rule_gid, gk, ght, gpool, gctl, stack, buf, n):
    """:func:`intern` of terms ``0 .. n - 1`` (a base image's): 0, or a ``GROW_*`` answer (grow,
    call again: the terms done stay in ``gid_of``)."""
    for t in range(n):
        if gid_of[t] == UNKNOWN_GID:
            g = intern(ti, bw, pool, gid_of, rule_gid, gk, ght, gpool, gctl, stack, buf, t)
            if g < UNSHARED:
                return g
    return 0


class Interner:
    """Process-wide ids of term structures (see :func:`intern`); thread-safe, growing by
    doubling. One per process: the ids mean the same in every automaton.

    Bounded: past ``max_ids`` ids (:data:`dotjson._config.MAX_HEAD_IDS`) the tables are emptied
    and a new *generation* starts; an id is meaningful only with its generation (callers keep
    it beside their memo of ids and key what they cache by both)."""

    def __init__(self, cap: int = 1 << 12, max_ids: int = MAX_HEAD_IDS):
        self.lock = threading.Lock()
        self.max_ids = int(max_ids)
        self.generation = 0
        self._cap0 = cap
        self._tables(cap)

    def _tables(self, cap: int) -> None:
        self.gk = np.zeros((cap, 5), dtype=np.int64)
        self.ght = np.full(2 * cap, -1, dtype=np.int64)
        self.gpool = np.zeros(4 * cap, dtype=np.int64)
        self.gctl = np.array([2, 0], dtype=np.int64)  # ids 0 and 1: ∅ and ε
        self.gk[0, 0], self.gk[1, 0] = K_EMPTY, K_EPS
        self.stack = np.zeros(1024, dtype=np.int64)
        self.buf = np.zeros(256, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        return self.gk.nbytes + self.ght.nbytes + self.gpool.nbytes

    def gid(self, ti, bw, pool, gid_of, rule_gid, t: int, generation: int) -> tuple[int, int]:
        """``(generation, id)`` of term ``t`` of a store (``gid_of`` its memo of ids of
        ``generation``, grown by the caller to the store's term count; emptied here when the
        generation has changed, so the caller keeps the generation returned), the id
        :data:`UNSHARED` for a term not shared."""
        with self.lock:
            if self.gctl[0] >= self.max_ids:
                self._tables(self._cap0)
                self.generation += 1
            if generation != self.generation:
                gid_of.fill(UNKNOWN_GID)
            while True:
                g = intern(ti, bw, pool, gid_of, rule_gid, self.gk, self.ght, self.gpool,
                           self.gctl, self.stack, self.buf, t)
                if g >= UNSHARED:
                    return self.generation, int(g)
                self._grow(int(g))

    def image_ids(self, image, ti, bw, pool, rule_gid) -> tuple[int, np.ndarray]:
        """``(generation, ids)`` of every term of base ``image`` (``ti``/``bw``/``pool``: the
        arrays of a store started from it, whose first terms are the image's), computed once per
        image and generation and kept with the image: an automaton started from it copies them
        instead of interning a ``format``'s ~2,400 terms again (0.10–0.16 ms a new schema)."""
        n = image.n_terms
        with self.lock:
            key = ("head ids", self.generation)
            got = image.facts.get(key)
            if got is None:
                got = np.full(n, UNKNOWN_GID, dtype=np.int64)
                while True:
                    r = intern_all(ti, bw, pool, got, rule_gid, self.gk, self.ght, self.gpool,
                                   self.gctl, self.stack, self.buf, n)
                    if r == 0:
                        break
                    self._grow(int(r))
                if self.gctl[0] >= self.max_ids:  # (filled past the budget: not kept)
                    return self.generation, got
                image.facts[key] = got
            return self.generation, got

    def _grow(self, why: int) -> None:
        n, po = int(self.gctl[0]), int(self.gctl[1])
        if why == GROW_TABLE:
            gk = np.zeros((2 * self.gk.shape[0], 5), dtype=np.int64)
            gk[:n] = self.gk[:n]
            self.gk = gk
            self._rehash(2 * gk.shape[0])
        elif why == GROW_POOL:
            gp = np.zeros(2 * self.gpool.shape[0] + self.buf.shape[0], dtype=np.int64)
            gp[:po] = self.gpool[:po]
            self.gpool = gp
        elif why == GROW_STACK:
            self.stack = np.zeros(2 * self.stack.shape[0], dtype=np.int64)
        else:
            self.buf = np.zeros(2 * self.buf.shape[0], dtype=np.int64)

    def _rehash(self, size: int) -> None:
        n = int(self.gctl[0])
        self.ght = np.full(size, -1, dtype=np.int64)
        _rehash_all(self.gk, self.ght, self.gpool, n)


@kernel
def _rehash_all(gk, ght, gpool, n):
    buf = np.zeros(1, dtype=np.int64)
    for g in range(2, n):
        kind = gk[g, 0]
        if kind == K_ALT or kind == K_AND:
            m, off = gk[g, 1], gk[g, 2]
            i = _find(gk, ght, gpool, kind, 0, 0, 0, 0, gpool[off: off + m], m)
        else:
            i = _find(gk, ght, gpool, kind, gk[g, 1], gk[g, 2], gk[g, 3], gk[g, 4], buf, 0)
        ght[i] = g
    return n


_INTERNER = Interner()


def interner() -> Interner:
    """The process's :class:`Interner`."""
    return _INTERNER


class HeadCache:
    """The masks of heads shared by every automaton of the process: ``(Vocabulary._uid, interner
    generation, head id) -> (bits, exits)`` (the tokens that are prefixes of the head's words, and the
    special trie's nodes where a word of the head ends inside a token). Bounded by
    :data:`dotjson._config.MAX_HEAD_CACHE_BYTES` (emptied when full); thread-safe."""

    def __init__(self, max_bytes: int):
        self.lock = threading.Lock()
        self.max_bytes = int(max_bytes)
        self._entries: dict = {}
        self.nbytes = 0

    def get(self, key):
        return self._entries.get(key)

    def put(self, key, entry) -> None:
        size = entry[0].nbytes + entry[1].nbytes + 64
        with self.lock:
            if key in self._entries:
                return
            if self.nbytes + size > self.max_bytes:
                self._entries.clear()
                self.nbytes = 0
            self._entries[key] = entry
            self.nbytes += size

    def clear(self) -> None:
        with self.lock:
            self._entries.clear()
            self.nbytes = 0

    def __len__(self) -> int:
        return len(self._entries)


_CACHE = HeadCache(MAX_HEAD_CACHE_BYTES)


def head_cache() -> HeadCache:
    """The process's :class:`HeadCache`."""
    return _CACHE


_IMAGE_NUMBERS = itertools.count(1)


def rule_ids(image) -> np.ndarray:
    """``rule_gid`` for an automaton started from base ``image`` (None: no shared rules): the
    image's rules, which every such automaton numbers alike, get ids (made once, kept with the
    image); the schema's own rules (after them) get none."""
    if image is None:
        return np.full(0, -1, dtype=np.int64)
    got = image.facts.get("head rule ids")
    if got is None:
        ids = (np.int64(next(_IMAGE_NUMBERS)) << np.int64(24)) + np.arange(len(image.rules[0]),
                                                                         dtype=np.int64)
        got = image.facts.setdefault("head rule ids", ids)
    return got
