"""The scan's passes after its windows: the input's one runtime (windows that inferred another are read again), keys
whose records straddle Parquet row groups, rules whose answer spans partitions, and how a window's failure is
recorded."""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect._glossary import plural
from agent_inspect.fleet._task import (
    CALLS_PREFIX,
    KEY_COLUMNS,
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
    from agent_inspect.log import RuntimeInfo


def _one_runtime(client: Any, plan: ScanPlan, options: ScanOptions, done: list[Any], failed: list[dict[str, Any]], *,
                 retries: int) -> tuple[ScanOptions, list[Any], str]:
    """The options with the input's runtime and store kind resolved, the windows read under them, and where the
    runtime came from in words. Under "auto" each window inferred its runtime from its own records; the input's is
    what those inferences say together (:func:`agent_inspect.log.joined_runtime`: ``ai.load`` of the input infers
    the same), and a window whose keys were predicted under another runtime or store is read again under the
    input's (none is in the common single-runtime case). A runtime given is used as is."""
    from agent_inspect.log import joined_runtime, resolve_runtime

    kinds = {str(r.partition["source_kind"]) for r in done if r.partition.get("source_kind") is not None}
    kind = "fluss" if "fluss" in kinds else next(iter(kinds), None)   # a file's agent_key anywhere reads as Fluss
    info: RuntimeInfo
    if options.runtime == "auto":
        info = replace(joined_runtime([r.read_as for r in done if r.read_as is not None]), store_flavour=None)
        words = f"{info.name}: inferred from the whole input ({info.evidence})"
    else:
        info = replace(resolve_runtime(options.runtime), store_flavour=None)
        words = f"{info.name}: given ({info.evidence})"
    resolved = replace(options, runtime=info, source_kind=kind)
    again = [i for i, r in enumerate(done) if r.partition.get("keys") and (
        r.partition.get("runtime") != info.name or r.partition.get("source_kind") != kind)]
    out = [r if i in again or r.partition.get("keys") else
           replace(r, partition={**r.partition, "runtime": info.name}) for i, r in enumerate(done)]  # nothing predicted
    if not again:
        return resolved, out, words
    by_name = {w.name: w for w in plan.windows}
    own = sorted({str(done[i].partition.get("runtime")) for i in again})
    token = uuid.uuid4().hex[:8]
    futures = {client.submit(scan_window, plan.spec, by_name[done[i].partition["window"]], replace(resolved, output=None),
                             key=f"agent-inspect-scan-reread-{token}-{n}", retries=retries, pure=False): i
               for n, i in enumerate(again)}
    lost: set[int] = set()
    try:
        for fut, i in futures.items():
            first = done[i].partition
            try:
                res = fut.result()
            except Exception as exc:  # noqa: BLE001 - its keys under another runtime would be wrong: a failed window
                failed.append({**_failure(by_name[first["window"]], exc), "window": f"{first['window']}#reread"})
                lost.add(i)
                continue
            row = {**res.partition, "output": first.get("output"), "reread": True,
                   "read_seconds": round(first["read_seconds"] + res.partition["read_seconds"], 4),
                   "seconds": round(first["seconds"] + res.partition["seconds"], 4)}
            out[i] = replace(res, partition=row)
    except BaseException:
        client.cancel(list(futures), force=True)
        raise
    n = len(again) - len(lost)
    words += (f"; {plural(n, 'window')} read again under it (its own records showed {' / '.join(own)})" if n else "")
    return resolved, [r for i, r in enumerate(out) if i not in lost], words


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
    # under the input's runtime (options resolved it), not as the keys' own records alone infer it; the records were
    # written by the row-group tasks
    token = uuid.uuid4().hex[:8]
    futures = {client.submit(scan_window, plan.spec, Window(None, path=path, file_format="parquet", keys=tuple(keys)),
                             replace(options, output=None),
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
            first = idx[0]   # every row group was read under the input's runtime
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
