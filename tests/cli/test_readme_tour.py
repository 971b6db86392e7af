"""The README's quick tour, pasted into a shell as one block, works as written.

The test reads the tour's ```sh block from README.md and runs it with bash in
an empty directory, as a user pastes it after cloning: a home, config and
runtime directory of its own, no SKIFT_* variables, skift not on PATH until
the tour's ``. .venv/bin/activate``. Every command must exit 0 (the script
stops at the first that does not and names it), and each prints what the
README says it does. Edit the tour and the test runs the new block; a claim
below names the command it checks, so a command that changes or goes away
fails here until its claim is updated.

Two things differ from a fresh clone, both in the harness, not in the tour's
commands:

- ``make sync`` is the environment this test runs in (already synced): the
  tour's ``.venv`` links to it, and ``make`` accepts ``sync`` and does nothing.
- ``skift serve`` gets ``--dsn`` for a fresh, empty database on the test
  PostgreSQL instead of the embedded cluster, and a free port for ``--http``
  instead of 7434: as root, the embedded cluster's default directory is the
  machine's ``/var/lib/skift/pg`` (shared), and 7434 may be taken. The server
  still starts on an empty store and migrates it, as a first start does.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cli_harness import PYCACHE
from serverproc import free_port

ROOT = Path(__file__).resolve().parents[2]
MARK = "@@tour@@ "

# What the README says each command prints: (the command as the tour writes it, texts in
# its output, texts not in it). {port} is the board's port.
CLAIMS: list[tuple[str, list[str], list[str]]] = [
    ("skift demo", ["That was an in-memory store"], []),
    ("skift board", ["http://127.0.0.1:{port}/signin?code=skc_"], []),
    ('skift project create "OAuth spike"', ["created project oauth-spike"], []),
    (
        'skift -p oauth-spike create "Recommend a provider"',
        ["created oauth-spike#1 Recommend a provider"],
        [],
    ),
    (
        "skift -p oauth-spike create \"Sign up with the provider\" --assignee-kind user --blocked-by '#1'",
        ["created oauth-spike#2 Sign up with the provider"],
        [],
    ),
    ("skift ready", ["oauth-spike#1", "Recommend a provider"], ["oauth-spike#2"]),
    # `complete` prints the nodes its write changed: #1 alone (a table). #2 became ready
    # through a derived state, not a write, so it is not in that table; pasted as one
    # block, that table ends just above `list`'s output and reads as if `list` printed
    # it (reported as "list's table lacks the gate"). `list` prints the tree only.
    (
        'skift complete oauth-spike#1 --lease "$LEASE" --result "Use GitHub"',
        ["completed", "oauth-spike#1", "Recommend a provider"],
        ["oauth-spike#2"],
    ),
    (
        "skift -p oauth-spike list",
        ["#1 done Recommend a provider", "#2 ready (gate) Sign up with the provider"],
        ["pri  kind", "oauth-spike#1"],  # a tree of `#N` under the slug, no table header
    ),
    ("skift explain oauth-spike#2", ["oauth-spike#2 Sign up with the provider: ready"], []),
]


def tour_block() -> list[str]:
    """The lines of the first ```sh block under "## Quick tour" in README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Quick tour\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def command(line: str) -> str:
    """A tour line without its comment."""
    return re.sub(r"\s+#\s.*$", "", line).strip()


def script(lines: list[str], dsn: str, port: int, *, own_server: bool = True) -> str:
    out = [
        "set -eE -o pipefail",
        "trap 'echo \"tour: exit $? from: $BASH_COMMAND\"' ERR",
        "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT",
        'make() { [ "$*" = sync ]; }  # this environment is what `make sync` made',
    ]
    served = False
    for line in lines:
        run = line
        if command(line).startswith("skift serve "):
            assert "127.0.0.1:7434" in line, line
            run = line.replace("skift serve ", f"skift serve --dsn {shlex.quote(dsn)} ", 1)
            run = run.replace("127.0.0.1:7434", f"127.0.0.1:{port}")
            served = True
        out.append(f"printf '%s\\n' {shlex.quote(MARK + command(line))}")
        out.append(run)
    assert served, "the tour no longer starts `skift serve`: update this test's harness"
    out.append(f"printf '%s\\n' {shlex.quote(MARK + 'end')} \"LEASE=$LEASE\"")
    if own_server:
        out.append("kill %1")  # the README: "Stop it with `kill %1`"
        out.append("wait %1")  # and it stops cleanly (exit 0)
    else:  # `make run` serves: the tour's own server must have refused, not served beside it
        out.append(
            'if wait %1; then echo "tour: its skift serve exited 0 beside make run"; exit 9; fi'
        )
    return "\n".join(out) + "\n"


def environment(home: Path, runtime: Path) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SKIFT_", "XDG_", "PYTHON", "VIRTUAL_ENV", "COLUMNS"))
    }
    env.update(
        PATH=path or "/usr/bin:/bin",
        HOME=str(home),
        XDG_RUNTIME_DIR=str(runtime),
        PYTHONPYCACHEPREFIX=str(PYCACHE),
    )
    return env


def sections(output: str) -> dict[str, str]:
    """The output of the run, by the command that printed it."""
    found: dict[str, str] = {}
    current: str | None = None
    for line in output.splitlines():
        if line.startswith(MARK):
            current = line[len(MARK) :]
            found.setdefault(current, "")
        elif current is not None:
            found[current] += line + "\n"
    return found


def check_claims(ran: dict[str, str], port: int, report: str) -> None:
    for cmd, present, absent in CLAIMS:
        assert cmd in ran, f"the tour no longer runs `{cmd}`: update CLAIMS\n{report}"
        for text in present:
            assert text.format(port=port) in ran[cmd], f"`{cmd}` lacks {text!r}\n{report}"
        for text in absent:
            assert text not in ran[cmd], f"`{cmd}` prints {text!r}\n{report}"


def test_the_readme_tour_pasted_as_one_block(pg_empty_dsn: str, tmp_path: Path) -> None:
    lines = tour_block()
    port = free_port()
    work = tmp_path / "clone"
    work.mkdir()
    (work / ".venv").symlink_to(Path(sys.executable).parent.parent)
    home = tmp_path / "home"
    home.mkdir()
    runtime = Path(tempfile.mkdtemp(prefix="tour-", dir="/tmp"))  # short: a socket path
    try:
        proc = subprocess.run(
            ["bash", "-c", script(lines, pg_empty_dsn, port)],
            cwd=work,
            env=environment(home, runtime),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    log = work / "skift-serve.log"
    report = f"{proc.stdout}\n--- skift-serve.log:\n{log.read_text() if log.exists() else ''}"
    assert proc.returncode == 0, report

    ran = sections(proc.stdout)
    assert list(ran) == [*(command(line) for line in lines), "end"], report
    lease = re.search(r"^LEASE=(\S+)$", ran["end"], re.M)
    assert lease, report  # `skift claim -q` printed the lease id alone
    assert "skift is serving on unix://" in log.read_text()  # "the server is ready when ..."
    check_claims(ran, port, report)


def make_run(dsn: str, port: int) -> str:
    """What ``make run`` runs, read from the Makefile: its recipe with ``$(UV) run`` as the
    environment's own bin directory (what ``uv run`` puts first on PATH), the test database
    for the embedded cluster (``--dsn`` through ``ARGS``) and a free port for 7434."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = text.split("\nrun: sync\n", 1)[1].splitlines()[0].strip()
    assert recipe.startswith("$(UV) run skift-serve "), recipe
    assert "127.0.0.1:7434" in recipe, recipe
    venv_bin = Path(sys.executable).parent
    line = recipe.replace("$(UV) run ", f"{venv_bin}/", 1).replace(
        "127.0.0.1:7434", f"127.0.0.1:{port}"
    )
    return line.replace("$(ARGS)", f"--dsn {shlex.quote(dsn)}")


def test_the_readme_top_to_bottom_make_run_then_the_tour_in_another_shell(
    pg_empty_dsn: str, tmp_path: Path
) -> None:
    """Set up's ``make run`` in one terminal (left running, as the README says), then the
    tour pasted in another with the same user's environment: the tour's own ``skift serve``
    exits 1 naming the socket ``make run`` holds and leaves nothing behind, and every other
    line works against the running server (the board's link is ``make run``'s)."""
    import signal
    import time

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("\n## Set up\n", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert command(setup.splitlines()[0]) == "make run", setup
    port, tour_port = free_port(), free_port()
    work = tmp_path / "clone"
    work.mkdir()
    (work / ".venv").symlink_to(Path(sys.executable).parent.parent)
    home = tmp_path / "home"
    home.mkdir()
    runtime = Path(tempfile.mkdtemp(prefix="tour-", dir="/tmp"))
    env = environment(home, runtime)
    first = subprocess.Popen(
        ["bash", "-c", f"exec {make_run(pg_empty_dsn, port)}"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert first.stdout is not None
        banner = ""
        deadline = time.monotonic() + 90
        while "skift is serving on" not in banner and time.monotonic() < deadline:
            line = first.stdout.readline()
            if not line:
                break
            banner += line
        sock = runtime / "skift" / "skift.sock"
        assert f"skift is serving on unix://{sock}" in banner, banner
        proc = subprocess.run(
            ["bash", "-c", script(tour_block(), pg_empty_dsn, tour_port, own_server=False)],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
        )
        log = work / "skift-serve.log"
        said = log.read_text() if log.exists() else ""
        report = f"{proc.stdout}\n--- the tour's skift-serve.log:\n{said}"
        assert proc.returncode == 0, report
        ran = sections(proc.stdout)
        assert list(ran) == [*(command(line) for line in tour_block()), "end"], report
        assert f"another server is listening on {sock}" in said, report
        assert not (runtime / "skift" / "skift.sock.starting").exists()  # nothing left behind
        check_claims(ran, port, report)  # the board link is make run's
    finally:
        first.send_signal(signal.SIGINT)  # Ctrl-C in make run's terminal
        try:
            rest, _ = first.communicate(timeout=60)  # (and closes its stdout)
        finally:
            first.kill()
            shutil.rmtree(runtime, ignore_errors=True)
    assert first.returncode == 0, rest
