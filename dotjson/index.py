"""The Index: a grammar's lazily expanded automaton bound to one vocabulary, with memoized masks.

An :class:`Index` is immutable from the caller's point of view and shared by any number of
:class:`~dotjson.guide.Guide` cursors, in any number of threads. Building one translates the
schema and compiles the grammar's rules into terms; no work is proportional to the vocabulary or
to numeric bounds. A state's allowed-token bitset is computed the first time decoding reaches it
(a Numba trie walk) and memoized; so is every token transition.
"""

from __future__ import annotations

import operator
import threading
from typing import Any

import numpy as np

from . import ir
from ._kernels import walk as _walk
from .automaton import DEAD, Automaton, EmptyLanguageError, plain_seq_arrays, utf8_sequences
from .automaton import counters as _ctr
from .jsonschema import EMPTY_LANGUAGE, schema_to_grammar
from .vocabulary import Vocabulary
from .errors import (
    DotjsonIndexError,
    DotjsonTypeError,
    DotjsonValueError,
    GrammarError,
    LimitExceededError,
    SchemaError,
)

#: State of a row after EOS was sampled.
FINISHED = -3

#: Counter-carrying state ids (see :mod:`dotjson.automaton.counters`): ``_VIRT | (offset +
#: _C_BIAS) << 31 | shape``, the shape an automaton state, the offset what its marker counter's
#: bounds lack from the exact ones. Ordinary state ids are below ``2**31``.
_VIRT = 1 << 62
_C_BIAS = 1 << 30
_LOW31 = (1 << 31) - 1

#: Trie nodes branching on more bytes than this get a whole automaton row at once; narrower
#: ones only the transitions the walk asks for.
_WIDE_NODE = 2

_PLAIN_RANGES = [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF)]
_PLAIN_SEQS = plain_seq_arrays([sq for lo, hi in _PLAIN_RANGES for sq in utf8_sequences(lo, hi)])


_SCRATCH = threading.local()


def _thread_scratch(depth: int):
    """The calling thread's trie-walk stacks, shared by every index (~0.5 MB at 128k tokens):
    a thread computes one mask at a time, and a walk's exits to Python never start another."""
    sc = _SCRATCH
    if getattr(sc, "st_node", None) is None or sc.st_node.shape[0] < depth:
        sc.st_node = np.zeros(depth, dtype=np.int32)
        sc.st_state = np.zeros(depth, dtype=np.int32)
        sc.st_edge = np.zeros(depth, dtype=np.int32)
        sc.ret = np.zeros(4, dtype=np.int64)
    return sc


class Index:
    """A compiled grammar for one vocabulary.

    Parameters
    ----------
    schema : str, dict, bool or a Pydantic model class
        A JSON Schema, as JSON text or as a parsed value; or a Pydantic (v2) model class, whose
        ``model_json_schema()`` is used (see :meth:`from_pydantic`).
    vocabulary : dotjson.Vocabulary
        The tokenizer's vocabulary.
    disallow_whitespace : bool, default False
        True: compact JSON, no whitespace between tokens. False: a bounded amount of whitespace
        between syntax tokens (see ``docs/grammar.md``).
    close_objects : bool, default True
        A generation policy. ``True``: an object whose schema declares ``properties`` or
        ``patternProperties`` but says nothing about ``additionalProperties`` gets no extra keys
        (small models otherwise invent keys until the token budget ends; OpenAI's strict mode and
        XGrammar close such objects too). ``False`` follows the specification: extra keys allowed
        (the setting for teacher forcing, scoring and checking existing documents).
    lenient : bool, default False
        Downgrade unsupported keywords whose neglect still yields well-formed JSON to warnings.
    property_order : {"schema", "any"}, default "schema"
        ``"schema"``: declared properties in the schema's order (like every peer; authors use it,
        e.g. reasoning before answer). ``"any"``: every order, each property at most once, built
        lazily (only the property sets a document visits become states). With
        ``close_objects=False`` and ``whitespace="json"`` this is the "every valid document"
        configuration (README).
    whitespace : {"bounded", "json"}, default "bounded"
        Without ``disallow_whitespace``: ``"bounded"`` allows one line break and 20 blanks between
        tokens (models loop on free whitespace); ``"json"`` any whitespace JSON allows.
    resources : mapping of str to schema, optional
        Documents for remote ``$ref`` URIs (``{"https://example.com/s.json": {...}}``, each a
        dict, a bool or JSON text). Nothing is ever fetched from the network.
    max_states : int, default 1_000_000
        Most automaton states the index may hold; past it, :class:`LimitExceededError`.
    max_cache_bytes : int, default 1 GiB
        Most memory for memoized masks. When full, the memo is emptied and refilled on demand.
    fuel : int, default 200_000
        Derivative steps allowed to one emptiness search (patterns intersected with lengths).

    Raises
    ------
    SchemaError
        A malformed schema: not JSON, bytes that are not UTF-8, a string value holding a lone
        surrogate, keywords that contradict each other (no document satisfies them);
        :class:`~dotjson.errors.UnsupportedSchemaError` for a keyword dotjson cannot enforce.
    DotjsonTypeError, DotjsonValueError
        ``vocabulary`` is not a :class:`~dotjson.Vocabulary`; a budget is not a positive integer.
    LimitExceededError
        A budget ran out while compiling.

    Examples
    --------
    >>> index = Index('{"type": "integer"}', vocabulary)          # doctest: +SKIP
    >>> print(index.grammar)                                       # doctest: +SKIP
    """

    def __init__(
        self,
        schema: Any,
        vocabulary,
        disallow_whitespace: bool = False,
        *,
        close_objects: bool = True,
        lenient: bool = False,
        property_order: str = "schema",
        whitespace: str = "bounded",
        resources: Any = None,
        max_states: int = 1_000_000,
        max_cache_bytes: int = 1 << 30,
        fuel: int = 200_000,
    ):
        if isinstance(schema, (bytes, bytearray, memoryview)):
            try:
                schema = bytes(schema).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SchemaError(
                    f"schema bytes are not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset "
                    f"{exc.start} ({exc.reason}); expected JSON text in UTF-8",
                    pointer="",
                ) from None
        _check_vocabulary(vocabulary)
        if _is_pydantic_model(schema):
            schema = _pydantic_schema(schema)
        grammar = schema_to_grammar(
            schema,
            disallow_whitespace=disallow_whitespace,
            close_objects=close_objects,
            lenient=lenient,
            property_order=property_order,
            whitespace=whitespace,
            resources=resources,
            check_language=False,  # the automaton decides it, exactly, building the start state
        )
        self._options = {
            "source": "schema",
            "disallow_whitespace": bool(disallow_whitespace),
            "close_objects": bool(close_objects),
            "lenient": bool(lenient),
            "property_order": property_order,
            "whitespace": whitespace,
        }
        try:
            self._setup(grammar, vocabulary, max_states, max_cache_bytes, fuel)
        except EmptyLanguageError:
            raise SchemaError(EMPTY_LANGUAGE, pointer="") from None
        except GrammarError as exc:
            # The grammar came from the schema: what it cannot do is the schema's (e.g. patterns
            # no string matches together, which leave the language empty).
            raise SchemaError(f"the schema cannot be compiled: {exc}", pointer="") from exc

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_grammar(
        cls,
        grammar: ir.Grammar,
        vocabulary,
        *,
        max_states: int = 1_000_000,
        max_cache_bytes: int = 1 << 30,
        fuel: int = 200_000,
    ) -> "Index":
        """An index for a grammar already in the internal form (:mod:`dotjson.ir`)."""
        if not isinstance(grammar, ir.Grammar):
            raise DotjsonTypeError(f"Invalid grammar: expected a dotjson.ir.Grammar, got {type(grammar).__name__}")
        self = cls.__new__(cls)
        self._options = {"source": "grammar"}
        self._setup(grammar, vocabulary, max_states, max_cache_bytes, fuel)
        return self

    @classmethod
    def from_lark(cls, grammar: str, vocabulary, **options) -> "Index":
        """An index for a Lark grammar (its ``start`` rule), read by Lark's own loader.

        Parameters
        ----------
        grammar : str
            Lark grammar text.
        vocabulary : dotjson.Vocabulary
        **options
            ``max_states``, ``max_cache_bytes``, ``fuel`` as for :class:`Index`.
        """
        from .grammar import load_lark

        if not isinstance(grammar, str):
            raise DotjsonTypeError(f"Invalid grammar: expected Lark grammar text (str), got {type(grammar).__name__}")
        _check_vocabulary(vocabulary)
        self = cls.from_grammar(load_lark(grammar), vocabulary, **options)
        self._options = {"source": "lark"}
        return self

    @classmethod
    def from_regex(cls, pattern: str, vocabulary, **options) -> "Index":
        """An index whose documents are the full matches of a regular expression.

        Parameters
        ----------
        pattern : str
            A regular expression (ECMA-262 / Python common syntax); the whole output must match.
        vocabulary : dotjson.Vocabulary
        **options
            ``max_states``, ``max_cache_bytes``, ``fuel`` as for :class:`Index`.
        """
        from .regex import regex_to_grammar

        if not isinstance(pattern, str):
            raise DotjsonTypeError(f"Invalid pattern: expected a regular expression (str), got {type(pattern).__name__}")
        _check_vocabulary(vocabulary)
        self = cls.from_grammar(regex_to_grammar(pattern), vocabulary, **options)
        self._options = {"source": "regex"}
        return self

    @classmethod
    def from_pydantic(cls, model, vocabulary, disallow_whitespace: bool = False,
                      **options) -> "Index":
        """An index for the JSON Schema of a Pydantic model class.

        Pydantic is not a dependency of dotjson: nothing imports it; the class's own
        ``model_json_schema()`` (Pydantic v2) provides the schema. A model without
        ``extra="forbid"`` says nothing about ``additionalProperties``; with the default
        ``close_objects=True`` its documents still get no extra keys, and every document
        validates with ``model.model_validate_json``.

        Parameters
        ----------
        model : type
            A subclass of ``pydantic.BaseModel``.
        vocabulary : dotjson.Vocabulary
        disallow_whitespace : bool, default False
        **options
            ``close_objects``, ``lenient``, ``max_states``, ``max_cache_bytes``, ``fuel`` as for
            :class:`Index`.

        Raises
        ------
        SchemaError
            If ``model`` is not a Pydantic model class, or its schema cannot be produced.
        UnsupportedSchemaError
            If its schema uses a keyword dotjson cannot enforce.
        """
        from .errors import SchemaError

        if not _is_pydantic_model(model):
            raise SchemaError(
                "Index.from_pydantic needs a Pydantic model class (a subclass of "
                f"pydantic.BaseModel with model_json_schema()), got {model!r}")
        return cls(_pydantic_schema(model), vocabulary, disallow_whitespace, **options)

    def _setup(self, grammar, vocabulary, max_states, max_cache_bytes, fuel, automaton=None):
        _check_vocabulary(vocabulary)
        for name, value in (("max_states", max_states), ("max_cache_bytes", max_cache_bytes), ("fuel", fuel)):
            v = _as_int(value, name)
            if v < 1:
                raise DotjsonValueError(f"Invalid {name}: expected a positive integer, got {v}")
        self._ir = grammar
        self._vocab = vocabulary
        self._tries = vocabulary.tries
        self._trie_arrays = tuple(
            (t.child_ptr, t.child_byte, t.child_node, t.tok_ptr, t.tok_ids, t.subtree_end)
            for t in (self._tries.special, self._tries.plain)
        )
        self._walk_tables = vocabulary._walk_tables()
        self._special_mode = _walk.WALK_RUNS
        self._n_words = self._tries.n_words
        self._limit = self._tries.max_len + 1
        self._eos, self._eos_set = _eos_of(vocabulary.eos_token_ids)
        self._max_cache_bytes = int(max_cache_bytes)
        self._auto = automaton if automaton is not None else Automaton(
            grammar, max_states=max_states, fuel=fuel
        )
        self._lock = self._auto.lock
        # one row to start with (an index often serves one mask first; 16 rows of a 128k
        # vocabulary are 256 KiB to zero): _mask_row grows it to 16 rows, then doubles
        self._masks = np.zeros((1, self._n_words), dtype=np.uint32)
        self._n_masks = 0
        self._mask_of_key: dict[int, int] = {}
        self._state_row: dict[int, int] = {}  # state -> memo row (a cache of the clamped lookup)
        self._next: dict[int, int] = {}
        # Counter-carrying states: a counter at least ``_far`` from its bounds cannot reach them
        # within one token, nor within the next (its mask is the clamped key's either way).
        self._far = 2 * self._limit + 2
        self._virt: dict[int, int] = {}  # state without markers -> its id (counter-carrying or itself)
        self._shape_info: dict[int, tuple[int, int, int]] = {}  # successor of a shape -> (marker min, canonical shape, shift)
        self._grammar_text: str | None = None

    # ------------------------------------------------------------------ public properties

    @property
    def grammar(self) -> str:
        """The grammar this index enforces, as Lark text (rendered on first access)."""
        if self._grammar_text is None:
            from .grammar import to_lark

            self._grammar_text = to_lark(self._ir)
        return self._grammar_text

    @property
    def ir(self) -> ir.Grammar:
        """The grammar in the internal form."""
        return self._ir

    @property
    def vocabulary(self):
        """The vocabulary the index was built for."""
        return self._vocab

    @property
    def n_states(self) -> int:
        """Automaton states expanded so far (grows as decoding explores)."""
        return self._auto.n_states

    @property
    def n_masks(self) -> int:
        """Distinct masks memoized so far."""
        return self._n_masks

    @property
    def nbytes(self) -> int:
        """Memory this index holds of its own, in bytes (it grows as decoding explores): the
        automaton's store, the memoized masks and an estimate for its transition memos. The
        vocabulary, shared by every index built for it, is not counted."""
        store = sum(int(v.nbytes) for v in self._auto._a.values())
        memos = len(self._next) + len(self._state_row) + len(self._virt) + len(self._mask_of_key)
        return store + int(self._masks.nbytes) + 100 * memos

    @property
    def initial_state(self) -> int:
        """The start state id."""
        return self._auto.start

    def is_accepting(self, state: int) -> bool:
        """True when the text that led to ``state`` is a complete document (EOS allowed)."""
        state = self._check_state(state)
        return state >= 0 and bool(self._auto.accepting[state & _LOW31])

    def accepts(self, text: str | bytes) -> bool:
        """True when ``text`` is a complete valid document for this index."""
        s = self._walk_text(_text_bytes(text))
        return s >= 0 and bool(self._auto.accepting[s & _LOW31])

    def is_prefix(self, text: str | bytes) -> bool:
        """True when ``text`` can still be completed into a valid document."""
        return self._walk_text(_text_bytes(text)) >= 0

    def _walk_text(self, data: bytes) -> int:
        """The id after ``data`` from the start, or ``DEAD``: walked a token's length at a time,
        so a counter far from its bounds stays in the id (no state per character)."""
        s = self.initial_state
        step = self._text_step
        for i in range(0, len(data), step):
            s = self._advance_bytes(s, data[i : i + step])
            if s < 0:
                return DEAD
        return s

    @property
    def _text_step(self) -> int:
        """The most bytes :meth:`_advance_bytes` may take at once (a token's length)."""
        return max(1, self._limit - 1)

    def _advance_bytes(self, s: int, data: bytes) -> int:
        """The id after ``data`` (at most :attr:`_text_step` bytes) from id ``s``, or ``DEAD``."""
        a = self._auto
        if s >= _VIRT:
            r = a.walk_bytes(s & _LOW31, data)
            return r if r < 0 else self._resolve(r, ((s >> 31) & _LOW31) - _C_BIAS)
        r = a.walk_bytes(s, data)
        if r < 0:
            return r
        v = self._virt.get(r)
        return v if v is not None else self._virtualize(r)

    def _exact(self, s: int) -> int:
        """The ordinary automaton state of id ``s`` (its exact term; a new state for a
        counter-carrying id, which is what walking byte by byte needs)."""
        if s < _VIRT:
            return s
        a = self._auto
        shape, c = s & _LOW31, ((s >> 31) & _LOW31) - _C_BIAS
        return a.state(a.shift_markers(a.term_of(shape), c))

    def _check_state(self, state) -> int:
        """``state`` as an int: a state expanded so far, a valid counter-carrying id,
        :data:`FINISHED` or ``-2`` (dead)."""
        s = _as_int(state, "state")
        if s >= _VIRT and self._valid_virtual(s):
            return s
        if not (s in (FINISHED, DEAD) or 0 <= s < self._auto.n_states):
            raise DotjsonIndexError(
                f"Invalid state {s}: expected 0 <= state < {self._auto.n_states} (the states "
                f"expanded so far), {FINISHED} (finished), {DEAD} (dead)"
                + (" or a counter-carrying id this index handed out" if s >= _VIRT else "")
            )
        return s

    def check(self, doc):
        """Check a document, as text or as token ids: is it valid, and if not, where and why.

        Teacher forcing an existing document is one call: the result says whether it is a
        complete valid document, the first byte (and token) the grammar forbids, the prefix that
        was still fine, and what was allowed there.

        Parameters
        ----------
        doc : str, bytes or sequence of int
            The document's text, or the token ids a tokenizer gives for it (an EOS token may end
            the sequence; a special token never matches text).

        Returns
        -------
        dotjson.check.CheckResult
            ``ok``, ``reason`` (``"ok"``, ``"rejected"``, ``"incomplete"``, ``"after_eos"``),
            ``position`` (byte offset), ``token_index``, ``valid_prefix``, ``expected`` (allowed
            bytes at the failure, ``<end>`` when the document may end) and, for a rejected token,
            ``expected_tokens`` (a few allowed ids with their bytes) and ``n_expected_tokens``.
            ``bool(result)`` is ``result.ok``.

        Examples
        --------
        >>> r = index.check('{"port":8080.0}')                        # doctest: +SKIP
        >>> r.ok, r.position, r.valid_prefix, r.expected              # doctest: +SKIP
        (False, 12, b'{"port":8080', ("'\\t'-'\\n'", "' '", "','", "'}'"))
        """
        from .check import check

        return check(self, doc)

    # ------------------------------------------------------------------ transitions

    def next_state(self, state: int, token_id: int) -> int:
        """The state after ``token_id``; :data:`FINISHED` for an allowed EOS; ``-2`` if forbidden.

        Parameters
        ----------
        state : int
            A state id this index handed out (see :meth:`_check_state`), :data:`FINISHED` or
            ``-2``. Ids are opaque integers: an automaton state (below :attr:`n_states`), or,
            inside a counted repetition far from its bounds, a counter-carrying id (``>= 2**62``;
            ``docs/ARCHITECTURE.md``), valid on any index loaded from the same saved one.
        token_id : int
            Any integer; ids outside ``[0, vocabulary.max_token_id())`` are forbidden (``-2``).

        Raises
        ------
        DotjsonTypeError
            ``state`` or ``token_id`` is not an integer (``None``, ``str``, ``float``, ``bool``).
        DotjsonIndexError
            ``state`` is not a state of this index.
        """
        state = self._check_state(state)
        token_id = _as_int(token_id, "token id")
        if not 0 <= token_id < self._vocab.max_token_id():
            return DEAD
        return self._next_state(state, token_id)

    def _next_state(self, state: int, token_id: int) -> int:
        """:meth:`next_state` for arguments already checked (``0 <= token_id < max_token_id``)."""
        if state == FINISHED:
            return FINISHED if token_id in self._eos_set else DEAD
        if state < 0:
            return DEAD
        if state >= _VIRT:
            return self._next_virtual(state, token_id)
        if token_id in self._eos_set:
            return FINISHED if self._auto.accepting[state] else DEAD
        r = self._step(state, token_id)
        if r < 0:
            return r
        v = self._virt.get(r)
        return v if v is not None else self._virtualize(r)

    def _step(self, state: int, token_id: int) -> int:
        """The automaton state after ``token_id`` (no EOS), memoized."""
        key = state * 4_294_967_296 + token_id
        r = self._next.get(key)
        if r is not None:
            return r
        data = self._vocab.token_bytes(token_id)
        if not data:
            r = DEAD  # special/control tokens are never text
        else:
            r = self._auto.walk_bytes(state, data)
        self._next[key] = r
        return r

    # ------------------------------------------------------------------ counter-carrying states

    def _virtualize(self, s: int) -> int:
        """The id of state ``s`` (a successor holding no marker): a counter-carrying id when
        its sequence starts with a counter far from its bounds, else ``s``."""
        a = self._auto
        t = a.term_of(s)
        v = s
        if a.marker_min(t) == _ctr.NONE:  # a shape reached by a raw state id stays as it is
            got = a.make_shape(t, self._far)
            if got is not None:
                shape, c = got
                v = _VIRT | (c + _C_BIAS) << 31 | a.state(shape)
        self._virt[s] = v
        return v

    def _info(self, s: int) -> tuple[int, int, int]:
        """``(marker min, canonical shape, shift)`` of automaton state ``s``."""
        info = self._shape_info.get(s)
        if info is None:
            a = self._auto
            t = a.term_of(s)
            m = a.marker_min(t)
            if m == _ctr.NONE or m == _ctr.MARK:
                info = (m, s, 0)
            else:
                d = _ctr.MARK - m
                info = (m, a.state(a.shift_markers(t, d)), d)
            self._shape_info[s] = info
        return info

    def _valid_virtual(self, v: int) -> bool:
        shape, c = v & _LOW31, ((v >> 31) & _LOW31) - _C_BIAS
        if v >> 62 != 1 or shape >= self._auto.n_states:
            return False
        m, canon, _ = self._info(shape)
        return m == _ctr.MARK and canon == shape and m + c >= self._far

    def _next_virtual(self, v: int, token_id: int) -> int:
        """:meth:`_next_state` of counter-carrying id ``v``: the token walked from the shape,
        the offset updated; exact counts again once a bound is near."""
        shape, c = v & _LOW31, ((v >> 31) & _LOW31) - _C_BIAS
        if token_id in self._eos_set:
            return FINISHED if self._auto.accepting[shape] else DEAD
        r = self._step(shape, token_id)
        return r if r < 0 else self._resolve(r, c)

    def _resolve(self, r: int, c: int) -> int:
        """The id of automaton state ``r``, reached from a shape with offset ``c`` by at most a
        token's length of bytes."""
        m, canon, d = self._info(r)
        if m == _ctr.NONE:  # the counted repetition is over
            v2 = self._virt.get(r)
            return v2 if v2 is not None else self._virtualize(r)
        if m + c >= self._far:
            return _VIRT | (c - d + _C_BIAS) << 31 | canon
        a = self._auto  # a bound is near: the exact term, ordinary states from here
        p = a.state(a.shift_markers(a.term_of(r), c))
        v2 = self._virt.get(p)
        return v2 if v2 is not None else self._virtualize(p)

    # ------------------------------------------------------------------ masks

    def mask(self, state: int) -> np.ndarray:
        """The allowed-token bitset of ``state`` (a new ``uint32[n_words]`` array).

        Computed on first request and memoized; states whose counters are far from their bounds
        share one mask.
        """
        out = np.empty((1, self._n_words), dtype=np.uint32)
        self.fill_masks([state], out)
        return out[0]

    def fill_mask(self, state: int, out: np.ndarray) -> None:
        """Write the allowed-token bitset of ``state`` into ``out`` (``uint32[n_words]``)."""
        self._check_out(out, 1, one_row=True)
        if type(state) is int:  # the usual call: checked here, without fill_masks' array checks
            self._fill_masks([self._check_state(state)], out.reshape(1, -1))
        else:
            self.fill_masks([state], out.reshape(1, -1))

    def fill_masks(self, states, out: np.ndarray, map_fn=None) -> None:
        """Write the bitsets of ``states`` into the rows of ``out`` (``uint32[len, n_words]``).

        States not memoized yet are computed first, through ``map_fn`` (e.g. a thread pool's
        ``map``) when there are several; then all rows are copied under the lock, so a memo
        emptied by another thread meanwhile can never hand out a stale row.

        Raises
        ------
        DotjsonTypeError, DotjsonIndexError
            A state that is not an integer or not a state of this index.
        DotjsonValueError
            ``out`` is not a writeable ``uint32`` array of shape ``(len(states), n_words)``.
        """
        if not (type(states) is list and all(type(s) is int for s in states)) and (
                isinstance(states, (str, bytes)) or np.ndim(states) != 1):
            # (a list of ints, the usual argument, is one-dimensional: np.ndim costs ~4 µs)
            raise DotjsonTypeError(f"Invalid states: expected a sequence of state ids, got {states!r}")
        states = [self._check_state(s) for s in states]
        self._check_out(out, len(states))
        self._fill_masks(states, out, map_fn)

    def _check_out(self, out, n: int, one_row: bool = False) -> None:
        shape = (self._n_words,) if one_row else (n, self._n_words)
        if not isinstance(out, np.ndarray) or out.dtype != np.uint32 or out.shape != shape:
            got = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
            raise DotjsonValueError(f"Invalid out: expected a uint32 array of shape {shape}, got {got}")
        if not out.flags.writeable:
            raise DotjsonValueError("Invalid out: expected a writeable array, got a read-only one")

    def _fill_masks(self, states, out: np.ndarray, map_fn=None) -> None:
        """:meth:`fill_masks` for arguments already checked."""
        # a counter-carrying state has its shape's mask (the same clamped key)
        states = [s & _LOW31 if s >= _VIRT else s for s in states]
        for attempt in range(2):
            with self._lock:
                rows = self._state_row
                missing = {s for s in states if s >= 0 and s not in rows}
                if not missing:
                    for i, s in enumerate(states):
                        if s >= 0:
                            out[i] = self._masks[rows[s]]
                        else:
                            out[i] = 0
                            if s == FINISHED:
                                self._set_eos(out[i])
                    return
            missing = sorted(missing)
            if len(missing) > 1 and map_fn is not None:
                list(map_fn(self._mask_row, missing))
            else:
                for s in missing:
                    self._mask_row(s)
        # The memo was emptied under us (a cache budget smaller than the batch's masks): copy
        # row by row, each checked under the lock.
        for i, s in enumerate(states):
            while True:
                if s < 0:
                    self._fill_masks([s], out[i : i + 1])
                    break
                r = self._mask_row(s)
                with self._lock:
                    if self._state_row.get(s) == r:
                        out[i] = self._masks[r]
                        break

    def _set_eos(self, out: np.ndarray) -> None:
        for t in self._eos:
            if t < out.shape[0] * 32:
                out[t >> 5] |= np.uint32(1 << (int(t) & 31))

    def _mask_row(self, state: int) -> int:
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
            if self._n_masks >= self._masks.shape[0]:
                cap = max(16, self._masks.shape[0] * 2)
                cap = min(cap, max(1, self._max_cache_bytes // (self._n_words * 4)))
                grown = np.zeros((cap, self._n_words), dtype=np.uint32)
                grown[: self._n_masks] = self._masks[: self._n_masks]
                self._masks = grown
            r = self._n_masks
            self._masks[r] = bits
            self._n_masks += 1
            self._mask_of_key[key_term] = r
            self._state_row[state] = r
        return r

    def _scratch(self):
        """This thread's walk stacks, at least as deep as this index's walk needs: the fan-outs
        along one path, or every node of the special trie."""
        return _thread_scratch(256 * (self._limit + 2) + self._tries.special.n_nodes)

    def _compute_mask(self, state: int) -> np.ndarray:
        """The bitset of ``state``: one kernel call (the trie walks expanding the automaton
        inline), repeated only after an exit to Python (store growth, a rule body to compile).
        Call with the lock held."""
        a = self._auto
        out = np.zeros(self._n_words, dtype=np.uint32)
        if a.accepting[state]:
            self._set_eos(out)
        sc = self._scratch()
        sc.ret[:] = 0
        sc.ret[_walk.R_PHASE] = _walk.PH_START
        pseq, plen = _PLAIN_SEQS
        while _walk.compute_mask(
            a.store, state, self._trie_arrays[0], self._trie_arrays[1], self._tries.plain_bits,
            *self._walk_tables, self._special_mode, pseq, plen, _WIDE_NODE, out, sc.st_node,
            sc.st_state, sc.st_edge, sc.ret,
        ) != _walk.DONE:
            a.handle_exit()
        return out

    # ------------------------------------------------------------------ serialization

    def serialize_to_disk(self, path) -> None:
        """Save the grammar, the expanded automaton and the memoized masks to directory ``path``.

        The format is versioned, records the vocabulary's fingerprint, holds no pickle, and
        ends with a ``manifest.json`` giving the size and SHA-256 of every file.
        """
        from .serialization import save_index

        force = getattr(self._ir.rules, "force", None)
        if force is not None:
            force()  # a lazily compiled grammar: every rule, so that every family is known
        save_index(self, path)

    @classmethod
    def deserialize_from_disk(cls, path, vocabulary=None) -> "Index":
        """Load an index saved by :meth:`serialize_to_disk`.

        Parameters
        ----------
        path : str or os.PathLike
            The directory written by :meth:`serialize_to_disk`.
        vocabulary : dotjson.Vocabulary, optional
            The vocabulary to bind; by default the one saved alongside. Its fingerprint must match.

        Raises
        ------
        IndexFormatError
            The directory or one of its files is missing (the message names the path), a file
            differs from its ``manifest.json`` entry (any changed byte), a value is out of range
            or inconsistent with the others, the format version differs, or the index was built
            for another vocabulary.
        DotjsonTypeError
            ``path`` is not a path or ``vocabulary`` not a :class:`~dotjson.Vocabulary`.
        """
        from .serialization import load_index

        return load_index(cls, path, vocabulary)

    def __repr__(self) -> str:
        return (
            f"Index(source={self._options.get('source')}, states={self.n_states}, "
            f"masks={self.n_masks}, vocab={self._vocab.max_token_id()})"
        )


_EOS_OF: dict = {}


def _eos_of(eos_token_ids: tuple) -> tuple[np.ndarray, frozenset]:
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


def _as_int(x, what: str) -> int:
    """``x`` as a Python int (NumPy integers included); a :class:`DotjsonTypeError` for anything else."""
    if isinstance(x, (bool, np.bool_)):
        raise DotjsonTypeError(f"Invalid {what}: expected an integer, got bool")
    try:
        return operator.index(x)
    except TypeError:
        raise DotjsonTypeError(f"Invalid {what}: expected an integer, got {x!r}") from None


def _text_bytes(text) -> bytes:
    if isinstance(text, str):
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise DotjsonValueError(
                f"Invalid text: it holds a lone surrogate at index {exc.start}; expected UTF-8 text"
            ) from None
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise DotjsonTypeError(f"Invalid text: expected str or bytes, got {type(text).__name__}")


def _check_vocabulary(vocabulary) -> None:
    if not isinstance(vocabulary, Vocabulary):
        raise DotjsonTypeError(
            f"Invalid vocabulary: expected a dotjson.Vocabulary, got {type(vocabulary).__name__}"
        )


__all__ = ["Index", "FINISHED"]


def _is_pydantic_model(obj) -> bool:
    """A Pydantic v2 model class (recognized without importing pydantic)."""
    return isinstance(obj, type) and callable(getattr(obj, "model_json_schema", None))


def _pydantic_schema(model) -> dict:
    from .errors import SchemaError

    try:
        return model.model_json_schema()
    except Exception as e:  # noqa: BLE001 - pydantic's own errors (unserializable types, ...)
        raise SchemaError(f"{model.__name__}.model_json_schema() failed: "
                          f"{type(e).__name__}: {e}") from None
