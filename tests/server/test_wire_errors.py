"""The status code and standard details of every skift error class, pinned.

``skift_server._errors.MAPPING`` is the one table of status codes; this pins
what it says (a change to it changes what clients in every language see),
and checks one error of each kind end to end through a real server: status,
``grpc-message`` with its separator, ``google.rpc.ErrorInfo`` and the
standard detail each kind carries.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from badrequest import problems
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


def _cases() -> list[tuple[str, str, Any, type[Any], str]]:
    """(name, RPC, request, response type, the field path BadRequest must name): every
    bad-argument answer names the field as the proto spells it."""
    from datetime import timedelta as td

    create = v1.PatchOp(create_node=v1.CreateNodeOp(title="first"))
    untitled = v1.PatchOp(create_node=v1.CreateNodeOp(title=""))
    return [
        ("page size", "ListProjects", v1.ListProjectsRequest(page_size=-1), v1.ListProjectsResponse, "page_size"),
        ("cursor", "ListEvents", v1.ListEventsRequest(page_token="garbage"), v1.ListEventsResponse, "page_token"),
        ("stream cursor", "WatchEvents", v1.WatchEventsRequest(page_token="garbage"), v1.WatchEventsResponse, "page_token"),
        ("ttl", "Claim", v1.ClaimRequest(ref="w#1", ttl=td(seconds=-1)), v1.ClaimResponse, "ttl"),
        ("ref", "GetNode", v1.GetNodeRequest(ref="not a ref!"), v1.GetNodeResponse, "ref"),
        ("#1 alone", "GetNode", v1.GetNodeRequest(ref="#1"), v1.GetNodeResponse, "project"),
        ("filter.status", "Ready", v1.ReadyRequest(filter=v1.NodeFilter(status=v1.NodeStatus.OPEN)), v1.ReadyResponse, "filter.status"),
        ("title", "Patch", v1.PatchRequest(project="w", ops=[create, untitled]), v1.PatchResponse, "ops[1].create_node.title"),
        ("no ops", "Patch", v1.PatchRequest(project="w"), v1.PatchResponse, "ops"),
        ("slug", "CreateProject", v1.CreateProjectRequest(title="x", slug="Not A Slug"), v1.CreateProjectResponse, "slug"),
        ("enum", "CreateProject", v1.CreateProjectRequest(title="x", priority=99), v1.CreateProjectResponse, "priority"),
    ]  # fmt: skip


async def test_bad_request_names_the_field(serve: Serve) -> None:
    """BadRequest's field path, for each bad argument the issue listed (and a few more): the
    field as the proto spells it, a path the request message has (a patch operation's field
    through the oneof member set: ops[1].create_node.title), never empty; the message names
    no CLI flag or Python repr."""
    server = await serve("--memory")
    sock = str(server.socket)
    assert await _ok(sock, "CreateProject", v1.CreateProjectRequest(title="W"))
    wrong: list[str] = []
    for name, method, request, reply, field in _cases():
        err = await _raw(sock, method, request, reply)
        bad = [d for d in err.details or () if isinstance(d, BadRequest)]
        got = bad[0].field_violations[0].field if bad else None
        text = err.message or ""
        if err.status is not Status.INVALID_ARGUMENT or got != field:
            wrong.append(f"{name}: {err.status.name} field={got!r}, want {field!r}: {text}")
        wrong.extend(f"{name}: {p}" for p in problems(type(request), err.details))
        if re.search(r"--[a-z]|Priority\.|\d:\d\d:\d\d|'skift ", text):
            wrong.append(f"{name}: CLI words or a Python repr: {text}")
    assert not wrong, "\n".join(wrong)
