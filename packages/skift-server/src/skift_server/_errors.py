"""skift's error tree on the wire: one gRPC status per class, the rest in the details.

Every :class:`skift.SkiftError` leaves the server as one gRPC status
(``STATUS``) whose ``grpc-status-details-bin`` trailer is a standard
``google.rpc.Status`` holding one packed ``skift.v1.Error``: the JSON code,
the exception class, the message, the next move and the details. The client
raises the same class with the same message, ``next`` and details; a client
that knows nothing of skift still reads the status code and a message that
ends with the next move.

``NothingReady`` is NOT_FOUND (with code ``nothing_ready``), not UNAVAILABLE:
gRPC clients and proxies treat UNAVAILABLE as "retry this call", and an empty
queue is an answer, not a fault. It is not FAILED_PRECONDITION either, which
is a refusal the caller must act on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Final

from grpclib.const import Status
from grpclib.encoding.base import StatusDetailsCodecBase
from grpclib.exceptions import GRPCError

import skift

from ._convert import from_struct, to_struct
from ._proto.google.protobuf import Any as AnyPb
from ._proto.google.rpc import Status as StatusPb
from ._proto.skift import v1

_log = logging.getLogger("skift_server")

STATUS: Final[dict[type[skift.SkiftError], Status]] = {
    skift.NotFound: Status.NOT_FOUND,
    skift.Invalid: Status.INVALID_ARGUMENT,
    skift.Refused: Status.FAILED_PRECONDITION,
    skift.Conflict: Status.ABORTED,  # FencingError, CycleError, IdempotencyMismatch too
    skift.LimitExceeded: Status.RESOURCE_EXHAUSTED,
    skift.NothingReady: Status.NOT_FOUND,
    skift.Unavailable: Status.UNAVAILABLE,
    skift.Unauthenticated: Status.UNAUTHENTICATED,
}
"""The gRPC status of each error class; a subclass takes its nearest mapped ancestor's."""

_BY_CODE: Final[dict[str, type[skift.SkiftError]]] = {cls.code: cls for cls in STATUS}

_ERROR_URL: Final = "type.googleapis.com/skift.v1.Error"


def status_of(exc: skift.SkiftError) -> Status:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]  # pyright: ignore[reportArgumentType]
    return Status.UNKNOWN


def _class_name(exc: skift.SkiftError) -> str:
    """The nearest class of ``exc`` that the skift package exports (so a client can raise it)."""
    for cls in type(exc).__mro__:
        if getattr(skift, cls.__name__, None) is cls:
            return cls.__name__
    return type(exc).__name__


def to_grpc(exc: skift.SkiftError) -> GRPCError:
    """The GRPCError a handler raises for ``exc``."""
    err = v1.Error(
        code=exc.code,
        error_class=_class_name(exc),
        message=exc.message,
        next=exc.next,
        details=to_struct(exc.details),
    )
    return GRPCError(status_of(exc), str(exc), [err])


def invalid(message: str, next: str = "", **details: Any) -> GRPCError:
    return to_grpc(skift.Invalid(message, next=next, **details))


def from_grpc(err: GRPCError) -> skift.SkiftError:
    """The skift exception a client raises for a failed call."""
    details: Sequence[Any] = err.details or ()
    for d in details:
        if isinstance(d, v1.Error):
            cls = _BY_CODE.get(d.code, skift.SkiftError)
            named = getattr(skift, d.error_class, None)
            if isinstance(named, type) and issubclass(named, cls):
                cls = named
            return cls(d.message, next=d.next, **from_struct(d.details))
    message = err.message or err.status.name
    if err.status is Status.UNAUTHENTICATED:
        return skift.Unauthenticated(message)
    if err.status in (Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED, Status.CANCELLED):
        return skift.Unavailable(
            f"the skift server did not answer: {message}",
            next="Check that `skift serve` is running and reachable, then retry.",
        )
    if err.status is Status.INVALID_ARGUMENT:
        return skift.Invalid(message)
    if err.status is Status.NOT_FOUND:
        return skift.NotFound(message)
    if err.status is Status.RESOURCE_EXHAUSTED:
        return skift.LimitExceeded(message)
    if err.status is Status.UNIMPLEMENTED:
        return skift.Invalid(
            f"the server does not offer this call: {message}",
            next="Upgrade the server to the client's version.",
        )
    return skift.SkiftError(f"{err.status.name}: {message}")


class ErrorDetailsCodec(StatusDetailsCodecBase):
    """grpclib's status details as a ``google.rpc.Status`` holding ``skift.v1.Error``s."""

    def encode(self, status: Status, message: str | None, details: Any) -> bytes:
        items: Sequence[Any] = details or ()
        packed = [
            AnyPb(type_url=_ERROR_URL, value=bytes(d)) for d in items if isinstance(d, v1.Error)
        ]
        return bytes(StatusPb(code=status.value, message=message or "", details=packed))

    def decode(self, status: Status, message: str | None, data: bytes) -> Any:
        try:
            pb = StatusPb.parse(data)
            return [v1.Error.parse(d.value) for d in pb.details if d.type_url == _ERROR_URL]
        except Exception:  # a foreign or damaged trailer: the status code still stands
            _log.debug("undecodable grpc-status-details-bin", exc_info=True)
            return []


def describe(exc: skift.SkiftError) -> str:
    """One line of JSON for logs: the SURFACE.md error shape."""
    return json.dumps(exc.as_dict(), default=str, sort_keys=True)
