"""The fast paths of ``skift`` say what the full command line says, byte for byte.

``skift --help`` into a pipe is written from ``skift_cli/_help.txt`` (made by
packages/skift-cli/tools/gen_help.py) instead of rendered by rich-click: the
same bytes, without importing click, rich or any command module. Whatever
could change the rendering (a terminal, a width, colour or theme variable)
takes the full command line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
