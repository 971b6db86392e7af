"""A skift archive (docs/archive.md): a project moved whole to another organization, with
new ids, every byte of its blobs, and the same graph, states, readiness and comments."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

import skift

BLOB = bytes(range(256)) * 41 + b"\x00the end"


async def everything(sk: skift.LocalSkift, project: str) -> list[skift.NodeInfo]:
    out: list[skift.NodeInfo] = []
    page: str | None = None
    while True:
        got = await sk.list_nodes(projects=[project], limit=500, page=page)
        out.extend(got.nodes)
        page = got.next_page
        if not page:
            return out


def shape(n: skift.NodeInfo) -> tuple[Any, ...]:
    return (
        n.number, n.title, n.body, n.kind, n.status, n.priority, n.labels, n.result,
        n.held, n.blocked, n.ready, n.assignee_kind, n.assignee,
        (n.parent or "").split("#")[-1],
    )  # fmt: skip


async def build(sk: skift.LocalSkift) -> str:
    p = await sk.create_project("Moving house", slug=f"move-{secrets.token_hex(3)}")
    s = p.slug
    await sk.patch(
        s,
        [
            skift.CreateNode(title="Epic", alias="e", priority="p1", labels=("big",)),
            skift.CreateNode(title="Design", alias="d", parent="e", body="# Notes\nsome"),
            skift.CreateNode(title="Build", alias="b", parent="e", blocked_by=("d",)),
            skift.CreateNode(title="Ask legal", alias="g", assignee_kind="user"),
            skift.CreateNode(title="Parked", alias="h"),
        ],
    )
    await sk.hold(f"{s}#5", reason="waiting on budget")
    await sk.import_beads(
        '{"id":"bd-x1","title":"From beads","status":"open","priority":2,"issue_type":"bug"}\n',
        project=s,
    )
    c = await sk.add_comment(f"{s}#2", "First thought")
    await sk.add_comment(f"{s}#2", "A reply", reply_to=c.id)
    await sk.edit_comment(c.id, "First thought, edited")
    await sk.resolve_comment(c.id)
    bot = sk.acting_as(skift.Agent("bot"))
    claim = await bot.claim(f"{s}#2", harness="test")
    await bot.record_usage(
        f"{s}#2", model="m-1", input_tokens=1200, output_tokens=300, lease=claim.lease.id
    )
    blob = await bot.put_blob(BLOB, media_type="application/octet-stream")
    await bot.attach_artifact(
        f"{s}#2",
        {
            "name": "report",
            "parts": [
                {"type": "text", "text": "see the blob"},
                {
                    "type": "blob",
                    "digest": blob.digest,
                    "media_type": blob.media_type,
                    "size": blob.size,
                },
            ],
        },
        lease=claim.lease.id,
    )
    await bot.complete(f"{s}#2", lease=claim.lease.id, result="Designed")
    await sk.update_project(s, budget="12.50")
    return s


async def test_an_archive_moves_a_project_whole_to_another_org(sk: skift.LocalSkift) -> None:
    s = await build(sk)
    seen: list[tuple[int, int]] = []
    text = await sk.export_archive(s, progress=lambda d, t: seen.append((d, t)))
    manifest = json.loads(text.splitlines()[0])
    assert (manifest["format"], manifest["version"], manifest["project"]) == (
        "skift-archive", 1, s,
    )  # fmt: skip
    assert seen
    assert seen[-1][0] == seen[-1][1]

    other = sk.acting_as(skift.User("ada"), org=f"dest-{secrets.token_hex(4)}")
    # the lossless move is an admin's: the archive's authors map to principals of their names
    moved = await other.import_archive(text, map_authors=True)
    assert moved.project == s
    assert (moved.nodes, moved.edges, moved.comments, moved.artifacts, moved.blobs) == (
        6, 1, 2, 1, 1,
    )  # fmt: skip
    assert moved.leases == 1
    assert moved.usage == 1
    assert moved.events > 5
    # every id is new, and the answer maps each old one to its new one
    old_nodes = {n.id: n for n in await everything(sk, s)}
    new_nodes = {n.id: n for n in await everything(other, s)}
    assert set(old_nodes).isdisjoint(new_nodes)
    assert {moved.ids[i] for i in old_nodes} == set(new_nodes)
    # the same graph, states and readiness
    assert sorted(shape(n) for n in old_nodes.values()) == sorted(
        shape(n) for n in new_nodes.values()
    )
    # comments: authors, times, thread, revision and resolution
    a = await sk.comments(f"{s}#2")
    b = await other.comments(f"{s}#2")
    assert [(c.author, c.body, c.created_at, c.resolved_at, len(c.revisions)) for c in a] == [
        (c.author, c.body, c.created_at, c.resolved_at, len(c.revisions)) for c in b
    ]
    assert b[1].in_reply_to == b[0].id
    # the artifact and every byte of its blob
    (art,) = await other.artifacts(f"{s}#2")
    blob_part = next(p for p in art.parts if isinstance(p, skift.BlobPart))
    assert await other.get_blob(blob_part.digest) == BLOB
    # lease history, usage, the budget, the beads id, and the events
    (lease,) = await other.leases(f"{s}#2")
    assert (lease.holder, lease.harness) == ("bot", "test")
    assert (await other.usage(f"{s}#2")).actual == (await sk.usage(f"{s}#2")).actual
    assert (await other.project_usage(s)).budget == (await sk.project_usage(s)).budget
    assert (await other.get("bd-x1", project=s)).number == 6
    ops = [ev.op for ev in await other.events(project=s, limit=5000)]
    assert ops[-1] == "import_archive"
    assert ops[:-1] == [ev.op for ev in await sk.events(project=s, limit=5000)]
    # and again, under another slug: an archive can go in twice
    again = await other.import_archive(text, project=f"{s}-2")
    assert again.nodes == 6
    assert set(again.ids.values()).isdisjoint(moved.ids.values())
    with pytest.raises(skift.Conflict, match="taken"):
        await other.import_archive(text)


async def test_a_broken_archive_is_refused_naming_the_line(sk: skift.LocalSkift) -> None:
    s = await build(sk)
    lines = (await sk.export_archive(s)).splitlines()
    with pytest.raises(skift.Invalid, match="line 1: not a skift archive"):
        await sk.import_archive("\n".join(lines[1:]), project="x1")
    bad = [*lines[:3], "{not json", *lines[3:]]
    with pytest.raises(skift.Invalid, match="line 4: not JSON"):
        await sk.import_archive("\n".join(bad), project="x2")
    blob_at = next(i for i, v in enumerate(lines) if '"type":"blob"' in v)
    doc = json.loads(lines[blob_at])
    doc["data"] = doc["data"][:-8] + "AAAAAAA="
    tampered = [*lines[:blob_at], json.dumps(doc), *lines[blob_at + 1 :]]
    with pytest.raises(skift.Invalid, match=f"line {blob_at + 1}: blob .* do not hash"):
        await sk.import_archive("\n".join(tampered), project="x3")
    assert {p.slug for p in await sk.list_projects()} == {s}


async def test_a_restricted_project_is_exported_to_its_readers_only(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Private", slug=f"priv-{secrets.token_hex(3)}")
    await sk.create(p.slug, "Hidden work")
    await sk.restrict_project(p.slug, readers=["ada"], reason="private")
    bob = sk.acting_as(skift.User("bob"))
    with pytest.raises(skift.NotFound):
        await bob.export_archive(p.slug)
    with pytest.raises(skift.NotFound):
        await bob.export_beads(p.slug)
    other = sk.acting_as(skift.User("ada"), org=f"dest-{secrets.token_hex(4)}")
    moved = await other.import_archive(await sk.export_archive(p.slug))
    assert moved.nodes == 1
    # the readers come along by name: ada reads it there, bob of that organization does not
    assert (await other.get(f"{p.slug}#1")).title == "Hidden work"
    with pytest.raises(skift.NotFound):
        await other.acting_as(skift.User("bob")).get(f"{p.slug}#1")
