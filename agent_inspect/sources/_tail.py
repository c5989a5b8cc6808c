"""Follow an action-state topic as it grows: assign + explicit offsets, bounded polls, read-only.

A :class:`KafkaTail` starts at the last ``last`` records of each partition (or at the first record
written at or after ``since_ms``) and hands out whatever arrived since the previous :meth:`KafkaTail.poll`,
at most ``max_records`` per call and after waiting at most ``timeout`` seconds. Like the loader it
never subscribes and never commits, so the broker keeps no consumer group for it. :meth:`KafkaTail.suspend`
closes the consumer for a while (no connection, no background fetching); the next poll opens a new one
at the positions reached. While librdkafka cannot reach the broker it keeps retrying; :attr:`KafkaTail.trouble`
says why nothing arrives. Records gone before the tail read them (retention, deleteRecords) are never skipped
silently: the tail reads on from the earliest retained offset and :attr:`KafkaTail.data_loss` says what it missed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import SourceError
from agent_inspect._glossary import plural
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources._kafka import (
    _FORCED,
    _SECRET_HINTS,
    _client,
    _consumer_only,
    _partitions,
    _watermarks,
    client_config,
)
from agent_inspect.sources._keys import business_key_filter, business_key_texts, candidate_partitions
from agent_inspect.sources._urls import resolve_timeout

if TYPE_CHECKING:
    from confluent_kafka import Consumer

__all__ = ["KafkaTail", "open_kafka_tail"]

MAX_POLL_RECORDS = 2_000  # one poll hands out at most this many records…
POLL_TIMEOUT = 0.2  # …after waiting at most this long (seconds) for the first of them
TROUBLE_FOR = 15.0  # a client error counts as trouble this long (seconds; librdkafka retries at most every 10 s)
ERRORS_KEPT = 20  # a broker down for hours reports a refused connection many times a second: keep the newest
GAPS_SHOWN = 10  # data_loss names this many of the newest gaps and counts the earlier ones


class KafkaTail:
    """A read-only follower of one topic; :meth:`poll` from one thread, :meth:`close` from any.

    For example::

        tail = ai.sources.open_kafka_tail("127.0.0.1:9092", "agent-action-state", last=100)
        batch = tail.poll()                            # new records since the last poll, read-only
        tail.close()
    """

    def __init__(self, consumer: Consumer | None, topic: str, starts: Mapping[int, int], info: SourceInfo,
                 keys: list[str] | None, errors: list[str], conf: Mapping[str, Any] | None = None) -> None:
        self._consumer: Any = consumer  # None while suspended
        self._conf = dict(conf) if conf is not None else None  # to reopen after suspend()
        self._topic = topic
        self._keep = business_key_filter(keys) if keys is not None else None
        self._errors = errors
        self._lock = threading.Lock()  # poll and close never run at once: librdkafka forbids it
        self._closed = False
        self._seen_errors = len(errors)
        self._trouble: tuple[float, str] | None = None  # (monotonic time, the client's newest error)
        self.info = info
        #: the next offset to read in each partition
        self.positions: dict[int, int] = dict(starts)
        self._gaps: list[str] = []  # the newest gaps, oldest first…
        self._earlier_gaps = 0  # …and how many came before them

    @property
    def data_loss(self) -> str | None:
        """Which records the tail could not read because they were gone (every gap since it opened), else None."""
        if not self._gaps:
            return None
        earlier = self._earlier_gaps
        return (f"records of topic {self._topic!r} were gone before the tail read them (retention or deleteRecords "
                f"removed them, or the topic was recreated): " + "; ".join(self._gaps)
                + (f"; and {plural(earlier, 'earlier gap')}" if earlier else ""))

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def trouble(self) -> str | None:
        """The client's newest error (a refused connection, every broker down …) while it keeps retrying;
        None once a record arrives or no error came for :data:`TROUBLE_FOR` seconds."""
        trouble = self._trouble
        if trouble is None or time.monotonic() - trouble[0] > TROUBLE_FOR:
            return None
        return trouble[1]

    @property
    def suspended(self) -> bool:
        """The consumer is closed until the next :meth:`poll` (see :meth:`suspend`)."""
        return self._consumer is None and not self._closed

    def poll(self, *, max_records: int = MAX_POLL_RECORDS, timeout: float = POLL_TIMEOUT) -> RawBatch:
        """The records that arrived since the last poll (at most ``max_records``; empty after ``timeout``)."""
        from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaError

        with self._lock:
            if self._closed:
                raise SourceError(f"the tail of topic {self._topic!r} is closed")
            if self._consumer is None:
                self._consumer = _assigned(self._topic, self.positions, self._conf or {})
            # consume(n, t) waits all of t unless n arrive: poll() returns with the first record, and
            # consume(…, 0) then takes what is already fetched, so a record shows without waiting out t.
            first = self._consumer.poll(max(0.0, timeout))
            messages = [] if first is None else [first]
            if first is not None and max_records > 1:
                messages += self._consumer.consume(max_records - 1, 0)
            self._note_errors()
        batch = RawBatch()
        gone: dict[int, int] = {}  # partition -> the offset whose records were gone
        for m in messages:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._AUTO_OFFSET_RESET:
                    gone[m.partition()] = m.offset()
                    continue
                if err.code() == KafkaError._PARTITION_EOF or err.retriable():
                    continue
                if err.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT):
                    continue  # librdkafka reconnects; the follower keeps polling
                raise SourceError(f"following topic {self._topic!r} failed: {err.str()}")
            kind, ts = m.timestamp()
            batch.append(m.partition(), m.offset(), None if kind == TIMESTAMP_NOT_AVAILABLE else ts,
                         m.key(), m.value())
            self.positions[m.partition()] = m.offset() + 1
        if gone:  # after the positions of this batch's records: the new assignment starts right after them
            with self._lock:
                if self._consumer is not None:
                    self._read_on_from_earliest(gone, timeout)
        if len(batch):
            self._trouble = None  # records arrive: the broker answers
        return self._keep(batch) if self._keep is not None and len(batch) else batch

    def _read_on_from_earliest(self, gone: Mapping[int, int], timeout: float) -> None:
        """The records at these positions are gone (retention, deleteRecords, a recreated topic): read on from
        each partition's earliest retained offset and say so in :attr:`data_loss`, with the earlier gaps."""
        from confluent_kafka import KafkaException, TopicPartition

        for p, asked in sorted(gone.items()):
            try:
                earliest, _ = self._consumer.get_watermark_offsets(TopicPartition(self._topic, p),
                                                                   timeout=max(1.0, timeout))
            except KafkaException:
                earliest = 0  # the broker did not say: read what it has from the start
            skipped = (f"{plural(earliest - asked, 'record')} skipped" if earliest > asked
                       else "the partition now ends before it")
            self._gaps.append(f"partition {p} offset {asked} ({skipped}, reading on from offset {earliest})")
            self.positions[p] = earliest
        if len(self._gaps) > GAPS_SHOWN:
            self._earlier_gaps += len(self._gaps) - GAPS_SHOWN
            del self._gaps[:-GAPS_SHOWN]
        self._consumer.assign([TopicPartition(self._topic, p, o) for p, o in self.positions.items()])

    def _note_errors(self) -> None:
        """Take the errors error_cb reported since the last poll as the current trouble (keeping the newest few)."""
        errors = self._errors
        if len(errors) > self._seen_errors:
            self._trouble = (time.monotonic(), errors[-1])
        if len(errors) > ERRORS_KEPT:
            del errors[:-ERRORS_KEPT]
        self._seen_errors = len(errors)

    def suspend(self) -> None:
        """Close the consumer until the next :meth:`poll`, which reopens it at :attr:`positions`."""
        with self._lock:
            if self._conf is None:
                return  # made without its configuration: it cannot reopen, so it stays open
            consumer, self._consumer = self._consumer, None
            if consumer is not None:
                consumer.close()

    def close(self) -> None:
        """Close the consumer (idempotent). Nothing was committed, so no group remains."""
        with self._lock:
            if not self._closed:
                self._closed = True
                consumer, self._consumer = self._consumer, None
                if consumer is not None:
                    consumer.close()


def open_kafka_tail(bootstrap: str | None, topic: str, *, last: int | None = None, since_ms: int | None = None,
                    business_keys: Iterable[str | int] | None = None, config: Mapping[str, Any] | None = None,
                    timeout: float | None = None) -> KafkaTail:
    """Start following ``topic``: from the last ``last`` records of each partition, or from ``since_ms``.

    With neither, only records written from now on arrive. ``business_keys`` reads only the partitions
    those keys hash to and keeps only their records. ``config`` passes librdkafka settings through;
    commits and topic auto-creation stay off.

    For example::

        tail = ai.sources.open_kafka_tail("127.0.0.1:9092", "agent-action-state", business_keys=["user-42"])
        live = ai.log.LiveLog(tail, window=1000)       # what ai.log.follow does
    """
    from confluent_kafka.admin import AdminClient

    if last is not None and since_ms is not None:
        raise SourceError("pass either last= or since_ms=, not both")
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 0):
        raise SourceError(f"last must be a number of records ≥ 0, not {last!r}")
    keys = business_key_texts(business_keys)   # one string is one key, an int its text: refused before I/O
    timeout = resolve_timeout(timeout)
    user, client, errors = client_config(bootstrap, config)
    admin = _client(AdminClient, {k: v for k, v in client.items() if not _consumer_only(k)})
    partitions = _partitions(admin, topic, timeout, errors, user["bootstrap.servers"])
    if keys is not None:
        partitions = sorted(candidate_partitions(keys, len(partitions)))
    earliest, latest = _watermarks(admin, topic, partitions, timeout, errors, user["bootstrap.servers"])
    if since_ms is not None:
        starts = _offsets_since(admin, topic, partitions, since_ms, earliest, latest, timeout)
    else:
        back = last or 0
        starts = {p: max(earliest[p], latest[p] - back) for p in partitions}
    public = {k: v for k, v in user.items() if isinstance(v, (str, int, float, bool))
              and not any(h in k.lower() for h in _SECRET_HINTS) and k != "bootstrap.servers"}
    options: dict[str, Any] = {"follow": True, "config": public}
    if keys is not None:
        options["business_keys"] = keys
    info = SourceInfo(kind="kafka", location=f"kafka://{user['bootstrap.servers']}/{topic}", topic=topic,
                      start_offsets=dict(starts), end_offsets=dict(latest), options=options)
    conf = {**client, **_FORCED, "enable.partition.eof": False}
    # Needed by the client, never joined: assign() takes no group membership and nothing is committed.
    conf.setdefault("group.id", f"agent-inspect-tail-{uuid.uuid4()}")
    return KafkaTail(_assigned(topic, starts, conf), topic, starts, info, keys, errors, conf)


def _assigned(topic: str, positions: Mapping[int, int], conf: Mapping[str, Any]) -> Any:
    """A consumer assigned to ``topic`` at ``positions`` (partition → next offset)."""
    from confluent_kafka import TopicPartition

    consumer = _client(_consumer_class(), dict(conf))
    consumer.assign([TopicPartition(topic, p, o) for p, o in positions.items()])
    return consumer


def _consumer_class() -> Any:
    from confluent_kafka import Consumer

    return Consumer


def _offsets_since(admin: Any, topic: str, partitions: list[int], since_ms: int, earliest: Mapping[int, int],
                   latest: Mapping[int, int], timeout: float) -> dict[int, int]:
    """Each partition's first offset whose timestamp is at or after ``since_ms`` (its end when none is)."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.for_timestamp(int(since_ms))
                                  for p in partitions}, request_timeout=timeout)
    out: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    for tp, fut in futures.items():
        try:
            offset = fut.result(max(0.05, deadline - time.monotonic())).offset
        except (KafkaException, TimeoutError) as exc:
            raise SourceError(f"could not find the offsets of topic {topic!r} since {since_ms} ms: {exc}") from None
        p = tp.partition
        out[p] = latest[p] if offset < 0 else min(max(offset, earliest[p]), latest[p])
    return out
