"""Bad input on the command line is one clear sentence and exit 2, never a traceback (issue 17).

Point 6: invalid UTF-8 in an argument or in a file the CLI reads (a patch, a
body), and input nested too deeply to read (50,000 `[` in YAML, 200-deep
artifact metadata). Point 8: a 100,000-operation patch is refused by the
operations limit before the CLI parses or sends it. Every case runs the
installed ``skift`` as a process against the shared server.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import TYPE_CHECKING

from cli_harness import SKIFT, Cli

if TYPE_CHECKING:
    from pathlib import Path


def _run(
    cli: Cli, *args: str | bytes, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(SKIFT), *args],
        input=stdin,
        capture_output=True,
        env=cli.env(),
        timeout=120,
        check=False,
    )


def _clear(proc: subprocess.CompletedProcess[bytes], code: int, *words: str) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, (proc.returncode, err)
    assert "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


def test_undecodable_argument_is_invalid(cli: Cli) -> None:
    p, _ = cli.project("badarg", "one")
    _clear(_run(cli, "create", b"bad \xff\xfe title", "-p", p), 2, "not valid UTF-8")
    _clear(_run(cli, "show", b"#1\xff", "-p", p), 2, "not valid UTF-8")
    _clear(_run(cli, "ready", "-p", b"x\xff"), 2, "not valid UTF-8")


def test_undecodable_files_are_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    p, _ = cli.project("badfile", "one")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b'ops:\n  - {op: create_node, title: "\xff\xfe"}\n')
    _clear(_run(cli, "patch", str(bad), "-p", p), 2, "is not UTF-8 text", str(bad))
    _clear(_run(cli, "patch", "-", "-p", p, stdin=bad.read_bytes()), 2, "stdin is not UTF-8")
    _clear(_run(cli, "create", "t", "-p", p, "--body-file", str(bad)), 2, "--body-file")
    _clear(_run(cli, "comment", "#1", "-", "-p", p, stdin=b"\xff"), 2, "not UTF-8")


def test_deeply_nested_input_is_invalid(cli: Cli, tmp_path: Path) -> None:
    p, _ = cli.project("deep", "one")
    brackets = tmp_path / "brackets.yaml"
    brackets.write_text("[" * 50_000)
    _clear(_run(cli, "patch", str(brackets), "-p", p), 2, "nest")
    _clear(_run(cli, "patch", "-", "-p", p, stdin=b"ops: " + b"[" * 50_000), 2, "nest")
    nested: dict[str, object] = {}
    cur = nested
    for _ in range(200):
        cur["a"] = {}
        cur = cur["a"]  # type: ignore[assignment]
    art = {"op": "attach_artifact", "node": "#1", "artifact": {"name": "n", "metadata": nested}}
    doc = tmp_path / "deep.json"
    doc.write_text(json.dumps({"ops": [art]}))
    _clear(_run(cli, "patch", str(doc), "-p", p), 2, "levels deep")
    art_file = tmp_path / "art.json"  # deeper than Python's own parsers recurse
    deeper = "[" * 5_000 + "1" + "]" * 5_000
    art_file.write_text(
        '{"ops": [{"op": "attach_artifact", "node": "#1", "artifact": '
        f'{{"name": "n", "metadata": {{"m": {deeper}}}}}}}]}}'
    )
    _clear(_run(cli, "patch", str(art_file), "-p", p), 2, "nest")


def test_a_huge_patch_is_refused_before_it_is_parsed(cli: Cli, tmp_path: Path) -> None:
    p, _ = cli.project("huge", "one")
    ops = [{"op": "create_node", "title": f"t{i}"} for i in range(100_000)]
    doc = tmp_path / "huge.json"
    doc.write_text(json.dumps({"ops": ops}))
    started = time.monotonic()
    proc = _run(cli, "patch", str(doc), "-p", p, "--json")
    took = time.monotonic() - started
    _clear(proc, 1)
    err = json.loads(proc.stderr.decode().strip().splitlines()[-1])["error"]
    assert err["code"] == "limit"
    assert "100000 operations" in err["message"]
    assert "5000" in err["message"]
    assert took < 10, f"took {took:.1f}s to refuse"
    assert cli.json("list", "-p", p)["nodes"][0]["title"] == "one"
    assert len(cli.json("list", "-p", p)["nodes"]) == 1
