"""The report's "Why did these run again?" section: the decision chain of the top re-executed actions."""

from __future__ import annotations

from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words, plural
from agent_inspect._html import escape, labelled
from agent_inspect.store import Outcome

__all__ = ["why_html"]


def why_html(prediction: Any, result: Any, *, max_actions: int = 5) -> str:
    """Escaped HTML: per action that reruns most often, its rerun count and why its first rerun happened."""
    if prediction is None:
        return "<p>No prediction: the recovery could not be predicted from this log.</p>"
    tasks = prediction.tasks
    reruns = tasks[tasks["outcome"].astype("string") == Outcome.RERUN]
    if reruns.empty:
        return "<p>Nothing runs again: no task is predicted to rerun.</p>"
    from agent_inspect.diffing import explain

    counts = reruns.groupby(reruns["action"].astype(str), sort=False).size().sort_values(ascending=False, kind="stable")
    shown = min(max_actions, len(counts))
    parts = [f"<p>{plural(len(reruns), 'task')} rerun in this recovery; the chain of store decisions behind the first "
             f"rerun of the {plural(shown, 'action')} that rerun most:</p>"]
    for action, n in counts.head(max_actions).items():
        i = int(tasks.index.get_loc(reruns.index[(reruns["action"].astype(str) == action).to_numpy()][0]))
        try:
            why = explain(prediction, task=i, log=result.log, markers=result.markers)
        except InspectError as exc:
            parts.append(f"<div class='why'><h3>{escape(action)} ({int(n)}×)</h3><p>{escape(exc)}</p></div>")
            continue
        steps = "".join(
            f"<li class='why-step' data-kind='{escape(s.kind)}'><b>{escape(s.title)}</b>"
            + (f" — {escape(s.detail)}" if s.detail else "")
            + (f" <span class='records'>records {escape(', '.join(map(str, s.positions)))}</span>"
               if s.positions else "") + "</li>" for s in why.steps)
        bodies, calls = int(why.cost.get("bodies", 0)), int(why.cost.get("calls", 0))
        cost = (f"<p>This decision cost {bodies} action {count_words(bodies, 'body', 'bodies')} and "
                f"{calls} durable {count_words(calls, 'call')} downstream.</p>") if why.cost else ""
        parts.append(f"<div class='why'><h3>{escape(action)} reruns {int(n)}×; first at "
                     f"{escape(why.key)}, seq {escape(why.seq)} (cause: {labelled('span', why.cause.kind)})</h3>"
                     f"<ol>{steps}</ol>{cost}</div>")
    return "".join(parts)
