"""Inspection of a replay: the steps, cache, outputs and stale records as frames, counters, and the replay-safety
report of a dry run (per task what would run again, and what is risky, #1069)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_inspect._glossary import plural
from agent_inspect._html import Code, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect.executor._engine import Engine
from agent_inspect.executor._steps import (
    CALL_COUNTERS,
    SHADOW_OUTCOMES,
    STEP_COLUMNS,
    Counters,
    Step,
    StepKind,
    StepOutcome,
    call_counter,
)

if TYPE_CHECKING:
    import pandas as pd

    from agent_inspect.store import Store

__all__ = ["ReplaySafetyReport", "REPORT_COLUMNS", "steps_frame", "cache_frame", "outputs_frame", "counters_of",
           "stale_records_frame"]

REPORT_COLUMNS = ["task", "key", "seq", "action", "event_type", "outcome", "rule_outcome", "policy",
                  "restored_in_flight", "stale_logic", "calls_served", "calls_executed", "calls_reconciled",
                  "calls_resubmitted", "calls_subagent", "calls_stubbed", "calls_denied", "calls_truncated", "diff", "safe", "risks"]

_CALL_COLUMNS: dict[str, str] = {**CALL_COUNTERS, StepOutcome.MISMATCH: "calls_truncated",
                                 StepOutcome.TRUNCATE: "calls_truncated"}


@dataclass(frozen=True, repr=False)
class ReplaySafetyReport(HtmlRepr):
    """One row per dispatched task: outcome, policy, durable calls by how they were served, risks.

    ``safe`` is False when the task re-executes external calls, truncated recorded calls (non-determinism), ran
    stale logic, was denied a call, or its ``diff`` run disagreed with production. ``diff`` is None (no ``diff``
    policy), ``"equal"``, ``"equal (memory not replayed)"`` (the agent writes no memory), or the differences.
    ``calls_resubmitted`` (main) and ``calls_subagent``: sub-agent calls sent again, with the same ids or as new
    calls; no external call (the child's row counts its own). ``stale_records``: rebuilt records whose action
    identity the candidate agent lacks. ``paused_after``: the steps run when the report was taken of a replay not
    yet at its end (its rows are the tasks so far; :attr:`complete` is False), None once it ended or the job failed.

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.run()
        report = ex.report()                           # one row per dispatched task
        report.frame[["key", "action", "outcome", "safe", "risks"]].head(), report.unsafe.shape
    """

    frame: pd.DataFrame
    counters: Counters
    failure: str | None = None
    stale_records: pd.DataFrame | None = None
    rule_label: str | None = None
    paused_after: int | None = None

    @classmethod
    def from_steps(cls, steps: Sequence[Step], *, counters: Counters, failure: str | None,
                   stale_records: pd.DataFrame | None = None, rule_label: str | None = None,
                   paused_after: int | None = None) -> ReplaySafetyReport:
        import pandas as pd

        rows: dict[int, dict[str, Any]] = {}
        for s in steps:
            if s.task is None:
                continue
            row = rows.get(s.task)
            if row is None:
                row = rows[s.task] = {c: None for c in REPORT_COLUMNS}
                row.update(task=s.task, key=s.key, seq=s.seq, action=s.action, event_type=s.event_type,
                           **dict.fromkeys(_CALL_COLUMNS.values(), 0), calls_subagent=0, restored_in_flight=False, stale_logic=False,
                           risks=[])
            out = "" if s.outcome is None else str(s.outcome)   # plain text in the frame
            if s.kind is StepKind.LOOKUP:
                row["outcome"] = out
                row["rule_outcome"] = s.detail.get("rule_outcome", out)
                row["policy"] = s.detail.get("policy")
                row["restored_in_flight"] = bool(s.detail.get("restored"))
                row["stale_logic"] = bool(s.detail.get("stale_logic"))
            elif s.call_index is not None:
                key = call_counter(s) or _CALL_COLUMNS.get(out)
                if key:
                    row[key] += 1
            elif out in SHADOW_OUTCOMES:
                equal = out == StepOutcome.DIFF_EQUAL
                row["diff"] = s.change if not equal else (
                    "equal (memory not replayed)" if s.detail.get("memory_not_replayed") else "equal")
                row["diff_changed"] = out == StepOutcome.DIFF_CHANGED
                if out == StepOutcome.DIFF_UNAVAILABLE:
                    row["risks"].append("diff: not compared (a sub-agent result the record does not hold)")
            elif out == StepOutcome.FAILED:
                row["risks"].append(s.reason or "body failed")
        if failure and rows:
            rows[max(rows)]["risks"].append(failure)
        for row in rows.values():
            risks = row["risks"] + [words for risky, words in (
                (row["stale_logic"], "stale logic: action missing from the candidate agent"),
                (row["calls_denied"], f"{plural(row['calls_denied'], 'call')} denied by the replay policy"),
                (row["calls_executed"], f"{plural(row['calls_executed'], 'external call')} run again"),
                (row["calls_reconciled"], f"{plural(row['calls_reconciled'], 'reconciler')} run"),
                (row["calls_truncated"], "non-deterministic calls: recorded results truncated"),
                (row.get("diff_changed"), "diff: replay disagrees with production")) if risky]
            row["safe"] = not risks
            row["risks"] = "; ".join(dict.fromkeys(risks))
        frame = pd.DataFrame(list(rows.values()), columns=REPORT_COLUMNS)
        return cls(frame=frame, counters=counters, failure=failure, stale_records=stale_records, rule_label=rule_label,
                   paused_after=paused_after)

    @property
    def complete(self) -> bool:
        """True when the replay had ended (or the job failed) when the report was taken: every task has its row."""
        return self.paused_after is None

    def _partial(self) -> str:
        if self.paused_after is None:
            return ""
        at = "not started" if self.paused_after == 0 else f"paused after {plural(self.paused_after, 'step')}"
        return f"partial: {at}; run() to the end for every task"

    @property
    def unsafe(self) -> pd.DataFrame:
        """The rows that are not replay-safe."""
        return self.frame[~self.frame["safe"].astype(bool)]

    def __repr__(self) -> str:
        return (f"ReplaySafetyReport({plural(len(self.frame), 'task')}, {len(self.unsafe):,} not replay-safe"
                + (f", rule={self.rule_label!r}" if self.rule_label else "")
                + (f", stopped: {self.failure!r}" if self.failure else "")
                + (f", {self._partial()}" if not self.complete else "") + ")")

    def _html_parts(self) -> Iterable[HtmlPart]:
        resubmitted = int(self.frame["calls_resubmitted"].sum())
        yield Text(Strong("Replay safety"), *((" under rule ", Code(self.rule_label)) if self.rule_label else ()),
                   f": {plural(len(self.frame), 'task')}, {len(self.unsafe):,} not replay-safe",
                   *((f"; {plural(resubmitted, 'sub-agent call')} re-submitted (not executed: each child task's "
                      "row says whether the sub-agent runs again)",) if resubmitted else ()),
                   *(("; stopped: ", self.failure) if self.failure else ()),
                   *((Strong(f" — {self._partial()}"),) if not self.complete else ()))
        yield Table(self.frame, max_rows=50)
        if self.stale_records is not None and len(self.stale_records):
            yield Table(self.stale_records, max_rows=20,
                        caption="production records no candidate action will look up (stale logic)")


_TASK_DECISIONS = frozenset({StepOutcome.REUSE, StepOutcome.RESUME, StepOutcome.RERUN, StepOutcome.FAIL})
_BODIES = frozenset({StepOutcome.RESUME, StepOutcome.RERUN})


def steps_frame(steps: Sequence[Step]) -> pd.DataFrame:
    """One row per step, indexed by step index."""
    import pandas as pd

    rows = [s.as_row() for s in steps]
    frame = pd.DataFrame(rows, columns=STEP_COLUMNS)
    for col in ("index", "seq", "call_index", "task"):   # from the rows: through float64 a seq past 2^53 fails
        frame[col] = pd.array([r[col] for r in rows], dtype="Int64")
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
    return pd.DataFrame([(e.state_key, e.business_key, e.seq, e.action_uuid, e.completed, e.pos)
                         for e in engine.rebuilt_session().store.entries() if e.action_uuid not in known],
                        columns=["state_key", "business_key", "seq", "action_uuid", "completed", "pos"])
