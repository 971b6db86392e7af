"""Fixtures for the server's own tests: real ``skift serve`` processes.

``serve(*flags)`` starts one and stops it with SIGTERM at the end of the
test, failing the test if it does not exit 0. The process is forked from the
fork server that has imported skift_server once (``serverproc``: the same
``skift serve`` main, socket and signal handling, started in well under a
second instead of the seconds a fresh interpreter's imports take);
``fork=False`` starts ``python -m skift_server serve`` in a fresh interpreter,
as an operator would, for the tests of the process itself.
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
        self, *flags: str, fork: bool = True, socket: Path | None = None
    ) -> ServerProcess: ...


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[ServerProcess] = []

    async def start(*flags: str, fork: bool = True, socket: Path | None = None) -> ServerProcess:
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
