"""Random recovery histories as data: the options that shape them, attempts, executions and the whole history."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words
from agent_inspect.agents import INPUT_EVENT, AgentEvent
from agent_inspect.rules import resolve_rule

if TYPE_CHECKING:
    from agent_inspect.agents import DeclarativeAgent
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery import ReplayPlan

__all__ = ["HistoryOptions", "History", "Attempt", "Execution", "RuleCheckError", "event_notation"]

_VALUES = "ABCDEFGHIJ"
_KEY_FORMATS = ("K1", "K1.5", "K2")
_RUNTIMES = ("0.3", "0.4", "main")


class RuleCheckError(InspectError):
    """Bad options for the rule safety checker or its history generator."""


@dataclass(frozen=True)
class HistoryOptions:
    """What random histories may contain.

    Counts are maxima, each history draws 1..max: ``keys``, ``rounds`` (inputs per key), ``attempts``
    (production attempts, at least ``min_attempts``), ``values`` (the input alphabet: fewer values make
    branches return more often), ``roots`` (root actions), ``fanout`` (work events per input).
    Probabilities per history: ``cascades`` (work events emit follow-ups), ``subagents`` (a sub-agent
    caller root), ``durable_calls``, ``shared_children`` (children with the same attributes under every
    input, spec G02), ``identical_children`` (an input's work events all carry the same attributes, so
    they share one state key: #1084, spec G09), ``case_agents`` (the agent and input alphabet of a
    bundled case file instead of a random agent, so every shape the case matrix knows is in reach;
    ``case_ids`` limits them to some cases, e.g. ``("G09",)``),
    ``tombstones`` (pruning writes tombstones), ``call_shapes`` (an agent's durable calls take the shapes of the
    call cases D01–D06: a failure the body catches and goes on after, one call retried until it succeeds, a
    reconcilable call, Java actions whose calls carry no args digest), ``changed_calls`` (the judged recovery
    runs changed code in which one durable call differs: Python's digest mismatch truncates the journal, D02;
    a Java call, identified by its id alone, still hits, D06), ``legacy_values`` (a 0.3 history writes 0.2's V1
    values, whose call results carry no status, D04), ``k2_keys`` (a random agent's history writes K2 keys whatever
    ``key_format`` says, so a Java action keeps its records and a changed call of it is still served, D06). Per
    restore: ``branch_changes`` (a
    different input at one seq, or a key's inputs swapped) and ``savepoints`` (restore an older
    checkpoint than the latest). Per task boundary: ``checkpoints`` (take a checkpoint, which completes
    and prunes).

    ``production_rules`` are the rules the attempts' operators run (one drawn per attempt): production
    logs are written by production's rule, so the upstream ``original`` rule belongs here.
    A failover restores the failed job's latest checkpoint; a savepoint restore picks
    ``savepoint_target``: ``"any"`` checkpoint taken so far (also one of another attempt's lineage) or
    ``"first"`` (the job's fresh start, so restored memory never predates a branch change).
    ``key_format`` is ``"K1.5"`` or ``"K1"`` (snapshot flavours of the original rule) or ``"K2"`` (name-based
    action UUIDs: a Java action keeps its records across restarts, so its journal is replayed). ``runtimes`` are the
    upstream runtimes a history's attempts and recovery run (one drawn per history): ``"0.3"``, or ``"0.4"``
    and ``"main"``, which keep every retained state at a checkpoint by appending a byte-identical *refresh
    row* of it after the marker (addendum §2.2) and restore pending rounds; a bundled case's agent runs on its
    case's runtime.

    For example::

        options = ai.checker.HistoryOptions(keys=2, rounds=3, attempts=2, subagents=0.0)
        ai.checker.check("fixed", n=5, options=options).passed
    """

    keys: int = 3
    rounds: int = 4
    attempts: int = 3
    min_attempts: int = 1
    values: int = 3
    roots: int = 2
    fanout: int = 2
    cascades: float = 0.5
    subagents: float = 0.25
    durable_calls: float = 0.5
    shared_children: float = 0.5
    identical_children: float = 0.25
    case_agents: float = 0.25
    case_ids: tuple[str, ...] = ()
    branch_changes: float = 0.5
    checkpoints: float = 0.2
    savepoints: float = 0.3
    tombstones: float = 0.5
    call_shapes: float = 0.5
    changed_calls: float = 0.15
    legacy_values: float = 0.0
    production_rules: tuple[str, ...] = ("original", "fixed")
    key_format: str = "K1.5"
    k2_keys: float = 0.0
    savepoint_target: str = "any"
    runtimes: tuple[str, ...] = ("0.3", "0.4", "main")

    def __post_init__(self) -> None:
        for name in ("keys", "rounds", "attempts", "min_attempts", "values", "roots"):
            number = _number(getattr(self, name), int)
            if number < 1:
                raise RuleCheckError(f"history option {name}={getattr(self, name)!r} must be a whole number, at least 1")
            object.__setattr__(self, name, int(number))   # 2.0 and "2.0" count as 2
        if self.min_attempts > self.attempts:
            raise RuleCheckError(f"history option min_attempts={self.min_attempts} exceeds attempts={self.attempts}")
        if not 1 <= self.values <= len(_VALUES):
            raise RuleCheckError(f"history option values={self.values} must be between 1 and {len(_VALUES)}")
        fanout = _number(self.fanout, int)
        if fanout < 0:
            raise RuleCheckError(f"history option fanout={self.fanout!r} must be a whole number, 0 or more")
        object.__setattr__(self, "fanout", int(fanout))
        for name in ("cascades", "subagents", "durable_calls", "shared_children", "identical_children", "case_agents",
                     "branch_changes", "call_shapes", "changed_calls", "legacy_values", "k2_keys",
                     "checkpoints", "savepoints", "tombstones"):
            p = getattr(self, name)
            number = _number(p, float)
            if not 0.0 <= number <= 1.0:
                raise RuleCheckError(f"history option {name}={p!r} is a probability: use a number in [0, 1]")
            object.__setattr__(self, name, number)   # "0.5" (a CLI --option) counts as 0.5
        if isinstance(self.case_ids, str):
            object.__setattr__(self, "case_ids", (self.case_ids,))
        object.__setattr__(self, "case_ids", tuple(self.case_ids))
        if isinstance(self.production_rules, str):
            object.__setattr__(self, "production_rules", (self.production_rules,))
        if not self.production_rules:
            raise RuleCheckError("history option production_rules is empty; name at least one rule, e.g. 'original'")

        for r in self.production_rules:
            try:
                resolve_rule(r)
            except InspectError as exc:
                raise RuleCheckError(f"history option production_rules: {exc}") from None
        if isinstance(self.runtimes, str):
            object.__setattr__(self, "runtimes", tuple(r.strip() for r in self.runtimes.split(",") if r.strip()))
        object.__setattr__(self, "runtimes", tuple(self.runtimes))
        bad = [r for r in self.runtimes if r not in _RUNTIMES]
        if bad or not self.runtimes:
            raise RuleCheckError(f"history option runtimes={list(self.runtimes)!r}: use some of {', '.join(_RUNTIMES)}")
        if self.savepoint_target not in ("any", "first"):
            raise RuleCheckError(f"history option savepoint_target={self.savepoint_target!r}: use 'any' "
                                 "(any older checkpoint) or 'first' (the fresh start)")
        if self.key_format not in _KEY_FORMATS:
            raise RuleCheckError(f"history option key_format={self.key_format!r}: use one of {', '.join(_KEY_FORMATS)}")

    @classmethod
    def of(cls, options: HistoryOptions | Mapping[str, Any] | None = None, **overrides: Any) -> HistoryOptions:
        """Options from an instance or a mapping plus keyword overrides (unknown names are an error)."""
        if isinstance(options, HistoryOptions) and not overrides:
            return options
        merged = {**(dict(options) if isinstance(options, Mapping) else {}), **overrides}
        known = set(cls.__dataclass_fields__)
        bad = sorted(set(merged) - known)
        if bad:
            raise RuleCheckError(f"unknown history {count_words(len(bad), 'option')} {', '.join(bad)}; use {', '.join(sorted(known))}")
        ids = merged.get("case_ids")
        if isinstance(ids, str):
            merged["case_ids"] = tuple(i.strip() for i in ids.split(",") if i.strip())
        rules = merged.get("production_rules")
        if isinstance(rules, str):
            merged["production_rules"] = tuple(r.strip() for r in rules.split(",") if r.strip())
        elif rules is not None:
            merged["production_rules"] = tuple(rules)
        start = options if isinstance(options, HistoryOptions) else cls()
        return replace(start, **merged)


@dataclass(frozen=True)
class Attempt:
    """One production attempt: its rule, what it restored, its inputs and where it died."""

    number: int
    rule: str
    restored: int | None            # index into History.checkpoints (None: fresh start)
    inputs: tuple[tuple[str, str], ...]
    branch_change: str | None
    steps: int                      # steps it ran before the failure
    records: int                    # records it wrote (tombstones included)


@dataclass(frozen=True)
class Execution:
    """One action execution of the log (a case-file log line), or a tombstone (``status`` TOMB)."""

    attempt: int
    key: str
    seq: int
    action: str
    event: AgentEvent
    status: str                     # C | I | P | TOMB
    positions: tuple[int, ...]
    outputs: tuple[AgentEvent, ...] = ()
    calls: tuple[tuple[str, str, str], ...] = ()
    branch: tuple[str, ...] = ()
    tainted: bool = False


@dataclass(frozen=True)
class _Checkpoint:
    attempt: int
    checkpoint: Any                 # executor Checkpoint with the marker as the topic has it
    consumed: int                   # source inputs started before it (its attempt's own count is relative)
    paths: Mapping[str, tuple[str, ...]]
    tainted: frozenset[str]


@dataclass(frozen=True, eq=False)
class History:
    """A generated recovery history: the log production wrote, and the recovery to judge.

    ``log`` is the topic after every attempt; ``markers``, ``plan`` and ``paths`` describe the judged
    recovery (restore point, replayed inputs, and per key the true inputs by seq along its branch).
    ``branch_ok[pos]`` says whether the record at ``pos`` was written on the judged recovery's branch,
    ``tainted[pos]`` whether its attempt had already reused a record of another branch.

    For example::

        h = ai.checker.generate_history(7, keys=2, rounds=3)
        h.log.records.shape, h.markers, h.keys
        print(h.describe())
    """

    seed: int
    options: HistoryOptions
    agent_spec: Mapping[str, Any]
    agent: DeclarativeAgent
    log: ActionStateLog
    attempts: tuple[Attempt, ...]
    checkpoints: tuple[_Checkpoint, ...]
    executions: tuple[Execution, ...]
    restored: int
    recovery_inputs: tuple[tuple[str, str], ...]
    recovery_branch_change: str | None
    markers: tuple[Mapping[int, int], ...]
    plan: ReplayPlan
    paths: Mapping[str, tuple[str, ...]]
    tombstones: bool
    branch_ok: tuple[bool, ...] = field(repr=False)
    tainted: tuple[bool, ...] = field(repr=False)
    case_agent: str | None = None   # the case file whose agent this history runs (None: a random agent)
    runtime: str = "0.3"            # the upstream runtime every attempt and the recovery run
    value_format: str = "V3"        # the value format the attempts write ("V1": 0.2's, call results without status)
    key_format: str = "K1.5"        # the state-key format the attempts write (options.key_format, or K2 by k2_keys)
    #: K2: each key's digest (how steps, checkpoints and the plan's restored seqs name it) -> its text
    key_texts: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: new code the judged recovery runs (a case's ``[replay_agent]``, L01); ``agent`` is then that code
    replay_agent_spec: Mapping[str, object] | None = None
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(sorted(self.paths))

    def describe(self) -> str:
        """One line: attempts with their rules, restores and branch changes."""
        parts = [f"agent of case {self.case_agent}"] if self.case_agent else []
        if self.replay_agent_spec is not None:
            parts.append("the recovery runs changed code (replay agent)")
        if self.runtime != "0.3":
            parts.append(f"runtime {self.runtime} (refresh rows at checkpoints)")
        if self.value_format == "V1":
            parts.append("V1 values (0.2: call results without a status)")
        if self.key_format != self.options.key_format:
            parts.append(f"{self.key_format} keys")
        for a in self.attempts:
            src = "fresh" if a.restored is None else f"restore cp{a.restored}"
            change = f", {a.branch_change}" if a.branch_change else ""
            parts.append(f"att{a.number} {a.rule} ({src}{change}, died after {a.steps} steps)")
        change = f", {self.recovery_branch_change}" if self.recovery_branch_change else ""
        parts.append(f"recovery: restore cp{self.restored}{change}")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return (f"History(seed={self.seed}, keys={len(self.paths):,}, attempts={len(self.attempts):,}, "
                f"records={len(self.log):,})")


def event_notation(event: AgentEvent) -> str:
    """An event in the case-file notation (docs/reference/cases.md): ``In(A)`` or ``Ev(type,{json})``."""
    a = dict(event.attributes)
    if event.type == INPUT_EVENT and list(a) == ["input"] and isinstance(a["input"], str) \
            and a["input"].isalnum():
        return f"In({a['input']})"
    if not a:
        return f"Ev({event.type})"
    return f"Ev({event.type},{json.dumps(a, separators=(',', ':'), sort_keys=True)})"


def _number(value: object, kind: type[int] | type[float]) -> float:
    """``value`` as a number (a whole one for ``int``), or -1, out of every option's range, when it is none: a text
    such as ``--option tombstones=abc`` or ``keys=2.5`` gets the option's own one-line error, not a traceback."""
    if isinstance(value, bool):
        return -1
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return -1
    return number if kind is float or number.is_integer() else -1
