"""Refusals after ``Index()``: schemas whose lazily built rules raise a ``DotjsonError``.

DESIGN: a schema is accepted or refused when its index is built; an error never surfaces while a
document is decoded. Phase 1 (:meth:`~dotjson.jsonschema.compiler.Compiler.prepare`) decides every
refusal up front, and the rules are built later, as the automaton first reaches them. This script
checks that promise: for every schema a source holds that :func:`~dotjson.jsonschema.schema_to_grammar`
accepts, it builds the whole rule closure the automaton could reach (every rule, every rule family
member, breadth first from ``start``, with the analyses the automaton asks of each rule: nullable,
productive, left recursion) and reports each schema for which that raises.

Sources: the JSON-Schema-Test-Suite (``suite:draft2020-12``, ``suite:draft7``: every test group's
schema, with the suite's remotes) and MaskBench (``maskbench``: every schema of
``$DOTJSON_MASKBENCH``, default ``/work/shared/data/maskbench``; ``maskbench:NAME`` one file).
Configurations: ``every-valid`` (``property_order="any", close_objects=False,
whitespace="json"``) and ``default``.

Usage::

    python3 perf/lazy_refusals.py                                  # every source, both configurations
    python3 perf/lazy_refusals.py --source suite:draft7 --config default
    python3 perf/lazy_refusals.py --source maskbench:Kubernetes --max-rules 500

Prints one line per schema that raises (source, id, configuration, the error) and a summary per
source and configuration; exits 1 when any schema raised.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SUITE = ROOT / "tests" / "data" / "json-schema-test-suite"
MASKBENCH = Path(os.environ.get("DOTJSON_MASKBENCH", "/work/shared/data/maskbench"))
#: the suite's folders and the ``$schema`` a schema of the folder without one is read in
DRAFTS = {"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
          "draft7": "http://json-schema.org/draft-07/schema#"}
#: name -> options of schema_to_grammar
CONFIGS = {
    "every-valid": {"property_order": "any", "close_objects": False, "whitespace": "json"},
    "default": {},
}


def suite_schemas(draft: str):
    """``(id, schema, resources)`` for every test group of one suite folder."""
    base = SUITE / draft
    remotes = {f"http://localhost:1234/{p.relative_to(SUITE / 'remotes').as_posix()}": json.loads(p.read_text())
               for p in (SUITE / "remotes").rglob("*.json")}
    for p in sorted(base.rglob("*.json")):
        rel = p.relative_to(base).as_posix()
        for i, group in enumerate(json.loads(p.read_text())):
            s = group["schema"]
            if isinstance(s, dict) and "$schema" not in s:
                s = {"$schema": DRAFTS[draft], **s}
            yield f"{rel}#{i}", s, remotes


def maskbench_schemas(name: str | None = None):
    """``(id, schema, None)`` for every MaskBench schema (of file ``NAME.jsonl`` only, if given)."""
    paths = [MASKBENCH / f"{name}.jsonl"] if name else sorted(MASKBENCH.glob("*.jsonl"))
    for path in paths:
        with path.open() as f:
            for line in f:
                row = json.loads(line)
                yield row["id"], row["schema"], None


def schemas(source: str):
    """The schemas of one source (see the module docstring)."""
    kind, _, arg = source.partition(":")
    if kind == "suite":
        return suite_schemas(arg or "draft2020-12")
    if kind == "maskbench":
        return maskbench_schemas(arg or None)
    raise ValueError(f"unknown source {source!r}: expected suite:DRAFT or maskbench[:NAME]")


def force_closure(grammar, max_rules: int = 5000, family_rules: int = 200) -> tuple[int, bool]:
    """Build every rule reachable from ``start`` (rule family members included), breadth first,
    and ask the analyses the automaton asks of each (nullable, productive, left recursion).

    A family may own infinitely many rules (an exponent-form number's magnitudes, the sets of
    values a ``uniqueItems`` array has seen): at most ``family_rules`` of each family are built,
    and at most ``max_rules`` rules in all.

    Returns
    -------
    (int, bool)
        The rules built, and whether that was the whole closure (``False``: a limit cut it).

    Raises
    ------
    DotjsonError
        Whatever building a rule or analysing it raises: after ``Index()`` accepted the schema,
        that is a refusal surfacing mid-generation.
    """
    from dotjson import ir
    from dotjson.ir.analysis import Analysis
    from dotjson.ir.families import family_of, rules_with_families

    rules = rules_with_families(grammar)
    an = Analysis(rules)
    keep = []  # (the nodes walked stay alive: their ids stay theirs)
    todo, seen = deque(["start"]), {"start"}
    walked: set = set()  # node ids already walked (bodies share subtrees: a format's language)
    per_family: dict = {}  # id(family) -> its rules built
    whole = True
    n = 0
    while todo:
        if n >= max_rules:
            return n, False
        name = todo.popleft()
        if name not in grammar.rules:
            fam = family_of(grammar, name)
            if fam is not None:
                k = per_family[id(fam)] = per_family.get(id(fam), 0) + 1
                if k > family_rules:
                    whole = False
                    continue
        n += 1
        body = rules[name]
        an.nullable(name)
        an.productive(name)
        an.check_left_recursion(name)
        stack = [body]
        while stack:
            node = stack.pop()
            if id(node) in walked:
                continue
            walked.add(id(node))
            keep.append(node)
            if isinstance(node, ir.Ref):
                if node.name not in seen:
                    seen.add(node.name)
                    todo.append(node.name)
            else:
                stack.extend(ir.children(node))
    return n, whole


class _Timeout(BaseException):
    """A schema past its budget (a BaseException: no ``except Exception`` of the compiler
    takes it for its own)."""


def _alarm(signum, frame):
    raise _Timeout()


def check(schema, options: dict, resources=None, max_rules: int = 5000, family_rules: int = 200,
          budget: float = 0, whole: bool = False):
    """``(error, rules, whole)``: the ``DotjsonError`` the lazily built rules of ``schema`` raise
    (``None`` when it is refused at translation, or its closure builds cleanly), the rules built
    and whether that was the whole closure. ``budget`` seconds (0: no limit; the main thread
    only) stop the closure: the error is then ``"timeout"``. ``whole``: then also build every
    rule in the shape meant for writing out (``LazyRules.force``: what ``index.grammar`` and
    saving an index do)."""
    import signal

    from dotjson.errors import DotjsonError
    from dotjson.jsonschema import schema_to_grammar

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            g = schema_to_grammar(schema, resources=resources, check_language=False, **options)
        except (DotjsonError, RecursionError):
            return None, 0, True  # refused where it should be
        old = signal.signal(signal.SIGALRM, _alarm) if budget else None
        try:
            if budget:
                signal.setitimer(signal.ITIMER_REAL, budget)
            n, complete = force_closure(g, max_rules, family_rules)
            if whole:
                g.rules.force()
        except DotjsonError as e:
            return e, 0, False
        except _Timeout:
            return "timeout", 0, False
        finally:
            if budget:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
    return None, n, complete


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", action="append",
                    help="suite:draft2020-12, suite:draft7, maskbench or maskbench:NAME (repeatable; default: all)")
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS), help="(repeatable; default: both)")
    ap.add_argument("--max-rules", type=int, default=5000, help="rules built per schema at most")
    ap.add_argument("--family-rules", type=int, default=200, help="rules built per rule family at most")
    ap.add_argument("--budget", type=float, default=30, help="seconds per schema (0: no limit)")
    ap.add_argument("--whole", action="store_true",
                    help="also build every rule as index.grammar and saving do (LazyRules.force)")
    ap.add_argument("-v", "--verbose", action="store_true", help="also name the schemas taking over a second")
    args = ap.parse_args(argv)
    sources = args.source or ["suite:draft2020-12", "suite:draft7", "maskbench"]
    configs = args.config or list(CONFIGS)
    bad = 0
    for source in sources:
        for cname in configs:
            t0 = time.perf_counter()
            n = cut = raised = timeouts = 0
            for sid, schema, res in schemas(source):
                t1 = time.perf_counter()
                err, _size, whole = check(schema, CONFIGS[cname], res, args.max_rules, args.family_rules,
                                          args.budget, args.whole)
                n += 1
                if err == "timeout":
                    timeouts += 1
                    print(f"timeout\t{source}\t{sid}\t{cname}", flush=True)
                    continue
                if args.verbose and time.perf_counter() - t1 > 1:
                    print(f"slow\t{source}\t{sid}\t{cname}\t{time.perf_counter() - t1:.1f} s", flush=True)
                cut += not whole and err is None
                if err is not None:
                    raised += 1
                    print(f"RAISES\t{source}\t{sid}\t{cname}\t{type(err).__name__}: {str(err)[:200]}", flush=True)
            bad += raised
            print(f"{source} {cname}: {n} schemas, {raised} raise after translation, {cut} closures cut (a family past "
                  f"{args.family_rules} rules, or {args.max_rules} in all), {timeouts} past {args.budget:g} s, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
