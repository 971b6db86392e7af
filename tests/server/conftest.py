"""Fixtures for the server's own tests: real ``skift serve`` processes.

``serve(*flags)`` starts one (``python -m skift_server serve`` in a fresh
interpreter, as an operator would) and stops it with SIGTERM at the end of
the test, failing the test if it does not exit 0.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Protocol

import pytest
from serverproc import ServerProcess

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path


class Serve(Protocol):
    async def __call__(
        self, *flags: str, fork: bool = False, socket: Path | None = None
    ) -> ServerProcess: ...


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[ServerProcess] = []

    async def start(*flags: str, fork: bool = False, socket: Path | None = None) -> ServerProcess:
        server = ServerProcess(*flags, fork=fork, socket=socket)
        servers.append(server)
        return await server.start()

    try:
        yield start
        for server in servers:
            if server.returncode() is None:
                code = await server.stop()
                assert code == 0, f"skift serve exited with {code} on SIGTERM:\n{server.log()}"
    finally:
        for server in servers:
            with contextlib.suppress(Exception):
                server.cleanup()
