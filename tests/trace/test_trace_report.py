"""The report's "Checked against the trace" section (``agent-inspect report SOURCE --trace PATH``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect import samples
from agent_inspect._errors import InspectError
from agent_inspect.cli import main
from agent_inspect.sources import write_trace

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


def test_the_report_shows_the_check_and_escapes_the_trace(tmp_path: Path) -> None:
    recs = [json.loads(x) for x in (LOGS / "N04.fixed-rule.trace.log").read_text(encoding="utf-8").splitlines()]
    extra = dict(recs[1])
    extra.update(businessKey="<script>alert(1)</script>", executionId="e-x")
    trace = write_trace([*recs, extra], tmp_path / "t.log")
    log = ai.load(LOGS / "N04.jsonl")
    v = ai.verify(log, trace, markers=samples.markers("N04"))
    html = ai.report.render_report(log, markers=samples.markers("N04"), verification=v)
    assert 'id="trace"' in html and "Checked against the trace" in html
    assert "verdict-disagrees" in html and "wrong-rule" in html and "invisible-reuse" in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Checked against the trace" not in ai.report.render_report(log, markers=samples.markers("N04"))


def test_report_cli_with_a_trace(tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(LOGS / "N04.jsonl"), "-o", str(out), "--markers", f"@{LOGS / 'N04.markers.json'}",
                 "--trace", str(LOGS / "N04.trace.log"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["trace_agree"] is True
    assert "verdict-agrees" in out.read_text(encoding="utf-8")


def test_the_report_and_its_json_say_the_verdict_and_why(tmp_path: Path, capsys) -> None:
    out = tmp_path / "g02.html"
    assert main(["report", str(LOGS / "G02.jsonl"), "-o", str(out), "--markers", f"@{LOGS / 'G02.markers.json'}",
                 "--trace", str(LOGS / "G02.trace.log"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["trace_verdict"] == "undetermined" and d["trace_agree"] is False
    html = out.read_text(encoding="utf-8")
    assert "verdict-undetermined" in html and "Verdict: undetermined" in html and "cannot be decided by" in html
    assert "log-only agent cannot know" in html and "agent-model" in html


def test_the_report_refuses_a_verification_made_under_other_settings(tmp_path: Path) -> None:
    """A report's trace section checks the recovery the rest of the report shows, or the report mixes two."""
    log, markers = ai.load(LOGS / "N04.jsonl"), samples.markers("N04")
    trace = ai.load_trace(LOGS / "N04.trace.log")
    fixed = ai.verify(log, trace, markers=markers, rule="fixed")
    assert "Checked against the trace" in ai.report.render_report(log, markers=markers, rule="fixed",
                                                                  verification=fixed)
    with pytest.raises(InspectError, match=r"the verification was made under other settings \(rule fixed, runtime "
                                           r"0\.4, markers \{0: 0\}\) than this report's \(rule original, runtime 0\.4, "
                                           r"markers \{0: 0\}\)"):
        ai.write_report(log, tmp_path / "r.html", markers=markers, verification=fixed)
    with pytest.raises(InspectError, match=r"runtime 0\.3"):
        ai.write_report(log, tmp_path / "r.html", markers=markers, runtime="0.3",
                        verification=ai.verify(log, trace, markers=markers))
    assert not (tmp_path / "r.html").exists()
