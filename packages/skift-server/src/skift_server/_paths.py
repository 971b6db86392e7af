"""Where ``skift serve`` puts its unix socket, and how it claims the path.

The default socket is ``$XDG_RUNTIME_DIR/skift/skift.sock`` (the user's
runtime directory, created by the login manager, private to the user); for
root without one, ``/run/skift/skift.sock``; otherwise
``/tmp/skift-$UID/skift.sock`` in a directory the user owns. Clients
(``skift_server.connect()`` with no URL, the CLI) look in the same place.

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
