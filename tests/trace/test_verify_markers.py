"""``verify(infer=True)`` ranks the inferred marker candidates × rules × runtimes beside the given markers."""

from __future__ import annotations

import json
from pathlib import Path

import agent_inspect as ai
from agent_inspect.cli import main

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


def test_infer_ranks_marker_candidates_beside_the_given_markers() -> None:
    log = ai.load(LOGS / "G01.jsonl")
    trace = ai.load_trace(LOGS / "G01.trace.log")
    v = ai.verify(log, trace, markers=[{0: 2}], infer=True)          # G01's attempt boundary, not its restore
    r = v.ranking
    assert r is not None and {"markers", "marker_values"} <= set(r.columns)
    given = r[r["markers"] == "given"]
    assert {"original", "fixed"} <= set(given["rule"]) and given["marker_values"].isna().all()
    inferred = r[r["markers"] != "given"]
    assert "trace" in set(inferred["markers"])                       # the trace's own candidate, [{"0": 0}]
    best = r.iloc[0]
    assert best["markers"] == "trace" and best["marker_values"] == [{"0": 0}] and best["disagree"] == 0
    assert (given["disagree"] > 0).all()                             # the given window explains less
    json.dumps(v.to_dict(), default=str)


def test_without_infer_the_ranking_keeps_its_rows(capsys) -> None:
    v = ai.verify(ai.load(LOGS / "N04.jsonl"), ai.load_trace(LOGS / "N04.trace.log"), markers=[{0: 0}])
    assert v.ranking is None
    assert main(["verify", str(LOGS / "G01.jsonl"), "--trace", str(LOGS / "G01.trace.log"), "--markers",
                 '[{"0": 2}]', "--infer"]) == 1
    out = capsys.readouterr().out
    assert "rules, store flavours and markers by agreement:" in out and "with markers from the trace" in out
