"""JSON inside text with ``dotjson generate``: reasoning before the document, and tool calls.

Two runs of the command line with SmolLM2-135M-Instruct (the CLI's default model):

1. **reasoning first**: the model thinks in free text between ``<think>`` and ``</think>`` (at
   most ``--max-reasoning-chars`` characters; a small model never stops thinking on its own),
   then writes a JSON document valid for ``schemas/person.json``::

       dotjson generate --schema examples/schemas/person.json --reasoning '</think>' \\
           --reasoning-begin '<think>' --max-reasoning-chars 200 --prompt "..."

2. **two tools**: ``tools/weather_and_calculator.json`` offers ``get_weather`` and ``add``; the
   model calls them in the Hermes/Qwen format (``<tool_call>\\n{"name": ..., "arguments":
   ...}\\n</tool_call>``), each call's arguments valid for its tool, at most two calls::

       dotjson generate --tools examples/tools/weather_and_calculator.json \\
           --tool-choice required --max-calls 2 --prompt "..."

Run::

    python examples/06_reasoning_and_tools.py
    python examples/06_reasoning_and_tools.py --model DIR     # any causal LM directory
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def dotjson_generate(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "dotjson", "generate", "-q", *args],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"dotjson generate failed:\n{proc.stderr}")
    return proc


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--model", default=None, help="model directory (default: the CLI's SmolLM2)")
    p.add_argument("--max-new-tokens", default="300")
    args = p.parse_args()
    model = ["--model", args.model] if args.model else []

    import jsonschema

    person = json.loads((HERE / "schemas" / "person.json").read_text())
    r = dotjson_generate("--schema", str(HERE / "schemas" / "person.json"), "--reasoning", "</think>",
                         "--reasoning-begin", "<think>", "--max-reasoning-chars", "200",
                         "--compact", "--max-new-tokens", args.max_new_tokens, *model,
                         "--prompt", "Introduce Maria, a retired astronaut from Lisbon.")
    document = json.loads(r.stdout)
    jsonschema.validate(document, person)
    print(f"reasoning then JSON: {json.dumps(document)}")

    tools_file = HERE / "tools" / "weather_and_calculator.json"
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in json.loads(tools_file.read_text())}
    r = dotjson_generate("--tools", str(tools_file), "--tool-choice", "required", "--max-calls", "2",
                         "--max-new-tokens", args.max_new_tokens, *model,
                         "--prompt", "What is the weather in Paris, in celsius? And what is 2 + 3?")
    calls = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert 1 <= len(calls) <= 2, r.stdout
    for call in calls:
        jsonschema.validate(call["arguments"], tools[call["name"]])
        print(f"tool call: {json.dumps(call)}")
    print("every call is valid for its tool")


if __name__ == "__main__":
    main()
