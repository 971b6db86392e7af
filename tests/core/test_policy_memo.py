"""The default policy remembers the requests it allowed, by what its decision reads.

``Policy.deny`` answers a request the default policy allowed before without evaluating,
when the two differ only in the references of their nodes (``ref``) and the lease's ids
(``skift._policy.decision_key``). That is sound only while the default policy reads those
only to word a denial: the first test reads its source for it, the others check that the
remembered answer is the evaluated one on every sample request, and that a denial is
always evaluated (worded for its own nodes).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import skift
from skift._policy import (  # pyright: ignore[reportPrivateUsage]
    QUERY,
    _default_source,  # pyright: ignore[reportPrivateUsage]
    _denials,  # pyright: ignore[reportPrivateUsage]
    decision_key,
)

AGENT = {"id": "01J00000000000000000000001", "name": "bot", "kind": "agent", "admin": False}
USER = {"id": "01J00000000000000000000000", "name": "ada", "kind": "user", "admin": False}
ADMIN = {**USER, "admin": True}


def _code(source: str) -> list[str]:
    """The policy's lines without comments and with its strings emptied (no string in
    default.rego holds a '#')."""
    return [
        re.sub(r'"(?:[^"\\]|\\.)*"', '""', line.split("#", 1)[0]) for line in source.splitlines()
    ]


def test_default_policy_reads_refs_and_the_lease_only_to_word_denials() -> None:
    """Every ``ref`` of default.rego is a node's reference inside a sprintf's arguments, and
    the lease (``input.lease``) is never read: so whether it allows a request does not depend
    on either, which is what lets ``deny`` remember allowed requests without them."""
    lines = _code(_default_source())
    seen = 0
    for n, line in enumerate(lines, 1):
        for m in re.finditer(r"\bref\b", line):
            seen += 1
            assert line[m.start() - 1] == ".", f"line {n}: ref read other than as a fact: {line}"
            call = line.rfind("sprintf(", 0, m.start())
            assert call >= 0, f"line {n}: a node's ref read outside a denial's wording: {line}"
            assert line.find("[", call) < m.start(), f"line {n}: ref in a format: {line}"
        assert not re.search(r"\blease\b", line), f"line {n}: the lease is read: {line}"
    assert seen > 0  # the check looked at something


def _facts(ref: str, **over: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ref": ref,
        "project": "p",
        "gate": False,
        "status": "open",
        "kind": "task",
        "filed_by_me": False,
        "new": False,
        "in_my_lease": False,
    }
    out.update(over)
    return out


ACTIONS = (
    "create",
    "update",
    "drop",
    "complete",
    "reopen",
    "link",
    "unlink",
    "hold",
    "claim",
    "comment",
    "preempt",
    "attach",
    "admin",
    "create_project",
)


def _requests(ref: str, lease: str) -> list[dict[str, Any]]:
    """Requests of every action above, for each principal and node facts, naming ``ref``
    (and the lease ``lease``)."""
    out: list[dict[str, Any]] = []
    variants = [
        {},
        {"gate": True},
        {"in_my_lease": True},
        {"filed_by_me": True},
        {"new": True},
        {"gate": True, "filed_by_me": True},
    ]
    for who, action, v in itertools.product((AGENT, USER, ADMIN), ACTIONS, variants):
        node = _facts(ref, **v)
        other = _facts(ref + "0", project="q")
        parts: dict[str, Any] = {"node": node}
        if action in ("link", "unlink"):
            parts = {"from": other, "to": node}
        elif action == "create":
            parts = {"parent": node}
        out.append(
            {
                "principal": who,
                "lease": {"id": lease, "node": lease} if v.get("in_my_lease") else None,
                "intents": [
                    {
                        "action": action,
                        "index": None,
                        "node": None,
                        "parent": None,
                        "from": None,
                        "to": None,
                        "changes": ["title"] if action == "update" else [],
                        "cascade": False,
                        **parts,
                    }
                ],
            }
        )
    return out


def _evaluated(policy: skift.Policy, request: dict[str, Any]) -> list[dict[str, str]]:
    return _denials(policy._evaluate(request, QUERY))  # pyright: ignore[reportPrivateUsage]


def test_remembered_answers_are_the_evaluated_ones() -> None:
    """The same requests naming other nodes and leases: the keys agree, and the default
    policy's answer through its memory is the one it evaluates, denial wording included."""
    policy = skift.Policy.default()
    first = _requests("p#1", "01J0000000000000000000000A")
    second = _requests("p#2", "01J0000000000000000000000B")
    allowed = 0
    for a, b in zip(first, second, strict=True):
        assert decision_key(a) == decision_key(b)
        assert policy.deny(a) == _evaluated(policy, a)
        assert policy.deny(b) == _evaluated(policy, b)  # answered from memory when allowed
        allowed += not _evaluated(policy, b)
    assert 0 < allowed < len(first)  # both outcomes were tried


def test_a_denial_names_its_own_node() -> None:
    """A denial is never remembered: each is worded for the node it is about."""
    policy = skift.Policy.default()
    gate = {"action": "claim", "node": _facts("p#7", gate=True)}
    for ref in ("p#7", "p#8"):
        gate["node"] = _facts(ref, gate=True)
        denials = policy.deny({"principal": AGENT, "lease": None, "intents": [gate]})
        assert denials
        assert ref in denials[0]["msg"]


def test_only_the_default_policy_remembers() -> None:
    """A policy with other modules may read anything: it evaluates every request."""
    extended = skift.Policy.default().extended(
        'package skift.authz\nimport rego.v1\ndeny contains {"msg": "no", "next": "x"} if '
        'input.intents[0].node.ref == "p#2"\n'
    )
    one, two = (
        {"principal": USER, "lease": None, "intents": [{"action": "claim", "node": _facts(r)}]}
        for r in ("p#1", "p#2")
    )
    assert extended.deny(one) == []
    assert extended.deny(two) != []
