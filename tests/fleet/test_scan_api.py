"""The public surface of agent_inspect.fleet, the per-window task as a plain function, and the result's views."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agent_inspect as ai
import agent_inspect.fleet as scan_pkg
from agent_inspect.rules import FixedRule
from tests.sources._fake_fluss import Behaviour, factory


def test_public_names() -> None:
    assert sorted(scan_pkg.__all__) == sorted([
        "scan", "plan_scan", "ScanPlan", "RUNTIMES", "ScanResult", "KEY_COLUMNS", "RULE_COLUMNS", "CALLS_PREFIX",
        "scan_window", "concat_keys", "key_frame", "ScanOptions", "WindowResult", "OUTCOME_COLUMNS", "SUMMARY_LABELS", "tasks_text"])
    assert ai.scan is scan_pkg.scan and ai.fleet.ScanResult is ai.ScanResult is scan_pkg.ScanResult
    assert "scan" in ai.__all__ and "ScanResult" in ai.__all__


def test_the_task_is_a_plain_function_any_engine_can_call() -> None:
    """No Dask here: plan, then call the task per window in a loop; the keys equal a Dask scan's."""
    plan = ai.fleet.plan_scan(ai.samples.path("production", "parquet"), markers=ai.samples.markers("production"))
    options = ai.fleet.ScanOptions(markers=plan.markers)
    frames = [ai.fleet.scan_window(plan.spec, w, options).keys for w in plan.windows]
    keys = ai.fleet.concat_keys(frames).sort_values("business_key").reset_index(drop=True)
    want: list[str] = list(ai.fleet.KEY_COLUMNS)
    for r in ("original", "fixed"):   # each rule's counts, then its calls per function id, sorted
        want += [f"{r}_{c}" for c in ai.fleet.RULE_COLUMNS]
        want += sorted(c for c in keys.columns if c.startswith(f"{r}{ai.fleet.CALLS_PREFIX}"))
    assert list(keys.columns) == want and any(ai.fleet.CALLS_PREFIX in c for c in want)
    assert len(keys) == 40 and keys["business_key"].is_unique


def test_rule_objects_runtime_and_ranking(dask_client: Any) -> None:
    result = ai.scan(ai.samples.path("production", "parquet"), markers=ai.samples.markers("production"),
                     what_if=(FixedRule(),), runtime="0.4", client=dask_client)
    assert result.runtime == "0.4" and result.rules == ("original", "fixed") and result.what_if == ("fixed",)
    assert result.rule_label("fixed") == "fixed (what-if; 0.4 ships original)" and result.rule_label("original") == "original"
    assert result.summary()["fixed"]["what_if"] and not result.summary()["original"]["what_if"]
    ranked = result.at_risk(None, rule="original")
    assert len(ranked) == 40
    key = ranked.iloc[0]
    # ranked by risk, then durable calls, then re-runs: nothing below the top beats it on the first criteria
    assert (ranked["original_stale_reuse_risk"] <= key["original_stale_reuse_risk"]).all()
    with pytest.raises(ValueError, match="was not scanned"):
        result.at_risk(rule="naive")
    s = result.summary()
    assert s["records"] == 2989 and s["keys"] == 40
    assert s["original"]["rerun"] == int(result.keys["original_rerun"].sum())


def test_bad_arguments_fail_before_any_task() -> None:
    path = ai.samples.path("G01", "parquet")
    with pytest.raises(ai.InspectError, match="runtime must be one of"):
        ai.scan(path, runtime="0.9")
    with pytest.raises(ai.InspectError, match="distinct"):
        ai.scan(path, what_if=("fixed", "fixed"))
    with pytest.raises(ai.InspectError):
        ai.scan(path, what_if=("no-such-rule",))
    with pytest.raises(ai.InspectError):
        ai.scan(path, rule="no-such-rule")
    with pytest.raises(ai.InspectError, match="not agent"):
        ai.scan(path, agent=object())
    with pytest.raises(ai.BrokerUnreachable, match="unreachable while connecting"):
        ai.scan("fluss://localhost:9123/db.t", connection_factory=factory({}, Behaviour(refuse=True)))
    # nothing listens there: one line at once, not after Dask's 10 s of retrying a refused connection
    with pytest.raises(ai.SourceError, match="no Dask scheduler answered at tcp://127.0.0.1:9 .nothing accepts"):
        ai.scan(path, client="tcp://127.0.0.1:9")


def test_html_escapes_record_strings() -> None:
    evil = "<img src=x onerror=alert(1)>"
    cols = ai.fleet.KEY_COLUMNS + [f"fixed_{c}" for c in ai.fleet.RULE_COLUMNS]
    row = {c: 0 for c in cols}
    row.update(business_key=evil, lint_flags=evil, runtime_evidence=evil, exposed_1301=True, fixed_crashed=False)
    row[f"fixed{ai.fleet.CALLS_PREFIX}{evil}"] = 1     # a function id is payload text too
    keys = pd.DataFrame([row], columns=[*cols, f"fixed{ai.fleet.CALLS_PREFIX}{evil}"])
    parts = pd.DataFrame([{"window": evil, "partition": 0, "records": 1, "errors": 0}])
    failures = pd.DataFrame([{"window": evil, "partition": 1, "path": evil, "start": None, "end": None,
                              "reason": evil}])
    result = ai.ScanResult(keys=keys, partitions=parts, errors=pd.DataFrame(), failures=failures, source=evil,
                           rules=("fixed",))
    html = result._repr_html_()
    assert "<img" not in html and "&lt;img" in html
    assert result.calls_by_function().to_dict() == {evil: 1}
    from agent_inspect.report._scan import scan_sections

    page = "".join(section.body for section in scan_sections(result, max_rows=20))
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_open_refuses_a_directory_that_is_not_a_scan(tmp_path: Path) -> None:
    with pytest.raises(ai.SourceError, match="not a scan directory"):
        ai.ScanResult.open(tmp_path)


def test_a_scan_restores_each_key_from_the_checkpoints_plan(dask_client: Any) -> None:
    """The checkpoint travels to the workers (ScanOptions.plan_source) and gives the markers file's answer."""
    path = ai.samples.path("production", "parquet")
    ckpt = ai.checkpoint.read(ai.samples.checkpoint("production"))
    by_ckpt = ai.scan(path, markers=ckpt, client=dask_client)
    by_file = ai.scan(path, markers=ai.samples.markers("production"), client=dask_client)
    pd.testing.assert_frame_equal(by_ckpt.keys.sort_values("business_key").reset_index(drop=True),
                                  by_file.keys.sort_values("business_key").reset_index(drop=True))
