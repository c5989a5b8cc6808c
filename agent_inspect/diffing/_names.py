"""Action names for the views: the log's own names, the as-recorded agent model's, and K2 name UUIDs."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect.history import action_names

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from agent_inspect._types import LogLike

__all__ = ["names_for"]

# a few logs' names, kept with the log so an id is never reused for another object while cached
_CACHE: OrderedDict[int, tuple[Any, dict[str, str]]] = OrderedDict()
_CACHED_LOGS = 8


def model_names(log: Any) -> dict[str, str]:
    """``{action UUID: name}`` from the as-recorded agent model of ``log``, for every key format it holds."""
    from agent_inspect.agents import AsRecordedAgent

    records = getattr(log, "records", None)
    if not isinstance(records, pd.DataFrame) or records.empty:
        return {}
    try:
        agent = AsRecordedAgent(log)
    except Exception:  # noqa: BLE001 - a log the model cannot read is still named from its own records
        return {}
    formats = [str(f) for f in records["key_format"].dropna().unique()] if "key_format" in records else []
    names: dict[str, str] = {}
    for decl in agent.actions:
        for fmt in formats:
            try:
                uuid = agent.action_uuid(decl.name, fmt)
            except Exception:  # noqa: BLE001 - a format the model cannot key: the other sources still name it
                continue
            if not decl.name.startswith(f"action-{uuid[:8]}"):   # the model's stand-in for a name no record gives
                names[uuid] = decl.name
    return names


def names_for(*logs: LogLike | None, known: Mapping[str, str] | Iterable[str] = ()) -> dict[str, str]:
    """``{action UUID: name}`` for the actions of ``logs``: the as-recorded agent model's names first, then the
    log's own (:func:`agent_inspect.history.action_names`); ``known`` adds names the caller has.

    For example::

        ai.diffing.names_for(log)["f6aaf3fe-41f9-30a8-860f-d2a92bf1087b"]     # 'triage' (production sample)
    """
    out = dict(action_names(None, known))
    for log in logs:
        records = getattr(log, "records", None)
        if not isinstance(records, pd.DataFrame):
            continue
        hit = _CACHE.get(id(log))
        if hit is None or hit[0] is not log:
            names = {**model_names(log), **action_names(records)}
            _CACHE[id(log)] = (log, names)
            while len(_CACHE) > _CACHED_LOGS:
                _CACHE.popitem(last=False)
        else:
            names = hit[1]
        for uuid, name in names.items():
            out.setdefault(uuid, name)
    return out
