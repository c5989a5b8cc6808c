"""``ai.history`` reads a 0.4+ log without its checkpoint-time refresh rows: a checkpoint re-appending a retained
state byte for byte is no attempt and no execution (addendum §2.2), as ``reconstruct`` already read it."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.diffing import SelectorError


@pytest.fixture(scope="module")
def v4() -> ai.ActionStateLog:
    return ai.load(ai.samples.path("production_v4"))


def test_refresh_rows_start_no_attempt_and_belong_to_no_execution(v4: ai.ActionStateLog) -> None:
    refresh = ai.history.refresh_rows(v4)
    assert len(refresh) == 392 and refresh == ai.recovery.refresh_positions(v4, "main")
    attempts = ai.history.attempts(v4)
    assert len(attempts) == 16 and set(attempts["attempt"]) == {1}        # was 85: every refresh a "restore"
    assert attempts.equals(ai.reconstruct(v4).history.attempts)
    marks = ai.history.annotate(v4).loc[sorted(refresh)]
    assert (marks["execution"] == -1).all() and marks["attempt"].isna().all() and marks["attempt_start"].isna().all()
    executions = ai.history.executions(v4)
    assert not set(refresh) & {p for ps in executions["positions"] for p in ps}
    assert len(ai.history.build_history(v4).attempts) == 16


def test_an_attempt_selector_does_not_pick_a_checkpoint_s_refresh_rows(v4: ai.ActionStateLog) -> None:
    key = v4.records["business_key"].iloc[0]
    with pytest.raises(SelectorError, match=r"no attempt 2 .*attempts present: \[1\]"):
        ai.diffing.attempt(v4, key, 2)


def test_a_log_without_repeats_and_a_records_frame_keep_every_row() -> None:
    log = ai.load(ai.samples.path("production"))
    assert ai.history.refresh_rows(log) == frozenset() and ai.history.refresh_rows(log.records) == frozenset()
    assert len(ai.history.attempts(log)) == 56


def test_the_key_views_of_a_log_agree_with_its_history_and_its_reconstruction(v4: ai.ActionStateLog) -> None:
    # compact_history and the key graph annotate a key's rows: they read the log's refresh rows as the history does
    from agent_inspect.history._graph_data import load_key

    refresh = ai.history.refresh_rows(v4)
    lines = ai.history.compact_history(v4)
    executions = ai.history.executions(v4)
    assert lines.loc[lines["execution"] >= 0, "execution"].nunique() == len(executions) == 354     # was 746
    key = v4.records["business_key"].iloc[0]
    graph, reconstructed = load_key(v4, key), load_key(ai.reconstruct(v4), key)
    assert [e.positions for e in graph.executions] == [e.positions for e in reconstructed.executions]
    assert {e.attempt for e in graph.executions} == {1}       # six attempts before, one per checkpoint
    noted = [p for e in graph.executions for p in e.extra.get("refresh_positions", [])]
    assert noted and set(noted) <= refresh


def _case_log(case_id: str, variant: str | None = None) -> ai.ActionStateLog:
    from pathlib import Path

    from agent_inspect.cases import build_case, load_cases

    cases = Path(__file__).resolve().parents[2] / "cases" / f"{case_id}.toml"
    return next(build_case(c).log for c in load_cases(cases) if c.variant == variant)


def test_the_history_and_recovery_find_the_same_refresh_rows_for_every_runtime_option_and_store(
        v4: ai.ActionStateLog) -> None:
    # one rule (ai.history.writes_refresh_rows): Kafka under kafka_pending="marker" writes none, Fluss always does
    fluss, kafka_marker = _case_log("N15"), _case_log("N14", "0.4-kafka-marker")
    assert ai.recovery.source_kind_of(fluss) == "fluss" and ai.recovery.source_kind_of(v4) == "kafka"
    for log in (v4, fluss, kafka_marker, v4.records):
        for runtime in ("0.3", "0.4", "main"):
            for kafka_pending in (None, "refresh", "marker"):
                assert ai.history.refresh_rows(log, runtime, kafka_pending=kafka_pending) == \
                    ai.recovery.refresh_positions(log, runtime, kafka_pending=kafka_pending), (runtime, kafka_pending)
    assert ai.history.refresh_rows(v4, kafka_pending="marker") == frozenset()
    assert len(ai.history.refresh_rows(fluss, kafka_pending="marker")) == 4       # Fluss has no marker option
    with pytest.raises(ai.RecoveryError, match="unknown kafka_pending"):
        ai.history.refresh_rows(v4, kafka_pending="rewind")


def test_under_the_kafka_marker_option_a_repeated_value_is_a_write_of_its_own(v4: ai.ActionStateLog) -> None:
    # a marker-moving Kafka writer re-appends nothing, so a byte-identical rewrite there is a rewrite: a restore
    assert len(ai.history.attempts(v4)) == 16
    marked = ai.history.attempts(v4, kafka_pending="marker")
    assert len(marked) == 85 and marked.equals(ai.history.build_history(v4, kafka_pending="marker").attempts)
    refresh = ai.history.refresh_rows(v4)
    assert set(refresh) <= {p for ps in ai.history.executions(v4, kafka_pending="marker")["positions"] for p in ps}
    assert (ai.history.annotate(v4, kafka_pending="marker").loc[sorted(refresh), "execution"] >= 0).all()
    lines = ai.history.compact_history(v4, kafka_pending="marker")
    assert lines.loc[lines["execution"] >= 0, "execution"].nunique() == len(ai.history.executions(v4, kafka_pending="marker")) > 354


def _repeat_before_the_markers() -> tuple[ai.ActionStateLog, dict[int, int]]:
    """A 0.4 Kafka log whose round 5 wrote its completed state twice, byte for byte (a refresh row to a writer that
    refreshes, a write of a restart to one that moves the marker back), then rounds 6 and 7 around the markers."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "recovery"))
    from recovery_logs import LogBuilder, inp, work

    b = LogBuilder(fmt="K1")
    b.run("j", 5, "IA", inp("A", "p1"), outs=[work("a", "w1")])
    b.run("j", 5, "IA", inp("A", "p1"), outs=[work("a", "w1")], initial=False)
    b.run("j", 6, "IA", inp("B", "p2"), outs=[work("b", "w2")])
    markers = b.marker()
    b.run("j", 7, "IA", inp("C", "p3"), outs=[work("c", "w3")])
    return b.log(), markers


@pytest.mark.parametrize("kafka_pending", [None, "refresh", "marker"])
def test_a_key_s_graph_and_sub_agent_tree_read_the_log_as_the_tables_do(kafka_pending: str | None) -> None:
    # the graph had no kafka_pending: under "marker" the repeat is a restart's write (an execution of attempt 2)
    # in the tables and a reconstruction's graph, and was folded into round 5's execution in the log's graph
    log, markers = _repeat_before_the_markers()
    executions = ai.history.executions(log, kafka_pending=kafka_pending)
    graph = ai.history.action_graph(log, "j", kafka_pending=kafka_pending)
    actions = ai.history.graph_nodes(graph).query("kind == 'action'")
    assert sorted(map(tuple, actions["positions"])) == sorted(map(tuple, executions["positions"]))
    assert len(actions) == (4 if kafka_pending == "marker" else 3)
    recon = ai.reconstruct(log, markers=[markers], kafka_pending=kafka_pending)
    assert len(ai.history.graph_nodes(recon.graph("j")).query("kind == 'action'")) == len(actions)
    tree = ai.history.subagent_tree(log, "j", 5, kafka_pending=kafka_pending)
    assert tree.graph["seq"] == 5
    lines = ai.history.compact_history(log, kafka_pending=kafka_pending)
    assert (lines["execution"] >= 0).sum() == len(actions)


def test_a_diff_side_s_attempts_are_the_tables_attempts_under_kafka_pending() -> None:
    # select(..., attempt=) numbered attempts under the log's default reading whatever kafka_pending it was given
    log, markers = _repeat_before_the_markers()
    assert ai.history.attempts(log, kafka_pending="marker")["attempt"].tolist() == [1, 2]
    second = ai.diffing.select(log, key="j", attempt=2, kafka_pending="marker", markers=[markers], mode="log")
    assert second.units["pos"].tolist() == [2, 4, 6] and set(second.units["attempt"]) == {2}   # the repeat's round too
    with pytest.raises(SelectorError, match="no attempt 2"):
        ai.diffing.select(log, key="j", attempt=2)


def test_a_diff_side_s_attempts_follow_the_runtime_it_is_given() -> None:
    # select(..., attempt=, runtime=) numbered attempts under the log's inferred runtime: a 0.3 writer refreshes
    # nothing, so there the repeat is a restart's write, as under kafka_pending="marker"
    log, markers = _repeat_before_the_markers()
    assert log.runtime().model == "0.4"
    second = ai.diffing.select(log, key="j", attempt=2, runtime="0.3")
    assert second.units["pos"].tolist() == [2, 4, 6] and set(second.units["attempt"]) == {2}
    with pytest.raises(SelectorError, match="no attempt 2"):
        ai.diffing.select(log, key="j", attempt=2, runtime="0.4")
    # a recovery given whole reads the same way as its settings given one by one
    settings = ai.Recovery.for_log(log, runtime="0.3")
    assert ai.diffing.select(log, key="j", attempt=2, mode="log", recovery=settings).units.equals(second.units)


def test_a_log_side_resolves_one_recovery_from_every_setting_it_is_given() -> None:
    # without rule= the side read kafka_pending alone: the runtime, the markers and the checks other verbs make
    # were dropped (kafka_pending="marker" over a log whose writer refreshes read it as restarts, unchecked)
    log, markers = _repeat_before_the_markers()
    with pytest.raises(ai.RecoveryError, match="kafka_pending='marker' does not fit this log"):
        ai.reconstruct(log, kafka_pending="marker")
    with pytest.raises(ai.RecoveryError, match="kafka_pending='marker' does not fit this log"):
        ai.diffing.select(log, kafka_pending="marker")
    with pytest.raises(ai.RecoveryError, match="unknown store flavour"):
        ai.diffing.select(log, store_flavour="kafka-k9")
    whole = ai.diffing.select(log, kafka_pending="marker", markers=[markers], mode="log")
    assert len(whole.units) == len(ai.history.executions(log, kafka_pending="marker")) == 4
    assert len(ai.diffing.select(log, runtime="0.3").units) == 4
    assert len(ai.diffing.select(log).units) == len(ai.history.executions(log)) == 3
