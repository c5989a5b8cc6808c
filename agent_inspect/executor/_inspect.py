"""Inspection of a replay: the steps, cache, outputs and stale records as frames, and counters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent_inspect.executor._engine import Engine
from agent_inspect.executor._state import Counters
from agent_inspect.executor._steps import SHADOW_OUTCOMES, STEP_COLUMNS, Step, StepKind, StepOutcome, call_counter

if TYPE_CHECKING:
    import pandas as pd

    from agent_inspect.store import Store

__all__ = ["steps_frame", "cache_frame", "outputs_frame", "counters_of", "stale_records_frame"]

_TASK_DECISIONS = frozenset({StepOutcome.REUSE, StepOutcome.RESUME, StepOutcome.RERUN, StepOutcome.FAIL})
_BODIES = frozenset({StepOutcome.RESUME, StepOutcome.RERUN})


def steps_frame(steps: Sequence[Step]) -> pd.DataFrame:
    """One row per step, indexed by step index."""
    import pandas as pd

    frame = pd.DataFrame([s.as_row() for s in steps], columns=STEP_COLUMNS)
    for col in ("index", "seq", "call_index", "task"):
        frame[col] = frame[col].astype("Int64")
    return frame.set_index("index", drop=False).rename_axis(None)


def cache_frame(store: Store) -> pd.DataFrame:
    """One row per cached state key; ``written`` by the replay (no log position)."""
    import pandas as pd

    return pd.DataFrame([(e.state_key, e.business_key, e.seq, e.event_uuid, e.action_uuid, e.is_root, e.completed,
                          e.pos, e.pos is None) for e in store.entries()],
                        columns=["state_key", "business_key", "seq", "event_uuid", "action_uuid", "is_root",
                                 "completed", "pos", "written"])


def outputs_frame(engine: Engine) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(engine.run.outputs,
                        columns=["step", "key", "seq", "action", "event_id", "type", "attributes", "reused"])


def counters_of(steps: Sequence[Step]) -> Counters:
    c: dict[str, int] = dict.fromkeys(Counters.__dataclass_fields__, 0)
    for s in steps:
        kind, out = s.kind, (s.outcome or "")
        if kind is StepKind.LOOKUP and out in _TASK_DECISIONS:
            c["tasks"] += 1
            c["failed"] += out == StepOutcome.FAIL
        elif kind is StepKind.LOOKUP and out == StepOutcome.NOT_DISPATCHED:   # the restore dropped the task
            c["dropped"] += 1
        if kind is StepKind.NOT_DISPATCHED:
            c["not_dispatched"] += 1
        elif kind is StepKind.REUSE:
            c["reused"] += 1
        elif kind in (StepKind.RESUME, StepKind.RERUN) and s.call_index is None:
            if out in _BODIES:
                c["bodies_executed"] += 1
                c["resumed" if out == StepOutcome.RESUME else "rerun"] += 1
            elif out in SHADOW_OUTCOMES:
                c["shadow_runs"] += 1
        elif kind in (StepKind.RESUME, StepKind.RERUN):
            counter = call_counter(s)
            if counter is not None:
                c[counter] += 1
        elif kind is StepKind.PERSIST:
            c["writes"] += 1
        elif kind is StepKind.EVICTION:
            c["entries_evicted"] += int(s.detail.get("removed", 0))
        elif kind is StepKind.INVALIDATION:
            c["entries_invalidated"] += int(s.detail.get("removed", 0))
    return Counters(**c)


def stale_records_frame(engine: Engine) -> pd.DataFrame:
    """Rebuilt production records whose action identity is in no action of the candidate agent."""
    import pandas as pd

    fmt, agent = engine.keys.format, engine.agent
    known = {agent.action_uuid(d.name, fmt, attempt=engine.attempt) for d in agent.actions}
    base = engine.base_session
    entries = base.store.entries() if base is not None else []
    return pd.DataFrame([(e.state_key, e.business_key, e.seq, e.action_uuid, e.completed, e.pos)
                         for e in entries if e.action_uuid not in known],
                        columns=["state_key", "business_key", "seq", "action_uuid", "completed", "pos"])
