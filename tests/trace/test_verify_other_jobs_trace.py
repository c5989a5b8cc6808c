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
