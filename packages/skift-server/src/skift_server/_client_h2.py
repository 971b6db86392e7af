"""The remote Skift's unary calls over a lean HTTP/2 connection of its own.

grpclib's client makes a unary call out of h2's state machines: a stream object
and its events, HPACK encoding of the request's headers, frames built as
objects and parsed back, a task-safe buffer per stream. On a call that takes a
few milliseconds that is about a millisecond of the client's CPU, most of what
the client spends. :class:`Connection` speaks the same wire (HTTP/2 as RFC 9113,
the gRPC length prefix and trailers) as ``_unary``'s blocking connection does,
over an asyncio protocol that multiplexes the calls of one event loop:

- a request's header block is built once per route and deadline and reused: HPACK
  literals that are never indexed (so the server's table never depends on ours),
  the pseudo-headers from the static table;
- the request's HEADERS and DATA leave in one write; the answer's frames are read
  straight off the connection's buffer; headers are decoded by ``hpack`` (the
  server's encoder indexes, so its table is kept in step on every block);
- the connection's and every stream's receive window start at the largest HTTP/2
  allows (an answer never waits on this client), the connection's topped up
  as it is used.

What it leaves to grpclib (``Unsupported``, raised before anything is sent):
TLS, a request larger than what the server lets a new stream send at once
(its initial window: 64 KiB for ``skift serve`` before the call is
authenticated), more calls in flight than the server allows. Failures keep
grpclib's vocabulary, so the remote Skift's retry rules read them unchanged:
an error status is :class:`grpclib.exceptions.GRPCError` (details decoded by the
codec given), a connection lost after the request may have left is
:class:`grpclib.exceptions.StreamTerminatedError`, one never made the socket's
own ``OSError`` (nothing was sent), the deadline :class:`TimeoutError`
(the stream is reset with CANCEL, as grpclib does).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Sequence
from typing import Any, Final, cast

from grpclib.const import Status
from grpclib.exceptions import GRPCError, StreamTerminatedError
from grpclib.metadata import decode_bin_value, decode_grpc_message, encode_timeout
from hpack import Decoder

from ._unary import (
    ACK,
    CONTINUATION,
    DATA,
    DEFAULT_WINDOW,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADER_TABLE_SIZE,
    HEADERS,
    INITIAL_WINDOW_SIZE,
    MAX_FRAME,
    MAX_WINDOW,
    PADDED,
    PING,
    PREFACE,
    PRIORITY,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    Unsupported,
    frame,
)

ENABLE_PUSH: Final = 0x2
MAX_CONCURRENT_STREAMS: Final = 0x3
CANCEL: Final = 0x8
REFUSED_STREAM: Final = 0x7
_TOP_UP: Final = 1 << 30
"""Bytes received on the connection after which its window is opened again by as much."""
_HTTP_TO_GRPC: Final = {
    "400": Status.INTERNAL,
    "401": Status.UNAUTHENTICATED,
    "403": Status.PERMISSION_DENIED,
    "404": Status.UNIMPLEMENTED,
    "429": Status.UNAVAILABLE,
    "502": Status.UNAVAILABLE,
    "503": Status.UNAVAILABLE,
    "504": Status.UNAVAILABLE,
}
"""A non-200 answer's gRPC status, as grpclib's client maps it."""
_USER_AGENT: Final = "skift-python"


def _integer(value: int, prefix: int, first: int) -> bytes:
    """An HPACK integer with a ``prefix``-bit prefix, ``first`` holding the byte's other bits."""
    top = (1 << prefix) - 1
    if value < top:
        return bytes((first | value,))
    out = bytearray((first | top,))
    value -= top
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(text: str) -> bytes:
    raw = text.encode("ascii")
    return _integer(len(raw), 7, 0) + raw


def _literal(name: str | int, value: str) -> bytes:
    """A header field as a literal never added to the table (RFC 7541 6.2.2)."""
    if isinstance(name, int):  # the static table's index of the name
        return _integer(name, 4, 0) + _string(value)
    return b"\x00" + _string(name) + _string(value)


def header_block(
    path: str, authority: str, timeout: float, metadata: Sequence[tuple[str, str]]
) -> bytes:
    """A request's HPACK header block (grpclib's headers, in its order)."""
    return b"".join(
        (
            b"\x83",  # :method POST (static 3)
            b"\x86",  # :scheme http (static 6)
            _literal(4, path),  # :path
            _literal(1, authority),  # :authority
            _literal("grpc-timeout", encode_timeout(timeout)),
            _literal("te", "trailers"),
            _literal(31, "application/grpc"),  # content-type
            _literal(58, _USER_AGENT),  # user-agent
            *(_literal(k, v) for k, v in metadata),
        )
    )


ANSWER_HEADERS: Final = b"\x88" + _literal(31, "application/grpc+proto")
"""The header block ``skift serve`` starts an answer with (``_fast``): ``:status 200`` from
the static table and the content type as a literal never indexed."""
ANSWER_OK: Final = _literal("grpc-status", "0")
"""The trailers of an answer that succeeded, as ``skift serve`` writes them."""
_KNOWN_BLOCKS: Final[dict[bytes, list[tuple[str, str]]]] = {
    ANSWER_HEADERS: [(":status", "200"), ("content-type", "application/grpc+proto")],
    ANSWER_OK: [("grpc-status", "0")],
}
"""Header blocks read without HPACK's decoder: they name only the static table and literals
never indexed, so they mean the same whatever the dynamic table holds and leave it as it is."""


class _Call:
    """One call's answer as it arrives."""

    __slots__ = ("block", "blocks", "data", "done", "error")

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.blocks: list[list[tuple[str, str]]] = []
        self.block: bytearray | None = None  # a header block awaiting CONTINUATION
        self.data = bytearray()
        self.done = done
        self.error: BaseException | None = None


class Connection(asyncio.Protocol):
    """One HTTP/2 connection to ``skift serve``; :meth:`call` makes a unary call on it."""

    def __init__(self, authority: str, details_codec: Any) -> None:
        self.authority = authority
        self.codec = details_codec
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._buffer = bytearray()
        self._decoder = Decoder()
        self._calls: dict[int, _Call] = {}
        self._next_stream = 1
        self._send_window = DEFAULT_WINDOW  # the connection's
        self._stream_window = DEFAULT_WINDOW  # a new stream's (the server's setting)
        self._max_streams = 100
        self._received = 0
        self._resize = False  # the server shrank HPACK's table: say so in the next block
        self._blocks: dict[tuple[str, float, tuple[tuple[str, str], ...]], bytes] = {}
        self._block: tuple[int, bool, bytearray] | None = None  # stream, end, bytes

    # ------------------------------------------------------------ opening

    @classmethod
    async def open_unix(cls, path: str, details_codec: Any) -> Connection:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_unix_connection(lambda: cls("localhost", details_codec), path)
        return proto

    @classmethod
    async def open_tcp(cls, host: str, port: int, details_codec: Any) -> Connection:
        loop = asyncio.get_running_loop()
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        _, proto = await loop.create_connection(lambda: cls(authority, details_codec), host, port)
        return proto

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's are not registered as asyncio.Transport subclasses,
        # so no isinstance check: the receiver in docs/webhooks.md runs under uvicorn's uvloop)
        self.transport = stream = cast("asyncio.Transport", transport)
        sock: Any = stream.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        settings = struct.pack(">HI", ENABLE_PUSH, 0) + struct.pack(
            ">HI", INITIAL_WINDOW_SIZE, MAX_WINDOW
        )
        stream.write(
            PREFACE
            + frame(SETTINGS, 0, 0, settings)
            + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", MAX_WINDOW - DEFAULT_WINDOW))
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(
            StreamTerminatedError(f"the connection to the server was lost: {exc or 'closed'}")
        )

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, error: BaseException, above: int = 0) -> None:
        """End the connection's calls (those on streams above ``above``) with ``error``."""
        self.closed = True
        for sid in [s for s in self._calls if s > above]:
            call = self._calls.pop(sid)
            if not call.done.done():
                call.error = error
                call.done.set_result(None)

    # ------------------------------------------------------------ calling

    async def call(
        self,
        path: str,
        request: bytes,
        metadata: Sequence[tuple[str, str]],
        timeout: float,
        deadline: bool = True,
    ) -> bytes:
        """Send one unary request to ``path``; the answer's message bytes. ``deadline``
        False: the caller holds the call to ``timeout`` itself (``asyncio.timeout`` around
        it: on expiry the call is cancelled and its stream reset as here); the request
        still says ``timeout`` to the server."""
        transport = self.transport
        if self.closed or transport is None or transport.is_closing():
            raise Unsupported("the connection is closed")
        size = len(request) + 5
        if size > min(self._send_window, self._stream_window):
            raise Unsupported(f"a request of {size} bytes")
        if len(self._calls) >= self._max_streams:
            raise Unsupported("as many calls in flight as the server allows")
        key = (path, timeout, tuple(metadata))
        block = self._blocks.get(key)
        if block is None:
            if len(self._blocks) > 256:
                self._blocks.clear()
            block = self._blocks[key] = header_block(path, self.authority, timeout, metadata)
        if self._resize:
            block = b"\x20" + block  # a dynamic table size update to 0: this client indexes nothing
            self._resize = False
        if len(block) > MAX_FRAME:
            raise Unsupported("headers larger than a frame")
        sid = self._next_stream
        self._next_stream += 2
        body = b"\x00" + struct.pack(">I", len(request)) + request
        out = [frame(HEADERS, END_HEADERS, sid, block)]
        for i in range(0, len(body), MAX_FRAME):
            chunk = body[i : i + MAX_FRAME]
            out.append(frame(DATA, END_STREAM if i + MAX_FRAME >= len(body) else 0, sid, chunk))
        self._send_window -= len(body)
        done = asyncio.get_running_loop().create_future()
        call = self._calls[sid] = _Call(done)
        transport.write(b"".join(out))
        try:
            if deadline:
                async with asyncio.timeout(timeout):
                    await done
            else:
                await done
        except BaseException:  # the deadline, or the caller cancelled: the server is told
            if self._calls.pop(sid, None) is not None and not self.closed:
                with contextlib.suppress(Exception):
                    transport.write(frame(RST_STREAM, 0, sid, struct.pack(">I", CANCEL)))
            raise
        if call.error is not None:
            raise call.error
        return self._result(call)

    def _result(self, call: _Call) -> bytes:
        if not call.blocks:
            raise StreamTerminatedError("the answer ended without its headers")
        head = dict(call.blocks[0])
        status = head.get(":status")
        if status != "200":
            raise GRPCError(
                _HTTP_TO_GRPC.get(status or "", Status.UNKNOWN), f"Received :status = {status!r}"
            )
        content_type = head.get("content-type")
        if content_type is None:
            raise GRPCError(Status.UNKNOWN, "Missing content-type header")
        base, _, sub = content_type.partition("+")
        if base != "application/grpc" or sub not in ("", "proto"):
            raise GRPCError(Status.UNKNOWN, f"Invalid content-type: {content_type!r}")
        trailers = dict(call.blocks[-1])
        raw_status = trailers.get("grpc-status")
        if raw_status is None:
            raise GRPCError(Status.UNKNOWN, "Missing grpc-status header")
        try:
            code = Status(int(raw_status))
        except ValueError:
            raise GRPCError(Status.UNKNOWN, f"Invalid grpc-status: {raw_status!r}") from None
        if code is not Status.OK:
            message = trailers.get("grpc-message")
            if message is not None:
                message = decode_grpc_message(message)
            details = None
            raw = trailers.get("grpc-status-details-bin")
            if raw is not None and self.codec is not None:
                details = self.codec.decode(code, message, decode_bin_value(raw.encode("ascii")))
            raise GRPCError(code, message, details)
        data = call.data
        if len(data) < 5:
            raise GRPCError(Status.UNKNOWN, "the answer carried no message")
        if data[0] != 0:
            raise GRPCError(Status.UNIMPLEMENTED, "the answer is compressed")
        length = int.from_bytes(data[1:5], "big")
        if len(data) != 5 + length:
            raise GRPCError(Status.UNKNOWN, "the answer's length prefix does not match its bytes")
        return bytes(data[5:])

    # ------------------------------------------------------------ reading

    def data_received(self, data: bytes) -> None:
        buf = self._buffer
        buf += data
        i, n = 0, len(buf)
        try:
            while n - i >= 9:
                length = (buf[i] << 16) | (buf[i + 1] << 8) | buf[i + 2]
                if n - i < 9 + length:
                    break
                kind, flags = buf[i + 3], buf[i + 4]
                sid = int.from_bytes(buf[i + 5 : i + 9], "big") & 0x7FFFFFFF
                payload = bytes(buf[i + 9 : i + 9 + length])
                i += 9 + length
                self._frame_received(kind, flags, sid, payload)
        except Exception as exc:  # a frame this client cannot read: the connection is done
            del buf[:i]
            self._fail(StreamTerminatedError(f"the server's answer could not be read: {exc!r}"))
            if self.transport is not None:
                self.transport.close()
            return
        del buf[:i]

    def _frame_received(self, kind: int, flags: int, sid: int, payload: bytes) -> None:
        if kind == DATA:
            self._received += len(payload)
            if self._received >= _TOP_UP:
                self._write(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", self._received)))
                self._received = 0
            call = self._calls.get(sid)
            if call is None:
                return
            pad = payload[0] if flags & PADDED else 0
            call.data += payload[(1 if flags & PADDED else 0) : len(payload) - pad]
            if flags & END_STREAM:
                self._end(sid)
        elif kind in (HEADERS, CONTINUATION):
            self._header_frame(kind, flags, sid, payload)
        elif kind == SETTINGS:
            if not flags & ACK:
                self._settings(payload)
        elif kind == WINDOW_UPDATE:
            step = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
            if sid == 0:
                self._send_window += step
        elif kind == PING:
            if not flags & ACK:
                self._write(frame(PING, ACK, 0, payload))
        elif kind == RST_STREAM:
            call = self._calls.pop(sid, None)
            if call is not None and not call.done.done():
                code = int.from_bytes(payload[:4], "big")
                call.error = (
                    ConnectionResetError("the server refused the stream")  # nothing was done
                    if code == REFUSED_STREAM
                    else StreamTerminatedError(f"the server reset the call (error code {code})")
                )
                call.done.set_result(None)
        elif kind == GOAWAY:
            last = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
            # calls the server never took were not sent as far as it knows: any may be retried
            self._fail(ConnectionResetError("the server is closing the connection"), above=last)

    def _settings(self, payload: bytes) -> None:
        for i in range(0, len(payload) - 5, 6):
            key, value = struct.unpack(">HI", payload[i : i + 6])
            if key == INITIAL_WINDOW_SIZE:
                self._stream_window = value
            elif key == HEADER_TABLE_SIZE:
                if value < 4096:
                    self._resize = True
            elif key == MAX_CONCURRENT_STREAMS:
                self._max_streams = value
        self._write(frame(SETTINGS, ACK, 0))

    def _header_frame(self, kind: int, flags: int, sid: int, payload: bytes) -> None:
        if kind == HEADERS:
            pad = payload[0] if flags & PADDED else 0
            start = (1 if flags & PADDED else 0) + (5 if flags & PRIORITY else 0)
            self._block = (
                sid,
                bool(flags & END_STREAM),
                bytearray(payload[start : len(payload) - pad]),
            )
        else:
            if self._block is None or self._block[0] != sid:
                raise ValueError("CONTINUATION without its HEADERS")
            self._block[2].extend(payload)
        if not flags & END_HEADERS:
            return
        assert self._block is not None
        _, end, raw = self._block
        self._block = None
        block = bytes(raw)
        known = _KNOWN_BLOCKS.get(block)
        if known is not None:  # the fast path's answer: nothing to decode, the table unchanged
            call = self._calls.get(sid)
            if call is None:
                return
            call.blocks.append(known)
        else:
            # every other block is decoded, a call's or not: HPACK's table follows the server's
            headers = self._decoder.decode(block, raw=False)
            call = self._calls.get(sid)
            if call is None:
                return
            call.blocks.append([(str(k), str(v)) for k, v in headers])
        if end:
            self._end(sid)

    def _end(self, sid: int) -> None:
        call = self._calls.pop(sid, None)
        if call is not None and not call.done.done():
            call.done.set_result(None)

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)
