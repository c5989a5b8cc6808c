"""Read planning: markers merged by minimum, partition checks, data-loss rules (spec §6.5, §7.4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect.sources._offsets import merge_markers, plan_reads

markers_st = st.lists(st.dictionaries(st.integers(0, 7), st.integers(0, 10_000), max_size=8), min_size=1, max_size=5)


@settings(deadline=None, max_examples=60)
@given(markers_st)
def test_merge_takes_the_minimum_per_partition(markers: list[dict[int, int]]) -> None:
    merged = merge_markers(markers)
    assert set(merged) == {p for m in markers for p in m}
    for p, o in merged.items():
        assert o == min(m[p] for m in markers if p in m)
    assert merge_markers([{str(p): str(o) for p, o in m.items()} for m in markers]) == merged


def test_merge_accepts_the_versioned_marker_and_checks_its_topic() -> None:
    versioned = {"schemaVersion": 1, "topic": "t", "topicId": "x", "offsets": {"0": 5, "1": 7}}
    assert merge_markers([versioned, {0: 3}], topic="t") == {0: 3, 1: 7}
    with pytest.raises(ai.SourceError, match="marker is for topic 't'"):
        merge_markers(versioned, topic="other")
    with pytest.raises(ai.SourceError, match="must be an integer"):
        merge_markers({0: "five"})


EARLY = {0: 100, 1: 0, 2: 50}
LATE = {0: 200, 1: 10, 2: 50}


def test_no_markers_reads_everything_from_earliest() -> None:
    plan = plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE)
    assert plan.start == EARLY and plan.end == LATE and plan.total == 110


def test_markers_read_only_their_partitions() -> None:
    plan = plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE, markers={0: 150})
    assert plan.start == {0: 150} and plan.end == {0: 200}


def test_start_offsets_keep_other_partitions_at_earliest() -> None:
    plan = plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE, start_offsets={1: 4})
    assert plan.start == {0: 100, 1: 4, 2: 50}


def test_marker_below_earliest_is_data_loss_unless_allowed() -> None:
    with pytest.raises(ai.DataLossError, match=r"partition 0: recovery marker offset 99 .*earliest retained offset is 100, the log start"):
        plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE, markers={0: 99})
    plan = plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE, markers={0: 99}, allow_data_loss=True)
    assert plan.start == {0: 100} and plan.data_loss == {0: (99, 100)}


def test_marker_beyond_end_is_data_loss() -> None:
    with pytest.raises(ai.DataLossError, match="recreated or truncated"):
        plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE, markers={1: 11})


def test_unknown_partition_and_bucket_set_mismatch() -> None:
    with pytest.raises(ai.UnknownPartitionError, match="names partition 5"):
        plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE, markers={5: 0})
    with pytest.raises(ai.UnknownPartitionError, match=r"bucket set 0,1 does not match the buckets 0-2"):
        plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE, markers={0: 100, 1: 0},
                   require_same_set=True, what="bucket", where="table db.t")


def test_only_restricts_partitions() -> None:
    plan = plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE, only={1, 7})
    assert plan.start == {1: 0}


@settings(deadline=None, max_examples=80)
@given(st.data())
def test_plan_never_reads_outside_the_retained_range(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 6))
    earliest = {p: data.draw(st.integers(0, 50)) for p in range(n)}
    latest = {p: earliest[p] + data.draw(st.integers(0, 50)) for p in range(n)}
    markers = data.draw(st.dictionaries(st.integers(0, n - 1), st.integers(-5, 120), min_size=1))
    try:
        plan = plan_reads(partitions=range(n), earliest=earliest, latest=latest, markers=markers)
    except ai.DataLossError:
        assert any(not earliest[p] <= o <= latest[p] for p, o in markers.items())
        return
    assert set(plan.start) == set(markers)
    for p in plan.start:
        assert earliest[p] <= plan.start[p] <= plan.end[p] == latest[p]


def test_no_markers_at_all_means_nothing_to_rebuild() -> None:
    # upstream skips the rebuild when the checkpoint holds no marker (spec §6.5 step 1, §7.4 step 1)
    for same_set in (False, True):
        plan = plan_reads(partitions=[0, 1, 2], earliest=EARLY, latest=LATE, markers=merge_markers([]),
                          require_same_set=same_set)
        assert plan.start == {} and plan.total == 0
