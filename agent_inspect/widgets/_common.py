"""Shared pieces of the views: colours, escaped hover text, pretty values, accessors typed by ``_types``.

Views never compute results; these helpers only read frames and format them. Every string that
comes from a record goes through :func:`agent_inspect._html.escape` before it reaches HTML or a
plotly figure (plotly interprets hover text, trace names and tick labels as HTML).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from agent_inspect._errors import InspectError
from agent_inspect._glossary import define, shown_text
from agent_inspect._html import escape, plotly_text
from agent_inspect._types import LogLike, ReconstructionLike
from agent_inspect.widgets._style import colour

__all__ = [
    "STATUS_COLOURS",
    "KIND_COLOURS",
    "colour_for",
    "hover",
    "frame_hover",
    "value_html",
    "pretty_json",
    "records_of",
    "log_of",
    "decoded_value",
    "to_builtins",
    "first_column",
    "message_html",
    "integer_axis",
    "terms_html",
]

STATUS_COLOURS: dict[str, str] = {
    "live": colour("good"),
    "reused": colour("good"),
    "evicted": colour("bad"),
    "invalidated": colour("violet"),
    "superseded": colour("muted"),
    "pruned": colour("olive"),
    "tombstone": colour("brown"),
    "error": colour("pink"),
    "unknown": colour("info"),
    "not-in-log": colour("line"),
    "outside": colour("line"),
    "record": colour("info"),
    # sub-agent call statuses (spec §11.5)
    "done": colour("good"),
    "in-flight": colour("warn"),
    "consumed": colour("cyan"),
}
# Step kinds and outcomes of the replay executor and the prediction.
KIND_COLOURS: dict[str, str] = {
    "rebuild": colour("muted"),
    "lookup": colour("cyan"),
    "eviction": colour("bad"),
    "invalidation": colour("violet"),
    "reuse": colour("good"),
    "resume": colour("warn"),
    "rerun": colour("orange"),
    "persist": colour("info"),
    "round_complete": colour("olive"),
    "round-complete": colour("olive"),
    "prune": colour("brown"),
    "fail": colour("ink"),
    "not-dispatched": colour("line"),
}
_FALLBACK = tuple(colour(role) for role in ("info", "warn", "good", "bad", "violet", "brown", "pink", "cyan"))


def colour_for(name: Any, table: Mapping[str, str] = STATUS_COLOURS) -> str:
    """A stable colour for a status or step kind (unknown names get a deterministic fallback)."""
    text = str(name).lower()
    if text in table:
        return table[text]
    return _FALLBACK[sum(map(ord, text)) % len(_FALLBACK)]


def hover(pairs: Iterable[tuple[str, Any]]) -> str:
    """Plotly hover text of ``label: value`` lines; every label and value is escaped."""
    return "<br>".join(f"{_escape_text(str(k))}: {_escape_text(str(_plain(v)))}" for k, v in pairs
                       if not _missing(v))


def frame_hover(frame: pd.DataFrame, fields: Iterable[tuple[str, str]], *, sep: str = "<br>") -> np.ndarray:
    """Escaped hover lines ``<sep>label: value`` per row for the given (label, column) fields.

    Built column-wise with one escape per distinct value, so 10k rows cost milliseconds.
    Missing values and absent columns add nothing.
    """
    out = np.full(len(frame), "", dtype=object)
    for label, col in fields:
        if col not in frame.columns:
            continue
        values = frame[col].to_numpy(dtype=object)
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        # code -1 (missing) picks the trailing empty string
        table = np.array([f"{sep}{_escape_text(label)}: {_escape_text(str(_plain(u)))}" for u in uniques] + [""],
                         dtype=object)
        out = out + table[codes]
    return out


# Hover text repeats the same few labels and values thousands of times in one figure.
_escape_text = functools.lru_cache(maxsize=1 << 16)(plotly_text)


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return value


def pretty_json(value: Any) -> str:
    """Indented JSON text of a decoded record value (msgspec Struct, dict, or anything printable)."""
    if value is None:
        return "null"
    if isinstance(value, (msgspec.Struct, msgspec.Raw)):
        value = to_builtins(value)
    try:
        return msgspec.json.format(msgspec.json.encode(value), indent=2).decode("utf-8", "replace")
    except (TypeError, ValueError):
        pass
    if isinstance(value, (bytes, bytearray, memoryview)):
        text = bytes(value).decode("utf-8", "replace")
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def value_html(title: str, value: Any) -> str:
    """An escaped ``<pre>`` block with the pretty JSON of a decoded value, under an escaped title."""
    return (f'<div class="ai-record"><b>{escape(title)}</b>'
            f'<pre class="ai-value">{escape(pretty_json(value))}</pre></div>')


def integer_axis(values: Any) -> dict[str, Any]:
    """Axis settings for integer data (positions, seqs, steps): no fractional ticks on short ranges.

    Wide ranges reset ``dtick`` and ask for automatic ticks and range, so an axis that once showed a few
    values (one tick per value) follows the data when it grows instead of keeping a tick per value.
    """
    arr = pd.to_numeric(pd.Series(values, dtype="float64"), errors="coerce").dropna()
    span = float(arr.max() - arr.min()) if len(arr) else 0.0
    if span <= 12:
        return {"tickformat": "d", "dtick": 1, "tickmode": "linear", "autorange": True}
    return {"tickformat": "d", "dtick": None, "tick0": None, "tickmode": "auto", "nticks": 12, "autorange": True}


def terms_html(terms: Iterable[str]) -> str:
    """The "terms" line under a chart: each of its words the glossary defines, the definition on hover
    ("" when none is defined)."""
    spans = [f'<span class="ai-term" title="{escape(define(t))}">{escape(t)}</span>'
             for t in dict.fromkeys(map(str, terms)) if define(t)]
    return f'<div class="ai-terms">terms: {" · ".join(spans)}</div>' if spans else ""


def message_html(text: str, *, level: str = "info") -> str:
    """A one-line escaped notice (``level`` is info, warning or error)."""
    return f'<div class="ai-message ai-{escape(level)}">{escape(text)}</div>'


def runtime_html(obj: Any, *, rule: Any = None) -> str:
    """Which upstream runtime wrote the records of ``obj`` (a log, reconstruction or prediction) and the evidence,
    plus how many records the 0.4 lineage rule pinned; "" when ``obj`` holds neither (issue #12 item 7).
    Given ``rule`` (a name or rule object), also the rule, labelled a what-if when the runtime ships another."""
    from agent_inspect.log import SUMMARY_LABELS, infer_runtime, rule_label, runtime_text

    runtime = getattr(obj, "runtime", None)
    if callable(runtime):            # ActionStateLog.runtime() infers it
        runtime = runtime()
    log = log_of(obj)
    if runtime is None and log is not None:
        runtime = infer_runtime(log)
    if runtime is None:
        return ""
    label, explanation = SUMMARY_LABELS["runtime"]
    parts = [f'<span class="ai-runtime-name" title="{escape(explanation)}"><b>{escape(label)}</b>: '
             f"{escape(runtime_text(runtime))}</span>"]
    if rule is not None:
        name = rule if isinstance(rule, str) else str(getattr(rule, "name", type(rule).__name__))
        parts.insert(0, f'<span class="ai-rule" title="{escape(define("rule"))}"><b>rule</b>: '
                        f'{escape(rule_label(name, runtime))}</span>')
    records = log.records if log is not None else None
    if isinstance(records, pd.DataFrame) and "value_format_lineage_rule" in records.columns:
        pinned = int(records["value_format_lineage_rule"].fillna(False).astype(bool).sum())
        label, explanation = SUMMARY_LABELS["value_formats_by_lineage_rule"]
        parts.append(f'<span class="ai-lineage-rule" data-count="{pinned}" title="{escape(explanation)}">'
                     f"<b>{pinned:,}</b> {escape(label)}</span>")
    return f'<div class="ai-runtime">{" · ".join(parts)}</div>'


def log_of(obj: Any) -> LogLike | None:
    """The log itself, or the log behind a reconstruction (None when there is none)."""
    if isinstance(obj, LogLike):
        return obj
    if isinstance(obj, ReconstructionLike) and isinstance(obj.log, LogLike):
        return obj.log
    return None


def records_of(obj: Any) -> pd.DataFrame:
    """The record frame of a log or reconstruction (index = log position)."""
    if isinstance(obj, pd.DataFrame):
        return obj
    records = getattr(obj, "records", None)
    if isinstance(records, pd.DataFrame):
        return records
    raise TypeError(f"expected an ActionStateLog or a reconstruction result, got {type(obj).__name__}")


def decoded_value(obj: Any, pos: int) -> Any:
    """The value of the record at ``pos`` as plain JSON data (None for a tombstone).

    The record's own JSON (every property, in stored order) once ``log.value`` has decoded it;
    a decode failure comes back as ``{"decode_error": ..., "raw": <text>}`` instead of raising.
    """
    log = log_of(obj)
    if log is None:
        raise InspectError("this object carries no log to decode values from; pass the ActionStateLog")
    pos = int(pos)
    raw = log.raw
    data = raw.value[pos] if raw is not None and 0 <= pos < len(raw.value) else None
    try:
        state = log.value(pos)
    except (InspectError, ValueError) as exc:
        text = None if data is None else bytes(data).decode("utf-8", "replace")
        return {"decode_error": str(exc), "raw": text}
    if state is None:
        return None
    if data is not None:
        try:
            return _json_data(bytes(data))
        except msgspec.DecodeError:
            pass
    return to_builtins(state)


def _json_data(data: bytes) -> Any:
    """Parsed JSON for a view: a lone surrogate the codec read (``"\\uD800"``) shown as its escape, as text takes it."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        try:
            return _shown(json.loads(data))     # the stdlib reads a lone surrogate (msgspec refuses it)
        except ValueError:
            raise msgspec.DecodeError("not valid JSON") from None


def _shown(value: Any) -> Any:
    if isinstance(value, str):
        return shown_text(value)
    if isinstance(value, dict):
        return {shown_text(str(k)): _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def to_builtins(value: Any) -> Any:
    """Plain JSON data of a decoded msgspec value (Raw fragments parsed, unset and empty parts left out)."""
    if isinstance(value, msgspec.Raw):
        data = bytes(value)
        return _json_data(data) if data else None
    if isinstance(value, msgspec.Struct):
        out: dict[str, Any] = {}
        names = getattr(value, "__struct_encode_fields__", value.__struct_fields__)
        for field, name in zip(value.__struct_fields__, names):
            item = getattr(value, field)
            if item is None or item is msgspec.UNSET or (isinstance(item, msgspec.Raw) and not bytes(item)):
                continue
            if isinstance(item, dict) and not item and field == "extra":
                continue
            out[name] = to_builtins(item)
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_builtins(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_builtins(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_builtins(v) for v in value]
    return value


def first_column(frame: pd.DataFrame, *names: str) -> str | None:
    """The first of ``names`` that is a column of ``frame``."""
    for name in names:
        if name in frame.columns:
            return name
    return None
