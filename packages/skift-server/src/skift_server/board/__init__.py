"""The web board: skift's pages for the people in the loop, served by ``skift serve --http``.

Server-rendered HTML (Jinja2 templates, a stylesheet and one small script,
all shipped in this package; nothing is fetched from anywhere else) over the
same API every adapter calls, as the signed-in person. See docs/board.md.
"""

from __future__ import annotations

from ._app import Board

__all__ = ["Board"]
