"""Generate ``dotjson/formats/_idna_data.py``: the IDNA2008 tables of ``format: idn-hostname``.

Sources (none written by us):

* the ``idna`` package's ``idnadata.py`` (BSD-3-Clause, Kim Davies and contributors): the RFC 5892
  derived property (PVALID / CONTEXTJ / CONTEXTO; everything else DISALLOWED or UNASSIGNED), the
  scripts the CONTEXTO rules name and the joining types of RFC 5892 A.1, at its Unicode version;
* Python's ``unicodedata`` at its own Unicode version: general category (a label may not start
  with a mark, RFC 5891 4.2.3.2), canonical combining class (virama = 9, RFC 5892 A.1/A.2; the
  canonical order NFC requires), Bidi classes (RFC 5893) and NFC itself.

A code point PVALID or CONTEXT* in ``idnadata`` but unassigned in ``unicodedata`` (newer than
it) has no known category, class or normalization here, so it is left out (DISALLOWED): never
wrong, narrower by the Unicode versions' difference. Both versions are written in the output.

Run (from the repository root, ``idna`` installed)::

    python3 tools/gen_idna_tables.py            # rewrite dotjson/formats/_idna_data.py
    python3 tools/gen_idna_tables.py --check    # exit 1 if the file differs from a fresh run
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

import idna
import idna.idnadata as idnadata

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "dotjson" / "formats" / "_idna_data.py"


def _decode(intranges) -> list[tuple[int, int]]:
    """``idna.intranges`` (``start << 32 | end``, end exclusive) as inclusive ranges."""
    return [(r >> 32, (r & 0xFFFFFFFF) - 1) for r in intranges]


def _to_set(ranges) -> set[int]:
    return {c for lo, hi in ranges for c in range(lo, hi + 1)}


def _ranges(cps) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for c in sorted(cps):
        if out and c == out[-1][1] + 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return tuple((lo, hi) for lo, hi in out)


def _assigned(c: int) -> bool:
    return unicodedata.category(chr(c)) != "Cn"


def _composes_second() -> set[int]:
    """Code points that are the second of a primary composite (NFC_Quick_Check = Maybe)."""
    out = set()
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        d = unicodedata.decomposition(chr(c))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(c):
            out.add(parts[1])
    # Hangul: L+V and LV+T compose algorithmically
    out.update(range(0x1161, 0x1176))
    out.update(range(0x11A8, 0x11C3))
    return out


def tables() -> dict:
    classes = idnadata.codepoint_classes
    pvalid = _to_set(_decode(classes["PVALID"]))
    contextj = _to_set(_decode(classes["CONTEXTJ"]))
    contexto = _to_set(_decode(classes["CONTEXTO"]))
    # never in NFC text (NFC_Quick_Check = No): a character that NFC changes on its own
    nfc_no = {c for c in pvalid | contexto | contextj if unicodedata.normalize("NFC", chr(c)) != chr(c)}
    newer = {c for c in pvalid | contexto | contextj if not _assigned(c)}
    pvalid -= nfc_no | newer
    allowed = pvalid | contextj | contexto
    assert not ((contextj | contexto) & (nfc_no | newer))
    ch = [chr(c) for c in sorted(allowed)]
    marks = {ord(c) for c in ch if unicodedata.category(c).startswith("M")}
    ccc: dict[int, set[int]] = {}
    for c in ch:
        k = unicodedata.combining(c)
        if k:
            ccc.setdefault(k, set()).add(ord(c))
    bidi: dict[str, set[int]] = {}
    for c in ch:
        bidi.setdefault(unicodedata.bidirectional(c), set()).add(ord(c))
    scripts = {name: _to_set(_decode(idnadata.scripts[name])) & allowed
               for name in ("Greek", "Hebrew", "Hiragana", "Katakana", "Han")}
    joining = {jt: _to_set(_decode(rs)) & allowed for jt, rs in idnadata.joining_types.items()
               if jt in ("D", "L", "R", "T")}
    # NFC beyond canonical order: a Maybe character (second of a composite) after a starter S
    # is in NFC exactly when NFC(S + m) == S + m; after anything else dotjson refuses it
    maybe = _composes_second() & allowed
    starters = [c for c in sorted(allowed) if unicodedata.combining(chr(c)) == 0]
    maybe_bad_before = {}
    for m in sorted(maybe):
        cm = chr(m)
        bad = [s for s in starters if unicodedata.normalize("NFC", chr(s) + cm) != chr(s) + cm]
        maybe_bad_before[m] = _ranges(bad)
    return {
        "PVALID": _ranges(pvalid),
        "CONTEXTJ": _ranges(contextj),
        "CONTEXTO": _ranges(contexto),
        "MARKS": _ranges(marks),
        "CCC": {k: _ranges(v) for k, v in sorted(ccc.items())},
        "BIDI": {k: _ranges(v) for k, v in sorted(bidi.items())},
        "SCRIPTS": {k: _ranges(v) for k, v in sorted(scripts.items())},
        "JOINING": {k: _ranges(v) for k, v in sorted(joining.items())},
        "MAYBE_BAD_BEFORE": maybe_bad_before,
    }


def _fmt(name: str, value, doc: str) -> str:
    def rs(r, indent="    "):
        items = [f"(0x{lo:X}, 0x{hi:X})," for lo, hi in r]
        if len(items) <= 6:
            return "(" + " ".join(items)[:-1] + ("," if len(items) == 1 else "") + ")"
        lines = [" ".join(items[i:i + 6]) for i in range(0, len(items), 6)]
        return "(\n" + "".join(f"{indent}    {ln}\n" for ln in lines) + indent + ")"

    out = [f"#: {doc}"]
    if isinstance(value, dict):
        out.append(f"{name} = {{")
        for k, v in value.items():
            key = f"0x{k:X}" if isinstance(k, int) and name == "MAYBE_BAD_BEFORE" else repr(k)
            out.append(f"    {key}: {rs(v, '    ')},")
        out.append("}")
    else:
        out.append(f"{name} = {rs(value, '')}")
    return "\n".join(out)


def _licence() -> str:
    """The ``idna`` package's licence text, from its installed distribution."""
    from importlib.metadata import distribution

    dist = distribution("idna")
    for f in dist.files or ():
        if "LICENSE" in f.name.upper() or "LICENCE" in f.name.upper():
            return dist.locate_file(f).read_text(encoding="utf-8").strip()
    raise SystemExit("the idna distribution ships no licence file: cannot record it")


def render() -> str:
    t = tables()
    docs = {
        "PVALID": "RFC 5892 PVALID code points (less those NFC changes and those newer than unicodedata)",
        "CONTEXTJ": "RFC 5892 CONTEXTJ: ZERO WIDTH NON-JOINER, ZERO WIDTH JOINER (rules A.1, A.2)",
        "CONTEXTO": "RFC 5892 CONTEXTO code points (rules A.3-A.9)",
        "MARKS": "general category M among the allowed code points (no label starts with one)",
        "CCC": "canonical combining class -> allowed code points with it (9 = virama)",
        "BIDI": "Bidi class -> allowed code points with it (RFC 5893)",
        "SCRIPTS": "the scripts RFC 5892 A.4, A.5, A.6, A.7 name, among the allowed code points",
        "JOINING": "joining types D, L, R, T among the allowed code points (RFC 5892 A.1)",
        "MAYBE_BAD_BEFORE": "a second-of-composite code point m -> the starters S with NFC(S m) != S m",
    }
    head = (
        '"""IDNA2008 tables for ``format: idn-hostname`` (GENERATED by tools/gen_idna_tables.py: do not edit).\n\n'
        f"RFC 5892 classes, scripts and joining types: the ``idna`` package {idna.__version__} (idnadata,\n"
        f"Unicode {idnadata.__version__}; BSD-3-Clause, its licence below).\n"
        f"Categories, combining classes, Bidi classes, NFC: Python's unicodedata, Unicode {unicodedata.unidata_version}.\n"
        "Code points newer than the latter are left out. Ranges are inclusive code-point pairs.\n\n"
        "The idna package's licence, which covers the data derived from it:\n\n"
        + "\n".join(("    " + ln).rstrip() for ln in _licence().splitlines()) + "\n"
        '"""\n\n'
        f"IDNA_UNICODE_VERSION = {idnadata.__version__!r}\n"
        f"UCD_UNICODE_VERSION = {unicodedata.unidata_version!r}\n"
        f"IDNA_PACKAGE_VERSION = {idna.__version__!r}\n\n"
    )
    return head + "\n\n".join(_fmt(k, v, docs[k]) for k, v in t.items()) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the shipped table differs")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUT} differs from a fresh run")
        return 0 if same else 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
