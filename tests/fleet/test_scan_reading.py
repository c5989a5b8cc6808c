"""A scan read as an on-call engineer reads it: every count labelled in words (the CLI printed "failed 0" for
failed windows above a rule's "0 failed" tasks, and "errors" for bad records), the runtime named, the what-if's
columns in the at-risk table said to be one, and the report's facts with thousands separators and labelled rules."""

from __future__ import annotations

import html as htmllib
import re
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.cli import main


def test_the_text_labels_every_count_and_the_what_if_columns(dask_client: Any,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["scan", str(ai.samples.path("production", "parquet")), "--markers",
                 str(ai.samples.path("production", "markers")), "--scheduler", dask_client.scheduler.address,
                 "--no-progress", "--top", "2"])
    out = capsys.readouterr()
    assert code == 0, out.err
    rows = {line[:37].strip(): line[37:] for line in out.out.splitlines() if line[:1].strip()}
    assert rows["failed windows"] == "0" and rows["bad records"] == "0" and rows["business keys"] == "40"
    assert rows["runtime"].startswith("0.4: inferred from the whole input (") and rows["keys exposed to #1301"] == "40"
    assert not {"failed", "errors", "keys", "exposed_1301", "lint_flagged"} & set(rows)
    assert ("most at risk, ranked under original (fixed_… columns: fixed (what-if; 0.4 ships original)):"
            in out.out.splitlines())


def _text(page: str) -> str:
    page = re.sub(r"<(script|style)>.*?</\1>", "", page, flags=re.S)
    return htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_the_report_facts_separate_thousands_and_label_the_what_if(dask_client: Any) -> None:
    from agent_inspect.report import render_report

    result = ai.scan(ai.samples.path("production"), markers=ai.samples.markers("production"), client=dask_client)
    text = _text(render_report(result))
    assert " records 2,989 " in text and "2989" not in text
    assert " rules original, fixed (what-if; 0.4 ships original) " in text
    assert " History sizes and re-executed calls Durable calls re-executed under original " in text
    fixed = ai.scan(ai.samples.path("G01"), rule="fixed", what_if=(), client=dask_client)
    assert "Durable calls re-executed under fixed (what-if; 0.4 ships original) " in _text(render_report(fixed))
    assert repr(result).endswith(", 0 failed windows)")   # "0 failed" read as tasks beside the rules' failed tasks
