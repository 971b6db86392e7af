"""An upload does the same work whether or not the bytes already exist (issue 23, hole 5).

Skipping the write for bytes another organization already uploaded would let
an upload's timing say whether anyone holds those bytes. The file backend
therefore writes, syncs and renames a fresh copy every time: the second
upload of the same bytes replaces the file (a new inode), exactly as the
first created it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skift._blobs import FileBlobStore, digest_of

if TYPE_CHECKING:
    from pathlib import Path


async def test_known_bytes_are_written_again_not_skipped(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    data = b"the same bytes, uploaded by two organizations"
    digest = digest_of(data)
    await store.put(digest, data)
    first = store.path(digest).stat().st_ino
    await store.put(digest, data)
    second = store.path(digest).stat()
    assert second.st_ino != first
    assert await store.get(digest) == data
    assert [p.name for p in store.path(digest).parent.iterdir()] == [store.path(digest).name]
