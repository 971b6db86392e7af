"""The NodeFilter of a request as the keyword arguments of ``ready``, ``list_nodes`` and
``claim_next`` (the views themselves move through ``_convert_types``)."""

from __future__ import annotations

from typing import Any

from ._convert import enum_word
from ._proto.skift import v1


def filter_kwargs(m: v1.NodeFilter | None) -> dict[str, Any]:
    """A NodeFilter message as the keyword arguments of ``ready``/``list_nodes``/``claim_next``."""
    if m is None:
        return {}
    out: dict[str, Any] = {
        "projects": list(m.projects),
        "kinds": list(m.kinds),
        "labels": list(m.labels),
        "any_labels": list(m.any_labels),
    }
    words = {
        "assignee_kind": enum_word(m.assignee_kind, v1.AssigneeKind, "filter.assignee_kind"),
        "min_priority": enum_word(m.min_priority, v1.Priority, "filter.min_priority"),
        "status": enum_word(m.status, v1.NodeStatus, "filter.status"),
        "parent": m.parent,
        "held": m.held,
    }
    out.update({k: v for k, v in words.items() if v is not None})
    if m.agent_work:
        out["agent_work"] = True
    return out
