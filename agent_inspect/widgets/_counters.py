"""The replay executor's counters in words: each counter's label (for one and for many) and tooltip, and the
stepper's counter row rendered from them (the glossary's ``count_words`` picks the label for the count)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from agent_inspect._glossary import count_words
from agent_inspect._html import escape

__all__ = ["COUNTER_WORDS", "counters_html"]

#: each counter of the executor (``Counters``) in words: (label, what it counts: the tooltip, label for a count of 1)
COUNTER_WORDS: dict[str, tuple[str, str, str]] = {
    "steps": ("steps", "steps of the replay so far: rebuild, lookups, evictions, bodies, durable calls, writes",
              "step"),
    "tasks": ("tasks looked up", "action tasks whose cached record the replay looked up (one per dispatched task)",
              "task looked up"),
    "reused": ("tasks reused", "tasks served from a completed cached record: the body does not run, its stored "
               "outputs are sent again", "task reused"),
    "resumed": ("tasks resumed", "tasks whose cached record was incomplete: the body runs again and gets the "
                "recorded durable-call results", "task resumed"),
    "rerun": ("tasks re-run", "tasks with no usable cached record: the body runs again from the start", "task re-run"),
    "failed": ("lookups failed", "tasks whose lookup fails upstream (FAIL): the job throws there and restarts",
               "lookup failed"),
    "not_dispatched": ("records not dispatched", "cached records of a replayed round that no task looked up "
                       "(predict lists them as NOT-DISPATCHED): nothing ran, nothing was reused", "record not dispatched"),
    "dropped": ("restored tasks dropped", "in-flight tasks the checkpoint restored that the restore dropped without a "
                "lookup: their action is not in the agent (stale logic), or a sub-agent child task on resume "
                "(spec §11.4); predict warns of them", "restored task dropped"),
    "bodies_executed": ("action bodies run", "action bodies that ran again (tasks resumed + tasks re-run)",
                        "action body run"),
    "shadow_runs": ("bodies run to compare", "bodies the 'diff' replay policy ran beside the recorded result to "
                    "compare the two; they change nothing", "body run to compare"),
    "calls_executed": ("durable calls made", "LLM / tool calls that really ran again (not served from a record)",
                       "durable call made"),
    "calls_served": ("durable calls answered from records", "calls answered with the result (or error) a record "
                     "holds, without running them", "durable call answered from records"),
    "calls_reconciled": ("pending calls reconciled", "calls left PENDING by the crash whose reconciler ran to find "
                         "out what happened", "pending call reconciled"),
    "calls_resubmitted": ("sub-agent calls re-submitted", "sub-agent calls whose PENDING caller slot sent the call "
                          "again with the same ids (main); not counted as made: the child task's lookup decides "
                          "whether the sub-agent runs again", "sub-agent call re-submitted"),
    "calls_subagent": ("sub-agent calls made", "sub-agent calls sent again as new calls: no call that leaves the "
                       "job, so not counted as durable calls made; the child's own calls count as they run",
                       "sub-agent call made"),
    "calls_stubbed": ("calls answered by a stub", "calls the replay's call policy answered with a stub value instead "
                      "of running them", "call answered by a stub"),
    "calls_denied": ("calls refused", "calls the replay's call policy refused: the simulated job fails there",
                     "call refused"),
    "writes": ("records written", "action-state records the replay wrote (initial, call results, completed)",
               "record written"),
    "entries_evicted": ("cached records evicted", "cached records removed for later rounds (seq > s) by a divergence",
                        "cached record evicted"),
    "entries_invalidated": ("cached records invalidated", "cached records removed from the diverging round on "
                            "(seq >= s)", "cached record invalidated"),
}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def counters_html(counters: Any, steps: int, *, key: Any = None) -> str:
    """The stepper's counter row: ``steps`` and every counter of ``counters`` (a ``Counters``, a mapping or a
    Series), each labelled from :data:`COUNTER_WORDS` for its count, with its tooltip; ``key`` scopes it to one key.

    For example::

        counters_html({"rerun": 1, "reused": 3}, 9)     # "9 steps", "1 task re-run", "3 tasks reused"
    """
    items: list[tuple[str, Any]] = [("steps", steps)]
    counters = _plain(counters)
    if isinstance(counters, (Mapping, pd.Series)):
        items += [(str(k), v) for k, v in counters.items()]
    elif counters is not None:
        items += [(k, getattr(counters, k)) for k in dir(counters)
                  if not k.startswith("_") and isinstance(getattr(counters, k, None), (int, float))]
    scope = "" if key is None else f" (key {key} only)"
    cells = []
    for k, v in items:
        many, tip, one = COUNTER_WORDS.get(k, (k.replace("_", " "), "", k.replace("_", " ")))
        cells.append(f'<span class="ai-counter" data-name="{escape(k)}" title="{escape(tip + scope)}">'
                     f"<b>{escape(v)}</b> {escape(count_words(v, one, many))}</span>")
    head = "" if key is None else \
        f'<span class="ai-counter-scope">counters of key <code>{escape(key)}</code> only:</span>'
    return f'<div class="ai-counter-row">{head}{"".join(cells)}</div>'
