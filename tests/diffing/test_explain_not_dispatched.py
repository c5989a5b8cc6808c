"""``explain`` answers for every task ``predict`` lists: a NOT-DISPATCHED one is explained as one (no lookup
reached it), with no lookup or rebuild step it never had; a task that is not listed at all is a one-line error."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.diffing import SelectorError


@pytest.fixture(scope="module")
def production():
    log = ai.load(ai.samples.path("production"))
    markers = ai.samples.markers("production")
    return log, markers, ai.predict(log, markers=markers)


def test_a_task_predict_lists_as_not_dispatched_is_explained_as_one(production) -> None:
    log, markers, prediction = production
    listed = prediction.tasks[prediction.tasks["outcome"] == "NOT-DISPATCHED"]
    assert len(listed) == 10
    row = listed.iloc[0]
    why = ai.explain(log, row["key"], int(row["seq"]), row["action"], markers=markers)
    assert why.outcome == "NOT-DISPATCHED" and why.reason == row["reason"]
    assert [s.kind for s in why.steps] == ["outcome", "dispatch"]
    assert int(row["entry_pos"]) in why.cause.positions
    assert "lookup" not in why.story()


def test_a_not_dispatched_task_has_no_cost_line_in_text_html_or_widget(production) -> None:
    # nothing runs and nothing is reused: a "cost of this decision: 0 bodies, 0 calls" line is noise
    from agent_inspect.widgets import ExplainView

    log, markers, prediction = production
    row = prediction.tasks[prediction.tasks["outcome"] == "NOT-DISPATCHED"].iloc[0]
    why = ai.explain(log, row["key"], int(row["seq"]), row["action"], markers=markers)
    assert why.cost == {} and why.to_dict()["cost"] == {}
    assert "cost" not in why.story() and "nothing ran, nothing was reused" in why.story()
    assert "cost" not in why._repr_html_()
    view = ExplainView(why).story.value
    assert "ai-explain-cost" not in view and "nothing ran, nothing was reused" in view
    rerun = ai.explain(log, "user-0019", 2, "triage", markers=markers)     # a dispatched task keeps its cost
    assert rerun.cost and "ai-explain-cost" in ExplainView(rerun).story.value


def test_the_same_task_by_its_row_gives_the_same_chain(production) -> None:
    log, markers, prediction = production
    i = int((prediction.tasks["outcome"] == "NOT-DISPATCHED").to_numpy().nonzero()[0][0])
    row = prediction.tasks.iloc[i]
    by_row = ai.explain(log, task=i, markers=markers)
    by_name = ai.explain(log, row["key"], int(row["seq"]), row["action"], markers=markers)
    assert by_row.steps == by_name.steps and by_row.task == by_name.task == i


def test_a_dispatched_task_is_still_found_first(production) -> None:
    log, markers, _ = production
    why = ai.explain(log, "user-0019", 2, "triage", markers=markers)
    assert why.outcome == "RERUN" and why.steps[1].kind == "lookup"


def test_a_task_nobody_lists_is_a_one_line_error(production) -> None:
    log, markers, _ = production
    with pytest.raises(SelectorError, match=r"^no task user-0019@2 nope; tasks there: .*user-0019@2 triage"):
        ai.explain(log, "user-0019", 2, "nope", markers=markers)


def test_a_key_or_round_with_no_task_is_named_with_what_there_is(production) -> None:
    # an unknown key listed other keys' tasks at that round; a round the restore does not replay said "none"
    log, markers, _ = production
    with pytest.raises(SelectorError, match=r"^no task user-9999@2 triage: the prediction has no task of business "
                                            r"key 'user-9999'; did you mean .*'user-0019'"):
        ai.explain(log, "user-9999", 2, "triage", markers=markers)
    with pytest.raises(SelectorError, match=r"^no task user-0019@99 triage: business key user-0019's tasks are at "
                                            r"rounds 1, 2, 3, 4$"):
        ai.explain(log, "user-0019", 99, "triage", markers=markers)
    with pytest.raises(SelectorError, match=r"^no task zz@0 triage: the prediction has no task of business key 'zz'; "
                                            r"its tasks list"):
        ai.explain(log, "zz", 0, "triage", markers=markers)
    # a key of the log that the restore does not replay is not a typo to correct
    with pytest.raises(SelectorError, match=r"^no task user-0013@1 triage: business key 'user-0013' is in the log, "
                                            r"but the restore runs no task of it"):
        ai.explain(log, "user-0013", 1, "triage", markers=markers)


def test_an_action_named_by_its_uuid_as_a_diff_shows_it_is_the_same_task(production) -> None:
    # the log and ai.diff name actions by UUID; explain rejected the UUID ("no task ... f6aaf3fe-...")
    log, markers, _ = production
    first = ai.diff(ai.diffing.attempt(log, "user-0019", 1), ai.diffing.attempt(log, "user-0019", 2)).first_divergences
    uuid = str(first["action_uuid"].iloc[0])
    assert ai.history.is_uuid(uuid)
    by_uuid = ai.explain(log, "user-0019", 2, uuid, markers=markers)
    by_name = ai.explain(log, "user-0019", 2, "triage", markers=markers)
    assert by_uuid.action == "triage" and by_uuid.steps == by_name.steps


def test_counts_of_one_are_singular() -> None:
    log, markers = ai.load(ai.samples.path("N04")), ai.samples.markers("N04")
    story = ai.explain(log, "k", 6, "WA", markers=markers).story()
    assert "cost of this decision downstream: 2 action bodies, 1 durable call run again" in story
    verification = ai.verify(log, ai.samples.path("N04", "trace"), markers=markers).with_tokens()
    assert verification.tokens.headline().endswith("tokens in 1 LLM call")


def test_a_what_if_explanation_says_so_on_its_first_line() -> None:
    log, markers = ai.load(ai.samples.path("N04")), ai.samples.markers("N04")
    first = ai.explain(log, "k", 6, "WA", markers=markers, rule="fixed").story().splitlines()[0]
    # worded by the one what-if mark every label uses (ai.log.rule_mark)
    assert first == "rule fixed (what-if; 0.4 ships original): not what the job does"
    assert first == f"rule {ai.log.rule_mark('fixed', ai.log.resolve_runtime('auto', log)).label}: not what the job does"
    assert ai.explain(log, "k", 6, "WA", markers=markers).story().startswith("WA at round 6 of k")


def test_the_html_shows_the_cost_and_what_the_also_rules_do(production) -> None:
    # str() had both lines; the HTML (what a notebook shows) dropped them, so also=["fixed"] showed no answer
    log, markers, _ = production
    why = ai.explain(log, "user-0019", 2, "triage", markers=markers, also=["fixed"])
    html = why._repr_html_()
    assert why.story().splitlines()[-2:] == ["cost of this decision downstream: 9 action bodies, 6 durable calls run "
                                             "again", "under rule fixed (what-if; 0.4 ships original): REUSE"]
    assert "9 action bodies, 6 durable calls run again" in html
    assert "under rule fixed (what-if; 0.4 ships original): REUSE" in html


def test_a_task_row_or_occurrence_that_is_not_there_is_a_one_line_error() -> None:
    # task=99 raised an IndexError, task=-1 explained the last task; occurrence=5 listed the task as if missing
    log, markers = ai.load(ai.samples.path("N04")), ai.samples.markers("N04")
    for row in (4, 99, -1):
        with pytest.raises(SelectorError, match=rf"^task={row}: pass the number of a row of prediction.tasks, 0 to 3 "
                                                rf"\(it has 4 "):
            ai.explain(log, task=row, markers=markers)
    # the row itself, which "pass task= a row of ai.predict(log).tasks" invited, printed all its fields
    row = ai.predict(log, markers=markers).tasks.iloc[0]
    with pytest.raises(SelectorError) as raised:
        ai.explain(log, task=row, markers=markers)
    assert str(raised.value) == "task= got a Series: pass the number of a row of prediction.tasks, 0 to 3 (it has 4 tasks)"
    with pytest.raises(SelectorError, match=r"or pass task= the number of a row of ai.predict\(log\).tasks "):
        ai.explain(log, markers=markers)
    with pytest.raises(SelectorError, match=r"^no task k@6 WA occurrence=5: it matches 1 task, and occurrence= "):
        ai.explain(log, "k", 6, "WA", markers=markers, occurrence=5)
    with pytest.raises(SelectorError, match=r"^occurrence=-1: pass 0 for the first match"):
        ai.explain(log, "k", 6, "WA", markers=markers, occurrence=-1)
    assert ai.explain(log, task=3, markers=markers).task == 3


def test_a_prediction_explained_as_it_is_keeps_its_what_if_mark(production) -> None:
    # explain(prediction, log=...) (and Diff.explain on a prediction side) read "rule fixed" with no what-if mark
    log, markers, prediction = production
    what_if = ai.predict(log, markers=markers, rule="fixed")
    why = ai.explain(what_if, "user-0001", 2, "triage", log=log)
    assert why.what_if and why.rule_label == "fixed (what-if; 0.4 ships original)"
    assert why.story().startswith("rule fixed (what-if; 0.4 ships original): not what the job does")
    assert why.steps == ai.explain(log, "user-0001", 2, "triage", markers=markers, rule="fixed").steps
    shipped = ai.explain(prediction, "user-0019", 2, "triage", log=log)
    assert not shipped.what_if and shipped.steps == ai.explain(log, "user-0019", 2, "triage", markers=markers).steps
