"""The one chart widget: what its state holds, and the messages the browser sends (static/plot.js)."""

from __future__ import annotations

import gzip

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from agent_inspect.widgets._plot import Plot, hover_lines, plotly_library


def _sent(plot: Plot) -> list[tuple[dict, list]]:
    out: list[tuple[dict, list]] = []
    plot.send = lambda content, buffers=None: out.append((content, buffers or []))  # type: ignore[method-assign]
    return out


def test_numeric_arrays_travel_as_buffers_and_hover_text_stays_in_the_kernel():
    plot = Plot(layout=go.Layout(height=200))
    x = np.arange(1000)
    plot.add_trace(go.Scattergl(x=x, y=x * 2.0, hovertext=[f"<b>secret {i}</b>" for i in x], customdata=x))
    trace = plot._spec["data"][0]
    assert trace["x"]["dtype"] == "float64" and trace["y"]["__ai_array__"] != trace["x"]["__ai_array__"]
    assert "hovertext" not in trace and trace["hoverinfo"] == "none" and plot._spec["hover"] == [0]
    assert np.frombuffer(plot._arrays[trace["y"]["__ai_array__"]], dtype="float64")[-1] == 1998.0
    state = plot.get_state()
    assert "secret" not in repr({k: v for k, v in state.items() if k != "_arrays"})
    assert "plotly.js v" not in state["_esm"]  # the bundle is never part of a chart's state


def test_batch_update_sends_once():
    plot = Plot()
    specs = []
    plot.observe(lambda change: specs.append(change["new"]), names="_spec")
    with plot.batch_update():
        plot.data = [go.Scatter(x=[1, 2], y=[3, 4]), go.Bar(x=["a"], y=[1])]
        plot.layout.xaxis.update(dtick=1, tickformat="d")
        plot.layout.title.text = "t"
    assert len(specs) == 1 and [t["type"] for t in specs[0]["data"]] == ["scatter", "bar"]
    plot.layout.xaxis.update(dtick=None)
    assert "dtick" not in plot._spec["layout"]["xaxis"]


def test_every_chart_refers_to_one_model_holding_plotly_js():
    first, second = Plot(), Plot(layout=go.Layout(height=100))
    library = plotly_library()
    assert first._library is second._library is library
    assert b"plotly.js v" in gzip.decompress(library.bundle)[:400]
    # a chart's state names the model (saved with the widget state once per notebook), never the bundle
    assert first.get_state()["_library"] == f"IPY_MODEL_{library.model_id}"
    library.close()  # as after Widget.close_all(): the next chart gets a new, live one
    renewed = Plot()._library
    assert renewed is plotly_library() and renewed is not library and renewed.comm is not None


def test_hover_and_click_messages():
    plot = Plot(make_subplots(rows=1, cols=2))
    plot.add_trace(go.Scatter(x=[1, 2], y=[3, 4], hovertext=["a &lt;b&gt;<br>c", "d"]), row=1, col=2)
    sent = _sent(plot)
    plot._on_message(plot, {"type": "hover", "id": 7, "trace": 0, "point": 0}, [])
    assert sent[-1][0] == {"type": "hover", "id": 7, "lines": ["a <b>", "c"]}
    clicked = []
    plot.data[0].on_click(lambda trace, points, state=None: clicked.append(points.point_inds))
    plot._on_message(plot, {"type": "click", "trace": 0, "points": [1]}, [])
    assert clicked == [[1]]
    zooms = []
    plot.on_relayout(zooms.append)
    plot._on_message(plot, {"type": "relayout", "event": {"xaxis.range[0]": 1}}, [])
    assert zooms == [{"xaxis.range[0]": 1}]


def test_hover_lines_are_plain_text():
    assert hover_lines("x: &lt;img src=x onerror=alert(1)&gt;<br/>y") == ["x: <img src=x onerror=alert(1)>", "y"]
