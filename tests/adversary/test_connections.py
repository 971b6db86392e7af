"""HTTP/2 and HTTP/1 limits: rapid reset, connections that never finish, huge headers.

Rows of issue 29: "20,000 HEADERS+RST_STREAM on one connection, no credentials"
(GOAWAY, /healthz and the bystander unharmed); "500 TCP connections that never
finish the HTTP/2 preface or headers" (closed after the preface and header
timeouts); "a 64 KB authorization header" (a status, not a dropped connection).
"""

from __future__ import annotations

import asyncio
import time

import h2.errors
import h2.events
import hpack
import httpx
from adversary_harness import (
    RawH2,
    Target,
    assert_unharmed,
    frame,
    grpc_headers,
    rapid_reset,
    read_frames,
    silent_connections,
    while_watched,
)
from hyperframe.frame import Frame, GoAwayFrame, HeadersFrame, RstStreamFrame

from skift_server._proto.skift import v1

SERVE_FLAGS = ("--idle-timeout", "4")

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
# HEADERS on stream 1 without END_HEADERS: a header block that never ends
OPEN_HEADER_BLOCK = b"\x00\x00\x01\x01\x00\x00\x00\x00\x01\x82"


async def test_rapid_reset_gets_goaway_and_spares_the_bystander(target: Target) -> None:
    got, stats = await while_watched(target, lambda: rapid_reset(target.grpc_port))
    assert got["goaway"] == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM, got
    assert got["sent"] < 20_000, got
    assert_unharmed(stats)
    async with httpx.AsyncClient() as http:
        started = time.perf_counter()
        assert (await http.get(f"{target.http_url}/healthz")).status_code == 200
        assert time.perf_counter() - started < 1.0


async def test_connections_that_never_send_the_preface_are_closed(target: Target) -> None:
    got, stats = await while_watched(
        target, lambda: silent_connections(target.grpc_port, count=500, wait=8)
    )
    assert got["open"] == 0, got  # --preface-timeout 2
    assert_unharmed(stats)


async def test_a_header_block_that_never_ends_is_closed(target: Target) -> None:
    send = PREFACE + EMPTY_SETTINGS + OPEN_HEADER_BLOCK
    got, stats = await while_watched(
        target, lambda: silent_connections(target.grpc_port, count=100, send=send, wait=8)
    )
    assert got["open"] == 0, got  # --header-timeout 2
    assert_unharmed(stats)


async def test_an_idle_connection_gets_goaway_no_error(target: Target) -> None:
    raw = await RawH2().open(target.grpc_port)
    try:
        started = time.monotonic()
        assert await raw.until(lambda: raw.goaway() is not None, 10)
        got = raw.goaway()
        assert got is not None
        assert got.error_code == h2.errors.ErrorCodes.NO_ERROR
        assert 3 < time.monotonic() - started < 7  # --idle-timeout 4
    finally:
        await raw.close()


async def test_http_requests_that_never_finish_their_head_get_408(target: Target) -> None:
    send = b"GET /healthz HTTP/1.1\r\nhost: x\r\n"
    got, stats = await while_watched(
        target, lambda: silent_connections(target.http_port, count=200, send=send, wait=8)
    )
    assert got["open"] == 0, got
    assert got["a_reply"].startswith(b"HTTP/1.1 408"), got
    assert_unharmed(stats)


async def test_a_64_kb_authorization_header_gets_a_status(target: Target) -> None:
    raw = await RawH2().open(target.grpc_port)
    try:
        huge = [("authorization", "Bearer " + "a" * 64 * 1024)]
        got = await raw.call("ListProjects", frame(bytes(v1.ListProjectsRequest())), extra=huge)
        assert got is not None
        assert got[0] == "8", got  # RESOURCE_EXHAUSTED
        assert "max_header_list_bytes" in got[1]
        assert raw.goaway() is None  # the connection is kept: the next call is answered
        again = await raw.call(
            "ListProjects", frame(bytes(v1.ListProjectsRequest())), token=target.bystander_token
        )
        assert again is not None
        assert again[0] == "0", again
    finally:
        await raw.close()
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{target.http_url}/healthz", headers={"x-big": "a" * 64 * 1024})
        assert r.status_code == 431, r


async def test_streams_past_the_limit_are_refused_not_served(target: Target) -> None:
    """More streams at once than --max-concurrent-streams (100), sent before the client
    acknowledges the server's SETTINGS: the extra ones are reset REFUSED_STREAM and the
    connection stays."""
    reader, writer = await asyncio.open_connection("127.0.0.1", target.grpc_port)
    try:
        encoder = hpack.Encoder()
        out = bytearray(PREFACE + EMPTY_SETTINGS)
        for n in range(150):
            block = encoder.encode(grpc_headers("ListProjects", token=target.bystander_token))
            f = HeadersFrame(2 * n + 1, data=block, flags=["END_HEADERS"])  # no body: stays open
            out += f.serialize()
        writer.write(bytes(out))
        frames = await read_frames(reader, seconds=5, enough=lambda fs: _refused(fs) >= 50)
        assert _refused(frames) >= 50, [type(f).__name__ for f in frames][:20]
        assert not any(isinstance(f, GoAwayFrame) for f in frames)
    finally:
        writer.close()


def _refused(frames: list[Frame]) -> int:
    return sum(
        isinstance(f, RstStreamFrame) and f.error_code == h2.errors.ErrorCodes.REFUSED_STREAM
        for f in frames
    )


async def test_requests_reset_at_once_leave_the_connection_in_step(target: Target) -> None:
    """Requests the client resets in the very next frame are taken before h2's streams
    (issue 29's rapid reset); their header blocks still move HPACK's state (new values
    indexed, some of them), so the connection's next request is read as sent."""
    raw = await RawH2().open(target.grpc_port)
    try:
        settled = lambda: any(isinstance(e, h2.events.SettingsAcknowledged) for e in raw.events)  # noqa: E731
        assert await raw.until(settled, 10)  # the server read the preface: resets come after
        for n in range(60):
            sid = raw.conn.get_next_available_stream_id()
            # every third a new entry: the decoder's state moves
            extra = [("x-n", str(n))] if n % 3 == 0 else []
            raw.conn.send_headers(sid, grpc_headers("ListProjects", extra=extra))
            raw.conn.reset_stream(sid)
        await raw.drain()
        got = await raw.call(
            "ListProjects",
            frame(bytes(v1.ListProjectsRequest())),
            token=target.bystander_token,
            extra=[("x-n", "59")],
        )
        assert got is not None
        assert got[0] == "0", got
        assert raw.goaway() is None
    finally:
        await raw.close()
