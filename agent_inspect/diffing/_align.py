"""Align two sides per business key, round and action execution, and compare each aligned pair.

Passes, each on the executions the previous passes left unmatched, within (business key, seq), the
n-th occurrence on one side paired with the n-th on the other (so several attempts of one action pair
up in order): the state key; the action and the event fingerprint; the event type and fingerprint (the
action's identity changed, e.g. a Java hash-based UUID per attempt); the action and the event type (the
attributes changed: a different state key). The passes are symmetric, so ``align(b, a)`` is the mirror
of ``align(a, b)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from agent_inspect.diffing._fields import FieldChange, show, state_changes
from agent_inspect.diffing._sides import Side

__all__ = ["align", "compare_pairs", "PASSES", "STATUSES", "PAIR_COLUMNS"]

STATUSES = ("same", "changed", "only in a", "only in b")
"""Pair statuses, in the issue's words."""

PASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("state key", ("state_key",)),
    ("action and attributes", ("action", "event_type", "event_uuid")),
    ("event attributes", ("event_type", "event_uuid")),
    ("action and event type", ("action", "event_type")),
)
"""(name, key columns) of the alignment passes, in order."""

PAIR_COLUMNS = ("business_key", "seq", "status", "match", "a", "b", "action_a", "action_b", "event_type",
                "state_key_a", "state_key_b", "pos_a", "pos_b", "outcome_a", "outcome_b", "changes")
"""Columns of :attr:`Diff.pairs`: one row per aligned pair of action executions."""

_NULL = "\x00null"


def _keyed(units: pd.DataFrame, cols: tuple[str, ...]) -> pd.DataFrame:
    frame = pd.DataFrame({"_bk": units["business_key"].astype(object).where(units["business_key"].notna(), _NULL),
                          "_seq": units["seq"].astype("Int64").fillna(-1).astype("int64")}, index=units.index)
    for c in cols:
        col = units[c].astype(object) if c in units else pd.Series(None, index=units.index, dtype=object)
        frame[c] = col.where(col.notna(), _NULL).astype(str)
    frame["_occ"] = frame.groupby(["_bk", "_seq", *cols], sort=False).cumcount()
    return frame


def align(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Matched unit indices: columns ``a``, ``b`` (unit row labels, -1 for none) and ``match`` (the pass).

    For example::

        a, b = ai.diffing.attempt(log, "user-0011", 1), ai.diffing.attempt(log, "user-0011", 2)
        ai.diffing.align(a.units, b.units).head()      # unit a, unit b, how they were matched
    """
    left, right = a.index.to_numpy(), b.index.to_numpy()
    rows: list[pd.DataFrame] = []
    for name, cols in PASSES:
        if not len(left) or not len(right):
            break
        ka, kb = _keyed(a.loc[left], cols), _keyed(b.loc[right], cols)
        on = ["_bk", "_seq", *cols, "_occ"]
        m = ka.reset_index(names="a")[["a", *on]].merge(kb.reset_index(names="b")[["b", *on]], on=on, how="inner")
        if name != "state key":
            # a later pass never pairs two executions with an equal state key that stayed apart: that
            # would be an occurrence surplus on one side, reported as only-in
            same = a.loc[m["a"], "state_key"].to_numpy() == b.loc[m["b"], "state_key"].to_numpy()
            m = m[~same]
        if len(m):
            rows.append(pd.DataFrame({"a": m["a"].to_numpy(), "b": m["b"].to_numpy(), "match": name}))
            left = left[~np.isin(left, m["a"].to_numpy())]
            right = right[~np.isin(right, m["b"].to_numpy())]
    rows.append(pd.DataFrame({"a": left, "b": np.full(len(left), -1), "match": None}))
    rows.append(pd.DataFrame({"a": np.full(len(right), -1), "b": right, "match": None}))
    out = pd.concat(rows, ignore_index=True)
    out["a"] = out["a"].astype("int64")
    out["b"] = out["b"].astype("int64")
    return out


def _get(units: pd.DataFrame, idx: np.ndarray, col: str) -> list[Any]:
    if col not in units:
        return [None] * len(idx)
    values = units[col].astype(object).to_numpy()
    out = np.full(len(idx), None, dtype=object)
    ok = idx >= 0
    out[ok] = values[units.index.get_indexer(idx[ok])]
    return [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v for v in out]


# completion is compared with the values (a log side) and is unknown for a prediction
_SCALARS = (("outcome", "outcome"), ("status", "outcome"), ("calls_executed", "calls"))


def compare_pairs(sa: Side, sb: Side, matched: pd.DataFrame) -> pd.DataFrame:
    """One row per aligned pair (columns :data:`PAIR_COLUMNS`) with its status and field changes."""
    ia, ib = matched["a"].to_numpy(), matched["b"].to_numpy()
    A, B = sa.units, sb.units
    col = {f"{c}_{s}": _get(u, i, c) for c in ("business_key", "seq", "state_key", "action", "action_uuid",
                                              "event_type", "event_uuid", "pos", "outcome", "status", "completed",
                                              "calls_executed", "order")
           for s, u, i in (("a", A, ia), ("b", B, ib))}
    compare_values = sa.log is not None and sb.log is not None and not (
        sa.kind == "prediction" and sb.kind == "prediction" and sa.log is sb.log)
    same_log = sa.log is sb.log
    # a field one side never has (a log's outcome, a prediction's status) is not a change on every pair
    carried = {c: all(c in u.columns and u[c].notna().any() for u in (A, B)) for c, _ in _SCALARS}
    statuses: list[str] = []
    changes: list[tuple[FieldChange, ...]] = []
    for n in range(len(matched)):
        if ia[n] < 0 or ib[n] < 0:
            statuses.append("only in b" if ia[n] < 0 else "only in a")
            changes.append(())
            continue
        ch: list[FieldChange] = []
        for c in ("event_uuid", "action_uuid"):
            x, y = col[f"{c}_a"][n], col[f"{c}_b"][n]
            if x is not None and y is not None and x != y:
                ch.append(FieldChange("identity", f"state_key.{c}", show(x), show(y)))
        for c, area in _SCALARS:
            x, y = col[f"{c}_a"][n], col[f"{c}_b"][n]
            if carried[c] and (x is not None or y is not None) and x != y:
                ch.append(FieldChange(area, c, show(x), show(y)))
        pa, pb = col["pos_a"][n], col["pos_b"][n]
        if compare_values and pa is not None and pb is not None and not (same_log and pa == pb):
            ra, rb = sa.raw_value(pa), sb.raw_value(pb)
            if ra is None or rb is None or ra != rb:
                ch.extend(state_changes(sa.value(pa), sb.value(pb)))
        statuses.append("changed" if ch else "same")
        changes.append(tuple(ch))
    bk = [x if x is not None else y for x, y in zip(col["business_key_a"], col["business_key_b"])]
    seq = [x if x is not None else y for x, y in zip(col["seq_a"], col["seq_b"])]
    etype = [x if x is not None else y for x, y in zip(col["event_type_a"], col["event_type_b"])]
    frame = pd.DataFrame({
        "business_key": bk, "seq": pd.array(seq, dtype="Int64"),
        "status": pd.Categorical(statuses, categories=list(STATUSES)), "match": matched["match"].to_numpy(),
        "a": pd.array(np.where(ia >= 0, ia, -1), dtype="Int64"), "b": pd.array(np.where(ib >= 0, ib, -1), dtype="Int64"),
        "action_a": col["action_a"], "action_b": col["action_b"], "event_type": etype,
        "state_key_a": col["state_key_a"], "state_key_b": col["state_key_b"],
        "pos_a": pd.array(col["pos_a"], dtype="Int64"), "pos_b": pd.array(col["pos_b"], dtype="Int64"),
        "outcome_a": col["outcome_a"], "outcome_b": col["outcome_b"], "changes": changes,
    })
    for c in ("business_key", "action_a", "action_b", "event_type", "state_key_a", "state_key_b", "outcome_a",
              "outcome_b"):
        frame[c] = frame[c].astype(object).where(frame[c].notna(), None)
    frame.loc[frame["a"] < 0, "a"] = pd.NA
    frame.loc[frame["b"] < 0, "b"] = pd.NA
    order = np.array([x if x is not None else (y if y is not None else 0)
                      for x, y in zip(col["order_a"], col["order_b"])], dtype="int64")
    frame["_order"] = order
    frame["_bk"] = frame["business_key"].astype(str)
    frame = frame.sort_values(["_bk", "seq", "_order"], kind="stable").drop(columns=["_order", "_bk"])
    return frame.reset_index(drop=True)
