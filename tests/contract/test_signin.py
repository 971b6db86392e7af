"""Board sign-in: a one-time code minted for the caller, spent once for a session.

``mint_signin_code`` is the API every adapter offers (``skift board`` calls
it); redeeming a code and looking a session up are what the web board does
in the server's process, so they run on an in-process handle over the same
store (``local``: on "remote", a handle on the server's database).
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

import skift

pytestmark = pytest.mark.own_server


if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@pytest.fixture
async def local(sk: skift.LocalSkift, store_url: str) -> AsyncIterator[skift.LocalSkift]:
    if isinstance(sk, skift.LocalSkift):
        yield sk
        return
    async with skift.open(store_url.removeprefix("remote+"), principal=skift.User("ada")) as h:
        yield h


def _clock(sk: skift.LocalSkift, local: skift.LocalSkift, offset: timedelta) -> None:
    sk.store.set_clock_offset(offset)
    local.store.set_clock_offset(offset)


async def test_code_signs_the_caller_in_once(sk: skift.LocalSkift, local: skift.LocalSkift) -> None:
    """A code is for the caller, for ten minutes; redeeming it gives a session acting as the
    caller; a second redemption of the same code is refused with the command for a new one."""
    code = await sk.mint_signin_code()
    assert code.principal == "ada"
    assert code.code.startswith("skc_")
    assert len(code.code) > 40
    session = await local.redeem_signin_code(code.code)
    assert (session.principal, session.principal_kind) == ("ada", "user")
    assert session.expires_at > code.expires_at
    board = await local.session(session.secret)
    proj = await board.create_project("Board work")
    events = [e for e in await sk.events() if e.op == "create_project"]
    assert [(e.project, e.principal, e.identity_scheme) for e in events] == [
        (proj.slug, "ada", "board")
    ]
    with pytest.raises(skift.Unauthenticated) as ei:
        await local.redeem_signin_code(code.code)
    assert ei.value.move == {"do": "board_link"}  # the CLI and the board say `skift board`


async def test_code_expires_after_ten_minutes(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """Nine minutes on a code still works; past ten it is refused like an unknown one."""
    first = await sk.mint_signin_code()
    second = await sk.mint_signin_code()
    _clock(sk, local, timedelta(minutes=9))
    await local.redeem_signin_code(first.code)
    _clock(sk, local, timedelta(minutes=10, seconds=5))
    with pytest.raises(skift.Unauthenticated) as ei:
        await local.redeem_signin_code(second.code)
    assert "expired" in ei.value.message
    with pytest.raises(skift.Unauthenticated):
        await local.redeem_signin_code("skc_" + "x" * 43)


async def test_code_is_stored_only_as_its_digest(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """What the store keeps is the digest: the secret itself does not sign anyone in through
    its digest, and a session secret is not a code (nor a code a session)."""
    code = await sk.mint_signin_code()
    with pytest.raises(skift.Unauthenticated):
        await local.redeem_signin_code("sha256:" + hashlib.sha256(code.code.encode()).hexdigest())
    with pytest.raises(skift.Unauthenticated):
        await local.session(code.code)
    session = await local.redeem_signin_code(code.code)
    with pytest.raises(skift.Unauthenticated):
        await local.redeem_signin_code(session.secret)


async def test_two_redemptions_race_one_wins(sk: skift.LocalSkift, local: skift.LocalSkift) -> None:
    """Two browsers redeeming one code at once: exactly one gets a session."""
    code = await sk.mint_signin_code()
    got = await asyncio.gather(
        *(local.redeem_signin_code(code.code) for _ in range(4)), return_exceptions=True
    )
    assert sum(isinstance(g, skift.BoardSession) for g in got) == 1
    assert sum(isinstance(g, skift.Unauthenticated) for g in got) == 3


async def test_sign_out_ends_the_session(sk: skift.LocalSkift, local: skift.LocalSkift) -> None:
    """After sign-out the session's secret no longer acts; signing out twice is harmless;
    a session also ends when it expires."""
    session = await local.redeem_signin_code((await sk.mint_signin_code()).code)
    other = await local.redeem_signin_code((await sk.mint_signin_code()).code)
    await local.session(session.secret)
    await local.end_session(session.secret)
    await local.end_session(session.secret)
    with pytest.raises(skift.Unauthenticated) as ei:
        await local.session(session.secret)
    assert ei.value.move == {"do": "board_link"}  # the CLI and the board say `skift board`
    await local.session(other.secret)
    _clock(sk, local, timedelta(hours=12, minutes=1))
    with pytest.raises(skift.Unauthenticated):
        await local.session(other.secret)


async def test_only_people_get_a_code(sk: skift.LocalSkift) -> None:
    """The board is for people: an agent asking for a code is refused with the next move."""
    bot = sk.acting_as(skift.Agent("bot"))
    with pytest.raises(skift.Refused) as ei:
        await bot.mint_signin_code()
    assert "person" in ei.value.next


async def test_session_stays_in_its_organization(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """A session acts in the organization its code was minted in, and sees nothing of
    another organization's."""
    await sk.create_project("Ours")
    theirs = sk.acting_as(skift.User("eve"), org=f"other-{secrets.token_hex(4)}")
    await theirs.create_project("Theirs")
    board = await local.session(
        (await local.redeem_signin_code((await sk.mint_signin_code()).code)).secret
    )
    assert [p.title for p in await board.list_projects()] == ["Ours"]
    eve = await local.session(
        (await local.redeem_signin_code((await theirs.mint_signin_code()).code)).secret
    )
    assert [p.title for p in await eve.list_projects()] == ["Theirs"]
