"""The next move of a refusal, worded for the command line (its commands and flags).

The core names the move in a structured form (``SkiftError.move``); the MCP
tools word the same move with their parameters. A move this module does not
know falls back to the core's prose (``SkiftError.next``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import skift


def _wait_for_work(m: dict[str, Any]) -> str:
    held = " ('skift list --held' shows the held ones)" if m.get("held") else ""
    return (
        "Wait for work (claim --wait 5m), widen the filters, or ask a person to release "
        f"held work{held}."
    )


_WORDING: dict[str, Callable[[dict[str, Any]], str]] = {
    "wait_for_work": _wait_for_work,
    "name_project": lambda m: "Qualify it as slug#N, or name the project with -p/--project.",
    "finish_blocker": lambda m: (
        f"Finish {m['blocker']} first, or take other work ('skift explain {m['ref']}' "
        "shows the chain)."
    ),
    "ask_unhold": lambda m: (
        f"Release the hold ('skift unhold {m['ref']} --reason …') if it is yours to "
        "release, or take other work."
    ),
    "explain": lambda m: f"'skift explain {m['ref']}' says why.",
    "claim_children": lambda m: (
        f"Its children are the work: 'skift list --parent {m['ref']}', then claim one."
    ),
    "raise_cascade_bound": lambda m: (
        f"Read what it takes ('skift list'), then give --max-nodes {m['count']} or more, "
        "or drop without --cascade."
    ),
    "add_principal": lambda m: (
        f"Ask a skift admin to run 'skift principal add NAME --kind user --uid {m['uid']}'."
    ),
    "attach_identity": lambda m: (
        f"Ask a skift admin to run 'skift principal attach PRINCIPAL {m['scheme']} {m['value']}'."
    ),
    "invite_identity": lambda m: (
        "Ask an admin of your organization to run 'skift principal invite NAME --oidc "
        f"{m.get('value') or 'ISSUER|SUBJECT'}', then sign in with it again."
        if m.get("value")
        else "Invite it: 'skift principal invite NAME --oidc ISSUER|SUBJECT', then have the "
        "person sign in with a token for it."
    ),
    "present_invite": lambda m: (
        "Sign in again with the invitation's code from the admin who invited you: "
        "SKIFT_INVITE=CODE skift status (with your OIDC token in SKIFT_TOKEN)."
    ),
    "list_invites": lambda m: "'skift principal invites' lists the pending invitations.",
    "grant_admin": lambda m: (
        "Grant the role to another person first ('skift principal grant-admin NAME --reason R')."
    ),
    "get_token": lambda m: "Ask a skift admin for a token ('skift token create PRINCIPAL').",
    "pass_lease": lambda m: (
        "Pass the lease id claim printed (--lease L); a person taking someone else's lease "
        "back preempts it (--preempt --reason R)."
    ),
    "import_as": lambda m: "Import it under another slug (skift import FILE -p NEW_SLUG).",
    "list_comments": lambda m: "'skift comments REF' lists a node's comments.",
    "list_projects": lambda m: (
        "List projects with 'skift project list', or create one with 'skift project create TITLE'."
    ),
    "give_reason": lambda m: (
        "Say why (--reason), because a change nobody can explain is one nobody dares undo."
    ),
    "list_nodes": lambda m: "Check the reference; 'skift list' shows a project's nodes.",
    "unhold_project": lambda m: (
        f"Release it first with 'skift unhold --project {m['project']} --reason …'."
    ),
    "break_cycles": lambda m: (
        "Remove one of those dependencies in beads, or import with --break-cycles to drop "
        "the fewest blocks dependencies (they are listed)."
    ),
    "skip_dangling": lambda m: (
        "Export the whole beads database, or pass --skip-dangling to import without those "
        "dependencies."
    ),
    "claim": lambda m: f"Nobody holds it; change it directly, or 'skift claim {m['ref']}'.",
    "reset_policy": lambda m: (
        "Give one or more Rego files; 'skift policy reset --reason R' goes back to the default."
    ),
    "bind_uid": lambda m: (
        "Ask an administrator of the server to bind it ('skift org create NAME --admin NAME "
        "--uid UID' for a new organization's first user); use a token or OIDC meanwhile."
    ),
    "list_orgs": lambda m: "Choose another name ('skift org list' shows them).",
    "reopen": lambda m: f"Reopen it first ('skift reopen {m['ref']} --reason …').",
    "unhold": lambda m: f"Release it first ('skift unhold {m['ref']} --reason …').",
    "list_principals": lambda m: (
        "'skift principal list' shows them; 'skift principal add NAME --kind KIND' adds one."
    ),
    "board_link": lambda m: "Run 'skift board' for a new link.",
    "show_usage": lambda m: (
        f"Ask a person to raise the cap on {m['ref']}, or take other work; "
        f"'skift usage show {m['ref']} --subtree' shows the spend."
    ),
}


def next_move(exc: skift.SkiftError) -> str:
    """The next move in the command line's vocabulary: the move's wording, else ``exc.next``."""
    move = exc.move
    if move is not None:
        word = _WORDING.get(str(move["do"]))
        if word is not None:
            try:
                return word(move)
            except KeyError:
                return exc.next
    return exc.next
