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

from ._client import RemoteSkift, RemoteStore, connect
from ._errors import STATUS
from ._paths import default_socket_path
from ._server import ServeOptions, SkiftServer, run
from ._service import DEFAULT_MAX_MESSAGE_BYTES

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
