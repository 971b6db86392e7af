"""Where ``skift serve`` puts its unix socket, and how a client finds its server.

A client given no server uses, in order: ``--server``, ``SKIFT_SERVER``, the
config file's ``server``, then the user's default socket
(``default_socket_path``: ``$XDG_RUNTIME_DIR/skift/skift.sock``, else
``/run/user/$UID/skift/skift.sock`` when that directory is the user's, else
``/run/skift/skift.sock`` for root, ``/tmp/skift-$UID/skift.sock`` for anyone
else). A server started on another path is reached by naming it; which server
started last never matters. While it starts, the server leaves
``skift.sock.starting`` (its pid) beside the socket, and a client waits for it
rather than failing. ``skift serve`` on a socket a live server holds is
refused, naming it, and removes what it created.

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
    """The user's default socket: where ``skift serve`` listens and a client looks, given none.

    ``$XDG_RUNTIME_DIR/skift/skift.sock``; without that variable (an MCP harness
    starts its servers with a minimal environment) the standard runtime
    directory ``/run/user/$UID`` when it exists and is the user's, so a server
    started from a login shell and a client started without its environment
    agree; else ``/run/skift/skift.sock`` for root, ``/tmp/skift-$UID/skift.sock``
    for anyone else. Nothing else is looked at: a server started on another
    path (``--socket``) is reached by naming it, never by having started last.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_absolute():
        return Path(runtime) / "skift" / "skift.sock"
    standard = Path(f"/run/user/{os.getuid()}")
    with contextlib.suppress(OSError):
        if standard.is_dir() and standard.stat().st_uid == os.getuid():
            return standard / "skift" / "skift.sock"
    if os.geteuid() == 0:
        return Path("/run/skift/skift.sock")
    return Path(f"/tmp/skift-{os.getuid()}") / "skift.sock"


def socket_candidates() -> list[Path]:
    """Where a client looks for ``skift serve``'s socket when it is given none: the user's
    default socket alone (kept as a list for the error that names what was looked at)."""
    return [default_socket_path()]


def find_socket() -> tuple[Path, list[Path]]:
    """The socket a client given no server uses (the user's default), and what it looked at."""
    path = default_socket_path()
    return path, [path]


def config_file() -> Path:
    """The command line's config file, ``$XDG_CONFIG_HOME/skift/config.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "skift" / "config.toml"


def configured_server() -> str | None:
    """The ``server`` of the config file, if it names one (an unreadable file names none)."""
    try:
        raw = config_file().read_bytes()
    except (OSError, RuntimeError):
        return None
    import tomllib

    try:
        value = tomllib.loads(raw.decode("utf-8")).get("server")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    return value if isinstance(value, str) and value else None


def resolve_server(flag: str | None = None) -> tuple[str, str]:
    """The server a client uses and where that came from, in this order: the flag
    (``--server``), ``SKIFT_SERVER``, the config file, the user's default socket."""
    if flag:
        return flag, "--server"
    env = os.environ.get("SKIFT_SERVER", "")
    if env:
        return env, "SKIFT_SERVER"
    configured = configured_server()
    if configured:
        return configured, f"the config file {config_file()}"
    return f"unix://{default_socket_path()}", "the default socket"


def starting_marker(path: Path) -> Path:
    """The file ``skift serve`` writes beside its socket while it starts (its pid)."""
    return path.with_name(path.name + ".starting")


def announce_starting(path: Path) -> None:
    """Say that a server is starting on ``path``, so clients wait for it instead of failing."""
    starting_marker(path).write_text(f"{os.getpid()}\n", encoding="ascii")


def clear_starting(path: Path) -> None:
    """Remove the "starting" marker beside ``path`` if this process wrote it."""
    marker = starting_marker(path)
    try:
        pid = int(marker.read_text(encoding="ascii").strip() or "0")
    except (OSError, ValueError):
        return
    if pid == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            marker.unlink()


def live_server_at(path: Path) -> bool:
    """Whether a process answers on the unix socket ``path``."""
    try:
        if not stat.S_ISSOCK(path.lstat().st_mode):
            return False
    except OSError:
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


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
        raise skift.Refused(
            f"another server is listening on {path}",
            next="It is the server your commands reach: use it (`skift status` shows it), "
            "stop it first, or give this one another path with --socket (clients then "
            "reach it with --server unix://PATH).",
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
