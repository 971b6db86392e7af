"""The HTTP listener's HTTP/1.1 connections, with a header-read timeout.

uvicorn bounds an idle keep-alive connection (``timeout_keep_alive``), the size
of an incomplete request head (``h11_max_incomplete_event_size``: past it
``400``, not a dropped connection) and how many connections it serves
(``limit_concurrency``), but not how long a client may take to send its
request head: a connection that sends nothing, or a header a byte at a time,
stays open. Here such a connection is answered ``408 Request Timeout`` and
closed after ``ConnectionLimits.header_timeout`` (nginx's
``client_header_timeout``), and a complete request head larger than
``max_header_list_bytes`` is answered 431 (:class:`HeaderLimit`). Imported only
when the server serves HTTP.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._h2 import ConnectionLimits

_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 30\r\nconnection: close\r\n\r\nthe request head came too slow"
)


def guarded_h11(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with ``limits.header_timeout`` on every request head."""

    class GuardedH11(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(limits.header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _too_slow(self) -> None:
            self._head_timer = None
            if self.transport.is_closing():
                return
            cycle: Any = self.cycle  # None until the first request
            if self.conn.their_state is h11.IDLE and (cycle is None or cycle.response_complete):
                self.transport.write(_TIMEOUT_RESPONSE)
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE:
                self._arm()
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return GuardedH11


class HeaderLimit:
    """ASGI middleware: a request whose headers add up to more than ``limit`` bytes (names,
    values and 32 each, as HTTP/2 counts them) gets 431 and reaches no route (h11's own
    bound applies only to a request head still incomplete when a read ends)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            size = sum(len(k) + len(v) + 32 for k, v in scope.get("headers", ()))
            if size > self.limit:
                body = (
                    f"the request headers are {size} bytes; this server takes at most "
                    f"{self.limit} (--max-header-bytes)\n"
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 431,
                        "headers": [
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def uvicorn_settings(limits: ConnectionLimits) -> dict[str, Any]:
    """The uvicorn.Config arguments that apply ``limits`` to the HTTP listener."""
    return {
        "http": guarded_h11(limits),
        "limit_concurrency": limits.http_max_connections,
        "timeout_keep_alive": limits.http_keep_alive,
        "h11_max_incomplete_event_size": limits.max_header_list_bytes,
    }
