"""The per-partition task of a fleet scan: a plain function of (source spec, window, options).

It reads its window straight from the source, decodes it, reconstructs and predicts every key under
each rule, optionally writes the records as Parquet, and returns small frames. Nothing in it knows
about Dask: any engine (or a plain loop) can call :func:`scan_window`.
"""

from __future__ import annotations

import os
import socket
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from agent_inspect._glossary import plural
from agent_inspect.codec import PlanSource
from agent_inspect.fleet._perkey import PerKey, key_rows
from agent_inspect.store import CacheEvent, Outcome

if TYPE_CHECKING:
    from agent_inspect._types import RuleLike
    from agent_inspect.log import ActionStateLog, RuntimeInfo, SourceSpec, Window
    from agent_inspect.recovery import Simulation

__all__ = ["ScanOptions", "WindowResult", "scan_window", "scan_fleet", "as_source_kind", "fleet_wide_rules", "key_frame", "compact_keys",
           "concat_keys", "column_order", "KEY_COLUMNS", "RULE_COLUMNS", "CALLS_PREFIX"]

KEY_COLUMNS = ["business_key", "partition", "records", "rounds", "attempts", "history_bytes", "errors",
               "exposed_1301", "branch_change", "lint_flags", "runtime_evidence"]
"""Per-key columns independent of the rule."""
RULE_COLUMNS = ["reused", "resumed", "rerun", "failed", "not_dispatched", "evictions", "calls", "calls_subagent",
                "stale_reuse_risk", "crashed"]
"""Per-key columns repeated for every rule, named ``<rule>_<column>``; the first five count the key's tasks by
outcome (REUSE, RESUME, RERUN, FAIL, NOT-DISPATCHED), so they add up to the tasks ``predict`` lists for it."""
RUNTIMES = ("auto", "0.3", "0.4", "main")
"""Runtime names ``ai.scan`` accepts (the upstream version; "auto" infers it from the whole input's records, as
``ai.load`` of the input does)."""
CALLS_PREFIX = "_calls:"
"""Then per rule one int32 column per function whose durable calls that rule executes again for some key:
``<rule>_calls:<function>`` (a count per key, 0 where none; a sub-agent call is named by its sub-agent and
caller and counted there too, though ``<rule>_calls`` leaves it to ``<rule>_calls_subagent``), sorted by that name. The same width per key however long its history: the client holds counts, never
the calls.
"""
#: the members as module constants: reading one off the enum class costs about 60 ns (a lookup or two per get)
_REUSE, _RESUME, _RERUN, _FAIL = Outcome.REUSE, Outcome.RESUME, Outcome.RERUN, Outcome.FAIL
_NOT_DISPATCHED = Outcome.NOT_DISPATCHED

_ERROR_SAMPLE = 20
#: the rule column each ledger kind of call adds to: a sub-agent call is no durable call (as in the executor)
_CALL_TOTAL = {"call": "calls", "subagent": "calls_subagent"}


@dataclass(frozen=True)
class ScanOptions:
    """What every task does, the same for all windows (plain data: it travels to workers).

    For example::

        spec = ai.fleet.plan_scan("sample_logs/production.jsonl")
        window = spec.windows[0]
        ai.fleet.scan_window(spec.spec, window, ai.fleet.ScanOptions(rules=("original", "fixed")))
    """

    rules: tuple[RuleLike, ...] = ("original", "fixed")
    markers: Mapping[int, int] | None = None   # merged {partition: offset}; None = the whole window, {} a fresh start
    runtime: str | RuntimeInfo = "auto"        # "auto": the window's own records; a RuntimeInfo: the input's, resolved
    source_kind: str | None = None             # the input's store ("kafka" / "fluss"); None: the window's own
    output: str | None = None                  # directory for the records as hive-partitioned Parquet
    plan_source: PlanSource | None = None      # a read checkpoint: each window restores its keys' plan from it


@dataclass(frozen=True)
class WindowResult:
    """What one task hands back: per-key rows, one partition row, a sample of bad records.

    For example::

        plan = ai.fleet.plan_scan("sample_logs/production.jsonl")
        result = ai.fleet.scan_window(plan.spec, plan.windows[0], ai.fleet.ScanOptions())
        result.keys.head(), result.partition, len(result.errors)
    """

    keys: pd.DataFrame
    partition: dict[str, Any]
    errors: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the runtime the keys were predicted under, with its evidence (the scan joins the windows' into the input's)
    read_as: RuntimeInfo | None = None

    def __repr__(self) -> str:
        # one line of counts: the per-key frame stays an attribute
        p = self.partition
        return (f"WindowResult({p.get('window')!r}: {plural(int(p.get('records', 0)), 'record')}, "
                f"{plural(len(self.keys), 'key')}, {plural(int(p.get('errors', 0)), 'bad record')})")


def scan_window(spec: SourceSpec, window: Window, options: ScanOptions) -> WindowResult:
    """Read, decode, reconstruct and predict one window (a partition, or a file) under every rule.

    For example::

        plan = ai.fleet.plan_scan("sample_logs/production.jsonl")
        ai.fleet.scan_window(plan.spec, plan.windows[0], ai.fleet.ScanOptions()).keys.head()
    """
    from agent_inspect._bulk import gc_paused
    from agent_inspect.log import read_window, resolve_runtime, source_kind_of, write_window

    t0 = time.perf_counter()
    log = read_window(spec, window)
    t_read = time.perf_counter() - t0
    written: list[str] = []
    if options.output:
        written = [str(p) for p in write_window(log, options.output, window)]
    log = as_source_kind(log, options.source_kind)
    markers = options.markers
    if markers is not None and spec.kind == "fluss" and window.partition is not None and window.partition in markers:
        # a Fluss restore's checks (the markers name every bucket) were made when the scan was planned; this
        # window's log holds one bucket, so it is given that bucket's marker only
        markers = {window.partition: markers[window.partition]}
    read_as = resolve_runtime(options.runtime, log)   # once: the row says what the keys were predicted under
    with gc_paused():
        keys = key_frame(log, rules=options.rules, markers=markers, runtime=read_as, plan_source=options.plan_source)
    records = log.records
    errors = log.errors
    sample = pd.DataFrame({
        "partition": errors["partition"].astype("Int64").to_numpy()[:_ERROR_SAMPLE],
        "offset": errors["offset"].astype("Int64").to_numpy()[:_ERROR_SAMPLE],
        "state_key": errors["state_key"].astype(object).map(lambda s: None if s is None or s is pd.NA
                                                             else str(s)[:200]).to_numpy()[:_ERROR_SAMPLE],
        "error": errors["error"].astype(object).map(str).to_numpy()[:_ERROR_SAMPLE],
    }) if len(errors) else pd.DataFrame(columns=["partition", "offset", "state_key", "error"])
    row = {
        "fleet_wide_rules": fleet_wide_rules(log, options.rules),
        "window": window.name, "partition": window.partition, "path": window.path,
        "start": window.start, "end": window.end, "row_group": getattr(window, "row_group", None),
        "records": len(records), "keys": len(keys), "errors": len(errors),
        "bytes": int(pd.to_numeric(records["payload_bytes"], errors="coerce").fillna(0).sum()) if len(records) else 0,
        "read_seconds": round(t_read, 4), "seconds": round(time.perf_counter() - t0, 4),
        "worker": f"{socket.gethostname()}:{os.getpid()}", "output": written,
        "runtime": read_as.name,   # what this window was read as
        "store_flavour": read_as.store_flavour,   # what its records' store runs: the scan labels rules by it
        "source_kind": source_kind_of(log),
        "reread": False,   # the scan sets it on a window it read again under the input's runtime and store
    }
    return WindowResult(keys=keys, partition=row, errors=sample, read_as=read_as)


def as_source_kind(log: ActionStateLog, kind: str | None) -> ActionStateLog:
    """``log`` read as written through a ``kind`` store ("kafka" / "fluss"; None: as it is), as the whole input it
    is a window of is read: a window of a folder of dumps without an ``agent_key`` of its own reads as Kafka alone,
    while the folder, holding a Fluss dump too, reads as Fluss."""
    from dataclasses import replace

    from agent_inspect.log import source_kind_of

    if kind is None or source_kind_of(log) == kind:
        return log
    log.source = replace(log.source, options={**log.source.options, "backend": kind})
    return log


def fleet_wide_rules(log: Any, rules: Sequence[Any]) -> list[str]:
    """Names of the rules whose analysis of ``log`` is not partition-local.

    The snapshot Kafka store (K1 keys) loads every partition into every subtask and the original rule's
    eviction there ignores the key (spec §8.2, the #628 review): one key's miss evicts every key's later
    rounds, in every partition. Such a rule must see the whole fleet at once.
    """
    from agent_inspect.log import source_kind_of
    from agent_inspect.rules import OriginalRule, resolve_rule
    from agent_inspect.store import RecoverySession

    formats = set(log.records["key_format"].astype(object).dropna().astype(str))
    if "K1" not in formats:
        return []
    kind = source_kind_of(log)   # as the rules' sessions read it (a dump's "backend" too)
    out = []
    for rule in rules:
        obj = resolve_rule(rule)
        if isinstance(obj, OriginalRule):
            session = RecoverySession(obj, source_kind="fluss" if kind == "fluss" else "kafka")
            if obj.flavour_for(session, "K1") == "kafka-k1":
                out.append(_name(rule))
    return out


def scan_fleet(spec: Any, windows: Sequence[Any], options: ScanOptions) -> pd.DataFrame:
    """Read every window into one log and compute the per-key frame under ``options.rules`` (the fleet-wide rules)."""
    from agent_inspect._bulk import gc_paused
    from agent_inspect.log import ActionStateLog, read_window
    from agent_inspect.raw import SourceInfo

    logs = [read_window(spec, w) for w in windows]
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    for lg in logs:
        for p, o in lg.source.start_offsets.items():
            start[p] = min(start.get(p, o), o)
        for p, o in lg.source.end_offsets.items():
            end[p] = max(end.get(p, o), o)
    first = logs[0].source if logs else SourceInfo(kind=spec.kind, location=spec.location)
    info = SourceInfo(kind=first.kind, location=spec.location, topic=first.topic, start_offsets=dict(sorted(start.items())),
                      end_offsets=dict(sorted(end.items())), file_format=first.file_format, options=dict(first.options))
    whole = as_source_kind(ActionStateLog.from_raw([lg.raw for lg in logs], info), options.source_kind)
    errors = [lg.records["error"] for lg in logs]
    if any(e.notna().any() for e in errors):  # reasons of malformed file lines are not in the raw bytes
        whole.records["error"] = pd.array(np.concatenate([e.astype(object).to_numpy() for e in errors]),
                                          dtype=whole.records["error"].dtype)
    del logs
    with gc_paused():
        return key_frame(whole, rules=options.rules, markers=options.markers, runtime=options.runtime,
                         plan_source=options.plan_source)


def key_frame(log: ActionStateLog, *, rules: Sequence[RuleLike] = ("original", "fixed"), markers: Mapping[int, int] | None = None,
              runtime: str | RuntimeInfo = "auto", plan_source: PlanSource | None = None) -> pd.DataFrame:
    """One row per business key of ``log``: its size and shape, and per rule what a restore would do.

    Columns :data:`KEY_COLUMNS`, then per rule ``<rule>_<c>`` for ``c`` in :data:`RULE_COLUMNS` followed by its
    ``<rule>_calls:<function id>`` counts (:data:`CALLS_PREFIX`). ``markers`` select the rebuild window as in
    :func:`agent_inspect.recovery.predict` (None: the whole log); ``plan_source`` (a read checkpoint holding its
    keyed state) gives the replay plan of the keys ``log`` holds, else it is inferred from the log. ``runtime``: a
    name, "auto" (inferred from ``log``) or one already resolved (:func:`agent_inspect.log.resolve_runtime`), used as is.

    For example::

        ai.fleet.key_frame(log, markers=ai.recovery.rebuild_start(markers)).head()   # one row per key
    """
    from agent_inspect._bulk import gc_paused

    with gc_paused():   # the per-task objects would make the cyclic GC rescan the log's heap again and again
        return _key_frame(log, rules, markers, runtime, plan_source)


def _key_frame(log: Any, rules: Sequence[RuleLike], markers: Mapping[int, int] | None, runtime: str | RuntimeInfo,
               plan_source: PlanSource | None) -> pd.DataFrame:
    from agent_inspect.agents import AsRecordedAgent
    from agent_inspect.history import annotate
    from agent_inspect.log import resolve_runtime
    from agent_inspect.recovery import Recovery, lint, rebuild_start, refresh_positions, simulate

    records = log.records
    row, key_list = key_rows(records["business_key"])
    keys = pd.Index(key_list, name="business_key")
    per_key = PerKey(records, row, len(key_list))
    out: dict[str, Any] = {"business_key": keys}   # the columns, made a frame once at the end
    out["partition"] = pd.array(per_key.reduce(np.minimum, records["partition"].to_numpy(dtype="int64")),
                                dtype="Int64")
    out["records"] = per_key.counts
    out["rounds"] = per_key.rounds
    key_bytes = records["state_key"].astype("string").str.len().fillna(0)
    size = pd.to_numeric(records["payload_bytes"], errors="coerce").fillna(0) + key_bytes
    out["history_bytes"] = per_key.reduce(np.add, size.to_numpy(dtype="int64"))
    out["errors"] = per_key.reduce(np.add, records["error"].notna().to_numpy(dtype="int64"))
    out["exposed_1301"] = per_key.exposed_1301(records["state_key"])
    # a branch change: conflicting roots (different input fingerprints) at one (key, seq). A reuse is at
    # risk when it serves, at or after that seq, a record written before the key's latest conflicting root:
    # that record belongs to the branch the conflict replaced.
    conflict_seq = per_key.conflicts(records, key_list)
    out["branch_change"] = np.array([k in conflict_seq for k in key_list], dtype=bool)
    info = resolve_runtime(runtime, log)
    window = rebuild_start(markers)
    # the plan as predict infers it: under the runtime given, not the one the log shows (0.4+ keeps rounds pending)
    base = Recovery.for_log(log, markers=window, runtime=info)
    refresh = refresh_positions(log, base.model)
    # the history without the refresh rows of the settings' runtime, as reconstruct reads it, and the lints with it
    history = annotate(records.drop(index=sorted(refresh)) if refresh else records)["attempt"]
    lints = lint(log, refresh=refresh, attempts=history)
    flags: dict[str, set[str]] = defaultdict(set)
    for k, name in zip(lints["business_key"].astype(object), lints["lint"].astype(object)):
        if k is not None and k is not pd.NA:
            flags[str(k)].add(str(name))
    out["lint_flags"] = [",".join(sorted(flags.get(k, ()))) for k in key_list]
    out["runtime_evidence"] = per_key.format_pairs(records["key_format"], records["value_format"])

    if not key_list:   # an empty window (or no keyed record): no key to predict, and no input to infer a plan from
        return pd.DataFrame(columns=[*KEY_COLUMNS, *(f"{_name(r)}_{c}" for r in rules for c in RULE_COLUMNS)])
    plan = base.replay_plan(log, refresh=refresh) if plan_source is None else plan_source.replay_plan(
        log, runtime=info, kafka_pending=base.model.kafka_pending, refresh=refresh)
    to_business = {k: i.business_key for k, i in plan.keys.items()}
    agent = AsRecordedAgent.of(log)          # stateless between predictions: one for every rule
    # attempts count from 1: a record of none (NA) is 0, as a key without any
    attempts = per_key.reduce(np.maximum, history.reindex(records.index).to_numpy(dtype="int64", na_value=0))
    per_rule: dict[str, Any] = {}
    for rule in rules:
        # predict's engine run without its frames and reader words: the scan keeps counts per key
        settings = base.replace(log, plan=plan, agent=agent, rule=rule)
        session = settings.rebuild(log)
        sim = simulate(plan, agent, session, log=log, call_matching=settings.call_matching, runtime=settings.model,
                       rows=False)
        cols, by_function = _rule_columns(sim, session.events, key_list, to_business, conflict_seq)
        for c in RULE_COLUMNS:
            per_rule[f"{_name(rule)}_{c}"] = np.asarray(cols[c])   # a frame is made from arrays ten times faster
        for function, counts in sorted(by_function.items()):
            per_rule[f"{_name(rule)}{CALLS_PREFIX}{function}"] = np.asarray(counts, dtype="int32")
    per_rule["attempts"] = attempts
    frame = pd.DataFrame({**out, **per_rule})
    return compact_keys(frame[column_order(frame.columns, [_name(r) for r in rules])])


def column_order(columns: Sequence[str], rules: Sequence[str]) -> list[str]:
    """The per-key frame's columns in order: :data:`KEY_COLUMNS`, then per rule its :data:`RULE_COLUMNS` and its
    per-function call counts sorted by function id (any other column after them, in the order given)."""
    present = set(columns)
    out = [c for c in KEY_COLUMNS if c in present]
    for rule in rules:
        out += [f"{rule}_{c}" for c in RULE_COLUMNS if f"{rule}_{c}" in present]
        out += sorted(c for c in present if c.startswith(f"{rule}{CALLS_PREFIX}"))
    placed = set(out)
    return out + [c for c in columns if c not in placed]


#: Per-key text columns whose values usually repeat across keys (flags, format pairs): categoricals when they do.
_CATEGORICAL = ("lint_flags", "runtime_evidence")
#: A text column is categorical only when it has at most this many distinct values per row (a categorical of
#: unique strings costs more than the strings, and uniting its categories across windows goes through Python
#: objects).
_REPEATS = 0.5
#: Per-key counts held as 32-bit integers (a key's history bytes stay 64-bit).
_WIDE = ("history_bytes",)


def compact_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """The per-key frame in compact dtypes: repeated texts as categoricals, counts as int32, partition Int32.

    A scan's client holds one such row per business key: about 125 B for two rules with 9-character keys (108 B
    and the key's string, 8 B plus its characters; 37 B per further rule), plus 4 B per function column, against
    340 B with 64-bit counts and one string object per text cell. The values are unchanged.
    """
    out = {}
    small = np.iinfo(np.int32)
    for name, col in frame.items():
        if name in _CATEGORICAL:
            out[name] = _text_column(col)
        elif name == "partition":
            out[name] = col.astype("Int32")
        elif col.dtype == np.int64 and name not in _WIDE and (
                not len(col) or (small.min <= (values := col.to_numpy()).min() and values.max() <= small.max)):
            out[name] = col.to_numpy().astype("int32")   # not Series.astype: a tenth of its cost, for as many columns
        else:
            out[name] = col
    return pd.DataFrame(out, index=frame.index)


def concat_keys(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate per-key frames keeping counts int32; a text column ends categorical (categories united) or
    plain strings by its values in the whole frame, as :func:`compact_keys` of the whole would choose. A
    function's call counts missing from a frame (no key of it calls that function) are zeros there; columns in
    :func:`column_order`. What an engine other than Dask uses to unite :func:`scan_window` results.

    For example::

        plan = ai.fleet.plan_scan("sample_logs/production.parquet")
        results = [ai.fleet.scan_window(plan.spec, w, ai.fleet.ScanOptions()) for w in plan.windows]
        ai.fleet.concat_keys([r.keys for r in results])   # what Dask does to unite the windows
    """
    from pandas.api.types import union_categoricals

    first = list(frames[0].columns)
    rules = [c[:-len("_reused")] for c in first if c.endswith("_reused")]
    names = column_order(first + sorted({c for f in frames[1:] for c in f.columns} - set(first)), rules)
    out = {}
    for name in names:
        cols = [f[name] if name in f.columns else pd.Series(np.zeros(len(f), dtype="int32")) for f in frames]
        categorical = [isinstance(c.dtype, pd.CategoricalDtype) for c in cols]
        if all(categorical):
            # categories sorted and only those used: the same dtype whichever windows the rows came from
            united = union_categoricals(cols, sort_categories=True).remove_unused_categories()
            out[name] = pd.Series(united, name=name)
        else:
            if any(categorical):
                cols = [c.astype("str") if cat else c for c, cat in zip(cols, categorical)]
            out[name] = pd.concat(cols, ignore_index=True)
        if name in _CATEGORICAL:  # categorical or not as if the key frame had been computed in one piece
            out[name] = _text_column(out[name])
    return pd.DataFrame(out)


def _text_column(col: pd.Series) -> pd.Series:
    """``col`` as a categorical when its values repeat (see :data:`_REPEATS`), else as plain strings."""
    distinct = len(col.cat.categories) if isinstance(col.dtype, pd.CategoricalDtype) else col.nunique(dropna=False)
    if distinct <= max(1, _REPEATS * len(col)):
        return col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    return col.astype("str")


def _name(rule: Any) -> str:
    """The rule's name as its columns spell it: its one name (:func:`agent_inspect.rules.rule_name`: a user's
    ``"my_rules.py:RootsOnly"`` is its ``name``, ``"roots-only"``; an original rule with a store flavour
    given is ``original:<flavour>``, so its label can say it is a what-if)."""
    from agent_inspect.rules import rule_name

    return rule_name(rule)


def _rule_columns(sim: Simulation, events: Sequence[CacheEvent], keys: Sequence[str], to_business: Mapping[str, str],
                  conflict_seq: Mapping[str, tuple[int, int]]) -> tuple[dict[str, list[Any]], dict[str, list[int]]]:
    """Per key, the rule's :data:`RULE_COLUMNS` from one engine run (``sim``, run with ``rows=False``, and the
    session's cache ``events``); and per function, its durable calls executed again per
    key."""
    row = {k: i for i, k in enumerate(keys)}
    n = len(keys)
    counts = {c: [0] * n for c in RULE_COLUMNS if c != "crashed"}
    column = {_REUSE: counts["reused"], _RESUME: counts["resumed"], _RERUN: counts["rerun"],
              _FAIL: counts["failed"], _NOT_DISPATCHED: counts["not_dispatched"]}
    crashed = [False] * n
    risk = counts["stale_reuse_risk"]
    for k, outcome, seq, pos in sim.outcomes:
        k = to_business.get(k, k)
        i = row.get(k)
        if i is None:   # a key the plan restores (a checkpoint's) that this log does not hold
            continue
        if outcome in column:
            column[outcome][i] += 1
        if outcome is _FAIL and sim.crashed:
            crashed[i] = True
        elif (outcome is _REUSE or outcome is _RESUME) and k in conflict_seq:
            if seq is not None and pos is not None and seq >= conflict_seq[k][0] and pos < conflict_seq[k][1]:
                risk[i] += 1
    if sim.crashed and sim.crashed_key is not None:   # a body failed (a re-raised recorded failure): no FAIL row
        i = row.get(to_business.get(sim.crashed_key, sim.crashed_key))
        if i is not None:
            crashed[i] = True
    removed = counts["evictions"]
    for e in events:
        if e.op not in ("delete", "supersede"):
            for entry in e.removed:
                i = row.get(to_business.get(entry.business_key, entry.business_key))
                if i is not None:
                    removed[i] += 1
    by_function: dict[str, list[int]] = {}
    for (k, kind, name), count in sim.ledger.items():
        i = row.get(to_business.get(k, k))
        if kind in _CALL_TOTAL and i is not None:   # a sub-agent call is named by its sub-agent and caller
            function = sim.call_names.get(name, name)
            if function not in by_function:
                by_function[function] = [0] * n
            by_function[function][i] += count
            counts[_CALL_TOTAL[kind]][i] += count
    return {**counts, "crashed": crashed}, {f: by_function[f] for f in sorted(by_function)}
