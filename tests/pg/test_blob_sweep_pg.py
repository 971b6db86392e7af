"""The blob sweep (skift._retention) racing uploads and attaches on real PostgreSQL: with no
grace at all, so every blob not yet named by an artifact is fair game, prunes run back to
back while uploaders put bytes (some the same bytes at once) and attach them. An attach may
be refused (the sweep took the blob first: the uploader uploads again), but an artifact
that was attached always reads its bytes, and every blob row has its file."""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

import psycopg
import pytest

import skift
from skift_pg import PgStore

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.pg

NO_GRACE = skift.Limits(blob_grace=timedelta(0))


async def test_sweeping_against_concurrent_uploads_and_attaches_loses_no_bytes(
    pg_dsn: str, tmp_path: Path
) -> None:
    files = skift.FileBlobStore(tmp_path / "blobs")
    store = PgStore(pg_dsn, min_size=1, max_size=8, blobs=files, limits=NO_GRACE)
    token = secrets.token_hex(6)
    attached: list[tuple[str, bytes]] = []
    refused = 0
    stop = asyncio.Event()
    async with skift.LocalSkift(store, principal=skift.User("ada"), limits=NO_GRACE) as sk:
        p = await sk.create_project("Race")
        await sk.patch(p.slug, [skift.CreateNode(title=f"n{i}") for i in range(4)])

        async def uploader(i: int) -> None:
            nonlocal refused
            for k in range(12):
                # uploaders 0 and 2 put the same bytes at the same time, as do 1 and 3
                data = f"{i % 2}-{k}-{token}".encode()
                for _ in range(50):
                    blob = await sk.put_blob(data, media_type="text/plain")
                    part = skift.BlobPart(
                        digest=blob.digest, media_type="text/plain", size=len(data)
                    )
                    try:
                        await sk.attach_artifact(
                            f"{p.slug}#{i + 1}", skift.Artifact(name=f"a{k}", parts=[part])
                        )
                    except skift.NotFound:
                        refused += 1  # swept between the upload and the attach: upload again
                        continue
                    attached.append((blob.digest, data))
                    break
                else:
                    pytest.fail("an attach never got through")

        async def pruner() -> int:
            runs = 0
            while not stop.is_set():
                await skift.prune(store, limits=NO_GRACE)
                runs += 1
                await asyncio.sleep(0)
            return runs

        sweeping = asyncio.create_task(pruner())
        await asyncio.gather(*(uploader(i) for i in range(4)))
        stop.set()
        runs = await sweeping
        assert runs >= 3
        assert len(attached) == 48
        for digest, data in attached:
            assert await sk.get_blob(digest) == data
        async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
            cur = await conn.execute("SELECT digest FROM blobs")
            recorded = [r[0] for r in await cur.fetchall()]
        assert len(recorded) == 24  # the artifacts name 24 distinct digests
        for digest in recorded:
            assert files.path(digest).exists(), f"{digest} is recorded without its bytes"
        # once the artifacts are all that names them, nothing more is swept
        final = await skift.prune(store, limits=NO_GRACE)
        assert (final.blobs, final.blob_files) == (0, 0)
    # how often the sweep won a race (informative: the rule holds either way)
    print(f"{runs} prune runs, {refused} attaches refused and retried")
