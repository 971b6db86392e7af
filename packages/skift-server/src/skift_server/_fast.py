"""The unary fast path: skift's unary RPCs answered from the HTTP/2 layer, without grpclib.

grpclib serves a unary call through a stream object, a task-safe buffer, a
metadata multidict, a deadline wrapper and h2's header encoder (validation,
HPACK, frame objects) for the answer's HEADERS, DATA and trailers: on a
GetNode of a few milliseconds that is about a millisecond of the server's CPU.
Here ``_h2.GuardedH2Protocol`` hands a request for one of
``SkiftService.unary_routes`` to a :class:`FastCall` as soon as h2 has parsed its
headers, and the call runs the very same :meth:`SkiftService.unary` (the caller
from the headers before a byte of the body is decoded, the administrative
check, the size limits, the one-message rule, the handler, the metrics) with
the request's bytes taken straight from h2's events and the answer written as
three prebuilt frames in one write.

What it keeps from grpclib's behaviour, on the wire:

- the answer's headers (``:status 200``, ``content-type: application/grpc+proto``)
  and trailers (``grpc-status``, ``grpc-message``, ``grpc-status-details-bin``);
  an error before any message is a trailers-only answer, then RST_STREAM
  (NO_ERROR) if the client is still sending;
- ``grpc-timeout``: past it the call is cancelled and answered DEADLINE_EXCEEDED (a deadline
  more than :data:`ARM_AT_ONCE` seconds off is armed by the connection's next check);
- RST_STREAM from the client, GOAWAY, a connection lost or the server closing:
  the call is cancelled (its transaction rolled back) and nothing more is written;
- flow control: the stream's window stays at ``unauthenticated_body_bytes``
  until the caller is authenticated and the message's length checked; an answer
  larger than the client's window, a connection whose writes are paused, or an
  HPACK table size change to announce go through h2's own send path.

A request that is not exactly a gRPC unary call of this service (another method,
content type, no ``te: trailers``, a malformed ``grpc-timeout``, a closing
connection) goes to grpclib as before, which answers it as it always has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from grpclib.const import Status
from grpclib.exceptions import GRPCError
from grpclib.metadata import decode_bin_value, decode_timeout, encode_bin_value, encode_grpc_message
from h2.connection import ConnectionState
from h2.errors import ErrorCodes
from h2.events import DataReceived, RequestReceived, StreamEnded, StreamReset, WindowUpdated
from h2.stream import StreamInputs

import skift

from ._auth import uid_of
from ._client_h2 import ANSWER_HEADERS, ANSWER_OK, _literal  # pyright: ignore[reportPrivateUsage]
from ._errors import ErrorDetailsCodec, invalid, to_grpc
from ._h2_frames import answered
from ._unary import DATA, HEADERS, frame
from ._wire import INLINE_BYTES, TooExpensive, WireError, decode, decode_off_loop, first_field
from ._wirecodec import Encoded

if TYPE_CHECKING:
    import h2.connection

    from ._auth import Authenticator
    from ._handlers import Handler
    from ._metrics import Metrics


class SkiftService(Protocol):
    """What the fast path uses of ``_service.SkiftService`` (which imports this module)."""

    auth: Authenticator
    max_message_bytes: int
    draining: bool
    metrics: Metrics | None

    def accounted(self, name: str, work: Awaitable[None], call: Any = None) -> Awaitable[None]: ...

    def unary(self, name: str, fn: Handler, call: Any) -> Awaitable[None]: ...

    def unary_routes(self) -> dict[str, tuple[str, Handler, type[Any]]]: ...


_log = logging.getLogger("skift_server")

CONTENT_TYPE: Final = "application/grpc+proto"
"""The answer's content type, as grpclib writes it."""
_CONTENT_TYPES: Final = frozenset({"application/grpc", CONTENT_TYPE})
_END_HEADERS: Final = 0x4
_END_STREAM: Final = 0x1
_RESPONSE: Final = ANSWER_HEADERS
"""``:status 200`` (the static table's 8th entry) and the content type, never indexed: the
same bytes on every answer, whatever the encoder's table holds (the remote client reads
them without HPACK's decoder)."""
_OK: Final = ANSWER_OK
_SPECIAL: Final = frozenset({"te", "content-type", "user-agent"})
"""Headers grpclib's metadata leaves out (with the pseudo-headers and ``grpc-*``)."""
_LONG_POLLS: Final = frozenset(
    rpc for rpc, op in skift.OPERATIONS_BY_RPC.items() if op.long_poll and op.rpc is not None
)
"""RPCs that may wait (ClaimNext, WatchEvents): their request is read whole before a task
is made for it, and a long poll past its principal's cap answered at once
(:meth:`FastCall.refuse_early`)."""
_EARLY_BYTES: Final = 4096
"""A long poll's request larger than this gets its task as its bytes come (the request of a
flood's long poll is a few dozen bytes)."""
_WAITS_AT_MOST: Final = 256
"""Long polls' requests whose ``wait`` :meth:`FastRoutes.wait_of` keeps (then it starts over)."""
_REFUSALS_AT_MOST: Final = 1024
ARM_AT_ONCE: Final = 2.0
"""A call's deadline at most this far off gets its timer as the call begins; a later one
(the remote client's 30 s) when the connection's next check runs (``_h2``: at least once a
second), for the same moment. A call of a few milliseconds is over by then and never puts
a timer on the loop's heap (every timer pushed and cancelled costs the loop's heap a few
dozen comparisons in Python per call)."""


class FastRoutes:
    """The unary RPCs one listener answers on the fast path, and what answers them."""

    __slots__ = ("_refusals", "_waits", "codec", "routes", "service")

    def __init__(self, service: SkiftService, codec: ErrorDetailsCodec) -> None:
        self.service = service
        self.codec = codec
        self.routes = service.unary_routes()
        self._refusals: dict[skift.LimitExceeded, bytes] = {}
        self._waits: dict[tuple[type[Any], bytes], timedelta | None] = {}

    def wait_of(self, request_type: type[Any], message: bytes) -> timedelta | None:
        """The ``wait`` of a long poll's request (``message``: its bytes, at most
        :data:`_EARLY_BYTES`), decoded once for the same bytes (a flood repeats one request
        a thousand times); raises what decoding raises."""
        key = (request_type, message)
        if key in self._waits:
            return self._waits[key]
        wait: timedelta | None = decode(request_type, message).wait
        if len(self._waits) >= _WAITS_AT_MOST:
            self._waits.clear()
        self._waits[key] = wait
        return wait

    def refusal_block(self, exc: skift.LimitExceeded) -> bytes:
        """The header block of the trailers-only answer refusing a call with ``exc`` (the
        headers :meth:`FastCall._fail` sends, each a literal never indexed: the same bytes
        whatever the connection's HPACK table holds), made once per refusal object."""
        block = self._refusals.get(exc)
        if block is None:
            err = to_grpc(exc)
            parts = [_RESPONSE, _literal("grpc-status", str(err.status.value))]
            if err.message is not None:
                parts.append(_literal("grpc-message", encode_grpc_message(err.message)))
            if err.details is not None:
                raw = self.codec.encode(err.status, err.message, err.details)
                parts.append(
                    _literal("grpc-status-details-bin", encode_bin_value(raw).decode("ascii"))
                )
            block = b"".join(parts)
            if len(self._refusals) >= _REFUSALS_AT_MOST:
                self._refusals.clear()
            self._refusals[exc] = block
        return block


class FastConnection:
    """One HTTP/2 connection's calls on the fast path (``_h2.GuardedH2Protocol`` hands it
    the requests and the events of their streams)."""

    __slots__ = ("_conn", "_handler", "_uid", "calls", "fast", "h2c", "party")

    def __init__(self, fast: FastRoutes, conn: Any, handler: Any) -> None:
        """``conn``: grpclib's ``protocol.Connection``; ``handler``: grpclib's server
        ``Handler`` of the connection, which holds the calls' tasks so closing the
        connection or the server cancels them and waits for them, as it does its own."""
        self.fast = fast
        self._conn = conn
        self._handler = handler
        self.h2c: h2.connection.H2Connection = conn._connection
        self.calls: dict[int, FastCall] = {}
        self._uid: int | bool | None = False
        self.party: tuple[str, str] | None = None
        """The identity this connection's calls present, once one the server authenticated
        before (``_auth``'s ``remembered``): the party whose connections share their turns
        (``_turns``). None until then."""

    def request(self, event: RequestReceived) -> bool:
        """Whether the fast path took the request (else it goes to grpclib)."""
        if self._handler.closing or self.closing():
            return False
        call = start(self, self.fast, event)
        if call is None:
            return False
        self.calls[event.stream_id] = call
        if self.party is None:
            self.party = self.fast.service.auth.remembered(call.metadata, self.peer_uid())
        return True

    def event(self, event: Any) -> bool:
        """Hand ``event`` to the fast call of its stream; whether it had one."""
        call = self.calls.get(getattr(event, "stream_id", 0))
        if call is None:
            return False
        kind = event.__class__
        if kind is DataReceived:
            call.data(event.data, event.flow_controlled_length)
            if call.task is None and len(call.body) > _EARLY_BYTES:
                call.begin()
        elif kind is StreamEnded:
            call.end()
            if call.task is None and not call.stopped and not call.refuse_early():
                call.begin()
        elif kind is StreamReset:
            call.cancel()
        elif kind is WindowUpdated:
            call.window()
        return True  # anything else on the stream (trailers, priority) means nothing here

    def arm_deadlines(self) -> None:
        """The timers of the calls whose deadline was left for later (:data:`ARM_AT_ONCE`):
        the connection's periodic check, which runs before any such deadline comes."""
        loop: asyncio.AbstractEventLoop | None = None
        for call in self.calls.values():
            if call.due is not None and call.timer is None and call.task is not None:
                if not call.task.done():
                    loop = loop or asyncio.get_running_loop()
                    call.timer = loop.call_at(call.due, call._expire)  # pyright: ignore[reportPrivateUsage]
                call.due = None

    def windows(self) -> None:
        """The connection's window or the client's settings changed: blocked answers go on."""
        for call in self.calls.values():
            call.window()

    def cancel_all(self) -> None:
        for call in list(self.calls.values()):
            call.cancel()

    def done(self, call: FastCall) -> None:
        self.calls.pop(call.sid, None)
        self._handler._tasks.pop(call, None)

    def track(self, call: FastCall, task: asyncio.Task[None]) -> None:
        """The call's task, held by grpclib's handler (closing cancels and awaits it)."""
        self._handler._tasks[call] = task

    def write(self, data: bytes) -> None:
        self._conn._transport.write(data)

    def flush(self) -> None:
        if not self.closing():
            self._conn.flush()

    def writable(self) -> bool:
        return self._conn.write_ready.is_set()

    async def writable_wait(self) -> None:
        await self._conn.write_ready.wait()

    def closing(self) -> bool:
        return self._conn.is_closing()

    def peer_uid(self) -> int | None:
        """The unix peer's uid (None on TCP), asked once: a connection's peer never changes."""
        if self._uid is False:
            self._uid = uid_of(self._conn._transport)
        uid = self._uid
        return None if isinstance(uid, bool) else uid


def start(conn: FastConnection, fast: FastRoutes, event: RequestReceived) -> FastCall | None:
    """A :class:`FastCall` for ``event`` when it is a plain unary call of the service, else
    None (grpclib takes it)."""
    method = path = content_type = te = timeout = None
    metadata: dict[str, Any] = {}
    headers: list[tuple[str, str]] = cast(Any, event.headers) or []  # str: grpclib's h2 config
    for key, value in headers:
        if key[0] == ":":
            if key == ":method":
                method = value
            elif key == ":path":
                path = value
        elif key == "content-type":
            content_type = value
        elif key == "te":
            te = value
        elif key == "grpc-timeout":
            if timeout is not None:
                return None
            timeout = value
        elif key.startswith("grpc-") or key in _SPECIAL:
            continue
        elif key not in metadata:
            if key.endswith("-bin"):
                try:
                    metadata[key] = decode_bin_value(value.encode("ascii"))
                except ValueError:
                    return None
            else:
                metadata[key] = value
    route = fast.routes.get(path) if path else None
    if route is None or method != "POST" or te != "trailers" or content_type not in _CONTENT_TYPES:
        return None
    seconds: float | None = None
    if timeout is not None:
        try:
            seconds = decode_timeout(timeout)
        except ValueError:
            return None
    call = FastCall(conn, fast, event.stream_id, route, metadata, seconds)
    if call.name not in _LONG_POLLS:
        call.begin()
    # else: its task once its request is read (FastConnection.event), unless refused at once
    return call


class FastCall:
    """One unary call on the fast path (see the module's docstring)."""

    __slots__ = (
        "body",
        "conn",
        "due",
        "ended",
        "expired",
        "fast",
        "fn",
        "metadata",
        "name",
        "reading",
        "request",
        "request_type",
        "seconds",
        "sid",
        "stopped",
        "task",
        "timer",
        "unacked",
        "waiter",
    )

    def __init__(
        self,
        conn: FastConnection,
        fast: FastRoutes,
        sid: int,
        route: tuple[str, Handler, type[Any]],
        metadata: dict[str, Any],
        seconds: float | None = None,
    ) -> None:
        """``seconds``: the call's ``grpc-timeout`` (None: none)."""
        self.conn = conn
        self.fast = fast
        self.sid = sid
        self.name, self.fn, self.request_type = route
        self.request: Any = None
        """The request, once read (a refusal's BadRequest names a field path into it)."""
        self.metadata = metadata
        self.body = bytearray()
        self.unacked = 0
        self.ended = False
        self.stopped = False
        """Reset, or the connection closing: nothing more is read or written."""
        self.reading = False
        """The caller is authenticated and the message's length checked: data is
        acknowledged as it comes (the client's windows reopen)."""
        self.expired = False
        self.waiter: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.due: float | None = None
        """The loop's time of a deadline whose timer is not armed yet (:data:`ARM_AT_ONCE`)."""
        self.task: asyncio.Task[None] | None = None
        self.seconds = seconds

    # ------------------------------------------------------------ the connection's side

    def begin(self) -> None:
        loop = asyncio.get_running_loop()
        self.task = task = loop.create_task(self._run())
        self.conn.track(self, task)
        seconds = self.seconds
        if seconds is not None:
            if seconds <= ARM_AT_ONCE:
                self.timer = loop.call_later(seconds, self._expire)
            else:  # armed for the same moment by the connection's next check, if still running
                self.due = loop.time() + seconds

    def refuse_early(self) -> bool:
        """A long poll whose request is read whole, past its principal's cap: answered now,
        with no task, handler or statement, as its call would be answered (the same
        RESOURCE_EXHAUSTED, limit and retry); whether it was. skift-core decides
        (``LocalSkift.long_poll_refusal``) for the identity its caller presented when that is
        one the server remembers; anything else (no wait, not past the cap, an identity not
        seen yet, a request not plainly well formed, a server draining) is the call's to
        answer as always."""
        service = self.fast.service
        body = self.body
        if service.draining or len(body) < 5 or body[0] != 0:
            return False
        if int.from_bytes(body[1:5], "big") != len(body) - 5:
            return False
        who = service.auth.remembered(self.metadata, self.conn.peer_uid())
        if who is None:
            return False
        try:
            wait = self.fast.wait_of(self.request_type, bytes(body[5:]))
        except Exception:  # the call reads it again and names what is wrong
            return False
        refusal = service.auth.base.long_poll_refusal(who[0], who[1], wait)
        if refusal is None:
            return False
        block = self.fast.refusal_block(refusal)
        h2c: h2.connection.H2Connection = self.conn.h2c
        st = self._stream()
        if (
            st is None
            or not self.conn.writable()
            or h2c.encoder.header_table.resized
            or len(block) > h2c.max_outbound_frame_size
        ):
            return False
        sm = st.state_machine
        sm.process_input(StreamInputs.SEND_HEADERS)
        sm.process_input(StreamInputs.SEND_END_STREAM)
        self.conn.write(frame(HEADERS, _END_HEADERS | _END_STREAM, self.sid, block))
        if self.unacked:
            self._ack()
        self.conn.done(self)
        metrics = service.metrics
        if metrics is not None:
            metrics.observe(self.name, "RESOURCE_EXHAUSTED", 0.0)
        return True

    def data(self, data: bytes, flow_controlled_length: int) -> None:
        if self.stopped:
            return
        self.body += data
        self.unacked += flow_controlled_length
        if self.reading:
            self._ack()
        self._wake()

    def end(self) -> None:
        self.ended = True
        self._wake()

    def window(self) -> None:
        """The client's window grew (or its settings changed): a blocked answer may go on."""
        self._wake()

    def cancel(self) -> None:
        """RST_STREAM from the client, or the connection going away."""
        self.stopped = True
        if self.task is None:  # a long poll whose request was still coming: no task yet
            if self.unacked:
                self._ack()
            self.conn.done(self)
        elif not self.task.done():
            self.task.cancel()

    def _expire(self) -> None:
        self.timer = None
        if self.task is not None and not self.task.done():
            self.expired = True
            self.task.cancel()

    def _wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _wait(self) -> None:
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None

    # ------------------------------------------------------------ the call

    async def _run(self) -> None:
        service = self.fast.service
        try:
            await service.accounted(self.name, service.unary(self.name, self.fn, self), self)
        except GRPCError as err:
            self._fail(err.status, err.message, err.details)
        except asyncio.CancelledError:
            if self.expired:
                self._fail(Status.DEADLINE_EXCEEDED, None, None)
        except Exception:  # the answer's own writing failed: grpclib's words
            _log.exception("%s: answering failed", self.name)
            self._fail(Status.UNKNOWN, "Internal Server Error", None)
        finally:
            self.due = None
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if self.unacked and not self.stopped:
                self._ack()
            self.conn.done(self)

    async def caller(self, remembered: bool) -> skift.LocalSkift:
        return await self.fast.service.auth.caller_of(
            self.metadata, self.conn.peer_uid(), remembered=remembered
        )

    async def receive(self, before_large: Callable[[], Awaitable[None]] | None) -> Any:
        """The request message, read as ``_service.recv_request`` reads grpclib's."""
        await self._have(5)
        if len(self.body) < 5:
            if not self.body:
                raise invalid(
                    "the request carries no message",
                    next="Send exactly one request message.",
                    field=first_field(self.request_type),
                )
            raise invalid(
                f"the request ended after {len(self.body)} of the 5 bytes its length prefix "
                "announced",
                next="Send whole messages: a gRPC message is its 5-byte prefix and that many "
                "bytes.",
                field=first_field(self.request_type),
            )
        compressed, length = struct.unpack_from(">BI", self.body)
        check_prefix(compressed, length, self.fast.service.max_message_bytes, self.request_type)
        if before_large is not None and length > INLINE_BYTES:
            await before_large()  # a remembered identity: confirmed before a large body
        self.reading = True  # the caller is authenticated: a large message may come
        self._open(5 + length)
        if self.unacked:
            self._ack()
        await self._have(5 + length)
        if len(self.body) < 5 + length:
            raise invalid(
                f"the request ended after {len(self.body) - 5} of the {length} bytes its length "
                "prefix announced",
                next="Send whole messages: a gRPC message is its 5-byte prefix and that many "
                "bytes.",
                field=first_field(self.request_type),
            )
        if len(self.body) > 5 + length:
            raise one_message_only(self.name, self.request_type)
        data = bytes(self.body[5:])
        self.body = bytearray()
        self.request = await decode_request(self.request_type, data)
        return self.request

    async def _have(self, size: int) -> None:
        while len(self.body) < size and not self.ended:
            if self.stopped:
                raise asyncio.CancelledError
            await self._wait()

    def _open(self, size: int) -> None:
        """Let the client send the rest of a ``size``-byte message on this stream."""
        h2c: h2.connection.H2Connection = self.conn.h2c
        with contextlib.suppress(Exception):  # the stream may be closed: nothing to open
            state = h2c.streams.get(self.sid)
            if state is None or state.closed:
                return
            have = state.inbound_flow_control_window
            need = size - len(self.body)
            if need > have:
                h2c.increment_flow_control_window(
                    min(need - have, 2**31 - 1 - have), stream_id=self.sid
                )
                self.conn.flush()

    def _ack(self) -> None:
        size, self.unacked = self.unacked, 0
        with contextlib.suppress(Exception):  # the connection closing: nothing to reopen
            self.conn.h2c.acknowledge_received_data(size, self.sid)
            self.conn.flush()

    def _stream(self) -> Any:
        """h2's stream, when an answer may still be written on it."""
        h2c = self.conn.h2c
        if self.stopped or self.conn.closing() or h2c.state_machine.state is ConnectionState.CLOSED:
            return None  # reset, or after a GOAWAY (ours or the client's)
        st = h2c.streams.get(self.sid)
        if st is None or st.closed:
            return None
        return st

    async def send(self, reply: Any) -> None:
        """The answer: HEADERS, the message's DATA and the OK trailers, in one write when the
        client's window holds it; else through h2's send path, waiting for its window."""
        data: bytes = reply.data if reply.__class__ is Encoded else bytes(reply)
        payload = struct.pack(">BI", 0, len(data)) + data
        st = self._stream()
        if st is None:
            raise asyncio.CancelledError
        h2c: h2.connection.H2Connection = self.conn.h2c
        n = len(payload)
        if (
            self.conn.writable()
            and n <= h2c.local_flow_control_window(self.sid)
            and not h2c.encoder.header_table.resized
        ):
            size = h2c.max_outbound_frame_size
            sid = self.sid
            parts = [frame(HEADERS, _END_HEADERS, sid, _RESPONSE)]
            if n <= size:
                parts.append(frame(DATA, 0, sid, payload))
            else:
                view = memoryview(payload)
                parts.extend(
                    frame(DATA, 0, sid, bytes(view[i : i + size])) for i in range(0, n, size)
                )
            parts.append(frame(HEADERS, _END_HEADERS | _END_STREAM, sid, _OK))
            answered(st.state_machine)
            st.outbound_flow_control_window -= n
            h2c.outbound_flow_control_window -= n
            self.conn.write(b"".join(parts))
            return
        await self._send_slowly(payload)

    async def _send_slowly(self, payload: bytes) -> None:
        h2c: h2.connection.H2Connection = self.conn.h2c
        h2c.send_headers(self.sid, [(":status", "200"), ("content-type", CONTENT_TYPE)])
        self.conn.flush()
        view = memoryview(payload)
        while view:
            await self.conn.writable_wait()
            if self._stream() is None:
                raise asyncio.CancelledError
            window = h2c.local_flow_control_window(self.sid)
            if window <= 0:
                await self._wait()
                continue
            chunk = view[: min(window, h2c.max_outbound_frame_size)]
            h2c.send_data(self.sid, chunk.tobytes())
            self.conn.flush()
            view = view[len(chunk) :]
        h2c.send_headers(self.sid, [("grpc-status", "0")], end_stream=True)
        self.conn.flush()

    def _fail(self, status: Status, message: str | None, details: Any) -> None:
        """A trailers-only error answer (grpclib's), then RST_STREAM if the client still sends."""
        if self._stream() is None:
            return
        h2c: h2.connection.H2Connection = self.conn.h2c
        headers = [
            (":status", "200"),
            ("content-type", CONTENT_TYPE),
            ("grpc-status", str(status.value)),
        ]
        if message is not None:
            headers.append(("grpc-message", encode_grpc_message(message)))
        if details is not None:
            raw = self.fast.codec.encode(status, message, details)
            headers.append(("grpc-status-details-bin", encode_bin_value(raw).decode("ascii")))
        try:
            st = h2c.streams[self.sid]
            if st.state_machine.headers_sent:  # an answer had begun: its trailers
                headers = headers[2:]
            h2c.send_headers(self.sid, headers, end_stream=True)
            if not h2c.streams[self.sid].closed:
                h2c.reset_stream(self.sid, error_code=ErrorCodes.NO_ERROR)
        except Exception:  # the stream or the connection closed meanwhile
            _log.debug("could not answer %s", self.name, exc_info=True)
        self.conn.flush()


def one_message_only(name: str, cls: type[Any]) -> GRPCError:
    return invalid(
        f"{name} takes one request message; this call sent more",
        next="Send exactly one message on a unary call.",
        field=first_field(cls),
    )


def check_prefix(compressed: int, length: int, max_bytes: int, cls: type[Any]) -> None:
    """A request message's 5-byte prefix: uncompressed, and no larger than the limit."""
    if compressed:
        raise invalid(
            "compressed messages are not supported",
            next="Send the request uncompressed.",
            field=first_field(cls),
        )
    if length > max_bytes:
        raise to_grpc(
            skift.LimitExceeded(
                f"the request message is {length} bytes; this server takes at most {max_bytes}",
                next="Split the work into smaller requests (a patch into several patches).",
                limit="max_message_bytes",
                value=max_bytes,
            )
        )


async def decode_request(cls: type[Any], body: bytes) -> Any:
    """A request message decoded strictly (``_wire``), its failures as gRPC statuses."""
    try:
        return await decode_off_loop(cls, body)
    except TooExpensive as exc:
        raise to_grpc(
            skift.LimitExceeded(
                f"decoding the {len(body)}-byte {cls.__name__} was too expensive: {exc}",
                next="Send smaller requests (a patch in several), or retry when the server "
                "is less busy.",
                limit="decode_seconds",
                retry_after=1,
            )
        ) from None
    except WireError as exc:
        raise invalid(
            f"the request is not a valid {cls.__name__} message: {exc}",
            next="Encode the request with the skift.v1 proto definitions.",
            field=exc.field,
        ) from None
