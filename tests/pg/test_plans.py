"""Which statements PostgreSQL plans for each call's values (skift_pg._queries.custom_planned)."""

from __future__ import annotations

from skift_pg._queries import custom_planned, queries  # pyright: ignore[reportPrivateUsage]


def test_the_queries_with_optional_filters_are_planned_for_their_values() -> None:
    """A generic plan of Ready or ClaimNext cannot see which half of "no projects given, or
    project_id = ANY (...)" applies (measured 100x slower): those are never prepared."""
    by_text = {sql.encode(): name for name, sql in queries().items()}
    custom = {by_text[text] for text in custom_planned()}
    assert {"ready_heads", "lock_next_ready", "list_nodes", "held_count", "search"} <= custom
    assert "take_next_ready" in custom
    assert {"events_after", "deliveries", "endpoints"} <= custom


def test_the_simple_statements_are_prepared() -> None:
    """Everything else may be planned once per connection (planning was half of
    PostgreSQL's CPU per claim + complete)."""
    by_text = {sql.encode(): name for name, sql in queries().items()}
    custom = {by_text[text] for text in custom_planned()}
    hot = {"insert_event_announced", "derive", "get_cursor", "insert_lease", "node_by_number"}
    # a ClaimNext of any work and a complete's reads sent ahead (issue 31)
    hot |= {"take_next_ready_any", "claim_reads", "derive_by_number", "complete_reads"}
    hot |= {"unreleased_lease_of_claimed", "authors_of_claim"}
    assert not hot & custom
