"""Webhook delivery end to end (RELIABILITY.md's webhook list): real ``skift serve``
processes over real PostgreSQL, POSTing to a real HTTP receiver on loopback.

Endpoints are managed through a local handle on the server's database (the
server delivers whatever its database holds); the server runs with
``--webhook-allow-private`` (its receiver is on loopback), a short retry schedule
and a short timeout, so no test waits long.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import TYPE_CHECKING, Any

import pytest
import standardwebhooks
from webhook_receiver import Receiver

import skift

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from conftest import Serve
    from serverproc import ServerProcess

FAST = ["--sweep-every", "0", "--webhook-retry-schedule", "200ms,200ms", "--webhook-timeout", "1s"]
PRIVATE = ["--webhook-allow-private", *FAST]


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as r:
        yield r


@pytest.fixture
async def ada(pg_dsn: str) -> AsyncIterator[skift.LocalSkift]:
    """A person in the server's organization, on its database (loopback endpoints allowed
    here: the add-time check is the contract suite's; this suite proves connect time)."""
    limits = skift.Limits(webhook_allow_private=True)
    async with skift.open(pg_dsn, principal=skift.User("ada"), limits=limits) as sk:
        yield sk


async def _start(serve: Serve, dsn: str, *flags: str) -> ServerProcess:
    return await serve("--dsn", dsn, *flags)


async def _all_ids(sk: skift.LocalSkift, after: str | None, project: str) -> list[str]:
    out: list[str] = []
    cursor = after
    while True:
        page = await sk.watch_events(after=cursor, projects=[project], limit=500)
        out.extend(e.id for e in page.events)
        if not page.events:
            return out
        cursor = page.cursor


async def _window(sk: skift.LocalSkift, doc: dict[str, Any]) -> list[str]:
    """The ids of a delivery's events: the first sum(counts) read after `after`; and
    `through` is exactly the last of them (reading after it gives what follows)."""
    n = sum(doc["counts"].values())
    from_after = await _all_ids(sk, doc["after"], doc["project"])
    from_through = await _all_ids(sk, doc["through"], doc["project"])
    assert from_after[n:] == from_through
    return from_after[:n]


def _delivered(ids: set[str], n: int) -> Any:
    return lambda reqs: len({r.id for r in reqs} - ids) >= n


# ------------------------------------------------------------------ signing


def test_sign_vector() -> None:
    """The Standard Webhooks spec's published test vector verifies, and signs to itself."""
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    headers = {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }
    assert skift.verify_webhook(body, headers, secret, now=1614265330) == {"test": 2432232314}
    with pytest.raises(skift.WebhookVerificationError):
        skift.verify_webhook(body + b" ", headers, secret, now=1614265330)
    with pytest.raises(skift.WebhookVerificationError):  # a replay, hours later
        skift.verify_webhook(body, headers, secret, now=1614265330 + 3600)
    with pytest.raises(skift.WebhookVerificationError):
        skift.verify_webhook(
            body, {**headers, "webhook-signature": "v1,AAAA"}, secret, now=1614265330
        )


def test_ssrf_table() -> None:
    """What a delivery may not connect to (smokescreen's rules), with and without
    --webhook-allow-private."""
    table = {
        "127.0.0.1": "loopback",
        "::1": "loopback",
        "10.0.0.8": "private",
        "172.16.5.4": "private",
        "192.168.1.1": "private",
        "100.64.0.1": "private",
        "fc00::1": "private",
        "fd12:3456::1": "private",
        "169.254.169.254": "metadata",
        "169.254.10.1": "link-local",
        "fe80::1": "link-local",
        "::ffff:127.0.0.1": "loopback",
        "::ffff:169.254.169.254": "metadata",
        "0.0.0.0": "unicast",
        "224.0.0.1": "unicast",
    }
    for address, word in table.items():
        why = skift.address_refusal(address, allow_private=False)
        assert why is not None, address
        assert word in why, (address, why)
    for address in ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "8.8.8.8"]:
        assert skift.address_refusal(address, allow_private=False) is None
    # allowing private networks lets loopback and RFC 1918 through, never link-local/metadata
    assert skift.address_refusal("127.0.0.1", allow_private=True) is None
    assert skift.address_refusal("10.0.0.8", allow_private=True) is None
    assert skift.address_refusal("169.254.169.254", allow_private=True) is not None
    assert skift.address_refusal("::ffff:169.254.169.254", allow_private=True) is not None


# ------------------------------------------------------------------ delivery


async def test_a_burst_coalesces_and_the_windows_cover_every_event_once_in_order(
    serve: Serve, pg_dsn: str, ada: skift.LocalSkift, receiver: Receiver
) -> None:
    p = await ada.create_project("Burst")
    hook = await ada.add_webhook(p.slug, receiver.url)
    assert hook.secret is not None
    await _start(serve, pg_dsn, *PRIVATE)

    async def writer(k: int) -> None:
        for i in range(10):
            await ada.create(p.slug, f"w{k}.{i}")

    await asyncio.gather(*(writer(k) for k in range(4)))
    wanted = await _all_ids(ada, None, p.slug)
    wanted = wanted[
        wanted.index(next(e.id for e in await ada.events() if e.op == "create_webhook")) + 1 :
    ]
    assert len(wanted) == 40

    def covered(reqs: list[Any]) -> bool:
        return sum(sum(r.doc["counts"].values()) for r in _unique(reqs)) >= 40

    await receiver.wait_for(covered)
    got = _unique(receiver.requests)
    assert len(got) < 40, "a burst coalesces"
    seen: list[str] = []
    for i, r in enumerate(got):
        doc = skift.verify_webhook(r.body, r.headers, hook.secret)
        assert doc["type"] == "skift.events"
        assert doc["project"] == "burst"
        assert doc["delivery"] == r.id
        assert r.headers["content-type"] == "application/json"
        if i:
            assert doc["after"] == got[i - 1].doc["through"], "windows are contiguous"
        seen += await _window(ada, doc)
    assert seen == wanted, "every event once, in commit order"
    # the standardwebhooks package verifies what we sent
    standardwebhooks.Webhook(hook.secret).verify(got[0].body, got[0].headers)
    states = {d.id: d.state for d in await ada.webhook_deliveries(hook.id, limit=500)}
    assert all(states[r.id] == "delivered" for r in got)


def _unique(reqs: list[Any]) -> list[Any]:
    out: list[Any] = []
    for r in reqs:
        if r.id not in {o.id for o in out}:
            out.append(r)
    return out


async def test_a_failing_endpoint_is_retried_then_parked_then_redelivered(
    serve: Serve, pg_dsn: str, ada: skift.LocalSkift, receiver: Receiver
) -> None:
    p = await ada.create_project("Fail")
    hook = await ada.add_webhook(p.slug, receiver.url)
    receiver.status = 500
    await _start(serve, pg_dsn, *PRIVATE)
    await ada.create(p.slug, "one")
    await receiver.wait_for(lambda reqs: len(reqs) >= 3)
    for _ in range(100):
        parked = await ada.webhook_deliveries(hook.id, parked=True)
        if parked:
            break
        await asyncio.sleep(0.1)
    (d,) = parked
    assert (d.state, d.attempts, d.last_status) == ("parked", 3, 500)
    assert d.last_error == "HTTP 500"
    assert d.parked_at is not None
    assert {r.id for r in receiver.requests} == {d.id}, "the same webhook-id on every attempt"
    assert len(receiver.requests) == 3
    # redeliver: the same id and window, a fresh schedule
    receiver.status = 204
    again = await ada.redeliver(d.id)
    assert (again.state, again.attempts) == ("pending", 0)
    await receiver.wait_for(lambda reqs: len(reqs) >= 4)
    assert receiver.requests[3].id == d.id
    assert receiver.requests[3].doc == receiver.requests[0].doc
    for _ in range(100):
        (now,) = await ada.webhook_deliveries(hook.id)
        if now.state == "delivered":
            break
        await asyncio.sleep(0.1)
    assert (now.state, now.last_status) == ("delivered", 204)


async def test_a_crash_after_2xx_before_the_mark_redelivers_the_same_id(
    serve: Serve, pg_dsn: str, ada: skift.LocalSkift, receiver: Receiver
) -> None:
    p = await ada.create_project("Crash")
    hook = await ada.add_webhook(p.slug, receiver.url)
    first = await _start(serve, pg_dsn, *PRIVATE)

    async def kill_then_answer(r: Any) -> None:
        if len(receiver.requests) == 1:  # the receiver has the delivery; the server dies
            os.kill(first.pid, signal.SIGKILL)

    receiver.before_answer = kill_then_answer
    await ada.create(p.slug, "one")
    await receiver.wait_for(lambda reqs: len(reqs) >= 1)
    for _ in range(200):
        if first.returncode() is not None:
            break
        await asyncio.sleep(0.02)
    assert first.returncode() is not None
    await _start(serve, pg_dsn, *PRIVATE)
    await receiver.wait_for(lambda reqs: len(reqs) >= 2, timeout=30)
    assert receiver.requests[1].id == receiver.requests[0].id
    assert receiver.requests[1].doc == receiver.requests[0].doc
    for _ in range(100):
        (d,) = await ada.webhook_deliveries(hook.id)
        if d.state == "delivered":
            break
        await asyncio.sleep(0.1)
    assert (d.state, d.attempts) == ("delivered", 2)


async def test_two_servers_never_send_one_delivery_at_once(
    serve: Serve, pg_dsn: str, ada: skift.LocalSkift, receiver: Receiver
) -> None:
    """Two servers over one database share the work: no webhook-id is ever in flight
    twice, an endpoint gets one delivery at a time, and everything arrives."""
    projects = [await ada.create_project(f"Two {i}") for i in range(3)]
    hooks = [await ada.add_webhook(p.slug, f"{receiver.url}/{p.slug}") for p in projects]

    async def slow(r: Any) -> None:
        await asyncio.sleep(0.05)

    receiver.before_answer = slow
    await _start(serve, pg_dsn, *PRIVATE)
    await _start(serve, pg_dsn, *PRIVATE)
    for round_ in range(6):
        await asyncio.gather(*(ada.create(p.slug, f"r{round_}") for p in projects))
        await asyncio.sleep(0.03)

    async def all_delivered() -> bool:
        for h in hooks:
            ds = await ada.webhook_deliveries(h.id, limit=500)
            if sum(sum(d.counts.values()) for d in ds if d.state == "delivered") < 6:
                return False
        return True

    for _ in range(300):
        if await all_delivered():
            break
        await asyncio.sleep(0.1)
    assert await all_delivered()
    for ident, others in receiver.overlaps:
        assert ident not in others, f"{ident} was sent twice at once"
    by_path = {r.id: r.path for r in receiver.requests}
    for ident, others in receiver.overlaps:
        assert by_path[ident] not in {by_path[o] for o in others}, "one at a time per endpoint"


async def test_connect_time_refuses_private_addresses_and_redirects(
    serve: Serve, pg_dsn: str, ada: skift.LocalSkift, receiver: Receiver
) -> None:
    """A server without --webhook-allow-private refuses to connect to loopback, however
    the endpoint got there; one with it still never follows a redirect (to the metadata
    address, say)."""
    p = await ada.create_project("Ssrf")
    v4 = await ada.add_webhook(p.slug, receiver.url)
    mapped = await ada.add_webhook(p.slug, f"http://[::ffff:127.0.0.1]:{receiver.port}/hook")
    strict = await _start(serve, pg_dsn, *FAST)
    await ada.create(p.slug, "one")

    async def last_errors() -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for h in (v4, mapped):
            ds = await ada.webhook_deliveries(h.id)
            out[h.id] = ds[0].last_error if ds and ds[0].attempts else None
        return out

    for _ in range(100):
        errors = await last_errors()
        if all(errors.values()):
            break
        await asyncio.sleep(0.1)
    assert "refused" in (errors[v4.id] or "")
    assert "loopback" in (errors[v4.id] or "")
    assert "refused" in (errors[mapped.id] or "")
    assert "IPv4-mapped" in (errors[mapped.id] or "")
    assert receiver.requests == []
    assert await strict.stop() == 0
    # a redirect to the metadata address is not followed
    await ada.disable_webhook(mapped.id)
    receiver.status = 302
    receiver.location = "http://169.254.169.254/latest/meta-data/"
    for d in await ada.webhook_deliveries(v4.id, parked=True):
        await ada.redeliver(d.id)
    await _start(serve, pg_dsn, *PRIVATE)
    await ada.create(p.slug, "two")
    await receiver.wait_for(lambda reqs: len(reqs) >= 1)
    for _ in range(100):
        ds = [d for d in await ada.webhook_deliveries(v4.id) if d.attempts]
        if ds and ds[0].last_status == 302:
            break
        await asyncio.sleep(0.1)
    assert ds[0].state != "delivered"
    assert "not followed" in (ds[0].last_error or "")
    assert "169.254.169.254" in (ds[0].last_error or "")


async def test_a_disabled_endpoint_gets_nothing_then_everything(
    serve: Serve, pg_dsn: str, ada: skift.LocalSkift, receiver: Receiver
) -> None:
    p = await ada.create_project("Off")
    hook = await ada.add_webhook(p.slug, receiver.url)
    await ada.disable_webhook(hook.id)
    server = await _start(serve, pg_dsn, *PRIVATE)
    for i in range(3):
        await ada.create(p.slug, f"while off {i}")
    # a write after the rest, delivered to another endpoint, proves the worker ran meanwhile
    other = await ada.create_project("Other")
    async with Receiver() as witness:
        await ada.add_webhook(other.slug, witness.url)
        await ada.create(other.slug, "elsewhere")
        await witness.wait_for(lambda reqs: len(reqs) >= 1)
    assert receiver.requests == []
    await ada.enable_webhook(hook.id)
    await receiver.wait_for(lambda reqs: len(reqs) >= 1)
    (r,) = receiver.requests
    assert r.doc["counts"] == {"create_node": 3, "disable_webhook": 1, "enable_webhook": 1}
    assert len(await _window(ada, r.doc)) == 5
    assert await server.stop() == 0


async def test_rotation_signs_with_the_new_secret(
    serve: Serve, pg_dsn: str, ada: skift.LocalSkift, receiver: Receiver
) -> None:
    p = await ada.create_project("Rotate")
    hook = await ada.add_webhook(p.slug, receiver.url)
    await _start(serve, pg_dsn, *PRIVATE)
    await ada.create(p.slug, "one")
    await receiver.wait_for(lambda reqs: len(reqs) >= 1)
    assert hook.secret is not None
    skift.verify_webhook(receiver.requests[0].body, receiver.requests[0].headers, hook.secret)
    rotated = await ada.rotate_webhook_secret(hook.id)
    assert rotated.secret is not None
    await ada.create(p.slug, "two")
    await receiver.wait_for(lambda reqs: len(_unique(reqs)) >= 2)
    last = _unique(receiver.requests)[-1]
    skift.verify_webhook(last.body, last.headers, rotated.secret)
    with pytest.raises(skift.WebhookVerificationError):
        skift.verify_webhook(last.body, last.headers, hook.secret)


async def test_a_receiver_that_hangs_does_not_hold_up_writes(
    serve: Serve, pg_dsn: str, ada: skift.LocalSkift, receiver: Receiver
) -> None:
    """While the receiver holds its first request unanswered, writes keep committing and
    coalesce into the next delivery (the latency itself is measured in bench/)."""
    p = await ada.create_project("Slow")
    hook = await ada.add_webhook(p.slug, receiver.url)
    receiver.hold = asyncio.Event()
    await _start(
        serve, pg_dsn, "--webhook-allow-private", "--sweep-every", "0", "--webhook-timeout", "30s"
    )
    await ada.create(p.slug, "first")
    await receiver.wait_for(lambda reqs: len(reqs) >= 1)
    for i in range(20):
        await ada.create(p.slug, f"meanwhile {i}")
    assert len(receiver.requests) == 1
    assert receiver.in_flight == [receiver.requests[0].id]
    ds = await ada.webhook_deliveries(hook.id)
    pending = [d for d in ds if d.attempts == 0]
    assert len(pending) == 1
    assert pending[0].counts == {"create_node": 20}
    receiver.hold.set()
    await receiver.wait_for(lambda reqs: len(reqs) >= 2)
    assert receiver.requests[1].id == pending[0].id


async def test_metrics_count_deliveries_by_state(
    serve: Serve, pg_dsn: str, ada: skift.LocalSkift, receiver: Receiver
) -> None:
    import httpx
    from serverproc import free_port

    p = await ada.create_project("Metrics")
    await ada.add_webhook(p.slug, receiver.url)
    port = free_port()
    await _start(
        serve, pg_dsn, *PRIVATE, "--metrics", f"127.0.0.1:{port}", "--webhook-workers", "0"
    )
    await ada.create(p.slug, "one")
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    assert 'skift_webhook_deliveries{state="pending"} 1.0' in text
    assert 'skift_webhook_deliveries{state="delivered"} 0.0' in text
    line = next(
        ln for ln in text.splitlines() if ln.startswith("skift_webhook_oldest_pending_seconds")
    )
    assert float(line.split()[-1]) >= 0
    assert receiver.requests == []  # --webhook-workers 0 delivers nothing
