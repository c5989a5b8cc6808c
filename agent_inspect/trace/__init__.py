"""Check predictions against what the job did: the Flink Agents Trace Log, joined and verified.

    trace = ai.load_trace("traces/")                        # FILE, SLF4J or old Event Log output
    trace.records; trace.errors; trace.summary()
    ai.trace.join(trace, log)                               # trace executions ↔ action-state records
    v = ai.verify(log, trace, markers=..., rule="original")  # predicted vs observed, per task
    v.verdict; v.tasks; v.totals; v.ranking            # agree / disagree / undetermined, per task and overall
"""

from __future__ import annotations

from agent_inspect.trace._join import JOIN_METHODS, join
from agent_inspect.trace._model import (
    ENTITY_TYPES,
    PROBLEM_CATEGORIES,
    STATUSES,
    TRUNCATION_WRAPPERS,
    TraceLog,
    load_trace,
)
from agent_inspect.trace._observe import OBSERVED, calls, executions
from agent_inspect.trace._runtime import call_entity, trace_from_executor
from agent_inspect.trace._tokens import (
    TOKEN_ATTRIBUTES,
    TokenLedger,
    call_tokens,
    parse_prices,
    prices_from_toml,
    token_ledger,
)
from agent_inspect.trace._verdict import CONFIDENCES, UNDETERMINED_CAUSES, Verdict
from agent_inspect.trace._verify import (
    CANDIDATE_RULES,
    CAUSES,
    STORE_FLAVOURS,
    Verification,
    compare,
    plan_from_trace,
    verify,
)

__all__ = [
    # loading
    "load_trace", "TraceLog", "ENTITY_TYPES", "STATUSES", "PROBLEM_CATEGORIES", "TRUNCATION_WRAPPERS",
    # what the trace shows
    "executions", "calls", "OBSERVED",
    # joining to action-state records
    "join", "JOIN_METHODS",
    # writing what a runtime would (samples)
    "trace_from_executor", "call_entity",
    # verification
    "verify", "Verification", "compare", "plan_from_trace", "STORE_FLAVOURS", "CANDIDATE_RULES", "CAUSES",
    # three-valued verdicts
    "Verdict", "UNDETERMINED_CAUSES", "CONFIDENCES",
    # what a recovery re-spent on model calls
    "token_ledger", "TokenLedger", "call_tokens", "parse_prices", "prices_from_toml", "TOKEN_ATTRIBUTES",
]
