"""The vocabulary file (:meth:`~dotjson.Vocabulary.serialize_to_disk`): magic, version, a JSON
header, 64-byte aligned raw arrays and a SHA-256 of every preceding byte; reading it back
checks every array's dtype, size and range before use.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import numpy as np

from dotjson.errors import DotjsonOSError, DotjsonTypeError, DotjsonValueError, IndexFormatError, VocabularyError
from dotjson.trie import VocabTries, check_trie, plain_split, set_token_bits
from dotjson.vocabulary.tokens import _ABSENT, _TEXT, MAX_TOKEN_BYTES, MAX_VOCAB_SIZE


_MAGIC = b"DOTJSON-VOCAB\x00\r\n"

#: Version 3: the header's ``plain`` names the plain class the tries were split by (its
#: code-point ranges), or is null when the file holds no tries.
#: Version 2: a SHA-256 of every preceding byte (prefix and header included) ends the file; still
#: read, its tries left out (they were split by a class the file does not name).
#: Version 1 checked the payload only (its header, e.g. ``max_len``, was unprotected): refused.
_VERSION = 3
_READS = (2, 3)

_PREFIX = struct.Struct("<16sIIQ")  # magic, version, header length, payload length

_DIGEST = 32

_ALIGN = 64

_DTYPES = {"uint8", "int32", "int64", "uint32"}

#: The dtype each saved array must have (what the kernels are compiled for): the tokens', then
#: the tries' (absent from a file saved without tries).
_TOKEN_DTYPES = {"blob": "uint8", "offsets": "int64", "kinds": "uint8"}
_ARRAY_DTYPES = dict(_TOKEN_DTYPES, plain_bits="uint32")
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

def _read_container(path: Path) -> tuple[int, dict, dict[str, np.ndarray]]:
    from dotjson._files import NotRegularError, read_regular

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

def _parse_container(buf: np.ndarray, path) -> tuple[int, dict, dict[str, np.ndarray]]:
    """The version, the header and the arrays of a vocabulary file's bytes, each array's dtype
    and extent checked."""
    if buf.shape[0] < _PREFIX.size:
        raise IndexFormatError(f"Not a dotjson vocabulary file: {path} is truncated ({buf.shape[0]} bytes)")
    magic, version, hlen, plen = _PREFIX.unpack(buf[: _PREFIX.size].tobytes())
    if magic != _MAGIC:
        raise IndexFormatError(f"Not a dotjson vocabulary file: {path} (bad magic)")
    if version not in _READS:
        old = " (its header is outside its checksum): save it again with this dotjson" if version == 1 else ""
        raise IndexFormatError(
            f"Unsupported vocabulary file version {version} in {path}: expected {' or '.join(map(str, _READS))}{old}"
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
        want = _TOKEN_DTYPES if version >= 3 and meta.get("plain") is None else _ARRAY_DTYPES
        if not isinstance(table, dict) or set(table) != set(want):
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
    return version, meta, arrs

def _bad(path, what):
    raise IndexFormatError(f"Corrupt vocabulary file {path}: {what}")

def _validate_tokens(path, n, eos, blob, offsets, kinds) -> None:
    """Bounds checks of the token table."""

    def bad(what):
        _bad(path, what)

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

def _validate(path, n, eos, blob, offsets, kinds, tries: VocabTries) -> None:
    """Bounds checks so that kernels never index out of range on a hostile file, and the tries
    checked against the tokens and the class they were split by."""

    def bad(what):
        _bad(path, what)

    _validate_tokens(path, n, eos, blob, offsets, kinds)
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
    set_token_bits(bits, plain_ids)
    if not np.array_equal(bits, tries.plain_bits):
        bad("plain bitset disagrees with the plain trie")
    blob_k = blob if blob.shape[0] else np.zeros(1, dtype=np.uint8)
    # the split is the class's: the walk takes a plain subtree whole where a state is unchanged
    # by the class, so a token put there wrongly would be allowed unchecked
    split = plain_split(blob_k, offsets[want], lens[want], tries.plain_class)
    if not np.array_equal(want[split], plain_ids):
        bad(f"the plain trie's tokens are not those of its class {tries.plain_class!r}")
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

_TRIE_FIELDS = ("child_ptr", "child_byte", "child_node", "tok_ptr", "tok_ids", "subtree_end")

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
