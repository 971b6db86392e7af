"""Acceptance: the installed ``skift`` as a subprocess against a real ``skift serve``.

Each test is a story a user would tell, checked through what they would see:
the exit code, the human output, and the ``--json`` shapes of SURFACE.md.
Set-up that is not under test goes through the API (``cli.api``) to keep the
number of processes down.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from datetime import timedelta

from cli_harness import (
    EXPLAIN_KEYS,
    SKIFT,
    Cli,
    assert_claim,
    assert_error,
    assert_node,
    assert_page,
    assert_patch,
)

import skift_server


def test_ready_with_no_project_shows_every_project_in_turn_order(cli: Cli) -> None:
    """Seed 003: two projects with ready work; `skift ready` with no project shows both, in turns."""
    a, _ = cli.project("turns alpha", "alpha 1", "alpha 2")
    b, _ = cli.project("turns beta", "beta 1", "beta 2")

    page = cli.json("ready", "--limit", "500")
    assert_page(page)
    ours = [n for n in page["nodes"] if n["project"] in (a, b)]
    assert len(ours) == 4
    # round-robin: the projects alternate, priority-then-age within each
    projects = [n["project"] for n in ours]
    assert projects[0] != projects[1]
    assert projects == projects[:2] * 2
    assert [n["ref"] for n in ours if n["project"] == a] == [f"{a}#1", f"{a}#2"]

    human = cli.run("ready", "--limit", "500").out
    refs = [r for r in re.findall(r"\b[a-z0-9-]+#\d+\b", human) if r.split("#")[0] in (a, b)]
    assert refs == [n["ref"] for n in ours]  # each row names its project, same order

    # claim takes many projects too: one from each, in turn
    first = cli.json("claim", "-p", a, "-p", b)
    second = cli.json("claim", "-p", a, "-p", b)
    assert_claim(first)
    assert {first["node"]["project"], second["node"]["project"]} == {a, b}


def test_decompose_claim_heartbeat_complete_and_downstream_sees_the_result(cli: Cli) -> None:
    p, _ = cli.project("oauth")
    plan = f"""
project: {p}
ops:
  - {{op: create_node, alias: epic, title: Ship OAuth login}}
  - {{op: create_node, alias: research, title: Recommend a provider, parent: epic}}
  - {{op: create_node, alias: impl, title: Implement the callback, parent: epic,
     blocked_by: [research], labels: [backend]}}
"""
    doc = cli.run("patch", "-", "--json", stdin=plan).json()
    assert_patch(doc)
    assert set(doc["created"]) == {"epic", "research", "impl"}
    research, impl = doc["created"]["research"], doc["created"]["impl"]
    by_ref = {n["ref"]: n for n in doc["nodes"]}
    assert by_ref[impl]["blocked"]
    assert by_ref[impl]["parent"] == doc["created"]["epic"]
    assert by_ref[research]["ready"]

    tree = cli.run("list", "-p", p).out
    assert p in tree
    assert re.search(r"#1 waiting Ship OAuth login", tree), tree
    assert re.search(r"#3 blocked Implement the callback\s+← #2", tree), tree

    # an agent, over TCP with a token, claims the research
    cli.run("principal", "add", "scout", "--kind", "agent")
    secret = cli.json("token", "create", "scout")["token"]
    agent = {"SKIFT_SERVER": cli.tcp, "SKIFT_TOKEN": secret}
    claim = cli.json("claim", "-p", p, "--ttl", "10m", "--harness", "pytest", **agent)
    assert_claim(claim)
    assert claim["node"]["ref"] == research
    assert claim["lease"]["holder"] == "scout"
    lease = claim["lease"]["id"]

    hb = cli.json("heartbeat", research, "--lease", lease, **agent)
    assert hb["id"] == lease
    assert hb["expires_at"] >= claim["lease"]["expires_at"]

    done = cli.run(
        "complete", research, "--lease", lease, "--result-file", "-", "--json",
        stdin="Use GitHub: it has device flow.", **agent,
    ).json()  # fmt: skip
    assert_patch(done)

    nxt = cli.json("claim", "-p", p, **agent)
    assert nxt["node"]["ref"] == impl
    assert [(i["ref"], i["result"]) for i in nxt["inputs"]] == [
        (research, "Use GitHub: it has device flow.")
    ]


def test_gate_hold_focus_and_explain(cli: Cli) -> None:
    p, (ref, other) = cli.project("gates", "Deploy the service", "Write the changelog")
    lease = cli.api(lambda sk: sk.claim(ref, ttl=timedelta(minutes=5))).lease.id

    gated = cli.json("gate", ref, "Mint a deploy token", "--lease", lease, "--body", "in the vault")
    assert_patch(gated)
    gate = gated["created"]["gate"]

    ex = cli.json("explain", ref)
    assert set(ex) == EXPLAIN_KEYS
    assert ex["ready"] is False
    kinds = [r["kind"] for r in ex["reasons"]]
    assert "blocked_by" in kinds
    assert "waiting_on_person" in kinds
    human = cli.run("explain", ref).out
    assert "waiting on a person" in human
    assert gate in human

    refused = cli.run("claim", ref, "--json", expect=1)
    assert "not ready" in assert_error(refused.err, "refused")["message"]

    # a person parks the gate: Explain on the gate names the hold
    cli.run("hold", gate, "--reason", "after the audit")
    held = cli.json("explain", gate)
    assert next(r for r in held["reasons"] if r["kind"] == "held")["reason"] == "after the audit"
    cli.run("unhold", gate, "--reason", "audit done")

    # project-scoped focus: keep only the gate; the rest of the project is held
    focus = cli.json("focus", gate, "-p", p, "--reason", "the deploy first")
    assert other in focus["held"]
    page = cli.json("ready", "-p", p)
    assert [n["ref"] for n in page["nodes"]] == [gate]
    assert page["held_count"] >= 1
    cleared = cli.json("focus", "--clear", "-p", p, "--reason", "done")
    assert other in cleared["released"]

    # the person completes the gate; the agent's node is ready again
    async def answer(sk: skift_server.RemoteSkift) -> bool:
        c = await sk.claim(gate)
        await sk.complete(gate, lease=c.lease.id, result="token in the vault")
        return (await sk.get(ref)).ready

    assert cli.api(answer)

    # a project hold, --project after the subcommand; claiming from it finds nothing
    out = cli.json("hold", "--project", p, "--reason", "freeze")
    assert out["project"] == p
    assert out["parked"] >= 1
    cli.run("claim", "-p", p, expect=5)
    cli.run("unhold", "--reason", "thaw", "-p", p)


def test_every_exit_code(cli: Cli) -> None:
    p, (blocker,) = cli.project("exits", "first")
    blocked = cli.json("create", "second", "-p", p, "--blocked-by", blocker)["nodes"][0]
    assert_node(blocked)
    cli.run("ready", "-p", p)  # 0
    # 1: refused (claiming a node that is not ready), unauthenticated (a bad token)
    cli.run("claim", blocked["ref"], expect=1)
    bad = cli.run("ready", "--json", expect=1, SKIFT_SERVER=cli.tcp, SKIFT_TOKEN="nope")
    assert_error(bad.err, "unauthenticated")
    # 2: a bad flag, two projects where one is meant (more in test_cli_inprocess)
    assert "No such option" in cli.run("ready", "--bogus", expect=2).err
    two = cli.run("show", "#1", "-p", p, "-p", "other", "--json", expect=2)
    assert "only one --project" in assert_error(two.err, "invalid")["message"]
    # 3: not found
    assert_error(cli.run("show", f"{p}#999", "--json", expect=3).err, "not_found")
    # 4: unavailable
    down = cli.run("ready", "--json", expect=4, SKIFT_SERVER="unix:///nonexistent/skift.sock")
    assert_error(down.err, "unavailable")
    # 5: nothing ready (the only ready node is leased), and --wait running out
    cli.api(lambda sk: sk.claim(blocker))
    assert_error(cli.run("claim", "-p", p, "--json", expect=5).err, "nothing_ready")
    cli.run("claim", "-p", p, "--wait", "0.3s", expect=5)


def test_malformed_patch_points_at_the_operation_and_field(cli: Cli) -> None:
    p, _ = cli.project("malformed")
    bad = f"""
project: {p}
ops:
  - {{op: create_node, alias: a, title: fine}}
  - {{op: add_edge, from: a, to: a}}
  - {{op: create_node, alias: c, title: urgent, priority: p9}}
"""
    err = assert_error(cli.run("patch", "-", "--json", stdin=bad, expect=2).err, "invalid")
    assert err["index"] == 2
    assert err["field"] == "ops[2].priority"
    human = cli.run("patch", "-", stdin=bad, expect=2).err
    assert "ops[2].priority" in human
    assert "p9" in human

    cli.run("patch", "-", stdin="ops: [{op: create_node, title: [unclosed", expect=2)
    # nothing was sent: the project is still empty
    assert cli.api(lambda sk: sk.list_nodes(projects=[p])).nodes == ()

    # a good document without a request id: one is made and printed
    good = cli.run("patch", "-", "-p", p, stdin="- {op: create_node, title: made}")
    rid = re.search(r"request id (\S+)", good.err)
    assert rid
    assert rid.group(1) in good.out


def test_events_follow_prints_new_events_as_they_happen(cli: Cli) -> None:
    _, (ref,) = cli.project("follow", "watched")
    args = [str(SKIFT), "events", "--follow", "--json", "--op", "hold_node"]
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=cli.env()
    ) as proc:
        assert proc.stdout is not None
        watchdog = threading.Timer(30, proc.terminate)  # readline must not block forever
        watchdog.start()
        try:
            time.sleep(1.5)  # let it start and read what is already there
            cli.api(lambda sk: sk.hold(ref, reason="seen live"))
            seen: dict[str, str] = {}
            while not seen:
                line = proc.stdout.readline()
                if not line:
                    break
                event = json.loads(line)
                if event["node"] == ref:
                    seen = event
        finally:
            watchdog.cancel()
            proc.terminate()
    assert seen["op"] == "hold_node"
    assert seen["reason"] == "seen live"
    assert seen["cursor"].startswith("v2.")
