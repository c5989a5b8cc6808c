"""``write_report`` into a directory that does not exist is one line saying so, before any work, as ``to_otel``."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_inspect as ai


def test_write_report_into_a_missing_directory_says_the_directory_does_not_exist(tmp_path: Path) -> None:
    target = tmp_path / "nope" / "report.html"
    log = ai.load(ai.samples.path("G01"))
    with pytest.raises(ai.InspectError) as err:         # was a raw FileNotFoundError after the whole render
        ai.write_report(log, target, markers=ai.samples.markers("G01"))
    assert str(err.value) == f"cannot write {target}: directory {target.parent} does not exist; create it first"
    assert not target.parent.exists()
