"""Each sample's Trace Log: what the runtime writes while it performs the restore the sample shows.

The trace comes from the replay executor running that restore under the rule the sample's job ran
(its runtime's rule), not from the prediction it is later checked against. A few samples also get a
deliberately inconsistent trace: the same restore recorded under another rule, which ``ai.verify``
must catch and name.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_inspect.executor import ReplayExecutor
    from agent_inspect.samples._catalog import Sample

__all__ = ["TRACE_RULE", "INCONSISTENT", "sample_trace", "run_recovery", "inconsistent_suffix"]

TRACE_RULE = "original"
"""the rule the samples' runtime runs (every sample's job ran upstream's rule)"""
INCONSISTENT = {"N04": "fixed", "G01": "fixed"}
"""sample -> the other rule its inconsistent trace was recorded under"""


def inconsistent_suffix(rule: str) -> str:
    """File suffix of a trace recorded under ``rule`` instead of the sample's own."""
    return f".{rule}-rule.trace.log"


def run_recovery(sample: Sample | str, rule: str = TRACE_RULE) -> tuple[ReplayExecutor, list[dict[str, Any]]]:
    """Run ``sample``'s restore (a :class:`Sample` or its name) with the executor under ``rule``; returns the
    executor (``.to_log()`` is the topic after the recovery) and the Trace Log records the runtime writes
    meanwhile. Deterministic.

    For example::

        ex, trace_records = ai.samples.run_recovery(ai.samples.scenario("G01"), "original")
        ex.to_log().records.shape, len(trace_records)
    """
    from agent_inspect.samples._catalog import scenario
    from agent_inspect.trace import trace_from_executor

    if isinstance(sample, str):      # a name, as markers() / path() / checkpoint() take
        sample = scenario(sample)
    seed = zlib.crc32(f"{sample.name}:{rule}".encode())
    ex = sample.executor(rule=rule, seed=seed)
    ex.run()
    ts = sample.log.records["timestamp"].dropna()
    start = int(ts.max().value // 1_000_000) + 47_000 if len(ts) else 0
    inputs = [v for _k, v in sample.plan["inputs"]]
    return ex, trace_from_executor(ex, agent_name=f"{sample.name}-agent", inputs=inputs, start_ms=start, seed=seed)


def sample_trace(sample: Sample | str, rule: str = TRACE_RULE) -> list[dict[str, Any]]:
    """The Trace Log records of ``sample``'s restore (a :class:`Sample` or its name), run by the executor
    under ``rule``.

    For example::

        records = ai.samples.sample_trace("G01")   # the Trace Log of its restore, as G01.trace.log holds it
        records[0]
    """
    return run_recovery(sample, rule)[1]
