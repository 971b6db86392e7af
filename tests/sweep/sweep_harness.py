"""Helpers for tests/sweep: run ``skift sweep`` in process and read its two lines.

``sweep(*argv)`` runs ``skift sweep ARGV`` through ``skift_cli._sweep.main``
(the same function the ``skift`` script calls) and returns the exit code, the
status word and the payload (None when there is no line 2). ``state`` is a
state file path in a fresh directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import pytest

from skift_cli._sweep import main

NOW = "2026-07-02T12:00:00+00:00"


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = err
        lines = out.split("\n")
        self.word = lines[0]
        self.payload: Any = json.loads(lines[1]) if len(lines) > 2 and lines[1] else None


class Sweep(Protocol):
    def __call__(self, *argv: str) -> Result: ...


@pytest.fixture
def sweep(capsys: pytest.CaptureFixture[str]) -> Sweep:
    def run(*argv: str) -> Result:
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
        got = capsys.readouterr()
        return Result(code, got.out, got.err)

    return run


@pytest.fixture
def state(tmp_path: Path) -> str:
    return str(tmp_path / "state.yml")
