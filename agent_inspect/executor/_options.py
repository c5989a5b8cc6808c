"""Every option of the replay executor in one frozen, documented value."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from agent_inspect._errors import ReplayError
from agent_inspect._types import RecoveryOverrides
from agent_inspect.executor._policy import Policies
from agent_inspect.executor._state import Checkpoint
from agent_inspect.executor._steps import Breakpoint, Step

__all__ = ["ExecutorOptions", "ExecutorOverrides", "Clock", "OPTION_NAMES"]

Clock: TypeAlias = "int | datetime.datetime | Callable[[int, Step], int | datetime.datetime]"
"""A journal clock: a base time (epoch ms or a datetime) or a pure ``clock(index, step)``."""


@dataclass(frozen=True)
class ExecutorOptions:
    """How a :class:`~agent_inspect.executor.ReplayExecutor` replays (every field optional).

    The recovery settings (rule, markers, runtime, …) are :class:`~agent_inspect.recovery.Recovery`'s instead.

    - ``policies``: per-action and per-call replay policies (:class:`Policies` or a mapping, §12).
    - ``memory`` / ``sensory``: short-term / sensory memory per key before the first step.
    - ``memory_decoder``: decodes memory values of records (e.g. ``json_envelope_decoder``).
    - ``restore``: a :class:`Checkpoint` of an earlier attempt (markers, seqNums, tasks and memory default to it).
    - ``key_format``: the state-key format (``"K1"`` … ``"K2"``); default: the log's.
    - ``source_kind``: ``"kafka"`` or ``"fluss"`` (default: the log's, else Kafka).
    - ``attempt``: the attempt number in action identities (default: the plan's).
    - ``seed``: seeds event ids (default: random, so ids never repeat across attempts; ``back()`` repeats them).
    - ``breakpoints``: :class:`Breakpoint` s that ``run()`` stops at; ``fail_after``: the job dies after that many steps.
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

    def updated(self, **changes: object) -> ExecutorOptions:
        """A copy with ``changes`` applied; a change whose value is None is not given (the option stays)."""
        given: dict[str, Any] = {k: v for k, v in changes.items() if v is not None}
        if "breakpoints" in given:
            given["breakpoints"] = tuple(cast(Iterable[Breakpoint], given["breakpoints"]))
        return dataclasses.replace(self, **given) if given else self


#: The executor-only options (the fields of :class:`ExecutorOptions`), beside the recovery settings.
OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ExecutorOptions))


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
    breakpoints: Sequence[Breakpoint] | None
    fail_after: int | None
    value_format: str | None
    num_partitions: int | None
    clock: Clock | None
    prune_tombstones: bool | None
