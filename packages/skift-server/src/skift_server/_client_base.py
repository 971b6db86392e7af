"""The remote Skift's transport: channels, the deadline and retries of every call.

The calls themselves are mixins over :class:`RemoteBase`: those that only encode, call
and decode are generated (``_client_generated``, from ``skift.OPERATIONS``, the ``Skift``
protocol and the messages: ``tools/gen_client.py``), the others written by concern
(``_client_graph``, ``_client_work``, ``_client_content``, ``_client_import``); ``_client``
composes them into :class:`RemoteSkift`. See ``_client`` for what is retried and why.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar, overload

import attrs
import betterproto2
from betterproto2.grpclib import ServiceStub
from grpclib.client import Channel
from grpclib.encoding.proto import ProtoCodec
from grpclib.exceptions import GRPCError, StreamTerminatedError
from h2.exceptions import ProtocolError as H2ProtocolError

import skift

from ._auth import ACT_AS, CLOCK_OFFSET, ORG
from ._client_h2 import Connection as LeanConnection
from ._convert import page_size as page_size  # the client mixins' import
from ._convert_types import from_pb, to_pb
from ._convert_wire import UPB_FROM, field_view, read_field_view, read_view
from ._errors import ErrorDetailsCodec, from_grpc
from ._h2 import GatheringChannel
from ._paths import check_socket_owner, starting_pid
from ._proto.skift import v1
from ._unary import Unsupported
from ._wirecodec import Fallback, read_exactly

T = TypeVar("T", bound=betterproto2.Message)
V = TypeVar("V")
F = TypeVar("F")


DEFAULT_TIMEOUT = 30.0
"""Seconds a call may take (ClaimNext adds its wait)."""
START_WAIT = 60.0  # how long a client waits for a server that announced it is starting
RETRY_WINDOW = 20.0
"""Seconds over which a call that is safe to retry is retried: longer than a server's restart
(3-10 s), so a restart is a pause to a client, not an error."""
FIRST_CONTACT_WINDOW = 1.0
"""Seconds a connection that has never reached its server keeps trying to open it: a server
that is not running is said at once, not after the restart window."""
DEFAULT_ATTEMPTS = 50
MAX_BACKOFF = 2.0

_NOT_SENT = (ConnectionRefusedError, FileNotFoundError, ConnectionResetError)


def deadline_passed(seconds: float) -> skift.Unavailable:
    """A call that ran past its deadline: the server may be busy, not gone."""
    return skift.Unavailable(
        f"the skift server did not answer within the call's {seconds:g} s deadline",
        next="It may be busy (a large import, a slow query): retry, or allow more time "
        "(SKIFT_TIMEOUT=SECONDS, or connect(timeout=…)).",
    )


# ------------------------------------------------------------ answers it cannot read
#
# A reply is read strictly: bytes that are not a valid encoding of the reply's message (a
# truncated message, a string that is not UTF-8, a varint that never ends) are refused,
# where betterproto2's own parser would read them as some other answer (a truncated
# ListProjects read as a project with an empty title, three bytes of 0xff as no projects).
# A reply read strictly may still fail to become its view (a timestamp past the year 9999,
# an enum word this client does not know): every public method of the remote client is
# wrapped (:func:`reads_answers`) so that whatever fails while an answer is read is
# Unavailable naming the RPC, never the decoder's own OverflowError or UnicodeDecodeError.

READING: ContextVar[str | None] = ContextVar("skift_reading", default=None)
"""The RPC whose answer the calling method is reading: set once the answer's bytes arrived
(``_call``, ``_stream``), so a failure before it (encoding the request) is not called one
of the answer's."""

UNREADABLE: tuple[type[Exception], ...] = (ValueError, ArithmeticError, LookupError, EOFError)
"""What reading an answer raises when its bytes or values are not what this client knows:
WireError and UnicodeDecodeError are ValueErrors, a datetime out of range an
OverflowError, an enum number or word this client lacks a ValueError or KeyError."""


class Unreadable(Exception):
    """An answer's bytes are not a valid encoding of its message (from :class:`AnswerCodec`,
    inside grpclib); the cause says what is wrong."""


def strict_parse(message: type[T]) -> Callable[[bytes], T]:
    """``message``'s parser for answers. The fast decoder (``_wirecodec.read_exactly``, what
    ``FromString`` runs first) reads an answer as it is sent, skipping fields this client
    does not know (a newer server's); what it does not take is read as the server reads a
    request (``_wire``): bytes that are not the message's encoding are WireError. Of those,
    one of a page's size (``UPB_FROM`` bytes) is parsed by upb first (``_wire.decode``), a
    smaller one by the strict walk (``_wire.decode_strictly``), which spares a command
    protobuf's descriptors (~80 ms)."""
    return functools.partial(_wire_decode, message)


def _wire_decode(message: type[T], data: bytes) -> T:
    try:
        return read_exactly(message, data)
    except (Fallback, IndexError, ValueError, RecursionError):
        pass  # the strict reading says what is wrong (nested too deep), or reads what is unusual
    from ._wire import decode, decode_strictly

    if len(data) < UPB_FROM:
        return decode_strictly(message, data)
    return decode(message, data)


class AnswerCodec(ProtoCodec):
    """grpclib's codec for the remote client's channels: skift's replies read strictly
    (:func:`strict_parse`), failures raised as :class:`Unreadable` (grpclib reads the answer
    before ``_call`` or ``_stream`` can note that it arrived)."""

    def decode(self, data: bytes, message_type: type[Any]) -> Any:
        if not issubclass(message_type, betterproto2.Message):
            return super().decode(data, message_type)
        try:
            return _wire_decode(message_type, data)
        except UNREADABLE as exc:  # a timestamp out of range is an OverflowError
            raise Unreadable(str(exc) or type(exc).__name__) from exc


def unreadable(rpc: str, exc: BaseException) -> skift.Unavailable:
    """The error for an answer to ``rpc`` this client cannot read (``exc`` says why)."""
    why = str(exc) or type(exc).__name__
    return skift.Unavailable(
        f"the skift server's answer to {rpc} could not be read: {why}",
        next="If the server runs another version of skift than this client (compare "
        "'skift --version' with the server's), upgrade the older one; otherwise report it with "
        "this message. The call may have taken effect: a write with a request id is safe to "
        "send again.",
        rpc=rpc,
    )


def _reading(method: Callable[..., Awaitable[V]]) -> Callable[..., Awaitable[V]]:
    @functools.wraps(method)
    async def call(self: Any, *args: Any, **kwargs: Any) -> V:
        token = READING.set(None)
        try:
            return await method(self, *args, **kwargs)
        except UNREADABLE as exc:
            rpc = READING.get()
            if rpc is None:
                raise
            raise unreadable(rpc, exc) from exc
        finally:
            READING.reset(token)

    return call


def reads_answers(cls: type[F]) -> type[F]:
    """Wrap every public coroutine method of ``cls`` (and of the mixins it is composed of) so
    that an answer it cannot read is :func:`unreadable`, whichever line of it read it."""
    for name, fn in inspect.getmembers(cls, inspect.iscoroutinefunction):
        if not name.startswith("_"):
            setattr(cls, name, _reading(fn))
    return cls


class UnixChannel(GatheringChannel):
    """A channel over a unix socket that first checks who owns the socket (see ``_paths``)."""

    def __init__(self, path: str, codec: ErrorDetailsCodec) -> None:
        super().__init__(path=path, codec=AnswerCodec(), status_details_codec=codec)  # pyright: ignore[reportUnknownMemberType]
        self._socket_path = path

    async def _create_connection(self) -> Any:
        check_socket_owner(self._socket_path)
        return await super()._create_connection()


@attrs.define
class Shared:
    """What every handle made from one ``connect`` shares: channels and the test clock."""

    make: Callable[[], Channel]  # a channel; made on first use, inside the caller's event loop
    size: int
    metadata: dict[str, str]
    socket: Path | None = None  # a unix socket's path: for waiting on a starting server and errors
    looked_at: list[Path] = attrs.field(factory=lambda: list[Path]())  # default paths tried
    on_wait: Callable[[str], None] | None = None
    waited: bool = False
    reached: bool = False  # the server answered once: a failure now is a restart, waited out
    clock_offset: timedelta | None = None
    closed: bool = False
    channels: list[Channel] = attrs.field(factory=lambda: list[Channel]())
    rr: itertools.count[int] = attrs.field(factory=itertools.count)
    open_lean: Callable[[], Awaitable[LeanConnection]] | None = None
    """Opens a lean connection for unary calls (``_client_h2``); None: grpclib's channels only
    (TLS)."""
    leans: list[LeanConnection | None] = attrs.field(factory=lambda: list[LeanConnection | None]())
    lean_rr: itertools.count[int] = attrs.field(factory=itertools.count)
    opening: dict[int, asyncio.Task[LeanConnection]] = attrs.field(
        factory=lambda: dict[int, "asyncio.Task[LeanConnection]"]()
    )
    """The slots whose connection is being opened: calls made meanwhile wait for it."""

    async def lean(self) -> LeanConnection | None:
        """The next lean connection (round robin over ``size``), opened on first use and
        again after it closed; None without :attr:`open_lean`. Calls that find a slot's
        connection opening wait for that one: many calls at once open ``size``
        connections, not one each."""
        if self.open_lean is None:
            return None
        if not self.leans:
            self.leans = [None] * self.size
        i = next(self.lean_rr) % self.size
        conn = self.leans[i]
        if conn is None or conn.closed:
            task = self.opening.get(i)
            if task is None:
                task = self.opening[i] = asyncio.ensure_future(self._open_lean(i, self.open_lean))
                # read here too, so a failure no caller waited for is not logged as unread
                task.add_done_callback(lambda t: t.cancelled() or t.exception())
            # shielded: a caller cancelled while it opens leaves it opening for the others
            conn = await asyncio.shield(task)
        return conn

    async def _open_lean(
        self, i: int, open_lean: Callable[[], Awaitable[LeanConnection]]
    ) -> LeanConnection:
        try:
            self.leans[i] = conn = await open_lean()
            return conn
        finally:
            self.opening.pop(i, None)

    def channel(self) -> Channel:
        if not self.channels:
            # grpclib binds a channel to the loop it is made in: making them here, on the
            # first call, lets connect() run outside the loop that uses it (module level)
            self.channels = [self.make() for _ in range(self.size)]
        return self.channels[next(self.rr) % len(self.channels)]

    async def wait_for_start(self) -> bool:
        """Wait (once, up to START_WAIT) for a server that announced it is starting on the socket."""
        if self.socket is None or self.waited:
            return False
        pid = starting_pid(self.socket)
        if pid is None:
            return False
        self.waited = True
        if self.on_wait is not None:
            self.on_wait(f"waiting for the skift server (pid {pid}) to start on {self.socket}…")
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline and not self.socket.exists():
            if starting_pid(self.socket) is None:
                break  # it stopped starting: served (the socket appears) or gave up
            await asyncio.sleep(0.1)
        return True

    def denied(self, exc: PermissionError) -> skift.Unauthenticated:
        """The error for a socket this user may not open, naming it and who may."""
        where = self.socket or exc.filename or "the skift server's socket"
        return skift.Unauthenticated(
            f"permission denied opening the skift server's socket {where} as uid {os.geteuid()}",
            next="Run as the user who started 'skift serve' (or one in the socket's group), "
            "have its owner let you in (see 'Sockets and identity' in docs/operations-server.md), "
            "or point SKIFT_SERVER or --server at a server you may use.",
            socket=str(where),
        )

    def unreachable(self, exc: OSError) -> skift.Unavailable:
        """The error for a connection never made, naming the socket (and the others looked at)."""
        if self.socket is None:
            return skift.Unavailable(
                f"cannot reach the skift server: {exc}",
                next="Check that `skift serve` is running and the address is right.",
            )
        why = "no server is listening" if isinstance(exc, ConnectionRefusedError) else "no socket"
        others = [str(p) for p in self.looked_at if p != self.socket]
        also = f" (also looked at {', '.join(others)})" if others else ""
        return skift.Unavailable(
            f"cannot reach the skift server at {self.socket}: {why}{also}",
            next="Start it with 'skift serve' (or 'make run'), or point SKIFT_SERVER or "
            "--server at a running one (unix:///path/skift.sock, https://host:port).",
            socket=str(self.socket),
        )


class RemoteStore:
    """The store-side test hook a remote handle offers: the clock (``--test-hooks`` only)."""

    def __init__(self, shared: Shared) -> None:
        self._shared = shared

    def set_clock_offset(self, offset: timedelta) -> None:
        """Move the server store's clock by ``offset`` from now on (tests only)."""
        self._shared.clock_offset = offset


def artifact_of(value: skift.Artifact | Mapping[str, Any]) -> skift.Artifact:
    """An Artifact, from itself or its JSON form (checked as the patch format checks it)."""
    if isinstance(value, skift.Artifact):
        return value
    op = skift.parse_op({"op": "attach_artifact", "node": "-", "artifact": dict(value)})
    assert isinstance(op, skift.AttachArtifact)
    return op.artifact


def pick_ops(ops: Sequence[skift.Op | dict[str, Any]]) -> list[skift.Op]:
    return [skift.parse_op(op, i) if isinstance(op, dict) else op for i, op in enumerate(ops)]


class RemoteBase:
    """The transport every mixin of :class:`RemoteSkift` calls through."""

    def __init__(
        self,
        shared: Shared,
        *,
        principal: skift.PrincipalSpec | None = None,
        org: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        attempts: int = DEFAULT_ATTEMPTS,
        retry_window: float = RETRY_WINDOW,
    ) -> None:
        self._shared = shared
        self.principal = principal
        self.org = org
        self.timeout = timeout
        self.attempts = attempts
        self.retry_window = retry_window
        self.store = RemoteStore(shared)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the channels (shared by every handle made from this connection)."""
        if not self._shared.closed:
            self._shared.closed = True
            for ch in self._shared.channels:
                ch.close()
            for conn in self._shared.leans:
                if conn is not None:
                    conn.close()

    # ------------------------------------------------------------ transport

    def _metadata(self) -> dict[str, str]:
        md = dict(self._shared.metadata)
        if self.principal is not None:
            md[ACT_AS] = f"{self.principal.kind.value}:{self.principal.name}"
        if self.org is not None:
            md[ORG] = self.org
        if self._shared.clock_offset is not None:
            md[CLOCK_OFFSET] = repr(self._shared.clock_offset.total_seconds())
        return md

    @overload
    async def _call(
        self,
        method: str,
        request: betterproto2.Message,
        reply: type[T],
        *,
        timeout: float | None = None,
    ) -> T: ...
    @overload
    async def _call(
        self,
        method: str,
        request: betterproto2.Message,
        reply: type[T],
        *,
        view: type[V],
        field: str | None = None,
        timeout: float | None = None,
    ) -> V: ...
    async def _call(
        self,
        method: str,
        request: betterproto2.Message,
        reply: type[T],
        *,
        view: type[Any] | None = None,
        field: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One unary call with a deadline, retried when that cannot do anything twice.

        With ``view``, the answer is that view of the reply (``from_pb(reply, view, ...)``),
        read straight from the bytes where it can be (``_convert_wire.read_view``); with
        ``field`` too, the view in that one field of the reply (GetNode's node:
        ``_convert_wire.read_field_view``).

        A call that is safe to retry (``skift.OPERATIONS`` says so of its RPC: a read, a
        write carrying a request id made before the first attempt, or one idempotent by
        nature) is retried on Unavailable and on a broken connection;
        any call is retried while the connection cannot be opened (nothing was sent).
        Retries back off (jittered, doubling up to MAX_BACKOFF) over ``retry_window``
        seconds, which outlasts a server restart; a connection that has never reached its
        server gives up after FIRST_CONTACT_WINDOW, so a server that is not running is
        said at once.
        """
        if self._shared.closed:
            raise skift.Unavailable(
                "this skift connection is closed", next="Connect again with skift_server.connect."
            )
        route = f"/skift.v1.SkiftService/{method}"
        safe = skift.OPERATIONS_BY_RPC[method].retry.safe
        last: skift.SkiftError | None = None
        start = time.monotonic()
        attempt = 0
        while True:
            try:
                got = await self._lean_call(
                    method, route, request, reply, timeout or self.timeout, view, field
                )
                if got is None:
                    channel = self._shared.channel()
                    # the base stub: the generated SkiftServiceStub only adds a method per RPC,
                    # and naming it would make every class of the generated module
                    stub = ServiceStub(channel, metadata=self._metadata())
                    try:
                        got = await stub._unary_unary(  # pyright: ignore[reportPrivateUsage]
                            route, request, reply, timeout=timeout or self.timeout
                        )
                    except Unreadable as exc:
                        raise unreadable(method, exc) from exc
                    READING.set(method)
                    if field is not None and view is not None:
                        got = field_view(reply, field, view, got)
                    elif view is not None:
                        got = from_pb(reply, view, got)
                self._shared.reached = True
                return got
            except GRPCError as exc:
                self._shared.reached = True
                err = from_grpc(exc)
                if not (safe and isinstance(err, skift.Unavailable)):
                    raise err from None
                last = err
            except PermissionError as exc:
                # The socket exists but this user may not open it: no retry changes that.
                raise self._shared.denied(exc) from None
            except _NOT_SENT as exc:
                # The connection was never made: nothing was sent, any call may be retried.
                last = self._shared.unreachable(exc)
                if attempt < self.attempts - 1 and await self._shared.wait_for_start():
                    attempt += 1
                    continue
            except TimeoutError:
                # the deadline ran out: the server may well be up, only slow (the CLI said
                # "is skift serve running?" after a large import, while it was)
                last = deadline_passed(timeout or self.timeout)
                if not safe:
                    raise last from None
            except (StreamTerminatedError, H2ProtocolError, OSError) as exc:
                last = skift.Unavailable(
                    f"the connection to the skift server failed: {exc or type(exc).__name__}",
                    next="Retry; a write with a request id is safe to send again.",
                )
                if not safe:
                    raise last from None
            attempt += 1
            window = self.retry_window if self._shared.reached else FIRST_CONTACT_WINDOW
            delay = random.uniform(0.5, 1.5) * min(0.05 * 2 ** (attempt - 1), MAX_BACKOFF)
            if attempt >= self.attempts or time.monotonic() - start + delay > window:
                raise last from None
            await asyncio.sleep(delay)

    async def _lean_call(
        self,
        method: str,
        route: str,
        request: betterproto2.Message,
        reply: type[T],
        timeout: float,
        view: type[Any] | None = None,
        field: str | None = None,
    ) -> Any:
        """The call of ``method`` (at ``route``) over a lean connection (``_client_h2``), or
        None where it leaves the call to grpclib's channel (TLS, a large request, the
        server's stream limit). The answer is read strictly (:func:`strict_parse` where the
        readers straight from the bytes do not take it)."""
        if self._shared.open_lean is None:
            return None
        async with asyncio.timeout(timeout):
            conn = await self._shared.lean()
            if conn is None:
                return None
            try:
                data = await conn.call(  # held to the deadline by the timeout above
                    route, bytes(request), list(self._metadata().items()), timeout, False
                )
            except Unsupported:
                return None
        READING.set(method)
        parse = strict_parse(reply)
        if view is None:
            return parse(data)
        if field is not None:
            return read_field_view(reply, field, view, data, parse)
        return read_view(reply, view, data, parse)


def remote_page(items: list[V], token: str) -> skift.Page[V]:
    """A page as the local API answers it, ``token`` (the server's next_page_token, opaque
    here too) its ``next_page``."""
    ends = [""] * len(items)
    if ends and token:
        ends[-1] = token
    return skift.Page(items, ends=ends, more=bool(token and items))


def page_token_before(rpc: str, key: str) -> str:
    """A page token that starts after ``key`` in the list's order (the server's format)."""
    from ._paging import Token, encode

    return encode(Token(rpc, core=key))


def request_id_of(value: str | None) -> str:
    """The caller's request id, or a fresh one made before the first attempt."""
    if value is None:
        return skift.ulid_str(skift.new_id())
    if not value.strip():
        raise skift.Invalid(
            "request_id is empty", next="Leave it out to have one made, or give a non-empty id."
        )
    return value


def filter_of(filters: dict[str, Any]) -> v1.NodeFilter:
    return to_pb(v1.NodeFilter, skift.filter_from(**filters))
