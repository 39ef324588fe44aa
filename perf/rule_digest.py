"""A digest of every rule the schema compiler builds, per MaskBench schema and configuration.

For a refactoring of the compiler (``dotjson/jsonschema/``) that must not change behaviour: run it
on the tree before and on the tree after, under the same ``PYTHONHASHSEED``, and compare the two
outputs (``--compare A B``). Each schema is translated (:func:`~dotjson.jsonschema.schema_to_grammar`,
phase 1), then every rule reachable from the start is built, lazily as the automaton would ask
for them (phase 2; the members of rule families too), breadth first, up to ``--max-rules``; the
digest covers the rules' names and bodies (their ``repr``) and the error, if any, with its
message. A schema's rules do not depend on what the process compiled before
(``tests/test_rule_names.py``), so the schemas may run in one process (``--budget 0``); by
default each schema and configuration is compiled in a child forked from a warmed-up parent, only
so that one running past ``--budget`` seconds can be stopped (it is reported as such and left out
of the comparison).

Usage::

    PYTHONHASHSEED=0 python3 perf/rule_digest.py --limit 25 > before.txt   # on the old tree
    PYTHONHASHSEED=0 python3 perf/rule_digest.py --limit 25 > after.txt    # on the new tree
    python3 perf/rule_digest.py --compare before.txt after.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import select
import signal
import sys
import time
from pathlib import Path

DATA = Path(os.environ.get("DOTJSON_MASKBENCH", "/work/shared/data/maskbench"))

#: name -> options of schema_to_grammar
CONFIGS = {
    "default": {},
    "every-valid": {"property_order": "any", "close_objects": False, "whitespace": "json"},
    "any-closed": {"property_order": "any", "close_objects": True},
}


def digest(schema, options: dict, max_rules: int) -> str:
    """The digest of the rules compiled from ``schema`` under ``options`` (see the module docstring)."""
    from dotjson import ir
    from dotjson.errors import DotjsonError
    from dotjson.ir.families import rules_with_families
    from dotjson.jsonschema import schema_to_grammar

    h = hashlib.sha1()
    try:
        g = schema_to_grammar(schema, check_language=False, **options)
        rules = rules_with_families(g)
        todo, seen = ["start"], {"start"}
        while todo and len(seen) <= max_rules:  # (breadth first, as the rules refer to each other)
            name = todo.pop(0)
            body = rules[name]
            h.update(f"{name}={body!r}\n".encode())
            stack = [body]
            while stack:
                n = stack.pop()
                if isinstance(n, ir.Ref):
                    if n.name not in seen:
                        seen.add(n.name)
                        todo.append(n.name)
                else:
                    stack.extend(reversed(ir.children(n)))
        h.update(f"rules {len(seen)} left {len(todo)}\n".encode())
    except DotjsonError as e:
        h.update(f"{type(e).__name__}: {e}\n".encode())
    except RecursionError:
        h.update(b"RecursionError\n")
    return h.hexdigest()[:16]


def _in_child(schema, options: dict, max_rules: int, budget: int) -> str:
    """:func:`digest` in a forked child, ``"timeout"`` past ``budget`` seconds (the child is
    killed: a compile cut short in the parent could leave a process-wide cache half-filled)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        try:
            out = digest(schema, options, max_rules)
        except BaseException as e:  # (reported as the digest: a crash is a difference too)
            out = f"crash:{type(e).__name__}"
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + budget
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return "timeout"
        data = os.read(r, 4096)
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    os.close(r)
    return b"".join(chunks).decode()


def run(args) -> None:
    import dotjson

    dotjson.warmup()  # (every kernel compiled or loaded once, in the parent)
    for path in sorted(DATA.glob("*.jsonl")):
        with path.open() as f:
            rows = [json.loads(line) for line in f]
        for row in rows[: args.limit or None]:
            for cname, options in CONFIGS.items():
                t0 = time.perf_counter()
                if args.budget > 0:
                    d = _in_child(row["schema"], options, args.max_rules, args.budget)
                else:
                    d = digest(row["schema"], options, args.max_rules)
                print(f"{row['id']}\t{cname}\t{d}\t{time.perf_counter() - t0:.3f}", flush=True)


def compare(a: str, b: str) -> int:
    def read(p):
        out = {}
        for line in Path(p).read_text().splitlines():
            sid, cname, d, _t = line.split("\t")
            out[(sid, cname)] = d
        return out

    A, B = read(a), read(b)
    both = [k for k in A if k in B and A[k] != "timeout" and B[k] != "timeout"]
    diff = [k for k in both if A[k] != B[k]]
    timeouts = sum(1 for k in A.keys() | B.keys() if A.get(k) == "timeout" or B.get(k) == "timeout")
    for k in diff:
        print("DIFFERS", *k)
    print(f"{len(both)} compared, {len(both) - len(diff)} identical, {len(diff)} differ, "
          f"{timeouts} timed out (left out), {len(A.keys() ^ B.keys())} in one file only")
    return 1 if diff else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=25, help="schemas per category (0: all)")
    ap.add_argument("--budget", type=int, default=10,
                    help="seconds per schema and configuration (0: no limit, every schema in this process)")
    ap.add_argument("--max-rules", type=int, default=5000, help="rules built per schema at most")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    run(args)


if __name__ == "__main__":
    main()
