"""A real HTTP receiver on loopback for the webhook tests: it records every request
(headers, body, when it arrived, which were in flight at once) and answers as a
test tells it (a status, a redirect, holding the request until released, or a
hook that runs before it answers)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import attrs


@attrs.define
class Received:
    headers: dict[str, str]
    body: bytes
    path: str

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def doc(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


class Receiver:
    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.status = 200
        self.location: str | None = None
        self.hold: asyncio.Event | None = None  # when set: answer only once it is set
        self.before_answer: Callable[[Received], Awaitable[None]] | None = None
        self.in_flight: list[str] = []  # webhook-ids being handled now
        self.overlaps: list[tuple[str, list[str]]] = []  # (id, others in flight) on arrival
        self.arrived = asyncio.Condition()
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def __aenter__(self) -> Receiver:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.hold is not None:
            self.hold.set()
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def wait_for(self, pred: Callable[[list[Received]], bool], timeout: float = 30) -> None:
        """Until ``pred(requests)`` holds (a failure names what did arrive)."""
        async with self.arrived:
            try:
                await asyncio.wait_for(self.arrived.wait_for(lambda: pred(self.requests)), timeout)
            except TimeoutError:
                raise AssertionError(
                    f"the receiver did not see what was expected; it got {len(self.requests)}: "
                    + "; ".join(f"{r.id} {r.body[:200]!r}" for r in self.requests)
                ) from None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            if not line:
                return
            path = line.decode().split(" ")[1]
            headers: dict[str, str] = {}
            while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
                k, _, v = h.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            got = Received(headers=headers, body=body, path=path)
            ident = headers.get("webhook-id", "")
            self.overlaps.append((ident, list(self.in_flight)))
            self.in_flight.append(ident)
            try:
                async with self.arrived:
                    self.requests.append(got)
                    self.arrived.notify_all()
                if self.before_answer is not None:
                    await self.before_answer(got)
                if self.hold is not None:
                    await self.hold.wait()
            finally:
                self.in_flight.remove(ident)
            extra = f"Location: {self.location}\r\n" if self.location else ""
            writer.write(
                f"HTTP/1.1 {self.status} X\r\nContent-Length: 0\r\nConnection: close\r\n{extra}\r\n".encode()
            )
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
