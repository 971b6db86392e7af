"""Bad bytes on the wire: malformed and oversized messages are INVALID_ARGUMENT, never a crash.

The requests here are raw bytes sent on a real HTTP/2 gRPC stream, so the
server's decoding is what is tested, not the client's encoding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from badrequest import problems
from grpclib.client import Channel
from grpclib.const import Cardinality, Status
from grpclib.exceptions import GRPCError

import skift
import skift_server
from skift_server._errors import ErrorDetailsCodec
from skift_server._proto.google.rpc import BadRequest
from skift_server._proto.skift import v1

if TYPE_CHECKING:
    from conftest import Serve


class Raw(bytes):
    """Bytes that grpclib's proto codec sends as they are."""

    def SerializeToString(self) -> bytes:
        return bytes(self)


async def send_raw(url_path: str, method: str, payload: bytes, reply: type) -> object:
    channel = Channel(path=url_path, status_details_codec=ErrorDetailsCodec())
    try:
        async with channel.request(
            f"/skift.v1.SkiftService/{method}", Cardinality.UNARY_UNARY, Raw, reply, timeout=10
        ) as stream:
            await stream.send_message(Raw(payload), end=True)
            return await stream.recv_message()
    finally:
        channel.close()


_OP = b"\x12\x06\x0a\x04\x0a\x02ok"  # ops[n]: a create_node titled "ok"

MALFORMED = [
    pytest.param(b"\x0a\x05ab", "project", id="length-past-the-end"),
    pytest.param(b"\x0a\x02\xff\xfe", "project", id="string-not-utf8"),
    pytest.param(b"\x08\x01", "project", id="string-sent-as-varint"),
    pytest.param(b"\xff" * 11, "project", id="varint-too-long"),
    pytest.param(b"\x07", "project", id="field-number-zero"),
    pytest.param(b"\x12\x02\x0a\x05", "ops[0].create_node", id="nested-length-past-the-end"),
    pytest.param(b"\x0b\x0c", "project", id="group-wire-type"),
    pytest.param(b"\x12\x04\x0a\x02\x0a\x09", "ops[0].create_node.title", id="nested-op-truncated"),
    pytest.param(
        _OP + b"\x12\x06\x0a\x04\x0a\x02\xff\xfe", "ops[1].create_node.title", id="second-op-not-utf8"
    ),
    pytest.param(_OP + b"\x1a\x02r1\x07", "request_id", id="garbage-after-a-field"),
    pytest.param(b"\x12\x03\x0a\x01\x07", "ops[0].create_node", id="nested-field-number-zero"),
]  # fmt: skip


@pytest.mark.parametrize(("payload", "field"), MALFORMED)
async def test_malformed_protobuf_is_invalid_argument(
    serve: Serve, payload: bytes, field: str
) -> None:
    """Malformed protobuf is INVALID_ARGUMENT with a skift Invalid in the details, and the
    server keeps serving. BadRequest names the field whose bytes are wrong as a path into
    the request (the deepest field the decoder was in; bytes of no field at the top: the
    field read before them, or the message's first field)."""
    server = await serve("--memory")
    with pytest.raises(GRPCError) as ei:
        await send_raw(str(server.socket), "Patch", payload, v1.PatchResponse)
    assert ei.value.status is Status.INVALID_ARGUMENT
    assert not problems(v1.PatchRequest, ei.value.details)
    assert _field(ei.value) == field
    err = skift_server._errors.from_grpc(ei.value)
    assert isinstance(err, skift.Invalid)
    assert "not a valid PatchRequest" in err.message
    async with skift_server.connect(server.url) as sk:
        assert await sk.list_projects() == []


async def test_oversized_message_is_resource_exhausted(serve: Serve) -> None:
    """A message over the server's limit is refused (RESOURCE_EXHAUSTED) from its length
    prefix, naming the limit; one just under it is served."""
    server = await serve("--memory", "--max-message-bytes", "20000")
    async with skift_server.connect(server.url, attempts=1) as sk:
        await sk.create_project("Big")
        with pytest.raises(skift.LimitExceeded) as ei:
            await sk.patch("big", [skift.CreateNode(title="x", body="b" * 30000)])
        assert "at most 20000" in ei.value.message
        assert ei.value.details["limit"] == "max_message_bytes"
        done = await sk.patch("big", [skift.CreateNode(title="x", body="b" * 19000)])
        assert done.nodes[0].ref == "big#1"


async def test_default_limit_refuses_a_huge_message(serve: Serve) -> None:
    """The default limit (4 MiB) holds: a 5 MiB patch is refused, the server lives on."""
    server = await serve("--memory")
    async with skift_server.connect(server.url, attempts=1) as sk:
        await sk.create_project("Huge")
        ops = [skift.CreateNode(title="t", body="b" * 60_000) for _ in range(90)]
        with pytest.raises(skift.LimitExceeded, match="takes at most"):
            await sk.patch("huge", ops)
        assert [p.slug for p in await sk.list_projects()] == ["huge"]


async def test_operation_with_no_op_set_is_invalid(serve: Serve) -> None:
    """A PatchOp that sets no operation is Invalid naming its index (well-formed bytes,
    meaningless request)."""
    server = await serve("--memory")
    async with skift_server.connect(server.url) as sk:
        await sk.create_project("P")
    request = v1.PatchRequest(project="p", ops=[v1.PatchOp()], request_id="r1")
    with pytest.raises(GRPCError) as ei:
        await send_raw(str(server.socket), "Patch", bytes(request), v1.PatchResponse)
    assert ei.value.status is Status.INVALID_ARGUMENT
    err = skift_server._errors.from_grpc(ei.value)
    assert "ops[0] sets no operation" in err.message
    assert err.details == {"index": 0, "field": "op"}
    assert _field(ei.value) == "ops[0]"  # the oneof is no field: its element is the path
    assert not problems(v1.PatchRequest, ei.value.details)


def _field(err: GRPCError) -> str:
    """The field path the answer's BadRequest names."""
    (bad,) = [d for d in err.details or () if isinstance(d, BadRequest)]
    return bad.field_violations[0].field
