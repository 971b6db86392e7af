"""The board follows the read policy: a restricted project is, on every page of a person who
is not its reader, a project nobody created (a real ``skift serve --http`` over PostgreSQL;
the pages through HTTP, no browser)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
from serverproc import free_port

import skift
import skift_server

if TYPE_CHECKING:
    from conftest import Serve

pytestmark = pytest.mark.pg

PAGES = ("/", "/ready", "/projects", "/holds", "/activity")


async def _sign_in(http: httpx.AsyncClient, base: str, sk: skift_server.RemoteSkift) -> None:
    code = (await sk.mint_signin_code()).code
    signed = await http.post("/signin", data={"code": code}, headers={"origin": base})
    assert signed.status_code == 303


async def test_a_restricted_project_is_on_no_page_of_a_non_reader(
    serve: Serve, pg_dsn: str
) -> None:
    port = free_port()
    server = await serve("--dsn", pg_dsn, "--http", f"127.0.0.1:{port}", "--test-hooks")
    base = f"http://127.0.0.1:{port}"
    async with (
        skift_server.connect(server.url, principal=skift.User("ada")) as ada,
        skift_server.connect(server.url, principal=skift.User("bob")) as bob,
    ):
        await bob.list_projects()  # bob exists
        await ada.list_projects()
        async with skift_server.connect(server.url) as owner:  # the server's owner, an admin
            await owner.grant_admin("ada", reason="restricting is an admin's")
        await ada.create_project("Payroll", slug="payroll")
        await ada.create_project("Roadmap", slug="roadmap")
        await ada.patch(
            "payroll",
            [
                skift.CreateNode(alias="a", title="Quarterly salaries", assignee_kind="user"),
                skift.CreateNode(title="Bonus table", blocked_by=["a"]),
            ],
        )
        await ada.hold("payroll#2", reason="salaries first")
        await ada.patch("roadmap", [skift.CreateNode(title="Public launch")])
        await ada.restrict_project("payroll", readers=[], reason="salaries")

        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await _sign_in(http, base, bob)
            for path in PAGES:
                page = await http.get(path)
                assert page.status_code == 200, path
                text = page.text.lower()
                assert "payroll" not in text, path
                assert "salaries" not in text, path
                assert "bonus table" not in text, path
            assert "Public launch" in (await http.get("/ready")).text
            for path in ("/p/payroll", "/n/payroll/1", "/n/payroll/2"):
                hidden = await http.get(path)
                typo = await http.get(path.replace("payroll", "nosuch"))
                assert hidden.status_code == typo.status_code == 404, path

        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await _sign_in(http, base, ada)
            assert "Quarterly salaries" in (await http.get("/")).text
            assert (await http.get("/n/payroll/1")).status_code == 200
            assert "payroll" in (await http.get("/projects")).text
