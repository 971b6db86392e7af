"""The HTTP side of ``skift serve``: liveness, readiness and metrics.

- ``GET /healthz``: 200 while the process runs (liveness).
- ``GET /readyz``: 200 while it serves, 503 while it drains or its store does
  not answer (readiness: take it out of a load balancer).
- ``GET /metrics``: Prometheus text format (see ``_metrics``).
- everything else: the web board (``skift_server.board``, docs/board.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from ._metrics import CONTENT_TYPE

if TYPE_CHECKING:
    from ._server import SkiftServer


def http_app(server: SkiftServer) -> Starlette:
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def readyz(request: Request) -> Response:
        if server.ready:
            return PlainTextResponse("ready\n")
        draining = server.service is not None and server.service.draining
        why = "draining" if draining else "store unreachable"
        return PlainTextResponse(f"not ready: {why}\n", status_code=503)

    async def metrics(request: Request) -> Response:
        await server.refresh_webhook_metrics()
        return Response(server.metrics.render(), media_type=CONTENT_TYPE)

    return Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            *server.board.routes(),
        ]
    )
