"""Read an action-state topic with confluent-kafka: assign + explicit offsets, bounded, read-only."""

from __future__ import annotations

import logging
import operator
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from agent_inspect._bulk import gc_paused
from agent_inspect._errors import BrokerUnreachable, DataLossError, SourceError
from agent_inspect._glossary import did_you_mean
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources._keys import business_key_filter, candidate_partitions
from agent_inspect.sources._offsets import (
    DataLossNotes,
    ReadPlan,
    check_kafka_markers,
    merge_markers,
    plan_reads,
    read_options,
    versioned_marker_topic_ids,
)
from agent_inspect.sources._progress import progress_bar
from agent_inspect.sources._urls import resolve_timeout

if TYPE_CHECKING:
    from agent_inspect._types import MarkersLike
    from agent_inspect.sources._progress import Counter

__all__ = ["open_kafka", "read_partitions", "client_config"]

_LOG = logging.getLogger("agent_inspect.sources.kafka")
_LOG.addHandler(logging.NullHandler())  # librdkafka chatter goes here, never to stderr unless the user asks

# Settings that keep a load read-only and bounded; they override the caller's config. auto.offset.reset=error:
# librdkafka's default jumps to the END of a partition whose records at the read position are gone (retention,
# deleteRecords, a recreated topic), skipping them without a word; "error" reports it instead.
_FORCED = {"enable.auto.commit": False, "enable.auto.offset.store": False, "enable.partition.eof": True,
           "allow.auto.create.topics": False, "auto.offset.reset": "error"}
# fetch.queue.backoff.ms: the log builder decodes each chunk while librdkafka fetches the next; once the
# local queue is full, librdkafka's default waits a whole second before fetching again.
_DEFAULTS = {"fetch.wait.max.ms": 10, "fetch.queue.backoff.ms": 5, "client.id": "agent-inspect",
             "socket.keepalive.enable": True}
_BATCH = 10_000
_WAIT = 0.05  # seconds a consume() may wait to fill its count; a short wait hands over what arrived
_SECRET_HINTS = ("password", "secret", "jaas", "token", "key")


def open_kafka(bootstrap: str | None, topic: str, *, markers: MarkersLike = None,
               start_offsets: Mapping[int, int] | None = None, business_keys: Iterable[str] | None = None,
               config: Mapping[str, Any] | None = None, progress: bool = True, timeout: float | None = None,
               allow_data_loss: bool = False, other_keys: set[str] | None = None
               ) -> tuple[Iterator[RawBatch], SourceInfo]:
    """Plan the read (metadata, watermarks, markers) now; return the lazy batches and the source info.

    With ``business_keys``, ``other_keys`` (a set, filled as the batches are read) collects the business keys of
    the records read but left out: a missing key's close matches.

    For example::

        batches, info = ai.sources.open_kafka("127.0.0.1:9092", "agent-action-state", markers=[{0: 120}])
        log = ai.log.build_log(batches, info)          # what ai.load_kafka does
    """
    from confluent_kafka.admin import AdminClient

    if markers is not None and start_offsets is not None:
        raise SourceError("pass either markers or start_offsets, not both")
    timeout = resolve_timeout(timeout)
    user, client, errors = client_config(bootstrap, config)
    where = f"topic {topic!r}"

    admin = _client(AdminClient, {k: v for k, v in client.items() if not _consumer_only(k)})
    partitions = _partitions(admin, topic, timeout, errors, user["bootstrap.servers"])
    earliest, latest = _watermarks(admin, topic, partitions, timeout, errors, user["bootstrap.servers"])

    if markers is not None:
        topic_id = _topic_id(admin, topic, timeout) if versioned_marker_topic_ids(markers) else None
        check_kafka_markers(markers, topic=topic, topic_id=topic_id, partitions=partitions)
    merged = merge_markers(markers, topic=topic) if markers is not None else None
    starts = merge_markers(start_offsets) if start_offsets is not None else None
    keys = list(business_keys) if business_keys is not None else None
    only = candidate_partitions(keys, len(partitions)) if keys is not None else None
    plan = plan_reads(partitions=partitions, earliest=earliest, latest=latest, markers=merged,
                      start_offsets=starts, only=only, allow_data_loss=allow_data_loss, what="partition", where=where)
    public = {k: v for k, v in user.items() if isinstance(v, (str, int, float, bool))
              and not any(h in k.lower() for h in _SECRET_HINTS) and k != "bootstrap.servers"}
    options = read_options(plan, markers=merged, start_offsets=starts, business_keys=keys, config=public)
    options["log_start"] = {p: earliest[p] for p in sorted(plan.start)}  # what a rebuild can still read
    info = SourceInfo(kind="kafka", location=f"kafka://{user['bootstrap.servers']}/{topic}", topic=topic,
                      start_offsets=dict(plan.start), end_offsets=dict(plan.end), options=options)
    consumer_conf = {**client, **_FORCED}
    consumer_conf.setdefault("group.id", f"agent-inspect-{uuid.uuid4()}")
    lost: DataLossNotes | None = {} if allow_data_loss else None
    batches = _read(consumer_conf, topic, plan, keys, progress, timeout, errors, others=other_keys, lost_into=lost)
    return (batches if lost is None else _noting_loss(batches, lost, options)), info


def _noting_loss(batches: Iterator[RawBatch], lost: DataLossNotes, options: dict[str, Any]) -> Iterator[RawBatch]:
    """``batches``, then the gaps retention made while they were read added to the source's ``data_loss``."""
    try:
        yield from batches
    finally:
        if lost:
            options["data_loss"] = {**options.get("data_loss", {}), **lost}


def client_config(bootstrap: str | None, config: Mapping[str, Any] | None
                  ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(the user's settings, the client's full config, the list its error callback fills)."""
    user = dict(config or {})
    if bootstrap:
        user["bootstrap.servers"] = bootstrap
    if not user.get("bootstrap.servers"):
        raise SourceError("no Kafka bootstrap servers: use kafka://host:port/topic "
                          "or config={'bootstrap.servers': …}")
    errors: list[str] = []
    client = {**_DEFAULTS, "logger": _Logger(errors), **user, "error_cb": lambda err: errors.append(err.str())}
    return user, client, errors


class _Logger:
    """librdkafka's log lines go to ``_LOG``; a dropped connection while the client first asks the peer's API
    versions (a TLS listener reached in plain text) is only logged, never sent to error_cb: it goes to ``errors``
    too, so :func:`_unreachable` can say what answered."""

    def __init__(self, errors: list[str]) -> None:
        self._errors = errors

    def log(self, level: int, msg: str, *args: Any) -> None:
        _LOG.log(level, msg, *args)
        text = str(args[-1]) if args else msg
        if _not_kafka([text]):
            self._errors.append(text)


def _client(make: Any, conf: dict[str, Any]) -> Any:
    from confluent_kafka import KafkaException

    try:
        return make(conf)
    except (KafkaException, TypeError, ValueError) as exc:
        err = exc.args[0] if exc.args else exc
        raise SourceError(f"bad Kafka client config: {err.str() if hasattr(err, 'str') else err}; "
                          f"see librdkafka's CONFIGURATION.md") from None


def _consumer_only(key: str) -> bool:
    return key in {"group.id", "enable.auto.commit", "enable.auto.offset.store", "enable.partition.eof",
                   "auto.offset.reset", "fetch.wait.max.ms", "fetch.queue.backoff.ms", "isolation.level",
                   "allow.auto.create.topics",
                   "queued.max.messages.kbytes", "fetch.max.bytes", "max.partition.fetch.bytes",
                   "fetch.min.bytes", "session.timeout.ms", "group.instance.id", "partition.assignment.strategy"}


def _unreachable(bootstrap: str, timeout: float, errors: list[str], exc: BaseException | None = None,
                 client: Any = None) -> BrokerUnreachable:
    if client is not None:
        client.poll(0)  # serves error_cb, which holds the concrete reason (refused, timed out, auth…)
    if errors:
        reason = errors[-1]
    elif exc is not None and exc.args and hasattr(exc.args[0], "str"):
        reason = exc.args[0].str()
    else:
        reason = str(exc) if exc is not None else "no answer"
    unresolved = [e for e in errors if "failed to resolve" in e.lower()]
    if unresolved and not any("refused" in e.lower() for e in errors):   # "brokers are down": none was found
        return BrokerUnreachable(f"Kafka at {bootstrap}: no such host ({unresolved[-1]}); "
                                 f"check the host name in the address")
    mismatch = [e for e in errors if _not_kafka([e])]
    if mismatch:   # librdkafka's "increase receive.message.max.bytes" is no help when the peer is not Kafka
        said = (f"what answers at {bootstrap} is not a Kafka broker "
                f"({_LIBRDKAFKA_ADVICE.sub('', mismatch[-1])}); check the port, or a TLS or SASL listener needs ")
        return BrokerUnreachable(f"{said}config={{'security.protocol': …}}",
                                 cli=f"{said}ai.load_kafka(..., config={{'security.protocol': …}}) in Python")
    if _refused(errors):
        return BrokerUnreachable(f"Kafka at {bootstrap} refused the connection ({reason}); "
                                 f"check the address and that the broker is running")
    said = f"Kafka at {bootstrap} did not answer within {timeout:g}s ({reason}); check the address, network and " \
           "security settings, or raise"
    return BrokerUnreachable(f"{said} timeout=", cli=f"{said} --timeout")


_METADATA_SLICE = 0.25


def _refused(errors: list[str]) -> bool:
    """No broker took the connection, or none answered as Kafka (librdkafka says so within milliseconds)."""
    return any("refused" in e.lower() or "brokers are down" in e.lower() for e in errors)


_LIBRDKAFKA_ADVICE = re.compile(r": increase receive\.message\.max\.bytes")


def _not_kafka(errors: Iterable[str]) -> bool:
    """librdkafka's words for a peer that answered, but not as a Kafka broker: a reply no Kafka response starts
    with (an HTTP server's "HTTP" read as a size: "Invalid response size 1213486160"), a connection dropped while
    asking its API versions (a TLS listener given plain text), or a TLS handshake that failed."""
    for error in errors:
        e = error.lower()
        if "invalid response size" in e or "ssl handshake failed" in e or (
                "disconnected" in e and "apiversion" in e and "timed out" not in e):
            return True
    return False


_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


def _partitions(admin: Any, topic: str, timeout: float, errors: list[str], bootstrap: str) -> list[int]:
    from confluent_kafka import KafkaException

    if not _TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):   # Kafka's own rule: no broker has such a topic
        shown = topic if len(topic) <= 60 else f"{topic[:56]}…"
        raise SourceError(f"{shown!r} is not a Kafka topic name: use 1 to 249 letters, digits, '.', '_' or '-'")
    # list_topics() with no argument: naming the topic would auto-create it on some brokers. Asked in
    # short slices so that a refused connection (reported at once through error_cb) fails at once
    # instead of after the whole timeout.
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            meta = admin.list_topics(timeout=max(0.05, min(_METADATA_SLICE, left)))
            break
        except KafkaException as exc:
            admin.poll(0)  # serves error_cb
            if left <= _METADATA_SLICE or _refused(errors):
                raise _unreachable(bootstrap, timeout, errors, exc, admin) from None
    found = meta.topics.get(topic)
    if found is None:
        raise SourceError(f"topic {topic!r} does not exist on {bootstrap}; check the topic name"
                          + did_you_mean([topic], meta.topics))
    if found.error is not None:
        raise SourceError(f"topic {topic!r} metadata error: {found.error.str()}")
    return sorted(found.partitions)


def _topic_id(admin: Any, topic: str, timeout: float) -> str | None:
    """The topic's id as Kafka prints it (base64), or None when the broker does not say."""
    from confluent_kafka import KafkaException, TopicCollection

    try:
        future = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout)[topic]
        found = future.result(timeout).topic_id
    except (KafkaException, TimeoutError, AttributeError, KeyError):
        return None
    return None if found is None else str(found)


def _watermarks(admin: Any, topic: str, partitions: list[int], timeout: float, errors: list[str],
                bootstrap: str) -> tuple[dict[int, int], dict[int, int]]:
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    out: list[dict[int, int]] = []
    for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
        futures = admin.list_offsets({TopicPartition(topic, p): spec for p in partitions},
                                     request_timeout=timeout)
        got: dict[int, int] = {}
        try:
            for tp, fut in futures.items():
                got[tp.partition] = fut.result(timeout).offset
        except KafkaException as exc:
            raise SourceError(f"could not list offsets of topic {topic!r}: {exc.args[0].str()}") from None
        except TimeoutError as exc:
            raise _unreachable(bootstrap, timeout, errors, exc, admin) from None
        out.append(got)
    return out[0], out[1]


def read_partitions(user: Mapping[str, Any], topic: str, plan: ReadPlan, *, keys: list[str] | None,
                    timeout: float, bar: Counter | None,
                    lost_into: DataLossNotes | None = None) -> Iterator[RawBatch]:
    """Read ``plan``'s ranges with a consumer of its own (one share of a parallel load); counts go to ``bar``.

    ``user`` is the client config with ``bootstrap.servers``, as :func:`open_kafka` builds it. Records that
    retention deletes while they are read raise :class:`~agent_inspect.DataLossError`, unless ``lost_into`` is a
    dict (a load with ``allow_data_loss``): then the read goes on from the earliest retained offset and
    ``lost_into`` notes each gap by partition, as ``SourceInfo.options["data_loss"]`` does.

    For example::

        plan = ai.sources.ReadPlan(start={0: 0}, end={0: 500})
        for batch in ai.sources.read_partitions({"bootstrap.servers": "127.0.0.1:9092"}, "agent-action-state",
                                                plan, keys=None, timeout=10.0, bar=None):
            print(len(batch.offset))
    """
    errors: list[str] = []
    conf = {**_DEFAULTS, "logger": _LOG, **user, "error_cb": lambda err: errors.append(err.str()), **_FORCED}
    conf.setdefault("group.id", f"agent-inspect-{uuid.uuid4()}")
    return _read(conf, topic, plan, keys, False, timeout, errors, bar=bar, lost_into=lost_into)


def _read(conf: dict[str, Any], topic: str, plan: ReadPlan, keys: list[str] | None, progress: bool,
          timeout: float, errors: list[str], *, bar: Any = None, others: set[str] | None = None,
          lost_into: DataLossNotes | None = None) -> Iterator[RawBatch]:
    """``lost_into``: with allow_data_loss, where the gaps of records deleted mid-read are noted, by partition."""
    from confluent_kafka import Consumer, TopicPartition

    end = dict(plan.end)
    remaining = {p for p in plan.start if plan.start[p] < end[p]}
    if not remaining:
        return
    keep = business_key_filter(keys, others=others) if keys is not None else None
    consumer = _client(Consumer, conf)
    own_bar = bar is None
    if own_bar:
        bar = progress_bar(total=plan.total, desc=f"kafka {topic}", enabled=progress)
    try:
        consumer.assign([TopicPartition(topic, p, plan.start[p]) for p in sorted(remaining)])
        last_progress = time.monotonic()
        position = dict(plan.start)
        while remaining:
            # Ask for no more than is left: consume() waits its whole timeout for a count it cannot fill
            left = sum(end[p] - position[p] for p in remaining)
            messages = consumer.consume(max(1, min(_BATCH, left)), _WAIT)
            if not messages:
                if time.monotonic() - last_progress > timeout:
                    said = (f"Kafka stopped answering while reading topic {topic!r} (nothing for {timeout:g}s; "
                            f"{errors[-1] if errors else 'no error reported'}); retry or raise")
                    raise BrokerUnreachable(f"{said} timeout=", cli=f"{said} --timeout")
                continue
            last_progress = time.monotonic()
            gone: dict[int, int] = {}
            with gc_paused():
                batch, done, last = _collect(messages, remaining, end, topic, gone)
            position.update((p, o + 1) for p, o in last.items())
            if gone:
                _read_on(consumer, topic, gone, remaining, end, position, lost_into, timeout)
            if done and remaining:
                consumer.pause([TopicPartition(topic, p) for p in done])
            bar.update(len(batch))
            if keep is not None:
                batch = keep(batch)
            # Each consumed chunk goes out at once: the log builder decodes it while librdkafka
            # fetches the next one. Chunks mix partitions; the builder restores physical order.
            if len(batch):
                yield batch
    finally:
        if own_bar:
            bar.close()
        consumer.close()


def _read_on(consumer: Any, topic: str, gone: Mapping[int, int], remaining: set[int], end: Mapping[int, int],
             position: dict[int, int], lost_into: DataLossNotes | None, timeout: float) -> None:
    """Records at ``gone``'s offsets were deleted while read: :class:`DataLossError`, or with allow_data_loss
    (``lost_into``) read on from the earliest retained offset, noted there like a planned gap."""
    from confluent_kafka import KafkaException, TopicPartition

    for p, asked in sorted(gone.items()):
        earliest = -1
        if lost_into is not None:
            try:
                earliest = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[0]
            except KafkaException:
                pass
        where = f"data loss in partition {p} of topic {topic!r}: offset {asked}"
        if lost_into is None or earliest < 0:
            raise DataLossError(f"{where} is no longer retained (retention or deleteRecords removed it while this "
                                f"load read it, or the topic was recreated); load again, or pass allow_data_loss=True "
                                f"to read on from the earliest retained offset")
        if earliest <= asked:  # not deleted below the position: the partition now ends before it
            raise DataLossError(f"{where} is past the partition's end now (the topic was recreated or truncated "
                                f"while this load read it); load again")
        lost_into[p] = {"asked": asked, "read_from": earliest}
        if earliest >= end[p]:
            remaining.discard(p)  # everything it still had to read is gone
        else:
            position[p] = earliest
    consumer.assign([TopicPartition(topic, p, position[p]) for p in sorted(remaining)])


_IS_NONE = partial(operator.is_, None)
_KIND, _MILLIS = itemgetter(0), itemgetter(1)


def _collect(messages: list[Any], remaining: set[int], end: Mapping[int, int],
             topic: str, gone: dict[int, int]) -> tuple[RawBatch, list[int], dict[int, int]]:
    """One consumed chunk (not empty) as a batch, each partition up to its end.

    Returns the batch, the partitions it finished (they leave ``remaining``) and each partition's last offset in it.
    ``gone`` gets each partition whose records at the read position were deleted (partition -> that offset).
    """
    from confluent_kafka import TIMESTAMP_NOT_AVAILABLE

    # The common chunk (no errors or EOF events, every record inside its partition's range) is taken in one pass
    # that touches each message once, then split into columns: about a fifth cheaper than one map() pass per field.
    # (no tuple.count(None): KafkaError's == against None raises inside confluent-kafka)
    errors, parts, offsets, stamps, keys, values = zip(
        *[(m.error(), m.partition(), m.offset(), m.timestamp(), m.key(), m.value()) for m in messages])
    if all(map(_IS_NONE, errors)):
        top = dict(zip(parts, offsets))  # a partition's offsets rise, so its last one is its highest
        if all(p in remaining and o < end[p] for p, o in top.items()):
            if TIMESTAMP_NOT_AVAILABLE in map(_KIND, stamps):
                times = [ts if kind != TIMESTAMP_NOT_AVAILABLE else None for kind, ts in stamps]
            else:
                times = list(map(_MILLIS, stamps))
            batch = RawBatch(list(parts), list(offsets), times, list(keys), list(values))
            done = [p for p, o in top.items() if o == end[p] - 1]
            remaining.difference_update(done)
            return batch, done, top
    batch, done = _collect_each(messages, remaining, end, topic, gone)
    return batch, done, dict(zip(batch.partition, batch.offset))


def _collect_each(messages: list[Any], remaining: set[int], end: Mapping[int, int],
                  topic: str, gone: dict[int, int]) -> tuple[RawBatch, list[int]]:
    from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaError

    eof_code = KafkaError._PARTITION_EOF
    transient = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT}
    batch = RawBatch()
    add_p, add_o, add_t, add_k, add_v = (batch.partition.append, batch.offset.append, batch.timestamp_ms.append,
                                         batch.key.append, batch.value.append)
    done: list[int] = []
    for m in messages:
        err = m.error()
        p = m.partition()
        if err is not None:
            if err.code() == eof_code:
                if p in remaining:
                    remaining.discard(p)
                    done.append(p)
                continue
            if err.code() == KafkaError._AUTO_OFFSET_RESET:  # auto.offset.reset=error: the records there are gone
                gone[p] = m.offset()
                continue
            if err.retriable() or err.code() in transient:
                continue  # librdkafka retries; the stall timeout in _read bounds the wait
            where = f"partition {p} of topic {topic!r}" if p is not None and p >= 0 else f"topic {topic!r}"
            raise SourceError(f"reading {where} failed: {err.str()}")
        if p not in remaining:
            continue
        o = m.offset()
        last = end[p] - 1
        if o > last:
            remaining.discard(p)
            done.append(p)
            continue
        ts_type, ts = m.timestamp()
        add_p(p)
        add_o(o)
        add_t(None if ts_type == TIMESTAMP_NOT_AVAILABLE else ts)
        add_k(m.key())
        add_v(m.value())
        if o == last:
            remaining.discard(p)
            done.append(p)
    return batch, done
