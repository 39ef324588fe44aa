"""perf/'s profilers keep working: they wrap engine methods by name (``Masker.row``,
``Automaton.handle_exit``) and read the store's layout, so a rename inside the engine would
otherwise break them silently. A smoke run of each on a few schemas (the repository's MaskBench
subset where the development split is absent), checked for its tables and plausible figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_profile_fresh_parts_runs_and_accounts_for_the_steps():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "profile_fresh_parts.py"), "--limit", "1", "--top", "4"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    m = re.search(r"(\d+) steps: ([\d.]+) µs a step \(next_state \+ fill_mask\), of which fresh masks "
                  r"([\d.]+) µs", out)
    assert m, out
    steps, step_us, fresh_us = int(m[1]), float(m[2]), float(m[3])
    assert steps > 100 and 0 < fresh_us <= step_us * 1.5  # (the wrappers' own time is left out)
    assert "fresh masks by the shape of their state" in out
    shapes = re.findall(r"^\s+[\d.]+\s+(\d+)\s+[\d.]+\s+rule", out, re.M)
    assert shapes and all(int(n) > 0 for n in shapes)
    assert re.search(r"states the fresh masks made, by their leading item: [\d.]+ a step", out)
