"""``skift board``: a link that signs the caller in to the web board, once; the caller's
board sessions (``sessions``) and ending them (``sign-out --all``)."""

from __future__ import annotations

import click

from .._base import Failure, app, global_options, group, to_json, usage_error


@group("Setup and admin", invoke_without_command=True)
@global_options
@click.pass_context
def board(ctx: click.Context) -> None:
    """Print a link that signs you in to the web board: once, for ten minutes.

    The board is served by 'skift serve --http HOST:PORT' ('make run' serves it
    on 127.0.0.1:7434); the link is for the person you are to the server. Open
    it in a browser: what is waiting on you, ready work, projects and holds.
    'skift board sessions' lists your signed-in browsers; 'skift board sign-out
    --all' ends them.

    Example: skift board
    """
    if ctx.invoked_subcommand is None:
        _link()


@board.command("sessions")
@click.option("--principal", metavar="NAME", help="Another person's (an admin's call).")
@global_options
def sessions(principal: str | None) -> None:
    """List your live board sessions (never their secrets): when each signed in, when it
    ends, and the kind of credential that minted its link (revoking that credential ends it).

    Example: skift board sessions --json
    """
    a = app()
    got = a.call(lambda sk: sk.board_sessions(principal))
    rows = [
        {
            "id": s.id,
            "principal": s.principal,
            "created_at": to_json(s.created_at),
            "expires_at": to_json(s.expires_at),
            "via": s.via,
        }
        for s in got
    ]
    if a.json:
        a.emit({"sessions": rows})
        return
    if not rows:
        click.echo("no board sessions")
        return
    for s in got:
        click.echo(
            f"{s.id}  {s.principal}  since {s.created_at:%Y-%m-%d %H:%M} UTC  "
            f"until {s.expires_at:%Y-%m-%d %H:%M} UTC  via {s.via}"
        )


@board.command("sign-out")
@click.option("--all", "all_", is_flag=True, help="Every session (required).")
@click.option("--principal", metavar="NAME", help="Another person's (an admin's call).")
@global_options
def sign_out(all_: bool, principal: str | None) -> None:
    """End every board session of yours, and every sign-in link you minted that nobody
    opened yet (a browser signs itself out with the board's Sign out button).

    Example: skift board sign-out --all
    """
    if not all_:
        usage_error(
            "say --all: sign-out ends every board session "
            "(one browser signs itself out with the board's Sign out button)"
        )
    a = app()
    ended = a.call(lambda sk: sk.end_board_sessions(principal))
    if a.json:
        a.emit({"ended": ended})
        return
    whose = f" of {principal}" if principal else ""
    click.echo(f"ended {ended} board session{'' if ended == 1 else 's'}{whose}")


def _link() -> None:
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
