"""Every view on the committed sample logs, loaded the way a user loads them."""

from __future__ import annotations

import re

import pytest
from _widget_view import click, html_strings

import agent_inspect as ai
from agent_inspect.widgets import KeyTimeline, ReplayStepper, ResultInspector

SAMPLES = ["production", "subagents", "G01", "S05"]


@pytest.fixture(scope="module", params=SAMPLES)
def sample(request):
    name = request.param
    log = ai.load(ai.samples.path(name))
    return name, log, ai.reconstruct(log, rule="original", markers=ai.samples.markers(name))


def test_inspector_tabs_on_a_sample(sample):
    name, log, result = sample
    view = ai.inspect(result)
    assert isinstance(view, ResultInspector)
    records = view.view("Records")
    assert sum(sum(t.y) for t in records.figure.data) == len(log.records)
    timeline = view.view("Timeline")
    assert isinstance(timeline, KeyTimeline) and timeline.key == view.key_picker.value
    assert sum(len(t.x) for t in timeline.figure.data if t.name != "divergence") == len(timeline.records)
    click(timeline.figure, 0, 0)
    assert timeline.selected_pos is not None and '"taskEvent"' in timeline.detail.value.replace("&quot;", '"')
    for tab in ("Divergences", "Graph", "Sub-agents", "Lints"):
        assert view.view(tab) is not None
    assert all("Traceback" not in s for s in html_strings(view))


def test_the_production_sample_shows_its_evicted_suffix():
    log = ai.load(ai.samples.path("production"))
    result = ai.reconstruct(log, rule="original", markers=ai.samples.markers("production"))
    timeline = KeyTimeline(result)  # the most affected key
    names = {t.name for t in timeline.figure.data}
    assert names & {"evicted", "invalidated"}
    assert any(s.type == "rect" for s in timeline.figure.layout.shapes)


def test_stepper_on_a_sample_scenario():
    executor = ai.samples.scenario("N04").executor(rule="original")
    stepper = ReplayStepper(executor)
    stepper.run_button.click()
    assert executor.done and re.search(f'data-name="rerun" title="[^"]+"><b>{executor.counters.rerun}</b> tasks re-run',
                                       stepper.counters.value)
    assert executor.counters.rerun > 0  # the #1301 over-eviction re-runs B
