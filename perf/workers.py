"""Engine worker processes with a time and a memory limit per job.

A :class:`Worker` is a child process (``spawn``) that prepares one engine once, then runs jobs one
at a time. Each job gets a wall-clock limit: past it the child is killed (by its own handle) and
restarted for the next job, so a peer's blow-up (an eager index over the vocabulary, a parser
running out of memory, a segfault) costs that one job, never the run. The child's address space
is capped with ``RLIMIT_AS``.

The child calls ``setup(engine_name, **setup_kw)`` once and then ``handle(state, job, report)``
per job; ``report(**fields)`` sends partial results as they are known, so what a job finished
before its limit (compiled, generated...) survives a timeout. Both functions must be module-level
(they travel by name to the ``spawn`` child).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback


def _child(conn, setup, handle, engine, setup_kw, mem_limit_gb, quiet):
    if quiet:  # the engines' own C++/Rust logs would drown the progress lines
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 2)
    if mem_limit_gb and mem_limit_gb > 0:
        import resource

        lim = int(mem_limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    try:
        state = setup(engine, **setup_kw)
        conn.send(("ready", state.get("info", {}) if isinstance(state, dict) else {}))
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which gives up on it
        conn.send(("dead", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-2000:]}"))
        return

    def report(**fields):
        conn.send(("part", fields))

    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            out = handle(state, job, report)
            conn.send(("done", out or {}))
        except MemoryError:
            conn.send(("done", {"status": "crash", "error": "MemoryError (the memory limit)"}))
        except Exception as e:  # noqa: BLE001 - a bug in an engine or adapter: recorded, not fatal
            conn.send(("done", {"status": "error",
                                "error": f"{type(e).__name__}: {e} {traceback.format_exc()[-1500:]}"}))


class Worker:
    """One engine in a child process; restarted after a timeout or a crash.

    Parameters
    ----------
    engine : str
        The engine's name, passed to ``setup``.
    setup, handle : callables
        Module-level functions run in the child (see the module docstring).
    setup_kw : dict
        Keyword arguments of ``setup``.
    mem_limit_gb : float
        Address-space limit of the child (0: none).
    quiet : bool
        Send the child's stderr to ``/dev/null``.
    start_timeout : float
        Seconds the child may take to become ready.
    """

    def __init__(self, engine, setup, handle, setup_kw=None, mem_limit_gb=8.0, quiet=True,
                 start_timeout=600.0):
        self.engine = engine
        self.setup, self.handle = setup, handle
        self.setup_kw = dict(setup_kw or {})
        self.mem, self.quiet, self.start_timeout = mem_limit_gb, quiet, start_timeout
        self.proc = None
        self.conn = None
        self.info = None
        self.restarts = -1
        self._starting = False

    def start(self):
        """Start the child without waiting for it (see :meth:`ensure`)."""
        if self.proc is not None and self.proc.is_alive():
            return
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_child, daemon=True,
                                args=(child, self.setup, self.handle, self.engine, self.setup_kw,
                                      self.mem, self.quiet))
        self.proc.start()
        child.close()
        self.restarts += 1
        self._starting = True

    def ensure(self):
        """Start the child if needed and wait until it is ready; ``RuntimeError`` if it cannot."""
        if not self._starting:
            if self.proc is not None and self.proc.is_alive():
                return
            self.start()
        self._starting = False
        try:
            ok = self.conn.poll(self.start_timeout)
            msg = self.conn.recv() if ok else ("dead", f"not ready in {self.start_timeout:g} s")
        except (EOFError, OSError):
            msg = ("dead", f"exited while starting (exit code {self.proc.exitcode})")
        if msg[0] != "ready":
            self.kill()
            raise RuntimeError(f"{self.engine}: worker failed to start: {msg[1]}")
        self.info = msg[1]

    def kill(self):
        """Kill the child (our own process, by its handle)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(10)
            self.proc = None
        self._starting = False

    def stop(self):
        """Ask the child to exit, then make sure it has."""
        if self.proc is not None and self.proc.is_alive() and not self._starting:
            try:
                self.conn.send(None)
                self.proc.join(10)
            except (BrokenPipeError, OSError):
                pass
        self.kill()

    def run(self, job, time_limit, phase_limits=None):
        """Run one job; returns its result dict (never raises for an engine's misbehaviour).

        The dict holds what ``handle`` reported and returned, plus ``status`` (the handler's,
        or ``"timeout"`` / ``"crash"``), ``wall_s``, and for a timeout ``timeout_phase``, the
        ``phase`` last reported.

        Parameters
        ----------
        job : picklable
            Passed to ``handle``.
        time_limit : float
            Seconds for the whole job.
        phase_limits : dict, optional
            Seconds for a phase the handler reports (``report(phase=...)``), counted from the
            report: e.g. ``{"compile": 30}``.
        """
        err = self.submit(job)
        if err is not None:
            return err
        return self.collect(time_limit, phase_limits)

    def submit(self, job):
        """Send ``job`` without waiting (:meth:`collect` waits): jobs of several workers then run
        at the same time. Returns None, or the result dict of a worker that could not start."""
        try:
            self.ensure()
        except RuntimeError as e:
            return {"status": "crash", "error": str(e), "wall_s": 0.0}
        self._t0 = time.monotonic()
        self.conn.send(job)
        return None

    def collect(self, time_limit, phase_limits=None):
        """Wait for the job :meth:`submit` sent (the limits count from the submission); see
        :meth:`run`."""
        phase_limits = phase_limits or {}
        res = {}
        t0 = self._t0
        deadline = t0 + time_limit
        phase_deadline = deadline
        while True:
            left = min(deadline, phase_deadline) - time.monotonic()
            try:
                msg = self.conn.recv() if left > 0 and self.conn.poll(left) else None
            except (EOFError, OSError):
                if self.proc is not None:
                    self.proc.join(5)  # reap it, so that its exit code is known
                code = self.proc.exitcode if self.proc is not None else None
                self.kill()
                res.update(status="crash", error=f"worker died (exit code {code})")
                break
            if msg is None:
                self.kill()
                lim = phase_limits.get(res.get("phase"), time_limit)
                res.update(status="timeout", timeout_phase=res.get("phase"),
                           error=f"{res.get('phase', 'job')} over its {lim:g} s limit")
                break
            if msg[0] == "part":
                if "phase" in msg[1]:
                    lim = phase_limits.get(msg[1]["phase"])
                    phase_deadline = deadline if lim is None else time.monotonic() + lim
                res.update(msg[1])
            else:
                res.update(msg[1])
                break
        res["wall_s"] = time.monotonic() - t0
        return res


def start_pool(pool: dict) -> dict:
    """Start every worker of ``pool`` (engine -> :class:`Worker`) at once, so that their setups
    (a model's loading) overlap, then wait for each; returns engine -> its ``info``."""
    for w in pool.values():
        w.start()
    infos = {}
    for e, w in pool.items():
        w.ensure()
        infos[e] = w.info
    return infos
