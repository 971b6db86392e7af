"""A day at the terminal: the everyday commands, events like tail, narrow terminals, small courtesies.

Every command runs as a real ``skift`` process against the shared ``skift
serve`` (tests/cli/conftest.py); set-up that is not under test goes through
the API.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from cli_harness import SKIFT, Cli

import skift


def test_update_changes_fields_and_labels(cli: Cli) -> None:
    p, (ref,) = cli.project("update", "Old title")
    cli.run("create", "Labelled", "-p", p, "--label", "later", "--label", "keep")
    got = cli.json("update", ref, "--title", "New title", "--priority", "p1", "--kind", "bug")
    node = got["nodes"][0]
    assert (node["title"], node["priority"], node["kind"]) == ("New title", "p1", "bug")
    labelled = cli.json("update", f"{p}#2", "--label", "security", "--unlabel", "later")
    assert labelled["nodes"][0]["labels"] == ["keep", "security"]
    assert cli.run("update", ref, expect=2).err  # nothing to change


def test_link_and_unlink_change_readiness(cli: Cli) -> None:
    p, (first, second) = cli.project("link", "First", "Second")
    cli.run("-p", p, "link", "#1", "#2")
    assert cli.json("show", second)["ready"] is False
    shown = cli.run("show", second).out
    assert "blocked by" in shown
    assert first in shown
    cycle = cli.run("-p", p, "link", "#2", "#1", "--json", expect=1)
    assert json.loads(cycle.err)["error"]["code"] == "conflict"
    cli.run("-p", p, "unlink", "#1", "#2")
    assert cli.json("show", second)["ready"] is True


def test_rate_set_prices_usage(cli: Cli) -> None:
    p, (ref,) = cli.project("rates", "Costly")
    model = f"model-{p}"
    cli.run("rate", "set", model, "--input", "3", "--output", "15")
    assert model in cli.run("rate", "list").out
    cli.run("usage", "add", ref, "--model", model, "--input-tokens", "1000000", "--estimate")
    report = cli.json("usage", "show", ref)
    assert report["unpriced_models"] == []
    assert report["cost_estimate"] == "3"


def test_graph_as_mermaid_and_dot(cli: Cli) -> None:
    p, (epic, a, b) = cli.project("graph", "Epic", "Part A", "Part B")

    async def shape(sk: object) -> None:
        assert isinstance(sk, skift.LocalSkift | object)
        await sk.patch(  # type: ignore[attr-defined]
            p,
            [
                skift.UpdateNode(node=a, parent=epic),
                skift.UpdateNode(node=b, parent=epic),
                skift.AddEdge(from_=a, to=b),
            ],
        )

    cli.api(shape)
    mermaid = cli.run("-p", p, "graph").out
    assert mermaid.startswith("flowchart TD")
    assert "Part A" in mermaid
    assert "-. blocks .->" in mermaid
    dot = cli.run("graph", epic, "--format", "dot").out
    assert dot.startswith("digraph skift {")
    assert 'label="blocks"' in dot
    doc = cli.json("-p", p, "graph")
    assert [a, b] in doc["blocks"]
    assert [epic, a] in doc["contains"]

    async def finish(sk: object) -> None:
        await sk.complete(a, result="done")  # type: ignore[attr-defined]

    cli.api(finish)  # a done blocker constrains nothing: no longer drawn
    assert cli.json("-p", p, "graph")["blocks"] == []


def test_completion_scripts(cli: Cli) -> None:
    assert "_SKIFT_COMPLETE" in cli.run("completion", "bash").out
    assert "compdef" in cli.run("completion", "zsh").out
    assert "complete" in cli.run("completion", "fish").out


def test_a_star_overrides_the_default_project(cli: Cli) -> None:
    a, _ = cli.project("star a", "in a")
    b, _ = cli.project("star b", "in b")
    only_a = {n["project"] for n in cli.json("ready", SKIFT_PROJECT=a)["nodes"]}
    assert only_a == {a}
    every = {
        n["project"]
        for n in cli.json("ready", "-p", "*", "--limit", "500", SKIFT_PROJECT=a)["nodes"]
    }
    assert {a, b} <= every


def test_show_lists_artifacts_blockers_and_comments_and_blob_get_fetches(
    cli: Cli, tmp_path: Path
) -> None:
    _, (ref, later) = cli.project("show all", "Report", "Later")
    report = tmp_path / "report.bin"
    report.write_bytes(b"\x00\x01binary report\xff")
    lease = cli.run("claim", ref, "-q").out.strip()
    assert re.fullmatch(r"[0-9A-Z]{26}", lease), lease
    cli.run("complete", ref, "--lease", lease, "--result", "done", "--artifact", str(report))
    cli.run("comment", ref, "looks good")
    shown = cli.run("show", ref).out
    assert "report.bin" in shown
    assert "1 comment(s), 1 unresolved" in shown
    digest = re.search(r"sha256:[0-9a-f]{64}", shown)
    assert digest, shown
    doc = cli.json("show", ref)
    assert doc["comments"] == {"count": 1, "unresolved": 1}
    assert doc["artifacts"][0]["name"] == "report.bin"
    out = tmp_path / "fetched.bin"
    cli.run("blob", "get", digest.group(0), "-o", str(out))
    assert out.read_bytes() == report.read_bytes()
    del later


def test_release_defaults_to_crash_and_list_hides_dropped(cli: Cli) -> None:
    p, (ref, gone) = cli.project("release", "Work", "Gone")
    lease = cli.run("claim", ref, "-q").out.strip()
    assert "(crash)" in cli.run("release", ref, "--lease", lease).out
    cli.run("drop", gone, "--reason", "superseded")
    listed = cli.run("-p", p, "list")
    assert "Gone" not in listed.out
    assert "1 dropped node(s) hidden" in listed.err
    assert "Gone" in cli.run("-p", p, "list", "--all").out
    assert [n["title"] for n in cli.json("-p", p, "list")["nodes"]] == ["Work"]


def test_dropping_an_epic_without_cascade_warns_about_its_open_children(cli: Cli) -> None:
    p, (epic, child) = cli.project("epic", "Epic", "Child")

    async def nest(sk: object) -> None:
        await sk.patch(p, [skift.UpdateNode(node=child, parent=epic)])  # type: ignore[attr-defined]

    cli.api(nest)
    got = cli.run("drop", epic, "--reason", "descoped")
    assert "warning" in got.err
    assert child in got.err
    assert "--cascade --max-nodes" in got.err


def test_a_cascade_over_its_bound_names_the_flag(cli: Cli) -> None:
    p, (a, b) = cli.project("cascade", "A", "B")
    cli.run("-p", p, "link", "#1", "#2")
    got = cli.run("drop", a, "--reason", "x", "--cascade", "--max-nodes", "1", expect=1)
    assert "--max-nodes 2" in got.err
    del b


def test_init_checks_the_project_and_errors_point_at_the_config_file(cli: Cli) -> None:
    home = cli.home / "init-check"
    env = {"XDG_CONFIG_HOME": str(home)}
    bad = cli.run("init", "-p", "nosuch-project", "--no-input", expect=2, **env)
    assert "no project 'nosuch-project'" in bad.err
    assert not (home / "skift" / "config.toml").exists()
    (home / "skift").mkdir(parents=True)
    (home / "skift" / "config.toml").write_text('project = "vanished"\n')
    got = cli.run("ready", expect=3, **env)
    assert "config.toml" in got.err


def test_nothing_ready_names_the_flag_and_errors_keep_message_and_move_apart(cli: Cli) -> None:
    p, _ = cli.project("nothing")
    got = cli.run("claim", "-p", p, expect=5)
    assert "--wait" in got.err
    assert "next:" in got.err


def test_events_follow_starts_at_the_end_like_tail(cli: Cli) -> None:
    p, _ = cli.project("tail", *(f"old {i}" for i in range(15)))
    proc = subprocess.Popen(
        [str(SKIFT), "events", "--follow", "-p", p, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=cli.env(),
    )
    try:
        assert proc.stdout is not None
        first = [json.loads(proc.stdout.readline()) for _ in range(10)]
        assert first[-1]["node"] == f"{p}#15"  # the last ten of the past, not the oldest
        assert first[0]["node"] == f"{p}#6"
        cli.run("create", "brand new", "-p", p)
        new = json.loads(proc.stdout.readline())
        assert new["op"] == "create_node"
        assert new["node"] == f"{p}#16"
    finally:
        proc.kill()
        proc.communicate()
    since = cli.run("events", "-p", p, "--since", "1h", "--json").json()
    assert len(since["events"]) >= 16
    lines = cli.run("events", "-p", p, "--limit", "3").out.splitlines()
    assert len(lines) == 3
    assert all(len(line) < 100 for line in lines)


def test_narrow_terminals_keep_one_line_per_node(cli: Cli) -> None:
    p, _ = cli.project(
        "narrow",
        "Recommend an OAuth provider after comparing three of them in depth",
        "Write the callback handler that exchanges the code for a token",
    )
    cli.run("update", f"{p}#1", "--label", "research")
    for width in ("60", "50"):
        out = cli.run("ready", "-p", p, COLUMNS=width).out.splitlines()
        rows = [line for line in out if p in line]
        assert len(rows) == 2, out
        assert all(len(line) <= int(width) for line in out), out
        assert any("Recommend" in line for line in rows), out
        assert "#research" not in "\n".join(out)
    assert "[research]" in cli.run("ready", "-p", p, COLUMNS="120").out
    ex = cli.run("explain", f"{p}#1", COLUMNS="50").out
    assert all(len(line) <= 50 for line in ex.splitlines()), ex


def test_the_demo_shows_distinct_lease_ids(cli: Cli) -> None:
    out = cli.run("demo").out
    ids = re.findall(r"\(lease …([0-9A-Z]{8})\)", out)
    assert len(ids) >= 2, out
    assert len(set(ids)) == len(ids)


def test_leases_show_and_preempt(cli: Cli) -> None:
    """A lost lease id is found with `skift leases` and `skift show`; a person takes a lease back
    with `release --preempt` (no lease id), and the old lease is fenced from then on."""
    p, (ref,) = cli.project("leases", "Stuck work")
    claim = cli.json("claim", ref, "--harness", "test-harness")
    lease = claim["lease"]["id"]
    listed = cli.json("leases", "-p", p)["leases"]
    assert [(x["node"], x["holder"], x["harness"], x["id"]) for x in listed] == [
        (ref, claim["lease"]["holder"], "test-harness", lease)
    ]
    assert lease in cli.run("leases", "-p", p).out
    shown = cli.json("show", ref)
    assert (shown["lease"]["id"], shown["claimed"]) == (lease, True)
    assert "leased by" in cli.run("show", ref).out
    cli.run("release", ref, "--preempt", expect=2)  # a reason is required
    out = cli.run("release", ref, "--preempt", "--reason", "stuck for an hour").out
    assert "preempted" in out
    after = cli.json("show", ref)
    assert (after["lease"], after["ready"]) == (None, True)
    assert cli.json("leases", "-p", p) == {"leases": []}
    fenced = cli.run("heartbeat", ref, "--lease", lease, "--json", expect=1)
    assert json.loads(fenced.err)["error"]["code"] == "conflict"
