"""Who an in-process caller acts as: a name and a kind (``skift.User("ada")``)."""

from __future__ import annotations

import attrs

from ._models import PrincipalKind


@attrs.frozen
class PrincipalSpec:
    """Who an in-process caller acts as: a name and a kind."""

    name: str
    kind: PrincipalKind = PrincipalKind.USER


def User(name: str) -> PrincipalSpec:
    """A person."""
    return PrincipalSpec(name, PrincipalKind.USER)


def Agent(name: str) -> PrincipalSpec:
    """An AI agent or other automated worker."""
    return PrincipalSpec(name, PrincipalKind.AGENT)


def Service(name: str) -> PrincipalSpec:
    """A service acting on its own account (an orchestrator, a notifier)."""
    return PrincipalSpec(name, PrincipalKind.SERVICE)
