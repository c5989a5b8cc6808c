"""What ``verify`` returns: the task rows, totals, calls and ranking, and how they read in a notebook."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from agent_inspect._glossary import count_words, plural
from agent_inspect._html import Em, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect._jsonable import jsonable, jsonable_rows
from agent_inspect.trace._verdict import UNDETERMINED_CAUSES, Verdict, overall_verdict

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from agent_inspect._types import PredictionLike, RuleLike
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery import Markers, ReplayPlan
    from agent_inspect.trace._model import TraceLog
    from agent_inspect.trace._tokens import Prices, TokenLedger

__all__ = ["Verification", "VERDICT_WORDS"]


# -- the result ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verification(HtmlRepr):
    """A recovery's prediction checked against its Trace Log.

    ``tasks``: one row per predicted task (and per traced execution the prediction lacks): predicted
    and observed outcome, ``agree``, how it was joined (``join``, ``confidence``), for a mismatch the
    ``cause`` (one of :data:`CAUSES`) and an ``explanation``, and the task's ``verdict`` (agree,
    disagree, undetermined). ``verdict``: the check's :class:`Verdict` (any disagreement disagrees;
    else a task the trace cannot decide, or nothing to check, is undetermined); ``summary_text()``
    says which applies and why. ``totals``: per outcome, predicted against observed. ``calls``:
    durable llm/tool calls predicted to execute or be replayed against those the trace shows.
    ``ranking``: candidate rule/store-flavour pairs by agreement (when computed), each with its tasks per verdict
    (``agree``, ``disagree``, ``undetermined``, as ``counts()`` gives them for the chosen rule). ``agree`` is True when
    every task agrees (False when there is nothing to check).

    For example::

        v = ai.verify(log, ai.load_trace("sample_logs/production.trace.log"), markers=markers)
        v.verdict, v.totals, v.call_differences()   # every task agrees; the durable calls differ
        print(v.summary_text())
    """

    tasks: pd.DataFrame
    totals: pd.DataFrame
    calls: pd.DataFrame
    rule: str
    store_flavour: str
    markers: Markers
    #: the upstream version the prediction ran as ("0.3", "0.4", "main")
    runtime: str | None = None
    #: True when ``rule`` is not the one ``runtime`` ships (the job could not have run it as released)
    what_if: bool = False
    ranking: pd.DataFrame | None = None
    notes: tuple[str, ...] = ()
    #: why the trace looks like another job's (it shares no business key with the log), "" when it does not
    other_job: str = ""
    confidence: str = "low"
    prediction: PredictionLike | None = field(default=None, repr=False, compare=False)
    trace: TraceLog | None = field(default=None, repr=False, compare=False)
    log: ActionStateLog | None = field(default=None, repr=False, compare=False)
    joined: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    #: the token ledger (:meth:`with_tokens`), None until asked for
    tokens: TokenLedger | None = field(default=None, repr=False, compare=False)
    #: the ranking table's caption, wherever it is shown (notebook, report)
    ranking_caption: ClassVar[str] = ("rules and runtimes ranked by agreement (per verdict: disagree counts the tasks "
                                      "the trace shows wrong, undetermined those it cannot decide)")

    def with_tokens(self, *, prices: Prices | None = None, rules: Sequence[RuleLike] = (), baseline: TraceLog | None = None,
                    plan: ReplayPlan | None = None, restore: Mapping[str, Any] | None = None) -> Verification:
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
    def verdict(self) -> Verdict:
        """agree, disagree or undetermined, for the whole check."""
        return overall_verdict(self._verdicts())

    def _verdicts(self) -> pd.Series:
        if "verdict" in self.tasks:
            return self.tasks["verdict"]
        return self.tasks["agree"].map(lambda a: Verdict.AGREE.value if a else Verdict.DISAGREE.value)

    @property
    def mismatches(self) -> pd.DataFrame:
        """Tasks whose observed outcome is not the predicted one (disagreeing or undetermined)."""
        return self.tasks[~self.tasks["agree"].astype(bool) | (self._verdicts() != Verdict.AGREE.value)]

    @property
    def disagreements(self) -> pd.DataFrame:
        """Tasks whose verdict is disagree: the trace shows the prediction wrong."""
        return self.tasks[self._verdicts() == Verdict.DISAGREE.value]

    @property
    def undetermined(self) -> pd.DataFrame:
        """Tasks the trace cannot decide (their cause is one of :data:`UNDETERMINED_CAUSES`, or a weak join)."""
        return self.tasks[self._verdicts() == Verdict.UNDETERMINED.value]

    def counts(self) -> dict[str, int]:
        """Tasks per verdict."""
        v = self._verdicts()
        return {str(x): int((v == x.value).sum()) for x in Verdict}

    def causes(self) -> dict[str, int]:
        """Mismatches per cause (disagreeing and undetermined tasks)."""
        d = self.mismatches
        return {str(k): int(v) for k, v in d["cause"].value_counts().items()} if len(d) else {}

    def best(self) -> dict[str, Any] | None:
        """The candidate that explains the trace best (first row of ``ranking``)."""
        if self.ranking is None or self.ranking.empty:
            return None
        return {k: (v.item() if hasattr(v, "item") else v) for k, v in self.ranking.iloc[0].to_dict().items()}

    def call_differences(self) -> str:
        """The durable-call counts that differ, in words ("" when every count agrees):
        ``205 predicted, 175 observed: llm executed 200 predicted, 170 observed; …``."""
        calls = self.calls
        if calls is None or calls.empty or "agree" not in calls:
            return ""
        bad = calls[~calls["agree"].astype(bool)]
        if bad.empty:
            return ""
        rows = list(zip(bad["entity_type"], bad["calls"], bad["predicted"], bad["observed"]))
        which = (f"{rows[0][0]} calls {rows[0][1]}" if len(rows) == 1 else
                 "; ".join(f"{e} {k} {int(p):,} predicted, {int(o):,} observed" for e, k, p, o in rows))
        return f"{int(bad['predicted'].sum()):,} predicted, {int(bad['observed'].sum()):,} observed: {which}"

    def absent(self, *, expected: bool = False) -> int:
        """How many tasks the trace shows no execution of (observed ABSENT): those predicted to run, or
        with ``expected=True`` those predicted not to be dispatched (absent as predicted). A task predicted to
        FAIL is neither: the restore crashes at its lookup (:meth:`failed`)."""
        if "observed" not in self.tasks:
            return 0
        gone = self.tasks["observed"] == "ABSENT"
        not_run = self.tasks["predicted"].isin(["NOT-DISPATCHED", "NOT_DISPATCHED"])
        crashed = self.tasks["predicted"] == "FAIL"
        return int((gone & (not_run if expected else ~not_run & ~crashed)).sum())

    def failed(self) -> int:
        """How many tasks are predicted to FAIL their lookup and are absent from the trace (the restore crashes
        there, so the job never runs them)."""
        if "observed" not in self.tasks:
            return 0
        return int(((self.tasks["predicted"] == "FAIL") & (self.tasks["observed"] == "ABSENT")).sum())

    def headline(self) -> str:
        """The verdict in a few words that never contradict the details: "agrees", or "agrees on tasks;
        calls differ (…)" when the task outcomes agree but call counts differ or tasks are absent."""
        verdict = VERDICT_WORDS[self.verdict]
        if self.verdict != Verdict.AGREE:
            return verdict
        extra = []
        calls = self.call_differences()
        if calls:
            extra.append(f"calls differ ({calls})")
        if self.absent():
            n = self.absent()
            extra.append(f"{plural(n, 'predicted task')} absent from the trace")
        return "agrees on tasks; " + "; ".join(extra) if extra else verdict

    def summary_text(self) -> str:
        """One line: the verdict's reason (counts, causes, and why an undetermined cause cannot tell), led by
        :attr:`other_job` when the trace looks like another job's and does not agree."""
        text = self._summary()
        return f"most likely another job's trace: {self.other_job}; {text}" \
            if self.other_job and self.verdict != Verdict.AGREE else text

    def _summary(self) -> str:
        n = len(self.tasks)
        if not n:
            return "nothing to check: the prediction has no task and the trace no action execution"
        counts = self.counts()
        bad, unsure = counts["disagree"], counts["undetermined"]
        unsure_causes = ", ".join(f"{c} {k:,}" for c, k in _causes(self.undetermined).items())
        why = "; ".join(f"{c} {k:,}: {UNDETERMINED_CAUSES[c]}" if c in UNDETERMINED_CAUSES else f"{c} {k:,}"
                        for c, k in _causes(self.undetermined).items())
        if bad:
            causes = ", ".join(f"{c} {k:,}" for c, k in _causes(self.disagreements).items())
            best = self.best()
            hint = ""
            if best and best.get("disagree") == 0 and not best.get("undetermined") and best.get("rule") != self.rule \
                    and self.ranking is not None:
                full = self.ranking[(self.ranking["disagree"] == 0) & (self.ranking["undetermined"] == 0)]
                names = list(dict.fromkeys(str(n) for n in full["name"]))
                hint = (f"; the trace agrees fully under {best['rule']}" if len(names) == 1 else
                        f"; the trace agrees fully under each of {len(names)} tied configurations: {', '.join(names)}")
            more = f"; {unsure:,} more the trace cannot decide ({unsure_causes})" if unsure else ""
            return f"{bad:,} of {n:,} {count_words(n, 'task')} {count_words(bad, 'disagrees', 'disagree')} with the trace under rule {self.rule_label} ({causes}){hint}{more}"
        if unsure:
            return (f"the trace cannot decide {unsure:,} of {n:,} {count_words(n, 'task')} under rule {self.rule_label} ({why}); "
                    f"the other {n - unsure:,} agree")
        text = ("the one task agrees" if n == 1 else f"all {n:,} tasks agree") + \
            f" with the trace under rule {self.rule_label}"
        calls = self.call_differences()
        if calls:
            text += f", but the durable calls differ ({calls}){self._why_calls_differ()}"
        if self.absent():
            n = self.absent()
            text += f"; {plural(n, 'task')} predicted to run {'is' if n == 1 else 'are'} absent from the trace"
        if self.failed():
            n = self.failed()
            text += (f"; {plural(n, 'task')} {'fails its' if n == 1 else 'fail their'} lookup (the restore crashes "
                     f"there) and {'is' if n == 1 else 'are'} absent from the trace, as predicted")
        if self.absent(expected=True):
            n = self.absent(expected=True)
            text += (f"; {plural(n, 'task')} {'was' if n == 1 else 'were'} not dispatched and "
                     f"{'is' if n == 1 else 'are'} absent from the trace, as predicted")
        return text

    def _why_calls_differ(self) -> str:
        """Why the calls differ when every outcome agrees, in a few words: the calls come from the agent's bodies,
        which the as-recorded agent plays back as the log recorded them (a retried call twice, though the job's
        replay may not retry)."""
        settings = getattr(self.prediction, "recovery", None)
        if settings is None:
            return ""
        return (": the as-recorded agent repeats the log's calls, retries included" if settings.agent is None
                else ": the given agent's bodies call otherwise than the job's")

    @property
    def rule_label(self) -> str:
        """``rule``, marked as a what-if when the runtime ships another (named, as every result names it, when
        the prediction carries its settings)."""
        if not self.what_if:
            return self.rule
        settings = getattr(self.prediction, "recovery", None)
        if settings is not None and settings.what_if:
            return str(settings.rule_label)
        from agent_inspect.log import resolve_runtime, rule_label

        return rule_label(self.rule, resolve_runtime(self.runtime)) if self.runtime else self.rule

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (what ``agent-inspect verify --json`` prints)."""
        return {
            "verdict": self.verdict.value, "agree": self.agree, "counts": self.counts(),
            "rule": self.rule, "what_if": self.what_if, "runtime": self.runtime, "store_flavour": self.store_flavour,
            "confidence": self.confidence, "markers": jsonable(self.markers), "summary": self.summary_text(),
            "causes": self.causes(),
            "undetermined_causes": {c: UNDETERMINED_CAUSES.get(c, "") for c in _causes(self.undetermined)},
            "notes": list(self.notes), "other_job": self.other_job,
            "totals": jsonable_rows(self.totals), "calls": jsonable_rows(self.calls),
            "ranking": jsonable_rows(self.ranking) if self.ranking is not None else None,
            "best": jsonable(self.best()),
            "tasks": jsonable_rows(self.tasks.drop(columns=["first"])),
            "tokens": self.tokens.to_dict() if self.tokens is not None else None,
        }

    def __repr__(self) -> str:
        # one line of counts: the frames (a row per task) stay attributes
        counts = ", ".join(f"{n:,} {v}" for v, n in self.counts().items())
        return (f"Verification({self.verdict.value}, {plural(len(self.tasks), 'task')} under rule {self.rule_label}: "
                f"{counts})")

    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong("Checked against the trace"), " — ", self.headline(), ": ",
                   self.summary_text())
        yield from (Text(Em(n)) for n in self.notes)
        yield Table(self.totals, caption="totals per outcome")
        yield Table(self.calls, caption="durable calls")
        if self.tokens is not None:
            yield from self.tokens._html_parts()
        if self.ranking is not None:
            yield Table(self.ranking, caption=self.ranking_caption)
        cols = [c for c in ("key", "seq", "action", "predicted", "observed", "verdict", "join", "cause",
                            "explanation") if c in self.tasks]
        yield Table(self.tasks[cols], max_rows=60, caption="tasks")


#: how each verdict reads in a sentence ("checked against the trace — agrees: …")
VERDICT_WORDS = {Verdict.AGREE: "agrees", Verdict.DISAGREE: "DISAGREES",
                 Verdict.UNDETERMINED: "cannot tell (undetermined)"}


def _causes(rows: pd.DataFrame) -> dict[str, int]:
    return {str(k): int(v) for k, v in rows["cause"].value_counts().items()} if len(rows) else {}
