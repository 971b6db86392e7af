"""The beads export generator of ``bench/beads_gen.py``, for tests (loaded by path: the
``bench`` package sits beside ``tests``, which is what is on the path here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _load() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "bench" / "beads_gen.py"
    spec = importlib.util.spec_from_file_location("beads_gen", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["beads_gen"] = module
    spec.loader.exec_module(module)
    return module


beads_gen = _load()
