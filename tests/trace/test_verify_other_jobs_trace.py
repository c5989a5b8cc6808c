"""``verify`` with another job's trace says so first, and the CLI lists no wall of "the trace has no record of
key …" disagreements (397 lines for the production log against N04's trace); a job's own trace is unaffected."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.cli import main

LOGS = ai.samples.path("production").parent


def test_verify_says_first_that_the_trace_is_likely_another_jobs() -> None:
    log = ai.load(ai.samples.path("production"))
    v = ai.verify(log, ai.samples.path("N04", "trace"), markers=ai.samples.markers("production"))
    assert v.other_job.startswith("the trace and the log share no business key")
    assert v.summary_text().startswith("most likely another job's trace: the trace and the log share no business key")
    assert v.to_dict()["other_job"] == v.other_job
    own = ai.verify(log, ai.samples.path("production", "trace"), markers=ai.samples.markers("production"))
    assert own.other_job == "" and not own.summary_text().startswith("most likely")


def test_the_cli_does_not_list_a_task_per_key_the_trace_never_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(LOGS / "production.jsonl"), "--trace", str(LOGS / "N04.trace.log"),
                 "--markers", f"@{LOGS / 'production.markers.json'}"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("DISAGREE: most likely another job's trace:")
    assert "[trace-missing]" not in out
    assert "397 tasks of keys the trace never names are not listed (--json lists them)" in out
    assert len(out.splitlines()) < 30


def test_a_trace_input_of_a_digest_key_the_log_does_not_hold_is_left_out_not_fatal(tmp_path) -> None:
    """A K2 log names keys by digest; one trace input whose businessKey is a digest the log never names (a flipped
    byte, another job's key) stopped ``verify`` with "key … is a digest absent from the log; give its KeyIdentity in
    the plan", though the rest of the trace was readable. Now that input is left out, with a note."""
    text = ai.samples.path("subagents_v4", "trace").read_text(encoding="utf-8")
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if '"entityName":"_input_event"' in ln)
    own = lines[i].split('"businessKey":"', 1)[1].split('"', 1)[0]
    foreign = "Z" * 43 + "="
    lines[i] = lines[i].replace(own, foreign)
    trace = tmp_path / "damaged.trace.log"
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = ai.load(ai.samples.path("subagents_v4"))
    v = ai.verify(log, trace, markers=ai.samples.markers("subagents_v4"))
    assert any(foreign in n and "left out of the prediction" in n for n in v.notes)
    whole = ai.verify(log, ai.samples.path("subagents_v4", "trace"), markers=ai.samples.markers("subagents_v4"))
    assert len(v.tasks) >= len(whole.tasks) - 4 and not any("left out" in n for n in whole.notes)


def test_a_restored_task_of_a_digest_key_the_log_does_not_hold_is_left_out_not_fatal(tmp_path) -> None:
    """The same for an action record: its key no longer matching the events that triggered it, verify took it for a
    task restored from the checkpoint, and the prediction stopped on its key (a mutation fuzz of the trace)."""
    lines = ai.samples.path("production_v4", "trace").read_text(encoding="utf-8").splitlines()
    i = next(k for k, ln in enumerate(lines) if '"executionId":"b05bc48b-6c2e-5064-ba42-30161011ef36"' in ln
             and '"status":"started"' in ln)
    own = lines[i].split('"businessKey":"', 1)[1].split('"', 1)[0]
    foreign = "Z" * 43 + "="
    lines[i] = lines[i].replace(own, foreign)
    trace = tmp_path / "damaged.trace.log"
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    v = ai.verify(ai.load(ai.samples.path("production_v4")), trace, markers=ai.samples.markers("production_v4"))
    assert any(foreign in n and "left out of the prediction" in n for n in v.notes)
