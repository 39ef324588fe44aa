"""Write the documentation's lists of ``format`` values from the registry (``dotjson.formats.FORMATS``).

Each generated region sits between ``<!-- formats:KIND -->`` and ``<!-- /formats -->`` markers:

* ``table`` (``docs/grammar.md``): one row per format: name, draft, exact or narrower, notes;
* ``supported`` (``docs/keywords.md``, ``README.md``): the supported names, comma-separated;
* ``unsupported``: the names a draft defines that dotjson refuses by name.

Run (from the repository root)::

    python3 tools/gen_format_docs.py            # rewrite the regions
    python3 tools/gen_format_docs.py --check    # exit 1 if a region is stale (tests/test_formats.py)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dotjson.formats import FORMATS  # noqa: E402

FILES = ("README.md", "docs/keywords.md", "docs/grammar.md")
_REGION = re.compile(r"(<!-- formats:(\w+) -->)(.*?)(<!-- /formats -->)", re.S)


def region(kind: str) -> str:
    """The text of one generated region."""
    if kind == "supported":
        return ", ".join(f.name for f in FORMATS if f.build is not None)
    if kind == "unsupported":
        return ", ".join(f"`{f.name}`" for f in FORMATS if f.build is None)
    if kind == "table":
        rows = ["", "| format | since | language | notes |", "|---|---|---|---|"]
        for f in FORMATS:
            lang = "unsupported" if f.build is None else ("exact" if f.exact else "narrower")
            rows.append(f"| `{f.name}` | {f.since} | {lang} | {f.notes} |")
        return "\n".join(rows) + "\n"
    raise ValueError(f"unknown formats region {kind!r}")


def render(text: str) -> str:
    """``text`` with every region regenerated."""
    return _REGION.sub(lambda m: m.group(1) + region(m.group(2)) + m.group(4), text)


def stale() -> list[str]:
    """The files whose regions differ from the registry (or that have none)."""
    out = []
    for rel in FILES:
        text = (ROOT / rel).read_text(encoding="utf-8")
        if not _REGION.search(text) or render(text) != text:
            out.append(rel)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a generated region is stale")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        print("up to date" if not bad else "stale: " + ", ".join(bad) + " (run python3 tools/gen_format_docs.py)")
        return 1 if bad else 0
    for rel in FILES:
        p = ROOT / rel
        text = p.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            p.write_text(new, encoding="utf-8")
            print(f"rewrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
