"""The static report of a fleet scan: totals per rule, the most-at-risk keys, histograms, windows, failures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

from agent_inspect._glossary import define
from agent_inspect._html import escape, frame_html, labelled

if TYPE_CHECKING:
    from agent_inspect.fleet import ScanResult

__all__ = ["is_scan", "scan_sections"]


def is_scan(obj: object) -> TypeGuard[ScanResult]:
    """A :class:`~agent_inspect.fleet.ScanResult` (or anything shaped like one)."""
    import pandas as pd

    return all(isinstance(getattr(obj, a, None), pd.DataFrame) for a in ("keys", "partitions", "failures"))


def scan_sections(result: Any, *, max_rows: int) -> list[Any]:
    """The report's sections for a scan (the page itself is built like every report)."""
    from agent_inspect.fleet import OUTCOME_COLUMNS, SUMMARY_LABELS
    from agent_inspect.report._parts import _Section, _split_scripts, _static_figure
    from agent_inspect.report._tables import counts_shown, reader_table

    s = result.summary()
    label = getattr(result, "rule_label", str)   # a what-if says so, as in the CLI
    labels = {r: label(r) for r in result.rules}
    facts = [("source", s["source"]), *((word, f"{s[name]:,}") for name, word in SUMMARY_LABELS.items()),
             ("rules", ", ".join(labels.values())), ("runtime", result.runtime),
             ("store flavour", getattr(result, "store_flavour_text", None)),
             ("rules run fleet-wide", ", ".join(getattr(result, "fleet_wide", ())) or None),
             ("Parquet output", result.output), ("seconds", result.seconds)]
    rows = "".join(f'<tr><th title="{escape(define(k) or define(k.removeprefix("keys ")))}">{escape(k)}</th>'
                   f"<td>{escape(v)}</td></tr>" for k, v in facts if v is not None)
    # the outcomes add up to the tasks: every task has one (REUSE … NOT-DISPATCHED)
    columns = {"tasks": "tasks", **OUTCOME_COLUMNS, "evictions": "evictions", "calls": "durable calls re-executed",
               "calls_subagent": "sub-agent calls sent again", "stale_reuse_risk": "reuses at risk",
               "crashed_keys": "keys crash"}
    per_rule = "".join(
        f"<tr><th>{escape(labels[r])}</th>" + "".join(f"<td>{int(s[r].get(c, 0)):,}</td>" for c in columns)
        + "</tr>" for r in result.rules)
    # an outcome's header says what it means on hover ("calls" alone would read as the calls an action recorded)
    terms = {**{c: c for c in OUTCOME_COLUMNS}, "rule": "rule", "evictions": "evictions",
             "stale_reuse_risk": "stale_reuse_risk", "crashed_keys": "crashed"}
    head = "".join(labelled("th", word, term=terms.get(c, word)) for c, word in {"rule": "rule", **columns}.items())
    body = (f'<table class="agent-inspect facts">{rows}</table>'
            f'<table class="agent-inspect"><thead><tr>{head}</tr></thead><tbody>{per_rule}</tbody></table>')
    calls = [(r, f, n) for r in result.rules for f, n in s[r]["calls_by_function"].items()]
    if calls:
        body += ('<table class="agent-inspect"><caption>calls re-executed, by function (sub-agent calls: sent '
                 "again)</caption><thead><tr><th>rule</th><th>function</th><th>calls</th></tr></thead><tbody>"
                 + "".join(f"<tr><td>{escape(labels[r])}</td><td><code>{escape(f)}</code></td><td>{n:,}</td></tr>"
                           for r, f, n in calls) + "</tbody></table>")
    sections = [_Section("summary", "Fleet scan summary", body)]
    sections.append(_Section("at-risk", "Most at risk",
                             "".join(frame_html(_counted(result.at_risk(max_rows, rule=r)), max_rows=max_rows,
                                                caption=f"ranked under {labels[r]}") for r in result.rules)))
    scripts: list[str]
    try:
        import plotly.io as pio

        from agent_inspect.widgets import scan_histograms
    except ImportError:
        figure_html, scripts = "<p>(histograms need the views extra)</p>", []
    else:
        fig = _static_figure(scan_histograms(result, result.rules[0]))
        figure_html, scripts = _split_scripts(pio.to_html(fig, include_plotlyjs=False, full_html=False,
                                                          div_id="scan-histograms",
                                                          config={"displaylogo": False, "responsive": True}))
    under = f"<p>Durable calls re-executed under <b>{escape(labels[result.rules[0]])}</b>.</p>"   # a what-if says so
    sections.append(_Section("histograms", "History sizes and re-executed calls", under + figure_html,
                             tuple(scripts)))
    parts = result.partitions.drop(columns=[c for c in ("output", "fleet_wide_rules") if c in result.partitions])
    parts = counts_shown(parts, ("records", "keys", "errors", "bytes"))   # not the partition, offsets, row group
    sections.append(_Section("windows", "Windows read", frame_html(parts, max_rows=max_rows)))
    errors = (reader_table(result.errors, max_rows=max_rows, caption="a sample of bad records per window",
                           anchor="bad-record")
              if len(result.errors) else "<p>No bad records.</p>")
    sections.append(_Section("errors", "Bad records", errors))
    failures = (frame_html(result.failures, max_rows=max_rows) if len(result.failures)
                else "<p>Every window was scanned.</p>")
    sections.append(_Section("failures", "Failed windows", failures))
    return sections


def _counted(ranked: Any) -> Any:
    """The at-risk table with its counts written as the report writes counts (its partition is a name)."""
    from agent_inspect.report._tables import counts_shown

    return counts_shown(ranked, [c for c in ranked.columns if c != "partition"])
