"""The board's tests: a real ``skift serve --http`` process and a real Chromium.

One server (on a database of its own, with ``--test-hooks`` so an agent of the
test can act over the socket) serves the whole module; each test signs a
person of its own in, in an organization of its own, so tests never see each
other's gates. The browser is the distribution's Chromium (``/usr/bin/chromium``,
``apt-get install chromium``) driven by Playwright; Playwright's own browser
downloads are never used.

Screenshots go to ``$SKIFT_BOARD_SHOTS`` (default ``build/board-screenshots``
under the repository); docs/board.md shows the key ones.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from board_harness import CHROMIUM, CHROMIUM_ARGS, SHOTS, BoardServer, Person, in_thread
from serverproc import ServerProcess, free_port

import skift


@pytest.fixture(scope="module")
def board_server(pg_session_databases: Any) -> Iterator[BoardServer]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install the distribution's browser "
            "('apt-get install chromium'; .ci/run does it)",
            pytrace=False,
        )
    dsn = pg_session_databases.create()
    port = free_port()
    process = ServerProcess(
        "--dsn", dsn, "--test-hooks", "--sweep-every", "0", "--http", f"127.0.0.1:{port}",
        fork=True,
    )  # fmt: skip
    try:
        in_thread(process.start())
        yield BoardServer(process=process, dsn=dsn, url=f"http://127.0.0.1:{port}")
        code = in_thread(process.stop())
        assert code == 0, f"skift serve exited with {code} on SIGTERM:\n{process.log()}"
    finally:
        process.cleanup()


@pytest.fixture
async def person(board_server: BoardServer) -> AsyncIterator[Person]:
    org = f"board-{secrets.token_hex(4)}"
    async with skift.open(board_server.dsn, principal=skift.User("ada"), org=org) as sk:
        yield Person(server=board_server, name="ada", org=org, sk=sk)


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest.fixture(scope="session")
def shots() -> Path:
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS
