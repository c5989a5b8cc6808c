"""A scan saved before the store flavour and the NOT-DISPATCHED count existed does not reopen with made-up
figures (flavour None read as "no window held a parsed key", 0 tasks not dispatched): it stops with one line
that says to re-run the scan."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.fleet._result import RESULT_FILES


@pytest.fixture()
def saved(tmp_path: Path, dask_client: Any) -> Path:
    out = tmp_path / "scan"
    ai.scan(str(ai.samples.path("N04")), client=dask_client, output=str(out))
    return out


def _without_flavour(root: Path) -> None:
    meta = json.loads((root / RESULT_FILES["meta"]).read_text())
    del meta["store_flavour"]
    (root / RESULT_FILES["meta"]).write_text(json.dumps(meta))
    parts = pd.read_parquet(root / RESULT_FILES["partitions"])
    parts.drop(columns=["store_flavour"]).to_parquet(root / RESULT_FILES["partitions"], index=False)


def _without_not_dispatched(root: Path) -> None:
    keys = pd.read_parquet(root / RESULT_FILES["keys"])
    keys.drop(columns=[c for c in keys.columns if c.endswith("_not_dispatched")]).to_parquet(
        root / RESULT_FILES["keys"], index=False)


@pytest.mark.parametrize("age", [_without_flavour, _without_not_dispatched])
def test_an_old_saved_scan_says_to_rerun_it(saved: Path, tmp_path: Path, age: Any,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert ai.ScanResult.open(saved).summary()["store_flavour"] == "segment"   # a current one reopens as it was
    old = tmp_path / "old"
    shutil.copytree(saved, old)
    age(old)
    with pytest.raises(ai.SourceError) as exc:
        ai.ScanResult.open(old)
    message = str(exc.value)
    assert "\n" not in message and "older agent_inspect" in message and "re-run the scan" in message
    assert main(["report", str(old), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("agent-inspect:") and "re-run the scan" in err and "\n" not in err
