"""Structured logs: one line per event, as text or JSON (``--log-format json``).

Call sites pass the event's facts as ``extra={"fields": {...}}``; the text
format writes them as ``key=value`` after the message, the JSON format as
keys of the one object.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    value = getattr(record, "fields", None)
    return dict(value) if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownArgumentType]


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        doc.update(_fields(record))
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        line = f"{ts}Z {record.levelname.lower():<7} {record.name}: {record.getMessage()}"
        extra = _fields(record)
        if extra:
            line += " " + " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in extra.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(fmt: str = "text", level: str = "info") -> None:
    """Send every log record to stderr, one line each, in ``fmt`` (text or json)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # grpclib logs every cancelled or failed stream at INFO/ERROR with its own words;
    # the service logs what matters once, so keep grpclib to warnings.
    logging.getLogger("grpclib").setLevel(logging.WARNING)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
