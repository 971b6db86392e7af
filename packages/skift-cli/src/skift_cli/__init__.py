"""The ``skift`` command line: a thin client of the skift API.

Every command decodes its flags, calls one method of a remote
:class:`skift.Skift` (``skift_server.connect``) and renders the answer: rich
tables and trees for people, the JSON shapes of SURFACE.md with ``--json``.
Heavy modules (skift, the gRPC client, rich) are imported only by the
commands that need them, so ``skift --help`` starts fast.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["HELP_ENV", "main"]

# The variables rich and rich-click read that change how help renders into a pipe (width,
# colour, theme): with none of them set, `skift --help` into a pipe is _help.txt.
HELP_ENV = (
    "COLUMNS",
    "LINES",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "TERMINAL_WIDTH",
    "FORCE_COLOR",
    "PY_COLORS",
    "NO_COLOR",
    "GITHUB_ACTIONS",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "RICH_CLICK_THEME",
    "DATABRICKS_RUNTIME_VERSION",
)


def _stored_help(args: list[str]) -> bool:
    """Write ``skift --help`` from _help.txt when rich-click would render exactly that.

    The text rich-click renders into a pipe (80 columns, no colour) is made at build time
    (packages/skift-cli/tools/gen_help.py; ``make check`` compares it with a fresh
    rendering); a terminal, or any variable of :data:`HELP_ENV`, gets rich-click itself.
    """
    import os
    import sys

    if args not in (["--help"], ["-h"]) or any(name in os.environ for name in HELP_ENV):
        return False
    out = sys.stdout
    encoding = (getattr(out, "encoding", None) or "").lower().replace("_", "-")
    if encoding not in ("utf-8", "utf8") or out.isatty():
        return False
    try:
        with open(os.path.join(os.path.dirname(__file__), "_help.txt"), "rb") as fh:
            text = fh.read()
    except OSError:
        return False
    try:
        out.flush()
        out.buffer.write(text)
        out.buffer.flush()
    except BrokenPipeError:
        pass
    return True


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``skift`` with ``argv`` (default: the process arguments) and exit."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if _stored_help(args):
        sys.exit(0)
    if args[:1] in (["ready"], ["show"]):  # called in a loop by agents: no click, no asyncio
        import gc

        # A process this short frees nothing by collecting cycles: the collector's passes
        # over the classes start-up makes were ~10% of the command's CPU.
        gc.disable()
        try:
            from ._thin import run as thin

            answers: dict[tuple[str, bytes], bytes] = {}
            code = thin(args, answers)
            if code is None:  # what _thin leaves: skift's own messages and views
                from ._fast import run as fast

                code = fast(args, answers)
        finally:
            gc.enable()
        if code is not None:
            sys.exit(code)
    if args[:1] == ["sweep"]:  # called once per item by agents: no rich-click, no gRPC
        from ._sweep import main as sweep

        sys.exit(sweep(args[1:]))
    from ._app import run

    sys.exit(run(args))
