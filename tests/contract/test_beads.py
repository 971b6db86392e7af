"""Importing and exporting beads (``bd export`` JSONL): the mapping, matching by beads id,
idempotence, a newer export, the round trip, and bad input (docs/migrating-from-beads.md).

The exports are made by ``bench.beads_gen`` (deterministic, nothing copied from a real
database); the small bad files are hand-written in ``tests/contract/beads/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from beads_data import beads_gen

import skift

HERE = Path(__file__).parent / "beads"
N = 1000


def fixture(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


async def everything(sk: skift.LocalSkift, project: str) -> list[skift.NodeInfo]:
    out: list[skift.NodeInfo] = []
    page: str | None = None
    while True:
        got = await sk.list_nodes(projects=[project], limit=500, page=page)
        out.extend(got.nodes)
        page = got.next_page
        if not page:
            return out


async def ready_refs(sk: skift.LocalSkift, project: str) -> set[str]:
    out: set[str] = set()
    page: str | None = None
    while True:
        got = await sk.ready(projects=[project], limit=500, page=page)
        out.update(n.ref for n in got.nodes)
        page = got.next_page
        if not page:
            return out


def beads_ready(issues: list[dict[str, Any]]) -> set[str]:
    """The ready set as beads defines it, plus skift's rules: an epic with open children
    waits, and a hold (deferred, blocked, a custom status) holds the subtree under it."""
    by_id = {i["id"]: i for i in issues}
    status = {i["id"]: i["status"] for i in issues}
    parent: dict[str, str] = {}
    for i in issues:
        for d in i.get("dependencies", []):
            if d["type"] == "parent-child":
                parent.setdefault(i["id"], d["depends_on_id"])
    open_children = {p for c, p in parent.items() if status[c] not in ("closed", "tombstone")}

    def held(ident: str) -> bool:
        cur: str | None = ident
        while cur is not None:
            if status[cur] not in ("open", "in_progress", "closed", "tombstone"):
                return True
            cur = parent.get(cur)
        return False

    out: set[str] = set()
    for ident, issue in by_id.items():
        if status[ident] not in ("open", "in_progress"):  # beads: open, no open blocker
            continue
        blockers = [
            d["depends_on_id"] for d in issue.get("dependencies", []) if d["type"] == "blocks"
        ]
        if any(status[b] not in ("closed", "tombstone") for b in blockers):
            continue
        if ident in open_children or held(ident):  # skift's epic rule, and holds
            continue
        out.add(ident)
    return out


@pytest.fixture
def skift_local(sk: skift.LocalSkift) -> skift.LocalSkift:
    return sk


async def test_import_maps_counts_edges_parents_statuses(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    issues = beads_gen.generate(N)
    result = await sk.import_beads(beads_gen.text(N), project="bd")
    assert (result.project, result.created, result.updated, result.unchanged) == ("bd", N, 0, 0)
    assert set(result.nodes) == {i["id"] for i in issues}
    blocks = {
        (d["depends_on_id"], i["id"])
        for i in issues
        for d in i.get("dependencies", [])
        if d["type"] == "blocks"
    }
    assert result.edges == len(blocks)
    assert result.comments == sum(len(i.get("comments", [])) for i in issues)
    assert result.warnings == ()

    nodes = {n.ref: n for n in await everything(sk, "bd")}
    assert len(nodes) == N
    for issue in issues:
        node = nodes[result.nodes[issue["id"]]]
        assert node.title == issue["title"]
        assert node.priority == f"p{issue['priority']}"
        assert node.kind == issue["issue_type"]
        assert node.labels == tuple(issue.get("labels", ()))
        assert node.body.startswith(issue["description"])
        if "acceptance_criteria" in issue:
            assert "## Acceptance criteria" in node.body
        expected = {"closed": "done", "tombstone": "dropped"}.get(issue["status"], "open")
        assert node.status == expected, issue["id"]
        if issue["status"] == "closed":
            assert node.result == issue.get("close_reason")
        ups = [
            d["depends_on_id"] for d in issue.get("dependencies", []) if d["type"] == "parent-child"
        ]
        assert node.parent == (result.nodes[ups[0]] if ups else None)
    deferred = [i for i in issues if i["status"] == "deferred"]
    assert deferred
    assert all(nodes[result.nodes[i["id"]]].held for i in deferred)

    # an edge per blocks dependency: explain names the blockers of a blocked node
    waiting = next(
        i
        for i in issues
        if i["status"] == "open"
        and any(
            d["type"] == "blocks" and issues_by(issues)[d["depends_on_id"]]["status"] == "open"
            for d in i.get("dependencies", [])
        )
    )
    assert nodes[result.nodes[waiting["id"]]].blocked


def issues_by(issues: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in issues}


async def test_ready_set_is_beads_ready_plus_the_epic_rule(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    issues = beads_gen.generate(N, seed=11)
    result = await sk.import_beads(beads_gen.text(N, seed=11), project="bd")
    expected = {result.nodes[i] for i in beads_ready(issues)}
    assert expected
    assert await ready_refs(sk, "bd") == expected


async def test_a_second_import_changes_nothing(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    data = beads_gen.text(300, seed=3)
    first = await sk.import_beads(data, project="bd")
    events = len(await sk.events(project="bd", limit=5000))
    again = await sk.import_beads(data, project="bd")
    assert (again.created, again.updated, again.unchanged) == (0, 0, 300)
    assert (again.edges, again.comments) == (0, 0)
    assert again.nodes == first.nodes
    assert len(await sk.events(project="bd", limit=5000)) == events


async def test_a_newer_export_updates_what_changed(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    issues = [
        {"id": "bd-1", "title": "Epic", "status": "open", "priority": 1, "issue_type": "epic"},
        {"id": "bd-2", "title": "Child", "status": "open", "priority": 2, "issue_type": "task",
         "dependencies": [{"issue_id": "bd-2", "depends_on_id": "bd-1", "type": "parent-child"}]},
        {"id": "bd-3", "title": "Blocker", "status": "open", "priority": 2, "issue_type": "task"},
        {"id": "bd-4", "title": "Waits", "status": "open", "priority": 3, "issue_type": "task",
         "dependencies": [{"issue_id": "bd-4", "depends_on_id": "bd-3", "type": "blocks"}]},
    ]  # fmt: skip
    first = await sk.import_beads(jsonl(issues), project="bd")
    assert (await sk.get("bd-4", project="bd")).blocked
    # in skift meanwhile: a person relabels bd-2 (beads never changes bd-2's labels)
    await sk.patch("bd", [skift.UpdateNode(node=first.nodes["bd-2"], labels=("triaged",))])

    newer = [dict(i) for i in issues]
    newer[1]["title"] = "Child, renamed"
    newer[2] = {**newer[2], "status": "closed", "close_reason": "Shipped",
                "closed_at": "2025-11-01T10:00:00Z"}  # fmt: skip
    newer[3] = {**newer[3], "dependencies": []}
    newer.append({"id": "bd-5", "title": "New", "status": "open", "priority": 0,
                  "issue_type": "bug", "comments": [
                      {"author": "grace", "text": "Found it.", "created_at": "2025-11-02T08:30:00Z"}]})  # fmt: skip
    result = await sk.import_beads(jsonl(newer), project="bd")
    assert (result.created, result.updated, result.unchanged) == (1, 3, 1)
    assert result.comments == 1
    child = await sk.get("bd-2", project="bd")
    assert (child.title, child.labels) == ("Child, renamed", ("triaged",))
    blocker = await sk.get("bd-3", project="bd")
    assert (blocker.status, blocker.result) == ("done", "Shipped")
    waits = await sk.get("bd-4", project="bd")
    assert not waits.blocked
    assert waits.ready
    new = await sk.get("bd-5", project="bd")
    assert (new.ref, new.priority, new.kind) == ("bd#5", "p0", "bug")
    (c,) = await sk.comments("bd-5", project="bd")
    # the importer wrote it; its beads author stays text, never a principal (issue 32 point 8)
    assert (c.author, c.body, c.created_at.isoformat()) == (
        "ada",
        "*Imported from beads: written by grace.*\n\nFound it.",
        "2025-11-02T08:30:00+00:00",
    )
    assert "grace" not in {p.name for p in await sk.list_principals()}
    (exported,) = [
        json.loads(line) for line in (await sk.export_beads("bd")).splitlines() if '"bd-5"' in line
    ]
    assert [(c["author"], c["text"]) for c in exported["comments"]] == [("grace", "Found it.")]


def jsonl(issues: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(i) + "\n" for i in issues)


async def test_round_trip_export_then_import(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    issues = beads_gen.generate(400, seed=5)
    await sk.import_beads(beads_gen.text(400, seed=5), project="one")
    exported = await sk.export_beads("one")
    lines = [json.loads(line) for line in exported.splitlines()]
    assert len(lines) == 400
    original = issues_by(issues)
    for out in lines:
        src = original[out["id"]]
        assert isinstance(out["priority"], int)
        for field in ("title", "description", "status", "priority", "issue_type", "created_at"):
            assert out[field] == src[field], (out["id"], field)
        for field in ("design", "acceptance_criteria", "notes", "estimated_minutes",
                      "external_ref", "x_future_field", "close_reason", "closed_at",
                      "deleted_by", "labels", "assignee"):  # fmt: skip
            assert out.get(field) == src.get(field), (out["id"], field)
        assert sorted(dep_keys(out)) == sorted(dep_keys(src))
        assert [(c["author"], c["text"]) for c in out.get("comments", [])] == [
            (c["author"], c["text"]) for c in src.get("comments", [])
        ]

    second = await sk.import_beads(exported, project="two")
    assert second.created == 400
    assert second.warnings == ()
    a = {n.ref.split("#")[1]: n for n in await everything(sk, "one")}
    b = {n.ref.split("#")[1]: n for n in await everything(sk, "two")}
    assert a.keys() == b.keys()
    for k, n in a.items():
        m = b[k]
        assert (n.title, n.body, n.status, n.priority, n.kind, n.labels, n.result, n.held) == (
            m.title, m.body, m.status, m.priority, m.kind, m.labels, m.result, m.held,
        )  # fmt: skip
        assert (n.parent or "").split("#")[-1] == (m.parent or "").split("#")[-1]
    assert {r.split("#")[1] for r in await ready_refs(sk, "one")} == {
        r.split("#")[1] for r in await ready_refs(sk, "two")
    }
    # and exported again, the second project says what the first said
    again = [json.loads(line) for line in (await sk.export_beads("two")).splitlines()]
    assert [drop_updated(x) for x in again] == [drop_updated(x) for x in lines]


def drop_updated(issue: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in issue.items() if k != "updated_at"}


def dep_keys(issue: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d["type"], d["depends_on_id"]) for d in issue.get("dependencies", [])]


async def test_export_of_native_nodes_makes_ids(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    p = await sk.create_project("Native")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(title="Epic", alias="e", priority="p1", labels=("x",)),
            skift.CreateNode(title="Design", alias="d", parent="e"),
            skift.CreateNode(title="Build", blocked_by=("d",), parent="e"),
        ],
    )
    await sk.hold(f"{p.slug}#1", reason="waiting on budget")
    lines = [json.loads(v) for v in (await sk.export_beads(p.slug)).splitlines()]
    one, _, three = lines
    assert (one["id"], one["status"], one["priority"], one["labels"]) == (
        f"{p.slug}-1", "deferred", 1, ["x"],
    )  # fmt: skip
    assert {(d["type"], d["depends_on_id"]) for d in three["dependencies"]} == {
        ("parent-child", f"{p.slug}-1"),
        ("blocks", f"{p.slug}-2"),
    }


async def test_beads_ids_are_references_in_their_project(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    result = await sk.import_beads(fixture("dangling.jsonl"), project="bd", skip_dangling=True)
    assert (await sk.get("bd-d2", project="bd")).ref == result.nodes["bd-d2"]
    assert (await sk.get("bd-d2")).ref == result.nodes["bd-d2"]  # one project has it
    hits = await sk.search("bd-d2")
    assert hits[0].node.ref == result.nodes["bd-d2"]
    assert "beads_id" in hits[0].matched
    await sk.import_beads(fixture("dangling.jsonl"), project="other", skip_dangling=True)
    with pytest.raises(skift.Invalid, match="several projects"):
        await sk.get("bd-d2")
    assert (await sk.get("bd-d2", project="other")).ref == "other#2"


async def test_malformed_line_is_named_and_nothing_written(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    with pytest.raises(skift.Invalid, match="line 3: not JSON") as err:
        await sk.import_beads(fixture("malformed.jsonl"), project="bd")
    assert err.value.details["line"] == 3
    with pytest.raises(skift.Invalid, match="line 2: bd-b2: priority 'high'"):
        await sk.import_beads(fixture("bad_priority.jsonl"), project="bd")
    assert [p.slug for p in await sk.list_projects()] == []


async def test_dangling_dependency_is_named_or_skipped(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    with pytest.raises(skift.Invalid, match="line 2: bd-d2 depends on bd-gone") as err:
        await sk.import_beads(fixture("dangling.jsonl"), project="bd")
    assert "skip_dangling" in err.value.next
    assert err.value.move == {"do": "skip_dangling"}  # the CLI words it as --skip-dangling
    assert [p.slug for p in await sk.list_projects()] == []
    result = await sk.import_beads(fixture("dangling.jsonl"), project="bd", skip_dangling=True)
    assert result.created == 3
    assert result.edges == 1
    assert result.warnings == (
        "line 2: skipped bd-d2's blocks dependency on bd-gone (not in the file)",
    )
    # the related dependency on an issue elsewhere means nothing to readiness, and survives
    (d3,) = [json.loads(v) for v in (await sk.export_beads("bd")).splitlines() if "bd-d3" in v]
    assert dep_keys(d3) == [("related", "bd-elsewhere")]


async def test_a_cycle_is_refused_naming_it(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    with pytest.raises(skift.CycleError, match="bd-c1 -> bd-c2 -> bd-c1") as err:
        await sk.import_beads(fixture("cyclic.jsonl"), project="bd")
    assert "break_cycles" in err.value.next
    assert err.value.move == {"do": "break_cycles"}  # the CLI words it as --break-cycles
    assert [p.slug for p in await sk.list_projects()] == []


async def test_break_cycles_drops_the_fewest_and_lists_them(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    result = await sk.import_beads(fixture("cyclic.jsonl"), project="bd", break_cycles=True)
    assert result.created == 8
    assert len(result.warnings) == 3  # one arc for each of the three knots
    assert all("to break a cycle" in w for w in result.warnings)
    assert any(
        "bd-e1.1 on bd-e1" in w for w in result.warnings
    )  # the epic's child keeps its parent
    assert (await sk.get("bd-e1.1", project="bd")).parent == result.nodes["bd-e1"]
    assert result.edges == 7 - 3


async def test_dry_run_reports_and_writes_nothing(skift_local: skift.LocalSkift) -> None:
    sk = skift_local
    dry = await sk.import_beads(beads_gen.text(50), project="bd", dry_run=True)
    assert dry.dry_run
    assert dry.created == 50
    assert [p.slug for p in await sk.list_projects()] == []
    real = await sk.import_beads(beads_gen.text(50), project="bd")
    assert (real.created, real.edges, real.comments) == (dry.created, dry.edges, dry.comments)


async def test_an_agent_may_not_import(open_skift: Any) -> None:
    bot = await open_skift(principal=skift.Agent("bot"))
    with pytest.raises(skift.Refused, match="may not import"):
        await bot.import_beads(fixture("dangling.jsonl"), project="bd", skip_dangling=True)


async def test_a_large_export_travels_whole_and_tells_its_progress(
    skift_local: skift.LocalSkift,
) -> None:
    # some 4.6 MB: over a default gRPC client's 4 MiB message, so the wire streams it
    sk = skift_local
    text = beads_gen.text(5000, seed=2)
    assert len(text.encode()) > 4 * 1024 * 1024
    seen: list[tuple[int, int]] = []
    result = await sk.import_beads(text, project="big", progress=lambda d, t: seen.append((d, t)))
    assert (result.created, len(result.nodes)) == (5000, 5000)
    assert seen[-1] == (5000, 5000)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    told: list[tuple[int, int]] = []
    back = await sk.export_beads("big", progress=lambda d, t: told.append((d, t)))
    assert [json.loads(v)["id"] for v in back.splitlines()] == list(result.nodes)
    assert told[-1] == (5000, 5000)
