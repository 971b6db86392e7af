"""skift.v1 messages of patch operations, both ways, and a request's artifacts and parts as
their JSON form (what ``skift.parse_op`` reads, so the engine validates and words the errors).
A patch operation is a oneof whose members the JSON form names otherwise (``from`` is
``from_node``, an update's labels a wrapper): its own functions, not the converter's."""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import betterproto2

import skift

from ._convert import enum_pb, enum_word, from_struct, to_struct
from ._proto.skift import v1

# ------------------------------------------------------------------ patch operations

_OP_MESSAGES: Final[dict[str, type[Any]]] = {
    "create_node": v1.CreateNodeOp,
    "update_node": v1.UpdateNodeOp,
    "drop_node": v1.DropNodeOp,
    "complete_node": v1.CompleteNodeOp,
    "reopen_node": v1.ReopenNodeOp,
    "hold_node": v1.HoldNodeOp,
    "unhold_node": v1.UnholdNodeOp,
    "add_edge": v1.AddEdgeOp,
    "remove_edge": v1.RemoveEdgeOp,
    "attach_artifact": v1.AttachArtifactOp,
    "add_comment": v1.AddCommentOp,
}

_ENUMS: Final[dict[str, type[betterproto2.Enum]]] = {
    "priority": v1.Priority,
    "assignee_kind": v1.AssigneeKind,
}
"""Operation fields that are enums on the wire and words in the JSON form."""

_WIRE_NAME: Final = {"from": "from_node", "to": "to_node"}
"""JSON keys whose message field is named otherwise (``from`` is a keyword in Python)."""


def _json_key(attr: str) -> str:
    return "from" if attr == "from_" else attr


def _strings(items: Sequence[object]) -> list[str]:
    return [str(item) for item in items]


def op_pb(op: skift.Op) -> v1.PatchOp:
    """A parsed operation as its message (only the fields that differ from the defaults)."""
    doc = skift.op_to_dict(op)
    name = str(doc.pop("op"))
    kw: dict[str, Any] = {}
    for key, value in doc.items():
        field = _WIRE_NAME.get(key, key)
        if key in _ENUMS:
            kw[field] = enum_pb(_ENUMS[key], value)
        elif key == "cascade":
            kw[field] = v1.Cascade(max_nodes=int(value["max_nodes"]))
        elif key == "artifact":
            kw[field] = artifact_doc_pb(value)
        elif key == "artifacts":
            kw[field] = [artifact_doc_pb(a) for a in value]
        elif key == "labels" and name == "update_node":
            kw[field] = v1.Labels(values=list(value))
        elif isinstance(value, list | tuple):
            kw[field] = _strings(value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            kw[field] = value
    return v1.PatchOp(**{name: _OP_MESSAGES[name](**kw)})


@functools.cache  # on first use: a client that never patches does not load skift._ops
def _op_classes() -> dict[str, type[Any]]:
    out: dict[str, type[Any]] = {}
    for cls in typing.get_args(skift.Op):
        out[str(attrs.fields_dict(cls)["op"].default)] = cls
    return out


def op_doc(m: v1.PatchOp, index: int) -> dict[str, Any]:
    """A PatchOp message as the JSON form of an operation, for ``skift.parse_op``.

    Unset fields are left out, so the operation's defaults apply and the
    engine's own validation words any error. In proto3 an empty plain string
    or list is indistinguishable from unset; ``optional`` fields keep "" apart.
    An enum at UNSPECIFIED is left out, except an ``optional`` one that was set
    (UpdateNodeOp.assignee_kind), which clears the field.
    """
    name, body = _which(m)
    if body is None:
        raise skift.Invalid(
            f"ops[{index}] sets no operation",
            next="Set exactly one of: " + ", ".join(_OP_MESSAGES) + ".",
            index=index,
            field="op",
        )
    meta = {f.name: _field_meta(f) for f in dataclasses.fields(body)}
    doc: dict[str, Any] = {"op": name}
    for f in attrs.fields(_op_classes()[name]):
        key = _json_key(f.name)
        wire = _WIRE_NAME.get(key, key)
        if not f.init or wire not in meta:
            continue
        required = f.default is attrs.NOTHING
        value = getattr(body, wire)
        if key in _ENUMS and value is not None:
            word = enum_word(value, _ENUMS[key], f"ops[{index}].{name}.{key}")
            if word is not None:
                doc[key] = word
            elif meta[wire].optional:
                doc[key] = ""
        elif isinstance(value, v1.Cascade):
            doc[key] = {"max_nodes": value.max_nodes}
        elif isinstance(value, v1.Artifact):
            doc[key] = artifact_doc(value)
        elif key == "artifacts" and value:
            doc[key] = [artifact_doc(a) for a in value]
        elif isinstance(value, v1.Labels):
            doc[key] = list(value.values)
        elif value is None or (not required and not meta[wire].optional and value in ("", [], 0)):
            continue
        else:
            doc[key] = value
    return doc


def _field_meta(f: dataclasses.Field[Any]) -> betterproto2.FieldMetadata:
    meta: betterproto2.FieldMetadata = f.metadata["betterproto"]
    return meta


def _which(m: v1.PatchOp) -> tuple[str, Any]:
    for name in _OP_MESSAGES:
        value = getattr(m, name)
        if value is not None:
            return name, value
    return "", None


# ------------------------------------------------------------------ artifacts and blobs


def part_pb(doc: Mapping[str, Any]) -> v1.Part:
    """A part's JSON form (``skift.part_to_dict``) as its message."""
    kind = doc.get("type")
    if kind == "text":
        return v1.Part(
            text=v1.TextPart(
                text=str(doc.get("text", "")), media_type=str(doc.get("media_type", ""))
            )
        )
    if kind == "blob":
        return v1.Part(
            blob=v1.BlobPart(
                digest=str(doc.get("digest", "")),
                media_type=str(doc.get("media_type", "")),
                size=int(doc.get("size", 0)),
            )
        )
    return v1.Part(
        reference=v1.ReferencePart(
            uri=str(doc.get("uri", "")),
            digest=doc.get("digest"),
            media_type=doc.get("media_type"),
            commit=doc.get("commit"),
        )
    )


def part_doc(m: v1.Part) -> dict[str, Any]:
    """A Part message as a part's JSON form; the engine validates it."""
    if m.text is not None:
        return {
            "type": "text",
            "text": m.text.text,
            "media_type": m.text.media_type or "text/markdown",
        }
    if m.blob is not None:
        return {
            "type": "blob",
            "digest": m.blob.digest,
            "media_type": m.blob.media_type,
            "size": m.blob.size,
        }
    if m.reference is not None:
        r = m.reference
        out: dict[str, Any] = {"type": "reference", "uri": r.uri}
        for name in ("digest", "media_type", "commit"):
            if getattr(r, name) is not None:
                out[name] = getattr(r, name)
        return out
    return {"type": ""}  # no part set: the engine names the field


def artifact_doc_pb(doc: Mapping[str, Any]) -> v1.Artifact:
    """An artifact's JSON form (``op_to_dict``) as its message."""
    parts: list[Any] = list(doc.get("parts", []))
    return v1.Artifact(
        name=str(doc.get("name", "")),
        description=str(doc.get("description", "")),
        parts=[part_pb(p) for p in parts],
        metadata=to_struct(dict(doc.get("metadata", {}))),
    )


def artifact_doc(m: v1.Artifact) -> dict[str, Any]:
    return {
        "name": m.name,
        "description": m.description,
        "parts": [part_doc(p) for p in m.parts],
        "metadata": from_struct(m.metadata),
    }
