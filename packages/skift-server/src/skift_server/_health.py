"""The standard gRPC health service (grpc.health.v1), fed by the server's own state.

``""`` (the server as a whole) and ``skift.v1.SkiftService`` are SERVING while the
server accepts calls and its store answers, NOT_SERVING while it drains or
the store is unreachable.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from grpclib.const import Status
from grpclib.exceptions import GRPCError

from ._proto.grpc.health.v1 import (
    HealthBase,
    HealthCheckRequest,
    HealthCheckResponse,
    HealthCheckResponseServingStatus,
)

SERVICES = ("", "skift.v1.SkiftService")


class Health(HealthBase):
    def __init__(self) -> None:
        self._serving = False
        self._changed = asyncio.Condition()

    @property
    def serving(self) -> bool:
        return self._serving

    async def set(self, serving: bool) -> None:
        if serving != self._serving:
            self._serving = serving
            async with self._changed:
                self._changed.notify_all()

    def _status(self) -> HealthCheckResponse:
        return HealthCheckResponse(
            status=HealthCheckResponseServingStatus.SERVING
            if self._serving
            else HealthCheckResponseServingStatus.NOT_SERVING
        )

    async def check(self, message: HealthCheckRequest) -> HealthCheckResponse:
        if message.service not in SERVICES:
            raise GRPCError(Status.NOT_FOUND, f"unknown service {message.service!r}")
        return self._status()

    async def watch(self, message: HealthCheckRequest) -> AsyncIterator[HealthCheckResponse]:
        """The spec's Watch: the status now, then each change; for a service this server
        does not know, SERVICE_UNKNOWN once and the call stays open (it never becomes known:
        the services are fixed when the server starts)."""
        if message.service not in SERVICES:
            yield HealthCheckResponse(status=HealthCheckResponseServingStatus.SERVICE_UNKNOWN)
            while True:
                async with self._changed:
                    await self._changed.wait()
        sent = None
        while True:
            status = self._status()
            if status.status != sent:
                sent = status.status
                yield status
            async with self._changed:
                await self._changed.wait()
