"""Retention of what is not audit: idempotency records and claim cursors past their
windows (skift._retention, docs/operations.md), time moved by the test clock."""

from __future__ import annotations

import secrets
from datetime import timedelta

import pytest

import skift


@pytest.fixture(params=["memory", pytest.param("pg", marks=pytest.mark.pg)])
def store_url(request: pytest.FixtureRequest) -> str:
    """Memory and PostgreSQL: pruning is an operator's run over the store itself
    (``skift serve`` on a schedule, ``skift admin prune --dsn``), not an RPC."""
    if request.param == "memory":
        return "memory:"
    dsn: str = request.getfixturevalue("pg_dsn")
    return dsn


async def test_a_request_id_past_the_window_is_refused_never_applied_twice(
    sk: skift.LocalSkift,
) -> None:
    p = await sk.create_project("Keep")
    ops: list[skift.Op] = [skift.CreateNode(title="once")]
    first = await sk.patch(p.slug, ops, request_id="r-1")
    assert await sk.patch(p.slug, ops, request_id="r-1") == first  # a retry: the same result

    sk.store.set_clock_offset(timedelta(days=31))
    dry = await skift.prune(sk.store, dry_run=True)
    assert dry.ran
    assert dry.dry_run
    assert dry.requests >= 1
    assert await sk.patch(p.slug, ops, request_id="r-1") == first  # a dry run removes nothing
    assert await sk.store.last_prune() is None

    done = await skift.prune(sk.store)
    assert done.requests == dry.requests
    with pytest.raises(skift.IdempotencyMismatch) as err:
        await sk.patch(p.slug, ops, request_id="r-1")
    assert "already applied" in err.value.message
    assert "30 days" in err.value.message
    assert "fresh request id" in err.value.next
    assert [n.title for n in (await sk.list_nodes(projects=[p.slug])).nodes] == ["once"]

    # a request inside the window keeps its record
    second = await sk.patch(p.slug, [skift.CreateNode(title="recent")], request_id="r-2")
    again = await skift.prune(sk.store)
    assert again.requests == 0
    assert await sk.patch(p.slug, [skift.CreateNode(title="recent")], request_id="r-2") == second
    last = await sk.store.last_prune()
    assert last is not None
    assert (last.requests, last.dry_run) == (0, False)
    # another principal's request id of the same text is its own
    bot = sk.acting_as(skift.Agent("bot"))
    await bot.patch(p.slug, [skift.CreateNode(title="by the bot")], request_id="r-1")


async def test_a_comment_request_id_past_the_window_is_refused(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Talk")
    await sk.patch(p.slug, [skift.CreateNode(title="n")])
    await sk.add_comment("talk#1", "hello", request_id="c-1")
    sk.store.set_clock_offset(timedelta(days=40))
    await skift.prune(sk.store)
    with pytest.raises(skift.IdempotencyMismatch):
        await sk.add_comment("talk#1", "hello", request_id="c-1")
    assert [c.body for c in await sk.comments("talk#1")] == ["hello"]


async def test_claim_cursors_unused_for_the_window_are_pruned(sk: skift.LocalSkift) -> None:
    bot = sk.acting_as(skift.Agent("bot"))
    for name in ("Alpha", "Beta"):
        p = await sk.create_project(name)
        await sk.patch(p.slug, [skift.CreateNode(title=f"{name} work")])
    got = await bot.claim_next()
    assert got.node is not None

    sk.store.set_clock_offset(timedelta(days=60))
    assert (await skift.prune(sk.store, dry_run=True)).claim_cursors == 0
    sk.store.set_clock_offset(timedelta(days=91))
    assert (await skift.prune(sk.store, dry_run=True)).claim_cursors == 1
    assert (await skift.prune(sk.store)).claim_cursors == 1
    assert (await skift.prune(sk.store)).claim_cursors == 0
    # the rotation starts afresh from the first project (alpha#1 is ready again: its
    # lease expired long ago); with the cursor kept it would have moved on to beta
    nxt = await bot.claim_next()
    assert got.node.ref == "alpha#1"
    assert nxt.node is not None
    assert nxt.node.ref == "alpha#1"


async def test_windows_come_from_the_limits(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Short")
    await sk.patch(p.slug, [skift.CreateNode(title="x")], request_id="short-1")
    sk.store.set_clock_offset(timedelta(days=2))
    short = skift.Limits(request_retention=timedelta(days=1))
    assert (await skift.prune(sk.store, dry_run=True)).requests == 0
    assert (await skift.prune(sk.store, limits=short, dry_run=True)).requests >= 1


async def test_store_stats_show_growth_and_the_last_prune(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Stats")
    await sk.patch(p.slug, [skift.CreateNode(title=f"n{i}") for i in range(3)])
    await sk.add_webhook(p.slug, "https://hooks.example.com/skift")
    await sk.patch(p.slug, [skift.CreateNode(title="announced")])
    st = await skift.store_stats(sk.store)
    names = {t.name for t in st.tables}
    assert {"events", "nodes", "requests", "claim_cursors"} <= names
    events = next(t for t in st.tables if t.name == "events")
    assert events.rows >= 6 or (events.bytes or 0) > 0  # PostgreSQL: an estimate
    # PostgreSQL partitions events by time (a default partition as the safety net); memory not
    parts = {t.name for t in st.event_partitions}
    assert (
        parts == set()
        if sk.store.__class__.__name__ == "MemoryStore"
        else "events_default" in parts
    )
    assert st.deliveries.pending == 1
    assert st.deliveries.oldest_pending_at is not None
    assert st.oldest_parked_at is None
    assert st.last_prune is None
    sk.store.set_clock_offset(timedelta(days=31))
    done = await skift.prune(sk.store)
    after = await skift.store_stats(sk.store)
    assert after.last_prune is not None
    assert (after.last_prune.requests, after.last_prune.at) == (done.requests, done.at)


async def _blob(sk: skift.LocalSkift, text: str) -> skift.BlobInfo:
    # bytes of this test's own: the pg tests of a session share one blob directory
    return await sk.put_blob(f"{text} {secrets.token_hex(8)}".encode(), media_type="text/plain")


async def test_a_blob_no_artifact_names_is_swept_after_its_grace(sk: skift.LocalSkift) -> None:
    p = await sk.create_project("Blobs")
    await sk.patch(p.slug, [skift.CreateNode(title="holder")])
    orphan = await _blob(sk, "orphan")
    kept = await _blob(sk, "kept")
    part = skift.BlobPart(digest=kept.digest, media_type="text/plain", size=kept.size)
    await sk.attach_artifact("blobs#1", skift.Artifact(name="notes", parts=[part]))

    fresh = await skift.prune(sk.store)
    assert (fresh.blobs, fresh.blob_files) == (0, 0)  # inside the grace (a day)

    sk.store.set_clock_offset(timedelta(hours=25))
    dry = await skift.prune(sk.store, dry_run=True)
    assert (dry.blobs, dry.blob_files) == (1, 1)
    assert await sk.get_blob(orphan.digest)  # a dry run removes nothing
    done = await skift.prune(sk.store)
    assert (done.blobs, done.blob_files) == (1, 1)
    assert done.blobs_before is not None
    with pytest.raises(skift.NotFound):
        await sk.get_blob(orphan.digest)
    assert await sk.get_blob(kept.digest)  # named by an artifact: kept whatever its age
    last = await sk.store.last_prune()
    assert last is not None
    assert (last.blobs, last.blob_files) == (1, 1)
    # an artifact can no longer name the swept blob; uploading it again brings it back
    gone = skift.BlobPart(digest=orphan.digest, media_type="text/plain", size=orphan.size)
    with pytest.raises(skift.NotFound):
        await sk.attach_artifact("blobs#1", skift.Artifact(name="late", parts=[gone]))
    assert (await skift.prune(sk.store)).blobs == 0


async def test_uploading_again_restarts_a_blobs_grace(sk: skift.LocalSkift) -> None:
    data = f"again {secrets.token_hex(8)}".encode()
    blob = await sk.put_blob(data, media_type="text/plain")
    sk.store.set_clock_offset(timedelta(hours=20))
    assert (await sk.put_blob(data, media_type="text/plain")).digest == blob.digest
    sk.store.set_clock_offset(timedelta(hours=40))  # 40 h since the first upload, 20 since
    assert (await skift.prune(sk.store)).blobs == 0
    assert await sk.get_blob(blob.digest) == data
    sk.store.set_clock_offset(timedelta(hours=45))
    assert (await skift.prune(sk.store)).blobs == 1
    with pytest.raises(skift.NotFound):
        await sk.get_blob(blob.digest)


async def test_a_blob_another_organization_still_records_keeps_its_bytes(
    sk: skift.LocalSkift,
) -> None:
    data = f"shared {secrets.token_hex(8)}".encode()
    mine = await sk.put_blob(data, media_type="text/plain")
    sk.store.set_clock_offset(timedelta(hours=20))
    other = skift.LocalSkift(sk.store, principal=skift.User("ada"), org="elsewhere")
    theirs = await other.put_blob(data, media_type="text/plain")
    assert theirs.digest == mine.digest
    sk.store.set_clock_offset(timedelta(hours=30))
    done = await skift.prune(sk.store)
    assert (done.blobs, done.blob_files) == (1, 0)  # my row went; the bytes are theirs too
    assert await other.get_blob(mine.digest) == data
    with pytest.raises(skift.NotFound):
        await sk.get_blob(mine.digest)
