"""Blob storage failures are a clear, retryable Unavailable naming the cause, never INTERNAL.

Issue 17 point 5: a blob directory that cannot be written (disk full,
read-only, a file where a directory must be) made put_blob an internal error.
The test puts a file where the blob store's ``sha256`` directory must go (it
runs as root, which a read-only mode would not stop).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from serverproc import ServerProcess

import skift

if TYPE_CHECKING:
    from pathlib import Path


def _broken(tmp_path: Path) -> Path:
    root = tmp_path / "blobs"
    root.mkdir()
    (root / "sha256").write_text("not a directory")
    return root


def _assert_clear(err: skift.Unavailable) -> None:
    assert "blob store cannot write" in err.message
    assert err.details["cause"] in {"ENOTDIR", "EEXIST"}
    assert "Retry" in err.next


async def test_blob_write_failure_is_unavailable_on_pg(pg_dsn: str, tmp_path: Path) -> None:
    root = _broken(tmp_path)
    async with skift.open(pg_dsn, principal=skift.User("ada"), blobs=root) as sk:
        with pytest.raises(skift.Unavailable) as ei:
            await sk.put_blob(b"hello", media_type="text/plain")
        _assert_clear(ei.value)
        (root / "sha256").unlink()
        info = await sk.put_blob(b"hello", media_type="text/plain")  # the retry succeeds
        assert await sk.get_blob(info.digest) == b"hello"


@pytest.mark.remote
async def test_blob_write_failure_is_unavailable_through_a_server(
    pg_dsn: str, tmp_path: Path
) -> None:
    from skift_server import connect

    root = _broken(tmp_path)
    server = ServerProcess("--dsn", pg_dsn, "--blob-dir", str(root), fork=True)
    try:
        await server.start()
        async with connect(server.url) as sk:
            with pytest.raises(skift.Unavailable) as ei:
                await sk.put_blob(b"hello", media_type="text/plain")
            _assert_clear(ei.value)
        assert "Traceback" not in server.log()
        assert await server.stop() == 0
    finally:
        server.cleanup()
