"""The two sides of a diff: what may be diffed, the selector syntax, and one row per action execution.

A side is plain data: ``units`` (one row per action execution, the unit the diff aligns) and the
object the rows came from (a log for values and record links, a reconstruction, a prediction).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Unpack, cast

import numpy as np
import pandas as pd

from agent_inspect._errors import InspectError, SourceError
from agent_inspect._glossary import did_you_mean, plural
from agent_inspect._types import ExecutorLike, LogLike, PredictionLike, ReconstructionLike, RecoveryOverrides

if TYPE_CHECKING:
    from agent_inspect._types import Diffable
    from agent_inspect.codec import ActionState
    from agent_inspect.log import ActionStateLog, RuleMark
    from agent_inspect.recovery import Recovery

__all__ = ["Side", "Selector", "SelectorError", "SELECTORS", "parse_selector", "select", "attempt", "as_side",
           "UNIT_COLUMNS"]

SELECTORS = ("rule", "predict", "reconstruct", "attempt", "key", "markers", "runtime")
"""The selectors of the string form ``SOURCE@name=value@…`` (see :func:`parse_selector`)."""

#: Columns of ``Side.units`` (one row per action execution).
UNIT_COLUMNS = ("business_key", "seq", "state_key", "action", "action_uuid", "event_type", "event_uuid",
                "task_event_id", "upstream_event_id", "completed", "outcome", "status", "pos", "attempt", "calls_executed", "order",
                "reason")


class SelectorError(InspectError):
    """A diff side or selector could not be understood (unknown selector, bad value, unsupported object)."""


@dataclass(frozen=True)
class Selector:
    """A parsed side selector: ``source`` plus what to take from it.

    ``mode`` is "log" (the records as written), "predict" (what a recovery under ``rule`` does with
    each task) or "reconstruct" (the status of each record under ``rule``). ``attempt`` keeps one
    attempt per business key; ``key`` one business key; ``markers`` a JSON file of recovery markers
    (default: the whole loaded log is the window); ``runtime`` is carried to the recovery functions that
    accept it. ``markers`` or ``runtime`` without a rule set up a recovery: the side predicts under the rule
    that runtime ships.

    For example::

        sel = ai.diffing.parse_selector("sample_logs/production.jsonl@fixed@attempt=2")
        sel.source, sel.mode, sel.rule, sel.attempt, sel.label
    """

    source: str
    mode: str = "log"
    rule: str | None = None
    attempt: int | None = None
    key: str | None = None
    markers: str | None = None
    runtime: str | None = None

    @property
    def label(self) -> str:
        parts = [self.source]
        if self.mode != "log":
            parts.append(f"{self.mode}={self.rule}")
        for name in ("attempt", "key", "markers", "runtime"):
            if getattr(self, name) is not None:
                parts.append(f"{name}={getattr(self, name)}")
        return "@".join(parts)


# a selector name, or a bare built-in rule name (``fixed+round-regression``, ``original:kafka-k1``)
_SEGMENT = re.compile(r"^([a-z][a-z_+-]*(?::[a-z0-9][a-z0-9_-]*)?)(?:=(.+))?$")


def parse_selector(text: str) -> Selector:
    """Parse ``SOURCE[@selector]…``.

    Selectors, each after an ``@``: ``rule=NAME`` or ``predict=NAME`` (the prediction under that rule:
    which tasks a recovery reuses, resumes or reruns), ``reconstruct=NAME`` (each record's status under
    that rule), a bare built-in rule name (``@fixed`` = ``@predict=fixed``; ``@fixed+round-regression``,
    ``@original:kafka-k1`` too), ``attempt=N`` (attempt N of
    each business key, 1-based), ``key=K`` (one business key), ``markers=FILE`` (a JSON list of
    ``{partition: offset}`` maps, or an object with such a ``markers`` list), ``runtime=NAME`` (passed to the recovery functions that support it). ``markers`` or
    ``runtime`` without a rule diff what the restore does under the rule that runtime ships.
    Examples: ``prod.jsonl@attempt=2@key=order-7``, ``kafka://b:9092/topic@original``,
    ``prod.jsonl@reconstruct=fixed@markers=prod.markers.json``.

    For example::

        ai.diffing.parse_selector("sample_logs/production.jsonl@attempt=2@key=user-0011")
        ai.diffing.parse_selector("kafka://broker:9092/topic@original")
    """
    from agent_inspect.rules import RULES

    if not isinstance(text, str) or not text.strip():
        raise SelectorError("empty diff side; pass a source such as log.jsonl or log.jsonl@attempt=2")
    parts = text.split("@")
    # segments after the source, read from the right; a segment that is no selector belongs to the source
    found: list[tuple[str, str | None]] = []
    while len(parts) > 1:
        m = _SEGMENT.match(parts[-1])
        if m is None:
            break
        name, value = m.group(1), m.group(2)
        if value is None and name.partition(":")[0] not in RULES:
            if name in SELECTORS:
                raise SelectorError(f"selector @{name} needs a value: @{name}=…")
            break
        if value is not None and name not in SELECTORS:
            raise SelectorError(f"unknown selector @{name}=…; use one of "
                                + ", ".join(f"@{s}=" for s in SELECTORS) + " or a rule name like @fixed")
        found.append((name, value))
        parts.pop()
    source = "@".join(parts)
    if not source:
        raise SelectorError(f"{text!r} names no source before its selectors")
    fields: dict[str, Any] = {"source": source}
    for name, value in reversed(found):
        if value is None:
            name, value = "predict", name
        if name in ("rule", "predict", "reconstruct"):
            if "rule" in fields:
                raise SelectorError(f"{text!r}: give one rule selector, not several")
            fields["mode"] = "reconstruct" if name == "reconstruct" else "predict"
            fields["rule"] = value
        elif name == "attempt":
            try:
                fields["attempt"] = int(str(value))
            except ValueError:
                raise SelectorError(f"@attempt={value}: the attempt is a number (1 is the first)") from None
            if fields["attempt"] < 1:
                raise SelectorError(f"@attempt={value}: attempts are numbered from 1")
        else:
            fields[name] = value
    return Selector(**fields)


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
    execution = ann["execution"].to_numpy()
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
           key: str | None = None, label: str | None = None, **overrides: Unpack[RecoveryOverrides]) -> Side:
    """A diff side from a log (or a source to load, or a selector string) and what to take from it.

    ``mode="predict"`` (the default when a rule or ``recovery`` is given) diffs what a recovery does per
    task; ``mode="reconstruct"`` each record's status. The recovery is ``recovery`` with the settings
    given as keywords (``rule``, ``markers``, ``runtime``, … as every verb takes them; by default the rule
    the log's runtime ships, with the whole loaded log as the rebuild window). ``attempt``/``key`` narrow
    the records. The settings resolve once, checked as every verb checks them; records as written (``mode="log"``)
    are read under their ``runtime`` and ``kafka_pending``, which say which rows are a checkpoint's refresh rows
    (no executions, no attempts).

    For example::

        shipped = ai.diffing.select(log, markers=markers, rule="original")   # what the restore does per task
        what_if = ai.diffing.select(log, markers=markers, rule="fixed")
        ai.diff(shipped, what_if).counts
    """
    rule = overrides.get("rule")
    if isinstance(source, str):
        sel = parse_selector(source)
        fields: dict[str, Any] = {k: v for k, v in (("attempt", attempt), ("key", key)) if v is not None}
        if rule is not None or mode is not None:
            fields["mode"] = mode or (sel.mode if sel.mode != "log" else "predict")
        if rule is not None:
            fields["rule"] = _rule_name(rule)
        if overrides.get("runtime") is not None:
            fields["runtime"] = str(overrides["runtime"])
        return _from_selector(Selector(**{**sel.__dict__, **fields}), recovery=recovery, label=label, **overrides)
    if mode is None:
        mode = "predict" if rule is not None or recovery is not None else "log"
    if mode not in ("log", "predict", "reconstruct"):
        raise SelectorError(f"mode {mode!r}: use 'log', 'predict' or 'reconstruct'")
    log = source.log if isinstance(source, ReconstructionLike) else source
    if not _is_log(log):
        raise SelectorError(f"cannot select from a {type(source).__name__}; pass an ActionStateLog or a source")
    name = label or _default_label(log)
    from agent_inspect.history import annotate_rows, refresh_rows
    from agent_inspect.recovery import Recovery

    # one recovery from every setting given, checked as every verb checks it; a log side reads the log under its
    # runtime and kafka_pending (a checkpoint's refresh rows are no executions and start no attempt)
    settings = Recovery.resolve(log, recovery, **overrides)
    records = log.records
    if mode == "log" or key is not None or attempt is not None:
        ann = annotate_rows(records, refresh_rows(log, settings.model))
    if key is not None or attempt is not None:
        mask = _select_rows(records, ann, key=key, attempt=attempt)
        sub = records[mask]
        tag = "".join(f"@{n}={v}" for n, v in (("key", key), ("attempt", attempt)) if v is not None)
        if mode == "log":
            return Side(f"{name}{tag}", "attempt" if attempt is not None else "log",
                        _log_units(sub, ann.loc[sub.index]), log=log, source=source)
        log = log.for_key(key) if key is not None and attempt is None else log
        if attempt is not None:
            raise SelectorError("@attempt selects records as written; diff an attempt without a rule selector")
    if mode == "log":
        return Side(name, "log", _log_units(records, ann), log=log, source=log)
    return _recovery_side(log, mode, settings, label=f"{name}@{mode}={settings.rule_label}")


def _rule_name(rule: Any) -> str:
    return rule if isinstance(rule, str) else str(getattr(rule, "name", rule))


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


def _from_selector(sel: Selector, *, recovery: Recovery | None = None, label: str | None = None,
                   **overrides: Unpack[RecoveryOverrides]) -> Side:
    from agent_inspect.log import load

    log = _load_side(sel.source, load)
    if sel.markers is not None:
        try:
            with open(sel.markers, encoding="utf-8") as fh:
                markers = json.load(fh)
        except (OSError, ValueError) as exc:
            raise SelectorError(f"@markers={sel.markers}: cannot read the markers file ({exc})") from None
        if isinstance(markers, dict) and "markers" in markers:   # the sample logs' markers files
            markers = markers["markers"]
        overrides["markers"] = markers
    # the selector's own settings win over those given to every side (a rule object keeps its identity)
    if sel.rule is not None and _rule_name(overrides.get("rule")) != sel.rule:
        overrides["rule"] = sel.rule
    if sel.runtime is not None:
        overrides["runtime"] = sel.runtime
    mode = sel.mode
    if mode == "log" and (sel.runtime is not None or sel.markers is not None):
        # a recovery setting asks for a recovery: what the restore does under the rule that runtime ships
        if sel.attempt is not None:
            raise SelectorError(f"{sel.label!r}: @runtime= and @markers= set up a recovery, @attempt= selects records "
                                "as written; drop one, or add a rule (@original) to diff what a restore does")
        mode = "predict"
    side = select(log, recovery=recovery, mode=mode, attempt=sel.attempt, key=sel.key, label=sel.source,
                  **overrides)
    # the settings' rule mark (its flavour, and " (what-if; 0.4 ships original)") after the selector's text
    ruled = side.rule_mark
    name = label or (replace(sel, mode=mode, rule=sel.rule or (ruled.name if ruled is not None else side.rule)).label
                     + (ruled.mark if ruled is not None else ""))
    return replace(side, label=name)


def _load_side(source: str, load: Any) -> Any:
    """``load(source)``; a source that cannot be opened and ends in ``@word`` names an unknown selector (a
    segment that is no selector stays part of the source: paths may hold an ``@``)."""
    from agent_inspect.rules import RULES

    try:
        return load(source)
    except SourceError:
        word = source.rpartition("@")[2] if "@" in source else ""
        if not _SEGMENT.match(word):
            raise
        known = [*RULES, *SELECTORS]
        close = difflib.get_close_matches(word, known, n=1)
        raise SelectorError(f"unknown selector @{word} (and no source {source!r} to open); use a rule name "
                            f"({', '.join(f'@{r}' for r in RULES)}) or one of "
                            + ", ".join(f"@{s}=" for s in SELECTORS)
                            + (f"; did you mean @{close[0]}{'' if close[0] in RULES else '='}?" if close else "")) \
            from None


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
    return Side(label, "reconstruction", units, log=recon.log, rule=str(getattr(recon.rule, "name", recon.rule)),
                source=recon)


def as_side(obj: Diffable, *, label: str | None = None, log: LogLike | None = None, recovery: Recovery | None = None,
            **overrides: Unpack[RecoveryOverrides]) -> Side:
    """Any diffable object as a :class:`Side`: a side, a selector string, a log, a reconstruction, a
    prediction (``log=`` gives its records' values) or a replay executor (its journal: what the run wrote).
    ``recovery`` and the settings as keywords apply to a selector string that runs a recovery.

    For example::

        ai.diffing.as_side(log, label="as written").kind
        ai.diffing.as_side(ai.predict(log, markers=markers), log=log).kind
    """
    if isinstance(obj, Side):
        return obj if label is None else replace(obj, label=label)
    if isinstance(obj, os.PathLike):       # a path, as ai.load and ai.samples.path give it
        obj = os.fspath(obj)
    if isinstance(obj, str):
        sel = parse_selector(obj)
        if sel.mode == "log" and sel.markers is None and sel.runtime is None:   # @markers/@runtime run a recovery
            return select(obj, label=label)
        return _from_selector(sel, recovery=recovery, label=label, **overrides)
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
        whole = cast("LogLike", obj)    # _is_log checked it
        return Side(label or _default_label(whole), "log", _log_units(whole.records, log=whole), log=whole,
                    source=whole)
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
