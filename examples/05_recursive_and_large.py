"""Recursive schemas to any depth, and a large schema written on the fly, compiled in milliseconds.

Part 1, recursion: a linked list defined with ``$ref`` (examples/schemas/linked_list.json). The
index carries a stack in its states instead of unrolling the recursion to a fixed depth, so a
list nested ``--depth`` levels deep (default 200) is allowed token by token, as the tokenizer
splits it, and EOS is allowed exactly at its end. Then a few random trees
(examples/schemas/tree.json) are decoded with dummy logits and validated.

Part 2, size: a schema of ``--properties`` properties (default 500) of assorted types is built in
Python, compiled (time printed: no work proportional to the schema is done up front beyond a
check), and a document is decoded with dummy logits; the time to the first mask and per step are
printed.

Run::

    python examples/05_recursive_and_large.py
    python examples/05_recursive_and_large.py --depth 1000 --properties 2000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from dotjson import Guide, Index, LogitsProcessor, Vocabulary

HERE = Path(__file__).resolve().parent


def validate(document, schema) -> None:
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.validate(document, schema)


def validate_linked_list(text: str, schema: dict, depth: int) -> None:
    """Check a deep linked list against linked_list.json without recursion: every node, one at a
    time, against the node schema whose ``next`` is cut to "an object or null"."""
    try:
        import jsonschema
    except ImportError:
        return
    node_schema = json.loads(json.dumps(schema["$defs"]["node"]))
    node_schema["properties"]["next"] = {"type": ["object", "null"]}
    prefix = '{"value": '
    rest = text
    for level in range(depth):
        assert rest.startswith(prefix), f"level {level}: {rest[:40]!r}"
        value_text, rest = rest[len(prefix):].split(', "next": ', 1)
        nxt = None if rest.startswith("null") else {}
        jsonschema.validate({"value": json.loads(value_text), "next": nxt}, node_schema)
    assert rest == "null" + "}" * depth


def random_documents(index: Index, rows: int, seed: int, max_steps: int):
    """Decode ``rows`` documents with random logits; None for a row that did not finish."""
    vocabulary = index.vocabulary
    guide = Guide(index, batch_size=rows)
    processor = LogitsProcessor(guide, 0)
    rng = np.random.default_rng(seed)
    logits = np.empty((rows, vocabulary.max_token_id()), dtype=np.uint16)
    eos_ids = {int(t) for t in vocabulary.eos_token_ids}
    out = [[] for _ in range(rows)]
    token_set = guide.get_start_tokensets()
    steps = 0
    while not guide.is_finished().all() and steps < max_steps:
        logits[:] = rng.integers(1, 65536, size=logits.shape, dtype=np.uint16)
        processor(logits, token_set)
        sampled = logits.argmax(axis=1)
        for r, t in enumerate(sampled.tolist()):
            if t not in eos_ids:
                out[r].append(t)
        token_set = guide.get_next_tokensets(sampled)
        steps += 1
    done = guide.is_finished()
    return [b"".join(vocabulary.token_bytes(t) for t in ids).decode() if done[r] else None
            for r, ids in enumerate(out)], steps


def deep_linked_list(vocabulary, tokenizer, depth: int) -> int:
    schema_text = (HERE / "schemas" / "linked_list.json").read_text()
    schema = json.loads(schema_text)
    t0 = time.perf_counter()
    index = Index(schema_text, vocabulary)
    print(f"linked list: compiled in {1000 * (time.perf_counter() - t0):.2f} ms")

    # {"value": 0, "next": {"value": 1, "next": ... null}}, `depth` levels deep. Python's json
    # and jsonschema both recurse once per level (RecursionError near 1000 levels), so the text is
    # written and checked level by level here.
    text = "".join(f'{{"value": {i % 1000}, "next": ' for i in range(depth)) + "null" + "}" * depth
    validate_linked_list(text, schema, depth)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]

    guide = Guide(index, batch_size=1)
    token_set = guide.get_start_tokensets()
    t0 = time.perf_counter()
    eos = int(list(vocabulary.eos_token_ids)[0])
    for k, t in enumerate(ids):
        if not token_set.contains(t)[0]:
            print(f"token {k} ({vocabulary.token_bytes(t)!r}) refused at depth {text[:k].count('{')}")
            return 1
        if k < len(ids) - 1 and token_set.contains(eos)[0] and k > 0:
            print(f"EOS allowed before the end, at token {k}")
            return 1
        token_set = guide.get_next_tokensets([t])
    if not token_set.contains(eos)[0]:
        print("EOS not allowed at the end of the document")
        return 1
    elapsed = time.perf_counter() - t0
    print(f"linked list {depth} levels deep: {len(ids)} tokens ({len(text)} characters) allowed "
          f"one by one, EOS at the end, in {elapsed:.2f} s; {index.n_states} states")
    return 0


def random_trees(vocabulary, rows: int, seed: int) -> int:
    schema_text = (HERE / "schemas" / "tree.json").read_text()
    schema = json.loads(schema_text)
    index = Index(schema_text, vocabulary)
    texts, steps = random_documents(index, rows, seed, max_steps=3000)
    finished = [t for t in texts if t is not None]
    for t in finished:
        validate(json.loads(t), schema)
    depth = max((_depth(json.loads(t)) for t in finished), default=0)
    print(f"random trees: {len(finished)}/{rows} finished within {steps} steps, deepest {depth}, "
          "all valid")
    if finished:
        shortest = min(finished, key=len)
        print(f"  e.g. {shortest[:200]}{'...' if len(shortest) > 200 else ''}")
    return 0 if finished else 1


def _depth(tree) -> int:
    deepest, stack = 0, [(tree, 1)]  # iterative: a random tree may be deep
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in node["children"])
    return deepest


def large_schema(n: int) -> dict:
    """A schema of ``n`` properties of assorted types, all required, in a fixed order."""
    kinds = [
        {"type": "integer", "minimum": 0, "maximum": 9999},
        {"type": "string", "maxLength": 12},
        {"type": "boolean"},
        {"enum": ["red", "green", "blue"]},
        {"type": "number", "minimum": -1, "maximum": 1},
        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "maxItems": 3},
        {"type": "string", "format": "date"},
        {"type": ["string", "null"], "maxLength": 6},
    ]
    props = {f"field_{i:04d}": kinds[i % len(kinds)] for i in range(n)}
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


def large(vocabulary, n: int, seed: int) -> int:
    schema = large_schema(n)
    schema_text = json.dumps(schema)
    t0 = time.perf_counter()
    index = Index(schema_text, vocabulary, disallow_whitespace=True)
    t_compile = time.perf_counter() - t0
    guide = Guide(index, batch_size=1)
    t0 = time.perf_counter()
    guide.get_start_tokensets()
    t_first = time.perf_counter() - t0
    print(f"{n}-property schema ({len(schema_text) / 1000:.0f} kB): compiled in "
          f"{1000 * t_compile:.1f} ms, first mask {1000 * t_first:.2f} ms later")
    t0 = time.perf_counter()
    texts, steps = random_documents(index, 1, seed, max_steps=40 * n + 100)
    elapsed = time.perf_counter() - t0
    if texts[0] is None:
        print(f"the {n}-property document did not finish within {steps} steps")
        return 1
    document = json.loads(texts[0])
    validate(document, schema)
    print(f"decoded a {len(document)}-property document ({len(texts[0])} characters) in {steps} "
          f"steps, {elapsed:.2f} s ({1e6 * elapsed / steps:.0f} us per step, dummy logits "
          f"included); valid. {index.n_states} states, {index.n_masks} masks")
    print(f"  begins {texts[0][:120]}...")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", default=None,
                    help="tokenizer dir or id (default: SmolLM2's, from dotjson.tools.testing)")
    ap.add_argument("--depth", type=int, default=200, help="nesting depth of the linked list")
    ap.add_argument("--trees", type=int, default=4, help="random trees to decode")
    ap.add_argument("--properties", type=int, default=500, help="size of the large schema")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from transformers import AutoTokenizer

    if args.tokenizer is None:
        from dotjson.tools.testing import smollm2_tokenizer_dir

        args.tokenizer = str(smollm2_tokenizer_dir())
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    vocabulary = Vocabulary.from_tokenizer(tokenizer)

    status = deep_linked_list(vocabulary, tokenizer, args.depth)
    status |= random_trees(vocabulary, args.trees, args.seed)
    status |= large(vocabulary, args.properties, args.seed)
    return status


if __name__ == "__main__":
    sys.exit(main())
