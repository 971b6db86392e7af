"""The adversary suite (issue 29): each attack against a real ``skift serve``.

``target`` is one server per test module (attacks that leave the server changed
get a module of their own), on a fresh database, with the ``bystanders`` and
``attackers`` organizations made (``adversary_harness.start_target``).
Every test here is marked ``adversary`` and ``pg``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from adversary_harness import Target, in_thread, start_target, stop_target

if TYPE_CHECKING:
    from collections.abc import Iterator


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "adversary" in item.nodeid.split("::")[0]:
            item.add_marker(pytest.mark.pg)


def target_flags(module: Any) -> tuple[str, ...]:
    """A module's extra ``skift serve`` flags: its ``SERVE_FLAGS``, if any."""
    return tuple(getattr(module, "SERVE_FLAGS", ()))


@pytest.fixture(scope="module")
def target(request: pytest.FixtureRequest, pg_session_databases: Any) -> Iterator[Target]:
    dsn = pg_session_databases.create()
    started = in_thread(start_target(dsn, *target_flags(request.module)))
    try:
        yield started
    finally:
        in_thread(stop_target(started))
