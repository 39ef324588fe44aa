"""Saving and loading indexes: versioned, fingerprinted, and free of pickle.

An index directory holds

- ``index.json``: format name and version, the vocabulary's fingerprint, the options, the grammar
  in the internal form and as the Lark text users read, the automaton's rule tables, the memoized transitions and
  the mask keys, and the SHA-256 of ``arrays.npz``;
- ``arrays.npz``: the term store (flat arrays), the state list, the transition table, per-state
  flags and the memoized masks, read with
  ``allow_pickle=False``;
- ``vocabulary.bin``: the vocabulary (its own versioned format), so a directory loads alone;
- ``manifest.json``, written last: the size and SHA-256 of every other file, so that no byte of
  the directory (``index.json`` and the headers included) changes unnoticed, and a save
  interrupted half-way is detected.

Loading checks the manifest first (every listed file, exactly the files above), then the
contents from the very bytes it hashed, then validates every id and shape it reads against
the others, so a truncated, corrupt or foreign directory raises
:class:`~dotjson.errors.IndexFormatError` naming the directory and the file; nothing in it can
run code.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import tempfile
import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np

from . import ir
from ._files import SizeError, read_regular
from .automaton.persist import export_state, import_state
from .automaton.counters import Lanes
from .errors import DotjsonError, DotjsonOSError, DotjsonTypeError, IndexFormatError
from .ir.families import family_from_json, family_to_json
from .vocabulary import _as_path

FORMAT = "dotjson-index"
#: Version 2 added ``manifest.json``; version 3 the term store as flat arrays
#: (:mod:`dotjson.automaton`). Older directories are refused.
VERSION = 10  # 10: the plain class leaves out U+2028 and U+2029 (a saved store's memo facts, the special tokens' reach among them, are its class's); 9: key set tables name their string syntax (KT_SYN: a block in the pool, written from the JSON layer's record); 8: counts of any size in lanes (their anchors in "lanes"); 7: a key set term after a backslash (one term; table: escapes after \\u, short escape bytes); 6: wide objects' key positions as key set terms (tables in the pool); 5: intersections carry F_REP (their counters may be clamped); 4: property_order="any" families store names and values, sets in rule names
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "dotjson-index-manifest"
#: Every file of an index directory, each covered by the manifest.
INDEX_FILES = ("index.json", "arrays.npz", "vocabulary.bin")
#: The manifest lists three files: anything larger is not one (read no further).
MANIFEST_MAX_BYTES = 1 << 16
#: The largest file a manifest may declare (an index's memoized masks are bounded by its
#: ``max_cache_bytes``, :data:`dotjson._config.BUDGETS`).
MAX_FILE_BYTES = 1 << 40


# ------------------------------------------------------------------------------ IR as JSON


def ir_to_json(node: ir.Node):
    if isinstance(node, ir.Lit):
        return ["lit", node.text]
    if isinstance(node, ir.Chars):
        return ["chars", [list(r) for r in node.ranges]]
    if isinstance(node, ir.Seq):
        return ["seq", [ir_to_json(x) for x in node.items]]
    if isinstance(node, ir.Alt):
        return ["alt", [ir_to_json(x) for x in node.items]]
    if isinstance(node, ir.Repeat):
        return ["rep", ir_to_json(node.item), node.min, node.max]
    if isinstance(node, ir.Ref):
        return ["ref", node.name]
    if isinstance(node, ir.And):
        return ["and", [ir_to_json(x) for x in node.items]]
    if isinstance(node, ir.Diff):
        return ["diff", ir_to_json(node.left), ir_to_json(node.right)]
    raise DotjsonTypeError(f"not a grammar node: {node!r}")


def ir_from_json(x) -> ir.Node:
    tag = x[0]
    if tag == "lit":
        if not isinstance(x[1], str):
            raise ValueError("literal is not text")
        return ir.Lit(x[1])
    if tag == "chars":
        rs = tuple((int(lo), int(hi)) for lo, hi in x[1])
        if any(not 0 <= lo <= hi <= ir.MAX_CODEPOINT for lo, hi in rs):
            raise ValueError("character range out of range")
        return ir.Chars(rs)
    if tag == "seq":
        return ir.Seq(tuple(ir_from_json(y) for y in x[1]))
    if tag == "alt":
        return ir.Alt(tuple(ir_from_json(y) for y in x[1]))
    if tag == "rep":
        lo, hi = int(x[2]), (None if x[3] is None else int(x[3]))
        if lo < 0 or (hi is not None and hi < lo):
            raise ValueError("repeat bounds out of range")
        return ir.Repeat(ir_from_json(x[1]), lo, hi)
    if tag == "ref":
        return ir.Ref(str(x[1]))
    if tag == "and":
        return ir.And(tuple(ir_from_json(y) for y in x[1]))
    if tag == "diff":
        return ir.Diff(ir_from_json(x[1]), ir_from_json(x[2]))
    raise ValueError(f"unknown grammar node tag {tag!r}")


def grammar_to_json(g: ir.Grammar) -> dict:
    out = {"start": g.start, "rules": [[n, ir_to_json(b)] for n, b in g.rules.items()]}
    if g.families:
        out["families"] = [family_to_json(f, ir_to_json) for f in g.families]
    return out


def grammar_from_json(d: dict) -> ir.Grammar:
    families = tuple(family_from_json(f, ir_from_json) for f in d.get("families", ()))
    g = ir.Grammar({str(n): ir_from_json(b) for n, b in d["rules"]}, str(d["start"]), families=families)
    for fam in families:
        attach = getattr(fam, "attach", None)  # (a family reading its items over the grammar's rules)
        if attach is not None:
            attach(g)
    return g


# ------------------------------------------------------------------------------ index files


def save_index(index, path) -> None:
    path = _as_path(path, "path")
    try:
        _save_index(index, path)
    except OSError as exc:
        if isinstance(exc, DotjsonError):
            raise
        raise DotjsonOSError(
            exc.errno, f"Cannot write index directory {str(path)!r}: {exc.strerror or exc}"
        ) from None


def _save_index(index, path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    with index._lock:
        st = export_state(index._auto)
        masks, mask_keys = index._masker.export()
        nxt = [[int(k), int(v)] for k, v in index._next.items()]
    arrays = dict(st["arrays"])
    arrays["masks"] = masks
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    blob = buf.getvalue()
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "vocab_fingerprint": index._vocab.fingerprint,
        "n_words": index._n_words,
        "limit": index._limit,
        "max_cache_bytes": index._max_cache_bytes,
        "options": index._options,
        "grammar": grammar_to_json(index._ir),
        "grammar_text": _grammar_text(index),
        "automaton": st["meta"],
        # the counts the lane values of the store stand for (dotjson.automaton.counters.Lanes)
        "lanes": list(index._auto.rules.lanes.anchors),
        "mask_keys": mask_keys,
        "next": nxt,
        "arrays_sha256": hashlib.sha256(blob).hexdigest(),
    }
    _atomic_write(path / "arrays.npz", blob)
    _atomic_write(path / "index.json", json.dumps(meta, separators=(",", ":")).encode("utf-8"))
    index._vocab.serialize_to_disk(path / "vocabulary.bin", index._plain)  # (the tries the index uses)
    write_manifest(path, INDEX_FILES)


def write_manifest(path: Path, names) -> None:
    """Write ``manifest.json``: the size and SHA-256 of each named file of directory ``path``."""
    files = {}
    for name in names:
        data = (path / name).read_bytes()
        files[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest = {"format": MANIFEST_FORMAT, "version": 1, "files": files}
    _atomic_write(path / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8"))


def read_verified(path: Path, names, where: str) -> dict[str, bytes]:
    """The bytes of each named file of ``path``, each checked against ``manifest.json``.

    Raises
    ------
    IndexFormatError
        A missing or unreadable manifest or file, a manifest that does not list exactly
        ``names``, or a file whose size or SHA-256 differs from the manifest's.
    """
    mpath = path / MANIFEST
    try:
        raw = read_regular(mpath, at_most=MANIFEST_MAX_BYTES)
    except FileNotFoundError:
        raise IndexFormatError(
            f"{where} has no {MANIFEST} ({mpath}): the save was interrupted, or it was written "
            f"by a dotjson older than index format {VERSION}; save the index again"
        ) from None
    except OSError as e:
        raise IndexFormatError(f"{where}: cannot read {mpath}: {e}") from None
    try:
        manifest = json.loads(raw.decode("utf-8"))
        ok = (
            isinstance(manifest, dict)
            and manifest.get("format") == MANIFEST_FORMAT
            and manifest.get("version") == 1
            and isinstance(manifest.get("files"), dict)
            and set(manifest["files"]) == set(names)
            and all(
                isinstance(e, dict) and set(e) == {"bytes", "sha256"} and type(e["bytes"]) is int
                and 0 <= e["bytes"] <= MAX_FILE_BYTES and isinstance(e["sha256"], str)
                for e in manifest["files"].values()
            )
        )
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        ok = False
    if not ok:
        raise IndexFormatError(
            f"{where}: {MANIFEST} is corrupt (expected the size and SHA-256 of exactly "
            f"{', '.join(names)})"
        )
    out = {}
    for name in names:
        fpath = path / name
        entry = manifest["files"][name]
        try:
            data = read_regular(fpath, exact=entry["bytes"])  # the declared size, before reading
        except FileNotFoundError:
            raise IndexFormatError(f"{where} is incomplete: {fpath} is missing") from None
        except SizeError as e:
            raise IndexFormatError(
                f"{where}: {name} is truncated or corrupt (checksum mismatch: {e}, as the manifest says)"
            ) from None
        except OSError as e:
            raise IndexFormatError(f"{where}: cannot read {fpath}: {e}") from None
        if len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise IndexFormatError(
                f"{where}: {name} is truncated or corrupt (checksum mismatch: expected "
                f"{entry['bytes']} bytes with SHA-256 {entry['sha256'][:12]}…, found {len(data)} bytes "
                f"with SHA-256 {hashlib.sha256(data).hexdigest()[:12]}…)"
            )
        out[name] = data
    return out


def _atomic_write(dst: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=dst.name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, dst)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _load_npz(blob: bytes) -> dict[str, np.ndarray]:
    """The arrays of an ``arrays.npz`` (as :func:`numpy.savez` writes it), each member's size
    checked before anything is allocated for it.

    ``np.load`` allocates what a member's ``.npy`` header declares before reading its data (a
    header of shape ``(10**12, n)``: a ``MemoryError``) and inflates a deflated member whatever
    its size (3 GiB of zeros from 3 MB). Here a member must be stored uncompressed, so it is no
    larger than the file, and its header's shape times its item size must be exactly the bytes
    that follow the header; only then is it read.

    Raises
    ------
    ValueError
        Anything else: a compressed or oversized member, a header that disagrees with its
        member's size, an object dtype, a zip that is not one.
    """
    try:
        return _read_npz(blob)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, struct.error, zlib.error,
            tokenize.TokenError, SyntaxError) as e:
        # (a member whose bytes fail its CRC, a truncated directory: zipfile's own exceptions;
        # a .npy header that is not a Python literal: numpy's header parser's)
        raise ValueError(f"arrays.npz is not a readable zip file ({type(e).__name__}: {e})") from None


def _read_npz(blob: bytes) -> dict[str, np.ndarray]:
    fmt = np.lib.format
    out: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        for info in zf.infolist():
            name = info.filename
            if not name.endswith(".npy") or name[:-4] in out:
                raise ValueError(f"arrays.npz member {name!r} is not one array of a saved index")
            if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size \
                    or info.file_size > len(blob):
                raise ValueError(
                    f"arrays.npz member {name!r} declares {info.file_size} bytes "
                    f"({info.compress_size} stored, compression {info.compress_type}): expected an "
                    f"uncompressed member within the file's {len(blob)} bytes")
            with zf.open(info) as f:
                version = fmt.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = fmt.read_array_header_1_0(f)
                elif version == (2, 0):
                    shape, fortran, dtype = fmt.read_array_header_2_0(f)
                else:
                    raise ValueError(f"arrays.npz member {name!r} has .npy format version {version}")
                if dtype.hasobject:
                    raise ValueError(f"arrays.npz member {name!r} holds Python objects")
                count = 1
                for d in shape:
                    count *= d
                need = count * dtype.itemsize
                if need != info.file_size - f.tell():
                    raise ValueError(
                        f"arrays.npz member {name!r} declares shape {shape} of {dtype} ({need} bytes) "
                        f"but holds {info.file_size - f.tell()} bytes of data")
            with zf.open(info) as f:
                out[name[:-4]] = fmt.read_array(f, allow_pickle=False)
    return out


def _grammar_text(index):
    """The Lark text, or ``None`` for an any-order grammar too large to write out (rendered, and
    refused, on demand after loading, as before saving)."""
    if not index._ir.families:
        return index.grammar
    from .errors import GrammarError

    try:
        return index.grammar
    except GrammarError:
        return None


def load_index(cls, path, vocabulary=None):
    from .vocabulary import Vocabulary

    path = _as_path(path, "path")
    if vocabulary is not None and not isinstance(vocabulary, Vocabulary):
        raise DotjsonTypeError(
            f"Invalid vocabulary: expected a dotjson.Vocabulary or None, got {type(vocabulary).__name__}"
        )
    where = f"index directory {str(path)!r}"
    if not path.is_dir():
        raise IndexFormatError(f"{where} does not exist or is not a directory")
    files = read_verified(path, INDEX_FILES, where)
    raw, blob = files["index.json"], files["arrays.npz"]
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise IndexFormatError(f"{where}: index.json is corrupt ({type(e).__name__}: {e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise IndexFormatError(f"{where} is not a dotjson index (format {meta.get('format') if isinstance(meta, dict) else None!r})")
    if meta.get("version") != VERSION:
        raise IndexFormatError(
            f"{where} has format version {meta.get('version')!r}; this dotjson reads version {VERSION}"
        )
    if hashlib.sha256(blob).hexdigest() != meta.get("arrays_sha256"):
        raise IndexFormatError(f"{where}: arrays.npz is truncated or corrupt (checksum mismatch)")
    if vocabulary is None:
        try:  # from the bytes checked against the manifest, not a second read of the file
            vocabulary = Vocabulary._from_bytes(files["vocabulary.bin"], path / "vocabulary.bin")
        except DotjsonError as e:
            raise IndexFormatError(f"{where}: {e}") from None
    if vocabulary.fingerprint != meta.get("vocab_fingerprint"):
        raise IndexFormatError(
            f"{where} was built for another vocabulary (fingerprint "
            f"{str(meta.get('vocab_fingerprint'))[:12]}…, given {vocabulary.fingerprint[:12]}…)"
        )
    try:
        arrays = _load_npz(blob)
        grammar = grammar_from_json(meta["grammar"])
        auto = import_state(grammar, meta["automaton"], arrays)
        auto.rules.lanes = Lanes(meta["lanes"])  # (ValueError: not integers >= BAND, too many)
        text = meta.get("grammar_text")
        if not isinstance(text, str) and not (text is None and grammar.families):
            raise ValueError("grammar text missing")
        index = cls._from_saved(
            grammar, vocabulary, meta["options"], auto, int(meta["max_cache_bytes"]), text,
            (int(meta["n_words"]), int(meta["limit"])), arrays["masks"], meta["mask_keys"],
            meta["next"],
        )
    except (KeyError, ValueError, TypeError, IndexError, AttributeError, OSError, RecursionError) as e:
        # RecursionError: a crafted grammar nested past the interpreter's stack.
        raise IndexFormatError(f"{where} is corrupt: {e}") from None
    return index
