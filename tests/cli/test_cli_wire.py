"""The thin path's own wire reading is the generated code's and hpack's, value for value.

``skift_cli._wire`` decodes HPACK and protobuf without the ``hpack`` package,
betterproto2 or skift's views, and ``skift_cli._thin`` makes from it what the
views would say. Here each piece meets the code it stands in for: the HPACK
decoder reads what hpack's encoder writes (Huffman, indexing, a table size
update, one dynamic table across blocks); a node or a page read by ``_thin``
has every attribute ``skift_server``'s converter gives the view and the same
JSON as ``skift.to_json``; the request ``_thin`` sends is byte for byte the one
``_fast`` sends; a blocked node's explanation names the same blockers.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import hpack
import pytest
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH

import skift
from skift_cli import _facts, _fast, _thin, _wire
from skift_server._convert import from_struct, to_struct
from skift_server._convert_types import from_pb
from skift_server._paths import default_socket_path
from skift_server._proto.skift import v1


def test_the_huffman_code_is_rfc_7541s() -> None:
    codes = _wire.huffman_codes()
    assert len(codes) == 257
    assert {sym: (n, code) for (n, code), sym in codes.items()} == {
        sym: (REQUEST_CODES_LENGTH[sym], REQUEST_CODES[sym]) for sym in range(257)
    }


HEADERS = [
    [(":status", "200"), ("content-type", "application/grpc")],
    [("grpc-status", "0"), ("grpc-message", "")],
    [("grpc-status", "5"), ("grpc-message", "node p%231 not found: caf%C3%A9")],
    [(":status", "200"), ("content-type", "application/grpc"), ("x-long", "v" * 300)],
    [("grpc-status-details-bin", "CAUSHG5vZGUgbm90IGZvdW5kIGluIHRoaXMgcHJvamVjdA")],
    [("Weird-Bytes", "~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./ \x7f")],
]


@pytest.mark.parametrize("huffman", [True, False])
def test_hpack_decodes_what_hpack_encodes(huffman: bool) -> None:
    enc = hpack.Encoder()
    dec = _wire.Hpack()
    ref = hpack.Decoder()
    for headers in itertools.islice(itertools.cycle(HEADERS), 40):  # evicts, refers back
        block = enc.encode(headers, huffman=huffman)
        assert dec.decode(block) == [(k, v) for k, v in ref.decode(block)]
    enc.header_table_size = 256  # a dynamic table size update starts the next block
    for headers in HEADERS:
        block = enc.encode(headers, huffman=huffman)
        assert dec.decode(block) == [(k, v) for k, v in ref.decode(block)]
    assert dec.max == 256


def test_hpack_refuses_what_it_cannot_read() -> None:
    for block in (b"\xff\xff\xff\xff\xff\x7f", b"\x40\x85", b"\xbe", b"\x3f\xe2\x1f"):
        with pytest.raises(_wire.NotTaken):
            _wire.Hpack().decode(block)
    assert _wire.huffman_decode(b"") == b""
    with pytest.raises(_wire.NotTaken):
        _wire.huffman_decode(b"\x00")  # '0' then padding that is not the EOS prefix


def test_what_we_send_hpack_reads() -> None:
    headers = [(":path", "/skift.v1.SkiftService/Ready"), ("x", "é" * 200)]
    assert hpack.Decoder().decode(_wire.encode_headers(headers)) == headers


def test_node_fields_are_node_infos() -> None:
    assert [a.name for a in attrs.fields(skift.NodeInfo) if a.init] == _thin.NODE_FIELDS


def test_the_default_socket_is_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    for runtime in ("/run/user/1234", "relative", ""):
        monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
        assert _wire.default_socket() == str(default_socket_path())
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert _wire.default_socket() == str(default_socket_path())


T0 = datetime(2025, 3, 4, 5, 6, 7, 891234, tzinfo=UTC)


def _nodes() -> list[v1.Node]:
    full = v1.Node(
        ref="p#1",
        id="01ABC",
        number=1,
        project="p",
        title="Write the parser",
        body="line one\nline two",
        kind="bug",
        parent="p#0",
        labels=["backend", "ui"],
        assignee="ada",
        context_id="ctx",
        created_at=T0,
        blocked=True,
        held=True,
        claimed=True,
        ready=True,
        result="done",
        human_written=True,
        body_author="ada",
        result_author="bot",
    )
    out = [v1.Node(), full, v1.Node(number=2**40, created_at=datetime(1969, 7, 20, tzinfo=UTC))]
    for status, prio, who, kind in itertools.product(
        v1.NodeStatus, v1.Priority, v1.AssigneeKind, v1.PrincipalKind
    ):
        out.append(
            v1.Node(
                ref="p#2",
                status=status,
                priority=prio,
                assignee_kind=who,
                body_author_kind=kind,
                result_author_kind=kind,
                created_at=T0 + timedelta(days=int(prio)),
            )
        )
    return out


def test_a_page_reads_as_the_view() -> None:
    for held, exact, token in ((0, False, ""), (7, True, "next"), (2**33, False, "t")):
        msg = v1.ReadyResponse(
            nodes=_nodes(), held_count=held, held_count_exact=exact, next_page_token=token
        )
        raw = bytes(msg)
        view = from_pb(v1.ReadyResponse, skift.ReadyPage, v1.ReadyResponse.parse(raw))
        page = _thin.Page(raw)
        assert page.json() == skift.to_json(view)
        for name in ("held_count", "held_count_exact", "next_page"):
            assert getattr(page, name) == getattr(view, name)
        assert len(page.nodes) == len(view.nodes)
        for got, want in zip(page.nodes, view.nodes, strict=True):
            for name in _thin.NODE_FIELDS:
                assert getattr(got, name) == getattr(want, name), name
            assert _facts.node_facts(got) == _facts.node_facts(want)  # pyright: ignore[reportArgumentType]
        assert _facts.node_rows(page.nodes, turn=True) == _facts.node_rows(view.nodes, turn=True)  # pyright: ignore[reportArgumentType]
        assert _facts.page_footer(page, what="x") == _facts.page_footer(view, what="x")  # pyright: ignore[reportArgumentType]


def test_what_the_thin_reader_leaves_to_the_views() -> None:
    leased = v1.Node(ref="p#1", lease=v1.Lease(id="L", holder="bot", expires_at=T0))
    odd_enum = bytes(v1.Node(ref="p#1")) + b"\x40\x09"  # status 9: no such status
    wrong_wire = bytes(v1.Node(ref="p#1")) + b"\x1a\x01x"  # number as a string
    for raw in (bytes(leased), odd_enum, wrong_wire, b"\x0a\x05ab"):
        with pytest.raises((_wire.NotTaken, KeyError)):
            _thin.Node(raw)


class _Sent(Exception):
    pass


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []

    def call(self, method: str, request: bytes) -> bytes:
        self.sent.append((method, request))
        raise _Sent


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["-p", "one"],
        ["-p", "one", "-p", "two", "-p", "one"],
        ["-p", "*", "--limit", "2"],
        ["--limit", "0"],
        ["--limit", "-3", "--page", "tok"],
        ["--kind", "bug", "--kind", "task", "--label", "ui", "--any-label", "x"],
        ["--assignee-kind", "user", "--min-priority", "p0"],
        ["--assignee-kind", "agent", "--min-priority", "p4", "--parent", "p#1"],
        ["--parent", ""],
        ["--page", ""],
    ],
)
def test_the_ready_request_is_fasts(
    args: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("SKIFT_PROJECT", "env-project")
    got = _fast.parse(args, _fast.READY_OPTIONS, 0)
    rec = _Recorder()
    with pytest.raises(_Sent):
        _fast._ready(rec, _fast.Run(got), got)  # pyright: ignore[reportPrivateUsage, reportArgumentType]
    assert rec.sent == [("Ready", _thin.ready_request(_fast.Run(got), got))]


def test_show_requests_are_fasts() -> None:
    assert _wire.string_field(1, "p#1") + _wire.string_field(2, "p") == bytes(
        v1.GetNodeRequest(ref="p#1", project="p")
    )
    assert _wire.string_field(1, "p#1") == bytes(v1.GetNodeRequest(ref="p#1"))
    for token in ("", "next"):
        req = _wire.string_field(1, "p#1") + (_wire.string_field(4, token) if token else b"")
        assert req == bytes(v1.ListArtifactsRequest(ref="p#1", page_token=token))
        assert req == bytes(v1.ListCommentsRequest(ref="p#1", page_token=token))
    assert _wire.string_field(1, "p#1") == bytes(v1.ExplainRequest(ref="p#1"))


def _reason(kind: str, detail: dict[str, Any]) -> v1.Reason:
    return v1.Reason(kind=kind, detail=to_struct(detail))


def test_blockers_are_the_explanations() -> None:
    ok = v1.ExplainResponse(
        ref="p#3",
        reasons=[
            _reason("blocked_by", {"ref": "p#1", "title": "first", "status": "open"}),
            _reason("held", {"by": "ada", "ref": "p#9"}),
            _reason("blocked_by", {"ref": "q#2", "n": 3, "x": None, "l": [1, "a"]}),
        ],
    )
    want = [str(from_struct(r.detail).get("ref")) for r in ok.reasons if r.kind == "blocked_by"]
    assert _thin._blockers(bytes(ok)) == want == ["p#1", "q#2"]  # pyright: ignore[reportPrivateUsage]
    for odd in ({"ref": 3}, {"title": "no ref"}):
        raw = bytes(v1.ExplainResponse(reasons=[_reason("blocked_by", odd)]))
        with pytest.raises(_wire.NotTaken):
            _thin._blockers(raw)  # pyright: ignore[reportPrivateUsage]


def test_comments_read_whether_resolved() -> None:
    open_, done = v1.Comment(id="a"), v1.Comment(id="b", resolved_at=T0, resolved_by="ada")
    assert _thin.Comment(bytes(open_)).resolved_at is None
    assert _thin.Comment(bytes(done)).resolved_at == T0.replace(microsecond=891234)


@pytest.mark.parametrize(
    "url",
    [
        "unix:///tmp/skift-test/s.sock",
        "unix://tmp/skift-test/s.sock",
        "unix://",
        "unix:///tmp/a%20b.sock",
        "unix:///tmp/s.sock?x=1",
        "unix:/tmp/s.sock",
        "http://127.0.0.1:7000",
        "http://[::1]:7000",
        "http://localhost",
        "https://example.org:443",
    ],
)
def test_addresses_are_the_unary_clients(url: str) -> None:
    """Where ``_wire`` connects is where ``skift_server._unary`` does, or it leaves the URL
    to the full client (which words what is wrong with it)."""
    from skift_server import _unary

    try:
        want = _unary.Connection(url, token=None, timeout=1)._address  # pyright: ignore[reportPrivateUsage]
    except _unary.Unsupported:
        want = None
    try:
        got = _wire.Connection(url, token=None, timeout=1).address
    except _wire.NotTaken:
        got = None
    assert got in (want, None)
    if "%" not in url and "?" not in url and url != "unix:/tmp/s.sock":
        assert got == want


def test_the_config_file_is_config_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from skift_cli import _config

    for base in ("/etc/xdg", "/etc/xdg/", "relative", ""):
        monkeypatch.setenv("XDG_CONFIG_HOME", base)
        assert _config._default_file() == str(_config.config_path())  # pyright: ignore[reportPrivateUsage]
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert _config._default_file() == str(_config.config_path())  # pyright: ignore[reportPrivateUsage]
