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

    from ._app import run

    sys.exit(run(argv))
