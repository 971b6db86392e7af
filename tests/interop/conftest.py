"""Fixtures of the interop suite (defined in ``interop_harness``): ``stubs``, compiled
from the proto at test time, and ``server``, one ``skift serve`` per module."""

from __future__ import annotations

from interop_harness import server, stubs

__all__ = ["server", "stubs"]
