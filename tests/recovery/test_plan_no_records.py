"""A log of no records, or of only bad ones, has nothing to replay: predict, explain and verify say so (the loaders'
empty-source words; "see log.errors"), not "pass a ReplayPlan", which is for a log with readable records but no root
record."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.cli import main

VERBS: dict[str, Callable[[Any], Any]] = {
    "predict": lambda log: ai.predict(log),
    "explain": lambda log: ai.explain(log, "user-1", 1, "a"),
    "verify": lambda log: ai.verify(log, ai.load_trace(ai.samples.path("G01", "trace"))),
}


@pytest.mark.parametrize("verb", VERBS)
def test_an_empty_log(tmp_path: Path, verb: str) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    log = ai.load(tmp_path / "empty.jsonl")
    with pytest.raises(ai.RecoveryError) as info:
        VERBS[verb](log)
    assert str(info.value) == (f"the log holds no records from file {tmp_path / 'empty.jsonl'}: nothing to replay; "
                               "the source is empty (the wrong file, topic or offsets, or a dump that failed?)")


@pytest.mark.parametrize("verb", VERBS)
def test_a_log_of_only_bad_records(tmp_path: Path, verb: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "k", "value": "not an action state"}\nnot json\n{"key": "k2", "value": "{"}\n')
    log = ai.load(bad)
    assert len(log.records) == len(log.errors) == 3
    with pytest.raises(ai.RecoveryError) as info:
        VERBS[verb](log)
    assert str(info.value) == (f"the log holds 3 records from file {bad}, none readable (see log.errors): nothing "
                               "to replay; check the source")


def test_the_cli_points_at_summary_for_the_bad_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "k", "value": "not an action state"}\n')
    assert main(["explain", str(bad), "--key", "k", "--seq", "1", "--action", "a"]) == 2
    err = capsys.readouterr().err
    assert "none readable (agent-inspect summary shows why the first do not decode)" in err
    assert "log.errors" not in err and "ReplayPlan" not in err


def test_readable_records_without_a_root_still_ask_for_the_inputs(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    src = ai.samples.path("N04")
    log = ai.load(src)
    roots = set(log.records.index[log.records["is_root"].fillna(False).astype(bool)].tolist())
    lines = Path(src).read_text().splitlines()
    rootless = tmp_path / "rootless.jsonl"
    rootless.write_text("".join(line + "\n" for i, line in enumerate(lines) if i not in roots))
    with pytest.raises(ai.RecoveryError, match=r"no root \(_input_event\) records to infer replay inputs from; "
                                               r"pass a ReplayPlan with the inputs$"):
        ai.predict(ai.load(rootless))
    assert main(["explain", str(rootless), "--key", "k", "--seq", "1", "--action", "a"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("give the inputs in Python, as a ReplayPlan")
