"""A scan counts every outcome the engine yields (NOT-DISPATCHED and FAIL included), so its per-outcome counts add up
to the tasks ``predict`` lists: in the key frame, the summary, the CLI's text and JSON, and the HTML report."""

from __future__ import annotations

import html as htmllib
import json
import re
from collections import Counter
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.fleet import key_frame
from agent_inspect.recovery import rebuild_start

#: every outcome's column: the per-key counts of predict's tasks
OUTCOMES = {"REUSE": "reused", "RESUME": "resumed", "RERUN": "rerun", "FAIL": "failed",
            "NOT-DISPATCHED": "not_dispatched"}


@pytest.mark.parametrize("name", ["production", "S05", "P01", "subagents"])
def test_the_key_frame_counts_every_task_predict_lists(name: str) -> None:
    """production lists 10 NOT-DISPATCHED tasks under original and 26 under fixed; P01 a FAIL: the frame had no
    column for the first, so its outcome columns summed to fewer tasks than predict's."""
    log = ai.load(ai.samples.path(name, "parquet"))
    markers = ai.samples.markers(name)
    frame = key_frame(log, rules=("original", "fixed"), markers=rebuild_start(markers)).set_index("business_key")
    for rule in ("original", "fixed"):
        tasks = ai.predict(log, rule=rule, markers=markers).tasks
        want = Counter((str(k), str(o)) for k, o in zip(tasks["business_key"], tasks["outcome"]))
        got = Counter({(str(k), outcome): int(n) for outcome, col in OUTCOMES.items()
                       for k, n in frame[f"{rule}_{col}"].items() if n})
        assert got == want, rule


def test_a_scan_says_how_many_tasks_and_each_outcome(dask_client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from agent_inspect.report import render_report

    path, markers = ai.samples.path("production", "parquet"), ai.samples.markers("production")
    result = ai.scan(path, markers=markers, client=dask_client)
    log = ai.load(path)
    s = result.summary()
    for rule in result.rules:
        outcomes = ai.predict(log, rule=rule, markers=markers).tasks["outcome"].value_counts()
        r = s[rule]
        assert r["tasks"] == int(outcomes.sum()) == sum(r[c] for c in OUTCOMES.values())
        assert r["not_dispatched"] == int(outcomes.get("NOT-DISPATCHED", 0)) > 0
    assert s["original"]["not_dispatched"] == 10 and s["fixed"]["not_dispatched"] == 26

    # the HTML report: a column per outcome and the tasks they add up to
    page = render_report(result)
    text = htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<script>.*?</script>", "", page,
                                                                                  flags=re.S))))
    assert "rule tasks reused resumed re-run failed not dispatched " in text
    o = s["original"]
    assert f"original {o['tasks']:,} {o['reused']:,} {o['resumed']:,} {o['rerun']:,} 0 10 " in text
    assert "643 tasks: 169 reused, 0 resumed, 464 re-run, 0 failed, 10 not dispatched" in result._repr_html_()

    # the CLI: a tasks line under each rule, and the counts in --json
    argv = ["scan", str(path), "--markers", str(ai.samples.path("production", "markers")),
            "--scheduler", dask_client.scheduler.address, "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "643 tasks: 169 reused, 0 resumed, 464 re-run, 0 failed, 10 not dispatched" in out
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["fixed"]["not_dispatched"] == 26 and data["summary"]["fixed"]["tasks"] == 643
