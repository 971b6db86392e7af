"""Authorization: Rego policy evaluated with regorus on the resolved request.

The default policy ships as package data (``skift/policy/default.rego``, the
repository's ``policy/`` folder). An organization replaces or extends it with
its own Rego modules in package ``skift.authz``; the engine asks for
``data.skift.authz.deny``, a set of ``{"msg", "next"}`` objects, and refuses
the request when it is not empty.

Reads ask once per request for ``data.skift.authz.unreadable``: the projects
(ids or slugs) the principal may not read, given the organization's restricted
projects as input. Every read path then leaves those projects out.

A regorus engine is pinned to the thread that created it, so each thread
keeps its own. Anything that goes wrong while evaluating denies: a policy
that cannot be evaluated never allows.

An organization's stored modules (``skift policy set``, ``skift._org_policy``)
are layered on the process's base policy with :meth:`Policy.layered`; the
layered policies are kept by the digests of both, so a change (a new digest,
read in the transaction) is applied from the next transaction on.

A layered policy (an organization's stored modules) evaluates within a budget
of CPU time (:func:`budget_for`: the ``policy_budget`` limit, 0.1 s, plus 1% of
it per intent and per restricted project). regorus' Python engine offers no
time or instruction limit, holds the GIL while it evaluates and cannot be
interrupted, so a layered policy is evaluated in a worker process
(skift._policy_pool), killed when it runs past a wall-clock allowance; the
base policy (the process's own, trusted) stays in process. The budget is kept
two ways: a stored set is benchmarked before it takes effect
(:func:`benchmark`, in a child process that is killed past the budget), and an
evaluation that runs past it at run time trips the layered policy, which from
then on refuses that organization's requests without evaluating (fail closed;
other organizations never evaluate it) until its stored modules change. The
trip is logged and reported once (:meth:`Policy.take_trip`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import sys
import threading
import time
from collections.abc import Sequence
from importlib import resources
from typing import Any, cast

import regorus

from ._errors import Invalid, Refused, Unavailable
from ._policy_pool import (
    CHILD_ENV,
    HARD_WALL,
    START_TIMEOUT,
    Busy,
    cpu_seconds,
    overran,
    pool,
    wall_for,
)

QUERY = "data.skift.authz.deny"
READ_QUERY = "data.skift.authz.unreadable"

DECISIONS: tuple[str, ...] = (QUERY, READ_QUERY)
"""Every rule the engine asks a policy for; a stored module is tried against each before it
takes effect."""

STORED_PREFIX = "org/"
"""The engine's name for an organization's stored module ``NAME``: ``org/NAME`` (no base
module is named so)."""

_MAX_ENGINES = 64
_MAX_LAYERED = 256
_MAX_ALLOWED = 4096
"""Allowed requests the default policy remembers (:meth:`Policy.deny`); past it, it starts over."""

EVAL_BUDGET = 0.1
"""The default ``policy_budget`` (skift.Limits): CPU seconds one evaluation of an
organization's layered policy may take, plus :data:`PER_ITEM` of it per intent and
restricted project in its input. The default policy alone takes ~0.15 ms with no intent
and ~0.25 ms more per intent."""
PER_ITEM = 0.01

_log = logging.getLogger("skift.policy")


def compiled(modules: Sequence[tuple[str, str]]) -> tuple[regorus.Engine, set[str]]:
    """A new engine with ``modules`` added, and the packages they declare; Invalid naming the
    first module that does not compile.

    The engine is dropped, by the thread that made it, before the Invalid is raised: an
    exception's traceback keeps its frames and whatever they still name for as long as it
    lives; a reference cycle through it (a test's ExceptionInfo, an asyncio future) is
    collected by whichever thread runs the collector next, and regorus refuses an engine
    dropped on another thread. A caller that wants only the packages takes
    ``compiled(...)[1]``, so that no frame of its own names the engine either.
    """
    engine = regorus.Engine()
    packages: set[str] = set()
    why = None
    for name, source in modules:
        try:
            package = engine.add_policy(name, source)
        except Exception as exc:  # regorus raises plain exceptions on parse errors
            why = f"policy module {name.removeprefix(STORED_PREFIX)} does not compile: "
            why += rego_error(exc)
            break
        if package:
            packages.add(package)
    if why is not None:
        del engine
        raise Invalid(
            why, next="Fix the Rego module; it must be in package skift.authz.", field="modules"
        )
    return engine, packages


def budget_for(request: dict[str, Any], budget: float = EVAL_BUDGET) -> float:
    """The CPU seconds an evaluation of this request may take, ``budget`` per evaluation."""
    items = len(request.get("intents") or ()) + len(request.get("restricted") or ())
    return budget * (1 + PER_ITEM * items)


# Compiled engines, per thread and per policy digest. Module-level on purpose:
# a regorus engine may only be dropped by the thread that made it, and a
# per-Policy threading.local would drop other threads' engines wherever the
# Policy happens to be garbage-collected. These live as long as their thread.
_ENGINES = threading.local()

# Base policies with an organization's stored modules on top, by (base digest, stored digest).
# Plain module data (no engine), so any thread may use and drop them.
_LAYERED: dict[tuple[str, str], Policy] = {}


def _default_source() -> str:
    return (resources.files("skift") / "policy" / "default.rego").read_text(encoding="utf-8")


def rego_error(exc: BaseException) -> str:
    """What regorus says about a module, without the Rust backtrace it appends."""
    text = str(exc).split("Stack backtrace:", 1)[0].strip()
    return text or type(exc).__name__


def _digest(modules: Sequence[tuple[str, str]]) -> str:
    return hashlib.sha256(json.dumps(tuple(modules), sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def default_digest() -> str:
    """The digest of the default policy (a policy with it reads as the default does)."""
    return _digest((("default.rego", _default_source()),))


class Policy:
    """A set of Rego modules that together define ``data.skift.authz.deny``."""

    def __init__(
        self, modules: Sequence[tuple[str, str]], *, strict: bool = True, budgeted: bool = False
    ) -> None:
        """``strict``: compile now, so a broken module fails here (at open), not mid-request.
        Without it a module that does not compile denies every request, naming the error.
        ``budgeted``: each evaluation is held to :func:`budget_for` (an organization's
        stored modules; the process's own policy is trusted)."""
        self.modules = tuple(modules)
        self.digest = _digest(self.modules)
        self.budgeted = budgeted
        # why this policy refuses an organization's requests without evaluating (a trip),
        # by organization: organizations with the same stored modules share this object
        self._over: dict[object, str] = {}
        self._reported: set[object] = set()
        # the default policy's allowed requests, by what its decision reads (see deny)
        self._allowed: dict[str, bool] | None = {} if self.digest == default_digest() else None
        if strict:
            self._engine()

    @property
    def is_default(self) -> bool:
        """Whether this is the default policy (which hides no project unless one is restricted)."""
        return self.digest == default_digest()

    @classmethod
    def default(cls) -> Policy:
        """The domain model's default policy."""
        return cls([("default.rego", _default_source())])

    @classmethod
    def from_sources(cls, *sources: str) -> Policy:
        """A policy made only of these modules (replacing the default)."""
        return cls([(f"org_{i}.rego", s) for i, s in enumerate(sources)])

    def extended(self, *sources: str) -> Policy:
        """This policy plus more modules (rules in ``skift.authz`` add denials)."""
        extra = [(f"org_{i}.rego", s) for i, s in enumerate(sources)]
        return Policy([*self.modules, *extra])

    def layered(self, stored: Sequence[tuple[str, str]], digest: str) -> Policy:
        """This policy with an organization's stored modules on top (``digest`` names them).

        Kept per (base, stored) digest pair, so every transaction that reads the
        same stored digest reuses one Policy (and each thread its one engine).
        A stored set that does not compile here gives a policy that denies
        every request, naming the error (never one that allows).
        """
        if not stored:
            return self
        key = (self.digest, digest)
        got = _LAYERED.get(key)
        if got is None:
            got = Policy(
                [*self.modules, *((STORED_PREFIX + n, s) for n, s in stored)],
                strict=False,
                budgeted=True,
            )
            if len(_LAYERED) >= _MAX_LAYERED:
                _LAYERED.pop(next(iter(_LAYERED), key), None)
            _LAYERED[key] = got
        return got

    def cached_layer(self, digest: str) -> Policy | None:
        """The layered policy already made for these stored modules (by their digest), if any."""
        return _LAYERED.get((self.digest, digest))

    def check(self) -> None:
        """Compile this policy and try every decision the engine asks for on sample requests;
        Invalid names the first error (in this process: :func:`benchmark` does the same in a
        child process, within the budget).

        ``deny`` must answer a set; the read decision (``unreadable``) a set, or
        nothing when the policy has no read rule.
        """
        answers: list[tuple[str, str | None, str | None]] = []
        engine = self._engine()
        try:
            for request in _samples():
                for query in DECISIONS:
                    try:
                        engine.set_input_json(json.dumps(request))
                        answers.append((query, engine.eval_rule_as_json(query), None))
                    except Exception as exc:
                        answers.append((query, None, str(exc)))
        finally:
            del engine  # judged below, where an Invalid's traceback keeps this frame (_engine)
        for query, raw, error in answers:
            _judge(query, raw, error)

    def take_trip(self, tenant: object = None) -> str | None:
        """Why this policy tripped its budget for ``tenant`` (an organization), the first
        time it is asked after the trip."""
        why = self._over.get(tenant)
        if why is None or tenant in self._reported:
            return None
        self._reported.add(tenant)
        return why

    def clear_trip(self, tenant: object = None) -> None:
        """Evaluate ``tenant``'s requests again (its stored modules were set anew)."""
        self._over.pop(tenant, None)
        self._reported.discard(tenant)

    def _evaluate(self, request: dict[str, Any], query: str) -> Any:
        """Evaluate ``query`` in this process (the base policy, and :meth:`check`)."""
        engine = self._engine()
        try:
            engine.set_input_json(json.dumps(request, default=str))
            raw = engine.eval_rule_as_json(query)
        finally:
            del engine  # not in this frame when an exception's traceback keeps it (_engine)
        return json.loads(raw)

    async def _bounded(
        self, request: dict[str, Any], query: str, tenant: object, budget: float, workers: int
    ) -> Any:
        """Evaluate ``query`` of a layered policy in a worker process (skift._policy_pool);
        past its budget it trips (see the module). All workers busy: Unavailable."""
        if (why := self._over.get(tenant)) is not None:
            raise _OverBudget(why)
        allowed = budget_for(request, budget)
        try:
            got = await pool(workers).evaluate(
                self.digest, self.modules, query, json.dumps(request, default=str), allowed
            )
        except Busy:
            raise Unavailable(
                "every policy worker stayed busy evaluating organizations' policies",
                next="Retry the call in a moment.",
            ) from None
        rule = query.rsplit(".", 1)[1]
        if got.late:
            why = (
                f"the organization's policy ran over its budget of {allowed:.2f} s of CPU "
                f"evaluating {rule}: it was stopped before it answered"
            )
        elif got.error is None and got.spent > allowed:
            why = (
                f"the organization's policy took {got.spent:.2f} s of CPU to evaluate "
                f"{rule}, over its budget of {allowed:.2f} s"
            )
        elif got.error is not None:
            raise _Unevaluable(got.error)
        else:
            return json.loads(got.raw or "null")
        self._over[tenant] = why
        _log.warning(
            "policy over budget, refusing its organization's requests until it changes: "
            "%s (organization %s, policy %s)",
            why,
            tenant,
            self.digest,
        )
        raise _OverBudget(why)

    def _engine(self) -> regorus.Engine:
        cache: dict[str, regorus.Engine] | None = getattr(_ENGINES, "by_digest", None)
        if cache is None:
            cache = {}
            _ENGINES.by_digest = cache
        engine = cache.get(self.digest)
        if engine is None:
            engine = compiled(self.modules)[0]
            if len(cache) >= _MAX_ENGINES:  # this thread's own engines: dropped by it
                cache.pop(next(iter(cache)))
            cache[self.digest] = engine
        return engine

    def deny(self, request: dict[str, Any], tenant: object = None) -> list[dict[str, str]]:
        """The denials this policy gives for a request (empty: allowed), evaluated in this
        process (no budget: the process's own policy; a layered one: :meth:`deny_within`).

        The default policy remembers the requests it allowed by :func:`decision_key`: what
        its decision reads, without the nodes' references and the lease's ids, which it
        reads only to word a denial (``tests/core/test_policy_memo.py`` checks its source
        for that). An agent's claims and completes differ in little else, so most are
        answered without evaluating; a denial is always evaluated, worded for its nodes."""
        memo = self._allowed
        key = decision_key(request) if memo is not None else None
        if memo is not None and key is not None and key in memo:
            return []
        try:
            raw: Any = self._evaluate(request, QUERY)
        except Exception as exc:
            return _unevaluable(exc)
        denials = _denials(raw)
        if key is not None and memo is not None and not denials:
            if len(memo) >= _MAX_ALLOWED:
                memo.clear()
            memo[key] = True
        return denials

    async def deny_within(
        self, request: dict[str, Any], tenant: object, budget: float, workers: int
    ) -> list[dict[str, str]]:
        """:meth:`deny`, a layered policy within ``budget`` (CPU seconds) in one of
        ``workers`` worker processes; ``tenant`` names the organization asking (a trip of
        the budget refuses only its requests)."""
        if not self.budgeted:
            return self.deny(request, tenant)
        try:
            raw: Any = await self._bounded(request, QUERY, tenant, budget, workers)
        except _OverBudget as exc:
            return [{"msg": str(exc), "next": _OVER_BUDGET_NEXT}]
        except Unavailable:
            raise
        except Exception as exc:
            return _unevaluable(exc)
        return _denials(raw)

    def unreadable(self, request: dict[str, Any], tenant: object = None) -> list[str]:
        """The projects (ids or slugs) this policy keeps from the request's principal,
        evaluated in this process (a layered policy: :meth:`unreadable_within`).

        A policy that cannot be evaluated refuses the request (it never reads as
        "everything is readable").
        """
        try:
            raw: Any = self._evaluate(request, READ_QUERY)
        except Exception as exc:
            return _no_read_rule(exc)
        return _unreadables(raw)

    async def unreadable_within(
        self, request: dict[str, Any], tenant: object, budget: float, workers: int
    ) -> list[str]:
        """:meth:`unreadable`, a layered policy held to its budget (:meth:`deny_within`)."""
        if not self.budgeted:
            return self.unreadable(request, tenant)
        try:
            raw: Any = await self._bounded(request, READ_QUERY, tenant, budget, workers)
        except _OverBudget as exc:
            raise Refused(str(exc), next=_OVER_BUDGET_NEXT) from None
        except Unavailable:
            raise
        except Exception as exc:
            return _no_read_rule(exc)
        return _unreadables(raw)


_FACTS = ("node", "parent", "from", "to")
"""An intent's parts that are a node's facts (``skift._context.node_facts``)."""


def decision_key(request: dict[str, Any]) -> str | None:
    """What the default policy's write decision reads of ``request``: all of it but the
    references of the nodes in its intents (``ref``) and the lease's ids, which the default
    policy reads only to word a denial. None for a request not in the engine's shape
    (never remembered)."""
    if type(request) is not dict:  # pyright: ignore[reportUnnecessaryComparison]
        return None
    intents = request.get("intents")
    if type(intents) is not list:
        return None
    masked: list[dict[str, Any]] = []
    for i in cast("list[Any]", intents):
        if type(i) is not dict:
            return None
        m = dict(cast("dict[str, Any]", i))
        for part in _FACTS:
            f = m.get(part)
            if type(f) is dict and "ref" in f:
                m[part] = {**cast("dict[str, Any]", f), "ref": ""}
        masked.append(m)
    rest = {k: v for k, v in request.items() if k not in ("intents", "lease")}
    try:
        return json.dumps([rest, request.get("lease") is not None, masked])
    except (TypeError, ValueError):  # not JSON as it is: never remembered
        return None


def _unevaluable(exc: BaseException) -> list[dict[str, str]]:
    return [
        {
            "msg": f"the policy could not be evaluated ({rego_error(exc)})",
            "next": "Ask an administrator to check the organization's policy.",
        }
    ]


def _denials(raw: Any) -> list[dict[str, str]]:
    if not isinstance(raw, list):  # null, a value, an object, "<undefined>": not a set
        return [{"msg": "the policy's deny is not a set", "next": "Fix the organization's policy."}]
    out: list[dict[str, str]] = []
    for item in raw:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(item, dict):
            d: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
            out.append(
                {"msg": str(d.get("msg", "denied by policy")), "next": str(d.get("next", ""))}
            )
        else:
            out.append({"msg": str(item), "next": ""})  # pyright: ignore[reportUnknownArgumentType]
    out.sort(key=lambda d: d["msg"])
    return out


def _no_read_rule(exc: BaseException) -> list[str]:
    """A policy with no read rule reads as "everyone reads everything"; any other error
    refuses the request."""
    if "not a valid rule path" in str(exc):
        return []
    raise Refused(
        f"the policy's read decision could not be evaluated ({rego_error(exc)})",
        next="Ask an administrator to check the organization's policy.",
    ) from None


def _unreadables(raw: Any) -> list[str]:
    if raw == "<undefined>" or raw is None:
        return []
    if not isinstance(raw, list):
        raise Refused(
            "the policy's unreadable is not a set",
            next="Ask an administrator to fix the organization's policy.",
        )
    items: list[Any] = raw  # pyright: ignore[reportUnknownVariableType]
    return sorted(str(x) for x in items)


# ------------------------------------------------------------------ the budget

_OVER_BUDGET_NEXT = (
    "Ask an administrator of the organization to fix the policy's slow rule (set the "
    "policy again) or go back to the default (reset the policy)."
)


class _OverBudget(Exception):
    """An evaluation of a layered policy ran (or once ran) past its budget."""


class _Unevaluable(Exception):
    """regorus could not evaluate a layered policy in its worker (the error it raised)."""


def _samples(intents: int = 0, restricted: int = 1) -> list[dict[str, Any]]:
    """Requests of every principal kind, ``intents`` writes each, ``restricted`` projects."""
    node = {
        "ref": "try#1", "project": "try", "gate": False, "status": "open", "kind": "task",
        "filed_by_me": True, "new": False, "in_my_lease": True,
    }  # fmt: skip
    out: list[dict[str, Any]] = []
    for kind in ("user", "agent", "service"):
        out.append(
            {
                "principal": {"id": "01J0000000000000000000TRY0", "name": "try", "kind": kind},
                "lease": {"id": "01J0000000000000000000TRY2", "node": "01J0000000000000000000TRY3"},
                "intents": [
                    {
                        "action": action,
                        "index": i,
                        "node": node,
                        "parent": node,
                        "from": node,
                        "to": node,
                        "changes": ["title"],
                        "cascade": False,
                    }
                    for i, action in zip(
                        range(intents),
                        ("create", "update", "complete", "link") * intents,
                        strict=False,
                    )
                ],
                "restricted": [
                    {
                        "id": f"01J00000000000000000TRY{i:03d}",
                        "slug": f"try{i}",
                        "readers": [],
                        "reader_names": [],
                    }
                    for i in range(restricted)
                ],
            }
        )
    return out


def benchmark_requests() -> list[dict[str, Any]]:
    """What a stored policy is benchmarked on before it takes effect: every principal kind,
    with no write, one, and a hundred, and with one and a hundred restricted projects."""
    return [*_samples(), *_samples(1), *_samples(100), *_samples(0, 100)]


def _judge(query: str, raw: str | None, error: str | None) -> None:
    """Invalid when a decision's answer (JSON) or error says the policy is broken."""
    if error is not None:
        if query == READ_QUERY and "not a valid rule path" in error:
            return  # no read rule: everyone reads everything
        raise Invalid(
            f"the policy does not evaluate {query}: {rego_error(RuntimeError(error))}",
            next="Fix the Rego module (run it with 'opa eval' or regorus first).",
            field="modules",
        )
    value: Any = json.loads(raw or "null")
    if query == READ_QUERY and value in ("<undefined>", None):
        return
    if not isinstance(value, list):
        rule = query.rsplit(".", 1)[1]
        raise Invalid(
            f"the policy's {query} is not a set",
            next=f"Add to it with '{rule} contains … if {{ … }}'; never assign it.",
            field="modules",
        )


# Run by a child process: it evaluates every decision on every request and prints one JSON
# line per evaluation, so the parent sees each as it ends and kills the child past a budget.
_CHILD = """
import json, sys, time, regorus
job = json.load(sys.stdin)
engine = regorus.Engine()
for name, source in job["modules"]:
    engine.add_policy(name, source)
print('{"ready": true}', flush=True)
for i, request in enumerate(job["requests"]):
    for query in job["queries"]:
        engine.set_input_json(json.dumps(request))
        started = time.thread_time()
        try:
            raw, error = engine.eval_rule_as_json(query), None
        except Exception as exc:
            raw, error = None, str(exc)
        spent = time.thread_time() - started
        print(json.dumps({"i": i, "query": query, "raw": raw, "error": error, "spent": spent}),
              flush=True)
"""


async def _next_line(child: asyncio.subprocess.Process, budget: float) -> bytes:
    """The benchmark child's next line; empty once it has taken its wall-clock allowance
    and more than ``budget`` CPU seconds (or :data:`HARD_WALL` seconds whatever its CPU)."""
    assert child.stdout is not None
    since = cpu_seconds(child.pid)
    hard = time.monotonic() + HARD_WALL
    while True:
        wait = min(wall_for(budget), hard - time.monotonic())
        try:
            return await asyncio.wait_for(child.stdout.readline(), max(0.0, wait))
        except TimeoutError:
            if time.monotonic() >= hard or overran(child.pid, since, budget):
                return b""


async def benchmark(policy: Policy, budget: float = EVAL_BUDGET) -> None:
    """Evaluate every decision of ``policy`` on :func:`benchmark_requests` in a child process,
    each within ``budget`` (:func:`budget_for`): Invalid naming the first error, or the first
    request past its budget (the child is killed there, or once an evaluation outlasts its
    wall-clock allowance, so a policy that would run for minutes costs this server nothing)."""
    policy._engine()  # compile here first: a module that does not compile is named at once  # pyright: ignore[reportPrivateUsage]
    requests = benchmark_requests()
    job = json.dumps({"modules": policy.modules, "requests": requests, "queries": DECISIONS})
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-c", _CHILD,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=CHILD_ENV,
    )  # fmt: skip
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        child.stdin.write(job.encode())
        child.stdin.close()
        seen = 0
        try:
            ready = await asyncio.wait_for(child.stdout.readline(), START_TIMEOUT)
        except TimeoutError:
            ready = b""
        if not ready:
            raise Unavailable(
                "the policy's benchmark could not start", next="Set the policy again."
            )
        while seen < len(requests) * len(DECISIONS):
            allowed = budget_for(requests[seen // len(DECISIONS)], budget)
            line = await _next_line(child, allowed)
            if not line:
                raise Invalid(
                    f"the policy ran over its budget of {allowed:.2f} s of CPU on benchmark "
                    f"request {seen + 1} of {len(requests) * len(DECISIONS)}: it was stopped "
                    "before it answered",
                    next="Simplify the policy's rules: each decision must take at most "
                    f"{budget:.2f} s of CPU plus {PER_ITEM:.0%} of it per write and restricted "
                    "project.",
                    field="modules",
                )
            seen += 1
            got: dict[str, Any] = json.loads(line)
            request = requests[int(got["i"])]
            spent, allowed = float(got["spent"]), budget_for(request, budget)
            if got["error"] is None and spent > allowed:  # an error is judged below
                raise Invalid(
                    f"the policy took {spent:.2f} s of CPU to evaluate "
                    f"{str(got['query']).rsplit('.', 1)[1]} for a {request['principal']['kind']} "
                    f"with {len(request['intents'])} writes and {len(request['restricted'])} "
                    f"restricted projects, over its budget of {allowed:.2f} s",
                    next="Simplify the slow rule (an iteration over iterations is the usual "
                    "cause); the budget keeps one organization's policy from slowing the others.",
                    field="modules",
                )
            _judge(str(got["query"]), got["raw"], got["error"])
    finally:
        if child.returncode is None:
            child.kill()
        await child.wait()
