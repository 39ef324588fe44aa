"""An index's masks: the memo of allowed-token bitsets and the walk that computes a fresh one.

A part of :class:`~dotjson.index.Index` (its ``_masker``), over the index's automaton and
vocabulary, guarded by the automaton's lock. A state's mask is memoized by its clamped key
(states whose counters are far from their bounds share one) in ``uint32[32, n_words]`` blocks
added as it fills, under the ``max_cache_bytes`` budget (emptied and refilled on demand when
full). A fresh mask is, in order of preference: a bounded plain run's (two bitset
operations on a shared state's mask), the union of its heads' (a string's rest, shared by every
index of the process: :mod:`dotjson.automaton.heads`) continued by what follows them, or one walk
of the vocabulary's tries from the state (:func:`dotjson._kernels.walk.compute_mask`).
``docs/ARCHITECTURE.md`` §3 tells the whole story.
"""

from __future__ import annotations

import weakref

import numpy as np

from ._kernels import entries as _entries, jit as _jit, keywalk as _keywalk, walk as _walk
from .automaton.ids import LOW31 as _LOW31, VIRT as _VIRT
from .automaton import kernels as _K
from .automaton.item_walk import (
    AutomatonView as _AutomatonView, _seq_head, family_at as _family_at, family_branches as _family_branches,
    family_ref as _family_ref, walk_items as _walk_items)
from .automaton import heads as _heads
from .errors import LimitExceededError
from .ir.families import token_walk as _token_walk
from .open_keys import OpenKeyMasks
from .trie import PlainClass

#: State of a row after EOS was sampled.
FINISHED = -3

#: Trie nodes branching on more bytes than this get a whole automaton row at once; narrower
#: ones only the transitions the walk asks for.
_WIDE_NODE = 2
#: Rows of the mask memo per block (see Masker.__init__).
_BLOCK_SHIFT = 5
_BLOCK = 1 << _BLOCK_SHIFT


class Masker(OpenKeyMasks):
    """The masks of one index's states (see the module docstring).

    Parameters
    ----------
    automaton : dotjson.automaton.Automaton
        The index's automaton (its lock guards this part too).
    vocabulary : dotjson.Vocabulary
        The vocabulary the masks are over.
    max_cache_bytes : int
        The memo's budget (the ``Index`` option).
    options : dict
        The index's options (``specials``: a grammar holding special tokens' markers).
    plain : dotjson.trie.PlainClass
        The plain class (the index's: the JSON layer's): the vocabulary's tries split by it, and
        the walk's plain invariance, plain runs and heads' delimiters tested against it.
    """

    def __init__(self, automaton, vocabulary, max_cache_bytes: int, options: dict, plain: PlainClass) -> None:
        self._auto = automaton
        self._lock = automaton.lock
        self._vocab = vocabulary
        self._options = options
        self._plain = plain
        self._tries = vocabulary.tries_for(plain)
        self._trie_arrays = tuple(
            (t.child_ptr, t.child_byte, t.child_node, t.tok_ptr, t.tok_ids, t.subtree_end)
            for t in (self._tries.special, self._tries.plain)
        )
        self._walk_tables = vocabulary._walk_tables(plain)
        #: False: no plain-run shortcuts (the plain trie walked node by node, no shared special
        #: part), for the tests
        self._plain_runs = True
        self._reach_out = np.zeros(2, dtype=np.int64)  # run_share's reach and run length
        self._reach_known: dict = {}  # (run item, first term after it) -> reach, this store's
        #: the special trie's walk (``WALK_ALL``: node by node, no byte runs either: the reference)
        self._special_mode = _walk.WALK_RUNS | _walk.BYTE_RUNS
        #: False: no head sharing (every fresh mask one walk of the whole state), for the tests
        self._heads = True
        #: False: a counted class at a walk's root is walked node by node, for the tests (see
        #: :meth:`_class_mask`)
        self._class_roots = True
        #: False: a key position (a key set at the walk's root) is walked as any state, a state
        #: per prefix of a name, for the tests (see :meth:`_keys_mask`)
        self._key_roots = True
        self._ask = np.zeros(_keywalk.ASK_ROOM, dtype=np.int64)  # (its members to settle)
        #: False: an open object's key position is walked as any state (see
        #: :meth:`_open_key_mask`; off with the heads or the plain runs too), for the tests
        self._open_keys = True
        self._init_open_keys()
        # a class's bytes (its four words' bytes) -> (its tables, room for a chain of its states)
        self._classes: dict = {}
        self._chain_words = np.zeros(4, dtype=np.uint64)
        self._local_heads: dict = {}  # head term -> (bits, exits), this automaton's
        self._local_heads_bytes = 0
        self._head_gid = np.full(0, _heads.UNKNOWN_GID, dtype=np.int64)  # term -> process id
        self._gid_gen = -1  # the interner's generation of those ids
        self._head_pairs = np.zeros(2 * _walk.MAX_HEADS, dtype=np.int64)
        self._n_words = self._tries.n_words
        self._limit = self._tries.max_len + 1
        # the walk's own frames in the stacks (_scratch): the room a shortcut at a mask's root
        # (a class's exits, a key position's ways out of its names) leaves them
        self._class_reserve = 256 * (self._limit + 2)
        self._eos, self._eos_set = eos_of(vocabulary.eos_token_ids)
        self._max_cache_bytes = int(max_cache_bytes)
        self._rule_gid = _heads.rule_ids(automaton.image)
        # the memo's rows, in blocks of _BLOCK (row r is block r >> _BLOCK_SHIFT): a new block
        # when the last is full, so growth copies nothing (one doubled table copied every row so
        # far, 16 KiB a row on Llama 3: ~1 ms of each new index's masks); a row is written whole
        # before it is read, so a block is not zeroed
        self._blocks: list[np.ndarray] = []
        self._n_masks = 0
        self._mask_of_key: dict[int, int] = {}
        self._state_row: dict[int, int] = {}  # state -> memo row (a cache of the clamped lookup)
        #: False: no rule family computes its own states' masks (every fresh mask one walk), for
        #: the tests (see :meth:`_family_mask`)
        self._family_masks = True
        self._mask_families = None  # the grammar's families with a token_mask (found on first use)
        self._rule_family: dict = {}  # rule id -> (family, name) or None
        self._view = None

    # ------------------------------------------------------------------ the memo

    @property
    def n_masks(self) -> int:
        """Distinct masks memoized so far."""
        return self._n_masks

    @property
    def nbytes(self) -> int:
        """The memo's bytes (its table, and an estimate for its dictionaries)."""
        return sum(int(b.nbytes) for b in self._blocks) + 100 * (len(self._state_row) + len(self._mask_of_key))

    def _mask(self, r: int) -> np.ndarray:
        """Memo row ``r`` (a view)."""
        return self._blocks[r >> _BLOCK_SHIFT][r & (_BLOCK - 1)]

    def has(self, state: int) -> bool:
        """Whether the mask of id ``state`` (a counter-carrying id: its shape's) is memoized
        (read without the lock: a hint)."""
        return (state & _LOW31 if state >= _VIRT else state) in self._state_row

    def export(self) -> tuple[np.ndarray, list]:
        """``(masks, keys)``: a copy of the memoized masks and ``[term, row]`` of their keys
        (call with the lock held), what :meth:`load` takes back."""
        n = self._n_masks
        # (one copy, of the blocks holding rows: those past them stay from before an eviction)
        used = self._blocks[: (n + _BLOCK - 1) >> _BLOCK_SHIFT]
        table = np.concatenate(used)[:n] if n else np.zeros((0, self._n_words), dtype=np.uint32)
        return table, [[int(k), int(v)] for k, v in self._mask_of_key.items()]

    def load(self, masks: np.ndarray, keys) -> None:
        """Install saved masks (:meth:`export`'s), validated against this automaton.

        Raises
        ------
        ValueError
            The table's shape or a key is out of range.
        """
        if masks.dtype != np.uint32 or masks.ndim != 2 or masks.shape[1] != self._n_words:
            raise ValueError("mask table has the wrong shape")
        n_masks = masks.shape[0]
        blocks = []
        for lo in range(0, n_masks, _BLOCK):
            b = np.empty((_BLOCK, self._n_words), dtype=np.uint32)
            part = masks[lo : lo + _BLOCK]
            b[: part.shape[0]] = part
            blocks.append(b)
        n_terms = self._auto.n_terms
        of_key = {}
        for k, v in keys:
            k, v = int(k), int(v)
            if not (0 <= k < n_terms and 0 <= v < n_masks):
                raise ValueError("mask key out of range")
            of_key[k] = v
        self._blocks, self._n_masks, self._mask_of_key = blocks, n_masks, of_key
        self._state_row = {}

    def fill(self, states, out: np.ndarray, map_fn=None) -> None:
        """Write the masks of ``states`` (checked ids, :data:`FINISHED` or dead) into the rows
        of ``out``: those not memoized yet computed first, through ``map_fn`` (e.g. a thread
        pool's ``map``) when there are several; then every row copied under the lock, so a
        memo emptied by another thread meanwhile never hands out a stale row."""
        # a counter-carrying state has its shape's mask (the same clamped key)
        states = [s & _LOW31 if s >= _VIRT else s for s in states]
        if len(states) == 1 and states[0] >= 0:  # one live state (Index.mask, a Guide's row)
            self.fill_one(states[0], out[0])
            return
        for attempt in range(2):
            with self._lock:
                rows = self._state_row
                missing = {s for s in states if s >= 0 and s not in rows}
                if not missing:
                    for i, s in enumerate(states):
                        if s >= 0:
                            out[i] = self._mask(rows[s])
                        else:
                            out[i] = 0
                            if s == FINISHED:
                                self.set_eos(out[i])
                    return
            missing = sorted(missing)
            if len(missing) > 1 and map_fn is not None:
                list(map_fn(self.row, missing))
            else:
                for s in missing:
                    self.row(s)
        # The memo was emptied under us (a cache budget smaller than the batch's masks): copy
        # row by row, each checked under the lock.
        for i, s in enumerate(states):
            while True:
                if s < 0:
                    self.fill([s], out[i : i + 1])
                    break
                r = self.row(s)
                with self._lock:
                    if self._state_row.get(s) == r:
                        out[i] = self._mask(r)
                        break

    def fill_one(self, state: int, out: np.ndarray) -> None:
        """:meth:`fill` for one checked id into the 1-D row ``out``, without the batch path's
        lists (the memoized step's path): a live state's row, computed first if needed."""
        s = state & _LOW31 if state >= _VIRT else state
        if s < 0:  # finished or dead: no row
            self.fill([s], out.reshape(1, -1))
            return
        while True:  # (copied under the lock: a memo emptied meanwhile is asked again)
            with self._lock:
                r = self._state_row.get(s)
                if r is not None:
                    out[:] = self._mask(r)
                    return
            self.row(s)

    def set_eos(self, out: np.ndarray) -> None:
        """Set the EOS tokens' bits in ``out`` (a row of the vocabulary's width)."""
        for t in self._eos:
            if t < out.shape[0] * 32:
                out[t >> 5] |= np.uint32(1 << (int(t) & 31))

    def row(self, state: int) -> int:
        """The memo row holding ``state``'s mask, computing it if needed.

        A fresh mask is computed under the lock (the walk expands the automaton as it goes);
        the kernels release the GIL, so other threads and a forward pass run meanwhile.
        """
        a = self._auto
        with self._lock:
            r = self._state_row.get(state)
            if r is not None:
                return r
            key_state = a.key_state(state, self._limit)
            key_term = a.term_of(key_state)
            r = self._mask_of_key.get(key_term)
            if r is not None:
                self._state_row[state] = r
                return r
            with _token_walk():  # (rule families may budget what one mask builds)
                # (an open object's key position first: the commonest fresh mask of an object,
                # which none of the others answers; its shape test costs less than theirs)
                bits = None
                if self._open_keys and self._heads and self._plain_runs:
                    bits = self._open_key_mask(key_state)
                if bits is None:
                    bits = self._family_mask(key_state)
                if bits is None:
                    bits = self._run_mask(state, key_state)
                if bits is None:
                    bits = self._head_mask(key_state)
                if bits is None:
                    bits = self._compute_mask(key_state)
            if (self._n_masks + 1) * self._n_words * 4 > self._max_cache_bytes:
                if self._n_words * 4 > self._max_cache_bytes:
                    raise LimitExceededError(
                        f"max_cache_bytes={self._max_cache_bytes} cannot hold a single mask "
                        f"({self._n_words * 4} bytes)"
                    )
                self._mask_of_key.clear()  # documented eviction: refill on demand
                self._state_row.clear()
                self._n_masks = 0
            r = self._n_masks
            if r >= len(self._blocks) * _BLOCK:  # (within the budget, checked above)
                rows = min(_BLOCK, max(1, self._max_cache_bytes // (self._n_words * 4) - r))
                self._blocks.append(np.empty((rows, self._n_words), dtype=np.uint32))
            self._mask(r)[:] = bits
            self._n_masks += 1
            self._mask_of_key[key_term] = r
            self._state_row[state] = r
        return r

    def _family_mask(self, state: int):
        """The mask of ``state`` from the rule family whose rule its term reaches first (after
        a few items, ``x y F rest``, or so in one branch of an alternation first in it, ``(x F
        y | z) rest``), where that family computes masks of its own states (``token_mask``: a
        family over the bytes of an item, whose generic walk would make a rule per token prefix
        an item may hold); ``None`` otherwise. Call with the lock held."""
        fams = self._families()
        if not fams:
            return None
        a = self._auto
        ti = a.store[_K.S_TI]
        t = a.term_of(state)
        first, rest = _seq_head(ti, t)
        if ti[first, 0] == _K.K_ALT:
            got = _family_branches(a, first, fams, self._rule_family)
            if got is None:
                return None
            fam, name, prefix, after, others = got
            if others:
                other = a._run(_K.alt, np.asarray(others, dtype=np.int32), len(others))
                other = a._run(_K.seq, other, rest)
            else:
                other = _K.EMPTY
            return fam.token_mask(self._get_view(), state, prefix, name, a._run(_K.seq, after, rest), other)
        got = _family_ref(a, t, fams, self._rule_family)
        if got is None:
            return None
        fam, name, prefix, after = got
        return fam.token_mask(self._get_view(), state, prefix, name, after, _K.EMPTY)

    def family_walk(self, state: int, data: bytes):
        """The state after ``data`` (a token's bytes, or a piece of a text) from ``state``
        (``DEAD``: refused), where ``state`` is inside an item of a rule family that steps its own
        states (``token_step``: a family over the bytes of an item, whose rule bodies name a
        successor per byte): each item the bytes reach stepped by the family at once, a few bytes
        between items walked one at a time, past them the automaton's text walk; ``None`` where
        ``data`` does not start inside such an item (the automaton's walk)."""
        fams = self._families()
        if not fams:
            return None
        a = self._auto
        with self._lock:
            s, i, stepped, loose = state, 0, False, 0
            while i < len(data):
                got = _family_at(a, a.term_of(s), fams, self._rule_family)
                took = None if got is None else got[0].token_step(self._get_view(), got[1], got[2], data[i:])
                if took is not None:
                    s, n = took
                    if s < 0:
                        return s
                    i, stepped, loose = i + n, True, 0
                elif not stepped:
                    return None
                elif loose == 8:
                    return a.walk_text(s, data[i:])
                else:
                    s = a.step(s, data[i])
                    i, loose = i + 1, loose + 1
                    if s < 0:
                        return s
            return s

    def walk_items(self, state: int, data: bytes) -> int:
        """The state after ``data`` from ``state`` (negative when it dies):
        :func:`dotjson.automaton.item_walk.walk_items` over this index's automaton and the
        families that step their own items. Call with the lock held."""
        return _walk_items(self._auto, self._families(), self._get_view(), state, data, self._rule_family)

    def _families(self) -> tuple:
        """The grammar's rule families that mask and step their own states (none when
        :attr:`_family_masks` is off)."""
        fams = self._mask_families
        if fams is None:
            fams = self._mask_families = tuple(
                f for f in getattr(self._auto.grammar, "families", ()) if hasattr(f, "token_mask"))
        return fams if self._family_masks else ()

    def _get_view(self) -> "MaskView":
        if self._view is None:
            self._view = MaskView(self)
        return self._view

    def _run_mask(self, state: int, key_state: int):
        """The mask of a state inside a bounded plain run, from the memoized mask of a state
        shared by the whole run; ``None`` where that does not apply. Call with the lock held.

        A state taking ``k`` plain characters in a row (:func:`~dotjson.automaton.states.plain_run`,
        e.g. a string body with ``k`` characters left under ``maxLength``) allows exactly the
        plain tokens of at most ``k`` characters (a row of the vocabulary's length bitsets). Its
        special tokens (those holding a quote, a backslash, a control or a partial character)
        take at most a few characters of the run before they end or leave it (9 bytes inside a
        JSON string on Llama 3: :func:`dotjson._kernels.walk.run_share`), so they behave as in
        the run unbounded, one state for every position further from the bound than that, whose
        mask is computed once: a new position costs two bitset operations, not a walk of the
        special trie from a new state (~50 new states, 0.3 ms, at every token of a
        128-character string on Llama 3).
        """
        if not self._plain_runs:
            return None
        got = self._run_shared(key_state)
        if got is None:
            return None
        shared, k = got
        r = self.row(shared)
        # (its EOS bits are the run's: R{min(lo, D+1),} rest is nullable exactly when R{lo,hi}
        # rest is, lo and min(lo, D+1) being 0 together)
        return self._run_bits(self._mask(r), k)

    def _run_bits(self, shared_bits: np.ndarray, k: int) -> np.ndarray:
        """A run position's tokens: the special ones of its shared state's ``shared_bits``, and
        the plain tokens of at most ``k`` characters."""
        len_row, len_bits = self._walk_tables[3:5]
        bits = shared_bits & ~self._tries.plain_bits
        bits |= self._tries.plain_bits if k >= len_row.shape[0] else len_bits[len_row[k]]
        return bits

    def _bounded_run(self, t: int) -> bool:
        """Whether term ``t`` starts with a repetition with an upper bound (read off the term:
        a kernel call passes the whole store, ~2 us), and the vocabulary has length rows: the
        states :meth:`_run_shared` may share."""
        ti = self._auto.store[_K.S_TI]
        r = int(ti[t, 1]) if ti[t, 0] == _K.K_SEQ else t
        return bool(ti[r, 0] == _K.K_REP and 0 < ti[r, 3] < _K.BAND) \
            and self._walk_tables[3].shape[0] > 0

    def _run_shared(self, key_state: int, t: int = -1):
        """``(shared, k)`` for a state inside a bounded plain run of ``k`` characters whose
        special tokens are those of state ``shared`` (see :meth:`_run_mask`), else ``None``;
        ``key_state`` -1 with term ``t``: the state of ``t``, made only if the kernel is asked."""
        a = self._auto
        if key_state >= 0:
            t = a.term_of(key_state)
        if not self._bounded_run(t):
            return None
        ti = a.store[_K.S_TI]
        r = int(ti[t, 1]) if ti[t, 0] == _K.K_SEQ else t
        # the run's reach into the special tokens (D: run_share) depends on its item, what
        # follows the run and the vocabulary only: kept with the base image for the image's
        # terms, so the next schema does not walk the special trie again (~1-3 ms), and with
        # this masker for its own; a run no further from its bound than D shares nothing, which
        # is then known without a kernel call (or a state for a head: a date-time's digits)
        item = int(ti[r, 1])
        rest = int(ti[t, 2]) if r != t else _K.EPS
        first = int(ti[rest, 1]) if ti[rest, 0] == _K.K_SEQ else rest
        image = a.image
        if image is not None and item < image.n_terms and first < image.n_terms:
            facts, fact = image.facts, ("reach", self._vocab._uid, self._plain, item, first)
        else:
            facts, fact = self._reach_known, (item, first)
        known = facts.get(fact, -1)
        if 0 <= known and int(ti[r, 3]) <= known:
            return None
        if key_state < 0:
            key_state = a.state(t)
        out = self._reach_out
        out[:] = -1
        shared = a._run(_walk.run_share, key_state, self._trie_arrays[0], known, out, *self._plain.seqs)
        if known < 0 and out[0] >= 0:
            facts[fact] = int(out[0])
        if shared < 0 or shared == key_state:
            return None
        return int(shared), int(out[1])

    def _head_mask(self, state: int):
        """The mask of ``state`` from its heads', shared by every index of the process; ``None``
        where the state has no heads (see :mod:`dotjson.automaton.heads`). Call with the lock
        held. A state that is one head with no exit to walk gets the head's own bits (shared,
        read only: :meth:`row` copies them into the memo).

        ``state`` is ``A c`` (or a union of such, an alternation first in it distributed) with
        ``A`` ending at a delimiter no plain token holds (a string's closing quote): its tokens
        are the prefixes of ``A``'s words (the head's bits, once per head and vocabulary in the
        process), and the tokens that complete a word of ``A`` and go on (the head's exits,
        special-trie nodes) continued from ``c``'s state, the only walk done per state. Every
        position of a ``date-time`` value of every schema in the process shares its head's walk.
        """
        if not (self._heads and self._plain_runs) or self._options.get("specials"):
            return None
        a = self._auto
        pairs = self._head_pairs
        # (a head naming a rule past the image's, or a key set, is this index's own: with
        # UNSHARED_HEADS off the kernel answers NO_SHARE for it before making any state)
        n = a._run(_walk.head_pairs, state, self._plain.non_plain_words, pairs,
                   len(self._rule_gid) if not UNSHARED_HEADS else 1 << 30)
        if n < 0:
            return None
        heads = pairs[: 2 * n].tolist()
        if not UNSHARED_HEADS:
            # a head no other index can share (it names the schema's own rules or a key set:
            # the state's position in an object), met for the first time: computing its bits
            # is a whole walk of its own beside the exits', for one state (~0.3 ms at an open
            # object's key after a member): the state's walk instead. (Heads inside a bounded
            # run share the run's state: kept.)
            for i in range(0, 2 * n, 2):
                h = heads[i]
                if h not in self._local_heads and self._head_gid_of(h) < 0 and not self._bounded_run(h):
                    return None
        out = None
        for i in range(0, 2 * n, 2):
            head, sc = heads[i], heads[i + 1]
            bits, exits = self._head_entry(head)
            walk = sc >= 0 and exits.shape[0] > 0
            if out is None:
                if n == 1 and not walk and not a.accepting[state]:
                    return bits  # (the head's own bits: the caller copies them into the memo)
                out = bits.copy()
            else:
                out |= bits
            if walk:
                self._walk_exits(exits, sc, out)
        if a.accepting[state]:  # (never: a head ends with a byte)
            self.set_eos(out)
        return out

    def _head_entry(self, head: int) -> tuple:
        """``(bits, exits)`` of head term ``head``: this index's, the process's (by structure),
        or computed. A head inside a bounded plain run far from its bound (``R{lo,hi} q``) takes
        its special tokens and exits from the run's shared state (see :meth:`_run_mask`): one
        walk for every position of a 128-character string, and two bitset operations a position
        (not kept: a 100,000-character string would keep 100,000 masks)."""
        entry = self._local_heads.get(head)
        if entry is not None:
            return entry
        a = self._auto
        if self._bounded_run(head):
            got = self._run_shared(-1, head)
            if got is not None and a.term_of(got[0]) != head:
                shared, k = got
                bits, exits = self._head_entry(a.term_of(shared))
                return self._run_bits(bits, k), exits
        gid = self._head_gid_of(head)
        key = (self._vocab._uid, self._plain, self._gid_gen, gid) if gid >= 0 else None
        cache = _heads.head_cache()
        entry = cache.get(key) if key is not None else None
        if entry is None:  # (a state for the head only where its walk is needed)
            sa = a.state(head)
            entry = (self._compute_mask(sa), self._head_exits(sa))
            if key is not None:
                cache.put(key, entry)
        # this index's heads: under the memo's budget (max_cache_bytes), emptied with it
        size = entry[0].nbytes + entry[1].nbytes
        if self._local_heads_bytes + size > self._max_cache_bytes:
            self._local_heads.clear()
            self._local_heads_bytes = 0
        self._local_heads[head] = entry
        self._local_heads_bytes += size
        return entry

    def _walk_exits(self, exits: np.ndarray, sc: int, out: np.ndarray) -> None:
        """OR into ``out`` the special tokens below ``exits`` allowed from state ``sc``."""
        a = self._auto
        sc_ = self._walk_start()
        PW = self._walk_packed()
        while _entries.walk_from_packed(a.packed_store, PW, sc_.packed, self._special_mode, _WIDE_NODE,
                                     exits, exits.shape[0], sc, out) != _walk.DONE:
            a.handle_exit()

    def _head_gid_of(self, t: int) -> int:
        """The process-wide id of term ``t`` (:class:`dotjson.automaton.heads.Interner`)."""
        a = self._auto
        S = a.store
        n = S[_K.S_TI].shape[0]
        if self._head_gid.shape[0] < n:
            grown = np.full(n, _heads.UNKNOWN_GID, dtype=np.int64)
            grown[: self._head_gid.shape[0]] = self._head_gid
            self._head_gid = grown
        inter = _heads.interner()
        if self._gid_gen != inter.generation and a.image is not None:
            # the base image's terms (a format's compiled language among them): their ids are
            # the image's, interned once per process
            self._gid_gen, known = inter.image_ids(a.image, S[_K.S_TI], S[_K.S_BW], S[_K.S_POOL],
                                                   self._rule_gid)
            self._head_gid.fill(_heads.UNKNOWN_GID)
            self._head_gid[: known.shape[0]] = known
        self._gid_gen, gid = inter.gid(
            S[_K.S_TI], S[_K.S_BW], S[_K.S_POOL], self._head_gid, self._rule_gid, t, self._gid_gen)
        return gid

    def _head_exits(self, sa: int) -> np.ndarray:
        """The special-trie nodes with children where head state ``sa`` has accepted."""
        buf = np.empty(64, dtype=np.int32)
        while True:
            m = self._auto._run(_walk.head_exits, sa, self._trie_arrays[0], buf)
            if m >= 0:
                return buf[:m].copy()
            buf = np.empty(2 * buf.shape[0], dtype=np.int32)

    def _scratch(self):
        """This thread's walk stacks, at least as deep as this index's walk needs: the fan-outs
        along one path, or every node of the special trie."""
        return _entries.thread_stacks(256 * (self._limit + 2) + self._tries.special.n_nodes)

    def _compute_mask(self, state: int) -> np.ndarray:
        """The bitset of ``state``: one kernel call (the trie walks expanding the automaton
        inline), repeated only after an exit to Python (store growth, a rule body to compile).
        Call with the lock held."""
        if _jit._OPT_WAITING:  # (a first run after install: shortcuts a helper has compiled since)
            _jit.upgrade()
        if self._plain_runs and not self._options.get("specials"):
            S = self._auto.store
            ti = S[_K.S_TI]
            t = S[_K.S_TERM_OF].item(state)
            h = ti.item(t, 1) if ti.item(t, 0) == _K.K_SEQ else t
            kind = ti.item(h, 0)
            out = None
            if kind == _K.K_REF and self._key_roots:  # (a key position's rule: its body)
                body = self._rule_body(ti.item(h, 1))
                S = self._auto.store
                ti = S[_K.S_TI]
                if body >= 0 and ti.item(body, 0) == _K.K_KEYS:
                    kind = _K.K_KEYS
            if kind == _K.K_KEYS:
                if self._key_roots:
                    out = self._keys_mask(state)
            elif self._class_roots and (kind == _K.K_REP or kind == _K.K_AND):
                out = self._class_mask(state, h, kind)
            if out is not None:
                return out
        a = self._auto
        out = np.zeros(self._n_words, dtype=np.uint32)
        if a.accepting[state]:
            self.set_eos(out)
        sc = self._walk_start()
        PW = self._walk_packed()
        # (the store, the tables and the stacks packed: a, the vocabulary and sc hold them)
        while _entries.compute_mask_packed(a.packed_store, state, PW, sc.packed, self._special_mode,
                                        _WIDE_NODE, out) != _walk.DONE:
            a.handle_exit()
        if self._options.get("specials"):
            self._special_bits(state, out)
        return out

    def _rule_body(self, i: int) -> int:
        """The body term of rule ``i``, compiled first where it is not yet (the walk's first
        question anyway; the store may grow: re-read its arrays); negative where it has none."""
        S = self._auto.store
        if S[_K.S_RULE].item(i) < 0:
            self._auto.rules.body_closure(i)
            S = self._auto.store
        return S[_K.S_RULE].item(i)

    def _walk_packed(self) -> np.ndarray:
        """This vocabulary's walk tables packed (:func:`dotjson._kernels.entries.walk_packed`, as
        :meth:`_compute_mask` passes them): without the plain runs' tables when
        :attr:`_plain_runs` is off (the tests)."""
        return _entries.walk_packed(self._tries, self._trie_arrays, self._walk_tables, self._plain.seqs,
                                    self._plain_runs)

    def _walk_start(self):
        """This thread's walk stacks (:meth:`_scratch`) with their ``ret`` set to start a
        resumable walk (every walk kernel's first phase)."""
        sc = self._scratch()
        sc.ret[:] = 0
        sc.ret[_walk.R_PHASE] = _walk.PH_START
        return sc

    def _root_walk(self):
        """:meth:`_walk_start`'s stacks, and the frames a shortcut at a mask's root may seed (the
        walk's own frames' room kept)."""
        sc = self._walk_start()
        return sc, sc.st_node.shape[0] - self._class_reserve

    def _keys_mask(self, state: int):
        """The bitset of a key position (``K_KEYS(C, p, d) rest``: an object's key set, read
        from its names), or ``None`` for another state or where its frames do not fit: the
        tries are walked jointly with the names' sorted range (:mod:`dotjson._kernels.keywalk`),
        and a state is made only where a token leaves the names (a whole name and its closing
        quote, an escape). Walked as any state, each trie node spelt with a prefix of a name was
        a state of its own, new at every key position (~90 at a key of a 30-member object in
        any order, ~0.7 ms on Llama 3). Call with the lock held."""
        sc, room = self._root_walk()
        n = sc.st_node.shape[0]
        kst = getattr(sc, "kst", None)  # (the thread's, as its other stacks: every index's)
        if kst is None or kst.shape[0] < _keywalk.KF * n:
            kst = sc.kst = np.empty(_keywalk.KF * n, dtype=np.int32)
        a = self._auto
        out = np.zeros(self._n_words, dtype=np.uint32)
        PW = self._walk_packed()
        ask = self._ask
        while True:
            v = _entries.keys_mask_packed(a.packed_store, state, PW, sc.packed, kst, n, room,
                                          self._special_mode, _WIDE_NODE, out, ask)
            if v == _walk.DONE:
                break
            if v == _keywalk.ASK:  # a node's names wait for these members' completion
                T = int(ask[0])
                for m in ask[2: 2 + int(ask[1])].tolist():
                    a._key_alive(T, m)
                continue
            if v != _walk.EXIT:
                return None  # (NOT_KEYS: a rule of another body, ...; NO_ROOM)
            a.handle_exit()
        if a.accepting[state]:
            self.set_eos(out)
        return out

    def _class_mask(self, state: int, h: int | None = None, kind: int | None = None):
        """The bitset of a counted-class state (:func:`~dotjson.automaton.states.class_run`:
        ``C{lo,hi} rest``, no byte of the byte class ``C`` starting ``rest``), from the
        vocabulary's tables of ``C`` (:func:`dotjson.trie.class_tables`): its tokens all of
        ``C`` of at most ``hi`` bytes are one row of bitsets, and the others are walked from
        ``rest``'s state below the tries' edges that leave ``C`` after ``lo .. hi`` bytes
        (:func:`dotjson._kernels.walk.class_mask`). A state with an ``AND`` first (a string
        under a length bound, every character a new count) is read as a *chain* instead: its
        class is the ASCII bytes it takes to one state (:func:`~dotjson._kernels.walk.root_class`),
        and the exit edges of each depth are walked from the state after that many bytes of
        the class. ``None`` for any other state, for a class whose bytes part ways before the
        deepest trie node spelt with it, and for a class of fewer than :data:`CLASS_ROOT_MIN_TOKENS` such tokens
        (digits: its nodes are few, walked faster than the tables are read). A state inside a
        ``pattern`` such as ``^[0-9A-Za-z]{8}-…`` walked node by node visited every node of the
        plain trie spelt with the class to that depth (~1-2 ms a position on Llama 3). Call
        with the lock held."""
        a = self._auto
        S = a.store
        ti = S[_K.S_TI]
        if h is None:  # (the state's head, when the caller has not read it)
            t = S[_K.S_TERM_OF].item(state)
            h = ti.item(t, 1) if ti.item(t, 0) == _K.K_SEQ else t
            kind = ti.item(h, 0)
        if kind == _K.K_REP:
            item = ti.item(h, 1)
            if ti.item(item, 0) != _K.K_BYTES:
                return None  # (a string body's characters: an alternation of UTF-8 sequences)
            words = S[_K.S_BW][ti.item(item, 1)]
        elif kind == _K.K_AND:  # (a string under a length bound: a chain, if the class is wide)
            words = self._chain_words
            if a._run(_walk.root_class, state, words) <= 0:
                return None
        else:
            return None  # (most states: no kernel call)
        key = words.tobytes()
        got = self._classes.get(key)
        if got is None:
            tables = self._vocab._class_tables(self._plain, words.copy())
            got = self._classes[key] = (tables, np.empty(tables[4] + 1, dtype=np.int32))
        tables, chain = got
        if kind == _K.K_REP:
            chain = _NO_CHAIN
        c_row, c_bits, exits, n_tokens, _ = tables
        if n_tokens < CLASS_ROOT_MIN_TOKENS:
            return None
        (sp_ptr, sp_depth, sp_child), (pl_ptr, pl_depth, pl_child) = exits
        out = np.zeros(self._n_words, dtype=np.uint32)
        sc, room = self._root_walk()
        big, big_bits, runs, len_row, len_bits, nchars, tchars, below = self._walk_tables
        pseq, plen = self._plain.seqs
        special, plain = self._trie_arrays
        ret = sc.ret
        while True:
            v = _walk.class_mask(a.store, state, special, plain, sp_ptr, sp_depth, sp_child, pl_ptr,
                                 pl_depth, pl_child, c_row, c_bits, self._chain_words, chain, room,
                                 big, big_bits, runs,
                                 self._special_mode, pseq, plen, _WIDE_NODE, nchars, tchars,
                                 len_row, len_bits, below, out, sc.st_node, sc.st_state,
                                 sc.st_edge, ret)
            if v == _walk.DONE:
                break
            if v != _walk.EXIT:
                return None  # (NOT_CLASS, NO_ROOM)
            a.handle_exit()
        if a.accepting[state]:
            self.set_eos(out)
        return out

    def _special_bits(self, state: int, out: np.ndarray) -> None:
        """For a grammar holding special tokens (:func:`dotjson.embed.special_token`): clear the
        text tokens holding the byte 0xFF (no text holds it: only a marker), and set the special
        tokens whose marker ``state`` takes."""
        from .embed import special_marker_bytes

        ff_bits, specials = specials_of(self._vocab)
        out &= ~ff_bits
        a = self._auto
        if a.walk_bytes(state, b"\xff") < 0:
            return
        for t in specials:
            if t not in self._eos_set and a.walk_bytes(state, special_marker_bytes(t)) >= 0:
                out[t >> 5] |= np.uint32(1 << (t & 31))


_NO_CHAIN = np.zeros(0, dtype=np.int32)  # (a counted class: no chain of states)

#: ``Masker._class_mask`` takes a counted class of at least this many tokens all of its bytes;
#: a smaller class's few nodes are walked as fast as its tables are read (Llama 3, a position's
#: first mask: digits, 1,110 tokens, 31 us walked against 34; hexadecimal digits, 1,327 tokens,
#: 63-66 against 31; letters, 17,582 tokens, 0.8-1.2 ms against 30; a class path costs ~30 us)
CLASS_ROOT_MIN_TOKENS = 1200


#: ``Masker._head_mask`` computes the bits of a head that is not shared across indexes (one
#: naming the schema's own rules, a key set) for the state that meets it first; ``False``: such a
#: state is walked whole. Measured on MaskBench's sample with an object's states after a member
#: written in place (``ObjectRules.inline_states``), whose key starts split into two such heads:
#: computing them made the fresh steps 4.5% dearer, walking those states whole 9.5% cheaper
UNSHARED_HEADS = False


class MaskView(_AutomatonView):
    """What a rule family's ``token_mask`` may use of an index's masks (see
    :meth:`Masker._family_mask`): states of terms (:class:`~dotjson.automaton.item_walk.AutomatonView`),
    their memoized masks, byte walks, and the vocabulary's tokens. Call with the automaton's
    lock held (as ``token_mask`` is)."""

    def __init__(self, masker: Masker) -> None:
        # (weakly: the masker keeps its view, and a cycle through them left a dropped index, its
        # automaton and its compiler to the cycle collector: ~56,000 objects for one MaskBench
        # schema with uniqueItems, in the next full collection, inside some later mask)
        self._mref = weakref.ref(masker)
        self.n_words = masker._n_words
        self.max_token_len = masker._tries.max_len
        self.special_bits = ~masker._tries.plain_bits
        self.eos_token_ids = tuple(int(t) for t in masker._eos)
        self._only: dict = {}
        self._bytes: dict = {}
        self._caches: dict = {}

    @property
    def _m(self) -> Masker:
        m = self._mref()
        if m is None:
            raise ReferenceError("the index this mask view belongs to is gone")
        return m

    @property
    def _auto(self):
        return self._m._auto

    def cache_for(self, family) -> dict:
        """A dictionary ``family`` may keep what it computed for this index's masks in (a
        family may serve several indexes: their token ids and terms differ)."""
        return self._caches.setdefault(id(family), {})

    def walk_items(self, state: int, data: bytes) -> int:
        """The state after ``data`` from ``state`` (negative when it dies), the items of rule
        families it enters stepped by their families (:meth:`Masker.walk_items`): a family's
        state inside an item names a successor per byte, a body of ~100 rules each."""
        return self._m.walk_items(state, data) if data else state

    def set_eos(self, out: np.ndarray) -> None:
        """Set the EOS tokens' bits in ``out``."""
        self._m.set_eos(out)

    def mask(self, state: int) -> np.ndarray:
        """A copy of ``state``'s mask (memoized as any other)."""
        m = self._m
        return m._mask(m.row(state)).copy()

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of token ``token_id`` (remembered: the same few thousand are asked at every
        mask of a family's states)."""
        b = self._bytes.get(token_id)
        if b is None:
            if len(self._bytes) > 65536:
                self._bytes.clear()
            b = self._bytes[token_id] = self._m._vocab.token_bytes(int(token_id))
        return b

    def tokens_holding(self, bytes_: frozenset) -> np.ndarray:
        """The bitset of the tokens holding any byte of ``bytes_`` (:func:`tokens_holding`)."""
        return tokens_holding(self._m._vocab, bytes_)

    def tokens_within(self, bytes_: frozenset) -> np.ndarray:
        """The bitset of the tokens of at least one byte, every byte in ``bytes_``."""
        return tokens_within(self._m._vocab, bytes_)

    def plain_token_id(self, data: bytes) -> int:
        """The id of the plain token whose bytes are ``data`` (-1: none; of several, any)."""
        tr = self._m._tries.plain
        ptr, cb, cn = tr.child_ptr, tr.child_byte, tr.child_node
        node = 0
        for b in data:
            lo, hi = int(ptr[node]), int(ptr[node + 1])
            j = lo + int(np.searchsorted(cb[lo:hi], b))
            if j >= hi or cb[j] != b:
                return -1
            node = int(cn[j])
        lo, hi = int(tr.tok_ptr[node]), int(tr.tok_ptr[node + 1])
        return int(tr.tok_ids[lo]) if hi > lo else -1

    def only_bytes(self, t: int, allowed: frozenset, limit: int = 64) -> bool:
        """Whether every word of term ``t`` is made of bytes in ``allowed`` (explored over at
        most ``limit`` derivative terms; ``False`` past that)."""
        key = (t, allowed)
        hit = self._only.get(key)
        if hit is not None:
            return hit
        a = self._m._auto
        ok_mask = sum(1 << b for b in allowed)
        seen, todo, ok = {t}, [t], True
        while todo and ok:
            for m, nxt in a.row_derivs(todo.pop()):
                if m & ~ok_mask:
                    ok = False
                    break
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
                    if len(seen) > limit:
                        ok = False
                        break
        self._only[key] = ok
        return ok


_EOS_OF: dict = {}
_SPECIALS_OF: dict = {}
_HOLDING: dict = {}  # (vocabulary uid, byte set) -> bitset of the tokens holding one (MaskView.tokens_holding)


def bit_ids(bits: np.ndarray) -> np.ndarray:
    """The token ids set in the bitset ``bits`` (``uint32`` words, bit ``t & 31`` of word
    ``t >> 5``), ascending: the set words' bits only where few words are set (a family mask's
    few hundred candidates: ~40 µs against ~170 µs for unpacking a 128k-token row)."""
    nz = np.flatnonzero(bits)
    if nz.shape[0] * 4 > bits.shape[0]:
        return np.flatnonzero(np.unpackbits(bits.view(np.uint8), bitorder="little"))
    r, c = np.nonzero(np.unpackbits(bits[nz].view(np.uint8), bitorder="little").reshape(-1, 32))
    return nz[r] * 32 + c


def tokens_holding(vocabulary, bytes_: frozenset) -> np.ndarray:
    """The bitset (``uint32[(max_token_id + 31) // 32]``, read-only) of the tokens holding any
    byte of ``bytes_``: one pass over the vocabulary's packed bytes, once per process,
    vocabulary and byte set."""
    key = (vocabulary._uid, bytes_)
    hit = _HOLDING.get(key)
    if hit is None:
        # (a byte a blob byte, a byte a token: no int64 prefix sums over the blob, whose
        # temporaries were 8 bytes a vocabulary byte, ~11 ms and fresh pages inside a first mask)
        table = np.zeros(256, dtype=np.uint8)
        table[list(bytes_)] = 1
        blob, off = vocabulary._blob, vocabulary._offsets
        starts, ends = off[:-1], off[1:]
        has = np.zeros(starts.shape[0], dtype=bool)
        nonempty = ends > starts
        if blob.shape[0]:
            marks = table[blob]
            has[nonempty] = np.maximum.reduceat(marks, starts[nonempty]) > 0
        bits = np.zeros((has.shape[0] + 31) // 32 * 32, dtype=bool)
        bits[:has.shape[0]] = has
        hit = np.packbits(bits, bitorder="little").view(np.uint32)
        hit.flags.writeable = False
        if len(_HOLDING) > 32:
            _HOLDING.clear()
        _HOLDING[key] = hit
    return hit


def tokens_within(vocabulary, bytes_: frozenset) -> np.ndarray:
    """The bitset (read-only) of the tokens of at least one byte, all of them in ``bytes_``:
    once per process, vocabulary and byte set."""
    key = (vocabulary._uid, "within", bytes_)
    hit = _HOLDING.get(key)
    if hit is None:
        off = vocabulary._offsets
        n = off.shape[0] - 1
        nonempty = np.zeros((n + 31) // 32 * 32, dtype=bool)
        nonempty[:n] = off[1:] > off[:-1]
        outside = tokens_holding(vocabulary, frozenset(range(256)) - frozenset(bytes_))
        hit = np.packbits(nonempty, bitorder="little").view(np.uint32) & ~outside
        hit.flags.writeable = False
        if len(_HOLDING) > 32:
            _HOLDING.clear()
        _HOLDING[key] = hit
    return hit


def specials_of(vocabulary) -> tuple[np.ndarray, tuple[int, ...]]:
    """The bitset of the text tokens holding the byte 0xFF (read-only), and the special token
    ids, of a vocabulary (once per process and vocabulary)."""
    key = vocabulary.fingerprint
    hit = _SPECIALS_OF.get(key)
    if hit is None:
        hit = (tokens_holding(vocabulary, frozenset((0xFF,))), vocabulary.special_token_ids)
        if len(_SPECIALS_OF) < 16:
            _SPECIALS_OF[key] = hit
    return hit


def eos_of(eos_token_ids: tuple) -> tuple[np.ndarray, frozenset]:
    """The sorted EOS ids (a read-only array shared by the indexes of a vocabulary) and their
    set: made once per process and EOS tuple, not once per index."""
    key = tuple(eos_token_ids)
    hit = _EOS_OF.get(key)
    if hit is None:
        ids = sorted(set(int(t) for t in key))
        arr = np.asarray(ids, dtype=np.int64)
        arr.flags.writeable = False
        hit = (arr, frozenset(ids))
        if len(_EOS_OF) < 64:  # a handful of vocabularies per process
            _EOS_OF[key] = hit
    return hit
