"""Action names for what the log knows only by UUID: every view and report line shows a name.

Where a name comes from, in order: the caller's ``{uuid: name}`` (the agent model); the log itself
(``upstreamActionName`` of the events an execution emitted); the K2 name UUID of every action name the log
or the caller mentions. A UUID none of these name shows as ``uuid:<first 8 hex>…``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import pandas as pd

from agent_inspect.codec import name_action_uuid

__all__ = ["action_names", "action_label", "is_uuid"]

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def is_uuid(text: object) -> bool:
    """True for a canonical UUID string.

    For example::

        ai.history.is_uuid("7ae090b2-dfe3-3b79-97ab-706295e401a7"), ai.history.is_uuid("chat")   # True, False
    """
    return isinstance(text, str) and bool(_UUID.match(text))


def action_names(records: pd.DataFrame | None = None, known: Mapping[str, str] | Iterable[str] = ()) -> dict[str, str]:
    """``{action UUID: action name}`` for the actions of ``records`` (a log's records frame).

    ``known`` adds names the caller has: a ``{uuid: name}`` map (from the agent model) or plain names
    (their K2 name UUIDs).

    For example::

        ai.history.action_names(log.records)           # {action UUID: action name}
    """
    names: dict[str, str] = {}
    mentioned: set[str] = set()
    if records is not None and "upstream_action" in records.columns:
        mentioned |= {v for v in records["upstream_action"].dropna().unique().tolist() if isinstance(v, str) and v}
    if isinstance(known, Mapping):
        given = {str(k): str(v) for k, v in known.items()}
        mentioned |= set(given.values())
    else:
        given = {}
        mentioned |= {str(n) for n in known}
    for name in mentioned:
        if not is_uuid(name):
            names[name_action_uuid(name)] = name
    if records is not None:
        names.update(_emitted_names(records))
    names.update(given)
    return names


def action_label(action: object, names: Mapping[str, str]) -> str:
    """The name to show for ``action`` (a name or a UUID): its name, else ``uuid:<8 hex>…`` for a UUID.

    For example::

        names = ai.history.action_names(log.records)
        ai.history.action_label(log.records["action_uuid"][0], names), ai.history.action_label("chat", names)
    """
    if action is None or action is pd.NA or (isinstance(action, float) and action != action):
        return ""
    text = str(action)
    if text.startswith("action "):           # compact_history's fallback, "action <uuid>"
        text = text[len("action "):]
    if text in names:
        return names[text]
    if is_uuid(text):
        return f"uuid:{text[:8]}…"
    return text


def _emitted_names(frame: pd.DataFrame) -> dict[str, str]:
    """``action_uuid`` → the action's name, read from the records its output events triggered."""
    cols = ("upstream_action", "task_event_id", "action_uuid", "output_event_ids")
    if any(c not in frame.columns for c in cols):
        return {}
    emitted_by = dict(zip(frame["task_event_id"].tolist(), frame["upstream_action"].tolist()))
    names: dict[str, str] = {}
    for uuid, outs in zip(frame["action_uuid"].tolist(), frame["output_event_ids"].tolist()):
        if not isinstance(uuid, str) or uuid in names or not isinstance(outs, (list, tuple)):
            continue
        for event_id in outs:
            name = emitted_by.get(event_id)
            if isinstance(name, str) and name:
                names[uuid] = name
                break
    return names
