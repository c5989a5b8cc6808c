"""ExecutorOptions and the StepOutcome enum."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from agent_inspect.agents._python import PythonAgent
from agent_inspect.executor import (
    Breakpoint,
    ExecutorOptions,
    ReplayExecutor,
    StepKind,
    StepOutcome,
)
from agent_inspect.executor._options import OPTION_NAMES
from agent_inspect.recovery import SETTING_NAMES, Recovery


def _agent() -> PythonAgent:
    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"])
    def ia(event, ctx):
        ctx.durable_execute(str.upper, event.attributes["input"])
        ctx.send_event("_output_event", {"output": event.attributes["input"]})

    return agent


def _run(ex: ReplayExecutor) -> list[tuple[str, str | None]]:
    ex.run()
    return [(s.kind.value, s.outcome) for s in ex.step_list]


def test_options_and_keywords_build_the_same_executor():
    agent, plan = _agent(), {"inputs": [("k", "a"), ("k", "b")]}
    by_keywords = ReplayExecutor(rule="fixed", agent=agent, plan=plan, key_format="K1.5", seed=3, policies={"calls": "execute"})
    opts = ExecutorOptions(key_format="K1.5", seed=3, policies={"calls": "execute"})
    by_options = ReplayExecutor(recovery=Recovery.for_log(None, rule="fixed", agent=agent, plan=plan), options=opts)
    assert _run(by_keywords) == _run(by_options)
    assert by_keywords.steps.equals(by_options.steps)
    assert by_options.options == opts


def test_keywords_override_options():
    opts = ExecutorOptions(key_format="K1.5", seed=3, fail_after=1)
    setup = {"agent": _agent(), "plan": {"inputs": [("k", "a")]}}
    ex = ReplayExecutor(options=opts, fail_after=None, breakpoints=[Breakpoint(kind="persist")], **setup)
    assert ex.options.fail_after == 1             # None is the default: it does not override
    assert ex.options.breakpoints == (Breakpoint(kind="persist"),)
    assert ex.run() is None and ex.failure == "simulated failure after step 1"
    stop = ReplayExecutor(options=dataclasses.replace(opts, fail_after=None), breakpoints=[Breakpoint(kind="persist")],
                          **setup)
    assert stop.run().kind is StepKind.PERSIST
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.seed = 4  # type: ignore[misc]


def test_a_keyword_equal_to_the_default_still_overrides_options():
    # ExecutorOptions.updated used to drop a keyword whose value equals the default (issue 21)
    setup = {"agent": _agent(), "plan": {"inputs": [("k", "a")]}, "key_format": "K1.5", "seed": 3}
    ex = ReplayExecutor(options=ExecutorOptions(value_format="V4"), value_format="V3", **setup)
    assert ex.options.value_format == "V3"
    ex.run()
    assert not any(b"subagentResultEvents" in v for v in ex.journal.value if v is not None)   # V3, not V4
    v4 = ReplayExecutor(options=ExecutorOptions(value_format="V4"), **setup)
    v4.run()
    assert all(b"subagentResultEvents" in v for v in v4.journal.value if v is not None)
    kept = ReplayExecutor(options=ExecutorOptions(prune_tombstones=True), prune_tombstones=False, **setup)
    assert kept.options.prune_tombstones is False


def test_recovery_settings_and_executor_options_are_apart_and_documented():
    assert set(inspect.signature(ReplayExecutor).parameters) == {"subject", "recovery", "options", "overrides"}
    fields = {f.name for f in dataclasses.fields(ExecutorOptions)}
    assert fields == set(OPTION_NAMES) and not fields & set(SETTING_NAMES)
    doc = ExecutorOptions.__doc__ or ""
    assert all(f"``{name}``" in doc for name in fields)
    assert all(f"``{name}``" in (ReplayExecutor.__doc__ or "") for name in (*fields, *SETTING_NAMES))
    with pytest.raises(TypeError, match="unknown option"):
        ReplayExecutor(agent=_agent(), plan={"inputs": []}, rules="fixed")


def test_executor_default_rule_is_the_runtimes_and_a_what_if_says_so():
    setup = {"agent": _agent(), "plan": {"inputs": [("k", "a")]}}
    ex = ReplayExecutor(**setup)
    assert ex.recovery.rule.name == ex.runtime.default_rule == "original" and not ex.recovery.what_if
    fixed = ReplayExecutor(rule="fixed", **setup)
    assert fixed.recovery.what_if and "what-if" in repr(fixed)


def test_step_outcomes_are_plain_text_in_frames():
    ex = ReplayExecutor(agent=_agent(), plan={"inputs": [("k", "a")]}, key_format="K1.5", seed=3,
                        policies={"calls": "execute"})
    ex.run()
    lookups = [s for s in ex.step_list if s.kind is StepKind.LOOKUP]
    assert lookups[0].outcome is StepOutcome.RERUN and lookups[0].outcome == "RERUN"
    assert {type(v) for v in ex.steps["outcome"]} == {str}
    assert {type(v) for v in ex.report().frame["outcome"]} == {str}
    assert f"{StepOutcome.HIT}" == str(StepOutcome.HIT) == "hit"


def test_a_failed_calls_payload_does_not_depend_on_dask_being_imported() -> None:
    """dask.distributed installs tblib's exception reducers (tracebacks, file paths); the journal's bytes stay plain."""
    import pickle

    import distributed  # noqa: F401 - installs the reducers under test

    from agent_inspect.recovery._calls import _pickle

    try:
        raise TimeoutError("gpt-large did not answer within 30 s")
    except TimeoutError as exc:
        payload = _pickle(exc)
    assert b"tblib" not in payload and b"Frame" not in payload
    again = pickle.loads(payload)
    assert isinstance(again, TimeoutError) and again.args == ("gpt-large did not answer within 30 s",)


def test_wrong_policies_and_restore_say_what_they_take() -> None:
    """``policies="recorded"`` was a ValueError about dictionary update sequences, ``{"call": ...}`` a TypeError,
    a misspelt policy value failed only when a call or action used it, and ``restore={0: 1}`` an AttributeError."""
    import pytest

    import agent_inspect as ai
    from agent_inspect._errors import ReplayError

    log = ai.load(ai.samples.path("N04"))
    with pytest.raises(ReplayError, match=r"policies takes ai.executor.Policies\(...\) or a mapping of its fields "
                                          r"\(actions, default_action, calls, stubs, trust_payloads\), got str"):
        ai.ReplayExecutor(log, policies="recorded")
    with pytest.raises(ReplayError, match="unknown policy field call; the fields of ai.executor.Policies are"):
        ai.ReplayExecutor(log, policies={"call": "deny"})
    with pytest.raises(ReplayError, match="unknown calls policy 'denyy'; use one of execute, recorded, stub, deny"):
        ai.ReplayExecutor(log, policies={"calls": "denyy"})
    with pytest.raises(ReplayError, match=r"unknown actions\['chat'\] policy 'rerun'; use one of reuse-prod"):
        ai.executor.Policies(actions={"chat": "rerun"})
    with pytest.raises(ReplayError, match=r"restore takes a Checkpoint of an earlier attempt .*got dict"):
        ai.ReplayExecutor(log, restore={0: 1})
    # memory={"x": 1} (one key's memory for all) was a TypeError in the engine, breakpoints=["k"] an AttributeError
    with pytest.raises(ReplayError, match=r"memory takes per business key a mapping of memory paths to values "
                                          r"\(\{'user-1': \{'x': 1\}\}\), got 1 for 'x'"):
        ai.ReplayExecutor(log, memory={"x": 1})
    with pytest.raises(ReplayError, match=r"sensory takes per business key .*got \[1\]"):
        ai.ReplayExecutor(log, sensory=[1])
    with pytest.raises(ReplayError, match=r"^breakpoints takes a Breakpoint or a list of them "
                                          r"\(ai.executor.Breakpoint\(key=..., action=...\)\), got 'k'$"):
        ai.ReplayExecutor(log, breakpoints=["k"])
    with pytest.raises(ReplayError, match=r"^breakpoints takes a Breakpoint or a list of them .*got None$"):
        ai.ReplayExecutor(log, breakpoints=[None])
    with pytest.raises(ReplayError, match=r"^breakpoints takes a Breakpoint or a list of them .*got 5$"):
        ai.ReplayExecutor(log, breakpoints=5)      # not iterable: was a TypeError
    with pytest.raises(ReplayError, match=r"^breakpoints takes a Breakpoint or a list of them .*got 'user-0001'$"):
        ai.ReplayExecutor(log, breakpoints="user-0001")   # a key, not its letters one by one
    # a generator was used up by the check, so the replay kept no breakpoint and ran to its end
    lazily = ai.ReplayExecutor(log, markers=ai.samples.markers("N04"),
                               breakpoints=(ai.executor.Breakpoint(kind=k) for k in ("lookup",)))
    assert len(lazily.options.breakpoints) == 1
    lazily.run()
    assert not lazily.done
    ok = ai.ReplayExecutor(log, markers=ai.samples.markers("N04"), policies={"calls": "stub", "stubs": {"*": "x"},
                                                                                 "actions": {"IA": "diff"}})
    ok.run()
    assert ok.failure is None


@pytest.mark.parametrize("documented", ["ExecutorOptions", "CallPolicy"])
def test_the_stub_examples_replay_without_a_denial(documented: str) -> None:
    """The examples of ``ExecutorOptions`` and ``CallPolicy`` gave ``calls="stub"`` and no stub: the job died at its
    first durable call (denied), so ``calls_stubbed`` showed 0 while the comment said no call runs for real."""
    import inspect as pyinspect
    import textwrap

    import agent_inspect as ai

    doc = pyinspect.getdoc(getattr(ai.executor, documented)) or ""
    example = textwrap.dedent(doc.split("For example::", 1)[1])
    namespace = {"ai": ai, "log": ai.load(ai.samples.path("production")), "markers": ai.samples.markers("production")}
    exec(compile(example, f"<{documented} example>", "exec"), namespace)   # our own docstring, not a payload
    ex = namespace["ex"]
    assert ex.failure is None and ex.done
    assert ex.counters.calls_stubbed > 0 and ex.counters.calls_denied == 0
    executed = [s.function_id for s in ex.step_list if s.call_index is not None and s.outcome == "execute"]
    assert all("#" in str(f) for f in executed)      # only sub-agent calls (their child runs in the job) ran


def test_the_typed_keywords_are_the_settings_and_the_options() -> None:
    """``ReplayExecutor(**overrides)`` is typed by ``ExecutorOverrides``: its keys must stay every recovery setting
    and every option, or a type checker would refuse a keyword the executor takes (or accept one it refuses)."""
    from agent_inspect.executor._options import OPTION_NAMES, ExecutorOverrides
    from agent_inspect.recovery import SETTING_NAMES

    assert set(ExecutorOverrides.__optional_keys__) == {*SETTING_NAMES, *OPTION_NAMES}
    assert not ExecutorOverrides.__required_keys__


def test_a_safety_report_prints_as_one_line() -> None:
    """``repr`` of a report printed both of its frames (every task's row) in a terminal or a log line."""
    import agent_inspect as ai

    log = ai.load(ai.samples.path("production"))
    ex = ReplayExecutor(log, markers=ai.samples.markers("production"))
    ex.run()
    report = ex.report()
    text = repr(report)
    assert "\n" not in text and len(text) < 200
    assert text.startswith(f"ReplaySafetyReport({len(report.frame):,} tasks, {len(report.unsafe):,} not replay-safe")
    assert text.endswith(", rule='original')")


def test_a_plan_mapping_whose_items_are_not_tuples_says_what_it_takes() -> None:
    """``{"inputs": [{"key": "k", "input": "A"}]}`` unpacked the dict's keys: an input "input" for key "key", with
    no word; ``[{}]``, ``"x"`` and ``[5]`` were a ValueError or TypeError out of every verb."""
    import agent_inspect as ai
    from agent_inspect._errors import ReplayError

    log = ai.load(ai.samples.path("N04"))
    for inputs, shown in (([{"key": "k", "input": "A"}], r"\{'key': 'k', 'input': 'A'\}"), ([{}], r"\{\}"),
                          ("x", "'x'"), ([5], "5"), ([("k", "A", "B")], r"\('k', 'A', 'B'\)")):
        for verb in (ai.predict, ai.reconstruct, ai.ReplayExecutor):
            with pytest.raises(ReplayError, match=rf"a plan's 'inputs' takes a list of \(key, value_or_event\) tuples, "
                                                  rf"got {shown}; e.g. \{{'inputs': \[\('user-1', 'hello'\)\]\}}"):
                verb(log, plan={"inputs": inputs})
    with pytest.raises(ReplayError, match=r"'pending' takes a list of \(key, seq, action, event\) tuples, got \('k', 1\)"):
        ai.predict(log, plan={"pending": [("k", 1)]})
    assert len(ai.predict(log, plan={"inputs": [["k", "A"]]}).tasks) == len(ai.predict(log, plan={"inputs": {"k": ["A"]}}).tasks) > 0


def test_a_plan_mapping_of_key_to_one_value_is_one_input_and_a_bad_pending_seq_says_what_it_takes() -> None:
    """``{"inputs": {"user-1": "hello"}}`` was five inputs, one per character; a pending seq "x" a bare
    ValueError out of ``int()``."""
    from agent_inspect._errors import ReplayError
    from agent_inspect.agents import AgentEvent
    from agent_inspect.executor import as_plan

    event = AgentEvent("_input_event", {"input": "hi"}, id="e1")
    plan = as_plan({"inputs": {"user-1": "hello", "user-2": event, "user-3": b"raw", "user-4": ["a", "b"]}})
    assert [(i.key, i.event.attributes["input"]) for i in plan.inputs] == [
        ("user-1", "hello"), ("user-2", "hi"), ("user-3", b"raw"), ("user-4", "a"), ("user-4", "b")]
    assert plan.inputs[1].event is event
    with pytest.raises(ReplayError, match=r"^a plan's 'pending' takes a list of \(key, seq, action, event\) tuples "
                                          r"with an int seq, got \('k', 'x', 'chat', 'A'\); e\.g\. "):
        as_plan({"pending": [("k", "x", "chat", "A")]})


def test_one_breakpoint_given_alone_is_a_list_of_one() -> None:
    """``breakpoints=Breakpoint(...)`` (not in a list) was ``TypeError: 'Breakpoint' object is not iterable``."""
    import agent_inspect as ai
    from agent_inspect.executor import Breakpoint, ExecutorOptions

    bp = Breakpoint(key="k")
    assert ExecutorOptions(breakpoints=bp).breakpoints == (bp,)
    assert ExecutorOptions().updated(breakpoints=bp).breakpoints == (bp,)
    ex = ai.ReplayExecutor(ai.load(ai.samples.path("N04")), markers=ai.samples.markers("N04"), breakpoints=bp)
    assert ex.breakpoints == [bp]
