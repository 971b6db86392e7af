"""A client trusts a unix socket only if it (and its directory) belong to the caller or root,
and never sends a bearer token over one.

The attack: another local user pre-creates the directory a client will look
in (``/tmp/skift-$UID``) and listens there, to collect the ``SKIFT_TOKEN``
the client sends and to feed forged work to agents. The attacker here is a
real process of uid 65534 started with ``setpriv``; the victim is this test
process (root).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from grpclib.const import Cardinality, Handler
from grpclib.server import Server, Stream

import skift
import skift_server
from skift_server._proto.skift import v1

NOBODY = 65534

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run the impostor as another uid",
)

IMPOSTOR = """
import os, socket, sys
sock_dir, ready, seen = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(sock_dir, mode=0o755, exist_ok=True)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(os.path.join(sock_dir, "skift.sock"))
os.chmod(os.path.join(sock_dir, "skift.sock"), 0o777)
s.listen(4)
open(ready, "w").close()
s.settimeout(20)
try:
    conn, _ = s.accept()
except socket.timeout:
    sys.exit(0)
with open(seen, "wb") as out:
    out.write(b"connected\\n")
    conn.settimeout(2)
    try:
        while chunk := conn.recv(65536):
            out.write(chunk)
    except OSError:
        pass
"""


def _impostor(tmp: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """A process of uid 65534 that made ``tmp/trap`` and listens on ``trap/skift.sock``."""
    script = tmp / "impostor.py"
    script.write_text(IMPOSTOR)
    script.chmod(0o644)
    ready, seen = tmp / "ready", tmp / "seen"
    proc = subprocess.Popen(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            str(script),
            str(tmp / "trap"),
            str(ready),
            str(seen),
        ],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"},
    )
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert proc.poll() is None, "the impostor died"
        assert time.monotonic() < deadline, "the impostor never listened"
        time.sleep(0.05)
    return proc, tmp / "trap" / "skift.sock", seen


@pytest.fixture
def world_dir() -> Any:
    """A fresh directory under /tmp that uid 65534 may create things in."""
    d = Path(tempfile.mkdtemp(prefix="skift-trust-", dir="/tmp"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


async def test_a_socket_another_user_made_is_refused_before_connecting(world_dir: Path) -> None:
    """Another user's directory and socket: the client refuses with Unavailable naming the
    owner, and the impostor never even sees a connection (so it never sees the token)."""
    proc, sock, seen = _impostor(world_dir)
    try:
        assert sock.parent.stat().st_uid == NOBODY
        async with skift_server.connect(f"unix://{sock}", token="skt_secret", attempts=1) as sk:
            with pytest.raises(skift.Unavailable) as ei:
                await sk.list_projects()
        assert f"uid {NOBODY}" in ei.value.message
        assert "not to this user" in ei.value.message
        assert ei.value.next
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert not seen.exists()


async def test_a_socket_file_of_another_user_in_my_directory_is_refused(tmp_path: Path) -> None:
    """The directory is the caller's, the socket in it someone else's: refused just the same."""
    sock = tmp_path / "skift.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))
    listener.listen(1)
    os.chown(sock, NOBODY, NOBODY)
    try:
        async with skift_server.connect(f"unix://{sock}", attempts=1) as sk:
            with pytest.raises(skift.Unavailable, match=f"socket {sock} belongs to uid {NOBODY}"):
                await sk.list_projects()
    finally:
        listener.close()


class _Recorder:
    """A gRPC service answering ListProjects and keeping the metadata it was sent."""

    def __init__(self) -> None:
        self.metadata: list[dict[str, str]] = []

    async def list_projects(self, stream: Stream[Any, Any]) -> None:
        await stream.recv_message()
        md = stream.metadata or {}
        self.metadata.append({k: str(v) for k, v in md.items()})
        await stream.send_message(v1.ListProjectsResponse())

    def __mapping__(self) -> dict[str, Any]:
        return {
            "/skift.v1.SkiftService/ListProjects": Handler(
                self.list_projects,
                Cardinality.UNARY_UNARY,
                v1.ListProjectsRequest,
                v1.ListProjectsResponse,
            )
        }


async def test_no_bearer_token_over_a_unix_socket(tmp_path: Path) -> None:
    """SKIFT_TOKEN (or token=) goes over TCP only: a socket the caller owns gets no token."""
    recorder = _Recorder()
    server = Server([recorder])
    sock = tmp_path / "skift.sock"
    await server.start(path=str(sock))
    try:
        os.environ["SKIFT_TOKEN"] = "skt_from_env"
        try:
            async with skift_server.connect(f"unix://{sock}", attempts=1) as sk:
                assert await sk.list_projects() == []
            async with skift_server.connect(f"unix://{sock}", token="skt_given") as sk:
                assert await sk.list_projects() == []
        finally:
            del os.environ["SKIFT_TOKEN"]
    finally:
        server.close()
        await server.wait_closed()
    assert len(recorder.metadata) == 2
    for md in recorder.metadata:
        assert "authorization" not in md
        assert not any("skt_" in v for v in md.values())


def test_a_socket_this_user_may_not_open_is_permission_denied() -> None:
    """A socket the caller cannot open (root's, mode 0600) is permission denied naming the
    path and the next move, exit 1, not "unavailable … Retry" (issue 17 point 8). The
    installed ``skift`` runs as uid 65534."""
    tmp_path = Path(tempfile.mkdtemp(prefix="skift-denied-", dir="/tmp"))
    tmp_path.chmod(0o755)
    sock_path = tmp_path / "skift.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(sock_path))
        sock_path.chmod(0o600)
        listener.listen(1)
        skift_bin = Path(sys.executable).parent / "skift"
        proc = subprocess.run(
            [
                "setpriv",
                f"--reuid={NOBODY}",
                f"--regid={NOBODY}",
                "--clear-groups",
                str(skift_bin),
                "ready",
                "--json",
            ],
            env={
                **os.environ,
                "SKIFT_SERVER": f"unix://{sock_path}",
                "HOME": "/tmp",
                "XDG_CONFIG_HOME": "/tmp/nonexistent-skift-config",
                "PYTHONDONTWRITEBYTECODE": "1",
            },
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        listener.close()
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert proc.returncode == 1, proc
    assert "Traceback" not in proc.stderr
    err = json.loads(proc.stderr.strip().splitlines()[-1])["error"]
    assert err["code"] == "unauthenticated", err
    assert "permission denied" in err["message"]
    assert str(sock_path) in err["message"]
    assert "Retry" not in err["message"] + err["next"]
    assert "skift serve" in err["next"]
