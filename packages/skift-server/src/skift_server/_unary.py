"""One gRPC unary call after another over one HTTP/2 connection, blocking, without grpclib.

For a short-lived client (``skift ready`` and ``skift show`` as new
processes, see ``skift_cli._fast``) the remote Skift's transport costs more to
import than the call takes: asyncio, grpclib with h2, and the client's
mixins. :class:`Connection` speaks the same wire (HTTP/2 as RFC 9113, HPACK
through the ``hpack`` package h2 uses, the gRPC length prefix and trailers)
over a blocking socket: ``call`` sends a request's bytes and returns the
answer's bytes, or raises :class:`CallFailed` with the status, message and
``grpc-status-details-bin`` trailer (``skift_server._errors`` turns them into
the skift error the remote Skift raises), or :class:`NotSent` /
:class:`Broken` when the transport failed before anything was sent or after.

What it leaves to the full client, by raising :class:`Unsupported` before
sending: TLS (``https://``), a request larger than the server's first flow
control window, and anything else unusual. It never retries: its caller
hands a read that failed in transit to the full client, which does.
"""

from __future__ import annotations

import base64
import os
import socket
import struct
import time
from typing import Final
from urllib.parse import unquote, urlsplit

from hpack import Decoder, Encoder

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0x0,
    0x1,
    0x3,
    0x4,
    0x6,
    0x7,
    0x8,
    0x9,
)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
HEADER_TABLE_SIZE, ENABLE_PUSH, INITIAL_WINDOW_SIZE = 0x1, 0x2, 0x4
MAX_WINDOW: Final = 2**31 - 1
DEFAULT_WINDOW: Final = 65_535
MAX_FRAME: Final = 16_384  # the smallest max frame size a peer may set: always allowed


class Unsupported(Exception):
    """Not a call this transport makes (TLS, a large request): nothing was sent."""


class NotSent(Exception):
    """The connection could not be made: nothing was sent."""


class Broken(Exception):
    """The connection failed, or the answer was not gRPC, after the request may have been sent."""


class CallFailed(Exception):
    """The server answered with a gRPC status other than OK."""

    def __init__(self, status: int, message: str, details: bytes | None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    """One HTTP/2 frame: the 9-byte header, then the payload (both clients write with it)."""
    head = struct.pack(">I", len(payload))[1:] + bytes((kind, flags)) + struct.pack(">I", stream)
    return head + payload


def _grpc_timeout(seconds: float) -> str:
    """The ``grpc-timeout`` header as grpclib writes it."""
    if seconds > 10:
        return f"{int(seconds)}S"
    if seconds > 0.01:
        return f"{int(seconds * 1000)}m"
    return f"{int(seconds * 1_000_000)}u"


class Connection:
    """An HTTP/2 connection to ``skift serve`` at ``url`` (``unix://`` or ``http://``)."""

    def __init__(self, url: str, *, token: str | None, timeout: float) -> None:
        parts = urlsplit(url)
        self.timeout = timeout
        self._metadata: list[tuple[str, str]] = []
        if parts.scheme == "unix":
            path = unquote(parts.path if not parts.netloc else f"/{parts.netloc}{parts.path}")
            if not path:
                raise Unsupported(url)
            from ._paths import check_socket_owner

            check_socket_owner(path)  # raises skift.Unauthenticated, as the full client does
            self._address: str | tuple[str, int] = path
            self._family = socket.AF_UNIX
            self._authority = "localhost"
        elif parts.scheme == "http" and parts.hostname and parts.port:
            self._address = (parts.hostname, parts.port)
            self._family = socket.AF_INET6 if ":" in parts.hostname else socket.AF_INET
            host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
            self._authority = f"{host}:{parts.port}"
            if token:
                self._metadata.append(("authorization", f"Bearer {token}"))
        else:
            raise Unsupported(url)
        self._sock: socket.socket | None = None
        self._buffer = bytearray()
        self._encoder = Encoder()
        self._decoder = Decoder()
        self._next_stream = 1
        self._send_window = DEFAULT_WINDOW
        self._pending = b""

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def _open(self) -> socket.socket:
        if self._sock is not None:
            return self._sock
        sock = socket.socket(self._family, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._address)
        except OSError as exc:
            sock.close()
            raise NotSent(exc) from exc
        if self._family != socket.AF_UNIX:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        settings = struct.pack(">HI", ENABLE_PUSH, 0) + struct.pack(
            ">HI", INITIAL_WINDOW_SIZE, MAX_WINDOW
        )
        # the connection's window opened as wide as a stream's: an answer never waits on us
        self._pending = (
            PREFACE
            + frame(SETTINGS, 0, 0, settings)
            + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", MAX_WINDOW - DEFAULT_WINDOW))
        )
        return sock

    def call(self, method: str, request: bytes) -> bytes:
        """Send one unary request to ``/skift.v1.SkiftService/{method}``; the answer's bytes."""
        body = b"\x00" + struct.pack(">I", len(request)) + request
        if len(body) > self._send_window:
            raise Unsupported(f"a request of {len(body)} bytes")
        first = self._sock is None
        sock = self._open()
        stream = self._next_stream
        self._next_stream += 2
        headers = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", f"/skift.v1.SkiftService/{method}"),
            (":authority", self._authority),
            ("grpc-timeout", _grpc_timeout(self.timeout)),
            ("te", "trailers"),
            ("content-type", "application/grpc"),
            ("user-agent", "skift-cli"),
            *self._metadata,
        ]
        block = self._encoder.encode(headers)
        if len(block) > MAX_FRAME:
            raise Unsupported("headers larger than a frame")
        out = bytearray(self._pending if first else b"")
        out += frame(HEADERS, END_HEADERS, stream, block)
        chunks = [body[i : i + MAX_FRAME] for i in range(0, len(body), MAX_FRAME)]
        for i, chunk in enumerate(chunks):
            out += frame(DATA, END_STREAM if i == len(chunks) - 1 else 0, stream, chunk)
        self._send_window -= len(body)
        deadline = time.monotonic() + self.timeout
        try:
            sock.sendall(out)
        except OSError as exc:
            # nothing reached a server that refused the connection's first bytes
            raise (NotSent(exc) if first else Broken(exc)) from exc
        return self._answer(sock, stream, deadline)

    def _read_frame(self, sock: socket.socket, deadline: float) -> tuple[int, int, int, bytes]:
        buf = self._buffer
        while True:
            if len(buf) >= 9:
                length = int.from_bytes(buf[:3], "big")
                if len(buf) >= 9 + length:
                    kind, flags = buf[3], buf[4]
                    stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                    payload = bytes(buf[9 : 9 + length])
                    del buf[: 9 + length]
                    return kind, flags, stream, payload
            left = deadline - time.monotonic()
            if left <= 0:
                raise Broken("the call ran past its deadline")
            sock.settimeout(left)
            try:
                got = sock.recv(1 << 16)
            except OSError as exc:
                raise Broken(exc) from exc
            if not got:
                raise Broken("the server closed the connection")
            buf += got

    def _answer(self, sock: socket.socket, stream: int, deadline: float) -> bytes:
        blocks: list[list[tuple[str, str]]] = []
        block: bytearray | None = None  # a header block not yet ended (CONTINUATION follows)
        data = bytearray()
        ended = False
        while not ended or block is not None:
            kind, flags, sid, payload = self._read_frame(sock, deadline)
            if kind == SETTINGS and not flags & ACK:
                for i in range(0, len(payload) - 5, 6):
                    key, value = struct.unpack(">HI", payload[i : i + 6])
                    if key == INITIAL_WINDOW_SIZE:
                        self._send_window += value - DEFAULT_WINDOW
                    elif key == HEADER_TABLE_SIZE:
                        self._encoder.header_table_size = value
                sock.sendall(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK:
                sock.sendall(frame(PING, ACK, 0, payload))
            elif kind == GOAWAY:
                raise Broken("the server closed the connection (GOAWAY)")
            elif sid != stream:
                continue
            elif kind == RST_STREAM:
                raise Broken("the server reset the call")
            elif kind == HEADERS or (kind == CONTINUATION and block is not None):
                if kind == HEADERS:
                    pad = payload[0] if flags & PADDED else 0
                    start = (1 if flags & PADDED else 0) + (5 if flags & PRIORITY else 0)
                    payload = payload[start : len(payload) - pad]
                    ended = ended or bool(flags & END_STREAM)
                    block = bytearray()
                assert block is not None
                block += payload
                if flags & END_HEADERS:
                    decoded = self._decoder.decode(bytes(block), raw=False)
                    blocks.append([(str(k), str(v)) for k, v in decoded])
                    block = None
            elif kind == DATA:
                pad = payload[0] if flags & PADDED else 0
                data += payload[(1 if flags & PADDED else 0) : len(payload) - pad]
                ended = ended or bool(flags & END_STREAM)
        if not blocks:
            raise Broken("the answer ended without its headers")
        return self._result(blocks, bytes(data))

    def _result(self, blocks: list[list[tuple[str, str]]], data: bytes) -> bytes:
        head = dict(blocks[0])
        trailers = dict(blocks[-1])
        if head.get(":status") != "200":
            raise Broken(f"the server answered HTTP {head.get(':status')}")
        status = trailers.get("grpc-status")
        if status is None or not status.isdigit():
            raise Broken("the answer carried no grpc-status")
        if int(status) != 0:
            message = unquote(trailers.get("grpc-message", ""))
            raw = trailers.get("grpc-status-details-bin")
            details = base64.b64decode(raw + "=" * (-len(raw) % 4)) if raw else None
            raise CallFailed(int(status), message, details)
        if len(data) < 5 or data[0] != 0:
            raise Broken("the answer is not one uncompressed gRPC message")
        size = int.from_bytes(data[1:5], "big")
        if len(data) != 5 + size:
            raise Broken("the answer's length prefix does not match its bytes")
        return data[5:]


def env_timeout(default: float) -> float | None:
    """``SKIFT_TIMEOUT`` as seconds, the default without it; None when it is not a plain
    positive number (the full client words that error)."""
    raw = os.environ.get("SKIFT_TIMEOUT", "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value > 0 and value == value and value != float("inf") else None
