"""The Trace Log as data (addendum §3.2): one row per record, bad records kept with their reason."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from agent_inspect._errors import SourceError
from agent_inspect._glossary import count_words, define, plural
from agent_inspect._html import HtmlPart, HtmlRepr, Strong, Table, Term, Text
from agent_inspect.trace._times import timestamps

if TYPE_CHECKING:
    from agent_inspect.sources import TraceFile

__all__ = ["TraceLog", "load_trace", "parse_items", "parse_trace", "order_records", "ENTITY_TYPES", "STATUSES",
           "PROBLEM_CATEGORIES", "TRACE_COLUMNS", "METADATA_COLUMNS", "TRUNCATION_WRAPPERS", "EVENT_LOG_LIFECYCLE", "ERROR_COLUMNS",
           "DUPLICATE_COLUMNS", "LIFECYCLE_ORDER"]

ENTITY_TYPES = ("event", "action", "llm", "parser", "tool", "subagent")
"""The entity types a Trace Log record can have."""
STATUSES = ("created", "started", "success", "failed", "reused")
"""The statuses a Trace Log record can have."""
PROBLEM_CATEGORIES = ("action_execution_failed", "model_call_failed", "model_output_parse_error", "tool_call_failed")
"""The problem categories a failed Trace Log record can name."""
DETAILS = ("STANDARD", "VERBOSE")
TRUNCATION_WRAPPERS = {"truncatedString": "omittedChars", "truncatedList": "omittedElements",
                       "truncatedObject": "omittedFields"}
"""wrapper member -> its count member (STANDARD truncation of ``attributes``)"""
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
#: ``TraceLog.errors``: where each bad record is and why, then what was read of it
ERROR_COLUMNS = ["file", "line", "reason"]
#: ``TraceLog.duplicates``: each exact duplicate left out and the record it repeats
DUPLICATE_COLUMNS = ["file", "line", "duplicate_of_file", "duplicate_of_line"]
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
    elif isinstance(row["timestamp"], float) and math.isnan(row["timestamp"]):
        problems.append("timestamp is NaN")
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
    """The record table from the sources' trace items (file description, items per file), in time order
    (:func:`order_records`), exact duplicates left out (see :func:`parse_trace`)."""
    return parse_trace(groups)[0]


def parse_trace(groups: Iterable[tuple[Any, Sequence[Any]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The record table and the exact duplicates left out of it (``file``, ``line``, ``duplicate_of_file``,
    ``duplicate_of_line``: at-least-once shipping writes a line twice, in one file or two). Two files
    whose names give another job, task or subtask do not repeat each other: the name is part of the record."""
    rows = []
    first: dict[tuple[Any, ...], tuple[str, int]] = {}
    dups = []
    for f, items in groups:
        named = (getattr(f, "job_id", None), getattr(f, "task_name", None), getattr(f, "subtask_id", None))
        for it in items:
            digest = getattr(it, "digest", None)
            if it.obj is not None and digest is not None:
                seen = first.setdefault((digest, *named), (it.file, it.line))
                if seen != (it.file, it.line):
                    dups.append({"file": it.file, "line": it.line, "duplicate_of_file": seen[0],
                                 "duplicate_of_line": seen[1]})
                    continue
            row: dict[str, Any]
            if it.obj is None:
                row = dict.fromkeys(TRACE_COLUMNS)
                row.update(file=it.file, line=it.line, prefix=it.prefix, error=it.error,
                           extra={"text": it.text} if it.text else None, truncated=False)
            else:
                try:
                    row, problems = _row(it.obj)
                except (RecursionError, TypeError, ValueError, OverflowError) as exc:
                    row = dict.fromkeys(TRACE_COLUMNS)
                    row["truncated"] = False
                    problems = [f"record cannot be read ({type(exc).__name__}: {str(exc)[:80]})"]
                row.update(file=it.file, line=it.line, prefix=it.prefix, error="; ".join(problems) or None)
            # the file name tells job, task and subtask (FILE output); the record wins when it says
            for col in ("job_id", "task_name"):
                if row.get(col) is None:
                    row[col] = getattr(f, col, None)
            if row.get("subtask_id") is None:
                row["subtask_id"] = getattr(f, "subtask_id", None)
            rows.append(row)
    frame = pd.DataFrame(rows, columns=TRACE_COLUMNS)
    duplicates = pd.DataFrame(dups, columns=DUPLICATE_COLUMNS)
    for col in ("line", "duplicate_of_line"):
        duplicates[col] = duplicates[col].astype("Int64")
    return order_records(_flag_conflicts(_typed(frame))), duplicates


#: order within one execution when timestamps tie (addendum §3.3 lifecycle); ``reused`` is a lifecycle alone
LIFECYCLE_ORDER = {"created": 0, "started": 1, "success": 2, "failed": 2, "reused": 0}


def order_records(frame: pd.DataFrame) -> pd.DataFrame:
    """Records by timestamp, then file and line (records without a timestamp last); within one execution,
    records with the same timestamp in lifecycle order (created < started < success / failed)."""
    if frame.empty:
        return frame.reset_index(drop=True)
    frame = frame.sort_values(["timestamp", "file", "line"], na_position="last", kind="stable").reset_index(drop=True)
    execs = frame["execution_id"].astype(object)
    tied = execs.notna() & frame["timestamp"].notna() & frame["status"].notna()
    tied &= frame[["execution_id", "timestamp"]].astype(object).duplicated(keep=False)
    if not tied.any():
        return frame
    # each group of tied records keeps its places in the order, filled in lifecycle order
    slots = np.flatnonzero(tied.to_numpy())
    sub = frame.iloc[slots]
    group = sub.groupby([sub["execution_id"].astype(object), sub["timestamp"]], sort=False).ngroup().to_numpy()
    rank = sub["status"].astype(object).map(LIFECYCLE_ORDER).fillna(3).to_numpy()
    files = pd.factorize(sub["file"].astype(object), sort=True)[0]
    lines = sub["line"].fillna(-1).to_numpy(dtype="int64")
    order = np.arange(len(frame))
    order[slots[np.lexsort((slots, group))]] = slots[np.lexsort((lines, files, rank, group))]
    return frame.iloc[order].reset_index(drop=True)


def _flag_conflicts(frame: pd.DataFrame) -> pd.DataFrame:
    """``conflict``: the record shares its execution id and status with another that differs in content
    (exact duplicates are gone by now), so the trace says two things about one step."""
    ids = frame[["execution_id", "status"]].astype(object)
    frame["conflict"] = (ids.notna().all(axis=1) & ids.duplicated(keep=False)).astype(bool)
    return frame


def _subtask(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v if -(2 ** 63) < v < 2 ** 63 else None
    if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) < 18:
        return int(v.strip())
    if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
        return int(v)
    return None


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    ts, why = timestamps(frame["timestamp"])
    bad = why.notna()
    if bad.any():
        frame.loc[bad, "error"] = [(e + "; " if isinstance(e, str) else "") + w
                                   for e, w in zip(frame.loc[bad, "error"], why[bad])]
    frame["timestamp"] = ts
    sub = frame["subtask_id"].map(_subtask)
    wrong = frame["subtask_id"].notna() & sub.isna()
    if wrong.any():
        frame.loc[wrong, "error"] = [(e + "; " if isinstance(e, str) else "") + f"subtaskId {str(v)[:40]!r} is not "
                                     "a subtask index" for e, v in zip(frame.loc[wrong, "error"],
                                                                       frame.loc[wrong, "subtask_id"])]
    frame["subtask_id"] = pd.array(sub.tolist(), dtype="Int64")
    frame["line"] = frame["line"].astype("Int64")
    frame["truncated"] = frame["truncated"].fillna(False).astype(bool)
    for col in _CATEGORICAL:
        frame[col] = frame[col].astype("category")
    return frame


@dataclass(frozen=True)
class TraceLog(HtmlRepr):
    """A Flink Agents Trace Log (or an old Event Log) as data.

    ``records``: one row per record, ordered by timestamp, then file and line (log shippers do not
    keep order; lifecycle order breaks a tie within one execution), one column per field of addendum
    §3.2 (snake case; ``timestamp`` in UTC, from ISO-8601 text or, rewritten by a log shipper, a number of
    epoch seconds, milliseconds, microseconds or nanoseconds: below 1e11, 1e14, 1e17, or above), ``entityMetadata`` flattened (``event_id``, ``trigger_event_id``, ``model``, …
    and ``entity_metadata`` for members not listed there), ``attributes`` as given (truncation
    wrappers kept; ``truncated`` marks them), ``format`` ("trace" or "event-log"), the ``file`` and
    ``line`` it came from, ``error`` (None when the record is fine) and ``conflict`` (another record
    has the same execution id and status but other content). ``errors``: the bad records, ``file``,
    ``line`` and ``reason`` first. ``duplicates``: exact duplicates left out of ``records``.

    For example::

        trace = ai.load_trace("sample_logs/production.trace.log")   # a file, a directory or a glob
        trace.summary()
    """

    records: pd.DataFrame
    files: tuple[TraceFile, ...] = ()
    source: str = ""
    duplicates: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=DUPLICATE_COLUMNS), repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def require_records(self) -> TraceLog:
        """This trace, unless it holds no record at all (an empty file, only blank lines): then there is nothing to
        read, and a one-line :class:`~agent_inspect.SourceError` names the file and what to check. Every verb that
        reads a trace stops there (the CLI exits 2). Lines that are no valid record are rows with their reason, so a
        trace of them passes and its errors are shown.

        For example::

            trace = ai.load_trace("sample_logs/production.trace.log").require_records()
        """
        if len(self.records):
            return self
        sizes = [f.size for f in self.files]
        size = f" ({plural(sizes[0], 'byte')})" if len(sizes) == 1 and sizes[0] is not None else ""
        raise SourceError(f"{self.source or 'the trace'} holds no Trace Log record{size}: is it the right file, and "
                          "did the job write its trace there?")

    @property
    def errors(self) -> pd.DataFrame:
        """Records that are not good trace records: ``file``, ``line``, ``reason``, then what was read of them."""
        bad = self.records[self.records["error"].notna()].rename(columns={"error": "reason"})
        return bad[[*ERROR_COLUMNS, *(c for c in bad.columns if c not in ERROR_COLUMNS)]]

    @property
    def conflicts(self) -> pd.DataFrame:
        """Good records that share an execution id and status with another of different content."""
        good = self.good
        return good[good["conflict"]]

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
        return TraceLog(self.records[keep].reset_index(drop=True), self.files, self.source, self.duplicates)

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
        """Counts by entity type and status, jobs, subtasks, agents, business keys, exact duplicates left out,
        conflicting records, errors, recovery signs."""
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
            "duplicates_dropped": int(len(self.duplicates)),
            "conflicting_records": int(good["conflict"].sum()),
            "first": ts.min().isoformat() if len(ts) else None,
            "last": ts.max().isoformat() if len(ts) else None,
            "recovery": recovery,
            "recovery_note": ("reused actions or replayed durable calls show a recovery" if recovery else
                              "no action was reused and no durable call was replayed: this trace shows no recovery"),
            "errors": [{"file": str(f), "line": None if pd.isna(n) else int(n), "reason": str(r)}
                       for f, n, r in zip(self.errors["file"], self.errors["line"], self.errors["reason"])],
        }

    def __repr__(self) -> str:
        # one line of counts: the records frame stays an attribute
        return (f"TraceLog({plural(len(self.records), 'record')} from {self.source!r}: "
                f"{plural(len(self.errors), 'bad record')}, {plural(len(self.duplicates), 'exact duplicate')} left out)")

    def _html_parts(self) -> Iterable[HtmlPart]:
        s = self.summary()
        jobs = ", ".join(s["jobs"]) or "none named in the records"
        yield Text(Strong("Trace Log"), " ", self.source,
                   f": {plural(s['records'], 'record')} in {plural(s['files'], 'file')}, "
                   f"{plural(s['action_executions'], 'action execution')}, ",
                   Term(count_words(len(s["jobs"]), "job"), define("jobs")), f": {jobs}; "
                   f"{plural(len(s['errors']), 'bad record')}, "
                   f"{plural(s['duplicates_dropped'], 'exact duplicate')} left out, "
                   f"{plural(s['conflicting_records'], 'conflicting record')}. {s['recovery_note']}.")
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
    ``eventAttributes``, spec §14.4) are read alike, gzip-rotated files too. Bad lines are rows of
    ``.errors``; lines in any order are put in time order, and exact duplicates are left out (counted
    in ``summary()``, listed in ``.duplicates``).

    For example::

        trace = ai.load_trace("sample_logs/production.trace.log")   # a file, a directory or a glob
        trace.records, len(trace.errors)   # lines that are not valid trace records
    """
    from agent_inspect.sources import FileKind, expect_kind, read_trace_files, trace_files

    files = trace_files(source)
    label = (", ".join(map(os.fspath, source)) if isinstance(source, (list, tuple))
             else os.fspath(cast("str | os.PathLike[str]", source)))
    # an action-state dump given here: say it is one, and which call reads it
    kinds = [expect_kind(f.path, (FileKind.TRACE, FileKind.EVENT_LOG), "ai.load_trace") for f in files]
    if kinds and all(k == FileKind.OTHER for k in kinds):
        raise SourceError(f"{label!r} holds no Trace Log or Event Log record in its first lines (none of the files "
                          "agent_inspect reads): check the path")
    groups = read_trace_files(files)
    records, duplicates = parse_trace(groups)
    return TraceLog(records, tuple(files), label, duplicates)
