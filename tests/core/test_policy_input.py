"""The policy's input contract: anything malformed or missing denies, never allows, never crashes.

These call ``skift.Policy.deny`` directly with hand-made requests, because the
point is what happens to input the engine would never build. The engine's own
requests are exercised through the API in ``tests/contract/test_policy.py``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import skift

REPO = Path(__file__).resolve().parents[2]

USER = {"id": "01J00000000000000000000000", "name": "ada", "kind": "user"}
AGENT = {"id": "01J00000000000000000000001", "name": "bot", "kind": "agent"}
ADMIN = {**USER, "admin": True}


def facts(**over: Any) -> dict[str, Any]:
    """What the engine says about a node, as an agent's own leased node (``over`` changes it)."""
    out: dict[str, Any] = {
        "ref": "p#1",
        "project": "p",
        "gate": False,
        "status": "open",
        "kind": "task",
        "filed_by_me": True,
        "new": False,
        "in_my_lease": True,
    }
    out.update(over)
    return out


def intent(action: str, **parts: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "action": action,
        "index": 0,
        "node": None,
        "parent": None,
        "from": None,
        "to": None,
        "changes": [],
        "cascade": False,
    }
    out.update(parts)
    return out


@pytest.fixture(scope="module")
def policy() -> skift.Policy:
    return skift.Policy.default()


def assert_denied(denials: list[dict[str, str]]) -> None:
    assert denials, "a malformed request was allowed"
    for d in denials:
        assert set(d) == {"msg", "next"}
        assert d["msg"]
        assert d["next"]


def test_well_formed_user_request_is_allowed(policy: skift.Policy) -> None:
    """A user's well-formed request is allowed: deny is an empty list."""
    request = {
        "principal": USER,
        "lease": None,
        "intents": [intent("update", node=facts(filed_by_me=False, in_my_lease=False))],
    }
    assert policy.deny(request) == []


def test_well_formed_agent_request_is_allowed(policy: skift.Policy) -> None:
    """An agent's well-formed request the default policy permits (filing at a root) is allowed."""
    request = {
        "principal": AGENT,
        "lease": None,
        "intents": [intent("create", node=facts(new=True, in_my_lease=False))],
    }
    assert policy.deny(request) == []


MALFORMED: list[tuple[str, Any]] = [
    ("empty request", {}),
    ("no principal", {"lease": None, "intents": []}),
    ("principal null", {"principal": None, "intents": []}),
    ("principal not an object", {"principal": "ada", "intents": []}),
    ("principal kind missing", {"principal": {"id": "x", "name": "ada"}, "intents": []}),
    ("principal kind unknown", {"principal": {**USER, "kind": "robot"}, "intents": []}),
    ("principal kind not a string", {"principal": {**USER, "kind": 1}, "intents": []}),
    ("intents missing", {"principal": USER, "lease": None}),
    ("intents not a list", {"principal": USER, "intents": {"action": "create"}}),
    ("intents a string", {"principal": USER, "intents": "create"}),
    ("intent not an object", {"principal": USER, "intents": ["create"]}),
    ("intent null", {"principal": USER, "intents": [None]}),
    ("intent without action", {"principal": USER, "intents": [{"node": None}]}),
    ("action not a string", {"principal": USER, "intents": [{"action": 3}]}),
    ("unknown action, user", {"principal": USER, "intents": [intent("teleport")]}),
    ("unknown action, agent", {"principal": AGENT, "intents": [intent("teleport")]}),
    (
        "one good intent and one malformed",
        {"principal": USER, "intents": [intent("create"), "drop"]},
    ),
    ("request not an object", ["principal", "intents"]),
    ("request null", None),
]


@pytest.mark.parametrize(("case", "request_"), MALFORMED, ids=[c for c, _ in MALFORMED])
def test_malformed_request_is_denied(policy: skift.Policy, case: str, request_: Any) -> None:
    """Malformed or missing input fields give a denial with a next move, never allow, never a crash."""
    assert_denied(policy.deny(request_))


# Every action an agent takes on a node, with the facts about that node missing entirely, or
# present only in part (``in_my_lease``/``new`` claiming write access but nothing else known).
FACT_PARTS = {
    "claim": ("node",),
    "update": ("node",),
    "drop": ("node",),
    "complete": ("node",),
    "reopen": ("node",),
    "create": ("parent",),
    "link": ("from", "to"),
    "unlink": ("from", "to"),
}

PARTIAL = [
    {"in_my_lease": True},
    {"new": True},
    {"filed_by_me": True},
    {"ref": "p#1", "in_my_lease": True, "new": True, "filed_by_me": True},
    {"gate": "no", "in_my_lease": True, "new": True, "filed_by_me": True},
]


@pytest.mark.parametrize("action", sorted(FACT_PARTS))
def test_agent_intent_without_facts_is_denied(policy: skift.Policy, action: str) -> None:
    """An agent's intent with no facts about the node it touches (the key absent, as in
    ``{"action": "drop"}``) is denied: missing facts grant nothing."""
    bare = {"principal": AGENT, "lease": None, "intents": [{"action": action}]}
    assert_denied(policy.deny(bare))
    for part in FACT_PARTS[action]:
        missing = intent(action, **{p: facts() for p in FACT_PARTS[action] if p != part})
        del missing[part]
        assert_denied(policy.deny({"principal": AGENT, "lease": None, "intents": [missing]}))


@pytest.mark.parametrize("action", sorted(FACT_PARTS))
@pytest.mark.parametrize("partial", PARTIAL, ids=lambda p: ",".join(sorted(p)))
def test_agent_intent_with_partial_facts_is_denied(
    policy: skift.Policy, action: str, partial: dict[str, Any]
) -> None:
    """Facts present only in part (write access claimed, whether it is a gate unknown) grant
    nothing: an agent's intent is denied unless every fact the rule reads is there."""
    parts = {p: dict(partial) for p in FACT_PARTS[action]}
    request = {"principal": AGENT, "lease": None, "intents": [intent(action, **parts)]}
    assert_denied(policy.deny(request))


def test_agent_update_without_changes_list_is_denied(policy: skift.Policy) -> None:
    """An update whose changed fields are not a list cannot be checked for gate disposal, so it is
    denied even on the agent's own leased node."""
    for changes in (None, "assignee", {"assignee": "bot"}):
        request = {
            "principal": AGENT,
            "lease": None,
            "intents": [{**intent("update", node=facts(gate=True, new=True)), "changes": changes}],
        }
        assert_denied(policy.deny(request))
    no_key = intent("update", node=facts())
    del no_key["changes"]
    assert_denied(policy.deny({"principal": AGENT, "lease": None, "intents": [no_key]}))


def test_agent_reparent_with_parent_facts_missing_is_denied(policy: skift.Policy) -> None:
    """Moving a node to a parent the request says nothing about is denied (a null parent means the
    root, which is allowed; an absent one is not)."""
    moved = intent("update", node=facts(), changes=["parent"])
    assert policy.deny({"principal": AGENT, "lease": None, "intents": [moved]}) == []
    del moved["parent"]
    assert_denied(policy.deny({"principal": AGENT, "lease": None, "intents": [moved]}))


def test_policy_module_that_does_not_compile_is_invalid() -> None:
    """A policy module that does not compile is refused at construction (skift.Invalid naming the
    module and what to do), never at the first request."""
    with pytest.raises(skift.Invalid) as ei:
        skift.Policy.from_sources("package skift.authz\n\nthis is not rego {")
    assert "org_0.rego" in ei.value.message
    assert "package skift.authz" in ei.value.next
    with pytest.raises(skift.Invalid):
        skift.Policy.default().extended("package skift.authz\nimport rego.v1\ndeny contains x if {")


NOT_A_SET = {
    "a number": "deny := 3",
    "a string": 'deny := "no"',
    "a boolean": "deny := true",
    "an object": 'deny := {"msg": "x"}',
    "null": "deny := null",
    "undefined": "deny := input.no.such.field",
}


@pytest.mark.parametrize("body", NOT_A_SET.values(), ids=list(NOT_A_SET))
def test_policy_whose_deny_is_not_a_set_denies(body: str) -> None:
    """A policy whose deny is not a set denies every request (users' too), with a next move."""
    policy = skift.Policy.from_sources(f"package skift.authz\nimport rego.v1\n\n{body}\n")
    assert_denied(policy.deny({"principal": USER, "lease": None, "intents": []}))


@pytest.mark.parametrize(
    "source",
    [
        "package skift.authz\nimport rego.v1\n\nx := 1\n",  # no deny rule at all
        "package other\nimport rego.v1\n\ndeny contains 1 if true\n",  # the wrong package
        "package skift.authz\nimport rego.v1\n\ndeny contains x if { x := 1 / 0 }\n",  # errors
    ],
    ids=["no deny rule", "wrong package", "evaluation error"],
)
def test_policy_that_cannot_be_evaluated_denies(source: str) -> None:
    """A policy that cannot be evaluated (no deny rule, the wrong package, a run-time error) denies:
    a policy that cannot be evaluated never allows."""
    assert_denied(
        skift.Policy.from_sources(source).deny({"principal": USER, "lease": None, "intents": []})
    )


def test_empty_deny_set_allows() -> None:
    """An organization policy whose deny set is empty allows (the baseline the above depart from)."""
    policy = skift.Policy.from_sources(
        "package skift.authz\nimport rego.v1\n\ndeny contains 1 if false\n"
    )
    assert policy.deny({"principal": AGENT, "lease": None, "intents": [intent("admin")]}) == []


def test_denials_are_sorted_and_complete(policy: skift.Policy) -> None:
    """Every denial of a request is returned (sorted by message), each with its next move."""
    request = {
        "principal": AGENT,
        "lease": None,
        "intents": [
            intent("hold", node=facts()),
            intent("admin"),
            intent("update_project"),
        ],
    }
    denials = policy.deny(request)
    assert [d["msg"] for d in denials] == sorted(d["msg"] for d in denials)
    assert len(denials) == 3
    assert_denied(denials)


def test_default_policy_is_the_repositorys() -> None:
    """The default policy shipped as package data (skift/policy/default.rego) is the repository's
    policy/default.rego, and it is what Policy.default() evaluates."""
    repo_text = (REPO / "policy" / "default.rego").read_text(encoding="utf-8")
    shipped = (resources.files("skift") / "policy" / "default.rego").read_text(encoding="utf-8")
    assert shipped == repo_text
    assert skift.Policy.default().modules == (("default.rego", repo_text),)


# ---------------------------------------------------------------- the read decision

SECRET = {
    "id": "01J0000000000000000000000S",
    "slug": "secret",
    "readers": [USER["id"]],
    "reader_names": ["ada"],
}


def read(principal: dict[str, Any], restricted: Any) -> dict[str, Any]:
    return {"principal": principal, "restricted": restricted}


def test_default_read_decision_hides_a_restricted_project_from_non_readers(
    policy: skift.Policy,
) -> None:
    assert policy.unreadable(read(USER, [SECRET])) == []
    assert policy.unreadable(read(AGENT, [SECRET])) == [SECRET["id"]]
    # nothing restricted: everyone in the organization reads everything
    assert policy.unreadable(read(AGENT, [])) == []
    assert policy.unreadable(read(USER, [])) == []


@pytest.mark.parametrize(
    "restricted",
    [None, "x", [{"slug": "s"}], [{"id": "P", "slug": "s", "readers": "ada"}]],
    ids=["null", "string", "no readers", "readers not a list"],
)
def test_malformed_read_input_never_reveals(policy: skift.Policy, restricted: Any) -> None:
    """A restriction the engine would never build hides what it names, or refuses the
    request: it never errs open."""
    if not isinstance(restricted, list):
        with pytest.raises(skift.Refused) as got:
            policy.unreadable(read(AGENT, restricted))
        assert "Stack backtrace" not in str(got.value)
        return
    named = [r.get("id") for r in restricted if r.get("id")]
    assert policy.unreadable(read(AGENT, restricted)) == named


def test_an_organizations_rego_widens_and_narrows_reads(policy: skift.Policy) -> None:
    org = policy.extended(
        'package skift.authz\nimport rego.v1\nreadable contains "secret" if input.principal.name == "bot"\n',
        'package skift.authz\nimport rego.v1\nunreadable contains "payroll" if not input.principal.kind == "user"\n',
    )
    assert org.unreadable(read(AGENT, [SECRET])) == ["payroll"]
    assert org.unreadable(read(USER, [SECRET])) == []


def test_a_policy_without_a_read_rule_reads_everything() -> None:
    only_writes = skift.Policy.from_sources("package skift.authz\nimport rego.v1\ndeny := set()\n")
    assert only_writes.unreadable(read(AGENT, [SECRET])) == []


def test_a_read_decision_that_is_not_a_set_refuses() -> None:
    odd = skift.Policy.from_sources(
        'package skift.authz\nimport rego.v1\ndeny := set()\nunreadable := "everything"\n'
    )
    with pytest.raises(skift.Refused) as got:
        odd.unreadable(read(AGENT, []))
    assert got.value.next


def test_restricting_is_an_admins_call(policy: skift.Policy) -> None:
    for action in ("restrict_project", "unrestrict_project"):
        for who in (AGENT, USER, {**AGENT, "admin": True}):
            request = {"principal": who, "lease": None, "intents": [intent(action, project="p")]}
            denials = policy.deny(request)
            assert [d["msg"] for d in denials] == [
                "only an admin of the organization restricts who reads p"
            ], who
            assert denials[0]["next"]
        request = {"principal": ADMIN, "lease": None, "intents": [intent(action, project="p")]}
        assert policy.deny(request) == []


@pytest.mark.parametrize("action", ["admin", "set_policy"])
def test_only_an_admin_administers(policy: skift.Policy, action: str) -> None:
    """The admin role decides: a person without it is refused; an agent never has it (an
    ``admin`` flag on an agent is ignored); missing or malformed, it is no role."""
    for who in (
        USER,
        {**USER, "admin": False},
        {**USER, "admin": "true"},
        AGENT,
        {**AGENT, "admin": True},
    ):
        request = {"principal": who, "lease": None, "intents": [intent(action)]}
        denials = policy.deny(request)
        assert denials, (action, who)
        assert "admin of the organization" in denials[0]["msg"] or (
            "only a person" in denials[0]["msg"] and who["kind"] == "agent"
        )
    request = {"principal": ADMIN, "lease": None, "intents": [intent(action)]}
    assert policy.deny(request) == []


@pytest.mark.parametrize("action", ["own_token", "list_principals", "sweep"])
def test_a_person_takes_their_own_administrative_steps(policy: skift.Policy, action: str) -> None:
    for who in (USER, ADMIN):
        request = {"principal": who, "lease": None, "intents": [intent(action)]}
        assert policy.deny(request) == []
    request = {"principal": AGENT, "lease": None, "intents": [intent(action)]}
    assert [d["msg"] for d in policy.deny(request)] == [
        "only a person administers principals, identities and tokens"
    ]
