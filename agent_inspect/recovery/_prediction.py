"""What ``predict`` returns: tasks, ledger and divergences of one predicted recovery, and how it reads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from agent_inspect._html import Code, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect.store import (
    CacheEvent,
    Divergence,
    RecoverySession,
)

if TYPE_CHECKING:
    from agent_inspect.log import RuntimeInfo


__all__ = ["Prediction"]


# -- the result ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Prediction(HtmlRepr):
    """What a recovery would do, per task, under one rule.

    ``tasks``: one row per action task in dispatch order (``outcome`` REUSE / RESUME / RERUN / FAIL),
    followed by NOT-DISPATCHED rows for cached records of replayed rounds that no task looked up.
    ``events`` / ``divergences``: every cache removal (rebuild and replay) and why.
    ``ledger``: the re-execution ledger, one row per (key, kind, name) with a ``count`` and the ``router`` a
    model-routing call belongs to (``route:<r>``, ``chat:<r>:<candidate>``, ``judge:<r>`` → ``r``; else None): kind
    "body" (an action body that runs again), "call" (a durable call executed for real, by function
    id), "replayed" (a call served from the journal), "reconciler".
    ``crashed``: the replay hit a FAIL (the job would restart in a loop) and stopped there.
    """

    rule: str
    tasks: pd.DataFrame
    events: tuple[CacheEvent, ...]
    divergences: tuple[Divergence, ...]
    ledger: pd.DataFrame
    crashed: bool = False
    warnings: tuple[str, ...] = ()
    session: RecoverySession | None = field(default=None, repr=False, compare=False)
    #: which upstream runtime the log was read as, and why (:class:`agent_inspect.log.RuntimeInfo`)
    runtime: RuntimeInfo | None = field(default=None, repr=False, compare=False)
    #: per sub-agent call (``<sessionId>#<callId>``): the ids of the result events its caller got
    #: (a reused child's stored ones, or fresh ones of a rerun), or "journal" (a terminal slot replayed)
    subagent_results: Mapping[str, tuple[str, ...] | str] = field(default_factory=dict, compare=False)

    def outcomes(self, *, labels: Mapping[str, str] | None = None) -> list[str]:
        """Per-task outcomes in the spec's notation, e.g. ``["k:A.IA=REUSE", "k:A.WA#w1=REUSE"]``."""
        out = []
        for row in self.tasks.itertuples(index=False):
            eid = (labels or {}).get(row.event_id) if row.event_id else None
            out.append(f"{row.key}:{row.input}.{row.action}" + (f"#{eid}" if eid else "") + f"={row.outcome}")
        return out

    @property
    def evictions(self) -> pd.DataFrame:
        """Every cache removal, one row each: op, step (rebuild / lookup), key, seq, removed count and
        log positions (replay writes have none), reason, divergence id."""
        return pd.DataFrame(
            [{"op": e.op, "step": e.step, "business_key": e.business_key, "seq": e.seq, "removed": len(e.removed),
              "positions": e.positions, "reason": e.reason, "divergence_id": e.divergence_id} for e in self.events],
            columns=["op", "step", "business_key", "seq", "removed", "positions", "reason", "divergence_id"])

    def reruns(self) -> int:
        """Number of action bodies that would run again (RESUME + RERUN)."""
        return int(self.tasks["body_ran"].sum()) if len(self.tasks) else 0

    def calls_executed(self) -> Counter[str]:
        """Durable calls a recovery would execute again, by function id (all keys)."""
        rows = self.ledger[self.ledger["kind"] == "call"]
        return Counter({str(n): int(c) for n, c in rows.groupby("name", observed=True)["count"].sum().items()})

    def ledger_totals(self) -> pd.DataFrame:
        """The ledger summed over keys: one row per (kind, name), with its ``router``."""
        if self.ledger.empty:
            return self.ledger.drop(columns=["key"])
        return self.ledger.groupby(["kind", "name"], as_index=False, observed=True, dropna=False).agg(
            router=("router", "first"), count=("count", "sum"))

    def by_router(self) -> pd.DataFrame:
        """Model-routing calls grouped under their router: one row per (router, kind, name), summed over keys."""
        rows = self.ledger[self.ledger["router"].notna()] if "router" in self.ledger else self.ledger.iloc[:0]
        if rows.empty:
            return pd.DataFrame(columns=["router", "kind", "name", "count"])
        return rows.groupby(["router", "kind", "name"], as_index=False, observed=True, sort=True)["count"].sum()

    def _html_parts(self) -> Iterable[HtmlPart]:
        counts = self.tasks["outcome"].value_counts().to_dict() if len(self.tasks) else {}
        yield Text(Strong("Prediction"), " under rule ", Code(self.rule), ": ",
                   ", ".join(f"{k} {int(v)}" for k, v in counts.items()),
                   *((" — ", Strong("the job crashes (restart loop)")) if self.crashed else ()))
        cols = ["key", "seq", "input", "action", "outcome", "reason"]
        yield Table(self.tasks[cols], max_rows=50)
        yield Table(self.ledger_totals(), caption="ledger")


