"""Login CSRF: a sign-in link opened in a browser that already has a board session for
somebody else does not switch it by itself; the page names both and waits for a click, and
only that POST spends the code (a real ``skift serve --http``, pages over HTTP)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
from serverproc import free_port

import skift
import skift_server

if TYPE_CHECKING:
    from conftest import Serve


async def test_a_link_for_someone_else_takes_a_click(serve: Serve) -> None:
    port = free_port()
    server = await serve("--memory", "--http", f"127.0.0.1:{port}", "--test-hooks")
    base = f"http://127.0.0.1:{port}"
    async with (
        skift_server.connect(server.url, principal=skift.User("ada")) as ada,
        skift_server.connect(server.url, principal=skift.User("mallory")) as mallory,
    ):
        mine = (await ada.mint_signin_code()).code
        again = (await ada.mint_signin_code()).code
        theirs = (await mallory.mint_signin_code()).code
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            # no session yet: the page posts the code back by itself
            first = await http.get("/signin", params={"code": mine})
            assert "data-autosubmit" in first.text
            signed = await http.post("/signin", data={"code": mine}, headers={"origin": base})
            assert signed.status_code == 303
            # signed in as ada: her own next link still goes through by itself
            own = await http.get("/signin", params={"code": again})
            assert "data-autosubmit" in own.text
            # someone else's link: named, one click, and opening it spends nothing
            page = await http.get("/signin", params={"code": theirs})
            assert page.status_code == 200
            assert "data-autosubmit" not in page.text
            assert "ada" in page.text
            assert "mallory" in page.text
            assert "ada" in (await http.get("/")).text  # still ada's session
            switched = await http.post("/signin", data={"code": theirs}, headers={"origin": base})
            assert switched.status_code == 303  # the click spends it, once
            assert (
                await http.post("/signin", data={"code": theirs}, headers={"origin": base})
            ).status_code == 401
