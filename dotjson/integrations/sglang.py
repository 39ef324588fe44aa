"""dotjson as an SGLang grammar backend (``--grammar-backend dotjson``).

SGLang keeps a registry of grammar backends (``register_grammar_backend`` in
``sglang/srt/constrained/base_grammar_backend.py``) and runs every ``sglang.srt.plugins``
entry point early in each of its processes. Installing dotjson registers :func:`register`
there, which adds ``"dotjson"`` to the registry and to the ``--grammar-backend`` choices; a
program that starts SGLang in-process can call :func:`register` itself. Then::

    python -m sglang.launch_server --model-path MODEL --grammar-backend dotjson

and SGLang's structured requests (``response_format`` with a JSON Schema, ``regex``, ``ebnf``)
are constrained by dotjson. What each request kind becomes:

- ``json``: a JSON Schema (:class:`~dotjson.Index`; ``--constrained-json-disable-any-whitespace``
  maps to ``disallow_whitespace``);
- ``regex``: :meth:`Index.from_regex`;
- ``ebnf``: GBNF-style EBNF, translated to Lark by :func:`dotjson.ebnf.ebnf_to_lark` (a grammar
  already in Lark syntax is taken as it is);
- ``structural_tag``: not supported (SGLang's ``InvalidGrammarObject``, the request fails).

The grammar objects implement jump-forward decoding (:meth:`DotjsonGrammar.try_jump_forward`:
the bytes every continuation writes next, retokenized by SGLang) and the batched fill
(:meth:`DotjsonGrammar.fill_vocab_mask_batched`, one :func:`dotjson.fill_next_token_bitmask`
call for a whole batch). The masks are XGrammar's layout (``int32``, bit ``t & 31`` of word
``t >> 5``, set = allowed). dotjson is imported lazily and :func:`dotjson.warmup` runs when the
backend is built, before the first request.
"""

from __future__ import annotations

import logging
from typing import List, Optional, Tuple

from dotjson.errors import DotjsonError

try:
    from sglang.srt.constrained.base_grammar_backend import (
        BaseGrammarBackend as _Backend,
        BaseGrammarObject as _GrammarObject,
        InvalidGrammarObject as _Invalid,
    )
except Exception:  # pragma: no cover - SGLang is optional (and needs CUDA libraries to import)
    _Backend = _GrammarObject = _Invalid = None

__all__ = ["DotjsonGrammar", "DotjsonGrammarBackend", "register", "apply_token_bitmask"]

logger = logging.getLogger("dotjson.integrations.sglang")

_NAME = "dotjson"


def _bases(kind):
    """The SGLang base class, or a stand-in with its constructor's behaviour when SGLang is
    not importable (the classes stay importable and testable)."""
    if kind == "object":
        if _GrammarObject is not None:
            return _GrammarObject

        class _Stand:
            def __init__(self):
                self._finished = False
                self.grammar_stats = None
                self.current_token = None

            @property
            def finished(self):
                return self._finished

            @finished.setter
            def finished(self, value):
                self._finished = value

            def maybe_init_reasoning(self, reasoning: bool):
                pass

        return _Stand
    if _Backend is not None:
        return _Backend

    class _StandBackend:
        def __init__(self):
            from concurrent.futures import ThreadPoolExecutor

            self.executor = ThreadPoolExecutor()
            self.cache = {}

        def reset(self):
            self.cache.clear()

    return _StandBackend


def apply_token_bitmask(logits, vocab_mask) -> None:
    """Set to ``-inf``, in place, each logit whose bit is clear in an int32 bitmask (XGrammar's
    layout). CPU tensors go through dotjson's masking kernel; CUDA float16/bfloat16/float32
    logits through its Triton kernel (:mod:`dotjson._kernels.gpu`); others through torch ops on
    their device. ``logits`` may have fewer rows than the mask (the batch's first rows)."""
    import numpy as np

    rows, width = logits.shape[0], logits.shape[-1]
    mask = vocab_mask[:rows]
    if logits.device.type == "cpu" and mask.device.type == "cpu":
        from dotjson.processor import LogitsProcessor
        from dotjson.tokenset import BatchedTokenSet

        bits = np.ascontiguousarray(mask.numpy().view(np.uint32))
        n_words = (width + 31) // 32
        if bits.shape[1] != n_words:
            bits = np.ascontiguousarray(bits[:, :n_words]) if bits.shape[1] > n_words else np.pad(
                bits, ((0, 0), (0, n_words - bits.shape[1])))
        ts = BatchedTokenSet(bits, width)
        LogitsProcessor(_Holder(width), float("-inf")).update_logits(logits, ts)
        return
    from dotjson._kernels import gpu

    gpu.mask_device(logits, mask.to(logits.device, non_blocking=True).contiguous(), width, float("-inf"))


class _Holder:
    """What dotjson's LogitsProcessor reads of a guide: a vocabulary's width."""

    def __init__(self, width: int):
        self.vocabulary = self
        self._w = width

    def max_token_id(self) -> int:
        return self._w


class DotjsonGrammar(_bases("object")):
    """One request's grammar state (SGLang's ``BaseGrammarObject``).

    Parameters
    ----------
    index : dotjson.Index
        The compiled grammar, shared (the backend's cache holds it).
    vocab_size : int
        The model's logits width.
    eos_token_ids : set of int, optional
        The model's EOS ids as SGLang sees them (``hf_eos_token_id``); default the vocabulary's.
    key : tuple, optional
        The ``(kind, text)`` SGLang keyed the request by (for messages).
    """

    def __init__(self, index, vocab_size: int, eos_token_ids=None, key=None):
        super().__init__()
        from dotjson.guide import Guide
        from dotjson.integrations.vllm import _Ends

        self.index = index
        self.vocab_size = int(vocab_size)
        self.key = key
        self.eos_token_ids = frozenset(eos_token_ids or ())
        self.guide = Guide(index)
        self.ends = _Ends(index.vocabulary, self.eos_token_ids, (index.vocabulary.max_token_id() + 31) // 32)

    # ------------------------------------------------------------------ tokens

    def accept_token(self, token: int) -> None:
        """Advance by one token (an EOS ends the document).

        Raises
        ------
        TokenNotAllowedError
            The token is not allowed here (a ``ValueError``, as SGLang's other backends raise).
        """
        if self.finished:
            return
        self.current_token = token
        self.guide.accept_tokens([self.ends.feed(int(token))])
        if self.guide.is_finished()[0]:
            self.finished = True

    def rollback(self, k: int) -> None:
        """Undo the last ``k`` accepted tokens."""
        if k > 0:
            self.guide.rollback(k)
            self.finished = bool(self.guide.is_finished()[0])

    def is_terminated(self) -> bool:
        return bool(self.guide.is_finished()[0])

    # ------------------------------------------------------------------ masks

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device):
        """An ``int32 (batch_size, ceil(vocab_size / 32))`` CPU tensor, every token allowed."""
        import torch

        return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32)

    def fill_vocab_mask(self, vocab_mask, idx: int) -> None:
        """Write this request's allowed tokens into row ``idx``."""
        DotjsonGrammar.fill_vocab_mask_batched([_Row(idx, self)], vocab_mask)

    @staticmethod
    def fill_vocab_mask_batched(entries, vocab_mask) -> None:
        """Fill the listed rows (``GrammarRow(row, grammar)``) in one
        :func:`dotjson.fill_next_token_bitmask` call; rows not listed are untouched."""
        from dotjson.batch import _bitmask_view, fill_next_token_bitmask

        ours = [e for e in entries if isinstance(e.grammar, DotjsonGrammar)]
        for e in entries:  # another backend's objects (a mixed batch): their own fill
            if not isinstance(e.grammar, DotjsonGrammar):
                e.grammar.fill_vocab_mask(vocab_mask, e.row)
        if not ours:
            return
        fill_next_token_bitmask([(e.grammar.guide, 0) for e in ours], vocab_mask,
                                out_rows=[e.row for e in ours])
        view = None
        for e in ours:
            g = e.grammar
            if not g.ends.same:
                view = _bitmask_view(vocab_mask) if view is None else view
                g.ends.fix(view[e.row], bool(g.guide.is_accepting()[0]))

    @staticmethod
    def reset_vocab_mask(vocab_mask) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask, device):
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits, vocab_mask) -> None:
        apply_token_bitmask(logits, vocab_mask)

    def copy(self) -> "DotjsonGrammar":
        """A fresh request on the same index (SGLang caches one object per key and copies it)."""
        return DotjsonGrammar(self.index, self.vocab_size, self.eos_token_ids, self.key)

    # ------------------------------------------------------------------ jump-forward

    def try_jump_forward(self, tokenizer) -> Optional[Tuple[List[int], str]]:
        """``([], text)`` where ``text`` is what every valid continuation writes next, or
        ``None``. SGLang appends the text, retokenizes, and calls :meth:`jump_and_retokenize`.

        Only whole UTF-8 characters are handed over (a multi-byte character cut by the jump's
        bound waits for the next jump)."""
        data = self.guide.fast_forward_bytes()
        if not data:
            return None
        text = data.decode("utf-8", "ignore")
        while text and text.encode("utf-8") != data[: len(text.encode("utf-8"))]:
            text = text[:-1]
        return ([], text) if text else None

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int],
                            next_state: int) -> None:
        """Re-sync after SGLang retokenized the output: roll back to the common prefix of the
        old and new ids, then accept the new ones (all checked first: on an error the grammar is
        as it was)."""
        k = 0
        for a, b in zip(old_output_ids, new_output_ids):
            if a != b:
                break
            k += 1
        back = len(old_output_ids) - k
        if back > self.guide.num_tokens():
            raise ValueError(
                f"Invalid jump_and_retokenize: {back} tokens to roll back, the grammar holds "
                f"{self.guide.num_tokens()}")
        from dotjson.lookahead import walk_tokens

        new = [self.ends.feed(int(t)) for t in new_output_ids[k:]]
        hist = self.guide._history[0]
        states = walk_tokens(self.index, hist[len(hist) - 1 - back], new)
        if len(states) < len(new):
            raise ValueError(
                f"Token not accepted during retokenization: {new_output_ids[k + len(states)]} at "
                f"position {k + len(states)} (key {self.key!r})")
        self.guide.rollback(back)
        self.guide.accept_tokens(new)
        self.finished = bool(self.guide.is_finished()[0])

    def __repr__(self) -> str:
        return f"DotjsonGrammar(key={self.key!r}, tokens={self.guide.num_tokens()})"


class _Row:
    """SGLang's ``GrammarRow`` (row, grammar) for a single fill."""

    __slots__ = ("row", "grammar")

    def __init__(self, row, grammar):
        self.row = row
        self.grammar = grammar


class DotjsonGrammarBackend(_bases("backend")):
    """SGLang's ``BaseGrammarBackend`` on dotjson.

    Parameters
    ----------
    tokenizer : transformers tokenizer
        SGLang's tokenizer (``Vocabulary.from_tokenizer``).
    vocab_size : int
        The model's logits width.
    eos_token_ids : set of int, optional
        The model's EOS ids (``model_config.hf_eos_token_id``).
    disallow_whitespace : bool, default False
        Compact JSON (``--constrained-json-disable-any-whitespace``).
    """

    def __init__(self, tokenizer, vocab_size: int, eos_token_ids=None, *,
                 disallow_whitespace: bool = False, vocabulary=None):
        super().__init__()
        import dotjson
        from dotjson.cache import IndexCache

        self.tokenizer = tokenizer
        self.vocabulary = vocabulary or dotjson.Vocabulary.from_tokenizer(tokenizer)
        self.vocab_size = int(vocab_size)
        self.eos_token_ids = frozenset(int(t) for t in (eos_token_ids or ()))
        self.disallow_whitespace = bool(disallow_whitespace)
        self.index_cache = IndexCache(self.vocabulary)
        dotjson.warmup()

    def _grammar(self, kind: str, key_string: str, build):
        try:
            index = build()
        except DotjsonError as exc:
            logger.error("dotjson: invalid %s: %s", kind, exc)
            if _Invalid is not None:
                return _Invalid(str(exc))
            raise
        return DotjsonGrammar(index, self.vocab_size, self.eos_token_ids, (kind, key_string))

    def dispatch_json(self, key_string: str):
        return self._grammar("json", key_string, lambda: self.index_cache.get(
            key_string, disallow_whitespace=self.disallow_whitespace))

    def dispatch_regex(self, key_string: str):
        return self._grammar("regex", key_string, lambda: self.index_cache.get_regex(key_string))

    def dispatch_ebnf(self, key_string: str):
        from dotjson.ebnf import grammar_to_lark

        return self._grammar("ebnf", key_string,
                             lambda: self.index_cache.get_lark(grammar_to_lark(key_string)))

    def dispatch_structural_tag(self, key_string: str):
        logger.warning("dotjson: structural_tag requests are not supported")
        if _Invalid is not None:
            return _Invalid("dotjson does not support structural_tag")
        raise DotjsonError("dotjson does not support structural_tag requests")


def _from_server_args(server_args, tokenizer, vocab_size, eos_token_ids=None):
    """The factory SGLang's ``create_grammar_backend`` calls for ``--grammar-backend dotjson``."""
    ws = getattr(server_args, "constrained_json_disable_any_whitespace", False)
    try:  # SGLang 0.5.2x keeps serving options in its runtime context
        from sglang.srt.runtime_context import get_serving

        ws = bool(getattr(get_serving(), "constrained_json_disable_any_whitespace", ws))
    except Exception:  # noqa: BLE001 - older layouts: server_args carries it
        pass
    return DotjsonGrammarBackend(tokenizer, vocab_size, eos_token_ids, disallow_whitespace=ws)


def register() -> None:
    """Register ``"dotjson"`` with SGLang's grammar-backend registry and CLI choices (the
    ``sglang.srt.plugins`` entry point; idempotent)."""
    from sglang.srt.constrained.base_grammar_backend import register_grammar_backend

    register_grammar_backend(_NAME, _from_server_args)
    try:
        from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices
    except ImportError:  # pragma: no cover - layouts without a choices list
        return
    if _NAME not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices([_NAME])

