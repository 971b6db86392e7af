"""HTTP/2 connections that send what one turn of the event loop writes in one syscall.

grpclib hands the socket each frame as h2 makes it: a unary call is the
request's HEADERS then its DATA from the client, and the response's HEADERS,
DATA and trailing HEADERS from the server, each its own ``send()``. Every
send can wake the process at the other end, which reads a partial call and
sleeps again; on a busy machine each of those wake-ups costs more than the
frame. Here a connection's writes are gathered and sent together once the
current turn of the event loop is done (``loop.call_soon``), so a unary call
is one write each way. Nothing is reordered or held past that turn: a write
made while the call waits on something else (the database) goes out as soon
as the turn that made it ends, and closing sends what is gathered first.

:class:`GuardedH2Protocol` adds the limits nginx and Envoy put on a connection
(:class:`ConnectionLimits`): streams open at once, a rate limit on streams the client
resets (GOAWAY past it: the CVE-2023-44487 "rapid reset"), timeouts for the
preface, for a header block and for an idle connection, and a largest header
list answered with a status rather than a dropped connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import logging
import time
from collections.abc import Hashable
from typing import Any, Final

import attrs
from grpclib.client import Channel
from grpclib.protocol import H2Protocol
from h2.connection import ConnectionState
from h2.errors import ErrorCodes
from h2.events import RemoteSettingsChanged, RequestReceived, StreamReset, WindowUpdated
from h2.exceptions import ProtocolError
from h2.settings import SettingCodes
from h2.stream import StreamClosedBy

from ._fast import FastConnection, FastRoutes
from ._h2_frames import indexed_only, quiet_receive, refuse_streams_past, take_data, take_headers
from ._hpack_blocks import remember_blocks
from ._turns import TurnShare

_log = logging.getLogger("skift_server")


class GatheringTransport:
    """A transport whose writes within one event-loop turn reach the socket as one."""

    __slots__ = ("_loop", "_parts", "_transport")

    def __init__(self, transport: Any) -> None:
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._parts:
            self._loop.call_soon(self.flush)
        self._parts.append(data)

    def flush(self) -> None:
        """Send what was gathered (called once the turn that wrote it ends)."""
        parts = self._parts
        if not parts:
            return
        self._parts = []
        self._transport.write(parts[0] if len(parts) == 1 else b"".join(parts))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._parts = []
        self._transport.abort()

    def is_closing(self) -> bool:  # asked several times a call: not through __getattr__
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GatheringH2Protocol(H2Protocol):
    """grpclib's HTTP/2 protocol over a :class:`GatheringTransport`."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(GatheringTransport(transport))  # pyright: ignore[reportArgumentType]


class GatheringChannel(Channel):
    """grpclib's channel, its connection gathering writes (:class:`GatheringH2Protocol`)."""

    def _protocol_factory(self) -> H2Protocol:
        proto = super()._protocol_factory()
        proto.__class__ = GatheringH2Protocol
        return proto


# ------------------------------------------------------------------ limits

_GRPC_RESOURCE_EXHAUSTED: Final = "8"
_LINGER: Final = 1.0
"""Seconds a connection given GOAWAY stays open, reading and dropping, before it closes."""
_PREFACE_BYTES: Final = 24
"""The client's connection preface (``PRI * HTTP/2.0...``), before its first frame."""
_HPACK_HARD_CAP: Final = 1024 * 1024
"""A header block decoding past this is a connection error (an HPACK bomb); below it
and above :attr:`ConnectionLimits.max_header_list_bytes` the request is answered with a status."""


@attrs.frozen(kw_only=True)
class ConnectionLimits:
    """What one connection may ask of the server (nginx's and Envoy's usual limits): the
    gRPC listeners' HTTP/2, and (the timeouts, header size and connections) the HTTP
    listener's HTTP/1.1.

    Each is a ``skift serve`` flag (docs/operations-server.md lists them).
    """

    max_concurrent_streams: int = 100
    """Streams open at once on one connection (advertised, and enforced before the
    client acknowledges it: a stream past it is refused with REFUSED_STREAM)."""
    reset_burst: int = 200
    """Streams the client may reset in a burst (the CVE-2023-44487 "rapid reset")."""
    resets_per_second: float = 50.0
    """How fast that allowance refills; past it the connection gets GOAWAY
    (ENHANCE_YOUR_CALM) and is closed."""
    preface_timeout: float = 10.0
    """From accepting a connection (after TLS) to the client's preface and SETTINGS."""
    header_timeout: float = 10.0
    """From a request's first header bytes to its whole header block."""
    idle_timeout: float = 300.0
    """A connection with no stream open this long gets GOAWAY and is closed (clients
    reconnect by themselves)."""
    max_header_list_bytes: int = 32 * 1024
    """A request's headers (names, values and 32 bytes each, as HTTP/2 counts them);
    past it the request is answered RESOURCE_EXHAUSTED, the connection kept."""
    frames_per_turn: int = 16
    """HTTP/2 frames of one connection handled in one turn of the event loop. A read holding
    more (a socket read is up to 256 KiB: thousands of small frames) is handled over several
    turns, the connection's reading paused meanwhile, so the other connections are served
    in between."""
    busy_frames_per_turn: int = 4
    """HTTP/2 frames that the busy connections (those with frames waiting, or more than
    :data:`LIGHT_STREAMS` streams open) share in one turn of the event loop, taken in turn
    (``frames_per_turn`` each at most); a connection with few streams open and nothing
    waiting is served as its frames arrive, if its party is light too (``_turns``: the
    connections of one identity are light together, not each). So a flood over many
    connections costs each turn of the loop a few requests' work, and a caller with one
    call in flight waits for those few, not for the flood."""
    unauthenticated_body_bytes: int = 64 * 1024
    """Request bytes a client may send on a stream before the server has authenticated
    it (the stream's initial flow-control window); then the server's limits apply."""
    tls_handshake_timeout: float = 10.0
    """From accepting a TLS connection to the end of its handshake."""
    http_max_connections: int = 1000
    """Connections (and requests in flight) the HTTP listener serves at once; past it,
    503 (uvicorn's ``limit_concurrency``)."""
    http_keep_alive: float = 5.0
    """An idle HTTP/1.1 keep-alive connection is closed after this (uvicorn's)."""


DEFAULT_CONNECTION_LIMITS: Final = ConnectionLimits()

LIGHT_STREAMS: Final = 4
"""A connection with at most this many streams open and no frames waiting is light: its
frames are handled as they arrive (``frames_per_turn`` at a time, shared with the other
connections of its party, ``_turns``)."""


class _State(enum.Enum):
    PREFACE = "preface"
    HEADERS = "headers"
    IDLE = "idle"
    BUSY = "busy"


class GuardedH2Protocol(GatheringH2Protocol):
    """grpclib's HTTP/2 protocol (gathering writes) with :class:`ConnectionLimits` applied.

    A timer per connection checks, about once a second, which state it is in (waiting
    for the preface, inside a header block, idle, busy) and since when; a state held
    past its timeout closes the connection. Streams are admitted here before grpclib
    sees them: too many open, or headers too large, are answered without a handler.
    """

    limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS
    share: TurnShare | None = None
    """The listener's (``GuardedServer``); None: one of the connection's own."""
    fast: FastRoutes | None = None
    """The unary RPCs answered without grpclib (``_fast``); None: all go to grpclib."""
    _fast: FastConnection | None
    _state: _State
    _since: float
    _tokens: float
    _refilled: float
    _timer: asyncio.TimerHandle | None
    _preface_done: bool
    _closing: bool
    _skip: int
    _head: bytearray
    _backlog: memoryview | None
    _queued: bool
    _party: Hashable | None
    """The party (``_turns``) this connection was counted waiting for, while it waits."""
    _seen: list[tuple[int, int, int, int, int, bool]]
    _block_open: bool

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        h2c = self.connection._connection  # pyright: ignore[reportPrivateUsage]
        h2c.decoder.max_header_list_size = max(_HPACK_HARD_CAP, self.limits.max_header_list_bytes)
        remember_blocks(h2c.decoder)
        quiet_receive(h2c)
        h2c.update_settings(
            {SettingCodes.MAX_CONCURRENT_STREAMS: self.limits.max_concurrent_streams}
        )
        refuse_streams_past(h2c, self.limits.max_concurrent_streams)
        self.connection.flush()
        now = time.monotonic()
        self._state, self._since = _State.PREFACE, now
        self._tokens, self._refilled = float(self.limits.reset_burst), now
        self._preface_done = False
        self._closing = False
        self._timer = None
        self._skip, self._head = _PREFACE_BYTES, bytearray()
        self._backlog, self._queued, self._party = None, False, None
        self._seen = []
        self._block_open = False
        if self.share is None:
            self.share = TurnShare(self.limits.busy_frames_per_turn)
        self._fast = (
            FastConnection(self.fast, self.connection, self.processor.handler)
            if self.fast is not None
            else None
        )
        self._schedule()

    def _open_streams(self) -> int:
        """Calls open on this connection: grpclib's streams and the fast path's."""
        fast = self._fast
        return len(self.processor.streams) + (len(fast.calls) if fast is not None else 0)

    def _schedule(self) -> None:
        lim = self.limits
        tick = min(1.0, lim.preface_timeout / 2, lim.header_timeout / 2, lim.idle_timeout / 2)
        self._timer = asyncio.get_running_loop().call_later(max(tick, 0.01), self._check)

    def _current(self) -> _State:
        if not self._preface_done:
            return _State.PREFACE
        h2c = self.connection._connection  # pyright: ignore[reportPrivateUsage]
        incoming: Any = h2c.incoming_buffer
        if getattr(incoming, "_headers_buffer", None):  # a header block without END_HEADERS
            return _State.HEADERS
        if self._open_streams():
            return _State.BUSY
        if getattr(incoming, "_data", None):  # part of a frame, no stream open: a request coming
            return _State.HEADERS
        return _State.IDLE

    def _track(self, requests: bool = False) -> None:
        """Note the connection's state and since when; ``requests``: a request's header
        block just completed, so a header block still open is a new one (its clock starts
        now: a busy connection whose reads end inside a frame is not a slow one)."""
        state = self._current()
        if state is not self._state or (requests and state is _State.HEADERS):
            self._state, self._since = state, time.monotonic()

    def _check(self) -> None:
        self._timer = None
        if self._closing or self.connection.is_closing():
            return
        if self._fast is not None:
            self._fast.arm_deadlines()  # at least once a second: before any of those deadlines
        self._track()
        lim = self.limits
        timeout = {
            _State.PREFACE: lim.preface_timeout,
            _State.HEADERS: lim.header_timeout,
            _State.IDLE: lim.idle_timeout,
            _State.BUSY: None,
        }[self._state]
        if timeout is not None and time.monotonic() - self._since >= timeout:
            _log.debug("closing a connection: %s timeout", self._state.value)
            if self._state is _State.PREFACE:  # no HTTP/2 yet: nothing to say, nothing to drain
                self.processor.close("preface timeout")
                return
            code = ErrorCodes.NO_ERROR if self._state is _State.IDLE else ErrorCodes.PROTOCOL_ERROR
            self._goaway(code, f"{self._state.value} timeout")
            return
        self._schedule()

    def _goaway(self, code: ErrorCodes, why: str) -> None:
        """Send GOAWAY with ``code``, cancel the connection's calls, and close it after a
        moment in which what the client still sends is read and dropped (closing a socket
        with unread input resets it, and the client may never see the GOAWAY)."""
        h2c = self.connection._connection  # pyright: ignore[reportPrivateUsage]
        with contextlib.suppress(Exception):
            h2c.close_connection(error_code=code)
        self._linger(why)

    def _linger(self, why: str) -> None:
        """Send what h2 has queued (its GOAWAY), then close as :meth:`_goaway` says."""
        with contextlib.suppress(Exception):
            self.connection.flush()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._closing = True
        if self._queued:  # frames still waiting for their turn: dropped, reading on
            self._unqueue()
            self._backlog = None
            self._pause(False)
        self.processor.handler.close()
        transport: Any = self.connection._transport  # pyright: ignore[reportPrivateUsage]
        with contextlib.suppress(Exception):
            transport.flush()
            raw: Any = transport._transport  # pyright: ignore[reportPrivateUsage]
            if raw.can_write_eof():
                raw.write_eof()
        asyncio.get_running_loop().call_later(_LINGER, self.processor.close, why)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return  # after GOAWAY: read and dropped until the connection closes
        if self._backlog is not None:  # arrived while paused (TLS hands over what it holds)
            self._backlog = memoryview(bytes(self._backlog) + data)
            return
        self._take(memoryview(data), fresh=True)

    def _take(self, data: memoryview, *, fresh: bool = False) -> None:
        """Handle what this turn allows of ``data`` now (``frames_per_turn`` frames for a
        light connection; for a busy one at most what the listener's busy connections have
        left this turn), the rest in a later turn (reading paused until then)."""
        share = self.share
        assert share is not None
        per_turn = max(1, self.limits.frames_per_turn)
        fast = self._fast
        party = fast.party if fast is not None else None
        allowed = 0
        if fresh and self._open_streams() <= LIGHT_STREAMS:  # light, if its party is (_turns)
            allowed = min(per_turn, share.light_left(party, per_turn))
        light = allowed > 0
        if not light:
            allowed = min(per_turn, share.left)
        cut, frames = self._cut(data, allowed) if allowed > 0 else (0, 0)
        if light:
            share.spend_light(party, frames)
        elif frames:
            share.spend(frames)
        if cut < len(data):
            self._backlog = data[cut:]
            if not self._queued:
                self._queued = True
                self._party = party
                share.party_waits(party, True)
                self._pause(True)
            share.wait(self)
            data = data[:cut]
        if cut:
            self._handle(bytes(data))

    def resume_turn(self) -> None:
        """This connection's turn (``TurnShare``): handle what it may of its waiting frames."""
        if not self._queued:
            return  # it stopped waiting (closed, or lingering after GOAWAY)
        self._unqueue()
        data, self._backlog = self._backlog, None
        if self._closing or data is None:
            return
        self._take(data)
        if not self._queued and not self._closing:
            self._pause(False)

    def _unqueue(self) -> None:
        self._queued = False
        share = self.share
        if share is not None:
            share.party_waits(self._party, False)

    def _pause(self, paused: bool) -> None:
        transport: Any = self.connection._transport  # pyright: ignore[reportPrivateUsage]
        with contextlib.suppress(Exception):  # closing already: nothing to pause
            if paused:
                transport.pause_reading()
            else:
                transport.resume_reading()

    def _cut(self, data: memoryview, budget: int) -> tuple[int, int]:
        """How many bytes of ``data`` hold at most ``budget`` frames (their headers read
        here, 9 bytes each: the length says where the next one starts), and how many
        frames begin in them. Each frame whose 9-byte header lies whole in ``data`` is
        noted in :attr:`_seen` (where it starts, its type, flags, stream and length) for
        :meth:`_handle`."""
        i, n, frames = 0, len(data), 0
        seen = self._seen
        seen.clear()
        while i < n:
            if self._skip:
                step = min(self._skip, n - i)
                self._skip -= step
                i += step
                continue
            if not self._head:
                if frames >= budget:
                    return i, frames
                frames += 1
                if i + 9 <= n:  # the whole header here: read at once
                    head = data[i : i + 9]
                    length = int.from_bytes(head[:3], "big")
                    sid = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
                    seen.append((i, head[3], head[4], sid, length, self._block_open))
                    self._block_open = _block_open_after(head[3], head[4], self._block_open)
                    self._skip = length
                    i += 9
                    continue
            step = min(9 - len(self._head), n - i)
            self._head += data[i : i + step]
            i += step
            if len(self._head) == 9:
                head = bytes(self._head)
                self._skip = int.from_bytes(head[:3], "big")
                self._block_open = _block_open_after(head[3], head[4], self._block_open)
                self._head.clear()
        return n, frames

    def _handle(self, data: bytes) -> None:
        """Hand ``data`` (what :meth:`_cut` just read) to h2, except a request the client
        resets in the very next frame (the CVE-2023-44487 pattern): that pair is taken
        here (:meth:`_reset_at_once`), never reaching h2's stream machinery or grpclib."""
        seen = self._seen
        if not self._preface_done or not seen:
            self._feed(data)
            return
        fed = 0
        n = len(data)
        k = 0
        pending: list[Any] = []  # events of what was taken so far, handled together
        fast = self._fast
        reset = False  # a request reset in its next frame was taken (_reset_at_once)
        while k < len(seen):
            start, ftype, flags, sid, length, block_open = seen[k]
            end = start + 9 + length
            nxt = seen[k + 1] if k + 1 < len(seen) else None
            if (
                nxt is not None
                and ftype == _HEADERS
                and flags & ~_END_FLAGS == 0
                and flags & _END_HEADERS
                and not block_open
                and nxt[0] == end
                and nxt[1] == _RST_STREAM
                and nxt[3] == sid
                and nxt[4] == 4
                and end + 13 <= n
            ):
                if start > fed:
                    got = self._parse(data[fed:start])
                    if got is None:
                        return
                    pending += got
                if pending:
                    pending, taken = [], pending
                    self._dispatch(taken)
                if self._closing or self.connection.is_closing():
                    return
                reset = True
                if not self._reset_at_once(sid, data[start + 9 : end]):
                    self._feed(data[start : end + 13])  # h2 decides (and answers)
                if self._closing or self.connection.is_closing():
                    return
                fed = end + 13
                k += 2
                continue
            if fast is not None and ftype in (_HEADERS, _DATA) and not block_open and end <= n:
                if start > fed:  # h2 parses what comes before (handled with the rest)
                    got = self._parse(data[fed:start])
                    if got is None:
                        return
                    pending += got
                    fed = start
                events = self._take_frame(data[start + 9 : end], ftype, flags, sid)
                if events is None:
                    return  # a protocol error: the connection lingers
                if events:
                    pending += events
                    fed = end
                    k += 1
                    continue
            k += 1
        if fed < n:
            got = self._parse(data[fed:])
            if got is None:
                return
            pending += got
        if pending or fed < n:
            self._dispatch(pending)
        if reset and not self._closing:
            self.connection.flush()
            self._track(True)

    def _take_frame(self, payload: bytes, ftype: int, flags: int, sid: int) -> list[Any] | None:
        """A HEADERS or DATA frame (its ``payload``) taken without h2's frame parsing when
        it is a unary request's (``_h2_frames``), everything before it parsed already: the
        frame's events, [] when h2 is to parse it, None after a protocol error (the
        connection lingers, with the GOAWAY h2 would send)."""
        h2c = self.connection._connection  # pyright: ignore[reportPrivateUsage]
        try:
            if ftype == _HEADERS:
                events = take_headers(h2c, sid, flags, payload, self.limits.max_concurrent_streams)
            else:
                events = take_data(h2c, sid, flags, payload)
        except ProtocolError as e:  # as h2's receive_data: GOAWAY with the error's code
            h2c._terminate_connection(e.error_code)  # pyright: ignore[reportPrivateUsage]
            _log.debug("HTTP/2 protocol error", exc_info=True)
            self._linger("Protocol error")
            return None
        return events or []

    def _reset_at_once(self, sid: int, block: bytes) -> bool:
        """A request (stream ``sid``, header block ``block``) reset by the client in its
        next frame, taken without h2's stream machinery: its header block decoded (kept
        in step with the client's HPACK state; a block of indexed fields alone changes
        nothing and is only checked), the stream noted closed, the reset counted. False:
        not a new stream in order on an open connection; h2 is to handle it."""
        h2c = self.connection._connection  # pyright: ignore[reportPrivateUsage]
        incoming: Any = h2c.incoming_buffer
        if (
            sid % 2 == 0
            or sid <= h2c.highest_inbound_stream_id
            or sid in h2c.streams
            or h2c.state_machine.state is ConnectionState.CLOSED
            or getattr(incoming, "_data", None)
            or getattr(incoming, "_headers_buffer", None)
        ):
            return False
        decoder = h2c.decoder
        if not indexed_only(block, len(decoder.header_table.dynamic_entries)):
            try:
                decoder.decode(block, raw=True)
            except Exception:  # HPACK's state is lost: a connection error, as h2 makes it
                _log.debug("HTTP/2 header block not decodable", exc_info=True)
                self._goaway(ErrorCodes.COMPRESSION_ERROR, "header block not decodable")
                return True
        h2c.highest_inbound_stream_id = sid
        h2c._closed_streams[sid] = StreamClosedBy.RECV_RST_STREAM  # pyright: ignore[reportPrivateUsage]
        if not self._may_reset():
            _log.warning(
                "closing a connection that resets streams too fast (rapid reset)",
                extra={"fields": {"peer": _peer(self.connection)}},
            )
            self._goaway(ErrorCodes.ENHANCE_YOUR_CALM, "too many stream resets")
        return True

    def _feed(self, data: bytes | memoryview) -> None:
        events = self._parse(data)
        if events is not None:
            self._dispatch(events)

    def _parse(self, data: bytes | memoryview) -> list[Any] | None:
        """h2's events for ``data``; None after a protocol error (the connection lingers)."""
        try:
            return self.connection.feed(bytes(data))
        except ProtocolError:
            _log.debug("HTTP/2 protocol error", exc_info=True)
            self._linger("Protocol error")  # with the GOAWAY h2 prepared
            return None

    def _dispatch(self, events: list[Any]) -> None:
        """Hand the events of what was just received to the fast path and grpclib."""
        self.connection.flush()
        # A request the client reset in this same batch never reaches grpclib: no stream, no
        # handler (the CVE-2023-44487 pattern costs what parsing it costs), its reset counted.
        reset = {e.stream_id for e in events if isinstance(e, StreamReset) and e.remote_reset}
        dropped: set[int] = set()
        requests = False
        fast = self._fast
        for event in events:
            if isinstance(event, RemoteSettingsChanged):
                self._preface_done = True
                if fast is not None:
                    fast.windows()
            elif isinstance(event, RequestReceived):
                requests = True
                if event.stream_id in reset:
                    dropped.add(event.stream_id)
                    continue
                if not self._admit(event):
                    continue
                if fast is not None and fast.request(event):
                    continue
            elif isinstance(event, StreamReset) and event.remote_reset:
                if not self._may_reset():
                    _log.warning(
                        "closing a connection that resets streams too fast (rapid reset)",
                        extra={"fields": {"peer": _peer(self.connection)}},
                    )
                    self._goaway(ErrorCodes.ENHANCE_YOUR_CALM, "too many stream resets")
                    return
                if event.stream_id in dropped:
                    continue
            if fast is not None and fast.calls:
                if fast.event(event):
                    continue
                if isinstance(event, WindowUpdated) and event.stream_id == 0:
                    fast.windows()
            self.processor.process(event)
            if self.connection.is_closing():
                return
        self.connection.flush()
        self._track(requests)

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._queued:
            self._unqueue()
        self._backlog = None
        if self._fast is not None:
            self._fast.cancel_all()
        super().connection_lost(exc)

    def _may_reset(self) -> bool:
        """Spend one reset from the connection's allowance (a token bucket)."""
        lim = self.limits
        now = time.monotonic()
        self._tokens = min(
            float(lim.reset_burst), self._tokens + (now - self._refilled) * lim.resets_per_second
        )
        self._refilled = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def _admit(self, event: RequestReceived) -> bool:
        """Whether the request goes on to grpclib; if not, it was answered here."""
        sid = event.stream_id
        h2c = self.connection._connection  # pyright: ignore[reportPrivateUsage]
        lim = self.limits
        if self._open_streams() >= lim.max_concurrent_streams:
            with contextlib.suppress(Exception):
                h2c.reset_stream(sid, error_code=ErrorCodes.REFUSED_STREAM)
            return False
        headers = event.headers or ()
        size = 32 * len(headers) + sum(map(len, itertools.chain.from_iterable(headers)))
        if size > lim.max_header_list_bytes:
            message = (
                f"the request headers are {size} bytes; this server takes at most "
                f"{lim.max_header_list_bytes} (max_header_list_bytes)"
            )
            with contextlib.suppress(Exception):
                h2c.send_headers(
                    sid,
                    [
                        (":status", "200"),
                        ("content-type", "application/grpc"),
                        ("grpc-status", _GRPC_RESOURCE_EXHAUSTED),
                        ("grpc-message", message),
                    ],
                    end_stream=True,
                )
                if h2c.streams.get(sid) is not None and not h2c.streams[sid].closed:
                    h2c.reset_stream(sid, error_code=ErrorCodes.NO_ERROR)
            return False
        return True


_DATA: Final = 0x0
_HEADERS: Final = 0x1
_RST_STREAM: Final = 0x3
_CONTINUATION: Final = 0x9
_END_STREAM: Final = 0x1
_END_HEADERS: Final = 0x4
_END_FLAGS: Final = _END_STREAM | _END_HEADERS


def _block_open_after(ftype: int, flags: int, was_open: bool) -> bool:
    """Whether a header block is still open (CONTINUATION frames to come) after a frame."""
    if ftype in (_HEADERS, _CONTINUATION):
        return not flags & _END_HEADERS
    return was_open


def _peer(connection: Any) -> str:
    with contextlib.suppress(Exception):
        addr = connection.get_peer().addr()
        if addr:
            return f"{addr[0]}:{addr[1]}"
    return "unix"


def open_window(stream: Any, size: int) -> None:
    """Let the client send up to ``size`` more bytes on this call's stream (after it is
    authenticated: until then the stream's window is
    :attr:`ConnectionLimits.unauthenticated_body_bytes`). ``stream`` is grpclib's server stream."""
    raw: Any = stream._stream  # pyright: ignore[reportPrivateUsage]
    h2c: Any = raw._h2_connection  # pyright: ignore[reportPrivateUsage]
    sid = raw.id
    with contextlib.suppress(Exception):  # the stream may be closed already: nothing to open
        state = h2c.streams.get(sid)
        if state is None or state.closed:
            return
        have = state.inbound_flow_control_window
        if size > have:
            h2c.increment_flow_control_window(min(size - have, 2**31 - 1 - have), stream_id=sid)
            raw.connection.flush()
