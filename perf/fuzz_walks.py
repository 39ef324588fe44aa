r"""Random token walks over real schemas: every finished document must validate, and every mask
must agree with the index's own step.

For a seeded sample of MaskBench schemas (or the repository's subset; ``--suite``: the
JSON-Schema-Test-Suite's groups of one draft, with its remote schemas), in the default
configuration and the every-valid one (``property_order="any"``, open objects, any JSON
whitespace, only the schema's bounds), each walk starts a fresh index and samples tokens among
the allowed ones (half of the time among the structural ones, those that are not plain string
content, so that strings end and documents finish, whitespace alone nine times in ten left out; EOS with probability 1/2 where allowed; past
half the token budget always the structural ones holding ``}`` or ``]``, else ``"``, where there
are some, and EOS where allowed) until EOS or the budget.
Checked (the documents against ``jsonschema``, which dotjson did not write; the masks against
the index's own step, a second path through the automaton):

* the finished document is valid for ``jsonschema`` (its draft's validator, formats asserted;
  where its only objections are patterns that ECMA-262's ``\s``/``\d``/``\w`` match, as JSON
  Schema reads them and Python's ``re`` does not, the walk is counted *disputed*);
* a mask never leaves a live state without a token (a dead end);
* each sampled token is accepted by ``Index.next_state`` (a mask never allows a refused token),
  and a few tokens sampled outside the mask are refused by it (a mask never forbids a token the
  step takes: the other side of exactness, as far as ``next_state`` is the reference);
* EOS is allowed exactly where ``is_accepting`` says;
* with ``--reference``, every mask equals the reference walk's (:func:`reference_index`: a second
  index of the same schema with every shortcut of the walk off, the plain trie node by node, no
  heads, no byte runs, stepped through the same tokens): the shortcuts taken together on real
  schemas (issue 24: "masks equal to the reference walk at every state of random walks"). Slow:
  the reference walks the whole plain trie at positions where the shortcuts take it at once.

A schema ``Index()`` refuses (``UnsupportedSchemaError``, a limit) is counted, not a failure; so
is a walk that reaches a documented limit. Anything else raised is a failure. Every walk is made
from ``(schema id, configuration, seed)`` alone; ``--ids ID --seed S -v`` replays one.

Usage::

    python perf/fuzz_walks.py --limit 20 --walks 3          # 20 schemas a category, 3 walks each
    python perf/fuzz_walks.py --ids Github_easy---o1234 --seed 7 -v
    python perf/fuzz_walks.py --limit 2 --walks 1 --budget 60 --reference --tokenizer smollm2   # or qwen, or a directory
    python perf/fuzz_walks.py --suite draft2020-12 --limit 0 --walks 1 --reference   # every group
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import warnings
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import peers  # noqa: E402
from bench_maskbench import CATEGORIES, DATA, load_sample  # noqa: E402

EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json", "bounds": "schema"}
CONFIGS = {"default": {}, "every-valid": EVERY_VALID,
           # other corners of the options: any order in closed objects, no whitespace, schema bounds
           "any-order": {"property_order": "any"}, "compact": {"disallow_whitespace": True},
           "schema-bounds": {"bounds": "schema", "close_objects": False}}


#: ECMA-262's class escapes, which JSON Schema's patterns use, where Python's ``re`` reads them
#: otherwise (``\s`` also U+FEFF and every Zs, ``\d``/``\w`` ASCII only)
_ECMA_WS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_ECMA_CLASS = {"s": _ECMA_WS, "d": "0-9", "w": "A-Za-z0-9_"}


def _ecma_pattern(p: str) -> str:
    r"""Pattern ``p`` with ``\s``/``\d``/``\w`` (and ``\S``/``\D``/``\W`` outside classes)
    spelled as ECMA-262 reads them, for Python's ``re``."""
    out, i, in_class = [], 0, False
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p):
            e = p[i + 1]
            if e.lower() in _ECMA_CLASS and (e.islower() or not in_class):
                body = _ECMA_CLASS[e.lower()]
                out.append(body if in_class else (f"[{body}]" if e.islower() else f"[^{body}]"))
            else:
                out.append(p[i:i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def _v8_regex(pattern: str) -> bool | None:
    """Whether V8 (Node.js: ``new RegExp(p, "u")``, an ECMA-262 engine) takes ``pattern``;
    ``None`` without Node.js."""
    import shutil
    import subprocess

    if shutil.which("node") is None:
        return None
    js = "const p=JSON.parse(require('fs').readFileSync(0,'utf8'));try{new RegExp(p,'u');console.log(1)}catch(e){console.log(0)}"
    out = subprocess.run(["node", "-e", js], input=json.dumps(pattern), capture_output=True, text=True, timeout=60)
    return out.stdout.strip() == "1" if out.returncode == 0 else None


def _disputed(errors) -> bool:
    r"""Whether every error is a ``pattern`` one that ECMA-262's reading of the pattern does not
    make (``jsonschema`` matches with Python's ``re``: ``"1\ufeffminute"`` fails ``^\d+\s…$``
    there, and is valid by the specification and the JSON-Schema-Test-Suite), or a ``format:
    regex`` one where V8 takes the pattern (``jsonschema`` compiles it with Python's ``re``, which
    refuses ECMA-262's empty class ``[]``)."""
    import re

    for err in errors:
        if err.validator == "format" and err.validator_value == "regex" and isinstance(err.instance, str):
            if _v8_regex(err.instance):
                continue
            return False
        if err.validator != "pattern" or not isinstance(err.instance, str):
            return False
        try:
            if re.search(_ecma_pattern(err.validator_value), err.instance) is None:
                return False
        except re.error:
            return False
    return True


def _exactly_valid(schema, resources, text: bytes) -> bool:
    """Whether the document ``text`` is valid read with exact numbers (``Decimal``): ``jsonschema``
    reads JSON numbers as Python floats, whose rounding decides ``multipleOf`` (and bounds) of long
    numbers wrongly: ``0.685343962618261644659893280879759056542126e42`` is an integer, a
    multiple of 3, read as ``6.853439626182617e+41``, not one."""
    from decimal import Decimal, localcontext

    try:
        with localcontext() as ctx:
            ctx.prec = 100_000  # (a remainder of a long number by a short one: its whole quotient)
            exact = _validator(json.loads(json.dumps(schema), parse_float=Decimal), resources, exact_integers=True)
            doc = json.loads(text.decode("utf-8"), parse_float=Decimal)
            return next(iter(exact.iter_errors(doc)), None) is None
    except Exception:  # noqa: BLE001  (no exact reading: the float one stands)
        return False


def _validator(schema, resources=None, exact_integers=False):
    """A validator of ``schema`` (its dialect's, with ``resources`` as remotes); with
    ``exact_integers`` it also reads a ``Decimal`` of no fractional part as JSON Schema's
    ``integer``, however written (``3.40345473908E789`` is one: ``jsonschema``'s type checker
    knows ints and integral floats only)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    if exact_integers:
        from decimal import Decimal

        plain = cls.TYPE_CHECKER

        def is_integer(checker, x):
            if isinstance(x, Decimal):
                return x.is_finite() and x == x.to_integral_value()
            return plain.is_type(x, "integer")

        cls = jsonschema.validators.extend(cls, type_checker=plain.redefine("integer", is_integer))
    if not resources:
        return cls(schema, format_checker=cls.FORMAT_CHECKER)
    from referencing import Registry, Resource
    from referencing.jsonschema import specification_with

    spec = specification_with(cls.META_SCHEMA["$schema"])  # (the remotes that name no dialect: the schema's)
    registry = Registry().with_resources(
        (url, Resource.from_contents(doc, default_specification=spec)) for url, doc in resources.items())
    return cls(schema, format_checker=cls.FORMAT_CHECKER, registry=registry)


_CLOSERS: dict = {}
#: the messages of the documented limits walks met (printed with their schema)
LIMITS: list = []


def _closers(vocab) -> np.ndarray:
    """Per token id: 2 where its bytes hold ``}`` or ``]`` (what ends a container), 1 where they
    hold ``"`` (what ends a string), -1 where they are whitespace alone, else 0; once per
    vocabulary."""
    got = _CLOSERS.get(id(vocab))
    if got is None:
        n = int(vocab.max_token_id())
        got = np.zeros(n, dtype=np.int8)
        for t in range(n):
            try:
                b = vocab.token_bytes(t)
            except Exception:  # noqa: BLE001  (an id without bytes)
                continue
            got[t] = 2 if (b"}" in b or b"]" in b) else 1 if b'"' in b else -1 if b and not b.strip() else 0
        _CLOSERS[id(vocab)] = got
    return got


def suite_rows(draft: str) -> tuple[list, dict]:
    """The JSON-Schema-Test-Suite's test groups of one draft folder as rows like MaskBench's
    (``id`` the file and group index, ``schema`` with the folder's ``$schema``), and the suite's
    remote schemas (the ``resources`` their references name)."""
    import suite_report

    rows = []
    for rel in suite_report.suite_files(draft):
        groups = json.loads((suite_report.SUITE / draft / rel).read_text(encoding="utf-8"))
        for k, g in enumerate(groups):
            rows.append({"id": f"{draft}/{rel}#{k}", "schema": suite_report._in_dialect(g["schema"], draft),
                         "tests": g["tests"]})
    return rows, suite_report.remotes()


def reference_index(*args, **kw):
    """``Index(*args, **kw)`` whose masks are the reference walk's: the plain trie node by node
    (no plain runs, open keys, class subtrees, counted classes or key sets at the root), the special trie
    node by node (``WALK_ALL``: no ASCII runs, no byte runs), no heads shared (and so no open
    object's key read through heads, ``Masker._open_key_mask``). Rule families keep their own masks (they are
    compared with their generic walk in their own tests)."""
    from dotjson import Index
    from dotjson._kernels import walk as _walk

    ref = Index(*args, **kw)
    m = ref._masker
    m._plain_runs, m._heads, m._special_mode = False, False, _walk.WALK_ALL
    m._class_roots = m._key_roots = False
    return ref


def walk(index, vocab, rng: np.random.Generator, budget: int, outside: int = 3, ref=None):
    """One random walk; returns ``(status, text, problem)``: ``finished``/``budget`` and the
    bytes so far, ``problem`` a string when a check failed. ``ref``: an index of the same
    schema (:func:`reference_index`) whose mask must equal ``index``'s at every state."""
    from dotjson.errors import LimitExceededError

    n_words = (int(vocab.max_token_id()) + 31) // 32
    width = int(vocab.max_token_id())
    eos = set(int(e) for e in vocab.eos_token_ids)
    plain = index._tries.plain_bits
    closers = _closers(vocab)
    buf = np.zeros(n_words, dtype=np.uint32)
    rbuf = np.zeros(n_words, dtype=np.uint32)
    s = index.initial_state
    rs = ref.initial_state if ref is not None else None
    text = bytearray()
    for step in range(budget):
        late = step >= budget // 2  # past half the budget: steer towards the end (EOS, structure)
        try:
            index.fill_mask(s, buf)
        except LimitExceededError as e:
            LIMITS.append(str(e))
            return "limit", bytes(text), None
        if ref is not None:
            try:
                ref.fill_mask(rs, rbuf)
            except LimitExceededError as e:
                LIMITS.append(str(e))
                return "limit", bytes(text), None
            if not np.array_equal(buf, rbuf):
                diff = np.flatnonzero(np.unpackbits((buf ^ rbuf).view(np.uint8), bitorder="little")[:width])
                shown = [(int(t), vocab.token_bytes(int(t)) if t not in eos else "EOS", bool(buf[t >> 5] >> (t & 31) & 1))
                         for t in diff[:8]]
                return "reference", bytes(text), (f"{len(diff)} tokens differ from the reference walk after "
                                                  f"{bytes(text)!r}: (id, bytes, in the mask) {shown}")
        bits = np.unpackbits(buf.view(np.uint8), bitorder="little")[:width]
        allowed = np.flatnonzero(bits)
        if len(allowed) == 0:
            return "dead-end", bytes(text), f"no token allowed after {bytes(text)!r}"
        eos_ok = any(bits[e] for e in eos if e < width)
        if eos_ok != bool(index.is_accepting(s)):
            return "eos", bytes(text), f"EOS allowed={eos_ok} but is_accepting={not eos_ok} after {bytes(text)!r}"
        # tokens outside the mask must be refused by the step
        for t in rng.integers(0, width, size=outside):
            if not bits[t] and index.next_state(s, int(t)) != -2:
                return "strict", bytes(text), (f"token {int(t)} ({vocab.token_bytes(int(t))!r}) is outside the mask "
                                               f"but next_state takes it after {bytes(text)!r}")
        if eos_ok and (late or rng.random() < 0.5):
            return "finished", bytes(text), None
        body = [t for t in allowed if t not in eos]
        if not body:
            return "finished", bytes(text), None
        structural = [t for t in body if not (plain[t >> 5] >> (t & 31)) & 1]
        pool = structural if structural and (late or rng.random() < 0.5) else body
        if rng.random() < 0.9:  # (whitespace alone rarely: JSON's is unbounded in every-valid)
            pool = [t for t in pool if closers[t] >= 0] or pool
        if late:  # (past half the budget: what ends a container, else a string, where the mask has one)
            pool = [t for t in pool if closers[t] == 2] or [t for t in pool if closers[t] == 1] or pool
        t = int(rng.choice(pool))
        try:
            ns = index.next_state(s, t)
        except LimitExceededError as e:
            LIMITS.append(str(e))
            return "limit", bytes(text), None
        if ns == -2:
            return "lax", bytes(text), f"token {t} ({vocab.token_bytes(t)!r}) is in the mask but next_state refuses it after {bytes(text)!r}"
        text += vocab.token_bytes(t)
        s = ns
        if ref is not None:
            rs = ref.next_state(rs, t)
    return "budget", bytes(text), None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=10, help="schemas per category (default 10)")
    ap.add_argument("--walks", type=int, default=2, help="walks per schema and configuration")
    ap.add_argument("--budget", type=int, default=200, help="tokens per walk")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--tokenizer", default="llama3",
                    help="'llama3' (default), 'smollm2', 'qwen' or a Hugging Face tokenizer directory")
    ap.add_argument("--configs", default="default,every-valid",
                    help=f"comma-separated, of {', '.join(CONFIGS)}")
    ap.add_argument("--ids", default="", help="only these schema ids (comma-separated)")
    ap.add_argument("--suite", default="", help="the JSON-Schema-Test-Suite's groups of this draft folder "
                    "(draft2020-12, draft7) instead of MaskBench (--limit: groups in all, a seeded sample)")
    ap.add_argument("--reference", action="store_true",
                    help="compare every mask with the reference walk's (every shortcut off; slow)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    import dotjson
    from dotjson import Index, Vocabulary
    from dotjson.errors import DotjsonError, LimitExceededError, UnsupportedSchemaError

    tok = peers.load_tokenizer(args.tokenizer)
    vocab = Vocabulary.from_tokenizer(tok)
    dotjson.warmup()
    resources = None
    if args.suite:
        import random

        rows, resources = suite_rows(args.suite)
        if args.limit and not args.ids and args.limit < len(rows):
            rows = sorted(random.Random(args.seed).sample(rows, args.limit), key=lambda r: r["id"])
    else:
        rows = load_sample(CATEGORIES, args.limit if not args.ids else 10**9, args.seed, data=args.data)
    opts_extra = {"resources": resources} if resources else {}
    if args.ids:
        want = set(args.ids.split(","))
        rows = [r for r in rows if r["id"] in want]
    counts: dict = {}
    failures = []
    t0 = time.time()
    for k, row in enumerate(rows):
        try:
            validator = _validator(row["schema"], resources)
        except Exception:  # noqa: BLE001  (a schema jsonschema itself rejects: no reference)
            counts["no reference"] = counts.get("no reference", 0) + 1
            continue
        for cname in args.configs.split(","):
            opts = {**CONFIGS[cname], **opts_extra}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    index = Index(row["schema"], vocab, **opts)
            except (UnsupportedSchemaError, LimitExceededError):
                counts[f"{cname}: refused"] = counts.get(f"{cname}: refused", 0) + 1
                continue
            except DotjsonError:
                counts[f"{cname}: schema error"] = counts.get(f"{cname}: schema error", 0) + 1
                continue
            for w in range(args.walks):
                seed = zlib.crc32(f"{row['id']}/{cname}/{args.seed}/{w}".encode())
                rng = np.random.default_rng(seed)
                if w:
                    index = Index(row["schema"], vocab, **opts)  # each walk on a fresh index
                try:
                    ref = reference_index(row["schema"], vocab, **opts) if args.reference else None
                    status, text, problem = walk(index, vocab, rng, args.budget, ref=ref)
                except Exception as e:  # noqa: BLE001
                    status, text, problem = "raised", b"", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"
                if status == "finished" and problem is None:
                    try:
                        doc = json.loads(text.decode("utf-8"))
                        try:
                            errs = sorted(validator.iter_errors(doc), key=str)
                        except Exception:  # noqa: BLE001  (jsonschema cannot read the schema: an ECMA
                            errs = None  # pattern Python's re refuses, `\\cJ`; no reference for it)
                        if errs is None:
                            status = "no reference"
                        elif errs and (_disputed(errs) or _exactly_valid(row["schema"], resources, text)):
                            # (jsonschema's Python regex, not ECMA-262's; its floats, not the
                            # document's numbers: counted)
                            status = "disputed"
                            print(f"disputed {row['id']} [{cname}] walk {w}: {errs[0].message[:200]}", flush=True)
                        elif errs:
                            status, problem = "invalid", f"{text!r}: {errs[0].message[:300]}"
                    except (UnicodeDecodeError, json.JSONDecodeError) as e:
                        status, problem = "not JSON", f"{text!r}: {e}"
                if status == "limit" and LIMITS:
                    print(f"limit {row['id']} [{cname}] walk {w}: {LIMITS[-1][:300]}", flush=True)
                key = f"{cname}: {status}"
                counts[key] = counts.get(key, 0) + 1
                if problem is not None:
                    failures.append((row["id"], cname, w, status, problem))
                    print(f"FAIL {row['id']} [{cname}] walk {w}: {status}: {problem[:600]}", flush=True)
                elif args.verbose:
                    print(f"ok {row['id']} [{cname}] walk {w}: {status} {text[:200]!r}", flush=True)
        if (k + 1) % 25 == 0:
            print(f"[{k + 1}/{len(rows)} {time.time() - t0:.0f}s] {json.dumps(counts, sort_keys=True)}", flush=True)
    print(f"{len(rows)} schemas in {time.time() - t0:.0f} s ({args.tokenizer}, seed {args.seed}): "
          f"{json.dumps(counts, sort_keys=True)}")
    print(f"failures: {len(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
