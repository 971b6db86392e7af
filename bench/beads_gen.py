"""A deterministic generator of beads exports (``bd export`` JSONL) for tests and benchmarks.

Nothing here comes from a real beads database: the issues are made up from a
seed, shaped like what ``bd export`` writes (its field names and types),
with what real exports carry: epics with ``parent-child`` children,
``blocks`` dependencies, ``related`` and ``discovered-from`` ones, comments,
labels, priorities 0-4, statuses open / in_progress / blocked / closed /
deferred / tombstone and custom ones, design notes and acceptance criteria,
nanosecond timestamps, and fields skift has no place for (``estimated_minutes``,
``external_ref``, a nested field of a future version).

The wait relation it makes is acyclic: issues are laid out in an order where
an epic comes after its children, and a ``blocks`` dependency only points
back in that order. Run ``python -m bench.beads_gen N [SEED] > issues.jsonl``.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_WORDS = [
    "cache",
    "parser",
    "sync",
    "retry",
    "lease",
    "token",
    "graph",
    "index",
    "export",
    "import",
    "schema",
    "auth",
    "webhook",
    "queue",
    "worker",
    "budget",
    "config",
    "migration",
    "flaky",
    "test",
    "docs",
    "cli",
    "server",
    "client",
    "timeout",
    "deadlock",
    "search",
    "label",
    "comment",
    "epic",
    "release",
    "metrics",
    "log",
]
_AUTHORS = ("ada", "grace", "claude-agent", "codex-bot", "linus", "margaret")
_LABELS = ("backend", "frontend", "infra", "tech-debt", "security", "perf", "docs", "ux")
_STATUSES = (
    ("open", 45),
    ("closed", 33),
    ("in_progress", 7),
    ("blocked", 4),
    ("deferred", 4),
    ("tombstone", 3),
    ("review", 2),
    ("pinned", 2),
)
_TYPES = (("task", 50), ("bug", 25), ("feature", 15), ("chore", 10))
_EPOCH = datetime(2025, 3, 1, tzinfo=UTC)


def _pick(rng: random.Random, weighted: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([v for v, _ in weighted], weights=[w for _, w in weighted])[0]


def _time(at: datetime, rng: random.Random) -> str:
    """A Go ``time.Time`` as JSON: RFC 3339 with nanoseconds, sometimes an offset."""
    nanos = rng.randrange(1_000_000_000)
    if rng.random() < 0.3:
        shifted = (at - timedelta(hours=7)).replace(tzinfo=None)
        return shifted.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}-07:00"
    return at.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize()


def generate(n: int, seed: int = 7, prefix: str = "bd") -> list[dict[str, Any]]:
    """``n`` issues, the same for the same ``n`` and ``seed``."""
    rng = random.Random(seed)
    ids: set[str] = set()

    def new_id() -> str:
        while True:
            ident = f"{prefix}-" + "".join(rng.choice(_ALPHABET) for _ in range(4 + (n > 20000)))
            if ident not in ids:
                ids.add(ident)
                return ident

    # the layout: [children..., epic] groups and loose issues; waits only point backwards
    order: list[tuple[str, str | None, bool]] = []  # (id, parent, is_epic)
    while len(order) < n:
        if rng.random() < 0.08 and n - len(order) > 4:
            epic = new_id()
            kids = rng.randint(2, min(9, n - len(order) - 1))
            order.extend((f"{epic}.{k + 1}", epic, False) for k in range(kids))
            ids.update(f"{epic}.{k + 1}" for k in range(kids))
            order.append((epic, None, True))
        else:
            order.append((new_id(), None, False))
    order = order[:n]
    present = {i for i, _, _ in order}
    statuses = {ident: _pick(rng, _STATUSES) for ident, _, _ in order}
    out: list[dict[str, Any]] = []
    for k, (ident, parent, is_epic) in enumerate(order):
        created = _EPOCH + timedelta(minutes=rng.randrange(60 * 24 * 200))
        updated = created + timedelta(minutes=rng.randrange(60 * 24 * 30))
        status = statuses[ident]
        issue: dict[str, Any] = {
            "id": ident,
            "title": _sentence(rng, rng.randint(3, 9)),
            "description": "\n\n".join(
                _sentence(rng, rng.randint(8, 30)) + "." for _ in range(rng.randint(1, 3))
            ),
            "status": status,
            "priority": rng.choices(range(5), weights=(5, 20, 45, 20, 10))[0],
            "issue_type": "epic" if is_epic else _pick(rng, _TYPES),
            "created_at": _time(created, rng),
            "updated_at": _time(updated, rng),
        }
        if rng.random() < 0.2:
            issue["design"] = _sentence(rng, 20) + ".\n\n- " + _sentence(rng, 6)
        if rng.random() < 0.25:
            issue["acceptance_criteria"] = (
                "- [ ] " + _sentence(rng, 7) + "\n- [ ] " + _sentence(rng, 5)
            )
        if rng.random() < 0.1:
            issue["notes"] = _sentence(rng, 12) + "."
        if rng.random() < 0.5:
            issue["assignee"] = rng.choice(_AUTHORS)
        if rng.random() < 0.15:
            issue["estimated_minutes"] = rng.choice((15, 30, 60, 120, 480))
        if rng.random() < 0.05:
            issue["external_ref"] = f"gh-{rng.randrange(1, 5000)}"
        if rng.random() < 0.02:
            issue["x_future_field"] = {"nested": [1, "two", {"three": True}], "n": k}
        if status == "closed":
            issue["closed_at"] = _time(updated, rng)
            if rng.random() < 0.7:
                issue["close_reason"] = rng.choice(("Done", "Fixed in main", "Won't fix: obsolete"))
        if status == "tombstone":
            issue["deleted_at"] = _time(updated, rng)
            issue["deleted_by"] = rng.choice(_AUTHORS)
            issue["delete_reason"] = "duplicate"
            issue["original_type"] = issue["issue_type"]
        labels = rng.sample(_LABELS, rng.choice((0, 0, 1, 1, 2, 3)))
        if labels:
            issue["labels"] = sorted(labels)
        deps: list[dict[str, Any]] = []

        def dep(target: str, kind: str, deps: list[dict[str, Any]] = deps, me: str = ident) -> None:
            deps.append(
                {
                    "issue_id": me,
                    "depends_on_id": target,
                    "type": kind,
                    "created_at": _time(_EPOCH + timedelta(days=rng.randrange(200)), rng),
                    "created_by": rng.choice(_AUTHORS),
                }
            )

        if parent is not None and parent in present:
            dep(parent, "parent-child")
        if k > 0 and rng.random() < 0.35:
            # only back in the layout, never on its own epic (which waits on it)
            for _ in range(rng.randint(1, 3)):
                target = order[rng.randrange(max(0, k - 400), k)][0]
                if (
                    target != parent
                    and target != ident
                    and all(d["depends_on_id"] != target for d in deps)
                ):
                    dep(target, "blocks")
        if rng.random() < 0.08:
            other = order[rng.randrange(n)][0]
            if other != ident:
                dep(other, "related")
        if rng.random() < 0.04 and k > 0:
            dep(order[rng.randrange(k)][0], "discovered-from")
        if deps:
            issue["dependencies"] = deps
        if rng.random() < 0.3:
            at = created
            comments: list[dict[str, Any]] = []
            for c in range(rng.randint(1, 4)):
                at += timedelta(minutes=rng.randrange(1, 3000))
                comments.append(
                    {
                        "id": k * 10 + c + 1,
                        "issue_id": ident,
                        "author": rng.choice(_AUTHORS),
                        "text": _sentence(rng, rng.randint(4, 25)) + ".",
                        "created_at": _time(at, rng),
                    }
                )
            issue["comments"] = comments
        out.append(issue)
    return out


def lines(n: int, seed: int = 7, prefix: str = "bd") -> Iterator[str]:
    """The export as JSONL lines (compact JSON, as Go's encoder writes it)."""
    for issue in generate(n, seed, prefix):
        yield json.dumps(issue, ensure_ascii=False, separators=(",", ":"))


def text(n: int, seed: int = 7, prefix: str = "bd") -> str:
    return "".join(line + "\n" for line in lines(n, seed, prefix))


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    sys.stdout.write(text(count, seed))
