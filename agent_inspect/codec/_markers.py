"""Recovery markers (spec §6.4, §7.4): the per-partition end offsets a checkpoint stores."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from agent_inspect._errors import InspectError

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog, RuntimeInfo
    from agent_inspect.recovery import ReplayPlan

__all__ = ["merge_markers", "marker_list", "MarkerSource", "PlanSource", "MarkerMaps"]

#: Markers as plain data: one ``{partition: offset}`` map, or one per subtask.
MarkerMaps = Mapping[int, int] | Sequence[Mapping[int, int]]


@runtime_checkable
class MarkerSource(Protocol):
    """Anything that carries recovery markers, e.g. a :class:`agent_inspect.checkpoint.Checkpoint`.

    For example::

        chk = ai.checkpoint.read("tests/fixtures/checkpoints/production/checkpoints")
        isinstance(chk, ai.codec.MarkerSource), chk.recovery_markers()   # anything with recovery_markers()
    """

    def recovery_markers(self) -> list[dict[int, int]]:
        """One ``{partition: offset}`` map per subtask."""
        ...


@runtime_checkable
class PlanSource(MarkerSource, Protocol):
    """A marker source that may also hold the restore's replay plan, e.g. a read checkpoint with its keyed state.

    ``Recovery.replay_plan`` takes the source's plan when :meth:`holds_plan` (that is what the runtime restores),
    else the log's; ``path`` names where it was read, so settings that used it can be written down again.

    For example::

        chk = ai.checkpoint.read("tests/fixtures/checkpoints/production/checkpoints")
        isinstance(chk, ai.codec.PlanSource), chk.holds_plan(), chk.plan_words()
    """

    @property
    def path(self) -> str:
        """Where the source was read (a path or URL)."""
        ...

    def holds_plan(self) -> bool:
        """True when the source holds the restore's plan (restored seqNums, pending tasks, buffered inputs)."""
        ...

    def plan_words(self) -> str:
        """Where its plan comes from, in words; or, when it holds none, why not."""
        ...

    def replay_plan(self, log: ActionStateLog, *, runtime: str | RuntimeInfo = "auto", kafka_pending: str | None = None,
                    refresh: Collection[int] | None = None, agent: object | None = None) -> ReplayPlan:
        """The plan of restoring this source over ``log`` (the keywords as ``ReplayPlan.from_log`` takes them)."""
        ...


def marker_list(markers: MarkerMaps | MarkerSource | None) -> MarkerMaps | None:
    """Markers as the verbs take them: a :class:`MarkerSource` (a read checkpoint) becomes its list of
    per-subtask maps; one map, a list of maps and None pass through unchanged.

    For example::

        ai.codec.marker_list(ai.checkpoint.read("tests/fixtures/checkpoints/production/checkpoints"))
        ai.codec.marker_list([{0: 5}])                  # a list of maps passes through
    """
    if isinstance(markers, MarkerSource):
        return markers.recovery_markers()
    return markers


def merge_markers(markers: MarkerMaps | MarkerSource, *, topic: str | None = None,
                  error: type[InspectError] = InspectError) -> dict[int, int]:
    """Merge recovery markers by minimum offset per partition (spec §6.5 step 2, §7.4 step 2).

    Accepts one marker, a list of them, or a :class:`MarkerSource` (a read checkpoint). A marker is a mapping partition → offset (keys may be
    strings, as in JSON), or the versioned Kafka form ``{"schemaVersion": 1, "topic": …, "offsets": {…}}``
    (#1101), whose topic must be ``topic`` when both are known. Malformed markers raise ``error``.

    For example::

        ai.codec.merge_markers([{"0": 120, "1": 98}, {0: 110}])   # {0: 110, 1: 98}
    """
    found = marker_list(markers)
    # checked one by one below: JSON markers have text keys, and the versioned form nests its offsets
    maps = [found] if isinstance(found, Mapping) else cast("Iterable[object]", found)
    merged: dict[int, int] = {}
    for marker in maps:
        if not isinstance(marker, Mapping):
            raise error(f"a recovery marker must be a mapping partition -> offset, got {type(marker).__name__}")
        if "markers" in marker:   # json.load of a sample's <name>.markers.json: its markers are one entry of it
            raise error("this is a sample's markers file, not a marker: pass its 'markers' entry "
                        "(ai.samples.markers(name), or json.load(f)['markers'])")
        if "offsets" in marker:
            marker_topic = marker.get("topic")
            if topic is not None and marker_topic is not None and marker_topic != topic:
                raise error(f"marker is for topic {marker_topic!r}, not {topic!r}; pass the markers of this topic")
            marker = marker["offsets"]
            if not isinstance(marker, Mapping):
                raise error("marker 'offsets' must be a mapping partition -> offset")
        for raw_p, raw_o in marker.items():
            p = _as_int(raw_p, "partition", error)
            o = _as_int(raw_o, "offset", error, partition=p)
            merged[p] = min(o, merged.get(p, o))
    return merged


def _as_int(value: Any, what: str, error: type[InspectError], *, partition: int | None = None) -> int:
    of = "" if partition is None else f" for partition {partition}"
    if isinstance(value, bool):
        raise error(f"marker {what} must be an integer, got {value!r}{of}")
    if isinstance(value, float) and not value.is_integer():   # int() would drop the fraction: another position
        raise error(f"marker {what} must be an integer, got {value!r}{of}: a fraction is no record position; "
                    "pass the value as the checkpoint recorded it")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise error(f"marker {what} must be an integer, got {value!r}{of}") from None
    if what == "offset" and not _LONG_MIN <= number <= _LONG_MAX:   # a checkpoint stores offsets as Java longs
        raise error(f"marker offset {number} is beyond a 64-bit offset{of}: no checkpoint records it; pass the "
                    "offsets the checkpoint recorded (ai.checkpoint.read(DIR).recovery_markers())")
    # a checkpoint stores partitions as Java ints; a negative one stays (markers of a log's damaged lines hold -1)
    if what == "partition" and not _INT_MIN <= number <= _INT_MAX:
        raise error(f"marker partition {number} is beyond a Java int (-2^31 to 2^31-1): no checkpoint records "
                    "it; pass the partitions the checkpoint recorded (ai.checkpoint.read(DIR).recovery_markers())")
    return number


_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
