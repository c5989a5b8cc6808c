"""A seq past 2^53 (a Java long seqNum, or a damaged one) survives verify: its frames were built through float64,
which rounds such a seq, and the cast back to Int64 raised TypeError."""

from __future__ import annotations

import json
from pathlib import Path

import agent_inspect as ai

BIG = (1 << 63) - 1


def test_verify_keeps_a_seq_past_2_to_the_53(tmp_path: Path) -> None:
    lines = []
    for line in Path(ai.samples.path("N04")).read_text().splitlines():
        record = json.loads(line)
        group, seq, rest = record["key"].split("_", 2)
        record["key"] = f"{group}_{BIG if seq == '6' else seq}_{rest}"
        lines.append(json.dumps(record) + "\n")
    (tmp_path / "big.jsonl").write_text("".join(lines))
    log = ai.load(tmp_path / "big.jsonl")
    verification = ai.verify(log, ai.samples.path("N04", "trace"))
    assert verification.tasks["seq"].dtype == "Int64"     # the trace's plan numbers the rounds 5 and 6
    joined = ai.trace.join(ai.load_trace(ai.samples.path("N04", "trace")), log)
    assert joined["seq"].dtype == "Int64" and BIG in set(joined["seq"].dropna())     # the records' own seq
