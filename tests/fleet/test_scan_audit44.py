"""A new user's scan: the resolved runtime named, counts in words, a saved scan reopened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import agent_inspect as ai


def test_an_auto_scan_names_the_runtime_its_windows_were_read_as(dask_client: Any) -> None:
    """A main log scanned without runtime= labels its what-ifs as predict does ("main ships", not "0.4 ships")."""
    path = ai.samples.path("production_v4")
    markers = ai.samples.markers("production_v4")
    result = ai.scan(path, markers=markers, client=dask_client)
    log = ai.load(path)
    predicted = ai.predict(log, markers=markers, rule="fixed")
    assert result.runtime == "main" and result.summary()["runtime"] == "main"
    assert result.rule_label("fixed") == ai.log.rule_label("fixed", log.runtime()) == \
        "fixed (what-if; main ships original)" and "main ships original" in repr(predicted)
    assert "(runtime main, store flavour segment)" in result._repr_html_() and "runtime main" in repr(result)


def test_the_scan_counts_read_in_words(dask_client: Any) -> None:
    """One window, one body re-run: not "1 windows", "1 bodies"."""
    result = ai.scan(ai.samples.path("production_v4"), markers=ai.samples.markers("production_v4"),
                     client=dask_client)
    s = result.summary()
    assert s["windows"] == 1 and s["original"]["rerun"] + s["original"]["resumed"] == 1
    assert "1 window," in repr(result) and "1 windows" not in repr(result)
    html = result._repr_html_()
    assert "1 body re-run" in html and "1 bodies" not in html


def test_a_saved_scan_reopens_its_keys_from_the_source(dask_client: Any, tmp_path: Path) -> None:
    """result.save(DIR) without output=: the reopened scan reads a key from the source, not from DIR."""
    path = ai.samples.path("production", "parquet")
    markers = ai.samples.markers("production")
    result = ai.scan(path, markers=markers, client=dask_client)
    result.save(tmp_path / "saved")
    again = ai.ScanResult.open(tmp_path / "saved")
    assert again.output is None
    got = again.reconstruct("user-0019")
    assert got.records.equals(result.reconstruct("user-0019").records)
    written = ai.scan(path, markers=markers, client=dask_client, output=tmp_path / "out")
    assert ai.ScanResult.open(tmp_path / "out").output == str(tmp_path / "out") == written.output


def test_the_scan_view_labels_a_what_if_rule_as_one(dask_client: Any) -> None:
    """The rule picker and an opened key's title said "fixed" bare; the scan's own HTML labels it a what-if."""
    from agent_inspect.widgets import FleetScanView

    result = ai.scan(ai.samples.path("production_v4"), markers=ai.samples.markers("production_v4"),
                     client=dask_client)
    view = FleetScanView(result)
    assert view.rule.label == "original" and \
        view.rule.options == (("original", "original"), ("fixed (what-if; main ships original)", "fixed"))
    assert "(runtime main, store flavour segment)" in view.summary.value
    view.rule.value = "fixed"      # the value stays the rule's name, as the columns spell it
    assert view.columns[-1] == "fixed_evictions"
    view.open_key(str(result.keys["business_key"].iloc[0]))
    assert "under <code>fixed (what-if; main ships original)</code>" in view.detail.children[0].value


def test_an_empty_dump_is_an_empty_window_not_a_failed_one(dask_client: Any, tmp_path: Path) -> None:
    """A directory of dumps where one file is empty (a partition with nothing to export): the scan completes."""
    import shutil

    shutil.copy(ai.samples.path("G01"), tmp_path / "G01.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    result = ai.scan(tmp_path, client=dask_client)
    assert result.complete and result.failures.empty, result.failures.to_dict("records")
    alone = ai.scan(ai.samples.path("G01"), client=dask_client)
    assert result.summary()["windows"] == 2 and result.summary()["keys"] == alone.summary()["keys"]
    assert result.keys.drop(columns="partition").equals(alone.keys.drop(columns="partition"))
