"""``/metrics`` is server-wide (every organization's counts), so on the board's listener it
answers only a server administrator's bearer token; ``--metrics HOST:PORT`` serves it without
sign-in on a listener of its own, which serves nothing of the board (issue 28 point 7)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
from serverproc import free_port

import skift_server

if TYPE_CHECKING:
    from conftest import Serve


async def test_metrics_need_a_server_admin_or_their_own_listener(serve: Serve) -> None:
    http_port, metrics_port = free_port(), free_port()
    server = await serve(
        "--memory", "--http", f"127.0.0.1:{http_port}", "--metrics", f"127.0.0.1:{metrics_port}"
    )
    board = f"http://127.0.0.1:{http_port}"
    plain = f"http://127.0.0.1:{metrics_port}"
    async with skift_server.connect(server.url) as owner:
        me = (await owner.list_principals())[0].name
        admin = (await owner.create_token(me)).token
        await owner.add_principal("ci-bot", "agent")
        bot = (await owner.create_token("ci-bot")).token
        other = await owner.create_org("acme", admin="eve")
    async with httpx.AsyncClient(timeout=30) as http:
        anonymous = await http.get(f"{board}/metrics")
        assert anonymous.status_code == 401
        assert "skift_up" not in anonymous.text
        assert "--metrics" in anonymous.text
        for token, status in (("skt_nonsense", 401), (bot, 403), (other.token, 403)):
            got = await http.get(f"{board}/metrics", headers={"authorization": f"Bearer {token}"})
            assert got.status_code == status, token
            assert "skift_up" not in got.text
        ok = await http.get(f"{board}/metrics", headers={"authorization": f"Bearer {admin}"})
        assert ok.status_code == 200
        assert "skift_up 1.0" in ok.text
        assert (await http.get(f"{board}/healthz")).status_code == 200
        # the listener of its own: metrics and health, without sign-in, and no board
        free = await http.get(f"{plain}/metrics")
        assert free.status_code == 200
        assert "skift_up 1.0" in free.text
        assert (await http.get(f"{plain}/readyz")).text == "ready\n"
        assert (await http.get(f"{plain}/")).status_code == 404
        assert (await http.get(f"{plain}/signin")).status_code == 404
