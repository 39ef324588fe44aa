"""perf/workers.py: a job that hangs, dies or raises costs that job, never the run.

The benchmarks of ``perf/`` run every engine in a :class:`workers.Worker`; these tests drive one
with trivial jobs (no engine) through each way a peer can misbehave.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

PERF = Path(__file__).resolve().parents[1] / "perf"
if str(PERF) not in sys.path:
    sys.path.insert(0, str(PERF))

import workers  # noqa: E402


def setup(engine, greeting="hello"):
    return {"info": {"engine": engine, "greeting": greeting, "pid": os.getpid()}}


def handle(state, job, report):
    kind = job["kind"]
    report(phase="start")
    if kind == "ok":
        return {"status": "ok", "echo": job.get("x"), "greeting": state["info"]["greeting"]}
    if kind == "sleep":
        report(phase="compile", partial=1)
        time.sleep(job["s"])
        return {"status": "ok"}
    if kind == "die":
        os._exit(3)
    if kind == "raise":
        raise ValueError("bad job")
    raise AssertionError(kind)


@pytest.fixture()
def worker():
    w = workers.Worker("toy", setup, handle, {"greeting": "hi"}, mem_limit_gb=0, quiet=False,
                       start_timeout=120)
    yield w
    w.stop()


def test_ready_and_ok(worker):
    r = worker.run({"kind": "ok", "x": 7}, time_limit=60)
    assert r["status"] == "ok" and r["echo"] == 7 and r["greeting"] == "hi"
    assert r["phase"] == "start" and r["wall_s"] >= 0
    assert worker.info["engine"] == "toy" and worker.restarts == 0


def test_timeout_keeps_partial_results_and_restarts(worker):
    r = worker.run({"kind": "sleep", "s": 30}, time_limit=1.0)
    assert r["status"] == "timeout" and r["timeout_phase"] == "compile" and r["partial"] == 1
    assert "over its 1 s limit" in r["error"]
    first_pid = worker.info["pid"]
    r = worker.run({"kind": "ok"}, time_limit=60)  # a fresh process takes the next job
    assert r["status"] == "ok" and worker.restarts == 1 and worker.info["pid"] != first_pid


def test_phase_limit(worker):
    r = worker.run({"kind": "sleep", "s": 30}, time_limit=60, phase_limits={"compile": 0.5})
    assert r["status"] == "timeout" and r["timeout_phase"] == "compile"
    assert "compile over its 0.5 s limit" in r["error"] and r["wall_s"] < 30


def test_crash_and_exception(worker):
    r = worker.run({"kind": "die"}, time_limit=60)
    assert r["status"] == "crash" and "exit code 3" in r["error"]
    r = worker.run({"kind": "raise"}, time_limit=60)
    assert r["status"] == "error" and "ValueError: bad job" in r["error"]
    assert worker.run({"kind": "ok"}, time_limit=60)["status"] == "ok"


def test_setup_failure_is_a_crash_result():
    w = workers.Worker("toy", setup, handle, {"no_such_argument": 1}, mem_limit_gb=0,
                       quiet=False, start_timeout=120)
    try:
        r = w.run({"kind": "ok"}, time_limit=60)
    finally:
        w.stop()
    assert r["status"] == "crash" and "failed to start" in r["error"]
    assert "unexpected keyword argument" in r["error"]
