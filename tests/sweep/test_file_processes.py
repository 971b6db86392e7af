"""``skift sweep --state FILE`` as the new processes agents start, one per item.

Concurrent invocations serialize on the ``<state>.lock`` flock and lose no
write whatever the lease says; the output is UTF-8 and LF whatever the
locale; and the sweep path loads neither rich-click, the gRPC client nor the
engine (start-up time is measured in bench/, this guards what it imports).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SKIFT = str(Path(sys.executable).with_name("skift"))
NOW = "2026-07-02T12:00:00+00:00"


def skift(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SKIFT, *argv], capture_output=True, text=True, encoding="utf-8", env=env, check=False
    )


def test_eight_concurrent_writers_serialize_on_the_flock_and_lose_nothing(tmp_path: Path) -> None:
    state = str(tmp_path / "state.yml")
    assert (
        skift("sweep", "lease-acquire", "--state", state, "--writer", "w1", "--now", NOW).stdout
        == "OK\n"
    )
    script = (
        "import sys\n"
        "from skift_cli._sweep import main\n"
        "w, state = sys.argv[1], sys.argv[2]\n"
        "for i in range(10):\n"
        "    main(['upsert-item', '--state', state, '--id', f'{w}-{i}', '--source', 'src',\n"
        "          '--writer', 'w1', '--now', '" + NOW + "', '--json', '{\"status\": \"ingested\"}'])\n"
        "    main(['run-record', '--state', state, '--writer', w, '--outcome', 'partial',\n"
        "          '--counts', '{}', '--timestamp', str(i)])\n"
    )  # fmt: skip
    procs = [
        subprocess.Popen([sys.executable, "-c", script, f"p{n}", state], stdout=subprocess.PIPE, text=True)
        for n in range(8)
    ]  # fmt: skip
    outs = [p.communicate()[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(set(o.split()) == {"OK"} for o in outs), outs
    got = json.loads(skift("sweep", "read", "--state", state).stdout.split("\n")[1])
    assert set(got["items"]) == {f"src:p{n}-{i}" for n in range(8) for i in range(10)}
    assert got["lease"]["writer"] == "w1"
    assert got["last_run"]["timestamp"] == "9"


def test_output_and_file_are_utf8_and_lf_whatever_the_locale(tmp_path: Path) -> None:
    state = str(tmp_path / "state.yml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8"))}  # fmt: skip
    env.update(LC_ALL="C", LANG="C", PYTHONUTF8="0")
    skift("sweep", "lease-acquire", "--state", state, "--writer", "w1", "--now", NOW, env=env)
    r = skift(
        "sweep", "upsert-item", "--state", state, "--id", "1", "--source", "s",
        "--writer", "w1", "--now", NOW, "--json", '{"title": "Grüße — 東京"}', env=env,
    )  # fmt: skip
    assert (r.returncode, r.stdout) == (0, "OK\n")
    assert '    title: "Grüße — 東京"\n'.encode() in Path(state).read_bytes()
    assert b"\r" not in Path(state).read_bytes()
    r = skift("sweep", "read", "--state", state, env=env)
    assert json.loads(r.stdout.split("\n")[1])["items"]["s:1"]["title"] == "Grüße — 東京"


def test_operational_conditions_exit_0_and_misuse_exits_2_as_processes(tmp_path: Path) -> None:
    state = str(tmp_path / "state.yml")
    Path(state).write_text("garbage-with-no-colon\n")
    r = skift("sweep", "upsert-item", "--state", state, "--id", "1", "--source", "s", "--writer", "w", "--json", "{}")  # fmt: skip
    assert (r.returncode, r.stdout, r.stderr) == (0, "CORRUPT\n", "")
    r = skift("sweep", "frobnicate")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr


def test_the_sweep_path_imports_no_server_no_grpc_and_no_rich_click(tmp_path: Path) -> None:
    state = tmp_path / "state.yml"
    state.write_text('schema_version: 1\nitems:\n  "s:1":\n    status: "ingested"\n')
    probe = (
        "import sys\n"
        "import skift_cli\n"
        "try:\n"
        "    skift_cli.main(['sweep', 'read', '--state', sys.argv[1]])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('rich_click', 'click', 'rich', 'grpclib', 'betterproto2', 'skift_server', 'attrs',\n"
        "         'asyncio', 'skift._engine', 'skift._api', 'skift._models', 'skift.sweep._project')\n"
        "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe, str(state)], capture_output=True, text=True, check=False)  # fmt: skip
    assert r.stdout.startswith("OK\n")
    assert r.stderr.strip() == "[]"


def test_global_options_before_sweep_reach_it_through_the_command_tree(tmp_path: Path) -> None:
    state = str(tmp_path / "state.yml")
    # skift's own --json, before sweep, reaches it: one JSON document instead of the lines
    assert json.loads(skift("--json", "sweep", "read", "--state", state).stdout) == {
        "status": "NO-STATE",
        "payload": None,
    }
    assert skift("sweep", "read", "--state", state).stdout == "NO-STATE\n"
    assert "sweep" in skift("--help").stdout
