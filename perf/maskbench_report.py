"""MaskBench coverage of dotjson.jsonschema: translation share, valid accepted, invalid rejected.

Per category (a ``*.jsonl`` file of ``/work/shared/data/maskbench`` or ``--data DIR``): the share
of schemas that translate (every failure must be a named ``UnsupportedSchemaError`` /
``SchemaError``; anything else is counted as a *crash* and listed), and over the translated ones
the valid instances accepted and the invalid instances rejected by Lark's Earley parser on the
rendered grammar (compact JSON). Lark is slow on big grammars: each schema gets a time budget
(``--budget`` seconds) and the instances it could not check are reported as *unchecked*.
``jsonschema`` (Draft 2020-12 or the schema's own dialect, with format checking) is the second
opinion: instances whose label it contradicts are counted apart (*label?*) and left out.
The grammar emits declared properties in schema order; MaskBench instances often list keys in
another order, so each instance is also tried with its keys sorted into schema order: a valid
instance accepted only that way counts as accepted and is counted in *reord*; an invalid instance
counts as rejected only if both spellings are rejected.

``--every-valid`` measures the "every valid document" configuration, the only one whose language
is every valid document: ``property_order="any"``, ``close_objects=False``, ``whitespace="json"``
and ``bounds="schema"`` (:data:`EVERY_VALID`, stated in the output); instances are checked by
dotjson's own automaton, ``Index.accepts``' engine, instead of Lark, and never reordered: there,
a valid instance rejected is a real miss.

``--masks`` (with ``--every-valid``) builds each schema's :class:`~dotjson.Index` on a real
tokenizer (``--tokenizer``, Llama 3 by default) and walks every instance token by token through
the token masks (``Index.fill_mask``: each token's bit, ``Index.next_state`` agreeing with it, EOS
at the end), and sorts the schemas into (a) the index builds and its masks work on its instances
(a valid instance's every token allowed, an invalid one's refused somewhere), (b) documents
check (the automaton) but a mask is refused by name (``LimitExceededError``: ``uniqueItems`` over
any values), (c) refused at ``Index()`` (an ``UnsupportedSchemaError`` or another named error),
(d) correctly empty (a ``SchemaError`` saying no value is valid, with no instance ``jsonschema``
finds valid), (u) not finished within ``--budget`` seconds; a (b) schema whose documents meet a
limit too says so ("documents too", those instances unchecked); each count is printed by reason
(the error's keyword and its message with names, numbers and pointers left out).

Usage::

    python3 perf/maskbench_report.py                       # every category
    python3 perf/maskbench_report.py --every-valid         # any order, open objects, automaton
    python3 perf/maskbench_report.py --every-valid --masks # (a)-(d): Index and token masks too
    python3 perf/maskbench_report.py --category Handwritten --budget 2
    python3 perf/maskbench_report.py --no-lark             # translation share only (fast)
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError  # noqa: E402
from dotjson.jsonschema import schema_to_grammar  # noqa: E402

DEFAULT_DATA = Path("/work/shared/data/maskbench")

#: the "every valid document" configuration (``--every-valid``): the options of
#: :func:`~dotjson.jsonschema.schema_to_grammar` and :class:`~dotjson.Index` whose language is
#: exactly the documents valid under the schema (every key order, open objects, every JSON
#: whitespace and spelling, only the schema's own bounds)
EVERY_VALID = {"property_order": "any", "close_objects": False, "whitespace": "json", "bounds": "schema"}

#: the four outcomes of ``--masks``
OUTCOMES = {"a": "Index builds, masks work on its instances",
            "b": "documents check, masks refused by name",
            "c": "refused at Index()",
            "d": "correctly empty",
            "u": "unfinished within the time budget (--budget)"}


def reason_of(e: Exception) -> str:
    """A short key for grouping refusals: the error's class, keyword and message with quoted
    names, numbers and JSON pointers left out."""
    import re

    msg = str(e)
    msg = re.sub(r"\s+at\s+(#|/)\S*", "", msg)
    msg = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "…", msg)
    msg = re.sub(r"\d[\d,.]*", "N", msg)
    kw = getattr(e, "keyword", None)
    return f"{type(e).__name__}" + (f" [{kw}]" if kw else "") + f": {msg[:110]}"


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _jsonschema_says(schema, data):
    try:
        import jsonschema

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        v = cls(schema, format_checker=cls.FORMAT_CHECKER)
        return v.is_valid(data)
    except Exception:
        return None


def _instances(row: dict, out: dict):
    """The row's instances whose label ``jsonschema`` agrees with, each with its compact JSON
    text; the others are counted in ``out["label_disputed"]``."""
    for t in row.get("tests") or []:
        js = _jsonschema_says(row["schema"], t["data"])
        if js is not None and js != t["valid"]:
            out["label_disputed"] += 1
            continue
        yield t, json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False)


def _tally(out: dict, valid: bool, got: bool, doc: str) -> None:
    """Count one verdict ``got`` on an instance labelled ``valid``."""
    if valid:
        out["valid_ok" if got else "valid_bad"] += 1
    else:
        out["invalid_ok" if not got else "invalid_bad"] += 1
    if got != valid:
        out["bad"].append((valid, doc[:200]))


def _unchecked(out: dict, tests: list) -> int:
    return len(tests) - out["label_disputed"] - sum(out[k] for k in ("valid_ok", "valid_bad", "invalid_ok",
                                                                      "invalid_bad"))


def schema_key_order(schema) -> dict:
    """Property names in the order the schema first declares them (anywhere in the document)."""
    order: dict = {}
    stack = [schema]
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                for k in props:
                    order.setdefault(k, len(order))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return order


def reorder(data, order: dict):
    """``data`` with every object's keys sorted into schema order (undeclared keys last)."""
    if isinstance(data, dict):
        keys = sorted(data, key=lambda k: (order.get(k, len(order)),))
        return {k: reorder(data[k], order) for k in keys}
    if isinstance(data, list):
        return [reorder(x, order) for x in data]
    return data


def check_schema_row(row: dict, *, lark: bool, budget: float, close_objects: bool = False,
                     every_valid: bool = False) -> dict:
    """Outcome of one MaskBench row: status and per-instance results.

    ``every_valid``: translate in :data:`EVERY_VALID` (``close_objects`` is then ignored) and
    check instances with dotjson's automaton, as given (no reordering).
    """
    from dotjson.automaton import Automaton
    from dotjson.errors import DotjsonError
    from dotjson.grammar import lark_parses, to_lark

    out = {"id": row["id"], "status": None, "valid_ok": 0, "valid_bad": 0, "invalid_ok": 0, "invalid_bad": 0,
           "unchecked": 0, "label_disputed": 0, "reordered": 0, "bad": [], "ms": 0.0}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # --every-valid: the whole configuration (JSON whitespace too, so every string and
            # number spelling: spellings="any", numbers="any")
            g = schema_to_grammar(row["schema"], **(EVERY_VALID if every_valid else
                                                    {"close_objects": close_objects}))
            auto = Automaton(g) if every_valid and lark else None
        out["status"] = "ok"
    except UnsupportedSchemaError as e:
        out["status"] = "unsupported"
        out["error"] = f"{e.keyword}: {e}"
        return out
    except SchemaError as e:
        out["status"] = "schema_error"
        out["error"] = str(e)
        return out
    except DotjsonError as e:  # the automaton's named errors (a grammar it cannot compile)
        out["status"] = "schema_error"
        out["error"] = f"{type(e).__name__}: {e}"
        return out
    except Exception as e:  # a crash: must never happen
        out["status"] = "crash"
        out["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
        return out
    finally:
        out["ms"] = (time.perf_counter() - t0) * 1000
    tests = row.get("tests") or []
    if not lark or not tests:
        out["unchecked"] = len(tests) if lark else 0
        return out
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        text = None
        if auto is None:
            try:
                text = to_lark(g)
            except GrammarError as e:  # (no Lark text of a sane size, format regex: the automaton)
                if "no grammar text" not in str(e):
                    raise
                auto = Automaton(g)
        order = schema_key_order(row["schema"])
        for t, doc in _instances(row, out):
            if auto is not None:
                got = auto.matches(doc.encode("utf-8"))
                if not every_valid and not got:  # (schema order, as below for Lark)
                    doc2 = json.dumps(reorder(t["data"], order), separators=(",", ":"), ensure_ascii=False)
                    if doc2 != doc and auto.matches(doc2.encode("utf-8")):
                        got = True
                        out["reordered"] += t["valid"]
                _tally(out, t["valid"], got, doc)
                continue
            got = lark_parses(text, doc)
            # the grammar puts declared properties in schema order: also try the instance with
            # its keys in that order (valid: counts as accepted, noted; invalid: must be rejected too)
            doc2 = json.dumps(reorder(t["data"], order), separators=(",", ":"), ensure_ascii=False)
            if doc2 != doc:
                got2 = lark_parses(text, doc2)
                if t["valid"] and got2 and not got:
                    out["reordered"] += 1
                got = got or got2
            _tally(out, t["valid"], got, doc)
    except (_Timeout, RecursionError):
        pass
    except Exception as e:  # Lark wraps the timeout in its own exceptions
        if not isinstance(getattr(e, "orig_exc", None), _Timeout):
            out["lark_error"] = f"{type(e).__name__}: {e}"[:200]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    out["unchecked"] = _unchecked(out, tests)
    return out


def _is_empty_refusal(e: Exception) -> bool:
    """``e`` says that the schema accepts no value at all (a :class:`SchemaError` of the
    language check, not a malformed schema)."""
    return type(e) is SchemaError and "accepts no JSON value" in str(e)


def check_masks_row(row: dict, vocab, tokenizer, *, budget: float) -> dict:
    """Outcome of one MaskBench row in :data:`EVERY_VALID` through :class:`~dotjson.Index` and
    its token masks: ``outcome`` one of :data:`OUTCOMES`' keys (``"crash"`` for an error that is
    not a :class:`~dotjson.errors.DotjsonError`), ``reason`` (:func:`reason_of`) for b, c and d,
    and per-instance counts: a valid instance counts as accepted when each of its tokens has its
    bit in the mask of the state before it and EOS is allowed after the last (in (b), when
    ``Index.accepts`` accepts it), an invalid one as rejected otherwise; ``mask_step`` counts
    tokens whose mask bit and ``Index.next_state`` disagree (must be 0)."""
    import numpy as np

    from dotjson import Index
    from dotjson.errors import DotjsonError, LimitExceededError

    out = {"id": row["id"], "outcome": None, "valid_ok": 0, "valid_bad": 0, "invalid_ok": 0, "invalid_bad": 0,
           "unchecked": 0, "label_disputed": 0, "mask_step": 0, "bad": [], "ms": 0.0}
    tests = row.get("tests") or []
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    index = None
    try:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                index = Index(row["schema"], vocab, **EVERY_VALID)
        except DotjsonError as e:
            empty = _is_empty_refusal(e) and not any(
                _jsonschema_says(row["schema"], t["data"]) is not False for t in tests)
            out["outcome"], out["reason"] = ("d" if empty else "c"), reason_of(e)
            return out
        eos = [int(x) for x in vocab.eos_token_ids]
        buf = np.zeros(index.mask(index.initial_state).shape, dtype=np.uint32)

        def allowed(t):
            return bool((buf[t >> 5] >> np.uint32(t & 31)) & np.uint32(1))

        refused = checker = None
        try:
            index.fill_mask(index.initial_state, buf)
        except LimitExceededError as e:
            refused = e
        for t, doc in _instances(row, out):
            got = None
            if refused is None:
                try:
                    state, got = index.initial_state, True
                    for tok in tokenizer.encode(doc, add_special_tokens=False):
                        index.fill_mask(state, buf)
                        ok = allowed(tok)
                        nxt = index.next_state(state, tok)
                        out["mask_step"] += ok != (nxt != -2)
                        if not ok:
                            got = False
                            break
                        state = nxt
                    if got:
                        index.fill_mask(state, buf)
                        got = any(allowed(e) for e in eos)
                except LimitExceededError as e:
                    refused, got = e, None
            if got is None:  # masks refused: the document is checked by the automaton, on an index
                # of its own (the masks' walk may have spent the family's per-length rule budget)
                try:
                    if checker is None:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            checker = Index(row["schema"], vocab, **EVERY_VALID)
                    got = bool(checker.accepts(doc))
                except LimitExceededError as e:  # (not even the document: counted unchecked)
                    out["doc_refused"] = reason_of(e)
                    continue
            _tally(out, t["valid"], got, doc)
        out["outcome"] = "a" if refused is None else "b"
        if refused is not None:
            out["reason"] = reason_of(refused)
        if "doc_refused" in out:
            out["reason"] = "documents too: " + out["doc_refused"]
    except _Timeout:
        out["outcome"], out["reason"] = "u", f"{'Index()' if index is None else 'instances'} past {budget:g} s"
    except DotjsonError as e:  # a named error at a mask: neither a refusal at Index() nor a working mask
        out["outcome"], out["reason"] = "b", reason_of(e)
    except Exception as e:  # a crash: must never happen
        if isinstance(getattr(e, "orig_exc", None), _Timeout):
            out["outcome"], out["reason"] = "u", f"{'Index()' if index is None else 'instances'} past {budget:g} s"
        else:
            out["outcome"] = "crash"
            out["reason"] = "".join(traceback.format_exception_only(type(e), e)).strip()[:200]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        out["ms"] = (time.perf_counter() - t0) * 1000
        out["unchecked"] = _unchecked(out, tests) if out["outcome"] in ("a", "b", "u") else 0
    return out


def _rows(path: Path, limit, containing, ids):
    """The rows of one category file: the first ``limit``, those whose schema text holds
    ``containing``, those whose id is in ``ids`` (each when given)."""
    with open(path) as f:
        for i, line in enumerate(f):
            if limit is not None and i >= limit:
                break
            row = json.loads(line)
            if containing is not None and containing not in json.dumps(row["schema"]):
                continue
            if ids is not None and row["id"] not in ids:
                continue
            yield row


def run_masks_category(path: Path, vocab, tokenizer, *, budget: float, limit: int | None = None,
                       verbose: bool = False, containing: str | None = None, ids=None) -> dict:
    """:func:`check_masks_row` over one category: counts per outcome and per reason."""
    c = Counter()
    reasons = {k: Counter() for k in (*OUTCOMES, "crash")}
    for row in _rows(path, limit, containing, ids):
        r = check_masks_row(row, vocab, tokenizer, budget=budget)
        c["schemas"] += 1
        c[r["outcome"]] += 1
        if "reason" in r:
            reasons[r["outcome"]][r["reason"]] += 1
        for k in ("valid_ok", "valid_bad", "invalid_ok", "invalid_bad", "unchecked", "label_disputed",
                  "mask_step"):
            c[k] += r[k]
        if verbose:
            for valid, doc in r["bad"]:
                print(f"  {r['id']}: {'valid' if valid else 'INVALID'} instance "
                      f"{'rejected' if valid else 'ACCEPTED'}: {doc}")
            if r["outcome"] != "a":
                print(f"  ({r['outcome']}) {r['id']}: {r.get('reason', '')}")
    return {"counts": dict(c), "reasons": {k: dict(v) for k, v in reasons.items() if v}}


def masks_report(files, args) -> dict:
    """``--masks``: the (a)-(d) table, per category and in total, then the reasons."""
    from dotjson import Vocabulary

    sys.path.insert(0, str(ROOT / "perf"))
    import peers

    import dotjson

    tokenizer = peers.load_tokenizer(args.tokenizer)
    vocab = Vocabulary.from_tokenizer(tokenizer)
    dotjson.warmup()  # (every kernel loaded first: no schema's budget pays for it)
    print("configuration: Index(schema, vocabulary, " + ", ".join(f"{k}={v!r}" for k, v in EVERY_VALID.items())
          + f"); tokenizer {args.tokenizer}; {args.budget:g} s per schema")
    hdr = (f"{'category':16s} {'schemas':>7s} {'(a) ok':>7s} {'(b)':>5s} {'(c)':>5s} {'(d)':>5s} {'(u)':>5s} {'crash':>5s} "
           f"{'valid acc.':>14s} {'invalid rej.':>14s} {'unchk':>6s} {'label?':>6s} {'mask≠step':>9s}")
    print(hdr)
    tot = Counter()
    reasons = {}
    results = {}
    for f in files:
        r = run_masks_category(f, vocab, tokenizer, budget=args.budget, limit=args.limit, verbose=args.verbose,
                               containing=args.containing, ids=args.ids)
        results[f.stem] = r
        c = Counter(r["counts"])
        tot.update(c)
        for k, v in r["reasons"].items():
            reasons.setdefault(k, Counter()).update(v)
        print(_masks_line(f.stem, c))
    print(_masks_line("TOTAL", tot))
    n = tot["schemas"]
    for k, what in OUTCOMES.items():
        print(f"({k}) {what}: {tot[k]} of {n} ({_pct(tot[k], n).strip()})")
        for why, m in reasons.get(k, Counter()).most_common():
            print(f"      {m:5d}  {why}")
    for why, m in reasons.get("crash", Counter()).most_common():
        print(f"CRASH {m:5d}  {why}")
    return results


def _masks_line(name, c) -> str:
    nv = c["valid_ok"] + c["valid_bad"]
    ni = c["invalid_ok"] + c["invalid_bad"]
    return (f"{name:16s} {c['schemas']:7d} {c['a']:7d} {c['b']:5d} {c['c']:5d} {c['d']:5d} {c['u']:5d} {c['crash']:5d} "
            f"{c['valid_ok']:6d}/{nv:<6d}{_pct(c['valid_ok'], nv):>2s} {c['invalid_ok']:6d}/{ni:<6d}"
            f"{_pct(c['invalid_ok'], ni):>2s} {c['unchecked']:6d} {c['label_disputed']:6d} {c['mask_step']:9d}")


def run_category(path: Path, *, lark: bool, budget: float, limit: int | None = None, verbose: bool = False,
                 close_objects: bool = False, every_valid: bool = False, containing: str | None = None,
                 ids=None) -> dict:
    c = Counter()
    crashes = []
    errors = Counter()
    ms = []
    for row in _rows(path, limit, containing, ids):
        r = check_schema_row(row, lark=lark, budget=budget, close_objects=close_objects, every_valid=every_valid)
        c["schemas"] += 1
        c[r["status"]] += 1
        ms.append(r["ms"])
        for k in ("valid_ok", "valid_bad", "invalid_ok", "invalid_bad", "unchecked", "label_disputed", "reordered"):
            c[k] += r[k]
        if r["status"] == "crash":
            crashes.append((r["id"], r["error"]))
        elif r["status"] in ("unsupported", "schema_error"):
            errors[r["error"].split(":")[0] if r["status"] == "unsupported" else "SchemaError"] += 1
        if verbose and r["bad"]:
            for valid, doc in r["bad"]:
                print(f"  {r['id']}: {'valid' if valid else 'INVALID'} instance "
                      f"{'rejected' if valid else 'ACCEPTED'}: {doc}")
        if verbose and r["status"] == "crash":
            print(f"  CRASH {r['id']}: {r['error']}")
    ms.sort()
    c["p50_ms"] = ms[len(ms) // 2] if ms else 0
    c["max_ms"] = ms[-1] if ms else 0
    return {"counts": dict(c), "crashes": crashes, "unsupported_by_keyword": dict(errors.most_common())}


def _pct(a, b):
    return f"{100 * a / b:5.1f}%" if b else "    -"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--category", action="append", help="only these categories (file stems)")
    ap.add_argument("--budget", type=float, default=3.0, help="seconds of Lark checking per schema")
    ap.add_argument("--limit", type=int, help="first N schemas per category")
    ap.add_argument("--no-lark", action="store_true", help="translation only")
    ap.add_argument("--containing", metavar="TEXT",
                    help="only the schemas whose JSON text contains TEXT (e.g. '\"uniqueItems\": true')")
    ap.add_argument("--close-objects", action="store_true")
    ap.add_argument("--every-valid", action="store_true",
                    help="property_order='any', instances checked by dotjson's automaton, not reordered")
    ap.add_argument("--masks", action="store_true",
                    help="with --every-valid: build each Index and walk the instances through its token masks; "
                         "count (a) masks work, (b) masks refused, (c) refused at Index(), (d) correctly empty")
    ap.add_argument("--tokenizer", default="llama3", help="for --masks: 'llama3', 'smollm2', 'qwen' or a tokenizer directory")
    ap.add_argument("--ids", type=lambda v: set(v.split(",")), help="only these schema ids (comma-separated)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    files = sorted(args.data.glob("*.jsonl"))
    if not files:
        ap.error(f"no *.jsonl file in {args.data}: the MaskBench development split is not part "
                 "of the repository (https://github.com/guidance-ai/jsonschemabench, "
                 "maskbench/data); pass --data DIR, or --data tests/data/maskbench for the "
                 "repository's 60-schema subset")
    if args.category:
        files = [f for f in files if f.stem in args.category]
    if args.ids:
        files = [f for f in files if any(i.split("---")[0] == f.stem for i in args.ids)]
    if args.masks:
        if not args.every_valid:
            ap.error("--masks needs --every-valid (the configuration whose language is every valid document)")
        results = masks_report(files, args)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        return 0
    if args.every_valid:
        print("configuration: schema_to_grammar(schema, " +
              ", ".join(f"{k}={v!r}" for k, v in EVERY_VALID.items()) + "); instances by dotjson's automaton")
    results = {}
    tot = Counter()
    hdr = (f"{'category':16s} {'schemas':>7s} {'transl.':>7s} {'unsup':>5s} {'err':>4s} {'crash':>5s} "
           f"{'valid acc.':>14s} {'invalid rej.':>14s} {'unchk':>6s} {'label?':>6s} {'reord':>5s} {'p50ms':>6s} "
           f"{'maxms':>7s}")
    print(hdr)
    for f in files:
        r = run_category(f, lark=not args.no_lark, budget=args.budget, limit=args.limit, verbose=args.verbose,
                         close_objects=args.close_objects, every_valid=args.every_valid, containing=args.containing,
                         ids=args.ids)
        results[f.stem] = r
        c = Counter(r["counts"])
        for k, v in c.items():
            if not k.endswith("_ms"):
                tot[k] += v
        nv = c["valid_ok"] + c["valid_bad"]
        ni = c["invalid_ok"] + c["invalid_bad"]
        print(f"{f.stem:16s} {c['schemas']:7d} {_pct(c['ok'], c['schemas']):>7s} {c['unsupported']:5d} "
              f"{c['schema_error']:4d} {c['crash']:5d} {c['valid_ok']:6d}/{nv:<6d}{_pct(c['valid_ok'], nv):>2s} "
              f"{c['invalid_ok']:6d}/{ni:<6d}{_pct(c['invalid_ok'], ni):>2s} {c['unchecked']:6d} "
              f"{c['label_disputed']:6d} {c['reordered']:5d} {c['p50_ms']:6.1f} {c['max_ms']:7.1f}")
        for cid, err in r["crashes"]:
            print(f"   CRASH {cid}: {err}")
    nv = tot["valid_ok"] + tot["valid_bad"]
    ni = tot["invalid_ok"] + tot["invalid_bad"]
    print(f"{'TOTAL':16s} {tot['schemas']:7d} {_pct(tot['ok'], tot['schemas']):>7s} {tot['unsupported']:5d} "
          f"{tot['schema_error']:4d} {tot['crash']:5d} {tot['valid_ok']:6d}/{nv:<6d}{_pct(tot['valid_ok'], nv):>2s} "
          f"{tot['invalid_ok']:6d}/{ni:<6d}{_pct(tot['invalid_ok'], ni):>2s} {tot['unchecked']:6d} "
          f"{tot['label_disputed']:6d} {tot['reordered']:5d}")
    kw = Counter()
    for r in results.values():
        kw.update(r["unsupported_by_keyword"])
    print("unsupported, by keyword:", ", ".join(f"{k} {v}" for k, v in kw.most_common(15)))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
