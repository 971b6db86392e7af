"""skift's error tree on the wire: one gRPC status per meaning, with standard details.

Every :class:`skift.SkiftError` leaves the server as one gRPC status chosen by
:data:`MAPPING` (the one table of status codes; extend it there). Its
``grpc-message`` is ``"<message> -- next: <next move>"``, and its
``grpc-status-details-bin`` trailer is a standard ``google.rpc.Status``
holding, in this order:

- ``google.rpc.ErrorInfo``: ``reason`` (e.g. ``NOT_READY``), ``domain``
  ``skift.dev``, and ``metadata`` (the skift error class and code, the next
  move, and each detail as a string), so a client that knows nothing of
  skift can branch on ``reason``;
- ``skift.v1.Error``: the message, the next move, the exception class and the
  structured details, from which the Python client raises the very same
  skift exception;
- ``google.rpc.BadRequest`` for INVALID_ARGUMENT (the field at fault, as a
  path into the request where the error names one);
- ``google.rpc.RetryInfo`` for UNAVAILABLE, and for any error naming a
  ``retry_after`` (a long poll past its principal's cap: RESOURCE_EXHAUSTED),
  how long to wait before retrying.

``NothingReady`` is NOT_FOUND (reason ``NOTHING_READY``), not UNAVAILABLE:
gRPC clients and proxies treat UNAVAILABLE as "retry this call", and an empty
queue is an answer, not a fault.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Final

import attrs
import betterproto2
from grpclib.const import Status
from grpclib.encoding.base import StatusDetailsCodecBase
from grpclib.exceptions import GRPCError

import skift

from ._convert import from_struct, jsonable, to_struct
from ._fieldpath import proto_path
from ._proto.google.protobuf import Any as AnyPb
from ._proto.google.rpc import BadRequest, BadRequestFieldViolation, ErrorInfo, RetryInfo
from ._proto.google.rpc import Status as StatusPb
from ._proto.skift import v1
from ._wirecodec import read_exactly

_log = logging.getLogger("skift_server")

DOMAIN: Final = "skift.dev"
"""ErrorInfo.domain of every skift error."""

SEPARATOR: Final = " -- next: "
"""Between the message and the next move in grpc-message."""

RETRY_DELAY: Final = timedelta(seconds=1)
"""RetryInfo.retry_delay of an UNAVAILABLE answer that names no delay of its own."""


@attrs.frozen
class Rule:
    """One row of the mapping: errors of ``cls`` (for which ``when`` holds) leave as
    ``status`` with ErrorInfo ``reason``."""

    cls: type[skift.SkiftError]
    status: Status
    reason: str
    when: Callable[[skift.SkiftError], bool] | None = None


def _policy(exc: skift.SkiftError) -> bool:
    return "denials" in exc.details


def _not_ready(exc: skift.SkiftError) -> bool:
    return "reasons" in exc.details


MAPPING: Final[list[Rule]] = [
    Rule(skift.Unauthenticated, Status.UNAUTHENTICATED, "UNAUTHENTICATED"),
    Rule(skift.Unavailable, Status.UNAVAILABLE, "UNAVAILABLE"),
    Rule(skift.NothingReady, Status.NOT_FOUND, "NOTHING_READY"),
    Rule(skift.NotFound, Status.NOT_FOUND, "NOT_FOUND"),
    Rule(skift.Invalid, Status.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    Rule(skift.Refused, Status.PERMISSION_DENIED, "POLICY_DENIED", _policy),
    Rule(skift.Refused, Status.FAILED_PRECONDITION, "NOT_READY", _not_ready),
    Rule(skift.Refused, Status.FAILED_PRECONDITION, "REFUSED"),
    Rule(skift.FencingError, Status.ABORTED, "FENCED"),
    Rule(skift.CycleError, Status.FAILED_PRECONDITION, "CYCLE"),
    Rule(skift.IdempotencyMismatch, Status.ALREADY_EXISTS, "IDEMPOTENCY_MISMATCH"),
    Rule(skift.CursorExpired, Status.ABORTED, "CURSOR_EXPIRED"),
    Rule(skift.Conflict, Status.ABORTED, "CONFLICT"),
    Rule(skift.LimitExceeded, Status.RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED"),
]
"""How each error leaves: the first rule whose class the error is an instance of (and
whose ``when`` holds) wins, so a subclass's rule goes before its parent's."""

STATUS: Final[dict[type[skift.SkiftError], Status]] = {}
"""The status of each error class with one status whatever its details (for readers)."""
for _rule in MAPPING:
    if _rule.when is None:
        STATUS.setdefault(_rule.cls, _rule.status)

_BY_CODE: Final[dict[str, type[skift.SkiftError]]] = {
    rule.cls.code: rule.cls for rule in reversed(MAPPING) if rule.cls.code != "conflict"
} | {"conflict": skift.Conflict}

_TYPES: Final[dict[type[betterproto2.Message], str]] = {
    v1.Error: "skift.v1.Error",
    ErrorInfo: "google.rpc.ErrorInfo",
    BadRequest: "google.rpc.BadRequest",
    RetryInfo: "google.rpc.RetryInfo",
}
_BY_URL: Final = {f"type.googleapis.com/{name}": cls for cls, name in _TYPES.items()}


def rule_of(exc: skift.SkiftError) -> Rule:
    for rule in MAPPING:
        if isinstance(exc, rule.cls) and (rule.when is None or rule.when(exc)):
            return rule
    return Rule(skift.SkiftError, Status.UNKNOWN, "UNKNOWN")


def status_of(exc: skift.SkiftError) -> Status:
    return rule_of(exc).status


def _class_name(exc: skift.SkiftError) -> str:
    """The nearest class of ``exc`` that the skift package exports (so a client can raise it)."""
    for cls in type(exc).__mro__:
        if getattr(skift, cls.__name__, None) is cls:
            return cls.__name__
    return type(exc).__name__


def _text(value: Any) -> str:
    v = jsonable(value)
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def field_path(
    details: dict[str, Any], request_type: type[Any] | None = None, request: Any = None
) -> str:
    """The path into the request BadRequest names for an error with ``details``: the core's
    ``field`` (under ``ops[index]`` for a patch operation's), as the proto spells it
    (``_fieldpath``)."""
    field = str(details.get("field", "") or "")
    if not field.startswith("ops[") and isinstance(details.get("index"), int):
        field = f"ops[{details['index']}]" + (f".{field}" if field else "")
    return proto_path(request_type, request, field)


def message_of(exc: skift.SkiftError) -> str:
    """grpc-message: what went wrong, then the next move after a separator."""
    return f"{exc.message}{SEPARATOR}{exc.next}" if exc.next else exc.message


def details_of(exc: skift.SkiftError, field: str | None = None) -> list[betterproto2.Message]:
    """The detail messages of ``exc``, in the order the module docstring gives (``field``:
    BadRequest's path into the request, when the caller worded it; else from the details)."""
    rule = rule_of(exc)
    cls = _class_name(exc)
    metadata = {"error_class": cls, "code": exc.code}
    if exc.next:
        metadata["next"] = exc.next
    metadata.update({str(k): _text(v) for k, v in exc.details.items()})
    out: list[betterproto2.Message] = [
        ErrorInfo(reason=rule.reason, domain=DOMAIN, metadata=metadata),
        v1.Error(
            code=exc.code,
            error_class=cls,
            message=exc.message,
            next=exc.next,
            details=to_struct(exc.details),
        ),
    ]
    if rule.status is Status.INVALID_ARGUMENT:
        violation = BadRequestFieldViolation(
            field=field_path(exc.details) if field is None else field,
            description=exc.message,
            reason=rule.reason,
        )
        out.append(BadRequest(field_violations=[violation]))
    if rule.status is Status.UNAVAILABLE or "retry_after" in exc.details:
        after = exc.details.get("retry_after")
        delay = timedelta(seconds=float(after)) if isinstance(after, int | float) else RETRY_DELAY
        out.append(RetryInfo(retry_delay=delay))
    return out


_MADE_AT_MOST: Final = 256
"""Answers :func:`to_grpc` keeps made (a flood of one refusal is encoded once)."""


class _Details(list[betterproto2.Message]):
    """An answer's detail messages, and their encodings once made (by status and message)."""

    def __init__(self, items: list[betterproto2.Message]) -> None:
        super().__init__(items)
        self.encoded: dict[tuple[int, str], bytes] = {}


_made: dict[tuple[Any, ...], tuple[Status, str, _Details]] = {}


def to_grpc(
    exc: skift.SkiftError, request_type: type[Any] | None = None, request: Any = None
) -> GRPCError:
    """The GRPCError a handler raises for ``exc`` (refusing ``request``, a ``request_type``:
    BadRequest names the field as a path into it). The same refusal again (class, message,
    next move and details alike: a thousand calls past one cap) reuses what the first made,
    its details' encoding included."""
    field = None
    if request_type is not None and status_of(exc) is Status.INVALID_ARGUMENT:
        field = field_path(exc.details, request_type, request)
    try:
        key: tuple[Any, ...] | None = (
            field,
            type(exc),
            exc.code,
            exc.message,
            exc.next,
            tuple(sorted((k, repr(v)) for k, v in exc.details.items())),
        )
    except TypeError:  # details that do not sort: made afresh
        key = None
    made = _made.get(key) if key is not None else None
    if made is None:
        made = (status_of(exc), message_of(exc), _Details(details_of(exc, field)))
        if key is not None:
            if len(_made) >= _MADE_AT_MOST:
                _made.pop(next(iter(_made)))
            _made[key] = made
    return GRPCError(*made)


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
    if err.status is Status.DEADLINE_EXCEEDED:
        return skift.Unavailable(
            f"the call ran past its deadline: {message}",
            next="The server may be busy (a large import, a slow query): retry, or allow more "
            "time (SKIFT_TIMEOUT=SECONDS, or connect(timeout=…)).",
        )
    if err.status in (Status.UNAVAILABLE, Status.CANCELLED):
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
    """grpclib's status details as a ``google.rpc.Status`` of ErrorInfo, skift.v1.Error,
    BadRequest and RetryInfo."""

    def encode(self, status: Status, message: str | None, details: Any) -> bytes:
        if isinstance(details, _Details):  # made by to_grpc: encoded once
            key = (status.value, message or "")
            found = details.encoded.get(key)
            if found is None:
                found = details.encoded[key] = self._encode(status, message, details)
            return found
        return self._encode(status, message, details)

    @staticmethod
    def _encode(status: Status, message: str | None, details: Any) -> bytes:
        items: Sequence[Any] = details or ()
        packed = [
            AnyPb(type_url=f"type.googleapis.com/{_TYPES[type(d)]}", value=bytes(d))
            for d in items
            if type(d) in _TYPES
        ]
        return bytes(StatusPb(code=status.value, message=message or "", details=packed))

    def decode(self, status: Status, message: str | None, data: bytes) -> Any:
        """The details of a failed call (a client's). The same details again (a thousand
        calls refused past one cap) are decoded once: the messages are shared, to be read."""
        found = _decoded.get(data)
        if found is not None:
            return list(found)
        try:
            # read exactly as encoded: betterproto2's own parser reads damaged bytes as some
            # other details (three bytes of 0xff: none; a cut one: a detail with fields gone)
            pb = read_exactly(StatusPb, data)
            got = [
                read_exactly(_BY_URL[d.type_url], d.value)
                for d in pb.details
                if d.type_url in _BY_URL
            ]
        except Exception:  # a foreign or damaged trailer: the status code still stands
            _log.debug("undecodable grpc-status-details-bin", exc_info=True)
            return []
        if len(_decoded) >= _DECODED_AT_MOST:
            _decoded.clear()
        _decoded[data] = tuple(got)
        return got


_decoded: dict[bytes, tuple[Any, ...]] = {}
_DECODED_AT_MOST: Final = 256


def describe(exc: skift.SkiftError) -> str:
    """One line of JSON for logs: the SURFACE.md error shape."""
    return json.dumps(exc.as_dict(), default=str, sort_keys=True)
