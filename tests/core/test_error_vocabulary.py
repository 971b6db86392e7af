"""Each surface words its own errors: no CLI flag or command reaches gRPC or MCP, no MCP
argument wording reaches the CLI, and no Python repr reaches anyone.

The rules (skift-core), the stores and the gRPC server raise structured errors whose
prose (``message`` and ``next``) is the same for every surface, so it may name no
surface's vocabulary; a surface words a structured move (``move={"do": …}``) in its own
(``skift_cli._moves``, ``skift_mcp._moves``). This test reads the source of every module
an error reaching gRPC or MCP is raised in, and every string of those error calls and of
the ``*_NEXT`` constants, and looks for the other surfaces' words. A dynamic half drives
the error paths the issue reported through a real server (tests/server/test_wire_errors).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ROOT / "packages"

CLI_WORDS = re.compile(
    r"(?<![\w-])--[a-z][a-z-]+"  # a flag
    r"|(?<![\w-])-p/"  # -p/--project
    r"|['(]skift [a-z]+"  # 'skift list', (skift import …)
    r"|\bskift [a-z]+ [a-z]+ [A-Z]{2,}"  # skift token create PRINCIPAL
)
PY_REPRS = re.compile(
    r"\b(Priority|Status|PrincipalKind|ReleaseReason|UsageKind)\.[A-Z]|\b\d+:\d\d:\d\d\b"
)
MCP_WORDS = re.compile(r"`[a-z_]+`|\bcall [a-z_]+ with\b")

ERRORS = {
    "SkiftError",
    "NotFound",
    "Invalid",
    "Refused",
    "Conflict",
    "FencingError",
    "CycleError",
    "IdempotencyMismatch",
    "CursorExpired",
    "LimitExceeded",
    "NothingReady",
    "Unavailable",
    "Unauthenticated",
    "invalid",  # skift_server._errors.invalid
}

# Modules whose errors reach a gRPC or MCP caller. Left out, each with its reason:
# skift/sweep (the ce-sweep engine speaks the reference engine's own command line),
# skift_pg.embedded and skift_pg._partitions (the operator's `skift admin` and `skift serve`
# on the server's machine), skift_server._cli/_server/_paths/_client* (the server's own
# command line and the client's hints about starting one), skift_server.board (people on
# the board sign in with `skift board`), skift_server._oidc (its configuration errors name
# `skift serve`'s flags, at start).
SCANNED = [
    *sorted((PACKAGES / "skift-core/src/skift").glob("*.py")),
    *sorted((PACKAGES / "skift-store-pg/src/skift_pg").glob("_*.py")),
    *[
        PACKAGES / "skift-server/src/skift_server" / name
        for name in (
            "_auth.py",
            "_errors.py",
            "_handlers.py",
            "_service.py",
            "_wire.py",
            "_upbcodec.py",
            "_convert.py",
            "_convert_graph.py",
            "_convert_ops.py",
            "_convert_types.py",
            "_admin_rpc.py",
            "_webhooks_wire.py",
            "_import_wire.py",
            "_signin_rpc.py",
        )
    ],
    *sorted((PACKAGES / "skift-mcp/src/skift_mcp").rglob("*.py")),
]
SKIPPED = {"embedded.py", "_partitions.py"}


def _strings(node: ast.AST) -> list[str]:
    """The literal text of every string (and f-string part) under ``node``."""
    out: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            out.append(sub.value)
    return out


def _called(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return ""


def error_texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string an error is raised with in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) in ERRORS:
            parts = [*node.args, *(k.value for k in node.keywords if k.arg in (None, "next"))]
            for part in parts:
                out += [(node.lineno, s) for s in _strings(part)]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if any(n.endswith("_NEXT") for n in names):
                out += [(node.lineno, s) for s in _strings(node.value)]
    return out


def _files() -> list[Path]:
    return [p for p in SCANNED if p.name not in SKIPPED and "_proto" not in p.parts]


def test_the_scan_sees_the_error_paths() -> None:
    # Guards the scanner: if it stopped finding error calls, the test below would pass vacuously.
    assert sum(len(error_texts(p)) for p in _files()) > 300


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(PACKAGES)))
def test_no_cli_words_or_python_reprs_reach_grpc_or_mcp(path: Path) -> None:
    found = [
        f"{path.name}:{line}: {text!r}"
        for line, text in error_texts(path)
        if CLI_WORDS.search(text) or PY_REPRS.search(text)
    ]
    assert not found, "words of the command line (or a Python repr) in an error:\n" + "\n".join(
        found
    )


def _wordings(module: str) -> list[str]:
    """The strings of a surface's move wordings (``skift_*._moves``)."""
    path = PACKAGES / module
    return [s for _, s in ((0, s) for s in _strings(ast.parse(path.read_text(encoding="utf-8"))))]


def test_mcp_words_moves_without_the_command_line() -> None:
    bad = [s for s in _wordings("skift-mcp/src/skift_mcp/_moves.py") if CLI_WORDS.search(s)]
    assert not bad


def test_the_command_line_words_moves_without_mcp_arguments() -> None:
    bad = [s for s in _wordings("skift-cli/src/skift_cli/_moves.py") if MCP_WORDS.search(s)]
    assert not bad


def test_every_move_the_core_names_is_worded_by_the_command_line() -> None:
    """A structured move the CLI does not word falls back to the neutral prose; a move named in
    the core for the CLI's sake must be worded there."""
    from skift_cli import _moves as cli_moves

    named: set[str] = set()
    for path in (PACKAGES / "skift-core/src/skift").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(k, ast.Constant)
                        and k.value == "do"
                        and isinstance(v, ast.Constant)
                        and isinstance(v.value, str)
                    ):
                        named.add(v.value)
    worded = set(cli_moves._WORDING)  # pyright: ignore[reportPrivateUsage]
    assert named - worded <= {"take_other_work", "await_gate", "stop_attempt", "nothing"}


def test_each_surface_words_one_move_its_own_way() -> None:
    """The same structured move: the command's flags on the CLI, the tool's arguments over MCP,
    neutral prose on gRPC (``next``)."""
    import skift
    from skift_cli._moves import next_move as cli_words
    from skift_mcp._moves import next_move as mcp_words

    exc = skift.Refused(
        "x#1 is already done",
        next="Reopen x#1 first (with a reason) to complete it again.",
        move={"do": "reopen", "ref": "x#1"},
    )
    assert "skift reopen x#1 --reason" in cli_words(exc)
    assert "reopen_node" in mcp_words(exc)
    assert "--" not in mcp_words(exc)
    assert "--" not in exc.next
    assert "skift " not in exc.next


def test_mcp_keeps_a_reference_that_starts_a_sentence() -> None:
    import skift
    from skift_mcp._moves import next_move as mcp_words

    exc = skift.Refused(
        "not ready",
        move={"do": "finish_blocker", "ref": "interop-2ec9f5#15", "blocker": "interop-2ec9f5#14"},
    )
    assert mcp_words(exc).startswith("interop-2ec9f5#14 must finish first")


def test_the_default_policy_words_its_denials_for_every_surface() -> None:
    """A denial's ``msg`` and ``next`` reach gRPC and MCP callers as they are."""
    source = (ROOT / "policy" / "default.rego").read_text(encoding="utf-8")
    texts = re.findall(r'"(?:msg|next)":\s*(?:sprintf\()?"((?:[^"\\]|\\.)*)"', source)
    assert len(texts) > 20
    bad = [t for t in texts if CLI_WORDS.search(t) or PY_REPRS.search(t)]
    assert not bad, "\n".join(bad)
