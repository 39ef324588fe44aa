"""JSON inside text: free-text masks, and time to first mask of a 50-tool grammar, vs llguidance.

Measures, in one run, on the Llama 3 vocabulary (128,256 tokens; ``--vocab`` for the others):

1. **Free text is one memoized state.** A tools index (Hermes format) teacher-forced through a
   paragraph of plain text: the state after every token, the number of masks memoized (the memo
   counters), and the time per token of ``next_state + fill_mask`` inside the text against the
   time of ``fill_mask`` of a memoized state (target: ≤ 1×).
2. **Time to first mask of a 50-tool grammar** (compile + the start state's mask), median of
   fresh builds: dotjson's ``Index.from_tools`` against llguidance's ``LLMatcher`` on the same
   tools written as a Lark grammar with ``%json`` (the text before a call a lazy lexeme ending
   with the trigger, llguidance's idiom: ``text[lazy]: /(.|\\n)*<tool_call>/``), then the start
   mask with ``fill_next_token_bitmask`` (target: ≤ 1×). Both run single-threaded.

Run::

    python perf/bench_text.py                 # Llama 3
    python perf/bench_text.py --vocab qwen --repeat 30
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402,F401  (pins every thread pool to one thread first)

TEXT = ("Sure, I can help with that. Before calling anything, let me think about what you asked: "
        "the weather in Paris (in degrees Celsius, please note the unit), the exchange rate of "
        "the euro, and a short summary of today's news about the <b>markets</b>. I will also "
        "check whether 2 + 2 = 4 still holds, and look up the opening hours of the Louvre; "
        "it's usually open from 9 a.m. until 6 p.m., except on Tuesdays.")


def make_tools(n: int) -> list[dict]:
    """``n`` tools with varied parameter schemas (strings, enums, integers with bounds,
    arrays, nested objects), as OpenAI's API writes them."""
    tools = []
    for i in range(n):
        props = {
            "query": {"type": "string", "minLength": 1, "maxLength": 80 + i},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10 + i},
            "unit": {"enum": ["metric", "imperial", f"custom_{i}"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
            "options": {"type": "object", "properties": {
                "verbose": {"type": "boolean"}, "lang": {"type": "string", "pattern": "^[a-z]{2}$"}},
                "required": ["verbose"]},
        }
        tools.append({"type": "function", "function": {
            "name": f"tool_{i}", "description": f"Tool number {i}",
            "parameters": {"type": "object", "properties": props, "required": ["query"]}}})
    return tools


def llguidance_lark(tools: list[dict]) -> str:
    """The tools as llguidance's Lark with %json, in the Hermes format."""
    lines = ["start: (text call)* TAIL",
             "text[lazy]: /(.|\\n)*<tool_call>/",
             "TAIL: /(.|\\n)*/",
             "call: \"\\n\" (" + " | ".join(f"c{i}" for i in range(len(tools))) + ") \"\\n</tool_call>\""]
    for i, t in enumerate(tools):
        f = t["function"]
        head = json.dumps('{"name": "' + f["name"] + '", "arguments": ')
        lines.append(f"c{i}: {head} a{i} \"}}\"")
        lines.append(f"a{i}: %json {json.dumps(f['parameters'])}")
    return "\n".join(lines) + "\n"


def median_time(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--vocab", choices=["llama3", "qwen", "smollm2"], default="llama3")
    p.add_argument("--tools", type=int, default=50)
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args()

    import numpy as np
    from transformers import AutoTokenizer

    import dotjson.tools.testing as testing
    from dotjson import Index, Vocabulary

    tok_dir = getattr(testing, f"{args.vocab}_tokenizer_dir")()
    hf = AutoTokenizer.from_pretrained(str(tok_dir))
    vocab = Vocabulary.from_pretrained(tok_dir)
    tools = make_tools(args.tools)
    ids = hf.encode(TEXT, add_special_tokens=False)
    print(f"vocabulary {args.vocab}: {vocab.max_token_id()} tokens; {args.tools} tools; "
          f"text of {len(ids)} tokens")

    # ---- 1. free text: one state, one mask, memoized
    w = Index.from_tools(make_tools(2), vocab)  # warm-up: kernels loaded, base image built
    w.mask(w.next_state(w.next_state(0, ids[0]), ids[1]))
    ix = Index.from_tools(tools, vocab)
    out = np.zeros(ix._n_words, dtype=np.uint32)
    s0 = ix.initial_state
    ix.fill_mask(s0, out)
    masks0, states0 = ix.n_masks, ix.n_states
    s, seen = s0, set()
    per_token, mask_only = [], []
    for t in ids:
        t1 = time.perf_counter()
        s = ix.next_state(s, t)
        t2 = time.perf_counter()
        ix.fill_mask(s, out)
        t3 = time.perf_counter()
        per_token.append(t3 - t1)
        if s == s0:
            mask_only.append(t3 - t2)
        seen.add(s)
    # every position is the start state but inside a prefix of the trigger ("<" of "<b>")
    assert len(seen) <= len("<tool_call>"), f"free text went through {len(seen)} states"
    print(f"free text: {len(ids)} tokens through {len(seen)} states (the start state, and after "
          f"'<' the trigger's first prefix); states {states0} -> {ix.n_states}, memoized masks "
          f"{masks0} -> {ix.n_masks}")
    memo = median_time(lambda: ix.fill_mask(s0, out), 2000)
    text_mask = statistics.median(mask_only)
    text_tok = statistics.median(per_token)
    print(f"  mask per position inside free text (fill_mask, first pass): median "
          f"{text_mask * 1e6:.2f} us, max {max(mask_only) * 1e6:.1f} us")
    print(f"  memoized mask of the same state, repeated:                  median {memo * 1e6:.2f} us")
    print(f"  ratio: {text_mask / memo:.2f}x the memoized mask time (target <= 1x)")
    print(f"  a whole step inside free text (next_state of a token met for the first time + "
          f"fill_mask): median {text_tok * 1e6:.2f} us, max {max(per_token) * 1e3:.1f} ms (the fresh "
          f"mask after '<')")

    # ---- 2. time to first mask, 50 tools
    import llguidance
    import llguidance.hf
    import llguidance.numpy as llnp

    lltok = llguidance.hf.from_tokenizer(hf, n_vocab=peers.vocab_width(hf), eos_token=vocab.eos_token_ids[0])
    lark = llguidance_lark(tools)
    buf = llnp.allocate_token_bitmask(1, peers.vocab_width(hf))

    def llg():
        m = llguidance.LLMatcher(lltok, llguidance.LLMatcher.grammar_from_lark(lark), log_level=0)
        assert not m.is_error(), m.get_error()
        llnp.fill_next_token_bitmask(m, buf, 0)
        return m

    def dj():
        x = Index.from_tools(tools, vocab)
        x.fill_mask(x.initial_state, out)
        return x

    m = llg()  # warm-up, and a check that both accept the same call
    call = ('<tool_call>\n{"name": "tool_7", "arguments": {"query": "x", "options": {"verbose": true}}}'
            '\n</tool_call>')
    # (tokenized with every "<" alone: Qwen's tokenizer makes "<tool_call>" one added token,
    # which llguidance reads as a special token, not as the text of the grammar's literal)
    cids = [t for piece in re.split("(<)", "Hello. " + call) if piece
            for t in hf.encode(piece, add_special_tokens=False)]
    assert all(m.consume_token(t) for t in cids) and m.is_accepting()
    assert dj().accepts("Hello. " + call)
    t_llg = median_time(llg, args.repeat)
    t_dj = median_time(dj, args.repeat)
    print(f"time to first mask, {args.tools} tools: dotjson {t_dj * 1e3:.2f} ms, llguidance "
          f"{t_llg * 1e3:.2f} ms: {t_dj / t_llg:.2f}x llguidance (target <= 1x)")

    # llguidance's own per-token time inside the same free text, for scale
    m = llg()
    lt = []
    for t in ids:
        t1 = time.perf_counter()
        m.consume_token(t)
        llnp.fill_next_token_bitmask(m, buf, 0)
        lt.append(time.perf_counter() - t1)
    print(f"  llguidance per token inside free text: median {statistics.median(lt) * 1e6:.2f} us "
          f"(dotjson {text_tok / statistics.median(lt):.2f}x)")


if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    main()
