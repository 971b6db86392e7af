"""``skift sweep``: the ce-sweep state engine's command line (seed 002).

The ce-sweep skill's engine flags, parsed with argparse (so CLI misuse exits
2 with a usage line, as the skill's script does), dispatched to
``skift.sweep``: ``--state FILE`` runs on the file with no server, no
database and no network; ``--state skift:SLUG`` runs on project SLUG of the
server (``--server``, else ``SKIFT_SERVER``, the config file, the socket of
``skift serve``). Line 1 is the status word, line 2 the optional JSON
payload; every operational condition exits 0. ``skift_cli.main`` routes
``skift sweep …`` here before rich-click or the gRPC client is imported, so a
call per item stays cheap.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import skift
    from skift.sweep import Command, Outcome

PROJECT_PREFIX = "skift:"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skift sweep",
        description="The ce-sweep state engine: on a file (--state FILE) or a skift project "
        "(--state skift:SLUG). Prints a status word, then an optional JSON payload.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="SUBCOMMAND")

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help)
        sp.add_argument("--state", required=True, help="FILE, or skift:SLUG for a skift project")
        sp.add_argument("--server", metavar="URL", help="the skift server (server mode)")
        return sp

    cmd("read", "Print the whole state (NO-STATE when there is none).")
    cmd("validate", "Downgrade closed items lacking evidence to fix_pending.")
    up = cmd("upsert-item", "Merge an item's fields into <source>:<id> (needs the lease).")
    up.add_argument("--id", required=True)
    up.add_argument("--source", required=True)
    up.add_argument("--json", required=True, dest="item_json", metavar="JSON")
    up.add_argument("--writer", required=True)
    up.add_argument("--now")
    up.add_argument(
        "--lease",
        metavar="LEASE",
        help="server mode: your skift lease on the item's node (after claiming its work)",
    )
    cg = cmd("cursor-get", "Print a source's cursor.")
    cg.add_argument("--source", required=True)
    ca = cmd("cursor-advance", "Move a source's cursor forward past an item (needs the lease).")
    ca.add_argument("--source", required=True)
    ca.add_argument("--to", required=True)
    ca.add_argument("--past-item", required=True)
    ca.add_argument("--writer", required=True)
    ca.add_argument("--now")
    la = cmd("lease-acquire", "Take the sweep lease (OK, LOCKED or STALE-RECLAIMED).")
    la.add_argument("--writer", required=True)
    la.add_argument("--ttl-minutes", type=int, default=None)
    la.add_argument("--now")
    lr = cmd("lease-release", "Give the sweep lease back.")
    lr.add_argument("--writer", required=True)
    rr = cmd("run-record", "Record the run's outcome under last_run (no lease needed).")
    rr.add_argument("--writer", required=True)
    rr.add_argument(
        "--outcome", required=True, choices=("completed", "aborted-locked", "partial", "failed")
    )
    rr.add_argument("--counts", required=True)
    rr.add_argument("--timestamp", required=True)
    il = cmd("import-legacy", "Import an older sweep's cursors and items.")
    il.add_argument("--file", required=True)
    il.add_argument(
        "--source-map",
        help='JSON object from legacy channel id to source id, e.g. \'{"C42":"slack-alpha"}\'',
    )
    ex = cmd("export", "Server mode: write the state to FILE as file mode would.")
    ex.add_argument("--to", required=True, metavar="FILE")
    im = cmd("import", "Server mode: bring a state file into the project.")
    im.add_argument("--from", required=True, dest="from_file", metavar="FILE")
    cmd("nodes", "Server mode: each item's key and its node reference.")
    return p


def _command(ns: argparse.Namespace) -> Command:
    from skift.sweep import Command

    return Command(
        ns.cmd,
        id=getattr(ns, "id", None),
        source=getattr(ns, "source", None),
        item_json=getattr(ns, "item_json", None),
        writer=getattr(ns, "writer", None),
        now=getattr(ns, "now", None),
        to=getattr(ns, "to", None),
        past_item=getattr(ns, "past_item", None),
        ttl_minutes=getattr(ns, "ttl_minutes", None),
        outcome=getattr(ns, "outcome", None),
        counts=getattr(ns, "counts", None),
        timestamp=getattr(ns, "timestamp", None),
        file=getattr(ns, "file", None),
        source_map=getattr(ns, "source_map", None),
    )


def _show(out: Outcome, as_json: bool = False) -> int:
    if as_json:  # skift's --json: one document, {"status": WORD, "payload": ...}
        import json

        doc: dict[str, object] = {"status": out.word, "payload": out.payload}
        if out.error:
            doc["error"] = out.error
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        sys.stdout.write(out.text())
    sys.stdout.flush()
    if out.error:
        sys.stderr.write(f"skift sweep: {out.error}\n")
    return 0


def main(argv: Sequence[str], *, server: str | None = None, as_json: bool = False) -> int:
    """Run ``skift sweep ARGV``; returns the exit code (0 unless the command line is misused).

    ``as_json`` (skift's own ``--json``, given before ``sweep``, or as a bare
    ``--json`` to any subcommand but ``upsert-item``, whose ``--json`` is the
    item): the answer as one JSON document, ``{"status", "payload"}``.
    """
    import os

    argv = list(argv)
    positional = [a for a in argv if not a.startswith("-")]
    if "--json" in argv and positional[:1] != ["upsert-item"]:
        argv = [a for a in argv if a != "--json"]
        as_json = True
    parser = _parser()
    # arguments are UTF-8 whatever the locale (under LC_ALL=C Python decodes them as ASCII)
    ns = parser.parse_args([os.fsencode(a).decode("utf-8", "surrogateescape") for a in argv])
    state: str = ns.state
    if not state.startswith(PROJECT_PREFIX):
        if ns.cmd in ("export", "import", "nodes"):
            parser.error(f"{ns.cmd} needs --state skift:SLUG (a project); FILE is already a file")
        if getattr(ns, "lease", None):
            parser.error("--lease is a skift lease on an item's node: it needs --state skift:SLUG")
        from skift.sweep import FileState

        return _show(FileState(state).run(_command(ns)), as_json)
    slug = state[len(PROJECT_PREFIX) :].strip()
    if not slug:
        parser.error("--state skift:SLUG names no project")
    return _show(_on_server(ns, slug, ns.server or server), as_json)


def _server_url(given: str | None) -> str | None:
    import os

    if given:
        return given
    if os.environ.get("SKIFT_SERVER"):
        return os.environ["SKIFT_SERVER"]
    from . import _config

    try:
        return _config.load().get("server") or None
    except _config.ConfigError:
        return None


def _on_server(ns: argparse.Namespace, slug: str, server: str | None) -> Outcome:
    import asyncio

    from skift.sweep import Outcome

    async def go() -> Outcome:
        from typing import cast

        import skift_server
        from skift.sweep._project import ProjectState

        async with skift_server.connect(_server_url(server)) as sk:
            engine = ProjectState(cast("skift.Skift", sk), slug)
            if ns.cmd == "export":
                return await engine.export(ns.to)
            if ns.cmd == "import":
                return await engine.import_file(ns.from_file)
            if ns.cmd == "nodes":
                return await engine.nodes()
            return await engine.run(_command(ns), lease=getattr(ns, "lease", None))

    try:
        return asyncio.run(go())
    except Exception as exc:  # never a traceback: the word is ERROR, the reason on stderr
        return Outcome("ERROR", error=str(exc) or repr(exc))
