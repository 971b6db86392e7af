"""Webhooks: endpoints and the delivery outbox (seed 004, docs/webhooks.md).

The rules a caller sees through the API, on every store: an endpoint's secret is
shown once; a person manages endpoints and an agent is refused with the next
move; what commits coalesces into one pending delivery per endpoint, counted by
operation; a pending delivery cannot be redelivered; a test delivery carries an
empty window. Attempts (the worker in ``skift serve``) are proven against real
receivers in tests/server/test_webhook_delivery.py.
"""

from __future__ import annotations

import base64

import pytest

import skift

HOOK = "https://hooks.example.com/skift"


async def test_add_shows_the_secret_once_and_records_an_event(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Hooks")
    hook = await sk.add_webhook(p.slug, HOOK)
    assert hook.secret is not None
    assert hook.secret.startswith("whsec_")
    assert len(base64.b64decode(hook.secret.removeprefix("whsec_"))) == 32
    assert (hook.url, hook.project, hook.events, hook.disabled_at) == (HOOK, "hooks", (), None)
    listed = await sk.webhooks(project=p.slug)
    assert [(w.id, w.url, w.secret) for w in listed] == [(hook.id, HOOK, None)]
    assert [w.id for w in await sk.webhooks()] == [hook.id]
    created = [e for e in await sk.events() if e.op == "create_webhook"]
    assert len(created) == 1
    assert created[0].after == {"webhook": hook.id, "url": HOOK, "events": []}
    assert created[0].project == "hooks"
    assert hook.secret.removeprefix("whsec_") not in repr(await sk.events())


async def test_bad_urls_and_events_are_invalid_and_write_nothing(
    sk: skift.LocalSkift, snap: object
) -> None:
    p = await sk.create_project("Hooks")
    for url in [
        "ftp://hooks.example.com/x",
        "hooks.example.com/x",
        "http://",
        "https://h.example.com/" + "x" * 2048,
        "http://127.0.0.1:8080/hook",
        "http://localhost:9/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://100.64.0.1/hook",
    ]:
        with pytest.raises(skift.Invalid) as ei:
            await sk.add_webhook(p.slug, url)
        assert ei.value.next, url
    with pytest.raises(skift.Invalid):
        await sk.add_webhook(p.slug, HOOK, events=["Not An Op"])
    with pytest.raises(skift.NotFound):
        await sk.add_webhook("nope", HOOK)
    assert await sk.webhooks() == []


async def test_one_endpoint_per_url_per_project(sk: skift.LocalSkift) -> None:
    a = await sk.create_project("A")
    b = await sk.create_project("B")
    first = await sk.add_webhook(a.slug, HOOK)
    with pytest.raises(skift.Conflict) as ei:
        await sk.add_webhook(a.slug, HOOK)
    assert first.id in ei.value.message
    await sk.add_webhook(b.slug, HOOK)  # another project may use the same receiver


async def test_an_agent_is_refused_with_the_next_move(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Hooks")
    hook = await sk.add_webhook(p.slug, HOOK)
    bot = sk.acting_as(skift.Agent("bot"))
    with pytest.raises(skift.Refused) as ei:
        await bot.add_webhook(p.slug, "https://other.example.com/x")
    assert "person" in ei.value.message
    assert "gate" in ei.value.next
    for call in (bot.rotate_webhook_secret, bot.disable_webhook, bot.test_webhook):
        with pytest.raises(skift.Refused):
            await call(hook.id)
    assert [w.id for w in await bot.webhooks()] == [hook.id]  # reading is anyone's
    assert len(await sk.webhooks()) == 1


async def test_rotate_disable_enable_are_events_and_never_show_the_old_secret(
    sk: skift.LocalSkift,
) -> None:
    p = await sk.create_project("Hooks")
    hook = await sk.add_webhook(p.slug, HOOK)
    rotated = await sk.rotate_webhook_secret(hook.id)
    assert rotated.secret
    assert rotated.secret != hook.secret
    off = await sk.disable_webhook(hook.id)
    assert off.disabled_at is not None
    assert off.secret is None
    assert (await sk.webhooks())[0].disabled_at == off.disabled_at
    again = await sk.disable_webhook(hook.id)  # already disabled: nothing changes
    assert again.disabled_at == off.disabled_at
    on = await sk.enable_webhook(hook.id)
    assert on.disabled_at is None
    ops = [e.op for e in await sk.events() if e.project == "hooks"]
    assert ops == [
        "create_project",
        "create_webhook",
        "rotate_webhook_secret",
        "disable_webhook",
        "enable_webhook",
    ]
    with pytest.raises(skift.NotFound):
        await sk.rotate_webhook_secret("01JD0000000000000000000000")


async def test_commits_coalesce_into_one_pending_delivery_per_endpoint(
    sk: skift.LocalSkift,
) -> None:
    p = await sk.create_project("Hooks")
    other = await sk.create_project("Other")
    done = await sk.add_webhook(p.slug, "https://done.example.com/x", events=["complete_node"])
    assert done.events == ("complete_node",)
    every = await sk.add_webhook(p.slug, HOOK)
    # its own creation is not news to it, and `done` wants completions only
    assert await sk.webhook_deliveries() == []
    await sk.create(p.slug, "one")
    await sk.patch(p.slug, [skift.CreateNode(title="two"), skift.CreateNode(title="three")])
    await sk.patch(p.slug, [skift.CompleteNode(node="#1", result="ok")])
    await sk.create(other.slug, "elsewhere")  # another project's events are not announced
    got = await sk.webhook_deliveries(every.id)
    assert len(got) == 1
    d = got[0]
    assert (d.webhook, d.project, d.state, d.attempts) == (every.id, "hooks", "pending", 0)
    assert d.counts == {"complete_node": 1, "create_node": 3}
    assert d.after is None  # the window is fixed when the first attempt is made
    assert d.next_attempt_at is not None
    assert d.delivered_at is None
    assert d.parked_at is None
    # the open window ends at the newest event it announces
    newest = [e for e in await sk.events() if e.project == "hooks"][-1]
    page = await sk.watch_events(after=d.through, projects=[p.slug])
    assert newest.op == "complete_node"
    assert newest.id not in [e.id for e in page.events]
    (only,) = await sk.webhook_deliveries(done.id)
    assert only.counts == {"complete_node": 1}
    assert {x.id for x in await sk.webhook_deliveries(project=p.slug)} == {d.id, only.id}
    assert await sk.webhook_deliveries(parked=True) == []


async def test_a_disabled_endpoint_still_gathers_what_commits(sk: skift.LocalSkift) -> None:
    """Nothing is sent while an endpoint is disabled, and nothing is lost: what commits
    meanwhile waits in its pending delivery."""
    p = await sk.create_project("Hooks")
    hook = await sk.add_webhook(p.slug, HOOK)
    await sk.disable_webhook(hook.id)
    await sk.create(p.slug, "while off")
    (d,) = await sk.webhook_deliveries(hook.id)
    assert d.counts == {"create_node": 1, "disable_webhook": 1}


async def test_a_pending_delivery_is_not_redelivered(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Hooks")
    hook = await sk.add_webhook(p.slug, HOOK)
    await sk.create(p.slug, "one")
    (d,) = await sk.webhook_deliveries(hook.id)
    with pytest.raises(skift.Conflict) as ei:
        await sk.redeliver(d.id)
    assert ei.value.next
    with pytest.raises(skift.NotFound):
        await sk.redeliver("01JD0000000000000000000000")
    with pytest.raises(skift.Refused):
        await sk.acting_as(skift.Agent("bot")).redeliver(d.id)


async def test_a_test_delivery_has_an_empty_window(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Hooks")
    hook = await sk.add_webhook(p.slug, HOOK)
    t = await sk.test_webhook(hook.id)
    assert (t.state, t.counts, t.attempts) == ("pending", {}, 0)
    assert t.after is not None
    assert t.after == t.through
    page = await sk.watch_events(after=t.after, projects=[p.slug])
    assert page.events == ()
    assert [d.id for d in await sk.webhook_deliveries(hook.id)] == [t.id]


async def test_another_organization_sees_no_endpoint(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Hooks")
    hook = await sk.add_webhook(p.slug, HOOK)
    await sk.create(p.slug, "one")
    eve = sk.acting_as(skift.User("eve"), org="hooks-elsewhere")
    assert await eve.webhooks() == []
    assert await eve.webhook_deliveries() == []
    with pytest.raises(skift.NotFound):
        await eve.disable_webhook(hook.id)
