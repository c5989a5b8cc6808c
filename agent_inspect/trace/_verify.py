"""Predicted against observed: one row per task of a recovery, and the nearest explanation of a mismatch.

Why it is long: `verify` resolves the settings, builds the plan the trace shows, predicts, joins and explains in
one pass over shared per-key state; the explanation tables (causes, candidate rules, store flavours, markers) read
that state, and splitting them off would pass it through a second module's signatures.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

import pandas as pd

from agent_inspect._errors import InspectError, ReplayError
from agent_inspect._glossary import first_few, plural
from agent_inspect._types import PredictionLike, ReconstructionLike, RecoveryOverrides
from agent_inspect.log import rule_label
from agent_inspect.recovery import STORE_FLAVOURS, marker_warnings
from agent_inspect.trace._runtime import call_entity
from agent_inspect.trace._verdict import CONFIDENCES, Verdict, with_verdicts
from agent_inspect.trace._verification import Verification

if TYPE_CHECKING:
    import os

    from agent_inspect._types import MarkersLike
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery import Recovery, ReplayPlan
    from agent_inspect.trace._model import TraceLog

__all__ = ["verify", "Verification", "STORE_FLAVOURS", "CANDIDATE_RULES", "VERIFY_COLUMNS", "CAUSES", "plan_from_trace",
           "MARKER_CANDIDATES"]

CANDIDATE_RULES = ("original", "fixed", "naive", "lookup-only", "branch-aware")
"""the rules ranked when explaining a mismatch or inferring what the job ran"""
#: how many inferred marker candidates (of confidence 0.3 or more) ``verify(infer=True)`` ranks beside the given ones
MARKER_CANDIDATES = 3
CAUSES = ("wrong-rule", "wrong-runtime", "markers", "invisible-reuse", "trace-only", "trace-missing",
          "trace-truncated", "agent-model", "unexplained", "weak-join")
"""``cause`` values of a mismatch (``weak-join``: agrees, but joined below the confidence asked for)"""
VERIFY_COLUMNS = ["key", "seq", "input", "action", "predicted", "observed", "agree", "join", "confidence",
                  "execution_id", "trigger_event_id", "event_id", "entry_pos", "calls_executed_predicted",
                  "calls_executed_observed", "calls_replayed_observed", "cause", "explanation", "first", "task"]
_EXECUTED = {"RERUN", "RESUME", "FAILED", "INCOMPLETE"}
_UNNAMED = re.compile(r"^action-[0-9a-f]{8}(-[0-9a-f]{8})?$")


def _agrees(predicted: Any, observed: Any) -> bool:
    if predicted == "REUSE":
        return bool(observed == "REUSE")
    if predicted in ("RERUN", "RESUME"):
        return observed in _EXECUTED
    if predicted in ("FAIL", "NOT-DISPATCHED"):
        return bool(observed == "ABSENT")
    return False


# -- joining predicted tasks to traced executions ----------------------------------------------------

def compare(tasks: pd.DataFrame, execs: pd.DataFrame) -> pd.DataFrame:
    """Join a prediction's tasks to a trace's action executions, per key, and say whether each agrees.

    First by identity: the task's event id is the execution's ``triggerEventId`` (restored tasks, and
    children of reused actions, whose trigger is a stored id), confidence "high". Then in dispatch
    order: the rest of a key's tasks and executions aligned by action name (both sides dispatch
    FIFO per round, spec §9.3), confidence "medium". Tasks with no execution are observed
    ``ABSENT``; executions with no task are kept as rows with no prediction.

    For example::

        trace = ai.load_trace("sample_logs/production.trace.log")
        tasks = ai.predict(log, markers=markers).tasks
        ai.trace.compare(tasks, ai.trace.executions(trace))[["key", "action", "agree"]].head()
    """
    # plain rows grouped by key, in first-appearance order: row-wise pandas access here cost seconds per rule
    t_by_key = _rows_by_key(tasks, "key", _TASK_FIELDS)
    ex_by_key = _rows_by_key(execs, "business_key", _EXEC_FIELDS)
    rows: list[dict[str, Any]] = []
    for key in list(dict.fromkeys([*t_by_key, *ex_by_key])):
        tk = t_by_key.get(key, [])
        ek = ex_by_key.get(key, [])
        dispatched = [t for t in tk if t["outcome"] != "NOT-DISPATCHED"]
        pairs: dict[int, tuple[int, str]] = {}      # task row -> (execution row, method), both positions in tk / ek
        used: set[int] = set()
        by_trigger: dict[tuple[str, str], list[int]] = {}
        for i, e in enumerate(ek):
            if isinstance(e["trigger_event_id"], str):
                by_trigger.setdefault((e["trigger_event_id"], str(e["action"])), []).append(i)
        for t in dispatched:
            cands = [c for c in by_trigger.get((str(t["event_id"]), str(t["action"])), []) if c not in used]
            if cands:
                pairs[t["_at"]] = (cands[0], "trigger-event-id")
                used.add(cands[0])
        rest_t = [t["_at"] for t in dispatched if t["_at"] not in pairs]
        rest_e = [i for i in range(len(ek)) if i not in used]
        a = [str(tk[i]["action"]) for i in rest_t]
        b = [str(ek[i]["action"]) for i in rest_e]
        sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                for off in range(i2 - i1):
                    pairs[rest_t[i1 + off]] = (rest_e[j1 + off], "dispatch-order")
                    used.add(rest_e[j1 + off])
            elif tag == "replace" and i2 - i1 == j2 - j1 and all(_UNNAMED.match(x) for x in a[i1:i2]):
                # the log could not name these actions (no output names them): same place, any name
                for off in range(i2 - i1):
                    pairs[rest_t[i1 + off]] = (rest_e[j1 + off], "dispatch-order-unnamed")
                    used.add(rest_e[j1 + off])
        # a task predicted not to be dispatched, but the trace ran it
        for t in tk:
            if t["outcome"] != "NOT-DISPATCHED":
                continue
            cands = [i for i in range(len(ek)) if i not in used and str(ek[i]["action"]) == str(t["action"])]
            if cands:
                pairs[t["_at"]] = (cands[0], "action-name")
                used.add(cands[0])
        for t in tk:
            hit = pairs.get(t["_at"])
            rows.append(_row(key, t, ek[hit[0]] if hit else None, hit[1] if hit else None))
        for i, e in enumerate(ek):
            if i not in used:
                rows.append(_row(key, None, e, None))
    frame = pd.DataFrame(rows, columns=VERIFY_COLUMNS)
    frame["agree"] = frame["agree"].astype(bool)
    for col in ("seq", "entry_pos", "calls_executed_predicted", "calls_executed_observed", "calls_replayed_observed",
                "task"):     # from the rows: through float64 a seq past 2^53 no longer casts back
        frame[col] = pd.array([r[col] for r in rows], dtype="Int64")
    return frame


_TASK_FIELDS = ("outcome", "seq", "input", "action", "event_id", "entry_pos", "calls_executed")
_EXEC_FIELDS = ("observed", "action", "execution_id", "trigger_event_id", "calls_executed", "calls_replayed", "first")


def _rows_by_key(frame: pd.DataFrame, key: str, fields: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """``frame``'s ``fields`` as one dict a row, grouped by ``key`` (rows with no key left out, as a groupby
    leaves them), each with its index label (``_label``) and its position in its group (``_at``)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    if not len(frame):
        return groups
    for label, k, *values in zip(frame.index, frame[key], *(frame[f] for f in fields), strict=True):
        if k is None or (isinstance(k, float) and k != k):
            continue
        group = groups.setdefault(str(k), [])
        group.append({**dict(zip(fields, values, strict=True)), "_label": label, "_at": len(group)})
    return groups


def _row(key: str, t: Any, e: Any, method: str | None) -> dict[str, Any]:
    predicted = None if t is None else str(t["outcome"])
    observed = "ABSENT" if e is None else str(e["observed"])
    return {
        "key": key, "seq": None if t is None else t["seq"], "input": None if t is None else t["input"],
        "action": str(e["action"]) if t is None else str(t["action"]), "predicted": predicted,
        "observed": observed, "agree": predicted is not None and _agrees(predicted, observed),
        "join": method if t is not None and e is not None else ("trace-only" if t is None else "no-execution"),
        "confidence": {"trigger-event-id": "high", "dispatch-order": "medium", "dispatch-order-unnamed": "low",
                       "action-name": "low"}.get(method or ""),
        "execution_id": None if e is None else e["execution_id"],
        "trigger_event_id": None if e is None else e["trigger_event_id"],
        "event_id": None if t is None else t["event_id"], "entry_pos": None if t is None else t["entry_pos"],
        "calls_executed_predicted": None if t is None else t["calls_executed"],
        "calls_executed_observed": None if e is None else e["calls_executed"],
        "calls_replayed_observed": None if e is None else e["calls_replayed"],
        "cause": None, "explanation": None, "first": None if e is None else e["first"],
        "task": None if t is None else t["_label"],
    }


# -- the replay plan a trace shows ---------------------------------------------------------------------

def plan_from_trace(trace: TraceLog, log: ActionStateLog | None, *, markers: MarkersLike = None,
                    restore: Mapping[str, Any] | None = None, restore_plan: ReplayPlan | None = None) -> ReplayPlan | None:
    """The recovery's replay plan as the trace shows it: its ``_input_event`` records in order.

    Restored seqNums and in-flight tasks come from ``restore`` (a sample markers file's ``"restore"``
    entry: ``restored_seq``, ``pending``), or from ``restore_plan`` (the restore's own plan, a checkpoint's:
    ``Recovery.replay_plan``; it also stands in for the log's window), or else from the log's window
    (``ReplayPlan.from_log``) and the trace: a task whose trigger event this trace never emitted, and which is no input, was restored
    from the checkpoint (``actionTasks``); its event is the stored output of the record that sent it.
    When the trace shows none, the log window's pending tasks (in-flight rounds brought back by 0.4+
    refresh rows) are used. Returns None when an input's attributes are truncated, or when the trace
    shows no input where the log's window replays some (then the log's plan is used).

    For example::

        trace = ai.load_trace("sample_logs/production.trace.log")
        plan = ai.trace.plan_from_trace(trace, log, markers=markers)   # the inputs the trace shows replayed
        len(plan.inputs)
    """
    from agent_inspect.agents import AgentEvent
    from agent_inspect.recovery import PendingTask, ReplayInput, ReplayPlan
    from agent_inspect.recovery.engine import KeyMaker

    good = trace.good
    inputs = good[(good["entity_type"] == "event") & (good["entity_name"].astype(object) == "_input_event")]
    if inputs["truncated"].any() or any(not isinstance(a, dict) or not a for a in inputs["attributes"]):
        return None
    base = restore_plan if restore_plan is not None else ReplayPlan.from_log(log, markers=markers) if log is not None else None
    # no input in the trace is right only when the log's window replays none either (a restore that only
    # resumes in-flight tasks, e.g. a checkpoint taken mid-action at the source's last input)
    if inputs.empty and (base is None or base.inputs):
        return None
    restored = dict(base.restored_seq) if base is not None else {}
    pending: tuple[Any, ...] = ()
    if restore:
        restored = {str(k): int(v) for k, v in dict(restore.get("restored_seq") or {}).items()}
        pend = []
        for item in restore.get("pending") or ():
            k, s, a, ev = item
            ev = dict(ev)
            pend.append(PendingTask(str(k), int(s), str(a), AgentEvent(str(ev.get("type")),
                                                                       dict(ev.get("attributes") or {}),
                                                                       ev.get("id"))))
        pending = tuple(pend)
    elif restore_plan is not None:
        pending = restore_plan.pending
    elif log is not None:
        pending = _restored_tasks(trace, log) or (base.pending if base is not None else ())
    keys = dict(base.keys) if base is not None else {}
    # a digest key (K1.6/K2) the log never names has no state key to make (its text is unknown): a damaged line or
    # another job's key; left out, so its executions show as unpredicted instead of stopping the verification
    maker = KeyMaker(log, key_format=None)
    maker.register(keys)
    named = {str(k) for k in inputs["business_key"].astype(object)} | {str(p.key) for p in pending}
    unknown = sorted(k for k in named if not _identifiable(maker, k))
    if unknown:
        inputs = inputs[~inputs["business_key"].astype(object).isin(unknown)]
        pending = tuple(p for p in pending if str(p.key) not in unknown)
    plan_inputs = tuple(ReplayInput(str(k), AgentEvent("_input_event", dict(a)))
                        for k, a in zip(inputs["business_key"].astype(object), inputs["attributes"]))
    notes = (f"{plural(len(unknown), 'key')} of the trace's tasks {'is a digest' if len(unknown) == 1 else 'are digests'} "
             f"the log does not hold ({first_few(unknown, 3)}): left out of the prediction",) if unknown else ()
    if base is not None:
        # a key the restore replays but the trace never mentions: predict it from the log's window, so it
        # shows up as missing from the trace instead of silently agreeing
        traced = set(map(str, good["business_key"].dropna()))
        plan_inputs += tuple(i for i in base.inputs if str(i.key) in restored and str(i.key) not in traced)
    return ReplayPlan(inputs=plan_inputs, restored_seq=restored, pending=pending, keys=keys, notes=notes)


def _identifiable(maker: Any, key: str) -> bool:
    try:
        maker.identity(key)
    except ReplayError:
        return False
    return True


def _restored_tasks(trace: Any, log: Any) -> tuple[Any, ...]:
    from agent_inspect.agents import AgentEvent
    from agent_inspect.recovery import PendingTask

    execs = trace.executions()
    if execs.empty:
        return ()
    good = trace.good
    emitted = set(good.loc[good["entity_type"] == "event", "event_id"].dropna())
    wanted = {str(t): (str(k), str(a)) for t, k, a in zip(execs["trigger_event_id"], execs["business_key"],
                                                          execs["action"])
              if isinstance(t, str) and t not in emitted}
    if not wanted:
        return ()
    recs = log.records
    ok = recs[recs["error"].isna()]
    out: list[Any] = []
    seen: set[tuple[str, str]] = set()
    for pos, outs, seq in zip(ok.index, ok["output_event_ids"], ok["seq"]):
        for oid in outs if isinstance(outs, (tuple, list)) else ():
            if oid not in wanted or (oid, wanted[oid][1]) in seen:
                continue
            state = log.value(int(pos))
            ev = next((e for e in (state.output_events if state is not None else ()) if e.id == oid), None)
            if ev is None:
                continue
            attrs = ev.attrs()
            key, action = wanted[oid]
            seen.add((oid, action))
            out.append(PendingTask(key, int(seq), action, AgentEvent(str(ev.type), attrs if isinstance(attrs, dict)
                                                                      else {}, oid, event_class=ev.event_class)))
    return tuple(out)


# -- verify ------------------------------------------------------------------------------------------

def _effective_rule(rule: Any, runtime: str) -> Any:
    if runtime != "auto" and isinstance(rule, str) and rule == "original":
        return f"original:{runtime}"
    return rule


def _totals(tasks: pd.DataFrame) -> pd.DataFrame:
    pred = tasks["predicted"].dropna().value_counts()
    obs = tasks["observed"].value_counts()
    names = list(dict.fromkeys(["REUSE", "RESUME", "RERUN", "FAIL", "NOT-DISPATCHED", *pred.index, *obs.index,
                                "FAILED", "INCOMPLETE", "ABSENT"]))
    rows = []
    for n in names:
        p, o = int(pred.get(n, 0)), int(obs.get(n, 0))
        verdicts = tasks.loc[tasks["predicted"] == n, "verdict"]
        if p or o:
            rows.append({"outcome": n, "predicted": p, "observed": o, "agree": int((verdicts == "agree").sum()),
                         "disagree": int((verdicts == "disagree").sum()),
                         "undetermined": int((verdicts == "undetermined").sum())})
    return pd.DataFrame(rows, columns=["outcome", "predicted", "observed", "agree", "disagree", "undetermined"])


def _calls(prediction: Any, trace: Any, call_kind: Callable[[str | None], str | None],
           cached_latency_ms: float) -> pd.DataFrame:
    ledger = getattr(prediction, "ledger", pd.DataFrame(columns=["kind", "name", "count"]))
    kinds = {"call": "executed", "reconciler": "executed", "replayed": "replayed"}
    pred = {("llm", "executed"): 0, ("llm", "replayed"): 0, ("tool", "executed"): 0, ("tool", "replayed"): 0}
    for kind, name, count in zip(ledger["kind"], ledger["name"], ledger["count"]):
        entity = call_kind(str(name))
        if entity in ("llm", "tool") and kind in kinds:
            pred[(entity, kinds[kind])] += int(count)
    obs = dict.fromkeys(pred, 0)
    c = trace.calls(cached_latency_ms=cached_latency_ms)
    for et, rep in zip(c["entity_type"], c["replayed"]):
        if et in ("llm", "tool"):
            obs[(et, "replayed" if rep else "executed")] += 1
    return pd.DataFrame([{"entity_type": e, "calls": k, "predicted": pred[(e, k)], "observed": obs[(e, k)],
                          "agree": pred[(e, k)] == obs[(e, k)]} for e, k in pred],
                        columns=["entity_type", "calls", "predicted", "observed", "agree"])


def verify(subject: ActionStateLog | ReconstructionLike | PredictionLike, trace: TraceLog | str | os.PathLike[str], *,
           recovery: Recovery | None = None, log: ActionStateLog | None = None,
           restore: Mapping[str, Any] | None = None, job: str | None = None, infer: bool = False,
           cached_latency_ms: float = 5.0, call_kind: Callable[[str | None], str | None] = call_entity,
           candidates: Sequence[str] = CANDIDATE_RULES, confidence: str = "low",
           **overrides: Unpack[RecoveryOverrides]) -> Verification:
    """Check a recovery's prediction against the Trace Log of the recovered job.

    Each task's ``verdict`` (and ``Verification.verdict``) is agree, disagree, or undetermined: its cause
    means the log or the trace cannot tell (agent model, invisible reuse, truncated trace, or a join weaker
    than ``confidence``, the weakest join that counts: "low", "medium" or "high").

    ``subject``: an ``ActionStateLog`` (predicted here under ``recovery`` / the settings given as keywords,
    as every verb takes them: by default the rule the log's runtime ships), a reconstruction (its log, rule
    and markers) or a ``Prediction`` (pass ``log=`` too to explain mismatches). ``trace``: a
    :class:`TraceLog` or a path. ``markers``: the restore's recovery markers. ``plan``: the replay plan; by
    default the trace's own ``_input_event`` records in order (:func:`plan_from_trace`) with ``restore``'s
    restored seqNums and in-flight tasks, else the log's window. ``store_flavour``: "auto" or an upstream
    store flavour (:data:`STORE_FLAVOURS`; applies to the ``original`` rule). ``job``: which job of a trace
    that mixes several. ``infer=True`` ranks every candidate rule and store flavour by agreement (done
    anyway when something disagrees, to explain it), and with no ``plan`` the inferred marker candidates
    (``markers.infer_markers``) × rules × store flavours too: ``ranking["markers"]`` says whose markers a row used.

    For example::

        trace = ai.load_trace("sample_logs/production.trace.log")
        v = ai.verify(log, trace, markers=markers)
        v.verdict, v.totals            # agree / disagree / undetermined
    """
    from agent_inspect.recovery import Recovery, predict
    from agent_inspect.trace._model import TraceLog, load_trace

    if confidence not in CONFIDENCES:
        raise InspectError(f"unknown confidence {confidence!r}; use one of {', '.join(CONFIDENCES)}")
    if not isinstance(trace, TraceLog):
        trace = load_trace(trace)
    trace.require_records()    # an empty file observed nothing, so it cannot disagree (unreadable lines: truncated)
    notes: list[str] = []
    jobs = trace.jobs()
    if job is not None:
        if job not in jobs:
            raise InspectError(f"the trace has no job {job!r}; its jobs: {', '.join(jobs) or 'none named'}")
        trace = trace.for_job(job)
    elif len(jobs) > 1:
        raise InspectError(f"the trace mixes {len(jobs)} jobs ({', '.join(jobs)}); pick one with job= (--job)")
    if len(trace.errors):
        notes.append(f"{plural(len(trace.errors), 'trace record')} could not be read (see trace.errors): the trace may be "
                     "incomplete")
    conflicts = int(trace.good["conflict"].sum()) if "conflict" in trace.records else 0
    if conflicts:
        notes.append(f"{plural(conflicts, 'trace record')} {'shares' if conflicts == 1 else 'share'} an execution id and status with another of different "
                     "content (see trace.conflicts)")
    prediction = None
    given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    if recovery is None:     # a prediction's or reconstruction's own settings (plan, runtime, pending…), as given
        recovery = getattr(subject, "recovery", None)
    if isinstance(subject, PredictionLike):
        prediction = subject
        given.setdefault("rule", subject.rule)
    elif isinstance(subject, ReconstructionLike):
        log = subject.log
        given.setdefault("rule", subject.rule)
        given.setdefault("markers", subject.markers)
        given.setdefault("runtime", getattr(subject, "runtime", None))
    else:
        log = subject
    settings = Recovery.resolve(log, recovery, **given)
    rule, markers, plan = settings.rule, settings.markers, settings.plan
    if log is not None:       # e.g. a marker past its partition's end: the prediction's warning, a note here
        notes.extend(marker_warnings(markers, log))
    flavour, agent = settings.store_flavour, settings.agent
    plan_given = plan
    if plan is None and log is not None:
        own = settings.replay_plan(log) if settings.plan_source is not None and not restore else None
        plan = plan_from_trace(trace, log, markers=markers, restore=restore, restore_plan=own)
        if plan is None:
            notes.append("the trace's inputs are missing or truncated: the replay plan is inferred from the log")
        else:
            notes.extend(plan.notes)
    execs = trace.executions(cached_latency_ms=cached_latency_ms)
    other_job = _shared_keys_note(trace, log) if log is not None else ""
    if execs.empty:
        notes.append("the trace holds no action execution (is trace-log.targets scope EVENT_ONLY, the default?)")
    summary = trace.summary()
    if not summary["recovery"]:
        notes.append(summary["recovery_note"])

    def run(r: Any, m: Any) -> Any:
        # replace(), not overrides: markers=None means the whole log; no log: the runtime is already resolved
        return predict(log, recovery=settings.replace(rule=r, markers=m, plan=plan))

    if prediction is None:
        prediction = run(rule, markers)
    tasks = compare(prediction.tasks, execs)
    ranking = None
    others: dict[str, pd.DataFrame] = {}
    agreements: dict[str, _Agreement] = {}   # per other prediction (none made: nothing to rank)
    if log is not None and not execs.empty and (infer or not tasks["agree"].all()):  # no execution: nothing to rank
        cands: list[tuple[str, str]] = []
        for r in candidates:
            cands.append((r, "auto"))
            if r == "original":
                cands += [("original", f) for f in STORE_FLAVOURS[1:]]
        rows = []
        for r, rt in cands:
            name = rule_label(_effective_rule(r, rt), None)
            try:
                cmp = compare(run(_effective_rule(r, rt), markers).tasks, execs)
            except InspectError as exc:          # a rule that cannot run here is not a candidate
                notes.append(f"candidate {name} could not be predicted: {exc}")
                continue
            others[name] = cmp
            rows.append(({"rule": r, "store_flavour": rt, "name": name, "markers": "given", "marker_values": None},
                         cmp))
        if infer and plan_given is None:
            rows += _rank_markers(log, trace, execs, settings, markers, cands, notes)
        if markers is not None and not tasks["agree"].all():
            try:
                others["__whole_log__"] = compare(run(rule, None).tasks, execs)
            except InspectError:
                pass
        agreements = _agreements(others)   # every other prediction is made by now
        if rows:
            # each candidate's tasks get their verdicts as the chosen rule's do (same causes, same confidence), so
            # "disagree" counts only tasks the trace shows wrong and the chosen rule's row matches its counts()
            ranking = pd.DataFrame([{**row, **_verdict_counts(cmp, trace, execs, agreements, str(row["name"]), confidence,
                                                              as_recorded=agent is None)} for row, cmp in rows],
                                   columns=list(_RANKING_COLUMNS))
            # ties: the runtime inferred from the key format and source ("auto") first, then candidate order
            ranking["_pinned"] = ranking["store_flavour"] != "auto"
            ranking = ranking.sort_values(["disagree", "agree", "_pinned"], ascending=[True, False, True],
                                          kind="stable").drop(columns="_pinned").reset_index(drop=True)
    tasks = _explain(tasks, trace, execs, agreements, ranking, rule_label(rule, None), rule, as_recorded=agent is None)
    tasks = with_verdicts(tasks, confidence=confidence)
    call_totals = _calls(prediction, trace, call_kind, cached_latency_ms)
    why = _calls_differ_why(tasks, as_recorded=agent is None)
    for r in call_totals[~call_totals["agree"]].itertuples(index=False):
        notes.append(f"durable {r.entity_type} calls {r.calls}: predicted {r.predicted:,}, the trace shows {r.observed:,}"
                     + (f" ({why})" if why else ""))
    joined = None
    if log is not None:
        from agent_inspect.trace._join import join

        joined = join(trace, log, call_kind=call_kind)
    return Verification(tasks=tasks, totals=_totals(tasks), calls=call_totals,
                        rule=rule_label(rule, None), store_flavour=flavour, runtime=settings.runtime.name,
                        what_if=settings.what_if, markers=markers, ranking=ranking, notes=tuple(notes),
                        other_job=other_job, confidence=confidence, prediction=prediction, trace=trace, log=log, joined=joined)


def _calls_differ_why(tasks: pd.DataFrame, *, as_recorded: bool) -> str:
    """Why the predicted durable calls may differ from the traced ones: the tasks whose outcome does not match
    (worded by their verdicts: a truncated trace's tasks are undetermined, not disagreeing), else the
    as-recorded agent's model of the bodies, else nothing known."""
    mismatched = tasks.loc[~tasks["agree"].astype(bool), "verdict"]
    bad = int((mismatched == Verdict.DISAGREE.value).sum())
    unsure = int((mismatched == Verdict.UNDETERMINED.value).sum())
    undecided = "the trace cannot decide"
    if bad and unsure:
        return f"follows from the disagreeing tasks and {'the one' if unsure == 1 else 'those'} {undecided}"
    if bad:
        return "follows from the disagreeing tasks"
    if unsure:
        return f"follows from {'the task' if unsure == 1 else 'the tasks'} {undecided}"
    if as_recorded:
        return ("the as-recorded agent repeats the recorded call sequence, retries included; pass agent= for a "
                "model of the bodies")
    return ""


def _shared_keys_note(trace: Any, log: Any) -> str:
    """Why the trace looks like another job's (no business key in common with the log), or ""."""
    traced = {str(k) for k in trace.good["business_key"].dropna().unique()}
    logged = {str(k) for k in log.records["business_key"].dropna().unique()}
    if not traced or not logged or traced & logged:
        return ""
    return (f"the trace and the log share no business key (the trace names {len(traced):,}, e.g. {min(traced)!r}; "
            f"the log holds {len(logged):,}, e.g. {min(logged)!r})")


_RANKING_COLUMNS = ("rule", "store_flavour", "name", "agree", "disagree", "undetermined", "tasks", "markers",
                    "marker_values")


def _verdict_counts(cmp: pd.DataFrame, trace: Any, execs: pd.DataFrame, others: Mapping[str, _Agreement],
                    name: str, confidence: str, *, as_recorded: bool) -> dict[str, int]:
    """One ranking row's counts: tasks per verdict (agree, disagree, undetermined) and in all, by the causes
    and verdicts the chosen rule's own tasks get (:func:`_explain`, :func:`with_verdicts`)."""
    if cmp["agree"].all() and confidence == "low":     # nothing to explain, no join too weak: all agree
        return {"agree": len(cmp), "disagree": 0, "undetermined": 0, "tasks": len(cmp)}
    verdicts = with_verdicts(_explain(cmp, trace, execs, others, None, name, None, as_recorded=as_recorded),
                             confidence=confidence)["verdict"]
    return {v.value: int((verdicts == v.value).sum()) for v in Verdict} | {"tasks": len(cmp)}


def _rank_markers(log: Any, trace: Any, execs: pd.DataFrame, settings: Recovery, markers: Any,
                  cands: Sequence[tuple[str, str]], notes: list[str]) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """Ranking rows for the inferred marker candidates (``markers.infer_markers``) × rules × store flavours.

    Each candidate's replay plan is the trace's, read against that candidate's window (:func:`plan_from_trace`).
    Rows carry the candidate's source in ``markers`` and its markers in ``marker_values``; the given markers'
    rows are ``markers="given"``.
    """
    from agent_inspect.markers import infer_markers
    from agent_inspect.recovery import normalize_markers, predict

    given = normalize_markers(markers) if markers is not None else None
    rows: list[tuple[dict[str, Any], pd.DataFrame]] = []
    for cand in [c for c in infer_markers(log, trace) if c.confidence >= 0.3][:MARKER_CANDIDATES]:
        if markers is not None and normalize_markers(cand.markers) == given:
            continue
        plan = plan_from_trace(trace, log, markers=cand.markers)
        for r, rt in cands:
            name = rule_label(_effective_rule(r, rt), None)
            try:
                cmp = compare(predict(log, recovery=settings.replace(rule=_effective_rule(r, rt), markers=cand.markers,
                                                                     plan=plan)).tasks, execs)
            except InspectError as exc:
                notes.append(f"candidate {name} with markers from the {cand.source} could not be predicted: {exc}")
                continue
            rows.append(({"rule": r, "store_flavour": rt, "name": name, "markers": cand.source,
                          "marker_values": cand.to_dict()["markers"]}, cmp))
    return rows


_Agreement = tuple[dict[str, bool], dict[tuple[Any, Any, Any], bool]]


def _agreements(others: Mapping[str, pd.DataFrame]) -> dict[str, _Agreement]:
    """Per other prediction, whether it agrees on each traced execution (by id) and on each task the trace shows
    absent (by key, action and seq), all of a match's rows agreeing: what :func:`_explain` asks per mismatch."""
    out: dict[str, _Agreement] = {}
    for name, other in others.items():
        by_execution: dict[str, bool] = {}
        absent: dict[tuple[Any, Any, Any], bool] = {}
        for e, k, a, seq, obs, ok in zip(other["execution_id"], other["key"], other["action"], other["seq"],
                                         other["observed"], other["agree"]):
            if isinstance(e, str):
                by_execution[e] = by_execution.get(e, True) and bool(ok)
            if obs == "ABSENT" and seq is not None and not pd.isna(seq):
                absent[(k, a, seq)] = absent.get((k, a, seq), True) and bool(ok)
        out[name] = (by_execution, absent)
    return out


def _explain(tasks: pd.DataFrame, trace: Any, execs: pd.DataFrame, others: Mapping[str, _Agreement],
             ranking: pd.DataFrame | None, rule_name: str, rule: Any, *, as_recorded: bool) -> pd.DataFrame:
    tasks = tasks.copy()
    traced_keys = set(map(str, trace.good["business_key"].dropna().unique()))
    incomplete = set(map(str, execs.loc[execs["observed"] == "INCOMPLETE", "business_key"])) if len(execs) else set()
    has_errors = len(trace.errors) > 0
    order = list(ranking["name"]) if ranking is not None else [n for n in others if n != "__whole_log__"]

    def agrees_under(name: str, row: Any) -> bool:
        other = others.get(name)
        if other is None:
            return False
        by_execution, absent = other
        if isinstance(row["execution_id"], str):
            return by_execution.get(row["execution_id"], False)
        seq = row["seq"]
        return False if seq is None or pd.isna(seq) else absent.get((row["key"], row["action"], seq), False)

    base_rule = rule_name.partition(":")[0]
    obs_of = dict(zip(execs["execution_id"], execs["observed"])) if len(execs) else {}
    producer_observed = {e: obs_of.get(p) for e, p in zip(execs["execution_id"], execs["trigger_producer"])} \
        if len(execs) else {}
    bad = tasks.index[~tasks["agree"].astype(bool)]
    found: list[tuple[str, str | None]] = []
    # plain dicts, not tasks.loc[i]: a ranking explains every candidate's mismatches, thousands on a big restore
    for row in tasks.loc[bad, ["predicted", "observed", "key", "execution_id", "action", "seq"]].to_dict("records"):
        cause = expl = None
        unpredicted = not isinstance(row["predicted"], str)
        if unpredicted:
            if row["observed"] == "REUSE":
                cause, expl = "invisible-reuse", (
                    "the trace shows this action reused, but the prediction has no such task: a reuse writes "
                    "nothing to the log (spec §9.3), so a branch the log cannot show (spec §10.3 known limits, "
                    "'invisible branch return') or a key outside the loaded log")
            else:
                cause, expl = "trace-only", ("the trace shows an execution the prediction does not have: an input or "
                                             "key outside the loaded log or the markers' window, or another agent")
        elif row["observed"] == "ABSENT" and str(row["key"]) not in traced_keys and has_errors:
            cause, expl = "trace-truncated", (f"the trace has no record of key {row['key']}, but some of its records "
                                              "could not be read (a cut-off or damaged file): they may have held it")
        elif row["observed"] == "ABSENT" and str(row["key"]) not in traced_keys:
            cause, expl = "trace-missing", (f"the trace has no record of key {row['key']}: another subtask's file, "
                                            "a trace-log scope or detail that leaves actions out, or a missing file")
        elif row["observed"] == "ABSENT" and (has_errors or str(row["key"]) in incomplete):
            cause, expl = "trace-truncated", ("the trace of this key ends before this task (cut-off or unreadable "
                                              "records, or the job stopped)")
        if cause is None:
            for name in order:
                if name == rule_name or not agrees_under(name, row):
                    continue
                base = name.partition(":")[0]
                if base == base_rule and name != rule_name:
                    cause, expl = "wrong-runtime", f"it would agree under runtime store flavour {name.partition(':')[2]} ({name})"
                else:
                    cause, expl = "wrong-rule", f"it would agree under rule {name}: the job seems to have run {name}"
                break
        if cause is None and agrees_under("__whole_log__", row):
            cause, expl = "markers", ("it would agree with the whole loaded log as the rebuild window: the markers "
                                      "are not those of the restore this trace shows")
        if cause is None and (unpredicted or row["predicted"] == "NOT-DISPATCHED") and row["observed"] != "ABSENT" \
                and as_recorded and isinstance(row["execution_id"], str):
            parent = producer_observed.get(row["execution_id"])
            if parent in ("RERUN", "RESUME"):
                cause, expl = "agent-model", (
                    "its trigger came from an action the job re-executed; the log-only (as-recorded) agent "
                    "cannot know what that action emits for this input. Pass agent= (your agent's model)")
        if cause is None and row["observed"] == "ABSENT":
            cause, expl = "trace-truncated", "the trace has no execution for this task (missing or truncated trace)"
        if cause is None:
            cause, expl = "unexplained", ("no built-in rule, runtime or window explains it: a nondeterministic "
                                          "body, changed code, or a limit of the model (spec §10.3)")
        found.append((cause, expl))
    if found:
        tasks.loc[bad, "cause"] = [c for c, _ in found]
        tasks.loc[bad, "explanation"] = [e for _, e in found]
    return tasks
