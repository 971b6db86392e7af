"""The interop suite's server and generated stubs: what a service team in another
language has, and nothing of skift's Python.

The tests here never import skift or skift_server. Each module shares one
``skift serve --memory`` process (started as an operator would, listening on
a unix socket and on TCP), the stubs are compiled from
``packages/skift-server/proto`` at test time with grpcio-tools, and a bearer
token for TCP is made over the socket with CreateToken, as the docs say.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "packages" / "skift-server" / "proto"
SOURCES = ["google/rpc/status.proto", "google/rpc/error_details.proto"]


@attrs.frozen
class Stubs:
    """The modules grpcio-tools generated: ``pb`` (messages), ``grpc`` (the service stub),
    ``status`` and ``details`` (google.rpc)."""

    pb: ModuleType
    rpc: ModuleType
    status: ModuleType
    details: ModuleType


@pytest.fixture(scope="session")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Stubs:
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("stubs")
    # The contract is copied under a module name of its own, as a team vendoring it
    # would: generated as skift/v1/skift_pb2 it would shadow the skift package that
    # the rest of this test session imports. Its proto package (skift.v1) is unchanged.
    vendored = tmp_path_factory.mktemp("vendored")
    (vendored / "skiftpb").mkdir()
    shutil.copy(PROTO / "skift" / "v1" / "skift.proto", vendored / "skiftpb" / "skift.proto")
    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO}",
            f"-I{vendored}",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            "skiftpb/skift.proto",
            *SOURCES,
        ]
    )
    assert code == 0, "protoc could not compile the contract"
    sys.path.insert(0, str(out))
    return Stubs(
        pb=importlib.import_module("skiftpb.skift_pb2"),
        rpc=importlib.import_module("skiftpb.skift_pb2_grpc"),
        status=importlib.import_module("google.rpc.status_pb2"),
        details=importlib.import_module("google.rpc.error_details_pb2"),
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@attrs.define
class Server:
    """A running ``skift serve``: its unix socket, its TCP address and a token for TCP."""

    proc: subprocess.Popen[bytes]
    dir: Path
    socket: Path
    tcp: str
    token: str = ""

    def unix_target(self) -> str:
        return f"unix://{self.socket}"

    def channel(self, transport: str) -> grpc.Channel:
        return grpc.insecure_channel(self.unix_target() if transport == "unix" else self.tcp)

    def metadata(self, transport: str) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}")] if transport == "tcp" else []

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def log(self) -> str:
        return (self.dir / "server.log").read_text(errors="replace")


def _wait_serving(server: Server) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"skift serve exited while starting:\n{server.log()}")
        if server.socket.exists():
            with (
                contextlib.suppress(grpc.RpcError),
                grpc.insecure_channel(server.unix_target()) as ch,
            ):
                got = health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(), timeout=2
                )
                if got.status == health_pb2.HealthCheckResponse.SERVING:
                    return
        time.sleep(0.05)
    raise RuntimeError(f"skift serve did not serve within 60s:\n{server.log()}")


@pytest.fixture(scope="module")
def server(stubs: Stubs) -> Iterator[Server]:
    """One server per module, with a person ``ivy`` whose token authenticates on TCP."""
    tmp = Path(tempfile.mkdtemp(prefix="skift-interop-", dir="/tmp"))
    sock = tmp / "skift.sock"
    port = _free_port()
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skift_server",
            "serve",
            "--memory",
            "--socket",
            str(sock),
            "--listen",
            f"127.0.0.1:{port}",
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=os.environ.copy(),
    )
    srv = Server(proc=proc, dir=tmp, socket=sock, tcp=f"127.0.0.1:{port}")
    try:
        _wait_serving(srv)
        with srv.channel("unix") as ch:
            stub: Any = stubs.rpc.SkiftServiceStub(ch)
            pb = stubs.pb
            stub.AddPrincipal(
                pb.AddPrincipalRequest(name="ivy", kind=pb.PRINCIPAL_KIND_USER), timeout=10
            )
            srv.token = stub.CreateToken(pb.CreateTokenRequest(principal="ivy"), timeout=10).token
        yield srv
        code = srv.stop()
        assert code == 0, f"skift serve exited with {code} on SIGTERM:\n{srv.log()}"
    finally:
        srv.stop()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
