"""The two sides of a diff: what may be diffed and one row per action execution (the selector syntax: ``_selectors``).

A side is plain data: ``units`` (one row per action execution, the unit the diff aligns) and the
object the rows came from (a log for values and record links, a reconstruction, a prediction).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Unpack, cast

import numpy as np
import pandas as pd

from agent_inspect._glossary import did_you_mean, plural
from agent_inspect._types import ExecutorLike, LogLike, PredictionLike, ReconstructionLike, RecoveryOverrides
from agent_inspect.diffing._selectors import (
    SelectorError,
    check_attempt,
    default_mode,
    read_selected,
    side_label,
)
from agent_inspect.log import rule_mark

if TYPE_CHECKING:
    from agent_inspect._types import Diffable
    from agent_inspect.codec import ActionState
    from agent_inspect.log import ActionStateLog, RuleMark
    from agent_inspect.recovery import Recovery

__all__ = ["Side", "select", "attempt", "as_side", "UNIT_COLUMNS"]

#: Columns of ``Side.units`` (one row per action execution).
UNIT_COLUMNS = ("business_key", "seq", "state_key", "action", "action_uuid", "event_type", "event_uuid",
                "task_event_id", "upstream_event_id", "completed", "outcome", "status", "pos", "attempt", "calls_executed", "order",
                "reason")


@dataclass(frozen=True)
class Side:
    """One side of a diff: ``units`` (one row per action execution, columns :data:`UNIT_COLUMNS`),
    the ``log`` its records come from (values and record links), and what it is (``kind``: "log",
    "attempt", "prediction", "reconstruction", "executor"). A side that runs a recovery keeps its settings'
    ``rule_mark`` (its rule's name, store flavour and what-if mark, :func:`agent_inspect.log.rule_mark`).

    For example::

        side = ai.diffing.attempt(log, "user-0011", 1)   # one side: a unit per action execution
        side.label, side.kind, side.units.head()
    """

    label: str
    kind: str
    units: pd.DataFrame
    log: LogLike | None = field(default=None, repr=False)
    rule: str | None = None
    runtime: str | None = None
    source: Any = field(default=None, repr=False, compare=False)
    #: True when the side's rule is not the one its runtime ships (a hypothetical recovery)
    what_if: bool = False
    #: the side's rule as its settings name it (None: a side that runs no recovery)
    rule_mark: RuleMark | None = field(default=None, repr=False, compare=False)

    @property
    def rule_label(self) -> str | None:
        """The side's rule as every verb labels it (``fixed (what-if; 0.4 ships original)``); None without a rule."""
        if self.rule_mark is not None:
            return self.rule_mark.label
        return self.rule

    def settings(self) -> dict[str, str | bool | None]:
        """What the side is and the rule it runs under, in the fields ``reconstruct --json`` uses (``rule``,
        ``what_if``, ``rule_label``) plus ``label``, ``kind`` and ``runtime``."""
        return {"label": self.label, "kind": self.kind, "rule": self.rule, "what_if": self.what_if,
                "rule_label": self.rule_label, "runtime": self.runtime}

    def value(self, pos: int | float | None) -> ActionState | None:
        """The decoded value of the record at ``pos`` (None without a log or a position)."""
        if self.log is None or pos is None or pd.isna(pos):
            return None
        return self.log.value(int(pos))

    def raw_value(self, pos: int | float | None) -> bytes | None:
        """The record's value bytes exactly as written (None for a tombstone or without a log)."""
        raw = getattr(self.log, "raw", None)
        if raw is None or pos is None or pd.isna(pos):
            return None
        v = raw.value[int(pos)]
        return bytes(v) if v is not None else None


def _is_log(obj: Any) -> bool:
    return isinstance(obj, LogLike) and not isinstance(obj, ReconstructionLike | PredictionLike)


def _is_executor(obj: Any) -> bool:
    return isinstance(obj, ExecutorLike) and callable(getattr(obj, "to_log", None)) and hasattr(obj, "journal")


def _log_units(records: pd.DataFrame, ann: pd.DataFrame | None = None, *, log: Any = None) -> pd.DataFrame:
    """One row per action execution: its last record (the execution's final state). Given its ``log``, the
    history reads it without checkpoint-time refresh rows (no executions, addendum §2.2)."""
    from agent_inspect.history import annotate

    if ann is None:
        ann = annotate(records if log is None else log)
    elif not ann.index.equals(records.index):   # a reconstruction's history leaves out its refresh rows
        ann = ann.reindex(records.index)
    execution = ann["execution"].fillna(-1).to_numpy()
    keep = execution >= 0
    if not keep.any():
        return pd.DataFrame({c: pd.Series(dtype=object) for c in UNIT_COLUMNS})
    ex = pd.Series(execution[keep], index=records.index[keep])
    last = ex.groupby(ex.to_numpy(), sort=False).tail(1).index
    last = records.index[np.isin(records.index, last)]
    rows = records.loc[last]
    units = pd.DataFrame({
        "business_key": rows["business_key"].astype(object).to_numpy(),
        "seq": rows["seq"].astype("Int64").to_numpy(),
        "state_key": rows["state_key"].astype(object).to_numpy(),
        "action": rows["action_uuid"].astype(object).to_numpy(),
        "action_uuid": rows["action_uuid"].astype(object).to_numpy(),
        "event_type": rows["task_event_type"].astype(object).to_numpy(),
        "event_uuid": rows["event_uuid"].astype(object).to_numpy(),
        "task_event_id": rows["task_event_id"].astype(object).to_numpy(),
        "upstream_event_id": rows["upstream_event_id"].astype(object).to_numpy(),
        "completed": rows["completed"].astype("boolean").to_numpy(),
        "outcome": rows["outcome"].astype(object).to_numpy() if "outcome" in rows else None,
        "status": rows["status"].astype(object).to_numpy() if "status" in rows else None,
        "pos": pd.array(rows.index.to_numpy(), dtype="Int64"),
        "attempt": ann.loc[last, "attempt"].astype("Int64").to_numpy(),
        "calls_executed": pd.array([pd.NA] * len(rows), dtype="Int64"),
    })
    units["order"] = np.arange(len(units))
    return units


def _select_rows(records: pd.DataFrame, ann: pd.DataFrame, *, key: str | None, attempt: int | None) -> np.ndarray:
    mask = np.ones(len(records), dtype=bool)
    if key is not None:
        bk = records["business_key"].astype(object)
        mask &= ((bk == key) | (records.get("key_text", bk).astype(object) == key)).fillna(False).to_numpy(bool)
        if not mask.any():
            known = {*records["business_key"].dropna().astype(str), *records.get("key_text", bk).dropna().astype(str)}
            raise SelectorError(f"business key {key!r} is not in the log" + (
                did_you_mean([key], known) or f" (it holds {plural(len(known), 'business key')})"))
    if attempt is not None:
        att = ann["attempt"].astype("Int64")
        mask &= (att == attempt).fillna(False).to_numpy(dtype=bool)
        if not mask.any():
            have = sorted({int(a) for a in att.dropna().unique()})
            raise SelectorError(f"no attempt {attempt} in the selected records; attempts present: {have}")
    return mask


def attempt(log: ActionStateLog, key: str | None, n: int) -> Side:
    """Attempt ``n`` (1-based, as :func:`agent_inspect.history.annotate` numbers them) of business key
    ``key`` (None: of every key) as a diff side.

    For example::

        first = ai.diffing.attempt(log, "user-0011", 1)
        second = ai.diffing.attempt(log, "user-0011", 2)
        ai.diff(first, second).first_divergences
    """
    return select(log, attempt=n, key=key)


def select(source: str | ActionStateLog | ReconstructionLike, *, recovery: Recovery | None = None, mode: str | None = None, attempt: int | None = None,
           key: str | None = None, label: str | None = None, timeout: float | None = None,
           **overrides: Unpack[RecoveryOverrides]) -> Side:
    """A diff side from a log (or a source to load, or a selector string) and what to take from it.

    ``mode="predict"`` diffs what a recovery does per task, ``mode="reconstruct"`` each record's status,
    ``mode="log"`` the records as written. The default: a prediction when a rule, markers or ``recovery`` is given
    (markers say where a restore starts), else the log; a ``runtime`` or ``kafka_pending`` alone says how the log is
    read (which rows are a checkpoint's refresh rows: no executions, no attempts). The recovery is ``recovery`` with
    the settings given as keywords (``rule``, ``markers``, ``runtime``, … as every verb takes them; by default the
    rule the log's runtime ships, with the whole loaded log as the rebuild window), resolved once and checked as
    every verb checks them. ``attempt``/``key`` narrow the records (``attempt`` only as written). A selector string
    is its settings given here (:func:`parse_selector`; keywords win): ``select("log.jsonl@markers=m.json")`` is
    ``select(ai.load("log.jsonl"), markers=<m.json's markers>)``, the same side and label. ``label`` names the
    source in the side's label (default: its location). ``timeout``: seconds a source string's Kafka broker or
    Fluss cluster (or its ``@markers=`` checkpoint's storage) may take to answer, as :func:`agent_inspect.load`
    takes it (default: the loader's 10).

    For example::

        shipped = ai.diffing.select(log, markers=markers)                   # what the restore does per task
        what_if = ai.diffing.select(log, markers=markers, rule="fixed")
        ai.diff(shipped, what_if).counts
    """
    if isinstance(source, str):
        sel, own, loaded = read_selected(source, timeout=timeout)
        given = {k: v for k, v in {"mode": mode, "attempt": attempt, "key": key, **overrides}.items() if v is not None}
        return select(loaded, recovery=recovery, label=label or sel.source, **{**own, **given})
    if mode is None:
        mode = default_mode(recovery, overrides)
    if mode not in ("log", "predict", "reconstruct"):
        raise SelectorError(f"mode {mode!r}: use 'log', 'predict' or 'reconstruct'")
    check_attempt(attempt, mode)
    log = source.log if isinstance(source, ReconstructionLike) else source
    if not _is_log(log):
        raise SelectorError(f"cannot select from a {type(source).__name__}; pass an ActionStateLog or a source")
    name = label or _default_label(log)
    from agent_inspect.history import annotate_rows, refresh_rows
    from agent_inspect.recovery import Recovery

    # one recovery from every setting given, checked as every verb checks it; a log side reads the log under its
    # runtime and kafka_pending (a checkpoint's refresh rows are no executions and start no attempt)
    resolved = Recovery.resolve(log, recovery, **overrides)
    text = side_label(name, mode, resolved, attempt=attempt, key=key)
    records = log.records
    if mode == "log":
        ann = annotate_rows(records, refresh_rows(log, resolved.model))
        if key is None and attempt is None:
            return Side(text, "log", _log_units(records, ann), log=log, source=log)
        sub = records[_select_rows(records, ann, key=key, attempt=attempt)]
        return Side(text, "attempt" if attempt is not None else "log", _log_units(sub, ann.loc[sub.index]), log=log,
                    source=source)
    if key is not None:
        ann = annotate_rows(records, refresh_rows(log, resolved.model))
        _select_rows(records, ann, key=key, attempt=None)     # an unknown key is named, with the ones there are
        log = log.for_key(key)
    return _recovery_side(log, mode, resolved, label=text)


def _rule_name(rule: Any) -> str:
    return rule_mark(rule, None).name


def _default_label(log: Any) -> str:
    src = getattr(log, "source", None)
    loc = getattr(src, "location", None)
    return str(loc) if loc else type(log).__name__


def _recovery_side(log: Any, mode: str, settings: Recovery, *, label: str) -> Side:
    from agent_inspect.recovery import predict, reconstruct
    if mode == "predict":
        side = _prediction_side(predict(log, recovery=settings), label=label, log=log)
    else:
        side = _reconstruction_side(reconstruct(log, recovery=settings), label=label)
    return Side(side.label, side.kind, side.units, log=side.log, rule=side.rule, runtime=settings.runtime.name,
                source=side.source, what_if=settings.what_if, rule_mark=settings.rule_mark)


def _prediction_side(pred: Any, *, label: str, log: Any = None) -> Side:
    t = pred.tasks
    units = pd.DataFrame({
        "business_key": t["business_key"].astype(object).to_numpy(),
        "seq": t["seq"].astype("Int64").to_numpy(),
        "state_key": t["state_key"].astype(object).to_numpy(),
        "action": t["action"].astype(object).to_numpy(),
        "action_uuid": None,
        "event_type": t["event_type"].astype(object).to_numpy(),
        "event_uuid": t["fingerprint"].astype(object).to_numpy(),
        "task_event_id": t["event_id"].astype(object).to_numpy(),
        "completed": pd.array([pd.NA] * len(t), dtype="boolean"),
        "outcome": t["outcome"].astype(object).to_numpy(),
        "status": None,
        "pos": t["entry_pos"].astype("Int64").to_numpy(),
        "attempt": pd.array([pd.NA] * len(t), dtype="Int64"),
        "calls_executed": t["calls_executed"].astype("Int64").to_numpy(),
        "reason": t["reason"].astype(object).to_numpy() if "reason" in t.columns else None,
    })
    units["order"] = np.arange(len(units))
    return Side(label, "prediction", units, log=log, rule=str(getattr(pred, "rule", None)), source=pred)


def _reconstruction_side(recon: Any, *, label: str) -> Side:
    units = _log_units(recon.records, recon.history.records if hasattr(recon.history, "records") else None)
    return Side(label, "reconstruction", units, log=recon.log, rule=_rule_name(recon.rule),
                source=recon)


def as_side(obj: Diffable, *, label: str | None = None, log: LogLike | None = None, recovery: Recovery | None = None,
            timeout: float | None = None, **overrides: Unpack[RecoveryOverrides]) -> Side:
    """Any diffable object as a :class:`Side`: a side, a selector string, a log, a reconstruction, a
    prediction (``log=`` gives its records' values) or a replay executor (its journal: what the run wrote).
    ``recovery`` and the settings as keywords apply to a selector string, as ``select``'s keywords do, where the
    selector sets none of its own; they never make a side a recovery (``"log.jsonl"`` and ``"log.jsonl@attempt=2"``
    stay records as written, read under the given ``runtime`` and ``kafka_pending``). ``timeout``: seconds a
    selector string's Kafka broker or Fluss cluster (or its ``@markers=`` checkpoint's storage) may take to answer
    (as :func:`agent_inspect.load` takes it).

    For example::

        ai.diffing.as_side(log, label="as written").kind
        ai.diffing.as_side(ai.predict(log, markers=markers), log=log).kind
    """
    if isinstance(obj, Side):
        return obj if label is None else replace(obj, label=label)
    if isinstance(obj, os.PathLike):       # a path, as ai.load and ai.samples.path give it
        obj = os.fspath(obj)
    if isinstance(obj, str):
        # the selector's own settings decide what the side is and win over those given to every side, which
        # never turn a side into a recovery (a rule object of the selector's rule's name keeps its identity)
        sel, own, loaded = read_selected(obj, timeout=timeout)
        own.setdefault("mode", default_mode(None, own))
        shared = {k: v for k, v in overrides.items() if v is not None}
        if "rule" in own and _rule_name(shared.get("rule")) == own["rule"]:
            del own["rule"]
        side = select(loaded, recovery=recovery, label=sel.source, **{**shared, **own})
        return side if label is None else replace(side, label=label)
    if isinstance(obj, ReconstructionLike | PredictionLike):
        from agent_inspect.log import rule_mark

        # a result under a rule its runtime does not ship is a what-if, labelled as the selector strings' sides are:
        # by its settings' mark (a given store flavour too), else by its rule under its runtime
        settings = getattr(obj, "recovery", None)
        mark = settings.rule_mark if settings is not None else rule_mark(obj.rule, getattr(obj, "runtime", None))
        if isinstance(obj, ReconstructionLike):
            side = _reconstruction_side(obj, label=f"{_default_label(obj.log)}@reconstruct={mark.name}")
        else:
            side = _prediction_side(obj, label=f"prediction@{mark.name}", log=log)
        return replace(side, label=label or side.label + mark.mark, what_if=mark.what_if, runtime=mark.runtime,
                       rule_mark=mark)
    if _is_executor(obj):
        return _executor_side(obj, label=label or "executor run")
    if _is_log(obj):
        # a log object is its source's string side: read under the settings given (runtime, kafka_pending)
        side = select(cast("ActionStateLog", obj), mode="log", recovery=recovery, **overrides)
        return side if label is None else replace(side, label=label)
    raise SelectorError(f"cannot diff a {type(obj).__name__}; pass an ActionStateLog, a selector string "
                        "(log.jsonl@attempt=2), ai.diffing.attempt(log, key, n), a reconstruction, a prediction "
                        "or a ReplayExecutor")


def _executor_side(ex: Any, *, label: str) -> Side:
    from agent_inspect.log import ActionStateLog
    from agent_inspect.raw import SourceInfo

    journal = ex.journal
    parts = sorted({int(p) for p in journal.partition})
    info = SourceInfo(kind="file", location=label, topic=None,
                      start_offsets={p: min(o for q, o in zip(journal.partition, journal.offset) if q == p)
                                     for p in parts},
                      end_offsets={p: 1 + max(o for q, o in zip(journal.partition, journal.offset) if q == p)
                                   for p in parts})
    log = ActionStateLog.from_raw(journal, info)
    return Side(label, "executor", _log_units(log.records, log=log), log=log, source=ex)
