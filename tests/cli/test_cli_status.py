"""``skift status`` through real processes, with two real servers: which server a command
reaches (the flag, SKIFT_SERVER, the config file, then the default socket, never the
server that started last), whether it answers, and who the caller is there."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import subprocess
import tempfile
from pathlib import Path

from cli_harness import SKIFT
from serverproc import ServerProcess


def status(env: dict[str, str], *args: str, expect: int = 0) -> dict[str, object]:
    proc = subprocess.run(
        [str(SKIFT), *args, "status", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == expect, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) >= {
        "server",
        "serving",
        "version",
        "principal",
        "kind",
        "org",
        "admin",
        "database",
    }
    return doc


def test_status_names_the_server_it_reaches_and_who_you_are_there(
    pg_empty_dsn: str, tmp_path: Path
) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="status-", dir="/tmp"))
    default = ServerProcess("--memory", socket=runtime / "skift" / "skift.sock")
    later = ServerProcess("--dsn", pg_empty_dsn)  # started second, on a socket of its own
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKIFT_", "XDG_"))}
    env.update(
        XDG_RUNTIME_DIR=str(runtime),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        HOME=str(tmp_path),
        NO_COLOR="1",
    )
    try:
        (runtime / "skift").mkdir()
        asyncio.run(default.start())
        asyncio.run(later.start())

        # no server named: the default socket, though another server started after it
        got = status(env)
        assert got["server"] == default.url
        assert got["server_from"] == "the default socket"
        assert got["serving"] is True
        assert got["database"] == "memory:"
        assert got["principal"] == getpass.getuser()
        assert got["kind"] == "user"
        assert got["org"]
        assert got["version"]

        # named: --server, SKIFT_SERVER, the config file
        by_flag = status(env, "--server", later.url)
        assert by_flag["server"] == later.url
        assert by_flag["server_from"] == "--server"
        assert str(by_flag["database"]).startswith("postgresql")
        assert ":" not in str(by_flag["database"]).split("@")[0].split("//")[-1] or (
            "@" not in str(by_flag["database"])
        )  # no password
        assert status({**env, "SKIFT_SERVER": later.url})["server_from"] == "SKIFT_SERVER"
        config = tmp_path / "config" / "skift"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(f'server = "{later.url}"\n')
        from_file = status(env)
        assert from_file["server"] == later.url
        assert str(from_file["server_from"]).startswith("the config file")

        # a server that does not answer: named, not serving, exit 4
        (config / "config.toml").unlink()
        gone = status(env, "--server", f"unix://{tmp_path}/nobody.sock", expect=4)
        assert gone["serving"] is False
        assert gone["principal"] is None
    finally:
        for server in (later, default):
            asyncio.run(server.stop())
            server.cleanup()
        import shutil

        shutil.rmtree(runtime, ignore_errors=True)
