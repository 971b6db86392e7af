"""The ce-sweep state in a file: load, the ownership check, atomic writes, the flock.

A state file the caller does not own is CORRUPT (a co-tenant must not plant a
lease, a cursor or item text an agent will read). Every read-modify-write
holds an exclusive ``flock`` on ``<state>.lock`` from load to write, whatever
the lease says, so concurrent invocations serialize and lose nothing. Writes
go to a temporary file beside the state (mode 0600) and replace it
atomically, so a reader never sees a torn file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Generator

from ._rules import (
    MUTATING,
    Clock,
    Command,
    Loaded,
    Outcome,
    State,
    apply,
    state_from_text,
    utc_now,
)
from ._yaml import emit_document


def load(path: str) -> Loaded:
    """The state at ``path``: absent (missing or empty), corrupt, or parsed."""
    try:
        with open(path, encoding="utf-8") as f:
            geteuid = getattr(os, "geteuid", None)
            if geteuid is not None and os.fstat(f.fileno()).st_uid != geteuid():
                return Loaded("corrupt")
            text = f.read()
    except FileNotFoundError:
        return Loaded("absent")
    except (OSError, UnicodeDecodeError):
        return Loaded("corrupt")
    return state_from_text(text)


def write(path: str, state: State) -> None:
    """Replace ``path`` with the state's text, atomically (UTF-8, LF, whatever the locale)."""
    text = emit_document(state)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-sweep-", suffix=".yml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def write_lock(path: str) -> Generator[None]:
    """Hold the exclusive flock on ``<path>.lock`` (unlocked where flock is missing)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: single writer by convention
        yield
        return
    try:
        fd = os.open(path + ".lock", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    except OSError:
        yield  # cannot create the lock file: the reference engine degrades to unlocked
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


class FileState:
    """The state engine on one file (``skift sweep --state FILE``)."""

    def __init__(self, path: str, *, clock: Clock = utc_now) -> None:
        self.path = path
        self.clock = clock

    def run(self, cmd: Command) -> Outcome:
        """Run a subcommand; an unexpected failure (an unwritable file) is ERROR."""
        try:
            if cmd.name in MUTATING:
                with write_lock(self.path):
                    return self._step(cmd)
            return self._step(cmd)
        except Exception as exc:
            return Outcome("ERROR", error=f"internal error: {exc!r}")

    def _step(self, cmd: Command) -> Outcome:
        out = apply(cmd, load(self.path), self.clock)
        if out.write is not None:
            write(self.path, out.write)
        return out

    def load(self) -> Loaded:
        return load(self.path)
