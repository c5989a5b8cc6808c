"""The replay-safety report of a dry run: per task what would run again, and what is risky (#1069)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_inspect._glossary import plural
from agent_inspect._html import Code, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect.executor._state import Counters
from agent_inspect.executor._steps import CALL_COUNTERS, SHADOW_OUTCOMES, Step, StepKind, StepOutcome, call_counter

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ReplaySafetyReport", "REPORT_COLUMNS"]

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
    identity the candidate agent lacks.

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

    @classmethod
    def from_steps(cls, steps: Sequence[Step], *, counters: Counters, failure: str | None,
                   stale_records: pd.DataFrame | None = None, rule_label: str | None = None) -> ReplaySafetyReport:
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
        return cls(frame=frame, counters=counters, failure=failure, stale_records=stale_records, rule_label=rule_label)

    @property
    def unsafe(self) -> pd.DataFrame:
        """The rows that are not replay-safe."""
        return self.frame[~self.frame["safe"].astype(bool)]

    def __repr__(self) -> str:
        return (f"ReplaySafetyReport({plural(len(self.frame), 'task')}, {len(self.unsafe)} not replay-safe"
                + (f", rule={self.rule_label!r}" if self.rule_label else "")
                + (f", stopped: {self.failure!r}" if self.failure else "") + ")")

    def _html_parts(self) -> Iterable[HtmlPart]:
        resubmitted = int(self.frame["calls_resubmitted"].sum())
        yield Text(Strong("Replay safety"), *((" under rule ", Code(self.rule_label)) if self.rule_label else ()),
                   f": {plural(len(self.frame), 'task')}, {len(self.unsafe)} not replay-safe",
                   *((f"; {plural(resubmitted, 'sub-agent call')} re-submitted (not executed: each child task's "
                      "row says whether the sub-agent runs again)",) if resubmitted else ()),
                   *(("; stopped: ", self.failure) if self.failure else ()))
        yield Table(self.frame, max_rows=50)
        if self.stale_records is not None and len(self.stale_records):
            yield Table(self.stale_records, max_rows=20,
                        caption="production records no candidate action will look up (stale logic)")
