"""Every option of the replay executor in one frozen, documented value; the replay policies among them (what to do
per action: reuse / force-rerun / diff, and per durable call), and how a durable call that must run is served in a
replay: executed (once), stubbed, served, or denied (§12)."""

from __future__ import annotations

import datetime
import enum
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeAlias

from agent_inspect._errors import ReplayError
from agent_inspect._glossary import count_words
from agent_inspect._types import RecoveryOverrides
from agent_inspect.codec import KEY_FORMATS, VALUE_FORMATS
from agent_inspect.executor._steps import Breakpoint, Checkpoint, Step, StepOutcome
from agent_inspect.recovery.engine import CallEvent, CallSlot, Executor, decode_recorded

__all__ = ["ExecutorOptions", "ExecutorOverrides", "Clock", "OPTION_NAMES", "ActionPolicy", "CallPolicy", "Policies",
           "CallServer", "call_reason"]


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


Clock: TypeAlias = "int | datetime.datetime | Callable[[int, Step], int | datetime.datetime]"
"""A journal clock: a base time (epoch ms or a datetime) or a pure ``clock(index, step)``."""


@dataclass(frozen=True)
class ExecutorOptions:
    """How a :class:`~agent_inspect.executor.ReplayExecutor` replays (every field optional).

    The recovery settings (rule, markers, runtime, …) are :class:`~agent_inspect.recovery.Recovery`'s instead.

    - ``policies``: per-action and per-call replay policies (:class:`Policies` or a mapping, §12).
    - ``memory`` / ``sensory``: short-term / sensory memory per key before the first step.
    - ``memory_decoder``: decodes memory values of records (e.g. ``json_envelope_decoder``).
    - ``restore``: a :class:`Checkpoint` of an earlier attempt (markers, seqNums, tasks and memory default to it;
      without ``plan=`` the inputs are the log's after its marker, as with ``markers=`` alone).
    - ``key_format``: the state-key format (``"K1"`` … ``"K2"``); default: the log's.
    - ``source_kind``: ``"kafka"`` or ``"fluss"`` (default: the log's, else Kafka).
    - ``attempt``: the attempt number in action identities (default: the plan's).
    - ``seed``: seeds event ids (default: random, so ids never repeat across attempts; ``back()`` repeats them).
    - ``breakpoints``: the :class:`Breakpoint` (or a list of them) ``run()`` stops at; ``fail_after``: the job dies
      after that many steps.
    - ``value_format``: the journal's ActionState value format (default ``"V3"``; ``"V4"`` under ``main``).
    - ``num_partitions``: partitions of the journal (default: the log's, else 1).
    - ``clock``: journal timestamps: a base time (epoch ms or datetime, + the PERSIST step index) or
      ``clock(i, step)``; default: none.
    - ``prune_tombstones``: Kafka's ``kafkaActionStateTombstoneEnabled`` (#885, §6.6): a tombstone per pruned key.

    For example::

        options = ai.executor.ExecutorOptions(policies={"calls": "stub", "stubs": {"*": "stubbed"}}, seed=7)
        ex = ai.ReplayExecutor(log, markers=markers, options=options)
        ex.run(); ex.counters
    """

    policies: Policies | Mapping[str, Any] | None = None
    memory: Mapping[str, Mapping[str, Any]] | None = None
    sensory: Mapping[str, Mapping[str, Any]] | None = None
    memory_decoder: Callable[[Any], Any] | None = None
    restore: Checkpoint | None = None
    key_format: str | None = None
    source_kind: str | None = None
    attempt: int | None = None
    seed: int | None = None
    breakpoints: Sequence[Breakpoint] = ()
    fail_after: int | None = None
    value_format: str = "V3"
    num_partitions: int | None = None
    clock: Clock | None = None
    prune_tombstones: bool = False

    def __post_init__(self) -> None:
        if self.restore is not None and not isinstance(self.restore, Checkpoint):
            raise ReplayError(f"restore takes a Checkpoint of an earlier attempt (ex.checkpoints[-1], after "
                              f"ex.checkpoint()), got {type(self.restore).__name__}; markers alone go in markers=")
        # checked here, not steps later (or never: an unknown key format replayed other state keys without a word)
        for name, value, known in (("key_format", self.key_format, KEY_FORMATS),
                                   ("source_kind", self.source_kind, ("kafka", "fluss")),
                                   ("value_format", self.value_format, VALUE_FORMATS)):
            if value is not None and value not in known:
                raise ReplayError(f"unknown {name} {value!r}; use one of {', '.join(known)}"
                                  + (" (default: the log's)" if name != "value_format" else ""))
        for name, count, least, what in (("num_partitions", self.num_partitions, 1, "a count"),
                                         ("attempt", self.attempt, 0, "an attempt number")):
            if count is not None and (isinstance(count, bool) or not isinstance(count, numbers.Integral)
                                      or count < least):
                raise ReplayError(f"{name} takes {what} >= {least} or None (the default), got {count!r}")
        for name, per_key in (("memory", self.memory), ("sensory", self.sensory)):
            if per_key is None:
                continue
            bad = next(((k, v) for k, v in per_key.items() if not isinstance(v, Mapping)), None) \
                if isinstance(per_key, Mapping) else ("", per_key)
            if bad is not None:     # {"x": 1}: one key's memory given for all (a TypeError in the engine)
                raise ReplayError(f"{name} takes per business key a mapping of memory paths to values "
                                  f"({{'user-1': {{'x': 1}}}}), got {bad[1]!r}" + (f" for {bad[0]!r}" if bad[0] else ""))
        bps = self.breakpoints   # one given alone (as one business key is for business_keys), a list or a generator
        given = tuple(bps) if isinstance(bps, Iterable) and not isinstance(bps, (str, bytes)) else (bps,)
        object.__setattr__(self, "breakpoints", given)   # a tuple: a generator is read once, here
        wrong = [bp for bp in given if not isinstance(bp, Breakpoint)]
        if wrong:                   # a key given as a breakpoint: an AttributeError at the first check
            raise ReplayError(f"breakpoints takes a Breakpoint or a list of them "
                              f"(ai.executor.Breakpoint(key=..., action=...)), got {wrong[0]!r}")
        if self.memory_decoder is not None and not callable(self.memory_decoder):
            raise ReplayError(f"memory_decoder takes a function of a record's memory value (e.g. "
                              f"ai.executor.json_envelope_decoder), got {type(self.memory_decoder).__name__}")
        clock = self.clock
        if clock is not None and not callable(clock) and not isinstance(clock, datetime.datetime) \
                and (isinstance(clock, bool) or not isinstance(clock, numbers.Integral)):
            raise ReplayError(f"clock takes epoch milliseconds (int), a datetime or a function clock(i, step), "
                              f"got {clock!r}")

    def updated(self, **changes: object) -> ExecutorOptions:
        """A copy with ``changes`` applied; a change whose value is None is not given (the option stays)."""
        given: dict[str, Any] = {k: v for k, v in changes.items() if v is not None}
        return replace(self, **given) if given else self


#: The executor-only options (the fields of :class:`ExecutorOptions`), beside the recovery settings.
OPTION_NAMES = tuple(f.name for f in fields(ExecutorOptions))


class ExecutorOverrides(RecoveryOverrides, total=False):
    """The keywords :class:`~agent_inspect.executor.ReplayExecutor` takes: the recovery settings and the fields of
    :class:`ExecutorOptions` (None, or left out: not given)."""

    policies: Policies | Mapping[str, Any] | None
    memory: Mapping[str, Mapping[str, Any]] | None
    sensory: Mapping[str, Mapping[str, Any]] | None
    memory_decoder: Callable[[Any], Any] | None
    restore: Checkpoint | None
    key_format: str | None
    source_kind: str | None
    attempt: int | None
    seed: int | None
    breakpoints: Sequence[Breakpoint] | Breakpoint | None
    fail_after: int | None
    value_format: str | None
    num_partitions: int | None
    clock: Clock | None
    prune_tombstones: bool | None
