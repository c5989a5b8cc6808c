"""A recovery in the user's OpenTelemetry tool: spans named and identified as upstream's converter does.

    ai.to_otel(ai.verify(log, trace, markers=...), endpoint="http://127.0.0.1:6006/v1/traces")
    ai.to_otel(v, path="spans.json")                       # one OTLP JSON file
    ai.otel.spans_of(v)                                     # the spans as plain dicts (pure)

Needs the ``otel`` extra.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack, cast

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural
from agent_inspect._types import PredictionLike, RecoveryOverrides
from agent_inspect.otel._spans import CALL_OPERATIONS, _predicted_only, span_id_of, spans_of, trace_id_of

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery import Recovery
    from agent_inspect.trace import TraceLog, Verification

__all__ = ["to_otel", "spans_of", "trace_id_of", "span_id_of", "OtelExport", "CALL_OPERATIONS", "RESOURCE"]

RESOURCE = {"service.name": "agent_inspect"}
"""resource attributes of every export (``project=`` adds Phoenix's ``openinference.project.name``)"""


@dataclass(frozen=True)
class OtelExport:
    """What :func:`to_otel` sent or wrote: span count, traces (input runs), and where.

    For example::

        g01 = ai.load("sample_logs/G01.jsonl")
        export = ai.to_otel(g01, path="spans.json", markers=ai.samples.markers("G01"))   # a prediction alone
        export.spans, export.traces, export.path
    """

    spans: int
    traces: int
    errors: int
    endpoint: str | None = None
    path: str | None = None
    #: the rule the recovery ran under, marked as a what-if when the runtime ships another
    rule: str | None = None
    #: what the recovery's prediction warned of (e.g. markers past the log's end: nothing to export)
    warnings: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = self.endpoint or self.path
        return (f"{plural(self.spans, 'span')} in {plural(self.traces, 'trace')} ({self.errors:,} with status error) "
                f"{'sent to' if self.endpoint else 'written to'} {where}"
                + (f", under rule {self.rule}" if self.rule else "")
                + "".join(f"\nwarning: {w}" for w in self.warnings))


def _rule_label(v: Any) -> str:
    return str(getattr(v, "rule_label", v.rule))


def to_otel(obj: Verification | PredictionLike | ActionStateLog | str | os.PathLike[str], endpoint: str | None = None,
            path: str | os.PathLike[str] | None = None, *, trace: TraceLog | str | os.PathLike[str] | None = None, project: str | None = None, headers: dict[str, str] | None = None,
            explain_chain: bool = True, recovery: Recovery | None = None,
            **settings: Unpack[RecoveryOverrides]) -> OtelExport:
    """Send a recovery to an OTLP/HTTP ``endpoint`` or write it to ``path`` (OTLP JSON); exactly one of them.

    ``obj``: a checked recovery (``ai.verify(...)``), a prediction (``ai.predict(...)``), or a log / source predicted under ``recovery`` (or the
    settings every verb takes: ``rule=``, ``markers=``, …; default the rule the runtime ships), checked against
    ``trace`` when given; without a trace only the prediction is exported.
    ``project``: the Phoenix project (resource attribute ``openinference.project.name``).

    For example::

        g01 = ai.load("sample_logs/G01.jsonl")
        v = ai.verify(g01, ai.load_trace("sample_logs/G01.trace.log"), markers=ai.samples.markers("G01"))
        ai.to_otel(v, path="spans.json")       # OTLP JSON; endpoint="http://127.0.0.1:6006/v1/traces" sends it
    """
    from agent_inspect.sources import check_export, export_spans, input_files, source_files, write_otlp_json

    if (endpoint is None) == (path is None):
        raise InspectError("to_otel needs exactly one of endpoint= (an OTLP/HTTP URL) or path= (a JSON file)")
    # before the work (a recovery of a topic can take minutes); the checked URL is sent to without a second probe
    read = [*source_files(obj), *input_files(trace if isinstance(trace, (str, os.PathLike)) else None, kind="trace")]
    checked = check_export(endpoint=endpoint, path=path, inputs=read)   # and never over what it reads
    v: Any     # a Verification, or a prediction alone in its shape
    finished = "verification" if hasattr(obj, "tasks") and hasattr(obj, "trace") and hasattr(obj, "rule") else \
        "prediction" if isinstance(obj, PredictionLike) else None
    unused = [f"{k}=" for k, value in (("trace", trace), ("recovery", recovery), *settings.items()) if value is not None]
    if finished and unused:   # they would be dropped: the export is of the finished recovery as it is
        raise InspectError(f"{' and '.join(unused)} would change nothing: a {finished} carries its own settings; "
                           "pass the log with them, or ai.predict(log, rule=..., markers=...) / "
                           "ai.verify(log, trace, ...) to export")
    if finished == "verification":
        v = obj
    elif finished == "prediction":       # a prediction alone, under its own rule and markers
        v = _predicted_only(obj)
    else:
        log = cast("ActionStateLog", obj)       # a verification was taken above
        if isinstance(obj, (str, os.PathLike)):
            from agent_inspect.log import load

            log = load(os.fspath(obj))
        if not len(log.records):
            raise InspectError(f"{os.fspath(obj) if isinstance(obj, (str, os.PathLike)) else 'the log'} holds no "
                               "records: nothing to export (is it the right source, and did its dump finish?)")
        if trace is not None:
            from agent_inspect.trace import verify

            v = verify(log, trace, recovery=recovery, **settings)
        else:
            from agent_inspect.recovery import Recovery, predict

            resolved = Recovery.resolve(log, recovery, **settings)
            v = _predicted_only(predict(log, recovery=resolved), log, resolved.markers)
    specs = spans_of(v, explain_chain=explain_chain)
    resource = dict(RESOURCE)
    if project:
        resource["openinference.project.name"] = project
    errors = sum(1 for s in specs if s["status"]["code"] == "ERROR")
    traces = len({s["trace_id"] for s in specs})
    warned = tuple(getattr(getattr(v, "prediction", None), "warnings", None) or ())
    if endpoint is not None:
        export_spans(specs, checked, resource=resource, headers=headers)
        return OtelExport(len(specs), traces, errors, endpoint=endpoint, rule=_rule_label(v), warnings=warned)
    out = write_otlp_json(specs, path if path is not None else "spans.json", resource=resource)
    return OtelExport(len(specs), traces, errors, path=str(out), rule=_rule_label(v), warnings=warned)
