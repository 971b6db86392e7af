"""``python -m skift_mcp``: the ``skift-mcp`` command."""

from ._cli import main

main()
