"""dotjson in vLLM (v1 engine): a custom logits processor, and a structured-output backend shape.

**The logits processor** (:class:`JSONLogitsProcessor`) is the supported route. Installing
dotjson registers it through the ``vllm.logits_processors`` entry point, so every vLLM engine
loads it; it can also be named explicitly::

    llm = LLM(model, logits_processors=[JSONLogitsProcessor])                # offline
    vllm serve MODEL --logits-processors dotjson.integrations.vllm:JSONLogitsProcessor

A request opts in with ``SamplingParams(extra_args={"json_schema": schema})`` (a dict or JSON
text; over HTTP, ``"vllm_xargs": {"json_schema": "<JSON text>"}``), with :class:`~dotjson.Index`
options beside it under their own names (``disallow_whitespace``, ``close_objects``,
``property_order``, ``whitespace``, ``spellings``, ``bounds``, ``lenient``; booleans may be given as ``"true"`` /
``"false"`` text, as flat ``vllm_xargs`` values are). Requests without ``json_schema`` are left
untouched. ``docs/vllm.md`` has the whole story.

How it meets vLLM's interface (``vllm/v1/sample/logits_processor/interface.py``):

- vLLM never hands a processor the sampled token: each added request comes with a live
  reference to its ``output_token_ids`` list, which the processor watches (tokens past the
  ones it has seen are fed to the row's guide). Async scheduling's ``-1`` placeholders are
  waited out: they are replaced before ``apply``, which catches up.
- Rows are added, removed, moved and swapped (:class:`BatchUpdate`, processed in the order the
  interface prescribes: removed, added, moved).
- The next masks are computed while the forward pass runs: ``update_state`` (called before it)
  starts :func:`dotjson.fill_next_token_bitmask` in a thread, ``apply`` joins it, so the trie
  walks of fresh states (which release the GIL) overlap the model.
- End of sequence as vLLM sees it: the request's ``eos_token_id`` (none with ``ignore_eos``)
  and its ``stop_token_ids`` (generation-config EOS ids included) are allowed exactly where the
  document is complete, and sampling one ends the document.
- dotjson (and with it Numba) is imported only inside the processor's constructor: Numba
  imported before ``LLM()`` starts its worker breaks vLLM's CPU worker. The constructor calls
  :func:`dotjson.warmup`, so no request pays for loading or compiling kernels.
- Speculative decoding: vLLM refuses custom logits processors when it is enabled; use the
  structured-output route below (experimental) for that.

**The structured-output backend** (:class:`DotjsonBackend` / :class:`DotjsonGrammar`,
*experimental*) has the shape of vLLM's ``StructuredOutputBackend`` /
``StructuredOutputGrammar`` (``accept_tokens``, ``validate_tokens``, ``rollback``,
``fill_bitmask``, ``is_terminated``, ``reset``), the route vLLM uses for speculative decoding
and for its own ``structured_outputs`` requests. vLLM 0.32 picks its backends from a fixed list
(``StructuredOutputManager.grammar_init``) and has no registry; until it has one,
:mod:`dotjson.integrations.vllm_plugin` (a ``vllm.general_plugins`` entry point, opt-in with
``DOTJSON_VLLM_BACKEND=1``) makes ``structured_outputs_config.backend = "dotjson"`` select them.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dotjson.errors import DotjsonError, DotjsonTypeError, DotjsonValueError

try:  # vLLM is optional: without it the classes still import (and are tested) as plain classes
    from vllm.v1.sample.logits_processor import LogitsProcessor as _VLLMLogitsProcessor
except ImportError:  # pragma: no cover - depends on the environment
    _VLLMLogitsProcessor = object
try:
    from vllm.v1.structured_output.backend_types import (
        StructuredOutputBackend as _VLLMBackend,
        StructuredOutputGrammar as _VLLMGrammar,
        StructuredOutputOptions as _VLLMOptions,
    )
except ImportError:  # pragma: no cover
    _VLLMBackend = _VLLMGrammar = object
    _VLLMOptions = None

__all__ = ["JSONLogitsProcessor", "DotjsonBackend", "DotjsonGrammar", "SCHEMA_KEY", "parse_request"]

logger = logging.getLogger("dotjson.integrations.vllm")

#: The ``extra_args`` key holding a request's JSON Schema.
SCHEMA_KEY = "json_schema"

#: Index options a request may set beside its schema, with their kinds.
_BOOL_OPTIONS = ("disallow_whitespace", "close_objects", "lenient")
_CHOICE_OPTIONS = {"property_order": ("schema", "any"), "whitespace": ("bounded", "json"),
                   "spellings": ("canonical", "any"), "bounds": ("generation", "schema")}


def _as_bool(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise DotjsonValueError(
        f"Invalid extra_args[{name!r}]: expected a boolean (true/false), got {value!r}")


def parse_request(extra_args: dict | None):
    """The schema and Index options a request's ``extra_args`` ask for, or ``None``.

    Pure Python (no Numba): vLLM calls it, through :meth:`JSONLogitsProcessor.validate_params`,
    in its front end for every request, so a bad schema is an HTTP 400 there, not an error in
    the engine.

    Returns
    -------
    tuple of (str, dict) or None
        The schema as compact JSON text and the options; ``None`` when ``extra_args`` has no
        ``json_schema``.

    Raises
    ------
    DotjsonValueError
        The schema is not JSON, or an option has a value it cannot take.
    """
    if not extra_args or extra_args.get(SCHEMA_KEY) is None:
        return None
    schema = extra_args[SCHEMA_KEY]
    if isinstance(schema, (bytes, bytearray)):
        schema = bytes(schema).decode("utf-8", "replace")
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError as exc:
            raise DotjsonValueError(
                f"Invalid extra_args[{SCHEMA_KEY!r}]: expected a JSON Schema (a dict or JSON text), "
                f"got text that is not JSON ({exc})") from None
    if not isinstance(schema, (dict, bool)):
        raise DotjsonValueError(
            f"Invalid extra_args[{SCHEMA_KEY!r}]: expected a JSON Schema (an object or a boolean), "
            f"got {type(schema).__name__}")
    options: dict[str, Any] = {}
    for name in _BOOL_OPTIONS:
        if extra_args.get(name) is not None:
            options[name] = _as_bool(extra_args[name], name)
    for name, allowed in _CHOICE_OPTIONS.items():
        v = extra_args.get(name)
        if v is not None:
            if v not in allowed:
                raise DotjsonValueError(
                    f"Invalid extra_args[{name!r}]: expected one of {', '.join(allowed)}, got {v!r}")
            options[name] = v
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":")), options


def _end_ids(params) -> frozenset:
    """The tokens on which vLLM ends this request (``check_stop``): its EOS (``None`` under
    ``ignore_eos``) and its ``stop_token_ids``."""
    ids = set(getattr(params, "stop_token_ids", None) or ())
    eos = getattr(params, "eos_token_id", None)
    if eos is not None:
        ids.add(int(eos))
    return frozenset(int(t) for t in ids)


class _Ends:
    """Maps a request's end tokens onto its guide: the vocabulary's EOS bits are replaced by
    the request's end tokens (where the document may end), and an end token is fed to the guide
    as the vocabulary's EOS."""

    def __init__(self, vocabulary, end_ids: frozenset, n_words: int):
        self.vocab_eos = frozenset(vocabulary.eos_token_ids)
        self.eos = vocabulary.eos_token_ids[0]
        width = n_words * 32
        ends = frozenset(t for t in end_ids if 0 <= t < width)
        # a request that never ends on a token (ignore_eos, no stop ids) keeps the vocabulary's
        # EOS: a finished document then only allows EOS until max_tokens
        self.ids = ends or self.vocab_eos
        self.same = self.ids == self.vocab_eos

    def feed(self, token: int) -> int:
        return self.eos if token in self.ids else token

    def fix(self, row, accepting: bool) -> None:
        """Fix one ``uint32`` mask row in place (call only when ``not self.same``)."""
        import numpy as np

        for t in self.vocab_eos:
            if t < row.shape[0] * 32:
                row[t >> 5] &= np.uint32(~(1 << (t & 31)) & 0xFFFFFFFF)
        if accepting:
            for t in self.ids:
                row[t >> 5] |= np.uint32(1 << (t & 31))


class _Row:
    __slots__ = ("guide", "out", "seen", "ends", "failed")

    def __init__(self, guide, out, ends):
        self.guide = guide
        self.out = out
        self.seen = 0
        self.ends = ends
        self.failed = False


class JSONLogitsProcessor(_VLLMLogitsProcessor):
    """A vLLM v1 logits processor constraining requests that carry a JSON Schema.

    Parameters
    ----------
    vllm_config : vllm.config.VllmConfig
        The engine's configuration: ``model_config.tokenizer`` (a local directory or a
        Hugging Face id) gives the vocabulary, ``model_config.get_vocab_size()`` the logits
        width.
    device : torch.device
        Where the logits live (CPU, or CUDA: masks are then applied with torch ops there).
    is_pin_memory : bool
        Unused (the interface requires it).

    Attributes
    ----------
    cache : dotjson.IndexCache
        The indexes of the schemas seen, shared by every request of this engine.
    stats : dict
        ``steps``, ``rows`` (constrained rows masked), ``update_s`` (seconds in
        ``update_state``), ``wait_s`` (seconds ``apply`` waited for the masks computed during the
        forward pass), ``apply_s`` (seconds in ``apply``, waiting included): the processor's own
        cost per step is ``(update_s + apply_s) / steps``.
    """

    #: Compute the next masks in a thread during the forward pass (True), or in
    #: ``update_state`` itself (False: no thread competes with the model for the GIL).
    overlap = True

    def __init__(self, vllm_config, device, is_pin_memory: bool = False, *, vocabulary=None):
        import dotjson  # here, not at module import: see the module's docstring
        from dotjson.cache import IndexCache
        from dotjson.processor import LogitsProcessor as _Masker

        model_config = getattr(vllm_config, "model_config", None)
        if vocabulary is None:
            if model_config is None:
                raise DotjsonTypeError(
                    "Invalid vllm_config: expected a vLLM VllmConfig (with model_config), got "
                    f"{type(vllm_config).__name__}")
            vocabulary = dotjson.Vocabulary.from_pretrained(model_config.tokenizer)
        self.vocabulary = vocabulary
        self.width = int(model_config.get_vocab_size()) if model_config is not None else vocabulary.max_token_id()
        if self.width < vocabulary.max_token_id():
            raise DotjsonValueError(
                f"Invalid model: its logits have {self.width} columns, fewer than the tokenizer's "
                f"{vocabulary.max_token_id()} token ids; dotjson cannot mask such a model")
        self.device = device
        self.cache = IndexCache(vocabulary)
        self._n_words = (vocabulary.max_token_id() + 31) // 32
        self._masker = _Masker(_VocabularyHolder(vocabulary), float("-inf"))
        self._rows: dict[int, _Row] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dotjson-vllm")
        self._pending = None
        self._bits = None
        self._order: list[int] = []
        self.stats = {"steps": 0, "rows": 0, "update_s": 0.0, "wait_s": 0.0, "apply_s": 0.0}
        dotjson.warmup()  # kernels loaded (or compiled) now, never inside a request

    # ------------------------------------------------------------------ vLLM's interface

    @classmethod
    def validate_params(cls, sampling_params) -> None:
        """Reject, in vLLM's front end, a request whose schema or options dotjson cannot use
        (vLLM turns the ``ValueError`` into an HTTP 400). The schema is translated (pure Python,
        no Numba), so unsupported keywords are reported here too."""
        parsed = parse_request(getattr(sampling_params, "extra_args", None))
        if parsed is None:
            return
        from dotjson.jsonschema import schema_to_grammar

        schema, options = parsed
        translate = {k: v for k, v in options.items()}
        try:
            schema_to_grammar(schema, check_language=False, **translate)
        except DotjsonError as exc:
            raise DotjsonValueError(f"Invalid extra_args[{SCHEMA_KEY!r}]: {exc}") from exc

    def is_argmax_invariant(self) -> bool:
        """False: masking changes which token is the most likely."""
        return False

    def update_state(self, batch_update) -> None:
        """Apply the batch's changes, feed each row's new tokens to its guide, and start
        computing the next masks (joined in :meth:`apply`)."""
        t0 = time.perf_counter()
        self._join()
        if batch_update is not None:
            self._apply_batch_update(batch_update)
        if self._rows:
            for row in self._rows.values():
                self._catch_up(row)
            self._order = sorted(self._rows)
            if self.overlap:
                self._pending = self._executor.submit(self._fill, self._order)
            else:
                self._fill(self._order)
        self.stats["update_s"] += time.perf_counter() - t0

    def apply(self, logits):
        """Mask every constrained row of ``logits`` (``num_reqs x vocab``) in place."""
        if not self._rows:
            return logits
        t0 = time.perf_counter()
        self._join()
        t1 = time.perf_counter()
        order = self._order
        if self._bits is None or order != sorted(self._rows):  # update_state was not called
            order = self._order = sorted(self._rows)
            self._fill(order)
        stale = [i for i, b in enumerate(order) if self._catch_up(self._rows[b])]
        if stale:  # tokens that were placeholders during update_state
            self._fill(order, only=stale)
        bits = self._bits[: len(order)]
        for i, b in enumerate(order):
            row = self._rows[b]
            if row.failed:  # only the request's end tokens: it stops
                bits[i] = 0
                self._set(bits[i], row.ends.ids)
            elif not row.ends.same:
                row.ends.fix(bits[i], bool(row.guide.is_accepting()[0]))
        from dotjson.tokenset import BatchedTokenSet

        ts = BatchedTokenSet(bits, self.vocabulary.max_token_id())
        if order[-1] == len(order) - 1:  # (sorted, distinct: rows 0 .. n-1) one call over them
            self._masker.update_logits(logits[: len(order)], ts)
        else:  # rows with unconstrained ones between: a view per row
            self._masker.update_logits([logits[b] for b in order], ts)
        self.stats["steps"] += 1
        self.stats["rows"] += len(order)
        self.stats["wait_s"] += t1 - t0
        self.stats["apply_s"] += time.perf_counter() - t0
        return logits

    # ------------------------------------------------------------------ internals

    @staticmethod
    def _set(row, ids) -> None:
        import numpy as np

        for t in ids:
            row[t >> 5] |= np.uint32(1 << (t & 31))

    def _join(self) -> None:
        if self._pending is not None:
            p, self._pending = self._pending, None
            p.result()

    def _apply_batch_update(self, bu) -> None:
        rows = self._rows
        for index in bu.removed:
            rows.pop(index, None)
        for added in bu.added:
            index, params, _prompt, out = added[0], added[1], added[2], added[3]
            rows.pop(index, None)
            row = self._new_row(params, out)
            if row is not None:
                rows[index] = row
        for a, b, direction in bu.moved:
            ra, rb = rows.pop(a, None), rows.pop(b, None)
            if ra is not None:
                rows[b] = ra
            if rb is not None and getattr(direction, "name", str(direction)).endswith("SWAP"):
                rows[a] = rb
        for index in [i for i in rows if i >= bu.batch_size]:
            del rows[index]

    def _new_row(self, params, out):
        from dotjson.guide import Guide

        try:
            parsed = parse_request(getattr(params, "extra_args", None))
        except DotjsonError as exc:  # validate_params refused it already, normally
            logger.error("dotjson: request ignored, bad extra_args: %s", exc)
            return None
        if parsed is None:
            return None
        schema, options = parsed
        ends = _Ends(self.vocabulary, _end_ids(params), self._n_words)
        try:
            index = self.cache.get(schema, **options)
        except DotjsonError as exc:
            # not reachable through vLLM's front end (validate_params translates the schema);
            # the engine must not die for one request: it ends at once instead
            logger.error("dotjson: the request's schema cannot be compiled (%s); it is ended", exc)
            row = _Row(None, out, ends)
            row.failed = True
            return row
        return _Row(Guide(index), out, ends)

    def _catch_up(self, row: _Row) -> bool:
        """Feed the row's guide its new output tokens; True when there were some."""
        if row.failed:
            return False
        out = row.out
        new = []
        for t in out[row.seen:]:
            if t < 0:  # async scheduling's placeholder: replaced before apply
                break
            new.append(int(t))
        if not new:
            return False
        row.seen += len(new)
        try:
            row.guide.accept_tokens([row.ends.feed(t) for t in new])
        except DotjsonError as exc:
            logger.error("dotjson: a token outside the schema was sampled (%s); the request is ended", exc)
            row.failed = True
        return True

    def _fill(self, order, only=None) -> None:
        from dotjson.batch import fill_next_token_bitmask
        import numpy as np

        k = len(order)
        if self._bits is None or self._bits.shape[0] < k:
            self._bits = np.zeros((max(k, 8, 2 * (0 if self._bits is None else self._bits.shape[0])),
                                   self._n_words), dtype=np.uint32)
        pos = range(k) if only is None else only
        pairs, rows = [], []
        for i in pos:
            r = self._rows[order[i]]
            if not r.failed:
                pairs.append((r.guide, 0))
                rows.append(i)
        if not pairs:
            return
        try:
            fill_next_token_bitmask(pairs, self._bits, out_rows=rows)
        except DotjsonError:  # a budget of some index ran out: find it, end that request only
            for (g, _), i in zip(pairs, rows):
                try:
                    fill_next_token_bitmask([(g, 0)], self._bits, out_rows=[i])
                except DotjsonError as exc:
                    logger.error("dotjson: a request's next tokens cannot be computed (%s); it is ended", exc)
                    self._rows[order[i]].failed = True


class _VocabularyHolder:
    """What :class:`dotjson.LogitsProcessor` reads of a guide: its vocabulary (the processor
    masks rows of many guides here)."""

    def __init__(self, vocabulary):
        self.vocabulary = vocabulary


# ---------------------------------------------------------------------------------------------
# The structured-output backend shape (experimental)
# ---------------------------------------------------------------------------------------------


def _option_name(request_type) -> str:
    return getattr(request_type, "name", str(request_type)).rsplit(".", 1)[-1]


def _choice_regex(choices) -> str:
    import re

    return "|".join(re.escape(str(c)) for c in choices)


class DotjsonBackend(_VLLMBackend):
    """vLLM's ``StructuredOutputBackend`` on dotjson (*experimental*: selected by
    ``structured_outputs_config.backend = "dotjson"`` through :mod:`dotjson.integrations.vllm_plugin`).

    Parameters
    ----------
    vllm_config : vllm.config.VllmConfig
        ``structured_outputs_config.disable_any_whitespace`` maps to ``disallow_whitespace``.
        Objects are closed (``close_objects``, dotjson's default, as XGrammar's);
        ``disable_additional_properties`` is the guidance backend's alone, refused with this one.
    tokenizer : transformers tokenizer
        The engine's tokenizer (``Vocabulary.from_tokenizer``).
    vocab_size : int
        The logits width (``model_config.get_vocab_size()``).
    """

    def __init__(self, vllm_config, tokenizer, vocab_size: int, *, vocabulary=None):
        import dotjson
        from dotjson.cache import IndexCache

        self.vllm_config = vllm_config
        self.tokenizer = tokenizer
        self.vocab_size = int(vocab_size)
        self.vocabulary = vocabulary or dotjson.Vocabulary.from_tokenizer(tokenizer)
        if self.vocabulary.max_token_id() > self.vocab_size:
            raise DotjsonValueError(
                f"Invalid vocab_size: {self.vocab_size} logits columns for a tokenizer of "
                f"{self.vocabulary.max_token_id()} ids")
        so = getattr(vllm_config, "structured_outputs_config", None)
        self.disallow_whitespace = bool(getattr(so, "disable_any_whitespace", False))
        self.cache = IndexCache(self.vocabulary)
        dotjson.warmup()

    def compile_grammar(self, request_type, grammar_spec: str, stop_token_ids=None) -> "DotjsonGrammar":
        """A grammar object for one request: ``JSON`` (schema text), ``JSON_OBJECT``,
        ``REGEX``, ``GRAMMAR`` (Lark, or EBNF with ``name ::= ...`` rules) or ``CHOICE`` (a JSON
        list of strings).

        Raises
        ------
        DotjsonValueError
            ``STRUCTURAL_TAG`` (not supported), or a type this backend does not know.
        SchemaError, GrammarError
            The specification cannot be compiled.
        """
        kind = _option_name(request_type)
        ws = {"disallow_whitespace": self.disallow_whitespace}
        if kind == "JSON":
            index = self.cache.get(grammar_spec, **ws)
        elif kind == "JSON_OBJECT":
            index = self.cache.get({"type": "object"}, **ws)
        elif kind == "REGEX":
            index = self.cache.get_regex(grammar_spec)
        elif kind == "GRAMMAR":  # Lark, or EBNF (XGrammar's format: rules written name ::= ...)
            from dotjson.ebnf import grammar_to_lark

            index = self.cache.get_lark(grammar_to_lark(grammar_spec))
        elif kind == "CHOICE":
            choices = json.loads(grammar_spec) if isinstance(grammar_spec, str) else grammar_spec
            index = self.cache.get_regex(_choice_regex(choices))
        else:
            raise DotjsonValueError(
                f"Invalid request type {kind}: dotjson supports JSON, JSON_OBJECT, REGEX, GRAMMAR "
                f"(Lark) and CHOICE")
        return DotjsonGrammar(index, self.vocab_size, stop_token_ids)

    def allocate_token_bitmask(self, max_num_seqs: int):
        """An ``int32 (max_num_seqs, ceil(vocab_size / 32))`` CPU tensor, every token allowed."""
        import torch

        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self) -> None:
        self.cache.clear()


class DotjsonGrammar(_VLLMGrammar):
    """vLLM's ``StructuredOutputGrammar`` shape for one request (*experimental*).

    Parameters
    ----------
    index : dotjson.Index
    vocab_size : int
        The logits width; the bitmask's rows have ``ceil(vocab_size / 32)`` words.
    stop_token_ids : set of int, optional
        The request's EOS and stop tokens (``SamplingParams.all_stop_token_ids``): allowed where
        the document may end, and the end of it when sampled. Default: the vocabulary's EOS.
    """

    def __init__(self, index, vocab_size: int, stop_token_ids=None):
        from dotjson.guide import Guide

        self.index = index
        self.vocab_size = int(vocab_size)
        self.guide = Guide(index)
        n_words = (index.vocabulary.max_token_id() + 31) // 32
        self.ends = _Ends(index.vocabulary, frozenset(stop_token_ids or ()), n_words)

    def _mapped(self, tokens) -> list[int]:
        out = []
        for t in tokens:
            t = int(t)
            if t < 0:  # speculative padding: the block ends here
                break
            out.append(self.ends.feed(t))
            if out[-1] == self.ends.eos:
                break  # nothing is decoded after the end
        return out

    def accept_tokens(self, request_id: str, tokens) -> bool:
        """Advance by ``tokens``; True when every token was accepted (tokens after the end are
        ignored, as XGrammar's backend does). On False the grammar did not move."""
        if self.is_terminated():
            return True
        toks = self._mapped(tokens)
        try:
            self.guide.accept_tokens(toks)
        except DotjsonError as exc:
            logger.error("dotjson: request %s: %s", request_id, exc)
            return False
        return True

    def validate_tokens(self, tokens) -> list[int]:
        """The longest accepted prefix of ``tokens`` (the grammar does not move)."""
        if self.is_terminated():
            return []
        toks = self._mapped(tokens)
        n = self.guide.validate_tokens(toks)
        return [int(t) for t in list(tokens)[:n]]

    def rollback(self, num_tokens: int) -> None:
        """Undo the last ``num_tokens`` accepted tokens (the end token included)."""
        if num_tokens > 0:
            self.guide.rollback(num_tokens)

    def fill_bitmask(self, bitmask, batch_index: int) -> None:
        """Write the allowed tokens into row ``batch_index`` of an int32 bitmask."""
        from dotjson.batch import _bitmask_view, fill_next_token_bitmask

        fill_next_token_bitmask([(self.guide, 0)], bitmask, out_rows=[batch_index])
        if not self.ends.same:
            row = _bitmask_view(bitmask)[batch_index]
            self.ends.fix(row, bool(self.guide.is_accepting()[0]))

    def is_terminated(self) -> bool:
        """True once an end token was accepted."""
        return bool(self.guide.is_finished()[0])

    def reset(self) -> None:
        """Back to the start of a document."""
        self.guide.reset()

    @property
    def num_processed_tokens(self) -> int:
        return self.guide.num_tokens()
