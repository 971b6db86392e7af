"""One converter between the views (attrs classes) and the skift.v1 messages, from their types.

A view and its message name their fields alike. For each pair (``skift.NodeInfo`` and
``v1.Node``) the converter reads both classes (the view's attrs fields and their types,
the message's fields and their proto types) and writes one function each way, compiled
once on first use, that moves every field as the hand-written function would: the same
message, field for field, so the same bytes on the wire. The special cases are registered
once, by type, not per message:

- a timestamp leaves as aware UTC and comes back aware UTC (an unset one: the epoch, or
  None where the view's field is optional); a duration is a ``timedelta`` both ways;
- skift's closed sets are lowercase words (``p0``, ``open``, ``agent``) or StrEnums; on
  the wire they are enums whose names are the same words upper-cased. UNSPECIFIED is
  "not given": None, or the view's default, or the enum's registered default
  (:data:`ENUM_DEFAULTS`: a node without a status is open, without a priority p2);
- a Decimal travels as its string; JSON (a ``dict``) as a ``google.protobuf.Struct``;
- a tuple is a repeated field, a nested view its nested message (the pair is found from
  the two fields' types), an optional view field an ``optional`` one (a view's None is a
  plain proto3 field's zero value and back);
- a field only one side has is left out: the message's keeps its default, the view's
  must have a default (or the pair is refused when it is made, naming the field).

What differs in more than that is registered as a field hook (:func:`field_hooks`: a
restricted project's readers, an artifact's parts, an edge's default kind) or a whole
pair (:func:`register_pair`: an organization's limits).

It works as cattrs' generated hooks do (``cattrs.gen``: a function per class, written from
its fields and compiled once, visible in tracebacks through ``linecache``), without cattrs
itself: cattrs dispatches on one type, while a view and a message are a pair whose special
cases depend on both sides (a view's ``str`` is a plain string or an enum on the wire), and
importing cattrs would add to every CLI command's start-up (the thin CLI decodes with this).

No rule lives here: values are moved, never judged (the engine validates).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import linecache
import types
import typing
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final, TypeVar

import attrs
import betterproto2

import skift

from ._convert import enum_pb, from_struct, opt_ts, to_struct, ts, utc
from ._proto.skift import v1

V = TypeVar("V")
M = TypeVar("M", bound=betterproto2.Message)

ENUM_DEFAULTS: Final[dict[type[enum.Enum], enum.Enum]] = {
    skift.Status: skift.Status.OPEN,
    skift.Priority: skift.Priority.P2,
    skift.UsageKind: skift.UsageKind.ACTUAL,
}
"""A view's enum read from an UNSPECIFIED wire value (a view field with no default)."""

Encode = Callable[[Any], Any]
Decode = Callable[[Any], Any]


@attrs.frozen
class FieldHook:
    """How one field of a view moves where its type alone does not say."""

    encode: Callable[[Any], Any] | None = None
    """The message field's value from the view (the whole view is passed)."""
    decode: Callable[[Any], Any] | None = None
    """The view field's value from the message (the whole message is passed)."""
    skip: bool = False
    """The field is not on the wire (the view's default applies when decoding)."""


_FIELD_HOOKS: dict[tuple[str, str], FieldHook] = {}
_PAIRS: dict[tuple[str, str], tuple[Encode, Decode]] = {}


def field_hooks(view: str, **hooks: FieldHook) -> None:
    """Register how fields of the view class named ``view`` move (by message field name
    when encoding, by view field name when decoding). By name: registering loads nothing."""
    for name, hook in hooks.items():
        _FIELD_HOOKS[view, name] = hook


def register_pair(view: str, message: str, encode: Encode, decode: Decode) -> None:
    """A view and a message (by their class names) whose shapes differ too much for fields: its
    own functions both ways."""
    _PAIRS[view, message] = (encode, decode)


# ------------------------------------------------------------------ type reading


@functools.cache
def _hints(view: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(view)


def _optional(t: Any) -> tuple[Any, bool]:
    """``t`` without ``| None``, and whether it had it."""
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        if len(args) != len(typing.get_args(t)):
            return (args[0] if len(args) == 1 else typing.Union[tuple(args)]), True  # noqa: UP007
    return t, False


def _is_union(t: Any) -> bool:
    return typing.get_origin(t) in (typing.Union, types.UnionType)


def _item(t: Any) -> Any:
    """The element type of ``tuple[X, ...]`` / ``list[X]`` (or None)."""
    args = typing.get_args(t)
    return args[0] if args else None


def _is_message(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, betterproto2.Message)


def _is_struct(cls: Any) -> bool:
    return _is_message(cls) and cls.__name__ == "Struct" and "protobuf" in cls.__module__


def _meta(message: type[Any]) -> dict[str, betterproto2.FieldMetadata]:
    return {
        f.name: f.metadata["betterproto"]
        for f in dataclasses.fields(message)  # pyright: ignore[reportArgumentType]
    }


def _cls_by_field(message: type[Any]) -> dict[str, Any]:
    meta: Any = message._betterproto  # pyright: ignore[reportAttributeAccessIssue]
    return meta.cls_by_field


class _Words(dict[Any, Any]):
    """skift's word (or StrEnum) -> the wire enum; a word the enum lacks is Invalid."""

    def __init__(self, cls: type[betterproto2.Enum]) -> None:
        super().__init__()
        self.cls = cls
        self[None] = cls(0)
        self[""] = cls(0)
        for m in cls:
            if m.value:
                self[m.name.lower()] = m

    def __missing__(self, key: Any) -> Any:
        return enum_pb(self.cls, key)


def _table(wire: type[betterproto2.Enum], view: Any) -> dict[int, Any]:
    """The wire enum's numbers -> the view's value (a word, or the view's StrEnum member)."""
    out: dict[int, Any] = {}
    for m in wire:
        if not m.value:
            continue
        word = m.name.lower()
        if isinstance(view, type) and issubclass(view, enum.Enum):
            try:
                out[int(m.value)] = view(word)
            except ValueError:
                continue
        else:
            out[int(m.value)] = word
    return out


def _view_fields(view: type[Any]) -> dict[str, Any]:
    return {f.name: f for f in attrs.fields(view) if f.init}


# ------------------------------------------------------------------ generating


class _Gen:
    """The source of one function and the names it closes over."""

    def __init__(self) -> None:
        self.ns: dict[str, Any] = {}

    def bind(self, value: Any, hint: str) -> str:
        name = f"_{hint}_{len(self.ns)}"
        self.ns[name] = value
        return name

    def compile(self, name: str, src: str) -> Any:
        filename = f"<skift_server converter {name}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(compile(src, filename, "exec"), self.ns)
        return self.ns[name]


def _no_pair(view: type[Any], message: type[Any], why: str) -> TypeError:
    return TypeError(f"{view.__qualname__} <-> skift.v1.{message.__name__}: {why}")


@functools.cache
def encoder(view: type[Any], message: type[M]) -> Callable[[Any], M]:
    """The function that makes ``message`` from a ``view``."""
    if _is_union(view):
        return _oneof_encoder(view, message)
    if (view.__name__, message.__name__) in _PAIRS:
        return _PAIRS[view.__name__, message.__name__][0]
    hints = _hints(view)
    vfields = _view_fields(view)
    meta = _meta(message)
    classes = _cls_by_field(message)
    g = _Gen()
    msg = g.bind(message, "M")
    args: list[str] = []
    for name, fm in meta.items():
        hook = _FIELD_HOOKS.get((view.__name__, name))
        if hook is not None and hook.encode is not None:
            args.append(f"{name}={g.bind(hook.encode, 'hook')}(v)")
            continue
        if name not in vfields or (hook is not None and hook.skip):
            continue
        expr = _encode_field(g, view, message, name, fm, classes[name], hints[name])
        args.append(f"{name}={expr}")
    for name in vfields:
        hook = _FIELD_HOOKS.get((view.__name__, name))
        if name not in meta and not (hook and (hook.skip or hook.decode)):
            raise _no_pair(view, message, f"the view's {name} has no field on the wire")
    fn = f"to_{message.__name__}"
    src = f"def {fn}(v):\n    return {msg}(\n        " + ",\n        ".join(args) + ",\n    )\n"
    return g.compile(fn, src)


def _encode_field(
    g: _Gen,
    view: type[Any],
    message: type[Any],
    name: str,
    fm: betterproto2.FieldMetadata,
    wire: Any,
    hint: Any,
) -> str:
    t, opt = _optional(hint)
    v = f"v.{name}"
    if fm.proto_type == betterproto2.TYPE_MAP:
        return f"dict({v})"
    if fm.repeated:
        item = _item(t)
        if _is_message(wire):
            sub = g.bind(encoder(item, wire), "enc")
            return f"[{sub}(x) for x in {v}]"
        if fm.proto_type == betterproto2.TYPE_ENUM:
            words = g.bind(_Words(wire), "words")
            return f"[{words}[x] for x in {v}]"
        return f"list({v})" if not opt else f"list({v} or ())"
    if fm.proto_type == betterproto2.TYPE_ENUM:
        return f"{g.bind(_Words(wire), 'words')}[{v}]"
    if wire is dt.datetime:
        return f"{g.bind(utc, 'utc')}({v})"
    if wire is dt.timedelta:
        return v
    if _is_struct(wire):
        s = g.bind(to_struct, "struct")
        return f"None if {v} is None else {s}({v})" if opt else f"{s}({v})"
    if _is_message(wire):
        sub = g.bind(encoder(t, wire), "enc")
        return f"None if {v} is None else {sub}({v})" if opt else f"{sub}({v})"
    if t is Decimal:
        return f"None if {v} is None else str({v})" if opt else f"str({v})"
    if opt and not fm.optional:
        zero = g.bind(wire(), "zero")
        return f"{zero} if {v} is None else {v}"
    return v


@functools.cache
def decoder(message: type[betterproto2.Message], view: type[V]) -> Callable[[Any], V]:
    """The function that makes a ``view`` from ``message`` (None: the message unset)."""
    if _is_union(view):
        return _oneof_decoder(message, view)
    if (view.__name__, message.__name__) in _PAIRS:
        return _PAIRS[view.__name__, message.__name__][1]
    hints = _hints(view)
    meta = _meta(message)
    classes = _cls_by_field(message)
    g = _Gen()
    cls = g.bind(view, "V")
    msg = g.bind(message, "M")
    args: list[str] = []
    for name, f in _view_fields(view).items():
        hook = _FIELD_HOOKS.get((view.__name__, name))
        if hook is not None and hook.decode is not None:
            args.append(f"{name}={g.bind(hook.decode, 'hook')}(m)")
            continue
        if name not in meta or (hook is not None and hook.skip):
            if f.default is attrs.NOTHING:
                raise _no_pair(view, message, f"the view's {name} is not on the wire")
            continue
        expr = _decode_field(g, f, name, meta[name], classes[name], hints[name])
        args.append(f"{name}={expr}")
    fn = f"from_{message.__name__}"
    src = (
        f"def {fn}(m):\n    if m is None:\n        m = {msg}()\n"
        f"    return {cls}(\n        " + ",\n        ".join(args) + ",\n    )\n"
    )
    return g.compile(fn, src)


def _decode_field(
    g: _Gen,
    f: attrs.Attribute[Any],
    name: str,
    fm: betterproto2.FieldMetadata,
    wire: Any,
    hint: Any,
) -> str:
    t, opt = _optional(hint)
    m = f"m.{name}"
    if fm.proto_type == betterproto2.TYPE_MAP:
        return f"dict({m})"
    if fm.repeated:
        item = _item(t)
        seq = "list" if typing.get_origin(t) is list else "tuple"
        if _is_message(wire):
            sub = g.bind(decoder(wire, item), "dec")
            return f"{seq}([{sub}(x) for x in {m}])"
        return f"{seq}({m})"
    if fm.proto_type == betterproto2.TYPE_ENUM:
        table = g.bind(_table(wire, t), "table")
        if opt:
            return f"{table}.get({m})"
        if f.default is not attrs.NOTHING:
            default = g.bind(f.default, "default")
        elif isinstance(t, type) and issubclass(t, enum.Enum):
            default = g.bind(ENUM_DEFAULTS[t], "default")
        else:
            default = '""'
        return f"{table}.get({m}, {default})"
    if wire is dt.datetime:
        return f"{g.bind(opt_ts if opt else ts, 'ts')}({m})"
    if wire is dt.timedelta:
        return m
    if _is_struct(wire):
        s = g.bind(from_struct, "struct")
        return f"None if {m} is None else {s}({m})" if opt else f"{s}({m})"
    if _is_message(wire):
        sub = g.bind(decoder(wire, t), "dec")
        return f"None if {m} is None else {sub}({m})" if opt else f"{sub}({m})"
    if t is Decimal:
        d = g.bind(Decimal, "Decimal")
        return f"None if {m} is None else {d}({m})" if opt else f'{d}({m} or "0")'
    if opt and not fm.optional:
        return f"{m} or None"
    return m


# ------------------------------------------------------------------ oneofs
#
# A view field typed as a union of views (an artifact's ``Part``: TextPart | BlobPart |
# ReferencePart) is a message whose fields are one oneof, each member the message of
# the same name (v1.Part: text=v1.TextPart, blob=v1.BlobPart, reference=v1.ReferencePart).


def _oneof_members(union: Any, message: type[Any]) -> list[tuple[str, type[Any], type[Any]]]:
    """(oneof field, view class, its message class) for each member of the union."""
    classes = _cls_by_field(message)
    groups = {fm.group for fm in _meta(message).values()}
    if len(groups) != 1 or None in groups:
        raise _no_pair(union, message, "a union needs a message that is one oneof")
    out: list[tuple[str, type[Any], type[Any]]] = []
    for view in typing.get_args(union):
        field = next((n for n, c in classes.items() if c.__name__ == view.__name__), None)
        if field is None:
            raise _no_pair(view, message, f"no field of the oneof is a {view.__name__}")
        out.append((field, view, classes[field]))
    return out


@functools.cache
def _oneof_encoder(union: Any, message: type[M]) -> Callable[[Any], M]:
    by_view = {
        view: (field, encoder(view, wire)) for field, view, wire in _oneof_members(union, message)
    }

    def encode(v: Any) -> M:
        field, enc = by_view[type(v)]
        return message(**{field: enc(v)})

    return encode


@functools.cache
def _oneof_decoder(message: type[Any], union: Any) -> Callable[[Any], Any]:
    members = [(field, decoder(wire, view)) for field, view, wire in _oneof_members(union, message)]
    names = ", ".join(field for field, _ in members)

    def decode(m: Any) -> Any:
        for field, dec in members:
            got = getattr(m, field)
            if got is not None:
                return dec(got)
        raise skift.Invalid(
            f"a {message.__name__} sets none of {names}", next=f"Set one of: {names}."
        )

    return decode


# ------------------------------------------------------------------ the calls


def to_pb(cls: type[M], view: Any) -> M:
    """The message ``cls`` carrying ``view``'s fields."""
    kind: type[Any] = view.__class__
    return encoder(kind, cls)(view)


def from_pb(cls: type[betterproto2.Message], view: type[V], message: Any) -> V:
    """The view ``view`` from a ``cls`` message (None: the message unset)."""
    return decoder(cls, view)(message)


# ------------------------------------------------------------------ the special cases


def _org_limits_pb(o: skift.OrgLimits) -> Any:
    return v1.OrgLimits(
        effective={k: v for k in o.server if isinstance(v := getattr(o, k), int)},
        own=list(o.own),
        server=dict(o.server),
        ops_per_patch=o.ops_per_patch,
    )


def _org_limits_view(m: Any) -> skift.OrgLimits:
    m = m or v1.OrgLimits()
    return skift.OrgLimits(
        **dict(m.effective), own=tuple(m.own), server=dict(m.server), ops_per_patch=m.ops_per_patch
    )


register_pair("OrgLimits", "OrgLimits", _org_limits_pb, _org_limits_view)
field_hooks(
    "ProjectInfo",
    # a restricted project carries its readers (possibly none); an unrestricted one None
    restricted=FieldHook(encode=lambda v: v.readers is not None),
    readers=FieldHook(
        encode=lambda v: list(v.readers or ()),
        decode=lambda m: tuple(m.readers) if m.restricted else None,
    ),
)
field_hooks("EdgeInfo", kind=FieldHook(decode=lambda m: m.kind or "blocks"))
field_hooks("TextPart", media_type=FieldHook(decode=lambda m: m.media_type or "text/markdown"))
field_hooks(
    "DeliveryInfo",
    counts=FieldHook(decode=lambda m: {k: int(n) for k, n in sorted(m.counts.items())}),
)
field_hooks("WebhookInfo", secret=FieldHook(skip=True))  # beside the webhook, once:


def _with_secret_pb(w: skift.WebhookInfo) -> Any:
    return {"webhook": encoder(type(w), v1.Webhook)(w), "secret": w.secret or ""}


def _with_secret(m: Any) -> skift.WebhookInfo:
    got = decoder(v1.Webhook, skift.WebhookInfo)(m.webhook)
    return attrs.evolve(got, secret=m.secret or None)


for _response in ("AddWebhookResponse", "RotateWebhookSecretResponse"):
    register_pair(
        "WebhookInfo",
        _response,
        lambda w, r=_response: getattr(v1, r)(**_with_secret_pb(w)),
        _with_secret,
    )
field_hooks(
    "ReadyPage",
    next_page=FieldHook(decode=lambda m: m.next_page_token or None),
    ends=FieldHook(skip=True),  # the server's keyset positions: in its page token instead
)
field_hooks("EventPage", cursor=FieldHook(decode=lambda m: m.next_page_token))
field_hooks("Claim", input_ends=FieldHook(skip=True))  # in next_inputs_page_token instead
