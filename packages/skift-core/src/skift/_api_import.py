"""The API for importing and exporting work from other trackers (beads, ``bd export`` JSONL)."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
from collections.abc import Callable, Generator, Iterable
from types import CoroutineType
from typing import Any, ParamSpec, TypeVar

from . import _beads
from ._archive import ArchiveImport, blob_bytes, parse_archive
from ._archive import export_archive as archive_export
from ._archive import import_archive as archive_import
from ._engine import Actor
from ._importer import BeadsImport, DryRun
from ._importer import export_beads as importer_export_beads
from ._importer import import_beads as importer_import_beads
from ._intent import intent
from ._session import Session
from ._store import Tx

P = ParamSpec("P")
R = TypeVar("R")

_bulk_depth = 0
_bulk_paused = False


@contextlib.contextmanager
def _gc_paused() -> Generator[None]:
    """Pause the cyclic garbage collector while an import or export runs.

    An import of 100,000 issues makes millions of objects, none of them in a reference
    cycle, and each of the collector's full passes walks all of them: a quarter of the
    client's time at 10,000 issues, more as it grows. Reference counting still frees
    everything; the collector runs again when the last bulk call ends (calls may overlap
    on one event loop, hence the depth), unless it was off before the first began.
    """
    global _bulk_depth, _bulk_paused
    if _bulk_depth == 0:
        _bulk_paused = gc.isenabled()
        if _bulk_paused:
            gc.disable()
    _bulk_depth += 1
    try:
        yield
    finally:
        _bulk_depth -= 1
        if _bulk_depth == 0 and _bulk_paused:
            _bulk_paused = False
            gc.enable()


def _bulk(call: Callable[P, CoroutineType[Any, Any, R]]) -> Callable[P, CoroutineType[Any, Any, R]]:
    """An import or export method, run with the garbage collector paused (:func:`_gc_paused`)."""

    @functools.wraps(call)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with _gc_paused():
            return await call(*args, **kwargs)

    return run


class ImportApi(Session):
    """Import and export: beads JSONL, and skift archives (a project moved whole)."""

    # -------------------------------------------------------- import and export

    @_bulk
    async def import_beads(
        self,
        data: str | Iterable[str],
        *,
        project: str,
        dry_run: bool = False,
        break_cycles: bool = False,
        skip_dangling: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> BeadsImport:
        """Import a beads export (the text of ``bd export``'s JSONL, or its lines) into a project.

        The project is created (with ``project`` as its slug) when absent. One
        transaction, all or nothing; a second import of the same export changes
        nothing, a newer one updates what changed (matched by beads id). See
        docs/migrating-from-beads.md for the mapping.
        """
        # JSON lines end at "\n" only: a string may hold U+2028 and the like unescaped
        lines = data.split("\n") if isinstance(data, str) else data
        issues = _beads.parse(lines)

        async def go(tx: Tx, a: Actor) -> BeadsImport:
            return await importer_import_beads(
                self.engine,
                tx,
                a,
                project,
                issues,
                dry_run=dry_run,
                break_cycles=break_cycles,
                skip_dangling=skip_dangling,
                progress=progress,
            )

        try:
            return await self._run(go, graph_lock=True)
        except DryRun as done:
            return done.result

    @_bulk
    async def export_beads(
        self, project: str, *, progress: Callable[[int, int], None] | None = None
    ) -> str:
        """A project as beads JSONL (``bd export``'s field names), one issue a line."""
        rows = await self._run(
            lambda tx, a: importer_export_beads(self.engine, tx, project, progress=progress)
        )
        return "".join(
            json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows
        )

    @_bulk
    async def export_archive(
        self, project: str, *, progress: Callable[[int, int], None] | None = None
    ) -> str:
        """A project with everything skift holds for it, as a skift archive (docs/archive.md):
        nodes, edges, comments with revisions, artifacts and their blobs' bytes, leases,
        usage, budgets, origins and events. Read in one transaction."""
        lines = await self._run(
            lambda tx, a: archive_export(self.engine, tx, self.store, project, progress=progress)
        )
        return "".join(lines)

    @_bulk
    async def import_archive(
        self,
        data: str | Iterable[str],
        *,
        project: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        map_authors: bool = False,
    ) -> ArchiveImport:
        """Write a skift archive as a new project of this organization (slug: ``project``,
        else the archive's), in one transaction, every id new; the answer maps old ids to new.
        A person's call (policy action ``import``).

        The imported history is the importer's: its events, results, comments, artifacts,
        leases and usage record the caller as the actor, and keep the author the archive
        names as imported text. ``map_authors`` (an admin's call) maps the archive's authors
        to this organization's principals of the same names instead, and says so in the
        import's event (docs/archive.md)."""
        lines = data.split("\n") if isinstance(data, str) else data
        manifest, records = parse_archive(lines)
        blobs = blob_bytes(records)

        async def go(tx: Tx, a: Actor) -> ArchiveImport:
            await self.engine.authorize(tx, a, [intent("import")])  # before any bytes are written
            for digest, raw in blobs:
                # held until the rows commit: a blob sweep leaves these bytes alone meanwhile
                await tx.lock_blob(digest)
                await self.store.blobs.put(digest, raw)  # bytes first: a row never lacks them
            return await archive_import(
                self.engine,
                tx,
                a,
                manifest,
                records,
                slug=project,
                progress=progress,
                map_authors=map_authors,
            )

        return await self._run(go, graph_lock=True)
