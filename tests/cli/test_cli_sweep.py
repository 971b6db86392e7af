"""``skift sweep --state skift:SLUG``: the installed command against a real server.

Two writers in two processes share one project: the sweep lease is one mutex
for both (LOCKED, then STALE-RECLAIMED by the TTL), and their concurrent item
writes serialize on the server's write lock and lose nothing. ``export``
writes the bytes file mode writes for the same sequence; ``import --from``
and ``nodes`` round the sweep between a file and the project.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from cli_harness import SKIFT, Cli

NOW = "2026-07-02T12:00:00+00:00"


def words(out: str) -> list[str]:
    return out.split()


def test_two_processes_share_one_sweep_lease_and_lose_no_write(cli: Cli, tmp_path: Path) -> None:
    state = f"skift:sweep-{uuid.uuid4().hex[:6]}"
    assert cli.run("sweep", "read", "--state", state).out == "NO-STATE\n"
    assert cli.run("sweep", "lease-acquire", "--state", state, "--writer", "w1", "--now", NOW).out == "OK\n"  # fmt: skip
    other = cli.run("sweep", "lease-acquire", "--state", state, "--writer", "w2", "--now", "2026-07-02T12:30:00+00:00")  # fmt: skip
    assert other.out == "LOCKED\n"

    def writer(name: str) -> subprocess.Popen[str]:
        script = "; ".join(
            f"{SKIFT} sweep upsert-item --state {state} --writer w1 --now {NOW} --source src --id {name}-{i} --json '{{\"status\": \"ingested\"}}'"
            for i in range(6)
        )  # fmt: skip
        return subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True, env=cli.env())  # fmt: skip

    procs = [writer("a"), writer("b")]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [words(o) for o in outs] == [["OK"] * 6, ["OK"] * 6]
    got = json.loads(cli.run("sweep", "read", "--state", state).out.split("\n")[1])
    assert set(got["items"]) == {f"src:{w}-{i}" for w in "ab" for i in range(6)}

    reclaimed = cli.run("sweep", "lease-acquire", "--state", state, "--writer", "w2", "--now", "2026-07-02T14:00:00+00:00")  # fmt: skip
    assert reclaimed.out == (
        'STALE-RECLAIMED\n{"previous_writer": "w1", "previous_timestamp": "' + NOW + '"}\n'
    )
    lost = cli.run("sweep", "upsert-item", "--state", state, "--writer", "w1", "--source", "src", "--id", "late", "--json", "{}")  # fmt: skip
    assert lost.out == "LEASE-LOST\n"


def test_export_import_and_nodes_round_a_sweep_between_file_and_project(
    cli: Cli, tmp_path: Path
) -> None:
    state = f"skift:sweep-{uuid.uuid4().hex[:6]}"
    file = str(tmp_path / "state.yml")
    steps = [
        ("lease-acquire", "--writer", "w1", "--now", NOW),
        ("upsert-item", "--writer", "w1", "--now", NOW, "--source", "slack:C1", "--id", "1", "--json", '{"status": "manual_stuck", "title": "Crash on save", "extra": {"k": [1]}}'),
        ("upsert-item", "--writer", "w1", "--now", NOW, "--source", "slack:C1", "--id", "2", "--json", '{"status": "closed"}'),
        ("cursor-advance", "--writer", "w1", "--now", NOW, "--source", "slack:C1", "--to", "10", "--past-item", "2"),
        ("validate",),
        ("run-record", "--writer", "w1", "--outcome", "completed", "--counts", '{"ingested": 2}', "--timestamp", NOW),
    ]  # fmt: skip
    for step in steps:
        on_file = cli.run("sweep", step[0], "--state", file, *step[1:])
        on_server = cli.run("sweep", step[0], "--state", state, *step[1:])
        assert on_file.out == on_server.out, step
    exported = tmp_path / "exported.yml"
    assert cli.run("sweep", "export", "--state", state, "--to", str(exported)).out.startswith(
        "OK\n"
    )
    assert exported.read_bytes() == Path(file).read_bytes()

    nodes = json.loads(cli.run("sweep", "nodes", "--state", state).out.split("\n")[1])
    assert set(nodes) == {"slack:C1:1", "slack:C1:2"}
    shown = cli.json("show", nodes["slack:C1:1"])
    assert (shown["title"], shown["assignee_kind"]) == ("Crash on save", "user")

    copy = f"skift:copy-{uuid.uuid4().hex[:6]}"
    imported = cli.run("sweep", "import", "--state", copy, "--from", file)
    assert imported.out == 'OK\n{"items": 2, "sources": 1}\n'
    again = tmp_path / "again.yml"
    cli.run("sweep", "export", "--state", copy, "--to", str(again))
    assert again.read_bytes() == Path(file).read_bytes()


def test_server_mode_failures_are_words_not_tracebacks(cli: Cli, tmp_path: Path) -> None:
    r = cli.run("sweep", "read", "--state", "skift:x", "--server", f"unix://{tmp_path}/none.sock")
    assert (r.code, r.out) == (0, "ERROR\n")
    assert "Traceback" not in r.err
    assert cli.run("sweep", "export", "--state", "skift:never-written", "--to", str(tmp_path / "x")).out == "NO-STATE\n"  # fmt: skip
