from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pytest
from _widget_logs import IMG
from _widget_view import html_strings

import agent_inspect as ai
from agent_inspect.widgets import RuleComparison

CASES = Path(__file__).resolve().parents[2] / "cases"


@pytest.fixture(scope="module")
def frame(tmp_path_factory):
    probe = tmp_path_factory.mktemp("cases") / "probe.toml"
    text = (CASES / "G01.toml").read_text()
    probe.write_text(text.replace('id = "G01"', f'id = "G01{IMG}"', 1))
    return ai.cases.compare([CASES / "G01.toml", CASES / "N04.toml", probe], rules=["original", "naive", "fixed"])


def test_heatmap_is_the_rules_by_cases_matrix(frame):
    view = ai.inspect(frame)
    assert isinstance(view, RuleComparison) and view.metric.value == "reruns"
    expected = frame.pivot_table(index="rule", columns="case", values="reruns", aggfunc="sum", observed=True)
    heat = view.figure.data[0]
    assert [html.unescape(c) for c in heat.x] == [str(c) for c in view.matrix.columns]
    assert list(heat.y) == [str(r) for r in view.matrix.index]
    np.testing.assert_array_equal(np.asarray(heat.z, dtype=float),
                                  expected.loc[view.matrix.index, view.matrix.columns].to_numpy(dtype=float))


def test_metric_switch_redraws(frame):
    view = RuleComparison(frame)
    view.metric.value = "stale_reuses"
    z = np.asarray(view.figure.data[0].z, dtype=float)
    naive = list(view.matrix.index).index("naive")
    assert z[naive].sum() == frame.loc[frame["rule"] == "naive", "stale_reuses"].sum() > 0
    assert "stale_reuses" in view.figure.layout.title.text
    assert "passed" in view.metric.options


def test_no_raw_probe_in_the_comparison(frame):
    strings = html_strings(RuleComparison(frame))
    assert not [s for s in strings if "<img" in s]
    assert any(html.escape(IMG) in s for s in strings)


def test_a_long_case_list_turns_the_heatmap():
    frame = ai.cases.compare(sorted(CASES.glob("N*.toml")) + sorted(CASES.glob("G*.toml")), rules=["original", "fixed"])
    view = RuleComparison(frame)
    heat = view.figure.data[0]
    cases = list(view.matrix.columns)
    assert len(cases) > 12
    assert [html.unescape(c) for c in heat.y] == [str(c) for c in cases]  # cases down the page
    assert list(heat.x) == [str(r) for r in view.matrix.index]
    np.testing.assert_array_equal(np.asarray(heat.z, dtype=float), view.matrix.to_numpy(dtype=float).T)
    assert view.figure.layout.height >= 120 + 20 * len(cases)
