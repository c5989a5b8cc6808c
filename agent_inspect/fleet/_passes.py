"""The scan's passes after its windows: keys whose records straddle Parquet row groups, rules whose answer spans
partitions, and how a window's failure and the scan's runtime are recorded."""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect.fleet._task import (
    CALLS_PREFIX,
    KEY_COLUMNS,
    RUNTIMES,
    _name,
    column_order,
    concat_keys,
    scan_fleet,
    scan_window,
)

if TYPE_CHECKING:
    from agent_inspect.fleet._result import ScanResult
    from agent_inspect.fleet._run import ScanPlan
    from agent_inspect.fleet._task import ScanOptions


def _rejoin_split_keys(client: Any, plan: ScanPlan, options: ScanOptions, done: list[Any],
                       failed: list[dict[str, Any]], *, retries: int) -> list[Any]:
    """Keys whose records straddle row groups of one Parquet file were analysed in pieces: analyse each such
    key again from all its records (one task per file reading only those keys) and keep that row instead."""
    from collections import Counter, defaultdict

    from agent_inspect.log import Window

    by_path: dict[str, list[int]] = defaultdict(list)
    for i, res in enumerate(done):
        if res.partition.get("row_group") is not None:
            by_path[str(res.partition["path"])].append(i)
    split: dict[str, list[str]] = {}
    for path, idx in by_path.items():
        seen = Counter(k for i in idx for k in done[i].keys["business_key"].astype(str))
        keys = sorted(k for k, c in seen.items() if c > 1)
        if keys:
            split[path] = keys
    if not split:
        return done
    # the runtime is the job's: the keys are read as their file's row groups were together (as the scan names its
    # runtime), not as their own records alone infer it; the records were written by the row-group tasks
    read_as = {p: _resolved(options.runtime, pd.DataFrame([done[i].partition for i in by_path[p]])) for p in split}
    token = uuid.uuid4().hex[:8]
    futures = {client.submit(scan_window, plan.spec, Window(None, path=path, file_format="parquet", keys=tuple(keys)),
                             replace(options, output=None, runtime=read_as[path] if read_as[path] in RUNTIMES else "auto"),
                             key=f"agent-inspect-scan-rejoin-{token}-{n}", retries=retries, pure=False): path
               for n, (path, keys) in enumerate(sorted(split.items()))}
    out = list(done)
    try:
        for fut, path in futures.items():
            try:
                whole = fut.result()
            except Exception as exc:  # noqa: BLE001 - reported like a failed window; the pieces stay
                failed.append({**_failure(Window(None, path=path, file_format="parquet"), exc),
                               "window": f"{os.path.basename(path)}#rejoin"})
                continue
            drop = set(split[path])
            idx = by_path[path]
            for i in idx:
                keys = out[i].keys
                out[i] = replace(out[i], keys=keys[~keys["business_key"].astype(str).isin(drop)].reset_index(drop=True))
            # kept with a row group read as they were: its row says what they were predicted under
            first = next((i for i in idx if out[i].partition.get("runtime") == read_as[path]), idx[0])
            out[first] = replace(out[first], keys=concat_keys([out[first].keys, whole.keys]))
    except BaseException:
        client.cancel(list(futures), force=True)
        raise
    return out


def _fleet_wide(client: Any, plan: ScanPlan, options: ScanOptions, done: list[Any], failed: list[dict[str, Any]], *,
                retries: int) -> pd.DataFrame | None:
    """Rules whose analysis spans partitions (snapshot Kafka K1, original rule) run once more, as one task
    reading every window (on a worker: the records still do not come here)."""
    wide = sorted({r for res in done for r in res.partition.get("fleet_wide_rules", ())})
    if not wide or failed:
        return None  # with a failed window a fleet-wide answer would be wrong: the per-window one is kept
    rules = tuple(r for r in options.rules if _name(r) in wide)
    fleet_options = replace(options, rules=rules, output=None)
    fut = client.submit(scan_fleet, plan.spec, list(plan.windows), fleet_options, retries=retries, pure=False,
                        key=f"agent-inspect-scan-fleet-{uuid.uuid4().hex[:8]}")
    try:
        return fut.result()
    except BaseException:
        client.cancel([fut], force=True)
        raise


def _with_fleet_columns(result: ScanResult, fleet: pd.DataFrame) -> ScanResult:
    keys = result.keys.set_index("business_key")
    wide = fleet.set_index("business_key")
    rules = sorted({c[:-len("_reused")] for c in wide.columns if c.endswith("_reused")})
    # the fleet-wide rules' columns, their per-function counts included, replace the per-window ones
    keys = keys.drop(columns=[c for c in keys.columns if any(c.startswith(f"{r}{CALLS_PREFIX}") for r in rules)])
    for c in [c for c in wide.columns if c not in KEY_COLUMNS]:
        col = wide[c].reindex(keys.index)
        keys[c] = col.fillna(0).astype("int32").to_numpy() if CALLS_PREFIX in c else col.to_numpy()
    keys = keys.reset_index()
    return replace(result, keys=keys[column_order(keys.columns, result.rules)], fleet_wide=tuple(rules))


def _failure(window: Any, exc: BaseException | None) -> dict[str, Any]:
    reason = "cancelled" if exc is None else f"{type(exc).__name__}: {exc}"
    return {"window": window.name, "partition": window.partition, "path": window.path, "start": window.start,
            "end": window.end, "reason": reason}


def _resolved(runtime: str, parts: pd.DataFrame) -> str:
    """The runtime the scan read its windows as: the given one, else the latest any window was inferred as (a
    window without a V4 record cannot tell 0.4 from main; the log as a whole is read as the latest)."""
    if runtime != "auto" or "runtime" not in parts.columns:
        return runtime
    seen = set(parts["runtime"].dropna().astype(str))
    named = [r for r in RUNTIMES[1:] if r in seen]   # RUNTIMES[0] is "auto"
    return named[-1] if named else ("unknown" if seen else runtime)
