"""skift over gRPC: the skift.v1 service, its client, and ``skift serve``.

    import skift_server
    async with skift_server.connect("unix:///run/user/1000/skift/skift.sock") as sk:
        page = await sk.ready()

``connect`` returns a :class:`RemoteSkift`, which offers the methods of
``skift.LocalSkift`` with the same arguments, views and errors. ``serve``
runs a server in this process (``skift-serve`` / ``python -m skift_server``
on the command line). The wire contract is ``proto/skift/v1/skift.proto``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._client import RemoteSkift, RemoteStore, connect
    from ._errors import STATUS
    from ._paths import default_socket_path
    from ._server import ServeOptions, SkiftServer, run
    from ._service import DEFAULT_MAX_MESSAGE_BYTES

# Each public name is imported on first use (PEP 562), so a client
# (``skift_server.connect``, the ``skift`` command line) never loads the
# server, its HTTP endpoint or its metrics: ``skift ready`` starts fast.
# To export a name: import it under TYPE_CHECKING, map it here, list it in __all__.
_LAZY: dict[str, str] = {
    "DEFAULT_MAX_MESSAGE_BYTES": "_service",
    "STATUS": "_errors",
    "RemoteSkift": "_client",
    "RemoteStore": "_client",
    "ServeOptions": "_server",
    "SkiftServer": "_server",
    "connect": "_client",
    "default_socket_path": "_paths",
    "run": "_server",
}


def _import_betterproto2() -> None:
    """Import betterproto2 without pydantic when pydantic is not loaded yet.

    betterproto2 imports pydantic whenever it is installed (~70 ms, a third of
    a client's start-up) only to serve messages generated as pydantic
    dataclasses; ours are plain dataclasses (``make generate`` does not ask for
    pydantic), for which betterproto2 behaves the same without it. A process
    that has already imported pydantic keeps betterproto2's default.
    """
    if "betterproto2" in sys.modules or "pydantic" in sys.modules:
        return
    sys.modules["pydantic"] = None  # type: ignore[assignment]  # `import pydantic` fails
    # betterproto2 asks importlib.metadata for its own version (~10 ms of imports: email,
    # zipfile, csv); the name of its installed dist-info directory says the same.
    stub = None if "importlib.metadata" in sys.modules else _version_stub()
    if stub is not None:
        sys.modules["importlib.metadata"] = stub
    try:
        import betterproto2  # noqa: F401  # pyright: ignore[reportUnusedImport]
    finally:
        del sys.modules["pydantic"]
        if stub is not None and sys.modules.get("importlib.metadata") is stub:
            del sys.modules["importlib.metadata"]


def _version_stub() -> Any:
    """A stand-in for importlib.metadata that answers ``version("betterproto2")`` only,
    from the dist-info directory beside the package; None when there is none to read."""
    import importlib.util
    import os
    import types

    spec = importlib.util.find_spec("betterproto2")
    if spec is None or not spec.origin:
        return None
    site = os.path.dirname(os.path.dirname(spec.origin))
    try:
        infos = [n for n in os.listdir(site) if n.startswith("betterproto2-")]
    except OSError:
        return None
    infos = [n for n in infos if n.endswith(".dist-info")]
    if len(infos) != 1:
        return None
    found = infos[0][len("betterproto2-") : -len(".dist-info")]

    def version(name: str) -> str:
        if name != "betterproto2":
            raise LookupError(name)
        return found

    stub = types.ModuleType("importlib.metadata")
    stub.version = version  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]
    return stub


def _defer_dateutil_parser() -> None:
    """Put off importing ``dateutil.parser`` until something uses it.

    The generated well-known types import ``dateutil.parser`` at module level
    for one method: ``Timestamp.from_dict`` reading an RFC 3339 string (proto
    JSON), which a client's calls never reach. The import costs a client ~10%
    of its start-up (the parser, ``dateutil.tz``, ``zoneinfo``,
    ``importlib.resources``). A stand-in module takes its place and imports
    the real one on its first attribute access, so whoever uses the parser gets
    the real module. A process that has already imported it keeps it.
    """
    import importlib
    import types

    name = "dateutil.parser"
    if name in sys.modules:
        return
    try:
        package = importlib.import_module("dateutil")
    except ImportError:
        return
    stub = types.ModuleType(name, "Stands in for dateutil.parser until it is first used.")

    def load(attr: str) -> Any:
        if sys.modules.get(name) is stub:
            del sys.modules[name]
        real = importlib.import_module(name)  # also sets the package's `parser` to it
        return getattr(real, attr)

    stub.__dict__["__getattr__"] = load
    sys.modules[name] = stub
    package.__dict__["parser"] = stub  # what `import dateutil.parser; dateutil.parser.x` reads


_import_betterproto2()
_defer_dateutil_parser()

from . import _wirecodec  # noqa: E402  # after betterproto2, imported without pydantic

_wirecodec.install()


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "STATUS",
    "RemoteSkift",
    "RemoteStore",
    "ServeOptions",
    "SkiftServer",
    "connect",
    "default_socket_path",
    "run",
]
