"""Run ``skift serve`` as a real process for a test, over a real unix socket.

``ServerProcess`` starts ``python -m skift_server serve`` with the given
flags, waits until its health service says SERVING, and stops it with
SIGTERM (checking that it exits cleanly). Its output goes to a log file that
is printed when the server fails to start or exit, so a broken server
explains itself in the test report.

``fork=True`` (what the contract suite uses, one server per test) starts the
same ``skift serve`` main in a process forked from a multiprocessing fork
server that has imported skift_server once, instead of a fresh interpreter:
the process, its socket and its signal handling are as real, and starting it
costs milliseconds instead of the seconds the imports take.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.context
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import attrs
from grpclib.client import Channel

import skift
from skift_server._proto.grpc.health.v1 import (
    HealthCheckRequest,
    HealthCheckResponseServingStatus,
    HealthStub,
)

START_TIMEOUT = 60.0

_PRELOAD = ["serverproc", "skift_server._cli", "skift_pg", "skift_pg.embedded"]
_forkserver: multiprocessing.context.ForkServerContext | None = None


def _context() -> multiprocessing.context.ForkServerContext:
    global _forkserver
    if _forkserver is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        _forkserver = ctx
    return _forkserver


def _serve_main(argv: list[str], log_path: str) -> None:
    """The child's entry point: stdout and stderr to the log, then ``skift serve``."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    from skift_server._cli import main

    sys.exit(main(argv))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def limit_flags(limits: skift.Limits | None) -> list[str]:
    """``--limit NAME=VALUE`` for every limit that differs from the defaults."""
    if limits is None:
        return []
    out: list[str] = []
    for f in attrs.fields(skift.Limits):
        value = getattr(limits, f.name)
        if value == getattr(skift.DEFAULT_LIMITS, f.name):
            continue
        if isinstance(value, timedelta):
            value = value.total_seconds()
        out += ["--limit", f"{f.name}={value}"]
    return out


class ServerProcess:
    """One ``skift serve`` child process listening on a socket in a fresh directory."""

    def __init__(
        self,
        *flags: str,
        env: dict[str, str] | None = None,
        fork: bool = False,
        socket: Path | None = None,
    ) -> None:
        # Directly under /tmp: a socket path must fit in 107 bytes, and the
        # directory must be searchable by other uids (tests connect as 65534).
        self.dir = Path(tempfile.mkdtemp(prefix="skift-srv-", dir="/tmp"))
        self.dir.chmod(0o755)
        self.socket = socket or self.dir / "skift.sock"
        self.log_path = self.dir / "server.log"
        self.flags = list(flags)
        self.env = env
        self.fork = fork
        self.proc: subprocess.Popen[bytes] | None = None
        self.child: multiprocessing.process.BaseProcess | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    @property
    def pid(self) -> int:
        if self.child is not None:
            assert self.child.pid is not None
            return self.child.pid
        assert self.proc is not None
        return self.proc.pid

    def returncode(self) -> int | None:
        """The exit code once exited (minus the signal number when killed by one)."""
        if self.child is not None:
            return self.child.exitcode
        assert self.proc is not None
        return self.proc.poll()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    async def start(self, timeout: float = START_TIMEOUT) -> ServerProcess:
        args = ["serve", "--socket", str(self.socket), *self.flags]
        if self.fork:
            assert not self.env, "a forked server shares the fork server's environment"
            self.child = _context().Process(
                target=_serve_main, args=(args, str(self.log_path)), daemon=True
            )
            self.child.start()
        else:
            env = {**os.environ, **(self.env or {})}
            with self.log_path.open("wb") as log:
                self.proc = subprocess.Popen(  # noqa: ASYNC220 (returns at once; polled below)
                    [sys.executable, "-m", "skift_server", *args],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
        deadline = time.monotonic() + timeout
        while True:
            code = self.returncode()
            if code is not None:
                if self.fork and not self.log().strip():
                    # The fork server failed to hand over a child (it exits 255
                    # before our code runs, seen once in ~400 starts under load).
                    # Start this one as a plain subprocess instead.
                    self.fork = False
                    self.child = None
                    return await self.start(timeout)
                raise RuntimeError(f"skift serve exited with {code} while starting:\n{self.log()}")
            if self.socket.exists() and await self._serving():
                return self
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"skift serve did not serve within {timeout}s:\n{self.log()}")
            await asyncio.sleep(0.02)

    async def _serving(self) -> bool:
        channel = Channel(path=str(self.socket))
        try:
            got = await HealthStub(channel).check(HealthCheckRequest(service=""), timeout=2)
        except Exception:  # not listening yet, or not serving yet
            return False
        finally:
            channel.close()
        return got.status == HealthCheckResponseServingStatus.SERVING

    async def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Signal the server and wait for it to exit; returns its exit code."""
        if self.proc is None and self.child is None:
            return 0
        if self.returncode() is None:
            os.kill(self.pid, sig)
        deadline = time.monotonic() + timeout
        while (code := self.returncode()) is None:
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"skift serve did not stop within {timeout}s:\n{self.log()}")
            await asyncio.sleep(0.02)
        return code

    def kill(self) -> None:
        if self.child is not None and self.child.exitcode is None:
            self.child.kill()
            self.child.join()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def cleanup(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
