"""Fixtures for tests/sweep (defined in sweep_harness): ``sweep`` and ``state``."""

from __future__ import annotations

from sweep_harness import state, sweep

__all__ = ["state", "sweep"]
