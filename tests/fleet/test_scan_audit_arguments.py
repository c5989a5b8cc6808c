"""A new user's scan arguments: one rule given as a string, a misspelt file format, a client that is not one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai


def test_one_what_if_rule_given_as_a_string_is_that_rule(dask_client: Any) -> None:
    """what_if="fixed" scanned the rules 'f', 'i', 'x' … ("unknown rule 'f'"); it is the one rule "fixed"."""
    path = ai.samples.path("G01", "parquet")
    result = ai.scan(path, what_if="fixed", client=dask_client)
    assert result.rules == ("original", "fixed") and result.what_if == ("fixed",)
    one = ai.scan(path, what_if=ai.rules.FixedRule(), client=dask_client)   # one rule object, too
    assert one.rules == ("original", "fixed")


def test_a_bad_file_format_fails_before_any_task(tmp_path: Path) -> None:
    """file_format="csv" raised in every task (tracebacks logged per retry) and came back as failed windows."""
    with pytest.raises(ai.SourceError, match="unknown file_format 'csv'"):
        ai.scan(ai.samples.path("G01"), file_format="csv", client="tcp://127.0.0.1:9")
    with pytest.raises(ai.SourceError, match="unknown file_format 'csv'"):
        ai.fleet.plan_scan(ai.samples.path("G01"), file_format="csv")


def test_bad_cluster_arguments_fail_in_one_line() -> None:
    """client=42 raised AttributeError ("'int' object has no attribute 'submit'"); workers=0 started a cluster
    of one worker per core; retries=-1 was taken."""
    path = ai.samples.path("G01", "parquet")
    with pytest.raises(ai.InspectError, match="client must be"):
        ai.scan(path, client=42)  # type: ignore[arg-type]
    with pytest.raises(ai.InspectError, match="workers must be"):
        ai.scan(path, workers=0)
    with pytest.raises(ai.InspectError, match="retries must be"):
        ai.scan(path, retries=-1)


def test_a_directory_scan_leaves_hidden_directories_out(tmp_path: Path) -> None:
    """A directory's dumps are its own: a virtualenv or .git below it is not read as dumps."""
    ai.samples.write_fleet(tmp_path / "fleet.parquet", 4, partitions=2)
    hidden = tmp_path / ".venv" / "lib"
    hidden.mkdir(parents=True)
    (hidden / "data.parquet").write_bytes(b"PAR1 not a dump")
    plan = ai.fleet.plan_scan(tmp_path)
    assert {Path(w.path).name for w in plan.windows} == {"fleet.parquet"}
