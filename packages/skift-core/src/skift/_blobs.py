"""Where blob bytes live: a small backend protocol, in memory and on a filesystem.

A blob is immutable and content-addressed: its name is the SHA-256 digest of
its bytes, written ``sha256:<lowercase hex>``. A backend only keeps bytes by
digest; which organization may read which digest (and under which media type)
is a row the store keeps, so bytes are shared (deduplicated) across
organizations while every organization sees only what it uploaded.

Writing is idempotent: the same bytes put twice are stored once. Bytes are
written inside the transaction that records them, before the row, so a failed
request can leave unreferenced bytes behind, never a row without bytes. A
prune's blob sweep (skift._retention) deletes the bytes of rows it removed
when no organization records them any more.

An upload does the same work whether or not the bytes are already there
(the file backend writes, syncs and renames over the old copy every time):
skipping the write for bytes some other organization uploaded would let an
upload's timing tell whether anyone holds those bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Protocol

from ._errors import Invalid, Unavailable

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def digest_of(data: bytes) -> str:
    """The digest skift names these bytes by: ``sha256:<lowercase hex>``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_digest(value: str, what: str = "digest") -> str:
    """``value`` as a canonical digest (hex lowercased), or :class:`Invalid`."""
    text = value.strip()
    algo, sep, hexpart = text.partition(":")
    canon = f"{algo.lower()}{sep}{hexpart.lower()}"
    if not _DIGEST.match(canon):
        raise Invalid(
            f"{what} {value!r} is not a SHA-256 digest",
            next="Write digests as sha256:<64 lowercase hex digits>.",
            field="digest",
        )
    return canon


class BlobStore(Protocol):
    """Bytes by digest. Implementations must make ``put`` atomic and idempotent."""

    async def put(self, digest: str, data: bytes) -> None:
        """Keep ``data`` under ``digest`` (the caller has verified the digest)."""
        ...

    async def get(self, digest: str) -> bytes | None: ...

    async def has(self, digest: str) -> bool: ...

    async def delete(self, digest: str) -> bool:
        """Remove the bytes of ``digest``; False when there were none."""
        ...


class MemoryBlobStore:
    """Blobs in this process's memory (the in-memory store's default)."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}

    async def put(self, digest: str, data: bytes) -> None:
        self._data.setdefault(digest, data)

    async def get(self, digest: str) -> bytes | None:
        return self._data.get(digest)

    async def has(self, digest: str) -> bool:
        return digest in self._data

    async def delete(self, digest: str) -> bool:
        return self._data.pop(digest, None) is not None

    def __len__(self) -> int:
        return len(self._data)


class FileBlobStore:
    """Blobs as files under a directory: ``ROOT/sha256/ab/cdef…`` (the digest's hex).

    A blob is written to a temporary file in its final directory, flushed to
    disk and renamed into place, so a reader never sees a partial blob and two
    writers of the same bytes both succeed.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        algo, _, hexpart = check_digest(digest).partition(":")
        return self.root / algo / hexpart[:2] / hexpart[2:]

    async def put(self, digest: str, data: bytes) -> None:
        try:
            await asyncio.to_thread(self._put, digest, data)
        except OSError as exc:
            raise self._unavailable("write", exc) from exc

    def _unavailable(self, doing: str, exc: OSError) -> Unavailable:
        """A storage failure (disk full, read-only, permissions) as a retryable refusal naming it."""
        cause = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        return Unavailable(
            f"the blob store cannot {doing} under {self.root}: {exc.strerror or exc} ({cause})",
            next="Retry later with the same request; the operator must free space or "
            "make the blob directory writable.",
            cause=cause,
        )

    def _put(self, digest: str, data: bytes) -> None:
        # Never skip the write when the file exists: the two paths must take the same time.
        final = self.path(digest)
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=final.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    async def get(self, digest: str) -> bytes | None:
        try:
            return await asyncio.to_thread(self._get, digest)
        except OSError as exc:
            raise self._unavailable("read", exc) from exc

    def _get(self, digest: str) -> bytes | None:
        try:
            return self.path(digest).read_bytes()
        except FileNotFoundError:
            return None

    async def has(self, digest: str) -> bool:
        try:
            return await asyncio.to_thread(self.path(digest).exists)
        except OSError as exc:
            raise self._unavailable("read", exc) from exc

    async def delete(self, digest: str) -> bool:
        try:
            return await asyncio.to_thread(self._delete, digest)
        except OSError as exc:
            raise self._unavailable("delete", exc) from exc

    def _delete(self, digest: str) -> bool:
        try:
            self.path(digest).unlink()
        except FileNotFoundError:
            return False
        return True


def default_blob_dir() -> Path:
    """Where blobs go when a PostgreSQL store is given no directory.

    ``$SKIFT_BLOB_DIR`` when set; else ``$XDG_DATA_HOME/skift/blobs`` (or
    ``~/.local/share/skift/blobs``), beside the embedded cluster's ``pg``.
    Root without ``XDG_DATA_HOME`` uses ``/var/lib/skift/blobs``, as for the cluster.
    """
    explicit = os.environ.get("SKIFT_BLOB_DIR", "")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "skift" / "blobs"
    if os.geteuid() == 0:
        return Path("/var/lib/skift/blobs")
    return Path.home() / ".local" / "share" / "skift" / "blobs"
