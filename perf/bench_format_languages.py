"""The cost of each ``format``'s language in a fresh process: its terms and its first document.

Issue 33 asked why the position after ``"2023-04-15`` cost ~2,000 automaton states and whether
the formats' languages can be smaller. For each format, in a *fresh process* (one per format, so
nothing of another format is shared) after ``dotjson.warmup()`` and one schema without formats
(which loads the head kernels, so their loading is not charged to the format): the first
``Index`` of ``{"v": {"type": "string", "format": F}}`` on the Llama 3 vocabulary, teacher-forced
through a typical value. Printed per format: the store image's terms (the JSON base rules and the
format's compiled language), the ``Index`` build time, the sum and the slowest of the fresh masks
(thread CPU time) and where the slowest was, the states and terms the document built, and
llguidance's sum and slowest masks on the same tokens (a new grammar, same process) with the
ratios.

``--reference`` runs the ``date``/``time``/``date-time`` constructions the issue replaced (kept
in ``tests/test_format_languages.py``) instead of today's, for a before/after in one run.

Run ``python3 perf/bench_format_languages.py [--formats date-time,time,...] [--reference]
[--no-peer] [--bounds schema]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

VALUES = {
    "date-time": "2023-04-15T19:30:00Z", "date": "2023-04-15", "time": "19:30:00+02:00",
    "email": "jane.doe@example.com", "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "uri": "https://www.example.com/a/b?c=d", "uri-reference": "../a/b?c=d#frag",
    "ipv4": "192.168.10.1", "ipv6": "2001:db8:85a3::8a2e:370:7334", "hostname": "www.example-host.com",
}


def _use_reference() -> None:
    """Put the constructions ``tests/test_format_languages.py`` keeps in the format registry."""
    spec = importlib.util.spec_from_file_location(
        "test_format_languages", HERE.parent / "tests" / "test_format_languages.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    import dataclasses

    import dotjson.formats as F

    swap = {"date": ref.reference_full_date, "time": ref.reference_full_time,
            "date-time": ref.reference_date_time}
    F.FORMATS = tuple(dataclasses.replace(f, build=swap.get(f.name, f.build)) for f in F.FORMATS)
    F._BY_NAME.update({f.name: f for f in F.FORMATS})
    F.format_to_ir.cache_clear()


def one(fmt: str, bounds: str | None, no_peer: bool, reference: bool) -> dict:
    """The measurements of one format, in this process (called in a fresh one)."""
    tok, vocab, llg = peers.llama3_setup(no_peer)
    if reference:
        _use_reference()
    import dotjson
    from dotjson import Index

    dotjson.warmup()
    opts = {"bounds": bounds} if bounds else {}
    clock = time.thread_time

    def run(schema, text):
        ids = tok.encode(text, add_special_tokens=False)
        t0 = clock()
        ix = Index(schema, vocab, **opts)
        build = clock() - t0
        auto = ix._auto
        image, s, times, at = auto.n_terms, ix.initial_state, [], []
        for k, t in enumerate(list(ids) + [None]):
            t0 = clock()
            ix.mask(s)
            times.append(clock() - t0)
            at.append(tok.decode(ids[:k])[-14:])
            if t is not None:
                s = ix.next_state(s, t)
        k = max(range(len(times)), key=times.__getitem__)
        return ids, {"image_terms": image, "build_ms": build * 1e3, "masks_ms": sum(times) * 1e3,
                     "worst_ms": times[k] * 1e3, "at": at[k], "states": auto.n_states, "terms": auto.n_terms}

    run({"type": "object", "properties": {"w": {"type": "string"}}}, '{"w":"abc def"}')
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}, "required": ["v"]}
    ids, out = run(schema, json.dumps({"v": VALUES[fmt]}, separators=(",", ":")))
    if llg is not None:
        # (its own warm-up: a format string's grammar first, as bench_formats does; the first
        # one pays llguidance's set-up, ~4 ms)
        warm = {"type": "string", "format": "date" if fmt != "date" else "time"}
        peers.mask_times(llg, warm, tok.encode('"2020-01-01"' if fmt != "date" else '"00:00:00Z"',
                                               add_special_tokens=False))
        try:
            lt = peers.mask_times(llg, schema, ids)
            out["llg_masks_ms"], out["llg_worst_ms"] = sum(lt) * 1e3, max(lt) * 1e3
        except peers.CompileFailed as e:  # (llguidance knows no uri-reference)
            out["llg_error"] = str(e)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default=",".join(VALUES), help="comma-separated formats")
    ap.add_argument("--reference", action="store_true", help="the date/time constructions before issue 33")
    ap.add_argument("--no-peer", action="store_true", help="dotjson only")
    ap.add_argument("--bounds", choices=["schema", "generation"], default=None,
                    help="Index(bounds=...); default: the Index default (generation)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # (the child process: one format, JSON out)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.bounds, args.no_peer, args.reference)))
        return
    print(f"{'format':14} {'image terms':>11} {'build ms':>8} {'masks ms':>8} {'worst ms':>8} "
          f"{'states':>6} {'terms':>6} {'llg masks':>9} {'llg worst':>9} {'sum ratio':>9} {'worst ratio':>11}  worst at")
    for fmt in args.formats.split(","):
        cmd = [sys.executable, __file__, "--one", fmt] + ["--no-peer"] * args.no_peer \
            + ["--reference"] * args.reference + (["--bounds", args.bounds] if args.bounds else [])
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        lm, lw = r.get("llg_masks_ms", float("nan")), r.get("llg_worst_ms", float("nan"))
        print(f"{fmt:14} {r['image_terms']:11} {r['build_ms']:8.1f} {r['masks_ms']:8.2f} {r['worst_ms']:8.2f} "
              f"{r['states']:6} {r['terms']:6} {lm:9.2f} {lw:9.2f} {r['masks_ms'] / lm:9.1f} "
              f"{r['worst_ms'] / lw:11.1f}  {r['at']!r}", flush=True)


if __name__ == "__main__":
    main()
