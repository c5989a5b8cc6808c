"""Parallel loads on Dask distributed: partition groups are read (Kafka) or built apart; the caller concatenates.

Every inference of the log builder is partition-local (key layouts by partition majority, value
formats from the business key, then the partition) and the upstream partitioner keeps a business key
in one partition, so groups of whole partitions built apart give exactly the single-process log. When
a business key does span groups and a value format was inferred from it, the log is built again in
one piece, so results never differ.

The work runs on Dask distributed, like a fleet scan (``agent_inspect.fleet``), never on a pool of our
own: ``workers=N`` starts a ``LocalCluster`` of N worker processes on 127.0.0.1 for the load and closes
it afterwards (or uses a ``distributed.Client`` given to :class:`Workers`). A Kafka load reads each
partition on a worker through the scan's windows (:func:`~agent_inspect.log.read_window`); records
already read (files, Fluss) are built per partition group on the workers.
"""

from __future__ import annotations

import gzip
import logging
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import InspectError, SourceError
from agent_inspect.log._build import concat_batches, physical_order
from agent_inspect.log._log import ActionStateLog
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources import progress_bar

if TYPE_CHECKING:
    import pandas as pd
    from distributed import Client, LocalCluster

__all__ = ["MIN_RECORDS", "Workers", "estimate_file_records", "plan_workers"]

#: Below this many (estimated) records ``workers=None`` loads in one process: starting a local Dask
#: cluster (worker interpreters importing pandas, pyarrow…) costs a few seconds.
MIN_RECORDS = 50_000
_MAX_AUTO = 8
_TASKS_PER_PROCESS = 4  # partition groups per process when building records already read


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def _have_dask() -> bool:
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


def plan_workers(workers: int | None, estimated_records: int) -> int:
    """How many processes a load uses: 1 = the caller alone, N > 1 = N Dask worker processes.

    ``workers=None`` uses the idle cores (usable cores minus the 1-minute load average, at most 8)
    when the load holds at least :data:`MIN_RECORDS` records and Dask distributed is installed, else 1:
    on a busy machine a worker only competes with the caller. An int is taken as given (1 = never parallel).
    """
    if workers is None:
        cores = _cores()
        if cores < 2 or estimated_records < MIN_RECORDS or not _have_dask():
            return 1
        return max(1, min(cores, _MAX_AUTO, int(cores - _load() + 0.5)))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SourceError(f"workers must be None (automatic) or a whole number of processes >= 1, not {workers!r}")
    return workers


def estimate_file_records(path: str | os.PathLike[str]) -> int:
    """A cheap record count for choosing ``workers``: Parquet metadata, else size / mean line length."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            if head == b"PAR1":
                import pyarrow.parquet as pq

                return int(pq.ParquetFile(path).metadata.num_rows)
            size = os.fstat(fh.fileno()).st_size
            fh.seek(0)
            if head[:2] == b"\x1f\x8b":
                sample = gzip.GzipFile(fileobj=fh).read(1 << 20)
                size *= 4  # a typical JSON compression ratio; only an estimate
            else:
                sample = fh.read(1 << 20)
    except Exception:  # noqa: BLE001 - the read itself reports unreadable files with a proper error
        return 0
    lines = sample.count(b"\n") or 1
    return int(size / max(len(sample) / lines, 1))


# ---------------------------------------------------------------------------------------------- tasks

def _build_records(raw: RawBatch, source: SourceInfo) -> pd.DataFrame:
    """A worker's share of a build: the records of whole partitions already read."""
    return ActionStateLog.from_raw(raw, source).records


def _read_part(spec: Any, window: Any, source: SourceInfo,
               allow_data_loss: bool) -> tuple[pd.DataFrame, RawBatch, dict[int, dict[str, int]]]:
    """A worker's share of a Kafka load: one partition's window, read and built there, and the gaps retention
    made while it was read (with ``allow_data_loss``; else those raise)."""
    from agent_inspect.log._window import read_window

    lost: dict[int, dict[str, int]] | None = {} if allow_data_loss else None
    log = read_window(spec, window, source=source, lost_into=lost)
    return log.records, log.raw, lost or {}


def _groups(sizes: Sequence[tuple[Any, int]], count: int) -> list[list[Any]]:
    """Contiguous groups of (item, size) with about equal total sizes, order kept; never an empty group."""
    total = sum(n for _, n in sizes) or 1
    count = max(1, min(count, len(sizes)))
    out: list[list[Any]] = []
    acc = 0
    for item, n in sizes:
        g = min(count - 1, int((acc + n / 2) * count / total))  # the group of the item's midpoint
        if not out or (g >= len(out) and out[-1]):
            out.append([])
        out[-1].append(item)
        acc += n
    return out


# ---------------------------------------------------------------------------------------------- workers

class Workers:
    """The Dask cluster of one load: ``processes`` local worker processes, or the ``client`` given.

    With one process and no client, everything runs in the caller. The local cluster starts on first
    use (127.0.0.1, no dashboard) and is closed on exit, also when the load fails or is interrupted
    (its queued and running tasks are cancelled first).
    """

    def __init__(self, processes: int, *, client: Client | None = None) -> None:
        self.processes = processes
        self._given = client
        self._client: Client | None = None
        self._cluster: LocalCluster | None = None
        self.closed = False

    @property
    def parallel(self) -> bool:
        """True when the work goes to Dask workers."""
        return self._given is not None or self.processes > 1

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the local cluster this load started (idempotent; a given client stays open)."""
        client, cluster, self._client, self._cluster = self._client, self._cluster, None, None
        try:
            if client is not None:
                client.close()
        finally:
            if cluster is not None:
                cluster.close()
            self.closed = True

    def dask(self) -> Client:
        """The ``distributed.Client`` of this load (a LocalCluster's, started now, unless one was given)."""
        if self._given is not None:
            return self._given
        if self._client is None:
            try:
                from distributed import Client, LocalCluster
            except ImportError:  # pragma: no cover - the scan extra is part of `all`
                raise InspectError("workers= needs Dask distributed: pip install 'agent_inspect[scan]', "
                                   "or load with workers=1") from None
            self._cluster = LocalCluster(n_workers=self.processes, threads_per_worker=1, processes=True,
                                         host="127.0.0.1", dashboard_address=None,
                                         scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                                         silence_logs=logging.CRITICAL)
            self._client = Client(self._cluster)
        return self._client

    # ------------------------------------------------------------------------------------------ loads

    def load_kafka(self, user: Mapping[str, Any], topic: str, source: SourceInfo, *, keys: list[str] | None,
                   timeout: float, progress: bool, allow_data_loss: bool = False) -> ActionStateLog:
        """Read and build the topic's planned ranges (``source`` start/end offsets), one task per partition;
        with ``allow_data_loss``, records retention deletes meanwhile are skipped and noted as ``load_kafka``
        notes them (``source.options["data_loss"]``)."""
        from agent_inspect.log._window import SourceSpec, Window

        spec = SourceSpec(kind="kafka", location=source.location, topic=topic,
                          bootstrap=str(user.get("bootstrap.servers")),
                          config={k: v for k, v in user.items() if k != "bootstrap.servers"}, timeout=timeout,
                          options=dict(source.options))
        windows = [Window(p, source.start_offsets[p], source.end_offsets[p],
                          keys=None if keys is None else tuple(keys))
                   for p in sorted(source.start_offsets) if source.end_offsets[p] > source.start_offsets[p]]
        total = sum(w.records_planned or 0 for w in windows)
        bar = progress_bar(total=total, desc=f"kafka {topic}", enabled=progress)
        try:
            parts = self._run([(_read_part, (spec, w, source, allow_data_loss), w.records_planned or 0)
                               for w in windows], bar)
        finally:
            bar.close()
        gaps = {p: gap for *_, lost in parts for p, gap in lost.items()}
        if gaps:
            source = replace(source, options={**source.options,
                                              "data_loss": {**source.options.get("data_loss", {}), **gaps}})
        return _assemble([(records, raw) for records, raw, _ in parts], source)

    def build(self, batches: RawBatch | Iterable[RawBatch], source: SourceInfo) -> ActionStateLog:
        """``ActionStateLog.from_raw`` of records already read, per partition group on the workers."""
        if not self.parallel:
            return ActionStateLog.from_raw(batches, source)
        raw = physical_order(concat_batches(batches))
        bounds = _partition_bounds(raw.partition)
        groups = _groups([(b, b[1] - b[0]) for b in bounds], _TASKS_PER_PROCESS * max(2, self.processes))
        slices = [(g[0][0], g[-1][1]) for g in groups if g]
        if len(slices) < 2:
            return ActionStateLog.from_raw(raw, source)
        shares = [_slice(raw, a, b) for a, b in slices]
        client = self.dask()
        scattered = client.scatter(shares)  # records go to the workers as data, not inside the task graph
        frames = self._run([(_build_records, (s, source), 0) for s in scattered], None)
        return _assemble(list(zip(frames, shares)), source)

    # ------------------------------------------------------------------------------------------ scheduling

    def _run(self, tasks: Sequence[tuple[Any, tuple[Any, ...], int]], bar: Any) -> list[Any]:
        """Run ``(function, args, records)`` tasks on Dask; results in task order. Cancelled on any error."""
        from distributed import as_completed

        client = self.dask()
        token = uuid.uuid4().hex[:8]
        futures = [client.submit(fn, *args, key=f"agent-inspect-load-{token}-{i}", pure=False)
                   for i, (fn, args, _) in enumerate(tasks)]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(futures)
        try:
            for fut in as_completed(futures):
                i = index[fut.key]
                try:
                    results[i] = fut.result()
                except InspectError:
                    raise
                except Exception as exc:  # noqa: BLE001 - one line, like every load error
                    first = str(exc).splitlines()[0] if str(exc) else ""
                    raise SourceError(f"a load task failed on Dask ({type(exc).__name__}: {first}); retry, "
                                      f"or load with workers=1") from None
                fut.release()
                if bar is not None:
                    bar.update(tasks[i][2])
        except BaseException:
            client.cancel(futures, force=True)  # Ctrl-C or a failed share: nothing keeps running
            raise
        return results


def _partition_bounds(partitions: list[int]) -> list[tuple[int, int]]:
    """``[start, end)`` row ranges of each partition of a sorted batch."""
    import numpy as np

    if not partitions:
        return []
    arr = np.asarray(partitions, dtype=np.int64)
    cuts = (np.flatnonzero(np.diff(arr)) + 1).tolist()
    edges = [0, *cuts, len(partitions)]
    return list(zip(edges[:-1], edges[1:]))


def _slice(raw: RawBatch, a: int, b: int) -> RawBatch:
    return RawBatch(raw.partition[a:b], raw.offset[a:b], raw.timestamp_ms[a:b], raw.key[a:b], raw.value[a:b],
                    None if raw.agent_key is None else raw.agent_key[a:b])


# ---------------------------------------------------------------------------------------------- assembly

def _assemble(parts: list[tuple[pd.DataFrame, RawBatch]], source: SourceInfo) -> ActionStateLog:
    """One log from parts of whole partitions in physical order; identical to building it in one piece."""

    parts = [p for p in parts if len(p[1])]
    raw = concat_batches([r for _, r in parts])
    if len(parts) < 2 or _crosses([f for f, _ in parts]):
        return ActionStateLog.from_raw(raw, source)
    return ActionStateLog(_concat_frames([f for f, _ in parts]), raw, source)


def _crosses(frames: list[pd.DataFrame]) -> bool:
    """True when a business key (or the missing key) spans parts and one of its value formats was inferred.

    Only then can the one-piece build differ: it tallies a key's pinned formats over all partitions.
    """
    owner: dict[Any, int] = {}
    shared: set[Any] = set()
    for i, f in enumerate(frames):
        col = f["business_key"]
        keys: set[Any] = set(col.dropna().unique().tolist())
        if col.isna().any():
            keys.add(None)
        for k in keys:
            if owner.setdefault(k, i) != i:
                shared.add(k)
    if not shared:
        return False
    named = shared - {None}
    for f in frames:
        inferred = f["value_format_inferred"].fillna(False).to_numpy(dtype=bool)
        if not inferred.any():
            continue
        keys_of = f["business_key"][inferred]
        if keys_of.isin(named).any() or (None in shared and keys_of.isna().any()):
            return True
    return False


def _concat_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    import pandas as pd

    data: dict[str, Any] = {}
    for name in frames[0].columns:
        cols = [f[name] for f in frames]
        if isinstance(cols[0].dtype, pd.CategoricalDtype):
            data[name] = _union_categorical(cols)
        else:
            data[name] = pd.concat(cols, ignore_index=True)
    out = pd.DataFrame(data, copy=False)
    out.index = pd.RangeIndex(len(out))
    return out


def _union_categorical(cols: list[pd.Series]) -> pd.Categorical:
    """Concatenate categoricals with categories in order of first appearance, as one build makes them."""
    import numpy as np
    import pandas as pd

    cats = [c.cat.categories for c in cols]
    filled = [c for c in cats if len(c)]
    base = filled[0] if filled else cats[0]
    if isinstance(base.dtype, pd.StringDtype):  # Arrow strings: hash the union in C, not per Python str
        import pyarrow as pa

        arrays = [pa.array(c.array) for c in cats]
        kind = pa.array(base.array).type
        # one dictionary over all parts' categories: its order is first appearance, its indices the mapping
        encoded = pa.chunked_array([a.cast(kind) for a in arrays], kind).dictionary_encode()
        union = encoded.chunks[-1].dictionary if encoded.num_chunks else pa.array([], kind)
        categories = pd.Index(pd.array(union, dtype=base.dtype))
        maps = [chunk.indices.to_numpy(zero_copy_only=False) for chunk in encoded.chunks]
        if len(maps) != len(cats):  # pyarrow drops empty chunks
            it = iter(maps)
            maps = [next(it) if len(c) else np.empty(0, np.int64) for c in cats]
    else:
        categories = pd.Index(list(dict.fromkeys(v for c in filled for v in c)), dtype=base.dtype)
        maps = [categories.get_indexer(c) if len(c) else np.empty(0, np.int64) for c in cats]
    codes = []
    for col, mapping in zip(cols, maps):
        own = col.cat.codes.to_numpy()
        codes.append(mapping.astype(np.int64)[np.maximum(own, 0)] if len(mapping) else np.full(len(own), -1))
        codes[-1][own < 0] = -1
    return pd.Categorical.from_codes(np.concatenate(codes) if codes else np.empty(0, np.int64),
                                     dtype=pd.CategoricalDtype(categories, ordered=False))
