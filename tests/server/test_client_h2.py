"""The remote Skift's lean HTTP/2 connection (``skift_server._client_h2``), frame by frame.

A fake transport stands for the socket: what the connection writes is parsed
back with ``hyperframe``/``hpack`` (h2's own parsers), and the server's frames
are made the same way, with HPACK indexing as h2 does it, padding and
CONTINUATION where a server may use them. The remote contract suite runs every
call through it against a real ``skift serve``.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from grpclib.const import Status
from grpclib.exceptions import GRPCError, StreamTerminatedError
from hpack import Decoder, Encoder
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

from skift_server._client_h2 import Connection, header_block
from skift_server._errors import ErrorDetailsCodec
from skift_server._proto.skift import v1
from skift_server._unary import PREFACE, Unsupported


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.out = bytearray()
        self.closing = False

    def write(self, data: Any) -> None:
        self.out += data

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def frames(data: bytes) -> list[Frame]:
    out: list[Frame] = []
    i = 0
    while i < len(data):
        f, length = Frame.parse_frame_header(memoryview(data[i : i + 9]))
        f.parse_body(memoryview(data[i + 9 : i + 9 + length]))
        out.append(f)
        i += 9 + length
    return out


class Server:
    """The server's side of the fake socket: h2's frames and an indexing HPACK encoder."""

    def __init__(self, conn: Connection, transport: FakeTransport) -> None:
        self.conn = conn
        self.transport = transport
        self.encoder = Encoder()
        self.decoder = Decoder()

    def sent(self) -> list[Frame]:
        data = bytes(self.transport.out)
        self.transport.out.clear()
        if data.startswith(PREFACE):
            data = data[len(PREFACE) :]
        return frames(data)

    def send(self, *fs: Frame) -> None:
        self.conn.data_received(b"".join(f.serialize() for f in fs))

    def headers(self, sid: int, headers: list[tuple[str, str]], *flags: str) -> HeadersFrame:
        f = HeadersFrame(sid)
        f.data = self.encoder.encode(headers)
        f.flags.add("END_HEADERS")
        for flag in flags:
            f.flags.add(flag)
        return f

    def answer(self, sid: int, message: bytes) -> None:
        data = DataFrame(sid)
        data.data = b"\x00" + struct.pack(">I", len(message)) + message
        self.send(
            self.headers(sid, [(":status", "200"), ("content-type", "application/grpc")]),
            data,
            self.headers(sid, [("grpc-status", "0"), ("grpc-message", "")], "END_STREAM"),
        )


@pytest.fixture
def pair() -> tuple[Connection, Server]:
    conn = Connection("localhost", ErrorDetailsCodec())
    transport = FakeTransport()
    conn.connection_made(transport)
    return conn, Server(conn, transport)


async def _start(conn: Connection, request: bytes = b"\x0a\x01x", timeout: float = 5) -> Any:
    task = asyncio.create_task(conn.call("/skift.v1.SkiftService/GetNode", request, [], timeout))
    await asyncio.sleep(0)
    return task


async def test_the_request_is_grpclibs_headers_and_one_message(pair: Any) -> None:
    conn, server = pair
    task = await _start(conn)
    opening = server.sent()
    assert isinstance(opening[0], SettingsFrame)
    assert opening[0].settings[SettingsFrame.ENABLE_PUSH] == 0
    assert opening[0].settings[SettingsFrame.INITIAL_WINDOW_SIZE] == 2**31 - 1
    assert isinstance(opening[1], WindowUpdateFrame)
    assert opening[1].stream_id == 0
    head, data = opening[2], opening[3]
    assert isinstance(head, HeadersFrame)
    assert head.stream_id == 1
    assert "END_HEADERS" in head.flags
    assert "END_STREAM" not in head.flags
    assert server.decoder.decode(head.data, raw=False) == [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/skift.v1.SkiftService/GetNode"),
        (":authority", "localhost"),
        ("grpc-timeout", "5000m"),
        ("te", "trailers"),
        ("content-type", "application/grpc"),
        ("user-agent", "skift-python"),
    ]
    assert isinstance(data, DataFrame)
    assert "END_STREAM" in data.flags
    assert bytes(data.data) == b"\x00\x00\x00\x00\x03\x0a\x01x"
    server.answer(1, b"answer")
    assert await task == b"answer"


async def test_indexed_headers_padding_and_continuation_across_calls(pair: Any) -> None:
    conn, server = pair
    for sid in (1, 3, 5):  # the server's encoder indexes: later blocks refer to earlier ones
        task = await _start(conn)
        server.sent()
        head = server.headers(sid, [(":status", "200"), ("content-type", "application/grpc")])
        block = bytes(head.data)
        first = HeadersFrame(sid)
        first.data = block[:1]
        first.flags.add("PADDED")
        first.pad_length = 3
        rest = ContinuationFrame(sid)
        rest.data = block[1:]
        rest.flags.add("END_HEADERS")
        data = DataFrame(sid)
        data.data = b"\x00\x00\x00\x00\x02ok"
        data.flags.add("PADDED")
        data.pad_length = 7
        trailers = server.headers(sid, [("grpc-status", "0")], "END_STREAM")
        server.send(first, rest, data, trailers)
        assert await task == b"ok"


async def test_an_error_status_carries_its_message_and_details(pair: Any) -> None:
    conn, server = pair
    task = await _start(conn)
    server.sent()
    details = ErrorDetailsCodec().encode(
        Status.NOT_FOUND, "no such node", [v1.Error(code="not_found", message="no such node")]
    )
    import base64

    server.send(
        server.headers(
            1,
            [
                (":status", "200"),
                ("content-type", "application/grpc"),
                ("grpc-status", "5"),
                ("grpc-message", "no%20such node"),
                ("grpc-status-details-bin", base64.b64encode(details).decode().rstrip("=")),
            ],
            "END_STREAM",
        )
    )
    with pytest.raises(GRPCError) as err:
        await task
    assert err.value.status is Status.NOT_FOUND
    assert err.value.message == "no such node"
    assert isinstance(err.value.details[0], v1.Error)
    assert err.value.details[0].code == "not_found"


async def test_not_grpc_is_grpclibs_error(pair: Any) -> None:
    conn, server = pair
    task = await _start(conn)
    server.sent()
    server.send(server.headers(1, [(":status", "503")], "END_STREAM"))
    with pytest.raises(GRPCError) as err:
        await task
    assert err.value.status is Status.UNAVAILABLE


async def test_ping_settings_and_the_window(pair: Any) -> None:
    conn, server = pair
    ping = PingFrame(0)
    ping.opaque_data = b"12345678"
    settings = SettingsFrame(0)
    settings.settings = {SettingsFrame.INITIAL_WINDOW_SIZE: 100, SettingsFrame.HEADER_TABLE_SIZE: 0}
    server.send(ping, settings)
    back = server.sent()[2:]
    assert isinstance(back[0], PingFrame)
    assert "ACK" in back[0].flags
    assert back[0].opaque_data == b"12345678"
    assert isinstance(back[1], SettingsFrame)
    assert "ACK" in back[1].flags
    with pytest.raises(Unsupported):  # larger than a new stream may send: grpclib's
        await conn.call("/skift.v1.SkiftService/Patch", b"x" * 200, [], 5)
    task = await _start(conn)
    (head, _) = server.sent()
    assert bytes(head.data)[:1] == b"\x20"  # the table's new size said first
    assert next(iter(Decoder().decode(bytes(head.data), raw=False))) == (":method", "POST")
    server.answer(1, b"")
    assert await task == b""


async def test_a_reset_a_goaway_and_a_lost_connection(pair: Any) -> None:
    conn, server = pair
    first, second = await _start(conn), await _start(conn)
    server.sent()
    rst = RstStreamFrame(1)
    rst.error_code = 2
    server.send(rst)
    with pytest.raises(StreamTerminatedError):
        await first
    third = await _start(conn)
    away = GoAwayFrame(0)
    away.last_stream_id = 3
    server.send(away)
    with pytest.raises(ConnectionResetError):  # stream 5 was never taken: nothing was done
        await third
    assert conn.closed
    with pytest.raises(Unsupported):
        await conn.call("/skift.v1.SkiftService/GetNode", b"", [], 5)
    conn.connection_lost(None)
    with pytest.raises(StreamTerminatedError):
        await second


async def test_the_deadline_resets_the_stream(pair: Any) -> None:
    conn, server = pair
    with pytest.raises(TimeoutError):
        await conn.call("/skift.v1.SkiftService/GetNode", b"", [], 0.05)
    rst = server.sent()[-1]
    assert isinstance(rst, RstStreamFrame)
    assert rst.stream_id == 1
    assert rst.error_code == 8
    server.answer(1, b"late")  # an answer to a call given up on is read and dropped
    task = await _start(conn)
    server.sent()
    server.answer(3, b"on time")
    assert await task == b"on time"


def test_a_header_block_with_metadata() -> None:
    block = header_block("/p", "host:1", 30, [("authorization", "Bearer t"), ("x-skift-org", "o")])
    assert list(Decoder().decode(block, raw=False))[-2:] == [
        ("authorization", "Bearer t"),
        ("x-skift-org", "o"),
    ]


def test_a_transport_of_another_loop_is_taken_as_it_is() -> None:
    """uvloop's transports are not asyncio.Transport subclasses (uvicorn runs one: the
    receiver in docs/webhooks.md calls skift from it); the connection takes any transport
    that writes, and starts with the preface."""

    class LoopTransport:  # what uvloop's UnixTransport offers, and no asyncio base class
        def __init__(self) -> None:
            self.out = bytearray()

        def write(self, data: Any) -> None:
            self.out += data

        def is_closing(self) -> bool:
            return False

        def close(self) -> None:
            pass

        def get_extra_info(self, name: str, default: Any = None) -> Any:
            return default

    transport = LoopTransport()
    assert not isinstance(transport, asyncio.BaseTransport)
    Connection("localhost", ErrorDetailsCodec()).connection_made(transport)  # type: ignore[arg-type]
    assert bytes(transport.out).startswith(PREFACE)


async def test_calls_at_once_share_the_connections_being_opened() -> None:
    """Many calls at once on a new handle wait for the connection being opened rather than
    each opening one (an agent's 1,200 concurrent calls opened ~800 connections)."""
    from skift_server._client_base import Shared

    opened: list[Any] = []

    class Opened:
        closed = False

    async def open_lean() -> Any:
        await asyncio.sleep(0.01)
        conn = Opened()
        opened.append(conn)
        return conn

    shared = Shared(make=lambda: None, size=2, metadata={})  # pyright: ignore[reportArgumentType]
    shared.open_lean = open_lean
    got = await asyncio.gather(*(shared.lean() for _ in range(200)))
    assert len(opened) == 2
    assert {id(c) for c in got} == {id(c) for c in opened}
    # a slot whose connection closed is opened again, once
    opened[0].closed = True
    again = await asyncio.gather(*(shared.lean() for _ in range(50)))
    assert len(opened) == 3
    assert len({id(c) for c in again}) == 2


async def test_a_failed_opening_fails_its_waiters_and_is_tried_again() -> None:
    from skift_server._client_base import Shared

    tries: list[int] = []

    async def open_lean() -> Any:
        tries.append(1)
        await asyncio.sleep(0.01)
        if len(tries) == 1:
            raise ConnectionRefusedError("not yet")
        return object()

    shared = Shared(make=lambda: None, size=1, metadata={})  # pyright: ignore[reportArgumentType]
    shared.open_lean = open_lean
    got = await asyncio.gather(*(shared.lean() for _ in range(20)), return_exceptions=True)
    assert all(isinstance(g, ConnectionRefusedError) for g in got)
    assert len(tries) == 1
    assert await shared.lean() is not None
    assert len(tries) == 2
