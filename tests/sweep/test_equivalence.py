"""File mode and server mode agree: the same words, payloads and bytes for any sequence.

Hypothesis draws command sequences (tests/sweepgen.py) and runs each on a
state file and on a skift project in an in-process memory store; every line
printed and the exported file must equal the file mode's. The same check
through PostgreSQL and a real server is in tests/contract/test_sweep_project.py.
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st
from sweepgen import commands, run_both

import skift
from skift.sweep._project import ProjectState

EXAMPLES = int(os.environ.get("SKIFT_SWEEP_EXAMPLES", "60"))


@settings(max_examples=EXAMPLES, deadline=None)
@given(rng=st.randoms(use_true_random=False), n=st.integers(1, 40))
def test_file_and_project_give_the_same_words_payloads_and_bytes(
    rng: random.Random, n: int
) -> None:
    async def go() -> list[str]:
        async with skift.open("memory:", principal=skift.User("ada")) as sk:
            with tempfile.TemporaryDirectory() as d:
                return await run_both(commands(rng, n), ProjectState(sk, "fb"), d)

    assert asyncio.run(go()) == []
