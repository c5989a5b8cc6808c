"""Replay policies: what to do per action (reuse / force-rerun / diff) and per durable call, and how a durable call
that must run is served in a replay: executed (once), stubbed, served, or denied (§12)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from agent_inspect._errors import ReplayError
from agent_inspect._glossary import count_words
from agent_inspect.executor._steps import StepOutcome
from agent_inspect.recovery.engine import CallEvent, CallSlot, Executor, decode_recorded

__all__ = ["ActionPolicy", "CallPolicy", "Policies", "CallServer", "call_reason"]


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


_Memo = tuple[tuple[str, str], str, Any, BaseException | None]


class CallServer:
    """Applies the replay call policy; executed calls are memoised by ordinal across restarts, so ``back()``
    (a re-run from the start) does not call an external function twice."""

    def __init__(self, policies: Policies) -> None:
        self.policies = policies
        self._memo: dict[int, _Memo] = {}
        self._ordinal = 0

    def restart(self) -> None:
        """A new pass from the start: ordinals count again, the memo stays."""
        self._ordinal = 0

    def decoder(self) -> Callable[[CallSlot], Any]:
        trust = self.policies.trust_payloads
        return lambda slot: decode_recorded(slot, trust_pickles=trust)

    def runner(self, prod_calls: Sequence[CallSlot]) -> Executor:
        """The ``run`` hook of a call journal; ``prod_calls`` are the production record's results."""
        policies = self.policies
        decode = self.decoder()

        def run(fid: str, digest: str, call: Callable[[], Any], index: int) -> tuple[str, Any]:
            mode = policies.call_policy
            if mode is CallPolicy.EXECUTE:
                return self._memoised(fid, digest, call)
            if mode is CallPolicy.RECORDED and index < len(prod_calls):
                slot = prod_calls[index]
                if slot.identity == (fid, digest) and slot.status != "PENDING":
                    if slot.status == "FAILED":
                        raise decode(slot)
                    return StepOutcome.SERVED_RECORDED, decode(slot)
            has_stub, value = policies.stub_for(fid, digest)
            if has_stub and mode in (CallPolicy.STUB, CallPolicy.RECORDED):
                return StepOutcome.STUB, value
            raise ReplayError(f"durable call {fid} (args digest {digest!r}) at index {index} was denied by "
                              f"the replay call policy {mode.value!r}; add a stub for it or use calls='execute'")

        return run

    def _memoised(self, fid: str, digest: str, call: Callable[[], Any]) -> tuple[str, Any]:
        n = self._ordinal
        self._ordinal += 1
        hit = self._memo.get(n)
        if hit is not None and hit[0] == (fid, digest):
            _, outcome, value, error = hit
            if error is not None:
                raise error
            return outcome, value
        try:
            value = call()
        except Exception as exc:
            self._memo[n] = ((fid, digest), StepOutcome.EXECUTE, None, exc)
            raise
        self._memo[n] = ((fid, digest), StepOutcome.EXECUTE, value, None)
        return StepOutcome.EXECUTE, value


_REASONS: dict[str, str] = {
    StepOutcome.HIT: "recorded result replayed (identity matches at this index)",
    StepOutcome.HIT_FAILED: "recorded failure re-raised (identity matches at this index)",
    StepOutcome.PENDING_HIT: "completion-only call on a PENDING slot: hit with null payloads (§9.4)",
    StepOutcome.PENDING: "PENDING slot appended before running the call",
    StepOutcome.EXECUTE: "no recorded result: the call runs",
    StepOutcome.RECONCILE: "PENDING slot with the same identity: the reconciler runs instead of the call",
    StepOutcome.RESUBMIT: "PENDING sub-agent caller slot: the call is re-submitted with the same ids (main)",
    StepOutcome.STUB: "served by a stub (replay call policy)",
    StepOutcome.SERVED_RECORDED: "served the production record's result (replay call policy)",
    StepOutcome.DENY: "denied by the replay call policy: the body gets a ReplayError and the job stops",
}


def call_reason(ce: CallEvent) -> str:
    if ce.outcome == StepOutcome.MISMATCH:
        return f"non-deterministic call: recorded {ce.recorded} at this index; results cut here"
    if ce.outcome == StepOutcome.TRUNCATE:
        return f"reconcilable call on a different slot {ce.recorded}: results cut and persisted"
    return _REASONS.get(ce.outcome, ce.outcome)
