"""JSON-Schema-Test-Suite coverage of dotjson.schema, checked with Lark's Earley parser.

For every test group of a draft2020-12 file: translate the schema (``UnsupportedSchemaError`` →
all its cases count as *unsupported*), then for every case check that the grammar accepts the
instance exactly when the suite says it is valid: compact (``json.dumps(separators=(',', ':'))``)
and pretty-printed (``indent=2``). A case *passes* when every form agrees, else it *fails*.

Usage::

    python3 perf/suite_report.py                 # all draft2020-12 files (incl. optional/)
    python3 perf/suite_report.py --json out.json  # also write the per-file counts
    python3 perf/suite_report.py FILE...          # some files only (paths relative to draft2020-12)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "data" / "json-schema-test-suite"
DRAFT = SUITE / "draft2020-12"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dotjson.errors import SchemaError, UnsupportedSchemaError  # noqa: E402
from dotjson.grammar import lark_parses, to_lark  # noqa: E402
from dotjson.schema import schema_to_grammar  # noqa: E402


def remotes() -> dict:
    """The suite's remote schemas, keyed by the URL the tests use."""
    out = {}
    base = SUITE / "remotes"
    for p in base.rglob("*.json"):
        rel = p.relative_to(base).as_posix()
        out[f"http://localhost:1234/{rel}"] = json.loads(p.read_text())
    return out


def suite_files() -> list[str]:
    return sorted(p.relative_to(DRAFT).as_posix() for p in DRAFT.rglob("*.json"))


def _forms(data) -> list[str]:
    compact = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    pretty = json.dumps(data, indent=2, ensure_ascii=False)
    return [compact] if pretty == compact else [compact, pretty]


def run_group(group: dict, res: dict) -> tuple[list[str], str | None]:
    """Outcome ('pass', 'fail', 'unsupported') per case of one test group, and a note."""
    tests = group["tests"]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            g = schema_to_grammar(group["schema"], resources=res, close_objects=False)
    except UnsupportedSchemaError as e:
        return ["unsupported"] * len(tests), f"unsupported: {e}"
    except SchemaError as e:
        if "accepts no JSON value" in str(e):
            return ["pass" if not t["valid"] else "fail" for t in tests], None
        return ["fail"] * len(tests), f"SchemaError: {e}"
    try:
        text = to_lark(g)
    except Exception as e:  # a grammar Lark cannot take: count as failures, say why
        return ["fail"] * len(tests), f"to_lark: {type(e).__name__}: {e}"
    out = []
    notes = []
    for t in tests:
        ok = True
        for form in _forms(t["data"]):
            if lark_parses(text, form) != t["valid"]:
                ok = False
                notes.append(f"{t['description']!r}: {form[:60]!r} should be {'accepted' if t['valid'] else 'rejected'}")
                break
        out.append("pass" if ok else "fail")
    return out, "; ".join(notes) or None


def run_file(rel: str, res: dict | None = None, verbose: bool = False) -> dict:
    res = remotes() if res is None else res
    counts = {"pass": 0, "fail": 0, "unsupported": 0}
    for group in json.loads((DRAFT / rel).read_text()):
        outcomes, note = run_group(group, res)
        for o in outcomes:
            counts[o] += 1
        if verbose and note:
            print(f"  [{rel}] {group['description']}: {note}")
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--json", help="write per-file counts to this file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print why cases fail / are unsupported")
    args = ap.parse_args(argv)
    files = args.files or suite_files()
    res = remotes()
    total = {"pass": 0, "fail": 0, "unsupported": 0}
    table = {}
    t0 = time.perf_counter()
    print(f"{'file':45s} {'pass':>5s} {'fail':>5s} {'unsup':>5s}")
    for rel in files:
        c = run_file(rel, res, args.verbose)
        table[rel] = c
        for k in total:
            total[k] += c[k]
        print(f"{rel:45s} {c['pass']:5d} {c['fail']:5d} {c['unsupported']:5d}")
    n = sum(total.values())
    print(f"{'TOTAL':45s} {total['pass']:5d} {total['fail']:5d} {total['unsupported']:5d}"
          f"   ({100 * total['pass'] / max(n, 1):.1f}% pass, {time.perf_counter() - t0:.1f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
