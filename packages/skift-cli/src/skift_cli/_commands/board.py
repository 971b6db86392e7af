"""``skift board``: a link that signs the caller in to the web board, once."""

from __future__ import annotations

from .._base import Failure, app, command, global_options


@command("Setup and admin")
@global_options
def board() -> None:
    """Print a link that signs you in to the web board: once, for ten minutes.

    The board is served by 'skift serve --http HOST:PORT' ('make run' serves it
    on 127.0.0.1:7434); the link is for the person you are to the server. Open
    it in a browser: what is waiting on you, ready work, projects and holds.

    Example: skift board
    """
    import skift

    a = app()
    got = a.call(lambda sk: sk.mint_signin_code())
    if not got.url:
        raise Failure(
            skift.Refused(
                "the server does not serve the board (it was started without --http)",
                next="Start it with 'skift serve --http 127.0.0.1:7434' ('make run' does), "
                "then run 'skift board' again.",
            ),
            server=a.server_shown(),
        )
    if a.json:
        a.emit({"url": got.url, "principal": got.principal, "expires_at": got.expires_at})
        return
    print(f"Open this link to sign in to the skift board as {got.principal}")
    print(f"(it works once, until {got.expires_at:%H:%M} UTC):")
    print()
    print(f"  {got.url}")
