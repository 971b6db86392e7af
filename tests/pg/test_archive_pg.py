"""A skift archive on real PostgreSQL, where other transactions run beside the export."""

from __future__ import annotations

import json

import psycopg
import pytest

import skift

pytestmark = pytest.mark.pg


async def test_a_transaction_open_elsewhere_leaves_the_archive_its_events(pg_dsn: str) -> None:
    """The change stream stops below the oldest transaction still running on the server (it
    may yet commit there); an archive reads everything its snapshot sees, so a long import
    in another database does not strip a project's history from its export."""
    async with skift.open(pg_dsn, principal=skift.User("ada")) as sk:
        await sk.create_project("arc")
        await sk.patch("arc", [{"op": "create_node", "alias": "a", "title": "Design"}])
        with psycopg.connect(pg_dsn) as other:
            other.execute("SELECT pg_current_xact_id()")  # holds the horizon from now on
            await sk.patch("arc", [{"op": "create_node", "alias": "b", "title": "Build"}])
            text = await sk.export_archive("arc")
            other.rollback()
    records = [json.loads(line) for line in text.splitlines()[1:]]
    events = [r for r in records if r["type"] == "event"]
    nodes = [r for r in records if r["type"] == "node"]
    assert len(nodes) == 2
    # every node's creation is in the history, the one made while the other ran too
    created = {e["node_id"] for e in events if e["op"] == "create_node"}
    assert created == {n["id"] for n in nodes}
