"""The unary fast path (skift_server._fast) answers as grpclib does, on the wire.

Each test runs against a server answering unary calls on the fast path and one
answering them through grpclib (``ServeOptions.unary_fast_path``), and a raw
HTTP/2 client (the h2 library) sends what a gRPC client may: a small receive
window, a deadline, a reset, two messages, a body larger than the window a
stream has before its caller is authenticated.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import tempfile
import time
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any, cast

import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest
from grpclib.const import Status
from grpclib.metadata import decode_bin_value

import skift
from skift_server._errors import ErrorDetailsCodec
from skift_server._proto.skift import v1
from skift_server._server import ServeOptions, SkiftServer

pytestmark = pytest.mark.parametrize("fast", [True, False], ids=["fast", "grpclib"])


class Raw:
    """One HTTP/2 connection to the server's unix socket, spoken by hand."""

    def __init__(self, window: int | None = None) -> None:
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        self.window = window
        self.events: list[Any] = []
        self.data: dict[int, bytes] = {}
        self.changed = asyncio.Event()
        self.writer: asyncio.StreamWriter | None = None
        self.task: asyncio.Task[None] | None = None

    async def open(self, path: Path) -> Raw:
        reader, self.writer = await asyncio.open_unix_connection(str(path))
        self.conn.initiate_connection()
        if self.window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: self.window})
        self.flush()
        self.task = asyncio.create_task(self._read(reader))
        return self

    def flush(self) -> None:
        assert self.writer is not None
        if data := self.conn.data_to_send():
            self.writer.write(data)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while data := await reader.read(65536):
            for e in self.conn.receive_data(data):
                if isinstance(e, h2.events.DataReceived):
                    self.data[e.stream_id] = self.data.get(e.stream_id, b"") + e.data
                    self.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                self.events.append(e)
            self.flush()
            self.changed.set()

    def start(self, method: str, extra: list[tuple[str, str]] | None = None) -> int:
        sid = self.conn.get_next_available_stream_id()
        headers = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", f"/skift.v1.SkiftService/{method}"),
            (":authority", "localhost"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            *(extra or []),
        ]
        self.conn.send_headers(sid, headers)
        self.flush()
        return sid

    async def send(self, sid: int, body: bytes, *, end: bool = True) -> None:
        """``body``, as the stream's window lets it go."""
        while body:
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if room <= 0:
                await self.until(lambda: self.conn.local_flow_control_window(sid) > 0)
                continue
            self.conn.send_data(sid, body[:room])
            body = body[room:]
            self.flush()
        if end:
            self.conn.end_stream(sid)
            self.flush()

    async def until(self, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    def trailers(self, sid: int) -> dict[str, str] | None:
        for e in self.events:
            if isinstance(e, h2.events.TrailersReceived | h2.events.ResponseReceived):
                got: dict[str, str] = dict(cast(Any, e.headers) or ())
                if e.stream_id == sid and "grpc-status" in got:
                    return got
        return None

    async def answer(self, sid: int) -> dict[str, str]:
        await self.until(lambda: self.trailers(sid) is not None)
        got = self.trailers(sid)
        assert got is not None
        return got

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task


def message(msg: Any) -> bytes:
    data = bytes(msg)
    return struct.pack(">BI", 0, len(data)) + data


@contextlib.asynccontextmanager
async def served(
    fast: bool, limits: skift.Limits = skift.DEFAULT_LIMITS
) -> AsyncGenerator[tuple[SkiftServer, Path]]:
    folder = Path(tempfile.mkdtemp(prefix="skift-fast-"))
    sock = folder / "s.sock"
    server = SkiftServer(
        ServeOptions(
            memory=True,
            limits=limits,
            socket=sock,
            sweep_every=0,
            probe_every=0,
            prune_every=0,
            webhook_workers=0,
            unary_fast_path=fast,
        )
    )
    await server.start()
    try:
        yield server, sock
    finally:
        await server.stop()


async def test_an_answer_larger_than_the_clients_window_arrives_whole(fast: bool) -> None:
    async with served(fast) as (server, sock):
        for i in range(30):
            await server.base.create_project(f"A project with a long enough name {i}")
        raw = await Raw(window=100).open(sock)
        try:
            sid = raw.start("ListProjects")
            await raw.send(sid, message(v1.ListProjectsRequest(page_size=30)))
            got = await raw.answer(sid)
            assert got["grpc-status"] == "0"
            body = raw.data[sid]
            assert len(body) > 1000  # ten times the window: it waited for the client's updates
            reply = v1.ListProjectsResponse.parse(body[5:])
            assert len(reply.projects) == 30
        finally:
            await raw.close()


async def test_an_error_carries_its_details(fast: bool) -> None:
    async with served(fast) as (_, sock):
        raw = await Raw().open(sock)
        try:
            sid = raw.start("GetNode")
            await raw.send(sid, message(v1.GetNodeRequest(ref="nowhere#1")))
            got = await raw.answer(sid)
            assert got["grpc-status"] == "5"  # NOT_FOUND
            assert "nowhere" in got["grpc-message"]
            details = ErrorDetailsCodec().decode(
                Status.NOT_FOUND,
                got["grpc-message"],
                decode_bin_value(got["grpc-status-details-bin"].encode()),
            )
            assert any(isinstance(d, v1.Error) for d in details)
            assert sid not in raw.data  # trailers only
        finally:
            await raw.close()


async def test_two_messages_on_a_unary_call_are_refused(fast: bool) -> None:
    async with served(fast) as (_, sock):
        raw = await Raw().open(sock)
        try:
            sid = raw.start("ListProjects")
            one = message(v1.ListProjectsRequest(page_size=1))
            await raw.send(sid, one + one)
            got = await raw.answer(sid)
            assert got["grpc-status"] == "3"
            assert "takes one request message" in got["grpc-message"]
            sid = raw.start("ListProjects")
            await raw.send(sid, b"")
            got = await raw.answer(sid)
            assert got["grpc-status"] == "3"
            assert "carries no message" in got["grpc-message"]
        finally:
            await raw.close()


async def test_a_body_larger_than_the_unauthenticated_window_is_read(fast: bool) -> None:
    async with served(fast) as (server, sock):
        project = await server.base.create_project("Big")
        raw = await Raw().open(sock)
        try:
            sid = raw.start("Patch")
            ops = [
                v1.PatchOp(create_node=v1.CreateNodeOp(title="Big", body="x" * 2000))
                for _ in range(60)
            ]
            body = message(v1.PatchRequest(project=project.slug, ops=ops))
            assert len(body) > 100_000
            await raw.send(sid, body)
            got = await raw.answer(sid)
            assert got["grpc-status"] == "0", got
            reply = v1.PatchResponse.parse(raw.data[sid][5:])
            assert reply.result is not None
            assert len(reply.result.nodes) == 60
        finally:
            await raw.close()


async def test_a_deadline_cuts_a_long_poll_short(fast: bool) -> None:
    async with served(fast) as (server, sock):
        await server.base.create_project("Empty")
        raw = await Raw().open(sock)
        try:
            sid = raw.start("ClaimNext", [("grpc-timeout", "300m")])
            wait = v1.ClaimNextRequest(wait=skift_duration(30))
            await raw.send(sid, message(wait))
            got = await raw.answer(sid)
            assert got["grpc-status"] == "4"  # DEADLINE_EXCEEDED
            await wait_for(lambda: server.service is not None and server.service.in_flight == 0)
        finally:
            await raw.close()


async def test_a_far_deadline_cuts_a_long_poll_short_at_its_time(fast: bool) -> None:
    """A deadline past ``_fast.ARM_AT_ONCE`` gets its timer from the connection's next
    check, for the same moment: the call still ends at its deadline, not a tick later."""
    async with served(fast) as (server, sock):
        await server.base.create_project("Empty")
        raw = await Raw().open(sock)
        try:
            started = time.monotonic()
            sid = raw.start("ClaimNext", [("grpc-timeout", "2500m")])
            await raw.send(sid, message(v1.ClaimNextRequest(wait=skift_duration(30))))
            got = await raw.answer(sid)
            took = time.monotonic() - started
            assert got["grpc-status"] == "4"  # DEADLINE_EXCEEDED
            assert 2.4 < took < 3.3, took
            await wait_for(lambda: server.service is not None and server.service.in_flight == 0)
        finally:
            await raw.close()


async def test_a_reset_cancels_the_call(fast: bool) -> None:
    async with served(fast) as (server, sock):
        await server.base.create_project("Empty")
        raw = await Raw().open(sock)
        try:
            sid = raw.start("ClaimNext")
            await raw.send(sid, message(v1.ClaimNextRequest(wait=skift_duration(30))))
            await wait_for(lambda: server.service is not None and server.service.in_flight == 1)
            raw.conn.reset_stream(sid)
            raw.flush()
            await wait_for(lambda: server.service is not None and server.service.in_flight == 0)
            # the connection still serves
            sid = raw.start("ListProjects")
            await raw.send(sid, message(v1.ListProjectsRequest(page_size=5)))
            assert (await raw.answer(sid))["grpc-status"] == "0"
        finally:
            await raw.close()


async def test_a_long_poll_past_the_cap_is_refused_as_its_call_would_be(fast: bool) -> None:
    """Past ``long_polls_per_principal`` a long poll is RESOURCE_EXHAUSTED with its limit and
    RetryInfo, whether the fast path answers it before any task (its caller's identity
    remembered) or the call does; one without a wait is served as ever."""
    async with served(fast, skift.Limits(long_polls_per_principal=2)) as (server, sock):
        await server.base.create_project("Empty")
        raw = await Raw().open(sock)
        try:
            waiting = []
            for _ in range(2):
                sid = raw.start("ClaimNext")
                await raw.send(sid, message(v1.ClaimNextRequest(wait=skift_duration(30))))
                waiting.append(sid)
            await wait_for(lambda: server.service is not None and server.service.in_flight == 2)
            answers = []
            for method, request in [
                ("ClaimNext", v1.ClaimNextRequest(wait=skift_duration(30))),
                ("WatchEvents", v1.WatchEventsRequest(wait=skift_duration(30))),
            ]:
                sid = raw.start(method)
                await raw.send(sid, message(request))
                answers.append((sid, await raw.answer(sid)))
            for sid, got in answers:
                assert got["grpc-status"] == "8", got  # RESOURCE_EXHAUSTED
                assert "already has 2 calls waiting" in got["grpc-message"]
                raw_details = decode_bin_value(got["grpc-status-details-bin"].encode())
                assert b"long_polls_per_principal" in raw_details
                details = ErrorDetailsCodec().decode(
                    Status.RESOURCE_EXHAUSTED, got["grpc-message"], raw_details
                )
                assert any(isinstance(d, v1.Error) for d in details)
                assert any(d.__class__.__name__ == "RetryInfo" for d in details)
                assert sid not in raw.data  # trailers only
            # without a wait: not a long poll, answered (nothing to claim) while two wait
            sid = raw.start("WatchEvents")
            await raw.send(sid, message(v1.WatchEventsRequest()))
            assert (await raw.answer(sid))["grpc-status"] == "0"
            assert server.service is not None
            assert server.service.in_flight == 2
            for sid in waiting:
                raw.conn.reset_stream(sid)
            raw.flush()
            await wait_for(lambda: server.service is not None and server.service.in_flight == 0)
            # under the cap again: a long poll waits
            sid = raw.start("WatchEvents", [("grpc-timeout", "300m")])
            await raw.send(sid, message(v1.WatchEventsRequest(wait=skift_duration(30))))
            assert (await raw.answer(sid))["grpc-status"] in ("0", "4")
        finally:
            await raw.close()


def skift_duration(seconds: float) -> Any:
    import datetime as dt

    return dt.timedelta(seconds=seconds)


async def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110 (the server's counters have no event to wait on)
            await asyncio.sleep(0.01)


async def test_unary_calls_take_the_fast_path_when_it_is_on(
    fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skift_server import _fast

    taken: list[str] = []
    original = _fast.start

    def counted(conn: Any, routes: Any, event: Any) -> Any:
        call = original(conn, routes, event)
        if call is not None:
            taken.append(call.name)
        return call

    monkeypatch.setattr(_fast, "start", counted)
    async with served(fast) as (_, sock):
        raw = await Raw().open(sock)
        try:
            sid = raw.start("ListProjects")
            await raw.send(sid, message(v1.ListProjectsRequest(page_size=1)))
            assert (await raw.answer(sid))["grpc-status"] == "0"
            sid = raw.start("NoSuchMethod")  # not the service's: grpclib answers it
            await raw.send(sid, message(v1.ListProjectsRequest()))
            assert (await raw.answer(sid))["grpc-status"] == "12"  # UNIMPLEMENTED
        finally:
            await raw.close()
    assert taken == (["ListProjects"] if fast else [])
