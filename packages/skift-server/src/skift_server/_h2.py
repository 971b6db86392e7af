"""HTTP/2 connections that send what one turn of the event loop writes in one syscall.

grpclib hands the socket each frame as h2 makes it: a unary call is the
request's HEADERS then its DATA from the client, and the response's HEADERS,
DATA and trailing HEADERS from the server, each its own ``send()``. Every
send can wake the process at the other end, which reads a partial call and
sleeps again; on a busy machine each of those wake-ups costs more than the
frame. Here a connection's writes are gathered and sent together once the
current turn of the event loop is done (``loop.call_soon``), so a unary call
is one write each way. Nothing is reordered or held past that turn: a write
made while the call waits on something else (the database) goes out as soon
as the turn that made it ends, and closing sends what is gathered first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from grpclib.client import Channel
from grpclib.protocol import H2Protocol


class GatheringTransport:
    """A transport whose writes within one event-loop turn reach the socket as one."""

    __slots__ = ("_loop", "_parts", "_transport")

    def __init__(self, transport: Any) -> None:
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._parts:
            self._loop.call_soon(self.flush)
        self._parts.append(data)

    def flush(self) -> None:
        """Send what was gathered (called once the turn that wrote it ends)."""
        parts = self._parts
        if not parts:
            return
        self._parts = []
        self._transport.write(parts[0] if len(parts) == 1 else b"".join(parts))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._parts = []
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GatheringH2Protocol(H2Protocol):
    """grpclib's HTTP/2 protocol over a :class:`GatheringTransport`."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(GatheringTransport(transport))  # pyright: ignore[reportArgumentType]


class GatheringChannel(Channel):
    """grpclib's channel, its connection gathering writes (:class:`GatheringH2Protocol`)."""

    def _protocol_factory(self) -> H2Protocol:
        proto = super()._protocol_factory()
        proto.__class__ = GatheringH2Protocol
        return proto
