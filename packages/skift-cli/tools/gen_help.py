"""Generate skift_cli/_help.txt: ``skift --help`` as rich-click renders it into a pipe.

``skift --help`` written to a pipe or a file (what an agent reads) is the
same text on every run of a given version: rich-click renders it 80 columns
wide and without colour when the output is not a terminal and no variable of
:data:`skift_cli.HELP_ENV` is set. ``skift_cli.main`` writes this file in that
case instead of importing click, rich-click and every command module (~130 ms
of a ~150 ms run). ``make check`` runs ``--check``: it fails when the file
differs from what the command line renders now (``make generate`` rewrites it).

    uv run python packages/skift-cli/tools/gen_help.py [--check]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import skift_cli

HELP = Path(skift_cli.__file__).with_name("_help.txt")

# The full command line, never the fast path that writes the file being made.
RENDER = """
import sys
from skift_cli._app import run
sys.exit(run(["--help"]))
"""


def render() -> bytes:
    """``skift --help`` through rich-click, into a pipe, in the environment the fast path needs."""
    env = {k: v for k, v in os.environ.items() if k not in skift_cli.HELP_ENV}
    env["PYTHONIOENCODING"] = "utf-8"
    proc = subprocess.run(
        [sys.executable, "-c", RENDER], env=env, capture_output=True, check=False, timeout=120
    )
    if proc.returncode != 0:
        raise SystemExit(f"skift --help failed ({proc.returncode}): {proc.stderr.decode()}")
    return proc.stdout


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not HELP.exists() or HELP.read_bytes() != text:
            print(
                f"{HELP} is not what `skift --help` renders now: run `make generate` "
                "(or `uv run python packages/skift-cli/tools/gen_help.py`) and commit it",
                file=sys.stderr,
            )
            return 1
        return 0
    HELP.write_bytes(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
