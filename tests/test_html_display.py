"""The display mixin: one ``_repr_html_`` for every result object, every handed-over value escaped."""

from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd
import pytest

from agent_inspect._controls import CONTROL_CHARS, show_controls
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


MARKUP = "[red]not markup[/red] [link=http://x]y[/link]"


class _MarkupProbe(HtmlRepr):
    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong(MARKUP), " plain ", Code(MARKUP))
        yield Facts([("key", MARKUP), ("left out", None)])
        yield Table(pd.DataFrame({"payload": [MARKUP, "b", "c"]}), caption="first rows", max_rows=2)
        yield Bullets([MARKUP])
        yield Details("summary", MARKUP)


def _rich_text(obj: object) -> str:
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), width=200, record=True, color_system=None)
    console.print(obj)
    return console.export_text()


def test_rich_prints_the_same_parts_as_literal_text():
    text = _rich_text(_MarkupProbe())
    # every handed-over value shows as written: console markup in job data is text, never obeyed
    assert text.count(MARKUP) == 6 and "left out" not in text and "3 rows" in text and " c " not in text


def test_results_print_their_content_through_rich(tmp_path):
    import agent_inspect as ai

    log, markers = ai.load(ai.samples.path("N04")), ai.samples.markers("N04")
    prediction = ai.predict(log, markers=markers)
    row = prediction.tasks.iloc[0]
    explanation = ai.explain(log, row["key"], int(row["seq"]), row["action"], markers=markers)
    assert "Prediction under rule original" in _rich_text(prediction)
    assert f"Why {row['action']} ({row['key']}, seq {int(row['seq'])})" in _rich_text(explanation)


CONTROLS = "k\x1b]0;pwned\x07\x1b[2J\r\x9b2J\u202e\x00"   # title, clear, CR, C1 CSI, RTL override, NUL
RAW_CONTROL = re.compile(f"[{CONTROL_CHARS}]")


class _ControlProbe(HtmlRepr):
    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong(CONTROLS), " plain ", CONTROLS, Code(CONTROLS), Em(CONTROLS))
        yield Heading(CONTROLS)
        yield Facts([(CONTROLS, CONTROLS)])
        yield Table(pd.DataFrame({CONTROLS + MARKUP: [CONTROLS]}), caption=CONTROLS + MARKUP)
        yield Bullets([CONTROLS])
        yield Details(CONTROLS, CONTROLS)


def test_rich_writes_control_characters_out_never_to_the_terminal():
    # rich strips a bell or a carriage return but passes ESC, C1, NUL and bidi overrides through to the terminal
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), width=400, force_terminal=True, color_system=None)
    console.print(_ControlProbe())
    out = console.file.getvalue()
    assert not RAW_CONTROL.findall(out), RAW_CONTROL.findall(out)
    assert out.count(show_controls(CONTROLS)) == 13   # text 4, heading, facts 2, table 3, bullet, details 2
    assert out.count(MARKUP) == 2   # a table's caption and header are literal text too, never console markup
