"""Authenticate before work, and a request's framing refused clearly (issue 29's rows
"one 4.1 MB Patch with no token", "a streamed import by an agent that may not import",
"a gRPC frame shorter than its length prefix", and two messages on a unary call).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from adversary_harness import (
    RawH2,
    Target,
    assert_unharmed,
    big_patch,
    frame,
    no_token_patch,
    while_watched,
)

import skift_server
from skift_server._proto.skift import v1

if TYPE_CHECKING:
    from pathlib import Path


def _rss(pid: int) -> int:
    """The process's resident memory in bytes."""
    from pathlib import Path

    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def test_a_big_patch_without_a_token_is_refused_before_its_body(target: Target) -> None:
    got, stats = await while_watched(target, lambda: no_token_patch(target.grpc_port))
    assert got["status"] is not None, got
    assert got["status"][0] == "16", got  # UNAUTHENTICATED
    assert got["seconds"] < 2, got
    assert_unharmed(stats)


async def test_big_patches_with_a_token_are_decoded_off_the_loop(target: Target) -> None:
    body = frame(big_patch())

    async def three() -> list[object]:
        raw = await RawH2().open(target.grpc_port)
        try:
            return [await raw.call("Patch", body, token=target.attacker_token) for _ in range(3)]
        finally:
            await raw.close()

    got, stats = await while_watched(target, three)
    for status in got:
        assert status is not None
        assert status[0] != "13", got  # never INTERNAL (a limit, or applied)
    assert_unharmed(stats)


async def test_a_frame_shorter_than_its_prefix_is_invalid_argument(target: Target) -> None:
    raw = await RawH2().open(target.grpc_port)
    try:
        message = bytes(v1.ListProjectsRequest(page_size=5))
        got = await raw.call(
            "ListProjects", frame(message, length=len(message) + 100), token=target.bystander_token
        )
        assert got is not None
        assert got[0] == "3", got  # INVALID_ARGUMENT
        assert "length prefix" in got[1]
        cut = await raw.call("ListProjects", frame(message)[:3], token=target.bystander_token)
        assert cut is not None
        assert cut[0] == "3", cut
    finally:
        await raw.close()


async def test_two_messages_on_a_unary_call_are_refused(target: Target) -> None:
    raw = await RawH2().open(target.grpc_port)
    try:
        one = frame(bytes(v1.ListProjectsRequest()))
        got = await raw.call("ListProjects", one + one, token=target.bystander_token)
        assert got is not None
        assert got[0] == "3", got
        assert "one request message" in got[1]
    finally:
        await raw.close()


async def test_an_import_by_an_agent_that_may_not_import_is_refused_before_its_chunks(
    target: Target, tmp_path: Path
) -> None:
    async with target.attacker() as mallory:
        await mallory.add_principal("bot", "agent")
        token = (await mallory.create_token("bot")).token
    chunk = bytes(v1.ImportBeadsRequest(project="noise", data=b"x" * 1_000_000))
    body = frame(chunk) * 64  # 64 MB if it were all read
    before = _rss(target.process.pid)
    raw = await RawH2().open(target.grpc_port)
    try:
        started = time.perf_counter()
        got = await raw.call("ImportBeads", body, token=token, timeout=20)
        assert got is not None
        assert got[0] == "7", got  # PERMISSION_DENIED
        assert time.perf_counter() - started < 5
    finally:
        await raw.close()
    assert _rss(target.process.pid) - before < 32 * 1024 * 1024
    async with skift_server.connect(target.grpc_url, token=target.bystander_token) as bea:
        assert await bea.list_projects()


NO_AGENT_UPLOADS = """package skift.authz

import rego.v1

deny contains {"msg": "agents here attach links, not uploads", "next": "Attach a link."} if {
    some i in input.intents
    i.action == "put_blob"
    input.principal.kind == "agent"
}
"""


async def test_a_blob_upload_by_an_agent_that_may_not_upload_is_refused_before_its_bytes(
    target: Target,
) -> None:
    """PutBlob asks the policy (the organization's stored modules too) as soon as the caller
    is known: refused having sent no more than the window a caller gets before it is
    authorized, where a person's upload of the same size is read whole."""
    async with target.attacker() as mallory:
        await mallory.add_principal("uploader", "agent")
        token = (await mallory.create_token("uploader")).token
        await mallory.set_policy({"uploads.rego": NO_AGENT_UPLOADS}, reason="links only")
    body = frame(bytes(v1.PutBlobRequest(data=b"x" * 3_000_000, media_type="text/plain")))
    raw = await RawH2().open(target.grpc_port)
    try:
        got = await raw.call("PutBlob", body, token=token, timeout=20)
        assert got is not None
        assert got[0] == "7", got  # PERMISSION_DENIED
        assert "not uploads" in got[1]
        refused_after = max(raw.sent.values())
        assert refused_after <= 128 * 1024, refused_after
        ok = await raw.call("PutBlob", body, token=target.attacker_token, timeout=20)
        assert ok is not None
        assert ok[0] == "0", ok
        assert max(raw.sent.values()) == len(body)
    finally:
        await raw.close()
        async with target.attacker() as mallory:
            await mallory.reset_policy(reason="done")
