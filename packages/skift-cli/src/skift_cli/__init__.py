"""The ``skift`` command line: a thin client of the skift API.

Every command decodes its flags, calls one method of a remote
:class:`skift.Skift` (``skift_server.connect``) and renders the answer: rich
tables and trees for people, the JSON shapes of SURFACE.md with ``--json``.
Heavy modules (skift, the gRPC client, rich) are imported only by the
commands that need them, so ``skift --help`` starts fast.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``skift`` with ``argv`` (default: the process arguments) and exit."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["sweep"]:  # called once per item by agents: no rich-click, no gRPC
        from ._sweep import main as sweep

        sys.exit(sweep(args[1:]))
    from ._app import run

    sys.exit(run(args))
