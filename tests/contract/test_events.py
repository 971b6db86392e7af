"""Events: every mutation appends an immutable event with who, what, why and the request id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from conftest import OpenSkift


async def test_patch_appends_one_event_per_change(sk: skift.LocalSkift) -> None:
    """Every mutation appends an event carrying the principal, the op, the reason and the request id."""
    p = await sk.create_project("Ev")
    await sk.patch(
        p.slug,
        [skift.CreateNode(alias="a", title="A"), skift.CreateNode(title="B", blocked_by=("a",))],
        request_id="req-a",
    )
    await sk.patch(
        p.slug, [skift.DropNode(node="#1", reason="superseded by #3")], request_id="req-b"
    )
    events = await sk.events()
    ops = [(e.op, e.node, e.request_id) for e in events]
    assert ops == [
        ("create_project", None, None),
        ("create_node", "ev#1", "req-a"),
        ("create_node", "ev#2", "req-a"),
        ("add_edge", "ev#2", "req-a"),
        ("drop_node", "ev#1", "req-b"),
    ]
    for e in events:
        assert e.principal == "ada"
        assert e.principal_kind == "user"
        assert e.project == "ev"
        assert e.occurred_at.utcoffset() == timedelta(0)
        assert abs(e.occurred_at - datetime.now(UTC)) < timedelta(minutes=5)
    drop = events[-1]
    assert drop.reason == "superseded by #3"
    assert drop.before == {"status": "open"}
    assert drop.after is not None
    assert drop.after["status"] == "dropped"
    assert len({e.id for e in events}) == len(events)


async def test_update_event_records_before_and_after(sk: skift.LocalSkift) -> None:
    """An event carries the change: the fields before and after."""
    p = await sk.create_project("Ev")
    await sk.patch(p.slug, [skift.CreateNode(title="Old title")])
    await sk.patch(
        p.slug, [skift.UpdateNode(node="#1", title="New title", priority=skift.Priority.P0)]
    )
    upd = (await sk.events(ref="ev#1"))[-1]
    assert upd.op == "update_node"
    assert upd.before == {"title": "Old title", "priority": "p2"}
    assert upd.after == {"title": "New title", "priority": "p0"}


async def test_events_name_the_acting_principal(sk: skift.LocalSkift) -> None:
    """The actor is resolved by the caller's identity, never client-supplied: an agent's write says agent."""
    p = await sk.create_project("Ev")
    bot = sk.acting_as(skift.Agent("bot"))
    await bot.patch(p.slug, [skift.CreateNode(title="Filed by an agent")])
    claim = await bot.claim("ev#1")
    await bot.complete("ev#1", lease=claim.lease.id, result="done")
    events = await sk.events(ref="ev#1")
    assert [(e.op, e.principal, e.principal_kind) for e in events] == [
        ("create_node", "bot", "agent"),
        ("claim", "bot", "agent"),
        ("complete_node", "bot", "agent"),
    ]
    assert events[-1].after is not None
    assert events[-1].after["result"] == "done"


async def test_project_lifecycle_and_holds_are_events(sk: skift.LocalSkift) -> None:
    """Creating, renaming and archiving a project, and every hold and release, are events with a reason."""
    p = await sk.create_project("Ev")
    await sk.patch(p.slug, [skift.CreateNode(title="A")])
    await sk.hold("ev#1", reason="parked for the launch")
    await sk.unhold("ev#1", reason="launch done")
    await sk.hold_project(p.slug, reason="quiet week")
    await sk.unhold_project(p.slug, reason="back")
    await sk.rename_project(p.slug, "Events")
    await sk.archive_project("events", reason="finished")
    got = [(e.op, e.reason) for e in await sk.events() if e.op != "create_node"]
    assert got == [
        ("create_project", None),
        ("hold_node", "parked for the launch"),
        ("unhold_node", "launch done"),
        ("hold_project", "quiet week"),
        ("unhold_project", "back"),
        ("update_project", None),
        ("archive_project", "finished"),
    ]
    rename = next(e for e in await sk.events() if e.op == "update_project")
    assert rename.before == {"title": "Ev", "slug": "ev"}
    assert rename.after == {"title": "Events", "slug": "events"}


async def test_refused_patch_appends_no_event(sk: skift.LocalSkift) -> None:
    """A refused patch appends no event: the log records only what happened."""
    p = await sk.create_project("Ev")
    await sk.patch(p.slug, [skift.CreateNode(title="A")])
    before = await sk.events()
    with pytest.raises(skift.CycleError):
        await sk.patch(
            p.slug, [skift.CreateNode(alias="b", title="B"), skift.AddEdge(from_="b", to="b")]
        )
    with pytest.raises(skift.Refused):
        await sk.acting_as(skift.Agent("bot")).hold("ev#1", reason="agents may not")
    with pytest.raises(skift.Invalid):
        await sk.hold("ev#1", reason="")
    assert await sk.events() == before


async def test_reads_append_no_event(sk: skift.LocalSkift) -> None:
    """Only mutations are events: reading, listing, explaining and resolving write nothing."""
    p = await sk.create_project("Ev")
    await sk.patch(p.slug, [skift.CreateNode(title="A")])
    before = await sk.events()
    await sk.get("ev#1")
    await sk.resolve("ev#1")
    await sk.explain("ev#1")
    await sk.ready()
    await sk.list_nodes()
    await sk.list_projects()
    await sk.get_project("ev")
    assert await sk.events() == before


async def test_events_of_one_node(sk: skift.LocalSkift) -> None:
    """Events are scoped: asking for one node's events gives only that node's history, in order."""
    p = await sk.create_project("Ev")
    await sk.patch(p.slug, [skift.CreateNode(title="A"), skift.CreateNode(title="B")])
    await sk.complete("ev#2")
    await sk.reopen("ev#2", reason="not quite")
    assert [e.op for e in await sk.events(ref="ev#2")] == [
        "create_node",
        "complete_node",
        "reopen_node",
    ]
    assert [e.op for e in await sk.events(ref="#1", project="ev")] == ["create_node"]


async def test_in_process_caller_names_its_principal(open_skift: OpenSkift) -> None:
    """An in-process caller names its principal, and every event it causes carries that principal."""
    svc = await open_skift(principal=skift.Service("orchestrator"))
    p = await svc.acting_as(skift.User("ada")).create_project("Svc")  # a person's call
    await svc.patch(p.slug, [skift.CreateNode(title="Filed by a service")])
    assert {
        (e.principal, e.principal_kind) for e in await svc.events() if e.op != "create_project"
    } == {("orchestrator", "service")}
