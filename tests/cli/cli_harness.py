"""Helpers for tests/cli: the installed ``skift`` against a real server.

One ``skift serve --memory`` process (started through ``skift serve`` itself,
so the pass-through is exercised) serves the whole directory over a unix
socket and TCP; each test works in projects of its own. ``Cli.run`` runs the
installed ``skift`` as a subprocess with a clean environment: no config file,
no default project, ``NO_COLOR``. The unix-socket caller is the server's
owner (its uid), a user principal.

The machine's environment may set PYTHONDONTWRITEBYTECODE; the children get
a bytecode cache under /tmp instead, so each ``skift`` run does not recompile
its imports (that is what an installed ``skift`` does too).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from serverproc import ServerProcess

import skift_server

T = TypeVar("T")

SKIFT = Path(sys.executable).parent / "skift"
PYCACHE = Path(tempfile.gettempdir()) / f"skift-cli-tests-pycache-{os.getuid()}"

NODE_KEYS = {
    "ref", "id", "number", "project", "title", "body", "kind", "status", "priority",
    "parent", "labels", "assignee_kind", "assignee", "context_id", "created_at",
    "blocked", "held", "claimed", "ready",
}  # fmt: skip
PAGE_KEYS = {"nodes", "held_count", "held_count_exact", "next_page"}
CLAIM_KEYS = {"node", "lease", "inputs", "comments"}
LEASE_KEYS = {"id", "expires_at", "holder"}
INPUT_KEYS = {"ref", "title", "result", "artifacts"}
COMMENTS_KEYS = {"unresolved", "newest_at"}
EXPLAIN_KEYS = {"ref", "title", "ready", "reasons"}
PATCH_KEYS = {"request_id", "created", "dropped", "nodes"}
ERROR_KEYS = {"code", "message", "next"}
ERROR_CODES = {
    "not_found", "invalid", "refused", "conflict", "limit", "unavailable",
    "unauthenticated", "nothing_ready",
}  # fmt: skip


def assert_node(doc: Mapping[str, Any]) -> None:
    assert set(doc) >= NODE_KEYS, NODE_KEYS - set(doc)
    assert doc["status"] in ("open", "done", "dropped")
    assert doc["priority"] in ("p0", "p1", "p2", "p3", "p4")
    assert doc["ref"] == f"{doc['project']}#{doc['number']}"


def assert_page(doc: Mapping[str, Any]) -> None:
    assert set(doc) == PAGE_KEYS
    for n in doc["nodes"]:
        assert_node(n)


def assert_patch(doc: Mapping[str, Any]) -> None:
    assert set(doc) >= PATCH_KEYS, PATCH_KEYS - set(doc)
    assert all(isinstance(v, str) and "#" in v for v in doc["created"].values())
    for n in doc["nodes"]:
        assert_node(n)


def assert_claim(doc: Mapping[str, Any]) -> None:
    assert set(doc) >= CLAIM_KEYS
    assert_node(doc["node"])
    assert set(doc["lease"]) >= LEASE_KEYS
    assert set(doc["comments"]) >= COMMENTS_KEYS
    for i in doc["inputs"]:
        assert set(i) >= INPUT_KEYS


def assert_error(stderr: str, code: str) -> dict[str, Any]:
    doc = json.loads(stderr.strip().splitlines()[-1])
    assert set(doc) == {"error"}
    assert set(doc["error"]) >= ERROR_KEYS
    assert doc["error"]["code"] == code
    assert code in ERROR_CODES
    return doc["error"]


class Result:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.args = proc.args

    def json(self) -> Any:
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"<skift {self.args!r} exit {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}>"


class Cli:
    """Runs the installed ``skift`` against the shared server."""

    def __init__(self, server: ServerProcess, tcp: str, home: Path) -> None:
        self.server = server
        self.tcp = tcp
        self.home = home

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("SKIFT_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(
            SKIFT_SERVER=self.server.url,
            XDG_CONFIG_HOME=str(self.home / "config"),
            HOME=str(self.home),
            NO_COLOR="1",
            COLUMNS="200",
            PYTHONPYCACHEPREFIX=str(PYCACHE),
        )
        env.update(extra)
        return env

    def run(
        self, *args: str, stdin: str | None = None, expect: int | None = 0, **env: str
    ) -> Result:
        proc = subprocess.run(
            [str(SKIFT), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env(**env),
            timeout=60,
        )
        res = Result(proc)
        if expect is not None:
            assert res.code == expect, res
        return res

    def json(self, *args: str, stdin: str | None = None, **env: str) -> Any:
        return self.run(*args, "--json", stdin=stdin, **env).json()

    def api(self, fn: Callable[[skift_server.RemoteSkift], Awaitable[T]]) -> T:
        """Set-up and checks that are not under test go through the API, in this process."""

        async def go() -> T:
            async with skift_server.connect(self.server.url) as sk:
                return await fn(sk)

        return asyncio.run(go())

    def project(self, stem: str, *titles: str) -> tuple[str, list[str]]:
        """A fresh project with a node per title (through the API); its slug and the refs."""

        async def go(sk: skift_server.RemoteSkift) -> tuple[str, list[str]]:
            proj = await sk.create_project(f"{stem} {uuid.uuid4().hex[:6]}")
            refs = [(await sk.create(proj.slug, t)).ref for t in titles]
            return proj.slug, refs

        return self.api(go)


class SkiftServe(ServerProcess):
    """``skift serve`` (the CLI's pass-through), not ``python -m skift_server``."""

    async def start(self, timeout: float = 60.0) -> SkiftServe:
        env = {**os.environ, "PYTHONPYCACHEPREFIX": str(PYCACHE)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(  # noqa: ASYNC220 (returns at once; polled below)
                [str(SKIFT), "serve", "--socket", str(self.socket), *self.flags],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.returncode() is not None:
                raise RuntimeError(f"skift serve exited while starting:\n{self.log()}")
            if self.socket.exists() and await self._serving():
                return self
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"skift serve did not serve within {timeout}s:\n{self.log()}")
            await asyncio.sleep(0.05)
