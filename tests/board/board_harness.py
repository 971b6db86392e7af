"""What the board's tests share (imported by name; ``conftest`` is taken by other directories).

See tests/board/conftest.py for the fixtures that make these.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from pathlib import Path
from typing import Any

import attrs
from serverproc import ServerProcess

import skift

CHROMIUM = os.environ.get("SKIFT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("SKIFT_BOARD_SHOTS", ROOT / "build" / "board-screenshots"))
WAIT_MS = 15_000  # how long a page may take to show what the test waits for (not a timing claim)


def in_thread(coro: Any) -> Any:
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


@attrs.frozen
class BoardServer:
    process: ServerProcess
    dsn: str
    url: str  # http://127.0.0.1:PORT

    @property
    def socket_url(self) -> str:
        return self.process.url


@attrs.define
class Person:
    """A person of one test: their organization, an API handle acting as them, and how to
    get a sign-in link for them."""

    server: BoardServer
    name: str
    org: str
    sk: skift.LocalSkift

    async def link(self) -> str:
        code = await self.sk.mint_signin_code()
        return f"{self.server.url}/signin?code={code.code}"

    def agent(self, name: str = "researcher") -> Any:
        """An agent of the same organization, over the server's socket (gRPC)."""
        from skift_server import connect

        return connect(self.server.socket_url, principal=skift.Agent(name), org=self.org)
