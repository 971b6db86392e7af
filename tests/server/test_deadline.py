"""A call that runs past its deadline says the server may be busy, never "is skift serve
running?" (issue 32 point 9: a search right after a 20,000-issue import did, while the
server was up), and the deadline can be given in SKIFT_TIMEOUT."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import skift
import skift_server

if TYPE_CHECKING:
    from conftest import Serve


async def test_a_slow_answer_is_not_a_missing_server(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await serve("--memory")
    async with skift_server.connect(server.url) as owner:
        await owner.create_project("Quiet")
    monkeypatch.setenv("SKIFT_TIMEOUT", "0.0001")
    async with skift_server.connect(server.url, retry_window=0.3) as sk:
        assert sk.timeout == 0.0001
        # no answer can come that fast: the server is up, the deadline is what ran out
        with pytest.raises(skift.Unavailable) as ei:
            await sk.list_projects()
    assert "did not answer within the call's 0.0001 s deadline" in ei.value.message
    assert "SKIFT_TIMEOUT" in ei.value.next
    assert "running" not in ei.value.next


def test_a_bad_skift_timeout_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKIFT_TIMEOUT", "soon")
    with pytest.raises(skift.Invalid, match="SKIFT_TIMEOUT='soon'"):
        skift_server.connect("unix:///nonexistent/skift.sock")
