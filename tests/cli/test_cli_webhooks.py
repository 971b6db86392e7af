"""``skift webhook``: the installed command against a real ``skift serve`` (SURFACE.md's
Webhooks: the commands, their ``--json`` shapes and exit codes).

The receivers are under ``.invalid`` (RFC 2606: never resolves), so the server's
worker attempts and retries without reaching anything.
"""

from __future__ import annotations

from cli_harness import Cli, assert_error

import skift_server

HOOK_KEYS = {"id", "url", "project", "events", "secret", "created_at"}
LISTED_KEYS = {"id", "url", "project", "events", "disabled_at", "created_at"}
DELIVERY_KEYS = {
    "id", "webhook", "state", "attempts", "next_attempt_at", "last_status", "last_error",
    "after", "through", "counts", "created_at", "delivered_at", "parked_at",
}  # fmt: skip


def test_add_list_rotate_disable_enable(cli: Cli) -> None:
    slug, _ = cli.project("Hooks")
    url = "https://hooks.skift.invalid/receive"
    added = cli.json("webhook", "add", url, "-p", slug, "--event", "complete_node")
    assert set(added) == HOOK_KEYS
    assert added["secret"].startswith("whsec_")
    assert (added["url"], added["project"], added["events"]) == (url, slug, ["complete_node"])
    listed = cli.json("webhook", "list", "-p", slug)
    assert [set(w) for w in listed["webhooks"]] == [LISTED_KEYS]
    assert listed["webhooks"][0]["id"] == added["id"]
    assert added["secret"] not in cli.run("webhook", "list", "-p", slug).out
    rotated = cli.json("webhook", "rotate", added["id"])
    assert rotated["secret"].startswith("whsec_")
    assert rotated["secret"] != added["secret"]
    human = cli.run("webhook", "rotate", added["id"])
    assert "whsec_" in human.out
    off = cli.json("webhook", "disable", added["id"])
    assert off["disabled_at"] is not None
    assert "disabled" in cli.run("webhook", "list", "-p", slug).out
    on = cli.json("webhook", "enable", added["id"])
    assert on["disabled_at"] is None
    # one per URL per project: a conflict, exit 1, naming the existing one
    err = assert_error(
        cli.run("webhook", "add", url, "-p", slug, "--json", expect=1).err, "conflict"
    )
    assert added["id"] in err["message"]
    # a loopback address is refused at add (the server does not allow private ones)
    assert_error(
        cli.run("webhook", "add", "http://127.0.0.1:9/x", "-p", slug, "--json", expect=2).err,
        "invalid",
    )
    # -p is required to add
    cli.run("webhook", "add", url, expect=2)


def test_deliveries_test_and_redeliver(cli: Cli) -> None:
    slug, _ = cli.project("Deliver")
    hook = cli.json("webhook", "add", "https://deliver.skift.invalid/x", "-p", slug)

    async def write(sk: skift_server.RemoteSkift) -> None:
        await sk.create(slug, "one")

    cli.api(write)
    got = cli.json("webhook", "deliveries", hook["id"])
    assert len(got["deliveries"]) == 1
    d = got["deliveries"][0]
    assert set(d) >= DELIVERY_KEYS
    assert d["state"] == "pending"
    assert d["counts"] == {"create_node": 1}
    assert cli.json("webhook", "deliveries", "--parked", "-p", slug) == {"deliveries": []}
    test = cli.json("webhook", "test", hook["id"])
    assert set(test) >= DELIVERY_KEYS
    assert test["counts"] == {}
    assert test["after"] == test["through"]
    # a pending delivery is not redelivered: refused with the next move, exit 1
    err = assert_error(
        cli.run("webhook", "redeliver", test["id"], "--json", expect=1).err, "conflict"
    )
    assert err["next"]
    cli.run("webhook", "redeliver", "01JD0000000000000000000000", expect=3)
    assert "pending" in cli.run("webhook", "deliveries", hook["id"]).out
