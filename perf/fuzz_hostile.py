"""Hostile-input fuzzing: random schemas, random bytes in every file of a saved index, random
logits buffers. Reports crashes, hangs and raw exceptions (anything not a ``DotjsonError``).

Every input is made from ``(kind, seed)`` alone, so a failure is replayed with
``--kind KIND --seed SEED --n 1``. Inputs run in a worker subprocess with a memory limit; the
parent gives each one ``--timeout`` seconds and counts a worker that overruns (killed, then
restarted) as a hang, and one that dies (a signal, a segfault) as a crash. Accepted outcomes are
a result (an index built and stepped, a directory loaded, a buffer masked exactly as the token
set says) or a :class:`dotjson.errors.DotjsonError` subclass.

Kinds:

- ``schema``: a random schema (keywords with random and hostile values: huge and long numbers,
  wrong types, deep nesting, broken patterns and references), sometimes as mangled JSON text;
  when it compiles, a few random steps of a guide (allowed tokens sampled from its masks),
  ``check`` on the resulting tokens and ``accepts`` on random text.
- ``index-file``: a small saved index with one of its files (``manifest.json``,
  ``index.json``, ``arrays.npz``, ``vocabulary.bin``) mutated: bit flips, truncation,
  random bytes, a random byte run, re-signed (manifest and checksums recomputed, so the
  content checks are reached), or the file swapped for random bytes of a random length.
- ``processor``: a random logits buffer (NumPy arrays of random dtype, shape and strides,
  including overlapping ``as_strided`` views; lists of rows; torch tensors expanded, sparse,
  meta, or strided) masked against a random token set; a buffer that is accepted must come out
  masked exactly.

Usage::

    python perf/fuzz_hostile.py --n 10000            # about 3,300 inputs of each kind
    python perf/fuzz_hostile.py --kind schema --seed 1234 --n 1 -v
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = ("schema", "index-file", "processor")

# ------------------------------------------------------------------------------ the worker


def _rand_number(rng: random.Random):
    r = rng.random()
    if r < 0.3:
        return rng.randint(-100, 100)
    if r < 0.45:
        return rng.choice([1, -1]) * rng.randint(0, 10 ** rng.randint(20, 60))
    if r < 0.6:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 6))
    if r < 0.7:
        from decimal import Decimal

        return Decimal(rng.randint(-10**30, 10**30)).scaleb(-rng.randint(0, 40))
    if r < 0.75:
        return rng.choice([10**400, -(10**400) - 1, 1e308, -1e-300, 2**63, -(2**63) - 1])
    return rng.choice([0, 1, 0.5, 1e-9, 3, 7, 100])


_PATTERN_PIECES = ["a", "b", "[a-z]", "\\d", ".", "(x|y)", "+", "*", "?", "{2,5}", "{3}", "^", "$",
                   "[^\"]", "\\w", "(", ")", "[", "]", "\\", "{", "}", "|", "\\p{L}", "é", "\U0001F600",
                   "(?=a)", "\\b", "[\\u0000-\\u001f]", "(ab|cd){10}"]
_FORMATS = ["date", "date-time", "time", "email", "uri", "uuid", "ipv4", "ipv6", "hostname", "duration",
            "regex", "bogus", "json-pointer", "idn-email", "idn-hostname"]
_TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]


def _rand_string(rng: random.Random, n: int | None = None) -> str:
    n = rng.randint(0, 8) if n is None else n
    alphabet = "abcxyz_-\"\\/\n\té日\U0001F600\u0000"
    return "".join(rng.choice(alphabet) for _ in range(n))


def _rand_value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 2 or r < 0.5:
        return rng.choice([None, True, False, _rand_number(rng), _rand_string(rng)])
    if r < 0.75:
        return [_rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_rand_string(rng): _rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _junk(rng: random.Random):
    return rng.choice([None, True, -1, 1.5, "x", [], {}, [1, "a"], {"a": 1}, 10**30, float("nan")])


def _rand_schema(rng: random.Random, depth: int = 0):
    if depth > 4 or rng.random() < 0.1:
        return rng.choice([True, False, {}, _junk(rng)]) if rng.random() < 0.3 else {"type": rng.choice(_TYPES)}
    s: dict = {}
    n_kw = rng.randint(1, 5)
    for _ in range(n_kw):
        kw = rng.choice([
            "type", "type", "properties", "required", "items", "prefixItems", "enum", "const",
            "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
            "maxLength", "pattern", "format", "allOf", "anyOf", "oneOf", "not", "$ref",
            "additionalProperties", "patternProperties", "minItems", "maxItems", "uniqueItems",
            "minProperties", "maxProperties", "propertyNames", "if", "then", "else", "contains",
            "dependentRequired", "$defs", "unevaluatedProperties", "bogusKeyword",
        ])
        bad = rng.random() < 0.1
        if bad:
            s[kw] = _junk(rng)
        elif kw == "type":
            s[kw] = rng.choice(_TYPES) if rng.random() < 0.7 else rng.sample(_TYPES, rng.randint(1, 3))
        elif kw == "properties":
            s[kw] = {_rand_string(rng, rng.randint(0, 4)) if rng.random() < 0.9 else "k" * rng.choice([100, 5000]):
                     _rand_schema(rng, depth + 1) for _ in range(rng.randint(0, 4))}
        elif kw == "required":
            names = list(s.get("properties", {})) if isinstance(s.get("properties"), dict) else []
            s[kw] = rng.sample(names, rng.randint(0, len(names))) + ([_rand_string(rng)] if rng.random() < 0.3 else [])
        elif kw in ("items", "not", "additionalProperties", "propertyNames", "if", "then", "else", "contains",
                    "unevaluatedProperties"):
            s[kw] = _rand_schema(rng, depth + 1)
        elif kw == "prefixItems" or kw in ("allOf", "anyOf", "oneOf"):
            s[kw] = [_rand_schema(rng, depth + 1) for _ in range(rng.randint(0 if rng.random() < 0.1 else 1, 4))]
        elif kw == "enum":
            s[kw] = [_rand_value(rng) for _ in range(rng.randint(0, 5))]
        elif kw == "const":
            s[kw] = _rand_value(rng)
        elif kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            s[kw] = _rand_number(rng)
        elif kw in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            s[kw] = rng.choice([0, 1, 2, 3, 5, 10, 100, 100000, 10**12, -1, 2.0, 2.5])
        elif kw == "pattern":
            s[kw] = "".join(rng.choice(_PATTERN_PIECES) for _ in range(rng.randint(0, 6)))
        elif kw == "format":
            s[kw] = rng.choice(_FORMATS)
        elif kw == "$ref":
            s[kw] = rng.choice(["#", "#/$defs/a", "#/$defs/b", "#/properties/x", "#/nope", "other.json",
                                "#/$defs/a/properties/q", "http://example.com/s", "#/$defs/%25"])
        elif kw == "$defs":
            s[kw] = {n: _rand_schema(rng, depth + 1) for n in rng.sample(["a", "b", "c"], rng.randint(1, 3))}
        elif kw == "patternProperties":
            s[kw] = {"".join(rng.choice(_PATTERN_PIECES) for _ in range(rng.randint(1, 3))): _rand_schema(rng, depth + 1)
                     for _ in range(rng.randint(1, 2))}
        elif kw == "uniqueItems":
            s[kw] = rng.choice([True, False])
        elif kw == "dependentRequired":
            s[kw] = {_rand_string(rng, 1): [_rand_string(rng, 1)]}
        else:
            s[kw] = _rand_value(rng)
    return s


def _mangle_text(rng: random.Random, text: str) -> str:
    r = rng.random()
    if r < 0.3 and text:
        i = rng.randrange(len(text))
        return text[:i]
    if r < 0.6 and text:
        i = rng.randrange(len(text))
        return text[:i] + rng.choice(['"', "{", "}", "[", "]", ",", ":", "\\", "\x00", "1e999999999", "-"]) + text[i:]
    if r < 0.7:
        return "[" * rng.randint(1, 100_000)
    return text


class _Ctx:
    """What the worker builds once: the vocabularies and a saved index to mutate."""

    def __init__(self, tmp: Path):
        from dotjson import Guide, Index, Vocabulary
        from dotjson.tools.testing import smollm2_tokenizer_dir

        self.vocab = Vocabulary.from_pretrained(smollm2_tokenizer_dir())
        toks = [bytes([b]) for b in range(256)] + [b'{"', b'":', b'",', b"true", b"null", b"  "]
        self.small = Vocabulary.from_tuples(toks, list(range(len(toks))), [len(toks)])
        schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3},
                                                    "b": {"type": "string", "maxLength": 5}}, "required": ["a"]}
        self.saved = tmp / "saved"
        ix = Index(schema, self.small)
        g = Guide(ix)
        g.get_start_tokensets()
        for t in (256, ord("a"), 257, ord("7")):
            g.get_next_tokensets([t])
        ix.serialize_to_disk(self.saved)
        self.files = {p.name: p.read_bytes() for p in self.saved.iterdir()}
        self.index = Index({"type": "object", "properties": {"name": {"type": "string"}}}, self.vocab)
        self.tmp = tmp


def _is_dotjson_error(e: BaseException) -> bool:
    from dotjson.errors import DotjsonError

    return isinstance(e, DotjsonError)


def _run_schema(ctx: _Ctx, rng: random.Random) -> str:
    from dotjson import Guide, Index

    schema = _rand_schema(rng)
    as_text = rng.random() < 0.3
    if as_text:
        try:
            text = json.dumps(schema, default=str)
        except (ValueError, TypeError):
            text = "{}"
        schema = _mangle_text(rng, text)
    opts = {}
    if rng.random() < 0.3:
        opts = rng.choice([{"disallow_whitespace": True}, {"close_objects": False}, {"property_order": "any"},
                           {"lenient": True}, {"max_states": rng.randint(1, 200)}, {"fuel": rng.randint(1, 500)},
                           {"max_store_bytes": rng.randint(1, 4 << 20)}, {"whitespace": "json"}])
    index = Index(schema, ctx.vocab, **opts)
    g = Guide(index, batch_size=1)
    ts = g.get_start_tokensets()
    tokens = []
    for _ in range(rng.randint(0, 12)):
        allowed = ts.allowed_tokens(0) if hasattr(ts, "allowed_tokens") else None
        if allowed is None:
            import numpy as np

            allowed = np.flatnonzero(ts.to_bool_mask()[0])
        if len(allowed) == 0:
            break
        t = int(allowed[rng.randrange(len(allowed))])
        tokens.append(t)
        ts = g.get_next_tokensets([t])
        if index.vocabulary.eos_token_ids and t in index.vocabulary.eos_token_ids:
            break
    index.check(tokens)
    text = "".join(ctx.vocab.token_bytes(t).decode("utf-8", "replace") for t in tokens)
    index.accepts(text)
    index.is_prefix(_rand_string(rng))
    return "built"


def _resign(files: dict) -> dict:
    from dotjson.serialization import MANIFEST_FORMAT

    out = dict(files)
    try:
        meta = json.loads(out["index.json"])
        if isinstance(meta, dict):
            meta["arrays_sha256"] = hashlib.sha256(out["arrays.npz"]).hexdigest()
            out["index.json"] = json.dumps(meta).encode()
    except (ValueError, UnicodeDecodeError, RecursionError):
        pass
    man = {"format": MANIFEST_FORMAT, "version": 1,
           "files": {n: {"bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                     for n, d in out.items() if n != "manifest.json"}}
    out["manifest.json"] = json.dumps(man).encode()
    return out


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    r = rng.random()
    if r < 0.3 and b:
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif r < 0.45:
        b = b[: rng.randint(0, len(b))]
    elif r < 0.6 and b:
        i = rng.randrange(len(b))
        n = rng.randint(1, 64)
        b[i:i + n] = os.urandom(n)
    elif r < 0.7:
        b = bytearray(os.urandom(rng.randint(0, 4096)))
    elif r < 0.85 and b:
        # a digit run changed (a count, size or offset in a JSON header)
        text = bytes(b)
        digits = [i for i, c in enumerate(text) if 48 <= c <= 57]
        if digits:
            i = rng.choice(digits)
            b[i] = rng.choice(b"0123456789")
            if rng.random() < 0.5:
                b[i:i] = b"9" * rng.randint(1, 12)
    else:
        b += os.urandom(rng.randint(1, 256))
    return bytes(b)


def _run_index_file(ctx: _Ctx, rng: random.Random) -> str:
    from dotjson import Guide, Index

    d = ctx.tmp / "mut"
    d.mkdir(exist_ok=True)
    files = dict(ctx.files)
    name = rng.choice(sorted(files))
    files[name] = _mutate(rng, files[name])
    if name != "manifest.json" and rng.random() < 0.6:
        files = _resign(files)
    for n, data in files.items():
        (d / n).write_bytes(data)
    index = Index.deserialize_from_disk(d, ctx.small if rng.random() < 0.3 else None)
    g = Guide(index)
    ts = g.get_start_tokensets()
    import numpy as np

    allowed = np.flatnonzero(ts.to_bool_mask()[0])
    for _ in range(5):
        if not len(allowed):
            break
        ts = g.get_next_tokensets([int(allowed[rng.randrange(len(allowed))])])
        allowed = np.flatnonzero(ts.to_bool_mask()[0])
    return "loaded"


def _run_processor(ctx: _Ctx, rng: random.Random) -> str:
    import numpy as np
    from numpy.lib.stride_tricks import as_strided

    from dotjson import Guide, LogitsProcessor

    batch = rng.choice([1, 1, 2, 3])
    g = Guide(ctx.index, batch_size=batch)
    ts = g.get_start_tokensets()
    n = ctx.vocab.max_token_id()
    mask_value = rng.choice([float("-inf"), -1.0, 0, -5, float("nan"), float("inf"), 1e40, "x", None, True])
    proc = LogitsProcessor(g, mask_value)
    dtype = rng.choice(["float32", "float16", "float64", "int32", "uint16", "int8", "bool", "complex64", "object"])
    width = n + rng.choice([0, 0, 1, 37, 287, -1, -n])
    r = rng.random()
    expected_rows = None
    if r < 0.35:
        shape = (batch, max(0, width)) if rng.random() < 0.9 else rng.choice([(batch + 1, width), (width,), (batch, 1, width), ()])
        buf = np.zeros(shape, dtype=dtype) if dtype != "object" else np.empty(shape, dtype=object)
        if rng.random() < 0.3 and buf.ndim == 2 and buf.size:
            item = buf.itemsize
            rs = rng.choice([0, item, item * 7, buf.strides[0], -buf.strides[0], buf.strides[0] // 2])
            cs = rng.choice([item, item, 0, 2 * item])
            base = np.zeros(abs(rs) * batch + abs(cs) * buf.shape[1] + 64, dtype=dtype) if dtype != "object" else None
            if base is not None:
                off = abs(rs) * (batch - 1) if rs < 0 else 0
                buf = as_strided(base[off // item:] if item else base, shape=buf.shape, strides=(rs, cs))
        if rng.random() < 0.1:
            buf = buf[:, ::-1] if buf.ndim == 2 else buf
        if rng.random() < 0.05 and buf.ndim:
            buf.flags.writeable = False
        logits = buf
        expected_rows = logits
    elif r < 0.55:
        rows = []
        for _ in range(batch + (1 if rng.random() < 0.05 else 0)):
            k = rng.random()
            if k < 0.4:
                rows.append(np.zeros(max(0, width), dtype=dtype if dtype != "object" else "float32"))
            elif k < 0.6:
                rows.append([0.0] * max(0, width))
            elif k < 0.7:
                rows.append([0] * max(0, width) + ([True] if rng.random() < 0.3 else []))
            elif k < 0.8 and rows:
                rows.append(rows[-1])  # the same row twice
            else:
                shared = np.zeros(max(0, width) + 64, dtype="float32")
                rows.append(shared[rng.randint(0, 64):][: max(0, width)])
        logits = rows
    else:
        import torch

        tdtype = rng.choice([torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.uint8,
                             torch.complex64, torch.bool])
        k = rng.random()
        if k < 0.4:
            logits = torch.zeros(batch, max(0, width), dtype=tdtype)
        elif k < 0.55:
            logits = torch.zeros(1, max(0, width), dtype=tdtype).expand(batch, max(0, width))
        elif k < 0.65:
            logits = torch.zeros(batch, max(0, width), dtype=torch.float32).to_sparse()
        elif k < 0.75:
            logits = torch.zeros(batch, max(0, width), device="meta")
        elif k < 0.85:
            logits = torch.zeros(max(0, width), batch, dtype=tdtype).t()
        else:
            logits = torch.zeros(batch, max(0, width), dtype=torch.float32, requires_grad=rng.random() < 0.5)
        expected_rows = logits
    proc(logits, ts)
    # accepted: every allowed token kept, every other column holds the mask value
    if expected_rows is not None and not isinstance(expected_rows, list):
        arr = expected_rows
        if hasattr(arr, "detach"):
            arr = arr.detach().float().numpy() if arr.dtype.is_floating_point else arr.detach().numpy()
        arr = np.asarray(arr, dtype=np.float64).reshape(batch, -1)
        allowed = ts.to_bool_mask()
        kept = arr[:, :n][allowed]
        assert (kept == 0).all(), "an allowed token was masked"
        mv = float(mask_value)
        masked = np.concatenate([arr[:, :n][~allowed], arr[:, n:].ravel()])
        if masked.size and not np.isnan(masked).any():
            assert (masked != 0).all() or mv == 0, "a forbidden token was not masked"
    return "masked"


_RUNNERS = {"schema": _run_schema, "index-file": _run_index_file, "processor": _run_processor}


def worker(mem_gb: float) -> None:
    """Read ``kind seed`` lines from stdin; answer one JSON line each."""
    import resource

    if mem_gb > 0:
        lim = int(mem_gb * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    import warnings

    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        ctx = _Ctx(Path(tmp))
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            kind, seed = line.split()
            rng = random.Random(f"{kind}:{seed}")
            t0 = time.perf_counter()
            try:
                outcome = _RUNNERS[kind](ctx, rng)
                res = {"outcome": "ok", "what": outcome}
            except AssertionError as e:
                res = {"outcome": "wrong", "what": str(e)}
            except BaseException as e:  # noqa: BLE001 - classified, not swallowed
                if _is_dotjson_error(e):
                    res = {"outcome": "refused", "what": type(e).__name__}
                else:
                    import traceback

                    res = {"outcome": "raw", "what": f"{type(e).__name__}: {str(e)[:300]}",
                           "where": traceback.format_exc()[-1500:]}
            res["s"] = time.perf_counter() - t0
            print(json.dumps(res), flush=True)


# ------------------------------------------------------------------------------ the parent


class _Worker:
    def __init__(self, mem_gb: float):
        self.p = subprocess.Popen([sys.executable, __file__, "--worker", "--mem-gb", str(mem_gb)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._read(600)

    def _read(self, timeout: float):
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.p.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            return None
        line = self.p.stdout.readline()
        return json.loads(line) if line else "died"

    def run(self, kind: str, seed: int, timeout: float):
        self.p.stdin.write(f"{kind} {seed}\n")
        self.p.stdin.flush()
        return self._read(timeout)

    def kill(self):
        self.p.kill()
        self.p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="inputs in all (split over the kinds)")
    ap.add_argument("--kind", choices=KINDS, action="append", help="only these kinds (repeatable)")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds one input may take before it counts as a hang")
    ap.add_argument("--mem-gb", type=float, default=6.0, help="address-space limit of the worker (0: none)")
    ap.add_argument("--report", type=Path, help="write the failures and counts as JSON here")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.mem_gb)
        return 0
    kinds = args.kind or list(KINDS)
    counts: dict = collections.Counter()
    failures = []
    slowest = (0.0, None)
    w = _Worker(args.mem_gb)
    t0 = time.time()
    for i in range(args.n):
        kind = kinds[i % len(kinds)]
        seed = args.seed + i // len(kinds)
        res = w.run(kind, seed, args.timeout)
        if res is None or res == "died":
            outcome = "hang" if res is None else "crash"
            failures.append({"kind": kind, "seed": seed, "outcome": outcome})
            counts[(kind, outcome)] += 1
            w.kill()
            w = _Worker(args.mem_gb)
            continue
        counts[(kind, res["outcome"])] += 1
        if res["s"] > slowest[0]:
            slowest = (res["s"], (kind, seed))
        if res["outcome"] in ("raw", "wrong"):
            failures.append({"kind": kind, "seed": seed, **res})
            if args.verbose or len(failures) <= 20:
                print(f"FAIL {kind} seed={seed}: {res['outcome']} {res['what']}", file=sys.stderr)
                if args.verbose and "where" in res:
                    print(res["where"], file=sys.stderr)
        elif args.verbose:
            print(f"{kind} seed={seed}: {res['outcome']} {res['what']} ({res['s']:.3f} s)")
        if (i + 1) % 1000 == 0:
            print(f"... {i + 1} inputs, {len(failures)} failures, {time.time() - t0:.0f} s", file=sys.stderr)
    w.kill()
    print(f"{args.n} inputs in {time.time() - t0:.0f} s (timeout {args.timeout:g} s an input, "
          f"worker memory limit {args.mem_gb:g} GB); slowest input {slowest[0]:.2f} s {slowest[1]}")
    print(f"{'kind':12} {'ok':>7} {'refused':>8} {'raw':>5} {'wrong':>6} {'hang':>5} {'crash':>6}")
    for kind in kinds:
        row = [counts[(kind, o)] for o in ("ok", "refused", "raw", "wrong", "hang", "crash")]
        print(f"{kind:12} {row[0]:7} {row[1]:8} {row[2]:5} {row[3]:6} {row[4]:5} {row[5]:6}")
    bad = sum(counts[(k, o)] for k in kinds for o in ("raw", "wrong", "hang", "crash"))
    print(f"failures: {bad} (raw exceptions, wrong masks, hangs and crashes)")
    if args.report:
        args.report.write_text(json.dumps({"counts": {f"{k}/{o}": v for (k, o), v in counts.items()},
                                           "failures": failures}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
