"""The Trace Log as data (addendum §3.2): one row per record, bad records kept with their reason."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from agent_inspect._html import HtmlPart, HtmlRepr, Strong, Table, Text

__all__ = ["TraceLog", "load_trace", "parse_items", "ENTITY_TYPES", "STATUSES", "PROBLEM_CATEGORIES",
           "TRACE_COLUMNS", "METADATA_COLUMNS", "TRUNCATION_WRAPPERS", "EVENT_LOG_LIFECYCLE"]

ENTITY_TYPES = ("event", "action", "llm", "parser", "tool", "subagent")
STATUSES = ("created", "started", "success", "failed", "reused")
PROBLEM_CATEGORIES = ("action_execution_failed", "model_call_failed", "model_output_parse_error", "tool_call_failed")
DETAILS = ("STANDARD", "VERBOSE")
#: wrapper member -> its count member (STANDARD truncation of ``attributes``)
TRUNCATION_WRAPPERS = {"truncatedString": "omittedChars", "truncatedList": "omittedElements",
                       "truncatedObject": "omittedFields"}
#: old Event Log (spec §14.4) lifecycle event types -> trace status of the action
EVENT_LOG_LIFECYCLE = {"_execution_started_event": "started", "_execution_finished_event": "success",
                       "_execution_failed_event": "failed", "_execution_reused_event": "reused"}

# upstream field -> column, in the serializer's order (addendum §3.2)
_FIELDS = {"timestamp": "timestamp", "detail": "detail", "jobId": "job_id", "taskName": "task_name",
           "subtaskId": "subtask_id", "inputRunId": "input_run_id", "businessKey": "business_key",
           "agentName": "agent_name", "entityType": "entity_type", "entityName": "entity_name",
           "executionId": "execution_id", "parentExecutionId": "parent_execution_id",
           "status": "status", "problemCategory": "problem_category"}
#: entityMetadata member -> column (event, action, llm and tool metadata of addendum §3.2)
METADATA_COLUMNS = {"eventId": "event_id", "producerExecutionId": "producer_execution_id",
                    "upstreamEventId": "upstream_event_id", "upstreamActionName": "upstream_action_name",
                    "triggerEventId": "trigger_event_id", "model": "model",
                    "toolRequestEventId": "tool_request_event_id", "toolCallId": "tool_call_id",
                    "externalId": "external_id", "toolType": "tool_type", "mcpServer": "mcp_server",
                    "skillName": "skill_name", "skillRegistered": "skill_registered",
                    "skillResourcePath": "skill_resource_path"}
TRACE_COLUMNS = ["file", "line", "format", "prefix", *(_FIELDS.values()), *METADATA_COLUMNS.values(),
                 "entity_metadata", "attributes", "truncated", "error_type", "error_message", "extra", "error"]
_CATEGORICAL = ("format", "detail", "job_id", "task_name", "agent_name", "entity_type", "entity_name", "status",
                "problem_category", "model")


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else str(v)


def _truncated(value: Any, depth: int = 0) -> bool:
    if depth > 64:
        return False
    if isinstance(value, dict):
        if any(k in value for k in TRUNCATION_WRAPPERS):
            return True
        return any(_truncated(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_truncated(v, depth + 1) for v in value)
    return False


def _row(obj: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One record's columns and what is wrong with it (empty when nothing)."""
    problems: list[str] = []
    row: dict[str, Any] = {}
    old = "eventType" in obj and "entityType" not in obj or "eventAttributes" in obj
    row["format"] = "event-log" if old else "trace"
    for key, col in _FIELDS.items():
        row[col] = obj.get(key)
    meta = obj.get("entityMetadata")
    if meta is not None and not isinstance(meta, dict):
        problems.append(f"entityMetadata is a {type(meta).__name__}, not an object")
        meta = None
    meta = dict(meta or {})
    attrs = obj.get("eventAttributes" if old and "attributes" not in obj else "attributes")
    if old:
        event_type = obj.get("eventType")
        for key in ("eventId", "upstreamEventId", "upstreamActionName"):
            if obj.get(key) is not None:
                meta.setdefault(key, obj[key])
        lifecycle = EVENT_LOG_LIFECYCLE.get(str(event_type))
        if lifecycle is not None:
            row["entity_type"] = row["entity_type"] or "action"
            row["status"] = row["status"] or lifecycle
        else:
            row["entity_type"] = row["entity_type"] or "event"
            row["entity_name"] = row["entity_name"] or event_type
        if event_type is None and row["entity_type"] is None:
            problems.append("missing field eventType")
    for key, col in METADATA_COLUMNS.items():
        row[col] = _text(meta.pop(key, None)) if key != "skillRegistered" else meta.pop(key, None)
    row["entity_metadata"] = meta or None
    if attrs is None:
        if not old:
            problems.append("missing field attributes")
        attrs = {}
    elif not isinstance(attrs, dict):
        attrs = {"value": attrs}
    row["attributes"] = attrs
    row["truncated"] = _truncated(attrs)
    row["error_type"] = _text(attrs.get("errorType"))
    row["error_message"] = _text(attrs.get("errorMessage"))
    known = set(_FIELDS) | {"entityMetadata", "attributes", "eventAttributes", "eventType", "eventId",
                            "upstreamEventId", "upstreamActionName"}
    extra = {k: v for k, v in obj.items() if k not in known}
    row["extra"] = extra or None
    for col in ("job_id", "task_name", "input_run_id", "business_key", "agent_name", "entity_type", "entity_name",
                "execution_id", "parent_execution_id", "status", "problem_category", "detail"):
        row[col] = _text(row[col])
    # what upstream always writes (addendum §3.2 presence rules)
    if row["timestamp"] is None:
        problems.append("missing field timestamp")
    et = row["entity_type"]
    if et is None:
        problems.append("missing field entityType")
    elif et not in ENTITY_TYPES:
        problems.append(f"unknown entityType {et!r} (expected one of {', '.join(ENTITY_TYPES)})")
    st = row["status"]
    if st is not None and st not in STATUSES:
        problems.append(f"unknown status {st!r} (expected one of {', '.join(STATUSES)})")
    if not old and row["detail"] is not None and row["detail"] not in DETAILS:
        problems.append(f"unknown detail {row['detail']!r} (expected STANDARD or VERBOSE)")
    if row["problem_category"] is not None and row["problem_category"] not in PROBLEM_CATEGORIES:
        problems.append(f"unknown problemCategory {row['problem_category']!r}")
    if et == "event" and row["event_id"] is None:
        problems.append("event record without entityMetadata.eventId")
    if et in ("action", "llm", "tool", "parser", "subagent"):
        if row["execution_id"] is None:
            problems.append(f"{et} record without executionId")
        if st is None:
            problems.append(f"{et} record without status")
    if et in ("llm", "tool", "parser", "subagent") and row["parent_execution_id"] is None:
        problems.append(f"{et} record without parentExecutionId")
    return row, problems


def parse_items(groups: Iterable[tuple[Any, Sequence[Any]]]) -> pd.DataFrame:
    """The record table from the sources' trace items (file description, items per file)."""
    rows = []
    for f, items in groups:
        for it in items:
            if it.obj is None:
                row = {c: None for c in TRACE_COLUMNS}
                row.update(file=it.file, line=it.line, prefix=it.prefix, error=it.error,
                           extra={"text": it.text} if it.text else None, truncated=False)
            else:
                row, problems = _row(it.obj)
                row.update(file=it.file, line=it.line, prefix=it.prefix, error="; ".join(problems) or None)
            # the file name tells job, task and subtask (FILE output); the record wins when it says
            for col in ("job_id", "task_name"):
                if row.get(col) is None:
                    row[col] = getattr(f, col, None)
            if row.get("subtask_id") is None:
                row["subtask_id"] = getattr(f, "subtask_id", None)
            rows.append(row)
    frame = pd.DataFrame(rows, columns=TRACE_COLUMNS)
    return _typed(frame)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    raw = frame["timestamp"]
    ts = pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns, UTC]")
    if len(frame):
        numeric = raw.map(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
        text = raw.map(lambda v: isinstance(v, str))
        if text.any():
            ts[text] = pd.to_datetime(raw[text], utc=True, errors="coerce", format="ISO8601")
        if numeric.any():
            ts[numeric] = pd.to_datetime(raw[numeric].astype("float64"), unit="ms", utc=True, errors="coerce")
        bad = raw.notna() & ts.isna()
        if bad.any():
            frame.loc[bad, "error"] = [
                (e + "; " if isinstance(e, str) else "") + f"timestamp {str(v)[:40]!r} is not ISO-8601"
                for e, v in zip(frame.loc[bad, "error"], raw[bad])]
    frame["timestamp"] = ts
    sub = pd.to_numeric(frame["subtask_id"], errors="coerce")
    frame["subtask_id"] = sub.astype("Int64")
    frame["line"] = frame["line"].astype("Int64")
    frame["truncated"] = frame["truncated"].fillna(False).astype(bool)
    for col in _CATEGORICAL:
        frame[col] = frame[col].astype("category")
    return frame


@dataclass(frozen=True)
class TraceLog(HtmlRepr):
    """A Flink Agents Trace Log (or an old Event Log) as data.

    ``records``: one row per record in file order, one column per field of addendum §3.2 (snake
    case), ``entityMetadata`` flattened (``event_id``, ``trigger_event_id``, ``model``, … and
    ``entity_metadata`` for members not listed there), ``attributes`` as given (truncation wrappers
    kept; ``truncated`` marks them), ``format`` ("trace" or "event-log"), the ``file`` and ``line``
    it came from, and ``error`` (None when the record is fine). ``errors``: the rows with an error.
    """

    records: pd.DataFrame
    files: tuple[Any, ...] = ()
    source: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def errors(self) -> pd.DataFrame:
        """Records that are not good trace records: file, line, reason (``error``) and what was read."""
        return self.records[self.records["error"].notna()]

    @property
    def good(self) -> pd.DataFrame:
        """Records without an error."""
        return self.records[self.records["error"].isna()]

    def jobs(self) -> list[str]:
        """The job ids the records name (from the record, else the file name)."""
        return sorted(set(map(str, self.good["job_id"].dropna())))

    def for_job(self, job_id: str | None) -> TraceLog:
        """The records of one job (None or "": records that name no job)."""
        ids = self.records["job_id"].astype(object).fillna("")
        keep = (ids == (job_id or "")) | self.records["error"].notna() & self.records["entity_type"].isna()
        return TraceLog(self.records[keep].reset_index(drop=True), self.files, self.source)

    def executions(self, *, cached_latency_ms: float = 5.0) -> pd.DataFrame:
        """One row per action execution (see :func:`agent_inspect.trace.executions`)."""
        from agent_inspect.trace._observe import executions

        key = f"executions:{cached_latency_ms}"
        if key not in self._cache:
            self._cache[key] = executions(self, cached_latency_ms=cached_latency_ms)
        return self._cache[key]

    def calls(self, *, cached_latency_ms: float = 5.0) -> pd.DataFrame:
        """One row per llm / tool / parser / subagent execution, with ``replayed`` when it was served
        from a durable CallResult (addendum §3.3 signatures)."""
        from agent_inspect.trace._observe import calls

        key = f"calls:{cached_latency_ms}"
        if key not in self._cache:
            self._cache[key] = calls(self, cached_latency_ms=cached_latency_ms)
        return self._cache[key]

    def summary(self) -> dict[str, Any]:
        """Counts by entity type and status, jobs, subtasks, agents, business keys, errors, recovery signs."""
        good = self.good
        by_entity = {str(k): int(v) for k, v in good["entity_type"].value_counts(sort=False).items() if v}
        by_status: dict[str, dict[str, int]] = {}
        for (et, st), n in good.groupby(["entity_type", "status"], observed=True).size().items():
            by_status.setdefault(str(et), {})[str(st)] = int(n)
        subtasks = sorted({(str(j) if pd.notna(j) else "", str(t) if pd.notna(t) else "", int(s))
                           for j, t, s in zip(good["job_id"], good["task_name"], good["subtask_id"]) if pd.notna(s)})
        executions = self.executions()
        calls = self.calls()
        reused = int((executions["observed"] == "REUSE").sum()) if len(executions) else 0
        replayed = int(calls["replayed"].sum()) if len(calls) else 0
        recovery = reused > 0 or replayed > 0
        ts = good["timestamp"].dropna()
        return {
            "source": self.source,
            "files": len(self.files),
            "records": int(len(self.records)),
            "formats": {str(k): int(v) for k, v in self.records["format"].value_counts(sort=False).items() if v},
            "by_entity_type": by_entity,
            "by_status": by_status,
            "jobs": self.jobs(),
            "subtasks": [{"job_id": j or None, "task_name": t or None, "subtask_id": s} for j, t, s in subtasks],
            "agents": sorted(map(str, good["agent_name"].dropna().unique())),
            "business_keys": sorted(map(str, good["business_key"].dropna().unique())),
            "action_executions": int(len(executions)),
            "observed": {str(k): int(v) for k, v in executions["observed"].value_counts().items()}
            if len(executions) else {},
            "calls_replayed": replayed,
            "calls_executed": int(len(calls) - replayed),
            "truncated_records": int(good["truncated"].sum()),
            "first": ts.min().isoformat() if len(ts) else None,
            "last": ts.max().isoformat() if len(ts) else None,
            "recovery": recovery,
            "recovery_note": ("reused actions or replayed durable calls show a recovery" if recovery else
                              "no action was reused and no durable call was replayed: this trace shows no recovery"),
            "errors": [{"file": str(f), "line": None if pd.isna(n) else int(n), "reason": str(r)}
                       for f, n, r in zip(self.errors["file"], self.errors["line"], self.errors["error"])],
        }

    def _html_parts(self) -> Iterable[HtmlPart]:
        s = self.summary()
        yield Text(Strong("Trace Log"), " ", self.source,
                   f": {s['records']} records in {s['files']} file(s), {s['action_executions']} action executions, "
                   f"jobs {', '.join(s['jobs']) or '—'}, {len(s['errors'])} bad records. {s['recovery_note']}.")
        counts = pd.DataFrame([{"entity_type": et, "status": st, "records": n}
                               for et, d in s["by_status"].items() for st, n in d.items()])
        cols = ["timestamp", "business_key", "entity_type", "entity_name", "status", "execution_id", "error"]
        yield Table(counts, caption="records by entity type and status")
        yield Table(self.records[cols], max_rows=30, caption="records")

    def __len__(self) -> int:
        return len(self.records)


def load_trace(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> TraceLog:
    """Read a Trace Log: a file, a directory of trace files, a glob, or a list of them.

    FILE output (``traces-{jobId}-{taskName}-{subtaskId}.log``, JSONL or pretty-printed), SLF4J
    output (each record after the logger's prefix) and the old Event Log (``eventType`` /
    ``eventAttributes``, spec §14.4) are read alike. Bad lines are rows of ``.errors``.
    """
    from agent_inspect.sources import read_trace_files, trace_files

    files = trace_files(source)
    groups = read_trace_files(files)
    label = os.fspath(source) if not isinstance(source, (list, tuple)) else ", ".join(map(os.fspath, source))
    return TraceLog(parse_items(groups), tuple(files), label)
