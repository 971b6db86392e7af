"""The public names of skift_mcp are pinned: the API never grows by accident."""

from __future__ import annotations

import skift_mcp


def test_exported_names() -> None:
    assert skift_mcp.__all__ == ["INSTRUCTIONS", "build_server", "main"]
    for name in skift_mcp.__all__:
        assert hasattr(skift_mcp, name)
