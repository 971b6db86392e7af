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
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Sequence
from importlib import resources
from typing import Any

import regorus

from ._errors import Invalid, Refused

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

    def __init__(self, modules: Sequence[tuple[str, str]], *, strict: bool = True) -> None:
        """``strict``: compile now, so a broken module fails here (at open), not mid-request.
        Without it a module that does not compile denies every request, naming the error."""
        self.modules = tuple(modules)
        self.digest = _digest(self.modules)
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
                [*self.modules, *((STORED_PREFIX + n, s) for n, s in stored)], strict=False
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
        Invalid names the first error (a stored module is checked so before it takes effect).

        ``deny`` must answer a set; the read decision (``unreadable``) a set, or
        nothing when the policy has no read rule.
        """
        engine = self._engine()
        for kind in ("user", "agent", "service"):
            request: dict[str, Any] = {
                "principal": {"id": "01J0000000000000000000TRY0", "name": "try", "kind": kind},
                "lease": None,
                "intents": [],
                "restricted": [
                    {"id": "01J0000000000000000000TRY1", "slug": "try", "readers": [],
                     "reader_names": []}
                ],
            }  # fmt: skip
            for query in DECISIONS:
                try:
                    engine.set_input_json(json.dumps(request))
                    raw: Any = json.loads(engine.eval_rule_as_json(query))
                except Exception as exc:
                    if query == READ_QUERY and "not a valid rule path" in str(exc):
                        continue  # no read rule: everyone reads everything
                    raise Invalid(
                        f"the policy does not evaluate {query}: {rego_error(exc)}",
                        next="Fix the Rego module (run it with 'opa eval' or regorus first).",
                        field="modules",
                    ) from None
                if query == READ_QUERY and raw in ("<undefined>", None):
                    continue
                if not isinstance(raw, list):
                    rule = query.rsplit(".", 1)[1]
                    raise Invalid(
                        f"the policy's {query} is not a set",
                        next=f"Add to it with '{rule} contains … if {{ … }}'; never assign it.",
                        field="modules",
                    )

    def _engine(self) -> regorus.Engine:
        cache: dict[str, regorus.Engine] | None = getattr(_ENGINES, "by_digest", None)
        if cache is None:
            cache = {}
            _ENGINES.by_digest = cache
        engine = cache.get(self.digest)
        if engine is None:
            engine = regorus.Engine()
            for name, source in self.modules:
                try:
                    engine.add_policy(name, source)
                except Exception as exc:  # regorus raises plain exceptions on parse errors
                    raise Invalid(
                        f"policy module {name.removeprefix(STORED_PREFIX)} does not compile: "
                        f"{rego_error(exc)}",
                        next="Fix the Rego module; it must be in package skift.authz.",
                        field="modules",
                    ) from None
            if len(cache) >= _MAX_ENGINES:  # this thread's own engines: dropped by it
                cache.pop(next(iter(cache)))
            cache[self.digest] = engine
        return engine

    def deny(self, request: dict[str, Any]) -> list[dict[str, str]]:
        """The denials this policy gives for a request (empty: allowed)."""
        try:
            engine = self._engine()
            engine.set_input_json(json.dumps(request, default=str))
            raw: Any = json.loads(engine.eval_rule_as_json(QUERY))
        except Exception as exc:
            return [
                {
                    "msg": f"the policy could not be evaluated ({rego_error(exc)})",
                    "next": "Ask an administrator to check the organization's policy.",
                }
            ]
        if not isinstance(raw, list):  # null, a value, an object, "<undefined>": not a set
            return [
                {"msg": "the policy's deny is not a set", "next": "Fix the organization's policy."}
            ]
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

    def unreadable(self, request: dict[str, Any]) -> list[str]:
        """The projects (ids or slugs) this policy keeps from the request's principal.

        A policy that cannot be evaluated refuses the request (it never reads as
        "everything is readable").
        """
        try:
            engine = self._engine()
            engine.set_input_json(json.dumps(request, default=str))
            raw: Any = json.loads(engine.eval_rule_as_json(READ_QUERY))
        except Exception as exc:
            if "not a valid rule path" in str(exc):
                return []  # a policy with no read rule: everyone reads everything
            raise Refused(
                f"the policy's read decision could not be evaluated ({rego_error(exc)})",
                next="Ask an administrator to check the organization's policy.",
            ) from None
        if raw == "<undefined>" or raw is None:
            return []
        if not isinstance(raw, list):
            raise Refused(
                "the policy's unreadable is not a set",
                next="Ask an administrator to fix the organization's policy.",
            )
        items: list[Any] = raw  # pyright: ignore[reportUnknownVariableType]
        return sorted(str(x) for x in items)
