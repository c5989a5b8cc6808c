"""Every case of divergence-cases.md is a case file, and every case passes under every rule it names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_inspect.cases import build_case, load_cases, run_case

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "spec" / "divergence-cases.md"
CASES = load_cases(ROOT / "cases")
RUNS = [(c, r) for c in CASES for r in (c.rules or ["call"])]


def test_one_file_per_spec_case():
    spec_ids = set(re.findall(r"^\| ([NGPLSDR]\d\d) \|", SPEC.read_text(encoding="utf-8"), flags=re.M))
    files = {p.stem for p in (ROOT / "cases").glob("*.toml")}
    assert len(spec_ids) == 45          # 35 of the original matrix, 10 from issue #12 (0.4 addendum, item 10)
    assert spec_ids <= files
    for case in CASES:
        assert Path(case.path).stem == case.id.split("/")[0]
    # histories beyond the matrix rows come from the spec's text and say where, under unused numbers
    extra = {c.id: c for c in CASES if c.id in files - spec_ids}
    assert set(extra) == {"P05", "G11"}
    for case in extra.values():
        assert "not a row of the matrix" in case.note and "§" in case.note, case.id


def test_every_log_case_names_original_and_fixed():
    for case in CASES:
        if case.log:
            assert {"original", "fixed"} <= set(case.rules), case.id


@pytest.mark.parametrize(("case", "rule"), RUNS, ids=[f"{c.id}-{r}" for c, r in RUNS])
def test_case_passes(case, rule):
    result = run_case(case, rule)
    assert result.passed, "\n".join([f"predicted: {' '.join(result.predicted)}",
                                     f"expected:  {' '.join(result.expected)}", *result.mismatches])


@pytest.mark.parametrize("case", [c for c in CASES if c.log], ids=lambda c: c.id)
def test_built_log_is_clean_and_matches_the_lines(case):
    built = build_case(case)
    recs = built.log.records
    assert recs["error"].isna().all(), recs.loc[recs["error"].notna(), "error"].tolist()
    assert set(built.line_of_pos.values()) == {ln.n for ln in case.log}
    assert recs["key_format"].astype(str).eq(case.setup.key_format).all()
    # the last write of every line lands with the line's status
    for ln in case.log:
        rows = recs.loc[[p for p, n in built.line_of_pos.items() if n == ln.n]]
        last = rows.iloc[-1]
        if ln.status == "TOMB":
            assert bool(last["tombstone"])
        else:
            assert bool(last["completed"]) == (ln.status == "C")
            assert int(last["seq"]) == ln.seq


@pytest.mark.parametrize("rule", ["fixed", "lookup-only", "branch-aware", "fixed+round-regression"])
def test_genuine_cases_never_stale_under_the_fixed_family(rule):
    # pass criterion "genuine" (divergence-cases.md §1.3), also for rules a case does not name
    for case in CASES:
        if case.category == "genuine":
            result = run_case(case, rule)
            assert not result.stale, (case.id, result.predicted)


@pytest.mark.parametrize("case_id", ["N09/snapshot-kafka-k1", "P01", "P04/k2", "G09", "S05"])
def test_predicted_notation_pastes_back_as_an_expectation(case_id):
    from dataclasses import replace

    from agent_inspect.cases._notation import parse_expectation

    case = next(c for c in CASES if c.id == case_id)
    first = run_case(case, "original")
    pasted = replace(case, expect={"original": parse_expectation("original", " ".join(first.predicted))})
    again = run_case(pasted, "original")
    assert again.passed, again.mismatches
