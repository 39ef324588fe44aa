"""A lazily expanded byte automaton for a grammar in the IR (:mod:`dotjson.ir`).

States are *byte-level regular terms* with rule references, interned by structure (hash-consing)
in a store of flat arrays, and transitions are their Brzozowski derivatives, computed by Numba
kernels (:mod:`.kernels`) only when decoding first needs them.

Why derivatives:

- Exact by construction: the derivative of a term by a byte denotes exactly the suffixes that
  complete the text so far, so the mask ``{t : derivative(state, t) ≠ ∅}`` forbids nothing valid
  and allows nothing invalid.
- Lazy by construction: a state exists only once a derivative produced it; counted repetition
  ``R{m,M}`` derives to ``R' R{m-1,M-1}``, so a bound of 100000 costs nothing until the output
  reaches it.
- Recursion (``$ref`` cycles) is a rule reference ``REF r`` expanded one level per derivative;
  the pending continuations (``"]"``, ``"}"`` …) pile up in the term, which is the stack.
- Intersection and difference derive component-wise; their (rare) emptiness is checked by a
  bounded search.

Every state handed out is *live*: a term that cannot reach acceptance is the dead state, never a
state. The transition table ``trans`` (``int32[n_states, 256]``; ``-1`` not computed yet, ``-2``
dead) is what the trie walk reads; it expands missing transitions itself by calling the same
kernels (:func:`dotjson._kernels.walk.walk_trie`).

Module layout: :mod:`.kernels` (the store's constructors and algorithms, Numba), :mod:`.rules`
(rule analyses and IR → term compilation, Python), :mod:`.utf8` (code-point ranges as byte
ranges), and here the :class:`Automaton` that owns the arrays, grows them and holds the lock.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import ir
from .._weak import weak_method
from .._kernels.jit import Unit as _Unit
from .._config import BUDGETS, MAX_STORE_BYTES
from ..errors import GrammarError, LimitExceededError
from . import counters as _ctr
from . import memory as _mem
from .memory import _alloc, _pow2
from . import kernels as K
from . import keys as _keys
from . import keysets as _ks
from .rules import Rules
from .store import K_ALT, K_AND, K_BYTES, K_EMPTY, K_EPS, K_REF, K_REP, K_SEQ
from .utf8 import utf8_sequences

UNKNOWN = K.UNKNOWN
DEAD = K.DEAD
INF = K.INF



class _Image:
    """A term store in which shared rules (every one, with its id) and shared nodes are
    compiled, and no state exists yet: an automaton over a grammar holding them starts from a
    copy (~0.1 ms) instead of compiling them (the JSON base rules and the spellings of string
    characters take ~0.5 ms, for every schema).

    ``parent``: an image of the same rules, capacities and ``warm`` whose nodes are the first
    of ``nodes`` (the JSON layer's base image, where this one adds a schema's formats): this
    one starts from a copy of it and compiles only the nodes it adds."""

    def __init__(self, rules: dict, nodes: tuple, terms: int, states: int, warm: tuple = (),
                 parent: "_Image | None" = None):
        names = list(rules)
        a = Automaton.__new__(Automaton)
        a._init(ir.Grammar(dict(rules), names[0]), BUDGETS.max_states, BUDGETS.fuel)
        #: the image this one was copied from (kept alive: its nodes are this one's too)
        self.parent = parent
        if parent is not None:
            a._from_image(parent)
            a._kchar, a._kchar_image = dict(parent.kchar), {}
        else:
            a._new_store(terms, states)
        with a.lock:
            if parent is None:
                for name in names:
                    a.rules.rule_id(name)
                a.compile_rules()
            for node in nodes[len(parent.nodes) if parent is not None else 0:]:
                a.rules.compile_node(node)
                a.rules._is_reg(node)  # operands of And/Diff (a key other than the declared ones)
            free = {}
            for entry in warm:
                if type(entry) is ir.FreeText:  # (compiled in every image: a parent's term is this one's)
                    free[a.rules.compile_node(entry[0])] = (entry[1], entry[2])
            for entry in warm if parent is None else ():
                if type(entry) is ir.KeyChars:
                    spelling, syntax, chars = entry
                    syn = a._key_syntax(syntax)
                    for ch in chars:
                        a._key_char(spelling, syntax, syn, ch)
                elif entry[0] in a.rules.index:
                    a._warm_rows(*entry)
        assert int(a._a["ctl"][K.C_STATES]) == 0
        self.nodes = nodes
        self.owner = a  # keeps the nodes whose identities the memos hold alive
        self.arrays = {k: v.copy() for k, v in a._a.items()}
        self.rules = a.rules.snapshot()
        #: key sets' string syntax blocks and name characters read ahead (``ir.KeyChars``): pool
        #: offsets and terms of the image, the same in every automaton started from it
        self.ksyn, self.kchar = dict(a._ksyn), dict(a._kchar)
        #: ``ir.FreeText`` facts: the term of each free content -> the bytes that close and escape it
        self.free_terms = free
        #: terms below this id are the image's, the same in every automaton started from it
        self.n_terms = int(self.arrays["ctl"][K.C_TERMS])
        #: facts about the image's terms that every such automaton can reuse (keyed by whoever
        #: computes them: e.g. a plain run's reach into a vocabulary's special tokens)
        self.facts: dict = {}


_IMAGES: dict = {}
_IMAGES_LOCK = threading.Lock()


_IMAGE_OF_TUPLE: dict = {}


def _parent_of(key: tuple) -> "_Image | None":
    """The image a new one with ``key`` can start from (see :class:`_Image`): the one of the
    same rules, capacities and warm entries with the longest proper prefix of its nodes (the
    JSON layer's: the base rules' image, where a schema's formats make a new one)."""
    rules_key, node_ids, *rest = key
    best = None
    for (r, n, *o), img in _IMAGES.items():
        if r == rules_key and o == rest and 0 < len(n) < len(node_ids) and node_ids[: len(n)] == n \
                and (best is None or len(n) > len(best.nodes)):
            best = img
    return best


def base_image(rules, nodes: tuple, terms: int, states: int, warm: tuple = ()) -> _Image:
    """The store image of shared ``rules`` (a mapping, or a tuple of ``(name, body)`` pairs) and
    ``nodes`` (built on first use, once per process and capacity; keyed by the identity of the
    bodies and nodes, which the image keeps alive). Given the same tuples again (the JSON
    base rules of :func:`dotjson.jsonschema.jsonbase.json_base_items`), the image is found by their
    identity alone."""
    fast = isinstance(rules, tuple) and isinstance(nodes, tuple)
    if fast:
        hit = _IMAGE_OF_TUPLE.get((id(rules), id(nodes), terms, states, warm))
        if hit is not None and hit[0] is rules and hit[1] is nodes:
            return hit[2]
    items = rules if isinstance(rules, tuple) else tuple(rules.items())
    key = (tuple((k, id(v)) for k, v in items), tuple(map(id, nodes)), terms, states, warm)
    img = _IMAGES.get(key)
    if img is None:
        with _IMAGES_LOCK:
            img = _IMAGES.get(key)
            if img is None:
                img = _IMAGES[key] = _Image(dict(items), nodes, terms, states, warm, _parent_of(key))
    if fast and len(_IMAGE_OF_TUPLE) < 64:  # (the tuples are kept alive with the entry)
        _IMAGE_OF_TUPLE[(id(rules), id(nodes), terms, states, warm)] = (rules, nodes, img)
    return img


class EmptyLanguageError(GrammarError):
    """The grammar's start rule derives no document (raised when the automaton is built)."""


# the byte sets of a builder program without any (never written: the kernel only reads them)
_NO_WORDS = np.zeros((0, 4), dtype=np.uint64)
#: The states' tables (a row per state), grown together
_STATE_ARRAYS = ("term_of", "trans", "accepting", "plain_inv", "row_ready")


class Automaton:
    """Byte automaton of an IR grammar, expanded on demand.

    Parameters
    ----------
    grammar : dotjson.ir.Grammar
        The grammar; its start rule's language is the set of accepted documents.
    max_states : int
        Budget on the number of interned states; past it, :class:`LimitExceededError`.
    fuel : int
        Budget on the work of one emptiness search (``AND``/``DIFF`` terms): its derivative
        steps plus the terms it builds.

    Notes
    -----
    Every method that may build terms takes :attr:`lock`. Arrays are replaced whole when they
    grow, so a reader holding an old ``trans`` keeps valid memory (it merely sees ``-1`` for a
    transition filled since, and asks again).
    """

    def __init__(self, grammar: ir.Grammar, *, max_states: int = BUDGETS.max_states,
                 fuel: int = BUDGETS.fuel, max_store_bytes: int = BUDGETS.max_store_bytes):
        self._init(grammar, max_states, fuel, max_store_bytes)
        image = self._image_for(grammar)
        #: the base image this automaton started from (None: a store of its own, or loaded)
        self.image = image
        if image is None:
            self._new_store()
        else:
            self._from_image(image)
        self.rules.check()
        self.start_term = self.rules.ref(grammar.start)
        if self.is_empty(self.start_term):
            raise EmptyLanguageError("the grammar's language is empty: no document can satisfy it")
        self.start = self.state(self.start_term)

    def _init(self, grammar, max_states, fuel, max_store_bytes=None):
        self.grammar = grammar
        self.image = None  # (set by __init__ when it starts from a base image)
        self.max_states = int(max_states)
        self.fuel = int(fuel)
        self.max_store_bytes = MAX_STORE_BYTES if max_store_bytes is None else int(max_store_bytes)
        self.lock = threading.RLock()
        # (callbacks that hold this automaton weakly: no cycle, see dotjson._weak)
        self.rules = Rules(grammar, weak_method(self._build), weak_method(self.is_empty),
                           weak_method(self._set_body), weak_method(self._add_rule),
                           weak_method(self._keys_body))
        self._ret = np.zeros(4, dtype=np.int64)
        # key sets (see keysets): pool offset of each table, by its Python object and
        # back (their contexts are interned by the kernels, in the memo)
        self._ktab: dict[int, int] = {}
        self._kpy: dict[int, object] = {}
        self._knames: dict[tuple, tuple] = {}  # (id(trie), syntax) -> pool offsets of its names' arrays
        self._ksyn: dict = {}  # string syntax record -> pool offset of its block (keysets.SY_*)
        # (spelling policy, syntax block, character) -> (its escape after "\\u", its short escape,
        # raw or not):
        # the same for every key trie of the automaton (a wide schema has one trie per object)
        self._kchar: dict[tuple, tuple] = {}
        self._kchar_image: dict = {}  # ... read ahead by the base image (ir.KeyChars)

    # ------------------------------------------------------------------ the store

    # Initial capacities: the shared rules (~850 terms) and a typical schema's first mask
    # (~1,000 terms, 30-100 states, a few hundred memo entries) fit; a document grows them by
    # doubling (an exit to Python that copies the arrays). Every index starts with a copy of the
    # store (~0.2 MB): copying four times that cost ~60 µs of each index's time to first mask.
    # Tests shrink them to exercise growth in the middle of every kernel.
    INITIAL_TERMS = 2048
    INITIAL_STATES = 64
    # A store that outgrows them is past a first mask: its first growth goes straight to these
    # (a document's walk reaches ~1,000 states; doubling from 64 was four growths of ~150 µs
    # each, a term table's rehash ~370 µs), so a small schema's copy stays small (time to first
    # mask) and a large one skips the early doublings (fresh masks -3%, MaskBench probe). The
    # derivative memo follows the terms, the row classes the states (8 a state).
    GROWN_TERMS = 8192
    GROWN_STATES = 512

    def _new_store(self, terms=None, states=None):
        terms = self.INITIAL_TERMS if terms is None else terms
        states = self.INITIAL_STATES if states is None else states
        n_rules = len(self.rules.names)
        self._a = a = {}
        a["ti"] = np.zeros((terms, 4), dtype=np.int32)
        a["tf"] = np.zeros(terms, dtype=np.uint8)
        a["tm"] = np.full((terms, K.N_TM), -1, dtype=np.int32)
        a["bw"] = np.zeros((max(64, terms // 4), 4), dtype=np.uint64)
        a["pool"] = np.zeros(max(256, terms), dtype=np.int32)
        a["ht"] = np.full(_pow2(2 * terms), -1, dtype=np.int32)
        a["mk"] = np.full(_pow2(terms), -1, dtype=np.int64)
        a["mv"] = np.zeros(a["mk"].shape[0], dtype=np.int32)
        a["rcw"] = np.zeros((max(256, terms // 4), 4), dtype=np.uint64)
        a["rct"] = np.zeros(a["rcw"].shape[0], dtype=np.int32)
        a["rule_body"] = np.full(n_rules, -1, dtype=np.int32)
        self._new_states(states)
        a["ctl"] = ctl = np.zeros(K.N_CTL, dtype=np.int64)
        ctl[K.C_MAX_STATES] = self.max_states
        ctl[K.C_FUEL] = self.fuel
        self._publish()
        # ∅ and ε first, with their (empty) rows known
        e = K.mk_simple(self._S, K_EMPTY, 0, 0, 0, 0)
        p = K.mk_simple(self._S, K_EPS, 0, 0, 0, K.F_NULL)
        assert (e, p) == (K.EMPTY, K.EPS)
        a["tm"][: 2, K.M_ROW_OFF] = 0
        a["tm"][: 2, K.M_ROW_LEN] = 0

    def _image_for(self, grammar) -> "_Image | None":
        """The precompiled store of the grammar's shared rules and nodes, when it has some and
        its rules really are those (same body objects)."""
        if not grammar.shared:
            return None
        shared, nodes, *rest = grammar.shared
        src = grammar.rules
        for name, body in (shared if isinstance(shared, tuple) else shared.items()):
            if src.get(name) is not body:
                return None
        return base_image(shared, nodes, self.INITIAL_TERMS, self.INITIAL_STATES, rest[0] if rest else ())

    def _from_image(self, image: "_Image") -> None:
        arrays = image.arrays
        self._a = a = {k: v.copy() for k, v in arrays.items() if k not in _STATE_ARRAYS}
        # The states' tables start at their grown size (GROWN_STATES rows of NumPy's memory,
        # a row written only when its state is made, kernels.state). Grown from the image's 64
        # rows inside a mask, they cost an exit to Python and a copy into a fresh reservation
        # (~145 us): most first masks of a real schema, and every document, pass 64 states (48
        # growths over the serving benchmark's 32 schemas). Past these rows they move into
        # reserved address space as before (_grow).
        n = int(arrays["ctl"][K.C_STATES])
        cap = max(arrays["trans"].shape[0], self.GROWN_STATES)
        for name in _STATE_ARRAYS:
            x = arrays[name]
            a[name] = y = np.empty((cap,) + x.shape[1:], dtype=x.dtype)
            y[:n] = x[:n]
        a["ctl"][K.C_MAX_STATES] = self.max_states
        a["ctl"][K.C_FUEL] = self.fuel
        self._publish()
        self.rules.start_from(image.rules)
        self._ksyn = dict(image.ksyn)  # (a few entries; the characters are read through)
        self._kchar_image = image.kchar

    def _new_states(self, cap):
        a = self._a
        a["term_of"] = np.full(cap, -1, dtype=np.int32)
        a["trans"] = np.full((cap, 256), UNKNOWN, dtype=np.int32)
        a["accepting"] = np.zeros(cap, dtype=np.bool_)
        a["plain_inv"] = np.full(cap, -1, dtype=np.int8)
        a["row_ready"] = np.zeros(cap, dtype=np.bool_)

    def _publish(self):
        a = self._a
        self._S = (a["ti"], a["tf"], a["tm"], a["bw"], a["pool"], a["ht"], a["mk"], a["mv"],
                   a["rcw"], a["rct"], a["rule_body"], a["term_of"], a["trans"], a["accepting"],
                   a["plain_inv"], a["row_ready"], a["ctl"])
        # the same, packed (K.pack: the twin units' form, one array to unbox, not 17); it holds
        # no reference: a caller passes it while holding the store (self._a keeps it)
        self._P = K.packed(K.pack_store, self._S)

    #: An array that grows moves once into address space reserved for this many times its
    #: rows (the states' tables: for :attr:`max_states`, which they can never pass), and grows
    #: in place from then on (:func:`dotjson.automaton.memory.grown`)
    RESERVE_AHEAD = 64

    def _grown(self, arr, cap, fill, used=None, ahead=None):
        """``arr`` with ``cap`` rows (:func:`dotjson.automaton.memory.grown`)."""
        return _mem.grown(arr, cap, fill, used, self.RESERVE_AHEAD * cap if ahead is None else ahead)

    @property
    def store_bytes(self) -> int:
        """Bytes the store's arrays hold now (terms, states, tables, memo)."""
        return sum(x.nbytes for x in self._a.values())

    def _budget(self, grown: dict) -> None:
        """Refuse a growth that would take the store past ``max_store_bytes``, before any
        allocation; ``grown`` maps array names to their new row counts."""
        a = self._a
        extra = 0
        for name, rows in grown.items():
            x = a[name]
            extra += (rows - x.shape[0]) * (x.nbytes // max(1, x.shape[0]))
        total = self.store_bytes + extra
        if total > self.max_store_bytes:
            raise LimitExceededError(
                f"the automaton's store would grow to {total >> 20} MiB ({self.n_states} states, "
                f"{self.n_terms} terms), past its budget of {self.max_store_bytes >> 20} MiB "
                "(Index option max_store_bytes)"
            )

    def _grow(self, status: int, arg: int) -> None:
        a = self._a
        if status == K.NEED_GROW_TERMS:
            cap = max(2 * a["ti"].shape[0], self.GROWN_TERMS)
            if cap > (1 << K.TERM_ID_BITS):
                raise LimitExceededError(
                    f"the term store reached its limit of {1 << K.TERM_ID_BITS} terms"
                )
            self._budget({"ti": cap, "tf": cap, "tm": cap, "ht": _pow2(2 * cap)})
            n = int(a["ctl"][K.C_TERMS])  # (a new term's row is written by terms._new_term)
            for name in ("ti", "tf", "tm"):
                a[name] = self._grown(a[name], cap, None, n)
            ht = _alloc(_pow2(2 * cap), np.int32, -1)
            K.rehash_stored(a["tm"], n, ht)
            a["ht"] = ht
        elif status == K.NEED_GROW_BSETS:
            self._budget({"bw": 2 * a["bw"].shape[0]})
            a["bw"] = self._grown(a["bw"], 2 * a["bw"].shape[0], 0)
        elif status == K.NEED_GROW_POOL:
            self._budget({"pool": 2 * a["pool"].shape[0] + arg})
            a["pool"] = self._grown(a["pool"], 2 * a["pool"].shape[0] + arg, 0)
        elif status == K.NEED_GROW_RC:
            cap = max(2 * a["rct"].shape[0] + arg, self.GROWN_STATES * 8)
            self._budget({"rcw": cap, "rct": cap})
            a["rcw"] = self._grown(a["rcw"], cap, 0)
            a["rct"] = self._grown(a["rct"], cap, 0)
        elif status == K.NEED_GROW_MEMO:
            cap = max(2 * a["mk"].shape[0], _pow2(self.GROWN_TERMS))
            self._budget({"mk": cap, "mv": cap})
            mk = _alloc(cap, np.int64, -1)
            mv = _alloc(cap, np.int32)
            K.rehash_memo(a["mk"], a["mv"], mk, mv)
            a["mk"], a["mv"] = mk, mv
        elif status == K.NEED_GROW_STATES:
            cap = max(2 * a["trans"].shape[0], self.GROWN_STATES)
            self._budget({k: cap for k in _STATE_ARRAYS})
            # (rows past the states are written by kernels.state when it makes a state)
            n = int(a["ctl"][K.C_STATES])
            for name in _STATE_ARRAYS:
                a[name] = self._grown(a[name], cap, None, n, self.max_states + 1)
        else:  # pragma: no cover - a kernel bug
            raise AssertionError(f"unknown kernel exit {status}")
        # Publish whole arrays: a kernel or reader on the old ones keeps valid memory.
        self._publish()

    def handle_exit(self) -> None:
        """Act on the exit a kernel just reported (call with :attr:`lock` held): grow an array,
        compile a rule body, or raise for a spent budget."""
        ctl = self._a["ctl"]
        status, arg = int(ctl[K.C_STATUS]), int(ctl[K.C_ARG])
        ctl[K.C_STATUS] = 0
        if status == K.NEED_RULE:
            if self._a["rule_body"][arg] < 0:
                self.rules.body_closure(arg)
        elif status == K.NEED_KEY_ALIVE:
            self._key_alive(arg, int(ctl[K.C_ARG2]))
        elif status == K.NEED_KEY_TAIL:
            self._key_tail(arg, int(ctl[K.C_ARG2]))
        elif status == K.LIMIT_STATES:
            raise LimitExceededError(
                f"the automaton reached its budget of {self.max_states} states "
                "(Index option max_states)"
            )
        elif status == K.LIMIT_FUEL:
            raise LimitExceededError(
                f"emptiness search exceeded its fuel ({self.fuel} derivative steps and terms "
                "built); "
                "raise `fuel` or simplify the pattern/length combination"
            )
        else:
            self._grow(status, arg)

    def _run(self, kernel, *args) -> int:
        """``kernel(store, *args)`` under the lock, repeated after each exit to Python until it
        answers; through the kernel's packed twin where it has one (:func:`K.pack`)."""
        twin = kernel.packed if type(kernel) is _Unit else None
        with self.lock:
            while True:
                r = kernel(self._S, *args) if twin is None else twin(self._P, *args)
                if r != K.FAIL:
                    return int(r)
                self.handle_exit()

    @property
    def store(self) -> tuple:
        """The store's arrays, in the order the kernels take them (current until next growth)."""
        return self._S

    @property
    def packed_store(self) -> np.ndarray:
        """:attr:`store` packed (:func:`K.pack`), for the kernels' twins: valid while the store
        is (until the next growth), and only while the automaton is alive."""
        return self._P

    def _build(self, prog, words, n_slots):
        p = np.asarray(prog, dtype=np.int64)
        w = np.asarray(words, dtype=np.uint64) if len(words) else _NO_WORDS
        slots = np.empty(max(1, n_slots), dtype=np.int32)
        slots.fill(-1)
        t = self._run(K.build, p, w, slots)
        return t, slots

    # ------------------------------------------------------------------ key sets

    def _pool_alloc(self, size: int) -> int:
        """``size`` entries at the end of the pool (grown when full); their offset."""
        a = self._a
        off = int(a["ctl"][K.C_POOL])
        if off + size > a["pool"].shape[0]:  # grown as when a kernel asks for the room
            self._grow(K.NEED_GROW_POOL, off + size - a["pool"].shape[0])
        a["ctl"][K.C_POOL] = off + size
        return off

    def _keys_body(self, spec) -> int:
        """The term of a key position built natively: ``spec = (keyset, lo, hi)``, a
        :class:`dotjson.jsonschema.key_trie.KeySet` and the members ``lo .. hi - 1`` it offers;
        or ``(keyset, lo, hi, left)``: the IR node ``left`` less that key set's language (any key
        but the names: a byte of the key narrows their sorted range, no rule per prefix). Called
        with :attr:`lock` held, for a rule the analysis found productive (so some offered member
        can complete and the term is not empty)."""
        keyset, lo, hi, *left = spec
        t = self._run(K.keys_root, self._key_table(keyset), lo, hi)
        if left:
            t = self.rules.diff_term(left[0], t)
        return t

    def _key_table(self, keyset) -> int:
        """The pool offset of ``keyset``'s table, written on first use (see ``keysets.KT_*``)."""
        T = self._ktab.get(id(keyset))
        if T is not None:
            return T
        syn = self._key_syntax(keyset.syntax)
        names = self._knames.get((id(keyset.trie), syn))
        if names is None:
            names = self._knames[(id(keyset.trie), syn)] = self._key_names(keyset, syn)
        n = keyset.trie.n
        # the header, then this key set's own arrays (which members complete, their tails) and
        # its full context; the names' arrays are the trie's, shared by its key sets
        T = self._pool_alloc(K.N_KT + 2 * n + 3)
        pool = self._a["pool"]
        o_alive, o_tail, full = T + K.N_KT, T + K.N_KT + n, T + K.N_KT + 2 * n
        if keyset.tail is None:  # every name ends the language: each member complete, tail ε
            pool[o_alive : o_alive + n] = 1
            pool[o_tail : o_tail + n] = K.EPS
        else:
            pool[o_alive : o_alive + n] = -1
            pool[o_tail : o_tail + n] = -1
            # the members the builder knows complete, asked once for all (its answer is one
            # cached array per object): no exit to Python per key position for them (645 over
            # the MaskBench sample's first documents, ~24 us each); a kernel asks only of the
            # others (``_key_alive``: the tail's productivity)
            sure = np.flatnonzero(np.asarray(keyset.alive_many(np.arange(n)), dtype=np.bool_))
            pool[o_alive + sure] = 1
        if len(keyset.excluded):
            pool[o_alive + keyset.excluded] = 0
        pool[full : full + 3] = (T, 0, n)
        o_start, o_blob, o_member, o_cp, ncp, o_esc, o_raw, o_short = names
        pool[T : T + K.N_KT] = (n, o_start, o_blob, o_member, o_alive, o_tail, o_cp, ncp, o_esc, o_raw, full,
                                o_short, syn)
        self._ktab[id(keyset)] = T
        self._kpy[T] = keyset
        return T

    def _key_syntax(self, syntax) -> int:
        """The pool offset of the block of string syntax ``syntax`` (the JSON layer's record,
        :class:`dotjson.jsonschema.jsonstr.StringSyntax`), written once per automaton and syntax,
        checked as a loaded one is."""
        Y = self._ksyn.get(syntax)
        if Y is None:
            block = _ks.syntax_block(syntax)
            problem = _ks.syntax_problem(block, ir.MAX_CODEPOINT)
            if problem:
                raise GrammarError(f"key set string syntax {syntax!r}: {problem}")
            Y = self._ksyn[syntax] = self._pool_alloc(len(block))
            self._a["pool"][Y : Y + len(block)] = block
        return Y

    def _key_names(self, keyset, syn: int) -> tuple:
        """The pool offsets of a key trie's names (UTF-8, sorted), members, characters and their
        escapes under the syntax block at ``syn``, written once per trie and syntax (see
        ``keysets.KT_*``)."""
        keys = keyset.trie.keys
        n = len(keys)
        joined = "".join(keys)
        if joined.isascii():
            blob = np.frombuffer(joined.encode(), dtype=np.uint8)
            lens = np.fromiter(map(len, keys), dtype=np.int64, count=n)
            # the characters: a count of the bytes (not a set of 50,000 characters); a set for
            # the few names of most objects (NumPy's calls cost more there)
            chars = sorted(set(joined)) if len(joined) < 512 else \
                [chr(c) for c in np.flatnonzero(np.bincount(blob, minlength=128))]
        else:
            enc = [k.encode("utf-8") for k in keys]
            blob = np.frombuffer(b"".join(enc), dtype=np.uint8)
            lens = np.fromiter(map(len, enc), dtype=np.int64, count=n)
            chars = sorted(set(joined))
        esc, short, raw = [], [], []
        for ch in chars:
            e, sh, r = self._key_char(keyset.spelling_key, keyset.syntax, syn, ch)
            esc.append(e)
            short.append(sh)
            raw.append(r)
        ncp = len(chars)
        parts = [np.zeros(n + 1, dtype=np.int32), blob, keyset.trie.member,
                 np.fromiter(map(ord, chars), dtype=np.int64, count=ncp), np.asarray(esc, dtype=np.int64),
                 np.asarray(raw, dtype=np.int64), np.asarray(short, dtype=np.int64)]
        np.cumsum(lens, out=parts[0][1:])
        at = self._pool_alloc(sum(len(x) for x in parts))
        offs = []
        pool = self._a["pool"]
        for x in parts:
            offs.append(at)
            pool[at : at + len(x)] = x
            at += len(x)
        o_start, o_blob, o_member, o_cp, o_esc, o_raw, o_short = offs
        return o_start, o_blob, o_member, o_cp, ncp, o_esc, o_raw, o_short

    def _key_char(self, spelling, syntax, syn: int, ch: str) -> tuple:
        """``(escape, short, raw)`` of name character ``ch`` under spelling policy ``spelling``
        (a key set's ``spelling_key``: ``spelling(ch)`` is the character's spellings) and string
        syntax ``syntax``, whose block is at ``syn``: the term after its hex escape's byte
        (``\\u``), its one-byte short escape or -1, and 1 if its UTF-8 bytes may be written raw.
        Memoized per policy, syntax and character: an object's key trie asks for each character
        of its names, and a schema with many objects has many tries; the base image reads the
        characters its grammar names (``ir.KeyChars``) once per process."""
        key = (spelling, syn, ch)
        hit = self._kchar.get(key)
        if hit is not None:
            return hit
        hit = self._kchar_image.get(key)
        if hit is not None:
            return hit
        pool = self._a["pool"]
        escape, hex_escape = int(pool[syn + _ks.SY_ESCAPE]), int(pool[syn + _ks.SY_HEX])
        t = self.rules.compile_node(spelling(ch))
        after = self.deriv(t, escape)  # its escapes, after the escape byte: hex_escape + hex digits
        esc = self.deriv(after, hex_escape)
        # ... or one byte (the syntax's short escapes), where the spelling policy offers it
        # (JSON's canonical one has no \/)
        sh = dict(syntax.short).get(ord(ch), -1)
        if sh >= 0:
            r = self.deriv(after, sh)
            if r == K.EMPTY:
                sh = -1
            elif r != K.EPS:
                raise GrammarError(f"key character {ch!r} has a short escape that does not end it")
        hit = self._kchar[key] = (int(esc), sh, int(self.deriv(t, ch.encode("utf-8")[0]) != K.EMPTY))
        return hit

    def _keyset_of(self, T: int):
        keyset = self._kpy.get(T)
        if keyset is None:  # a loaded store's tables are complete: no kernel asks
            raise GrammarError(f"the key set at {T} of a loaded index is incomplete")
        return keyset

    def _key_alive(self, T: int, m: int) -> None:
        """Settle whether member ``m`` of key set ``T`` can complete (a kernel asked: one its
        builder could not vouch for when the table was written), by its tail's productivity."""
        keyset = self._keyset_of(T)
        o = int(self._a["pool"][T + K.KT_ALIVE])
        if self._a["pool"][o + m] < 0:
            v = 1 if self.rules.productive(keyset.tail(m)) else 0  # may grow the pool
            self._a["pool"][o + m] = v

    def _key_tail(self, T: int, m: int) -> None:
        """The term of what follows member ``m``'s name in key set ``T`` (a kernel asked)."""
        keyset = self._keyset_of(T)
        alts = getattr(keyset, "tail_alts", None)  # (a KeySet; duck-typed key sets may lack it)
        if alts is not None:  # written in place: no rule (may grow the pool)
            t = self.rules.written_term(alts(m))
        else:
            t = self.rules.tail_term(keyset.tail(m))  # may grow the pool
        pool = self._a["pool"]
        pool[int(pool[T + K.KT_TAIL]) + m] = t
        if t == K.EMPTY:
            pool[int(pool[T + K.KT_ALIVE]) + m] = 0

    def _complete_keys(self) -> None:
        """Settle every member of every key set (before saving: a loaded store has no builder
        to ask)."""
        for T in list(self._kpy):
            pool = self._a["pool"]
            n = int(pool[T + K.KT_N])
            for m in range(n):
                pool = self._a["pool"]
                if pool[int(pool[T + K.KT_ALIVE]) + m] < 0:
                    self._key_alive(T, m)
                pool = self._a["pool"]
                if pool[int(pool[T + K.KT_ALIVE]) + m] == 1 and pool[int(pool[T + K.KT_TAIL]) + m] < 0:
                    self._key_tail(T, m)

    def _set_body(self, i: int, t: int) -> None:
        self._a["rule_body"][i] = t

    def _add_rule(self, n_rules: int) -> None:
        """Room for ``n_rules`` rule ids (a rule family's rule registered on demand); called with
        :attr:`lock` held, before any term refers to the new id."""
        a = self._a
        if a["rule_body"].shape[0] < n_rules:
            a["rule_body"] = self._grown(a["rule_body"], _pow2(n_rules), -1, None, 0)
            self._publish()

    # ------------------------------------------------------------------ persistence

    @classmethod
    def from_arrays(cls, grammar: ir.Grammar, meta: dict, arrays: dict) -> "Automaton":
        """Rebuild an automaton from :func:`~dotjson.automaton.persist.export_state`'s output;
        validates what it reads (:func:`dotjson.automaton.persist.load`).

        Raises
        ------
        ValueError
            An id, a shape or a flag is out of range or inconsistent.
        """
        from .persist import load

        return load(cls, grammar, meta, arrays)

    # ------------------------------------------------------------------ terms

    @property
    def EMPTY(self) -> int:
        return K.EMPTY

    @property
    def EPS(self) -> int:
        return K.EPS

    @property
    def n_terms(self) -> int:
        """Terms interned so far."""
        return int(self._a["ctl"][K.C_TERMS])

    def _warm_rows(self, name: str, data: bytes) -> None:
        """The derivative classes of rule ``name``, and of each of its derivatives by the bytes
        of ``data``, closed (a base image's ``warm`` entry: for JSON, the whitespace between
        tokens and its blanks and line breaks; every document starts with it, so the first mask
        of every index walks its ~40 states first, and these parts of their rows are the same
        for every schema, computed once in the image)."""
        ws = self.rules.ref(name)
        todo, seen = [ws], {ws}
        while todo:
            t = todo.pop()
            self._run(K.row, t)
            for byte in data:
                u = self._run(K.deriv, t, byte)
                if u != K.EMPTY and u not in seen:
                    seen.add(u)
                    todo.append(u)

    def compile_rules(self, known_only: bool = False) -> None:
        """Compile the body of every rule reached so far now (otherwise each is compiled on first
        use; rules met while compiling are compiled too, unless ``known_only``).

        ``known_only``: only the rules named when called. A schema's grammar may name rules
        without end, one made when a walk first needs it (``uniqueItems`` over strings: a rule
        per prefix of the items so far), which compiling "every rule met" would chase until the
        store's budget runs out (``LimitExceededError``); the profilers pass it."""
        with self.lock:
            i, n = 0, len(self.rules.names)
            while i < (n if known_only else len(self.rules.names)):
                if self._a["rule_body"][i] < 0:
                    self.rules.body(i)
                i += 1

    def nullable(self, t: int) -> bool:
        return bool(self._a["tf"][t] & K.F_NULL)

    def ref_term(self, name: str) -> int:
        with self.lock:
            return self.rules.ref(name)

    def deriv(self, t: int, byte: int) -> int:
        """The derivative of term ``t`` by one byte (∅ when ``t`` cannot consume it)."""
        return self._run(K.deriv, t, byte)

    def row_derivs(self, t: int) -> tuple:
        """All derivatives of ``t``: ``((mask, term), ...)``, disjoint byte masks (Python ints)
        with distinct non-empty successor terms."""
        with self.lock:
            self._run(K.row, t)
            a = self._a
            off, n = int(a["tm"][t, K.M_ROW_OFF]), int(a["tm"][t, K.M_ROW_LEN])
            out = []
            for i in range(off, off + n):
                m = 0
                for w in range(4):
                    m |= int(a["rcw"][i, w]) << (64 * w)
                out.append((m, int(a["rct"][i])))
            return tuple(out)

    def is_empty(self, t: int) -> bool:
        """True when ``t`` denotes ∅ (exact; a bounded search for AND/DIFF terms)."""
        return bool(self._run(K.is_empty, t))

    def clamp(self, t: int, limit: int) -> int:
        """A term with the same one-token behaviour as ``t`` for tokens of at most ``limit - 1``
        bytes: counters far from their bounds become unbounded, so the states of a long counted
        repetition share one memoized mask. AND/DIFF sub-terms stay exact."""
        if not 0 < limit < 65536:
            raise ValueError(f"clamp limit {limit} out of range (1..65535)")
        return self._run(K.clamp, t, limit)

    # ------------------------------------------------------------------ counter-carrying states

    def marker_min(self, t: int) -> int:
        """The smallest nearest bound of the marker repetitions of ``t`` (see
        :mod:`.counters`), or :data:`.counters.NONE` when ``t`` holds none."""
        return self._run(_ctr.marker_min, t)

    def shift_markers(self, t: int, d: int) -> int:
        """``t`` with ``d`` added to its marker repetitions' bounds (see :mod:`.counters`)."""
        return self._run(_ctr.shift_markers, t, d)

    def make_shape(self, t: int, far: int) -> tuple[int, int] | None:
        """``(shape, offset)`` of a term whose sequence starts with a counter at least ``far``
        from its bounds, or None (see :mod:`.counters`). ``t`` must hold no marker."""
        out = np.zeros(1, dtype=np.int64)
        r = self._run(_ctr.make_shape, t, far, out)
        return None if r == -2 else (r, int(out[0]))

    # ------------------------------------------------------------------ states

    def state(self, t: int) -> int:
        """The state id of live term ``t`` (interned)."""
        s = int(self._a["tm"][t, K.M_STATE])
        if s >= 0:
            return s
        return self._run(K.state, t)

    def key_state(self, s: int, limit: int) -> int:
        """The state of the mask key of state ``s``: its term clamped, then truncated where no
        token reaches (:mod:`.keys`)."""
        if not 0 < limit < 65536:
            raise ValueError(f"clamp limit {limit} out of range (1..65535)")
        return self._run(_keys.key_state, s, limit)

    @property
    def n_states(self) -> int:
        return int(self._a["ctl"][K.C_STATES])

    @property
    def n_expanded(self) -> int:
        """Rows filled so far (whole-row expansions of states)."""
        return int(self._a["ctl"][K.C_EXPANDED])

    @property
    def trans(self) -> np.ndarray:
        return self._a["trans"]

    @property
    def accepting(self) -> np.ndarray:
        return self._a["accepting"]

    @property
    def plain_inv(self) -> np.ndarray:
        return self._a["plain_inv"]

    @property
    def row_ready(self) -> np.ndarray:
        return self._a["row_ready"]

    def term_of(self, s: int) -> int:
        return int(self._a["term_of"][s])

    def fill_row(self, s: int) -> None:
        """Compute every byte transition of state ``s``."""
        if not self._a["row_ready"][s]:
            self._run(K.fill_row, s)

    def fill_rows(self, states) -> None:
        """:meth:`fill_row` for many states in one kernel call."""
        self._run(K.fill_rows, np.asarray(states, dtype=np.int32))

    def fill_entry(self, s: int, byte: int) -> int:
        """Compute the one transition of state ``s`` on ``byte``."""
        return self._run(K.fill_entry, s, byte)

    def step(self, s: int, byte: int) -> int:
        """Successor of state ``s`` on ``byte``, or ``DEAD``."""
        r = int(self._a["trans"][s, byte])
        if r == UNKNOWN:
            r = self.fill_entry(s, byte)
        return r

    def _follow(self, s: int, data: bytes) -> tuple:
        """``(state, i)``: the state after the first ``i`` bytes of ``data`` from state ``s`` by the
        transitions known so far, ``i`` the first byte without one (``len(data)``: all known);
        ``(DEAD, i)`` where a known one is dead."""
        trans = self._a["trans"]
        for i, b in enumerate(data):
            r = int(trans[s, b])
            if r == UNKNOWN:
                return s, i
            if r < 0:
                return DEAD, i
            s = r
        return s, len(data)

    def walk_bytes(self, s: int, data: bytes) -> int:
        """The state after ``data`` from state ``s``, or ``DEAD``."""
        s, i = self._follow(s, data)
        if s < 0 or i == len(data):
            return s
        buf = np.frombuffer(bytearray(data[i:]), dtype=np.uint8)  # (writable: the unit's declared type)
        with self.lock:
            while True:
                r = int(K.walk_bytes_packed(self._P, s, buf, self._ret))
                if r != K.FAIL:
                    return r
                s = int(self._ret[1])
                buf = buf[int(self._ret[0]) :]
                self.handle_exit()

    def walk_token(self, s: int, data: bytes) -> int:
        """The state after ``data`` (a token's bytes) from state ``s``, or ``DEAD``: the
        transitions known so far (a mask's walk made them), then, from the first one not known,
        derivatives with a state only at the end (:meth:`walk_text`). A token stepped for the
        document (``Index.next_state``) needs no state inside it: a mask is asked only between
        tokens, and a state per byte costs its transition row and a slot of the state budget
        (a plain token inside a string made one per byte: ~2.5% of a fresh step on the
        MaskBench sample)."""
        s, i = self._follow(s, data)
        if s < 0 or i == len(data):
            return s
        return self.walk_text(s, data[i:])

    def walk_text(self, s: int, data: bytes) -> int:
        """The state after ``data`` from state ``s``, or ``DEAD``, like :meth:`walk_bytes` but
        making a state only at the end (the terms between are derivatives, memoized): for texts
        walked once (checking a document), where a state per byte would cost its transition row
        (~1 KB) and a 1 MB property name would exhaust ``max_states``."""
        if not data:
            return s
        buf = np.frombuffer(bytearray(data), dtype=np.uint8)  # (writable: the unit's declared type)
        t = self.term_of(s)
        with self.lock:
            while True:
                r = int(K.walk_terms_packed(self._P, t, buf, self._ret))
                if r != K.FAIL:
                    return r
                t = int(self._ret[1])
                buf = buf[int(self._ret[0]) :]
                self.handle_exit()

    def matches(self, data: bytes) -> bool:
        """True when ``data`` is a complete document of the grammar."""
        s = self.walk_bytes(self.start, data)
        return s >= 0 and bool(self.accepting[s])

    def is_prefix(self, data: bytes) -> bool:
        """True when ``data`` can still be completed into a document."""
        return self.walk_bytes(self.start, data) >= 0

    def compute_plain_inv(self, s: int, plain_seqs) -> bool:
        """Is state ``s`` unchanged by every plain JSON string character?

        ``plain_seqs`` are the UTF-8 byte-range sequences of the plain characters (a list of
        lists of ``(lo, hi)``, or the array pair of :func:`plain_seq_arrays`).
        """
        v = int(self._a["plain_inv"][s])
        if v >= 0:
            return v == 1
        pseq, plen = plain_seqs if isinstance(plain_seqs, tuple) else plain_seq_arrays(plain_seqs)
        return bool(self._run(K.plain_inv, s, pseq, plen))

    # ------------------------------------------------------------------ debugging

    def describe(self, s: int, limit: int = 400) -> str:
        """A readable rendering of state ``s``'s term (for debugging)."""
        return self.show(self.term_of(s), limit)

    def show(self, t: int, limit: int = 400) -> str:
        """A readable rendering of term ``t``, cut at about ``limit`` characters."""
        a = self._a
        ti, pool, bw = a["ti"], a["pool"], a["bw"]
        out: list[str] = []
        size = 0
        stack: list = [t]
        while stack and size <= limit:
            x = stack.pop()
            if isinstance(x, str):
                out.append(x)
                size += len(x)
                continue
            k, p, q, r = (int(v) for v in ti[x])
            if k == K_EMPTY:
                piece = "∅"
            elif k == K_EPS:
                piece = "ε"
            elif k == K_BYTES:
                m = sum(int(bw[p, w]) << (64 * w) for w in range(4))
                bs = [b for b in range(256) if (m >> b) & 1]
                piece = repr(bytes(bs[:1])) if len(bs) == 1 else f"[{len(bs)} bytes]"
            elif k == K_REF:
                piece = self.rules.names[p]
            elif k == K.K_KEYS:
                piece = f"keys[{p}:{q}:{r}]"
            else:
                if k == K_SEQ:
                    items, open_, sep, close = [p, q], "", " ", ""
                elif k in (K_ALT, K_AND):
                    items = [int(v) for v in pool[p : p + q]]
                    open_, sep, close = "(", " | " if k == K_ALT else " & ", ")"
                elif k == K_REP:
                    items, open_, sep = [p], "(", ""
                    close = f"){{{q},{'' if r == INF else r}}}"
                else:
                    items, open_, sep, close = [p, q], "(", " - ", ")"
                seq_ = [open_]
                for j, c in enumerate(items):
                    if j:
                        seq_.append(sep)
                    seq_.append(c)
                seq_.append(close)
                stack.extend(reversed(seq_))
                continue
            out.append(piece)
            size += len(piece)
        text = "".join(out)
        return text if len(text) <= limit and not stack else text[:limit] + "…"


def plain_seq_arrays(seqs) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 byte-range sequences as the ``(pseq, plen)`` arrays :func:`kernels.plain_inv` takes."""
    pseq = np.zeros((len(seqs), 4, 2), dtype=np.int32)
    plen = np.zeros(len(seqs), dtype=np.int32)
    for i, sq in enumerate(seqs):
        plen[i] = len(sq)
        for j, (lo, hi) in enumerate(sq):
            pseq[i, j] = (lo, hi)
    return pseq, plen


__all__ = ["Automaton", "DEAD", "UNKNOWN", "INF", "utf8_sequences", "plain_seq_arrays"]
