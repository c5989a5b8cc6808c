"""Which task of a prediction ``explain`` means: by key, round, action (its name or the UUID the log and a
diff show), event and occurrence; a task that is not there is a one-line error naming what is."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from agent_inspect._glossary import count_words, did_you_mean, plural
from agent_inspect.diffing._selectors import SelectorError
from agent_inspect.history import action_names, is_uuid
from agent_inspect.store import Outcome

__all__ = ["find_task"]


def find_task(tasks: pd.DataFrame, key: Any, seq: Any, action: Any, event: Any, occurrence: int, log: Any,
              task: int | None = None) -> int:
    """The row of ``tasks`` (a prediction's) that (``key``, ``seq``, ``action``, ``event``) names, its
    ``occurrence``-th match (dispatched tasks first), or ``task`` itself (a row number, checked); ``log``
    names actions given by UUID."""
    n = len(tasks)
    if task is not None:    # a row number: a negative one or one past the end is no task (it read the last / crashed)
        if isinstance(task, bool) or not isinstance(task, int | np.integer) or not 0 <= task < n:
            # a row itself (a Series) would print as many lines: say what it is, and what to pass instead
            given = f"task={task!r}" if isinstance(task, int | np.integer) else f"task= got a {type(task).__name__}"
            raise SelectorError(f"{given}: pass the number of a row of prediction.tasks, "
                                + (f"0 to {n - 1} (it has {plural(n, 'task')})" if n else "which has no task"))
        return int(task)
    if key is None and seq is None and action is None and event is None:
        raise SelectorError(_name_a_task(tasks))
    if isinstance(occurrence, bool) or not isinstance(occurrence, int | np.integer) or occurrence < 0:
        raise SelectorError(f"occurrence={occurrence!r}: pass 0 for the first match, 1 for the second, …")
    return _task_index(tasks, key, seq, _action_name(action, tasks, log), event, int(occurrence), log)


def _name_a_task(tasks: pd.DataFrame) -> str:
    """How to name a task, with one of ``tasks`` as the example: no task named is no question to answer."""
    how = "explain needs a task: name it by business key, seq and action"
    if not len(tasks):
        return how + " (this restore runs no task)"
    first = tasks.iloc[0]
    key = first["business_key"] if isinstance(first.get("business_key"), str) else first["key"]
    example = f"ai.explain(log, {str(key)!r}, {int(first['seq'])}, {str(first['action'])!r})"
    return (f"{how}, e.g. {example}, or pass task= the number of a row of ai.predict(log).tasks "
            f"(this restore has {plural(len(tasks), 'task')})")


def _matches(tasks: pd.DataFrame, key: Any, seq: Any, action: Any, event: Any) -> np.ndarray:
    mask = np.ones(len(tasks), dtype=bool)
    if key is not None:   # a K1.6/K2 log names its keys by digest: the key's text finds them too
        from agent_inspect.codec import string_key_digest

        bk = tasks["business_key"].astype(str)
        mask &= ((tasks["key"].astype(str) == str(key)) | (bk == str(key))
                 | (bk == string_key_digest(str(key)))).to_numpy()
    if seq is not None:
        mask &= (tasks["seq"] == int(seq)).fillna(False).to_numpy(dtype=bool)
    if action is not None:
        mask &= (tasks["action"].astype(str) == str(action)).to_numpy()
    if event is not None:
        mask &= ((tasks["event_id"].astype(str) == str(event)) | (tasks["event_type"].astype(str) == str(event))
                 | (tasks["input"].astype(str) == str(event))).to_numpy()
    return mask


def _task_index(tasks: pd.DataFrame, key: Any, seq: Any, action: Any, event: Any, occurrence: int,
                log: Any = None) -> int:
    dispatched = (tasks["outcome"] != Outcome.NOT_DISPATCHED).to_numpy(dtype=bool)
    matches = _matches(tasks, key, seq, action, event)
    hits = np.flatnonzero(matches & dispatched)
    if len(hits) <= occurrence:      # dispatched tasks first, then those predict lists as NOT-DISPATCHED
        undispatched = np.flatnonzero(matches & ~dispatched)
        if len(undispatched) > occurrence - len(hits):
            return int(undispatched[occurrence - len(hits)])
        what = f"no task {key}@{seq} {action}" + (f" ({event})" if event else "")
        if matches.any():       # the task is there, fewer times than asked for
            raise SelectorError(f"{what} occurrence={occurrence}: it matches {plural(int(matches.sum()), 'task')}, "
                                "and occurrence= counts them from 0")
        at, mine = _matches(tasks, None, seq, None, None), _matches(tasks, key, None, None, None)
        if not mine.any():      # the key's own tasks: other keys' tasks do not help find this one
            if _in_log(log, key):     # a key the log holds but the restore does not replay: no "did you mean"
                raise SelectorError(f"{what}: business key {str(key)!r} is in the log, but the restore runs no task of "
                                    "it (none of its rounds is replayed after the markers)")
            hint = did_you_mean([str(key)], {*tasks["business_key"].dropna().astype(str), *tasks["key"].astype(str)})
            said = f"{what}: the prediction has no task of business key {str(key)!r}"
            raise SelectorError(said + (hint or "; its tasks list the keys it has (ai.predict(...).tasks)"),
                                cli=said + (hint or "; its tasks list the keys it has (in Python, "
                                                    "agent_inspect.predict(log, ...).tasks)"))
        if not (at & mine).any():
            seqs = ", ".join(map(str, sorted({int(x) for x in tasks.loc[mine, "seq"].dropna()})))
            raise SelectorError(f"{what}: business key {key}'s tasks are at {count_words(seqs.count(',') + 1, 'round')} {seqs}")
        there = tasks.loc[at & mine]
        scopes = there["scope"] if "scope" in there else pd.Series(None, index=there.index, dtype=object)
        have = sorted({_task_label(k, s, a, sc) for k, s, a, sc in zip(there["key"], there["seq"], there["action"], scopes)})
        raise SelectorError(f"{what}; tasks there: {', '.join(have[:20]) or 'none'}{_not_an_action(action, there, scopes)}")
    return int(hits[occurrence])


def _task_label(key: Any, seq: Any, action: Any, scope: Any) -> str:
    """``order-1@6 CA1``, with ``(in sub-agent reviewer)`` for a task a sub-agent runs."""
    inside = f" (in sub-agent {scope})" if isinstance(scope, str) and scope else ""
    return f"{key}@{seq} {action}{inside}"


def _not_an_action(action: Any, there: pd.DataFrame, scopes: pd.Series) -> str:
    """When ``action`` is the name of a sub-agent some of ``there`` run in: that it names no action, and what does."""
    inside = there.loc[(scopes.astype(object) == str(action)).to_numpy(dtype=bool), "action"]
    if action is None or inside.empty:
        return ""
    names = ", ".join(sorted(set(inside.astype(str))))
    return (f"; {str(action)!r} is a sub-agent, not an action (its tasks there: {names}): the action (--action) "
            "takes an action name or UUID")


def _action_name(action: Any, tasks: pd.DataFrame, log: Any) -> Any:
    """``action`` as the tasks name it: an action UUID (as the log and a diff show it) becomes its name."""
    if action is None or not is_uuid(str(action)) or (tasks["action"].astype(str) == str(action)).any():
        return action
    return action_names(getattr(log, "records", None), set(tasks["action"].dropna().astype(str))).get(str(action), action)


def _in_log(log: Any, key: Any) -> bool:
    records = getattr(log, "records", None)
    if records is None:
        return False
    return any(c in records and bool((records[c].astype(str) == str(key)).any()) for c in ("business_key", "key_text"))
