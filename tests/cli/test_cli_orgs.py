"""``skift org create | list`` and ``skift policy show | set | reset``: the installed command
against a real ``skift serve`` (SURFACE.md's Organizations: spellings, ``--json`` shapes, exit
codes). The new organization's admin token works at once over TCP, and its policy, set there,
decides its agents' next requests and nobody else's."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from cli_harness import Cli, assert_error

if TYPE_CHECKING:
    from pathlib import Path

RELEASE_RULE = """package skift.authz

import rego.v1

deny contains {
    "msg": sprintf("%s is release work: only a person completes it", [i.node.ref]),
    "next": "Comment on it with what you found; a person completes it.",
} if {
    some i in input.intents
    i.action == "complete"
    i.node.project == "release"
    not person
}
"""


def test_org_create_list_and_the_policy_of_the_new_organization(cli: Cli, tmp_path: Path) -> None:
    name = f"acme-{uuid.uuid4().hex[:6]}"
    made = cli.json("org", "create", name, "--admin", "wile")
    assert {"org", "admin", "token"} <= set(made)
    assert (made["org"], made["admin"]) == (name, "wile")
    assert made["token"].startswith("skt_")
    human = cli.run("org", "create", f"{name}-2", "--admin", "road")
    assert "shown once" in human.out
    err = assert_error(
        cli.run("org", "create", name, "--admin", "x", "--json", expect=1).err, "conflict"
    )
    assert "org list" in err["next"]
    orgs = cli.json("org", "list")["orgs"]
    assert orgs[0]["first"] is True
    assert {"name", "created_at", "first"} <= set(orgs[-1])
    assert [o["name"] for o in orgs][-2:] == [name, f"{name}-2"]
    assert name in cli.run("org", "list").out

    # the new admin, over TCP with the printed token, at once
    wile = {"SKIFT_SERVER": cli.tcp, "SKIFT_TOKEN": made["token"]}
    assert_error(cli.run("org", "list", "--json", expect=1, **wile).err, "refused")
    cli.run("project", "create", "Release", "--slug", "release", **wile)
    cli.run("principal", "add", "bot", "--kind", "agent", **wile)
    bot = {
        "SKIFT_SERVER": cli.tcp,
        "SKIFT_TOKEN": cli.json("token", "create", "bot", **wile)["token"],
    }

    assert cli.json("policy", "show", **wile) == {
        "modules": [],
        "updated_at": None,
        "updated_by": None,
    }
    rule = tmp_path / "release.rego"
    rule.write_text(RELEASE_RULE)
    assert_error(
        cli.run("policy", "set", str(rule), "--reason", "mine", "--json", expect=1, **bot).err,
        "refused",
    )
    got = cli.json("policy", "set", str(rule), "--reason", "a person signs releases", **wile)
    assert set(got) == {"modules", "updated_at", "updated_by"}
    assert got["modules"] == [{"name": "release.rego", "source": RELEASE_RULE}]
    assert got["updated_by"] == "wile"
    assert cli.json("policy", "show", **wile) == got
    shown = cli.run("policy", "show", **bot).out
    assert "release.rego" in shown
    assert "only a person completes it" in shown

    broken = tmp_path / "broken.rego"
    broken.write_text("package skift.authz\n\ndeny contains {\n")
    err = assert_error(
        cli.run("policy", "set", str(broken), "--reason", "oops", "--json", expect=2, **wile).err,
        "invalid",
    )
    assert "broken.rego does not compile" in err["message"]
    cli.run("policy", "set", str(rule), expect=2, **wile)  # --reason is required
    cli.run("policy", "set", "--reason", "nothing", expect=2, **wile)  # a file is required

    ref = cli.json("create", "Tag the release", "-p", "release", **bot)["nodes"][0]["ref"]
    lease = cli.json("claim", ref, **bot)["lease"]["id"]
    err = assert_error(
        cli.run(
            "complete", ref, "--lease", lease, "--result", "tagged", "--json", expect=1, **bot
        ).err,
        "refused",
    )
    assert err["message"] == f"{ref} is release work: only a person completes it"
    # the server's own organization keeps the default alone
    assert cli.json("policy", "show")["modules"] == []

    out = cli.run("policy", "reset", "--reason", "the release is out", **wile).out
    assert "default policy alone" in out
    assert cli.json("policy", "show", **wile)["modules"] == []
    cli.run("complete", ref, "--lease", lease, "--result", "tagged", **bot)
    ops = [e["op"] for e in cli.json("events", **wile)["events"]]
    assert [o for o in ops if o.endswith("_policy")] == ["set_policy", "reset_policy"]
