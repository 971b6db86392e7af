"""The row mappers derived from the records' types (``skift_pg._rows``) move every field.

No database: a record becomes its query parameters, those the row a query returns (the
parameters are the columns, the organization's id named ``org`` as the queries take it),
and the row the record again, equal field for field, for records with every optional
field set and with none; and each record class the store reads has a mapper whose
source names every one of its fields.
"""

from __future__ import annotations

import datetime as dt
import linecache
import uuid
from decimal import Decimal
from typing import Any

import attrs
import pytest

import skift
from skift_pg import _rows  # pyright: ignore[reportPrivateUsage]

NOW = dt.datetime(2026, 12, 3, 18, 0, tzinfo=dt.UTC)


def _id() -> uuid.UUID:
    return uuid.uuid4()


def _hold() -> skift.Hold:
    return skift.Hold(at=NOW, by=_id(), reason="parked", group=_id())


def _node(full: bool) -> skift.Node:
    return skift.Node(
        id=_id(),
        org_id=_id(),
        project_id=_id(),
        number=7,
        parent_id=_id() if full else None,
        kind="gate" if full else "task",
        title="t",
        body="b",
        status=skift.Status.DONE if full else skift.Status.OPEN,
        priority=skift.Priority.P0 if full else skift.Priority.P4,
        assignee_kind=skift.AssigneeKind.AGENT if full else None,
        assignee="a" if full else None,
        labels=("x", "y") if full else (),
        hold=_hold() if full else None,
        result="r" if full else None,
        context_id=_id(),
        created_by=_id(),
        created_at=NOW,
        updated_at=NOW,
    )


def _project(full: bool) -> skift.Project:
    return skift.Project(
        id=_id(),
        org_id=_id(),
        slug="s",
        title="t",
        node_counter=3,
        priority=skift.Priority.P1,
        vcs_url="u",
        archived_at=NOW if full else None,
        hold=_hold() if full else None,
        created_at=NOW,
        readers=(_id(),) if full else None,
    )


def _lease(full: bool) -> skift.Lease:
    return skift.Lease(
        id=_id(),
        org_id=_id(),
        node_id=_id(),
        holder=_id(),
        harness="h",
        agent_ref="a",
        session_ref="s",
        created_at=NOW,
        expires_at=NOW,
        ttl=dt.timedelta(minutes=5),
        on_behalf_of=_id() if full else None,
        released_at=NOW if full else None,
        release_reason=skift.ReleaseReason.PREEMPTED if full else None,
    )


def _comment(full: bool) -> skift.Comment:
    return skift.Comment(
        id=_id(),
        org_id=_id(),
        project_id=_id(),
        node_id=_id(),
        author_id=_id(),
        body="b",
        in_reply_to=_id() if full else None,
        created_at=NOW,
        edited_at=NOW if full else None,
        resolved_at=NOW if full else None,
        resolved_by=_id() if full else None,
    )


ROUND_TRIPS: list[tuple[Any, Any, Any]] = [
    (_node, _rows.node_params, _rows.node_from_row),
    (_project, _rows.project_params, _rows.project_from_row),
    (_lease, _rows.lease_params, _rows.lease_from_row),
    (_comment, _rows.comment_params, _rows.comment_from_row),
]


@pytest.mark.parametrize("full", [True, False], ids=["every-field", "no-optional"])
@pytest.mark.parametrize("case", ROUND_TRIPS, ids=lambda c: getattr(c, "__name__", ""))
def test_a_record_comes_back_from_its_row(case: tuple[Any, Any, Any], full: bool) -> None:
    make, params, from_row = case
    record = make(full)
    row = dict(params(record))
    row["org_id"] = row.pop("org")
    assert from_row(row) == record


def test_stored_forms_are_the_columns_types() -> None:
    """A priority is stored as its rank, a closed set as its word, a tuple as a list."""
    row = _rows.node_params(_node(True))
    assert row["priority"] == 0
    assert row["status"] == "done"
    assert row["assignee_kind"] == "agent"
    assert row["labels"] == ["x", "y"]
    assert row["held_reason"] == "parked"
    assert _rows.node_params(_node(False))["held_at"] is None


def test_a_comment_takes_its_revisions_beside_the_row() -> None:
    comment = _comment(True)
    row = dict(_rows.comment_params(comment))
    row["org_id"] = row.pop("org")
    revision = skift.Revision(body="old", author_id=_id(), at=NOW)
    assert _rows.comment_from_row(row, (revision,)).revisions == (revision,)


def test_the_read_only_records_map_every_column() -> None:
    """Records the store only reads: each field from the column of its name."""
    row: dict[str, Any] = {
        "org_id": _id(),
        "scope_id": _id(),
        "scope": "project",
        "budget": Decimal("1.5"),
        "cap": None,
        "updated_at": NOW,
    }
    assert _rows.budget_from_row(row) == skift.Budget(**row)
    mappers = {
        skift.Edge: _rows.edge_from_row,
        skift.Principal: _rows.principal_from_row,
        skift.IdentityInvite: _rows.invite_from_row,
        skift.Identity: _rows.identity_from_row,
        skift.Event: _rows.event_from_row,
        skift.UsageRecord: _rows.usage_from_row,
        skift.NodeOrigin: _rows.origin_from_row,
    }
    for cls, fn in mappers.items():
        src = "".join(linecache.getlines(fn.__code__.co_filename))
        for field in attrs.fields(cls):
            assert f"{field.name}=" in src, f"{cls.__name__}.{field.name}"
