"""A new organization's admin token works at once over TCP: an administrator of a running
server (its owner, in the first organization) creates an organization, through the server's
CreateOrg or in process over the same database, and the token it gets acts as that
organization's admin through the live server, which refuses it the server's own calls."""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING

import pytest
from serverproc import free_port

import skift
import skift_server

if TYPE_CHECKING:
    from conftest import Serve


@pytest.mark.pg
async def test_a_new_organizations_token_works_at_once_over_tcp(serve: Serve, pg_dsn: str) -> None:
    port = free_port()
    server = await serve("--dsn", pg_dsn, "--listen", f"127.0.0.1:{port}")
    async with skift.open(pg_dsn, principal=skift.User(getpass.getuser())) as owner:
        made = await owner.create_org("acme", admin="wile")
        with pytest.raises(skift.Refused):  # the new admin administers acme, not the server
            await (await owner.authenticate("token", made.token)).list_orgs()
    async with skift_server.connect(f"http://127.0.0.1:{port}", token=made.token) as wile:
        project = await wile.create_project("Skates")
        await wile.patch(project.slug, [skift.CreateNode(title="Order rocket skates")])
        assert [n.title for n in (await wile.ready()).nodes] == ["Order rocket skates"]
        assert [p.name for p in await wile.list_principals()] == ["wile"]
    async with skift_server.connect(server.url) as root:
        assert await root.list_projects() == []
        made = await root.create_org("road", admin="runner")  # over the wire (the unix socket)
        assert [o.name for o in await root.list_orgs()][-2:] == ["acme", "road"]
    async with skift_server.connect(f"http://127.0.0.1:{port}", token=made.token) as runner:
        assert [p.name for p in await runner.list_principals()] == ["runner"]
        assert await runner.list_projects() == []
        for attempt in (runner.list_orgs(), runner.create_org("evil", admin="x")):
            with pytest.raises(skift.Refused, match="only an administrator of the server"):
                await attempt
