"""What ``verify`` returns: the task rows, totals, calls and ranking, and how they read in a notebook."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from agent_inspect._html import Em, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect._jsonable import jsonable, jsonable_rows

__all__ = ["Verification"]


# -- the result ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verification(HtmlRepr):
    """A recovery's prediction checked against its Trace Log.

    ``tasks``: one row per predicted task (and per traced execution the prediction lacks): predicted
    and observed outcome, ``agree``, how it was joined (``join``, ``confidence``), and for a
    disagreement the ``cause`` (one of :data:`CAUSES`) and an ``explanation``. ``totals``: per
    outcome, predicted against observed. ``calls``: durable llm/tool calls predicted to execute or be
    replayed against those the trace shows. ``ranking``: candidate rule/store-flavour pairs by agreement
    (when computed). ``agree`` is True when every task agrees (False when there is nothing to check:
    no predicted task and no traced execution).
    """

    tasks: pd.DataFrame
    totals: pd.DataFrame
    calls: pd.DataFrame
    rule: str
    store_flavour: str
    markers: Any
    #: the upstream version the prediction ran as ("0.3", "0.4", "main")
    runtime: str | None = None
    #: True when ``rule`` is not the one ``runtime`` ships (the job could not have run it as released)
    what_if: bool = False
    ranking: pd.DataFrame | None = None
    notes: tuple[str, ...] = ()
    prediction: Any = field(default=None, repr=False, compare=False)
    trace: Any = field(default=None, repr=False, compare=False)
    log: Any = field(default=None, repr=False, compare=False)
    joined: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    #: the token ledger (:meth:`with_tokens`), None until asked for
    tokens: Any = field(default=None, repr=False, compare=False)

    def with_tokens(self, *, prices: Any = None, rules: Any = (), baseline: Any = None, plan: Any = None,
                    restore: Any = None) -> Verification:
        """This result with its token ledger (:func:`agent_inspect.trace.token_ledger`): what the restore
        re-spent on LLM calls, predicted and observed, and what ``rules`` would have."""
        from dataclasses import replace

        from agent_inspect.trace import token_ledger

        ledger = token_ledger(self, prices=prices, rules=rules, baseline=baseline, plan=plan, restore=restore)
        return replace(self, tokens=ledger)

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
        return f"{bad} of {n} tasks disagree with the trace under rule {self.rule_label} ({causes}){hint}"

    @property
    def rule_label(self) -> str:
        """``rule``, marked as a what-if when the runtime ships another."""
        return f"{self.rule} (what-if; {self.runtime} ships another rule)" if self.what_if else self.rule

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (what ``agent-inspect verify --json`` prints)."""
        return {
            "agree": self.agree, "rule": self.rule, "what_if": self.what_if,
            "runtime": self.runtime, "store_flavour": self.store_flavour, "markers": jsonable(self.markers),
            "summary": self.summary_text(), "causes": self.causes(), "notes": list(self.notes),
            "totals": jsonable_rows(self.totals), "calls": jsonable_rows(self.calls),
            "ranking": jsonable_rows(self.ranking) if self.ranking is not None else None,
            "best": jsonable(self.best()),
            "tasks": jsonable_rows(self.tasks.drop(columns=["first"])),
            "tokens": self.tokens.to_dict() if self.tokens is not None else None,
        }

    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong("Checked against the trace"), " — ", "agrees" if self.agree else "DISAGREES", ": ",
                   self.summary_text())
        yield from (Text(Em(n)) for n in self.notes)
        yield Table(self.totals, caption="totals per outcome")
        yield Table(self.calls, caption="durable calls")
        if self.tokens is not None:
            yield from self.tokens._html_parts()
        if self.ranking is not None:
            yield Table(self.ranking, caption="rules and runtimes ranked by agreement")
        cols = ["key", "seq", "action", "predicted", "observed", "agree", "join", "cause", "explanation"]
        yield Table(self.tasks[cols], max_rows=60, caption="tasks")


