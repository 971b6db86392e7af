"""Where an imported node came from, and references by the id it had there.

An import (``skift._importer``) records one :class:`NodeOrigin` per node it
wrote: the source (``beads``), the external id (``bd-a1b2``) and what the
source said last. The external id is a node reference inside its project:
:func:`node_by_external_id` resolves it for ``skift show`` and ``skift
search``, in the project given or, with none, wherever exactly one project
of the organization has it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._errors import Invalid
from ._models import NodeOrigin as NodeOrigin

if TYPE_CHECKING:
    from ._models import Node, Project
    from ._store import Tx


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
            next="Name the project it was imported into.",
            move={"do": "name_project", "ref": text.strip()},
            field="project",
        )
    return (await tx.nodes_by_id([found[0].node_id])).get(found[0].node_id)
