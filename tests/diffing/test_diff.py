"""ai.diff: alignment, statuses, field-level changes, first divergences, selectors, symmetry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

import agent_inspect as ai
from agent_inspect import codec
from agent_inspect.diffing import FieldChange, SelectorError, parse_selector, state_changes
from tests.support.diffs import mirrored, plain

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_logs").glob("*.jsonl"))
SAMPLES = [p for p in SAMPLES if not p.name.endswith(".kcat.jsonl")]


def assert_symmetric(a, b):
    ab, ba = ai.diff(a, b), ai.diff(b, a)
    assert plain(ab) == mirrored(ba)
    assert ab.counts()["only in a"] == ba.counts()["only in b"]
    assert ab.counts()["changed"] == ba.counts()["changed"]
    assert set(ab.first_divergences["seq"]) == set(ba.first_divergences["seq"])
    return ab


def test_public_names():
    assert set(ai.diffing.__all__) >= {"diff", "Diff", "explain", "Explanation", "attempt", "select", "parse_selector",
                                       "SelectorError", "Side", "FieldChange"}
    assert ai.diff is ai.diffing.diff
    assert ai.explain is ai.diffing.explain
    assert issubclass(SelectorError, ai.InspectError)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_a_log_against_itself_and_its_copies_is_empty(path):
    log = ai.load(str(path))
    d = ai.diff(log, log)
    assert d.empty and len(d) == 0 and d.first_divergences.empty
    assert d.counts()["same"] == len(d.pairs) > 0
    # the same records read from another format (a Kafka dump against a Parquet export): still empty
    other = ai.load(str(path.with_suffix(".parquet")))
    d2 = ai.diff(log, other)
    assert d2.empty, d2.first_divergences.to_dict("records")[:3]


def test_attempts_of_a_key_align_and_diff_symmetrically():
    log = ai.load(str(ROOT / "sample_logs" / "production.jsonl"))
    from agent_inspect.history import annotate

    ann = annotate(log.records)
    multi = ann.groupby(log.records["business_key"].astype(str))["attempt"].max()
    keys = list(multi[multi >= 2].index[:4])
    assert keys
    for key in keys:
        a1, a2 = ai.diffing.attempt(log, key, 1), ai.diffing.attempt(log, key, 2)
        d = assert_symmetric(a1, a2)
        c = d.counts()
        assert c["same"] + c["changed"] + c["only in a"] == len(a1.units)
        assert c["same"] + c["changed"] + c["only in b"] == len(a2.units)
        # attempts draw new event ids: ids are never what makes a pair differ
        for r in d.pairs.itertuples():
            assert all("id" not in ch.path.split(".")[-1] for ch in r.changes)


def test_rule_against_rule_names_the_first_divergence():
    case = next(c for c in ai.cases.load_cases(ROOT / "cases" / "N04.toml"))
    built = ai.cases.build_case(case)
    preds = [ai.recovery.predict(built.log, plan=built.plan, agent=built.agent, rule=r, markers=built.markers,
                                 new_id=built.id_factory()) for r in ("original", "fixed")]
    d = assert_symmetric(ai.diffing.as_side(preds[0], log=built.log), ai.diffing.as_side(preds[1], log=built.log))
    assert not d.empty
    first = d.first_divergence(built.log.records["business_key"].iloc[0])
    # N04: the original rule reruns B's round that the fixed rule reuses
    assert first["seq"] == 6 and first["where"] == "outcome"
    assert (first["expected"], first["actual"]) == ('"RERUN"', '"REUSE"')
    assert "decides differently" in first["why"]
    assert ai.diff(preds[0], preds[0]).empty


def _state(attrs, outs=(), stm=(), calls=(), completed=True):
    return codec.ActionState(
        task_event=codec.Event.new("_input_event", attrs, id="x"),
        output_events=tuple(codec.Event.new(t, a, id=f"o{i}") for i, (t, a) in enumerate(outs)),
        short_term_memory_updates=tuple(codec.MemoryUpdate(path=p, value=msgspec.Raw(v)) for p, v in stm),
        call_results=tuple(codec.CallResult(function_id=f, args_digest=d, status=s, result_payload=r)
                           for f, d, s, r in calls),
        completed=completed)


def test_field_changes_cover_events_outputs_memory_calls_and_completion():
    envelope = json.dumps({"serde": "kryo", "version": 1, "payload": "AAEC"}).encode()
    other = json.dumps({"serde": "kryo", "version": 1, "payload": "AAED"}).encode()
    a = _state({"input": "A"}, [("W", {"x": 1}), ("V", {})], [("m.a", envelope)],
               [("f", "d1", "SUCCEEDED", "gAR=")])
    b = _state({"input": "B"}, [("V", {}), ("W", {"x": 1})], [("m.a", other)],
               [("f", "d2", "SUCCEEDED", "gAS=")], completed=False)
    paths = {c.path: c for c in state_changes(a, b)}
    assert paths["task_event.attributes.input"].a == '"A"'
    assert "output_events.order" in paths
    assert paths["memory.short_term[0].value"].a.startswith("<") and "sha256" in paths["memory.short_term[0].value"].a
    assert paths["calls[0].args_digest"].b == '"d2"'
    assert "calls[0].result_payload" in paths and paths["completed"].b == "false"
    assert state_changes(a, a) == []
    removed = _state({"input": "A"}, [("W", {"x": 1}), ("V", {})], [("m.a", b"null")], [("f", "d1", "SUCCEEDED", "gAR=")])
    assert {c.path: (c.a, c.b) for c in state_changes(a, removed)}["memory.short_term[0].op"] == ("set", "removed")
    assert isinstance(next(iter(paths.values())), FieldChange)


@pytest.mark.parametrize(("text", "want"), [
    ("log.jsonl", {"source": "log.jsonl", "mode": "log"}),
    ("log.jsonl@fixed", {"mode": "predict", "rule": "fixed"}),
    ("log.jsonl@rule=original:fluss", {"mode": "predict", "rule": "original:fluss"}),
    ("log.jsonl@reconstruct=naive@key=k1", {"mode": "reconstruct", "rule": "naive", "key": "k1"}),
    ("kafka://b:9092/topic@attempt=2@runtime=v4", {"source": "kafka://b:9092/topic", "attempt": 2, "runtime": "v4"}),
    ("dir/with@sign/log.jsonl@attempt=1", {"source": "dir/with@sign/log.jsonl", "attempt": 1}),
    ("log.jsonl@markers=m.json", {"markers": "m.json"}),
    # every built-in name works bare, as --rule takes it: one with '+', and original with its store flavour
    ("log.jsonl@fixed+round-regression", {"source": "log.jsonl", "mode": "predict", "rule": "fixed+round-regression"}),
    ("log.jsonl@original:kafka-k1@key=k1", {"source": "log.jsonl", "rule": "original:kafka-k1", "key": "k1"}),
    ("kafka://user@host:9092/topic", {"source": "kafka://user@host:9092/topic", "mode": "log"}),
    ("log.jsonl@host:9092", {"source": "log.jsonl@host:9092", "mode": "log"}),
])
def test_selector_syntax(text, want):
    sel = parse_selector(text)
    for k, v in want.items():
        assert getattr(sel, k) == v


@pytest.mark.parametrize(("text", "message"), [
    ("log.jsonl@colour=red", "unknown selector"),
    ("log.jsonl@attempt=two", "attempt is a number"),
    ("log.jsonl@attempt=0", "numbered from 1"),
    ("log.jsonl@fixed@rule=naive", "one rule selector"),
    ("@fixed", "names no source"),
    ("log.jsonl@attempt", "needs a value"),
    ("", "empty diff side"),
])
def test_bad_selectors_say_what_is_wrong(text, message):
    with pytest.raises(SelectorError, match=message):
        parse_selector(text)


def test_selector_strings_load_and_select():
    path = str(ROOT / "sample_logs" / "N04.jsonl")
    d = ai.diff(f"{path}@original", f"{path}@fixed")
    assert not d.empty and d.a.kind == "prediction" and d.a.rule == "original"
    with pytest.raises(SelectorError, match="not in the log"):
        ai.diff(f"{path}@key=nope", path)
    with pytest.raises(SelectorError, match="no attempt 9"):
        ai.diff(f"{path}@attempt=9", path)
    with pytest.raises(ai.InspectError, match="unknown runtime 'v9'"):
        ai.diff(f"{path}@fixed@runtime=v9", path)
    with pytest.raises(SelectorError, match="cannot diff"):
        ai.diff(42, path)



def test_a_markers_selector_alone_predicts_a_runtime_alone_reads_the_log_and_an_unknown_word_is_an_unknown_selector():
    """``@markers=`` without a rule sets up a recovery: the side is what the restore does under the rule the runtime
    ships (it was the log as written, the setting ignored). ``@runtime=`` alone says how the log is read, as
    ``select(log, runtime=...)`` does. ``@bogus`` is no source to open."""
    path = str(ROOT / "sample_logs" / "N04.jsonl")
    markers = str(ROOT / "sample_logs" / "N04.markers.json")
    d = ai.diff(f"{path}@markers={markers}@runtime=0.3", f"{path}@markers={markers}@runtime=0.4")
    assert (d.a.kind, d.a.runtime, d.b.runtime) == ("prediction", "0.3", "0.4")
    assert d.a.label.endswith("N04.jsonl@predict=original@markers={0: 0}@runtime=0.3")
    assert ai.diff(f"{path}@markers={markers}", path).a.kind == "prediction"
    as_03 = ai.diffing.as_side(f"{path}@runtime=0.3")
    assert (as_03.kind, as_03.label) == ("log", f"{path}@runtime=0.3")
    assert ai.diffing.as_side(f"{path}@attempt=1@runtime=0.3").kind == "attempt"
    with pytest.raises(SelectorError, match="selects records as written, while a rule, markers or a recovery"):
        ai.diff(f"{path}@attempt=1@markers={markers}", path)
    with pytest.raises(SelectorError, match=r"unknown selector @fixd .*@original, @naive, @fixed.*did you mean @fixed\?"):
        ai.diff(f"{path}@fixd", path)
    with pytest.raises(SelectorError, match=r"unknown selector @bogus .*@runtime=$"):
        ai.diff(f"{path}@bogus", path)
    with pytest.raises(ai.SourceError, match="cannot open"):
        ai.diff(str(ROOT / "sample_logs" / "nope.jsonl"), path)

def test_reconstructions_under_two_rules():
    log = ai.load(str(ROOT / "sample_logs" / "G01.jsonl"))
    markers = json.loads((ROOT / "sample_logs" / "G01.markers.json").read_text())["markers"]
    a, b = ai.reconstruct(log, rule="original", markers=markers), ai.reconstruct(log, rule="fixed", markers=markers)
    d = assert_symmetric(a, b)
    assert not d.empty and {c.area for r in d.differences.itertuples() for c in r.changes} <= {"outcome"}


def test_an_executor_run_against_production():
    case = next(c for c in ai.cases.load_cases(ROOT / "cases" / "N04.toml"))
    ex = ai.cases.executor_for(case, rule="original")
    ex.run()
    built = ai.cases.build_case(case)
    d = ai.diff(built.log, ex)
    assert d.b.kind == "executor" and len(d.b.units) > 0
    # the replay reran B's round: those executions are in both, the replay's writes align with the log's
    assert d.counts()["only in b"] + d.counts()["same"] + d.counts()["changed"] == len(d.b.units)


def test_round_graph_colours_pairs():
    log = ai.load(str(ROOT / "sample_logs" / "production.jsonl"))
    from agent_inspect.history import annotate

    ann = annotate(log.records)
    key = str(log.records["business_key"][ann.index[ann["attempt"] == 2][0]])
    d = ai.diff(ai.diffing.attempt(log, key, 1), ai.diffing.attempt(log, key, 2))
    seq = int(d.pairs["seq"].iloc[-1])
    g = d.graph(key, seq)
    assert g.number_of_nodes() == int(((d.pairs["business_key"] == key) & (d.pairs["seq"] == seq)).sum())
    assert {g.nodes[n]["status"] for n in g} <= set(ai.diffing.STATUSES)
    assert g.number_of_edges() >= 1
    out = d.to_dict()
    json.dumps(out)
    assert out["counts"] == d.counts()


def test_a_log_against_its_prediction_or_reconstruction_compares_only_what_both_carry():
    # a log has no outcome and a prediction no record status: every pair read "changed: outcome null against
    # 'REUSE'" ("the recovery decides differently"), which no recovery did
    log = ai.load(str(ROOT / "sample_logs" / "N04.jsonl"))
    markers = json.loads((ROOT / "sample_logs" / "N04.markers.json").read_text())["markers"]
    for other in (ai.predict(log, markers=markers), ai.reconstruct(log, markers=markers)):
        d = ai.diff(log, other)
        assert d.counts()["same"] == 4 and d.empty, d.first_divergences
    shipped, what_if = ai.predict(log, markers=markers), ai.predict(log, markers=markers, rule="fixed")
    d = ai.diff(ai.diffing.as_side(shipped, log=log), ai.diffing.as_side(what_if, log=log))
    assert "outcome" in set(d.first_divergences["where"])       # two predictions still differ by outcome


def test_a_what_if_result_passed_as_a_side_is_labelled_one_and_stays_so_for_one_key():
    # a prediction or reconstruction object under a rule its runtime does not ship read "prediction@fixed",
    # what_if False; key= dropped the mark of a selector string's side
    log = ai.load(str(ROOT / "sample_logs" / "N04.jsonl"))
    markers = json.loads((ROOT / "sample_logs" / "N04.markers.json").read_text())["markers"]
    for make in (ai.predict, ai.reconstruct):
        d = ai.diff(make(log, markers=markers), make(log, markers=markers, rule="fixed"))
        assert not d.a.what_if and "what-if" not in d.a.label
        assert d.b.what_if and d.b.label.endswith("fixed (what-if; 0.4 ships original)") and d.b.runtime == "0.4"
    path = str(ROOT / "sample_logs" / "N04.jsonl")
    d = ai.diff(f"{path}@original", f"{path}@fixed", key="k")
    assert d.b.what_if and not d.a.what_if


def test_an_execution_a_prediction_has_no_task_for_is_not_called_never_executed():
    # a log against its prediction: the rounds before the markers are no task of the recovery; the reason read
    # "b never executed this action at this round: a recovery of b has no record of it to reuse", about a log
    log = ai.load(str(ROOT / "sample_logs" / "production.jsonl"))
    markers = json.loads((ROOT / "sample_logs" / "production.markers.json").read_text())["markers"]
    first = ai.diff(log, ai.predict(log, markers=markers)).first_divergences
    assert set(first["status"]) == {"only in a"}
    assert first["why"].str.startswith("the recovery b predicts runs no task for this action at this round").all()
    assert first["why"].str.endswith("while a executed it").all()
    swapped = ai.diff(ai.diffing.as_side(ai.predict(log, markers=markers), log=log), log).first_divergences
    assert swapped["why"].str.startswith("the recovery a predicts runs no task").all()
    attempts = ai.diff(ai.diffing.attempt(log, "user-0011", 1), ai.diffing.attempt(log, "user-0011", 2))
    assert attempts.first_divergences["why"].iloc[0].startswith("b never executed this action at this round: a "
                                                               "recovery of b has no record of it to reuse")


def test_a_bare_rule_of_your_own_in_a_side_says_to_write_predict():
    """`log.jsonl@my_rule:MyRule` (as `@fixed` is written) said "cannot open '…@my_rule:MyRule': No such file",
    sending the user to check a path that is fine."""
    path = str(ROOT / "sample_logs" / "N04.jsonl")
    for word in ("my_rule:MyRule", "rules/my_rule.py:MyRule"):
        with pytest.raises(SelectorError, match=rf"@{re.escape(word)}: a rule of your own .*@predict={re.escape(word)}"):
            ai.diff(f"{path}@{word}", path)
