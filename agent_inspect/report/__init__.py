"""Static, self-contained HTML reports of an investigation (open without a kernel or a network).

    import agent_inspect as ai
    ai.write_report(ai.load("sample_logs/production.jsonl"), "report.html", rule="fixed")

The CLI equivalent is ``agent-inspect report SOURCE --rule fixed -o report.html``.
"""

from __future__ import annotations

from agent_inspect.report._report import ledger_totals, prediction_of, render_report, write_report

__all__ = ["write_report", "render_report", "prediction_of", "ledger_totals"]
