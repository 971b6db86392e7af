"""Every ```python block in docs/*.md and README.md runs, so the docs cannot drift from the code.

Each block is a complete program (imports, ``asyncio.run(main())``) and runs
in a subprocess of its own with this interpreter, from the repository root. A
block whose fence reads ```python no-run is only compiled: reserve that for
the few examples that need something a test run cannot assume (a PostgreSQL
server, say).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
TIMEOUT_SECONDS = 60

_OPEN = re.compile(r"^(?P<indent>[ \t]*)```python(?P<info>(?:[ \t][^`]*)?)$")
_CLOSE = re.compile(r"^[ \t]*```[ \t]*$")


@attrs.frozen
class Block:
    path: Path
    number: int  # 1-based among the file's python blocks
    line: int  # 1-based line of the opening fence
    source: str
    run: bool

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}#{self.number}"


def blocks_in(path: Path) -> list[Block]:
    """The ```python blocks of one Markdown file, dedented to their fence."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None:
            i += 1
            continue
        indent = len(m.group("indent"))
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not _CLOSE.match(lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path}:{start + 1}: a ```python block is never closed")
        out.append(
            Block(
                path=path,
                number=len(out) + 1,
                line=start + 1,
                source="\n".join(body) + "\n",
                run="no-run" not in m.group("info").split(),
            )
        )
        i += 1
    return out


BLOCKS = [b for path in DOCS if path.exists() for b in blocks_in(path)]


def test_the_docs_have_examples() -> None:
    # Guards the parser: if it stopped finding blocks, every other test would vanish silently.
    assert len([b for b in BLOCKS if b.run]) >= 10


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_example_runs(block: Block, tmp_path: Path) -> None:
    where = f"{block.path.relative_to(ROOT)}, python block {block.number} (line {block.line})"
    try:
        compile(block.source, where, "exec")
    except SyntaxError as exc:
        pytest.fail(f"{where} does not compile: {exc}", pytrace=False)
    if not block.run:
        return
    if "postgresql://" in block.source or "postgres://" in block.source:
        pytest.fail(
            f'{where} needs PostgreSQL; runnable examples use skift.open("memory:")',
            pytrace=False,
        )
    script = tmp_path / f"{block.path.stem}_{block.number}.py"
    script.write_text(block.source, encoding="utf-8")
    try:
        result = subprocess.run(
            # -W error: a warning in an example (a coroutine never awaited, say) is a bug in it.
            [sys.executable, "-W", "error", str(script)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{where} ran longer than {TIMEOUT_SECONDS}s", pytrace=False)
    if result.returncode != 0:
        pytest.fail(
            f"{where} exited with {result.returncode}\n"
            f"--- stdout\n{result.stdout}--- stderr\n{result.stderr}",
            pytrace=False,
        )
