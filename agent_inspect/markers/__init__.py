"""Where a restore's recovery markers lie when no checkpoint is at hand: candidates inferred from the log and a trace.

::

    cands = ai.infer_markers(log)              # or ai.markers.infer_markers(log, trace): best first
    cands[0].markers, cands[0].evidence        # {partition: offset} maps, and why
    ai.predict(log, markers=cands[0])          # every verb takes a candidate as markers=

Evidence about the restore window, not the restore itself: the restore model (:mod:`agent_inspect.recovery`)
never imports this package. The exact markers come from the job's checkpoint (:func:`agent_inspect.checkpoint.read`).
"""

from __future__ import annotations

from agent_inspect.markers._infer import CONFIDENCE_MEANS, MARKER_SOURCES, MarkerCandidate, infer_markers

__all__ = ["infer_markers", "MarkerCandidate", "MARKER_SOURCES", "CONFIDENCE_MEANS"]
