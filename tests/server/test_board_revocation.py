"""Revoking a token ends the board sessions it opened and its unspent sign-in codes, at
once: through a real ``skift serve --http`` (a person's token over TCP mints the codes, the
board's pages are read over HTTP, no browser)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
from serverproc import free_port

import skift_server

if TYPE_CHECKING:
    from conftest import Serve


async def _sign_in(http: httpx.AsyncClient, base: str, code: str) -> int:
    signed = await http.post("/signin", data={"code": code}, headers={"origin": base})
    return signed.status_code


@pytest.mark.parametrize("store", ["memory", pytest.param("pg", marks=pytest.mark.pg)])
async def test_revoking_a_token_signs_its_board_sessions_out(
    serve: Serve, store: str, request: pytest.FixtureRequest
) -> None:
    http_port, tcp_port = free_port(), free_port()
    where = ["--memory"] if store == "memory" else ["--dsn", request.getfixturevalue("pg_dsn")]
    server = await serve(
        *where, "--http", f"127.0.0.1:{http_port}", "--listen", f"127.0.0.1:{tcp_port}"
    )
    base = f"http://127.0.0.1:{http_port}"
    async with skift_server.connect(server.url) as owner:
        await owner.add_principal("bob", "user")
        token = await owner.create_token("bob")
        async with skift_server.connect(
            f"http://127.0.0.1:{tcp_port}", token=token.token, attempts=1
        ) as bob:
            spent = (await bob.mint_signin_code()).code
            unspent = (await bob.mint_signin_code()).code
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            assert await _sign_in(http, base, spent) == 303
            assert (await http.get("/")).status_code == 200
            await owner.revoke_token(token.id)
            for path in ("/", "/projects", "/live"):
                page = await http.get(path)
                assert page.status_code == 401, path
                assert "skift board" in page.text
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            assert await _sign_in(http, base, unspent) == 401
            assert (await http.get("/")).status_code == 401
