"""predict's K2 restore checks (spec §6.5): the job's serializer fingerprint and its max parallelism."""

from __future__ import annotations

import pytest

from agent_inspect import codec
from agent_inspect.agents._protocol import AgentEvent
from agent_inspect.agents._python import PythonAgent
from agent_inspect.executor import ReplayExecutor
from agent_inspect.log import ActionStateLog
from agent_inspect.recovery import predict
from agent_inspect.recovery._plan import ReplayInput, ReplayPlan


def _agent() -> PythonAgent:
    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"])
    def ia(event, ctx):
        ctx.send_event("_output_event", {"output": event.attributes["input"]})

    return agent


def _log(key_format: str, keys=("k", "j", "m")):
    agent = _agent()
    ex = ReplayExecutor(agent=agent, key_format=key_format, seed=5, plan={"inputs": [(k, "a") for k in keys]})
    ex.run()
    return agent, ex.to_log()


def _plan(log) -> ReplayPlan:
    bk = str(log.records["business_key"].iloc[0])
    return ReplayPlan(inputs=(ReplayInput(bk, AgentEvent("_input_event", {"input": "b"})),),
                      restored_seq={bk: 0})


def _failure(pred):
    found = [d for d in pred.divergences if d.kind == "restore-failure"]
    return found[0] if found else None


def test_key_groups_outside_the_range_fail_the_restore_once_per_record():
    agent, log = _log("K2")
    groups = log.records["key_group"].astype(int)
    limit = int(groups.max())                      # the top group is out of [0, limit)
    outside = sorted(int(p) for p in log.records.index[groups >= limit])
    pred = predict(log, plan=_plan(log), agent=agent, max_parallelism=limit)
    assert pred.crashed and sorted(_failure(pred).positions) == outside
    assert "key-group" in _failure(pred).explanation and f"[0, {limit})" in _failure(pred).explanation
    # a log loaded with the same bound already has key errors for them: still one position per record
    strict = ActionStateLog.from_raw(log.raw, log.source, max_parallelism=limit)
    assert strict.errors.index.tolist() == outside
    again = predict(strict, plan=_plan(log), agent=agent, max_parallelism=limit)
    assert again.crashed and sorted(_failure(again).positions) == outside
    assert not predict(log, plan=_plan(log), agent=agent, max_parallelism=limit + 1).crashed
    assert not predict(log, plan=_plan(log), agent=agent).crashed          # no bound given: not checked


def test_expected_fingerprint():
    agent, log = _log("K2")
    fp = codec.parse_state_key(str(log.records["state_key"].iloc[0])).serializer_fingerprint
    assert not predict(log, plan=_plan(log), agent=agent, expected_fingerprint=fp).crashed
    pred = predict(log, plan=_plan(log), agent=agent, expected_fingerprint="Z" * 43 + "=")
    assert pred.crashed and len(_failure(pred).positions) == len(log.records)
    assert set(pred.tasks["outcome"]) == {"FAIL"}


@pytest.mark.parametrize("key_format", ["K1.5", "K1.6"])
def test_only_k2_windows_are_checked(key_format):
    agent, log = _log(key_format)
    assert not predict(log, plan=_plan(log), agent=agent, max_parallelism=1, expected_fingerprint="x").crashed


def test_a_rule_without_restore_checks_skips_them():
    from agent_inspect.rules import FixedRule

    class Lenient(FixedRule):
        name = "lenient"
        restore_checks = False

    agent, log = _log("K2")
    assert not predict(log, plan=_plan(log), agent=agent, rule=Lenient(), max_parallelism=1).crashed


def test_restore_failures_read_only_the_window_whatever_the_key_column_holds():
    import numpy as np

    from agent_inspect.recovery._rebuild import restore_failures

    _, log = _log("K2")
    records = log.records.copy()
    records.loc[0, "state_key"] = "k_0_a_b"                   # a K1 key in a K2 window fails the restore
    v2 = records["state_key"].astype(object).str.startswith("v2:").to_numpy(dtype=bool)
    for column in (records["state_key"], records["state_key"].astype("string"), records["state_key"].astype(object)):
        frame = records.assign(state_key=column)
        assert [p for p, _, _ in restore_failures(frame)] == [0]
        assert restore_failures(frame, v2) == []             # the window holds only well-formed v2 keys
        only_k1 = np.zeros(len(frame), dtype=bool)
        only_k1[0] = True
        assert restore_failures(frame, only_k1) == []        # no v2 key in the window: not a K2 window
