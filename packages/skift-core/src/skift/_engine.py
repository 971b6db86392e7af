"""The engine: every rule of skift, one façade over the modules that hold them.

:class:`Engine` composes the concerns; each lives in its own module, and all of
them stand on the transaction context (``_context``: the actor, size checks,
policy intents, events, resolution of references):

- ``_patch`` and ``_patch_state``: patches (aliases, cascade, the cycle check);
- ``_work``: claims, leases and fencing; ``_reads``: get, ready, list, explain;
- ``_focus``: project holds and focus; ``_projects``; ``_principals``;
- the content rules, peers that depend only on the context: ``_comments``,
  ``_artifacts``, ``_usage``, ``_org_limits`` (called with the engine).

CONTRIBUTING.md maps every rule of the domain model to its module.
"""

from __future__ import annotations

from ._context import Actor as Actor
from ._context import check_vcs_url as check_vcs_url
from ._context import node_facts as node_facts
from ._context import ref_of as ref_of
from ._filter import NodeFilter as NodeFilter  # re-exported: it lived here
from ._focus import Focus
from ._patch import Patching
from ._patch_state import _find_cycle as _find_cycle  # pyright: ignore[reportPrivateUsage]
from ._principals import Principals
from ._projects import Projects
from ._reads import derived_ready as derived_ready
from ._reads import filter_from as filter_from
from ._secrets import token_digest as token_digest
from ._work import Work


class Engine(Patching, Work, Focus, Projects, Principals):
    """Every rule of skift, applied inside a store transaction."""
