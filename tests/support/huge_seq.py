"""Sample N04 with its round 6 renumbered: a seq past what float64 holds exactly (a Java long seqNum, or a damaged
one), for the tests that check frames keep it."""

from __future__ import annotations

import json
from pathlib import Path

import agent_inspect as ai

BIG = (1 << 63) - 1


def n04_with_seq(directory: Path, seq: int = BIG) -> Path:
    """N04 written under ``directory`` as JSONL, its records of round 6 at ``seq`` instead."""
    lines = []
    for line in Path(ai.samples.path("N04")).read_text().splitlines():
        record = json.loads(line)
        group, old, rest = record["key"].split("_", 2)
        record["key"] = f"{group}_{seq if old == '6' else old}_{rest}"
        lines.append(json.dumps(record) + "\n")
    path = directory / "big.jsonl"
    path.write_text("".join(lines))
    return path
