"""``skift export`` and ``skift import``: a project moved whole between two ``skift serve``
processes (two stores), every byte of its blobs, the same graph, states, readiness and
comments after (docs/archive.md)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import Cli, SkiftServe

import skift
import skift_server

BLOB = bytes(range(256)) * 300 + b"\xff\x00 trailing bytes"


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[SkiftServe]:
    """A second server, its own store: where the project moves to."""
    server = SkiftServe("--memory", "--sweep-every", "0")
    try:
        asyncio.run(server.start())
        yield server
        asyncio.run(server.stop())
    finally:
        server.cleanup()


async def _build(sk: skift_server.RemoteSkift, slug: str) -> None:
    await sk.create_project("Moving", slug=slug)
    await sk.patch(
        slug,
        [
            skift.CreateNode(title="Epic", alias="e", priority="p1"),
            skift.CreateNode(title="Design", alias="d", parent="e"),
            skift.CreateNode(title="Build", alias="b", parent="e", blocked_by=("d",)),
            skift.CreateNode(title="Parked", alias="h"),
        ],
    )
    await sk.hold(f"{slug}#4", reason="later")
    c = await sk.add_comment(f"{slug}#2", "Draft")
    await sk.edit_comment(c.id, "Draft, revised")
    await sk.add_comment(f"{slug}#2", "Agreed", reply_to=c.id)
    blob = await sk.put_blob(BLOB, media_type="application/octet-stream")
    await sk.attach_artifact(
        f"{slug}#2",
        {
            "name": "spec",
            "parts": [
                {
                    "type": "blob",
                    "digest": blob.digest,
                    "media_type": blob.media_type,
                    "size": blob.size,
                }
            ],
        },
    )


async def _state(sk: skift_server.RemoteSkift, slug: str) -> dict[str, object]:
    page = await sk.list_nodes(projects=[slug], limit=100)
    ready = await sk.ready(projects=[slug], limit=100)
    comments = await sk.comments(f"{slug}#2")
    (art,) = await sk.artifacts(f"{slug}#2")
    part = art.parts[0]
    assert isinstance(part, skift.BlobPart)
    return {
        "nodes": sorted(
            (n.ref, n.title, n.status, n.held, n.blocked, n.parent, n.priority) for n in page.nodes
        ),
        "ready": sorted(n.ref for n in ready.nodes),
        "comments": [(c.author, c.body, c.created_at, len(c.revisions)) for c in comments],
        "blob": await sk.get_blob(part.digest),
    }


def test_a_project_moves_between_two_servers(
    cli: Cli, elsewhere: SkiftServe, tmp_path: Path
) -> None:
    slug = f"move-{uuid.uuid4().hex[:6]}"

    async def build() -> dict[str, object]:
        async with skift_server.connect(cli.server.url) as sk:
            await _build(sk, slug)
            return await _state(sk, slug)

    before = asyncio.run(build())
    path = tmp_path / "move.skift.jsonl"
    wrote = cli.json("export", "-p", slug, "-o", str(path))
    assert wrote["path"] == str(path)
    manifest = json.loads(path.read_text().splitlines()[0])
    assert (manifest["format"], manifest["version"]) == ("skift-archive", 1)

    moved = cli.json("import", str(path), SKIFT_SERVER=elsewhere.url)
    assert moved["project"] == slug
    assert (moved["nodes"], moved["edges"], moved["comments"], moved["blobs"]) == (4, 1, 2, 1)
    assert moved["ids"]

    async def after() -> dict[str, object]:
        async with skift_server.connect(elsewhere.url) as sk:
            return await _state(sk, slug)

    assert asyncio.run(after()) == before
    # the human form, a second time under another slug, from stdin
    said = cli.run(
        "import", "-", "-p", f"{slug}-2", stdin=path.read_text(), SKIFT_SERVER=elsewhere.url
    ).out
    assert f"imported project {slug}-2: 4 nodes" in said
    taken = cli.run("import", str(path), "--json", SKIFT_SERVER=elsewhere.url, expect=1)
    assert json.loads(taken.err)["error"]["code"] == "conflict"
