"""The ce-sweep state engine (seed 002): its rules, on a file or on a skift project.

It lives in skift-core, beside the rules of the work graph, because it is a
rule set users rely on byte for byte (the skill's state file), and because its
second backend is a client of the public :class:`skift.Skift` API. The rules
(``_rules``) and the YAML subset (``_yaml``) use only the standard library, and
importing this package loads neither the engine, the stores nor the gRPC
client, so ``skift sweep --state FILE`` starts as fast as the skill's own
script. The project backend (``skift.sweep._project``) is imported only when a
state lives in a project.

    from skift.sweep import Command, FileState
    out = FileState("sweep-state.yml").run(Command("read"))
    print(out.word, out.payload)
"""

from __future__ import annotations

from ._file import FileState
from ._rules import (
    COMMANDS,
    DEFAULT_TTL_MINUTES,
    EVIDENCE_FIELDS,
    MUTATING,
    OUTCOMES,
    SCHEMA_VERSION,
    STATUSES,
    WORDS,
    Command,
    Loaded,
    Outcome,
    apply,
    cursor_lt,
    item_key,
)
from ._yaml import emit_document, parse_document

__all__ = [
    "COMMANDS",
    "DEFAULT_TTL_MINUTES",
    "EVIDENCE_FIELDS",
    "MUTATING",
    "OUTCOMES",
    "SCHEMA_VERSION",
    "STATUSES",
    "WORDS",
    "Command",
    "FileState",
    "Loaded",
    "Outcome",
    "apply",
    "cursor_lt",
    "emit_document",
    "item_key",
    "parse_document",
]
