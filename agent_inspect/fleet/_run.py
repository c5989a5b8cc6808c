"""Run a fleet scan on Dask distributed: one task per window, results are small frames."""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Unpack, cast

import pandas as pd

from agent_inspect._errors import InspectError, SourceError
from agent_inspect._glossary import plural
from agent_inspect._types import RecoveryOverrides
from agent_inspect.fleet._passes import _failure, _fleet_wide, _one_runtime, _rejoin_split_keys, _with_fleet_columns
from agent_inspect.fleet._result import _FAILURE_COLUMNS, ScanResult, _scanned_runtime
from agent_inspect.fleet._task import (
    CALLS_PREFIX,
    KEY_COLUMNS,
    RULE_COLUMNS,
    RUNTIMES,
    ScanOptions,
    _name,
    concat_keys,
    scan_window,
)
from agent_inspect.rules import BrokenRuleError
from agent_inspect.sources import FileKind, check_timeout, empty_source, file_kind, resolve_timeout, scheduler_answers

if TYPE_CHECKING:
    from collections.abc import Callable

    from distributed import Client

    from agent_inspect._types import MarkersLike, RuleLike
    from agent_inspect.log import SourceSpec, Window
    from agent_inspect.recovery import Recovery
    from agent_inspect.sources import ConnectionFactory

__all__ = ["ScanPlan", "plan_scan", "scan", "RUNTIMES"]

@dataclass(frozen=True)
class ScanPlan:
    """The windows of a source a scan will read (planned from metadata and offsets only).

    For example::

        plan = ai.fleet.plan_scan("sample_logs/production.parquet", markers=markers)
        [w.name for w in plan.windows], plan.markers   # records_planned: known before reading from Kafka only
    """

    source: str
    spec: SourceSpec
    windows: tuple[Window, ...]
    markers: Mapping[int, int] | None = None

    def __repr__(self) -> str:
        # one line: a topic of hundreds of partitions plans as many windows; they stay an attribute
        markers = "" if self.markers is None else (
            f", markers {dict(self.markers)}" if len(self.markers) <= 4 else
            f", markers of {plural(len(self.markers), 'partition')}")
        return f"ScanPlan({self.source!r}: {plural(len(self.windows), 'window')}{markers})"

    @property
    def records_planned(self) -> int | None:
        """Records to read, when the source says so before reading (Kafka)."""
        sizes = [w.records_planned for w in self.windows if w.records_planned is not None]
        return sum(sizes) if len(sizes) == len(self.windows) else None


def plan_scan(source: str | os.PathLike[str], markers: MarkersLike = None, *, config: Mapping[str, Any] | None = None,
              timeout: float | None = None, allow_data_loss: bool = False, file_format: str | None = None,
              connection_factory: ConnectionFactory | None = None) -> ScanPlan:
    """Plan a scan of ``source`` (``kafka://host:port/topic``, ``fluss://host:port/db.table``, a dump file or a
    directory of dumps).

    One window per Kafka partition (only the markers' partitions, from their merged offsets, when
    ``markers`` are given), per Fluss bucket, per partition of a Parquet dump (per row group when the file
    has more row groups than partitions), per JSONL dump, per partition of a scan's output directory. No
    records are read here. ``connection_factory``: as :func:`agent_inspect.load_fluss` takes it.

    For example::

        plan = ai.fleet.plan_scan("sample_logs/production.parquet")   # or "kafka://broker:9092/topic"
        [w for w in plan.windows][:2]
    """
    from agent_inspect.log import plan_windows

    spec, windows = plan_windows(source, markers=markers, config=config, timeout=timeout,
                                 allow_data_loss=allow_data_loss, file_format=file_format,
                                 connection_factory=connection_factory)
    from agent_inspect.recovery import rebuild_start

    merged = rebuild_start(markers)
    text = os.fspath(source)
    return ScanPlan(source=spec.location if "://" in text else text, spec=spec,
                    windows=tuple(windows), markers=merged)


def _dashboard_link(client: Any) -> str | None:
    """The scheduler's dashboard address, or None when it runs no dashboard.

    ``Client.dashboard_link`` names port 8787 (or the scheduler's HTTP port, which also serves plain health
    routes) whether or not a dashboard runs there, so the link counts only when the page answers.
    """
    try:
        link = client.dashboard_link
    except Exception:  # noqa: BLE001 - no dashboard (bokeh missing, or turned off)
        return None
    from agent_inspect.sources import page_answers

    return link if isinstance(link, str) and page_answers(link) else None


def _rule_name(rule: Any) -> str:
    if not isinstance(rule, str) and not isinstance(getattr(rule, "name", None), str):
        raise InspectError(f"rules must be rule names or DivergenceRule objects with a name, not {rule!r}")
    return _name(rule)


@contextlib.contextmanager
def _client(client: Any, workers: int | None, dashboard: bool, timeout: float) -> Iterator[tuple[Any, bool]]:
    """The Dask client to use: the caller's, one connected to a scheduler address, or a LocalCluster's; and
    whether it is a LocalCluster of ours (closed, with its dashboard, when the scan returns)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - the scan extra is part of `all`
        raise InspectError("ai.scan needs Dask distributed: pip install 'agent_inspect[scan]'") from None
    if client is not None and not isinstance(client, str):
        if not callable(getattr(client, "submit", None)):
            raise InspectError(f"client must be a scheduler address (\"tcp://host:8786\"), a distributed.Client or "
                               f"None for a local cluster, not {type(client).__name__}")
        yield client, False
        return
    if isinstance(client, str):
        start = "start one with `dask scheduler`, or leave the address out (client=None, no --scheduler) for a local cluster"
        # Dask retries a refused connection for its whole timeout, and waits for a silent peer's greeting forever:
        # greeted first, with a deadline, so either fails in one line
        why = scheduler_answers(client, timeout=timeout)
        if why is not None:
            raise SourceError(f"no Dask scheduler answered at {client} ({why}); {start}")
        try:
            made = Client(client, timeout=f"{timeout}s")
        except (OSError, TimeoutError) as exc:
            raise SourceError(f"no Dask scheduler answered at {client} ({exc}); {start}") from None
        try:
            yield made, False
        finally:
            made.close()
        return
    n = workers or max(1, os.cpu_count() or 1)
    # everything on 127.0.0.1, ports chosen free (a bare ":0" would listen on every interface); without the
    # dashboard the scheduler still serves its health routes, so it gets a free local port too
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address="127.0.0.1:0" if dashboard else None,
                           scheduler_kwargs=None if dashboard else {"dashboard_address": "127.0.0.1:0"},
                           silence_logs=logging.CRITICAL)  # task errors come back as results, not log lines
    try:
        made = Client(cluster)
        try:
            yield made, True
        finally:
            made.close()
    finally:
        cluster.close()


def scan(source: str | os.PathLike[str] | ScanPlan, *, recovery: Recovery | None = None,
         what_if: Sequence[RuleLike] | RuleLike = ("fixed",), client: str | Client | None = None, output: str | os.PathLike[str] | None = None,
         workers: int | None = None, config: Mapping[str, Any] | None = None, timeout: float | None = None,
         allow_data_loss: bool = False, file_format: str | None = None, retries: int = 2, progress: bool = False,
         dashboard: bool = True, on_progress: Callable[[int, int, int], object] | None = None,
         on_start: Callable[[str | None], object] | None = None, connection_factory: ConnectionFactory | None = None,
         **overrides: Unpack[RecoveryOverrides]) -> ScanResult:
    """Scan a whole action-state topic (or dump) partition-parallel on Dask: what would a restore do to every key?

    - ``source``: ``kafka://host:port/topic``, ``fluss://host:port/db.table`` (one task per bucket), a dump
      file (a big Parquet file: one task per row group), a directory of dumps, a scan's output directory,
      or a :class:`ScanPlan` from :func:`plan_scan`.
    - ``recovery`` / the settings as keywords (``rule``, ``markers``, ``runtime``, ``store_flavour``, as
      every verb takes them): the restore every key is predicted under; by default the rule the runtime
      ships, and every record read as the rebuild window. Markers read from a checkpoint with its keyed state
      (``ai.checkpoint.read``) also give each key's replay plan, as the runtime restores it.
    - ``what_if``: other rules (names or rule objects, or one of them) to predict every key under as well, labelled as
      what-ifs (``ScanResult.what_if``). Columns are prefixed by the rules' names, the base rule first.
    - ``client``: None starts a ``LocalCluster`` (``workers`` processes, default one per core) and closes
      it afterwards; a scheduler address (``"tcp://host:8786"``) or a ``distributed.Client`` runs the scan
      on that cluster (which must answer within ``timeout`` seconds, as the source must; None: 10). Workers read
      their windows from the source themselves: records never pass through this process.
    - ``output``: a directory; each task also writes its records there as Parquet, hive-partitioned
      (``partition=N/``), and the result frames are saved beside them, so ``ai.load(DIR,
      business_keys=[...])`` and :meth:`ScanResult.open` reopen them without reading the source again.
    - ``retries``: re-runs of a task that raised; a window that still fails is listed in ``.failures``
      and the rest of the scan completes. A task whose worker died is rescheduled by Dask.
    - ``progress``: a tqdm bar of windows done and records read; ``on_progress(done, total, records)``
      is called after each window, ``on_start(dashboard_link_or_None)`` once the cluster is up.
    - ``dashboard``: serve Dask's dashboard for a LocalCluster while the scan runs (on a free port; ``on_start``
      gets its link, and it closes with the cluster). ``.dashboard`` keeps the link of a scheduler that outlives
      the scan (a scheduler address or a client given), None for a local cluster.
    - ``connection_factory``: Fluss only, replaces ``fluss.FlussConnection.create`` as in
      :func:`agent_inspect.load_fluss`; it is pickled to the workers.

    In a script, call it under ``if __name__ == "__main__":``: a ``LocalCluster`` starts its worker processes by
    importing the script again (multiprocessing's spawn), and unguarded each would start a scan of its own and
    fail ("Nanny failed to start"). A notebook needs no guard.

    For example::

        result = ai.scan("sample_logs/production.jsonl", markers=markers)   # or "kafka://broker:9092/topic"
        result.at_risk(20)
    """
    from agent_inspect.log import rule_mark
    from agent_inspect.recovery import Recovery, rebuild_start
    from agent_inspect.rules import resolve_rule

    if isinstance(what_if, str) or not isinstance(what_if, Sequence):
        what_if = (what_if,)   # one rule: "fixed" is that rule, not the rules 'f', 'i', 'x' …
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise InspectError(f"workers must be a positive number of processes (or None: one per core), not {workers!r}")
    if not isinstance(retries, int) or retries < 0:
        raise InspectError(f"retries must be 0 or more, not {retries!r}")
    timeout = resolve_timeout(timeout)
    check_timeout(timeout)   # the source's and a scheduler's: 0 would fail every connection at once
    carried = ("rule", "markers", "runtime", "store_flavour")
    given = {k: v for k, v in overrides.items() if v is not None}
    if recovery is not None:
        given = {**{k: v for k, v in recovery.given.items() if k in carried}, **given}
        extra = sorted(set(recovery.given) - set(carried))
    else:
        extra = sorted(set(given) - set(carried))
    if extra:
        raise InspectError(f"ai.scan predicts every key from the log itself: it takes {', '.join(carried)}, "
                           f"not {', '.join(extra)}")
    runtime = given.get("runtime", "auto")
    runtime = runtime if isinstance(runtime, str) else str(getattr(runtime, "name", runtime))
    if runtime not in RUNTIMES:
        raise InspectError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    if isinstance(source, ScanPlan) and given.get("markers") is None and source.markers is not None:
        given["markers"] = dict(source.markers)
    # resolved without the records (the workers read them): the runtime's own rule unless one is given
    settings = Recovery.resolve(None, None, **{**given, "runtime": None if runtime == "auto" else runtime})
    base: Any = settings.rule if settings.store_flavour != "auto" else given.get("rule", settings.rule.name)
    rules = (base, *(r for r in what_if if _rule_name(r) != _rule_name(base)))
    names = tuple(_rule_name(r) for r in rules)
    if len(set(names)) != len(names):
        raise InspectError(f"rules must be distinct, got {list(names)} (a rule is named by its name attribute: "
                           "give each rule class of yours its own)")
    for r in rules:
        if isinstance(r, str):
            resolve_rule(r)  # an unknown name fails here, not in every task
    markers = cast("MarkersLike", given.get("markers"))   # as the caller passed them
    out_dir = None if output is None else _writable_directory(output)
    plan = source if isinstance(source, ScanPlan) else plan_scan(
        source, markers, config=config, timeout=timeout, allow_data_loss=allow_data_loss, file_format=file_format,
        connection_factory=connection_factory)
    if _nothing_to_read(plan):   # said before a cluster starts (seconds), as every verb says an empty source
        raise empty_source(plan.source)
    merged = rebuild_start(settings.markers)
    if out_dir is not None:
        from agent_inspect.log import write_dataset_meta

        _outside_the_source(out_dir, plan)
        write_dataset_meta(out_dir, plan.spec, source=plan.source)
    options = ScanOptions(rules=rules, markers=merged, runtime=runtime, output=out_dir, plan_source=settings.plan_source)
    started = time.perf_counter()
    with _client(client, workers, dashboard, timeout) as (dask_client, local):
        link = _dashboard_link(dask_client) if dashboard else None
        if on_start is not None:
            on_start(link)
        if local:
            link = None   # a local cluster's dashboard closes with it: the result keeps no dead link
        done, failed = _run(dask_client, plan, options, retries=retries, progress=progress, on_progress=on_progress)
        # one runtime and store for the whole input, as ai.load of it infers them (windows that differ read again)
        options, done, runtime_words = _one_runtime(dask_client, plan, options, done, failed, retries=retries)
        done = _rejoin_split_keys(dask_client, plan, options, done, failed, retries=retries)
        fleet = _fleet_wide(dask_client, plan, options, done, failed, retries=retries)
    result = _assemble(plan, done, failed, names, merged, str(getattr(options.runtime, "name", options.runtime)),
                       out_dir, link, time.perf_counter() - started)
    result = replace(result, runtime_provenance=runtime_words)
    # what-ifs under the runtime and store flavour the windows' records showed (unknown before they were read)
    read_as = replace(_scanned_runtime(result.runtime), store_flavour=result.store_flavour)
    result = replace(result, what_if=tuple(n for n, r in zip(names, rules, strict=True) if rule_mark(r, read_as).what_if))
    if fleet is not None:
        result = _with_fleet_columns(result, fleet)
    if out_dir is not None:
        result.save(out_dir)
    return result


def _nothing_to_read(plan: ScanPlan) -> bool:
    """True when no window of ``plan`` holds a record: every partition's (bucket's) offsets start where they end,
    or every dump is empty (no bytes, blank lines, a Parquet file of no rows). A scan's output is read as it is."""
    if any(w.file_format == "dataset" for w in plan.windows):
        return False
    if plan.spec.kind != "file":
        return all(w.records_planned == 0 for w in plan.windows)
    return all(w.path is not None and file_kind(w.path) == FileKind.EMPTY for w in {w.path: w for w in plan.windows}.values())


def _writable_directory(output: str | os.PathLike[str]) -> str:
    """``output`` as an absolute path, once a file could be written there: checked before any work, so a scan
    never ends in a traceback from its last step. Directories made for the check are removed again."""
    from pathlib import Path

    out = Path(os.path.abspath(os.fspath(output)))
    made = [p for p in (out, *out.parents) if not p.exists()]
    probe = out / f".agent-inspect-{uuid.uuid4().hex[:8]}"
    if out.exists() and not out.is_dir():
        raise InspectError(f"cannot write the scan's output to {str(out)!r}: it is a file, not a directory; "
                           f"choose a directory you can write")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise InspectError(f"cannot write the scan's output to {str(out)!r}: {exc.strerror or exc}; "
                           f"choose a directory you can write") from None
    finally:
        for p in made:   # deepest first
            with contextlib.suppress(OSError):
                p.rmdir()
    return str(out)


def _outside_the_source(out_dir: str, plan: ScanPlan) -> None:
    """Refuse an output directory that is the directory scanned or inside it: sources are read-only, and its parts
    would be read as records of the source next time (a scan's output scanned into itself held every record twice)."""
    if plan.spec.kind != "file" or not os.path.isdir(plan.spec.location):
        return
    src = os.path.realpath(plan.spec.location)
    out = os.path.realpath(out_dir)
    if out == src or out.startswith(src.rstrip(os.sep) + os.sep):
        raise InspectError(f"cannot write the scan's output to {out_dir!r}: it is inside the directory scanned "
                           f"({plan.spec.location}), which is read-only; choose a directory outside it")


def _run(client: Any, plan: ScanPlan, options: ScanOptions, *, retries: int, progress: bool,
         on_progress: Callable[[int, int, int], object] | None) -> tuple[list[Any], list[dict[str, Any]]]:
    from distributed import as_completed

    from agent_inspect.log import SourceSpec  # noqa: F401 - the spec's class must import on workers too

    token = uuid.uuid4().hex[:8]
    spec = plan.spec
    futures = {client.submit(scan_window, spec, w, options, key=f"agent-inspect-scan-{token}-{i}",
                             retries=retries, pure=False): w for i, w in enumerate(plan.windows)}
    bar = None
    if progress:
        from agent_inspect.sources import progress_bar

        bar = progress_bar(total=len(futures), desc="scan", enabled=True, unit="window")
    done: list[Any] = []
    failed: list[dict[str, Any]] = []
    records = 0
    try:
        for fut in as_completed(list(futures)):
            window = futures[fut]
            if fut.status == "finished":
                try:
                    res = fut.result()
                except Exception as exc:  # noqa: BLE001 - lost between finishing and fetching
                    failed.append(_failure(window, exc))
                else:
                    done.append(res)
                    records += int(res.partition["records"])
            elif isinstance(fut.exception(), BrokenRuleError):   # every window fails alike: the rule's one line
                raise cast(BrokenRuleError, fut.exception())
            else:
                failed.append(_failure(window, fut.exception()))
            fut.release()
            if bar is not None:
                bar.update(1)
                bar.set_postfix(records=records, failed=len(failed))
            if on_progress is not None:
                on_progress(len(done) + len(failed), len(futures), records)
    except BaseException:
        # Ctrl-C (or any error here): cancel what is still queued or running, then let it propagate
        client.cancel(list(futures), force=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    return done, failed


def _in_key_order(keys: pd.DataFrame) -> bool:
    """True when ``keys`` is sorted by (partition, business_key) already."""
    if len(keys) < 2:
        return True
    import numpy as np

    part = keys["partition"].astype("Float64").fillna(np.inf).to_numpy(dtype="float64")
    names = keys["business_key"].astype(str).reset_index(drop=True)
    same = part[1:] == part[:-1]
    rising = (names.iloc[1:].reset_index(drop=True) > names.iloc[:-1]).to_numpy(dtype=bool)
    return bool((part[1:] >= part[:-1]).all() and rising[same].all())


def _assemble(plan: ScanPlan, done: list[Any], failed: list[dict[str, Any]], rules: tuple[str, ...],
              markers: Mapping[int, int] | None, runtime: str, output: str | None, link: str | None,
              seconds: float) -> ScanResult:
    cols = KEY_COLUMNS + [f"{r}_{c}" for r in rules for c in RULE_COLUMNS]   # when no window had a key
    # windows in partition order, each frame sorted by key: the concatenation is usually in order already,
    # and then it is not copied again by a sort (the client holds one compact row per key, nothing more)
    ordered = sorted(done, key=lambda r: (r.partition["partition"] is None, r.partition["partition"] or 0,
                                          str(r.partition["window"])))
    frames = [r.keys for r in ordered if len(r.keys)]
    keys = concat_keys(frames) if frames else pd.DataFrame(columns=cols)
    # a function listed only by rows a rejoin replaced is called by no key of the result
    unused = [c for c in keys.columns if CALLS_PREFIX in c and not keys[c].any()]
    if unused:
        keys = keys.drop(columns=unused)
    if not _in_key_order(keys):
        keys = keys.sort_values(["partition", "business_key"], kind="stable").reset_index(drop=True)
    dup = keys["business_key"].duplicated(keep=False)
    if dup.any():
        warnings.warn(f"{int(dup.sum())} rows of {keys.loc[dup, 'business_key'].nunique()} business keys come from "
                      f"more than one window (a key's records split across files?); their rows are per window",
                      stacklevel=3)
    parts = pd.DataFrame([r.partition for r in done])
    if len(parts):
        parts = parts.sort_values(["partition", "window"], kind="stable", na_position="last").reset_index(drop=True)
    errs = [r.errors for r in done if len(r.errors)]
    errors = pd.concat(errs, ignore_index=True) if errs else pd.DataFrame(columns=["partition", "offset", "state_key",
                                                                                     "error"])
    failures = pd.DataFrame(failed, columns=_FAILURE_COLUMNS)
    from agent_inspect.log import joined_flavour

    # the windows' flavours together (several joined by "+", as a log's that mixes key formats)
    flavour = joined_flavour(parts["store_flavour"].dropna()) if "store_flavour" in parts.columns else None
    return ScanResult(keys=keys, partitions=parts, errors=errors, failures=failures, source=plan.source, rules=rules,
                      markers=markers, runtime=runtime, output=output, dashboard=link, seconds=round(seconds, 3),
                      spec=plan.spec, store_flavour=flavour)

