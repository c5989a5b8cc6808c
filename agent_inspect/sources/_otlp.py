"""Spans out through the OpenTelemetry SDK: to an OTLP/HTTP endpoint, or to an OTLP JSON file, and back.

Spans arrive as plain dicts (``name``, ``trace_id`` / ``span_id`` / ``parent_span_id`` as hex, ``start_ns``,
``end_ns``, ``attributes``, ``events``, ``status``) made by the pure span builder; ids are kept as given.
Needs the ``otel`` extra (``opentelemetry-sdk``, ``opentelemetry-exporter-otlp-proto-http``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent_inspect._errors import InspectError
from agent_inspect.sources._outputs import check_output
from agent_inspect.sources._urls import shown_url

__all__ = ["export_spans", "write_otlp_json", "read_otlp_json", "otlp_traces_url"]

_SCOPE = "agent_inspect"
_BATCH = 400


def _sdk() -> Any:
    try:
        import opentelemetry.sdk.trace as sdk_trace
    except ImportError:
        raise InspectError("OpenTelemetry export needs the otel extra: pip install 'agent_inspect[otel]'") from None
    return sdk_trace


def _readable(specs: Sequence[Mapping[str, Any]], resource: Mapping[str, Any]) -> list[Any]:
    sdk_trace = _sdk()
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    res = Resource.create(dict(resource))
    scope = InstrumentationScope(_SCOPE)
    codes = {"ERROR": StatusCode.ERROR, "OK": StatusCode.OK, "UNSET": StatusCode.UNSET}
    out = []
    for s in specs:
        trace_id = int(s["trace_id"], 16)
        ctx = SpanContext(trace_id, int(s["span_id"], 16), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        parent = (SpanContext(trace_id, int(s["parent_span_id"], 16), is_remote=False,
                              trace_flags=TraceFlags(TraceFlags.SAMPLED)) if s.get("parent_span_id") else None)
        st = s.get("status") or {}
        code = codes.get(str(st.get("code", "UNSET")), StatusCode.UNSET)
        status = Status(code, st.get("message") if code is StatusCode.ERROR else None)
        events = [sdk_trace.Event(e["name"], dict(e.get("attributes") or {}), int(e["time_ns"]))
                  for e in s.get("events") or ()]
        out.append(sdk_trace.ReadableSpan(
            s["name"], context=ctx, parent=parent, resource=res, attributes=dict(s.get("attributes") or {}),
            events=events, kind=SpanKind.INTERNAL, status=status, start_time=int(s["start_ns"]),
            end_time=int(s["end_ns"]), instrumentation_scope=scope))
    return out


def otlp_traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of ``endpoint``: a base URL gets ``/v1/traces``.

    For example::

        ai.sources.otlp_traces_url("http://127.0.0.1:6006")   # "http://127.0.0.1:6006/v1/traces"
    """
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InspectError(f"bad OpenTelemetry endpoint {shown_url(endpoint)!r}: give an http(s) URL such as "
                           "http://127.0.0.1:6006/v1/traces")
    return endpoint if parts.path.rstrip("/").endswith("/v1/traces") else endpoint.rstrip("/") + "/v1/traces"


_CHECK_FRESH_SECONDS = 10.0
"""how long a URL :func:`check_export` reached counts as checked: long enough for one call chain (the CLI's check,
``to_otel``'s, :func:`export_spans`'), short enough that a URL kept and reused later is probed again"""


def _clock() -> float:
    return time.monotonic()


class _Checked(str):
    """A traces URL :func:`check_export` reached, and when: passed on down one call chain within
    ``_CHECK_FRESH_SECONDS``, it is not probed again."""

    checked_at: float

    def __new__(cls, url: str) -> _Checked:
        self = super().__new__(cls, url)
        self.checked_at = _clock()
        return self

    def fresh(self) -> bool:
        """Whether the check is recent enough to trust (an endpoint may have gone since)."""
        return _clock() - self.checked_at < _CHECK_FRESH_SECONDS


def check_export(*, endpoint: str | None = None, path: str | os.PathLike[str] | None = None,
                 timeout: float = 3.0, inputs: Iterable[str | os.PathLike[str]] = ()) -> str:
    """Check that an export can arrive before any work for it is done: ``endpoint`` an http(s) URL that answers
    (within ``timeout`` seconds), or ``path`` in a directory that exists; the traces URL or the path, else one
    ``InspectError`` line saying what to do; a ``path`` that is one of ``inputs`` (the files the export was made
    from) is refused, never overwritten. The URL returned is marked as checked: ``to_otel`` and
    :func:`export_spans` given it within seconds do not connect to check it again (a URL kept and reused later
    is probed again: the endpoint may have gone).

    For example::

        ai.sources.check_export(path="spans.json")              # "spans.json"; endpoint= tries to connect
    """
    if isinstance(endpoint, _Checked) and endpoint.fresh() and path is None:
        return endpoint
    if path is not None:
        out = Path(path)
        if not out.parent.is_dir():     # not created here, as write_report
            raise InspectError(f"cannot write {out}: {out.parent} is a file, not a directory; name a directory to write into"
                               if out.parent.exists()
                               else f"cannot write {out}: directory {out.parent} does not exist; create it first")
        check_output(out, inputs)
        return str(out)
    url = otlp_traces_url(str(endpoint))
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as exc:
        raise InspectError(f"cannot reach the OpenTelemetry endpoint {shown_url(url)} "
                           f"({shown_url(url, str(exc.strerror or exc))}): start the "
                           "collector or backend there, fix the URL, or write a file instead (path= / -o "
                           "spans.json)") from None
    return _Checked(url)


def export_spans(specs: Sequence[Mapping[str, Any]], endpoint: str, *, resource: Mapping[str, Any],
                 timeout: float = 10.0, headers: Mapping[str, str] | None = None) -> int:
    """Send the spans to an OTLP/HTTP (protobuf) endpoint; returns how many were sent. An endpoint that
    does not answer fails at once with one line saying what to do (unless ``endpoint`` is what
    :func:`check_export` returned: checked once per call chain).

    For example::

        spans = ai.otel.spans_of(ai.verify(log, ai.load_trace("sample_logs/production.trace.log"), markers=markers))
        ai.sources.export_spans(spans, "http://127.0.0.1:6006/v1/traces", resource={"service.name": "agents"})
    """
    url = check_export(endpoint=endpoint, timeout=min(timeout, 3.0))
    spans = _readable(specs, resource)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout, headers=dict(headers or {}))
    with _exporter_says() as said:
        try:
            for i in range(0, len(spans), _BATCH):
                if exporter.export(spans[i:i + _BATCH]) is not SpanExportResult.SUCCESS:
                    # the first thing it said (a retried 503's status) and how it gave up, on one line
                    why = "; ".join(dict.fromkeys(m.rstrip(".") for m in (said[:1] + said[-1:]))) or "no reason given"
                    why = " ".join(why.split())
                    raise InspectError(f"the OpenTelemetry endpoint {shown_url(url)} did not take the spans "
                                       f"({shown_url(url, why)}): check "
                                       "that it accepts OTLP/HTTP protobuf on /v1/traces, or write a file instead "
                                       "(path= / -o spans.json)")
        finally:
            exporter.shutdown()
    return len(spans)


@contextlib.contextmanager
def _exporter_says() -> Iterator[list[str]]:
    """The OTLP exporter's log messages while it runs, kept for the one error line instead of printed as lines of
    their own ("Failed to export spans batch code: 404, reason: Not Found", each retry of a 503)."""
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    logger = logging.getLogger("opentelemetry.exporter.otlp.proto.http")
    handler, propagate = Keep(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield said
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _hex_ids(node: Any) -> Any:
    """protobuf's JSON mapping writes bytes as base64; OTLP JSON wants trace and span ids as hex."""
    if isinstance(node, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str)
                    else _hex_ids(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def _b64_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (base64.b64encode(bytes.fromhex(v)).decode() if k in ("traceId", "spanId", "parentSpanId")
                    and isinstance(v, str) else _b64_ids(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_b64_ids(v) for v in node]
    return node


def write_otlp_json(specs: Sequence[Mapping[str, Any]], path: str | os.PathLike[str], *,
                    resource: Mapping[str, Any]) -> Path:
    """Write the spans as one OTLP JSON ``ExportTraceServiceRequest`` (the OTLP file exporter's shape:
    hex ids, integer enums), encoded by the SDK's OTLP encoder.

    For example::

        ai.sources.write_otlp_json([], "empty.json", resource={"service.name": "agents"})
    """
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    out = Path(check_export(path=path))
    message = encode_spans(_readable(specs, resource))
    data = _hex_ids(json_format.MessageToDict(message, use_integers_for_enums=True))
    out.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def read_otlp_json(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The spans of an OTLP JSON file as plain dicts (the shape :func:`export_spans` takes, plus
    ``resource``), read through the OTLP protobuf schema.

    For example::

        ai.to_otel(ai.load("sample_logs/G01.jsonl"), path="spans.json", markers=ai.samples.markers("G01"))
        spans = ai.sources.read_otlp_json("spans.json")   # back as plain dicts
        spans[0]["name"]
    """
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        message = json_format.ParseDict(_b64_ids(data), ExportTraceServiceRequest())
    except (ValueError, json_format.ParseError) as exc:
        raise InspectError(f"{os.fspath(path)!r} is not an OTLP JSON trace export ({exc})") from None
    out = []
    for rs in message.resource_spans:
        resource = {a.key: _value(a.value) for a in rs.resource.attributes}
        for ss in rs.scope_spans:
            for sp in ss.spans:
                out.append({
                    "name": sp.name, "trace_id": sp.trace_id.hex(), "span_id": sp.span_id.hex(),
                    "parent_span_id": sp.parent_span_id.hex() or None, "start_ns": sp.start_time_unix_nano,
                    "end_ns": sp.end_time_unix_nano, "attributes": {a.key: _value(a.value) for a in sp.attributes},
                    "events": [{"name": e.name, "time_ns": e.time_unix_nano,
                                "attributes": {a.key: _value(a.value) for a in e.attributes}} for e in sp.events],
                    "status": {"code": {0: "UNSET", 1: "OK", 2: "ERROR"}[sp.status.code],
                               "message": sp.status.message or None},
                    "resource": resource,
                })
    return out


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {x.key: _value(x.value) for x in v.kvlist_value.values}
    return getattr(v, kind) if kind else None
