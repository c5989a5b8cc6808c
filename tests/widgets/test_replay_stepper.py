from __future__ import annotations

import re

from _widget_agents import recovery_executor

from agent_inspect.widgets import ReplayStepper


def _counter(stepper: ReplayStepper, name: str) -> int:
    match = re.search(rf'data-name="{name}"[^>]*><b>(\d+)</b>', stepper.counters.value)
    assert match, stepper.counters.value
    return int(match.group(1))


def _plotted(stepper: ReplayStepper) -> list[int]:
    return sorted(int(x) for t in stepper.figure.data if t.name != "current" for x in t.x)


def test_buttons_move_the_executor_and_update_the_view():
    ex = recovery_executor()
    stepper = ReplayStepper(ex)
    assert _counter(stepper, "steps") == 0 and stepper.back_button.disabled
    assert "press Step" in stepper.detail.value

    stepper.step_button.click()
    assert len(ex.steps) == 1 and _counter(stepper, "steps") == 1
    assert "rebuild" in stepper.detail.value
    for _ in range(4):
        stepper.step_button.click()
    indices = [int(i) for i in ex.steps["index"]]
    assert len(indices) == 5 and _plotted(stepper) == indices
    current = [t for t in stepper.figure.data if t.name == "current"][0]
    assert list(current.x) == [indices[-1]]
    last_kind = str(ex.steps.iloc[-1]["kind"])
    assert f"<td>{last_kind}</td>" in stepper.detail.value

    stepper.back_button.click()
    assert len(ex.steps) == 4 and _plotted(stepper) == indices[:4]
    assert _counter(stepper, "steps") == 4


def test_run_to_breakpoint_then_to_the_end_and_reset():
    ex = recovery_executor()
    stepper = ReplayStepper(ex)
    ex.add_breakpoint(kind="reuse")
    stepper.run_button.click()
    assert str(ex.current.kind) == "reuse"
    assert _counter(stepper, "reused") == 1
    ex.breakpoints.clear()
    stepper.run_button.click()
    assert ex.done and stepper.step_button.disabled and stepper.run_button.disabled
    assert "finished" in stepper.status.value
    counters = ex.counters
    assert _counter(stepper, "bodies_executed") == counters.bodies_executed
    assert _counter(stepper, "calls_served") == counters.calls_served
    assert _counter(stepper, "calls_executed") == counters.calls_executed
    assert len(_plotted(stepper)) == len(ex.steps)
    # the memory of the current key only, folded
    last_key = str(ex.steps.iloc[-1]["key"])
    assert f"memory of key {last_key} at this step" in stepper.memory.value
    assert stepper.memory.value.startswith('<details class="ai-memory-fold">')
    others = set(map(str, ex.memory)) - {last_key}
    assert all(f"key {k} " not in stepper.memory.value for k in others)

    stepper.reset_button.click()
    assert len(ex.steps) == 0 and _counter(stepper, "steps") == 0 and not stepper.step_button.disabled
    assert _plotted(stepper) == []


def test_the_recovery_reuses_and_resumes_what_the_first_attempt_saved():
    ex = recovery_executor()
    stepper = ReplayStepper(ex)
    stepper.run()
    outcomes = set(ex.steps.loc[ex.steps["kind"] == "lookup", "outcome"])
    assert {"REUSE", "RESUME"} <= outcomes
    assert _counter(stepper, "calls_served") >= 1


def test_breakpoint_editor_and_store_view():
    ex = recovery_executor()
    stepper = ReplayStepper(ex)
    assert "no breakpoint" in stepper.breakpoints.value
    stepper.break_kind.value = "resume"
    stepper.break_button.click()
    assert len(ex.breakpoints) == 1 and "kind=resume" in stepper.breakpoints.value
    stepper.run_button.click()
    assert str(ex.current.kind) == "resume"
    key = ex.current.key
    cached = ex.cache[ex.cache["business_key"] == key]
    assert f"{len(cached)} of {len(ex.cache)} entries" in stepper.store.value
    stepper.break_seq.value = "x"
    stepper.break_button.click()
    assert "not a number" in stepper.status.value and len(ex.breakpoints) == 1
    stepper.clear_button.click()
    assert ex.breakpoints == [] and "no breakpoint" in stepper.breakpoints.value


def test_the_current_step_shows_the_readers_reason_and_keeps_the_rules_words():
    """A lookup's reason is the reader's (only where it removed or re-ran something); ``rule_note`` keeps the
    rule's words; both escaped (the key and action names carry script probes)."""
    from agent_inspect._html import escape

    ex = recovery_executor("original")
    stepper = ReplayStepper(ex)
    ex.add_breakpoint(kind="lookup", outcome="RERUN")
    stepper.run_button.click()
    rerun = ex.current
    assert rerun.reason.startswith("no cached record for this task: the lookup of ")
    assert "the lookup of task" not in rerun.reason
    assert f"<th>reason</th><td>{escape(rerun.reason)}</td>" in stepper.detail.value
    assert f"<th>rule_note</th><td>{escape(rerun.rule_note)}</td>" in stepper.detail.value
    assert "<script>" not in stepper.detail.value and "<img" not in stepper.detail.value
    quiet = next(s for s in ex.step_list if str(s.kind) == "lookup" and s.outcome == "REUSE" and s.reason is None)
    stepper.reset_button.click()
    ex.breakpoints.clear()
    ex.add_breakpoint(when=lambda s: s.index == quiet.index)
    stepper.run_button.click()
    assert ex.current.index == quiet.index
    assert "<th>reason</th>" not in stepper.detail.value and "<th>rule_note</th>" in stepper.detail.value
    eviction = next(s for s in ex.step_list if str(s.kind) == "eviction")
    assert eviction.reason.startswith("2 cached records of ") and " > 1" not in eviction.reason


def test_the_stepper_names_its_rule_and_labels_a_what_if():
    import agent_inspect as ai

    log, markers = ai.load(ai.samples.path("N04")), ai.samples.markers("N04")
    what_if = ReplayStepper(ai.ReplayExecutor(log, markers=markers, rule="fixed"))
    assert "fixed (what-if" in what_if.counters.value
    shipped = ReplayStepper(ai.ReplayExecutor(log, markers=markers))
    assert "<b>rule</b>: original" in shipped.counters.value and "what-if" not in shipped.counters.value


def test_a_count_of_one_reads_singular() -> None:
    """After the rebuild and one lookup the counters read "1 task looked up" (was "1 tasks looked up"); at the end
    "1 durable call made" and the memory "short-term: 1 entry" (was "1 entries")."""
    import agent_inspect as ai

    log = ai.load(ai.samples.path("N04"))
    stepper = ReplayStepper(ai.ReplayExecutor(log, markers=ai.samples.markers("N04")))
    stepper.step()
    stepper.step()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", stepper.counters.value))
    assert "1 task looked up" in text and "2 steps" in text and "0 tasks reused" in text
    assert not re.search(r"\b1 \w*s\b", text.replace("1 task looked up", ""))
    stepper.run()
    assert "1 durable call made" in re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", stepper.counters.value))
    memory = re.sub(r"<[^>]+>", " ", stepper.memory.value)
    assert "short-term: 1 entry " in memory and "sensory: 0 entries" in memory


def test_a_breakpoint_at_an_unknown_key_is_said_in_the_status() -> None:
    ex = recovery_executor()
    stepper = ReplayStepper(ex)
    stepper.break_key.value = "no-such-key"
    stepper.break_button.click()        # raised out of the button's callback, and the editor said nothing
    assert "no-such-key" in stepper.status.value and ex.breakpoints == []
