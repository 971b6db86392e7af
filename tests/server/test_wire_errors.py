"""The status code and standard details of every skift error class, pinned.

``skift_server._errors.MAPPING`` is the one table of status codes; this pins
what it says (a change to it changes what clients in every language see),
and checks one error of each kind end to end through a real server: status,
``grpc-message`` with its separator, ``google.rpc.ErrorInfo`` and the
standard detail each kind carries.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from grpclib.client import Channel
from grpclib.const import Status
from grpclib.exceptions import GRPCError

import skift
from skift_server._errors import DOMAIN, SEPARATOR, ErrorDetailsCodec, rule_of
from skift_server._proto.google.rpc import BadRequest, ErrorInfo, RetryInfo
from skift_server._proto.skift import v1

if TYPE_CHECKING:
    from conftest import Serve

PINNED: list[tuple[skift.SkiftError, Status, str]] = [
    (skift.NotFound("x"), Status.NOT_FOUND, "NOT_FOUND"),
    (skift.NothingReady("x"), Status.NOT_FOUND, "NOTHING_READY"),
    (skift.Invalid("x", field="title"), Status.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    (skift.Refused("x", denials=[{}]), Status.PERMISSION_DENIED, "POLICY_DENIED"),
    (skift.Refused("x", reasons=[]), Status.FAILED_PRECONDITION, "NOT_READY"),
    (skift.Refused("x"), Status.FAILED_PRECONDITION, "REFUSED"),
    (skift.FencingError("x"), Status.ABORTED, "FENCED"),
    (skift.CycleError("x"), Status.FAILED_PRECONDITION, "CYCLE"),
    (skift.IdempotencyMismatch("x"), Status.ALREADY_EXISTS, "IDEMPOTENCY_MISMATCH"),
    (skift.CursorExpired("x"), Status.ABORTED, "CURSOR_EXPIRED"),
    (skift.Conflict("x"), Status.ABORTED, "CONFLICT"),
    (skift.LimitExceeded("x"), Status.RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED"),
    (skift.Unavailable("x"), Status.UNAVAILABLE, "UNAVAILABLE"),
    (skift.Unauthenticated("x"), Status.UNAUTHENTICATED, "UNAUTHENTICATED"),
]


@pytest.mark.parametrize(("exc", "status", "reason"), PINNED, ids=lambda v: str(v))
def test_the_mapping(exc: skift.SkiftError, status: Status, reason: str) -> None:
    rule = rule_of(exc)
    assert (rule.status, rule.reason) == (status, reason)


async def _raw(path: str, method: str, request: Any, reply: type[Any]) -> GRPCError:
    channel = Channel(path=path, status_details_codec=ErrorDetailsCodec())
    try:
        stub = v1.SkiftServiceStub(channel)
        with pytest.raises(GRPCError) as ei:
            await stub._unary_unary(f"/skift.v1.SkiftService/{method}", request, reply, timeout=10)  # pyright: ignore[reportPrivateUsage]
        return ei.value
    finally:
        channel.close()


def _info(err: GRPCError) -> ErrorInfo:
    infos = [d for d in err.details or () if isinstance(d, ErrorInfo)]
    assert len(infos) == 1, err.details
    assert infos[0].domain == DOMAIN
    return infos[0]


async def test_errors_on_the_wire(serve: Serve) -> None:
    """Through a real server: each kind of error carries its status, a grpc-message with
    the next move after the separator, ErrorInfo with the reason and the skift class, and
    BadRequest (the field) for INVALID_ARGUMENT."""
    server = await serve("--memory")
    sock = str(server.socket)
    err = await _raw(sock, "GetProject", v1.GetProjectRequest(ref="nope"), v1.GetProjectResponse)
    assert err.status is Status.NOT_FOUND
    assert SEPARATOR in (err.message or "")
    assert _info(err).reason == "NOT_FOUND"
    assert _info(err).metadata["error_class"] == "NotFound"

    err = await _raw(
        sock, "CreateProject", v1.CreateProjectRequest(title=""), v1.CreateProjectResponse
    )
    assert err.status is Status.INVALID_ARGUMENT
    assert _info(err).reason == "INVALID_ARGUMENT"
    bad = [d for d in err.details or () if isinstance(d, BadRequest)]
    assert len(bad) == 1
    assert bad[0].field_violations[0].description

    created = await _ok(sock, "CreateProject", v1.CreateProjectRequest(title="W"))
    assert created
    err = await _raw(
        sock,
        "ClaimNext",
        v1.ClaimNextRequest(filter=v1.NodeFilter(projects=["w"])),
        v1.ClaimNextResponse,
    )
    assert err.status is Status.NOT_FOUND
    assert _info(err).reason == "NOTHING_READY"

    err = await _raw(
        sock,
        "WatchEvents",
        v1.WatchEventsRequest(page_size=1_000_000),
        v1.WatchEventsResponse,
    )
    assert err.status is Status.RESOURCE_EXHAUSTED
    assert _info(err).reason == "LIMIT_EXCEEDED"
    assert _info(err).metadata["limit"] == "page_size"


async def _ok(path: str, method: str, request: Any) -> bool:
    channel = Channel(path=path, status_details_codec=ErrorDetailsCodec())
    try:
        await v1.SkiftServiceStub(channel).create_project(request, timeout=10)
        return True
    finally:
        channel.close()


async def test_unavailable_carries_retry_info(serve: Serve) -> None:
    """A long poll cut short by SIGTERM is UNAVAILABLE with RetryInfo (when to retry)."""
    import asyncio

    server = await serve("--memory")
    sock = str(server.socket)
    waiting = asyncio.ensure_future(
        _raw(
            sock,
            "WatchEvents",
            v1.WatchEventsRequest(wait=timedelta(seconds=60)),
            v1.WatchEventsResponse,
        )
    )
    await asyncio.sleep(0.5)
    code = await server.stop()
    err = await waiting
    assert code == 0
    assert err.status is Status.UNAVAILABLE
    assert _info(err).reason == "UNAVAILABLE"
    retry = [d for d in err.details or () if isinstance(d, RetryInfo)]
    assert len(retry) == 1
    assert retry[0].retry_delay == timedelta(seconds=1)
