"""Each sample's Trace Log: what the runtime writes while it performs the restore the sample shows.

The trace (``sample_trace``, beside ``scenario`` in ``_catalog``) comes from the replay executor running
that restore under the rule the sample's job ran (its runtime's rule), not from the prediction it is later checked against. A few samples also get a
deliberately inconsistent trace: the same restore recorded under another rule, which ``ai.verify``
must catch and name.
"""

from __future__ import annotations

__all__ = ["TRACE_RULE", "INCONSISTENT", "inconsistent_suffix"]

TRACE_RULE = "original"
"""the rule the samples' runtime runs (every sample's job ran upstream's rule)"""
INCONSISTENT = {"N04": "fixed", "G01": "fixed"}
"""sample -> the other rule its inconsistent trace was recorded under"""


def inconsistent_suffix(rule: str) -> str:
    """File suffix of a trace recorded under ``rule`` instead of the sample's own."""
    return f".{rule}-rule.trace.log"
