"""Pure read planning shared by the Kafka and Fluss loaders: markers in, per-partition ranges out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import DataLossError, SourceError, UnknownPartitionError
from agent_inspect.codec import merge_markers as codec_merge_markers

if TYPE_CHECKING:
    from agent_inspect.codec._markers import MarkerMaps, MarkerSource

__all__ = ["ReadPlan", "merge_markers", "plan_reads", "check_kafka_markers", "versioned_marker_topic_ids"]


# Per partition, a gap a read skipped: {"asked": the offset asked for, "read_from": where the read went on}
DataLossNotes = dict[int, dict[str, int]]


@dataclass(frozen=True)
class ReadPlan:
    """Per partition (or bucket): read ``start`` up to ``end`` (exclusive). Empty ranges stay listed.

    For example::

        plan = ai.sources.ReadPlan(start={0: 120, 1: 98}, end={0: 400, 1: 310})   # [start, end) per partition
        plan.start, plan.end, plan.total          # data_loss: what an allowed gap skipped, per partition
    """

    start: Mapping[int, int]
    end: Mapping[int, int]
    data_loss: Mapping[int, tuple[int, int]] = field(default_factory=dict)  # p -> (asked, used) when allowed

    @property
    def total(self) -> int:
        return sum(self.end[p] - self.start[p] for p in self.start)


def merge_markers(markers: MarkerMaps | MarkerSource, *, topic: str | None = None) -> dict[int, int]:
    """Merge recovery markers by minimum per partition; plain maps or the versioned Kafka form (spec §6.4).

    For example::

        ai.sources.merge_markers([{0: 120, 1: 98}, {0: 110}])   # {0: 110, 1: 98}
    """
    return codec_merge_markers(markers, topic=topic, error=SourceError)


def _is_versioned(marker: Any) -> bool:
    return isinstance(marker, Mapping) and "offsets" in marker


def _java_set(values: Iterable[Any]) -> str:
    return "[" + ", ".join(str(v) for v in sorted(values)) + "]"


def versioned_marker_topic_ids(markers: Any) -> set[str]:
    """The topic ids named by versioned Kafka markers (#1101); empty for legacy maps or None."""
    if markers is None:
        return set()
    items = [markers] if isinstance(markers, Mapping) else list(markers)
    return {str(m["topicId"]) for m in items if _is_versioned(m) and m.get("topicId") is not None}


def check_kafka_markers(markers: Any, *, topic: str, topic_id: str | None, partitions: Iterable[int]) -> None:
    """Upstream's checks of versioned Kafka recovery markers (#1101, addendum §5), with its messages.

    Versioned and legacy markers are never mixed; a versioned marker must have schema version 1, name
    this topic and its current topic id (a recreated topic has a new one), and name exactly the topic's
    partitions. Legacy ``{partition: offset}`` maps keep the snapshot's looser rule (a subset is read).
    Raises :class:`SourceError` (:class:`UnknownPartitionError` for a partition-set mismatch).
    """
    if markers is None:
        return
    items = [markers] if isinstance(markers, Mapping) else list(markers)
    versioned = [m for m in items if _is_versioned(m)]
    if versioned and len(versioned) != len(items):
        raise SourceError("Cannot restore from a mixture of versioned and legacy Kafka recovery markers")
    known = set(partitions)
    for m in versioned:
        version = m.get("schemaVersion", 1)
        if version != 1:
            raise SourceError(f"Unsupported Kafka action-state recovery marker schema {version}, expected 1")
        if m.get("topic") is not None and m["topic"] != topic:
            raise SourceError(f"Kafka action-state recovery marker references topic {m['topic']}, but the "
                              f"configured topic is {topic}")
        marker_id = m.get("topicId")
        if marker_id is not None and topic_id is not None and str(marker_id) != topic_id:
            raise SourceError(f"Kafka action-state topic {topic} has ID {topic_id}, but the recovery marker "
                              f"expects {marker_id}; the topic may have been recreated")
        offsets = m["offsets"]
        named = {int(p) for p in offsets} if isinstance(offsets, Mapping) else set()
        if isinstance(offsets, Mapping) and named != known:
            raise UnknownPartitionError(
                f"Kafka action-state recovery marker contains partitions {_java_set(named)}, but topic {topic} "
                f"currently has partitions {_java_set(known)}")


def plan_reads(*, partitions: Iterable[int], earliest: Mapping[int, int], latest: Mapping[int, int],
               markers: Mapping[int, int] | None = None, start_offsets: Mapping[int, int] | None = None,
               only: Iterable[int] | None = None, require_same_set: bool = False,
               allow_data_loss: bool = False, what: str = "partition", where: str = "the topic") -> ReadPlan:
    """Decide what to read per partition.

    ``markers``: only the named partitions are read, each from its (merged) offset, like the store's
    rebuild. ``start_offsets``: the named partitions start there, every other one at the earliest
    retained offset. Neither: every partition from earliest. ``only`` restricts the partitions
    (business-key pruning). ``require_same_set`` is Fluss's rule that the marker buckets equal the
    table's buckets. An offset below the earliest retained one, or beyond the end, raises
    :class:`DataLossError` unless ``allow_data_loss`` (then the read starts at the earliest offset).
    """
    known = sorted(set(partitions))
    named = markers if markers is not None else start_offsets
    if named:
        unknown = sorted(set(named) - set(known))
        if unknown:
            raise UnknownPartitionError(
                f"{'marker' if markers is not None else 'start offset'} names {what} {_fmt(unknown)} but "
                f"{where} has {what}s {_fmt(known)}; use markers/offsets taken from this {where.split()[-1]}")
    if require_same_set and markers and sorted(markers) != known:
        raise UnknownPartitionError(
            f"recovery marker {what} set {_fmt(sorted(markers))} does not match the {what}s {_fmt(known)} of "
            f"{where}; it was recreated or re-bucketed, so these markers cannot be used")
    chosen = sorted(markers) if markers is not None else known
    if only is not None:
        keep = set(only)
        chosen = [p for p in chosen if p in keep]
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    loss: dict[int, tuple[int, int]] = {}
    for p in chosen:
        lo, hi = earliest[p], latest[p]
        asked = named.get(p, lo) if named else lo
        if asked < lo or asked > hi:
            if not allow_data_loss:
                kafka = what == "partition"
                kind = "recovery marker offset" if markers is not None and kafka else "start offset"
                if asked < lo:
                    why = f"the earliest retained offset is {lo}" + (
                        ", the log start: retention or a checkpoint-aligned cleanup (#1101 deleteRecords) removed "
                        "the records before it, and a 0.4+ rebuild fails here" if kafka else "")
                else:
                    why = f"{what} ends at {hi}, so {where} was recreated or truncated"
                raise DataLossError(
                    f"data loss in {what} {p}: {kind} {asked} is outside the retained range [{lo}, {hi}] "
                    f"({why}); increase retention, use newer markers, or pass allow_data_loss=True")
            loss[p] = (asked, lo)
            asked = lo
        start[p], end[p] = asked, hi
    return ReadPlan(start=start, end=end, data_loss=loss)



def read_options(plan: ReadPlan, *, markers: Mapping[int, int] | None, start_offsets: Mapping[int, int] | None,
                 business_keys: list[str] | None, config: Mapping[str, Any]) -> dict[str, Any]:
    """The non-secret options that shaped a read, for ``SourceInfo.options``.

    ``config`` is the client configuration already stripped of the servers and of anything secret.
    """
    options: dict[str, Any] = {}
    if markers is not None:
        options["markers"] = dict(markers)
    if start_offsets is not None:
        options["start_offsets"] = start_offsets
    if business_keys is not None:
        options["business_keys"] = business_keys
    if plan.data_loss:
        options["data_loss"] = {p: {"asked": a, "read_from": u} for p, (a, u) in plan.data_loss.items()}
    if config:
        options["config"] = dict(config)
    return options

def _fmt(values: list[int]) -> str:
    if not values:
        return "none"
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]}"
    return ",".join(map(str, values))
