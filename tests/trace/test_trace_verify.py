"""verify(): the samples' traces (written by the executor) agree with predict(); the inconsistent variants,
cut or missing traces, invisible reuses and wrong markers are caught and named."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect import samples
from agent_inspect._errors import SourceError
from agent_inspect.sources import write_trace
from agent_inspect.trace import CAUSES, STORE_FLAVOURS, Verdict, load_trace, verify

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"


def _restore(name: str) -> dict:
    return json.loads((LOGS / f"{name}.markers.json").read_text(encoding="utf-8"))["restore"]


def _verify(name: str, trace: object = None, **options: object) -> ai.trace.Verification:
    log = ai.load(LOGS / f"{name}.jsonl")
    return verify(log, trace if trace is not None else LOGS / f"{name}.trace.log", markers=samples.markers(name),
                  restore=_restore(name), **options)


@pytest.mark.parametrize("name", ["N04", "N07", "G01", "G03", "S01", "S05", "P01", "subagents", "production"])
def test_committed_sample_traces_agree_with_the_prediction(name: str) -> None:
    v = _verify(name)
    assert v.agree, v.disagreements[["key", "action", "predicted", "observed", "cause"]].to_string()
    assert v.ranking is None                                   # nothing to explain
    assert set(v.tasks["join"]) <= {"trigger-event-id", "dispatch-order", "dispatch-order-unnamed", "no-execution"}
    if name != "production":
        assert v.calls["agree"].all(), v.calls


def test_production_checks_every_task_and_every_traced_call() -> None:
    v = _verify("production")
    # the log-only model replays the recorded chat calls, retries after timeouts included; this attempt's
    # bodies needed fewer: the call totals show it and a note says why
    calls_ = v.calls.set_index(["entity_type", "calls"])
    assert calls_.loc[("llm", "executed"), "predicted"] > calls_.loc[("llm", "executed"), "observed"]
    assert calls_.loc[("tool", "executed"), "agree"]
    assert any("retries included" in n for n in v.notes)
    t = v.totals.set_index("outcome")
    assert t.loc["REUSE", "predicted"] == t.loc["REUSE", "observed"] > 0
    assert t.loc["RERUN", "predicted"] > 0 and t.loc["RERUN", "disagree"] == 0
    calls = v.calls.set_index(["entity_type", "calls"])
    assert calls.loc[("llm", "executed"), "observed"] > 100 and calls.loc[("tool", "executed"), "observed"] > 50
    # tasks whose trigger is a stored id (children of reused actions) are joined by identity
    assert (v.tasks["join"] == "trigger-event-id").sum() > 50
    # and every traced execution is joined to an action-state record or says why not
    j = v.joined
    acts = j[j["entity_type"] == "action"]
    assert (acts["pos"].notna() | acts["reason"].notna()).all()
    assert (acts.loc[acts["observed"] == "REUSE", "join"] == "output-event-id").any()


@pytest.mark.parametrize("name", sorted(samples.INCONSISTENT))
def test_the_inconsistent_variant_is_caught_and_the_rule_named(name: str) -> None:
    other = samples.INCONSISTENT[name]
    v = _verify(name, LOGS / f"{name}.{other}-rule.trace.log")
    assert not v.agree
    assert set(v.disagreements["cause"]) == {"wrong-rule"}
    assert all(f"rule {other}" in e for e in v.disagreements["explanation"])
    assert v.best()["rule"] == other and v.best()["disagree"] == 0
    # the rule named; when other configurations explain the trace as well, they are named as a tie
    fully = v.summary_text().partition("agrees fully under ")[2]
    assert other in fully
    names = set(v.ranking.loc[v.ranking["disagree"] == 0, "name"])
    assert (len(names) > 1) == ("tied configurations" in fully)
    # predicted under that rule, the same trace agrees
    assert _verify(name, LOGS / f"{name}.{other}-rule.trace.log", rule=other).agree


def test_infer_ranks_rules_and_runtimes_even_when_everything_agrees() -> None:
    v = _verify("N04", infer=True)
    assert v.agree and v.ranking is not None
    assert {"original", "fixed"} <= set(v.ranking["rule"])
    assert {"auto", "kafka-k1", "fluss-k1", "segment"} <= set(v.ranking["store_flavour"])
    top = v.ranking[v.ranking["disagree"] == 0]
    assert "original" in set(top["name"]) and "fixed" not in set(top["name"])


def test_g02_without_the_agent_names_the_limit_of_the_log_only_model() -> None:
    v = _verify("G02")
    assert not v.agree and set(v.mismatches["cause"]) == {"agent-model"}
    # the log cannot tell: not a disagreement
    assert v.verdict == Verdict.UNDETERMINED and v.disagreements.empty and len(v.undetermined) == 1
    assert "cannot decide 1 of" in v.summary_text() and "log-only agent" in v.summary_text()
    assert _verify("G02", agent=samples.scenario("G02").agent).agree


def test_a_cut_off_trace_is_named(tmp_path: Path) -> None:
    lines = (LOGS / "N04.trace.log").read_text(encoding="utf-8").splitlines()
    cut = lines[:9] + [lines[9][:40]]                # the second round's WA never shows, last line cut
    p = tmp_path / "cut.log"
    p.write_text("\n".join(cut) + "\n", encoding="utf-8")
    v = _verify("N04", p)
    assert not v.agree and v.verdict == Verdict.UNDETERMINED
    bad = v.undetermined
    assert list(bad["action"]) == ["WA"] and set(bad["cause"]) == {"trace-truncated"}
    assert any("could not be read" in n for n in v.notes)


def test_a_missing_key_is_named(tmp_path: Path) -> None:
    t = load_trace(LOGS / "subagents.trace.log")
    recs = [json.loads(line) for line in (LOGS / "subagents.trace.log").read_text(encoding="utf-8").splitlines()]
    kept = [r for r in recs if r.get("businessKey") != "order-2"]
    assert len(kept) < len(recs) and len(t.records) == len(recs)
    p = write_trace(kept, tmp_path / "one-key.log")
    v = _verify("subagents", p)
    assert not v.agree
    assert set(v.disagreements["cause"]) == {"trace-missing"} and v.verdict == Verdict.DISAGREE
    assert set(v.disagreements["key"]) == {"order-2"}


def test_a_reuse_the_log_cannot_show_is_named(tmp_path: Path) -> None:
    recs = [json.loads(line) for line in (LOGS / "N04.trace.log").read_text(encoding="utf-8").splitlines()]
    extra = dict(recs[1])                                          # IA reused, for a key the log never saw
    extra.update(businessKey="ghost", executionId="00000000-0000-4000-8000-000000000001")
    p = write_trace([*recs, extra], tmp_path / "ghost.log")
    v = _verify("N04", p)
    row = v.undetermined.iloc[0]
    assert len(v.mismatches) == 1 and row["key"] == "ghost" and pd.isna(row["predicted"])
    assert v.verdict == Verdict.UNDETERMINED
    assert row["cause"] == "invisible-reuse" and "§10.3" in row["explanation"]
    j = v.joined.set_index("execution_id")
    assert "not in the log" in j.loc["00000000-0000-4000-8000-000000000001", "reason"]


def test_markers_of_another_restore_are_named() -> None:
    # N04's trace restores from the start of the log; a marker after round 5 leaves A's records out
    log = ai.load(LOGS / "N04.jsonl")
    v = verify(log, LOGS / "N04.trace.log", markers=[{0: 4}], restore=_restore("N04"))
    assert not v.agree
    assert "markers" in set(v.disagreements["cause"])


def test_store_flavour_is_validated_and_recorded() -> None:
    with pytest.raises(ai.InspectError, match="unknown store flavour 'v9'"):
        _verify("N04", store_flavour="v9")
    v = _verify("N04", store_flavour="segment")
    assert v.store_flavour == "segment" and v.rule == "original:segment" and v.agree and not v.what_if
    assert v.runtime == "0.4" and STORE_FLAVOURS[0] == "auto" and "wrong-runtime" in CAUSES


def test_a_trace_mixing_jobs_needs_a_job(tmp_path: Path) -> None:
    text = (LOGS / "N04.trace.log").read_text(encoding="utf-8")
    for job in ("1" * 32, "2" * 32):
        (tmp_path / f"traces-{job}-op-0.log").write_text(text, encoding="utf-8")
    with pytest.raises(ai.InspectError, match="mixes 2 jobs"):
        _verify("N04", load_trace(tmp_path))
    assert _verify("N04", load_trace(tmp_path), job="2" * 32).agree


def test_a_prediction_or_a_reconstruction_can_be_verified() -> None:
    log = ai.load(LOGS / "N04.jsonl")
    s = samples.scenario("N04")
    pred = ai.recovery.predict(log, plan=None, agent=s.agent, rule="original", markers=samples.markers("N04"))
    # predict's own plan replays the log's rounds (A, B), which is what N04's trace shows
    assert verify(pred, LOGS / "N04.trace.log").agree
    recon = ai.reconstruct(log, rule="original", markers=samples.markers("N04"))
    assert verify(recon, LOGS / "N04.trace.log", restore=_restore("N04")).agree
    d = verify(recon, LOGS / "N04.trace.log").to_dict()
    assert json.loads(json.dumps(d)) == d and d["agree"] is True


def test_explanations_are_escaped_in_html(tmp_path: Path) -> None:
    recs = [json.loads(line) for line in (LOGS / "N04.trace.log").read_text(encoding="utf-8").splitlines()]
    extra = dict(recs[1])
    extra.update(businessKey="<img src=x onerror=alert(1)>", executionId="e-1", entityName="<b>x</b>")
    p = write_trace([*recs, extra], tmp_path / "xss.log")
    html = _verify("N04", p)._repr_html_()
    assert "<img" not in html and "<b>x</b>" not in html and "&lt;img" in html


def test_restored_in_flight_tasks_are_read_from_the_trace_and_the_log() -> None:
    # without the markers file's restore entry: a traced task whose trigger this trace never emitted was
    # restored from the checkpoint; its event is the stored output of the record that sent it
    log = ai.load(LOGS / "production.jsonl")
    pending = _restore("production")["pending"]
    assert pending
    from agent_inspect.trace import plan_from_trace

    plan = plan_from_trace(load_trace(LOGS / "production.trace.log"), log, markers=samples.markers("production"))
    assert sorted((p.key, p.seq, p.action, p.event.id) for p in plan.pending) == \
        sorted((k, s, a, e["id"]) for k, s, a, e in pending)
    assert verify(log, LOGS / "production.trace.log", markers=samples.markers("production")).agree


def test_a_store_flavour_of_another_rule_is_refused_and_a_what_if_is_labelled() -> None:
    with pytest.raises(ai.InspectError, match="applies to the original rule only"):
        _verify("N04", rule="fixed", store_flavour="kafka-k1")
    v = _verify("N04", rule="fixed")
    assert v.what_if and "what-if" in v.summary_text() and v.to_dict()["what_if"] is True


def test_an_unreadable_or_empty_trace_is_named_not_a_crash(tmp_path: Path) -> None:
    bad = tmp_path / "bad.log"
    bad.write_text('garbage\n{"x":\n', encoding="utf-8")
    with pytest.raises(SourceError, match="holds no Trace Log or Event Log record"):
        _verify("N04", bad)
    cut = tmp_path / "cut.log"
    cut.write_text('{"timestamp":"2026-09-14T08:00:52.047Z","detail":"STANDARD","entityType":"event"\n{"x":\n',
                   encoding="utf-8")
    v = _verify("N04", cut)
    # records were lost: a key the readable part never names may have been in them, so the trace cannot tell
    assert not v.agree and v.verdict == "undetermined" and set(v.tasks["cause"].dropna()) == {"trace-truncated"}
    assert "could not be read" in v.tasks["explanation"].dropna().iloc[0]
    assert any("could not be read" in n for n in v.notes) and any("no action execution" in n for n in v.notes)
    empty = tmp_path / "empty.log"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ai.InspectError, match="empty.log holds no Trace Log record"):   # it read DISAGREE (trace-missing)
        _verify("N04", empty)


def test_a_restore_that_crashes_at_a_lookup_is_absent_as_predicted() -> None:
    v = _verify("P01")            # the snapshot's strict key parser throws at the first lookup: the job restarts
    assert v.agree and list(v.tasks["predicted"]) == ["FAIL"] and list(v.tasks["observed"]) == ["ABSENT"]
    assert v.absent() == 0        # nothing predicted to run is missing from the trace
    text = v.summary_text()
    assert text.startswith("the one task agrees with the trace under rule original")
    assert "1 task fails its lookup (the restore crashes there) and is absent from the trace, as predicted" in text
    assert "predicted to run" not in text and v.headline() == "agrees"


def test_ranking_counts_tasks_per_verdict_as_the_chosen_rule_does(tmp_path: Path) -> None:
    # G02: one task the log-only agent cannot decide (agent-model); a cut N04 trace: one it cannot see (trace-truncated)
    lines = (LOGS / "N04.trace.log").read_text(encoding="utf-8").splitlines()
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(lines[:9] + [lines[9][:40]]) + "\n", encoding="utf-8")
    for v in (_verify("G02", infer=True), _verify("N04", cut, infer=True)):
        assert v.verdict == Verdict.UNDETERMINED and v.counts()["disagree"] == 0
        own = v.ranking[(v.ranking["name"] == v.rule) & (v.ranking["markers"] == "given")].iloc[0]
        assert {k: int(own[k]) for k in ("agree", "disagree", "undetermined")} == v.counts()
        assert int(own["tasks"]) == len(v.tasks)
        assert (v.ranking[["agree", "disagree", "undetermined"]].sum(axis=1) == v.ranking["tasks"]).all()
    # a wrong rule still disagrees: the bucket is for what the trace cannot tell, not for everything
    assert int(_verify("N04", infer=True).ranking.set_index("name").loc["fixed", "disagree"]) == 2


def test_one_disagreeing_task_reads_in_the_singular() -> None:
    one = _verify("G01", LOGS / "G01.fixed-rule.trace.log").summary_text()   # it read "1 of 3 tasks disagree"
    assert one.startswith("1 of 3 tasks disagrees with the trace under rule original (wrong-rule 1)"), one
    two = _verify("N04", LOGS / "N04.fixed-rule.trace.log").summary_text()
    assert two.startswith("2 of 4 tasks disagree with the trace"), two
