"""The fast paths of ``skift`` say what the full command line says, byte for byte.

``skift --help`` into a pipe is written from ``skift_cli/_help.txt`` (made by
packages/skift-cli/tools/gen_help.py) instead of rendered by rich-click: the
same bytes, without importing click, rich or any command module. Whatever
could change the rendering (a terminal, a width, colour or theme variable)
takes the full command line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from cli_harness import Cli, Result

import skift_cli

SKIFT = Path(sys.executable).with_name("skift")
HELP = Path(skift_cli.__file__).with_name("_help.txt")

FULL_HELP = """
import sys
from skift_cli._app import run
sys.exit(run(["--help"]))
"""

MAIN = """
import sys
import skift_cli
try:
    skift_cli.main(sys.argv[1:])
finally:
    sys.stderr.write("\\n".join(sorted(sys.modules)))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in skift_cli.HELP_ENV}
    env["PYTHONIOENCODING"] = "utf-8"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra)
    return env


def test_help_into_a_pipe_is_the_full_rendering_without_click() -> None:
    full = subprocess.run(
        [sys.executable, "-c", FULL_HELP], env=_env(), capture_output=True, timeout=120
    )
    assert full.returncode == 0, full.stderr
    fast = subprocess.run([str(SKIFT), "--help"], env=_env(), capture_output=True, timeout=120)
    assert fast.returncode == 0, fast.stderr
    assert fast.stdout == full.stdout == HELP.read_bytes()
    short = subprocess.run([str(SKIFT), "-h"], env=_env(), capture_output=True, timeout=120)
    assert short.returncode == 0
    assert short.stdout == full.stdout

    proc = subprocess.run(
        [sys.executable, "-c", MAIN, "--help"], env=_env(), capture_output=True, timeout=120
    )
    assert proc.stdout == full.stdout
    modules = set(proc.stderr.decode().split("\n"))
    assert not {"click", "rich", "rich_click", "skift_cli._app", "skift_cli._base"} & modules


def test_help_that_renders_otherwise_takes_the_full_command_line() -> None:
    """A width (or colour) variable changes rich-click's rendering: the stored text is not used."""
    wide = subprocess.run(
        [sys.executable, "-c", MAIN, "--help"],
        env=_env(COLUMNS="100"),
        capture_output=True,
        timeout=120,
    )
    assert wide.returncode == 0
    assert "rich_click" in wide.stderr.decode().split("\n")
    assert wide.stdout != HELP.read_bytes()
    assert max(len(line) for line in wide.stdout.decode().splitlines()) > 80


# ------------------------------------------------------------ ready and show, both ways

FULL = """
import sys
from skift_cli._app import run
sys.exit(run(sys.argv[1:]))
"""

VIA_MAIN = """
import sys
import skift_cli
try:
    skift_cli.main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as fh:
        fh.write("\\n".join(sorted(sys.modules)))
"""

AGO = re.compile(r"\b(?:\d+[smhd] ago|just now)\b")


def _both(
    cli: Cli, tmp_path: Path, *args: str, plain: bool = False
) -> tuple[Result, Result, set[str]]:
    """``skift ARGS`` through click, then through ``skift_cli.main`` (the fast path), and
    the modules the second loaded. ``plain``: an environment in which rich draws plain
    text into the pipe (80 columns, no colour variable), which ``_plain`` writes itself."""
    env = cli.env()
    if plain:
        env = {k: v for k, v in env.items() if k not in skift_cli.HELP_ENV}
    full = subprocess.run(
        [sys.executable, "-c", FULL, *args], env=env, capture_output=True, text=True, timeout=60
    )
    report = tmp_path / "modules.txt"
    fast = subprocess.run(
        [sys.executable, "-c", VIA_MAIN, str(report), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Result(full), Result(fast), set(report.read_text().split("\n"))


def _same(full: str, fast: str) -> bool:
    """Equal, or equal but for relative times that moved on between the runs (and the
    column widths they set)."""
    if full == fast:
        return True

    def norm(text: str) -> list[str]:
        return [" ".join(line.split()) for line in AGO.sub("AGO", text).splitlines()]

    return norm(full) == norm(fast)


THICK = {"skift_server", "skift", "attrs", "betterproto2", "hpack", "rich", "click"}
"""What the thin path (``skift_cli._thin``) imports none of."""


def _check(
    cli: Cli,
    tmp_path: Path,
    *args: str,
    fast: bool = True,
    thin: bool | None = None,
    plain: bool = False,
) -> Result:
    full, quick, modules = _both(cli, tmp_path, *args, plain=plain)
    assert quick.code == full.code, (full, quick)
    assert _same(full.out, quick.out), (full, quick)
    assert _same(full.err, quick.err), (full, quick)
    # the fast path loads neither a click command nor the full client (grpclib's channel,
    # asyncio's loop)
    full_path = {m for m in modules if m.startswith("skift_cli._commands.")}
    taken = not full_path and not {"skift_server._client", "asyncio"} & modules
    assert taken == fast, (args, sorted(modules))
    if thin is not None:  # the thin path: the standard library, no skift_server or views
        assert (not THICK & modules) == thin, (args, sorted(THICK & modules))
    return full


def test_ready_and_show_print_what_the_full_command_line_prints(cli: Cli, tmp_path: Path) -> None:
    slug, refs = cli.project("fast", "first", "second", "third", "fourth", "fifth", "sixth")
    cli.run("update", refs[1], "--priority", "p0", "--label", "ui", "--kind", "bug")
    cli.run("link", refs[0], refs[2])
    cli.run("comment", refs[2], "why is this blocked?")
    cli.run("claim", refs[3], "--ttl", "10m")
    art = tmp_path / "report.txt"
    art.write_text("a report\n")
    cli.run("complete", refs[4], "--result", "done", "--artifact", str(art))
    lease = cli.json("claim", refs[0])["lease"]["id"]
    cli.run("heartbeat", refs[0], "--lease", lease)

    # COLUMNS=200 and NO_COLOR: rich draws the text, from the answers _thin was given
    for thin, args in (
        (False, ("ready", "-p", slug)),
        (True, ("ready", "-p", slug, "--json")),
        (False, ("ready", "--project", slug, "--limit", "1")),
        (True, ("ready", f"--project={slug}", "--limit=1", "--json")),
        (True, ("ready", "--json", "-p", slug, "--kind", "bug", "--label", "ui")),
        (True, ("ready", "-p", slug, "--min-priority", "p1", "--json")),
        (False, ("ready", "-p", slug, "--any-label", "ui", "--any-label", "x")),
        (True, ("ready", "-p", slug, "--assignee-kind", "agent", "--json")),
        (True, ("ready", "-p", "*", "--limit", "2", "--json")),
        (True, ("ready", "-p", slug, "--parent", refs[0], "--json")),
        (False, ("show", refs[0])),
        (False, ("show", refs[0], "--json")),  # leased: _fast reads the lease
        (False, ("show", refs[2])),  # blocked, with a comment
        (True, ("show", "--json", refs[2])),
        (False, ("show", refs[3], "--json")),  # leased by the caller
        (False, ("show", refs[4])),  # done, with a result and an artifact
        (False, ("show", refs[4], "--json")),
        (True, ("show", refs[5], "--json")),
        (False, ("show", "#2", "-p", slug)),
    ):
        _check(cli, tmp_path, *args, thin=thin)
    # into a plain pipe: _plain writes the text, on the thin path where it holds no lease
    # or artifact
    for thin, args in (
        (True, ("ready", "-p", slug)),
        (True, ("ready", "--project", slug, "--limit", "1")),  # "more: --page ..."
        (True, ("ready", "-p", slug, "--any-label", "ui", "--any-label", "x")),
        (False, ("show", refs[0])),
        (True, ("show", refs[2])),  # blocked, with a comment
        (False, ("show", refs[4])),
        (True, ("show", refs[5])),
        (True, ("show", "#2", "-p", slug)),
    ):
        _check(cli, tmp_path, *args, thin=thin, plain=True)
    # a table rich must draw (a character other than ASCII): _fast, from the same answer
    other = cli.project("fast-other", "naïve café")[0]
    _check(cli, tmp_path, "ready", "-p", other, thin=False, plain=True)

    token = cli.json("ready", "-p", slug, "--limit", "1")["next_page"]
    _check(cli, tmp_path, "ready", "-p", slug, "--limit", "1", "--page", token, "--json", thin=True)


def test_errors_are_the_full_command_lines(cli: Cli, tmp_path: Path) -> None:
    slug, refs = cli.project("fast-errors", "only")
    for args in (
        ("show", f"{slug}#99"),
        ("show", f"{slug}#99", "--json"),
        ("ready", "-p", "no-such-project"),
        ("ready", "-p", "no-such-project", "--json"),
        ("ready", "-p", slug, "--limit", "0"),
        ("ready", "-p", slug, "--limit", "0", "--json"),
        ("ready", "-p", slug, "--page", "not-a-token", "--json"),
        ("show", refs[0], "-p", "elsewhere"),
    ):
        full = _check(cli, tmp_path, *args)
        assert full.code != 0


def test_what_the_fast_path_does_not_read_goes_to_click(cli: Cli, tmp_path: Path) -> None:
    slug, refs = cli.project("fast-misc", "only")
    for args in (
        ("ready", "-p", slug, "--limit", "many"),  # click's usage error
        ("ready", "-p", slug, "--min-priority", "urgent"),
        ("ready", "-p", slug, "--bogus"),
        ("ready", "--help"),
        ("show",),
        ("show", refs[0], refs[0]),
        ("show", refs[0], "-p", slug, "-p", "other"),  # one project only: click says so
        (f"-p{slug}", "ready"),
    ):
        _check(cli, tmp_path, *args, fast=False)
