"""Replay policies: what to do per action (reuse / force-rerun / diff) and per durable call."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from agent_inspect._errors import ReplayError
from agent_inspect._glossary import count_words

__all__ = ["ActionPolicy", "CallPolicy", "Policies"]


class ActionPolicy(enum.StrEnum):
    """Per-action replay policy (#1069): ``reuse-prod`` keeps what the rule decides; ``force-rerun``
    runs the body even when a production completion exists; ``diff`` reuses the production record and
    also runs the body on a copy of memory, then compares outputs and memory updates.

    For example::

        policies = ai.executor.Policies(actions={"chat": ai.executor.ActionPolicy.DIFF})   # reuse, and compare a rerun
        ex = ai.ReplayExecutor(log, markers=markers, policies=policies)
        ex.run(); ex.report().frame["diff"].value_counts()
    """

    REUSE_PROD = "reuse-prod"
    FORCE_RERUN = "force-rerun"
    DIFF = "diff"


class CallPolicy(enum.StrEnum):
    """How a durable call that is not served by a matching record is handled on rerun: ``execute`` runs it;
    ``stub`` returns a stub value; ``deny`` raises :class:`~agent_inspect.ReplayError`; ``recorded`` serves the
    production record's result at the same index when the identity matches, else stubs or denies. A sub-agent
    call always runs its child round; the policy applies to the child's own calls.

    For example::

        ex = ai.ReplayExecutor(log, markers=markers, policies={"calls": ai.executor.CallPolicy.STUB,
                                                               "stubs": {"*": "stubbed"}})  # no stub: denied
        ex.run(); ex.counters.calls_stubbed, ex.counters.calls_executed   # no external call runs for real
    """

    EXECUTE = "execute"
    RECORDED = "recorded"
    STUB = "stub"
    DENY = "deny"


@dataclass(frozen=True)
class Policies:
    """All replay policies in one place: ``actions`` maps action names (of the agent) to an :class:`ActionPolicy`
    (``default_action`` for the rest); ``calls`` is the :class:`CallPolicy`; ``stubs`` maps function ids (``"*"``:
    any) to a value or to ``(function_id, args_digest) -> value``; ``trust_payloads`` allows unpickling recorded
    Python payloads (off by default: unpickling runs code).

    For example::

        policies = ai.executor.Policies(actions={"chat": "force-rerun"}, calls="stub", stubs={"*": "stubbed"})
        policies.for_action("chat"), policies.for_action("triage"), policies.call_policy
        ex = ai.ReplayExecutor(log, markers=markers, policies=policies)
        ex.run(); ex.counters.calls_stubbed
    """

    actions: Mapping[str, ActionPolicy | str] = field(default_factory=dict)
    default_action: ActionPolicy | str = ActionPolicy.REUSE_PROD
    calls: CallPolicy | str = CallPolicy.EXECUTE
    stubs: Mapping[str, Any] = field(default_factory=dict)
    trust_payloads: bool = False

    def __post_init__(self) -> None:
        _checked(CallPolicy, self.calls, "calls")
        _checked(ActionPolicy, self.default_action, "default_action")
        for name, policy in self.actions.items():
            _checked(ActionPolicy, policy, f"actions[{name!r}]")

    def for_action(self, name: str) -> ActionPolicy:
        return ActionPolicy(self.actions.get(name, self.default_action))

    @property
    def call_policy(self) -> CallPolicy:
        return CallPolicy(self.calls)

    def stub_for(self, function_id: str, args_digest: str) -> tuple[bool, Any]:
        for k in (function_id, "*"):
            if k in self.stubs:
                v = self.stubs[k]
                return True, (v(function_id, args_digest) if callable(v) else v)
        return False, None


_FIELDS = tuple(f.name for f in fields(Policies))


def as_policies(value: Policies | Mapping[str, Any] | None) -> Policies:
    """``value`` as :class:`Policies`: None is the defaults, a mapping holds its fields by name."""
    if value is None:
        return Policies()
    if isinstance(value, Policies):
        return value
    if not isinstance(value, Mapping):
        raise ReplayError(f"policies takes ai.executor.Policies(...) or a mapping of its fields "
                          f"({', '.join(_FIELDS)}), got {type(value).__name__} {value!r}")
    unknown = sorted(map(str, set(value) - set(_FIELDS)))
    if unknown:
        raise ReplayError(f"unknown {count_words(len(unknown), 'policy field')} {', '.join(unknown)}; "
                          f"the fields of ai.executor.Policies are {', '.join(_FIELDS)}")
    return Policies(**dict(value))


def _checked(kind: type[enum.StrEnum], value: object, name: str) -> None:
    if not any(value == k for k in kind):   # a member, or its text (a str enum compares as its text)
        raise ReplayError(f"unknown {name} policy {value!r}; use one of {', '.join(k.value for k in kind)}")
