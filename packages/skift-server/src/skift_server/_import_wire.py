"""skift.v1's import and export RPCs (docs/migrating-from-beads.md, docs/archive.md):
streamed both ways.

A beads export of 100,000 issues is tens of MB, over a default client's 4 MiB
message: ImportBeads takes the file as a stream of chunks and answers with
the map from beads id to node in byte-budgeted parts, then the summary;
ExportBeads answers with chunks of whole lines. The handlers decode, call
the API and encode; the rules are the engine's.

An import is authorized (the policy's ``import`` action, the same question the
engine asks again inside its transaction) before its first chunk is read, so a
caller who may not import is refused having sent one HTTP/2 window at most;
the chunks of one who may are spooled to a temporary file past
:data:`SPOOL_BYTES`, not held whole in memory, and read back a line at a time.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import IO, Any, Final

import betterproto2

import skift

from ._proto.skift import v1

Send = Callable[[betterproto2.Message], Awaitable[None]]
StreamHandler = Callable[["skift.LocalSkift", AsyncIterator[Any], Send], Awaitable[None]]

CHUNK_BYTES: Final = 1024 * 1024
"""The bytes of a chunk either way: well under any client's or server's largest message."""

MAX_IMPORT_BYTES: Final = 1024 * 1024 * 1024
"""The largest file an import takes (a beads export of 100,000 issues is some 50 MB)."""

SPOOL_BYTES: Final = 8 * 1024 * 1024
"""An upload larger than this goes to a temporary file while it is received."""


def summary_pb(r: skift.BeadsImport) -> v1.ImportBeadsSummary:
    return v1.ImportBeadsSummary(
        project=r.project,
        created=r.created,
        updated=r.updated,
        unchanged=r.unchanged,
        edges=r.edges,
        comments=r.comments,
        warnings=list(r.warnings),
        dry_run=r.dry_run,
    )


def import_view(nodes: dict[str, str], s: v1.ImportBeadsSummary | None) -> skift.BeadsImport:
    s = s or v1.ImportBeadsSummary()
    return skift.BeadsImport(
        project=s.project,
        created=s.created,
        updated=s.updated,
        unchanged=s.unchanged,
        nodes=nodes,
        edges=s.edges,
        comments=s.comments,
        warnings=tuple(s.warnings),
        dry_run=s.dry_run,
    )


def decode_text(data: bytes) -> str:
    """The uploaded file as text; bytes that are not UTF-8 are Invalid naming their line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise skift.Invalid(
            f"line {line}: not UTF-8 text (byte {exc.start})",
            next="Export again with bd export; a beads export is UTF-8 JSONL.",
            line=line,
        ) from None


async def _upload(requests: AsyncIterator[Any], spool: IO[bytes]) -> Any:
    """The first request message; every message's ``data`` written to ``spool``."""
    first: Any = None
    size = 0
    async for r in requests:
        first = first or r
        size += len(r.data)
        if size > MAX_IMPORT_BYTES:
            raise skift.LimitExceeded(
                f"the file is over {MAX_IMPORT_BYTES} bytes",
                next="Split the beads export (by label or status) and import each part.",
                limit="import_bytes",
                bound=MAX_IMPORT_BYTES,
            )
        spool.write(r.data)
    if first is None:
        raise skift.Invalid(
            "the import sent no message", next="Send the project and the file's bytes."
        )
    spool.seek(0)
    return first


def spooled_lines(spool: IO[bytes]) -> Iterator[str]:
    """The spooled file's lines as text (without their line ends, as ``str.split``
    gives them); bytes that are not UTF-8 are Invalid naming their line."""
    for n, raw in enumerate(spool, start=1):
        try:
            yield raw.decode("utf-8").rstrip("\n")
        except UnicodeDecodeError as exc:
            raise skift.Invalid(
                f"line {n}: not UTF-8 text (byte {exc.start})",
                next="Export again with bd export; a beads export is UTF-8 JSONL.",
                line=n,
            ) from None


def _spool() -> IO[bytes]:
    return tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, prefix="skift-import-")


async def _send_map(
    send: Send, pairs: dict[str, str], part_of: Callable[[dict[str, str]], betterproto2.Message]
) -> None:
    """Send a map in byte-budgeted parts, but the last part (the caller sends it)."""
    part: dict[str, str] = {}
    budget = 0
    for key, value in list(pairs.items()):
        part[key] = value
        budget += len(key) + len(value) + 8  # the map entry's framing
        if budget >= CHUNK_BYTES:
            await send(part_of(part))
            part, budget = {}, 0
    pairs.clear()
    pairs.update(part)


async def import_beads(
    sk: skift.LocalSkift, requests: AsyncIterator[v1.ImportBeadsRequest], send: Send
) -> None:
    await sk.check_action("import")  # before the first chunk is read
    with _spool() as spool:
        first = await _upload(requests, spool)
        res = await sk.import_beads(
            list(spooled_lines(spool)),
            project=first.project,
            dry_run=first.dry_run,
            break_cycles=first.break_cycles,
            skip_dangling=first.skip_dangling,
        )
    rest = dict(res.nodes)
    await _send_map(send, rest, lambda part: v1.ImportBeadsResponse(nodes=part))
    await send(v1.ImportBeadsResponse(nodes=rest, summary=summary_pb(res)))


async def export_beads(
    sk: skift.LocalSkift, requests: AsyncIterator[v1.ExportBeadsRequest], send: Send
) -> None:
    r = await anext(requests)
    text = await sk.export_beads(r.project)
    lines = text.splitlines(keepends=True)
    total = len(lines)
    buf: list[bytes] = []
    budget = 0
    done = 0
    for line in lines:
        b = line.encode("utf-8")
        if buf and budget + len(b) > CHUNK_BYTES:
            await send(v1.ExportBeadsResponse(data=b"".join(buf), done=done, total=total))
            buf, budget = [], 0
        buf.append(b)
        budget += len(b)
        done += 1
    await send(v1.ExportBeadsResponse(data=b"".join(buf), done=done, total=total))


def archive_summary_pb(r: skift.ArchiveImport) -> v1.ImportArchiveSummary:
    return v1.ImportArchiveSummary(
        project=r.project,
        nodes=r.nodes,
        edges=r.edges,
        comments=r.comments,
        artifacts=r.artifacts,
        blobs=r.blobs,
        leases=r.leases,
        usage=r.usage,
        events=r.events,
        warnings=list(r.warnings),
    )


def archive_view(ids: dict[str, str], s: v1.ImportArchiveSummary | None) -> skift.ArchiveImport:
    s = s or v1.ImportArchiveSummary()
    return skift.ArchiveImport(
        project=s.project,
        nodes=s.nodes,
        edges=s.edges,
        comments=s.comments,
        artifacts=s.artifacts,
        blobs=s.blobs,
        leases=s.leases,
        usage=s.usage,
        events=s.events,
        ids=ids,
        warnings=tuple(s.warnings),
    )


async def import_archive(
    sk: skift.LocalSkift, requests: AsyncIterator[v1.ImportArchiveRequest], send: Send
) -> None:
    await sk.check_action("import")  # before the first chunk is read
    with _spool() as spool:
        first = await _upload(requests, spool)
        res = await sk.import_archive(
            list(spooled_lines(spool)),
            project=first.project or None,
            map_authors=first.map_authors,
        )
    rest = dict(res.ids)
    await _send_map(send, rest, lambda part: v1.ImportArchiveResponse(ids=part))
    await send(v1.ImportArchiveResponse(ids=rest, summary=archive_summary_pb(res)))


async def export_archive(
    sk: skift.LocalSkift, requests: AsyncIterator[v1.ExportArchiveRequest], send: Send
) -> None:
    r = await anext(requests)
    data = (await sk.export_archive(r.project)).encode("utf-8")
    total = len(data)
    for k in range(0, max(total, 1), CHUNK_BYTES):
        chunk = data[k : k + CHUNK_BYTES]
        await send(v1.ExportArchiveResponse(data=chunk, done=k + len(chunk), total=total))
