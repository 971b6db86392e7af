"""``/metrics`` makes the store's growth visible: table sizes, event partitions, the
oldest waiting deliveries, and what the last prune removed (a real server over PostgreSQL)."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from typing import TYPE_CHECKING

import pytest
from serverproc import free_port

import skift
import skift_pg
import skift_server

if TYPE_CHECKING:
    from conftest import Serve

pytestmark = pytest.mark.pg


def _metrics(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def _value(text: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


async def test_metrics_show_tables_partitions_deliveries_and_the_last_prune(
    serve: Serve, pg_dsn: str
) -> None:
    port = free_port()
    server = await serve("--dsn", pg_dsn, "--metrics", f"127.0.0.1:{port}", "--test-hooks")
    async with skift_server.connect(server.url, principal=skift.User("ada")) as sk:
        p = await sk.create_project("Grow")
        await sk.patch(p.slug, [skift.CreateNode(title=f"n{i}") for i in range(5)])
    url = f"http://127.0.0.1:{port}/metrics"
    text = await asyncio.to_thread(_metrics, url)
    assert _value(text, 'skift_table_bytes{table="events"}') > 0
    assert _value(text, 'skift_table_bytes{table="nodes"}') > 0
    assert _value(text, "skift_event_partitions") >= 3  # before, default, and this year's
    assert _value(text, "skift_webhook_oldest_parked_seconds") == 0
    assert _value(text, "skift_prune_last_run_timestamp_seconds") == 0

    store = skift_pg.PgStore(pg_dsn, listen=False)
    try:
        await skift.prune(store)
    finally:
        await store.close()
    text = await asyncio.to_thread(_metrics, url)
    assert _value(text, "skift_prune_last_run_timestamp_seconds") > 0
    assert _value(text, 'skift_prune_last_removed{what="requests"}') == 0
    assert _value(text, 'skift_prune_last_removed{what="claim_cursors"}') == 0
