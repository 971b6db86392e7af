"""The operation table (``skift.OPERATIONS``) and what implements it never drift apart.

Every public method of LocalSkift and RemoteSkift is an operation (or listed as none);
every RPC of the proto's service is an operation's and the other way round, with the
request and response the convention names and the streaming the table says; RemoteSkift's
signatures are LocalSkift's; each MCP tool and CLI command the table names exists; the
server serves every RPC of the table and refuses to start on one it lacks.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

import click
import grpclib.const
import pytest

import skift
import skift_server
from skift_server._proto.skift import v1

OPS = skift.OPERATIONS
NOT_OPS = {"acting_as", "close"}  # handles, not operations
CLIENT_ONLY = {"check_ops_count"}  # RemoteSkift's own early check of a patch's size


def public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


def test_every_method_is_an_operation() -> None:
    declared = {op.method for op in OPS}
    assert len(declared) == len(OPS), "a method is declared twice"
    local = public(skift.LocalSkift) - NOT_OPS
    remote = public(skift_server.RemoteSkift) - NOT_OPS - CLIENT_ONLY
    assert sorted(local - declared) == [], "LocalSkift methods no operation declares"
    assert sorted(declared - local) == [], "operations LocalSkift lacks"
    in_process = {op.method for op in OPS if op.local}
    assert sorted(remote - declared) == [], "RemoteSkift methods no operation declares"
    assert sorted(declared - in_process - remote) == [], "operations RemoteSkift lacks"
    assert sorted(remote & in_process) == [], "in-process only, yet RemoteSkift has them"


def test_the_table_is_consistent() -> None:
    by_method = skift.OPERATIONS_BY_METHOD
    for op in OPS:
        kinds = [op.rpc is not None, op.via is not None, op.local is not None]
        assert sum(kinds) == 1, f"{op.method}: an RPC, a convenience (via) or local, one of them"
        if op.via is not None:
            assert by_method[op.via].rpc, f"{op.method} is via {op.via}, which has no RPC"
        if op.page_key is not None:
            assert "page_size" in op.limits, f"{op.method} pages: page_size is one of its limits"
        for limit in op.limits:
            assert hasattr(skift.DEFAULT_LIMITS, limit), f"{op.method}: no limit {limit!r}"
        if op.long_poll:
            assert op.retry is not skift.Retry.REQUEST_ID or op.rpc


_CARDINALITY = {
    skift.RpcStream.UNARY: grpclib.const.Cardinality.UNARY_UNARY,
    skift.RpcStream.SERVER: grpclib.const.Cardinality.UNARY_STREAM,
    skift.RpcStream.BIDI: grpclib.const.Cardinality.STREAM_STREAM,
}


def test_the_proto_and_the_table_name_the_same_rpcs() -> None:
    routes = v1.SkiftServiceBase().__mapping__()
    proto = {route.rsplit("/", 1)[1]: h for route, h in routes.items()}
    table = skift.OPERATIONS_BY_RPC
    assert sorted(set(proto) - set(table)) == [], "RPCs of the proto no operation declares"
    assert sorted(set(table) - set(proto)) == [], "RPCs the table declares and the proto lacks"
    for rpc, h in proto.items():
        op = table[rpc]
        handler: Any = h
        assert handler.request_type.__name__ == f"{rpc}Request", rpc
        assert handler.reply_type.__name__ == f"{rpc}Response", rpc
        if rpc == op.rpc:
            assert op.request == handler.request_type.__name__
            assert op.response == handler.reply_type.__name__
        assert handler.cardinality == _CARDINALITY[op.stream], rpc


def _signature(fn: Any) -> list[tuple[str, Any, Any, Any]]:
    hints = typing.get_type_hints(fn)
    out = [
        (p.name, p.kind, p.default, hints.get(p.name))
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self"
    ]
    return [*out, ("return", None, None, hints.get("return"))]


def _same(local: Any, remote: Any) -> bool:
    return local == remote or (
        # a handle returns its own kind: LocalSkift's or RemoteSkift's
        typing.get_origin(local) is None and getattr(local, "__name__", "") == "LocalSkift"
    )


@pytest.mark.parametrize("op", [op for op in OPS if op.local is None], ids=lambda op: op.method)
def test_remote_signatures_are_local_ones(op: skift.Operation) -> None:
    local = _signature(getattr(skift.LocalSkift, op.method))
    remote = _signature(getattr(skift_server.RemoteSkift, op.method))
    assert [x[:3] for x in remote] == [x[:3] for x in local], op.method
    for (name, _, _, lt), (_, _, _, rt) in zip(local, remote, strict=True):
        assert _same(lt, rt), f"{op.method}({name}): LocalSkift {lt}, RemoteSkift {rt}"


def test_the_mcp_tools_named_exist() -> None:
    from skift_mcp._server import TOOL_MODULES

    tools = {t.name for module in TOOL_MODULES for t in module(typing.cast(Any, object()))}
    named = {op.mcp for op in OPS if op.mcp}
    assert sorted(named - tools) == [], "MCP tools the table names that do not exist"
    assert sorted(tools - named) == [], "MCP tools no operation names"


def test_the_cli_commands_named_exist() -> None:
    from skift_cli._app import cli, load_all

    load_all()
    ctx = click.Context(cli)
    for op in OPS:
        if op.cli is None:
            continue
        cmd: click.Command | None = cli
        for word in op.cli.split():
            assert isinstance(cmd, click.Group), f"{op.method}: {op.cli!r}"
            cmd = cmd.get_command(ctx, word)
        assert cmd is not None, f"{op.method}: no command `skift {op.cli}`"


def test_the_server_serves_every_rpc_and_refuses_an_undeclared_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from skift_server._service import SkiftService

    service = SkiftService(typing.cast(Any, object()))
    routes = service.__mapping__()
    assert len(routes) == len(skift.OPERATIONS_BY_RPC)
    fewer = {k: v for k, v in skift.OPERATIONS_BY_RPC.items() if k != "Explain"}
    monkeypatch.setattr(skift, "OPERATIONS_BY_RPC", fewer)
    with pytest.raises(RuntimeError, match="Explain is declared by no operation"):
        service.__mapping__()


def test_a_simple_handler_refuses_a_request_and_method_that_disagree() -> None:
    """The handlers made from the table (``_simple``) check, when the server starts, that
    every request field reaches a parameter of the method and every required parameter has
    its field: a declaration whose implementation disagrees stops the server (and this test)."""
    from skift_server._simple import NotSimple, simple_handler

    made = [op.rpc for op in OPS if op.rpc and _simple_or_none(simple_handler, op, NotSimple)]
    assert {"GetNode", "CreateProject", "Heartbeat", "WhoAmI"} <= set(made)
    # the request has a field the method lacks: refused, naming both
    op = skift.Operation("get", "GetNode")
    narrower = typing.cast(Any, lambda self, ref: None)  # pyright: ignore[reportUnknownLambdaType]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(skift.LocalSkift, "get", narrower)
        with pytest.raises(NotSimple, match="GetNodeRequest's project: no parameter of get"):
            simple_handler(op)
        wider = typing.cast(Any, lambda self, ref, project, colour: None)  # pyright: ignore[reportUnknownLambdaType]
        m.setattr(skift.LocalSkift, "get", wider)
        with pytest.raises(NotSimple, match="get's colour is no field of GetNodeRequest"):
            simple_handler(op)


def _simple_or_none(make: Any, op: skift.Operation, refused: type[Exception]) -> Any:
    try:
        return make(op)
    except refused:
        return None
