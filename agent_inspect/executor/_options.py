"""Every option of the replay executor in one frozen, documented value."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from agent_inspect.executor._plan import PlanLike
from agent_inspect.executor._policy import Policies
from agent_inspect.executor._state import Checkpoint
from agent_inspect.executor._steps import Breakpoint, Step

__all__ = ["ExecutorOptions", "Clock"]

Clock: TypeAlias = "int | datetime.datetime | Callable[[int, Step], int | datetime.datetime]"
"""A journal clock: a base time (epoch ms or a datetime) or a pure ``clock(index, step)``."""


@dataclass(frozen=True)
class ExecutorOptions:
    """How a :class:`~agent_inspect.executor.ReplayExecutor` replays (every field optional).

    What runs:

    - ``agent``: the agent whose actions run (a :class:`~agent_inspect.agents.PythonAgent`, a case
      file's declarative agent, a flink-agents agent); default: the log's as-recorded agent (§15.6).
    - ``plan``: per-key inputs after the restore, restored seqNums and in-flight tasks (a
      :class:`~agent_inspect.recovery.ReplayPlan` or a mapping of its fields); default: from the log.
    - ``markers``: recovery markers (partition → offset); ``None`` rebuilds from the whole loaded log,
      ``[]`` is a fresh start.
    - ``policies``: per-action and per-call replay policies (:class:`Policies` or a mapping, §12).
    - ``memory`` / ``sensory``: short-term / sensory memory per key before the first step.
    - ``memory_decoder``: decodes memory values of records (e.g. ``json_envelope_decoder``).
    - ``restore``: a :class:`Checkpoint` of an earlier attempt to restore from (markers, seqNums,
      in-flight tasks and memory default to the checkpoint's).

    Identity and restore checks:

    - ``key_format``: the state-key format (``"K1"`` … ``"K2"``); default: the log's.
    - ``max_parallelism``: key groups of keys absent from the log (default 128); when given, a
      rebuild window key group outside ``[0, max_parallelism)`` fails the restore (K2, §6.5).
    - ``expected_fingerprint``: the serializer fingerprint the restore expects (K2, §6.5);
      default: the rebuild window's most common.
    - ``source_kind``: ``"kafka"`` or ``"fluss"`` (default: the log's, else Kafka): the original
      rule's snapshot flavour and the journal's layout.
    - ``attempt``: the attempt number in action identities (default: the plan's).
    - ``seed``: seeds event ids (default: random, so ids never repeat across attempts; ``back()``
      always repeats them).

    Debugger:

    - ``breakpoints``: :class:`Breakpoint` s that ``run()`` stops at.
    - ``fail_after``: the simulated job dies once this many steps ran.

    Production mode (the journal of writes):

    - ``value_format``: the ActionState value format of journal records (default ``"V3"``; ``"V4"``
      under ``runtime="main"``, which writes ``subagentResultEvents``).
    - ``num_partitions``: partitions of the journal (default: the log's, else 1).
    - ``clock``: journal timestamps; a base time stamps each record base + its PERSIST step index
      in milliseconds, a callable ``clock(i, step)`` gets the journal index and the writing step;
      default: no timestamps.
    - ``prune_tombstones``: Kafka's ``kafkaActionStateTombstoneEnabled`` (#885, §6.6): completing a
      checkpoint journals a tombstone per pruned state key.
    - ``runtime``: which upstream runtime wrote the log ("0.3", "0.4", "main"; default "auto", inferred
      from the records); with no rule given, the rule that runtime ships is used. It also selects that
      runtime's recovery behaviours (issue #12; :func:`agent_inspect.store.runtime_model`): 0.4+ reads
      checkpoint-time refresh rows (pending states kept across checkpoints) and, in production mode,
      writes them at each checkpoint (after its marker; "0.3" writes none); main runs sub-agents as
      addendum §1.1 says (PENDING caller slots, result events, no re-bootstrap of a completed root caller).
    - ``kafka_pending``: 0.4+ Kafka keeps pending states by ``"refresh"`` rows (default) or a moved-back
      ``"marker"`` (addendum §2.3 leaves it open).
    - ``call_matching``: how a durable call is matched with the recorded slot at its position
      ("position": function id and args digest, the default; "function-id": the #1016 variant).
    """

    agent: object | None = None
    plan: PlanLike | None = None
    markers: Sequence[Mapping[int, int]] | Mapping[int, int] | None = None
    policies: Policies | Mapping[str, Any] | None = None
    memory: Mapping[str, Mapping[str, Any]] | None = None
    sensory: Mapping[str, Mapping[str, Any]] | None = None
    memory_decoder: Callable[[Any], Any] | None = None
    restore: Checkpoint | None = None
    key_format: str | None = None
    max_parallelism: int | None = None
    expected_fingerprint: str | None = None
    source_kind: str | None = None
    attempt: int | None = None
    seed: int | None = None
    breakpoints: Sequence[Breakpoint] = ()
    fail_after: int | None = None
    value_format: str = "V3"
    num_partitions: int | None = None
    clock: Clock | None = None
    prune_tombstones: bool = False
    runtime: str = "auto"
    call_matching: str = "position"
    kafka_pending: str | None = None

    def updated(self, **changes: object) -> ExecutorOptions:
        """A copy with ``changes`` applied, leaving options whose new value is the default untouched."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        given: dict[str, Any] = {k: v for k, v in changes.items() if not _same(v, defaults[k])}
        return dataclasses.replace(self, **given) if given else self


def _same(value: object, default: object) -> bool:
    return value is default or (type(value) is type(default) and value == default)
