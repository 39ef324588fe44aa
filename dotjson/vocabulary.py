"""The vocabulary: the exact bytes every token id adds to the output, the EOS ids, the byte tries.

A :class:`Vocabulary` is built once per tokenizer and shared by every :class:`~dotjson.Index`.
The bytes of a token are what the tokenizer's own decoder produces for that token in the middle
of a text. They are derived from the tokenizer's ``decoder`` configuration (``tokenizer.json``),
step by step, never guessed from token spellings:

- ``ByteLevel`` (GPT-2, Llama 3, Qwen, SmolLM2): each character of the token maps back to one
  byte through GPT-2's ``bytes_to_unicode`` table; a token with a character outside that table
  decodes to its UTF-8 text, as the Rust decoder does.
- ``Metaspace`` and ``Replace("▁", " ")`` (SentencePiece: Llama 2, Mistral, Gemma): ``▁`` becomes a
  space. The decoders that drop the first token's leading space (``Strip`` after ``Fuse``,
  ``Metaspace``'s prepend scheme) act on the start of the whole text only, not on a token in
  context, so they do not change a token's bytes.
- ``ByteFallback``: a token spelled ``<0xNN>`` is the single byte ``0xNN``.
- Added tokens go through the same decoder (the Rust library does the same). Special (control)
  tokens -- BOS, EOS, chat markers, the model's ``unk`` token -- are never emitted as text: they get
  no bytes and stay out of the tries.

See ``docs/vocabulary.md`` for the details per tokenizer family.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
import struct
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .errors import DotjsonOSError, DotjsonTypeError, DotjsonValueError, IndexFormatError, VocabularyError
import itertools

from .trie import ascii_runs, big_subtree_bits, plain_char_counts, plain_length_bits, TokenTrie, VocabTries, _vocab_tries_from_packed, check_trie

__all__ = ["Vocabulary", "bytes_to_unicode"]

# Token kinds, one per id.
_TEXT = 0  # emits its bytes
_SPECIAL = 1  # control token: never emitted as text
_ABSENT = 2  # no token has this id

#: Files any of which makes a directory a tokenizer directory.
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer.model",
    "tokenizer_config.json",
    "vocab.json",
    "vocab.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
)

#: Spellings of end-of-sequence tokens, used only when a bare ``tokenizers.Tokenizer`` carries
#: no EOS metadata.
_KNOWN_EOS = (
    "<|endoftext|>",
    "</s>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|im_end|>",
    "<eos>",
    "<|end|>",
    "<end_of_turn>",
)

#: Most token ids a vocabulary may have (``max_token_id()``). The largest real vocabularies have
#: about 262,000; every id costs memory up front (a byte of kind, 8 bytes of offset, a list slot)
#: and one bit in every mask, so a stray id like ``10**9`` is refused rather than allocated.
MAX_VOCAB_SIZE = 1 << 22
#: Most bytes one token may emit. The walk clamps counted repetitions at one past the longest
#: token, in 16 bits; real tokens are at most a few hundred bytes.
MAX_TOKEN_BYTES = 65534

_BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>\Z")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte to the printable character byte-level BPE vocabularies use."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


_B2U = bytes_to_unicode()
#: str.translate tables: byte-level character → the latin-1 character of its byte, and a table
#: that deletes every byte-level character (what survives is outside the map).
_BL_TO_LATIN1 = {ord(c): b for b, c in _B2U.items()}
_BL_DELETE = {ord(c): None for c in _B2U.values()}
#: The same map as a charmap codec table: encodes a whole vocabulary in one C call.
_BL_ENCODING_MAP = codecs.charmap_build("".join(_B2U[b] for b in range(256)))


# ---------------------------------------------------------------------------------------------
# Decoder configuration → per-token steps
# ---------------------------------------------------------------------------------------------


def _decoder_steps(decoder_cfg: dict | None, pre_tokenizer_cfg: dict | None) -> list[tuple]:
    """Flatten a ``tokenizer.json`` decoder into the per-token steps that matter in context."""
    if decoder_cfg is None:
        # No decoder: the Rust library would join tokens with spaces. Byte-level and metaspace
        # vocabularies that merely omit the decoder are recognised by their pre-tokenizer.
        kinds = _config_types(pre_tokenizer_cfg)
        if "ByteLevel" in kinds:
            return [("bytelevel",)]
        for node in _config_nodes(pre_tokenizer_cfg):
            if node.get("type") == "Metaspace":
                return [("replace", node.get("replacement", "\u2581"), " ")]
        raise VocabularyError(
            "Unsupported tokenizer: it has no decoder and no ByteLevel or Metaspace pre-tokenizer, "
            "so the bytes of its tokens are undefined"
        )
    steps: list[tuple] = []
    fused = False
    for node in _config_nodes(decoder_cfg):
        kind = node.get("type")
        if kind == "ByteLevel":
            steps.append(("bytelevel",))
        elif kind == "Metaspace":
            # Drops the replacement character only in the first token of a text.
            steps.append(("replace", node.get("replacement", "\u2581"), " "))
        elif kind == "Replace":
            pattern = node.get("pattern", {})
            if "String" in pattern:
                steps.append(("replace", pattern["String"], node.get("content", "")))
            elif "Regex" in pattern:
                steps.append(("regex", re.compile(pattern["Regex"]), node.get("content", "")))
            else:
                raise VocabularyError(f"Unsupported Replace decoder pattern {pattern!r}")
        elif kind == "ByteFallback":
            steps.append(("bytefallback",))
        elif kind == "Fuse":
            fused = True  # later steps see the whole text as one token
        elif kind == "Strip":
            if not fused:
                steps.append(("strip", node.get("content", " "), int(node.get("start", 0)),
                              int(node.get("stop", 0))))
            # After Fuse, Strip trims the start/end of the whole text: no effect in context.
        else:
            raise VocabularyError(
                f"Unsupported tokenizer decoder {kind!r}: dotjson derives token bytes from "
                "ByteLevel, Metaspace, Replace, ByteFallback, Fuse and Strip decoders"
            )
    return steps


def _config_nodes(cfg: dict | None) -> list[dict]:
    if not cfg:
        return []
    kind = cfg.get("type")
    if kind == "Sequence":
        out = []
        for sub in cfg.get("decoders") or cfg.get("pretokenizers") or []:
            out.extend(_config_nodes(sub))
        return out
    return [cfg]


def _config_types(cfg: dict | None) -> set[str]:
    return {n.get("type") for n in _config_nodes(cfg)}


def _apply_steps(token: str, steps: list[tuple]) -> bytes:
    """The bytes ``token`` contributes in the middle of a text, following the decoder steps."""
    x: str | bytes = token
    for step in steps:
        if isinstance(x, bytes):
            break  # a byte-fallback byte is final: later string steps do not touch it
        op = step[0]
        if op == "bytelevel":
            if x.translate(_BL_DELETE):
                x = x.encode("utf-8")  # a character outside the byte map: the Rust decoder's fallback
            else:
                x = x.translate(_BL_TO_LATIN1).encode("latin-1")
        elif op == "replace":
            x = x.replace(step[1], step[2])
        elif op == "regex":
            x = step[1].sub(step[2], x)
        elif op == "bytefallback":
            m = _BYTE_FALLBACK.match(x) if len(x) == 6 else None
            if m is not None:
                x = bytes((int(m.group(1), 16),))
        elif op == "strip":
            content, start, stop = step[1], step[2], step[3]
            i = 0
            while i < start and i < len(x) and x[i] == content:
                i += 1
            j = len(x)
            k = 0
            while k < stop and j > i and x[j - 1] == content:
                j -= 1
                k += 1
            x = x[i:j]
    return x if isinstance(x, bytes) else x.encode("utf-8")


def _bytelevel_only(steps: list[tuple]) -> bool:
    # After a ByteLevel step a token is bytes, which later steps leave alone.
    return bool(steps) and steps[0][0] == "bytelevel"


# ---------------------------------------------------------------------------------------------
# Tokenizer plumbing
# ---------------------------------------------------------------------------------------------


def _backend_of(tok):
    """The ``tokenizers.Tokenizer`` behind a transformers tokenizer (converting a slow one)."""
    from tokenizers import Tokenizer

    if isinstance(tok, Tokenizer):
        return tok
    backend = getattr(tok, "backend_tokenizer", None)
    if isinstance(backend, Tokenizer):
        return backend
    backend = getattr(tok, "_tokenizer", None)
    if isinstance(backend, Tokenizer):
        return backend
    try:
        from transformers.convert_slow_tokenizer import convert_slow_tokenizer

        return convert_slow_tokenizer(tok)
    except Exception as exc:  # noqa: BLE001 -- any failure means we cannot read the tokenizer
        raise VocabularyError(
            f"Unsupported tokenizer {type(tok).__name__}: expected a tokenizers.Tokenizer or a "
            f"transformers tokenizer with a fast backend (conversion failed: {exc})"
        ) from exc


def _state_json(obj) -> dict | None:
    if obj is None:
        return None
    return json.loads(obj.__getstate__())


def _read_generation_eos(path: Path | None) -> list[int]:
    if path is None or not path.is_file():
        return []
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VocabularyError(f"Unreadable generation config {path}: {exc}") from exc
    eos = cfg.get("eos_token_id")
    if eos is None:
        return []
    if isinstance(eos, int):
        return [eos]
    if isinstance(eos, list) and all(isinstance(e, int) for e in eos):
        return list(eos)
    raise VocabularyError(f"Invalid eos_token_id in {path}: expected an int or a list of ints, got {eos!r}")


def _normalize_eos(eos, n: int, where: str) -> tuple[int, ...]:
    if eos is None:
        return ()
    if isinstance(eos, (int, np.integer)):
        eos = [eos]
    out = []
    for e in eos:
        if isinstance(e, bool) or not isinstance(e, (int, np.integer)):
            raise VocabularyError(f"Invalid EOS token id {e!r} ({where}): expected an int")
        e = int(e)
        if not 0 <= e < n:
            raise VocabularyError(f"Invalid EOS token id {e} ({where}): expected 0 <= id < {n}")
        if e not in out:
            out.append(e)
    return tuple(out)


def _looks_like_path(s: str) -> bool:
    if s.startswith(("/", "./", "../", "~", "\\")) or s.count("/") > 1:
        return True
    return os.sep != "/" and os.sep in s or bool(re.match(r"^[A-Za-z]:[\\/]", s))


# ---------------------------------------------------------------------------------------------
# The Vocabulary
# ---------------------------------------------------------------------------------------------


_UIDS = itertools.count()


class Vocabulary:
    """The exact output bytes of every token id of a tokenizer, its EOS ids and its byte tries.

    Build one with :meth:`from_pretrained`, :meth:`from_tokenizer` or :meth:`from_tuples`, or
    reload a prepared one with :meth:`deserialize_from_disk`. A vocabulary is immutable.

    Examples
    --------
    >>> vocab = Vocabulary.from_tuples([b"a", b"b", b""], [0, 1, 2], eos_token_ids=[2])
    >>> vocab.token_bytes(1), vocab.max_token_id(), vocab.eos_token_ids
    (b'b', 3, (2,))
    """

    __slots__ = ("_blob", "_offsets", "_kinds", "_eos", "_tries", "_fingerprint", "_list", "_n_tokens",
                 "_walk", "_uid")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray, kinds: np.ndarray,
                 eos_token_ids: tuple[int, ...], tries: VocabTries | None = None,
                 token_list: list[bytes] | None = None):
        # Internal: use the from_* constructors.
        self._blob = blob
        self._offsets = offsets
        self._kinds = kinds
        self._eos = tuple(int(e) for e in eos_token_ids)
        self._tries = tries
        self._fingerprint: str | None = None
        #: this object's number in the process (never reused): keys of process-wide caches
        #: of facts about this vocabulary (the fingerprint costs ~5 ms to compute)
        self._uid = next(_UIDS)
        self._list = token_list
        self._n_tokens = int(np.count_nonzero(kinds != _ABSENT))
        self._walk = None
        # a vocabulary is made just before kernels run: on a cold Numba cache, start the
        # compile helpers now, beside whatever the caller does next (no-op once linked)
        from ._kernels.jit import prelink

        prelink()

    # -- constructors ------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, model_id_or_local_dir, auth_token: str | None = None,
                        revision: str | None = None, *, eos_token_ids=None,
                        **tokenizer_kwargs) -> "Vocabulary":
        """Load the tokenizer of a Hugging Face model (hub id, HF cache or local directory).

        Parameters
        ----------
        model_id_or_local_dir : str or os.PathLike
            A hub model id (``"org/name"``; the HF cache and ``HF_HUB_OFFLINE=1`` work as in
            transformers), a local model/tokenizer directory, or a ``tokenizer.json`` file.
        auth_token : str, optional
            Hugging Face token for gated or private repositories.
        revision : str, optional
            Branch, tag or commit of the hub repository.
        eos_token_ids : int or sequence of int, optional
            Override the EOS ids. By default they are the ``eos_token_id`` of the model's
            ``generation_config.json`` (an int or a list: Llama 3 instruct lists three) followed
            by the tokenizer's own EOS token.
        **tokenizer_kwargs
            Passed to ``transformers.AutoTokenizer.from_pretrained`` (e.g. ``gguf_file=``).

        Returns
        -------
        Vocabulary

        Raises
        ------
        VocabularyError
            The directory, file or model does not exist, holds no tokenizer, or the tokenizer's
            decoder is not one whose token bytes are defined.
        """
        if not isinstance(model_id_or_local_dir, (str, os.PathLike)):
            raise DotjsonTypeError(
                f"Invalid model_id_or_local_dir: expected a hub id, a directory or a file (str or "
                f"os.PathLike), got {type(model_id_or_local_dir).__name__}"
            )
        src = os.fspath(model_id_or_local_dir)
        if not isinstance(src, str):
            raise DotjsonTypeError(f"Invalid model_id_or_local_dir: expected a str path, got {type(src).__name__}")
        path = Path(src).expanduser()
        gen_path: Path | None = None
        if path.is_file():
            if path.suffix == ".gguf":
                tokenizer_kwargs.setdefault("gguf_file", path.name)
                path = path.parent
            elif path.suffix == ".json":
                from tokenizers import Tokenizer

                try:
                    tok = Tokenizer.from_file(str(path))
                except Exception as exc:  # noqa: BLE001
                    raise VocabularyError(f"Cannot load tokenizer file {path}: {exc}") from exc
                gen_eos = _read_generation_eos(path.parent / "generation_config.json")
                return cls._from_tokenizer(tok, eos_token_ids, gen_eos, where=str(path))
            else:
                raise VocabularyError(f"Cannot load a tokenizer from {path}: expected a directory, "
                                      "a tokenizer.json or a .gguf file")
        if path.is_dir():
            gguf = tokenizer_kwargs.get("gguf_file")
            if gguf is not None:
                if not (path / gguf).is_file():
                    raise VocabularyError(f"GGUF file {gguf!r} not found in {path}")
            elif not any((path / f).is_file() for f in _TOKENIZER_FILES):
                raise VocabularyError(
                    f"No tokenizer file in {path}: expected one of {', '.join(_TOKENIZER_FILES)}"
                )
            gen_path = path / "generation_config.json"
            load_from = str(path)
        elif _looks_like_path(src):
            raise VocabularyError(f"Model directory not found: {src}")
        else:
            load_from = src
        if not tokenizer_kwargs:
            # Fast path: tokenizer.json read by the Rust library directly (transformers' own
            # loading costs seconds for a 150k vocabulary); same vocabulary, see _JsonTokenizer.
            fast = _json_tokenizer(path if path.is_dir() else None, src, revision, auth_token)
            if fast is not None:
                if gen_path is None:
                    gen_path = _hub_file(src, "generation_config.json", revision, auth_token)
                return cls._from_tokenizer(fast, eos_token_ids, _read_generation_eos(gen_path), where=src)
        try:
            from transformers import AutoTokenizer

            kwargs = dict(tokenizer_kwargs)
            if auth_token is not None:
                kwargs["token"] = auth_token
            if revision is not None:
                kwargs["revision"] = revision
            tok = AutoTokenizer.from_pretrained(load_from, **kwargs)
        except VocabularyError:
            raise
        except Exception as exc:  # noqa: BLE001 -- OSError, ValueError, hub errors...
            raise VocabularyError(f"Cannot load a tokenizer for {src!r}: {type(exc).__name__}: {exc}") from exc
        if gen_path is None:
            gen_path = _hub_file(src, "generation_config.json", revision, auth_token)
        gen_eos = _read_generation_eos(gen_path)
        return cls._from_tokenizer(tok, eos_token_ids, gen_eos, where=src)

    @classmethod
    def from_tokenizer(cls, tok, eos_token_ids=None) -> "Vocabulary":
        """Build the vocabulary of a transformers tokenizer (fast or slow) or a ``tokenizers.Tokenizer``.

        Parameters
        ----------
        tok : transformers.PreTrainedTokenizerBase or tokenizers.Tokenizer
        eos_token_ids : int or sequence of int, optional
            Override the EOS ids (default: the tokenizer's EOS token; for a bare
            ``tokenizers.Tokenizer``, its special token spelled like an EOS, e.g. ``</s>``).

        Returns
        -------
        Vocabulary

        Raises
        ------
        VocabularyError
            Unsupported decoder, no EOS token found, or an EOS id out of range.
        """
        return cls._from_tokenizer(tok, eos_token_ids, [], where=type(tok).__name__)

    @classmethod
    def _from_tokenizer(cls, tok, eos_override, gen_eos: list[int], where: str) -> "Vocabulary":
        backend = _backend_of(tok)
        steps = _decoder_steps(_state_json(backend.decoder), _state_json(backend.pre_tokenizer))

        added = dict(backend.get_added_tokens_decoder())
        tf_added = getattr(tok, "added_tokens_decoder", None)
        special_ids = {i for i, a in added.items() if a.special}
        if isinstance(tf_added, dict):
            special_ids.update(i for i, a in tf_added.items() if getattr(a, "special", False))
        for i in getattr(tok, "all_special_ids", None) or ():
            special_ids.add(int(i))
        unk = getattr(backend.model, "unk_token", None)
        if unk:
            unk_id = backend.token_to_id(unk)
            if unk_id is not None:
                special_ids.add(unk_id)

        n = max(backend.get_vocab_size(with_added_tokens=True), max(added, default=-1) + 1,
                max(special_ids, default=-1) + 1)
        if backend.id_to_token(n) is not None:  # ids with holes: take the true maximum
            n = max(backend.get_vocab(with_added_tokens=True).values()) + 1
        if n > MAX_VOCAB_SIZE:
            raise VocabularyError(
                f"Unsupported tokenizer {where}: its largest token id is {n - 1}; expected ids below "
                f"{MAX_VOCAB_SIZE} (MAX_VOCAB_SIZE)"
            )
        strings = [backend.id_to_token(i) for i in range(n)]

        kinds = np.zeros(n, dtype=np.uint8)
        for i in [i for i, s in enumerate(strings) if s is None]:
            kinds[i] = _ABSENT
            strings[i] = ""
        for i in special_ids:
            kinds[i] = _SPECIAL
            strings[i] = ""
        blob = None
        if _bytelevel_only(steps):
            # One C pass over all tokens: each byte-level character is one byte. A character
            # outside the map (rare: some added tokens) sends us to the per-token path.
            try:
                blob = codecs.charmap_encode("".join(strings), "strict", _BL_ENCODING_MAP)[0]
            except UnicodeEncodeError:
                blob = None
        if blob is not None:
            lens = np.fromiter(map(len, strings), dtype=np.int64, count=n)
            token_list = None
        else:
            token_list = [_apply_steps(s, steps) if s else b"" for s in strings]
            lens = np.fromiter(map(len, token_list), dtype=np.int64, count=n)
            blob = b"".join(token_list)

        if eos_override is not None:
            eos = _normalize_eos(eos_override, n, "eos_token_ids")
            if not eos:
                raise VocabularyError("eos_token_ids is empty: at least one EOS id is needed")
        else:
            found = list(gen_eos)
            tok_eos = getattr(tok, "eos_token_id", None)
            if isinstance(tok_eos, (int, np.integer)):
                found.append(int(tok_eos))
            if not found:
                for name in _KNOWN_EOS:
                    i = backend.token_to_id(name)
                    if i is not None and i in special_ids:
                        found.append(i)
                        break
            if not found:
                raise VocabularyError(
                    f"No EOS token found for {where}: pass eos_token_ids= explicitly"
                )
            eos = _normalize_eos(found, n, f"EOS of {where}")
        return cls._from_packed(blob, lens, kinds, eos, token_list)

    @classmethod
    def from_tuples(cls, tokens: Sequence[bytes | str], token_ids: Sequence[int], eos_token_ids,
                    *, special_token_ids: Iterable[int] = ()) -> "Vocabulary":
        """Build a vocabulary from raw token bytes, for custom tokenizers.

        Parameters
        ----------
        tokens : sequence of bytes or str
            The exact output of each token (``str`` is encoded as UTF-8). An empty token is
            never emitted.
        token_ids : sequence of int
            The id of each token (unique, non-negative). Ids not listed are absent: never allowed.
        eos_token_ids : int or sequence of int
            The end-of-sequence id(s). They are allowed only where the document is complete and
            never as text.
        special_token_ids : iterable of int, optional
            Control tokens: never emitted as text (their bytes are dropped).

        Returns
        -------
        Vocabulary

        Raises
        ------
        VocabularyError
            Mismatched lengths, duplicate, negative or non-integer ids, an id at or past
            :data:`MAX_VOCAB_SIZE` (checked before anything is allocated), a token that is
            neither bytes nor str, or an EOS id out of range.
        """
        try:
            tokens, token_ids = list(tokens), list(token_ids)
            eos_list = ([eos_token_ids] if isinstance(eos_token_ids, (int, np.integer))
                        else list(eos_token_ids))
            specials = list(special_token_ids)
        except TypeError as exc:
            raise VocabularyError(f"Invalid from_tuples input: expected sequences ({exc})") from None
        if len(tokens) != len(token_ids):
            raise VocabularyError(
                f"Invalid from_tuples input: {len(tokens)} tokens but {len(token_ids)} token ids"
            )
        ids = [_id_arg(i, "token id") for i in token_ids]
        eos_ids = [_id_arg(e, "EOS token id") for e in eos_list]
        specials = [_id_arg(i, "special token id") for i in specials]
        if ids and min(ids) < 0:
            raise VocabularyError(f"Invalid token id {min(ids)}: ids must be non-negative")
        # An EOS id may lie past the listed tokens.
        n = max(max(ids, default=-1), max(eos_ids, default=-1)) + 1
        if n > MAX_VOCAB_SIZE:
            raise VocabularyError(
                f"Invalid token id {n - 1}: expected ids below {MAX_VOCAB_SIZE} (MAX_VOCAB_SIZE; "
                f"every id up to the largest costs memory in the vocabulary and a bit in every mask)"
            )
        special_token_ids = specials
        kinds = np.full(n, _ABSENT, dtype=np.uint8)
        token_list: list[bytes] = [b""] * n
        for t, i in zip(tokens, ids):
            if kinds[i] != _ABSENT:
                raise VocabularyError(f"Invalid from_tuples input: duplicate token id {i}")
            if isinstance(t, str):
                try:
                    t = t.encode("utf-8")
                except UnicodeEncodeError as e:
                    raise VocabularyError(
                        f"Invalid token for id {i}: {t!r} holds the lone surrogate U+{ord(t[e.start]):04X} "
                        f"at index {e.start}; expected text UTF-8 can encode, or the token's bytes") from None
            elif isinstance(t, (bytes, bytearray, memoryview)):
                t = bytes(t)
            else:
                raise VocabularyError(f"Invalid token for id {i}: expected bytes or str, got {type(t).__name__}")
            kinds[i] = _TEXT
            token_list[i] = t
        for i in special_token_ids:
            if not 0 <= i < n:
                raise VocabularyError(f"Invalid special token id {i}: expected 0 <= id < {n}")
            kinds[i] = _SPECIAL
            token_list[i] = b""
        eos = _normalize_eos(eos_token_ids, n, "eos_token_ids")
        if not eos:
            raise VocabularyError("eos_token_ids is empty: at least one EOS id is needed")
        for e in eos:
            if kinds[e] == _ABSENT:
                kinds[e] = _SPECIAL
        return cls._from_list(token_list, kinds, eos)

    @classmethod
    def _from_list(cls, token_list: list[bytes], kinds: np.ndarray, eos: tuple[int, ...]) -> "Vocabulary":
        lens = np.fromiter(map(len, token_list), dtype=np.int64, count=len(token_list))
        return cls._from_packed(b"".join(token_list), lens, kinds, eos, token_list)

    @classmethod
    def _from_packed(cls, blob: bytes, lens: np.ndarray, kinds: np.ndarray, eos: tuple[int, ...],
                     token_list: list[bytes] | None) -> "Vocabulary":
        if lens.shape[0] and int(lens.max()) > MAX_TOKEN_BYTES:
            i = int(np.argmax(lens))
            raise VocabularyError(
                f"Invalid token for id {i}: it emits {int(lens[i])} bytes, expected at most "
                f"{MAX_TOKEN_BYTES} (MAX_TOKEN_BYTES)")
        offsets = np.zeros(lens.shape[0] + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        arr = np.frombuffer(blob, dtype=np.uint8).copy()
        return cls(arr, offsets, kinds, eos, token_list=token_list)

    # -- queries -----------------------------------------------------------------------------

    def token_bytes(self, token_id: int) -> bytes:
        """The exact bytes ``token_id`` adds to the output (``b""`` for special and absent ids).

        Raises
        ------
        VocabularyError
            ``token_id`` outside ``[0, max_token_id())``.
        """
        lst = self._list
        if lst is None:
            lst = self._token_list()
        if (isinstance(token_id, (bool, np.bool_)) or not isinstance(token_id, (int, np.integer))
                or not 0 <= token_id < len(lst)):
            raise VocabularyError(f"Invalid token id {token_id!r}: expected an integer, 0 <= id < {len(lst)}")
        return lst[token_id]

    def _token_list(self) -> list[bytes]:
        if self._list is None:
            data = self._blob.tobytes()
            o = self._offsets.tolist()
            self._list = [data[o[i] : o[i + 1]] for i in range(len(o) - 1)]
        return self._list

    def max_token_id(self) -> int:
        """One past the largest token id: the logits width to allocate."""
        return int(self._kinds.shape[0])

    def __len__(self) -> int:
        """Number of token ids that exist (text and special tokens; holes excluded)."""
        return self._n_tokens

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """The end-of-sequence token id(s), most preferred first."""
        return self._eos

    @property
    def special_token_ids(self) -> tuple[int, ...]:
        """Control tokens: ids that exist but are never emitted as text (EOS among them)."""
        return tuple(int(i) for i in np.flatnonzero(self._kinds == _SPECIAL))

    def is_special(self, token_id: int) -> bool:
        """True for a control token (never emitted as text)."""
        n = self._kinds.shape[0]
        if (isinstance(token_id, (bool, np.bool_)) or not isinstance(token_id, (int, np.integer))
                or not 0 <= token_id < n):
            raise VocabularyError(f"Invalid token id {token_id!r}: expected an integer, 0 <= id < {n}")
        return bool(self._kinds[token_id] == _SPECIAL)

    def emittable_token_ids(self) -> np.ndarray:
        """Ids of the tokens the tries hold: text tokens with non-empty bytes, EOS excluded."""
        lens = np.diff(self._offsets)
        ok = (self._kinds == _TEXT) & (lens > 0)
        if self._eos:
            ok[np.asarray(self._eos, dtype=np.int64)] = False
        return np.flatnonzero(ok)

    @property
    def fingerprint(self) -> str:
        """Hex SHA-256 over the ids, their bytes and the EOS ids (stable across processes)."""
        if self._fingerprint is None:
            h = hashlib.sha256(b"dotjson.vocabulary/1\0")
            h.update(struct.pack("<qq", self.max_token_id(), len(self._eos)))
            h.update(np.asarray(self._eos, dtype="<i8").tobytes())
            h.update(np.ascontiguousarray(self._offsets, dtype="<i8").tobytes())
            h.update(self._blob.tobytes())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    @property
    def tries(self) -> VocabTries:
        """The plain/special byte tries of the emittable tokens, built on first access.

        Equal to ``build_vocab_tries([(token_bytes(i), i) for i in emittable_token_ids()],
        max_token_id())``.
        """
        if self._tries is None:
            ids = self.emittable_token_ids()
            starts = self._offsets[ids]
            lens = self._offsets[ids + 1] - starts
            blob = self._blob if self._blob.shape[0] else np.zeros(1, dtype=np.uint8)
            self._tries = _vocab_tries_from_packed(blob, starts, lens, ids.astype(np.int64),
                                                   self.max_token_id())
        return self._tries

    def _walk_tables(self) -> tuple:
        """Tables the mask walk uses beside the tries, derived on first use and kept with the
        vocabulary (never saved: they follow from the tries): the plain trie's big-subtree
        bitsets (:func:`dotjson.trie.big_subtree_bits`), the special trie's ASCII runs
        (:func:`dotjson.trie.ascii_runs`), the plain tokens by length
        (:func:`dotjson.trie.plain_length_bits`) and the plain trie's characters per node and
        per token (:func:`dotjson.trie.plain_char_counts`), as ``(big_index, big_bits, runs,
        len_row, len_bits, node_chars, tok_chars)``."""
        if self._walk is None:
            tries = self.tries
            self._walk = (*big_subtree_bits(tries.plain, tries.n_words), ascii_runs(tries.special),
                          *plain_length_bits(tries.plain, tries.n_words),
                          *plain_char_counts(tries.plain))
        return self._walk

    def __repr__(self) -> str:
        return (f"Vocabulary({len(self)} tokens, max_token_id={self.max_token_id()}, "
                f"eos_token_ids={self._eos}, fingerprint={self.fingerprint[:12]})")

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocabulary) and self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    # -- serialization -----------------------------------------------------------------------

    def serialize_to_disk(self, path) -> None:
        """Save the vocabulary and its tries to one file (versioned, no pickle).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (replaced atomically).
        """
        path = _as_path(path, "path")
        tries = self.tries
        arrays: list[tuple[str, np.ndarray]] = [
            ("blob", self._blob),
            ("offsets", self._offsets),
            ("kinds", self._kinds),
            ("plain_bits", tries.plain_bits),
        ]
        for name, trie in (("plain", tries.plain), ("special", tries.special)):
            arrays.extend((f"{name}.{k}", v) for k, v in trie.arrays().items())
        _write_container(path, {
            "max_token_id": self.max_token_id(),
            "eos_token_ids": list(self._eos),
            "fingerprint": self.fingerprint,
            "n_words": tries.n_words,
            "max_len": tries.max_len,
        }, arrays)

    @classmethod
    def deserialize_from_disk(cls, path) -> "Vocabulary":
        """Load a vocabulary saved by :meth:`serialize_to_disk`, tries included.

        Raises
        ------
        IndexFormatError
            The file is truncated, corrupt (any byte of it: a SHA-256 covers the whole file, and
            every value is checked against the others), of another version, or not a
            vocabulary file.
        VocabularyError
            ``path`` does not exist or cannot be read.
        DotjsonTypeError
            ``path`` is not a path.
        """
        path = _as_path(path, "path")
        return cls._from_container(*_read_container(path), path)

    @classmethod
    def _from_bytes(cls, data: bytes, path) -> "Vocabulary":
        """A vocabulary from the bytes of a saved file already read (an index directory's,
        checked against its manifest), so the file is not read twice."""
        return cls._from_container(*_parse_container(np.frombuffer(bytearray(data), dtype=np.uint8), path), path)

    @classmethod
    def _from_container(cls, meta: dict, arrs: dict, path) -> "Vocabulary":
        try:
            n = _meta_int(meta, "max_token_id")
            eos_list = meta["eos_token_ids"]
            if not isinstance(eos_list, list) or not all(type(e) is int for e in eos_list):
                raise ValueError("eos_token_ids is not a list of integers")
            eos = tuple(eos_list)
            n_words = _meta_int(meta, "n_words")
            max_len = _meta_int(meta, "max_len")
            want_fp = meta["fingerprint"]
            if not isinstance(want_fp, str):
                raise ValueError("fingerprint is not text")
            blob, offsets, kinds = arrs["blob"], arrs["offsets"], arrs["kinds"]
            tries = VocabTries(
                plain=TokenTrie(**{k: arrs[f"plain.{k}"] for k in _TRIE_FIELDS}),
                special=TokenTrie(**{k: arrs[f"special.{k}"] for k in _TRIE_FIELDS}),
                plain_bits=arrs["plain_bits"],
                n_words=n_words,
                max_len=max_len,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(f"Corrupt vocabulary file {path}: missing or invalid field ({exc})") from exc
        _validate(path, n, eos, blob, offsets, kinds, tries)
        vocab = cls(blob, offsets, kinds, eos, tries=tries)
        if vocab.fingerprint != want_fp:
            raise IndexFormatError(f"Corrupt vocabulary file {path}: fingerprint mismatch")
        return vocab


def _id_arg(x, what: str) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise VocabularyError(f"Invalid {what} {x!r}: expected an integer")
    return int(x)


def _meta_int(meta: dict, key: str) -> int:
    v = meta[key]
    if type(v) is not int:
        raise ValueError(f"{key} is {v!r}, not an integer")
    return v


def _as_path(path, what: str) -> Path:
    try:
        p = Path(os.fspath(path))
    except TypeError:
        raise DotjsonTypeError(f"Invalid {what}: expected a str or os.PathLike, got {type(path).__name__}") from None
    raw = os.fspath(path)
    if not raw:  # Path("") is ".": a save would scatter its files into the working directory
        raise DotjsonValueError(f"Invalid {what}: expected a non-empty path, got {raw!r}")
    if "\0" in raw:  # (open() would raise a bare ValueError)
        raise DotjsonValueError(f"Invalid {what}: expected a path without NUL characters, got {raw!r}")
    return p


_TRIE_FIELDS = ("child_ptr", "child_byte", "child_node", "tok_ptr", "tok_ids", "subtree_end")


def _hub_file(repo_id: str, filename: str, revision, token) -> Path | None:
    """A file of a hub repository from the HF cache (or the hub unless offline); None if absent."""
    try:
        import huggingface_hub as hh

        cached = hh.try_to_load_from_cache(repo_id, filename, revision=revision)
        if isinstance(cached, str):
            return Path(cached)
        if cached is not None:  # known to be absent
            return None
        if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
            return None
        return Path(hh.hf_hub_download(repo_id, filename, revision=revision, token=token))
    except Exception:  # noqa: BLE001 -- no generation config is a normal case
        return None


_SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def _token_content(t) -> str | None:
    if isinstance(t, str):
        return t
    if isinstance(t, dict) and isinstance(t.get("content"), str):
        return t["content"]
    return None


class _JsonTokenizer:
    """A ``tokenizer.json`` plus its ``tokenizer_config.json``, read without transformers.

    Exposes what :meth:`Vocabulary._from_tokenizer` reads from a transformers tokenizer: the Rust
    backend, ``eos_token_id`` and ``all_special_ids`` (the named special tokens, the additional
    ones and the ``added_tokens_decoder`` entries marked special).
    """

    def __init__(self, backend, config: dict):
        self.backend_tokenizer = backend
        names = [_token_content(config.get(k)) for k in _SPECIAL_KEYS]
        extra = config.get("additional_special_tokens") or config.get("extra_special_tokens") or []
        if isinstance(extra, dict):
            extra = list(extra.values())
        names += [_token_content(t) for t in extra]
        ids = set()
        for name in names:
            if name is None:
                continue
            i = backend.token_to_id(name)
            if i is None:  # transformers would add it as a new token: let transformers do it
                raise LookupError(name)
            ids.add(i)
        for k, v in (config.get("added_tokens_decoder") or {}).items():
            if isinstance(v, dict) and v.get("special"):
                ids.add(int(k))
        self.all_special_ids = sorted(ids)
        eos = _token_content(config.get("eos_token"))
        self.eos_token_id = backend.token_to_id(eos) if eos is not None else None


def _json_tokenizer(local_dir: Path | None, repo_id: str, revision, token) -> _JsonTokenizer | None:
    """The fast-path tokenizer of a local directory or hub repo, or None to use transformers."""
    try:
        from tokenizers import Tokenizer

        if local_dir is not None:
            tj, tc = local_dir / "tokenizer.json", local_dir / "tokenizer_config.json"
            if not tj.is_file():
                return None
        else:
            tj = _hub_file(repo_id, "tokenizer.json", revision, token)
            if tj is None:
                return None
            tc = _hub_file(repo_id, "tokenizer_config.json", revision, token)
        config = json.loads(tc.read_text(encoding="utf-8")) if tc is not None and tc.is_file() else {}
        if not isinstance(config, dict) or config.get("auto_map"):
            return None  # custom tokenizer code: leave it to transformers
        return _JsonTokenizer(Tokenizer.from_file(str(tj)), config)
    except Exception:  # noqa: BLE001 -- anything unusual: transformers decides
        return None


# ---------------------------------------------------------------------------------------------
# File container: magic, version, JSON header, 64-byte aligned raw arrays, CRC32 of the payload
# ---------------------------------------------------------------------------------------------

_MAGIC = b"DOTJSON-VOCAB\x00\r\n"
#: Version 2: a SHA-256 of every preceding byte (prefix and header included) ends the file.
#: Version 1 checked the payload only (its header, e.g. ``max_len``, was unprotected): refused.
_VERSION = 2
_PREFIX = struct.Struct("<16sIIQ")  # magic, version, header length, payload length
_DIGEST = 32
_ALIGN = 64
_DTYPES = {"uint8", "int32", "int64", "uint32"}
#: The dtype each saved array must have (what the kernels are compiled for).
_ARRAY_DTYPES = {"blob": "uint8", "offsets": "int64", "kinds": "uint8", "plain_bits": "uint32"}
for _t in ("plain", "special"):
    _ARRAY_DTYPES.update({f"{_t}.child_ptr": "int32", f"{_t}.child_byte": "uint8",
                          f"{_t}.child_node": "int32", f"{_t}.tok_ptr": "int32",
                          f"{_t}.tok_ids": "int32", f"{_t}.subtree_end": "int32"})


def _write_container(path: Path, meta: dict, arrays: list[tuple[str, np.ndarray]]) -> None:
    table = {}
    chunks = []
    off = 0
    for name, a in arrays:
        a = np.ascontiguousarray(a)
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        pad = (-off) % _ALIGN
        if pad:
            chunks.append(b"\0" * pad)
            off += pad
        table[name] = [a.dtype.name, list(a.shape), off, a.nbytes]
        chunks.append(a.tobytes())
        off += a.nbytes
    payload_len = off
    header = dict(meta, arrays=table)
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * ((-(_PREFIX.size + len(hbytes))) % _ALIGN)
    digest = hashlib.sha256()
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            for c in (_PREFIX.pack(_MAGIC, _VERSION, len(hbytes), payload_len), hbytes, *chunks):
                digest.update(c)
                f.write(c)
            f.write(digest.digest())
        os.replace(tmp, path)
    except OSError as exc:
        raise DotjsonOSError(exc.errno, f"Cannot write vocabulary file {path}: {exc.strerror or exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()


def _read_container(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    from ._files import NotRegularError, read_regular

    if not path.is_file():
        raise VocabularyError(
            f"No vocabulary file at {path}: "
            + ("it is a directory" if path.is_dir() else "the file does not exist"
               if not path.exists() else "it is not a regular file")
        )
    try:
        data = read_regular(path)
    except NotRegularError as exc:
        raise VocabularyError(f"No vocabulary file at {path}: {exc}") from None
    except OSError as exc:
        raise VocabularyError(f"Cannot read vocabulary file {path}: {exc}") from None
    return _parse_container(np.frombuffer(bytearray(data), dtype=np.uint8), path)


def _parse_container(buf: np.ndarray, path) -> tuple[dict, dict[str, np.ndarray]]:
    if buf.shape[0] < _PREFIX.size:
        raise IndexFormatError(f"Not a dotjson vocabulary file: {path} is truncated ({buf.shape[0]} bytes)")
    magic, version, hlen, plen = _PREFIX.unpack(buf[: _PREFIX.size].tobytes())
    if magic != _MAGIC:
        raise IndexFormatError(f"Not a dotjson vocabulary file: {path} (bad magic)")
    if version != _VERSION:
        old = " (its header is outside its checksum): save it again with this dotjson" if version == 1 else ""
        raise IndexFormatError(
            f"Unsupported vocabulary file version {version} in {path}: expected {_VERSION}{old}"
        )
    start = _PREFIX.size + hlen
    if buf.shape[0] != start + plen + _DIGEST:
        raise IndexFormatError(
            f"Truncated or corrupt vocabulary file {path}: expected {start + plen + _DIGEST} bytes, "
            f"found {buf.shape[0]}"
        )
    body = buf[: start + plen]
    if hashlib.sha256(body).digest() != buf[start + plen :].tobytes():
        raise IndexFormatError(f"Corrupt vocabulary file {path}: checksum mismatch (SHA-256 of the whole file)")
    try:
        meta = json.loads(buf[_PREFIX.size : start].tobytes().decode("utf-8"))
        table = meta["arrays"]
        if not isinstance(table, dict) or set(table) != set(_ARRAY_DTYPES):
            raise ValueError("the array table does not list exactly the vocabulary's arrays")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise IndexFormatError(f"Corrupt vocabulary file {path}: unreadable header ({exc})") from None
    payload = buf[start : start + plen]
    arrs = {}
    try:
        for name, (dtype, shape, off, nbytes) in table.items():
            if dtype not in _DTYPES or dtype != _ARRAY_DTYPES[name]:
                raise ValueError(f"dtype {dtype!r} of {name}")
            dt = np.dtype(dtype).newbyteorder("<")
            if not (isinstance(shape, list) and len(shape) == 1 and type(shape[0]) is int
                    and type(off) is int and type(nbytes) is int):
                raise ValueError(f"shape or extent of {name}")
            count = shape[0]
            if count < 0 or count * dt.itemsize != nbytes or off < 0 or off + nbytes > plen or off % dt.itemsize:
                raise ValueError(f"extent of {name}")
            arrs[name] = payload[off : off + nbytes].view(dt).astype(np.dtype(dtype), copy=False)
    except (ValueError, TypeError) as exc:
        raise IndexFormatError(f"Corrupt vocabulary file {path}: bad array table ({exc})") from exc
    return meta, arrs


def _validate(path, n, eos, blob, offsets, kinds, tries: VocabTries) -> None:
    """Bounds checks so that kernels never index out of range on a hostile file."""

    def bad(what):
        raise IndexFormatError(f"Corrupt vocabulary file {path}: {what}")

    if not 0 <= n <= MAX_VOCAB_SIZE:
        bad(f"max_token_id {n}: expected 0 <= max_token_id <= {MAX_VOCAB_SIZE}")
    if kinds.shape[0] != n or offsets.shape[0] != n + 1:
        bad("token table sizes disagree")
    if n and (offsets[0] != 0 or offsets[-1] != blob.shape[0] or np.any(np.diff(offsets) < 0)):
        bad("token offsets")
    if kinds.size and kinds.max() > _ABSENT:
        bad("token kinds")
    if not eos or any(not 0 <= e < n for e in eos):
        bad("EOS ids")
    if tries.n_words != (n + 31) // 32 or tries.plain_bits.shape[0] != tries.n_words:
        bad("plain bitset size")
    for name, t in (("plain", tries.plain), ("special", tries.special)):
        nn = t.subtree_end.shape[0]
        if nn < 1 or t.child_ptr.shape[0] != nn + 1 or t.tok_ptr.shape[0] != nn + 1:
            bad(f"{name} trie sizes")
        if t.child_ptr[0] != 0 or t.child_ptr[-1] != t.child_byte.shape[0] or np.any(np.diff(t.child_ptr) < 0):
            bad(f"{name} trie child pointers")
        if t.child_node.shape[0] != t.child_byte.shape[0]:
            bad(f"{name} trie edges")
        if t.child_node.size and (t.child_node.min() < 1 or t.child_node.max() >= nn):
            bad(f"{name} trie child nodes")
        if t.tok_ptr[0] != 0 or t.tok_ptr[-1] != t.tok_ids.shape[0] or np.any(np.diff(t.tok_ptr) < 0):
            bad(f"{name} trie token pointers")
        if t.tok_ids.size and (t.tok_ids.min() < 0 or t.tok_ids.max() >= n):
            bad(f"{name} trie token ids")
        idx = np.arange(nn, dtype=np.int64)
        if np.any(t.subtree_end <= idx) or np.any(t.subtree_end > nn):
            bad(f"{name} trie subtree ends")
        if t.child_node.size and np.any(t.child_node <= np.repeat(idx, np.diff(t.child_ptr))):
            bad(f"{name} trie order")
    # Values against each other: the tries must hold exactly the emittable tokens, spelled by
    # their paths, and max_len (which sizes the walk's stacks) must be the deepest path.
    lens = np.diff(offsets)
    emit = (kinds == _TEXT) & (lens > 0)
    if eos:
        emit[np.asarray(eos, dtype=np.int64)] = False
    want = np.flatnonzero(emit)
    plain_ids = np.sort(tries.plain.tok_ids.astype(np.int64))
    special_ids = np.sort(tries.special.tok_ids.astype(np.int64))
    if not np.array_equal(np.union1d(plain_ids, special_ids), want) or \
            plain_ids.shape[0] + special_ids.shape[0] != want.shape[0]:
        bad("the tries do not hold exactly the emittable tokens")
    bits = np.zeros(tries.n_words, dtype=np.uint32)
    if plain_ids.size:
        np.bitwise_or.at(bits, plain_ids >> 5, (np.uint32(1) << (plain_ids & 31).astype(np.uint32)))
    if not np.array_equal(bits, tries.plain_bits):
        bad("plain bitset disagrees with the plain trie")
    blob_k = blob if blob.shape[0] else np.zeros(1, dtype=np.uint8)
    deepest = 0
    for name, t in (("plain", tries.plain), ("special", tries.special)):
        d = check_trie(t.child_ptr, t.child_byte, t.child_node, t.tok_ptr, t.tok_ids, t.subtree_end,
                       blob_k, offsets)
        if d < 0:
            bad(f"{name} trie structure (code {d}): its paths do not spell its tokens")
        deepest = max(deepest, int(d))
    longest = int(lens[want].max()) if want.size else 0
    if tries.max_len > MAX_TOKEN_BYTES:
        bad(f"max_len {tries.max_len}: expected at most {MAX_TOKEN_BYTES} (MAX_TOKEN_BYTES)")
    if tries.max_len != longest or deepest != longest:
        bad(f"max_len {tries.max_len}: the longest emittable token has {longest} bytes")
