"""The command line's surface, command by command: misuse exits 2 wherever skift's own
options stand, every command takes ``--json``, ``skift --help`` lists each command once,
and "did you mean" only for a slip.

In this process (``skift_cli._app.run``): nothing here needs a server, since a misused
command line is refused before anything connects.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from cli_harness import Cli
from test_cli_inprocess import _commands

from skift_cli._app import run

BOGUS = "--no-such-flag-h32"
# commands whose arguments another parser reads (skift-serve, skift-mcp, the sweep engine)
PASSED_ON = {"skift serve", "skift mcp", "skift sweep"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("SKIFT_PROJECT", "SKIFT_TOKEN", "SKIFT_SERVER"):
        # set, then removed: monkeypatch then restores the variable's first state at the end
        # even when a command run in process sets it (`skift -p x mcp` does, for skift-mcp)
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")


def _code(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run(list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def test_misuse_exits_2_for_every_command_whatever_the_order_of_global_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = "unix:///nonexistent/skift.sock"
    for path, _ in _commands():
        if path == "skift mcp":
            # it becomes the skift-mcp program (os.execve): in process it would replace
            # pytest; test_cli_first_minutes runs the same lines as processes
            continue
        words = path.split()[1:]
        lines = [
            [*words, BOGUS],
            ["--json", *words, BOGUS],
            ["--server", server, *words, BOGUS],
            ["-p", "x", "--json", "--server", server, *words, BOGUS],
            [*words, BOGUS, "--json"],
            [*words, "--json", "--server", server, BOGUS],
        ]
        for line in lines:
            code, _, err = _code(capsys, *line)
            assert code == 2, f"skift {' '.join(line)} exited {code}:\n{err}"
    # a command's own misuse, not only an unknown flag: the example
    for line in (
        ["sweep", "read"],
        ["--json", "sweep", "read"],
        ["--server", server, "sweep", "read"],
        ["sweep", "read", "--json"],
    ):
        code, _, err = _code(capsys, *line)
        assert code == 2, f"skift {' '.join(line)} exited {code}:\n{err}"


def test_every_command_takes_json() -> None:
    for path, cmd in _commands():
        if path in PASSED_ON:
            continue
        names = {p.name for p in cmd.params}
        assert "json" in names, f"{path} does not take --json"


def test_the_passed_on_commands_take_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state = str(tmp_path / "state.yaml")
    for line in (
        ["--json", "sweep", "read", "--state", state],
        ["sweep", "read", "--state", state, "--json"],
    ):
        code, out, err = _code(capsys, *line)
        assert code == 0, err
        assert json.loads(out) == {"status": "NO-STATE", "payload": None}
    code, out, _ = _code(capsys, "mcp", "config", "--json")
    assert code == 0
    assert Path(json.loads(out)["entry"]["command"]).is_absolute()
    code, out, _ = _code(capsys, "completion", "bash", "--json")
    assert code == 0
    assert json.loads(out)["shell"] == "bash"
    code, out, _ = _code(capsys, "demo", "--json")
    assert code == 0
    assert {n["title"] for n in json.loads(out)["nodes"]} >= {"Publish the docs site"}


def test_help_lists_each_command_once_in_its_section(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _code(capsys, "--help")
    assert code == 0
    listed = re.findall(r"^│ ([a-z][a-z-]*) ", out, re.M)
    top = {p.split()[1] for p, _ in _commands()}
    assert sorted(listed) == sorted(set(listed)), "a command is listed twice"
    assert set(listed) == top
    assert "Commands ─" not in out  # nothing left over outside the sections
    assert "skift init" not in out  # the tour never needs it


@pytest.mark.parametrize(
    ("typed", "suggested", "not_suggested"),
    [
        ("redy", "'ready'", None),
        ("lst", "'list'", None),
        ("claimm", "'claim'", None),
        ("undo", "skift reopen", "'unhold'?"),
        ("watch", "skift events --follow", "'patch'"),
        ("frobnicate", "skift --help", "Did you mean"),
    ],
)
def test_did_you_mean_only_for_a_slip(
    capsys: pytest.CaptureFixture[str], typed: str, suggested: str, not_suggested: str | None
) -> None:
    code, _, err = _code(capsys, typed)
    assert code == 2
    assert suggested in err
    if not_suggested:
        assert not_suggested not in err


def test_the_command_tree_is_loaded() -> None:
    assert any(isinstance(c, click.Command) for _, c in _commands())


def test_listings_at_60_columns_wrap_cleanly(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """At 60 columns every listing keeps every word of its titles (no column dropped or
    cut to an ellipsis) and no line runs past the edge."""
    import secrets

    from skift_cli import _render

    monkeypatch.setenv("SKIFT_SERVER", cli.server.url)
    monkeypatch.setenv("COLUMNS", "60")
    # the consoles are made once a process, at the width of their day: make them again
    monkeypatch.setattr(_render, "_out", None)
    monkeypatch.setattr(_render, "_err", None)
    title = f"Narrow terminals {secrets.token_hex(3)} with a project title that is long"
    code, out, err = _code(capsys, "project", "create", title, "--json")
    assert code == 0, err
    slug = json.loads(out)["slug"]
    node = "Recommend a provider for the login flow and its callback page"
    for args in (
        ["-p", slug, "create", node, "--body", "we need an OAuth provider"],
        ["-p", slug, "create", "Sign up", "--assignee-kind", "user"],
        ["comment", f"{slug}#1", "A comment about the provider choice"],
        ["claim", f"{slug}#2", "-q"],
    ):
        code, _, err = _code(capsys, *args)
        assert code == 0, err
    listings = {
        "search": ["search", "provider", "-p", slug],
        "leases": ["leases", "-p", slug],
        "project list": ["project", "list"],
        "ready": ["ready", "-p", slug],
        "list": ["list", "-p", slug],
        "comments": ["comments", f"{slug}#1"],
        "principal list": ["principal", "list"],
    }
    for name, args in listings.items():
        code, out, err = _code(capsys, *args)
        assert code == 0, f"{name}: {err}"
        for line in out.splitlines():
            assert len(line.rstrip()) <= 60, f"{name}: a line of {len(line)}:\n{out}"
        words = " ".join(w for w in out.split() if w not in ("│", "├──", "└──"))
        assert "…" not in out, f"{name} cut something short:\n{out}"
        expect = {
            "search": node,
            "leases": "Sign up",
            "project list": title,
            "ready": node,
            "list": node,
        }.get(name)
        if expect:
            assert expect in words, f"{name} lacks {expect!r}:\n{out}"
