"""Parallel loads: worker processes build the log per partition group; the parent concatenates.

Every inference of the log builder is partition-local (key layouts by partition majority, value
formats from the business key, then the partition) and the upstream partitioner keeps a business key
in one partition, so groups of whole partitions built apart give exactly the single-process log. When
a business key does span groups and a value format was inferred from it, the log is built again in
one piece, so results never differ. Workers are fresh interpreters started with ``subprocess`` (forking
a process that runs librdkafka threads is unsafe, and a user's unguarded ``__main__`` is never
re-imported), fed over pipes, and killed when the load ends, fails or is interrupted. Work is handed
out one partition group at a time, so the parent starts at once and a slow-starting worker takes less.

Why it is long: the parent's side and the worker's side of one pipe protocol live together, so the
message shapes are read in one place.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from agent_inspect import _errors
from agent_inspect._errors import InspectError, SourceError
from agent_inspect.log._build import concat_batches, physical_order
from agent_inspect.log._log import ActionStateLog
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources import ReadPlan, progress_bar, read_partitions

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MIN_RECORDS", "Workers", "estimate_file_records", "plan_workers"]

#: Below this many (estimated) records ``workers=None`` loads in one process: starting a worker
#: interpreter (pandas, pyarrow…) costs about a second.
MIN_RECORDS = 50_000
_MAX_AUTO = 8
_TASKS_PER_PROCESS = 4  # partition groups per process: small enough to balance a late-starting worker
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BOOT = "from agent_inspect.log._parallel import _serve; _serve()"


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


def plan_workers(workers: int | None, estimated_records: int) -> int:
    """How many processes (the caller's included) a load uses.

    ``workers=None`` uses the idle cores (usable cores minus the 1-minute load average, at most 8)
    when the load holds at least :data:`MIN_RECORDS` records, else 1: on a busy machine a worker only
    competes with the caller. An int is taken as given (1 = never parallel).
    """
    if workers is None:
        cores = _cores()
        if cores < 2 or estimated_records < MIN_RECORDS:
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

@dataclass(frozen=True)
class _KafkaShare:
    """Read these partitions' ranges with a consumer of its own, then build their part of the log."""

    user: Mapping[str, Any]
    topic: str
    start: Mapping[int, int]
    end: Mapping[int, int]
    keys: list[str] | None
    timeout: float
    source: SourceInfo


@dataclass(frozen=True)
class _BuildShare:
    """Build the part of the log of records already read (whole partitions, physical order)."""

    raw: RawBatch
    source: SourceInfo


_Part = tuple["pd.DataFrame", "RawBatch | None"]


def _execute(task: Any, bar: Any) -> _Part:
    """One task, the same in the parent and in a worker: the part's records (and raw, when read here)."""
    if isinstance(task, _KafkaShare):
        plan = ReadPlan(start=dict(task.start), end=dict(task.end))
        batches = list(read_partitions(task.user, task.topic, plan, keys=task.keys, timeout=task.timeout, bar=bar))
        log = ActionStateLog.from_raw(batches, task.source)
        return log.records, log.raw
    log = ActionStateLog.from_raw(task.raw, task.source)
    return log.records, None


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

class _Worker:
    """One worker interpreter and its two pipes."""

    def __init__(self) -> None:
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": _ROOT + (os.pathsep + path if path else "")}
        self.proc = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, close_fds=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.tx = Connection(os.dup(self.proc.stdin.fileno()), readable=False)
        self.rx = Connection(os.dup(self.proc.stdout.fileno()), writable=False)
        self.proc.stdin.close()
        self.proc.stdout.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for conn in (self.tx, self.rx):
            try:
                conn.close()
            except OSError:
                pass


class _SharedBar:
    """A progress bar several threads update (the parent's reads and the workers' counts)."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar
        self._lock = threading.Lock()

    def update(self, n: int) -> None:
        with self._lock:
            self._bar.update(n)

    def close(self) -> None:
        pass  # the owner closes the real bar once


class Workers:
    """A context-managed set of worker processes for one load; started on entry, killed on exit.

    ``Workers(processes)`` starts ``processes - 1`` workers (the caller is the first process), so
    they import while the caller plans or reads. ``wait=True`` makes the caller wait until every
    worker has taken a task (tests use it so that the worker path always runs).
    """

    def __init__(self, processes: int, *, wait: bool = False) -> None:
        self._wait = wait
        self._workers: list[_Worker] = []
        if os.name != "posix":  # the pipes are POSIX file descriptors; elsewhere the caller does all
            return
        try:
            for _ in range(max(0, processes - 1)):
                self._workers.append(_Worker())
        except OSError:
            pass  # no interpreter to start (embedded Python…): the caller does the work alone
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill every worker still running and reap it (idempotent)."""
        for w in self._workers:
            w.kill()

    # ------------------------------------------------------------------------------------------ loads

    def load_kafka(self, user: Mapping[str, Any], topic: str, source: SourceInfo, *, keys: list[str] | None,
                   timeout: float, progress: bool) -> ActionStateLog:
        """Read and build the topic's planned ranges (``source`` start/end offsets) per partition group."""
        sizes = [(p, source.end_offsets[p] - source.start_offsets[p]) for p in sorted(source.start_offsets)
                 if source.end_offsets[p] > source.start_offsets[p]]
        groups = _groups(sizes, _TASKS_PER_PROCESS * (len(self._workers) + 1))
        tasks = [_KafkaShare(user=dict(user), topic=topic, start={p: source.start_offsets[p] for p in g},
                             end={p: source.end_offsets[p] for p in g}, keys=keys, timeout=timeout, source=source)
                 for g in groups if g]
        bar = progress_bar(total=sum(n for _, n in sizes), desc=f"kafka {topic}", enabled=progress)
        try:
            parts = self._run(tasks, _SharedBar(bar))
        finally:
            bar.close()
        return _assemble([(records, raw) for records, raw in parts if raw is not None], source)

    def build(self, batches: RawBatch | Iterable[RawBatch], source: SourceInfo) -> ActionStateLog:
        """``ActionStateLog.from_raw`` of records already read, per partition group in parallel."""

        if not self._workers:
            return ActionStateLog.from_raw(batches, source)
        raw = physical_order(concat_batches(batches))
        bounds = _partition_bounds(raw.partition)
        groups = _groups([(b, b[1] - b[0]) for b in bounds], _TASKS_PER_PROCESS * (len(self._workers) + 1))
        slices = [(g[0][0], g[-1][1]) for g in groups if g]
        if len(slices) < 2:
            return ActionStateLog.from_raw(raw, source)
        shares = [_slice(raw, a, b) for a, b in slices]
        parts = self._run([_BuildShare(raw=s, source=source) for s in shares], None)
        return _assemble([(records, share) for (records, _), share in zip(parts, shares)], source)

    # ------------------------------------------------------------------------------------------ scheduling

    def _run(self, tasks: Sequence[Any], bar: Any) -> list[_Part]:
        """Run ``tasks`` on the caller and the workers, one at a time each, in the order given."""
        results: list[_Part | None] = [None] * len(tasks)
        pending = list(range(len(tasks)))
        lock = threading.Lock()
        busy = [False] * len(self._workers)
        started = [threading.Event() for _ in self._workers]
        state: dict[str, Any] = {"closed": False, "error": None}

        def take(w: int | None) -> int | None:
            with lock:
                if state["closed"] or state["error"] is not None or not pending:
                    return None
                if w is not None:
                    busy[w] = True
                return pending.pop(0)

        def fail(exc: BaseException) -> None:
            with lock:
                if state["error"] is None:
                    state["error"] = exc

        def pump(w: int, worker: _Worker) -> None:
            try:
                try:
                    _expect_ready(worker.rx.recv())
                except (InspectError, EOFError, OSError):
                    return  # a worker that never started only means less parallelism
                while (i := take(w)) is not None:
                    started[w].set()
                    worker.tx.send(("task", i, tasks[i]))
                    while True:
                        msg = worker.rx.recv()
                        if msg[0] == "progress" and bar is not None:
                            bar.update(msg[1])
                        elif msg[0] == "part":
                            results[i] = (msg[2], msg[3])
                            break
                        elif msg[0] == "error":
                            raise _worker_error(msg[1], msg[2])
                    with lock:
                        busy[w] = False
                worker.tx.send(("stop",))
            except InspectError as exc:
                fail(exc)
            except (EOFError, OSError):
                with lock:
                    lost = busy[w]
                if lost:  # killed while idle is the normal end; while working it is a failure
                    try:
                        code = worker.proc.wait(5)  # the pipe closes a moment before the exit status is known
                    except subprocess.TimeoutExpired:
                        code = None
                    fail(SourceError(f"a load worker process exited unexpectedly (exit code {code}); "
                                     f"retry, or load with workers=1"))
            except BaseException as exc:  # noqa: BLE001 - e.g. a part that does not unpickle
                fail(SourceError(f"a load worker's answer could not be read ({type(exc).__name__}); "
                                 f"retry, or load with workers=1"))
            finally:
                started[w].set()

        threads = [threading.Thread(target=pump, args=(w, worker), daemon=True, name=f"agent-inspect-load-{w}")
                   for w, worker in enumerate(self._workers)]
        for t in threads:
            t.start()
        try:
            if self._wait:
                for event in started:
                    event.wait()
            while (i := take(None)) is not None:
                results[i] = _execute(tasks[i], bar)
            with lock:
                state["closed"] = True
                idle = [w for w in range(len(self._workers)) if not busy[w]]
            for w in idle:
                self._workers[w].kill()
            for t in threads:
                t.join()
        finally:
            with lock:
                state["closed"] = True
            self.close()
            for t in threads:
                t.join()
        if state["error"] is not None:
            raise state["error"]
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]


def _expect_ready(msg: Any) -> None:
    if msg[0] == "error":
        raise _worker_error(msg[1], msg[2])


def _worker_error(name: str, message: str) -> InspectError:
    cls = getattr(_errors, name, None)
    if isinstance(cls, type) and issubclass(cls, InspectError):
        return cls(message)
    return SourceError(f"a load worker failed ({message}); retry, or load with workers=1")


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


# ---------------------------------------------------------------------------------------------- worker side

class _Progress:
    """The worker's bar: counts go to the parent, which shows one bar for the whole load."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def update(self, n: int) -> None:
        self._conn.send(("progress", n))

    def close(self) -> None:
        pass


def _serve() -> None:
    """Worker main loop: take tasks from stdin, send parts (or one error) to stdout, until told to stop."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it kills workers on interrupt
    rx = Connection(os.dup(0), writable=False)
    tx = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # a stray print must not corrupt the channel
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    try:
        import agent_inspect.log  # noqa: F401 - pay the import before taking work

        tx.send(("ready",))
        bar = _Progress(tx)
        while True:
            msg = rx.recv()
            if msg[0] != "task":
                return
            _, index, task = msg
            records, raw = _execute(task, bar)
            tx.send(("part", index, records, raw))
    except (EOFError, BrokenPipeError):
        return  # the parent is gone or done with us
    except InspectError as exc:
        tx.send(("error", type(exc).__name__, str(exc)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        tx.send(("error", "", f"{type(exc).__name__}: {first}"))
