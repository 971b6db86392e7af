"""The config file ``$XDG_CONFIG_HOME/skift/config.toml``: ``server``, ``project``, ``output``.

Flags win over the environment (``SKIFT_SERVER``, ``SKIFT_PROJECT``), which
wins over this file. ``skift init`` writes it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (skift ready: a few ms)
if TYPE_CHECKING:  # imported where used: `skift --help` needs neither (~6% of its start-up)
    from pathlib import Path

KEYS = ("server", "project", "output")
OUTPUTS = ("human", "json")


def config_path() -> Path:
    from pathlib import Path

    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "skift" / "config.toml"


class ConfigError(Exception):
    """The config file cannot be read."""


def _default_file() -> str:
    """:func:`config_path` as text, without importing pathlib (``skift ready`` reads it)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = (
        base if base and os.path.isabs(base) else os.path.join(os.path.expanduser("~"), ".config")
    )
    return os.path.join(root, "skift", "config.toml")


def load(path: Path | None = None) -> dict[str, str]:
    """The file's known keys (missing file: nothing); a malformed file is an error."""
    try:
        with open(_default_file() if path is None else path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path or config_path()}: {exc.strerror}") from None
    path = path or config_path()
    import tomllib  # only when there is a file to read: most runs have none

    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    return {k: str(v) for k, v in doc.items() if k in KEYS and isinstance(v, str) and v}


def write(values: dict[str, str], path: Path | None = None) -> Path:
    """Write the known, non-empty keys (TOML basic strings share JSON's escapes)."""
    import json

    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# skift command line defaults; flags and SKIFT_* variables win over these."]
    lines += [f"{k} = {json.dumps(values[k])}" for k in KEYS if values.get(k)]
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
