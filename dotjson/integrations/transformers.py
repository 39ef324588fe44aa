"""Constrain Hugging Face ``transformers`` generation with a dotjson :class:`~dotjson.Index`.

>>> from transformers import LogitsProcessorList
>>> from dotjson.integrations.transformers import JSONLogitsProcessor
>>> proc = JSONLogitsProcessor(index)                                # doctest: +SKIP
>>> out = model.generate(**inputs, logits_processor=LogitsProcessorList([proc]),
...                      max_new_tokens=200)                          # doctest: +SKIP

Works with greedy decoding and sampling (``num_beams=1``), batched, with left padding (the
tokenizer's ``padding_side="left"``, which decoder-only generation needs anyway). Beam search is
not supported: beams are reordered between steps, and a dotjson guide row cannot be copied to
another row; the processor raises a :class:`~dotjson.errors.DotjsonValueError` (a ``ValueError``)
when it sees rows whose history was reordered.
"""

from __future__ import annotations

import numpy as np
import torch

from dotjson.errors import DotjsonImportError, DotjsonValueError

try:  # transformers is a dependency, but keep the import error readable
    from transformers import LogitsProcessor as _HFLogitsProcessor
except ImportError as e:  # pragma: no cover - exercised only without transformers
    raise DotjsonImportError(
        f"dotjson.integrations.transformers needs the 'transformers' package, which cannot be "
        f"imported ({e}); expected it installed: pip install transformers"
    ) from e

from dotjson.guide import Guide
from dotjson.processor import LogitsProcessor

__all__ = ["JSONLogitsProcessor"]


class JSONLogitsProcessor(_HFLogitsProcessor):
    """A ``transformers`` logits processor that only lets through tokens an Index allows.

    Parameters
    ----------
    index : dotjson.Index
        The compiled schema (or grammar), built for the model's tokenizer vocabulary.
    mask_value : float, default -inf
        What the scores of disallowed tokens become.

    Notes
    -----
    The processor owns a :class:`~dotjson.Guide` with the batch size of the first ``input_ids``
    it sees (``batch * num_return_sequences``). On the first call of a generation it masks with
    the guide's start token sets; on each later call it feeds the guide the last token of every
    row (the token sampled at the previous step) and masks with the next token sets. Scores wider
    than the vocabulary (padded embedding matrices) have their extra columns masked.

    A row whose document is complete allows EOS (the vocabulary's EOS ids); once it sampled EOS
    only EOS is allowed. ``generate`` pads finished rows with ``pad_token_id``; the processor
    feeds the guide EOS for those rows instead, so any pad id works.

    A call whose ``input_ids`` do not extend the previous call's by one token starts a new
    generation (fresh guide state). Call :meth:`reset` to force that between ``generate`` calls
    that reuse the processor (for instance when a previous output is fed back as the prompt).

    Raises
    ------
    ValueError
        From ``generate``: beam search (``num_beams > 1``) detected, or scores narrower than
        the vocabulary.
    dotjson.errors.TokenNotAllowedError
        A token the previous mask forbade was sampled (another processor changed the scores
        after this one, e.g. one that adds to ``-inf``).
    """

    def __init__(self, index, mask_value: float = float("-inf")):
        self.index = index
        self.mask_value = mask_value
        self._eos = int(index.vocabulary.eos_token_ids[0])
        self._guide: Guide | None = None
        self._processor: LogitsProcessor | None = None
        self.reset()

    @property
    def guide(self) -> Guide | None:
        """The guide of the current generation (None before the first call)."""
        return self._guide

    def reset(self) -> None:
        """Forget the current generation: the next call starts a new document in every row."""
        self._prev_ids: torch.Tensor | None = None
        self._prompt: torch.Tensor | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Mask ``scores`` in place for the rows of ``input_ids`` and return it."""
        if input_ids.dim() != 2:
            raise DotjsonValueError(
                f"Invalid input_ids: expected a 2-D (batch, sequence) tensor, got shape {tuple(input_ids.shape)}"
            )
        batch, length = input_ids.shape
        prev = self._prev_ids
        if prev is not None and self._continues(input_ids, prev):
            last = input_ids[:, -1].detach().to("cpu").numpy().astype(np.int64, copy=True)
            # generate() pads finished rows with pad_token_id; the guide wants EOS there.
            last[self._guide.is_finished()] = self._eos
            token_set = self._guide.get_next_tokensets(last)
        else:
            if self._guide is None or self._guide.batch_size != batch:
                self._guide = Guide(self.index, batch_size=batch)
                self._processor = LogitsProcessor(self._guide, self.mask_value)
            token_set = self._guide.get_start_tokensets()
            self._prompt = input_ids
        self._prev_ids = input_ids
        self._processor(scores, token_set)
        return scores

    def _continues(self, input_ids: torch.Tensor, prev: torch.Tensor) -> bool:
        """True when ``input_ids`` is ``prev`` plus one token per row; raise on beam reordering."""
        if input_ids.shape[0] != prev.shape[0] or input_ids.shape[1] != prev.shape[1] + 1:
            return False
        if prev.device != input_ids.device:
            prev = prev.to(input_ids.device)
        if torch.equal(input_ids[:, :-1], prev):
            return True
        n = self._prompt.shape[1]
        if torch.equal(input_ids[:, :n], self._prompt.to(input_ids.device)):
            raise DotjsonValueError(
                "JSONLogitsProcessor does not support beam search (num_beams > 1): rows of the "
                "same prompt were reordered between steps. Use greedy decoding or sampling "
                "(num_beams=1), with num_return_sequences for several candidates."
            )
        return False
