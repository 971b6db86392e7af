"""Every module of skift-core and skift_pg sits on a layer line, and no import cycle is waived.

CONTRIBUTING.md says a new module goes on the line of its layer in pyproject.toml's
import-linter contracts; a module on no line is checked by no layer contract.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "skift": ROOT / "packages/skift-core/src/skift",
    "skift_pg": ROOT / "packages/skift-store-pg/src/skift_pg",
}


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def _modules(path: Path) -> set[str]:
    out = {p.stem for p in path.glob("*.py") if p.name != "__init__.py"}
    out |= {p.parent.name for p in path.glob("*/__init__.py")}
    return out


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_module_is_on_a_layer_line(package: str) -> None:
    (contract,) = [c for c in _contracts() if c.get("containers") == [package]]
    layers: list[str] = contract["layers"]  # type: ignore[assignment]
    listed = {m.strip() for line in layers for m in line.split("|")}
    assert sorted(_modules(PACKAGES[package]) - listed) == []
    assert "ignore_imports" not in contract


def test_no_cycle_is_waived() -> None:
    (acyclic,) = [c for c in _contracts() if c["id"] == "acyclic"]
    assert "ignore_imports" not in acyclic


def test_no_contract_has_a_waiver() -> None:
    """Not even between packages: ``skift mcp`` runs the ``skift-mcp`` program rather than
    importing skift_mcp into the CLI."""
    assert [c["id"] for c in _contracts() if "ignore_imports" in c] == []
