"""No hand-written module is over 800 lines (CONTRIBUTING.md: a module that grows past it
is split by concern, as `_memory` into `_memory_people`/`_memory_content`/`_memory_base`).

The generated protobuf package (`skift_server/_proto`, written by `make generate`) is the
one exception: it is betterproto2's output, checked by `make check` instead of read.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 800


def test_no_hand_written_module_is_over_800_lines() -> None:
    over: list[str] = []
    for path in sorted((ROOT / "packages").glob("*/src/**/*.py")):
        if "_proto" in path.relative_to(ROOT).parts:
            continue
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > LIMIT:
            over.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not over, "split these by concern:\n" + "\n".join(over)
