"""Three-valued verdicts: a task (and a whole check) agrees, disagrees, or the trace cannot tell."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

import pandas as pd

__all__ = ["Verdict", "UNDETERMINED_CAUSES", "CONFIDENCES", "with_verdicts", "overall_verdict"]


class Verdict(StrEnum):
    """What the trace says about a prediction: ``agree``, ``disagree``, or ``undetermined`` (it cannot tell).

    For example::

        v = ai.verify(log, ai.load_trace("sample_logs/production.trace.log"), markers=markers)
        v.verdict is ai.trace.Verdict.AGREE, v.verdict.value
    """

    AGREE = "agree"
    DISAGREE = "disagree"
    UNDETERMINED = "undetermined"


UNDETERMINED_CAUSES = {
    "agent-model": "the log-only agent cannot know what a re-executed action emits (pass agent=)",
    "invisible-reuse": "a reuse writes nothing to the log, so the log cannot show that branch",
    "trace-truncated": "the trace ends before the task (cut off, unreadable records, or the job stopped)",
    "weak-join": "the task was joined to its execution below the confidence asked for",
}
"""causes of a mismatch that mean "the log cannot tell", not "the prediction is wrong" -> why"""
CONFIDENCES = ("low", "medium", "high")
"""join confidence, weakest first (``verify(confidence=...)`` asks for at least one of these)"""


def with_verdicts(tasks: pd.DataFrame, *, confidence: str = "low") -> pd.DataFrame:
    """``tasks`` with a ``verdict`` column: ``agree`` when the task agrees on a join at least as confident as
    ``confidence``; ``undetermined`` when its cause is one of :data:`UNDETERMINED_CAUSES` or its join is
    weaker than asked (an agreeing one then gets cause ``weak-join``); ``disagree`` otherwise."""
    if confidence not in CONFIDENCES:
        from agent_inspect._errors import InspectError

        raise InspectError(f"unknown confidence {confidence!r}; use one of {', '.join(CONFIDENCES)}")
    tasks = tasks.copy()
    floor = CONFIDENCES.index(confidence)
    rank = tasks["confidence"].map(lambda c: CONFIDENCES.index(c) if c in CONFIDENCES else None)
    weak = rank.notna() & (rank.astype("float64") < floor)
    agree = tasks["agree"].astype(bool)
    cannot_tell = tasks["cause"].isin(list(UNDETERMINED_CAUSES))
    weak_agree = weak & agree
    if weak_agree.any():
        tasks.loc[weak_agree, "cause"] = "weak-join"
        tasks.loc[weak_agree, "explanation"] = [
            f"it agrees, but joined by {j} (confidence {c}), below the {confidence} asked for"
            for j, c in zip(tasks.loc[weak_agree, "join"], tasks.loc[weak_agree, "confidence"])]
    verdict = pd.Series(Verdict.DISAGREE.value, index=tasks.index, dtype=object)
    verdict[agree] = Verdict.AGREE.value
    verdict[cannot_tell | weak] = Verdict.UNDETERMINED.value
    tasks["verdict"] = verdict
    return tasks


def overall_verdict(verdicts: Iterable[str]) -> Verdict:
    """One verdict for many: any disagreement disagrees; else anything undetermined (or nothing at all to
    check) is undetermined; else agree."""
    seen = set(map(str, verdicts))
    if Verdict.DISAGREE.value in seen:
        return Verdict.DISAGREE
    if Verdict.UNDETERMINED.value in seen or not seen:
        return Verdict.UNDETERMINED
    return Verdict.AGREE
