"""Structural ceilings: they stop one request from consuming the service.

Set high enough that ordinary work never meets them. Each is configurable per
store (``skift.open(url, limits=Limits(...))``); a request over one gets
:class:`~skift.LimitExceeded` naming the limit and its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

import attrs


@attrs.frozen(kw_only=True)
class Limits:
    ops_per_patch: int = 5000
    nodes_per_patch: int = 5000
    edges_per_patch: int = 10000
    title_chars: int = 500
    body_bytes: int = 64 * 1024
    result_bytes: int = 256 * 1024
    comment_bytes: int = 64 * 1024
    query_chars: int = 1000
    reason_chars: int = 2000
    request_id_chars: int = 200
    kind_chars: int = 100
    # how many levels a tree of parents may span: Explain and Ready walk it
    tree_depth: int = 100
    labels_per_node: int = 64
    label_chars: int = 100
    page_size: int = 500
    default_page_size: int = 50
    keep_set: int = 1000
    # how many parked nodes a Ready or List page counts for held_count before it
    # stops and reports "at least this many" (held_count_exact=False)
    held_count_bound: int = 100
    # artifacts and blobs (server-wide; see docs/results-artifacts-cost.md)
    inline_part_bytes: int = 64 * 1024
    blob_bytes: int = 3 * 1024 * 1024  # fits one gRPC message under the 4 MiB default
    artifacts_per_node: int = 100
    parts_per_artifact: int = 50
    artifact_metadata_bytes: int = 16 * 1024
    lease_ttl_ceiling: timedelta = timedelta(hours=1)
    lease_ttl_floor: timedelta = timedelta(seconds=1)
    lease_ttl_default: timedelta = timedelta(minutes=5)
    claim_wait_ceiling: timedelta = timedelta(minutes=10)
    # the change stream (docs/events.md): how long a cursor stays good after it
    # was handed out, and how long one watch_events may wait for an event
    event_replay_window: timedelta = timedelta(days=7)
    event_wait_ceiling: timedelta = timedelta(minutes=10)
    # long polls (ClaimNext or WatchEvents with a wait) one principal may have waiting at
    # once in one process; past it RESOURCE_EXHAUSTED, retry after a second
    long_polls_per_principal: int = 32
    statement_timeout: timedelta = timedelta(seconds=30)
    # retention of what is not audit (skift._retention, docs/operations.md): how long a
    # request id's result is kept for retries, and how long an unused claim cursor stays
    request_retention: timedelta = timedelta(days=30)
    claim_cursor_retention: timedelta = timedelta(days=90)
    # a blob no artifact names is swept once untouched (uploaded, or named by an artifact
    # being attached) this long: longer than any upload-then-attach takes
    blob_grace: timedelta = timedelta(days=1)
    # webhooks (docs/webhooks.md): endpoints per project, and whether an endpoint may
    # point at loopback or private addresses (skift serve --webhook-allow-private)
    webhooks_per_project: int = 20
    webhook_allow_private: bool = False
    # an organization's stored policy (skift._policy): the CPU time one evaluation may take
    # (plus 1% per write and restricted project in the request), and the worker processes
    # that evaluate such policies, each evaluation killed past ten times its budget
    policy_budget: timedelta = timedelta(milliseconds=100)
    policy_workers: int = 2


DEFAULT_LIMITS = Limits()


# The limits an organization may set: sizes of content, never the structural
# ceilings of a request (ops per patch, page size, lease times).
SIZE_LIMITS: tuple[str, ...] = (
    "body_bytes",
    "result_bytes",
    "comment_bytes",
    "inline_part_bytes",
    "blob_bytes",
    "artifacts_per_node",
    "parts_per_artifact",
    "artifact_metadata_bytes",
)


def effective(limits: Limits, own: Mapping[str, int]) -> Limits:
    """The server's limits lowered by an organization's own sizes."""
    lowered = {k: min(v, getattr(limits, k)) for k, v in own.items() if k in SIZE_LIMITS}
    return attrs.evolve(limits, **lowered) if lowered else limits
