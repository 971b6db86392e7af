"""The command line run in this process (``skift_cli._app.run``), against the shared server.

Parsing, defaults, usage errors, completion, the docs and the smaller
commands: what the acceptance tests do not need a fresh process for.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from cli_harness import PAGE_KEYS, Cli, assert_node, assert_patch

from skift_cli._app import cli as root
from skift_cli._app import load_all, run

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
GLOBAL_OPTIONS = {"--project", "--json", "--server", "--help"}


class Ran:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> Any:
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"<exit {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}>"


Run = Callable[..., Ran]


@pytest.fixture
def sk(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Run:
    for var in ("SKIFT_PROJECT", "SKIFT_TOKEN", "SKIFT_SERVER"):
        # set, then removed: monkeypatch then restores the variable's first state at the end
        # even when a command run in process sets it (`skift -p x mcp` does, for skift-mcp)
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    monkeypatch.setenv("SKIFT_SERVER", cli.server.url)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")

    def go(*args: str, expect: int | None = 0) -> Ran:
        capsys.readouterr()
        code = run(list(args))
        got = capsys.readouterr()
        ran = Ran(code, got.out, got.err)
        if expect is not None:
            assert code == expect, ran
        return ran

    return go


def _commands() -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []

    def walk(cmd: click.Command, path: str) -> None:
        if isinstance(cmd, click.Group):
            if cmd.invoke_without_command and path != "skift":
                out.append((path, cmd))  # a command of its own too (`skift board`)
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}")
        else:
            out.append((path, cmd))

    load_all()
    walk(root, "skift")
    return out


def _runs(line: str, path: str) -> bool:
    """Whether a ``$ …`` example line runs the command ``path`` (global options may come first)."""
    if not line.startswith("$ "):
        return False
    words = line[2:].split()
    starts = [i for i, w in enumerate(words) if w == "skift" or w.endswith("$(skift")]
    for i in starts:
        rest = words[i + 1 :]
        while rest and rest[0] in ("-p", "--project", "--server", "--json"):
            rest = rest[1:] if rest[0] == "--json" else rest[2:]
        if rest[: len(path.split()) - 1] == path.split()[1:]:
            return True
    return False


def test_docs_cover_every_command_and_flag() -> None:
    text = DOC.read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### `(skift[^`]*)`\n(.*?)(?=^### |^## |\Z)", text, re.M | re.S))
    for path, cmd in _commands():
        assert path in sections, f"docs/cli.md has no section for {path}"
        body = sections[path]
        assert any(_runs(line, path) for line in body.splitlines()), f"{path} has no example"
        for param in cmd.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--") and opt not in GLOBAL_OPTIONS:
                    assert opt in body, f"docs/cli.md: {path} does not mention {opt}"
    assert set(sections) == {p for p, _ in _commands()}, "a section documents no command"


def test_every_command_has_help(sk: Run) -> None:
    for path, _ in _commands():
        words = path.split()[1:]
        if words[0] in ("serve", "mcp", "sweep"):
            continue  # their help is the delegate's (argparse), checked below
        assert "Usage:" in sk(*words, "--help").out


def test_global_options_before_or_after_the_subcommand(cli: Cli, sk: Run) -> None:
    p, _ = cli.project("globals", "one")
    before = sk("-p", p, "--json", "ready").json()
    after = sk("ready", "-p", p, "--json").json()
    assert before == after
    assert set(before) == PAGE_KEYS
    assert [n["project"] for n in before["nodes"]] == [p]
    # --server after the subcommand too
    sk("ready", "--server", "unix:///nonexistent.sock", expect=4)


def test_defaults_come_from_flags_then_environment_then_the_config_file(
    cli: Cli, sk: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    a, _ = cli.project("config a", "a one")
    b, _ = cli.project("config b", "b one")
    monkeypatch.delenv("SKIFT_SERVER")
    written = sk("init", "--server", cli.server.url, "-p", a, "--output", "json", "--no-input")
    config = tmp_path / "config" / "skift" / "config.toml"
    assert str(config) in written.out
    assert f'project = "{a}"' in config.read_text()

    # config: server, project and JSON output
    assert {n["project"] for n in sk("ready").json()["nodes"]} == {a}
    monkeypatch.setenv("SKIFT_PROJECT", b)  # the environment wins over the file
    assert {n["project"] for n in sk("ready").json()["nodes"]} == {b}
    assert {n["project"] for n in sk("ready", "-p", a).json()["nodes"]} == {a}  # the flag wins
    config.write_text("project = [broken")
    assert "config.toml" in sk("ready", expect=2).err


def test_usage_errors_exit_2_with_a_json_error(cli: Cli, sk: Run) -> None:
    p, (ref,) = cli.project("usage", "one")
    for args in (
        ["drop", ref, "--reason", "x", "--cascade"],  # a cascade states its bound
        ["drop", ref, "--reason", "x", "--max-nodes", "3"],
        ["create", "orphan"],  # no project anywhere
        ["focus", "--reason", "x"],  # nothing to keep
        ["claim", ref, "--wait", "1m"],
        ["claim", "--ttl", "soon"],
        ["release", ref, "--lease", "L", "--reason", "bored"],
        ["hold", "--reason", "no target"],
        ["show", "#1", "-p", p, "-p", "another"],
    ):
        got = sk(*args, "--json", expect=2)
        err = json.loads(got.err)["error"]
        assert err["code"] == "invalid", args
        assert err["message"]


def test_project_commands(sk: Run) -> None:
    made = sk("project", "create", "Inproc project", "--priority", "p1", "--json").json()
    slug = made["slug"]
    assert made["priority"] == "p1"
    listed = sk("project", "list", "--json").json()["projects"]
    assert slug in [p["slug"] for p in listed]
    assert "Inproc project" in sk("project", "show", slug).out
    renamed = sk("project", "rename", slug, "Renamed", "--slug", f"{slug}-x", "--json").json()
    assert renamed["slug"] == f"{slug}-x"
    assert sk("project", "show", slug, "--json").json()["title"] == "Renamed"  # old slug resolves
    assert sk("project", "archive", f"{slug}-x", "--json").json()["archived"] is True
    assert slug not in sk("project", "list").out


def test_project_restrict_and_unrestrict(sk: Run) -> None:
    slug = sk("project", "create", "Inproc private", "--json").json()["slug"]
    sk("principal", "add", "inproc-reader", "--kind", "user")
    got = sk(
        "project", "restrict", slug, "--reader", "inproc-reader", "--reason", "private", "--json"
    ).json()
    assert got["readers"][-1] == "inproc-reader"
    assert len(got["readers"]) == 2  # the person restricting is always a reader
    assert "inproc-reader" in sk("project", "show", slug).out
    no_reason = sk("project", "unrestrict", slug, expect=2)
    assert "--reason" in no_reason.err
    assert sk("project", "unrestrict", slug, "--reason", "public").out.strip() == (
        f"unrestricted {slug}"
    )
    assert sk("project", "show", slug, "--json").json()["readers"] is None
    again = sk("project", "unrestrict", slug, "--reason", "twice", "--json", expect=1)
    assert json.loads(again.err)["error"]["code"] == "refused"


def test_create_show_drop_reopen_release(cli: Cli, sk: Run, tmp_path: Path) -> None:
    p, _ = cli.project("lifecycle")
    body = tmp_path / "body.md"
    body.write_text("the **prompt**")
    first = sk(
        "create", "First", "-p", p, "--kind", "spike", "--priority", "p1", "--label", "x",
        "--body-file", str(body), "--json",
    ).json()  # fmt: skip
    assert_patch(first)
    ref = first["nodes"][0]["ref"]
    second = sk("create", "Second", "-p", p, "--blocked-by", ref, "--json").json()["nodes"][0]
    shown = sk("show", ref, "--json").json()
    assert_node(shown)
    assert (shown["kind"], shown["priority"], shown["labels"], shown["body"]) == (
        "spike", "p1", ["x"], "the **prompt**",
    )  # fmt: skip
    assert "the **prompt**" in sk("show", "#1", "-p", p).out
    # show names who wrote the body (here: the person running the command line)
    assert (shown["body_author_kind"], shown["result_author"]) == ("user", None)
    assert re.search(rf"body by +{re.escape(shown['body_author'])} \(user\)", sk("show", ref).out)

    # a cascade larger than its bound is refused (exit 1); within it, both drop
    assert json.loads(
        sk("drop", ref, "--reason", "gone", "--cascade", "--max-nodes", "1", "--json", expect=1).err
    )["error"]["code"] in ("limit", "refused")
    dropped = sk("drop", ref, "--reason", "gone", "--cascade", "--max-nodes", "2", "--json").json()
    assert set(dropped["dropped"]) == {ref, second["ref"]}
    assert sk("reopen", ref, "--reason", "back", "--json").json()["nodes"][0]["status"] == "open"

    lease = sk("claim", ref, "--json").json()["lease"]["id"]
    released = sk("release", ref, "--lease", lease, "--reason", "budget", "--json").json()
    assert released["claimed"] is False
    tree = sk("list", "-p", p, "--all").out  # dropped nodes are hidden without --all
    assert "#1 ready First" in tree
    assert "#2 dropped Second" in tree  # a reopen is not retroactive


def _until(read: Callable[[], Ran], ok: Callable[[Ran], bool]) -> Ran:
    """Read until ``ok``: a transaction open elsewhere on the server holds the stream back a
    moment (never for long), so one read right after a write may not show it yet."""
    deadline = time.monotonic() + 10
    while True:
        got = read()
        if ok(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_events_cursor_and_op_filter(cli: Cli, sk: Run) -> None:
    p, (ref,) = cli.project("events", "watched")
    sk("hold", ref, "--reason", "look")
    got = _until(
        lambda: sk("events", "--op", "hold_node", "-p", p, "--json"), lambda r: "hold_node" in r.out
    ).json()
    assert [(e["op"], e["node"], e["reason"]) for e in got["events"]] == [
        ("hold_node", ref, "look")
    ]
    assert got["events"][0]["cursor"].startswith("v2.")
    assert got["cursor"]
    # from the page's cursor: nothing new; from the event's own cursor: nothing after it
    assert sk("events", "--cursor", got["cursor"], "-p", p, "--json").json()["events"] == []
    after = sk("events", "--cursor", got["events"][0]["cursor"], "-p", p, "--json").json()
    assert after["events"] == []
    sk("unhold", ref, "--reason", "go")
    later = _until(
        lambda: sk("events", "--cursor", got["cursor"], "-p", p, "--json"),
        lambda r: "unhold_node" in r.out,
    ).json()["events"]
    assert [e["op"] for e in later] == ["unhold_node"]
    human = sk("events", "-p", p, "--op", "unhold_node")
    assert "unhold_node" in human.out
    assert "next: skift events --cursor v2." in human.err
    mine = sk("events", "--node", ref, "--json").json()["events"]
    assert [e["op"] for e in mine][-2:] == ["hold_node", "unhold_node"]
    assert "hold_node" in sk("events", "--node", ref).out


def test_events_bad_and_conflicting_flags(sk: Run) -> None:
    bad = sk("events", "--cursor", "not-a-cursor", "--json", expect=2)
    assert json.loads(bad.err)["error"]["code"] == "invalid"
    sk("events", "--node", "x#1", "--follow", expect=2)


def test_principals_and_tokens(sk: Run) -> None:
    added = sk("principal", "add", "inproc-bot", "--kind", "service", "--json").json()
    assert added["kind"] == "service"
    token = sk("token", "create", "inproc-bot", "--json").json()
    assert token["principal"] == "inproc-bot"
    assert token["token"]
    assert "inproc-bot" in sk("principal", "list").out
    listed = sk("principal", "list", "--json").json()  # SURFACE.md: a bare list
    assert isinstance(listed, list)
    assert {"name", "kind", "admin", "identities"} <= set(listed[0])
    assert "inproc-bot" in [p["name"] for p in listed]
    assert sk("token", "revoke", token["id"], "--json").json() == {"revoked": token["id"]}


def test_invitations_listed_and_cancelled(sk: Run) -> None:
    """The code is printed once, by the invitation; listings never show it (issue 28)."""
    sk("principal", "add", "invitee", "--kind", "user", expect=None)
    who = f"https://accounts.example.com|cli-{time.time_ns()}"
    made = sk("principal", "invite", "invitee", "--oidc", who).out
    assert "skinv_" in made
    assert "SKIFT_INVITE" in made
    listed = sk("principal", "invites", "--json").json()
    mine = [i for i in listed if i["value"] == who]
    assert [(i["principal"], "code" in i) for i in mine] == [("invitee", False)]
    assert "skinv_" not in sk("principal", "invites").out
    gone = sk("principal", "cancel-invite", mine[0]["id"], "--json").json()
    assert gone["value"] == who
    assert who not in [i["value"] for i in sk("principal", "invites", "--json").json()]
    missing = sk("principal", "cancel-invite", who, expect=3)
    assert "skift principal invites" in missing.err


def test_org_limits_show_set_and_unset(sk: Run) -> None:
    shown = sk("org", "limits", "--json").json()
    server = shown["server"]["artifact_metadata_bytes"]
    try:
        got = sk("org", "limits", "--artifact-metadata-bytes", "1000", "--json").json()
        assert got["artifact_metadata_bytes"] == 1000
        assert got["own"] == ["artifact_metadata_bytes"]
        assert "organization" in sk("org", "limits").out
        over = sk(
            "org",
            "limits",
            "--blob-bytes",
            str(shown["server"]["blob_bytes"] + 1),
            "--json",
            expect=2,
        )
        assert json.loads(over.err)["error"]["code"] == "invalid"
    finally:
        back = sk("org", "limits", "--unset", "artifact_metadata_bytes", "--json").json()
    assert back["artifact_metadata_bytes"] == server
    assert back["own"] == []


def test_org_wide_focus_and_clear(cli: Cli, sk: Run) -> None:
    keep, _ = cli.project("focus keep", "kept")
    other, _ = cli.project("focus other", "parked")
    try:
        focus = sk("focus", keep, "--reason", "this week", "--json").json()
        assert focus["scope"] == "org"
        assert other in focus["held"]
        assert keep not in focus["held"]
        page = sk("ready", "-p", keep, "-p", other, "--json").json()
        assert {n["project"] for n in page["nodes"]} == {keep}
    finally:
        cleared = sk("focus", "--clear", "--reason", "week over", "--json").json()
    assert other in cleared["released"]


def test_completion_from_the_server_and_silence_without_it(
    cli: Cli, sk: Run, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p, _ = cli.project("complete me", "node to complete")

    def complete(line: str) -> str:
        words = line.split(" ")
        monkeypatch.setenv("_SKIFT_COMPLETE", "bash_complete")
        monkeypatch.setenv("COMP_WORDS", line)
        monkeypatch.setenv("COMP_CWORD", str(len(words) - 1))
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            run([])
        assert exc.value.code == 0
        return capsys.readouterr().out

    assert f"plain,{p}" in complete(f"skift project show {p[:8]}")
    assert f"plain,{p}#1" in complete(f"skift show -p {p} {p}")
    assert "plain,#1" in complete(f"skift show -p {p} #")
    monkeypatch.setenv("SKIFT_SERVER", "unix:///nonexistent.sock")
    assert complete("skift project show ").strip() == ""
    monkeypatch.setenv("_SKIFT_COMPLETE", "zsh_source")
    with pytest.raises(SystemExit):
        run([])
    assert "compdef" in capsys.readouterr().out


def test_demo_tours_an_in_memory_store(sk: Run) -> None:
    out = sk("demo").out
    for seen in ("agent-ann claimed", "filed gate", "waiting on a person", "held on", "docs-site"):
        assert seen in out, seen


def test_serve_and_mcp_are_wired_to_their_programs(
    sk: Run, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(["serve", "--help"]) == 0  # its parser's exit comes back as skift's
    assert "--socket" in capsys.readouterr().out
    # skift mcp runs the skift-mcp program beside this Python: its arguments (--json
    # dropped), the environment with the global --server and -p, and its usage's name
    execs: list[tuple[str, list[str], dict[str, str]]] = []

    def execve(path: str, argv: list[str], env: dict[str, str]) -> None:
        execs.append((path, argv, env))
        raise SystemExit(0)  # execve does not return

    monkeypatch.setattr("os.execve", execve)
    monkeypatch.setenv("SKIFT_KEPT", "yes")
    with pytest.raises(SystemExit):
        run(
            ["--server", "unix:///tmp/elsewhere.sock", "-p", "proj", "mcp", "--port", "9", "--json"]
        )
    ((path, argv, env),) = execs
    assert Path(path) == Path(sys.executable).parent / "skift-mcp"
    assert argv == [path, "--port", "9"]
    assert env["SKIFT_SERVER"] == "unix:///tmp/elsewhere.sock"
    assert env["SKIFT_PROJECT"] == "proj"
    assert env["SKIFT_MCP_PROG"] == "skift mcp"
    assert env["SKIFT_KEPT"] == "yes"


def test_comments_threads_and_search(cli: Cli, sk: Run) -> None:
    p, (ref,) = cli.project("content", "Research the zebra-crossing providers")
    first = sk("comment", ref, "look at the quokka vendor", "--json").json()
    assert first["author_kind"] == "user"
    assert first["node"] == ref
    reply = sk("comment", "add", "#1", "-p", p, "done", "--reply-to", first["id"], "--json").json()
    assert reply["in_reply_to"] == first["id"]
    assert sk("comment", "resolve", first["id"], "--json").json()["resolved_at"]
    edited = sk("comment", "edit", reply["id"], "done, see the notes", "--json").json()
    assert [r["body"] for r in edited["revisions"]] == ["done"]
    listed = sk("comments", ref, "--json").json()["comments"]
    assert [c["id"] for c in listed] == [first["id"], reply["id"]]
    tree = sk("comments", ref).out
    assert "resolved by" in tree
    assert "done, see the notes" in tree

    hits = sk("search", "quokka", "-p", p, "--json").json()["hits"]
    assert [h["node"]["ref"] for h in hits] == [ref]
    assert "comment" in hits[0]["matched"]
    assert ref in sk("search", "zebra").out


def test_usage_and_artifacts(cli: Cli, sk: Run, tmp_path: Path) -> None:
    p, (first, _) = cli.project("usage", "measure me", "then me")
    cli.api(lambda sk: sk.patch(p, [{"op": "add_edge", "from": first, "to": "#2"}]))
    lease = sk("claim", first, "--json").json()["lease"]["id"]
    actual = sk(
        "usage", "add", first, "--model", "m-cli", "--input-tokens", "1000",
        "--output-tokens", "50", "--lease", lease, "--json",
    ).json()  # fmt: skip
    assert (actual["kind"], actual["lease"], actual["input_tokens"]) == ("actual", lease, 1000)
    guess = sk(
        "usage", "add", first, "--model", "m-cli", "--input-tokens", "5000", "--estimate",
        "--basis", "like the last one", "--json",
    ).json()  # fmt: skip
    assert (guess["kind"], guess["basis"]) == ("estimate", "like the last one")
    report = sk("usage", "show", first, "--json").json()
    assert report["actual"]["total"] == 1050
    assert report["estimate"]["input_tokens"] == 5000
    assert report["unpriced_models"] == ["m-cli"]
    assert sk("usage", "show", "--project", p, "--json").json()["actual"]["total"] == 1050
    assert "no rate for: m-cli" in sk("usage", "show", first).out

    notes = tmp_path / "notes.md"
    notes.write_text("# what I found\n")
    sk("complete", first, "--lease", lease, "--result", "see notes", "--artifact", str(notes))
    claim = sk("claim", "-p", p, "--json").json()
    (given,) = claim["inputs"]
    (art,) = given["artifacts"]
    assert art["name"] == "notes.md"
    (part,) = art["parts"]
    assert (part["type"], part["media_type"], part["size"]) == ("blob", "text/markdown", 15)
    assert part["digest"].startswith("sha256:")
    sk("complete", first, "--artifact", str(tmp_path / "missing.bin"), expect=2)
