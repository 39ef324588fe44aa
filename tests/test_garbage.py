"""An index leaves nothing for the cycle collector (issue 24: "few objects for the collector").

A schema's compiler, its parts, the closures of the rules it has not built yet and the grammar's
rule families refer to one another; once the index (and so its grammar) is gone they are let go
of by reference counting (``Compiler.release``), and the helpers that used to leave a reference
cycle at every call (a nested function calling itself) no longer do. Before, ~28,000 objects of
24 MaskBench documents waited for a collection, which ran inside some later mask (up to ~100 ms
for one full collection on the benchmark's sample).

The check: build each index and walk its document twice (the first run fills the process-wide
caches, which stay reachable), then, with the collector off, drop the index and count what a
collection finds unreachable: nothing.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from dotjson import Index
from dotjson.errors import DotjsonError

SUBSET = Path(__file__).parent / "data" / "maskbench" / "subset.jsonl"
#: objects in schema order (open and closed), any order, arrays of objects, uniqueItems, numbers
#: with bounds, string patterns and formats, $ref
IDS = ["BFCL_java_0", "Github_medium---o10079", "Glaiveai2K---analyze_health_data_ecfa5553",
       "Kubernetes---kb_1003_Normalized", "JsonSchemaStore---artifacts", "Github_hard---o30094",
       "Github_hard---o12346", "Snowplow---sp_100_Normalized", "MCPspec---CompleteResult", "JME_10",
       "Handwritten---dep7"]
CONFIGS = [dict(close_objects=False), dict(close_objects=True), dict(property_order="any")]


def _rows():
    rows = [json.loads(line) for line in SUBSET.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r["id"] in IDS]


def _use(row, vocab, tokenizer, options) -> None:
    try:
        index = Index(row["schema"], vocab, **options)
    except DotjsonError:
        return
    for case in [c for c in row.get("tests", []) if c.get("valid")][:1]:
        state = index.initial_state
        text = json.dumps(case["data"], separators=(",", ":"), ensure_ascii=False)
        for t in tokenizer.encode(text, add_special_tokens=False):
            index.mask(state)
            state = index.next_state(state, t)
            if state < 0:
                break


@pytest.mark.parametrize("options", CONFIGS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_an_index_leaves_no_garbage(llama3_vocab, llama3_tokenizer, options):
    rows = _rows()
    assert len(rows) == len(IDS)
    for row in rows:  # the process-wide caches: filled once, reachable
        _use(row, llama3_vocab, llama3_tokenizer, options)
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        left = {}
        for row in rows:
            _use(row, llama3_vocab, llama3_tokenizer, options)
            n = gc.collect()
            if n:
                left[row["id"]] = n
    finally:
        if enabled:
            gc.enable()
    assert left == {}, left


def test_a_grammar_kept_after_its_index_is_gone_still_builds_its_rules(llama3_vocab):
    """The compiler lets go of its rules only once nothing can ask for them: a caller holding the
    index's grammar (``index.ir``) can still render it, every pending rule built then, and it
    equals the grammar text of an index alive beside it."""
    from dotjson.grammar import to_lark

    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}},
                                               "b": {"type": "string", "pattern": "^x+$"}},
              "required": ["a"]}
    grammar = Index(schema, llama3_vocab, close_objects=False).ir  # (the index is gone at once)
    gc.collect()
    assert to_lark(grammar) == Index(schema, llama3_vocab, close_objects=False).grammar


def test_an_index_with_a_grammar_around_its_schema_leaves_no_garbage(llama3_vocab, llama3_tokenizer):
    """A schema inside a reasoning grammar (``dotjson.embed``): its compiler lets go as well."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
              "required": ["a"]}
    text = '</think>{"a":1,"b":"x"}'

    def use():
        index = Index(schema, llama3_vocab, reasoning="</think>")
        state = index.initial_state
        for t in llama3_tokenizer.encode(text, add_special_tokens=False):
            index.mask(state)
            state = index.next_state(state, t)
        assert index.is_accepting(state)

    use()
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        use()
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
