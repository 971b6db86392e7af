"""The HTTP side of ``skift serve``: liveness, readiness and metrics.

- ``GET /healthz``: 200 while the process runs (liveness).
- ``GET /readyz``: 200 while it serves, 503 while it drains or its store does
  not answer (readiness: take it out of a load balancer).
- ``GET /metrics``: Prometheus text format (see ``_metrics``), server-wide (every
  organization's counts), so on the board's listener only to a server administrator's
  bearer token (``authorization: Bearer skt_…``); ``--metrics HOST:PORT`` serves it
  without sign-in on a listener of its own (:func:`metrics_app`).
- everything else: the web board (``skift_server.board``, docs/board.md).
"""

from __future__ import annotations

from typing import Protocol

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

import skift

from ._metrics import CONTENT_TYPE, Metrics


class Routed(Protocol):
    """What serves the board's pages (``skift_server.board.Board``)."""

    def routes(self) -> list[BaseRoute]: ...


class Served(Protocol):
    """What the HTTP side needs of the server (``_server.Served`` offers it)."""

    @property
    def base(self) -> skift.LocalSkift: ...
    @property
    def ready(self) -> bool: ...
    @property
    def draining(self) -> bool: ...
    @property
    def metrics(self) -> Metrics: ...
    @property
    def board(self) -> Routed: ...
    async def refresh_webhook_metrics(self) -> None: ...


_ADMIN_ONLY = (
    "/metrics is server-wide: send a server administrator's token "
    "(authorization: Bearer skt_...), or serve it on its own listener (skift serve --metrics)\n"
)


async def _server_admin(server: Served, request: Request) -> Response | None:
    """None when the request carries a server administrator's bearer token; else the refusal
    (401 without a token or with one that does not authenticate, 403 for anyone else's)."""
    scheme, _, secret = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        return PlainTextResponse(
            _ADMIN_ONLY, status_code=401, headers={"www-authenticate": "Bearer"}
        )
    try:
        handle = await server.base.authenticate("token", secret.strip())
        await handle.check_action("server_admin")
    except skift.Unauthenticated:
        return PlainTextResponse(
            _ADMIN_ONLY, status_code=401, headers={"www-authenticate": "Bearer"}
        )
    except skift.SkiftError:
        return PlainTextResponse(_ADMIN_ONLY, status_code=403)
    return None


def metrics_app(server: Served) -> Starlette:
    """``--metrics``: /metrics, /healthz and /readyz without sign-in, and nothing else."""
    return Starlette(routes=_plain_routes(server, open_metrics=True))


def http_app(server: Served) -> Starlette:
    """The board's listener: /healthz, /readyz, /metrics (a server admin's) and the board."""
    return Starlette(routes=[*_plain_routes(server, open_metrics=False), *server.board.routes()])


def _plain_routes(server: Served, *, open_metrics: bool) -> list[BaseRoute]:
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def readyz(request: Request) -> Response:
        if server.ready:
            return PlainTextResponse("ready\n")
        why = "draining" if server.draining else "store unreachable"
        return PlainTextResponse(f"not ready: {why}\n", status_code=503)

    async def metrics(request: Request) -> Response:
        if not open_metrics:
            refused = await _server_admin(server, request)
            if refused is not None:
                return refused
        await server.refresh_webhook_metrics()
        return Response(server.metrics.render(), media_type=CONTENT_TYPE)

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
