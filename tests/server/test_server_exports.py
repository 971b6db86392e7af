"""The public names of skift_server are pinned: the API never grows by accident."""

from __future__ import annotations

import skift_server


def test_exported_names() -> None:
    assert skift_server.__all__ == [
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
    for name in skift_server.__all__:
        assert hasattr(skift_server, name)


def test_remote_offers_every_public_method_of_local_skift() -> None:
    """RemoteSkift has every public method LocalSkift has, except the in-process-only ones."""
    import skift

    # the operation table names the in-process-only methods, each with its reason
    in_process_only = {op.method for op in skift.OPERATIONS if op.local}
    assert {"authenticate", "check_action", "session"} <= in_process_only
    local = {n for n in dir(skift.LocalSkift) if not n.startswith("_")}
    local = {n for n in local if callable(getattr(skift.LocalSkift, n))} - in_process_only
    remote = {n for n in dir(skift_server.RemoteSkift) if not n.startswith("_")}
    assert local - remote == set()
