"""A faithful copy of the SGLang grammar-backend interface the dotjson backend meets, installed
as fake ``sglang`` modules by the tests (SGLang itself needs CUDA libraries to import).

Copied from sglang 0.5.23 (Apache-2.0), ``python/sglang/srt/constrained/base_grammar_backend.py``:
``GrammarRow``, ``BaseGrammarObject`` (every method the scheduler calls, with its defaults),
``InvalidGrammarObject``, ``BaseGrammarBackend`` (the cache, ``_init_value_dispatch``,
``get_cached_or_future_value``, ``set_cache``), the registry (``GRAMMAR_BACKEND_REGISTRY``,
``register_grammar_backend``) and the registry branch of ``create_grammar_backend``; and
``sglang/srt/arg_groups/choices.py``'s ``GRAMMAR_BACKEND_CHOICES`` /
``add_grammar_backend_choices``.
"""

from __future__ import annotations

import sys
import time
import types
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Dict, List, NamedTuple, Optional, Tuple

GRAMMAR_BACKEND_REGISTRY = {}
GRAMMAR_BACKEND_CHOICES = ["xgrammar", "outlines", "llguidance", "none"]
add_grammar_backend_choices = GRAMMAR_BACKEND_CHOICES.extend


class GrammarRow(NamedTuple):
    row: int
    grammar: "BaseGrammarObject"


class BaseGrammarObject:
    def __init__(self):
        self._finished = False
        self.grammar_stats = None
        self.current_token = None

    def maybe_init_reasoning(self, reasoning: bool):
        pass

    def accept_token(self, token: int) -> None:
        raise NotImplementedError()

    def rollback(self, k: int):
        raise NotImplementedError()

    def is_terminated(self):
        return False

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device):
        raise NotImplementedError()

    def fill_vocab_mask(self, vocab_mask, idx: int) -> None:
        raise NotImplementedError()

    @staticmethod
    def fill_vocab_mask_batched(entries: List[GrammarRow], vocab_mask) -> None:
        for entry in entries:
            entry.grammar.fill_vocab_mask(vocab_mask, entry.row)

    @staticmethod
    def reset_vocab_mask(vocab_mask) -> None:
        raise NotImplementedError()

    @staticmethod
    def move_vocab_mask(vocab_mask, device):
        raise NotImplementedError()

    @staticmethod
    def apply_vocab_mask(logits, vocab_mask) -> None:
        raise NotImplementedError()

    def copy(self) -> "BaseGrammarObject":
        return self

    @property
    def finished(self):
        return self._finished

    @finished.setter
    def finished(self, finished):
        self._finished = finished

    def try_jump_forward(self, tokenizer) -> Optional[Tuple[List[int], str]]:
        raise NotImplementedError()

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        raise NotImplementedError()

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int],
                            next_state: int) -> None:
        raise NotImplementedError()


class InvalidGrammarObject(BaseGrammarObject):
    def __init__(self, error_message: str = "Unknown grammar error"):
        super().__init__()
        self.error_message = error_message


class BaseGrammarBackend:
    def __init__(self):
        self.executor = ThreadPoolExecutor()
        self.cache: Dict[Tuple[str, str], BaseGrammarObject] = {}

    def _not_supported(self, key_type: str, key_string: str) -> BaseGrammarObject:
        return InvalidGrammarObject()

    def dispatch_fallback(self, key_type: str, key_string: str) -> BaseGrammarObject:
        raise ValueError(f"Invalid key_type: {key_type}={key_string}")

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        return self._not_supported("json", key_string)

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._not_supported("regex", key_string)

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._not_supported("ebnf", key_string)

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return self._not_supported("structural_tag", key_string)

    def _init_value_dispatch(self, key: Tuple[str, str], require_reasoning: bool) -> BaseGrammarObject:
        s = time.perf_counter()
        key_type, key_string = key
        if key_type == "json":
            grammar = self.dispatch_json(key_string)
        elif key_type == "regex":
            grammar = self.dispatch_regex(key_string)
        elif key_type in ("ebnf", "full_assistant_ebnf"):
            grammar = self.dispatch_ebnf(key_string)
        elif key_type == "structural_tag":
            grammar = self.dispatch_structural_tag(key_string)
        else:
            grammar = self.dispatch_fallback(key_type, key_string)
        if grammar is not None and grammar.grammar_stats is not None:
            grammar.grammar_stats.compilation_time = time.perf_counter() - s
        return grammar

    def get_cached_or_future_value(self, key, require_reasoning: bool):
        value = self.cache.get(key)
        if value:
            copied_value = value.copy()
            copied_value.maybe_init_reasoning(require_reasoning)
            return copied_value, True
        value = self.executor.submit(self._init_value_dispatch, key, require_reasoning)
        return value, False

    def set_cache(self, key, value: BaseGrammarObject):
        self.cache[key] = value

    def reset(self):
        self.cache.clear()


def register_grammar_backend(name, init_func):
    GRAMMAR_BACKEND_REGISTRY[name] = init_func


def create_grammar_backend(server_args, tokenizer, vocab_size: int, eos_token_ids=None,
                           think_end_ids=None):
    name = server_args.grammar_backend
    if name in GRAMMAR_BACKEND_REGISTRY:
        return GRAMMAR_BACKEND_REGISTRY[name](server_args, tokenizer, vocab_size, eos_token_ids)
    raise ValueError(f"Invalid grammar backend: {name}")


def install(monkeypatch) -> None:
    """Make ``import sglang.srt.constrained.base_grammar_backend`` (and the choices module)
    resolve to this file's copies."""
    me = sys.modules[__name__]
    for name in ("sglang", "sglang.srt", "sglang.srt.constrained", "sglang.srt.arg_groups"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "sglang.srt.constrained.base_grammar_backend", me)
    monkeypatch.setitem(sys.modules, "sglang.srt.arg_groups.choices", me)
