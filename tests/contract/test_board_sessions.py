"""Revocation ends everything a credential opened (issue 28, point 5): the board sessions
minted from it and its unspent sign-in codes. A person lists their own live sessions and
ends them all; an admin does so for another.

Redeeming a code and looking a session up are what the web board does in the server's
process, so they run on an in-process handle over the same store (``local``: on
"remote", a handle on the server's database); tests/server/test_board_revocation.py
does the same through a real board over HTTP.
"""

from __future__ import annotations

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


async def test_revoking_a_token_ends_its_sessions_and_codes(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    await local.list_projects()  # ada exists in local's organization
    token = await local.create_token("ada")
    ada = await local.authenticate("token", token.token)
    spent = await ada.mint_signin_code()
    unspent = await ada.mint_signin_code()
    session = await local.redeem_signin_code(spent.code)
    board = await local.session(session.secret)
    await board.list_projects()
    (listed,) = await ada.board_sessions()
    assert (listed.id, listed.principal, listed.via) == (session.id, "ada", "token")
    # another credential's session is not touched by this revocation
    other = await local.redeem_signin_code((await local.mint_signin_code()).code)

    await local.revoke_token(token.id)
    with pytest.raises(skift.Unauthenticated) as ended:
        await local.session(session.secret)
    assert ended.value.move == {"do": "board_link"}  # `skift board` on the CLI and the board
    with pytest.raises(skift.Unauthenticated):
        await local.redeem_signin_code(unspent.code)
    await local.session(other.secret)
    assert [s.via for s in await local.board_sessions()] == ["local"]


async def test_sign_out_all_ends_a_persons_sessions_and_an_admin_ends_anothers(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """Through the API (on "remote", the ListBoardSessions and EndBoardSessions RPCs); only
    redeeming a code and using a session are the board's own, in process."""
    first = await local.redeem_signin_code((await sk.mint_signin_code()).code)
    second = await local.redeem_signin_code((await sk.mint_signin_code()).code)
    code = await sk.mint_signin_code()
    listed = await sk.board_sessions()
    assert [s.id for s in listed] == [first.id, second.id]
    assert all(s.principal == "ada" and s.expires_at > s.created_at for s in listed)
    assert first.secret not in repr(listed)

    bob = sk.acting_as(skift.User("bob"))
    bobs = await local.redeem_signin_code((await bob.mint_signin_code()).code)
    assert len(await bob.board_sessions()) == 1

    assert await sk.end_board_sessions() == 2
    assert await sk.end_board_sessions() == 0  # ending what is ended changes nothing
    for s in (first, second):
        with pytest.raises(skift.Unauthenticated):
            await local.session(s.secret)
    with pytest.raises(skift.Unauthenticated):
        await local.redeem_signin_code(code.code)
    assert await sk.board_sessions() == []
    await local.session(bobs.secret)  # another person's are theirs

    # an agent is never an admin: it may not read or end a person's sessions
    bot = sk.acting_as(skift.Agent("bot"))
    with pytest.raises(skift.Refused):
        await bot.end_board_sessions("bob")
    with pytest.raises(skift.Refused):
        await bot.board_sessions("bob")
    assert len(await sk.board_sessions("bob")) == 1
    assert await sk.end_board_sessions("bob") == 1
    with pytest.raises(skift.Unauthenticated):
        await local.session(bobs.secret)
    with pytest.raises(skift.NotFound):
        await sk.end_board_sessions("nobody")
