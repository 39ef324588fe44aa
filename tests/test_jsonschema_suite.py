"""The JSON-Schema-Test-Suite (draft2020-12) through dotjson.schema, checked with Lark: a ratchet.

``tests/data/suite_baseline.json`` records, per file, how many cases pass, fail and are
unsupported (``python3 perf/suite_report.py --json tests/data/suite_baseline.json`` writes it).
A file whose pass count drops below its baseline, or whose fail count rises, fails the test;
an improvement prints a note asking to refresh the baseline. The default run covers a fixed set
of core keyword files (a few seconds); ``--runslow`` runs every file, ``optional/`` included.

Known, deliberate failures (see docs/keywords.md): ``format`` is asserted, not an annotation, so
format.json's "only an annotation by default" cases fail; declared properties must appear in
schema order, so a valid instance listing them in another order is rejected.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tests" / "data" / "suite_baseline.json"


def _runner():
    spec = importlib.util.spec_from_file_location("_suite_report", ROOT / "perf" / "suite_report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RUNNER = _runner()
ALL_FILES = RUNNER.suite_files()
BASE = json.loads(BASELINE.read_text())

# fast core files for the default run
CORE = [
    "additionalProperties.json", "allOf.json", "anchor.json", "anyOf.json", "boolean_schema.json", "const.json",
    "contains.json", "defs.json", "dependentRequired.json", "dependentSchemas.json", "enum.json",
    "exclusiveMaximum.json", "exclusiveMinimum.json", "if-then-else.json", "infinite-loop-detection.json",
    "maxContains.json", "maxItems.json", "maxLength.json", "maxProperties.json", "maximum.json",
    "minContains.json", "minItems.json", "minLength.json", "minProperties.json", "minimum.json", "multipleOf.json",
    "not.json", "oneOf.json", "pattern.json", "patternProperties.json", "prefixItems.json", "properties.json",
    "propertyNames.json", "required.json", "type.json", "uniqueItems.json",
]


@pytest.fixture(scope="module")
def remotes():
    return RUNNER.remotes()


def _ratchet(rel, remotes):
    got = RUNNER.run_file(rel, remotes)
    base = BASE.get(rel)
    assert base is not None, f"{rel} has no baseline: run perf/suite_report.py --json {BASELINE}"
    assert got["pass"] >= base["pass"] and got["fail"] <= base["fail"], (
        f"{rel} regressed: {got} (baseline {base}); run perf/suite_report.py -v {rel} to see which cases")
    if got != base:
        print(f"\nNOTE {rel} improved: {got} (baseline {base}); refresh {BASELINE.name}")


def test_core_files_are_in_the_suite():
    assert set(CORE) <= set(ALL_FILES)
    assert set(ALL_FILES) == set(BASE), "baseline and suite files differ: refresh the baseline"


@pytest.mark.parametrize("rel", CORE)
def test_suite_core(rel, remotes):
    _ratchet(rel, remotes)


@pytest.mark.slow
@pytest.mark.parametrize("rel", [f for f in ALL_FILES if f not in CORE])
def test_suite_rest(rel, remotes):
    _ratchet(rel, remotes)


def test_suite_totals_meet_the_floor():
    # the recorded baseline itself: supported cases must pass (failures are the documented ones)
    total = {k: sum(v[k] for v in BASE.values()) for k in ("pass", "fail", "unsupported")}
    n = sum(total.values())
    assert total["pass"] / n > 0.85, total
