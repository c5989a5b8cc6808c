"""A seq past 2^53 (a Java long seqNum, or a damaged one) survives verify: its frames were built through float64,
which rounds such a seq, and the cast back to Int64 raised TypeError."""

from __future__ import annotations

from pathlib import Path

import agent_inspect as ai
from tests.support.huge_seq import BIG, n04_with_seq


def test_verify_keeps_a_seq_past_2_to_the_53(tmp_path: Path) -> None:
    log = ai.load(n04_with_seq(tmp_path))
    verification = ai.verify(log, ai.samples.path("N04", "trace"))
    assert verification.tasks["seq"].dtype == "Int64"     # the trace's plan numbers the rounds 5 and 6
    joined = ai.trace.join(ai.load_trace(ai.samples.path("N04", "trace")), log)
    assert joined["seq"].dtype == "Int64" and BIG in set(joined["seq"].dropna())     # the records' own seq
