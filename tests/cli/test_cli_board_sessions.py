"""``skift board sessions`` and ``skift board sign-out --all`` (docs/board.md#sessions), and
``skift import --map-authors`` (docs/archive.md), through a real ``skift serve``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from cli_harness import Cli

import skift
import skift_server


def test_board_sessions_and_sign_out_all(cli: Cli) -> None:
    assert cli.json("board", "sessions") == {"sessions": []}
    assert "no board sessions" in cli.run("board", "sessions").out
    # the link still comes from `skift board` alone (this server serves no board: refused)
    refused = cli.run("board", "--json", expect=1)
    assert json.loads(refused.err)["error"]["code"] == "refused"
    assert cli.json("board", "sign-out", "--all") == {"ended": 0}
    assert "ended 0 board sessions" in cli.run("board", "sign-out", "--all").out
    usage = cli.run("board", "sign-out", expect=2)
    assert "--all" in usage.err


def test_import_map_authors_is_said_in_the_event(cli: Cli, tmp_path: Path) -> None:
    slug = f"authors-{uuid.uuid4().hex[:6]}"

    async def build(sk: skift_server.RemoteSkift) -> None:
        await sk.create_project("Authors", slug=slug)
        await sk.patch(slug, [skift.CreateNode(title="Work")])

    cli.api(build)
    path = tmp_path / "a.skift.jsonl"
    cli.json("export", "-p", slug, "-o", str(path))
    moved = cli.json("import", str(path), "-p", f"{slug}-m", "--map-authors")
    events = cli.json("events", "-p", moved["project"])["events"]
    (last,) = [e for e in events if e["op"] == "import_archive"]
    assert last["after"]["authors"] == "mapped by name"
