"""Undeclared keys of a wide open object: the two ways the compiler writes "any key but these".

An open object (``close_objects=False``) accepts any key that is not a declared name. Up to
``dotjson.jsonschema.objects.WIDE_EXTRA`` names that key is the difference of any key and the
alternation of the names; past it, the difference of any key and the names' native key set (a
byte narrows a range of sorted names). This prints, for objects of 100 to 3,000 declared names,
the mask time of one teacher-forced document (eight declared keys, two undeclared ones, a new
``Index`` each) and the states built, each way, twice, alternated: where the threshold belongs.

Run ``python3 perf/bench_wide_extra.py``.
"""

from __future__ import annotations

import gc
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

WORDS = ["user", "name", "id", "count", "value", "item", "data", "config", "type", "size", "max", "min",
         "enable", "color", "path"]


def main() -> None:
    import dotjson
    import dotjson.jsonschema.objects as objects
    from dotjson import Index, Vocabulary
    from dotjson.tools.testing import llama3_tokenizer_dir

    tok = peers.load_tokenizer("llama3")
    vocab = Vocabulary.from_pretrained(llama3_tokenizer_dir())
    dotjson.warmup()
    gc.collect()
    gc.freeze()
    rng = random.Random(1)
    default = objects.WIDE_EXTRA
    print(f"WIDE_EXTRA = {default}; masks of one document, thread CPU ms (states built)")
    print(f"{'names':>6} {'alternation':>24} {'key set':>24}")
    try:
        for n in (100, 300, 1000, 3000):
            names: set = set()
            while len(names) < n:
                names.add(rng.choice(WORDS) + rng.choice(WORDS).capitalize()
                          + (str(rng.randint(0, 99)) if rng.random() < 0.5 else ""))
            names = sorted(names)
            props = {k: {"type": "integer"} for k in names}
            pick = rng.sample(names, 8)
            ids = tok.encode(peers.compact({**{k: 1 for k in pick}, "someOtherKey": 2, pick[0] + "X": 3}),
                             add_special_tokens=False)
            got: dict = {"alt": [], "keys": []}
            for way in ("alt", "keys", "alt", "keys"):
                objects.WIDE_EXTRA = 10**9 if way == "alt" else 0
                schema = {"type": "object", "properties": props, "title": f"{way}{len(got[way])}"}
                index = Index(schema, vocab, close_objects=False)
                s, total = index.initial_state, 0.0
                for t in list(ids) + [None]:
                    t0 = time.thread_time()
                    index.mask(s)
                    total += time.thread_time() - t0
                    if t is not None:
                        s = index.next_state(s, t)
                got[way].append((total * 1e3, index.n_states))
            cols = [" / ".join(f"{ms:.1f}" for ms, _ in got[w]) + f" ms ({got[w][-1][1]})" for w in ("alt", "keys")]
            print(f"{n:>6} {cols[0]:>24} {cols[1]:>24}")
    finally:
        objects.WIDE_EXTRA = default


if __name__ == "__main__":
    main()
