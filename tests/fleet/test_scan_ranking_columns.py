"""What a scan's ranking shows explains the ranking: a key ranked first for a resumed task shows that task; the
CLI's totals read with thousands separators, as the rest of the CLI."""

from __future__ import annotations

from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.cli import main


def test_a_key_ranked_for_a_resumed_task_shows_it(dask_client: Any) -> None:
    result = ai.scan(ai.samples.path("production_v4", "parquet"), markers=ai.samples.markers("production_v4"),
                     client=dask_client)
    top = result.at_risk(1).iloc[0]
    # production_v4's one body run again is a resume: ranked first, it showed only rerun 0 before
    assert (top["original_resumed"], top["original_rerun"]) == (1, 0)
    assert int(result.keys["original_resumed"].sum()) == 1
    view = ai.widgets.FleetScanView(result)   # the notebook's table shows the same columns, each with its meaning
    assert "original_resumed" in view.columns and "runs again" in view.meanings()["original_resumed"]
    view.close()


def test_cli_totals_with_thousands_separators(dask_cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["scan", str(ai.samples.path("production", "parquet")), "--markers",
                 str(ai.samples.path("production", "markers")), "--scheduler", dask_cluster.scheduler_address,
                 "--no-progress", "--top", "1"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert [line.split() for line in out.out.splitlines() if line.startswith("records ")] == [["records", "2,989"]]
