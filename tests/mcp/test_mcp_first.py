"""A first ``ready`` call is answered before the MCP SDK loads, with the SDK's own bytes.

``skift_mcp._first`` answers a ``ready`` call whose arguments need no
coercion while the SDK is still importing; everything else waits for the
SDK. Here the same session runs twice against one server: once with the SDK
switched off (only the front can answer) and once with the front's first
call switched off (only the SDK's tool answers). Every answer must be the
same line, byte for byte; the front's run must not have imported the SDK,
pydantic, grpclib or asyncio by the time it answered.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import skift

if TYPE_CHECKING:
    from pathlib import Path

    from serverproc import ServerProcess

    import skift_server

# Only the front: the SDK's loading switched off, and the clock's hand-over too (a slow
# machine may take longer than LOAD_AFTER between two lines). The report: the modules
# loaded when the first call was answered.
FRONT = """
import json, sys
import skift_mcp._front as early
early.LOAD_AFTER = 3600.0
run = early.Early.run
def hand_over_without_the_sdk(self, lines, until):
    go_on = run(self, lines, until)
    import skift_mcp._stdio as front
    front.Front.load = lambda self, tg: None
    return go_on
early.Early.run = hand_over_without_the_sdk
send = early.Early.send
def report(self, msg):
    send(self, msg)
    if msg.get("id") == 10:
        with open(sys.argv[1], "w") as fh:
            json.dump(sorted(sys.modules), fh)
early.Early.send = report
from skift_mcp._cli import main
main(["--server", sys.argv[2]])
"""

SDK = """
import sys
import skift_mcp._first as first
first.ready = lambda url, arguments: None
from skift_mcp._cli import main
main(["--server", sys.argv[2]])
"""

NOT_FOR_A_FIRST_CALL = (
    "mcp",
    "mcp_types",
    "pydantic",
    "pydantic_core",
    "grpclib",
    "skift_server._client",
    "asyncio",
    "anyio",
)


def _lines(
    script: str, report: Path, url: str, messages: list[dict[str, Any]], answers: int
) -> list[str]:
    """The session's answer lines: ``answers`` of them, read before stdin closes (the SDK
    drops the calls in flight when its input ends), or all there are when ``answers`` is 0."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(report), url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    proc.stdin.flush()
    lines = [proc.stdout.readline().rstrip("\n") for _ in range(answers)]
    rest, err = proc.communicate(timeout=120)  # closes stdin, then reads to the end
    assert proc.returncode == 0, err
    return lines + rest.splitlines()


def _session(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *(
            {
                "jsonrpc": "2.0",
                "id": 10 + i,
                "method": "tools/call",
                "params": {"name": "ready", "arguments": args},
            }
            for i, args in enumerate(calls)
        ),
    ]


async def test_a_first_ready_call_is_the_sdks_answer_without_the_sdk(
    mcp_server: ServerProcess, owner: skift_server.RemoteSkift, project: str, tmp_path: Path
) -> None:
    await owner.patch(
        project,
        [
            skift.CreateNode(title="Say hello"),
            skift.CreateNode(
                title='Café ☕ <content> "quoted"',
                body="a body",
                kind="bug",
                priority=skift.Priority.P1,
                labels=("ui", "été"),
            ),
            skift.CreateNode(title="Later", priority=skift.Priority.P3),
        ],
    )
    for args in (
        {"projects": [project]},
        {"projects": [project], "limit": 1},
        {"projects": [project], "verbose": True},
        {"projects": [project], "min_priority": "p1", "labels": ["ui"], "kinds": ["bug"]},
        {"projects": [project], "any_labels": ["été", "x"], "assignee_kind": None},
        {"projects": [project], "limit": 2, "page": None, "parent": None},
    ):
        messages = _session([args])
        front = _lines(FRONT, tmp_path / "front.json", mcp_server.url, messages, 2)
        sdk = _lines(SDK, tmp_path / "sdk.json", mcp_server.url, messages, 2)
        assert len(front) == len(sdk) == 2, (front, sdk)
        assert front[1] == sdk[1], args
        got = json.loads(front[1])["result"]
        assert got["isError"] is False
        assert got["structuredContent"]["nodes"], got
        modules = set(json.loads((tmp_path / "front.json").read_text()))
        assert "skift_mcp._first" in modules  # the report of the front's answer
        loaded = sorted(
            m for m in modules for n in NOT_FOR_A_FIRST_CALL if m == n or m.startswith(n + ".")
        )
        assert loaded == [], loaded


async def test_what_the_front_does_not_read_waits_for_the_sdk(
    mcp_server: ServerProcess, project: str, tmp_path: Path
) -> None:
    """Arguments the schema would coerce or refuse, and a call the server refuses, are the
    SDK tool's to answer: the front without the SDK answers none of them."""
    calls: list[dict[str, Any]] = [
        {"project": [project]},  # unknown: refused naming `projects`
        {"projects": project},  # not a list
        {"projects": [project], "limit": 0},
        {"projects": [project], "limit": "2"},
        {"projects": [project], "min_priority": "urgent"},
        {"projects": [project], "verbose": None},
        {"projects": ["no-such-project"]},  # the server's refusal
        {"projects": [project], "page": "not-a-token"},
    ]
    front = _lines(FRONT, tmp_path / "front.json", mcp_server.url, _session(calls), 0)
    assert [json.loads(line)["id"] for line in front] == [1]
    sdk = _lines(SDK, tmp_path / "sdk.json", mcp_server.url, _session(calls), 1 + len(calls))
    answers = {json.loads(line)["id"]: json.loads(line) for line in sdk}
    assert set(answers) == {1, *(10 + i for i in range(len(calls)))}
    refused = {i for i in range(len(calls)) if answers[10 + i]["result"]["isError"]}
    assert refused >= {0, 1, 2, 4, 6, 7}, answers  # "2" and null are the SDK's to coerce
    assert "did you mean `projects`" in answers[10]["result"]["content"][0]["text"]
