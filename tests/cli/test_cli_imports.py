"""Start-up stays fast: a client command loads the client, never the server.

``skift ready`` as a new process is mostly Python importing modules, so the
guard is on what gets imported, not on a clock (speed is measured in bench/):
each command runs in a fresh interpreter against the shared ``skift serve``,
then the test looks at ``sys.modules``. A server-only module showing up here
(the store drivers, the HTTP endpoint, the metrics, the policy engine) means
a new import on the client path costs every ``skift`` invocation its load
time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_harness import Cli

# Loaded by `skift serve` and the library's in-process store, never by a client.
SERVER_ONLY = (
    "psycopg",
    "psycopg_pool",
    "skift_pg",
    "starlette",
    "uvicorn",
    "prometheus_client",
    "regorus",
    "hypothesis",
    "skift._api",
    "skift._api_content",
    "skift._api_graph",
    "skift._api_import",
    "skift._api_work",
    "skift._session",
    "skift._engine",
    "skift._context",
    "skift._focus",
    "skift._patch",
    "skift._patch_state",
    "skift._principals",
    "skift._projects",
    "skift._reads",
    "skift._work",
    "skift._memory",
    "skift._policy",
    "skift_server._server",
    "skift_server._service",
    "skift_mcp",
)
# betterproto2 would import pydantic (~70 ms) for messages we do not generate.
NOT_FOR_A_CLIENT = (*SERVER_ONLY, "pydantic")

RUN = """
import contextlib, io, json, sys
from skift_cli._app import run
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = run(sys.argv[2:])
v1 = sys.modules.get("skift_server._proto.skift.v1")
made = [n for n in getattr(v1, "_MAKERS", ()) if n in vars(v1)]
with open(sys.argv[1], "w") as fh:
    doc = {"code": code, "out": out.getvalue(), "modules": sorted(sys.modules), "made": made}
    json.dump(doc, fh)
"""


def loaded(cli: Cli, tmp_path: Path, *args: str) -> tuple[str, set[str]]:
    """Run ``skift ARGS`` in a fresh interpreter; its output and the modules it imported."""
    out, modules, _ = loaded_and_made(cli, tmp_path, *args)
    return out, modules


def loaded_and_made(cli: Cli, tmp_path: Path, *args: str) -> tuple[str, set[str], list[str]]:
    """:func:`loaded`, and the classes of the generated skift.v1 module the run made."""
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-c", RUN, str(report), *args],
        capture_output=True,
        text=True,
        env=cli.env(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(report.read_text())
    assert doc["code"] == 0, (doc, proc.stderr)
    return doc["out"], set(doc["modules"]), doc["made"]


def offenders(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m in names or m.split(".")[0] in names)


# betterproto2 reads its own version with importlib.metadata (~10 ms: email, zipfile, csv);
# skift_server hands it the version from its dist-info directory's name instead.
# The generated well-known types import dateutil.parser for Timestamp.from_dict alone
# (~10% of a read's start-up with dateutil.tz and zoneinfo); skift_server puts it off until
# first use. The config file's TOML parser loads only when there is a file.
NOT_FOR_A_READ = (
    *NOT_FOR_A_CLIENT,
    "importlib.metadata",
    "email",
    "zipfile",
    "csv",
    "dateutil.parser._parser",
    "dateutil.tz",
    "tomllib",
)


def command_modules(modules: set[str]) -> set[str]:
    return {m.rsplit(".", 1)[1] for m in modules if m.startswith("skift_cli._commands.")}


def test_ready_imports_only_the_client(cli: Cli, tmp_path: Path) -> None:
    slug, _ = cli.project("imports", "one ready node")
    for args in (["ready", "-p", slug], ["ready", "-p", slug, "--json"]):
        out, modules, made = loaded_and_made(cli, tmp_path, *args)
        assert f"{slug}#1" in out  # it did talk to the server
        assert "skift_server._client" in modules
        assert offenders(modules, NOT_FOR_A_READ) == [], args
        # the command's own module, not the other sixteen
        assert command_modules(modules) == {"work"}, args
        # the generated messages are made on first use (all 207 was the largest import):
        # the ones a read names, not the service's stub, which names every message
        assert "ReadyResponse" in made, made
        assert "SkiftServiceStub" not in made, made
        assert len(made) < 50, made


def test_show_imports_its_command_module_and_the_client(cli: Cli, tmp_path: Path) -> None:
    slug, _ = cli.project("imports show", "show me")
    out, modules = loaded(cli, tmp_path, "show", f"{slug}#1")
    assert "show me" in out
    assert offenders(modules, NOT_FOR_A_READ) == []
    assert command_modules(modules) == {"nodes"}
    _, modules = loaded(cli, tmp_path, "show", f"{slug}#1", "--json")
    assert command_modules(modules) <= {"nodes", "leases"}  # the lease's JSON shape


def test_claim_and_patch_import_only_the_client(cli: Cli, tmp_path: Path) -> None:
    slug, _ = cli.project("imports claim", "take me")
    out, modules = loaded(cli, tmp_path, "claim", "-p", slug, "--json")
    assert f"{slug}#1" in out
    assert offenders(modules, NOT_FOR_A_CLIENT) == []

    doc = tmp_path / "patch.json"
    doc.write_text(json.dumps([{"op": "create_node", "alias": "a", "title": "patched"}]))
    out, modules = loaded(cli, tmp_path, "patch", "-p", slug, str(doc), "--json")
    assert "patched" in out
    assert offenders(modules, NOT_FOR_A_CLIENT) == []


def test_the_command_map_names_every_command_where_it_is_defined() -> None:
    """skift_cli._app.COMMANDS (what `skift NAME` imports) against what the modules register:
    every command and every sub-command added to a group from another module."""
    check = """
import json, click
from skift_cli._app import cli, load_all
load_all()
out = {}
def walk(top, cmd):
    out.setdefault(top, set()).add(cmd.callback.__module__.rsplit(".", 1)[1])
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            walk(top, sub)
for name, cmd in cli.commands.items():
    walk(name, cmd)
print(json.dumps({k: sorted(v) for k, v in out.items()}))
"""
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    registered = json.loads(proc.stdout)
    from skift_cli._app import COMMANDS

    mapped: dict[str, list[str]] = {}
    for module, names in COMMANDS.items():
        for name in names:
            mapped.setdefault(name, []).append(module)
    assert {k: sorted(v) for k, v in mapped.items()} == registered


def test_help_imports_neither_skift_nor_grpc(cli: Cli, tmp_path: Path) -> None:
    out, modules = loaded(cli, tmp_path, "--help")
    assert "ready" in out
    assert "webhook" in out  # every command module, listed
    assert offenders(modules, ("skift", "skift_server", "grpclib", "betterproto2")) == []
    # nor the event loop and TLS a call needs (~20 ms)
    assert offenders(modules, ("asyncio", "ssl", "concurrent")) == []
    # rich-click asks click its version; click would ask importlib.metadata (~15 ms)
    assert offenders(modules, ("importlib.metadata", "email", "zipfile")) == []
    # the config file's modules (pathlib pulls in urllib.parse and ipaddress) and the sweep
    # engine's argparse tree load where they are used, not to list the commands (~8%)
    assert offenders(modules, ("pathlib", "tomllib", "argparse", "skift_cli._sweep")) == []


def test_every_public_name_resolves() -> None:
    """The packages import their parts on first use; every exported name still resolves."""
    check = """
import skift, skift_server
for mod in (skift, skift_server):
    for name in mod.__all__:
        value = getattr(mod, name)
        assert value is not None, name
    assert set(mod.__all__) <= set(dir(mod))
from skift import *  # noqa
from skift_server import *  # noqa
assert skift.NodeFilter is skift._engine.NodeFilter
"""
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_the_put_off_dateutil_parser_still_parses() -> None:
    """skift_server stands in for dateutil.parser until first use; using it loads the real one."""
    check = """
import sys
import skift_server._client
from skift_server._proto.google.protobuf import Timestamp
assert "dateutil.parser._parser" not in sys.modules
t = Timestamp.from_dict("2026-12-01T10:00:00.5Z")
assert (t.seconds, t.nanos) == (1796119200, 500000000), t
import dateutil.parser
from dateutil.parser import isoparse
assert dateutil.parser is sys.modules["dateutil.parser"]
assert isoparse is dateutil.parser.isoparse
assert dateutil.parser.parse("2026-12-01").year == 2026
"""
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
