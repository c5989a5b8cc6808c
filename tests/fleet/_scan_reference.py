"""Per-key reference outcomes straight from single-process predict/reconstruct, and the scan's matching columns."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pandas as pd

from agent_inspect.recovery import predict, reconstruct

RULES = ("original", "fixed")
OUTCOMES = {"REUSE": "reused", "RESUME": "resumed", "RERUN": "rerun", "FAIL": "failed",
            "NOT-DISPATCHED": "not_dispatched"}


def reference(log: Any, markers: Any, rules: tuple[str, ...] = RULES) -> pd.DataFrame:
    """Per business key, straight from single-process predict/reconstruct on the whole log."""
    rows: dict[str, dict[str, Any]] = defaultdict(dict)
    recs = log.records[log.records["business_key"].notna()]
    for k, g in recs.groupby(recs["business_key"].astype(str), observed=True):
        rows[k].update(records=len(g), rounds=int(g["seq"].nunique()))
    for rule in rules:
        recon = reconstruct(log, rule=rule, markers=markers)
        att = pd.to_numeric(recon.records["attempt"], errors="coerce").groupby(
            log.records["business_key"].astype(object)).max()
        for k in rows:
            rows[k]["attempts"] = int(att.get(k, 0) if pd.notna(att.get(k, 0)) else 0)
        pred = predict(log, rule=rule, markers=markers)
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for k, outcome in zip(pred.tasks["business_key"].astype(object), pred.tasks["outcome"].astype(object)):
            counts[str(k)][str(outcome)] += 1
        removed: Counter[str] = Counter()
        for e in pred.events:
            if e.op not in ("delete", "supersede"):
                for entry in e.removed:
                    removed[str(entry.business_key)] += 1
        ledger = pred.ledger[pred.ledger["kind"].isin(("call", "subagent"))]   # by function: both kinds
        calls = ledger[ledger["kind"] == "call"].groupby("key", observed=True)["count"].sum()
        subagent = ledger[ledger["kind"] == "subagent"].groupby("key", observed=True)["count"].sum()
        for (k, function), n in ledger.groupby(["key", "label"], observed=True)["count"].sum().items():
            if n:
                rows[str(k)][f"{rule}_calls:{function}"] = int(n)
        for k in rows:
            for outcome, col in OUTCOMES.items():
                rows[k][f"{rule}_{col}"] = counts[k][outcome]
            rows[k][f"{rule}_evictions"] = removed[k]
            rows[k][f"{rule}_calls"] = int(calls.get(k, 0))
            rows[k][f"{rule}_calls_subagent"] = int(subagent.get(k, 0))
    frame = pd.DataFrame.from_dict(rows, orient="index").sort_index()
    by_function = [c for c in frame.columns if "_calls:" in c]
    frame[by_function] = frame[by_function].fillna(0).astype("int64")
    return frame


def compared(result: Any, rules: tuple[str, ...] = RULES) -> pd.DataFrame:
    cols = ["records", "rounds", "attempts"] + [f"{r}_{c}" for r in rules
                                                for c in (*OUTCOMES.values(), "evictions", "calls",
                                                          "calls_subagent")]
    cols += [c for c in result.keys.columns if any(c.startswith(f"{r}_calls:") for r in rules)]   # by function id
    frame = result.keys.set_index("business_key")[cols].sort_index()
    frame.index.name = None
    return frame.astype("int64")
