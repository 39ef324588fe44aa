"""JSON-Schema-Test-Suite coverage of dotjson.jsonschema, checked with Lark's Earley parser.

For every test group of a draft2020-12 or draft7 file: translate the schema (``UnsupportedSchemaError`` →
all its cases count as *unsupported*), then for every case check that the grammar accepts the
instance exactly when the suite says it is valid: compact (``json.dumps(separators=(',', ':'))``)
and pretty-printed (``indent=2``). A case *passes* when every form agrees, else it *fails*.
A grammar with a number automaton built a state at a time (``multipleOf: 0.123456789``: no
grammar text), or with ``format: "regex"`` (no Lark text of a sane size: ``to_lark`` says so), is
checked by dotjson's own automaton instead.
A schema without ``$schema`` is read in the draft of its folder (draft7 files are draft 7).

Usage::

    python3 perf/suite_report.py                    # all draft2020-12 files (incl. optional/)
    python3 perf/suite_report.py --draft draft7     # all draft7 files
    python3 perf/suite_report.py --json out.json    # also write the per-file counts
    python3 perf/suite_report.py --every-valid      # any order, open objects, every spelling (automaton)
    python3 perf/suite_report.py --update-baseline  # write the ratchet's baseline for the draft
    python3 perf/suite_report.py --every-valid --causes  # also: the cases not passing, by cause and file
    python3 perf/suite_report.py FILE...            # some files only (paths relative to the draft)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "data" / "json-schema-test-suite"
#: draft folder -> (``$schema`` for schemas without one, the ratchet's baseline file)
DRAFTS = {
    "draft2020-12": ("https://json-schema.org/draft/2020-12/schema", ROOT / "tests" / "data" / "suite_baseline.json"),
    "draft7": ("http://json-schema.org/draft-07/schema#", ROOT / "tests" / "data" / "suite_baseline_draft7.json"),
}
DEFAULT_DRAFT = "draft2020-12"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError  # noqa: E402
from dotjson.grammar import lark_parses, to_lark  # noqa: E402
from dotjson.jsonschema import schema_to_grammar  # noqa: E402


def remotes() -> dict:
    """The suite's remote schemas, keyed by the URL the tests use."""
    out = {}
    base = SUITE / "remotes"
    for p in base.rglob("*.json"):
        rel = p.relative_to(base).as_posix()
        out[f"http://localhost:1234/{rel}"] = json.loads(p.read_text())
    return out


def suite_files(draft: str = DEFAULT_DRAFT) -> list[str]:
    """The test files of one draft folder, relative to it."""
    base = SUITE / draft
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*.json"))


def _in_dialect(schema, draft: str):
    """The schema with the folder's ``$schema`` when it names none (the suite's convention)."""
    if isinstance(schema, dict) and "$schema" not in schema:
        return {"$schema": DRAFTS[draft][0], **schema}
    return schema


def _forms(data) -> list[str]:
    compact = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    pretty = json.dumps(data, indent=2, ensure_ascii=False)
    return [compact] if pretty == compact else [compact, pretty]


#: schema_to_grammar options of the run (``--property-order any``: the "every valid document" order)
OPTIONS: dict = {}
#: ``--every-valid``: the "every valid document" configuration (any order, open objects, JSON
#: whitespace, every string and number spelling), checked by dotjson's own automaton instead of
#: Lark (its exponent forms have no Lark text)
EVERY_VALID = False
#: ``--causes``: cause -> file -> cases not passing for it (unsupported: the error's keyword and
#: message without its location; failing: ``fail: <the test group's description>``)
CAUSES: dict = {}


def _cause(rel: str, cause: str, n: int) -> None:
    if n:
        per_file = CAUSES.setdefault(cause, {})
        per_file[rel] = per_file.get(rel, 0) + n


#: the cause of the last group :func:`run_group` found unsupported (``None`` otherwise)
_LAST_UNSUPPORTED: list = [None]


def _unsupported_cause(e: UnsupportedSchemaError) -> str:
    """The error without where it stands (one cause for many places)."""
    msg = re.sub(r" at \S+$", "", e.args[0] if e.args else str(e))
    msg = re.sub(r"'[^']*'", "'…'", msg) if e.keyword == "$ref" else msg
    return f"unsupported {e.keyword}: {msg}"[:150]


def run_group(group: dict, res: dict, draft: str = DEFAULT_DRAFT) -> tuple[list[str], str | None]:
    """Outcome ('pass', 'fail', 'unsupported') per case of one test group, and a note."""
    tests = group["tests"]
    _LAST_UNSUPPORTED[0] = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            g = schema_to_grammar(_in_dialect(group["schema"], draft), resources=res, close_objects=False, **OPTIONS)
    except UnsupportedSchemaError as e:
        _LAST_UNSUPPORTED[0] = _unsupported_cause(e)
        return ["unsupported"] * len(tests), f"unsupported: {e}"
    except SchemaError as e:
        if "accepts no JSON value" in str(e):
            return ["pass" if not t["valid"] else "fail" for t in tests], None
        return ["fail"] * len(tests), f"SchemaError: {e}"
    text = None
    if not EVERY_VALID:
        try:
            text = to_lark(g)
        except GrammarError as e:
            if "has no grammar text" not in str(e):
                return ["fail"] * len(tests), f"to_lark: GrammarError: {e}"
            # (a number automaton built a state at a time: only dotjson's automaton can check it)
        except Exception as e:  # a grammar Lark cannot take: count as failures, say why
            return ["fail"] * len(tests), f"to_lark: {type(e).__name__}: {e}"
    if text is None:
        from dotjson.automaton import Automaton
        from dotjson.errors import DotjsonError

        try:
            auto = Automaton(g)
        except DotjsonError as e:  # (an empty language: every case must be invalid)
            return ["pass" if not t["valid"] else "fail" for t in tests], f"automaton: {e}"
        def parses(form):
            try:
                return auto.matches(form.encode())
            except DotjsonError:  # (a limit met while checking: neither answer)
                return None
    else:
        parses = lambda form: lark_parses(text, form)  # noqa: E731
    out = []
    notes = []
    for t in tests:
        ok = True
        for form in _forms(t["data"]):
            if parses(form) != t["valid"]:
                ok = False
                notes.append(f"{t['description']!r}: {form[:60]!r} should be {'accepted' if t['valid'] else 'rejected'}")
                break
        out.append("pass" if ok else "fail")
    return out, "; ".join(notes) or None


def run_file(rel: str, res: dict | None = None, verbose: bool = False, draft: str = DEFAULT_DRAFT) -> dict:
    res = remotes() if res is None else res
    counts = {"pass": 0, "fail": 0, "unsupported": 0}
    for group in json.loads((SUITE / draft / rel).read_text()):
        outcomes, note = run_group(group, res, draft)
        for o in outcomes:
            counts[o] += 1
        _cause(rel, _LAST_UNSUPPORTED[0] or "", outcomes.count("unsupported"))
        _cause(rel, f"fail: {group['description']}"[:150], outcomes.count("fail"))
        if verbose and note:
            print(f"  [{rel}] {group['description']}: {note}")
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--draft", choices=sorted(DRAFTS), default=DEFAULT_DRAFT, help="test folder (default %(default)s)")
    ap.add_argument("--property-order", choices=["schema", "any"], default="schema",
                    help="schema_to_grammar's property_order (the baselines are for 'schema')")
    ap.add_argument("--every-valid", action="store_true",
                    help="the every-valid configuration, checked by dotjson's automaton (not for the baselines)")
    ap.add_argument("--json", help="write per-file counts to this file")
    ap.add_argument("--update-baseline", action="store_true",
                    help="write the counts of every file of the draft to its ratchet baseline (tests/data/)")
    ap.add_argument("--causes", action="store_true",
                    help="print the cases that do not pass grouped by cause, with their files")
    ap.add_argument("-v", "--verbose", action="store_true", help="print why cases fail / are unsupported")
    args = ap.parse_args(argv)
    if args.update_baseline and (args.files or args.property_order != "schema"):
        ap.error("--update-baseline runs every file of the draft with the default options")
    if args.update_baseline and args.every_valid:
        ap.error("--update-baseline writes the Lark baselines: without --every-valid")
    OPTIONS["property_order"] = args.property_order
    if args.every_valid:
        global EVERY_VALID
        EVERY_VALID = True
        OPTIONS.update(property_order="any", whitespace="json")
    files = args.files or suite_files(args.draft)
    res = remotes()
    total = {"pass": 0, "fail": 0, "unsupported": 0}
    table = {}
    t0 = time.perf_counter()
    print(f"{'file':45s} {'pass':>5s} {'fail':>5s} {'unsup':>5s}")
    for rel in files:
        c = run_file(rel, res, args.verbose, args.draft)
        table[rel] = c
        for k in total:
            total[k] += c[k]
        print(f"{rel:45s} {c['pass']:5d} {c['fail']:5d} {c['unsupported']:5d}")
    n = sum(total.values())
    print(f"{'TOTAL':45s} {total['pass']:5d} {total['fail']:5d} {total['unsupported']:5d}"
          f"   ({100 * total['pass'] / max(n, 1):.1f}% pass, {time.perf_counter() - t0:.1f} s)")
    if args.causes:
        print("\ncases not passing, by cause (files: cases)")
        for cause, per_file in sorted(CAUSES.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
            files_text = ", ".join(f"{f}: {n}" for f, n in sorted(per_file.items(), key=lambda kv: -kv[1]))
            print(f"{sum(per_file.values()):5d}  {cause}\n       {files_text}")
    out = json.dumps(table, indent=1, sort_keys=True) + "\n"
    if args.json:
        Path(args.json).write_text(out)
    if args.update_baseline:
        DRAFTS[args.draft][1].write_text(out)
        print(f"wrote {DRAFTS[args.draft][1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
