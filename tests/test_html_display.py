"""The display mixin: one ``_repr_html_`` for every result object, every handed-over value escaped."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import pytest

from agent_inspect._html import (
    Bullets,
    Code,
    Details,
    Em,
    Facts,
    Heading,
    HtmlPart,
    HtmlRepr,
    Strong,
    Table,
    Text,
    render_parts,
)
from agent_inspect.checker import CheckReport
from agent_inspect.executor import ReplayExecutor, ReplaySafetyReport
from agent_inspect.log import ActionStateLog
from agent_inspect.recovery import Prediction, Reconstruction
from agent_inspect.trace import TraceLog, Verification

PROBE = "<img src=x onerror=alert(1)>"
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"


class _Probe(HtmlRepr):
    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong(PROBE), " plain ", PROBE, Code(PROBE), Em(PROBE))
        yield Heading(PROBE)
        yield Facts([(PROBE, PROBE), ("left out", None)])
        yield Table(pd.DataFrame({PROBE: [PROBE]}), caption=PROBE)
        yield Bullets([PROBE, PROBE])
        yield Details(PROBE, PROBE)


def test_every_part_is_escaped():
    html = _Probe()._repr_html_()
    assert "<img" not in html
    # one escaped probe per value handed over: 4 in the text, heading, 2 facts, 3 in the table, 2 bullets, 2 details
    assert html.count(ESCAPED) == 14
    assert html.startswith('<div class="ai-repr"><p><b>&lt;img') and html.endswith("</div>")
    assert f"<code>{ESCAPED}</code><i>{ESCAPED}</i>" in html and f"<h4>{ESCAPED}</h4>" in html
    assert "left out" not in html
    assert f"<details><summary>{ESCAPED}</summary><pre>{ESCAPED}</pre></details>" in html


def test_quotes_cannot_leave_an_attribute():
    html = render_parts([Facts([("k", '" onmouseover="alert(1)')])])
    assert '" onmouseover' not in html and "&quot; onmouseover=&quot;" in html


def test_an_object_without_its_hook_says_so():
    class Bare(HtmlRepr):
        pass

    with pytest.raises(NotImplementedError, match="Bare must yield its HTML parts"):
        Bare()._repr_html_()


def test_raw_html_is_not_a_part():
    with pytest.raises(TypeError, match="not an HTML part: str"):
        render_parts(["<b>raw</b>"])  # type: ignore[list-item]


@pytest.mark.parametrize("cls", [ActionStateLog, Reconstruction, Prediction, CheckReport, ReplayExecutor,
                                 ReplaySafetyReport, TraceLog, Verification])
def test_result_objects_render_through_the_mixin(cls):
    assert issubclass(cls, HtmlRepr)
    assert "_repr_html_" not in vars(cls) and "_html_parts" in vars(cls)
