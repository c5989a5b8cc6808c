"""The views' CSS lives in widgets/static/views.css and reaches the page through one hidden anywidget."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import ipywidgets as w
from _widget_agents import recovery_executor
from _widget_view import walk

import agent_inspect as ai
from agent_inspect import samples
from agent_inspect.log import LiveLog
from agent_inspect.widgets import (
    DivergenceView,
    LiveTail,
    LogBrowser,
    PredictionView,
    ReplayStepper,
    RuleComparison,
    VerificationView,
)
from agent_inspect.widgets._style import ViewStyle, palette_css, view_style
from tests.support.idle import IdleFollower

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"
#: styled for the scan view, which needs a Dask scan: tests/fleet/test_scan_widget.py checks it uses them
SCAN_CLASSES = {"ai-scan-rules"}
CSS = resources.files("agent_inspect.widgets").joinpath("static/views.css").read_text(encoding="utf-8")


def _views(probe_log, probe_result) -> list[w.Widget]:
    executor = recovery_executor()
    stepper = ReplayStepper(executor)
    stepper.run()
    browser = LogBrowser(probe_log)
    browser.show_record(int(probe_log.records.index[0]))
    live = LiveTail(LiveLog(IdleFollower(), start=False))
    return [browser, live, DivergenceView(probe_result), PredictionView(ai.recovery.predict(probe_log, rule="fixed")),
            RuleComparison(ai.cases.compare(probe_log, ["fixed", "original"])), stepper,
            VerificationView(_verification(LOGS / "N04.fixed-rule.trace.log")),
            VerificationView(_verification(LOGS / "N04.trace.log")),
            VerificationView(_verification(LOGS / "G02.trace.log", "G02")), _explain_view()]


def _explain_view() -> w.Widget:
    """A what-if explanation of a re-run: several steps (the "because" between them) with details."""
    log = ai.load(LOGS / "production.jsonl")
    return ai.inspect(ai.explain(log, "user-0019", 2, "triage", markers=samples.markers("production"),
                                 also=["fixed"]), log=log)




def _verification(trace: Path, name: str = "N04"):
    restore = json.loads((LOGS / f"{name}.markers.json").read_text(encoding="utf-8"))["restore"]
    return ai.verify(ai.load(LOGS / f"{name}.jsonl"), trace, markers=samples.markers(name), restore=restore)


def test_no_view_writes_inline_css_and_every_class_it_styles_is_in_the_file(probe_log, probe_result):
    classes: set[str] = set()
    for view in _views(probe_log, probe_result):
        for node in walk(view):
            if isinstance(node, w.HTML):
                assert " style=" not in node.value, (type(view).__name__, node.value[:200])
                classes |= {c for attr in re.findall(r"""class=["']([^"']*)["']""", node.value) for c in attr.split()}
    styled = set(re.findall(r"\.(ai-[a-z-]+)\s*\{", CSS))
    assert {"ai-scroll-tall", "ai-counter-row", "ai-counter", "ai-side-by-side", "ai-side", "ai-agree",
            "ai-disagree", "ai-undetermined", "ai-live-badge", "ai-terms", "ai-term", "ai-explain-chain",
            "ai-explain-step", "ai-explain-because", "ai-explain-detail", *SCAN_CLASSES} == styled
    assert styled - SCAN_CLASSES <= classes


def test_the_views_share_one_hidden_style_widget_carrying_the_file(probe_log, probe_result):
    styles = {id(n) for view in _views(probe_log, probe_result) for n in walk(view) if isinstance(n, ViewStyle)}
    style = view_style()
    assert styles == {id(style)}
    assert style._css == palette_css() + CSS and style.layout.display == "none"
    assert "export default" in style._esm


def test_a_closed_style_widget_is_replaced():
    style = view_style()
    style.close()
    fresh = view_style()
    assert fresh is not style and fresh.comm is not None and view_style() is fresh
