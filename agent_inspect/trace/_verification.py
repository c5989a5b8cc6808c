"""What ``verify`` returns: the task rows, totals, calls and ranking, and how they read in a notebook."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from agent_inspect._html import Em, HtmlPart, HtmlRepr, Strong, Table, Text

__all__ = ["Verification"]


# -- the result ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verification(HtmlRepr):
    """A recovery's prediction checked against its Trace Log.

    ``tasks``: one row per predicted task (and per traced execution the prediction lacks): predicted
    and observed outcome, ``agree``, how it was joined (``join``, ``confidence``), and for a
    disagreement the ``cause`` (one of :data:`CAUSES`) and an ``explanation``. ``totals``: per
    outcome, predicted against observed. ``calls``: durable llm/tool calls predicted to execute or be
    replayed against those the trace shows. ``ranking``: candidate rule/runtime pairs by agreement
    (when computed). ``agree`` is True when every task agrees (False when there is nothing to check:
    no predicted task and no traced execution).
    """

    tasks: pd.DataFrame
    totals: pd.DataFrame
    calls: pd.DataFrame
    rule: str
    runtime: str
    markers: Any
    ranking: pd.DataFrame | None = None
    notes: tuple[str, ...] = ()
    prediction: Any = field(default=None, repr=False, compare=False)
    trace: Any = field(default=None, repr=False, compare=False)
    log: Any = field(default=None, repr=False, compare=False)
    joined: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    @property
    def agree(self) -> bool:
        return bool(len(self.tasks)) and bool(self.tasks["agree"].all())

    @property
    def disagreements(self) -> pd.DataFrame:
        return self.tasks[~self.tasks["agree"]]

    def causes(self) -> dict[str, int]:
        """Disagreements per cause."""
        d = self.disagreements
        return {str(k): int(v) for k, v in d["cause"].value_counts().items()} if len(d) else {}

    def best(self) -> dict[str, Any] | None:
        """The candidate that explains the trace best (first row of ``ranking``)."""
        if self.ranking is None or self.ranking.empty:
            return None
        return {k: (v.item() if hasattr(v, "item") else v) for k, v in self.ranking.iloc[0].to_dict().items()}

    def summary_text(self) -> str:
        n = len(self.tasks)
        bad = int((~self.tasks["agree"]).sum()) if n else 0
        if not n:
            return "nothing to check: the prediction has no task and the trace no action execution"
        if not bad:
            return f"all {n} tasks agree with the trace under rule {self.rule}"
        causes = ", ".join(f"{c} {k}" for c, k in self.causes().items())
        best = self.best()
        hint = ""
        if best and best.get("disagree") == 0 and best.get("rule") != self.rule:
            hint = f"; the trace agrees fully under {best['rule']}"
        return f"{bad} of {n} tasks disagree with the trace under rule {self.rule} ({causes}){hint}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (what ``agent-inspect verify --json`` prints)."""
        return {
            "agree": self.agree, "rule": self.rule, "runtime": self.runtime, "markers": _plain(self.markers),
            "summary": self.summary_text(), "causes": self.causes(), "notes": list(self.notes),
            "totals": _records(self.totals), "calls": _records(self.calls),
            "ranking": _records(self.ranking) if self.ranking is not None else None,
            "best": _plain(self.best()),
            "tasks": _records(self.tasks.drop(columns=["first"])),
        }

    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong("Checked against the trace"), " — ", "agrees" if self.agree else "DISAGREES", ": ",
                   self.summary_text())
        yield from (Text(Em(n)) for n in self.notes)
        yield Table(self.totals, caption="totals per outcome")
        yield Table(self.calls, caption="durable calls")
        if self.ranking is not None:
            yield Table(self.ranking, caption="rules and runtimes ranked by agreement")
        cols = ["key", "seq", "action", "predicted", "observed", "agree", "join", "cause", "explanation"]
        yield Table(self.tasks[cols], max_rows=60, caption="tasks")


def _plain(value: Any) -> Any:
    import math

    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if hasattr(value, "item"):
        return _plain(value.item())
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _records(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    if frame is None:
        return []
    return [{str(c): _plain(v) for c, v in zip(frame.columns, row)} for row in frame.itertuples(index=False)]


