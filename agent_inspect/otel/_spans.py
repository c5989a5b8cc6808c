"""A checked recovery as OpenTelemetry spans, named as upstream's offline converter names them (pure).

One root span per input run (``invoke_agent {agent}``), one per action execution (``action {name}``)
with the prediction, the verdict and its cost under ``agent_inspect.*``, one per durable call
(``chat {model}``, ``execute_tool {name}``, ``parse {name}``); each store decision of the task's
``explain`` chain is an event of its action span. Ids follow upstream's rule: trace id = the first
16 bytes of SHA-256(inputRunId), span id = the first 8 bytes of SHA-256(executionId). Out come plain
dicts; :mod:`agent_inspect.sources` sends or writes them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect._glossary import plural
from agent_inspect._types import PredictionLike

if TYPE_CHECKING:
    from agent_inspect._types import PredictionLike
    from agent_inspect.trace import Verification

__all__ = ["spans_of", "trace_id_of", "span_id_of", "CALL_OPERATIONS"]

CALL_OPERATIONS = {"llm": ("chat", "chat"), "tool": ("execute_tool", "execute_tool"), "parser": ("parse", "parse"),
                   "subagent": ("invoke_agent", "invoke_agent")}
"""trace entity type -> (gen_ai.operation.name, span name prefix)"""
_SYNTHETIC = "agent-inspect:"


def trace_id_of(input_run_id: str) -> str:
    """Upstream's trace id of an input run: the first 16 bytes of SHA-256(inputRunId), as hex.

    For example::

        ai.otel.trace_id_of("input-run-1")             # 32 hex digits, as upstream derives it
    """
    return hashlib.sha256(input_run_id.encode("utf-8")).digest()[:16].hex()


def span_id_of(execution_id: str) -> str:
    """Upstream's span id of an execution: the first 8 bytes of SHA-256(executionId), as hex.

    For example::

        ai.otel.span_id_of("execution-1")              # 16 hex digits, as upstream derives it
    """
    return hashlib.sha256(execution_id.encode("utf-8")).digest()[:8].hex()


def _ns(ts: Any, default: int) -> int:
    if ts is None or (not isinstance(ts, str) and pd.isna(ts)):
        return default
    return int(pd.Timestamp(ts).value)


def _clean(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry attribute values: str, bool, int, float or lists of them; None dropped."""
    out: dict[str, Any] = {}
    for k, v in attrs.items():
        if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NA:
            continue
        if isinstance(v, (str, bool, int, float)):
            out[k] = v
        elif hasattr(v, "item"):
            out[k] = v.item()
        elif isinstance(v, (list, tuple)):
            out[k] = [x if isinstance(x, (str, bool, int, float)) else str(x) for x in v]
        else:
            out[k] = str(v)
    return out


def _events(steps: Iterable[Any], time_ns: int) -> list[dict[str, Any]]:
    return [{"name": str(s.kind), "time_ns": time_ns,
             "attributes": _clean({"agent_inspect.title": s.title, "agent_inspect.detail": s.detail or None,
                                   "agent_inspect.positions": [int(p) for p in s.positions] or None,
                                   "agent_inspect.rule_step": s.rule_step, "agent_inspect.divergence": s.divergence})}
            for s in steps]


def _predicted_only(prediction: Any, log: Any = None, markers: Any = None) -> Any:
    """A prediction alone in the shape :func:`spans_of` reads (no trace); ``markers`` default to its own."""
    recovery = getattr(prediction, "recovery", None)
    markers = markers if markers is not None or recovery is None else recovery.markers
    t = prediction.tasks
    tasks = pd.DataFrame({"key": t["key"].astype(str), "seq": t["seq"], "action": t["action"].astype(str),
                          "predicted": t["outcome"].astype(str), "observed": None, "agree": True,
                          "join": None, "execution_id": None, "event_id": t["event_id"], "cause": None,
                          "explanation": None, "task": range(len(t))})
    return SimpleNamespace(trace=None, tasks=tasks, prediction=prediction, log=log, markers=markers,
                           rule=str(prediction.rule), rule_label=str(prediction.rule_label),
                           what_if=bool(recovery is not None and recovery.what_if), tokens=None)


def spans_of(verification: Verification | PredictionLike, *, explain_chain: bool = True) -> list[dict[str, Any]]:
    """The spans of a checked recovery (``ai.verify(...)``, with or without ``.with_tokens()``), or of a
    prediction alone (``ai.predict(...)``).

    A task the trace shows executed *is* that execution's span (its span id by upstream's rule); a
    task the trace lacks (or a prediction alone) gets an id derived from its key, round, action and
    place in the dispatch order (the same in every export of one recovery), in the trace of its key's input
    run when the trace has one.

    For example::

        g01 = ai.load("sample_logs/G01.jsonl")
        v = ai.verify(g01, ai.load_trace("sample_logs/G01.trace.log"), markers=ai.samples.markers("G01"))
        spans = ai.otel.spans_of(v)                    # OTLP-shaped dicts, one per task
        len(spans), spans[0]["name"]
    """
    from agent_inspect.trace import call_tokens

    # a Verification, or a prediction alone in its shape
    v: Any = verification if hasattr(verification, "trace") or not isinstance(verification, PredictionLike) \
        else _predicted_only(verification)       # a prediction alone: its tasks, no trace
    trace = v.trace
    tasks = v.tasks
    # the rule, and whether it is a what-if (not what the job ran): a reader of the spans must not take it for the job's
    rule_attrs = {"agent_inspect.rule": v.rule, "agent_inspect.rule_label": getattr(v, "rule_label", v.rule),
                  "agent_inspect.what_if": bool(getattr(v, "what_if", False))}
    execs = trace.executions() if trace is not None else pd.DataFrame()
    calls = trace.calls() if trace is not None else pd.DataFrame()
    good = trace.good if trace is not None else pd.DataFrame()
    tokens = call_tokens(trace).set_index("execution_id") if trace is not None else pd.DataFrame()
    ledger = getattr(v, "tokens", None)
    start_default = int(good["timestamp"].min().value) if len(good) and good["timestamp"].notna().any() else 0
    exec_by_id = {str(r.execution_id): r for r in execs.itertuples(index=False)} if len(execs) else {}

    # input runs: their records' span, agent and key
    runs: dict[str, dict[str, Any]] = {}
    if len(good):
        rec = good[good["input_run_id"].notna()]
        for run, g in rec.groupby("input_run_id", sort=False, observed=True):
            ts = g["timestamp"].dropna()
            runs[str(run)] = {"start": int(ts.min().value) if len(ts) else start_default,
                              "end": int(ts.max().value) if len(ts) else start_default,
                              "agent": next((str(a) for a in g["agent_name"].dropna()), None),
                              "key": next((str(k) for k in g["business_key"].dropna()), None)}
    run_of_round: dict[tuple[str, Any], str] = {}
    for t in tasks.itertuples(index=False):
        e = exec_by_id.get(str(t.execution_id)) if isinstance(t.execution_id, str) else None
        if e is not None and isinstance(e.input_run_id, str) and t.seq is not None and not pd.isna(t.seq):
            run_of_round.setdefault((str(t.key), int(t.seq)), str(e.input_run_id))

    chains: dict[int, Any] = {}
    if explain_chain and v.prediction is not None:
        from agent_inspect.diffing import explain

        for t in tasks.itertuples(index=False):
            if t.task is None or pd.isna(t.task) or t.predicted in (None, "NOT-DISPATCHED"):
                continue
            try:
                chains[int(t.task)] = explain(v.prediction, task=int(t.task), log=v.log, markers=v.markers).steps
            except Exception:  # noqa: BLE001 - a task the chain cannot be told for keeps its span without events
                continue

    spans: list[dict[str, Any]] = []
    used_runs: dict[str, None] = {}     # in first-use order: a set's order follows the hash seed
    for t in tasks.itertuples(index=False):
        e = exec_by_id.get(str(t.execution_id)) if isinstance(t.execution_id, str) else None
        seq = None if t.seq is None or pd.isna(t.seq) else int(t.seq)
        if e is not None and isinstance(e.input_run_id, str):
            run = str(e.input_run_id)
        else:
            run = run_of_round.get((str(t.key), seq)) or f"{_SYNTHETIC}{t.key}:{seq}"
        if run not in runs:
            runs[run] = {"start": start_default, "end": start_default, "agent": None, "key": str(t.key)}
        used_runs[run] = None
        info = runs[run]
        if e is not None:
            sid = span_id_of(str(t.execution_id))
            start, end = _ns(e.first, info["start"]), _ns(e.last, info["start"])
        else:
            # the dispatch index, not the event id: a re-run's event id is made up afresh by every predict
            which = t.event_id if t.task is None or pd.isna(t.task) else int(t.task)
            sid = span_id_of(f"{_SYNTHETIC}{t.key}:{seq}:{t.action}:{which}")
            start = end = info["start"]
        # the task's own verdict where verify gave one: a task the trace cannot decide is not an error
        told = getattr(t, "verdict", None)
        verdict = ("unchecked" if trace is None else "agree" if bool(t.agree)
                   else "undetermined" if told == "undetermined"
                   else "disagree" if t.predicted is not None else "unpredicted")
        disagree = verdict == "disagree"
        cost = ledger.for_task(t.key, seq, t.action) if ledger is not None and t.predicted is not None else None
        attrs = {
            "gen_ai.operation.name": "action", "gen_ai.agent.name": info["agent"],
            "gen_ai.conversation.id": str(t.key),
            "flink_agents.input_run_id": run if not run.startswith(_SYNTHETIC) else None,
            "flink_agents.execution_id": t.execution_id if isinstance(t.execution_id, str) else None,
            "flink_agents.entity_type": "action", "flink_agents.entity_name": str(t.action),
            "flink_agents.execution.status": e.statuses[-1] if e is not None and len(e.statuses) else None,
            "error.type": (e.problem_category if e is not None and isinstance(e.problem_category, str) else None),
            "agent_inspect.seq": seq, "agent_inspect.predicted": t.predicted, "agent_inspect.observed": t.observed,
            "agent_inspect.verdict": verdict, "agent_inspect.cause": t.cause, **rule_attrs,
            "agent_inspect.join": t.join,
        }
        if cost is not None:
            attrs.update({"agent_inspect.tokens.predicted": _sum(cost, "predicted"),
                          "agent_inspect.tokens.observed": _sum(cost, "observed"),
                          "agent_inspect.cost.predicted": cost.get("cost_predicted"),
                          "agent_inspect.cost.observed": cost.get("cost_observed")})
        status = ({"code": "ERROR", "message": f"{t.cause}: {t.explanation}" if t.cause else "disagrees"}
                  if disagree else {"code": "UNSET"})
        spans.append({"name": f"action {t.action}", "trace_id": trace_id_of(run), "span_id": sid,
                      "parent_span_id": _root_id(run), "start_ns": start, "end_ns": max(end, start),
                      "attributes": _clean(attrs), "status": status,
                      "events": _events(chains.get(int(t.task), ()) if t.task is not None and not pd.isna(t.task)
                                        else (), start)})
    # durable calls, under the execution that made them
    for c in calls.itertuples(index=False) if len(calls) else ():
        parent = exec_by_id.get(str(c.parent_execution_id))
        if parent is None or not isinstance(parent.input_run_id, str):
            continue
        run = str(parent.input_run_id)
        used_runs[run] = None
        op, prefix = CALL_OPERATIONS.get(str(c.entity_type), (str(c.entity_type), str(c.entity_type)))
        target = str(c.model) if isinstance(c.model, str) else str(c.entity_name)
        start = _ns(c.first, runs.get(run, {}).get("start", start_default))
        # a call whose end record is timed before its start (a skewed clock, a damaged line) ends where it starts: an
        # OTLP time is unsigned, and a span may not end before it begins
        latency = c.latency_ms if c.latency_ms is not None and not pd.isna(c.latency_ms) else 0
        end = start + max(0, int(latency * 1e6))
        tok = tokens.loc[c.execution_id] if len(tokens) and c.execution_id in tokens.index else None
        attrs = {
            "gen_ai.operation.name": op, "gen_ai.agent.name": runs.get(run, {}).get("agent"),
            "gen_ai.conversation.id": runs.get(run, {}).get("key"),
            "gen_ai.request.model": c.model if isinstance(c.model, str) else None,
            "gen_ai.tool.name": str(c.entity_name) if c.entity_type == "tool" else None,
            "gen_ai.usage.input_tokens": None if tok is None or pd.isna(tok["input_tokens"]) else int(tok["input_tokens"]),
            "gen_ai.usage.output_tokens": None if tok is None or pd.isna(tok["output_tokens"]) else int(tok["output_tokens"]),
            "flink_agents.input_run_id": run, "flink_agents.execution_id": str(c.execution_id),
            "flink_agents.entity_type": str(c.entity_type), "flink_agents.entity_name": str(c.entity_name),
            "flink_agents.execution.status": c.statuses[-1] if len(c.statuses) else None,
            "agent_inspect.replayed": bool(c.replayed),
        }
        failed = "failed" in c.statuses
        if failed:
            attrs["error.type"] = {"llm": "model_call_failed", "tool": "tool_call_failed"}.get(str(c.entity_type),
                                                                                               "call_failed")
        spans.append({"name": f"{prefix} {target}", "trace_id": trace_id_of(run), "span_id": span_id_of(str(c.execution_id)),
                      "parent_span_id": span_id_of(str(c.parent_execution_id)), "start_ns": start, "end_ns": end,
                      "attributes": _clean(attrs), "status": {"code": "ERROR", "message": "the call failed"}
                      if failed else {"code": "UNSET"}, "events": []})
    # one root per input run, counting the action spans of its trace that disagree (grouped once, not per run)
    disagreeing: dict[str, int] = {}
    for s in spans:
        if s["status"]["code"] == "ERROR" and s["name"].startswith("action "):
            disagreeing[s["trace_id"]] = disagreeing.get(s["trace_id"], 0) + 1
    for run in used_runs:
        info = runs[run]
        synthetic = run.startswith(_SYNTHETIC)
        bad = disagreeing.get(trace_id_of(run), 0)
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": info["agent"],
                 "gen_ai.conversation.id": info["key"], "flink_agents.input_run_id": None if synthetic else run,
                 "flink_agents.entity_type": "agent", "flink_agents.entity_name": info["agent"],
                 **rule_attrs, "agent_inspect.disagreements": bad,
                 "agent_inspect.predicted_only": synthetic}
        spans.append({"name": f"invoke_agent {info['agent'] or 'agent'}", "trace_id": trace_id_of(run),
                      "span_id": _root_id(run), "parent_span_id": None, "start_ns": info["start"],
                      "end_ns": max(info["end"], info["start"]), "attributes": _clean(attrs),
                      "status": {"code": "ERROR", "message": f"{plural(bad, 'task')} {'disagrees' if bad == 1 else 'disagree'} with the prediction"}
                      if bad else {"code": "UNSET"}, "events": []})
    return spans


def _root_id(run: str) -> str:
    return span_id_of(f"invoke_agent:{run}")


def _sum(row: Mapping[str, Any], side: str) -> int | None:
    i, o = row.get(f"input_tokens_{side}"), row.get(f"output_tokens_{side}")
    if i is None and o is None:
        return None
    return int(i or 0) + int(o or 0)
