"""The ce-sweep engine's rules, on a state held in memory (seed 002).

Each subcommand is a pure step: given the loaded state (absent, corrupt, or
the parsed document) and the command's flags, it answers a status word, an
optional JSON payload, and the whole new state when it writes one. Where the
state lives is the backends' business (``skift.sweep._file`` for the file,
``skift.sweep._project`` for a skift project); both run these same steps, so
both give the same words and payloads for the same sequence.

Rules (the seed, and what it leaves implicit as the skill's engine behaves):
the compatibility rule (unknown keys, fields and statuses survive every
write); the evidence rule (``validate`` downgrades an under-evidenced
``closed`` to ``fix_pending``); redaction (``body``/``quote`` dropped on an
upsert when the item or its source is sensitive); the single-writer lease
(re-entrant, LOCKED, STALE-RECLAIMED, LEASE-LOST, an unparseable timestamp is
live); monotonic cursors (digit-only cursors compare as numbers); the
lease-agnostic run-record; the best-effort legacy import.

One deliberate difference from the reference engine: a ``schema_version``
greater than 1 is written back as it was (the reference rewrote it to 1; the
seed says a newer file is read and written field-preservingly).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, cast

from ._yaml import parse_document

SCHEMA_VERSION = 1
DEFAULT_TTL_MINUTES = 60
EVIDENCE_FIELDS = ("fix_ref", "verified_merge_sha", "verified_at")
REDACTED_FIELDS = ("body", "quote")
OUTCOMES = ("completed", "aborted-locked", "partial", "failed")
STATUSES = (
    "ingested",
    "ack_deferred",
    "acknowledged",
    "needs_download",
    "needs_analysis",
    "manual_stuck",
    "analyzed",
    "in_plan",
    "fix_pending",
    "closed",
    "source_gone",
)
WORDS = ("OK", "NO-STATE", "CORRUPT", "LOCKED", "STALE-RECLAIMED", "LEASE-LOST", "REFUSED", "ERROR")
COMMANDS = (
    "read",
    "validate",
    "upsert-item",
    "cursor-get",
    "cursor-advance",
    "lease-acquire",
    "lease-release",
    "run-record",
    "import-legacy",
)
# The subcommands that read-modify-write: each runs under the backend's write
# lock (the flock on ``<state>.lock``, or the project's lock node).
MUTATING = frozenset(COMMANDS) - {"read", "cursor-get"}

State = dict[str, Any]
LoadStatus = Literal["absent", "corrupt", "ok"]


class Loaded:
    """What a backend found: ``absent``, ``corrupt``, or ``ok`` with the state."""

    __slots__ = ("state", "status")

    def __init__(self, status: LoadStatus, state: State | None = None) -> None:
        self.status: LoadStatus = status
        self.state = state


class Command:
    """One subcommand with the reference engine's flags (unset flags are None)."""

    __slots__ = (
        "counts",
        "file",
        "id",
        "item_json",
        "name",
        "now",
        "outcome",
        "past_item",
        "source",
        "source_map",
        "timestamp",
        "to",
        "ttl_minutes",
        "writer",
    )

    def __init__(
        self,
        name: str,
        *,
        id: str | None = None,
        source: str | None = None,
        item_json: str | None = None,
        writer: str | None = None,
        now: str | None = None,
        to: str | None = None,
        past_item: str | None = None,
        ttl_minutes: int | None = None,
        outcome: str | None = None,
        counts: str | None = None,
        timestamp: str | None = None,
        file: str | None = None,
        source_map: str | None = None,
    ) -> None:
        if name not in COMMANDS:
            raise ValueError(f"unknown sweep subcommand {name!r}")
        self.name = name
        self.id = id
        self.source = source
        self.item_json = item_json
        self.writer = writer
        self.now = now
        self.to = to
        self.past_item = past_item
        self.ttl_minutes = ttl_minutes
        self.outcome = outcome
        self.counts = counts
        self.timestamp = timestamp
        self.file = file
        self.source_map = source_map


class Outcome:
    """A subcommand's answer: the word, the payload (None: no line 2), the state to write."""

    __slots__ = ("error", "payload", "word", "write")

    def __init__(
        self,
        word: str,
        payload: dict[str, Any] | None = None,
        write: State | None = None,
        error: str | None = None,
    ) -> None:
        self.word = word
        self.payload = payload
        self.write = write
        self.error = error

    def text(self) -> str:
        """What the engine prints: the word, then the payload as JSON, each on its line."""
        if self.payload is None:
            return self.word + "\n"
        return f"{self.word}\n{json.dumps(self.payload)}\n"


def new_state() -> State:
    return {"schema_version": SCHEMA_VERSION, "sources": {}, "items": {}}


def state_from_text(text: str) -> Loaded:
    """Parse a state document; a file that fails to parse or lacks schema_version is corrupt."""
    if not text.strip():
        return Loaded("absent")
    try:
        data = parse_document(text)
    except Exception:
        return Loaded("corrupt")
    if "schema_version" not in data:
        return Loaded("corrupt")
    data.setdefault("sources", {})
    data.setdefault("items", {})
    return Loaded("ok", data)


def stamp_version(state: State) -> State:
    """Set schema_version before a write (a newer integer version is kept)."""
    current = state.get("schema_version")
    if not (isinstance(current, int) and not isinstance(current, bool) and current > 1):
        state["schema_version"] = SCHEMA_VERSION
    return state


def item_key(source: str, item_id: str) -> str:
    """The storage key of an item: source-scoped, so ids never collide across sources."""
    return f"{source}:{item_id}"


def cursor_lt(a: str, b: str) -> bool:
    """Does cursor ``a`` sort before ``b``? Digit-only cursors compare as numbers."""
    if a.isdigit() and b.isdigit():
        return int(a) < int(b)
    return a < b


def utc_now() -> str:
    return datetime.now(UTC).isoformat()


def _parse_iso(s: object) -> datetime | None:
    if not isinstance(s, str) or not s:
        return None
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt


def current_lease(state: State) -> dict[str, Any] | None:
    """The lease with a non-empty writer, or None."""
    lease = state.get("lease")
    if isinstance(lease, dict) and cast(dict[str, Any], lease).get("writer"):
        return cast(dict[str, Any], lease)
    return None


def lease_is_stale(lease: dict[str, Any], now_iso: str) -> bool:
    """True only when both timestamps parse and the lease is older than its TTL."""
    ts = _parse_iso(lease.get("timestamp", ""))
    now = _parse_iso(now_iso)
    if ts is None or now is None:
        return False
    try:
        ttl = int(lease.get("ttl_minutes", DEFAULT_TTL_MINUTES))
    except (TypeError, ValueError):
        ttl = DEFAULT_TTL_MINUTES
    return (now - ts).total_seconds() > ttl * 60


def is_sensitive(state: State, item: dict[str, Any], source: object) -> bool:
    """An item is redacted when it or its source entry says ``sensitive: true``."""
    if item.get("sensitive") is True:
        return True
    entry = state.get("sources", {}).get(source, {})
    return isinstance(entry, dict) and cast(dict[str, Any], entry).get("sensitive") is True


def redact(item: dict[str, Any]) -> None:
    for field in REDACTED_FIELDS:
        item.pop(field, None)


def evidenced(item: dict[str, Any]) -> bool:
    """Does a closed item carry all three evidence fields (each truthy)?"""
    return all(item.get(f) for f in EVIDENCE_FIELDS)


# ------------------------------------------------------------------ the steps

Clock = Callable[[], str]


def apply(cmd: Command, loaded: Loaded, clock: Clock = utc_now) -> Outcome:
    """Run one subcommand on the loaded state; an unexpected failure is ERROR."""
    try:
        return _STEPS[cmd.name](cmd, loaded, clock)
    except Exception as exc:
        return Outcome("ERROR", error=f"internal error: {exc!r}")


def _read(cmd: Command, loaded: Loaded, clock: Clock) -> Outcome:
    if loaded.status == "absent":
        return Outcome("NO-STATE")
    if loaded.status == "corrupt" or loaded.state is None:
        return Outcome("CORRUPT")
    return Outcome("OK", loaded.state)


def _validate(cmd: Command, loaded: Loaded, clock: Clock) -> Outcome:
    if loaded.status == "corrupt":
        return Outcome("CORRUPT")
    if loaded.status == "absent" or loaded.state is None:
        return Outcome("OK", {"downgraded": []})
    state = loaded.state
    downgraded: list[str] = []
    for key, item in state.get("items", {}).items():
        if not isinstance(item, dict):
            continue
        record = cast(dict[str, Any], item)
        if record.get("status") == "closed" and not evidenced(record):
            record["status"] = "fix_pending"
            downgraded.append(key)
    write = stamp_version(state) if downgraded else None
    return Outcome("OK", {"downgraded": sorted(downgraded)}, write)


def _owned(cmd: Command, loaded: Loaded) -> tuple[State | None, str | None]:
    if loaded.status == "corrupt":
        return None, "CORRUPT"
    state = loaded.state
    if loaded.status == "absent" or state is None:
        return None, "LEASE-LOST"
    lease = current_lease(state)
    if lease is None or lease.get("writer") != cmd.writer:
        return None, "LEASE-LOST"
    return state, None


def _restamp(state: State, cmd: Command, clock: Clock) -> Outcome:
    lease = state.get("lease")
    if isinstance(lease, dict) and cast(dict[str, Any], lease).get("writer") == cmd.writer:
        lease["timestamp"] = cmd.now or clock()
    return Outcome("OK", None, stamp_version(state))


def _upsert_item(cmd: Command, loaded: Loaded, clock: Clock) -> Outcome:
    state, err = _owned(cmd, loaded)
    if state is None:
        return Outcome(err or "LEASE-LOST")
    try:
        incoming = json.loads(cmd.item_json or "")
    except (ValueError, TypeError):
        return Outcome("ERROR", error="--json is not JSON")
    if not isinstance(incoming, dict):
        return Outcome("ERROR", error="--json is not a JSON object")
    source, item_id = str(cmd.source), str(cmd.id)
    items = state.setdefault("items", {})
    key = item_key(source, item_id)
    existing = items.get(key)
    merged: dict[str, Any] = dict(existing) if isinstance(existing, dict) else {}  # pyright: ignore[reportUnknownArgumentType]
    merged.update(cast(dict[str, Any], incoming))
    merged["source"] = source
    merged["id"] = item_id
    if is_sensitive(state, merged, source):
        redact(merged)
    items[key] = merged
    return _restamp(state, cmd, clock)


def _cursor_get(cmd: Command, loaded: Loaded, clock: Clock) -> Outcome:
    if loaded.status == "corrupt":
        return Outcome("CORRUPT")
    if loaded.status == "absent" or loaded.state is None:
        return Outcome("OK", {"cursor": None})
    entry = loaded.state.get("sources", {}).get(cmd.source, {})
    cursor = cast(dict[str, Any], entry).get("cursor") if isinstance(entry, dict) else None
    return Outcome("OK", {"cursor": cursor})


def _cursor_advance(cmd: Command, loaded: Loaded, clock: Clock) -> Outcome:
    state, err = _owned(cmd, loaded)
    if state is None:
        return Outcome(err or "LEASE-LOST")
    source = str(cmd.source)
    if item_key(source, str(cmd.past_item)) not in state.get("items", {}):
        return Outcome("REFUSED", error=f"no item {item_key(source, str(cmd.past_item))!r}")
    entry = state.setdefault("sources", {}).setdefault(source, {})
    current = entry.get("cursor")
    if current is not None and cursor_lt(str(cmd.to), str(current)):
        return Outcome("REFUSED", error=f"cursor {cmd.to!r} sorts before {current!r}")
    entry["cursor"] = cmd.to
    return _restamp(state, cmd, clock)


def _lease_acquire(cmd: Command, loaded: Loaded, clock: Clock) -> Outcome:
    if loaded.status == "corrupt":
        return Outcome("CORRUPT")
    state = loaded.state if loaded.status == "ok" and loaded.state is not None else new_state()
    now = cmd.now or clock()
    ttl = cmd.ttl_minutes if cmd.ttl_minutes is not None else DEFAULT_TTL_MINUTES
    lease = current_lease(state)
    if lease is None or lease.get("writer") == cmd.writer:
        state["lease"] = {"writer": cmd.writer, "timestamp": now, "ttl_minutes": ttl}
        return Outcome("OK", None, stamp_version(state))
    if lease_is_stale(lease, now):
        previous = {
            "previous_writer": lease.get("writer"),
            "previous_timestamp": lease.get("timestamp"),
        }
        state["lease"] = {"writer": cmd.writer, "timestamp": now, "ttl_minutes": ttl}
        return Outcome("STALE-RECLAIMED", previous, stamp_version(state))
    return Outcome("LOCKED")


def _lease_release(cmd: Command, loaded: Loaded, clock: Clock) -> Outcome:
    if loaded.status == "corrupt":
        return Outcome("CORRUPT")
    if loaded.status == "absent" or loaded.state is None:
        return Outcome("OK")
    state = loaded.state
    lease = current_lease(state)
    if lease is None:
        return Outcome("OK")
    if lease.get("writer") != cmd.writer:
        return Outcome("LEASE-LOST")
    state.pop("lease", None)
    return Outcome("OK", None, stamp_version(state))


def _run_record(cmd: Command, loaded: Loaded, clock: Clock) -> Outcome:
    if loaded.status == "corrupt":
        return Outcome("CORRUPT")
    state = loaded.state if loaded.status == "ok" and loaded.state is not None else new_state()
    try:
        counts = json.loads(cmd.counts or "")
    except (ValueError, TypeError):
        counts = {}
    state["last_run"] = {
        "timestamp": cmd.timestamp,
        "outcome": cmd.outcome,
        "writer": cmd.writer,
        "counts": counts,
    }
    return Outcome("OK", None, stamp_version(state))


def _import_legacy(cmd: Command, loaded: Loaded, clock: Clock) -> Outcome:
    if loaded.status == "corrupt":
        return Outcome("CORRUPT")
    absent = loaded.status == "absent" or loaded.state is None
    state = new_state() if loaded.state is None else loaded.state
    source_map: dict[str, str] = {}
    if cmd.source_map:
        try:
            parsed = json.loads(cmd.source_map)
        except (ValueError, TypeError):
            parsed = None
        if isinstance(parsed, dict):
            source_map = {str(k): str(v) for k, v in cast(dict[str, Any], parsed).items()}
    legacy = read_legacy(cmd.file or "")
    cursors = items = 0
    if isinstance(legacy, dict):
        cursors = _import_channels(cast(dict[str, Any], legacy), state, source_map)
        items = _import_items(cast(dict[str, Any], legacy), state)
    write = stamp_version(state) if absent or cursors or items else None
    return Outcome("OK", {"cursors_imported": cursors, "items_imported": items}, write)


def read_legacy(path: str) -> object:
    """An older sweep's state: JSON first, else this YAML subset; None when unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        return parse_document(raw)
    except Exception:
        return None


def _import_channels(legacy: dict[str, Any], state: State, source_map: dict[str, str]) -> int:
    channels = legacy.get("channels")
    if not isinstance(channels, dict):
        return 0
    sources = state.setdefault("sources", {})
    count = 0
    for chan_id, chan in cast(dict[str, Any], channels).items():
        if not isinstance(chan, dict):
            continue
        fields = cast(dict[str, Any], chan)
        cursor = fields.get("last_processed_ts") or fields.get("cursor")
        if cursor is None:
            continue
        entry = sources.setdefault(source_map.get(str(chan_id), str(chan_id)), {})
        current = entry.get("cursor")
        if current is not None and cursor_lt(str(cursor), str(current)):
            continue  # never move a cursor backwards
        entry["cursor"] = cursor
        count += 1
    return count


def _import_items(legacy: dict[str, Any], state: State) -> int:
    raw = legacy.get("items")
    items = state.setdefault("items", {})
    count = 0

    def add(item_id: object, fields: dict[str, Any]) -> int:
        if not item_id:
            return 0
        merged: dict[str, Any] = dict(items.get(str(item_id), {}))
        for k in ("status", "source", "channel", "title", "url"):
            if k in fields and fields[k] is not None:
                merged.setdefault("source" if k == "channel" else k, fields[k])
        items[str(item_id)] = merged
        return 1

    if isinstance(raw, dict):
        for item_id, fields in cast(dict[str, Any], raw).items():
            if isinstance(fields, dict):
                count += add(item_id, cast(dict[str, Any], fields))
    elif isinstance(raw, list):
        for entry in cast(list[Any], raw):
            if isinstance(entry, dict):
                fields = cast(dict[str, Any], entry)
                count += add(fields.get("id"), fields)
    return count


_STEPS: dict[str, Callable[[Command, Loaded, Clock], Outcome]] = {
    "read": _read,
    "validate": _validate,
    "upsert-item": _upsert_item,
    "cursor-get": _cursor_get,
    "cursor-advance": _cursor_advance,
    "lease-acquire": _lease_acquire,
    "lease-release": _lease_release,
    "run-record": _run_record,
    "import-legacy": _import_legacy,
}
