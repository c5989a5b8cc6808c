"""A user's rule carries one label in every verb (and cases run): its ``name`` ("roots-only"), never the text typed to pick it
("…/roots_only.py:RootsOnly"). Before, scan and rules check labelled it by the typed text, reconstruct and
explain by its name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.cli import main

SPEC = f"{Path(__file__).resolve().parents[1] / 'support' / 'roots_only.py'}:RootsOnly"
"""the guide's rule, by file, as a user types it (the workers import the file themselves)"""


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_the_same_user_rule_has_one_label_in_every_verb(dask_cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    source, markers = str(ai.samples.path("G01", "parquet")), f"@{ai.samples.path('G01', 'markers')}"
    label = "roots-only (what-if; 0.4 ships original)"
    scan = _run(["scan", source, "--markers", markers, "--rule", SPEC, "--scheduler", dask_cluster.scheduler_address,
                 "--no-progress", "--top", "1"], capsys)
    scanned = _run(["scan", source, "--markers", markers, "--rule", SPEC, "--scheduler",
                    dask_cluster.scheduler_address, "--no-progress", "--json"], capsys)
    check = _run(["rules", "check", SPEC, "--n", "2", "--no-sweep"], capsys)
    checked = json.loads(_run(["rules", "check", SPEC, "--n", "2", "--no-sweep", "--json"], capsys))
    rebuilt = _run(["reconstruct", source, "--markers", markers, "--rule", SPEC], capsys)
    explained = _run(["explain", source, "--markers", markers, "--rule", SPEC, "--key", "k", "--seq", "5",
                      "--action", "IA"], capsys)
    case = _run(["cases", "run", str(Path(__file__).resolve().parents[2] / "cases" / "G01.toml"), "--rules", SPEC], capsys)
    for out in (scan, scanned, check, rebuilt, explained, case):
        assert "RootsOnly" not in out          # before: "roots_only.py:RootsOnly (what-if; …)" in scan, rules check
    assert label in scan and "roots-only_stale_reuse_risk" in scan
    assert "roots-only" in json.loads(scanned)["summary"]
    assert check.startswith("PASS rule roots-only:") and checked["rule"] == "roots-only"
    assert f"rule {label}" in rebuilt and f"rule {label}" in explained and "PASS G01 roots-only " in case
    assert ai.rules.rule_name(SPEC) == ai.checker.check(SPEC, n=1, sweep=False).rule == "roots-only"
