"""Every count the CLI prints has its noun in the right number: "1 body re-run", never "1 bodies" or "file(s)"."""

from __future__ import annotations

import re
from pathlib import Path

from agent_inspect.cli._scan import rule_counts_line

CLI = Path(__file__).parents[2] / "agent_inspect" / "cli"


def test_a_scan_rules_line_says_one_body_and_two_bodies() -> None:
    one = dict(rerun=1, resumed=0, calls=1, evictions=1, stale_reuse_risk=1, crashed_keys=1)
    assert rule_counts_line(one) == ("1 body re-run, 1 durable call re-executed, 1 eviction, 1 reuse at risk, "
                                     "1 key crashes")
    two = dict(rerun=1, resumed=1, calls=2, evictions=0, stale_reuse_risk=2, crashed_keys=1200)
    assert rule_counts_line(two) == ("2 bodies re-run, 2 durable calls re-executed, 0 evictions, 2 reuses at risk, "
                                     "1,200 keys crash")


def test_no_cli_line_hedges_a_plural() -> None:
    hedged = [f"{path.name}: {line.strip()}" for path in sorted(CLI.glob("*.py"))
              for line in path.read_text(encoding="utf-8").splitlines() if re.search(r"\w\(s\)", line)]
    assert hedged == []
