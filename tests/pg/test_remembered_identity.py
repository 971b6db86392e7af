"""A transport's remembered identity (issue 31): a call starts from the principal its unix
or token identity named when last looked up, and its first transaction reads the identity
again with its first statement. Revoked, moved or with another role, the call is refused
before any row is handed back; and the read costs no round trip of its own.

On the memory store (the reference) and on PostgreSQL, the latter through the counting
proxy of bench/_trace.py (tests/pg/test_round_trips.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from test_round_trips import RoundTrips, round_trips

import skift
from skift_pg import PgStore
from skift_pg._tx import REPLAN_AT


async def _setup(owner: skift.LocalSkift) -> str:
    await owner.create_project("Rm")
    await owner.patch("rm", [skift.CreateNode(title="one")])
    await owner.add_principal("bot", "agent")
    return (await owner.create_token("bot")).token


async def _token_id(owner: skift.LocalSkift) -> str:
    (tid,) = [
        i.id
        for p in await owner.list_principals()
        if p.name == "bot"
        for i in p.identities
        if i.scheme == "token" and not i.revoked
    ]
    return tid


@pytest.fixture(params=["memory", "pg"])
async def base(request: pytest.FixtureRequest) -> AsyncIterator[skift.LocalSkift]:
    if request.param == "memory":
        store: skift.MemoryStore | PgStore = skift.MemoryStore()
    else:
        store = PgStore(request.getfixturevalue("pg_dsn"))
    async with skift.LocalSkift(store, principal=skift.User("owner")) as sk:
        yield sk


async def test_a_remembered_identity_is_confirmed_and_revocation_stops_it(
    base: skift.LocalSkift,
) -> None:
    secret = await _setup(base)
    first = await base.authenticate("token", secret, remembered=True)  # looked up
    assert (await first.get("rm#1")).title == "one"
    again = await base.authenticate("token", secret, remembered=True)  # remembered
    assert (await again.get("rm#1")).title == "one"
    assert not again.identity_stale

    later = await base.authenticate("token", secret, remembered=True)
    await base.revoke_token(await _token_id(base))
    with pytest.raises(skift.Unauthenticated):
        await later.get("rm#1")
    assert later.identity_stale
    with pytest.raises(skift.Unauthenticated, match="unknown or revoked"):
        await base.authenticate("token", secret, remembered=True)


async def test_a_role_changed_since_is_stale_and_looked_up_again(base: skift.LocalSkift) -> None:
    await base.create_project("Rm")
    await base.add_principal("ada", "user")
    secret = (await base.create_token("ada")).token
    await base.authenticate("token", secret, remembered=True)
    remembered = await base.authenticate("token", secret, remembered=True)
    await base.grant_admin("ada", reason="on call")
    with pytest.raises(skift.Unauthenticated):
        await remembered.list_projects()
    assert remembered.identity_stale
    fresh = await base.authenticate("token", secret)
    assert (await fresh.whoami()).admin


async def test_a_refusal_before_any_read_is_still_unauthenticated(base: skift.LocalSkift) -> None:
    """A call that fails before its first read is refused as unauthenticated, not told what
    it ran into."""
    secret = await _setup(base)
    await base.authenticate("token", secret, remembered=True)
    later = await base.authenticate("token", secret, remembered=True)
    await base.revoke_token(await _token_id(base))
    with pytest.raises(skift.Unauthenticated):
        await later.get("nosuch#1")


async def test_confirm_identity_reads_it_now(base: skift.LocalSkift) -> None:
    secret = await _setup(base)
    await base.authenticate("token", secret, remembered=True)
    later = await base.authenticate("token", secret, remembered=True)
    await later.confirm_identity()
    again = await base.authenticate("token", secret, remembered=True)
    await base.revoke_token(await _token_id(base))
    with pytest.raises(skift.Unauthenticated):
        await again.confirm_identity()


@pytest.mark.pg
async def test_the_identity_rides_with_the_first_statement(pg_dsn: str) -> None:
    """GetNode through a remembered identity costs the round trips of GetNode in process:
    the identity's read goes with the transaction's first statement."""
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("owner")) as owner:
        secret = await _setup(owner)
    async with round_trips(pg_dsn) as (dsn, rt):
        store = PgStore(dsn, min_size=1, max_size=1, listen=False)
        async with skift.LocalSkift(store, principal=skift.User("owner")) as base:
            bot = await base.authenticate("token", secret)
            for _ in range(REPLAN_AT):
                # warm: statements prepared, and past the connection's one re-plan (its
                # REPLAN_AT-th transaction sends DEALLOCATE ALL and prepares each again)
                await bot.get("rm#1")
            counts: dict[str, list[int]] = {"in process": [], "looked up": [], "remembered": []}
            for _ in range(3):
                for how in counts:
                    rt.count, rt.counting = 0, True
                    if how == "in process":
                        await bot.get("rm#1")
                    else:
                        sk = await base.authenticate(
                            "token", secret, remembered=how == "remembered"
                        )
                        await sk.get("rm#1")
                    rt.counting = False
                    counts[how].append(rt.count)
            assert counts["remembered"] == counts["in process"], counts
            assert min(counts["looked up"]) == min(counts["in process"]) + 1, counts
            _ = RoundTrips
