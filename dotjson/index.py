"""The Index: a grammar's lazily expanded automaton bound to one vocabulary, with memoized masks.

An :class:`Index` is immutable from the caller's point of view and shared by any number of
:class:`~dotjson.guide.Guide` cursors, in any number of threads. Building one translates the
schema and compiles the grammar's rules into terms; no work is proportional to the vocabulary or
to numeric bounds. A state's allowed-token bitset is computed the first time decoding reaches it
(a Numba trie walk) and memoized; so is every token transition.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import ir
from .automaton import DEAD, Automaton, EmptyLanguageError
from .automaton.ids import LOW31 as _LOW31, VIRT as _VIRT, CounterIds
from ._config import BUDGET_NAMES, BUDGETS
from .jsonschema import EMPTY_LANGUAGE, schema_to_grammar
from .masks import FINISHED, Masker, eos_of
from .vocabulary import Vocabulary
from .jsonschema.values import default_bounds
from .jsonschema.jsonstr import PLAIN_CLASS, default_spellings
from .errors import (
    DotjsonIndexError,
    DotjsonTypeError,
    DotjsonValueError,
    GrammarError,
    LimitExceededError,
    SchemaError,
    VocabularyError,
)

#: The largest ``max_states`` and ``fuel`` an index accepts (the kernels count in 64 bits and
#: number states in 31).
_MAX_STATES = (1 << 31) - 1
_MAX_FUEL = (1 << 62) - 1

#: The bytes of well-formed UTF-8 (0xC0, 0xC1 and 0xF5-0xFF never occur in it). A vocabulary
#: with a one-byte token for each writes every text byte by byte, so every state the automaton
#: can finish from, the tokens can finish from too (every byte-level BPE vocabulary; byte
#: fallback). Any other vocabulary's start state is searched (``_check_start_live``).
_UTF8_BYTES = np.array([b for b in range(256) if not (0xC0 <= b <= 0xC1 or b >= 0xF5)])
#: A JSON document can always be written in printable ASCII: whitespace is optional and every
#: string (values, keys, pattern languages) admits ``\u`` escapes for any character, so a
#: schema's index only needs these as one-byte tokens (SmolLM2 lacks 0x04, 0xF1 and others).
_JSON_BYTES = np.arange(0x20, 0x7F)
#: The start search's budget, scaled by the vocabulary (a mask costs about one step per id):
#: masks computed and token transitions followed, at least 32 and 2,048 (32 masks of a 128k
#: vocabulary take a few ms). Past it the vocabulary is presumed able to finish (the search
#: proves only deadness, never liveness).
_LIVE_WORK = 1 << 22
#: States the byte-level search (over the one-byte tokens alone) may visit first.
_LIVE_BYTE_STATES = 1024


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
    spellings : {"canonical", "any"}, optional
        A generation policy for strings. ``"canonical"``: declared keys, ``enum`` and ``const``
        strings only as ``json.dumps(..., ensure_ascii=False)`` writes them; string contents
        with no escape of a character JSON lets stand raw (a ``\\"``, ``\\\\``, ``\\n``, any
        control character's escapes stay). ``"any"``: every JSON spelling of every string
        (``\\u0061`` for ``a``, ``\\/``, surrogate pairs). Default: ``"any"`` in the "every valid
        document" configuration (``property_order="any"``, ``close_objects=False``,
        ``whitespace="json"``), ``"canonical"`` otherwise.
    bounds : {"generation", "schema"}, optional
        A generation policy against loops. ``"generation"``: where the schema sets no bound of
        its own, arrays hold at most 16 items (8 when every item is an object or an array),
        strings without maxLength at most 128 characters (one with a pattern or format too,
        when its shortest string fits), an open object at most 16 undeclared members whichever
        declared ones it holds (8 when their values are all objects or arrays), undeclared keys
        at most 128 characters, integers and ``multipleOf`` numbers at most 20 integer digits,
        numbers the schema leaves free at most 20 integer, 20 fraction and 3 exponent digits,
        and values the schema leaves free (``{}``, ``true``) nest arrays and objects at most 3
        deep (small models otherwise repeat an item, a fragment or a key until the token budget
        ends; docs/keywords.md, "Generation policies").
        ``"schema"``: only the schema's own bounds. Default: ``"generation"`` with
        ``close_objects=True``, ``"schema"`` with ``close_objects=False``.
    resources : mapping of str to schema, optional
        Documents for remote ``$ref`` URIs (``{"https://example.com/s.json": {...}}``, each a
        dict, a bool or JSON text). Nothing is ever fetched from the network.
    max_states : int, default 1_000_000
        Most automaton states the index may hold; past it, :class:`LimitExceededError`.
    max_cache_bytes : int, default 1 GiB
        Most memory for memoized masks. When full, the memo is emptied and refilled on demand.
    fuel : int, default 200_000
        Work allowed to one emptiness search (patterns intersected with lengths, negations):
        its derivative steps plus the terms it builds, so that the budget bounds time and
        memory (``allOf`` of 50 patterns stops after ~6 s and +240 MB on a loaded 2-core
        machine, where counting steps alone took ~80 s and 1.1 GB).
    reasoning : str or (str, str), optional
        Reasoning first: unconstrained text until this end tag (``"</think>"``), then the JSON
        document. A pair ``(begin, end)`` also makes the output start with ``begin``
        (``("<think>", "</think>")``); a plain end tag suits templates that open the reasoning
        in the prompt (Qwen3, DeepSeek-R1). The text never holds the end tag; up to two line
        breaks may follow it, then the document (with its own leading whitespace). See :func:`dotjson.embed.reasoning_grammar`.
    max_reasoning_chars : int, optional
        With ``reasoning``: at most this many characters of reasoning (default: unbounded;
        unbounded text is one automaton state, a bound costs a state per character).
    max_store_bytes : int, default 2 GiB
        Most memory for the automaton's store (its terms, states and transition rows), checked
        before every growth; past it, :class:`LimitExceededError`.

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
        spellings: str | None = None,
        bounds: str | None = None,
        resources: Any = None,
        max_states: int = BUDGETS.max_states,
        max_cache_bytes: int = BUDGETS.max_cache_bytes,
        fuel: int = BUDGETS.fuel,
        reasoning=None,
        max_reasoning_chars: int | None = None,
        max_store_bytes: int = BUDGETS.max_store_bytes,
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
        if reasoning is None:
            if max_reasoning_chars is not None:
                raise DotjsonValueError("Invalid max_reasoning_chars: it bounds the reasoning, expected "
                                        "reasoning= (an end tag) too")
            grammar = schema_to_grammar(
                schema,
                disallow_whitespace=disallow_whitespace,
                close_objects=close_objects,
                lenient=lenient,
                property_order=property_order,
                whitespace=whitespace,
                spellings=spellings,
                bounds=bounds,
                resources=resources,
                check_language=False,  # the automaton decides it, exactly, building the start state
            )
        else:
            from .embed import JsonSchema, reasoning_grammar

            if isinstance(reasoning, str):
                begin, end = None, reasoning
            elif isinstance(reasoning, (tuple, list)) and len(reasoning) == 2 and all(
                    isinstance(x, str) for x in reasoning):
                begin, end = reasoning
            else:
                raise DotjsonTypeError("Invalid reasoning: expected an end tag (str) or a (begin, end) pair "
                                       f"of str, got {reasoning!r}")
            grammar = reasoning_grammar(
                JsonSchema(schema, disallow_whitespace=disallow_whitespace, close_objects=close_objects,
                           property_order=property_order, whitespace=whitespace, lenient=lenient,
                           spellings=spellings, bounds=bounds, resources=resources),
                end, begin or None, max_reasoning_chars)
        self._options = {
            "source": "schema",
            "disallow_whitespace": bool(disallow_whitespace),
            "close_objects": bool(close_objects),
            "lenient": bool(lenient),
            "property_order": property_order,
            "whitespace": whitespace,
            "spellings": default_spellings(spellings, disallow_whitespace=disallow_whitespace,
                                           close_objects=close_objects, property_order=property_order,
                                           whitespace=whitespace),
            "bounds": default_bounds(bounds, close_objects=close_objects),
        }
        if reasoning is not None:
            self._options["reasoning"] = [begin, end]
            self._options["max_reasoning_chars"] = max_reasoning_chars
        try:
            self._setup(grammar, vocabulary, max_states, max_cache_bytes, fuel, max_store_bytes=max_store_bytes)
        except EmptyLanguageError:
            raise SchemaError(EMPTY_LANGUAGE, pointer="") from None
        except GrammarError as exc:
            # The grammar came from the schema: what it cannot do is the schema's (e.g. patterns
            # no string matches together, which leave the language empty).
            raise SchemaError(f"the schema cannot be compiled: {exc}", pointer="") from exc
        self._check_start_live()

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_grammar(
        cls,
        grammar: ir.Grammar,
        vocabulary,
        *,
        max_states: int = BUDGETS.max_states,
        max_cache_bytes: int = BUDGETS.max_cache_bytes,
        fuel: int = BUDGETS.fuel,
        max_store_bytes: int = BUDGETS.max_store_bytes,
    ) -> "Index":
        """An index for a grammar already in the internal form (:mod:`dotjson.ir`)."""
        if not isinstance(grammar, ir.Grammar):
            raise DotjsonTypeError(f"Invalid grammar: expected a dotjson.ir.Grammar, got {type(grammar).__name__}")
        self = cls.__new__(cls)
        self._options = {"source": "grammar"}
        self._setup(grammar, vocabulary, max_states, max_cache_bytes, fuel, max_store_bytes=max_store_bytes)
        self._check_start_live()
        return self

    @classmethod
    def from_lark(cls, grammar: str, vocabulary, *, schemas=None, **options) -> "Index":
        """An index for a Lark grammar (its ``start`` rule), read by Lark's own loader.

        JSON Schemas may stand inside it, written as llguidance writes them: ``%json { … }``
        wherever a rule reference may stand (``start: "Answer: " data`` and ``data: %json
        {"type": "object", ...}``), or given as ``schemas={"data": {...}}``. Each is compiled
        lazily, like the schema of an :class:`Index`, with its own options (a
        :class:`~dotjson.JsonSchema`, or an ``"x-dotjson"`` member of the schema).

        Parameters
        ----------
        grammar : str
            Lark grammar text.
        vocabulary : dotjson.Vocabulary
        schemas : mapping of str to schema, optional
            Rules defined by a JSON Schema (a dict, JSON text or :class:`~dotjson.JsonSchema`).
        **options
            ``max_states``, ``max_cache_bytes``, ``fuel``, ``max_store_bytes`` as for :class:`Index`.

        Raises
        ------
        GrammarError
            Malformed Lark text, or a ``%json`` without a JSON object (line and column named).
        SchemaError
            An embedded schema that cannot be compiled: the message names the ``%json``'s line
            and column, ``pointer`` the place inside the schema.
        """
        from .embed import load_lark_with_json

        if not isinstance(grammar, str):
            raise DotjsonTypeError(f"Invalid grammar: expected Lark grammar text (str), got {type(grammar).__name__}")
        _check_vocabulary(vocabulary)
        from .embed import _SPECIAL_REF

        specials = bool(_SPECIAL_REF.search(grammar))
        self = cls.__new__(cls)
        self._options = {"source": "lark", "specials": True} if specials else {"source": "lark"}
        grammar_ir = load_lark_with_json(grammar, schemas=schemas)
        max_states, max_cache_bytes, fuel, max_store_bytes = _budgets(options)
        self._setup(grammar_ir, vocabulary, max_states, max_cache_bytes, fuel, max_store_bytes=max_store_bytes)
        self._check_start_live()
        return self

    @classmethod
    def from_tags(cls, tags, vocabulary, *, triggers=None, max_calls=None, text: bool = True,
                  **options) -> "Index":
        """Free text and tool calls: text until a trigger, then a tag's JSON value, then text.

        Parameters
        ----------
        tags : sequence of dotjson.Tag or (begin, schema, end)
            Each call is ``begin``, a JSON value of ``schema`` (a dict, JSON text or a
            :class:`~dotjson.JsonSchema` with its options), ``end``.
        vocabulary : dotjson.Vocabulary
        triggers : sequence of str, optional
            What starts a call: free text runs until one is written (across token boundaries
            too), then a tag whose ``begin`` starts with it must follow. Default: the begins.
        max_calls : int, optional
            At most this many calls (then any text). Default: any number.
        text : bool, default True
            ``False``: calls only, one after another, no text around them.
        **options
            ``max_states``, ``max_cache_bytes``, ``fuel``, ``max_store_bytes`` as for :class:`Index`.

        A tag's schema is compiled only when its ``begin`` is written; a string value inside a
        call may hold the end tag (it ends the call only after the value). EOS is allowed in
        free text, never inside a call. See ``docs/grammar.md`` for the formats of common model
        families, and :meth:`from_tools`.
        """
        from .embed import Tag, has_special, tools_grammar

        _check_vocabulary(vocabulary)
        tags = [t if isinstance(t, Tag) else Tag(*t) for t in tags]
        g = tools_grammar(tags, triggers, max_calls, text)
        texts = [t.begin for t in tags] + [t.end for t in tags] + list(triggers or ())
        self = cls.__new__(cls)
        self._options = {"source": "tags", "max_calls": max_calls}
        if any(isinstance(x, str) and has_special(x) for x in texts):
            self._options["specials"] = True
        max_states, max_cache_bytes, fuel, max_store_bytes = _budgets(options)
        self._setup(g, vocabulary, max_states, max_cache_bytes, fuel, max_store_bytes=max_store_bytes)
        self._check_start_live()
        return self

    @classmethod
    def from_tools(cls, tools, vocabulary, *, family: str = "hermes", max_calls=None, text: bool = True,
                   **options) -> "Index":
        """:meth:`from_tags` for tools as OpenAI's API writes them, in a model family's format.

        Parameters
        ----------
        tools : sequence of dict
            ``{"type": "function", "function": {"name": ..., "parameters": schema}}`` (or the
            ``function`` objects alone).
        vocabulary : dotjson.Vocabulary
        family : {"hermes", "qwen", "llama3", "mistral"}, default "hermes"
            ``hermes``/``qwen``: ``<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>``;
            ``llama3``: ``{"name": "f", "parameters": {...}}``; ``mistral``:
            ``[TOOL_CALLS][{"name": "f", "arguments": {...}}]`` (:data:`dotjson.embed.TOOL_FORMATS`).
        max_calls, text
            As for :meth:`from_tags`.
        **options
            Schema options for every tool (``disallow_whitespace``, ``close_objects``,
            ``property_order``, ``whitespace``, ``lenient``) and ``max_states``,
            ``max_cache_bytes``, ``fuel``.
        """
        from .embed import SCHEMA_OPTIONS, tool_tags

        schema_opts = {k: options.pop(k) for k in list(options) if k in SCHEMA_OPTIONS}
        tags, triggers = tool_tags(tools, family, **schema_opts)
        self = cls.from_tags(tags, vocabulary, triggers=triggers, max_calls=max_calls, text=text, **options)
        self._options.update({"source": "tools", "family": family})
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
            ``max_states``, ``max_cache_bytes``, ``fuel``, ``max_store_bytes`` as for :class:`Index`.
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

    def _setup(self, grammar, vocabulary, max_states, max_cache_bytes, fuel, automaton=None,
               max_store_bytes=BUDGETS.max_store_bytes):
        _check_vocabulary(vocabulary)
        for name, value, most in (("max_states", max_states, _MAX_STATES), ("max_cache_bytes", max_cache_bytes, None),
                                  ("fuel", fuel, _MAX_FUEL), ("max_store_bytes", max_store_bytes, None)):
            v = _as_int(value, name)
            if v < 1:
                raise DotjsonValueError(f"Invalid {name}: expected a positive integer, got {v}")
            if most is not None and v > most:
                raise DotjsonValueError(
                    f"Invalid {name}: expected a positive integer at most {most}, got {v}"
                    + (" (state ids are 31-bit)" if name == "max_states" else " (a 64-bit counter)"))
        self._ir = grammar
        self._vocab = vocabulary
        # the plain class is JSON's (a string body's own characters), handed down to the
        # vocabulary's tries and the mask walk: the token side knows no JSON
        self._plain = PLAIN_CLASS
        self._tries = vocabulary.tries_for(self._plain)
        self._n_words = self._tries.n_words
        self._limit = self._tries.max_len + 1
        _, self._eos_set = eos_of(vocabulary.eos_token_ids)  # (the EOS bits: the masker's)
        self._max_token_id = vocabulary.max_token_id()
        self._max_cache_bytes = int(max_cache_bytes)
        self._auto = automaton if automaton is not None else Automaton(
            grammar, max_states=max_states, fuel=fuel, max_store_bytes=max_store_bytes
        )
        self._lock = self._auto.lock
        self._masker = Masker(self._auto, vocabulary, self._max_cache_bytes, self._options, self._plain)
        self._next: dict[int, int] = {}
        # counter-carrying ids: a counter twice a token's length from its bounds cannot reach
        # them within one token, nor within the next (its mask is the clamped key's either way)
        self._ids = CounterIds(self._auto, 2 * self._limit + 2)
        self._grammar_text: str | None = None

    @classmethod
    def _from_saved(cls, grammar, vocabulary, options: dict, automaton, max_cache_bytes: int,
                    grammar_text, geometry: tuple, masks, mask_keys, transitions) -> "Index":
        """The constructor loading uses (:func:`dotjson.serialization.load_index`): the setup
        every constructor runs, over a loaded automaton, then the saved memos, each validated.

        Raises
        ------
        ValueError
            The vocabulary's geometry (``(n_words, limit)``) differs, or a memo entry is out of
            range.
        """
        self = cls.__new__(cls)
        self._options = dict(options)
        self._setup(grammar, vocabulary, automaton.max_states, max_cache_bytes, automaton.fuel,
                    automaton=automaton)
        self._grammar_text = grammar_text
        if (self._n_words, self._limit) != tuple(geometry):
            raise ValueError("vocabulary geometry differs")
        self._masker.load(masks, mask_keys)
        n_states, n_ids = automaton.n_states, vocabulary.max_token_id()
        for k, v in transitions:
            if type(k) is not int or type(v) is not int:
                raise ValueError("transition memo entry is not a pair of integers")
            state, token = divmod(k, 4_294_967_296)
            if not (0 <= state < n_states and 0 <= token < n_ids and -2 <= v < n_states and v != -1):
                raise ValueError("transition memo out of range")
            self._next[k] = v
        return self

    def _check_start_live(self) -> None:
        """Refuse a vocabulary that cannot write any document of the grammar.

        Free for a vocabulary holding a one-byte token for every byte a document may need
        (``_JSON_BYTES`` for a schema's index, ``_UTF8_BYTES`` for a grammar's). Otherwise a depth-first search over token transitions from the start
        state, within a budget of masks and transitions scaled by the vocabulary (``_LIVE_WORK``), looks for a state
        that may end; when it exhausts every state reachable without finding one, no token
        sequence finishes a document and :class:`~dotjson.errors.VocabularyError` says so.
        A budget hit (the search's or the index's ``max_states``) ends the search silently:
        the start state may still be live.

        Raises
        ------
        VocabularyError
            No token sequence from the start reaches a complete document.
        """
        singles = self._tries.single_bytes()
        # a schema's documents can be written in printable ASCII (any string by \u escapes); text
        # before it (reasoning) or any grammar may need every UTF-8 byte
        schema_only = self._options.get("source") == "schema" and "reasoning" not in self._options
        needed = _JSON_BYTES if schema_only else _UTF8_BYTES
        if singles[needed].all():
            return
        try:
            if self._finishes_byte_by_byte(singles):
                return
        except LimitExceededError:
            return
        start = self.initial_state
        seen = {start}
        stack = [start]
        n_masks = n_steps = 0
        n_ids = max(1, self._vocab.max_token_id())
        most_masks, most_steps = max(32, _LIVE_WORK // n_ids), max(2048, (_LIVE_WORK >> 6) // n_ids * 64)
        try:
            while stack:
                s = stack.pop()
                if self.is_accepting(s):
                    return
                if n_masks >= most_masks:
                    return
                n_masks += 1
                bits = self.mask(s)
                ids = np.flatnonzero(np.unpackbits(bits.view(np.uint8), bitorder="little"))
                for t in ids.tolist():
                    if t in self._eos_set:
                        continue
                    n_steps += 1
                    if n_steps > most_steps:
                        return
                    nxt = self.next_state(s, t)
                    if nxt >= 0 and nxt not in seen:
                        if self.is_accepting(nxt):
                            return
                        seen.add(nxt)
                        stack.append(nxt)
        except LimitExceededError:
            return
        first = "allows no token" if len(seen) == 1 else (
            f"leads to {len(seen)} states, none of which may end the document")
        missing = int((~singles[needed]).sum())
        what = "printable ASCII" if needed is _JSON_BYTES else "UTF-8"
        raise VocabularyError(
            f"Invalid vocabulary for this index: its tokens cannot spell any complete document of "
            f"the grammar (the start state {first}; of the {len(needed)} {what} bytes, {missing} "
            f"have no one-byte token); expected a vocabulary that can write a valid document"
        )

    def _finishes_byte_by_byte(self, singles: np.ndarray) -> bool:
        """Whether some document is spelled by one-byte tokens alone (``singles``): a
        breadth-first search over the automaton's byte transitions (microseconds a state, no
        mask), within ``_LIVE_BYTE_STATES`` states. ``True`` proves the start live; ``False``
        proves nothing."""
        a = self._auto
        start = a.start
        if a.accepting[start]:
            return True
        byte_ids = np.flatnonzero(singles)
        seen = {start}
        queue = [start]
        for s in queue:  # (the list grows as it is read: a FIFO)
            a.fill_row(s)
            row = a.trans[s]
            for t in np.unique(row[byte_ids]).tolist():
                if t >= 0 and t not in seen:
                    if a.accepting[t]:
                        return True
                    if len(seen) >= _LIVE_BYTE_STATES:
                        return False
                    seen.add(t)
                    queue.append(t)
        return False

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
        return self._masker.n_masks

    @property
    def nbytes(self) -> int:
        """Memory this index holds of its own, in bytes (it grows as decoding explores): the
        automaton's store, the memoized masks and an estimate for its transition memos. The
        vocabulary, shared by every index built for it, is not counted."""
        store = sum(int(v.nbytes) for v in self._auto._a.values())
        return store + self._masker.nbytes + 100 * (len(self._next) + len(self._ids))

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
        for _, chunk in self._text_chunks(data):
            s = self._advance_bytes(s, chunk)
            if s < 0:
                return DEAD
        return s

    def _text_chunks(self, data: bytes) -> list:
        """``(offset, bytes)`` pieces of ``data`` of at most :attr:`_text_step` bytes; where a
        rule family steps its own items (``Masker.family_walk``), a piece also ends after each
        quote, so the next starts inside the item it opens."""
        step = self._text_step
        if not self._masker._families():
            return [(i, data[i : i + step]) for i in range(0, len(data), step)]
        out, i = [], 0
        while i < len(data):
            j = data.find(b'"', i, i + step)
            end = i + step if j < 0 else j + 1
            out.append((i, data[i:end]))
            i = end
        return out

    @property
    def _text_step(self) -> int:
        """The most bytes :meth:`_advance_bytes` may take at once (a token's length)."""
        return max(1, self._limit - 1)

    def _advance_bytes(self, s: int, data: bytes) -> int:
        """The id after ``data`` (at most :attr:`_text_step` bytes) from id ``s``, or ``DEAD``."""
        if s >= _VIRT:
            return self._ids.walk(s, data)
        r = self._masker.family_walk(s, data)  # (items of a family stepping its own states)
        if r is None:
            r = self._auto.walk_text(s, data)  # (a state at the end only: texts are walked once)
        return r if r < 0 else self._ids.of(r)

    def _exact(self, s: int) -> int:
        """The ordinary automaton state of id ``s`` (its exact term; a new state for a
        counter-carrying id, which is what walking byte by byte needs)."""
        return s if s < _VIRT else self._ids.exact(s)

    def _check_state(self, state) -> int:
        """``state`` as an int: a state expanded so far, a valid counter-carrying id,
        :data:`FINISHED` or ``-2`` (dead)."""
        s = _as_int(state, "state")
        if s >= _VIRT and self._ids.valid(s):
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
        if type(state) is int and type(token_id) is int and 0 <= state < _VIRT \
                and 0 <= token_id < self._max_token_id and token_id not in self._eos_set:
            # a step taken before (the memoized path): its state was checked then, and states
            # stay valid; never an EOS token nor one past the vocabulary (never stored)
            r = self._next.get(state * 4_294_967_296 + token_id)
            if r is not None:
                return r if r < 0 else self._ids.of(r)
            if state < self._auto.n_states:  # a state expanded so far (what _check_state asks)
                r = self._step(state, token_id)
                return r if r < 0 else self._ids.of(r)
        state = self._check_state(state)
        token_id = _as_int(token_id, "token id")
        if not 0 <= token_id < self._max_token_id:
            return DEAD
        return self._next_state(state, token_id)

    def _next_state(self, state: int, token_id: int) -> int:
        """:meth:`next_state` for arguments already checked (``0 <= token_id < max_token_id``)."""
        if state == FINISHED:
            return FINISHED if token_id in self._eos_set else DEAD
        if state < 0:
            return DEAD
        if token_id in self._eos_set:
            return FINISHED if self._auto.accepting[state & _LOW31] else DEAD
        if state >= _VIRT:
            return self._ids.next(state, token_id, self._step)
        r = self._step(state, token_id)
        return r if r < 0 else self._ids.of(r)

    def _step(self, state: int, token_id: int) -> int:
        """The automaton state after ``token_id`` (no EOS), memoized."""
        key = state * 4_294_967_296 + token_id
        r = self._next.get(key)
        if r is not None:
            return r
        data = self._vocab.token_bytes(token_id)
        if self._options.get("specials"):
            if not data and self._vocab.is_special(token_id):
                from .embed import special_marker_bytes

                data = special_marker_bytes(token_id)  # the grammar's marker of this token
            elif b"\xff" in data:
                data = b""  # a text token holding 0xFF is never UTF-8 text (nor a marker)
        if not data:
            r = DEAD  # special/control tokens are never text
        else:
            r = self._masker.family_walk(state, data)  # (a rule family stepping its own states)
            if r is None:
                r = self._auto.walk_token(state, data)
        self._next[key] = r
        return r

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
            self._masker.fill_one(self._check_state(state), out)
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
        """:meth:`fill_masks` for arguments already checked (the guide's and batch paths)."""
        self._masker.fill(states, out, map_fn)

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




def _budgets(options: dict) -> tuple:
    """``max_states``, ``max_cache_bytes``, ``fuel``, ``max_store_bytes`` of a constructor's
    ``**options`` (the defaults: :data:`dotjson._config.BUDGETS`); anything else is an error
    naming it."""
    bad = sorted(set(options) - set(BUDGET_NAMES))
    if bad:
        raise DotjsonTypeError(f"Invalid option {bad[0]!r}: expected max_states, max_cache_bytes, fuel "
                               "or max_store_bytes")
    return tuple(options.get(name, getattr(BUDGETS, name)) for name in BUDGET_NAMES)


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
