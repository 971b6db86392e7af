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

from ._client_base import RemoteBase
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
                    got: Any = await stream.recv_message()
                    if got is None:
                        return
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
        chunks, total = _chunks(data)
        first = v1.ImportBeadsRequest(
            project=project,
            dry_run=dry_run,
            break_cycles=break_cycles,
            skip_dangling=skip_dangling,
            data=chunks[0][0],
        )
        requests = [(first, chunks[0][1])]
        requests += [(v1.ImportBeadsRequest(data=b), n) for b, n in chunks[1:]]
        done = 0

        def sent(n: int) -> None:
            nonlocal done
            done += n
            if progress is not None and n:
                progress(done, total)

        nodes: dict[str, str] = {}
        summary: v1.ImportBeadsSummary | None = None
        stream = self._stream(
            "ImportBeads",
            grpclib.const.Cardinality.STREAM_STREAM,
            requests,
            v1.ImportBeadsResponse,
            sent,
        )
        async for got in stream:
            nodes.update(got.nodes)
            summary = got.summary or summary
        return import_view(nodes, summary)

    async def export_beads(self, project: str, *, progress: Progress | None = None) -> str:
        parts: list[bytes] = []
        stream = self._stream(
            "ExportBeads",
            grpclib.const.Cardinality.UNARY_STREAM,
            [(v1.ExportBeadsRequest(project=project), 0)],
            v1.ExportBeadsResponse,
            lambda n: None,
        )
        async for got in stream:
            parts.append(got.data)
            if progress is not None:
                progress(got.done, got.total)
        return b"".join(parts).decode("utf-8")

    async def import_archive(
        self,
        data: str | Iterable[str],
        *,
        project: str | None = None,
        progress: Progress | None = None,
    ) -> skift.ArchiveImport:
        chunks, total = _chunks(data)
        requests = [
            (v1.ImportArchiveRequest(project=project or "", data=chunks[0][0]), chunks[0][1])
        ]
        requests += [(v1.ImportArchiveRequest(data=b), n) for b, n in chunks[1:]]
        done = 0

        def sent(n: int) -> None:
            nonlocal done
            done += n
            if progress is not None and n:
                progress(done, total)

        ids: dict[str, str] = {}
        summary: v1.ImportArchiveSummary | None = None
        stream = self._stream(
            "ImportArchive",
            grpclib.const.Cardinality.STREAM_STREAM,
            requests,
            v1.ImportArchiveResponse,
            sent,
        )
        async for got in stream:
            ids.update(got.ids)
            summary = got.summary or summary
        return archive_view(ids, summary)

    async def export_archive(self, project: str, *, progress: Progress | None = None) -> str:
        parts: list[bytes] = []
        stream = self._stream(
            "ExportArchive",
            grpclib.const.Cardinality.UNARY_STREAM,
            [(v1.ExportArchiveRequest(project=project), 0)],
            v1.ExportArchiveResponse,
            lambda n: None,
        )
        async for got in stream:
            parts.append(got.data)
            if progress is not None:
                progress(got.done, got.total)
        return b"".join(parts).decode("utf-8")
