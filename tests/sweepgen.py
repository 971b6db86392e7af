"""Random ``skift sweep`` command sequences, for the file/project equivalence tests.

``commands(rng, n)`` draws n subcommands with the flags an orchestrator, a
connector and an analyzer would send: two writers, pinned ``--now`` times
(some past a TTL, one unparseable), items of known, unknown and closed-with or
-without-evidence statuses, sensitive items, nested unknown fields, JSON that
is not an object, cursor moves back and forth, run records, legacy imports.
``run_both`` runs a sequence on a file and on a project and returns what
differs (nothing, when the two backends agree).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from skift.sweep import STATUSES, Command
from skift.sweep._file import FileState
from skift.sweep._project import ProjectState

TIMES = (
    "2026-07-02T12:00:00+00:00",
    "2026-07-02T12:30:00+00:00",
    "2026-07-02T13:30:00Z",
    "2026-07-02T15:00:00",
    "not-a-time",
)
SOURCES = ("slack:C1", "gh", "mail")
IDS = ("1", "2", "9", "10", "1699999999.000100", "ä")
CURSORS = ("9", "10", "100", "1699999999.000100", "1700000000.000001", "abc")
LEGACY = json.dumps(
    {
        "channels": {"C1": {"last_processed_ts": "10"}, "gh": {"cursor": "abc"}},
        "items": [{"id": "legacy:1", "channel": "C1", "status": "acknowledged", "title": "old"}],
    }
)


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 2 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -3, 12345678901234567890, 1.5, -0.25, 1e21])
    if kind in (3, 4):
        return rng.choice(["", "x", 'with "quotes"', "line\nbreak", "Grüße 東京", "a: b", "#no"])
    if kind == 5:
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(["k", "b", "a", "x y", "1st"]): _json_value(rng, depth + 1) for _ in range(rng.randrange(3))}  # fmt: skip


def _item(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return rng.choice(["[1]", "nope", '"s"'])
    item: dict[str, Any] = {}
    if rng.random() < 0.9:
        item["status"] = rng.choice([*STATUSES, "closed", "closed", "future_status"])
    if item.get("status") == "closed" or rng.random() < 0.2:
        for f in ("fix_ref", "verified_merge_sha", "verified_at"):
            if rng.random() < 0.8:
                item[f] = rng.choice(["#42", "abc123", "2026-07-02T12:00:00Z", ""])
    for f in ("title", "url", "body", "quote"):
        if rng.random() < 0.4:
            item[f] = rng.choice(["Export is broken", "https://x.test/1", "secret text", ""])
    if rng.random() < 0.2:
        item["sensitive"] = rng.choice([True, False, "yes"])
    if rng.random() < 0.4:
        item["extra"] = _json_value(rng)
    return json.dumps(item)


def commands(rng: random.Random, n: int) -> list[Command]:
    out: list[Command] = []
    for _ in range(n):
        writer = rng.choice(["w1", "w1", "w2"])
        now = rng.choice(TIMES)
        source = rng.choice(SOURCES)
        name = rng.choice(
            ["upsert-item"] * 6
            + ["lease-acquire"] * 2
            + ["cursor-advance"] * 2
            + ["read", "validate", "cursor-get", "lease-release", "run-record", "import-legacy"]
        )
        if name == "upsert-item":
            cmd = Command(name, id=rng.choice(IDS), source=source, writer=writer, now=now, item_json=_item(rng))  # fmt: skip
        elif name == "lease-acquire":
            cmd = Command(name, writer=writer, now=now, ttl_minutes=rng.choice([None, 1, 60]))
        elif name == "cursor-advance":
            cmd = Command(name, source=source, to=rng.choice(CURSORS), past_item=rng.choice(IDS), writer=writer, now=now)  # fmt: skip
        elif name == "cursor-get":
            cmd = Command(name, source=source)
        elif name == "lease-release":
            cmd = Command(name, writer=writer)
        elif name == "run-record":
            cmd = Command(name, writer=writer, outcome=rng.choice(["completed", "aborted-locked", "partial", "failed"]), counts=rng.choice(['{"ingested": 2}', "{bad", "[1, 2]"]), timestamp=now)  # fmt: skip
        elif name == "import-legacy":
            cmd = Command(
                name, file="", source_map=rng.choice([None, '{"C1": "slack:C1"}', "{bad"])
            )
        else:
            cmd = Command(name)
        out.append(cmd)
    return out


def _fixed_clock() -> str:
    return "2026-07-02T12:10:00+00:00"


async def run_both(cmds: list[Command], project: ProjectState, directory: str) -> list[str]:
    """Run ``cmds`` on a file in ``directory`` and on ``project``; what differed, as lines."""
    legacy, path = _setup(directory)
    on_file = FileState(str(path), clock=_fixed_clock)
    project.clock = _fixed_clock
    diffs: list[str] = []
    for i, cmd in enumerate(cmds):
        if cmd.name == "import-legacy":
            cmd.file = str(legacy)
        a = on_file.run(cmd)
        b = await project.run(cmd)
        if a.text() != b.text():
            diffs.append(f"step {i} {cmd.name}: file {a.text()!r} project {b.text()!r} ({b.error})")
    exported = Path(directory, "exported.yml")
    got = await project.export(str(exported))
    return diffs + _compare(path, exported, got.word)


def _setup(directory: str) -> tuple[Path, Path]:
    legacy = Path(directory, "legacy.json")
    legacy.write_text(LEGACY, encoding="utf-8")
    return legacy, Path(directory, "state.yml")


def _compare(path: Path, exported: Path, word: str) -> list[str]:
    if path.exists():
        if path.read_bytes() != exported.read_bytes():
            return ["exported bytes differ from the file's"]
    elif word != "NO-STATE":
        return [f"the file is absent but export says {word}"]
    return []
