"""Shared input side of action graphs and call trees: one key's executions, from a log or a reconstruction."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from agent_inspect._errors import DecodeError, RecoveryError
from agent_inspect._glossary import first_few
from agent_inspect.history._refresh import refresh_rows
from agent_inspect.log import rule_mark

UNKNOWN = "unknown"
"""Status of every node when the graph is built from a plain log (no rule has been applied)."""

_INTERNAL_SUBAGENT = "InternalSubagentCallEvent"


def first_attr(obj: Any, *names: str, default: Any = None) -> Any:
    """First non-null attribute (or mapping item) of ``names`` on a decoded value, else ``default``."""
    if obj is None:
        return default
    for name in names:
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return default


def _scalar(value: Any) -> Any:
    """A frame cell as a plain Python value (``None`` for every flavour of missing)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes, tuple, list)):
        try:
            return value.item()
        except (AttributeError, ValueError):
            return value
    return value


_COLUMNS = (
    "partition", "offset", "state_key", "business_key", "key_text", "seq", "event_uuid", "action_uuid",
    "tombstone", "completed", "output_event_types", "task_event_class", "task_event_type", "task_event_id",
    "upstream_event_id",
    "upstream_action", "is_root", "output_event_count", "call_count", "calls_pending", "calls_succeeded",
    "calls_failed", "subagent_scope", "subagent_session_id", "subagent_call_id", "key_format", "value_format",
    "status", "reason", "status_rule_note", "divergence_id", "outcome", "outcome_reason", "rule_note", "attempt",
    "execution", "error",
)


def _plain_column(column: pd.Series) -> list[Any]:
    """A column as Python values with ``None`` for missing cells (whatever the dtype)."""
    values: list[Any] = column.astype(object).tolist()
    if column.hasnans:
        missing = column.isna().tolist()
        values = [None if m else v for v, m in zip(values, missing)]
    return values


def event_attributes(event: Any) -> Any:
    """An event's attribute map, parsed (``{}`` when absent or not valid JSON)."""
    if event is None:
        return {}
    try:
        attrs = event.attrs()
    except Exception:  # noqa: BLE001 - a broken payload must not break a graph; shown as empty
        return {}
    return attrs if attrs is not None else {}


@dataclass(frozen=True, slots=True)
class OutputRef:
    """One event an execution emitted (from its completed record)."""

    event_id: str | None
    event_type: str | None
    event_class: str | None
    upstream_event_id: str | None
    upstream_action: str | None
    delegate_type: str | None = None


@dataclass(slots=True)
class Execution:
    """The writes of one state key in one attempt (spec §5.6, §15.5), with what the graph needs."""

    node: str
    business_key: Any
    seq: int | None
    attempt: int | None
    state_key: str | None
    positions: list[int]
    rows: list[Mapping[str, Any]]
    status: str = UNKNOWN
    reason: str | None = None
    divergence_id: Any = None
    tombstoned: bool = False
    outputs: tuple[OutputRef, ...] = ()
    action_name: str | None = None
    call_functions: tuple[tuple[str, str], ...] = ()  # (functionId, status) of the last call journal
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def last(self) -> Mapping[str, Any]:
        return self.rows[-1]

    @property
    def first(self) -> Mapping[str, Any]:
        return self.rows[0]


@dataclass(frozen=True)
class KeyData:
    """The executions of one business key (optionally one round / attempt), in log order."""

    business_key: Any
    key_text: str | None
    executions: tuple[Execution, ...]
    value: Callable[[int], Any]
    rule: str | None
    has_status: bool
    involved: Mapping[int, tuple[Any, ...]] = field(default_factory=dict)  # pos -> divergence ids


def _divergence_positions(source: Any) -> dict[int, tuple[Any, ...]]:
    """Which divergences (of a reconstruction) each log position took part in or triggered."""
    frame = getattr(source, "divergences", None)
    if not isinstance(frame, pd.DataFrame) or frame.empty or "positions" not in frame.columns:
        return {}
    ids = frame["id"].tolist() if "id" in frame.columns else frame.index.tolist()
    triggers = _plain_column(frame["trigger_pos"]) if "trigger_pos" in frame.columns else [None] * len(frame)
    out: dict[int, list[Any]] = {}
    for did, positions, trigger in zip(ids, frame["positions"].tolist(), triggers):
        for pos in {*(positions or ()), *(() if trigger is None else (trigger,))}:
            out.setdefault(int(pos), []).append(did)
    return {pos: tuple(v) for pos, v in out.items()}


def _source_parts(source: Any) -> tuple[pd.DataFrame, Callable[[int], Any], str | None, bool]:
    records = getattr(source, "records", None)
    if not isinstance(records, pd.DataFrame):
        raise TypeError(
            f"expected an ActionStateLog or a Reconstruction, got {type(source).__name__}"
        )
    log = getattr(source, "log", None)
    value = getattr(source, "value", None) if log is None else getattr(log, "value", None)
    if not callable(value):
        raise RecoveryError(
            f"this {type(source).__name__} has no decoded values (built from a bare records frame); "
            "build it from the ActionStateLog to draw graphs"
        )
    has_status = "status" in records.columns
    rule = getattr(source, "rule", None)
    rule_name = None if rule is None else rule_mark(rule, None).name
    return records, value, rule_name, has_status


def _select_key(records: pd.DataFrame, key: Any) -> pd.DataFrame:
    rows = records[records["business_key"] == key] if "business_key" in records.columns else records.iloc[0:0]
    if rows.empty and "key_text" in records.columns:
        rows = records[records["key_text"] == key]
    if rows.empty:
        raise RecoveryError(f"business key {key!r} is not in the log; pick one from log.keys()")
    return rows


def _outputs(state: Any) -> tuple[OutputRef, ...]:
    if state is None:
        return ()
    return tuple(
        OutputRef(
            event_id=e.id,
            event_type=first_attr(e, "type", "event_type"),
            event_class=e.event_class,
            upstream_event_id=e.upstream_event_id,
            upstream_action=e.upstream_action_name,
            delegate_type=_delegate_type(e),
        )
        for e in state.output_events
    )


def _delegate_type(event: Any) -> str | None:
    if event.delegate is not None:
        delegate_type: str | None = first_attr(event.delegate, "type", "event_type")
        return delegate_type
    if event.type == _INTERNAL_SUBAGENT:
        value = event_attributes(event).get("delegateType")
        return value if isinstance(value, str) else None
    return None


def _call_functions(state: Any) -> tuple[tuple[str, str], ...]:
    """(functionId, effective status) of each call result of a record."""
    if state is None:
        return ()
    return tuple((c.function_id, c.effective_status) for c in state.call_results)


def task_event(data: KeyData, ex: Execution) -> Any:
    """The decoded taskEvent of an execution (from its first readable write), or ``None``."""
    for pos in ex.positions:
        state = data.value(pos)
        if state is not None:
            return state.task_event
    return None


def load_key(
    source: Any,
    key: Any,
    *,
    seq: int | None = None,
    attempt: int | None = None,
    action_names: Mapping[str, str] | Iterable[str] | None = None,
    kafka_pending: str | None = None,
) -> KeyData:
    """Group one business key's records into executions with statuses, outputs and action names; a log's refresh
    rows as :func:`agent_inspect.history.refresh_rows` finds them under ``kafka_pending`` (a reconstruction's
    statuses already say which rows are refresh rows under its own settings)."""
    records, decode, rule, has_status = _source_parts(source)

    def value(pos: int) -> Any:
        try:
            return decode(pos)
        except DecodeError:
            return None  # the row's error column already says why; the node is kept and marked

    frame = _select_key(records, key).sort_index()
    business_key = _scalar(frame["business_key"].iloc[0]) if "business_key" in frame.columns else key
    key_text = None
    if "key_text" in frame.columns:
        texts = frame["key_text"].dropna()
        key_text = _scalar(texts.iloc[0]) if len(texts) else None

    columns = [c for c in _COLUMNS if c in frame.columns]
    values = [_plain_column(frame[c]) for c in columns]
    rows = [dict(zip(columns, cells)) for cells in zip(*values)] if columns else [{} for _ in range(len(frame))]
    for pos, row in zip(frame.index.tolist(), rows):
        row["pos"] = int(pos)
    # a 0.4+ log's refresh rows are no attempts or executions (a reconstruction's status says "refresh")
    refresh = frozenset() if has_status else refresh_rows(source, kafka_pending=kafka_pending)
    if "attempt" not in frame.columns or "execution" not in frame.columns:
        from agent_inspect.history._executions import annotate_rows

        ann = annotate_rows(frame, refresh)
        for row, ex_id, att in zip(rows, ann["execution"].tolist(), _plain_column(ann["attempt"])):
            row["execution"], row["attempt"] = ex_id, att

    groups: dict[tuple[Any, ...], Execution] = {}
    last_of_key: dict[Any, Execution] = {}
    for row in rows:
        sk = row.get("state_key")
        if row.get("tombstone"):
            prev = last_of_key.get(sk)
            if prev is not None:
                prev.tombstoned = True
                prev.extra.setdefault("tombstone_positions", []).append(row["pos"])
            continue
        if sk is None and row.get("seq") is None:
            continue  # an undecodable key belongs to no business key's graph
        if row.get("status") == "refresh" or row["pos"] in refresh:
            # a checkpoint-time re-append (0.4+): not an execution; noted on the state key's execution
            prev = last_of_key.get(sk)
            if prev is not None:
                prev.extra.setdefault("refresh_positions", []).append(row["pos"])
            continue
        # K0 keys carry no seq, so the annotation leaves them out (-1): one execution per state key.
        execution = row.get("execution")
        gid = (sk, row.get("attempt"), None if execution is None or execution < 0 else execution)
        ex = groups.get(gid)
        if ex is None:
            ex = groups[gid] = Execution(
                node=f"action:{row['pos']}",
                business_key=business_key,
                seq=row.get("seq"),
                attempt=row.get("attempt"),
                state_key=sk,
                positions=[],
                rows=[],
            )
        ex.positions.append(row["pos"])
        ex.rows.append(row)
        last_of_key[sk] = ex

    if seq is not None and not any(ex.seq == seq for ex in groups.values()):
        rounds = sorted({ex.seq for ex in groups.values() if ex.seq is not None})
        raise RecoveryError(f"key {business_key!r} has no round seq={seq}; its rounds are: "
                            f"{first_few(rounds, 10, counted=False) or 'none'}")
    names = _name_map(action_names)
    executions = sorted(
        (
            ex
            for ex in groups.values()
            if (seq is None or ex.seq == seq) and (attempt is None or ex.attempt == attempt)
        ),
        key=lambda e: e.positions[0],
    )
    for ex in executions:
        _describe(ex, value, has_status, names)
    _share_names(executions, list(groups.values()), value, names)
    return KeyData(business_key, key_text, tuple(executions), value, rule, has_status,
                   _divergence_positions(source) if has_status else {})


def _name_map(action_names: Mapping[str, str] | Iterable[str] | None) -> dict[str, str]:
    """``action_uuid -> name``; plain names are mapped through the name-based (K2) UUID recipe."""
    if action_names is None:
        return {}
    if isinstance(action_names, Mapping):
        return {str(k): str(v) for k, v in action_names.items()}
    from agent_inspect.codec import name_action_uuid

    return {name_action_uuid(n): n for n in action_names}


def _describe(ex: Execution, value: Callable[[int], Any], has_status: bool, names: Mapping[str, str]) -> None:
    last = ex.last
    if has_status:
        ex.status = last.get("status") or UNKNOWN
        ex.reason = last.get("reason")
        ex.extra["status_rule_note"] = last.get("status_rule_note")
        ex.divergence_id = last.get("divergence_id")
        looked_up = next((r for r in reversed(ex.rows) if r.get("outcome") is not None), None)
        if looked_up is not None:
            ex.extra["outcome"] = (looked_up["outcome"], looked_up.get("outcome_reason"), looked_up.get("rule_note"))
    # outputs are written only on completion; V0 (0.1) records have no completed flag at all
    if last.get("output_event_count"):
        ex.outputs = _outputs(value(last["pos"]))
        # the log derives legacy (V0/V1) event types from their class; keep node types consistent with it
        types = last.get("output_event_types")
        if isinstance(types, (tuple, list)) and len(types) == len(ex.outputs):
            ex.outputs = tuple(
                replace(o, event_type=t) if t is not None else o for o, t in zip(ex.outputs, types)
            )
    if last.get("completed") and last.get("task_event_type") == _INTERNAL_SUBAGENT:
        from agent_inspect.history._results import subagent_result_events

        ex.extra["results"] = len(subagent_result_events(value(last["pos"])))   # V4 (addendum §1.1)
    for row in reversed(ex.rows):
        if row.get("call_count"):
            ex.call_functions = _call_functions(value(row["pos"]))
            ex.extra["call_row"] = row
            break
    named = {o.upstream_action for o in ex.outputs if o.upstream_action}
    if len(named) == 1:
        ex.action_name = named.pop()
    uuid = last.get("action_uuid")
    if ex.action_name is None and uuid is not None and uuid in names:
        ex.action_name = names[uuid]


def _share_names(
    executions: list[Execution], others: list[Execution], value: Callable[[int], Any], names: dict[str, str]
) -> None:
    # An action's name is written only on its own outputs (spec §5.3); a stable action UUID lets another
    # execution of the same action (another round or attempt) name one that emitted nothing.
    for ex in executions:
        uuid = ex.last.get("action_uuid")
        if ex.action_name is not None and uuid is not None:
            names.setdefault(uuid, ex.action_name)
    missing = {ex.last.get("action_uuid") for ex in executions if ex.action_name is None} - set(names) - {None}
    for other in others:
        if not missing:
            break
        last = other.last
        uuid = last.get("action_uuid")
        if uuid is not None and uuid in missing and last.get("output_event_count"):
            named = {o.upstream_action for o in _outputs(value(last["pos"])) if o.upstream_action}
            if len(named) == 1:
                names[uuid] = named.pop()
                missing.discard(uuid)
    for ex in executions:
        if ex.action_name is None:
            uuid = ex.last.get("action_uuid")
            ex.action_name = names.get(uuid) if uuid is not None else None
