"""What ``/metrics`` reports, in the Prometheus text format.

One registry per server (never the process-global default, so two servers in
one test process do not collide):

- ``skift_rpc_requests_total{method,code}``: calls by method and outcome
  (``OK`` or the gRPC status name);
- ``skift_rpc_request_seconds{method}``: call latency;
- ``skift_rpc_in_flight``: calls being handled now;
- ``skift_claims_total``: leases taken (Claim and ClaimNext);
- ``skift_lease_expiries_total``: expired leases the sweeper recorded;
- ``skift_live_leases``: leases taken minus leases ended through this server
  (completes, releases, gates, expiries recorded here): an estimate per
  server, exact only when one server serves the database;
- ``skift_store_pool_connections{state}``: the PostgreSQL pool's size and
  idle connections (absent on the in-memory store);
- ``skift_up``: 1 while serving, 0 while draining;
- ``skift_webhook_deliveries{state}``: deliveries in the database by state
  (``pending``, ``delivered``, ``parked``), read when ``/metrics`` is asked;
- ``skift_webhook_oldest_pending_seconds``: how long the oldest pending
  delivery has waited (0 when none is pending);
- ``skift_webhook_attempts_total{outcome}``: this server's attempts by outcome
  (``delivered``, ``retry``, ``parked``), ``skift_webhook_attempt_seconds`` their
  duration;
- ``skift_webhook_oldest_parked_seconds``: how long ago the longest-parked
  delivery was parked (0 when none is);
- ``skift_table_bytes{table}``, ``skift_table_rows{table}``: each table's size
  with its indexes and PostgreSQL's row estimate (rows only, exact, in memory);
- ``skift_event_partitions``: partitions of the events table (0: one table);
- ``skift_prune_last_run_timestamp_seconds`` and
  ``skift_prune_last_removed{what}`` (``requests``, ``claim_cursors``, ``blobs``,
  ``blob_files``): the last
  prune run that removed (docs/operations.md, retention).
All of these but the attempt counters are read from the store when
``/metrics`` is asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 600)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _PoolCollector(Collector):
    def __init__(self, stats: Callable[[], dict[str, int] | None]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[GaugeMetricFamily]:
        stats = self._stats()
        if not stats:
            return
        g = GaugeMetricFamily(
            "skift_store_pool_connections",
            "PostgreSQL pool connections by state",
            labels=["state"],
        )
        for state, value in sorted(stats.items()):
            g.add_metric([state], value)
        yield g


class Metrics:
    def __init__(self, pool_stats: Callable[[], dict[str, int] | None] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "skift_rpc_requests", "gRPC calls by method and outcome", ["method", "code"], registry=r
        )
        self.latency = Histogram(
            "skift_rpc_request_seconds",
            "gRPC call latency by method",
            ["method"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge("skift_rpc_in_flight", "gRPC calls being handled", registry=r)
        # each call's children, looked up once: labels() validates and locks on every call
        self._counted: dict[tuple[str, str], Any] = {}
        self._timed: dict[str, Any] = {}
        self.claims = Counter("skift_claims", "leases taken through this server", registry=r)
        self.expiries = Counter(
            "skift_lease_expiries", "expired leases recorded by this server's sweeper", registry=r
        )
        self.live_leases = Gauge(
            "skift_live_leases",
            "leases taken minus leases ended through this server (an estimate per server)",
            registry=r,
        )
        self._live = 0
        self.up = Gauge("skift_up", "1 while serving, 0 while draining", registry=r)
        if pool_stats is not None:
            r.register(_PoolCollector(pool_stats))
        self.webhook_deliveries = Gauge(
            "skift_webhook_deliveries", "webhook deliveries by state", ["state"], registry=r
        )
        self.webhook_oldest_pending = Gauge(
            "skift_webhook_oldest_pending_seconds",
            "age of the oldest pending webhook delivery (0: none pending)",
            registry=r,
        )
        self.webhook_oldest_parked = Gauge(
            "skift_webhook_oldest_parked_seconds",
            "how long ago the longest-parked webhook delivery was parked (0: none parked)",
            registry=r,
        )
        self.table_bytes = Gauge(
            "skift_table_bytes", "a table's size with its indexes", ["table"], registry=r
        )
        self.table_rows = Gauge(
            "skift_table_rows", "a table's rows (PostgreSQL: the estimate)", ["table"], registry=r
        )
        self.event_partitions = Gauge(
            "skift_event_partitions", "partitions of the events table (0: one table)", registry=r
        )
        self.prune_last_run = Gauge(
            "skift_prune_last_run_timestamp_seconds",
            "when the last prune run that removed ran (0: never)",
            registry=r,
        )
        self.prune_last_removed = Gauge(
            "skift_prune_last_removed", "what the last prune run removed", ["what"], registry=r
        )
        self.webhook_attempts = Counter(
            "skift_webhook_attempts",
            "webhook delivery attempts by this server, by outcome",
            ["outcome"],
            registry=r,
        )
        self.webhook_attempt_seconds = Histogram(
            "skift_webhook_attempt_seconds",
            "webhook delivery attempt duration",
            buckets=_BUCKETS,
            registry=r,
        )

    def webhook_attempt(self, outcome: str, seconds: float) -> None:
        self.webhook_attempts.labels(outcome=outcome).inc()
        self.webhook_attempt_seconds.observe(seconds)

    def webhook_stats(self, pending: int, delivered: int, parked: int, oldest: float) -> None:
        self.webhook_deliveries.labels(state="pending").set(pending)
        self.webhook_deliveries.labels(state="delivered").set(delivered)
        self.webhook_deliveries.labels(state="parked").set(parked)
        self.webhook_oldest_pending.set(oldest)

    def observe(self, method: str, code: str, seconds: float) -> None:
        counted = self._counted.get((method, code))
        if counted is None:
            counted = self._counted[method, code] = self.requests.labels(method=method, code=code)
        timed = self._timed.get(method)
        if timed is None:
            timed = self._timed[method] = self.latency.labels(method=method)
        counted.inc()
        timed.observe(seconds)

    def lease_taken(self) -> None:
        self.claims.inc()
        self._live += 1
        self.live_leases.set(self._live)

    def lease_ended(self, n: int = 1) -> None:
        # Another server may have taken the lease this one saw end: never below zero.
        self._live = max(0, self._live - n)
        self.live_leases.set(self._live)

    def render(self) -> bytes:
        return generate_latest(self.registry)


def pool_stats_of(store: Any) -> Callable[[], dict[str, int] | None]:
    """Pool statistics of a store that has a psycopg pool, else a function returning None."""

    def stats() -> dict[str, int] | None:
        pool = getattr(store, "pool", None) or getattr(store, "_pool", None)
        get = getattr(pool, "get_stats", None)
        if get is None:
            return None
        raw: dict[str, int] = get()
        size = int(raw.get("pool_size", 0))
        idle = int(raw.get("pool_available", 0))
        return {"size": size, "idle": idle, "busy": max(0, size - idle)}

    return stats
