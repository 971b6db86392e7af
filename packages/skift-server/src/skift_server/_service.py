"""The skift.v1.SkiftService servable: what happens around every call.

The handlers (``_handlers``) decode, call the skift API and encode; here
(``SkiftService._serve``) the caller is identified by the transport (``_auth``)
from the headers alone, and an administrative call authorized, before a byte
of the body is read: until then the stream's HTTP/2 window lets the client send
at most ``--unauthenticated-body-bytes`` (64 KiB), and a caller without a valid
identity is answered UNAUTHENTICATED with its body never decoded. Then the
request is read (a message larger than the window opens it) with a size limit
and decoded strictly (``_wire``: a large message on a worker thread, within a
time budget); a unary call carrying a second message is refused,
every :class:`skift.SkiftError` leaves as its one gRPC status (``_errors``),
and the outcome is counted (``_metrics``). While the server drains, new calls
are answered UNAVAILABLE so clients retry elsewhere, and the long polls
waiting in ClaimNext or WatchEvents are woken and answered UNAVAILABLE too.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, Protocol

import grpclib.const
import grpclib.server
from grpclib.const import Status
from grpclib.exceptions import GRPCError

import skift

from . import _admin_rpc, _handlers, _import_wire, _signin_rpc, _webhooks_wire
from ._auth import Authenticator
from ._encode import LARGE_REPLIES, encode_off_loop
from ._errors import describe, invalid, to_grpc
from ._fast import check_prefix, decode_request, one_message_only
from ._h2 import open_window
from ._handlers import Handler
from ._import_wire import StreamHandler
from ._metrics import Metrics
from ._proto.skift import v1
from ._signin_rpc import mint_signin_code
from ._simple import NotSimple, simple_handler
from ._wire import INLINE_BYTES, first_field

_log = logging.getLogger("skift_server")

DEFAULT_MAX_MESSAGE_BYTES: Final = 4 * 1024 * 1024
"""gRPC's customary default: a patch of 5000 operations fits comfortably."""

SERVICE: Final = "skift.v1.SkiftService"


ADMIN_ACTIONS: Final[dict[str, str]] = {
    rpc: op.admin for rpc, op in skift.OPERATIONS_BY_RPC.items() if op.admin is not None
}
"""Administrative RPCs and the policy action each needs (``skift.OPERATIONS``): checked for
the caller as soon as it is authenticated, before the call does any work (the seed's coarse
method checks)."""

REMEMBERED: Final = frozenset(
    {
        "GetNode",
        "ResolveNode",
        "Ready",
        "ListNodes",
        "ListProjects",
        "Explain",
        "Heartbeat",
        "ClaimNext",
        "WatchEvents",
    }
)
"""RPCs whose caller may be taken from the identity remembered from its last call, confirmed
by the call's first transaction (``Authenticator.caller``): each touches the store through
transactions alone and refuses nothing before its first read but what the request alone
decides (a malformed field) and, for the long polls, the principal's cap on waiting calls
(``long_polls_per_principal``): a flood of long polls past the cap is refused without a
lookup of its credential each (a thousand calls resuming at once from one shared lookup
stalled every other caller, issue 29). A request larger than ``_wire.INLINE_BYTES`` is
confirmed before its body is read."""

LONG_POLLS: Final = frozenset(rpc for rpc, op in skift.OPERATIONS_BY_RPC.items() if op.long_poll)
"""RPCs that may wait for something to happen: drained at once on shutdown."""

_CARDINALITY: Final = {
    skift.RpcStream.UNARY: grpclib.const.Cardinality.UNARY_UNARY,
    skift.RpcStream.SERVER: grpclib.const.Cardinality.UNARY_STREAM,
    skift.RpcStream.BIDI: grpclib.const.Cardinality.STREAM_STREAM,
}

HANDLER_MODULES: Final = (_handlers, _admin_rpc, _webhooks_wire, _import_wire, _signin_rpc)
"""Where the hand-written handlers live: RPC ``ListProjects`` is served by the function
``list_projects`` of one of them (a unary handler, or a streaming one for a streamed RPC).
Every other RPC's handler is made from its declaration (``_simple``)."""


def snake(rpc: str) -> str:
    """An RPC's name as its handler's: ``ListWebhookDeliveries`` is ``list_webhook_deliveries``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", rpc).lower()


def find_handlers() -> dict[str, Any]:
    """The handler of every RPC of ``skift.OPERATIONS``: the one written in
    :data:`HANDLER_MODULES` (a unary handler, or a streaming one for a streamed RPC), else
    the one made from the declaration (``_simple``). An RPC with neither stops the server
    from starting, saying why its declaration cannot make one."""
    out: dict[str, Any] = {}
    for rpc, op in skift.OPERATIONS_BY_RPC.items():
        for module in HANDLER_MODULES:
            fn = getattr(module, snake(rpc), None)
            if not inspect.iscoroutinefunction(fn):
                continue
            if rpc in out:
                raise RuntimeError(f"{rpc} has two handlers: {out[rpc].__module__} and {module}")
            out[rpc] = fn
        if rpc not in out:
            try:
                out[rpc] = simple_handler(op)
            except NotSimple as exc:
                raise RuntimeError(
                    f"no handler serves {rpc}: {exc}; define {snake(rpc)} in "
                    "skift_server._handlers (CONTRIBUTING.md: Adding an operation)"
                ) from None
    return out


async def recv_request(
    stream: grpclib.server.Stream[Any, Any],
    cls: type[Any],
    max_bytes: int,
    before_large: Callable[[], Awaitable[None]] | None = None,
) -> Any:
    """Read one request message with a size limit, decoding it strictly.

    grpclib's own ``recv_message`` reads the whole message whatever its
    declared length; here the 5-byte gRPC frame header is read first, so an
    oversized message is refused before its body is accepted (HTTP/2 flow
    control then keeps the sender from pushing more than a window).
    ``before_large`` runs before a body larger than ``INLINE_BYTES`` is read.
    """
    got = await _recv(stream, cls, max_bytes, before_large)
    if got is None:
        raise invalid(
            "the request carries no message",
            next="Send exactly one request message.",
            field=first_field(cls),
        )
    return got


async def recv_requests(
    stream: grpclib.server.Stream[Any, Any], cls: type[Any], max_bytes: int
) -> AsyncIterator[Any]:
    """The request messages of a client stream, each read as :func:`recv_request` reads one."""
    while (got := await _recv(stream, cls, max_bytes)) is not None:
        yield got


async def _read(raw: Any, size: int) -> bytes:
    """Up to ``size`` bytes of the request body; fewer only where it ended (grpclib's
    buffer asserts instead of returning what it has)."""
    try:
        return await raw.recv_data(size)
    except AssertionError:  # "Received less data than expected": the stream ended early
        got = raw.buffer._acked_size  # pyright: ignore[reportPrivateUsage]
        raise invalid(
            f"the request ended after {got} of the {size} bytes its length prefix announced",
            next="Send whole messages: a gRPC message is its 5-byte prefix and that many bytes.",
        ) from None


def more_buffered(stream: grpclib.server.Stream[Any, Any]) -> bool:
    """Whether the client already sent bytes past the message read (a second message)."""
    buf: Any = stream._stream.buffer  # pyright: ignore[reportPrivateUsage]
    if buf._acked_size:  # pyright: ignore[reportPrivateUsage]
        return True
    queued: Any = buf._unacked._queue  # pyright: ignore[reportPrivateUsage]
    return any(item.data_size for item in queued)


async def _recv(
    stream: grpclib.server.Stream[Any, Any],
    cls: type[Any],
    max_bytes: int,
    before_large: Callable[[], Awaitable[None]] | None = None,
) -> Any:
    """The next request message, or None when the client ended its stream. Called once the
    caller is authenticated: a message larger than the stream's window opens it."""
    raw = stream._stream  # pyright: ignore[reportPrivateUsage]
    header = await _read(raw, 5)
    if not header:
        return None
    compressed, length = struct.unpack(">BI", header)
    check_prefix(compressed, length, max_bytes, cls)
    if before_large is not None and length > INLINE_BYTES:
        await before_large()  # a remembered identity: confirmed before a large body
    open_window(stream, length)  # the caller is authenticated: a large message may come
    body = await _read(raw, length)
    if len(body) != length:
        raise invalid(
            f"the request message ended after {len(body)} of {length} bytes",
            next="Send the whole message.",
            field=first_field(cls),
        )
    return await decode_request(cls, body)


class UnaryCall(Protocol):
    """What :meth:`SkiftService.unary` asks of a call's transport: its request's type and,
    once read, the request (a refusal's BadRequest names the field as a path into it)."""

    request_type: type[Any]
    request: Any

    async def caller(self, remembered: bool) -> skift.LocalSkift: ...

    async def receive(self, before_large: Callable[[], Awaitable[None]] | None) -> Any: ...

    async def send(self, reply: Any) -> None: ...


class _GrpclibCall:
    """A unary call over grpclib's server stream."""

    __slots__ = ("name", "request", "request_type", "service", "stream")

    def __init__(
        self,
        service: SkiftService,
        name: str,
        stream: grpclib.server.Stream[Any, Any],
        request_type: type[Any],
    ) -> None:
        self.service = service
        self.name = name
        self.stream = stream
        self.request_type = request_type
        self.request: Any = None

    async def caller(self, remembered: bool) -> skift.LocalSkift:
        return await self.service.auth.caller(self.stream, remembered=remembered)

    async def receive(self, before_large: Callable[[], Awaitable[None]] | None) -> Any:
        request = await recv_request(
            self.stream, self.request_type, self.service.max_message_bytes, before_large
        )
        if more_buffered(self.stream):
            raise one_message_only(self.name, self.request_type)
        self.request = request
        return request

    async def send(self, reply: Any) -> None:
        await self.stream.send_message(reply)


class SkiftService:
    """The grpclib servable for skift.v1.SkiftService over one base LocalSkift."""

    def __init__(
        self,
        auth: Authenticator,
        *,
        metrics: Metrics | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        board_link: Callable[[str], str] | None = None,
    ) -> None:
        """``board_link``: the sign-in link for a code (the server's; none: no board)."""
        self.auth = auth
        self.handlers: dict[str, Any] = {
            **find_handlers(),
            "MintSigninCode": mint_signin_code(board_link or (lambda code: "")),
        }
        self.metrics = metrics
        self.max_message_bytes = max_message_bytes
        self.draining = False
        self._long_polls: set[asyncio.Task[Any]] = set()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def drained(self) -> None:
        """Return once no call is being handled."""
        await self._idle.wait()

    def drain(self) -> int:
        """Refuse new calls and wake every waiting long poll (it answers UNAVAILABLE).

        Returns how many long polls were woken.
        """
        self.draining = True
        woken = 0
        for task in list(self._long_polls):
            if not task.done():
                task.cancel()
                woken += 1
        return woken

    async def _call(self, name: str, fn: Handler, sk: skift.LocalSkift, request: Any) -> Any:
        """Run a handler; a long poll runs as a task :meth:`drain` can wake."""
        if name not in LONG_POLLS:
            return await fn(sk, request)
        task = asyncio.ensure_future(fn(sk, request))
        self._long_polls.add(task)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled() and self.draining and not _cancelling():
                raise skift.Unavailable(
                    "this server is shutting down, so the wait was cut short",
                    next="Retry the call: another server, or this one once it is back, will answer.",
                ) from None
            task.cancel()
            raise
        finally:
            self._long_polls.discard(task)

    def __mapping__(self) -> dict[str, grpclib.const.Handler]:
        """The routes of every RPC, from ``skift.OPERATIONS``: an RPC the proto declares
        and the table does not, or one without a handler, stops the server from starting."""
        generated = v1.SkiftServiceBase().__mapping__()
        out: dict[str, grpclib.const.Handler] = {}
        served: set[str] = set()
        for route, h in generated.items():
            name = route.rsplit("/", 1)[1]
            handler: Any = h
            op = skift.OPERATIONS_BY_RPC.get(name)
            if op is None:
                raise RuntimeError(
                    f"the proto's RPC {name} is declared by no operation of skift.OPERATIONS "
                    "(CONTRIBUTING.md: Adding an operation)"
                )
            if _CARDINALITY[op.stream] != handler.cardinality:
                raise RuntimeError(
                    f"{name} streams {handler.cardinality}, its operation says {op.stream}"
                )
            fn = self.handlers.get(name)
            if fn is None:
                raise RuntimeError(
                    f"no handler serves {name}: define {snake(name)} in skift_server._handlers"
                )
            bind = self._bind if op.stream is skift.RpcStream.UNARY else self._bind_stream
            out[route] = grpclib.const.Handler(
                bind(name, fn, handler.request_type),
                handler.cardinality,
                handler.request_type,
                handler.reply_type,
            )
            served.add(name)
        if missing := sorted(set(skift.OPERATIONS_BY_RPC) - served):
            raise RuntimeError(f"skift.OPERATIONS declares RPCs the proto lacks: {missing}")
        return out

    def _bind(
        self, name: str, fn: Handler, request_type: type[Any]
    ) -> Callable[[grpclib.server.Stream[Any, Any]], Awaitable[None]]:
        async def serve(stream: grpclib.server.Stream[Any, Any]) -> None:
            await self._serve(name, fn, request_type, stream)

        return serve

    def _bind_stream(
        self, name: str, fn: StreamHandler, request_type: type[Any]
    ) -> Callable[[grpclib.server.Stream[Any, Any]], Awaitable[None]]:
        """A streaming RPC: the caller is identified first, the handler reads and sends."""

        async def call(sk: skift.LocalSkift, stream: grpclib.server.Stream[Any, Any]) -> None:
            requests = recv_requests(stream, request_type, self.max_message_bytes)

            async def send(message: Any) -> None:
                await stream.send_message(await encode_off_loop(message))

            await fn(sk, requests, send)

        async def serve(stream: grpclib.server.Stream[Any, Any]) -> None:
            await self._serve(name, None, request_type, stream, streamed=call)

        return serve

    async def _serve(
        self,
        name: str,
        fn: Handler | None,
        request_type: type[Any],
        stream: grpclib.server.Stream[Any, Any],
        *,
        streamed: Callable[[skift.LocalSkift, grpclib.server.Stream[Any, Any]], Awaitable[None]]
        | None = None,
    ) -> None:
        if streamed is not None:
            await self.accounted(name, self._streamed(stream, streamed))
            return
        assert fn is not None
        await self.accounted(
            name,
            self.unary(name, fn, call := _GrpclibCall(self, name, stream, request_type)),
            call,
        )

    async def _streamed(
        self,
        stream: grpclib.server.Stream[Any, Any],
        streamed: Callable[[skift.LocalSkift, grpclib.server.Stream[Any, Any]], Awaitable[None]],
    ) -> None:
        sk = await self.auth.caller(stream)
        try:
            await streamed(sk, stream)
        except skift.TransientError as exc:
            raise skift.Unavailable(
                f"the store stayed busy: {exc}", next="Retry the call."
            ) from exc

    async def unary(self, name: str, fn: Handler, call: UnaryCall) -> None:
        """A unary call: the caller from the headers alone (no body read yet), an
        administrative call authorized, then the one request message read, the handler
        run and its answer sent (over grpclib's stream, or ``_fast``'s)."""
        remembered = name in REMEMBERED
        sk = await call.caller(remembered)
        action = ADMIN_ACTIONS.get(name)
        if action is not None:
            await sk.check_action(action)
        request = await call.receive(sk.confirm_identity if remembered else None)
        try:
            try:
                reply = await self._call(name, fn, sk, request)
            except skift.Unauthenticated:
                if not sk.identity_stale:
                    raise
                # the remembered identity changed: nothing was answered or committed;
                # look it up again (refused there if it was revoked) and run the call
                sk = await call.caller(False)
                reply = await self._call(name, fn, sk, request)
        except skift.TransientError as exc:
            raise skift.Unavailable(
                f"the store stayed busy: {exc}", next="Retry with the same request id."
            ) from exc
        if name in LARGE_REPLIES:  # a large one is encoded off the loop
            reply = await encode_off_loop(reply)
        await call.send(reply)
        self._count_leases(name, request)

    async def accounted(
        self, name: str, work: Awaitable[None], call: UnaryCall | None = None
    ) -> None:
        """Run a call's ``work`` counted (in flight, metrics) and refused while draining;
        every failure leaves as a :class:`GRPCError` (a SkiftError as its status; for a
        unary ``call``, BadRequest names the field as a path into its request)."""
        started = time.monotonic()
        code = "OK"
        self._in_flight += 1
        self._idle.clear()
        if self.metrics:
            self.metrics.in_flight.inc()
        try:
            if self.draining:
                raise to_grpc(
                    skift.Unavailable(
                        "this server is shutting down",
                        next="Retry: another server, or this one once it is back, will answer.",
                    )
                )
            await work
        except skift.SkiftError as exc:
            err = (
                to_grpc(exc, call.request_type, call.request) if call is not None else to_grpc(exc)
            )
            code = err.status.name
            if _log.isEnabledFor(logging.DEBUG):
                _log.debug("%s refused: %s", name, describe(exc))
            raise err from None
        except GRPCError as exc:
            code = exc.status.name
            raise
        except asyncio.CancelledError:
            code = Status.CANCELLED.name
            raise
        except Exception:
            code = Status.INTERNAL.name
            _log.exception("%s failed", name)
            raise GRPCError(
                Status.INTERNAL, "internal error in the skift server; see its log"
            ) from None
        finally:
            if inspect.iscoroutine(work):
                work.close()  # refused before it ran (draining): never awaited
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()
            if self.metrics:
                self.metrics.in_flight.dec()
                self.metrics.observe(name, code, time.monotonic() - started)

    def unary_routes(self) -> dict[str, tuple[str, Handler, type[Any]]]:
        """The unary RPCs by route (``/skift.v1.SkiftService/GetNode``): their name, handler
        and request type, for the unary fast path (``_fast``)."""
        out: dict[str, tuple[str, Handler, type[Any]]] = {}
        for name, op in skift.OPERATIONS_BY_RPC.items():
            fn = self.handlers.get(name)
            if op.stream is skift.RpcStream.UNARY and fn is not None:
                out[f"/{SERVICE}/{name}"] = (name, fn, getattr(v1, f"{name}Request"))
        return out

    def _count_leases(self, name: str, request: Any) -> None:
        if self.metrics is None:
            return
        effect = skift.OPERATIONS_BY_RPC[name].lease
        if effect is skift.LeaseEffect.TAKES:
            self.metrics.lease_taken()
        elif effect is skift.LeaseEffect.ENDS and getattr(request, "lease", None):
            self.metrics.lease_ended()


def _cancelling() -> bool:
    """True when the current task itself is being cancelled (its caller went away)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
