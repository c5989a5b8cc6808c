"""Compose the static, self-contained HTML report of an investigation."""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import pandas as pd

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words, define, plural
from agent_inspect._html import escape, labelled
from agent_inspect._types import LogLike, ReconstructionLike, RecoveryOverrides
from agent_inspect.log import resolve_runtime, rule_label, summary_facts
from agent_inspect.recovery import Prediction, Recovery, predict, rebuild_start, reconstruct, tasks_by_impact
from agent_inspect.report._parts import _dark_charts_script, _Section, _split_scripts, _static_figure
from agent_inspect.report._tables import reader_table, records_link
from agent_inspect.report._why import why_html
from agent_inspect.sources import check_export, source_files

if TYPE_CHECKING:
    from agent_inspect._types import ReportSubject
    from agent_inspect.trace import Verification

__all__ = ["write_report", "render_report", "affected_keys", "prediction_of", "ledger_totals"]

_REMOVED = ("evicted", "invalidated")


def write_report(
    subject: ReportSubject,
    path: str | Path,
    *,
    recovery: Recovery | None = None,
    title: str | None = None,
    max_keys: int = 3,
    max_rows: int = 50,
    verification: Verification | None = None,
    **overrides: Unpack[RecoveryOverrides],
) -> Path:
    """Write one self-contained HTML file (plotly.js embedded, opens offline) and return its path.

    ``subject`` is an ``ActionStateLog`` (reconstructed here under ``recovery`` / the settings given as
    keywords, as every verb takes them: by default the rule the log's runtime ships; any other rule is
    labelled a what-if), the result of ``ai.reconstruct`` (it carries its own settings), or a fleet scan
    (``ai.scan(...)`` or the directory it wrote with ``output=``): then the report holds the scan's totals
    per rule, the most-at-risk keys, histograms, the windows read and the failures.
    The report holds the summary, the divergences, timelines of the ``max_keys`` most affected keys,
    the re-execution ledger, the lints and the decode errors; given ``verification`` (``ai.verify(...)``
    of this recovery against the job's Trace Log), also "Checked against the trace". Everything from the
    records and the trace is escaped.

    For example::

        ai.write_report(log, "report.html", markers=ai.samples.markers("production"))
    """
    # as ai.to_otel: before the work, a mistyped folder is not made, and the file the log was read from is kept
    target = Path(check_export(path=path, inputs=source_files(subject)))
    html = render_report(subject, recovery=recovery, title=title, max_keys=max_keys, max_rows=max_rows,
                         verification=verification, **overrides)
    target.write_text(html, encoding="utf-8")
    return target


def render_report(
    subject: ReportSubject,
    *,
    recovery: Recovery | None = None,
    title: str | None = None,
    max_keys: int = 3,
    max_rows: int = 50,
    verification: Verification | None = None,
    **overrides: Unpack[RecoveryOverrides],
) -> str:
    """The report of :func:`write_report` as an HTML string.

    For example::

        html = ai.report.render_report(log, markers=markers, title="last night's restore")
        len(html), html[:15]                           # one self-contained HTML page
    """
    from agent_inspect.report._scan import is_scan, scan_sections

    if isinstance(subject, (str, Path)) and Path(subject).is_dir():
        from agent_inspect.fleet import ScanResult  # a fleet scan's output directory

        subject = ScanResult.open(subject)
    if is_scan(subject):
        heading = title or f"agent_inspect fleet scan: {subject.source}"
        label = getattr(subject, "rule_label", str)    # a what-if says so
        return _page(heading, scan_sections(subject, max_rows=max_rows),
                     rule_name=", ".join(label(r) for r in subject.rules))
    log, result, settings = _log_and_result(subject, recovery, overrides)
    if verification is not None:
        _check_same_settings(verification, result)
    # the result's own label when it has one (settings resolved once); else the rule named by the one labeller
    rule_name = getattr(result, "rule_label", None) or _rule_label(result, log)
    prediction = prediction_of(result, settings)
    sections = [
        _summary_section(log, result, rule_name, settings or getattr(result, "recovery", None)),
        _divergence_section(result, max_rows=max_rows),
        _timeline_section(result, max_keys=max_keys),
        _ledger_section(prediction, max_rows=max_rows),
        _Section("why", "Why did these run again?", why_html(prediction, result)),
        *([_trace_section(verification, max_rows=max_rows)] if verification is not None else []),
        _lint_section(result, max_rows=max_rows),
        _errors_section(log, max_rows=max_rows),
        _static_views_section(log, result),
    ]
    heading = title or f"agent_inspect report: {_location(log)}"
    return _page(heading, sections, rule_name=rule_name)


# -- inputs -------------------------------------------------------------------------------------------


def _log_and_result(obj: Any, recovery: Recovery | None,
                    overrides: RecoveryOverrides) -> tuple[LogLike, ReconstructionLike, Recovery | None]:
    if isinstance(obj, ReconstructionLike):
        if obj.log is None:
            raise InspectError("this reconstruction result carries no .log; pass the ActionStateLog instead")
        return obj.log, obj, None
    if isinstance(obj, LogLike):
        settings = Recovery.resolve(obj, recovery, **overrides)
        return obj, reconstruct(obj, recovery=settings), settings
    raise InspectError(f"cannot report on a {type(obj).__name__}; pass an ActionStateLog or an "
                       "ai.reconstruct(...) result")


def _check_same_settings(verification: Any, result: Any) -> None:
    """Refuse a verification made under other recovery settings than the report's: its trace section would
    check another recovery than the one the rest of the report shows."""
    def words(rule: Any, runtime: Any, markers: Any) -> str:
        start = rebuild_start(markers)
        shown = "none (the whole log)" if start is None else "[] (a fresh start)" if not start else \
            "{" + ", ".join(f"{p}: {o}" for p, o in sorted(start.items())) + "}"
        return f"rule {rule}, runtime {runtime}, markers {shown}"

    runtime = getattr(result, "runtime", None)
    ours = words(rule_label(result.rule, None), getattr(runtime, "name", runtime), result.markers)
    theirs = words(verification.rule, verification.runtime, verification.markers)
    if ours != theirs:
        raise InspectError(f"the verification was made under other settings ({theirs}) than this report's "
                           f"({ours}): give both the same settings, e.g. one recovery=ai.Recovery.for_log(log, ...)")


def _rule_label(result: Any, log: Any) -> str:
    """The result's rule labelled by :func:`agent_inspect.log.rule_label` under its (else the log's) runtime."""
    rule = getattr(result, "rule", None)
    if rule is None:
        return "?"
    return rule_label(rule, getattr(result, "runtime", None) or resolve_runtime("auto", log))


def _location(log: Any) -> str:
    source = getattr(log, "source", None)
    return str(getattr(source, "location", None) or "action-state log")


# -- sections -----------------------------------------------------------------------------------------


def _summary_section(log: Any, result: Any, rule_name: str, settings: Recovery | None) -> _Section:
    source = getattr(log, "source", None)
    facts: list[tuple[str, Any]] = [
        ("source", getattr(source, "location", None)),
        ("kind", getattr(source, "kind", None)),
        ("topic / table", getattr(source, "topic", None)),
        ("file format", getattr(source, "file_format", None)),
        ("rule", rule_name),
        # which restore this is: two reports that differ only in their markers read alike otherwise
        ("markers", settings.markers_label if settings is not None else None),
        ("replayed inputs", settings.provenance.get("plan") if settings is not None else None),
    ]
    summary = log.summary() if callable(getattr(log, "summary", None)) else {}
    runtime = getattr(result, "runtime", None)
    if runtime is not None:  # the runtime the reconstruction used (given or inferred), not only the log's guess
        summary = {**summary, "runtime": runtime}
    rows = "".join(f"<tr>{labelled('th', k)}<td>{escape(v)}</td></tr>" for k, v in facts if v is not None)
    rows += "".join(f'<tr data-name="{escape(f.name)}"><th title="{escape(f.explanation)}">{escape(f.label)}</th>'
                    f"<td>{escape(f.text)}</td></tr>" for f in summary_facts(summary))
    body = f'<table class="agent-inspect facts">{rows}</table>'
    records = result.records
    if "status" in records.columns:
        counts = records["status"].astype("string").fillna("unknown").value_counts(sort=True)
        chips = "".join(f'<span class="chip status-{escape(s)}" title="{escape(define(str(s)))}">{escape(s)}: '
                        f"{int(n):,}</span>" for s, n in counts.items())
        body += f'<p class="statuses">Record status under <b>{escape(rule_name)}</b>: {chips}</p>'
    n_div = len(result.divergences) if isinstance(result.divergences, pd.DataFrame) else 0
    body += f'<p class="headline">{plural(n_div, "divergence")} found.</p>'
    return _Section("summary", "Summary", body)


def _divergence_section(result: Any, *, max_rows: int) -> _Section:
    frame = result.divergences
    if not isinstance(frame, pd.DataFrame) or frame.empty:
        return _Section("divergences", "Divergences", "<p>No divergence: the restore reuses what it "
                                                           "finds.</p>")
    items = []
    shown = min(len(frame), 10)
    if "explanation" in frame.columns:
        for idx, row in frame.head(shown).iterrows():
            where = " · ".join(f"{label} {escape(row[c])}" for c, label in
                               (("business_key", "key"), ("seq", "round"), ("kind", "kind"))
                               if c in frame.columns and not _isna(row[c]))
            items.append(f"<li><b>#{escape(idx)}</b> {where}: {escape(row['explanation'])}</li>")
    more = f"<p>… and {len(frame) - shown:,} more in the table.</p>" if len(frame) > shown else ""
    listing = f'<ul class="explanations">{"".join(items)}</ul>{more}' if items else ""
    return _Section("divergences", "Divergences", listing + divergence_table(frame, max_rows=max_rows))


def divergence_table(frame: pd.DataFrame, *, max_rows: int) -> str:
    """The divergences as a reader's table: number, key, round, kind (defined on hover), where the rule found
    it, records removed, and its records folded into a link; changed attributes only when some are."""
    shown = frame.head(max_rows)
    diffs = shown["attribute_diff"] if "attribute_diff" in shown.columns else pd.Series(None, index=shown.index)
    with_diff = any(isinstance(d, dict) and d for d in diffs)
    head = ("<tr><th title='the divergence number'>#</th><th>key</th><th title='the round (seq) of the key'>round</th>"
            "<th>kind</th><th title='the rule step that found it'>found at</th>"
            "<th title='cached records the rule removed because of it'>records removed</th><th>records</th>"
            + ("<th>attributes changed</th>" if with_diff else "") + "</tr>")
    rows = []
    for idx, r in shown.iterrows():
        kind = "" if _isna(r.get("kind")) else str(r.get("kind"))
        trigger = r.get("trigger_pos")
        records = records_link(r.get("positions"), f"divergence-{idx}-records")
        if not _isna(trigger):
            records += f'<span class="trigger">triggered by record {int(trigger)}</span>'
        diff = r.get("attribute_diff")
        changed = ", ".join(f"{k}: {a!r} → {b!r}" for k, (a, b) in diff.items()) if isinstance(diff, dict) else ""
        seq = r.get("seq")
        rows.append(
            f'<tr data-divergence="{escape(idx)}"><td>#{escape(idx)}</td><td>{escape(_text(r.get("business_key")))}</td>'
            f"<td>{escape('' if _isna(seq) else int(seq))}</td>"
            f'<td title="{escape(define(kind))}">{escape(kind)}</td>{labelled("td", _text(r.get("step")))}'
            f"<td>{escape(_text(r.get('removed')))}</td><td>{records}</td>"
            + (f"<td>{escape(changed)}</td>" if with_diff else "") + "</tr>")
    more = len(frame) - len(shown)
    foot = f"<p>… {plural(more, 'more divergence')}</p>" if more > 0 else ""
    return f'<table class="agent-inspect divergences">{head}{"".join(rows)}</table>{foot}'


def _text(value: Any) -> str:
    return "" if _isna(value) else str(value)


def _timeline_section(result: Any, *, max_keys: int) -> _Section:
    keys = affected_keys(result.records, limit=max_keys)
    if not keys:
        return _Section("timelines", "Timelines", "<p>No record was evicted or invalidated.</p>")
    try:
        import plotly.io as pio

        from agent_inspect.widgets import timeline_figure
    except ImportError as exc:
        raise InspectError(f"the report's timelines need the views extra ({exc.name} is missing): "
                           "pip install 'agent_inspect[views]', or pass max_keys=0 (--keys 0)") from None
    parts, scripts = [], []
    for n, (key, removed) in enumerate(keys):
        figure = _static_figure(timeline_figure(result, key))
        div = pio.to_html(figure, include_plotlyjs=False, full_html=False, div_id=f"timeline-{n}",
                          config={"displaylogo": False, "responsive": True})
        div, found = _split_scripts(div)
        scripts.extend(found)
        parts.append(f'<div class="timeline"><h3>key <code>{escape(key)}</code> · {removed:,} {count_words(removed, "record")} '
                     f"evicted or invalidated</h3>{div}</div>")
    return _Section("timelines", "Timelines of the most affected keys", "".join(parts), tuple(scripts))


def _ledger_section(prediction: Any, *, max_rows: int) -> _Section:
    title = "Re-execution ledger"
    if prediction is None:
        return _Section("ledger", title, "<p>No ledger: the recovery could not be predicted from this log.</p>")
    tasks = prediction.tasks
    counts = tasks["outcome"].astype("string").value_counts().to_dict() if len(tasks) else {}
    chips = "".join(f'<span class="chip outcome-{escape(k)}" title="{escape(define(str(k)))}">{escape(k)}: {int(v):,}</span>'
                    for k, v in counts.items())
    crash = ' <b class="crash">The job crashes on this replay (restart loop).</b>' if prediction.crashed else ""
    body = (f"<p>Replaying the inputs after the restore, per task: {chips or 'no task'}.{crash} "
            f"Action bodies that run again: <b>{prediction.reruns():,}</b>.</p>")
    body += "".join(f'<p class="warning"><b>Warning:</b> {escape(w)}</p>' for w in prediction.warnings)
    totals = prediction.ledger_totals()
    body += reader_table(totals, max_rows=max_rows, caption="what runs again, summed over keys",
                         anchor="ledger-totals") if len(totals) \
        else "<p>Nothing runs again: every task reuses its saved result.</p>"
    if len(prediction.ledger):
        body += reader_table(prediction.ledger, max_rows=max_rows, caption="per key", anchor="ledger")
    cols = [c for c in ("key", "seq", "input", "action", "outcome", "reason") if c in tasks.columns]
    if len(tasks):
        impact = [c for c in ("outcome", "removed") if c in tasks.columns]   # sort on few columns: cheap
        body += reader_table(tasks_by_impact(tasks[list(dict.fromkeys(cols + impact))])[cols], max_rows=max_rows,
                             caption="tasks, re-runs and evictions first (first column: dispatch order)",
                             anchor="tasks")
    return _Section("ledger", title, body)


def _trace_section(v: Any, *, max_rows: int) -> _Section:
    title = "Checked against the trace"
    verdict = str(getattr(v, "verdict", "agree" if v.agree else "disagree"))
    said = {"agree": "agrees with", "disagree": "disagrees with"}.get(verdict, "cannot be decided by")
    css = {"agree": "agrees", "disagree": "disagrees"}.get(verdict, "undetermined")
    body = (f'<p class="verdict verdict-{css}"><b>Verdict: {escape(verdict)}. The prediction {said} '
            f"the job's Trace Log</b>: {escape(v.summary_text())}.</p>")
    body += "".join(f"<p><i>{escape(n)}</i></p>" for n in v.notes)
    body += reader_table(v.totals, max_rows=max_rows, caption="tasks per outcome, predicted and observed",
                         anchor="trace-totals")
    body += reader_table(v.calls, max_rows=max_rows, caption="durable llm / tool calls, predicted and observed",
                         anchor="trace-calls")
    if getattr(v, "tokens", None) is not None:
        body += f'<p class="tokens"><b>Tokens re-spent</b>: {escape(v.tokens.headline())}.</p>'
        body += "".join(f"<p><i>{escape(n)}</i></p>" for n in v.tokens.notes)
        body += reader_table(v.tokens.totals, max_rows=max_rows, caption="LLM tokens re-spent, per rule (predicted)",
                             anchor="trace-tokens")
    mismatches = getattr(v, "mismatches", v.disagreements)
    if len(mismatches):
        cols = [c for c in ("key", "seq", "action", "predicted", "observed", "verdict", "join", "cause", "explanation")
                if c in mismatches]
        body += reader_table(mismatches[cols], max_rows=max_rows,
                             caption="tasks that disagree or that the trace cannot decide, and why",
                             anchor="trace-mismatches")
    if v.ranking is not None:
        body += reader_table(v.ranking, max_rows=max_rows, anchor="trace-ranking",
                             caption=v.ranking_caption)
    return _Section("trace", title, body)


def _lint_section(result: Any, *, max_rows: int) -> _Section:
    lints = getattr(result, "lints", None)
    if not isinstance(lints, pd.DataFrame):
        return _Section("lints", "Lints", "<p>No lints were computed.</p>")
    if lints.empty:
        return _Section("lints", "Lints", "<p>No lint: nothing in this log trips a known upstream "
                                               "pitfall.</p>")
    return _Section("lints", "Lints", reader_table(lints, max_rows=max_rows, anchor="lint"))


def _errors_section(log: Any, *, max_rows: int) -> _Section:
    errors = getattr(log, "errors", None)
    if not isinstance(errors, pd.DataFrame) or errors.empty:
        return _Section("errors", "Decode errors", "<p>Every record decoded.</p>")
    cols = [c for c in ("partition", "offset", "state_key", "error") if c in errors.columns]
    return _Section("errors", "Decode errors", reader_table(errors[cols] if cols else errors, max_rows=max_rows,
                                                            anchor="error"))


def _static_views_section(log: Any, result: Any) -> _Section:
    parts = []
    for name, obj in (("log", log), ("reconstruction", result)):
        renderer = getattr(obj, "_repr_html_", None)
        if callable(renderer):
            parts.append(f'<div class="repr repr-{name}"><h3>{escape(name)}</h3>{renderer()}</div>')
    return _Section("views", "Notebook views (static)", "".join(parts) or "<p>none</p>")


# -- helpers ------------------------------------------------------------------------------------------


def affected_keys(records: pd.DataFrame, *, limit: int) -> list[tuple[Any, int]]:
    """The business keys with the most evicted or invalidated records, most first."""
    if limit <= 0 or "status" not in records.columns or "business_key" not in records.columns:
        return []
    removed = records["status"].isin(_REMOVED).to_numpy(dtype=bool)
    counts = records["business_key"][removed].value_counts(sort=True)
    # a categorical key column counts every category, the unaffected ones as 0: those are not affected
    return [(k, int(n)) for k, n in counts[counts > 0].head(limit).items()]


def prediction_of(result: ReconstructionLike, recovery: Recovery | None = None) -> Prediction | None:
    """The static prediction (tasks and re-execution ledger) of ``result``'s recovery, or None.

    ``recovery``: the settings ``result`` was reconstructed with (default: the ones it carries, its
    :attr:`~agent_inspect.recovery.Reconstruction.recovery`; else its rule and markers).

    For example::

        result = ai.reconstruct(log, markers=markers)
        ai.report.prediction_of(result).tasks.head()   # the prediction of the same recovery
    """
    if recovery is None:     # a reconstruction's own settings: runtime, plan, kafka_pending… as well as rule and markers
        recovery = getattr(result, "recovery", None)
    try:
        if recovery is not None:
            return predict(result.log, recovery=recovery)
        return predict(result.log, rule=result.rule, markers=result.markers)
    except InspectError:
        return None


def ledger_totals(prediction: Prediction | None, result: ReconstructionLike) -> dict[str, int]:
    """Ledger totals as ``{"<kind>:<name>": count}`` plus reruns (without a prediction: removed records).

    For example::

        result = ai.reconstruct(log, markers=markers)
        ai.report.ledger_totals(ai.report.prediction_of(result), result)   # {"<kind>:<name>": count, ...}
    """
    if prediction is not None:
        totals = prediction.ledger_totals()
        out = {"bodies rerun": int(prediction.reruns())}
        out.update({f"{k}:{n}": int(c) for k, n, c in zip(totals["kind"], totals["name"], totals["count"])})
        return out
    records = result.records
    if "status" not in records.columns:
        return {}
    return {s: int((records["status"] == s).sum()) for s in _REMOVED}


def _isna(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


@lru_cache(maxsize=1)
def _css() -> str:
    from agent_inspect.widgets import palette_css

    return palette_css(jupyterlab=False) + resources.files(__package__).joinpath("report.css").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    js: str = get_plotlyjs()
    return js


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _page(heading: str, sections: Sequence[_Section], *, rule_name: str) -> str:
    from agent_inspect import __version__

    scripts = [s for section in sections for s in section.scripts]
    if scripts:
        scripts = [_plotly_js(), *scripts, _dark_charts_script()]
    # Only the report's own scripts may run: inline handlers or injected <script>s never would,
    # even if something record-derived slipped through unescaped.
    script_src = " ".join(f"'{_sha256(s)}'" for s in scripts) or "'none'"
    csp = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; script-src {script_src}"
    nav = "".join(f'<a href="#{s.anchor}">{escape(s.title)}</a>' for s in sections)
    body = "".join(f'<section id="{s.anchor}"><h2>{escape(s.title)}</h2>{s.body}</section>' for s in sections)
    script_tags = "".join(f"<script>{s}</script>" for s in scripts)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f"<title>{escape(heading)}</title><style>{_css()}</style></head><body>"
        f'<header><h1>{escape(heading)}</h1><p class="meta">agent_inspect {escape(__version__)} · rule '
        f"{escape(rule_name)} · generated {stamp}</p><nav>{nav}</nav></header>"
        f"<main>{body}</main>{script_tags}</body></html>\n"
    )

