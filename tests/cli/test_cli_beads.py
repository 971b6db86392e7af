"""``skift import beads`` and ``skift export beads`` through a real ``skift serve``:
docs/migrating-from-beads.md's three commands, SURFACE.md's JSON and exit codes.

The exports are the hand-written files of tests/contract/beads and the
deterministic ones of ``bench.beads_gen``.
"""

from __future__ import annotations

import json
import re
import shlex
import uuid
from pathlib import Path

from beads_data import beads_gen
from cli_harness import Cli, assert_error

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "contract" / "beads"
GUIDE = ROOT / "docs" / "migrating-from-beads.md"
IMPORT_KEYS = {"project", "created", "updated", "unchanged", "nodes", "edges", "comments"}

EXPORT = """\
{"id":"bd-a1","title":"Pick an OAuth provider","status":"closed","priority":1,"issue_type":"task","created_at":"2025-10-01T09:00:00Z","updated_at":"2025-10-02T09:00:00Z","closed_at":"2025-10-02T09:00:00Z","close_reason":"Keycloak"}
{"id":"bd-a2","title":"Wire the callback","status":"open","priority":2,"issue_type":"feature","created_at":"2025-10-01T09:05:00Z","updated_at":"2025-10-01T09:05:00Z","dependencies":[{"issue_id":"bd-a2","depends_on_id":"bd-a1","type":"blocks"}],"comments":[{"author":"grace","text":"Mind the redirect URL.","created_at":"2025-10-01T10:00:00Z"}]}
{"id":"bd-a3","title":"Write the docs","status":"open","priority":3,"issue_type":"chore","created_at":"2025-10-01T09:10:00Z","updated_at":"2025-10-01T09:10:00Z","dependencies":[{"issue_id":"bd-a3","depends_on_id":"bd-a2","type":"blocks"}]}
"""


def slug(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:6]}"


def three_commands() -> list[list[str]]:
    """The console block under the guide's "From `bd export` to `skift ready`"."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## From `bd export` to `skift ready`", 1)[1]
    block = re.search(r"```console\n(.*?)```", section, re.S)
    assert block is not None, "the guide's first section has no console block"
    return [shlex.split(line[2:]) for line in block.group(1).splitlines() if line.startswith("$ ")]


def test_the_guide_goes_from_bd_export_to_skift_ready_in_three_commands(
    cli: Cli, tmp_path: Path
) -> None:
    commands = three_commands()
    assert len(commands) == 3
    (bd, *bd_args), importing, ready = commands
    assert bd == "bd"
    assert bd_args[0] == "export"
    out = Path(bd_args[bd_args.index("-o") + 1])
    (tmp_path / out).write_text(EXPORT)  # what `bd export -o issues.jsonl` wrote
    assert importing[:3] == ["skift", "import", "beads"]
    assert ready[:2] == ["skift", "ready"]
    p = slug("guide")
    swap = {"myproj": p, str(out): str(tmp_path / out)}
    importing = [swap.get(w, w) for w in importing[1:]]
    ready = [swap.get(w, w) for w in ready[1:]]
    said = cli.run(*importing).out
    assert f"imported 3 issues into {p}: 3 created" in said
    assert re.search(rf"bd-a2\s+{p}#2", said)
    shown = cli.run(*ready).out
    assert "Wire the callback" in shown
    assert "Write the docs" not in shown  # it waits on bd-a2
    page = cli.json(*ready)
    assert [n["ref"] for n in page["nodes"]] == [f"{p}#2"]


def test_import_answers_surface_json_and_twice_changes_nothing(cli: Cli, tmp_path: Path) -> None:
    p = slug("bd")
    path = tmp_path / "issues.jsonl"
    path.write_text(EXPORT)
    got = cli.json("import", "beads", str(path), "-p", p)
    assert set(got) >= IMPORT_KEYS | {"warnings"}
    assert (got["created"], got["updated"], got["unchanged"]) == (3, 0, 0)
    assert got["nodes"] == {"bd-a1": f"{p}#1", "bd-a2": f"{p}#2", "bd-a3": f"{p}#3"}
    assert (got["edges"], got["comments"], got["warnings"]) == (2, 1, [])
    again = cli.json("import", "beads", str(path), "-p", p)
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 3)
    assert again["nodes"] == got["nodes"]
    # a beads id is a reference: show and search find the node
    assert cli.json("show", "bd-a2", "-p", p)["ref"] == f"{p}#2"
    hits = cli.json("search", "bd-a3", "-p", p)["hits"]
    assert hits[0]["node"]["ref"] == f"{p}#3"
    comments = cli.json("comments", "bd-a2", "-p", p)["comments"]
    # the importer wrote it; the beads author stays text on the comment's first line
    assert comments[0]["body"].startswith("*Imported from beads: written by grace.*")
    assert comments[0]["created_at"][:19] == "2025-10-01T10:00:00"


def test_dry_run_and_stdin(cli: Cli) -> None:
    p = slug("dry")
    dry = cli.json("import", "beads", "-", "-p", p, "--dry-run", stdin=EXPORT)
    assert (dry["created"], dry["dry_run"]) == (3, True)
    assert cli.run("project", "show", p, expect=3)
    said = cli.run("import", "beads", "-", "-p", p, stdin=EXPORT).out
    assert f"next: skift ready -p {p}" in said


def test_bad_input_names_the_line_and_exits_per_surface(cli: Cli) -> None:
    p = slug("bad")
    bad = cli.run("import", "beads", str(DATA / "malformed.jsonl"), "-p", p, "--json", expect=2)
    err = assert_error(bad.err, "invalid")
    assert err["message"].startswith("line 3: not JSON")
    human = cli.run("import", "beads", str(DATA / "malformed.jsonl"), "-p", p, expect=2)
    assert "line 3" in human.err
    cycle = cli.run("import", "beads", str(DATA / "cyclic.jsonl"), "-p", p, "--json", expect=1)
    assert "bd-c1 -> bd-c2 -> bd-c1" in assert_error(cycle.err, "conflict")["message"]
    dangling = cli.run("import", "beads", str(DATA / "dangling.jsonl"), "-p", p, expect=2)
    assert "--skip-dangling" in dangling.err
    assert cli.run("project", "show", p, expect=3)  # nothing was written
    broken = cli.json("import", "beads", str(DATA / "cyclic.jsonl"), "-p", p, "--break-cycles")
    assert len(broken["warnings"]) == 3
    skipped = cli.run(
        "import", "beads", str(DATA / "dangling.jsonl"), "-p", slug("dang"), "--skip-dangling"
    )
    assert "warning: line 2: skipped bd-d2's blocks dependency on bd-gone" in skipped.err


def test_export_round_trips_through_a_fresh_project(cli: Cli, tmp_path: Path) -> None:
    one, two = slug("one"), slug("two")
    src = tmp_path / "src.jsonl"
    src.write_text(beads_gen.text(300, seed=4))
    cli.run("import", "beads", str(src), "-p", one, "--json")
    out = tmp_path / "out.jsonl"
    wrote = cli.json("export", "beads", "-p", one, "-o", str(out))
    assert (wrote["count"], wrote["path"]) == (300, str(out))
    lines = [json.loads(v) for v in out.read_text().splitlines()]
    original = {i["id"]: i for i in beads_gen.generate(300, seed=4)}
    assert [x["id"] for x in lines] == list(original)
    for x in lines:
        assert isinstance(x["priority"], int)
        assert (x["title"], x["status"]) == (
            original[x["id"]]["title"],
            original[x["id"]]["status"],
        )
    stdout = cli.run("export", "beads", "-p", one).out
    assert stdout == out.read_text()
    second = cli.json("import", "beads", str(out), "-p", two)
    assert second["created"] == 300
    ready_one = {
        n["ref"].split("#")[1] for n in cli.json("ready", "-p", one, "--limit", "500")["nodes"]
    }
    ready_two = {
        n["ref"].split("#")[1] for n in cli.json("ready", "-p", two, "--limit", "500")["nodes"]
    }
    assert ready_one == ready_two
    assert ready_one


def test_on_a_terminal_a_long_import_shows_a_bar(cli: Cli, tmp_path: Path) -> None:
    import os
    import pty
    import subprocess

    from cli_harness import SKIFT

    src = tmp_path / "big.jsonl"
    src.write_text(beads_gen.text(3000, seed=6))
    leader, follower = pty.openpty()
    env = cli.env()
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [str(SKIFT), "import", "beads", str(src), "-p", slug("tty")],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**env, "TERM": "xterm"},
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            got = os.read(leader, 65536)
        except OSError:
            break
        if not got:
            break
        seen += got
    assert proc.wait(timeout=60) == 0, seen
    os.close(leader)
    text = seen.decode(errors="replace")
    assert "uploading" in text  # the bar, on stderr (the terminal)
    assert "imported 3000 issues" in text
