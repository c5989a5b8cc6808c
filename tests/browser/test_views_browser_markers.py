"""The "drawn" rules of benchmarks/views_browser.js, which other views implement against, held in chromium."""

from __future__ import annotations

from pathlib import Path

import plotly
import pytest

pytestmark = pytest.mark.browser

JS = (Path(__file__).resolve().parents[2] / "benchmarks" / "views_browser.js").read_text()
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _drawn(page, items: int, rows: bool = False) -> bool:
    return page.evaluate("([items, rows]) => window.__aiBench.drawn(document.getElementById('root'), "
                         "{items, rows})", [items, rows])


def test_marked_elements_and_rows(plain_page) -> None:
    page = plain_page.page
    page.set_content("<div id='root'><div id='chart' data-ai-drawn='false'></div><table><tbody></tbody></table></div>")
    page.evaluate(JS)
    assert not _drawn(page, 1), "data-ai-drawn='false' is not drawn"
    page.evaluate("() => document.getElementById('chart').setAttribute('data-ai-drawn', '1200')")
    assert _drawn(page, 1000) and _drawn(page, 1200)
    assert not _drawn(page, 1201), "a chart representing 1200 items does not show 1201"
    page.evaluate("() => document.getElementById('chart').setAttribute('data-ai-drawn', '0')")
    assert not _drawn(page, 1), "an empty chart is not drawn when items are expected"

    page.set_content("<div id='root'><table><tbody></tbody></table></div>")
    page.evaluate(JS)
    assert not _drawn(page, 0, rows=True), "a grid without rows"
    page.evaluate("() => document.querySelector('tbody').insertAdjacentHTML('beforeend', '<tr><td>1</td></tr>')")
    assert _drawn(page, 0, rows=True)


def test_plotly_plots_count_their_points(plain_page) -> None:
    page = plain_page.page
    page.set_content("<div id='root'><div id='svg'></div><div id='gl'></div></div>")
    page.add_script_tag(path=str(PLOTLY_JS))
    page.evaluate(JS)
    assert not _drawn(page, 0), "nothing drawn yet"
    page.evaluate("() => Plotly.newPlot('svg', [{x: [...Array(50).keys()], y: Array(50).fill(1), mode: 'markers'},"
                  " {x: [...Array(50).keys()], y: Array(50).fill(2), mode: 'markers'}])")
    assert _drawn(page, 100) and not _drawn(page, 101)
    page.evaluate("() => Plotly.newPlot('gl', [{type: 'scattergl', x: [...Array(300).keys()], y: Array(300).fill(1),"
                  " mode: 'markers'}])")
    page.wait_for_function("() => document.querySelector('#gl canvas.gl-canvas')")
    assert _drawn(page, 300) and not _drawn(page, 301)
    # a plot whose traces are still missing is not drawn, whatever the other plot shows
    page.evaluate("() => { const gd = document.getElementById('svg'); gd.querySelector('.trace').remove(); }")
    assert not _drawn(page, 1)


def test_a_shown_value(plain_page) -> None:
    page = plain_page.page
    page.set_content("<div id='root'><div class='ai-detail'>click a point to see its decoded value</div></div>")
    page.evaluate(JS)
    value = "() => window.__aiBench.value(document.getElementById('root'))"
    assert page.evaluate(value) is None
    page.evaluate("() => document.querySelector('.ai-detail').textContent = 'record 12: k {}'")
    assert page.evaluate(value) == "record 12: k {}"
    page.evaluate("() => document.querySelector('.ai-detail').insertAdjacentHTML('beforebegin', "
                  "'<pre data-ai-value=\"7\">{}</pre>')")
    assert page.evaluate(value) == "value 7"
