"""Where ``skift serve`` puts its unix socket, and how it claims the path.

The default socket is ``$XDG_RUNTIME_DIR/skift/skift.sock`` (the user's
runtime directory, created by the login manager, private to the user); for
root without one, ``/run/skift/skift.sock``; otherwise
``/tmp/skift-$UID/skift.sock`` in a directory the user owns. Clients
(``skift_server.connect()`` with no URL, the CLI, ``skift-mcp``) look there
and in the other candidates (``socket_candidates``), so a client with a
minimal environment finds a server started from a login shell. While it
starts, the server leaves ``skift.sock.starting`` (its pid) beside the
socket, and a client waits for it rather than failing; it also records its
socket in ``~/.local/state/skift/socket`` (``announce_file``), so a client
finds a server started with ``--socket`` elsewhere.

A client trusts a socket only when the socket and its directory belong to
the caller or to root (``check_socket_owner``): anyone else who created
them could be serving forged work, so the client refuses before connecting.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from pathlib import Path

import skift


def default_socket_path() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_absolute():
        return Path(runtime) / "skift" / "skift.sock"
    if os.geteuid() == 0:
        return Path("/run/skift/skift.sock")
    return Path(f"/tmp/skift-{os.getuid()}") / "skift.sock"


def socket_candidates() -> list[Path]:
    """Where a client looks for ``skift serve``'s socket when it is given none, in order.

    A process started with a minimal environment (an MCP harness drops
    ``XDG_RUNTIME_DIR``) still finds a server started from a login shell:
    the standard runtime directory ``/run/user/$UID`` is looked at too.
    """
    out: list[Path] = []
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_absolute():
        out.append(Path(runtime) / "skift" / "skift.sock")
    announced = announced_socket()
    if announced is not None:
        out.append(announced)
    out.append(Path(f"/run/user/{os.getuid()}") / "skift" / "skift.sock")
    if os.geteuid() == 0:
        out.append(Path("/run/skift/skift.sock"))
    out.append(Path(f"/tmp/skift-{os.getuid()}") / "skift.sock")
    return list(dict.fromkeys(out))


def find_socket() -> tuple[Path, list[Path]]:
    """The socket a client should use (the first candidate a server is at or starting on),
    and every path it looked at; none found: the server's own default."""
    candidates = socket_candidates()
    for path in candidates:
        if path.exists() or starting_pid(path) is not None:
            return path, candidates
    return default_socket_path(), candidates


def announce_file() -> Path:
    """Where ``skift serve`` records the socket it serves on, for clients without its environment.

    ``$XDG_STATE_HOME/skift/socket`` (default ``~/.local/state/skift/socket``):
    under the home directory, which even a minimal environment keeps.
    """
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "state"
    return root / "skift" / "socket"


def announced_socket() -> Path | None:
    """The socket the last ``skift serve`` of this user announced, if any."""
    try:
        text = announce_file().read_text(encoding="utf-8").strip()
    except (OSError, RuntimeError, UnicodeDecodeError):
        return None
    return Path(text) if text and Path(text).is_absolute() else None


def starting_marker(path: Path) -> Path:
    """The file ``skift serve`` writes beside its socket while it starts (its pid)."""
    return path.with_name(path.name + ".starting")


def announce_starting(path: Path) -> None:
    """Say that a server is starting on ``path``, so clients wait for it instead of failing."""
    marker = starting_marker(path)
    marker.write_text(f"{os.getpid()}\n", encoding="ascii")
    with contextlib.suppress(OSError, RuntimeError):
        record = announce_file()
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(f"socket.{os.getpid()}.tmp")
        tmp.write_text(f"{path.absolute()}\n", encoding="utf-8")
        tmp.replace(record)


def clear_starting(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        starting_marker(path).unlink()


def starting_pid(path: Path) -> int | None:
    """The pid of a live server that announced it is starting on ``path``, else None."""
    try:
        pid = int(starting_marker(path).read_text(encoding="ascii").strip() or "0")
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def prepare_socket_path(path: Path) -> None:
    """Make the socket's directory and remove a stale socket left by a dead server.

    A socket that still answers belongs to a live server: that is refused
    rather than stolen. Anything there that is not a socket is refused too.
    """
    parent = path.parent
    if not parent.exists():
        parent.mkdir(mode=0o755, parents=True)
    st = parent.stat()
    if st.st_uid != os.geteuid() and str(parent).startswith("/tmp/"):
        raise skift.Unavailable(
            f"{parent} belongs to uid {st.st_uid}, not to this user",
            next=f"Remove it, or choose another socket with --socket (this user is uid {os.geteuid()}).",
        )
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise skift.Unavailable(
            f"{path} exists and is not a socket",
            next="Remove it or choose another path with --socket.",
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: no process listens on it any more
        return
    except OSError:
        pass
    else:
        raise skift.Unavailable(
            f"another server is listening on {path}",
            next="Stop it first, or give this one another path with --socket.",
        )
    finally:
        probe.close()


def check_socket_owner(path: str | Path) -> None:
    """Refuse a unix socket, or its directory, owned by someone other than the caller or root.

    Another local user who pre-creates ``/tmp/skift-$UID`` (or any directory
    on the path a client was told) could otherwise listen there and hand the
    caller's agents forged work. A path that does not exist is left to the
    connection to report.
    """
    me = os.geteuid()
    sock = Path(path)
    for what, target in (("directory", sock.parent), ("socket", sock)):
        try:
            owner = target.lstat().st_uid if what == "socket" else target.stat().st_uid
        except FileNotFoundError:
            return
        if owner not in (me, 0):
            raise skift.Unavailable(
                f"refusing the skift server at {sock}: its {what} {target} belongs to uid "
                f"{owner}, not to this user (uid {me}) or root",
                next="Someone else may be impersonating the server: remove that path (or have "
                "its owner do so) and start 'skift serve' again, or give --server the socket "
                "of a server you trust.",
            )
