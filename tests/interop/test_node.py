"""A Node service team's client: @grpc/grpc-js and @grpc/proto-loader (from the
repository's package-lock.json), loading skift.proto at run time. It runs the work cycle
over the unix socket and over TCP with a token, and one call of each error class."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from interop_harness import PROTO, ROOT, Server

CLIENT = Path(__file__).parent / "node" / "client.mjs"


@pytest.fixture(scope="module")
def node_result(server: Server) -> dict[str, object]:
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "@grpc" / "grpc-js").exists():
        pytest.fail("node and the npm packages are needed: run `make npm` (node 20 or newer)")
    done = subprocess.run(
        [node, str(CLIENT), str(PROTO), str(server.socket), server.tcp, server.token],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_node_work_cycle(node_result: dict[str, object], transport: str) -> None:
    got = node_result[transport]
    assert isinstance(got, dict)
    assert got["beta_priority"] == "PRIORITY_P1"
    assert got["ready_projects"] == got["expected_projects"]
    assert got["claimed"] == got["design"]
    assert got["heartbeat_same_lease"] is True
    assert got["completed_status"] == "NODE_STATUS_DONE"
    assert got["build_ready_after"] is True
    assert got["inputs"] == ["the design"]
    assert "ASSIGNEE_KIND_USER" in got["gate_kinds"]
    assert {"claim", "complete_node", "create_node"} <= set(got["ops"])


def test_node_error_classes(node_result: dict[str, object]) -> None:
    got = node_result["errors"]
    assert isinstance(got, dict)
    want = {
        "not_found": ("NOT_FOUND", "NOT_FOUND"),
        "invalid": ("INVALID_ARGUMENT", "INVALID_ARGUMENT"),
        "not_ready": ("FAILED_PRECONDITION", "NOT_READY"),
        "fenced": ("ABORTED", "FENCED"),
        "limit": ("RESOURCE_EXHAUSTED", "LIMIT_EXCEEDED"),
        "nothing_ready": ("NOT_FOUND", "NOTHING_READY"),
        "unauthenticated": ("UNAUTHENTICATED", "UNAUTHENTICATED"),
    }
    assert {k: (v["code"], v["reason"]) for k, v in got.items()} == want
    assert " -- next: " in got["not_ready"]["details"]
