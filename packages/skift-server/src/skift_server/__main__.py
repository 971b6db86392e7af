"""``python -m skift_server [serve] [options]``: run ``skift serve``."""

from __future__ import annotations

import sys

from ._cli import main

sys.exit(main())
