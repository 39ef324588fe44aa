"""Finding a tokenizer: a local directory or a hub repository (``tokenizer.json`` read without
``transformers`` where it can be), its Rust backend, and its end-of-sequence ids
(``generation_config.json``, the tokenizer's metadata, known spellings).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

from dotjson.errors import VocabularyError


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
