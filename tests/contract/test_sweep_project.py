"""The ce-sweep state in a skift project: items are work whose readiness follows their status.

On memory, PostgreSQL and a real server (``skift.sweep._project`` uses only
the public API): each status puts its item's node where SURFACE.md says
(open and ready for agents, held, a gate for a person, done with its evidence
as the result, dropped), transitions move it, an agent claims item work with
the ordinary protocol and never the state node, unknown fields survive, a
sensitive item's body and quote never reach the server, and random command
sequences answer as they do on a file.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from sweepgen import commands, run_both

import skift
from skift.sweep import Command, emit_document, parse_document
from skift.sweep._project import ProjectState

NOW = "2026-07-02T12:00:00+00:00"


async def upsert(ps: ProjectState, id: str, item: dict[str, Any], source: str = "slack:C1") -> None:
    out = await ps.run(
        Command(
            "upsert-item", id=id, source=source, writer="w1", now=NOW, item_json=json.dumps(item)
        )
    )
    assert out.word == "OK", out.error


async def node_of(sk: skift.LocalSkift, ps: ProjectState, key: str) -> skift.NodeInfo:
    refs = (await ps.nodes()).payload
    assert refs is not None
    return await sk.get(refs[key])


async def test_each_status_places_its_item_node_as_surface_says(sk: skift.LocalSkift) -> None:
    ps = ProjectState(sk, "feedback")
    assert (await ps.run(Command("lease-acquire", writer="w1", now=NOW))).word == "OK"
    evidence = {"fix_ref": "#42", "verified_merge_sha": "abc123", "verified_at": NOW}
    cases: dict[str, dict[str, Any]] = {
        "1": {"status": "ingested", "title": "Export is broken"},
        "2": {"status": "needs_analysis"},
        "3": {"status": "some_future_status"},
        "4": {"status": "ack_deferred"},
        "5": {"status": "manual_stuck"},
        "6": {"status": "closed", **evidence},
        "7": {"status": "closed", "fix_ref": "#42"},
        "8": {"status": "source_gone"},
    }
    for id, item in cases.items():
        await upsert(ps, id, item)
    n = {id: await node_of(sk, ps, f"slack:C1:{id}") for id in cases}
    assert n["1"].title == "Export is broken"
    assert n["2"].title == "slack:C1:2"  # no title: the key
    for id in ("1", "2", "3", "7"):  # work, and an under-evidenced closed waits for validate
        assert (n[id].status, n[id].ready, n[id].assignee_kind) == (skift.Status.OPEN, True, None)
    assert (n["4"].held, n["4"].ready) == (True, False)
    assert n["5"].assignee_kind is skift.AssigneeKind.USER  # a gate: a person acts on it
    assert n["6"].status is skift.Status.DONE
    assert "abc123" in (await sk.get(n["6"].ref)).result  # type: ignore[operator]
    assert n["8"].status is skift.Status.DROPPED
    assert "sweep-status:manual_stuck" in n["5"].labels

    agent = sk.acting_as(skift.Agent("analyzer"))
    ready = {x.ref for x in (await agent.ready(projects=["feedback"])).nodes}
    assert ready == {n[id].ref for id in ("1", "2", "3", "7")}  # never a gate nor the state node
    claim = await agent.claim_next(projects=["feedback"])
    assert claim.node.ref in ready


async def test_status_changes_move_the_node_back_and_forth(sk: skift.LocalSkift) -> None:
    ps = ProjectState(sk, "moves")
    await ps.run(Command("lease-acquire", writer="w1", now=NOW))
    evidence = {"fix_ref": "#42", "verified_merge_sha": "abc123", "verified_at": NOW}
    await upsert(ps, "1", {"status": "ack_deferred"})
    key = "slack:C1:1"
    for item, status, held, gate in [
        ({"status": "acknowledged"}, skift.Status.OPEN, False, False),
        ({"status": "manual_stuck"}, skift.Status.OPEN, False, True),
        ({"status": "closed", **evidence}, skift.Status.DONE, False, False),
        ({"status": "fix_pending"}, skift.Status.OPEN, False, False),
        ({"status": "source_gone"}, skift.Status.DROPPED, False, False),
        ({"status": "ack_deferred"}, skift.Status.OPEN, True, False),
        # the merge kept the evidence fields; an emptied one leaves closed unproven: open
        ({"status": "closed", "verified_merge_sha": ""}, skift.Status.OPEN, False, False),
    ]:
        await upsert(ps, "1", item)
        node = await node_of(sk, ps, key)
        assert (node.status, node.held, node.assignee_kind is skift.AssigneeKind.USER) == (
            status,
            held,
            gate,
        ), item
    assert (await ps.run(Command("validate"))).payload == {"downgraded": [key]}
    node = await node_of(sk, ps, key)
    assert "sweep-status:fix_pending" in node.labels


async def test_unknown_fields_survive_and_sensitive_text_never_reaches_the_server(
    sk: skift.LocalSkift,
) -> None:
    ps = ProjectState(sk, "private")
    await ps.run(Command("lease-acquire", writer="w1", now=NOW))
    await upsert(ps, "1", {"status": "ingested", "sensitive": True, "body": "SECRETBODY", "quote": "SECRETQUOTE", "team": {"ux": [1, 2]}})  # fmt: skip
    await upsert(ps, "2", {"status": "ingested", "body": "plain text"})
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "leaky.yml"
        src.write_text(
            'schema_version: 1\nsources:\n  "mail":\n    sensitive: true\nitems:\n'
            '  "mail:9":\n    source: "mail"\n    body: "SECRETMAIL"\n    title: "hi"\n'
        )
        assert (await ps.import_file(str(src))).payload == {"items": 1, "sources": 1}
    state = (await ps.read()).state
    assert state is not None
    assert state["items"]["slack:C1:1"] == {"source": "slack:C1", "status": "ingested", "sensitive": True, "id": "1", "team": {"ux": [1, 2]}}  # fmt: skip
    assert state["items"]["mail:9"] == {"source": "mail", "title": "hi"}
    bodies = " ".join(n.body for n in (await sk.list_nodes(projects=["private"], limit=50)).nodes)
    assert "plain text" in bodies
    assert "SECRET" not in bodies
    assert await sk.search("SECRETBODY") == []
    events = json.dumps([skift.to_json(e) for e in await sk.events(project="private")])
    assert "SECRET" not in events


async def test_a_lapsed_write_lock_fences_the_slow_writer_off(sk: skift.LocalSkift) -> None:
    ps = ProjectState(sk, "fenced")
    await ps.run(Command("lease-acquire", writer="w1", now=NOW))
    refs = await sk.list_nodes(projects=["fenced"], labels=["sweep-state"])
    state_ref = refs.nodes[0].ref
    # another writer holds the lock: this one waits for it, then writes
    held = await sk.claim(state_ref, ttl=skift_ttl(1))
    waiting = ProjectState(sk, "fenced", lock_wait=skift_ttl(30))
    await sk.release(state_ref, lease=held.lease.id, reason="crash")
    out = await waiting.run(Command("run-record", writer="w9", outcome="partial", counts="{}", timestamp="T"))  # fmt: skip
    assert out.word == "OK"
    # a lock that stays held past lock_wait is an ERROR naming the lock, and nothing is written
    await sk.claim(state_ref, ttl=skift_ttl(60))
    impatient = ProjectState(sk, "fenced", lock_wait=skift_ttl(0.2))
    out = await impatient.run(Command("lease-release", writer="w1"))
    assert out.word == "ERROR"
    assert "write lock" in (out.error or "")
    assert ((await ps.read()).state or {})["lease"]["writer"] == "w1"


def skift_ttl(seconds: float) -> Any:
    from datetime import timedelta

    return timedelta(seconds=seconds)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_sequences_answer_as_on_a_file(sk: skift.LocalSkift, seed: int) -> None:
    ps = ProjectState(sk, f"equiv-{seed}")
    with tempfile.TemporaryDirectory() as d:
        assert await run_both(commands(random.Random(seed), 25), ps, d) == []


async def test_a_large_import_spans_patches_and_keeps_every_item(
    sk: skift.LocalSkift, tmp_path: Path
) -> None:
    items = "".join(
        f'  "s:{i}":\n    source: "s"\n    status: "{("ack_deferred", "closed", "source_gone", "ingested")[i % 4]}"\n'
        f'    fix_ref: "#1"\n    verified_merge_sha: "abc"\n    verified_at: "{NOW}"\n'
        for i in range(700)
    )
    src = tmp_path / "big.yml"
    src.write_text(f'schema_version: 1\nsources:\n  s:\n    cursor: "700"\nitems:\n{items}')
    ps = ProjectState(sk, "bulk")
    assert (await ps.import_file(str(src))).payload == {"items": 700, "sources": 1}
    exported = tmp_path / "out.yml"
    await ps.export(str(exported))
    # the bytes file mode writes for this state (items in key order)
    assert exported.read_text() == emit_document(parse_document(src.read_text()))
    page = await sk.list_nodes(
        projects=["bulk"], labels=["sweep-status:ack_deferred"], held=True, limit=500
    )
    assert len(page.nodes) == 175


async def test_the_worker_holding_an_items_node_writes_it_under_its_lease(
    sk: skift.LocalSkift,
) -> None:
    ps = ProjectState(sk, "claimed")
    await ps.run(Command("lease-acquire", writer="w1", now=NOW))
    await upsert(ps, "1", {"status": "needs_analysis", "title": "Crash on save"})
    claim = await sk.claim((await node_of(sk, ps, "slack:C1:1")).ref)
    done = {
        "status": "closed",
        "fix_ref": "#42",
        "verified_merge_sha": "abc123",
        "verified_at": NOW,
    }
    cmd = Command("upsert-item", id="1", source="slack:C1", writer="w1", now=NOW, item_json=json.dumps(done))  # fmt: skip
    refused = await ps.run(cmd)  # someone's live lease on the node: refused, nothing written
    assert refused.word == "ERROR"
    assert "leased" in (refused.error or "")
    assert ((await ps.read()).state or {})["items"]["slack:C1:1"]["status"] == "needs_analysis"
    assert (await ps.run(cmd, lease=claim.lease.id)).word == "OK"
    node = await sk.get(claim.node.ref)
    assert node.status is skift.Status.DONE
    assert "abc123" in (node.result or "")
    assert ((await ps.read()).state or {})["lease"]["timestamp"] == NOW


async def test_a_hidden_slug_answers_taken_exactly_as_a_visible_taken_one(
    sk: skift.LocalSkift,
) -> None:
    """Issue 28 (the ruling in docs/identity.md: slugs are the organization's namespace). A
    project bob may not read holds ``payroll``; elsewhere (another organization) dave reads the
    ``payroll`` that holds it there. ``project create --slug payroll`` answers both alike, and a
    sweep write that would create the project (``--state skift:payroll``) answers bob with that
    same "taken", never the "no project" it gave before (which, beside the OK a free slug gets,
    told a hidden project from a taken one). Reads answer as for an absent state, as before."""
    bob = sk.acting_as(skift.User("bob"))
    await bob.list_projects()
    await sk.create_project("Payroll", slug="payroll")
    await sk.restrict_project("payroll", readers=[], reason="salaries")
    org = f"vis-{random.randrange(16**8):08x}"
    carol = sk.acting_as(skift.User("carol"), org=org)
    await carol.create_project("Payroll", slug="payroll")
    dave = carol.acting_as(skift.User("dave"), org=org)
    assert [p.slug for p in await dave.list_projects()] == ["payroll"]

    answers: list[tuple[type, str, str, str]] = []
    for who in (bob, dave):
        with pytest.raises(skift.Conflict) as ei:
            await who.create_project("Mine", slug="payroll")
        answers.append((type(ei.value), ei.value.message, ei.value.next, str(ei.value)))
    assert answers[0] == answers[1]  # hidden-taken and visible-taken: the same words
    assert "taken" in answers[0][1]

    hidden = ProjectState(bob, "payroll")
    for name in ("lease-acquire", "run-record"):
        cmd = Command(name, writer="w1", now=NOW, timestamp=NOW, outcome="completed")
        out = await hidden.run(cmd)
        assert (out.word, out.error) == ("ERROR", f"{answers[0][3]} (payroll)")
    # reads: a hidden slug's state is an absent one (nothing says hidden, nothing says taken)
    for name in ("read", "cursor-get"):
        cmd = Command(name, source="slack:C1")
        got = await hidden.run(cmd)
        absent = await ProjectState(bob, f"nosuch-{org}").run(cmd)
        assert (got.word, got.payload, got.error) == (absent.word, absent.payload, absent.error)
    assert (await hidden.nodes()).word == "NO-STATE"
    # what bob could not see was not touched
    assert [n.title for n in (await sk.list_nodes(projects=["payroll"])).nodes] == []
