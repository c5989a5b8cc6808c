"""``to_otel(path=)`` into a directory that does not exist is one line saying so (it was a raw FileNotFoundError),
and nothing is created: write_report does the same (tests/report/test_report_path.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_inspect as ai

pytest.importorskip("opentelemetry.sdk")


def test_to_otel_into_a_missing_directory_says_the_directory_does_not_exist(tmp_path: Path) -> None:
    target = tmp_path / "nope" / "spans.json"
    log = ai.load(ai.samples.path("G01"))
    with pytest.raises(ai.InspectError) as err:
        ai.to_otel(log, path=target, markers=ai.samples.markers("G01"))
    assert str(err.value) == f"cannot write {target}: directory {target.parent} does not exist; create it first"
    assert not target.parent.exists()
