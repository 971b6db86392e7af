"""The frames HTTP/2 connections are handled in per turn of the event loop, by party.

A connection with few streams open and nothing waiting is *light*: what it sends is
handled as it arrives (``frames_per_turn`` frames at a time). The others are *busy*: they
share a few frames a turn between them (:class:`TurnShare`), so a flood costs each turn
of the loop a few requests' work and a caller with one call in flight waits for those
few, not for the flood.

A *party* is the identity a connection's requests present (``_fast``: the token or unix
identity the server has authenticated before; a connection whose identity it does not
know yet is a party of its own). A party's connections are light together, not each:
they share one connection's ``frames_per_turn`` a turn, and while one of them waits its
turn they are all busy. So one principal's flood over 24 connections, each with a stream
or two open, is handled as one busy party, and another principal's request is handled
in the very next turn.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Hashable
from typing import Protocol


class Waiting(Protocol):
    """A connection waiting for its turn (``_h2.GuardedH2Protocol``)."""

    def resume_turn(self) -> None: ...


class TurnShare:
    """The frames the busy connections of one listener share per turn of the event loop
    (``ConnectionLimits.busy_frames_per_turn``): a busy connection past what is left
    this turn waits, its reading paused, and the waiting ones are served in turn, first
    come first served, at the start of the next turns. Also what each party took on the
    light path this turn, and how many of its connections wait (:meth:`light_left`)."""

    __slots__ = ("_light", "_scheduled", "_waiting", "frames", "left", "queue")

    def __init__(self, frames: int) -> None:
        self.frames = max(1, frames)
        self.left = self.frames
        self.queue: collections.deque[Waiting] = collections.deque()
        self._scheduled = False
        self._light: dict[Hashable, int] = {}
        self._waiting: collections.Counter[Hashable] = collections.Counter()

    def light_left(self, party: Hashable | None, per_turn: int) -> int:
        """Frames a light connection of ``party`` may have handled now: ``per_turn``
        less what the party's connections took this turn; none while one of them waits
        (they are busy together). A connection of no known party: ``per_turn``."""
        if party is None:
            return per_turn
        if self._waiting[party]:
            return 0
        return per_turn - self._light.get(party, 0)

    def spend_light(self, party: Hashable | None, frames: int) -> None:
        if party is not None and frames:
            self._light[party] = self._light.get(party, 0) + frames
            self._schedule()

    def spend(self, frames: int) -> None:
        self.left -= frames
        self._schedule()

    def wait(self, proto: Waiting) -> None:
        self.queue.append(proto)
        self._schedule()

    def party_waits(self, party: Hashable | None, waits: bool) -> None:
        """One more (``waits``) or one fewer of ``party``'s connections waiting."""
        if party is None:
            return
        if waits:
            self._waiting[party] += 1
        elif self._waiting[party] <= 1:
            del self._waiting[party]
        else:
            self._waiting[party] -= 1

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        """A new turn: the allowance again, spent first on the connections waiting."""
        self._scheduled = False
        self.left = self.frames
        if self._light:
            self._light.clear()
        for _ in range(len(self.queue)):
            if self.left <= 0:
                break
            self.queue.popleft().resume_turn()
        if self.queue:
            self._schedule()
