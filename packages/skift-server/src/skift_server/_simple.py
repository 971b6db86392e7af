"""The handlers no one writes: an operation that only decodes, calls LocalSkift and encodes
is served from its declaration (``skift.OPERATIONS``), its method's signature and its
messages.

For an RPC without a hand-written handler (``_service.HANDLER_MODULES``), :func:`simple_handler`
reads the ``LocalSkift`` method's parameters and the request's fields, which name each other,
and makes a plan once, at the server's start:

- every request field goes to the parameter of its name, and every field is used: a field
  the method has no parameter for (or a required parameter the request lacks) stops the
  server from starting, naming both (an operation whose request and method disagree in
  more than the rules below is hand-written, in ``_handlers`` or the module of its concern);
- a field left unset gives the parameter its default: an ``optional`` field unset, a plain
  proto3 field at its zero value (except a boolean, which is always its value), an enum at
  UNSPECIFIED, an empty repeated field; a required parameter gets the value as it is;
- an enum becomes skift's word (a number the enum lacks is INVALID_ARGUMENT naming the
  field), a repeated field a list, a map a dict, an artifact its JSON form (the engine
  validates it and words the errors);
- the result goes into the response through the converter (``_convert_types``): nothing
  gives an empty response; a view the response mirrors becomes the response itself; a view,
  a list of views or a plain value the response wraps in its one field goes in that field.

Paged lists (an operation with a ``page_key``), streams and long polls are hand-written.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import inspect
import typing
from collections.abc import Callable
from typing import Any

import attrs
import betterproto2

import skift

from ._convert import enum_word
from ._convert_ops import artifact_doc
from ._convert_types import encoder
from ._convert_wire import wire_encoder
from ._handlers import Handler
from ._proto.skift import v1
from ._wirecodec import Encoded, field_key, varint


class NotSimple(TypeError):
    """The operation's request and method disagree: it needs a hand-written handler."""


_Arg = Callable[[Any], Any]
_OMIT: Any = object()


def _fields(message: type[Any]) -> dict[str, tuple[betterproto2.FieldMetadata, Any]]:
    by: Any = message._betterproto  # pyright: ignore[reportAttributeAccessIssue]
    return {
        f.name: (f.metadata["betterproto"], by.cls_by_field[f.name])
        for f in dataclasses.fields(message)
    }


def _argument(
    rpc: str, p: inspect.Parameter, name: str, fm: betterproto2.FieldMetadata, wire: Any
) -> _Arg:
    """How the request field ``name`` becomes the parameter ``p`` (``_OMIT``: its default)."""
    has_default = p.default is not inspect.Parameter.empty
    omit = _OMIT if has_default else None
    if fm.proto_type == betterproto2.TYPE_ENUM:
        return lambda r: _or(enum_word(getattr(r, name), wire, name), omit)
    if fm.proto_type == betterproto2.TYPE_MAP:
        return lambda r: dict(getattr(r, name))
    if wire is v1.Artifact:
        if fm.repeated:
            return lambda r: [artifact_doc(a) for a in getattr(r, name)] or omit
        return lambda r: artifact_doc(getattr(r, name) or v1.Artifact())
    if fm.proto_type == betterproto2.TYPE_MESSAGE and wire not in (dt.datetime, dt.timedelta):
        raise NotSimple(f"{rpc}: the request's {name} is a {wire.__name__}, not a plain value")
    if fm.repeated:
        return (lambda r: list(getattr(r, name)) or omit) if has_default else _list(name)
    if fm.optional or fm.proto_type == betterproto2.TYPE_MESSAGE:
        return lambda r: _or(getattr(r, name), omit)
    if not has_default or isinstance(p.default, bool):
        return lambda r: getattr(r, name)
    return lambda r: getattr(r, name) or omit  # a plain field's zero: not given


def _list(name: str) -> _Arg:
    return lambda r: list(getattr(r, name))


def _or(value: Any, omit: Any) -> Any:
    return omit if value is None else value


def _result(rpc: str, returns: Any, response: type[Any]) -> Callable[[Any], Any]:
    """How the method's result becomes the response."""
    if returns is None or returns is type(None):
        return lambda _: response()
    fields = _fields(response)
    view = next((t for t in _views(returns)), None)
    if len(fields) == 1:
        ((name, (fm, wire)),) = fields.items()
        if view is not None and name not in attrs.fields_dict(view):
            enc = encoder(view, wire)
            if fm.repeated:
                return lambda got: response(**{name: [enc(x) for x in got]})
            if wrapped_view(returns, response) is not None:
                return _wrapped(response, name, view, wire)
            return lambda got: response(**{name: enc(got)})
        if view is None:
            return lambda got: response(**{name: got})
    if view is None:
        raise NotSimple(f"{rpc}: {returns} fills none of {response.__name__}'s fields")
    return encoder(view, response)


def wrapped_view(returns: Any, response: type[Any]) -> tuple[str, type[Any], Any] | None:
    """For a method that always returns one view and a response whose one field (not a
    list) holds it as a message: that field's name, the view and the message (the response
    is then written straight from the view, :func:`_wrapped`); else None."""
    fields = _fields(response)
    if len(fields) != 1 or not attrs.has(returns):
        return None
    ((name, (fm, wire)),) = fields.items()
    if fm.repeated or fm.proto_type != betterproto2.TYPE_MESSAGE or fm.unwrap is not None:
        return None
    if name in attrs.fields_dict(returns) or not isinstance(wire, type):
        return None
    return name, returns, wire


def _wrapped(response: type[Any], name: str, view: type[Any], wire: Any) -> Callable[[Any], Any]:
    """A response whose one field holds ``view`` as ``wire`` (GetNode's node), as its bytes
    (an ``Encoded`` the codec sends as they are): the view written straight to the wire
    (``_convert_wire``), as ``bytes(response(name=to_pb(wire, got)))`` would encode it (the
    field's key, the length, the message; tests/server/test_convert_wire.py)."""
    key = field_key(response, name)
    write = wire_encoder(view, wire)

    def encode(got: Any) -> Encoded:
        data = write(got)
        n = len(data)
        return Encoded(key + (bytes((n,)) if n < 128 else varint(n)) + data)

    return encode


def _views(t: Any) -> list[type[Any]]:
    if attrs.has(t):
        return [t]
    return [v for a in typing.get_args(t) for v in _views(a)]


def simple_handler(op: skift.Operation) -> Handler:
    """The handler of ``op``'s RPC made from its declaration; :class:`NotSimple` if it needs
    one written by hand."""
    rpc = op.rpc
    if rpc is None or op.stream is not skift.RpcStream.UNARY or op.long_poll or op.page_key:
        raise NotSimple(f"{op.method}: a stream, a long poll or a paged list is hand-written")
    method = getattr(skift.LocalSkift, op.method)
    hints = typing.get_type_hints(method)
    request = getattr(v1, f"{rpc}Request")
    response = getattr(v1, f"{rpc}Response")
    fields = _fields(request)
    plan: list[tuple[str, _Arg]] = []
    for p in list(inspect.signature(method).parameters.values())[1:]:
        if p.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL):
            raise NotSimple(f"{op.method} takes *{p.name}: its handler is hand-written")
        if p.name not in fields:
            if p.default is inspect.Parameter.empty:
                raise NotSimple(f"{op.method}'s {p.name} is no field of {request.__name__}")
            continue
        fm, wire = fields[p.name]
        plan.append((p.name, _argument(rpc, p, p.name, fm, wire)))
    if unused := sorted(set(fields) - {name for name, _ in plan}):
        raise NotSimple(f"{request.__name__}'s {', '.join(unused)}: no parameter of {op.method}")
    encode = _result(rpc, hints.get("return"), response)
    name = op.method

    async def handle(sk: skift.LocalSkift, r: Any) -> Any:
        kw: dict[str, Any] = {}
        for param, arg in plan:
            value = arg(r)
            if value is not _OMIT:
                kw[param] = value
        return encode(await getattr(sk, name)(**kw))

    handle.__name__ = handle.__qualname__ = f"simple_{name}"
    return handle
