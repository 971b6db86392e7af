"""The gRPC listener of ``skift serve``: grpclib's server with the connection guards and
the fast unary routes (``_h2``, ``_fast``, ``_turns``), and its routes' table, which
answers a method it does not know UNIMPLEMENTED (``_server.SkiftServer`` builds both)."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from grpclib import const
from grpclib.config import Configuration
from grpclib.const import Status
from grpclib.exceptions import GRPCError
from grpclib.server import Server

from ._fast import FastRoutes
from ._h2 import ConnectionLimits, GuardedH2Protocol
from ._proto.skift import v1
from ._turns import TurnShare


class GuardedServer(Server):
    """grpclib's server, its connections gathering writes and held to
    :class:`ConnectionLimits` (``_h2.GuardedH2Protocol``). A stream's flow-control window
    starts at ``unauthenticated_body_bytes``: the service opens it once the call is
    authenticated (``_h2.open_window``)."""

    def __init__(
        self,
        handlers: Any,
        *,
        limits: ConnectionLimits,
        fast: FastRoutes | None = None,
        **kw: Any,
    ) -> None:
        """``fast``: the unary RPCs its connections answer without grpclib (``_fast``)."""
        window = max(65535, limits.unauthenticated_body_bytes)  # HTTP/2's least window
        super().__init__(handlers, config=Configuration(http2_stream_window_size=window), **kw)
        self.limits = limits
        self.share = TurnShare(limits.busy_frames_per_turn)
        self.fast = fast

    def _protocol_factory(self) -> Any:
        proto: Any = super()._protocol_factory()
        proto.__class__ = GuardedH2Protocol
        proto.limits = self.limits
        proto.share = self.share
        proto.fast = self.fast
        return proto

    async def start_tcp(self, host: str, port: int, tls: ssl.SSLContext | None) -> None:
        """``start`` on TCP, with the TLS handshake bounded by ``tls_handshake_timeout``
        (asyncio's default is a minute)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._protocol_factory,
            host,
            port,
            ssl=tls,
            reuse_address=True,
            backlog=1024,
            ssl_handshake_timeout=self.limits.tls_handshake_timeout if tls else None,
        )
        self._server_closed_fut = loop.create_future()


class AnswerUnknown(dict[str, Any]):
    """The server's routes; an unknown one is answered UNIMPLEMENTED as a normal gRPC
    response (grpclib's own answer leaves out ``content-type``, which Go clients and
    grpcurl read as a transport failure, UNKNOWN)."""

    def get(self, key: str, default: Any = None) -> Any:
        found = super().get(key)
        if found is not None:
            return found
        service, _, method = key.lstrip("/").rpartition("/")

        async def unimplemented(stream: Any) -> None:
            raise GRPCError(
                Status.UNIMPLEMENTED,
                f"{service or 'this server'} has no method {method!r}",
            )

        return const.Handler(
            unimplemented,
            const.Cardinality.UNARY_UNARY,
            v1.RevokeTokenResponse,  # any empty message: the request is never read
            v1.RevokeTokenResponse,
        )
