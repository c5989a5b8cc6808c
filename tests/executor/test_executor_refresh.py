"""0.4+ production mode: a checkpoint keeps every retained state (#1158 Kafka, #1175 Fluss; addendum §2).

A checkpoint taken mid-action, then restored: under 0.4+ the in-flight state comes back (refresh rows
after the marker, or the Kafka marker moved back) and the action RESUMEs without repeating its recorded
call; under 0.3 nothing written before the marker is reloaded and the call runs again.
"""

from __future__ import annotations

import pytest

from agent_inspect.executor import Breakpoint, Policies, ReplayExecutor, StepKind
from agent_inspect.recovery import reconstruct, refresh_positions
from tests.support.two_call_agent import CALLS, two_call_agent


def _first_attempt(runtime: str, **options):
    """Fresh job: input 1 finishes, input 2's WA records ``multiply``, a checkpoint is taken, the job dies."""
    agent = two_call_agent()
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "1"), ("k", "2")]}, key_format="K1.5",
                        runtime=runtime, seed=7, **options)
    ex.run(until=Breakpoint(kind="persist", seq=1, action="WA", outcome="call results (1)"))
    before = len(ex.journal)
    marker = ex.checkpoint()
    return agent, ex, marker, before


@pytest.mark.parametrize("runtime", ["0.4", "main"])
def test_mid_action_checkpoint_appends_refresh_rows_and_the_restore_resumes(runtime):
    agent, ex, marker, before = _first_attempt(runtime)
    journal = ex.journal
    assert marker == {0: before}                               # the refresh rows land after the marker
    refresh = [s for s in ex.step_list if s.kind is StepKind.PERSIST and s.outcome == "refresh"]
    # retained at the checkpoint: round 0 (finished, pruned only when the checkpoint completes) and
    # round 1 (IA done, WA in flight with one call result)
    assert [(s.seq, s.state_key) for s in refresh] == [(s.seq, s.state_key) for s in refresh
                                                       if s.seq in (0, 1)] and len(refresh) == 4
    latest: dict[bytes, bytes] = {}
    for i, (key, value) in enumerate(zip(journal.key, journal.value)):
        if i >= before:
            assert value == latest[key], "a refresh row repeats the latest value of its state key byte for byte"
        else:
            latest[key] = value
    log = ex.to_log()
    assert refresh_positions(log, runtime) == frozenset(range(before, len(journal)))
    statuses = reconstruct(log, rule="original", runtime=runtime).records["status"].astype(str).tolist()
    assert statuses[before:] == ["refresh"] * 4

    CALLS.clear()
    again = ReplayExecutor(log, agent=agent, restore=ex.checkpoints[-1], rule="original", runtime=runtime,
                           seed=8, policies=Policies(trust_payloads=True))
    again.run()
    looked = [(s.action, s.outcome) for s in again.step_list if s.kind is StepKind.LOOKUP]
    assert looked[0] == ("WA", "RESUME")                       # the pending state came back
    assert CALLS == ["add(12)"]                                # multiply(2) is served from its record


def test_without_kept_pending_states_the_mid_action_restore_repeats_the_call():
    agent, ex, marker, before = _first_attempt("0.3")
    assert len(ex.journal) == before                           # 0.3 writes nothing at a checkpoint
    CALLS.clear()
    again = ReplayExecutor(ex.to_log(), agent=agent, restore=ex.checkpoints[-1], rule="original", runtime="0.3",
                           seed=8, policies=Policies(trust_payloads=True))
    again.run()
    assert [(s.action, s.outcome) for s in again.step_list if s.kind is StepKind.LOOKUP][0] == ("WA", "RERUN")
    assert CALLS == ["multiply(2)", "add(12)"]


def test_kafka_marker_option_moves_the_marker_back_instead_of_writing_rows():
    agent, ex, marker, before = _first_attempt("0.4", kafka_pending="marker")
    assert len(ex.journal) == before                           # no refresh rows
    log = ex.to_log()
    latest = dict(zip(log.records["state_key"], log.records["offset"]))        # each state's last write
    assert marker == {0: min(int(o) for o in latest.values())} and marker[0] < before   # moved back to the oldest
    CALLS.clear()
    again = ReplayExecutor(log, agent=agent, restore=ex.checkpoints[-1], rule="original", runtime="0.4",
                           kafka_pending="marker", seed=8, policies=Policies(trust_payloads=True))
    again.run()
    assert [(s.action, s.outcome) for s in again.step_list if s.kind is StepKind.LOOKUP][0] == ("WA", "RESUME")
    assert CALLS == ["add(12)"]


def test_fluss_always_refreshes_and_rows_carry_the_agent_key():
    _, ex, _, before = _first_attempt("0.4", kafka_pending="marker", source_kind="fluss")
    journal = ex.journal
    assert len(journal) == before + 4
    assert journal.agent_key[before:] == ["k"] * 4


def test_the_store_option_decides_the_journal_as_it_decides_the_rebuild():
    # a Kafka job's log replayed as a Fluss store: its rebuild was Fluss's, its journal was written as Kafka's
    # (no agent key, and under kafka_pending="marker" no refresh rows) because the log's own kind won there
    _, ex, _, _ = _first_attempt("0.4", kafka_pending="marker")
    base = ex.to_log()
    assert base.source.kind == "kafka"
    again = ReplayExecutor(base, agent=two_call_agent(), plan={"inputs": [("k", "3")]}, key_format="K1.5",
                           runtime="0.4", kafka_pending="marker", source_kind="fluss", seed=8,
                           policies=Policies(trust_payloads=True))
    again.run(until=Breakpoint(kind="persist", action="WA", outcome="call results (1)"))
    before = len(again.journal)
    again.checkpoint()
    assert again.session.source_kind == "fluss"
    assert len(again.journal) > before                         # Fluss always writes refresh rows
    assert again.journal.agent_key is not None and set(again.journal.agent_key) == {"k"}
