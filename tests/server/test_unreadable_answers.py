"""An answer the remote client cannot read is Unavailable naming the RPC, never another answer
and never the decoder's own exception.

A server that answers with bytes that are not its reply's encoding (truncated, a string
that is not UTF-8, a varint that never ends) or with values this client cannot hold (a
timestamp past the year 9999) stands in for a server of another version, or something
broken between the two. Before, betterproto2's parser read a truncated ListProjects as a
project with an empty title and three bytes of 0xff as no projects at all, and a
timestamp out of range raised OverflowError out of ``ready()``. The server here is grpclib
on a real socket (a unix socket; TCP with TLS for grpclib's own path), sending the bytes
each case gives.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from grpclib.const import Cardinality, Handler, Status
from grpclib.encoding.base import StatusDetailsCodecBase
from grpclib.exceptions import GRPCError
from grpclib.server import Server, Stream
from serverproc import free_port

import skift
import skift_server
from skift_server._proto.skift import v1


def _varint(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def _node(**kw: Any) -> v1.Node:
    return v1.Node(ref="p-1", id="01J000000000000000000000NN", title="Hello", project="p", **kw)


def _ready(*nodes: v1.Node) -> bytes:
    return bytes(v1.ReadyResponse(nodes=list(nodes)))


GOOD = _ready(_node())


def _year_10000() -> bytes:
    """A Ready page whose node was created in the year 10000 (Node.created_at is field 15)."""
    node = bytes(_node())
    ts = b"\x08" + _varint(253402300800 + 86400)  # 10000-01-02: seconds = 1
    node += _varint(15 << 3 | 2) + _varint(len(ts)) + ts
    return b"\x0a" + _varint(len(node)) + node


PAGE = _ready(*(_node() for _ in range(60)))  # past 2 KiB: upb reads it first (UPB_FROM)

BAD: dict[str, tuple[bytes, str]] = {
    "truncated": (GOOD[:-3], "runs past the end of the message"),
    "a truncated page of 3 KiB": (PAGE[:-3], "runs past the end of the message"),
    "zero bytes (field number 0)": (b"\x00\x00", "invalid field number 0"),
    "not UTF-8": (GOOD.replace(b"Hello", b"H\xffllo"), "title: not valid UTF-8"),
    "a varint that never ends": (b"\xff\xff\xff", "truncated varint"),
    "a timestamp past 9999": (_year_10000(), "out of range"),
}


class _Raw:
    """A reply sent as the bytes it holds, whatever they are."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def SerializeToString(self) -> bytes:  # grpclib's codec calls it
        return self.data


class _Answering:
    """Answers Ready, GetNode and ListProjects with ``answer`` and ExportBeads with it as
    its one streamed message."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer

    async def unary(self, stream: Stream[Any, Any]) -> None:
        await stream.recv_message()
        await stream.send_message(_Raw(self.answer))

    def __mapping__(self) -> dict[str, Any]:
        def unary(request: type[Any]) -> Handler:
            return Handler(self.unary, Cardinality.UNARY_UNARY, request, _Raw)

        return {
            "/skift.v1.SkiftService/Ready": unary(v1.ReadyRequest),
            "/skift.v1.SkiftService/GetNode": unary(v1.GetNodeRequest),
            "/skift.v1.SkiftService/ListProjects": unary(v1.ListProjectsRequest),
            "/skift.v1.SkiftService/ExportBeads": Handler(
                self.unary, Cardinality.UNARY_STREAM, v1.ExportBeadsRequest, _Raw
            ),
        }


async def _serving(answer: bytes, tmp_path: Path) -> tuple[Server, str]:
    server = Server([_Answering(answer)])
    sock = tmp_path / "skift.sock"
    await server.start(path=str(sock))
    return server, f"unix://{sock}"


async def _stop(server: Server) -> None:
    server.close()
    await server.wait_closed()


async def _with(answer: bytes, tmp_path: Path) -> AsyncIterator[skift_server.RemoteSkift]:
    server, url = await _serving(answer, tmp_path)
    try:
        async with skift_server.connect(url, attempts=1) as sk:
            yield sk
    finally:
        await _stop(server)


def _unreadable(err: skift.Unavailable, rpc: str, why: str) -> None:
    assert err.message.startswith(f"the skift server's answer to {rpc} could not be read: ")
    assert why in err.message
    assert err.details["rpc"] == rpc
    assert "skift --version" in err.next


# GetNodeResponse's node is field 1, as ReadyResponse's nodes: the same bytes serve both
CALLS: dict[str, tuple[str, Callable[[skift_server.RemoteSkift], Any]]] = {
    "ready (a page read straight from the bytes)": ("Ready", lambda sk: sk.ready()),
    "get (one field read straight from the bytes)": (
        "GetNode",
        lambda sk: sk.get("p-1"),
    ),
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("call", list(CALLS))
async def test_an_answer_that_cannot_be_read_is_unavailable(
    case: str, call: str, tmp_path: Path
) -> None:
    answer, why = BAD[case]
    rpc, make = CALLS[call]
    async for sk in _with(answer, tmp_path):
        with pytest.raises(skift.Unavailable) as ei:
            await make(sk)
        _unreadable(ei.value, rpc, why)
        assert ei.value.__cause__ is not None  # what the decoder said, for whoever debugs it


async def test_three_bytes_of_0xff_are_not_an_empty_list(tmp_path: Path) -> None:
    """The lax parser read them as ListProjects with no projects."""
    async for sk in _with(b"\xff\xff\xff", tmp_path):
        with pytest.raises(skift.Unavailable) as ei:
            await sk.list_projects()
        _unreadable(ei.value, "ListProjects", "truncated varint")


async def test_a_newer_servers_unknown_field_is_still_read(tmp_path: Path) -> None:
    """Strict is not brittle: a field this client does not know (a newer server's) is
    skipped, as protobuf does, and the answer is the one sent."""
    extra = _varint(999 << 3 | 2) + _varint(3) + b"new"
    async for sk in _with(GOOD + extra, tmp_path):
        page = await sk.ready()
        assert [n.ref for n in page.nodes] == ["p-1"]
        assert page.nodes[0].title == "Hello"


async def test_a_streamed_answer_that_cannot_be_read_is_unavailable(tmp_path: Path) -> None:
    """ExportBeads streams its chunks through grpclib's channel: read strictly there too."""
    async for sk in _with(b"\x0a\x05ab", tmp_path):  # data: 5 bytes said, 2 sent
        with pytest.raises(skift.Unavailable) as ei:
            await sk.export_beads("p")
        _unreadable(ei.value, "ExportBeads", "runs past the end of the message")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
async def test_over_tls_grpclibs_path_reads_strictly_too(tmp_path: Path) -> None:
    """Over TLS every call goes through grpclib's channel (its codec): the same answers."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(  # noqa: ASYNC221 (a one-off certificate before the server starts)
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(str(cert), str(key))
    served.set_alpn_protocols(["h2"])
    trusting = ssl.create_default_context(cafile=str(cert))
    for answer, rpc, why in [
        (BAD["not UTF-8"][0], "Ready", "not valid UTF-8"),
        (_year_10000(), "Ready", "out of range"),
    ]:
        server = Server([_Answering(answer)])
        port = free_port()
        await server.start("127.0.0.1", port, ssl=served)
        try:
            async with skift_server.connect(
                f"https://127.0.0.1:{port}", ssl_context=trusting, attempts=1
            ) as sk:
                with pytest.raises(skift.Unavailable) as ei:
                    await sk.ready()
                _unreadable(ei.value, rpc, why)
        finally:
            await _stop(server)


@pytest.mark.parametrize(
    ("answer", "args"),
    [
        (BAD["truncated"][0], ["ready", "--json"]),
        # SKIFT_SERVER and the command first: the path agents loop on (_thin, then _fast),
        # where three bytes of 0xff printed "no ready work"
        (b"\xff\xff\xff", ["ready", "--json"]),
        (b"\xff\xff\xff", ["show", "p-1", "--json"]),
        (b"\xff\xff\xff", ["--server", "URL", "ready", "--json"]),
    ],
)
async def test_the_cli_says_so_and_exits_unavailable(
    answer: bytes, args: list[str], tmp_path: Path
) -> None:
    """`skift ready --json` (and `show`) against such a server: the error's JSON and exit
    code 4 (as any Unavailable), no traceback, nothing printed as if it were the answer."""
    server, url = await _serving(answer, tmp_path)
    try:
        proc = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).with_name("skift")),
            *(url if a == "URL" else a for a in args),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "SKIFT_RETRY_WINDOW": "0", "SKIFT_SERVER": url},
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        await _stop(server)
    assert proc.returncode == 4, (out, err)
    assert b"Traceback" not in err
    assert not out.strip(), out
    shown = json.loads(err)
    assert shown["error"]["code"] == "unavailable"
    rpc = "GetNode" if args[0] == "show" else "Ready"
    assert f"answer to {rpc} could not be read" in shown["error"]["message"]


async def test_mcps_first_ready_leaves_an_unreadable_answer_to_the_sdk(tmp_path: Path) -> None:
    """skift-mcp answers a first ``ready`` before its SDK loads (``skift_mcp._first``); an
    answer it cannot read exactly is left to the SDK's tool, which says what is wrong, where
    three bytes of 0xff were answered as an empty page."""
    from skift_mcp import _first

    for answer, taken in [(GOOD, True), (b"\xff\xff\xff", False), (BAD["truncated"][0], False)]:
        server, url = await _serving(answer, tmp_path)
        try:
            got = await asyncio.to_thread(_first.ready, url, {})
        finally:
            await _stop(server)
        assert (got is not None) == taken, (answer, got)
        if got is not None:
            assert "p-1" in got["content"][0]["text"]


class _RawDetails(StatusDetailsCodecBase):
    """Sends an error's details as the bytes given (``grpc-status-details-bin``)."""

    def encode(self, status: Status, message: str | None, details: Any) -> bytes:
        return bytes(details)

    def decode(self, status: Status, message: str | None, data: bytes) -> Any:
        return data  # a server reads no details; the bytes as they came, should one ask


class _Refusing:
    def __init__(self, details: bytes) -> None:
        self.details = details

    async def unary(self, stream: Stream[Any, Any]) -> None:
        await stream.recv_message()
        raise GRPCError(Status.NOT_FOUND, "no node p-1 in this organization", self.details)

    def __mapping__(self) -> dict[str, Any]:
        return {
            "/skift.v1.SkiftService/GetNode": Handler(
                self.unary, Cardinality.UNARY_UNARY, v1.GetNodeRequest, _Raw
            )
        }


async def test_an_errors_damaged_details_leave_its_status(tmp_path: Path) -> None:
    """An error whose details cannot be read exactly (three bytes of 0xff, a Status cut
    short) is the error its status says, with its message: not a decoder's exception, and
    not details read as something else."""
    from skift_server._errors import ErrorDetailsCodec

    said = v1.Error(code="refused", message="the details' own words", next="look elsewhere")
    whole = ErrorDetailsCodec().encode(Status.NOT_FOUND, "no node", [said])
    for details in (b"\xff\xff\xff", whole[:-4]):
        server = Server([_Refusing(details)], status_details_codec=_RawDetails())
        sock = tmp_path / "refusing.sock"
        await server.start(path=str(sock))
        try:
            async with skift_server.connect(f"unix://{sock}", attempts=1) as sk:
                with pytest.raises(skift.NotFound) as ei:
                    await sk.get("p-1")
        finally:
            await _stop(server)
        assert ei.value.message == "no node p-1 in this organization"
