"""Selecting dotjson as vLLM's structured-output backend (*experimental*, vLLM 0.32 only).

vLLM 0.32 has no registry of structured-output backends: the names are a ``Literal`` in
``StructuredOutputsConfig``, each request is validated by a fixed chain in
``SamplingParams._validate_structured_outputs``, and ``StructuredOutputManager.grammar_init``
builds the backend from a fixed list. Until vLLM opens that list, :func:`register` makes
``structured_outputs_config.backend = "dotjson"`` select :class:`~dotjson.integrations.vllm.DotjsonBackend`
by wrapping exactly those three places; every other backend name takes vLLM's own code
unchanged:

1. ``StructuredOutputsConfig``: ``"dotjson"`` is added to the accepted names (the dataclass
   field's type), and its model validator, which lets only ``xgrammar``/``guidance`` take
   ``disable_any_whitespace``, lets ``dotjson`` take it too (compact JSON,
   ``disallow_whitespace=True``; the validator is replaced in pydantic's record of the class's
   decorators, a pydantic internal); then pydantic's ``rebuild_dataclass`` rebuilds it and
   ``VllmConfig``, which embeds its schema;
2. ``SamplingParams._validate_structured_outputs``: under the ``dotjson`` backend a request is
   checked by dotjson in the front end (the schema, regex or grammar is translated, pure Python,
   no Numba), so a spec dotjson cannot compile is an HTTP 400 and never reaches the engine;
3. ``StructuredOutputManager``: the backend is built when the manager is (at engine start-up,
   after the model runner started, so :func:`dotjson.warmup` runs there and never inside a
   request), and again after ``clear_backend``.

The wrapping is opt-in. The ``vllm.general_plugins`` entry point (which vLLM runs in each of its
processes) calls :func:`register` only when ``DOTJSON_VLLM_BACKEND=1`` is set; an offline
``LLM(...)`` validates its ``structured_outputs_config`` before vLLM loads plugins, so call
:func:`register` before constructing it. ``docs/vllm.md`` has the commands. Any vLLM other than
0.32.x is left alone (a warning says so): the wrapped names are private to vLLM.
"""

from __future__ import annotations

import json
import logging
import os
import typing

from dotjson.errors import DotjsonError

__all__ = ["BACKEND", "ENV", "plugin", "register"]

logger = logging.getLogger("dotjson.integrations.vllm_plugin")

#: The backend name: ``structured_outputs_config={"backend": "dotjson"}``,
#: ``--structured-outputs-config.backend dotjson``.
BACKEND = "dotjson"
#: The environment variable that lets the entry point register the backend.
ENV = "DOTJSON_VLLM_BACKEND"
#: The vLLM releases whose private names :func:`register` wraps.
SUPPORTED = ("0.32.",)

_registered = False


def plugin() -> None:
    """vLLM's ``vllm.general_plugins`` entry point: :func:`register` when ``DOTJSON_VLLM_BACKEND``
    is ``1`` (or ``true``); otherwise nothing, so installing dotjson changes no vLLM code."""
    if os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes"):
        register()


def register() -> bool:
    """Make ``"dotjson"`` a structured-output backend name of this process's vLLM.

    Idempotent, and imports neither dotjson's kernels nor Numba (vLLM's CPU worker breaks when
    Numba is imported before it starts).

    Returns
    -------
    bool
        True when the backend is registered (now or before); False when vLLM is not installed
        or is not a release this plug-in knows (logged as a warning).
    """
    global _registered
    if _registered:
        return True
    try:
        import vllm
        from vllm.config import structured_outputs as so_config
        from vllm.sampling_params import SamplingParams
        from vllm.v1.structured_output import StructuredOutputManager
    except ImportError:
        logger.warning("dotjson: vLLM is not importable here; the dotjson backend is not registered")
        return False
    version = getattr(vllm, "__version__", "?")
    if not version.startswith(SUPPORTED):
        logger.warning("dotjson: vLLM %s is not %s; the dotjson structured-output backend is not "
                       "registered (use the logits processor, docs/vllm.md)", version,
                       " / ".join(v + "x" for v in SUPPORTED))
        return False
    _extend_config(so_config)
    _wrap_validation(SamplingParams)
    _wrap_manager(StructuredOutputManager)
    _registered = True
    logger.info("dotjson: structured-output backend %r registered in vLLM %s (experimental)",
                BACKEND, version)
    return True


def _extend_config(so_config) -> None:
    from pydantic.dataclasses import rebuild_dataclass

    cls = so_config.StructuredOutputsConfig
    names = typing.get_args(so_config.StructuredOutputsBackend)
    if BACKEND not in names:
        extended = typing.Literal[names + (BACKEND,)]
        so_config.StructuredOutputsBackend = extended
        cls.__annotations__["backend"] = extended
        cls.__dataclass_fields__["backend"].type = extended
    check = cls.__pydantic_decorators__.model_validators["_validate_structured_output_config"]
    original = check.func

    def _validate_structured_output_config(self):
        if self.backend != BACKEND:
            return original(self)
        if self.disable_additional_properties:
            raise ValueError("disable_additional_properties is only supported for the guidance "
                             "backend (dotjson closes objects by default: close_objects)")
        return self

    check.func = _validate_structured_output_config
    rebuild_dataclass(cls, force=True)
    # VllmConfig validates its structured_outputs_config with the schema it was built with
    from vllm.config import VllmConfig

    rebuild_dataclass(VllmConfig, force=True)


def _wrap_validation(cls) -> None:
    original = cls._validate_structured_outputs

    def _validate_structured_outputs(self, model_config, structured_outputs_config, tokenizer):
        if (structured_outputs_config is None or self.structured_outputs is None
                or structured_outputs_config.backend != BACKEND):
            return original(self, model_config, structured_outputs_config, tokenizer)
        _validate_request(self, model_config, structured_outputs_config, tokenizer)

    cls._validate_structured_outputs = _validate_structured_outputs


def _validate_request(params, model_config, config, tokenizer) -> None:
    """vLLM's request checks for the ``dotjson`` backend: the generic ones its own method makes
    before choosing a backend, then dotjson's translation of the spec (pure Python)."""
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import check_json_nesting

    so = params.structured_outputs
    if getattr(model_config, "is_diffusion", False):
        raise VLLMValidationError("Structured outputs are not yet supported for diffusion language models.")
    if tokenizer is None:
        raise VLLMValidationError(
            "Structured outputs requires a tokenizer so it can't be used with 'skip_tokenizer_init'")
    if so._backend not in (None, BACKEND):
        raise VLLMValidationError(
            "Request-level structured output backend selection is not supported. The request "
            f"specified '{so._backend}', but vLLM was initialised with '{BACKEND}'.")
    if isinstance(so.choice, list) and not so.choice:
        raise VLLMValidationError(f"Choice '{so.choice}' cannot be an empty list")
    for name in ("grammar", "json"):
        value = getattr(so, name)
        if isinstance(value, str) and not value.strip():
            raise VLLMValidationError(f"structured_outputs.{name} cannot be an empty string")
    if so.json_object is False:
        raise VLLMValidationError("structured_outputs.json_object must be True if set; omit "
                                  "structured_outputs to disable structured outputs")
    if so.regex and "\x00" in so.regex:
        raise VLLMValidationError("structured_outputs.regex must not contain a NUL character ('\\x00')")
    if so.structural_tag is not None:
        raise VLLMValidationError("structured_outputs.structural_tag is not supported by the "
                                  "dotjson backend (JSON schemas, json_object, regex, grammar, choice are)")
    check_json_nesting(so.json)
    try:
        if so.json is not None:
            from dotjson.jsonschema import schema_to_grammar

            schema = so.json if isinstance(so.json, str) else json.dumps(so.json)
            schema_to_grammar(schema, check_language=False,
                              disallow_whitespace=bool(config.disable_any_whitespace))
        elif so.regex is not None:
            from dotjson.regex import regex_to_grammar

            regex_to_grammar(so.regex)
        elif so.grammar is not None:
            from dotjson.ebnf import grammar_to_lark
            from dotjson.embed import load_lark_with_json

            load_lark_with_json(grammar_to_lark(so.grammar))
    except (DotjsonError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise VLLMValidationError(f"Invalid structured_outputs for the dotjson backend: {exc}") from exc
    so._backend = BACKEND
    so.__post_init__()


def _wrap_manager(cls) -> None:
    init, grammar_init = cls.__init__, cls.grammar_init

    def __init__(self, vllm_config):
        init(self, vllm_config)
        config = vllm_config.structured_outputs_config
        if config.backend == BACKEND and not vllm_config.model_config.skip_tokenizer_init:
            _ensure_backend(self)  # engine start-up: kernels load (or compile) here

    def grammar_init_(self, request):
        so = request.sampling_params.structured_outputs if request.sampling_params else None
        if (self.backend is None and request.structured_output_request is not None
                and so is not None and so._backend == BACKEND):
            _ensure_backend(self)  # after clear_backend
        return grammar_init(self, request)

    cls.__init__ = __init__
    cls.grammar_init = grammar_init_


def _ensure_backend(manager) -> None:
    from dotjson.integrations.vllm import DotjsonBackend

    if manager.backend is None:
        config = manager.vllm_config
        manager.backend = DotjsonBackend(config, tokenizer=manager.tokenizer,
                                         vocab_size=config.model_config.get_vocab_size())

