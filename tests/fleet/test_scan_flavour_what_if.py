"""A scan labels an original-rule store flavour other than the one its windows' records run as a what-if, as every
verb does (tests/recovery/test_flavour_what_if.py): in ``ScanResult.what_if``, the CLI's text and ``--json``, the
HTML report and the notebook view. The scan learns the flavour from what its windows read."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect._html import escape
from agent_inspect.cli import main

#: G01's keys are K1.5 (its store runs "segment"), P01's are K1 on Kafka ("kafka-k1"): both a few records
K1_ON_SEGMENT = "original:kafka-k1 (what-if; 0.4 ships original:segment)"
SEGMENT_ON_K1 = "original:segment (what-if; 0.4 ships original:kafka-k1)"


def test_a_flavour_the_windows_do_not_run_is_a_what_if(dask_client: Any, tmp_path: Path) -> None:
    g01 = ai.samples.path("G01")
    for given in ({"rule": "original:kafka-k1"}, {"store_flavour": "kafka-k1"},
                  {"rule": ai.rules.OriginalRule(flavour="kafka-k1")}):
        result = ai.scan(g01, what_if=(), client=dask_client, **given)
        assert result.store_flavour == "segment", given
        assert result.rules == ("original:kafka-k1",) and result.what_if == ("original:kafka-k1",), given
        assert result.rule_label("original:kafka-k1") == K1_ON_SEGMENT, given
    s = result.summary()
    assert s["store_flavour"] == "segment"
    assert s["original:kafka-k1"]["what_if"] and s["original:kafka-k1"]["rule_label"] == K1_ON_SEGMENT
    assert escape(K1_ON_SEGMENT) in result._repr_html_()
    assert escape(K1_ON_SEGMENT) in ai.write_report(result, tmp_path / "r.html").read_text()
    view = ai.widgets.FleetScanView(result)
    assert (K1_ON_SEGMENT, "original:kafka-k1") in view.rule.options
    assert escape(K1_ON_SEGMENT) in view.summary.value
    # saved and reopened: the same label
    assert ai.ScanResult.open(result.save(tmp_path / "saved")).rule_label("original:kafka-k1") == K1_ON_SEGMENT


def test_the_windows_own_flavour_and_the_default_are_no_what_if(dask_client: Any) -> None:
    result = ai.scan(ai.samples.path("G01"), what_if=("original:segment",), client=dask_client)
    assert result.rules == ("original", "original:segment") and result.what_if == ()
    p01 = ai.scan(ai.samples.path("P01"), rule="original:kafka-k1", what_if=("original:segment",), client=dask_client)
    assert p01.store_flavour == "kafka-k1" and p01.what_if == ("original:segment",)
    assert p01.rule_label("original:kafka-k1") == "original:kafka-k1"
    assert p01.rule_label("original:segment") == SEGMENT_ON_K1


def test_windows_of_different_flavours_say_so(dask_client: Any, tmp_path: Path) -> None:
    both = tmp_path / "both"
    both.mkdir()
    for name in ("G01", "P01"):
        shutil.copy(ai.samples.path(name), both / f"{name}.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the two cases may share business keys
        result = ai.scan(both, rule="original:segment", what_if=(), client=dask_client)
    assert result.store_flavour == "kafka-k1+segment"
    assert sorted(result.partitions["store_flavour"]) == ["kafka-k1", "segment"]
    assert result.store_flavour_text == "mixed across windows: kafka-k1 (1 window), segment (1 window)"
    # the shipped rule runs each record's own flavour: one flavour for every window is a what-if
    assert result.rule_label("original:segment") == "original:segment (what-if; 0.4 ships original)"


def test_the_cli_labels_a_flavour_what_if_in_text_and_json(dask_cluster: Any,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["scan", str(ai.samples.path("G01")), "--rule", "original:kafka-k1", "--what-if", "",
            "--scheduler", dask_cluster.scheduler_address, "--no-progress"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["store_flavour"] == "segment"
    assert data["summary"]["original:kafka-k1"]["what_if"]
    assert data["summary"]["original:kafka-k1"]["rule_label"] == K1_ON_SEGMENT
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith(f"{K1_ON_SEGMENT}  ") for line in lines), lines
    assert any(line.split() == ["store", "flavour", "segment"] for line in lines), lines
    assert f"most at risk, ranked under {K1_ON_SEGMENT}:" in lines
