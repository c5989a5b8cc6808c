"""The builder's reading thread: reads the batches, hands each to the decoder, then works on the keys of all of them.

A source still reading hands its batches over one by one (Kafka fetches in the background). Reading in a thread of
its own lets the decoder work while the source waits for data, and lets the key columns, which need every key in
physical order, start as soon as the last batch is read instead of after the last batch is decoded: a Kafka read
ends well before the decode does, so the key work (Arrow, mostly without the GIL) runs beside the decode of the
batches still queued rather than after it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np
import pyarrow as pa

from agent_inspect.log._columns import concat_columns, slice_columns, take_columns
from agent_inspect.raw import RawBatch

__all__ = ["KEYS", "PARTITIONS", "OFFSETS", "Layout", "Reader", "order_of"]

KEYS, PARTITIONS, OFFSETS = "_keys", "_partitions", "_offsets"
"""The position columns of :attr:`Layout.positions`: keys (Arrow binary), partitions and offsets (int64)."""

T = TypeVar("T")


class Layout(NamedTuple):
    """Where every record read goes, known once the last batch is read."""

    pieces: list[tuple[int, int, int]]
    """``(batch number in arrival order, start, end)``: slices of the batches that, joined, are in physical order
    (up to :attr:`order`)."""
    order: list[int] | None
    """A permutation the joined pieces still need (offsets out of order in a partition, or runs too short to bucket)."""
    positions: dict[str, Any]
    """The position columns (:data:`KEYS`, :data:`PARTITIONS`, :data:`OFFSETS`) of every record, in physical order."""
    with_agent_key: bool
    """Whether any batch has the agent key column."""


class Reader(Generic[T]):
    """Reads ``batches`` in a thread; iterate it for the batches as they are read, then take :attr:`layout`.

    After the last batch the thread runs ``then(layout)``; :meth:`result` waits for it. An error of the source
    comes out of the iteration, after the batches read before it; an error of ``then`` out of :meth:`result`.
    :meth:`close` stops the reading (the source is closed in the thread that reads it).
    """

    def __init__(self, batches: Iterable[RawBatch], then: Callable[[Layout], T]) -> None:
        self._batches = batches
        self._then = then
        self._handoff: queue.SimpleQueue[RawBatch | Layout | BaseException] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._outcome: list[Any] = []
        self.layout: Layout | None = None
        self._thread = threading.Thread(target=self._run, name="agent-inspect-read", daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[RawBatch]:
        while True:
            item = self._handoff.get()
            if isinstance(item, RawBatch):
                yield item
            elif isinstance(item, Layout):
                self.layout = item
                return
            else:
                raise item

    def result(self) -> T:
        """What ``then`` returned (its error raised here)."""
        self._thread.join()
        kind, value = self._outcome
        if kind == "error":
            raise value
        return value  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop reading after the batch at hand (a no-op once the last batch is read)."""
        self._stop.set()

    def _run(self) -> None:
        try:
            layout = self._read_all()
        except BaseException as exc:  # noqa: BLE001 - raised again in the decoding thread
            self._outcome[:] = ["error", exc]
            self._handoff.put(exc)
            return
        if layout is None:  # stopped: nobody waits for the rest
            self._outcome[:] = ["error", RuntimeError("the read was stopped")]
            return
        self._handoff.put(layout)
        try:
            self._outcome[:] = ["done", self._then(layout)]
        except BaseException as exc:  # noqa: BLE001 - raised again by result()
            self._outcome[:] = ["error", exc]

    def _read_all(self) -> Layout | None:
        source = iter(self._batches)
        try:
            return self._read(source)
        finally:
            close = getattr(source, "close", None)
            if close is not None:  # a stopped generator releases its client here, in the thread that ran it
                close()

    def _read(self, source: Iterator[RawBatch]) -> Layout | None:
        arrival: list[tuple[RawBatch, dict[str, Any]]] = []
        buckets: dict[int, list[tuple[int, int, int]]] = {}
        bucketed = True
        for b in source:
            if self._stop.is_set():
                return None
            self._handoff.put(b)  # the decoder starts on it at once
            where = {KEYS: pa.array(b.key, pa.binary()), PARTITIONS: np.asarray(b.partition, dtype=np.int64),
                     OFFSETS: np.asarray(b.offset, dtype=np.int64)}
            number = len(arrival)
            arrival.append((b, where))
            runs = _partition_runs(where[PARTITIONS]) if bucketed else None
            if runs is None:
                bucketed = False
                continue
            for p, a, z in runs:
                buckets.setdefault(p, []).append((number, a, z))
        # Batches may mix partitions (Kafka chunks): their runs go to their partition's bucket, so the buckets in
        # partition order are the physical order.
        pieces = [piece for p in sorted(buckets) for piece in buckets[p]] if bucketed else \
            [(i, 0, len(b)) for i, (b, _) in enumerate(arrival)]
        positions = _joined_positions(arrival, pieces)
        order = order_of(positions[PARTITIONS], positions[OFFSETS])
        if order is not None:
            positions = take_columns(positions, order)
        return Layout(pieces, order, positions, any(b.agent_key is not None for b, _ in arrival))


def order_of(part: np.ndarray, off: np.ndarray) -> list[int] | None:
    """The permutation into physical order (partitions ascending, then offset; stable), None if already so."""
    if len(part) < 2:
        return None
    dp, do = np.diff(part), np.diff(off)
    if bool(np.all((dp > 0) | ((dp == 0) & (do >= 0)))):
        return None
    order: list[int] = np.lexsort((off, part)).tolist()
    return order


def _partition_runs(part: np.ndarray) -> list[tuple[int, int, int]] | None:
    """``(partition, start, end)`` of each run of one partition, or None when runs are too short to pay."""
    n = len(part)
    if n == 0:
        return []
    cuts = np.flatnonzero(part[1:] != part[:-1]) + 1
    if len(cuts) > n // 64 + 8:
        return None
    bounds = [0, *cuts.tolist(), n]
    return [(int(part[a]), a, z) for a, z in zip(bounds, bounds[1:])]


def _joined_positions(arrival: list[tuple[RawBatch, dict[str, Any]]],
                      pieces: list[tuple[int, int, int]]) -> dict[str, Any]:
    if not pieces:
        return {KEYS: pa.array([], pa.binary()), PARTITIONS: np.zeros(0, dtype=np.int64),
                OFFSETS: np.zeros(0, dtype=np.int64)}
    if len(arrival) == 1 and [a for _, a, _ in pieces] == [0, *(z for _, _, z in pieces[:-1])] \
            and pieces[-1][2] == len(arrival[0][0]):  # one batch's runs in order, all of it: taken as is
        return arrival[0][1]
    return concat_columns([slice_columns(arrival[i][1], a, z) for i, a, z in pieces], [z - a for _, a, z in pieces])
