"""A token's bytes from the tokenizer's ``decoder`` configuration (``tokenizer.json``): the
steps of its decoders (``ByteLevel``, ``Metaspace``, ``Replace``, ``ByteFallback`` ...) applied to
one token in the middle of a text, and GPT-2's byte-level character map.
"""

from __future__ import annotations

import codecs
import re

from dotjson.errors import VocabularyError


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
