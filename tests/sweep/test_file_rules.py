"""Every rule of seed 002 on a state file, through ``skift sweep --state FILE``.

Words on line 1, payloads on line 2, the file's bytes: the compatibility
rule, the evidence downgrade, redaction, the lease (re-entry, LOCKED,
STALE-RECLAIMED, LEASE-LOST, an unparseable timestamp is live), monotonic
cursors, the lease-agnostic run record, the legacy import, CORRUPT never
overwritten, a file the caller does not own refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sweep_harness import NOW, Result, Sweep


def acquire(sweep: Sweep, s: str, writer: str = "w1", now: str = NOW, *more: str) -> Result:
    return sweep("lease-acquire", "--state", s, "--writer", writer, "--now", now, *more)


def upsert(
    sweep: Sweep, s: str, id: str, source: str, item: object, writer: str = "w1", now: str = NOW
) -> Result:
    return sweep(
        "upsert-item", "--state", s, "--id", id, "--source", source,
        "--writer", writer, "--now", now, "--json", json.dumps(item),
    )  # fmt: skip


def advance(
    sweep: Sweep, s: str, source: str, to: str, past: str, writer: str = "w1", now: str = NOW
) -> Result:
    return sweep(
        "cursor-advance", "--state", s, "--source", source, "--to", to,
        "--past-item", past, "--writer", writer, "--now", now,
    )  # fmt: skip


def read(sweep: Sweep, s: str) -> dict[str, object]:
    r = sweep("read", "--state", s)
    assert r.word == "OK"
    return r.payload


def cursor(sweep: Sweep, s: str, source: str) -> object:
    return sweep("cursor-get", "--state", s, "--source", source).payload["cursor"]


# ------------------------------------------------------------------ round trip


def test_upsert_then_read_round_trips_the_item_under_a_source_scoped_key(
    sweep: Sweep, state: str
) -> None:
    assert acquire(sweep, state).word == "OK"
    r = upsert(sweep, state, "100.5", "slack:C1", {"status": "ingested", "body": "hello"})
    assert (r.code, r.out) == (0, "OK\n")
    item = read(sweep, state)["items"]["slack:C1:100.5"]  # type: ignore[index]
    assert item == {"source": "slack:C1", "status": "ingested", "body": "hello", "id": "100.5"}


def test_the_same_id_under_two_sources_does_not_collide(sweep: Sweep, state: str) -> None:
    acquire(sweep, state)
    upsert(sweep, state, "123", "slack", {"body": "from slack"})
    upsert(sweep, state, "123", "gh", {"body": "from github"})
    items = read(sweep, state)["items"]
    assert items["slack:123"]["body"] == "from slack"  # type: ignore[index]
    assert items["gh:123"]["body"] == "from github"  # type: ignore[index]


def test_read_of_an_absent_or_empty_file_is_no_state(sweep: Sweep, state: str) -> None:
    r = sweep("read", "--state", state)
    assert (r.code, r.out) == (0, "NO-STATE\n")
    Path(state).write_text("\n  \n")
    assert sweep("read", "--state", state).out == "NO-STATE\n"


def test_the_file_is_written_byte_for_byte_in_the_yaml_subset(sweep: Sweep, state: str) -> None:
    acquire(sweep, state, "sweep-cron", NOW, "--ttl-minutes", "30")
    upsert(
        sweep,
        state,
        "1699999999.000100",
        "slack:C42",
        {
            "status": "acknowledged",
            "title": 'Ünïcode — and "quotes"\nnewline',
            "zeta": [3, {"b": 1, "a": None}],
            "alpha": {"nested": {"deep": 1.5, "flag": False}, "empty": {}},
            "verified_at": "",
            "url": "https://x/y",
        },
        "sweep-cron",
        "2026-07-02T12:05:00+00:00",
    )
    sweep(
        "run-record", "--state", state, "--writer", "sweep-cron", "--outcome", "completed",
        "--counts", '{"ingested": 5, "closed": 1}', "--timestamp", "2026-07-02T12:09:00+00:00",
    )  # fmt: skip
    assert (
        Path(state).read_bytes()
        == (
            "schema_version: 1\n"
            "lease:\n"
            '  writer: "sweep-cron"\n'
            '  timestamp: "2026-07-02T12:05:00+00:00"\n'
            "  ttl_minutes: 30\n"
            "sources: {}\n"
            "items:\n"
            '  "slack:C42:1699999999.000100":\n'
            '    source: "slack:C42"\n'
            '    status: "acknowledged"\n'
            '    title: "Ünïcode — and \\"quotes\\"\\nnewline"\n'
            '    url: "https://x/y"\n'
            '    verified_at: ""\n'
            "    alpha:\n"
            "      empty: {}\n"
            "      nested:\n"
            "        deep: 1.5\n"
            "        flag: false\n"
            '    id: "1699999999.000100"\n'
            '    zeta: [3, {"a": null, "b": 1}]\n'
            "last_run:\n"
            '  timestamp: "2026-07-02T12:09:00+00:00"\n'
            '  outcome: "completed"\n'
            '  writer: "sweep-cron"\n'
            "  counts:\n"
            "    closed: 1\n"
            "    ingested: 5\n"
        ).encode()
    )


# ------------------------------------------------------------------ compatibility rule


def test_an_id_keyed_merge_keeps_every_field_it_was_not_given(sweep: Sweep, state: str) -> None:
    acquire(sweep, state)
    upsert(sweep, state, "i1", "src", {"status": "ingested", "keep": "me", "weird": {"n": [1, 2]}})
    upsert(sweep, state, "i1", "src", {"status": "analyzed"})
    item = read(sweep, state)["items"]["src:i1"]  # type: ignore[index]
    assert item["status"] == "analyzed"
    assert item["keep"] == "me"
    assert item["weird"] == {"n": [1, 2]}


def test_unknown_keys_fields_and_statuses_survive_every_write(sweep: Sweep, state: str) -> None:
    Path(state).write_text(
        "schema_version: 1\n"
        'future_top: {"x": [1]}\n'
        "sources:\n"
        "  src:\n"
        '    cursor: "5"\n'
        '    region: "eu"\n'
        "items:\n"
        '  "src:1":\n'
        '    source: "src"\n'
        '    status: "some_future_status"\n'
        '    owner_team: "ux"\n'
    )
    acquire(sweep, state)
    upsert(sweep, state, "2", "src", {"status": "another_future_status"})
    sweep("validate", "--state", state)
    got = read(sweep, state)
    assert got["future_top"] == {"x": [1]}
    assert got["sources"] == {"src": {"cursor": "5", "region": "eu"}}
    assert got["items"]["src:1"] == {  # type: ignore[index]
        "source": "src",
        "status": "some_future_status",
        "owner_team": "ux",
    }
    assert got["items"]["src:2"]["status"] == "another_future_status"  # type: ignore[index]


def test_a_newer_schema_version_is_read_and_written_field_preservingly(
    sweep: Sweep, state: str
) -> None:
    Path(state).write_text('schema_version: 2\nnew_v2_map:\n  a: "b"\n')
    assert acquire(sweep, state).word == "OK"
    text = Path(state).read_text()
    assert text.startswith("schema_version: 2\n")
    assert 'new_v2_map:\n  a: "b"\n' in text


def test_a_file_without_schema_version_or_that_does_not_parse_is_corrupt_and_kept(
    sweep: Sweep, state: str
) -> None:
    for text in ("not yaml at all\n", 'items: {}\nsources: {}\n', 'schema_version: 1\nx: "open\n', "# only a comment\n"):  # fmt: skip
        Path(state).write_text(text)
        for argv in (
            ("read", "--state", state),
            ("validate", "--state", state),
            ("cursor-get", "--state", state, "--source", "s"),
            ("lease-acquire", "--state", state, "--writer", "w1"),
            ("lease-release", "--state", state, "--writer", "w1"),
            ("upsert-item", "--state", state, "--id", "1", "--source", "s", "--writer", "w1", "--json", "{}"),
            ("cursor-advance", "--state", state, "--source", "s", "--to", "1", "--past-item", "1", "--writer", "w1"),
            ("run-record", "--state", state, "--writer", "w1", "--outcome", "failed", "--counts", "{}", "--timestamp", NOW),
            ("import-legacy", "--state", state, "--file", state),
        ):  # fmt: skip
            r = sweep(*argv)
            assert (r.code, r.out) == (0, "CORRUPT\n"), (text, argv)
        assert Path(state).read_text() == text


def test_a_state_file_the_caller_does_not_own_is_refused(sweep: Sweep, state: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file away needs root")
    acquire(sweep, state)
    before = Path(state).read_bytes()
    os.chown(state, 65534, 65534)
    assert sweep("read", "--state", state).out == "CORRUPT\n"
    assert acquire(sweep, state).out == "CORRUPT\n"
    assert Path(state).read_bytes() == before


# ------------------------------------------------------------------ evidence rule


def test_validate_downgrades_a_closed_item_lacking_evidence(sweep: Sweep, state: str) -> None:
    acquire(sweep, state)
    upsert(sweep, state, "b", "s", {"status": "closed", "fix_ref": "#4", "verified_at": NOW})
    upsert(sweep, state, "a", "s", {"status": "closed", "fix_ref": "#4", "verified_merge_sha": "", "verified_at": NOW})  # fmt: skip
    upsert(
        sweep, state, "ok", "s",
        {"status": "closed", "fix_ref": "#42", "verified_merge_sha": "abc123", "verified_at": NOW},
    )  # fmt: skip
    r = sweep("validate", "--state", state)
    assert (r.word, r.payload) == ("OK", {"downgraded": ["s:a", "s:b"]})
    items = read(sweep, state)["items"]
    assert items["s:a"]["status"] == items["s:b"]["status"] == "fix_pending"  # type: ignore[index]
    assert items["s:ok"]["status"] == "closed"  # type: ignore[index]


def test_validate_writes_only_when_it_downgraded_and_is_ok_on_no_state(
    sweep: Sweep, state: str
) -> None:
    assert sweep("validate", "--state", state).payload == {"downgraded": []}
    assert not Path(state).exists()
    acquire(sweep, state)
    os.utime(state, (1, 1))
    assert sweep("validate", "--state", state).payload == {"downgraded": []}
    assert Path(state).stat().st_mtime == 1


# ------------------------------------------------------------------ redaction


def test_a_sensitive_item_loses_body_and_quote_and_keeps_the_rest(sweep: Sweep, state: str) -> None:
    acquire(sweep, state)
    upsert(sweep, state, "i1", "src", {"sensitive": True, "body": "secret", "quote": "hush", "title": "keep"})  # fmt: skip
    item = read(sweep, state)["items"]["src:i1"]  # type: ignore[index]
    assert item == {"source": "src", "sensitive": True, "title": "keep", "id": "i1"}
    assert b"secret" not in Path(state).read_bytes()
    # the flag stays on the item: a later upsert without it is redacted too
    upsert(sweep, state, "i1", "src", {"body": "again"})
    assert "body" not in read(sweep, state)["items"]["src:i1"]  # type: ignore[index,operator]


def test_a_source_flagged_sensitive_redacts_its_items(sweep: Sweep, state: str) -> None:
    Path(state).write_text(
        "schema_version: 1\n"
        f'lease:\n  writer: "w1"\n  timestamp: "{NOW}"\n  ttl_minutes: 60\n'
        '"sources":\n  "src1":\n    sensitive: true\n'
    )
    upsert(sweep, state, "i1", "src1", {"body": "secret", "quote": "hush", "title": "keep"})
    upsert(sweep, state, "i1", "other", {"body": "visible"})
    items = read(sweep, state)["items"]
    assert items["src1:i1"] == {"source": "src1", "title": "keep", "id": "i1"}  # type: ignore[index]
    assert items["other:i1"]["body"] == "visible"  # type: ignore[index]


# ------------------------------------------------------------------ lease


def test_a_live_lease_of_another_writer_is_locked(sweep: Sweep, state: str) -> None:
    assert acquire(sweep, state, "w1").out == "OK\n"
    before = Path(state).read_bytes()
    assert acquire(sweep, state, "w2", "2026-07-02T12:30:00+00:00").out == "LOCKED\n"
    assert Path(state).read_bytes() == before


def test_an_expired_lease_is_reclaimed_naming_the_previous_holder(sweep: Sweep, state: str) -> None:
    acquire(sweep, state, "w1", NOW)
    r = acquire(sweep, state, "w2", "2026-07-02T14:00:00Z")
    assert r.out == (
        'STALE-RECLAIMED\n{"previous_writer": "w1", "previous_timestamp": "' + NOW + '"}\n'
    )
    assert read(sweep, state)["lease"] == {
        "writer": "w2",
        "timestamp": "2026-07-02T14:00:00Z",
        "ttl_minutes": 60,
    }


def test_the_ttl_bounds_staleness_exactly(sweep: Sweep, state: str) -> None:
    acquire(sweep, state, "w1", NOW, "--ttl-minutes", "5")
    assert acquire(sweep, state, "w2", "2026-07-02T12:05:00+00:00").word == "LOCKED"
    assert acquire(sweep, state, "w2", "2026-07-02T12:05:01+00:00").word == "STALE-RECLAIMED"


def test_an_unparseable_lease_timestamp_is_live(sweep: Sweep, state: str) -> None:
    Path(state).write_text(
        'schema_version: 1\nlease:\n  writer: "w1"\n  timestamp: "yesterday-ish"\n  ttl_minutes: 1\n'
    )
    assert acquire(sweep, state, "w2", "2030-01-01T00:00:00+00:00").word == "LOCKED"
    acquire(sweep, state, "w1", NOW)
    assert acquire(sweep, state, "w2", "not a time").word == "LOCKED"


def test_reentrant_acquire_and_every_owned_write_restamp_the_lease(
    sweep: Sweep, state: str
) -> None:
    acquire(sweep, state, "w1", NOW)
    assert acquire(sweep, state, "w1", "2026-07-02T12:20:00+00:00").word == "OK"
    assert read(sweep, state)["lease"]["timestamp"] == "2026-07-02T12:20:00+00:00"  # type: ignore[index]
    upsert(sweep, state, "i1", "s", {}, "w1", "2026-07-02T12:40:00+00:00")
    assert read(sweep, state)["lease"]["timestamp"] == "2026-07-02T12:40:00+00:00"  # type: ignore[index]
    advance(sweep, state, "s", "7", "i1", "w1", "2026-07-02T12:50:00+00:00")
    assert read(sweep, state)["lease"]["timestamp"] == "2026-07-02T12:50:00+00:00"  # type: ignore[index]


def test_a_write_by_a_non_owner_is_lease_lost_and_writes_nothing(sweep: Sweep, state: str) -> None:
    assert upsert(sweep, state, "i1", "s", {}).out == "LEASE-LOST\n"  # no state, no lease
    acquire(sweep, state, "w1")
    upsert(sweep, state, "i1", "s", {"status": "ingested"})
    before = Path(state).read_bytes()
    assert upsert(sweep, state, "i1", "s", {"status": "HACKED"}, "intruder").out == "LEASE-LOST\n"
    assert advance(sweep, state, "s", "9", "i1", "intruder").out == "LEASE-LOST\n"
    assert sweep("lease-release", "--state", state, "--writer", "w2").out == "LEASE-LOST\n"
    assert Path(state).read_bytes() == before


def test_lease_release_frees_the_lease_for_another_writer(sweep: Sweep, state: str) -> None:
    assert sweep("lease-release", "--state", state, "--writer", "w1").out == "OK\n"
    assert not Path(state).exists()
    acquire(sweep, state, "w1")
    assert sweep("lease-release", "--state", state, "--writer", "w1").out == "OK\n"
    assert "lease" not in read(sweep, state)
    assert sweep("lease-release", "--state", state, "--writer", "w1").out == "OK\n"
    assert acquire(sweep, state, "w2").out == "OK\n"


def test_upsert_with_json_that_is_not_an_object_is_error(sweep: Sweep, state: str) -> None:
    acquire(sweep, state)
    before = Path(state).read_bytes()
    for text in ("[1, 2]", "not json", '"s"'):
        r = sweep("upsert-item", "--state", state, "--id", "1", "--source", "s", "--writer", "w1", "--json", text)  # fmt: skip
        assert (r.code, r.out) == (0, "ERROR\n")
        assert "--json" in r.err
    assert Path(state).read_bytes() == before


# ------------------------------------------------------------------ cursors


def test_cursors_advance_monotonically_past_recorded_items(sweep: Sweep, state: str) -> None:
    assert cursor(sweep, state, "s") is None
    acquire(sweep, state)
    upsert(sweep, state, "i1", "s", {})
    assert advance(sweep, state, "s", "200", "i1").out == "OK\n"
    assert cursor(sweep, state, "s") == "200"
    assert advance(sweep, state, "s", "100", "i1").out == "REFUSED\n"
    assert advance(sweep, state, "s", "300", "nope").out == "REFUSED\n"
    assert advance(sweep, state, "other", "1", "i1").out == "REFUSED\n"  # other:i1 is no item
    assert cursor(sweep, state, "s") == "200"
    assert advance(sweep, state, "s", "200", "i1").out == "OK\n"  # equal is fine
    assert cursor(sweep, state, "nope") is None


def test_digit_cursors_compare_as_numbers_others_as_strings(sweep: Sweep, state: str) -> None:
    acquire(sweep, state)
    upsert(sweep, state, "i1", "s", {})
    advance(sweep, state, "s", "9", "i1")
    assert advance(sweep, state, "s", "10", "i1").word == "OK"  # lexically "10" < "9"
    upsert(sweep, state, "i1", "t", {})
    advance(sweep, state, "t", "1699999999.000100", "i1")
    assert advance(sweep, state, "t", "1700000000.000001", "i1").word == "OK"
    assert advance(sweep, state, "t", "1699999999.999999", "i1").word == "REFUSED"


# ------------------------------------------------------------------ run record


def test_run_record_is_lease_agnostic(sweep: Sweep, state: str) -> None:
    acquire(sweep, state, "w1")
    r = sweep("run-record", "--state", state, "--writer", "w2", "--outcome", "aborted-locked", "--counts", "{}", "--timestamp", NOW)  # fmt: skip
    assert r.out == "OK\n"
    got = read(sweep, state)
    assert got["lease"]["writer"] == "w1"  # type: ignore[index]
    assert got["last_run"] == {"timestamp": NOW, "outcome": "aborted-locked", "writer": "w2", "counts": {}}  # fmt: skip


def test_run_record_counts_that_do_not_parse_are_empty(sweep: Sweep, state: str) -> None:
    sweep("run-record", "--state", state, "--writer", "w", "--outcome", "partial", "--counts", "{nope", "--timestamp", NOW)  # fmt: skip
    assert read(sweep, state)["last_run"]["counts"] == {}  # type: ignore[index]
    sweep("run-record", "--state", state, "--writer", "w", "--outcome", "completed", "--counts", '{"ingested": 3}', "--timestamp", "T2")  # fmt: skip
    assert read(sweep, state)["last_run"] == {"timestamp": "T2", "outcome": "completed", "writer": "w", "counts": {"ingested": 3}}  # fmt: skip


# ------------------------------------------------------------------ legacy import


def test_import_legacy_maps_channel_cursors_and_items(
    sweep: Sweep, state: str, tmp_path: Path
) -> None:
    legacy = tmp_path / "legacy.json"
    legacy.write_text(
        json.dumps(
            {
                "channels": {
                    "C111": {"last_processed_ts": "1699999999.000100"},
                    "C222": {"cursor": "1700000000.000200"},
                    "C333": {"note": "no cursor"},
                },
                "items": {
                    "C111:1699999999.000100": {"status": "acknowledged", "channel": "C111", "x": 1}
                },
            }
        )
    )
    r = sweep("import-legacy", "--state", state, "--file", str(legacy), "--source-map", '{"C222": "slack-beta"}')  # fmt: skip
    assert (r.word, r.payload) == ("OK", {"cursors_imported": 2, "items_imported": 1})
    got = read(sweep, state)
    assert got["sources"] == {"C111": {"cursor": "1699999999.000100"}, "slack-beta": {"cursor": "1700000000.000200"}}  # fmt: skip
    assert got["items"] == {"C111:1699999999.000100": {"source": "C111", "status": "acknowledged"}}


def test_import_legacy_takes_a_list_of_items_and_fills_only_absent_fields(
    sweep: Sweep, state: str, tmp_path: Path
) -> None:
    acquire(sweep, state)
    upsert(sweep, state, "1", "s", {"status": "analyzed"})
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps({"items": [{"id": "s:1", "status": "ingested", "title": "T"}, {"no": "id"}]}))  # fmt: skip
    assert sweep("import-legacy", "--state", state, "--file", str(legacy)).payload == {"cursors_imported": 0, "items_imported": 1}  # fmt: skip
    assert read(sweep, state)["items"]["s:1"] == {"source": "s", "status": "analyzed", "title": "T", "id": "1"}  # type: ignore[index]  # fmt: skip


def test_import_legacy_never_moves_a_cursor_back(sweep: Sweep, state: str, tmp_path: Path) -> None:
    acquire(sweep, state)
    upsert(sweep, state, "i1", "C111", {})
    advance(sweep, state, "C111", "1700000005.000000", "i1")
    legacy = tmp_path / "legacy.json"
    legacy.write_text(
        json.dumps({"channels": {"C111": {"last_processed_ts": "1699999999.000100"}}})
    )
    assert sweep("import-legacy", "--state", state, "--file", str(legacy)).payload == {"cursors_imported": 0, "items_imported": 0}  # fmt: skip
    assert cursor(sweep, state, "C111") == "1700000005.000000"


def test_import_legacy_never_fails_and_seeds_an_absent_state(
    sweep: Sweep, state: str, tmp_path: Path
) -> None:
    legacy = tmp_path / "legacy.bin"
    legacy.write_bytes(b"\x00\x01 not a legacy file at all")
    r = sweep("import-legacy", "--state", state, "--file", str(legacy))
    assert (r.code, r.word, r.payload) == (0, "OK", {"cursors_imported": 0, "items_imported": 0})
    assert Path(state).read_text() == "schema_version: 1\nsources: {}\nitems: {}\n"
    os.utime(state, (1, 1))
    sweep("import-legacy", "--state", state, "--file", str(tmp_path / "missing.json"))
    assert Path(state).stat().st_mtime == 1  # a no-op import writes nothing


# ------------------------------------------------------------------ misuse


@pytest.mark.parametrize(
    "argv",
    [
        (),
        ("frobnicate",),
        ("read",),
        ("upsert-item", "--state", "s.yml", "--id", "1"),
        ("run-record", "--state", "s.yml", "--writer", "w", "--outcome", "done", "--counts", "{}", "--timestamp", "T"),
        ("lease-acquire", "--state", "s.yml", "--writer", "w", "--ttl-minutes", "soon"),
        ("export", "--state", "s.yml", "--to", "x.yml"),
        ("read", "--state", "skift:"),
    ],
)  # fmt: skip
def test_misuse_exits_2_with_a_usage_line(sweep: Sweep, argv: tuple[str, ...]) -> None:
    r = sweep(*argv)
    assert r.code == 2
    assert r.out == ""
    assert "usage: skift sweep" in r.err


def test_a_skift_lease_is_refused_in_file_mode(sweep: Sweep, state: str) -> None:
    r = sweep("upsert-item", "--state", state, "--id", "1", "--source", "s", "--writer", "w", "--json", "{}", "--lease", "01J")  # fmt: skip
    assert r.code == 2
    assert "--lease" in r.err
