"""Regressions for spec-fidelity bugs of the recovery engine: the replay window of the default plan,
undecodable records in the rebuild, K2 restore failures."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from hypothesis import given, settings
from hypothesis import strategies as st
from recovery_logs import LogBuilder, inp, work

from agent_inspect.cases import compare
from agent_inspect.executor import ReplayExecutor, StepKind
from agent_inspect.recovery import ReplayPlan, predict, reconstruct


def n04() -> LogBuilder:
    b = LogBuilder()
    (w,) = b.run("k", 5, "IA", inp("A", "a1"), outs=[work("a", "w1")])
    b.run("k", 5, "WA", w, upstream="a1")
    (w,) = b.run("k", 6, "IA", inp("B", "b1"), outs=[work("b", "w2")])
    b.run("k", 6, "WA", w, upstream="b1")
    return b


def _round6_marker(log) -> dict[int, int]:
    recs = log.records
    return {0: int(recs[recs["seq"] == 6]["offset"].min())}


def test_default_plan_replays_only_the_inputs_after_the_markers():
    log = n04().log()
    marker = _round6_marker(log)
    plan = ReplayPlan.from_log(log, markers=[marker])
    assert [i.display for i in plan.inputs] == ["B"] and plan.restored_seq == {"k": 5}
    assert [i.display for i in ReplayPlan.from_log(log).inputs] == ["A", "B"]
    assert [i.display for i in ReplayPlan.from_log(log, markers=[{1: 0}]).inputs] == []   # no marker partition
    p = predict(log, rule="fixed", markers=[marker])
    assert list(zip(p.tasks["seq"], p.tasks["outcome"])) == [(6, "REUSE"), (6, "REUSE")]
    ex = ReplayExecutor(log, rule="fixed", markers=[marker])
    ex.run()
    assert [(s.seq, s.outcome) for s in ex.step_list if s.kind is StepKind.LOOKUP] == [(6, "REUSE"), (6, "REUSE")]
    frame = compare(log, ["original", "fixed"], markers=[marker])
    assert len(frame) == 2 and (frame["reruns"] == 0).all()
    r = reconstruct(log, rule="fixed", markers=[marker])
    assert set(r.records.loc[r.records["seq"] == 5, "status"]) == {"outside"}
    assert r.records.loc[r.records["seq"] == 5, "outcome"].isna().all()


def test_an_undecodable_record_is_skipped_and_reported_never_a_delete():
    from agent_inspect.recovery import rebuild

    b = LogBuilder()
    a = inp("A", "a1")
    b.run("k", 5, "IA", a)
    sk = b.state_key("k", 5, "IA", a)
    b._write("k", sk, b"{not json")            # same state key, value does not decode
    log = b.log()
    assert log.records["error"].notna().tolist() == [False, False, True]
    s = rebuild(log, "fixed", [{0: 0}])
    assert sk in s.store and s.store.get(sk).completed
    assert not any(e.op == "delete" for e in s.events)
    (d,) = s.divergences
    assert d.kind == "undecodable" and d.positions == (2,) and "upstream's rebuild would fail" in d.explanation
    r = reconstruct(log, rule="fixed", markers=[{0: 0}])
    assert r.records["status"].tolist() == ["superseded", "live", "error"]
    assert r.records["divergence_id"].tolist()[2] == 0 and r.divergences["kind"].tolist() == ["undecodable"]
    p = predict(log, rule="fixed", markers=[{0: 0}])
    assert p.tasks["outcome"].tolist() == ["REUSE"] and not p.crashed


def _k2(extra=None, *, same_fp: bool = True) -> LogBuilder:
    import base64
    import hashlib

    b = LogBuilder(fmt="K2")
    b.run("k", 5, "IA", inp("A", "a1"))
    if extra == "malformed":
        b._write("k", "v2:17_6_not-a-uuid_x_y_z", b'{"taskEvent":null,"completed":true}')
    elif extra == "fingerprint":
        ev = inp("B", "b1")
        head, _fp, digest = b.state_key("k", 6, "IA", ev).rsplit("_", 2)
        other = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
        from agent_inspect.codec import ActionState, Event, encode_action_state

        task = Event.new(ev.type, ev.attrs, id=ev.id)
        b._write("k", f"{head}_{other}_{digest}", encode_action_state(ActionState(task_event=task, completed=True)))
    return b


def test_k2_restore_failures_fail_every_engine():
    from agent_inspect.recovery import rebuild
    from agent_inspect.recovery._rebuild import restore_failures
    from agent_inspect.rules import FixedRule

    clean = _k2().log()
    assert restore_failures(clean.records) == []
    assert not rebuild(clean, "fixed", [{0: 0}]).divergences
    fp = clean.records["state_key"].iloc[0].split("_")[4]
    assert restore_failures(clean.records, expected_fingerprint="x" + fp)       # explicit expectation
    for extra, text in (("malformed", "Malformed v2 action-state key"),
                        ("fingerprint", "serializer fingerprint does not match")):
        log = _k2(extra).log()
        s = rebuild(log, "fixed", [{0: 0}])
        (d,) = [d for d in s.divergences if d.kind == "restore-failure"]
        assert text in d.explanation and d.positions == (len(log.records) - 1,)
        assert not [d for d in s.divergences if d.kind == "undecodable"]
        p = predict(log, rule="fixed", markers=[{0: 0}])
        assert p.crashed and p.tasks["outcome"].tolist()[0] == "FAIL" and text in p.tasks["reason"].iloc[0]
        ex = ReplayExecutor(log, rule="fixed", markers=[{0: 0}])
        ex.run()
        assert ex.failure and text in ex.failure
        r = reconstruct(log, rule="fixed", markers=[{0: 0}])
        assert "restore-failure" in set(r.divergences["kind"]) and "FAIL" in set(r.records["outcome"].dropna())

        class Lenient(FixedRule):
            restore_checks = False

        assert rebuild(log, Lenient(), [{0: 0}]).restore_failure is None


_op = st.tuples(st.sampled_from(["run", "run", "bad", "tomb"]), st.sampled_from(["k", "j"]), st.integers(5, 6),
                st.sampled_from(["A", "B"]))


@settings(deadline=None, max_examples=25)
@given(st.lists(_op, max_size=12), st.sampled_from(["fixed", "original", "naive"]))
def test_undecodable_records_change_nothing_in_the_rebuilt_cache(ops, rule):
    from agent_inspect.recovery import rebuild

    with_bad, without = LogBuilder(), LogBuilder()
    for what, key, seq, value in ops:
        ev = inp(value, f"{key}{seq}{value}")
        for b in (with_bad, without):
            if what == "run":
                b.run(key, seq, "IA", ev)
            elif what == "tomb":
                b.tombstone(key, seq, "IA", ev)
        if what == "bad":
            with_bad._write(key, with_bad.state_key(key, seq, "IA", ev), b"\xff not json")
    if not with_bad.offsets:
        return
    got = rebuild(with_bad.log(), rule, [{0: 0}])
    ref = rebuild(without.log(), rule, [{0: 0}]) if without.offsets else None
    assert sorted((e.state_key, e.completed) for e in got.store.entries()) == sorted(
        (e.state_key, e.completed) for e in (ref.store.entries() if ref else []))
    assert sum(d.kind == "undecodable" for d in got.divergences) == sum(op[0] == "bad" for op in ops)


def test_a_dump_line_that_is_no_record_is_no_upstream_failure(tmp_path, capsys):
    """A damaged line of a dump (no partition, no offset) says nothing of the topic: the rebuild does not claim
    upstream fails on it, and the CLI shows no round for it (it printed "@-1")."""
    from agent_inspect.cli import main
    from agent_inspect.log import load

    lines = (Path(__file__).parents[2] / "sample_logs" / "N04.jsonl").read_bytes().splitlines(keepends=True)
    dump = tmp_path / "damaged.jsonl"
    dump.write_bytes(b"".join([*lines[:3], b"garbage line\n", *lines[3:]]))
    (d,) = [d for d in reconstruct(load(dump)).session.divergences if d.kind == "undecodable"]
    assert d.explanation.startswith("line 4: ") and "The dump is damaged there" in d.explanation
    assert "upstream's rebuild would fail" not in d.explanation
    assert main(["reconstruct", str(dump)]) == 0
    shown = [line for line in capsys.readouterr().out.splitlines() if "[undecodable]" in line]
    assert shown and shown[0].startswith("  divergence 0 [undecodable]: line 4") and "@" not in shown[0].split(":")[0]
