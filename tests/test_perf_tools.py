"""perf/'s profilers keep working: they wrap engine methods by name (``Masker.row``,
``Automaton.handle_exit``) and read the store's layout, so a rename inside the engine would
otherwise break them silently. A smoke run of each on a few schemas (the repository's MaskBench
subset where the development split is absent), checked for its tables and plausible figures."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from perf_module import perf_module

ROOT = Path(__file__).resolve().parents[1]


def test_profile_fresh_parts_runs_and_accounts_for_the_steps():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "profile_fresh_parts.py"), "--limit", "1", "--top", "4"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    m = re.search(r"(\d+) steps: ([\d.]+) µs a step \(next_state \+ fill_mask\), of which fresh masks "
                  r"([\d.]+) µs", out)
    assert m, out
    steps, step_us, fresh_us = int(m[1]), float(m[2]), float(m[3])
    assert steps > 100 and 0 < fresh_us <= step_us * 1.5  # (the wrappers' own time is left out)
    assert "fresh masks by the shape of their state" in out
    shapes = re.findall(r"^\s+[\d.]+\s+(\d+)\s+[\d.]+\s+rule", out, re.M)
    assert shapes and all(int(n) > 0 for n in shapes)
    assert re.search(r"states the fresh masks made, by their leading item: [\d.]+ a step", out)
    m = re.search(r"rule bodies compiled in the steps, by family: ([\d.]+) µs a step \((\d+)% of the "
                  r"steps\), (\d+) bodies", out)
    assert m, out
    assert 0 < float(m[1]) < step_us and int(m[3]) > 0
    table = out[m.end():out.index("collections inside the steps")]
    rows = re.findall(r"^\s+[\d.]+\s+(\d+)\s+[\d.]+  (.+)$", table, re.M)
    assert 0 < len(rows) <= 4 and sum(int(n) for n, _ in rows) <= int(m[3]), table
    assert {"the root schema", "sub-schema", "object state (written)"} & {f for _, f in rows}, table
    assert re.search(r"collections inside the steps: ", out)



def test_profile_fresh_parts_profiles_the_serving_steps_workload():
    """``--serving N``: bench_serving_step.py's schemas (its sample, each a fresh index in any
    property order, the first 200 tokens of its instance), N of them; their objects are the
    any-order family's rules."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "profile_fresh_parts.py"), "--serving", "3", "--top", "8"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    m = re.search(r"^(\d+) instances, (\d+) steps: ", out, re.M)
    assert m and int(m[1]) == 3 and 3 < int(m[2]) <= 3 * 201, out
    assert "object in any order (family)" in out, out

def test_fresh_steps_times_every_step_and_compares_two_runs(tmp_path):
    """Every step timed, the least of two rounds kept and compared; with ``--spikes`` (the same
    run: one process less in the default suite) what ran inside the steps is counted too — the
    collector's runs and the store's growths (a new index's store grows in its first document);
    ``--slowest`` lists the slowest steps with their text and ``--layers`` times each layer's part."""
    out = tmp_path / "steps.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "fresh_steps.py"), "--limit", "1", "--rounds", "2", "--out", str(out),
         "--spikes", "--slowest", "3", "--layers", "300"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = re.search(r"(\d+) steps: mean ([\d.]+) µs, p50 ([\d.]+), p90 ([\d.]+), p99 ([\d.]+), max ([\d.]+)", proc.stdout)
    assert m, proc.stdout
    n, mean, p50, p90, p99, top = int(m[1]), *map(float, m.groups()[1:])
    assert n > 100 and 0 < p50 <= p90 <= p99 <= top and mean <= top
    # --spikes: the slowest step it names is the figures' max (both the least of the rounds)
    slow = re.search(r"slowest step, the least of the rounds: (\d+) µs \((\S+) #\d+ step \d+\)", proc.stdout)
    assert slow and abs(int(slow[1]) - top) <= 1, proc.stdout
    assert re.search(r"steps past 1000 µs in a single round, not in their least: \d+", proc.stdout), proc.stdout
    assert re.search(r"collections inside the steps: (none|generation \d: \d+, mean \d+ µs)", proc.stdout), proc.stdout
    assert re.search(r"store growths inside the steps: \w+: \d+, mean \d+ µs, max \d+", proc.stdout), proc.stdout
    # --slowest: the three slowest steps, the first of them the max, each with its text and token
    listed = re.findall(r"^ +(\d+)  (\S+) #\d+ step (\d+): '.*' \+ '.+'$", proc.stdout, re.M)
    assert len(listed) == 3 and abs(int(listed[0][0]) - top) <= 1, proc.stdout
    assert int(listed[0][0]) >= int(listed[1][0]) >= int(listed[2][0]), proc.stdout
    # --layers: every step of one more round, each layer's own share, the rest the masker's; the
    # same for the steps past 300 µs (the slowest listed is one of them)
    every = re.search(r"every step: (\d+) steps, ([\d.]+) µs each\n((?:    .*\n)+)", proc.stdout)
    assert every and int(every[1]) == n, proc.stdout
    shares = [float(x) for x in re.findall(r"^ +[\d.]+ +([\d.]+)%  ", every[3], re.M)]
    assert len(shares) == 8 and abs(sum(shares) - 100) < 0.5 and shares[5] > 0, every[3]  # (the kernels: some)
    assert re.search(r"the steps past 300 µs \(their least\): \d+ steps, [\d.]+ µs each", proc.stdout), proc.stdout
    low = re.search(r"the steps at or below the median \(their least ≤ ([\d.]+) µs\): (\d+) steps", proc.stdout)
    assert low and abs(float(low[1]) - p50) <= 1 and n // 2 <= int(low[2]) < n, proc.stdout
    steps = json.loads(out.read_text(encoding="utf-8"))
    assert sum(len(one) for runs in steps.values() for one in runs) == n
    assert all(t > 0 for runs in steps.values() for one in runs for t in one)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "fresh_steps.py"), "--compare", str(out), str(out), "--top", "2"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"B - A over {n} paired steps: +0.0 ms" in proc.stdout, proc.stdout


@pytest.mark.slow  # (17 s: the default run stays within its 15 minutes on a slow day)
def test_kernel_calls_prices_both_ways_and_counts_the_packed_calls():
    """``perf/kernel_calls.py``: a call's price with tuples and packed; and the units a fresh
    mask calls, all the hot ones the twins (no call handing the store's 17 arrays there)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "kernel_calls.py"), "--calls", "200", "--repeat", "2"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    prices = dict(re.findall(r"^(.+?)\s+([\d.]+) µs a call$", proc.stdout, re.M))
    assert len(prices) == 4 and all(float(v) > 0 for v in prices.values()), proc.stdout
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "kernel_calls.py"), "--count", "--limit", "1"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = re.search(r"^(\d+) fresh masks; units called from Python:", proc.stdout, re.M)
    assert m and int(m[1]) > 50, proc.stdout
    rows = {k: float(v) for k, v in re.findall(r"^  (\w+)\s+\d+ calls\s+([\d.]+) arrays a call", proc.stdout, re.M)}
    for twin in ("compute_mask_packed", "key_state_packed", "head_pairs_packed", "build_packed"):
        assert twin in rows and rows[twin] <= 6, proc.stdout
    assert "compute_mask" not in rows and "key_state" not in rows, proc.stdout


def test_profile_fresh_parts_names_the_json_layers_rule_families():
    body_family = perf_module("profile_fresh_parts").body_family
    assert body_family("obj12_s_3_1_0") == "object state (written)"
    assert body_family("obj12_m_3_1_0") == "object member: its value and the next state"
    assert body_family("obj12_K_0_1_0") == "object key position (native key set)"
    assert body_family("extra4_r") == "undeclared member after its quote"
    assert body_family("extra4") == "undeclared member"
    assert body_family("s_root") == "the root schema"
    assert body_family("s_geo_lon") == "sub-schema"
    assert body_family("json_value") == "rule json_value"
    assert body_family("ws2") == "rule ws#"


SCHEMA = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}, "b": {"enum": ["x", "y"]}},
          "required": ["a"]}


def test_fuzz_walks_finishes_valid_documents(smollm2_vocab):
    import json

    import jsonschema
    import numpy as np

    from dotjson import Index

    fw = perf_module("fuzz_walks")
    finished = 0
    for seed in range(6):
        status, text, problem = fw.walk(Index(SCHEMA, smollm2_vocab), smollm2_vocab, np.random.default_rng(seed), 120)
        assert problem is None, problem
        if status == "finished":
            finished += 1
            jsonschema.validate(json.loads(text), SCHEMA)
    assert finished >= 3


def test_fuzz_walks_catches_a_mask_that_disagrees_with_the_step(smollm2_vocab):
    """The checks can fail: a mask allowing every token, one allowing none, and one whose EOS bit
    lies are each reported."""
    import numpy as np

    from dotjson import Index

    fw = perf_module("fuzz_walks")

    class Lying(Index):
        how = "all"

        def fill_mask(self, state, out):
            super().fill_mask(state, out)
            if self.how == "all":
                out[:] = 0xFFFFFFFF
            elif self.how == "none":
                out[:] = 0
            else:
                for e in smollm2_vocab.eos_token_ids:
                    out[e >> 5] ^= np.uint32(1 << (e & 31))

    seen = set()
    for how, want in (("all", {"lax", "eos"}), ("none", {"dead-end"}), ("eos", {"eos"})):
        idx = Lying(SCHEMA, smollm2_vocab)
        idx.how = how
        status, _, problem = fw.walk(idx, smollm2_vocab, np.random.default_rng(0), 50)
        assert status in want and problem, (how, status, problem)
        seen.add(status)
    assert "dead-end" in seen


def test_fuzz_walks_compares_every_mask_with_the_reference_walk(smollm2_vocab):
    """``--reference``: the masks of a walk equal the reference walk's (every shortcut off) on a
    real tokenizer; a reference that differs (another schema's index) is reported."""
    import numpy as np

    fw = perf_module("fuzz_walks")
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "tags": {"type": "array", "items": {"type": "string"}},
                                               "n": {"type": "number"}}, "required": ["name"]}
    from dotjson import Index

    ref = fw.reference_index(schema, smollm2_vocab)
    assert ref._masker._heads is False and ref._masker._plain_runs is False
    for seed in range(3):
        status, text, problem = fw.walk(Index(schema, smollm2_vocab), smollm2_vocab, np.random.default_rng(seed), 60,
                                        ref=fw.reference_index(schema, smollm2_vocab))
        assert problem is None, problem
    other = fw.reference_index({"type": "object", "properties": {"name": {"type": "integer"}}}, smollm2_vocab)
    status, _, problem = fw.walk(Index(schema, smollm2_vocab), smollm2_vocab, np.random.default_rng(0), 60, ref=other)
    assert status == "reference" and "differ from the reference walk" in problem


def test_fuzz_walks_reads_the_test_suite_with_its_remotes(smollm2_vocab):
    """``--suite``: the Test-Suite's groups as rows, walked with their remote schemas (a group whose
    ``$ref`` names one), documents validated with those remotes too."""
    import json

    import numpy as np

    from dotjson import Index

    fw = perf_module("fuzz_walks")
    rows, resources = fw.suite_rows("draft2020-12")
    assert len(rows) > 400 and any(u.startswith("http://localhost:1234/") for u in resources)
    row = next(r for r in rows if "localhost:1234" in json.dumps(r["schema"]) and "integer.json" in json.dumps(r["schema"]))
    validator = fw._validator(row["schema"], resources)
    finished = 0
    for seed in range(4):
        status, text, problem = fw.walk(Index(row["schema"], smollm2_vocab, resources=resources), smollm2_vocab,
                                        np.random.default_rng(seed), 40,
                                        ref=fw.reference_index(row["schema"], smollm2_vocab, resources=resources))
        assert problem is None, problem
        if status == "finished":
            finished += 1
            assert not list(validator.iter_errors(json.loads(text))), text
    assert finished


@pytest.mark.skipif(__import__("shutil").which("node") is None, reason="needs Node.js (V8) as the ECMA-262 reference")
def test_fuzz_walks_disputes_a_regex_only_where_v8_takes_it():
    """``format: regex`` objections of ``jsonschema`` (Python's ``re``) count as disputed only where
    V8 takes the pattern (ECMA-262's empty class ``[]``), not where it refuses it too."""
    import jsonschema

    fw = perf_module("fuzz_walks")
    v = jsonschema.Draft202012Validator({"format": "regex"}, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errs = list(v.iter_errors("a[]b"))
    assert errs and fw._disputed(errs)
    errs = list(v.iter_errors("a[b"))
    assert errs and not fw._disputed(errs)


def test_fuzz_walks_disputes_a_float_rounding_only_where_the_exact_number_is_valid():
    """``jsonschema`` reads numbers as floats: a 42-digit multiple of 3 fails ``multipleOf: 3``
    there; read exactly it is valid (disputed), and a number that is not a multiple stays invalid."""
    import jsonschema

    fw = perf_module("fuzz_walks")
    schema = {"type": "number", "multipleOf": 3, "not": {"multipleOf": 8}}
    text = b"0.685343962618261644659893280879759056542126e000042"
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(json.loads(text)))
    assert fw._exactly_valid(schema, None, text)
    assert not fw._exactly_valid(schema, None, b"0.685343962618261644659893280879759056542127e42")



def test_fuzz_walks_reads_an_integer_in_any_notation_exactly():
    """``3.40345473908E0789`` is an integer (no fractional part; JSON Schema's ``integer``), which
    ``jsonschema`` reads as the float ``inf`` and refuses: read exactly it is valid (disputed),
    and a number with a fractional part stays invalid however written (seed 92 on SmolLM2 met
    it: ``Github_trivial---o82286``'s port)."""
    import jsonschema

    fw = perf_module("fuzz_walks")
    schema = {"type": "object", "properties": {"port": {"type": "integer", "minimum": 0}}}
    text = b' {"port":3.40345473908E0789 \n        }'
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(json.loads(text)))
    assert fw._exactly_valid(schema, None, text)
    for bad in (b'{"port":3.403454739085E1}', b'{"port":-3E789}', b'{"port":2.5}'):
        assert not fw._exactly_valid(schema, None, bad), bad

@pytest.mark.slow
def test_fuzz_walks_over_maskbench_schemas_finds_nothing():
    """Random walks over two MaskBench schemas a category (the development split where it is,
    else the repository's subset), both configurations: every finished document valid, every
    mask agreeing with the step."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "fuzz_walks.py"), "--limit", "2", "--walks", "1", "--seed", "3"],
        capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "failures: 0" in proc.stdout
    m = re.search(r'"default: finished": (\d+)', proc.stdout)
    assert m and int(m[1]) >= 10, proc.stdout[-2000:]


def test_fuzz_walks_reads_patterns_as_ecma_262():
    """jsonschema matches `pattern` with Python's `re`; JSON Schema means ECMA-262, whose `\\s`
    holds U+FEFF (the JSON-Schema-Test-Suite's ecmascript-regex.json) and whose `\\d` is ASCII."""
    import re

    fw = perf_module("fuzz_walks")
    p = fw._ecma_pattern(r"^\d+\s(minutes?|hours?)$")
    assert re.search(p, "687\ufeffminute") and not re.search(r"^\d+\s(minutes?|hours?)$", "687\ufeffminute")
    assert not re.search(p, "\u0667\u0668 hours")  # (Arabic-Indic digits: Python's \d, not ECMA's)
    assert re.search(fw._ecma_pattern(r"^[\s\d]+$"), "1\u3000\ufeff2")
    assert re.search(fw._ecma_pattern(r"^\S\W$"), "a-") and not re.search(fw._ecma_pattern(r"^\S$"), "\ufeff")


def test_bench_maskbench_protocol_pass_pairs_the_masks_both_engines_computed():
    """The protocol figure (every instance, valid or not, on one compiled schema) pairs each
    instance's masks up to the shorter run: an engine refusing an invalid instance earlier
    leaves the other's later masks out."""
    bm = perf_module("bench_maskbench")

    def job(cold, protocol):
        return {"status": "compiled", "ttfm_us": 10.0, "compile_us": 5.0, "error": None,
                "cold": {0: {"status": "ok", "k": 2, "times": cold, "error": None}}, "warm": {},
                "protocol": {i: {"status": st, "k": len(ts) - 1, "times": ts, "error": None}
                             for i, (st, ts) in enumerate(protocol)}}

    results = [{"id": "x", "n_instances": 1, "tokens": [2], "n_protocol": 2, "engines": {
        "dotjson": job([3.0, 3.0, 3.0], [("ok", [4.0, 2.0, 2.0]), ("reject", [1.0, 1.0])]),
        "llguidance": job([1.0, 1.0, 1.0], [("ok", [2.0, 2.0, 2.0]), ("reject", [2.0, 2.0, 2.0, 2.0])])}}]
    ratios = bm.paired_ratios(results, ["dotjson", "llguidance"])["llguidance"]
    assert ratios["tokens_protocol"] == 5  # 3 + the 2 both computed
    assert ratios["protocol"]["mean"] == pytest.approx((10.0 / 5) / 2.0)
    assert ratios["cold"]["mean"] == pytest.approx(3.0)
    summary = bm.summarize(results, ["dotjson", "llguidance"])
    assert summary["dotjson"]["protocol"]["n"] == 5 and summary["llguidance"]["protocol"]["n"] == 7
    text = bm.render(summary, {"llguidance": ratios}, ["dotjson", "llguidance"], {})
    assert "protocol mask mean" in text and "protocol: masks paired" in text
    # an instance one engine could not run: the schema's protocol masks are not paired
    results[0]["engines"]["llguidance"]["protocol"][1]["status"] = "error"
    assert bm.paired_ratios(results, ["dotjson", "llguidance"])["llguidance"]["tokens_protocol"] == 0


def test_bench_maskbench_runs_the_protocol_pass():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "bench_maskbench.py"), "--engines", "dotjson", "--limit", "1",
         "--categories", "Github_easy", "--cpu", "--quiet"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = re.search(r"\| protocol: masks timed\s+\|\s+(\d+) \|", proc.stdout)
    c = re.search(r"\| cold: masks timed\s+\|\s+(\d+) \|", proc.stdout)
    assert m and c, proc.stdout
    assert int(m[1]) > 0


def test_profile_kernels_names_numba_symbols():
    pk = perf_module("profile_kernels")
    assert pk.demangle("_ZN7dotjson9automaton6derive6_derivB3v48B40c8tJTIeFIjxB2IKSgI4CrvQClQZ6FcpCShpgEU0AE5Tuple") \
        == "dotjson.automaton.derive._deriv"
    assert pk.demangle("cfunc._ZN7dotjson8_kernels4walk12compute_maskB2v1B40c8tJTIeF") == "dotjson._kernels.walk.compute_mask"
    assert pk.demangle("_ZN7cpython7dotjson8_kernels4walk9walk_trieB3v14B40") == "dotjson._kernels.walk.walk_trie"
    assert pk.demangle("_ZN5numba4misc9mergesort19make_mergesort_implB2v1") == "numba.misc.mergesort.make_mergesort_impl"
    assert pk.demangle("_PyEval_EvalFrameDefault") is None and pk.demangle("_ZN5tokio3rt4spawnE") is None


_MAP_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import profile_kernels as pk
pk.keep_objects()                       # before any kernel is loaded or compiled
from dotjson._kernels import jit, walk  # (walk: its units and the engine's beneath it)
jit.link()
rows = pk.symbol_map()
units = {u.__module__ + "." + u.__name__: u.address for u in jit.UNITS}
print(json.dumps({"rows": [[a, s, pk.demangle(n), n.startswith(("cfunc.", "_ZN7cpython"))] for a, s, n in rows],
                  "units": units}))
"""


@pytest.mark.skipif(__import__("shutil").which("nm") is None, reason="needs nm (binutils) to read symbol tables")
def test_profile_kernels_places_every_unit_where_numba_loaded_it():
    # the map perf reads: each kernel unit's native entry point (the address the engine's
    # symbol table holds) is the start of the mapped function of that name, and no two mapped
    # functions overlap
    proc = subprocess.run([sys.executable, "-c", _MAP_CHILD, str(ROOT / "perf")], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    rows, units = got["rows"], got["units"]
    assert len(rows) > 100
    for (a, s, _, _), (b, _, _, _) in zip(rows, rows[1:]):
        assert s > 0 and a + s <= b
    starts = {}
    for a, s, name, wrapper in rows:
        if name is not None and not wrapper:
            starts.setdefault(name, set()).add(a)
    assert "dotjson._kernels.walk.compute_mask" in units
    for name, addr in units.items():
        assert addr in starts.get(name, ()), (name, hex(addr))


def _perf_usable() -> bool:
    import shutil

    if shutil.which("perf") is None or shutil.which("nm") is None:
        return False
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text()) <= 2
    except (OSError, ValueError):
        return False


@pytest.mark.slow  # (12 s: as above)
@pytest.mark.skipif(not _perf_usable(), reason="needs Linux perf with perf_event_paranoid <= 2, and nm")
def test_profile_kernels_runs_and_finds_the_trie_walk():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "perf" / "profile_kernels.py"), "--limit", "1", "--rounds", "1", "--top", "8"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    m = re.search(r"samples in compiled code \(the kernels' own machine code\): ([\d.]+)% of all", out)
    assert m and 2 < float(m[1]) < 90, out
    shares = dict(re.findall(r"^\| `(dotjson\.[\w.]+)` \| ([\d.]+)% \|", out, re.M))
    assert float(shares.get("dotjson._kernels.walk.walk_trie", 0)) > 5, out  # (a quarter, measured)
    assert 5 <= len(shares) <= 8 and sum(map(float, shares.values())) <= 100.5
