"""RemoteSkift's import and export: beads JSONL and skift archives both ways, streamed
(``_import_wire``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Final, TypeVar

import betterproto2
import grpclib.const
from grpclib.exceptions import GRPCError, StreamTerminatedError
from h2.exceptions import ProtocolError as H2ProtocolError

import skift

from ._client_base import READING, RemoteBase, Unreadable, unreadable
from ._errors import from_grpc
from ._import_wire import CHUNK_BYTES, archive_view, import_view
from ._proto.skift import v1

T = TypeVar("T", bound=betterproto2.Message)

LONG_TIMEOUT: Final = 900.0
"""Seconds an import or export may take (100,000 issues take about a minute)."""

Progress = Callable[[int, int], None]


def _chunks(data: str | Iterable[str]) -> tuple[list[tuple[bytes, int]], int]:
    """The file as (bytes, lines ending in them) chunks of CHUNK_BYTES, and its line count.

    A chunk may end inside a line (the server joins them); lines are counted by
    their newline, for progress.
    """
    text = data if isinstance(data, str) else "".join(_line(x) for x in data)
    raw = text.encode("utf-8")
    out = [
        (raw[k : k + CHUNK_BYTES], raw.count(b"\n", k, k + CHUNK_BYTES))
        for k in range(0, len(raw), CHUNK_BYTES)
    ] or [(b"", 0)]
    return out, raw.count(b"\n")


def _line(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


class ImportCalls(RemoteBase):
    """RemoteSkift's import and export of beads JSONL."""

    async def _stream(
        self,
        method: str,
        cardinality: grpclib.const.Cardinality,
        requests: Iterable[tuple[betterproto2.Message, int]],
        reply: type[T],
        sent: Callable[[int], None],
    ) -> AsyncIterator[T]:
        """One streaming call: send every request (telling ``sent`` each one's weight), then
        yield the replies. Not retried: an import is one transaction the server may have run."""
        if self._shared.closed:
            raise skift.Unavailable(
                "this skift connection is closed", next="Connect again with skift_server.connect."
            )
        route = f"/skift.v1.SkiftService/{method}"
        request_type = type(next(iter(requests))[0])
        try:
            async with self._shared.channel().request(
                route,
                cardinality,
                request_type,
                reply,
                timeout=max(self.timeout, LONG_TIMEOUT),
                metadata=self._metadata(),
            ) as stream:
                try:
                    for msg, weight in requests:
                        await stream.send_message(msg)
                        sent(weight)
                    await stream.end()
                except (StreamTerminatedError, H2ProtocolError, ConnectionResetError):
                    # the server answered (an error) before taking the whole upload: read it
                    await stream.recv_initial_metadata()
                    raise
                while True:
                    try:
                        got: Any = await stream.recv_message()
                    except Unreadable as exc:
                        raise unreadable(method, exc) from exc
                    if got is None:
                        return
                    READING.set(method)
                    yield got
        except GRPCError as exc:
            raise from_grpc(exc) from None
        except (ConnectionRefusedError, FileNotFoundError) as exc:
            raise self._shared.unreachable(exc) from None
        except (TimeoutError, StreamTerminatedError, H2ProtocolError, OSError) as exc:
            raise skift.Unavailable(
                f"the connection to the skift server failed: {exc or type(exc).__name__}",
                next="Run it again: an import is one transaction, all or nothing, and "
                "importing the same file twice changes nothing.",
            ) from None

    def _upload(
        self,
        method: str,
        first: betterproto2.Message,
        more: Callable[..., betterproto2.Message],
        data: str | Iterable[str],
        reply: type[T],
        progress: Progress | None,
    ) -> AsyncIterator[T]:
        """Send ``data`` in chunks (``first`` carries the call's fields and the first chunk's
        bytes, ``more(data=...)`` each further chunk), telling ``progress`` the lines sent;
        yield the replies."""
        chunks, total = _chunks(data)
        first.data = chunks[0][0]  # pyright: ignore[reportAttributeAccessIssue]
        requests = [(first, chunks[0][1])] + [(more(data=b), n) for b, n in chunks[1:]]
        done = 0

        def sent(n: int) -> None:
            nonlocal done
            done += n
            if progress is not None and n:
                progress(done, total)

        return self._stream(method, grpclib.const.Cardinality.STREAM_STREAM, requests, reply, sent)

    async def _download(
        self, method: str, request: betterproto2.Message, reply: type[T], progress: Progress | None
    ) -> str:
        """A server-streamed export: the chunks' bytes joined, ``progress`` told as they come."""
        parts: list[bytes] = []
        stream = self._stream(
            method, grpclib.const.Cardinality.UNARY_STREAM, [(request, 0)], reply, lambda n: None
        )
        async for got in stream:
            chunk: Any = got
            parts.append(chunk.data)
            if progress is not None:
                progress(chunk.done, chunk.total)
        return b"".join(parts).decode("utf-8")

    async def import_beads(
        self,
        data: str | Iterable[str],
        *,
        project: str,
        dry_run: bool = False,
        break_cycles: bool = False,
        skip_dangling: bool = False,
        progress: Progress | None = None,
    ) -> skift.BeadsImport:
        first = v1.ImportBeadsRequest(
            project=project,
            dry_run=dry_run,
            break_cycles=break_cycles,
            skip_dangling=skip_dangling,
        )
        nodes: dict[str, str] = {}
        summary: v1.ImportBeadsSummary | None = None
        stream = self._upload(
            "ImportBeads", first, v1.ImportBeadsRequest, data, v1.ImportBeadsResponse, progress
        )
        async for got in stream:
            nodes.update(got.nodes)
            summary = got.summary or summary
        return import_view(nodes, summary)

    async def export_beads(self, project: str, *, progress: Progress | None = None) -> str:
        request = v1.ExportBeadsRequest(project=project)
        return await self._download("ExportBeads", request, v1.ExportBeadsResponse, progress)

    async def import_archive(
        self,
        data: str | Iterable[str],
        *,
        project: str | None = None,
        progress: Progress | None = None,
        map_authors: bool = False,
    ) -> skift.ArchiveImport:
        first = v1.ImportArchiveRequest(project=project or "", map_authors=map_authors)
        ids: dict[str, str] = {}
        summary: v1.ImportArchiveSummary | None = None
        stream = self._upload(
            "ImportArchive",
            first,
            v1.ImportArchiveRequest,
            data,
            v1.ImportArchiveResponse,
            progress,
        )
        async for got in stream:
            ids.update(got.ids)
            summary = got.summary or summary
        return archive_view(ids, summary)

    async def export_archive(self, project: str, *, progress: Progress | None = None) -> str:
        request = v1.ExportArchiveRequest(project=project)
        return await self._download("ExportArchive", request, v1.ExportArchiveResponse, progress)
