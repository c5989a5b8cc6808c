"""``Any`` in a public signature only where a value really is arbitrary (issue #21, item 5).

The public callables are the functions and the public methods (and ``__init__``) of the classes in the
``__all__`` of ``agent_inspect`` and of each public subpackage. A parameter (``*args`` / ``**options`` aside) or a
return annotated with ``Any``, alone or inside another type (``Mapping[str, Any]``), must be listed in
:data:`ALLOWED` with the reason its value is arbitrary; anything else names its type (a log is a ``LogLike`` or an
``ActionStateLog``, markers ``MarkersLike``, a rule ``RuleLike``: ``agent_inspect/_types.py``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator

import agent_inspect as ai

# Why a value may be Any: one of these, nothing else.
JSON = "JSON value"                      # attributes, payloads, OTLP/trace records: whatever JSON holds
USER = "user value"                      # what the user's agent computes or stores: memory, call results, keys
PLAIN = "plain data"                     # a row or summary of mixed plain values (to_dict, summary, as_row)
CONFIG = "client config values"          # Kafka / Fluss / generator options: the container is typed, not the values
PASSED = "arbitrary object the user passes through"
CACHE = "internal cache"                 # a memo a dataclass carries, never read by the user
REASONS = {JSON, USER, PLAIN, CONFIG, PASSED, CACHE}

RETURN = "return"

ALLOWED: dict[str, dict[str, str]] = {
    # the verbs
    "agent_inspect:load_kafka": {"config": CONFIG},
    "agent_inspect:load_fluss": {"config": CONFIG},
    "agent_inspect:ActionStateLog.verify_identity": {"plan": JSON},
    "agent_inspect:ActionStateLog.summary": {RETURN: PLAIN},
    "agent_inspect:Reconstruction.summary": {RETURN: PLAIN},
    "agent_inspect:TraceLog.summary": {RETURN: PLAIN},
    "agent_inspect:TraceLog.__init__": {"_cache": CACHE},
    "agent_inspect:verify": {"restore": JSON},
    "agent_inspect:scan": {"config": CONFIG},
    "agent_inspect:ScanResult.summary": {RETURN: PLAIN},
    "agent_inspect:ScanResult.to_dict": {RETURN: PLAIN},
    # any result with a notebook display; a business key is whatever the job keyed by
    "agent_inspect:inspect": {"subject": PASSED, "business_key": USER},
    # agents: what an agent sends, stores and gets back
    "agent_inspect.agents:ActionContext.send_event": {"attributes": JSON},
    "agent_inspect.agents:ActionContext.durable_execute": {"call": USER, RETURN: USER},
    "agent_inspect.agents:ActionContext.durable_execute_reconcilable": {"call": USER, "reconciler": USER,
                                                                        RETURN: USER},
    "agent_inspect.agents:ActionContext.call_subagent": {"attributes": JSON, RETURN: USER},
    "agent_inspect.agents:AgentEvent.__init__": {"attributes": JSON},
    "agent_inspect.agents:MemoryView.get": {"default": USER, RETURN: USER},
    "agent_inspect.agents:MemoryView.set": {"value": USER},
    "agent_inspect.agents:Behaviour.__init__": {"trigger_attributes": JSON},
    "agent_inspect.agents:Emit.__init__": {"attributes": JSON},
    "agent_inspect.agents:Call.__init__": {"result": USER},
    "agent_inspect.agents:SubagentCall.__init__": {"attributes": JSON},
    "agent_inspect.agents:SetMemory.__init__": {"value": USER},
    "agent_inspect.agents:SubagentIdAllocator.__init__": {"event_attributes": JSON},
    # cases and checker: case files, generator options, reports
    "agent_inspect.cases:Case.__init__": {"expect_results": JSON},
    "agent_inspect.cases:parse_case": {"data": JSON},
    "agent_inspect.cases:CaseResult.to_dict": {RETURN: PLAIN},
    "agent_inspect.checker:check": {"options": CONFIG},
    "agent_inspect.checker:CheckReport.to_dict": {RETURN: PLAIN},
    "agent_inspect.checker:Counterexample.to_dict": {RETURN: PLAIN},
    "agent_inspect.checker:Counterexample.__init__": {"data": PLAIN, "full_data": PLAIN},
    "agent_inspect.checker:History.__init__": {"agent_spec": JSON, "memo": CACHE},
    "agent_inspect.checker:generate_history": {"options": CONFIG},
    "agent_inspect.checkpoint:Checkpoint.to_dict": {RETURN: PLAIN},
    # codec: decoded values and what is hashed or serialized
    "agent_inspect.codec:state_key_writer": {RETURN: USER},      # writes any business key
    "agent_inspect.codec:Event.attrs": {RETURN: JSON},
    "agent_inspect.codec:lone_surrogate_object": {RETURN: JSON},
    "agent_inspect.codec:MemoryUpdate.json_value": {RETURN: JSON},
    "agent_inspect.codec:unpickle_payload": {RETURN: USER},
    "agent_inspect.codec:canonical_json": {"obj": JSON},
    "agent_inspect.codec:event_uuid": {"attributes": JSON},
    "agent_inspect.codec:subagent_namespace_digest": {"event_attributes": JSON},
    "agent_inspect.codec:python_args_digest": {"args": USER, "kwargs": USER},
    "agent_inspect.codec:StateValue.__init__": {"value": USER},
    "agent_inspect.codec:KryoObject.__init__": {"fields": USER},
    # diffing
    "agent_inspect.diffing:Diff.first_divergence": {RETURN: PLAIN},
    "agent_inspect.diffing:Diff.to_dict": {RETURN: PLAIN},
    "agent_inspect.diffing:Side.__init__": {"source": PASSED},   # what the side was made from, kept for explain
    "agent_inspect.diffing:Explanation.to_dict": {RETURN: PLAIN},
    "agent_inspect.diffing:ExplainStep.to_dict": {RETURN: PLAIN},
    # executor: memory, stubs and the durable calls of a replayed body
    "agent_inspect.executor:ExecutorOptions.__init__": {"policies": USER, "memory": USER, "sensory": USER,
                                                        "memory_decoder": USER},
    "agent_inspect.executor:Step.as_row": {RETURN: PLAIN},
    "agent_inspect.executor:Step.__init__": {"detail": PLAIN},
    "agent_inspect.executor:MemoryState.__init__": {"short_term": USER, "sensory": USER},
    "agent_inspect.executor:Checkpoint.__init__": {"short_term": USER, "sensory": USER},
    "agent_inspect.executor:Policies.stub_for": {RETURN: USER},
    "agent_inspect.executor:Policies.__init__": {"stubs": USER},
    "agent_inspect.executor:ReplayContext.send_event": {"attributes": JSON},
    "agent_inspect.executor:ReplayContext.durable_execute": {"fn": USER, RETURN: USER},
    "agent_inspect.executor:ReplayContext.durable_execute_async": {"fn": USER, RETURN: USER},
    "agent_inspect.executor:ReplayContext.durable_execute_reconcilable": {"fn": USER, RETURN: USER},
    "agent_inspect.executor:ReplayContext.call_subagent": {"attributes": JSON, RETURN: USER},
    "agent_inspect.executor:ReplayContext.call_subagents": {"calls": JSON, RETURN: USER},
    "agent_inspect.executor:Memory.__init__": {"base": USER},
    "agent_inspect.executor:Memory.set": {"value": USER},
    "agent_inspect.executor:Memory.snapshot": {RETURN: USER},
    "agent_inspect.executor:json_envelope_decoder": {RETURN: JSON},
    # fleet
    "agent_inspect.fleet:plan_scan": {"config": CONFIG},
    "agent_inspect.fleet:WindowResult.__init__": {"partition": PLAIN},
    "agent_inspect.otel:spans_of": {RETURN: JSON},
    "agent_inspect.raw:SourceInfo.__init__": {"options": PLAIN},
    # recovery
    "agent_inspect.recovery:agent_event": {"ev": PASSED},          # a codec Event, or anything with its fields
    "agent_inspect.recovery:RemovalCauses.task_reasons": {"rows": PLAIN},
    "agent_inspect.recovery:Simulation.__init__": {"rows": PLAIN, "outcomes": PLAIN},
    "agent_inspect.rules:RuleState.__init__": {"extra": USER},     # a rule's own state
    # samples
    "agent_inspect.samples:Sample.info": {RETURN: PLAIN},
    "agent_inspect.samples:Sample.__init__": {"plan": JSON, "memory": USER},
    "agent_inspect.samples:run_recovery": {RETURN: JSON},
    "agent_inspect.samples:sample_trace": {RETURN: JSON},
    # sources: client configs and OTLP / trace records
    "agent_inspect.sources:open_kafka": {"config": CONFIG},
    "agent_inspect.sources:read_partitions": {"user": CONFIG},
    "agent_inspect.sources:read_fluss": {"config": CONFIG},
    "agent_inspect.sources:plan_fluss": {"config": CONFIG},
    "agent_inspect.sources:read_fluss_bucket": {"config": CONFIG},
    "agent_inspect.sources:open_kafka_tail": {"config": CONFIG},
    "agent_inspect.sources:KafkaTail.__init__": {"conf": CONFIG},
    "agent_inspect.sources:write_trace": {"records": JSON},
    "agent_inspect.sources:TraceItem.__init__": {"obj": JSON},
    "agent_inspect.sources:export_spans": {"specs": JSON, "resource": JSON},
    "agent_inspect.sources:write_otlp_json": {"specs": JSON, "resource": JSON},
    "agent_inspect.sources:read_otlp_json": {RETURN: JSON},
    # trace
    "agent_inspect.trace:trace_from_executor": {RETURN: JSON},
    "agent_inspect.trace:Verification.with_tokens": {"restore": JSON},
    "agent_inspect.trace:Verification.best": {RETURN: PLAIN},
    "agent_inspect.trace:Verification.to_dict": {RETURN: PLAIN},
    "agent_inspect.trace:plan_from_trace": {"restore": JSON},
    "agent_inspect.trace:token_ledger": {"restore": JSON},
    "agent_inspect.trace:TokenLedger.for_task": {RETURN: PLAIN},
    "agent_inspect.trace:TokenLedger.to_dict": {RETURN: PLAIN},
    "agent_inspect.trace:TokenLedger.__init__": {"observed": PLAIN},
    # widgets
    "agent_inspect.widgets:KeyHistory.__init__": {"key": USER},
    "agent_inspect.widgets:KeyHistory.expand": {RETURN: PLAIN},
    "agent_inspect.widgets:DataGrid.on_select": {"callback": PASSED},   # called with the frame's index label
}

_ANY = re.compile(r"\bAny\b")


def _public_callables() -> Iterator[tuple[str, Callable[..., object]]]:
    """``("package:Name[.method]", function)`` for every public callable, each function once."""
    packages = ["agent_inspect", *(f"agent_inspect.{m.name}" for m in pkgutil.iter_modules(ai.__path__)
                                   if not m.name.startswith("_"))]
    seen: set[int] = set()
    for package in packages:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if inspect.isfunction(obj):
                targets = [(name, obj)]
            elif inspect.isclass(obj):
                targets = [(f"{name}.{m}", f) for m, f in vars(obj).items()
                           if inspect.isfunction(f) and (not m.startswith("_") or m == "__init__")]
            else:
                continue
            for qualified, fn in targets:
                if id(fn) not in seen:
                    seen.add(id(fn))
                    yield f"{package}:{qualified}", fn


def _any_annotated(fn: Callable[..., object]) -> list[str]:
    """The parameters (and ``"return"``) of ``fn`` whose annotation mentions ``Any``."""
    sig = inspect.signature(fn)
    found = [name for name, p in sig.parameters.items()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and _ANY.search(str(p.annotation))]
    if _ANY.search(str(sig.return_annotation)):
        found.append(RETURN)
    return found


def test_any_only_where_a_value_is_arbitrary() -> None:
    unlisted = []
    for name, fn in _public_callables():
        allowed = ALLOWED.get(name, {})
        unlisted += [f"{name} {param}" for param in _any_annotated(fn) if param not in allowed]
    assert unlisted == [], ("annotated Any: name the type (agent_inspect/_types.py has the shared ones), or, if "
                            "the value really is arbitrary, list it in ALLOWED with its reason")


def test_the_allowlist_is_current_and_says_why() -> None:
    # an entry the code no longer needs is dropped, so the list never hides a new Any in its place
    found = {name: set(_any_annotated(fn)) for name, fn in _public_callables()}
    stale = [f"{name} {param}" for name, params in ALLOWED.items() for param in params
             if param not in found.get(name, set())]
    assert stale == []
    assert {reason for params in ALLOWED.values() for reason in params.values()} <= REASONS


def test_the_guard_sees_a_new_any() -> None:
    from typing import Any

    def verb(log: Any, *, config: dict[str, Any] | None = None, **options: Any) -> list[Any]:
        return []

    assert _any_annotated(verb) == ["log", "config", RETURN]
