"""Where an imported node came from, and references by the id it had there.

An import (``skift._importer``) records one :class:`NodeOrigin` per node it
wrote: the source (``beads``), the external id (``bd-a1b2``) and what the
source said last. The external id is a node reference inside its project:
:func:`node_by_external_id` resolves it for ``skift show`` and ``skift
search``, in the project given or, with none, wherever exactly one project
of the organization has it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

import attrs

from ._errors import Invalid

if TYPE_CHECKING:
    from ._models import Node, Project
    from ._store import Tx


@attrs.frozen(kw_only=True)
class NodeOrigin:
    """One imported node: its source, its id there, and the source's last word (``extra``)."""

    node_id: UUID
    org_id: UUID
    project_id: UUID
    source: str
    external_id: str
    extra: Mapping[str, Any] = attrs.field(factory=dict[str, Any])


def looks_external(text: str) -> bool:
    """Could ``text`` be an external id (one word, no ``#``, no ``/``)?"""
    raw = text.strip()
    return bool(raw) and len(raw) <= 200 and not any(c.isspace() or c in "#/" for c in raw)


async def node_by_external_id(tx: Tx, text: str, project: Project | None) -> Node | None:
    """The node an external id names in ``project`` (or in the one project having it).

    None when no node has it; :class:`~skift.Invalid` when, with no project
    given, two projects have it.
    """
    if not looks_external(text):
        return None
    found = await tx.origins_by_external_id(text.strip())
    if project is not None:
        found = [o for o in found if o.project_id == project.id]
    if not found:
        return None
    if len({o.project_id for o in found}) > 1:
        projects = await tx.projects_by_id({o.project_id for o in found})
        slugs = ", ".join(sorted(p.slug for p in projects.values()))
        raise Invalid(
            f"{text.strip()!r} is an imported id in several projects ({slugs})",
            next="Name the project (-p/--project) it was imported into.",
        )
    return (await tx.nodes_by_id([found[0].node_id])).get(found[0].node_id)
