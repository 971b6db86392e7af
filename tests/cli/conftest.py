"""Fixtures for tests/cli: one ``skift serve`` (started by ``skift serve``) for the directory."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from cli_harness import Cli, SkiftServe
from serverproc import free_port


@pytest.fixture(scope="session")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    port = free_port()
    server = SkiftServe("--memory", "--listen", f"127.0.0.1:{port}", "--sweep-every", "0")
    try:
        asyncio.run(server.start())
        yield Cli(server, f"http://127.0.0.1:{port}", tmp_path_factory.mktemp("cli-home"))
        code = asyncio.run(server.stop())
        assert code == 0, f"skift serve exited with {code} on SIGTERM:\n{server.log()}"
    finally:
        server.cleanup()
