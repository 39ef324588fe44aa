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
import itertools
import os
import struct
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from dotjson.errors import DotjsonTypeError, IndexFormatError, VocabularyError
from dotjson.trie import (
    MAX_CLASS_TABLES, ascii_runs, big_subtree_bits, class_tables, plain_below_bytes, plain_char_counts,
    plain_length_bits, PlainClass, TokenTrie, VocabTries,
    _vocab_tries_from_packed,
)
from dotjson.vocabulary.decoders import (
    _BL_ENCODING_MAP, bytes_to_unicode, _apply_steps, _bytelevel_only, _decoder_steps,
)
from dotjson.vocabulary.fileformat import (
    _TRIE_FIELDS, _as_path, _meta_int, _parse_container, _read_container, _validate, _validate_tokens,
    _write_container,
)
from dotjson.vocabulary.loading import (
    _KNOWN_EOS, _TOKENIZER_FILES, _backend_of, _hub_file, _json_tokenizer, _looks_like_path,
    _normalize_eos, _read_generation_eos, _state_json,
)
from dotjson.vocabulary.tokens import _ABSENT, _SPECIAL, _TEXT, MAX_TOKEN_BYTES, MAX_VOCAB_SIZE

__all__ = ["Vocabulary", "bytes_to_unicode"]


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

    __slots__ = ("_blob", "_offsets", "_kinds", "_eos", "_tries", "_fingerprint", "_list", "_data", "_n_tokens",
                 "_walk", "_classes", "_uid")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray, kinds: np.ndarray,
                 eos_token_ids: tuple[int, ...], tries: VocabTries | None = None,
                 token_list: list[bytes] | None = None):
        # Internal: use the from_* constructors.
        self._blob = blob
        self._offsets = offsets
        self._kinds = kinds
        self._eos = tuple(int(e) for e in eos_token_ids)
        #: the tries per plain class they were split by (first built first)
        self._tries: dict[PlainClass, VocabTries] = {} if tries is None else {tries.plain_class: tries}
        self._fingerprint: str | None = None
        #: this object's number in the process (never reused): keys of process-wide caches
        #: of facts about this vocabulary (the fingerprint costs ~5 ms to compute)
        self._uid = next(_UIDS)
        self._list = token_list
        self._data = None  # the packed bytes as one bytes object, made on first use
        self._n_tokens = int(np.count_nonzero(kinds != _ABSENT))
        self._walk: dict[PlainClass, tuple] = {}
        self._classes: dict[tuple, tuple] = {}  # (plain class, byte class) -> class_tables
        # a vocabulary is made just before kernels run: on a cold Numba cache, start the
        # compile helpers now, beside whatever the caller does next (no-op once linked)
        from dotjson._kernels.jit import prelink

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
        n = len(lst) if lst is not None else self._offsets.shape[0] - 1
        if (isinstance(token_id, (bool, np.bool_)) or not isinstance(token_id, (int, np.integer))
                or not 0 <= token_id < n):
            raise VocabularyError(f"Invalid token id {token_id!r}: expected an integer, 0 <= id < {n}")
        if lst is not None:
            return lst[token_id]
        # (a slice of the packed bytes: a list of every token's bytes costs 12 ms to build on
        # Llama 3, in the first next_state of the process, and a 128k-item list for the
        # collector to walk while it is young)
        data = self._data
        if data is None:
            data = self._data = self._blob.tobytes()
        o = self._offsets
        return data[o[token_id] : o[token_id + 1]]

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

    def tries_for(self, plain: PlainClass) -> VocabTries:
        """The plain/special byte tries of the emittable tokens split by ``plain``, built on first
        use and kept with the vocabulary (an :class:`~dotjson.Index` hands down its class: the
        JSON layer's :data:`~dotjson.jsonschema.jsonstr.PLAIN_CLASS`).

        Equal to ``build_vocab_tries([(token_bytes(i), i) for i in emittable_token_ids()],
        max_token_id(), plain)``.
        """
        tries = self._tries.get(plain)
        if tries is None:
            if not isinstance(plain, PlainClass):
                raise DotjsonTypeError(f"Invalid plain class: expected a PlainClass, got {type(plain).__name__}")
            ids = self.emittable_token_ids()
            starts = self._offsets[ids]
            lens = self._offsets[ids + 1] - starts
            blob = self._blob if self._blob.shape[0] else np.zeros(1, dtype=np.uint8)
            tries = _vocab_tries_from_packed(blob, starts, lens, ids.astype(np.int64), self.max_token_id(), plain)
            tries = self._tries.setdefault(plain, tries)  # (another thread's, if it was first)
        return tries

    def _walk_tables(self, plain: PlainClass) -> tuple:
        """Tables the mask walk uses beside the tries, derived on first use and kept with the
        vocabulary (never saved: they follow from the tries): the plain trie's big-subtree
        bitsets (:func:`dotjson.trie.big_subtree_bits`), the special trie's ASCII runs
        (:func:`dotjson.trie.ascii_runs`), the plain tokens by length
        (:func:`dotjson.trie.plain_length_bits`) and the plain trie's characters per node and
        per token (:func:`dotjson.trie.plain_char_counts`) and the bytes below each of its nodes
        (:func:`dotjson.trie.plain_below_bytes`), as ``(big_index, big_bits, runs, len_row,
        len_bits, node_chars, tok_chars, below)``, for the tries of class ``plain``."""
        walk = self._walk.get(plain)
        if walk is None:
            tries = self.tries_for(plain)
            chars = plain_char_counts(tries.plain)
            walk = (*big_subtree_bits(tries.plain, tries.n_words), ascii_runs(tries.special, plain),
                    *plain_length_bits(tries.plain, tries.n_words, chars[1]), *chars,
                    plain_below_bytes(tries.plain))
            walk = self._walk.setdefault(plain, walk)
        return walk

    def _class_tables(self, plain: PlainClass, words: np.ndarray) -> tuple:
        """The tables of byte class ``words`` (four ``uint64`` words, bit ``b`` of word
        ``b >> 6`` for byte ``b``) at the root of a mask walk over the tries of class ``plain``
        (:func:`dotjson.trie.class_tables`), computed on first use and kept with the
        vocabulary, at most :data:`~dotjson.trie.MAX_CLASS_TABLES` classes (emptied when full;
        never saved)."""
        key = (plain, words.tobytes())
        hit = self._classes.get(key)
        if hit is None:
            tries = self.tries_for(plain)
            b = np.arange(256)
            cmask = (words[b >> 6] >> (b & 63).astype(np.uint64)) & np.uint64(1)
            *_, tok_chars, below = self._walk_tables(plain)
            hit = class_tables(tries.special, tries.plain, tries.n_words, cmask.astype(bool),
                               plain_below=below, plain_tchars=tok_chars)
            if len(self._classes) >= MAX_CLASS_TABLES:
                self._classes.clear()
            hit = self._classes.setdefault(key, hit)
        return hit

    def __repr__(self) -> str:
        return (f"Vocabulary({len(self)} tokens, max_token_id={self.max_token_id()}, "
                f"eos_token_ids={self._eos}, fingerprint={self.fingerprint[:12]})")

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocabulary) and self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    # -- serialization -----------------------------------------------------------------------

    def serialize_to_disk(self, path, plain: PlainClass | None = None) -> None:
        """Save the vocabulary and its tries to one file (versioned, no pickle).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (replaced atomically).
        plain : PlainClass, optional
            The class whose tries to save (built if need be). By default the tries built first
            (those of the first index over this vocabulary), or none when none were built: a
            loaded vocabulary builds them at first use. The file records the class's ranges.
        """
        path = _as_path(path, "path")
        if plain is not None:
            tries = self.tries_for(plain)
        else:
            tries = next(iter(self._tries.values()), None)
        arrays: list[tuple[str, np.ndarray]] = [
            ("blob", self._blob),
            ("offsets", self._offsets),
            ("kinds", self._kinds),
        ]
        meta = {
            "max_token_id": self.max_token_id(),
            "eos_token_ids": list(self._eos),
            "fingerprint": self.fingerprint,
            "plain": None,
        }
        if tries is not None:
            arrays.append(("plain_bits", tries.plain_bits))
            for name, trie in (("plain", tries.plain), ("special", tries.special)):
                arrays.extend((f"{name}.{k}", v) for k, v in trie.arrays().items())
            meta.update(plain=[list(r) for r in tries.plain_class.ranges], n_words=tries.n_words,
                        max_len=tries.max_len)
        _write_container(path, meta, arrays)

    @classmethod
    def deserialize_from_disk(cls, path) -> "Vocabulary":
        """Load a vocabulary saved by :meth:`serialize_to_disk`, tries included (kept for the
        class the file records; another class's are built at first use, and so are the tries of
        a version 2 file, which does not record its class).

        Raises
        ------
        IndexFormatError
            The file is truncated, corrupt (any byte of it: a SHA-256 covers the whole file, and
            every value is checked against the others, the tries' split against the class the
            file records), of another version, or not a vocabulary file.
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
    def _from_container(cls, version: int, meta: dict, arrs: dict, path) -> "Vocabulary":
        try:
            n = _meta_int(meta, "max_token_id")
            eos_list = meta["eos_token_ids"]
            if not isinstance(eos_list, list) or not all(type(e) is int for e in eos_list):
                raise ValueError("eos_token_ids is not a list of integers")
            eos = tuple(eos_list)
            want_fp = meta["fingerprint"]
            if not isinstance(want_fp, str):
                raise ValueError("fingerprint is not text")
            blob, offsets, kinds = arrs["blob"], arrs["offsets"], arrs["kinds"]
            # a version 2 file's tries were split by a class it does not name: built again
            ranges = meta["plain"] if version >= 3 else None
            tries = None
            if ranges is not None:
                if not isinstance(ranges, list):
                    raise ValueError("plain is not a list of ranges")
                tries = VocabTries(
                    plain=TokenTrie(**{k: arrs[f"plain.{k}"] for k in _TRIE_FIELDS}),
                    special=TokenTrie(**{k: arrs[f"special.{k}"] for k in _TRIE_FIELDS}),
                    plain_bits=arrs["plain_bits"],
                    n_words=_meta_int(meta, "n_words"),
                    max_len=_meta_int(meta, "max_len"),
                    plain_class=PlainClass(ranges),
                )
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(f"Corrupt vocabulary file {path}: missing or invalid field ({exc})") from exc
        if tries is None:
            _validate_tokens(path, n, eos, blob, offsets, kinds)
        else:
            _validate(path, n, eos, blob, offsets, kinds, tries)
        vocab = cls(blob, offsets, kinds, eos, tries=tries)
        if vocab.fingerprint != want_fp:
            raise IndexFormatError(f"Corrupt vocabulary file {path}: fingerprint mismatch")
        return vocab

def _id_arg(x, what: str) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise VocabularyError(f"Invalid {what} {x!r}: expected an integer")
    return int(x)
