"""The filter of Ready, ClaimNext and ListNodes.

It lives apart from the engine so a client of a remote skift (the ``skift``
command line) builds one without loading the engine and its policy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs

from ._errors import Invalid
from ._models import AssigneeKind, Priority, Status


@attrs.frozen(kw_only=True)
class NodeFilter:
    """One filter for Ready, ClaimNext and ListNodes (references unresolved).

    ``status`` and ``held`` apply to ListNodes only; Ready and ClaimNext
    refuse them. ``agent_work``: only what an agent may take (``assignee_kind``
    agent or unset), whoever asks: a person's claim that must never take a
    gate (MCP's ``claim`` without a ref). An agent's Ready and ClaimNext are so
    anyway.
    """

    projects: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    any_labels: tuple[str, ...] = ()
    assignee_kind: AssigneeKind | None = None
    min_priority: Priority | None = None
    parent: str | None = None
    status: Status | None = None
    held: bool | None = None
    agent_work: bool = False

    def scope_hash(self) -> str:
        """A digest of the fields that define the scope, for the rotation cursor."""
        doc: dict[str, object] = {
            "projects": sorted(self.projects),
            "kinds": sorted(self.kinds),
            "labels": sorted(self.labels),
            "any_labels": sorted(self.any_labels),
            "assignee_kind": self.assignee_kind.value if self.assignee_kind else None,
            "min_priority": self.min_priority.value if self.min_priority else None,
            "parent": self.parent,
        }
        if self.agent_work:  # (absent when off: the cursors of existing filters stay)
            doc["agent_work"] = True
        import hashlib  # here: a client that only builds a filter need not load it

        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


def filter_from(
    projects: Sequence[str] = (),
    kinds: Sequence[str] = (),
    labels: Sequence[str] = (),
    any_labels: Sequence[str] = (),
    assignee_kind: AssigneeKind | str | None = None,
    min_priority: Priority | str | None = None,
    parent: str | None = None,
    status: Status | str | None = None,
    held: bool | None = None,
    agent_work: bool = False,
) -> NodeFilter:
    """The filter keywords of ``ready``, ``list_nodes`` and ``claim_next``, checked: the one
    reading of them (the remote client builds its filter with it too)."""
    try:
        return NodeFilter(
            projects=tuple(projects),
            kinds=tuple(kinds),
            labels=tuple(labels),
            any_labels=tuple(any_labels),
            assignee_kind=AssigneeKind(assignee_kind) if assignee_kind else None,
            min_priority=Priority(min_priority) if min_priority else None,
            parent=parent,
            status=Status(status) if status else None,
            held=held,
            agent_work=agent_work,
        )
    except ValueError as exc:
        raise Invalid(
            str(exc),
            next="assignee_kind is agent|user; min_priority p0..p4; status open|done|dropped.",
            field="filter",
        ) from None
