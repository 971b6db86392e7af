"""Worker processes that evaluate organizations' stored policies, each evaluation bounded.

regorus' Python engine offers no time or instruction limit, holds the GIL
while it evaluates and cannot be interrupted, so a slow rule evaluated in the
server's process stalls every caller of every organization until it ends. An
organization's stored modules (layered on the base policy) are therefore
evaluated here, in one of at most ``policy_workers`` child processes
(``python -I -c``, started when first needed), each keeping a compiled engine
per policy digest. The asking coroutine waits on a thread of its own, never
on the event loop; the worker reports the CPU time the evaluation took. An
evaluation that has not answered within its wall-clock allowance
(:func:`wall_for`) and has used more CPU than its budget meanwhile (read from
``/proc``: on a loaded machine a worker may simply wait its turn), or has not
answered within :data:`HARD_WALL` seconds at all, has its worker killed (and
replaced on the next call).

The base policy (the server's own, trusted) is evaluated in process as
before: the hot path (no stored policy) never crosses a process.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, Final

import attrs

WALL_FACTOR: Final = 10
"""An evaluation's wall-clock allowance is this many times its CPU budget (a loaded
machine schedules the worker late), and at least :data:`WALL_FLOOR` seconds."""
WALL_FLOOR: Final = 1.0

HARD_WALL: Final = 30.0
"""Seconds after which an evaluation's worker is killed however little CPU it had."""

WAIT_FOR_WORKER: Final = 10.0
"""Seconds a call waits for a free worker before it is refused as busy."""

START_TIMEOUT: Final = 30.0
"""Seconds a new worker may take to start (import regorus) on a loaded machine."""

_MAX_ENGINES: Final = 64

# Runs in each worker: one JSON request per line on stdin, one JSON answer per line.
_CHILD: Final = """
import json, sys, time, regorus
engines = {}
out = sys.stdout
out.write('{"ready": true}\\n'); out.flush()
while True:
    line = sys.stdin.buffer.readline()
    if not line:
        break
    job = json.loads(line)
    digest = job["d"]
    engine = engines.get(digest)
    if engine is None:
        if job.get("m") is None:
            out.write('{"need": true}\\n'); out.flush()
            continue
        engine = regorus.Engine()
        for name, source in job["m"]:
            try:
                engine.add_policy(name, source)
            except Exception as exc:
                engine = "policy module %s does not compile: %s" % (
                    name.removeprefix("org/"), str(exc).split("Stack backtrace:", 1)[0].strip())
                break
        if len(engines) >= MAX_ENGINES:
            engines.pop(next(iter(engines)))
        engines[digest] = engine
    if isinstance(engine, str):
        answer = {"raw": None, "error": engine, "spent": 0.0}
    else:
        engine.set_input_json(job["i"])
        started = time.thread_time()
        try:
            raw, error = engine.eval_rule_as_json(job["q"]), None
        except Exception as exc:
            raw, error = None, str(exc)
        answer = {"raw": raw, "error": error, "spent": time.thread_time() - started}
    out.write(json.dumps(answer) + "\\n"); out.flush()
""".replace("MAX_ENGINES", str(_MAX_ENGINES))


CHILD_ENV: Final = {**os.environ, "RUST_LIB_BACKTRACE": "0"}
"""A worker's environment: regorus' errors without a Rust backtrace (with RUST_BACKTRACE=1
capturing one costs some 0.2 s of CPU per error, over the budget by itself)."""


def wall_for(budget: float) -> float:
    """The wall-clock seconds an evaluation with ``budget`` CPU seconds may take before its
    CPU is looked at."""
    return max(WALL_FLOOR, WALL_FACTOR * budget)


_TICK: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """The CPU seconds process ``pid`` has used (user and system), or None where ``/proc``
    does not say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def overran(pid: int, since: float | None, budget: float) -> bool:
    """Whether process ``pid`` used more than ``budget`` CPU seconds since it had used
    ``since`` (unknown: it is taken to have)."""
    now = cpu_seconds(pid)
    return since is None or now is None or now - since > budget


@attrs.frozen
class Outcome:
    """What a worker answered: the decision's JSON, or the error regorus raised, and the
    CPU seconds it took; ``late``: it did not answer within its wall-clock allowance."""

    raw: str | None = None
    error: str | None = None
    spent: float = 0.0
    late: bool = False


class Busy(Exception):
    """Every worker stayed busy for :data:`WAIT_FOR_WORKER` seconds."""


class _Worker:
    """One child process and what it has said but not yet been read."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            env=CHILD_ENV,
        )
        self._buf = b""
        if self._line(time.monotonic() + START_TIMEOUT) is None:
            self.kill()
            raise RuntimeError("a policy worker did not start")

    def _line(self, deadline: float) -> dict[str, Any] | None:
        """The next line the worker writes, or None past ``deadline`` (or if it died)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        got: dict[str, Any] = json.loads(line)
        return got

    def _send(self, job: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        data = json.dumps(job).encode() + b"\n"
        fd = self.proc.stdin.fileno()
        while data:
            data = data[os.write(fd, data) :]

    def ask(
        self,
        digest: str,
        modules: Sequence[tuple[str, str]],
        query: str,
        request: str,
        budget: float,
    ) -> Outcome:
        since = cpu_seconds(self.proc.pid)
        self._send({"d": digest, "q": query, "i": request})
        got = self._answer(since, budget)
        if got is not None and got.get("need"):  # a policy new to this worker: compile it
            self._send({"d": digest, "m": list(modules), "q": query, "i": request})
            got = self._answer(since, budget)
        if got is None:
            return Outcome(late=True)
        return Outcome(raw=got["raw"], error=got["error"], spent=float(got["spent"]))

    def _answer(self, since: float | None, budget: float) -> dict[str, Any] | None:
        """The worker's answer; None once it has taken :func:`wall_for` and more than
        ``budget`` CPU seconds, or :data:`HARD_WALL` seconds whatever its CPU."""
        hard = time.monotonic() + HARD_WALL
        while True:
            got = self._line(min(hard, time.monotonic() + wall_for(budget)))
            if got is not None:
                return got
            if time.monotonic() >= hard or not self.alive():
                return None
            if overran(self.proc.pid, since, budget):
                return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(Exception):
                    pipe.close()


class Pool:
    """At most ``size`` workers, started when first needed; one evaluation each at a time."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._started = 0
        self._lock = threading.Lock()
        self._all: set[_Worker] = set()
        self._threads = concurrent.futures.ThreadPoolExecutor(
            max_workers=4 * self.size + 4, thread_name_prefix="skift-policy"
        )

    def resize(self, size: int) -> None:
        with self._lock:
            self.size = max(self.size, size)

    def _take(self) -> _Worker:
        with self._lock:
            try:
                return self._idle.get_nowait()
            except queue.Empty:
                pass
            start = self._started < self.size
            if start:
                self._started += 1
        if start:
            try:
                worker = _Worker()
            except BaseException:
                with self._lock:
                    self._started -= 1
                raise
            with self._lock:
                self._all.add(worker)
            return worker
        deadline = time.monotonic() + WAIT_FOR_WORKER
        while time.monotonic() < deadline:
            try:  # a worker killed meanwhile frees a place: look again now and then
                return self._idle.get(timeout=0.1)
            except queue.Empty:
                with self._lock:
                    if self._started < self.size:
                        break
        else:
            raise Busy
        return self._take()

    def _drop(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            self._all.discard(worker)
            self._started -= 1

    def evaluate_blocking(
        self,
        digest: str,
        modules: Sequence[tuple[str, str]],
        query: str,
        request: str,
        budget: float,
    ) -> Outcome:
        worker = self._take()
        try:
            got = worker.ask(digest, modules, query, request, budget)
        except BaseException:
            self._drop(worker)
            raise
        if got.late or not worker.alive():
            self._drop(worker)  # killed mid-evaluation: the next call starts another
        else:
            self._idle.put(worker)
        return got

    async def evaluate(
        self,
        digest: str,
        modules: Sequence[tuple[str, str]],
        query: str,
        request: str,
        budget: float,
    ) -> Outcome:
        """Evaluate ``query`` of the policy ``digest`` (``modules``) on ``request`` (JSON)
        in a worker within ``budget`` CPU seconds, waiting on a thread (never on the event
        loop)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._threads, self.evaluate_blocking, digest, modules, query, request, budget
        )

    def close(self) -> None:
        with self._lock:
            workers = list(self._all)
            self._all.clear()
        for w in workers:
            w.kill()
        self._threads.shutdown(wait=False, cancel_futures=True)


_pool: Pool | None = None
_pool_lock = threading.Lock()


def pool(size: int) -> Pool:
    """This process's pool (made with ``size`` workers at most, grown to a larger ``size``)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Pool(size)
        elif size > _pool.size:
            _pool.resize(size)
        return _pool


def _close() -> None:
    if _pool is not None:
        _pool.close()


def _forget_in_child() -> None:
    """A forked child starts without its parent's workers (their pipes are the parent's)."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


atexit.register(_close)
os.register_at_fork(after_in_child=_forget_in_child)
