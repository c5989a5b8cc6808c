"""The static prediction: replay plan, ledger, sub-agent ids, durable-call matching, invariants."""

from __future__ import annotations

import contextlib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.agents import ActionDecl, AgentEvent, BaseAgent
from agent_inspect.cases import build_case, load_cases, run_case
from agent_inspect.cases._format import parse_case
from agent_inspect.recovery import KeyIdentity, ReplayInput, ReplayPlan, predict
from agent_inspect.recovery.engine import CallEvent, CallJournal, CallSlot
from agent_inspect.rules import resolve_rule
from agent_inspect.store import RecoverySession

ROOT = Path(__file__).resolve().parents[2]
BY_ID = {c.id: c for c in load_cases(ROOT / "cases")}


def test_plan_inferred_from_the_log_and_as_recorded_agent():
    built = build_case(BY_ID["N04"])
    plan = ReplayPlan.from_log(built.log)
    assert plan.restored_seq == {"k": 4}
    assert [(i.key, i.display, i.event.id) for i in plan.inputs] == [("k", "A", None), ("k", "B", None)]
    fixed = predict(built.log, rule="fixed")                  # default plan, AsRecordedAgent, whole log
    assert list(fixed.tasks["outcome"]) == ["REUSE"] * 4
    original = predict(built.log, rule="original")
    assert list(original.tasks["outcome"]) == ["REUSE", "REUSE", "RERUN", "RERUN"]
    # the as-recorded rerun of B's IA regenerated W(b) with a fresh id, which WA then handled
    assert original.tasks["event_type"].tolist()[-1] == "WorkEvent"
    assert original.tasks["event_id"].iloc[-1] not in set(built.log.records["task_event_id"])


def test_plan_from_log_takes_each_round_latest_root_in_seq_order():
    # G03: att3 rewrote A@5 after C@6; N09: two keys interleave by arrival
    g03 = ReplayPlan.from_log(build_case(BY_ID["G03"]).log)
    assert [i.display for i in g03.inputs] == ["A", "C"] and g03.restored_seq == {"k": 4}
    g01 = ReplayPlan.from_log(build_case(BY_ID["G01"]).log)
    assert [i.display for i in g01.inputs] == ["B", "C"]            # the later attempt's input at seq 5
    n09 = ReplayPlan.from_log(build_case(BY_ID["N09"]).log)
    assert [(i.key, i.display) for i in n09.inputs] == [("k", "A"), ("k2", "X"), ("k", "B")]
    assert n09.restored_seq == {"k": 4, "k2": 6}
    assert n09.keys["k2"].key_text == "k2" and n09.keys["k2"].key_format == "K1.5"


def test_predict_from_a_reconstruction_uses_its_rule_and_markers():
    from agent_inspect.recovery import reconstruct

    built = build_case(BY_ID["N13"])
    result = reconstruct(built.log, rule="original", markers=list(built.markers))
    pred = predict(result, plan=built.plan, agent=built.agent)
    assert pred.rule == "original"
    assert list(pred.tasks["outcome"]) == ["REUSE", "REUSE", "REUSE"]
    # without the marker the whole log is rebuilt: round 5 then holds two records and B's round is evicted
    whole = predict(built.log, plan=built.plan, agent=built.agent, rule="original")
    assert list(whole.tasks["outcome"]) == ["REUSE", "RERUN", "RERUN", "NOT-DISPATCHED"]   # IA@5 is cached, unused


def test_restored_child_tasks_are_dropped_on_resume():
    import tomllib

    data = tomllib.loads((ROOT / "cases" / "S01.toml").read_text())
    data.update(replay=[], pending=[{"key": "k", "seq": 5, "action": "P", "event": "In(A)#a1"},
                                    {"key": "k", "seq": 5, "action": "CA", "event": "Sub(s0,s0-1,_input_event)#b1"}],
                keys={"k": {"restored_seq": 5}}, expect={"fixed": "pending.P#a1=RESUME CA=REUSE"})
    (case,) = parse_case(data)
    result = run_case(case, "fixed")
    assert result.passed, result.mismatches
    assert result.predicted[1].startswith("k:pending.CA#new")           # the regenerated bootstrap, not #b1
    assert any("dropped the restored child task CA" in w for w in result.prediction.warnings)


def test_ledger_counts_bodies_and_calls():
    n07 = build_case(BY_ID["N07"])
    original = run_case(BY_ID["N07"], "original", built=n07).prediction
    totals = {(r.kind, r.name): r.count for r in original.ledger_totals().itertuples()}
    assert totals == {("body", "IA"): 1, ("body", "WA"): 1, ("call", "my_agent.ask_llm"): 1}
    fixed = run_case(BY_ID["N07"], "fixed", built=n07).prediction
    totals = {(r.kind, r.name): r.count for r in fixed.ledger_totals().itertuples()}
    assert totals == {("body", "WA"): 1, ("replayed", "my_agent.ask_llm"): 1}
    assert fixed.reruns() == 1 and original.reruns() == 2
    assert fixed.calls_executed() == {} and original.calls_executed() == {"my_agent.ask_llm": 1}
    ev = original.evictions
    assert ev[["op", "step", "business_key", "seq", "removed"]].values.tolist() == [["evict", "lookup", "k", 5, 2]]
    last_write = {n: max(p for p, m in n07.line_of_pos.items() if m == n) for n in (3, 4)}
    assert sorted(ev["positions"].iloc[0]) == [last_write[3], last_write[4]]     # the cached (last) writes


def test_html_is_escaped():
    probe = "<img src=x onerror=alert(1)>"
    data = {"id": "X1", "replay": [f"k:In({probe})"],
            "log": [{"att": 1, "key": "k", "seq": 5, "action": "IA", "event": f"In({probe})", "status": "C"}],
            "keys": {"k": {"text": "<script>alert(1)</script>"}},
            "agent": {"actions": [{"name": "IA", "triggers": ["_input_event"]}]}}
    (case,) = parse_case(data)
    html = run_case(case, "fixed").prediction._repr_html_()
    assert "<script>" not in html and "<img" not in html and "&lt;img" in html


class _Caller(BaseAgent):
    """Calls sub-agent ``reviewer`` without fixing ids: the context allocates them (spec §11.2)."""

    def __init__(self) -> None:
        super().__init__([ActionDecl("caller", ("_input_event",), "my_agent", "MyAgent.caller"),
                          ActionDecl("review", ("_input_event",), "reviewer_agent", "ReviewerAgent.review",
                                     scope="reviewer")])

    def run_action(self, action, ctx):
        if action == "caller":
            ctx.call_subagent("reviewer", "_input_event", {"input": "review this diff"})
        else:
            ctx.send_event("_output_event", {"output": "LGTM"})


def test_subagent_ids_follow_the_spec_namespace():
    plan = ReplayPlan(inputs=(ReplayInput("user-42", AgentEvent("_input_event", {"input": "hello"}, "e1")),),
                      restored_seq={"user-42": 6},
                      keys={"user-42": KeyIdentity("user-42", "K1.5", key_text="user-42", key_group=20)})
    pred = predict(None, plan=plan, agent=_Caller(), session=RecoverySession(resolve_rule("fixed")))
    assert list(pred.tasks["action"]) == ["caller", "review"]
    assert list(pred.tasks["outcome"]) == ["RERUN", "RERUN"]
    session = "2def7c78-fd9b-3b6b-86fe-9cc1a5e10e0e-0"           # spec §11.2 / Example E
    assert pred.calls_executed() == {}      # a sub-agent call is no durable call: the executor's calls_subagent
    assert pred.tasks["calls_subagent"].tolist() == [1, 0]
    assert pred.ledger.loc[pred.ledger["kind"] == "subagent", "name"].tolist() == [f"{session}#{session}-1"]
    assert pred.tasks["scope"].isna().tolist() == [True, False] and pred.tasks["scope"].iloc[1] == "reviewer"
    # the child's state key is Example E's key (same event UUID and action UUID)
    assert pred.tasks["state_key"].iloc[1] == ("20_7_18345cf7-092b-3fe4-a44f-023ccdf2b7d9_"
                                               "f1e3095c-4432-36f3-9de3-9604b7ecc004_user-42")


# -- durable calls (§9.4) ----------------------------------------------------------------------------

_IDS = st.tuples(st.sampled_from(["f", "g"]), st.sampled_from(["", "d1"]))


@settings(deadline=None, max_examples=80)
@given(st.lists(st.tuples(_IDS, st.sampled_from(["SUCCEEDED", "FAILED", "PENDING"])), max_size=5),
       st.lists(_IDS, max_size=6))
def test_completion_only_calls_match_by_position(recorded, body):
    journal, decisions = _journal([((fn, d), s) for (fn, d), s in recorded])
    outcomes = [_call(journal, decisions, fn, d) for fn, d in body]
    prefix = 0
    while prefix < min(len(recorded), len(body)) and recorded[prefix][0] == body[prefix]:
        prefix += 1
    served = [o for o in outcomes if o.outcome in ("hit", "hit-failed", "pending-hit")]
    assert len(served) == prefix
    assert [o.outcome == "hit-failed" for o in served] == [s == "FAILED" for _, s in recorded[:prefix]]
    assert sum(o.outcome == "execute" for o in outcomes) == len(body) - prefix
    mismatch = prefix < len(recorded) and prefix < len(body)
    assert len(journal.warnings) == int(mismatch)
    if len(body) > prefix:
        assert [(s.function_id, s.args_digest) for s in journal.results] == [i for i, _ in recorded[:prefix]] + \
            list(body[prefix:])
    else:
        assert len(journal.results) == len(recorded)


def _journal(recorded: list[tuple[tuple[str, str], str]]) -> tuple[CallJournal, list[CallEvent]]:
    decisions: list[CallEvent] = []
    slots = [CallSlot(fn, d, s) for (fn, d), s in recorded]  # type: ignore[arg-type]
    return CallJournal(slots, report=decisions.append, deliver=False), decisions


def _call(journal: CallJournal, decisions: list[CallEvent], fn: str, digest: str,
          reconciler: object = None) -> CallEvent:
    start = len(decisions)
    with contextlib.suppress(Exception):   # a failure (recorded, or the call's own) reaches the body, which goes on
        journal.call(fn, digest, lambda: None, reconciler=reconciler)  # type: ignore[arg-type]
    return decisions[-1] if len(decisions) > start else decisions[start - 1]


def test_reconcilable_paths():
    pending, seen = _journal([(("crm", "d"), "PENDING")])
    assert _call(pending, seen, "crm", "d", reconciler=lambda: None).outcome == "reconcile"
    assert pending.results[0].status == "SUCCEEDED"

    def boom():
        raise RuntimeError("reconciler failed")

    failing, seen = _journal([(("crm", "d"), "PENDING")])
    assert _call(failing, seen, "crm", "d", reconciler=boom).outcome == "reconcile"
    assert failing.results[0].status == "FAILED"
    other, seen = _journal([(("crm", "d"), "SUCCEEDED"), (("x", ""), "SUCCEEDED")])
    out = _call(other, seen, "mail", "e", reconciler=lambda: None)
    assert out.outcome == "execute" and [d.outcome for d in seen] == ["truncate", "pending", "execute"]
    assert seen[0].index == 0
    assert [(s.function_id, s.status) for s in other.results] == [("mail", "SUCCEEDED")]
    done, seen = _journal([(("crm", "d"), "FAILED")])
    assert _call(done, seen, "crm", "d", reconciler=lambda: None).outcome == "hit-failed"


# -- invariants over generated normal histories ------------------------------------------------------------

@st.composite
def normal_history(draw):
    """One attempt, no failure: n inputs, several roots per input, each fanning out to distinct children."""
    n_inputs = draw(st.integers(1, 4))
    n_roots = draw(st.integers(1, 3))
    fanout = draw(st.integers(0, 2))
    key_format = draw(st.sampled_from(["K1.5", "K2", "K1"]))
    source = draw(st.sampled_from(["kafka", "fluss"]))
    log, on = [], {}
    for i in range(n_inputs):
        x = chr(ord("A") + i)
        children = []
        for r in range(n_roots):
            outs = [f"W({x}-{r}-{j})#w{i}.{r}.{j}" for j in range(fanout)]
            on.setdefault(f"R{r}", {})[f"In({x})"] = [{"emit": f"W({x}-{r}-{j})"} for j in range(fanout)]
            log.append({"att": 1, "key": "k", "seq": 5 + i, "action": f"R{r}", "event": f"In({x})#in{i}",
                        "status": "C", "out": outs})
            children += [o for o in outs]
        log += [{"att": 1, "key": "k", "seq": 5 + i, "action": "WA", "event": c, "status": "C"} for c in children]
    actions = [{"name": f"R{r}", "triggers": ["_input_event"]} for r in range(n_roots)]
    actions.append({"name": "WA", "triggers": ["WorkEvent"]})
    data = {"id": "H", "replay": [f"k:In({chr(ord('A') + i)})" for i in range(n_inputs)], "log": log,
            "setup": {"key_format": key_format, "source": source},
            "agent": {"actions": actions, "on": on}}
    (case,) = parse_case(data)
    return case, n_inputs, n_roots * (1 + fanout)


@settings(deadline=None, max_examples=15)
@given(normal_history())
def test_fixed_reuses_every_completion_and_original_overevicts(history):
    case, n_inputs, per_round = history
    built = build_case(case)
    fixed = run_case(case, "fixed", built=built).prediction
    assert list(fixed.tasks["outcome"]) == ["REUSE"] * (n_inputs * per_round)   # the #1301 acceptance criterion
    original = run_case(case, "original", built=built).prediction
    outcomes = list(original.tasks["outcome"])
    assert outcomes[:per_round] == ["REUSE"] * per_round
    later = outcomes[per_round:]
    if per_round == 1:
        assert later == ["REUSE"] * len(later)                       # one record per round: no false divergence
    else:
        assert later == ["RERUN"] * len(later)                       # #1301: every later round re-executes
        assert original.reruns() == (n_inputs - 1) * per_round


@st.composite
def branch_change(draw):
    """att1 ran A@5 and failed; att2 ran B@5 and C@6 and failed; the replay is A, C (spec §10.2 item 1)."""
    n_roots = draw(st.integers(1, 2))
    fanout = draw(st.integers(0, 2))
    shared_children = draw(st.booleans())          # B's children collide with A's (same attributes, G02)
    key_format = draw(st.sampled_from(["K1.5", "K2"]))
    log, on = [], {}

    def execution(att, x, seq, stale):
        lines, kids = [], []
        for r in range(n_roots):
            attrs = [f"{r}-{j}" if shared_children else f"{x}-{r}-{j}" for j in range(fanout)]
            on.setdefault(f"R{r}", {})[f"In({x})"] = [{"emit": f"W({a})"} for a in attrs]
            lines.append({"att": att, "key": "k", "seq": seq, "action": f"R{r}", "event": f"In({x})",
                          "status": "C", "out": [f"W({a})" for a in attrs], "stale": stale})
            kids += [{"att": att, "key": "k", "seq": seq, "action": "WA", "event": f"W({a})", "status": "C",
                      "stale": stale} for a in attrs]
        return lines + kids

    log = execution(1, "A", 5, False) + execution(2, "B", 5, True) + execution(2, "C", 6, True)
    actions = [{"name": f"R{r}", "triggers": ["_input_event"]} for r in range(n_roots)]
    actions.append({"name": "WA", "triggers": ["WorkEvent"]})
    (case,) = parse_case({"id": "BC", "replay": ["k:In(A)", "k:In(C)"], "log": log,
                          "setup": {"key_format": key_format}, "agent": {"actions": actions, "on": on}})
    return case


@settings(deadline=None, max_examples=10)
@given(branch_change())
def test_branch_changes_are_never_reused_by_the_fixed_family(case):
    built = build_case(case)
    for rule in ("fixed", "lookup-only", "branch-aware", "fixed+round-regression"):
        result = run_case(case, rule, built=built)
        assert not result.stale, (rule, result.predicted)
        c_tasks = result.prediction.tasks[result.prediction.tasks["input"] == "C"]
        assert set(c_tasks["outcome"]) == {"RERUN"}
    naive = run_case(case, "naive", built=built)
    assert naive.stale                                    # naive keeps C's B-era records: stale reuse
