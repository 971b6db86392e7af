"""The board's ``MintSigninCode`` (the web board itself is ``skift_server.board``;
``ListBoardSessions`` and ``EndBoardSessions`` are made from their declarations, ``_simple``).

A sign-in code is the caller's (``LocalSkift.mint_signin_code``); the link
that spends it is the server's knowledge (its ``--http`` or ``--board-url``
address), so this handler is made with the server's ``board_link``.
"""

from __future__ import annotations

from collections.abc import Callable

import skift

from ._handlers import Handler
from ._proto.skift import v1


def mint_signin_code(board_link: Callable[[str], str]) -> Handler:
    async def mint(sk: skift.LocalSkift, r: v1.MintSigninCodeRequest) -> v1.MintSigninCodeResponse:
        got = await sk.mint_signin_code()
        return v1.MintSigninCodeResponse(
            code=got.code,
            principal=got.principal,
            expires_at=got.expires_at,
            url=board_link(got.code),
        )

    return mint
