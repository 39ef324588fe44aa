"""The benchmarks' shared helpers (``perf/peers.py``): which vocabularies ``--tokenizer`` names.

Run in a child process: importing ``peers`` pins the thread pools (one thread each, Numba's
included), which must not leak into the rest of the test session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PERF = Path(__file__).resolve().parent.parent / "perf"

_CHECK = r"""
import sys, tempfile, pathlib
sys.path.insert(0, sys.argv[1])
import peers
from dotjson.tools import testing
assert set(peers.TOKENIZERS) == {"llama3", "smollm2", "qwen"}, peers.TOKENIZERS
for name, fn in peers.TOKENIZERS.items():
    assert callable(getattr(testing, fn)), name
d = pathlib.Path(tempfile.mkdtemp())
testing.qwen_tokenizer_dir = lambda: d / "qwen-dir"
assert peers.tokenizer_dir("qwen") == str(d / "qwen-dir")
assert peers.tokenizer_dir(str(d)) == str(d)
try:
    peers.tokenizer_dir(str(d / "missing"))
except FileNotFoundError as e:
    assert "llama3, smollm2, qwen or a directory" in str(e), e
else:
    raise AssertionError("a missing directory was accepted")
print("ok")
"""


def test_tokenizer_names_and_directories():
    r = subprocess.run([sys.executable, "-c", _CHECK, str(PERF)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
