"""The usage page, verbatim: every code block of ``tests/data/usage-page.txt`` runs as written.

``tests/data/usage-page.txt`` is an unmodified copy of the usage documentation this library
implements (``shared/seed/usage-page.txt`` of the project). Its code blocks are extracted from the
text (runs of Python lines between prose lines), run in order in one namespace, and each is
followed by assertions on what the surrounding text promises. The only substitutions:

- the hub id ``"NousResearch/Hermes-3-Llama-3.1-8B"`` becomes the shipped SmolLM2 tokenizer
  directory (no network); ``HF_TOKEN`` is set to a dummy value in the environment;
- names the page uses without defining them are supplied as its text implies: ``os``, ``Guide``
  and ``LogitsProcessor`` (imports it leaves implicit), ``sampled_tokens`` ("a set of tokens you
  have sampled": the token ``{``, allowed at the start), ``n_batches`` (the guide's batch size, 1),
  ``token_set`` (the current token set) and, for the ``[[1, 2, 3]]`` example, a guide and
  processor over a three-token vocabulary whose second token is not allowed.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import numpy as np
import pytest

from dotjson import BatchedTokenSet, Guide, Index, LogitsProcessor, Vocabulary
from dotjson.tools.testing import smollm2_tokenizer_dir

PAGE = Path(__file__).parent / "data" / "usage-page.txt"
README = Path(__file__).parent.parent / "README.md"
HUB_ID = '"NousResearch/Hermes-3-Llama-3.1-8B"'

#: A code line: a comment, an import, an assignment, or a call (prose lines are none of these).
_CODE = re.compile(r"#|(from|import) \w|[A-Za-z_][\w.]*(\[[^\]]*\])?\s*=[^=]|[A-Za-z_][\w.]*\(.*\)\s*(#.*)?$")


def page_blocks(text: str) -> list[str]:
    """The page's code blocks: maximal runs of code lines (blank lines inside a run kept)."""
    out: list[str] = []
    cur: list[str] = []
    blank = 0
    for line in text.splitlines():
        if not line.strip():
            blank += bool(cur)
            continue
        if _CODE.match(line):
            cur.extend([""] * blank if cur else [])
            cur.append(line)
        elif cur:
            out.append("\n".join(cur))
            cur = []
        blank = 0
    if cur:
        out.append("\n".join(cur))
    return out


BLOCKS = page_blocks(PAGE.read_text(encoding="utf-8"))


def test_the_page_has_the_blocks_this_test_runs():
    # If the page changes, this test says so before the walk-through below runs stale code.
    firsts = [b.splitlines()[0] for b in BLOCKS]
    assert firsts == [
        "# Basic usage with just the model name",
        "from dotjson import Vocabulary, Index",
        "# Load the index",
        "# Create a guide from the index with the batch size",
        "# Get the initial set of allowed tokens",
        "# Check if a specific token is allowed in each batch",
        "import numpy as np",
        "# Store the vectors in a container that persists outside the loop",
        "# Set the batch size",
        "processor.update_logits(logits, token_set)",
        "# Single logits vector, with a three-token vocabulary",
        "processor.update_logits(logits, token_set)",
    ]
    assert BLOCKS[5].splitlines()[-1] == "allowed_count = len(next_token_set)"
    assert BLOCKS[11].splitlines()[-1] == "print(logits)   # [[1, 0, 3]]"


def run_block(i: int, ns: dict) -> str:
    """Run block ``i`` in ``ns`` (hub id replaced by the local SmolLM2 directory); its stdout."""
    code = BLOCKS[i]
    if HUB_ID in code:
        code = code.replace(HUB_ID, repr(str(smollm2_tokenizer_dir())))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"usage-page block {i}", "exec"), ns)
    return out.getvalue()


def test_every_block_of_the_page_runs_and_does_what_its_text_says(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_dummy_token_for_tests")
    monkeypatch.chdir(tmp_path)
    ns: dict = {"os": os, "Guide": Guide, "LogitsProcessor": LogitsProcessor}

    # Compiling an index: a vocabulary from the model directory, an index for the schema.
    run_block(0, ns)
    vocabulary, index = ns["vocabulary"], ns["index"]
    assert isinstance(vocabulary, Vocabulary) and vocabulary.max_token_id() == 49152
    assert isinstance(index, Index)
    assert index.accepts('{"x":1}') and index.accepts("{}") and not index.accepts('{"x":"1"}')
    # The page's comment says "compact JSON" but passes disallow_whitespace=False (the default:
    # whitespace allowed); compact output is disallow_whitespace=True.
    assert index.accepts('{ "x": 1 }')
    assert not Index(ns["schema"], vocabulary, disallow_whitespace=True).accepts('{ "x": 1 }')

    # Saving, then loading: the reloaded index allows the same tokens.
    run_block(1, ns)
    saved = ns["index"]
    assert (tmp_path / "simple_index").is_dir()
    run_block(2, ns)
    loaded = ns["index"]
    assert isinstance(loaded, Index) and loaded is not saved
    assert loaded.grammar == saved.grammar
    np.testing.assert_array_equal(
        Guide(loaded).get_start_tokensets().bits, Guide(saved).get_start_tokensets().bits
    )

    # The guide, the start set and the next set after a sampled token.
    run_block(3, ns)
    guide = ns["guide"]
    assert isinstance(guide, Guide) and guide.batch_size == 1
    brace = next(t for t in range(vocabulary.max_token_id()) if vocabulary.token_bytes(t) == b"{")
    ns["sampled_tokens"] = [brace]
    run_block(4, ns)
    start, nxt = ns["initial_token_set"], ns["next_token_set"]
    assert isinstance(start, BatchedTokenSet) and isinstance(nxt, BatchedTokenSet)
    assert start.contains(brace).tolist() == [True]
    assert guide.states.tolist() != [loaded.initial_state]  # the row advanced past "{"

    # contains() per row; len() = the number of allowed tokens (batch of one).
    run_block(5, ns)
    ids = nxt[0].tolist()
    assert ns["is_allowed"].tolist() == [42 in ids]
    assert ns["allowed_count"] == len(ids) == nxt.num_allowed()[0]
    expected = [t for t in range(vocabulary.max_token_id())
                if vocabulary.token_bytes(t) and loaded.is_prefix(b"{" + vocabulary.token_bytes(t))]
    assert ids == expected and ns["allowed_count"] > 1  # '"', '}', whitespace, ...

    # A uint16 2-D buffer whose rows are views of one vector.
    ns["n_batches"] = guide.batch_size
    run_block(6, ns)
    vocab_size, all_logits, logits_2d = ns["vocab_size"], ns["all_logits"], ns["logits"]
    assert vocab_size == 49152 and all_logits.dtype == np.uint16 and all_logits.shape == (vocab_size,)
    assert logits_2d.shape == (1, vocab_size) and np.shares_memory(logits_2d, all_logits)
    assert (all_logits == 1).all()

    # Separate vectors, one view per batch.
    run_block(7, ns)
    storage, views = ns["batch_logits_storage"], ns["logits"]
    assert len(views) == 1 and views[0].dtype == np.uint16 and (views[0] == 1).all()
    assert np.shares_memory(views[0], storage[0]) and views[0] is not storage[0]

    # The processor with mask value 0, applied to the current token set, in place.
    run_block(8, ns)
    processor = ns["processor"]
    assert isinstance(processor, LogitsProcessor) and processor.mask_value == 0
    ns["token_set"] = nxt
    run_block(9, ns)
    want = np.where(nxt.to_bool_mask()[0], 1, 0).astype(np.uint16)
    np.testing.assert_array_equal(storage[0], want)  # written through the view
    processor.update_logits(logits_2d, nxt)  # the 2-D buffer of block 6 works the same way
    np.testing.assert_array_equal(all_logits, want)

    # The [[1, 2, 3]] example: a three-token vocabulary whose second token is not allowed.
    vocab3 = Vocabulary.from_tuples([b"1", b"", b"2"], [0, 1, 2], eos_token_ids=[1])
    guide3 = Guide(Index('{"type": "integer"}', vocab3), batch_size=1)
    ns["token_set"] = guide3.get_start_tokensets()
    assert ns["token_set"][0].tolist() == [0, 2]
    ns["processor"] = LogitsProcessor(guide3, ns["mask_value"])
    run_block(10, ns)
    assert ns["logits"] == [[1, 2, 3]]
    printed = run_block(11, ns)
    comment = BLOCKS[11].split("#", 1)[1].strip()
    assert printed.strip() == comment == "[[1, 0, 3]]"
    assert ns["logits"] == [[1, 0, 3]]


def test_readme_api_table_says_what_the_page_says():
    readme = README.read_text(encoding="utf-8")
    table = readme[readme.index("## API") :]
    table = table[: table.index("\n## ", 5)]
    row = next(line for line in table.splitlines() if line.startswith("| `BatchedTokenSet`"))
    assert "`len(ts)` = the number of allowed tokens (one row;" in row
    assert "`contains(id)`" in row and "`num_allowed()`" in row
    proc = next(line for line in table.splitlines() if line.startswith("| `LogitsProcessor"))
    assert "lists of numbers" in proc and "NumPy" in proc and "torch" in proc
    for name in ("Vocabulary.from_pretrained", "Index(", "Guide(", "BatchedTokenSet", "LogitsProcessor("):
        assert name in table, name


@pytest.mark.parametrize("batch", [2, 3])
def test_len_of_several_rows_is_refused_and_points_to_num_allowed(tiny_vocab_for_page, batch):
    guide = Guide(Index('{"type": "integer"}', tiny_vocab_for_page), batch_size=batch)
    ts = guide.get_start_tokensets()
    with pytest.raises(TypeError, match=rf"len\(\) of a BatchedTokenSet of {batch} rows is ambiguous"):
        len(ts)
    assert ts.num_allowed().tolist() == [2] * batch and [len(r) for r in ts] == [2] * batch


@pytest.fixture
def tiny_vocab_for_page():
    return Vocabulary.from_tuples([b"1", b"", b"2"], [0, 1, 2], eos_token_ids=[1])
