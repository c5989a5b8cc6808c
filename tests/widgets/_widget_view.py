"""Reading widget output the way a browser would: every HTML string, and a simulated click."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ipywidgets as w

from agent_inspect.widgets._plot import Plot


def walk(widget: Any) -> Iterator[Any]:
    """Every widget under ``widget`` (itself included), depth first."""
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from walk(child)


def html_strings(widget: Any) -> list[str]:
    """Every string a browser would interpret as HTML: HTML widget values and plotly text fields."""
    out: list[str] = []
    for node in walk(widget):
        if isinstance(node, (w.HTML, w.HTMLMath)):
            out.append(node.value)
        if isinstance(node, Plot):
            out.extend(figure_strings(node))
    return out


def figure_strings(figure: Plot) -> list[str]:
    fig = figure.to_dict()
    out: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                collect(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                collect(v)
        elif hasattr(value, "tolist"):
            collect(value.tolist())

    collect(fig["data"])
    collect(fig["layout"])
    return out


def click(figure: Plot, trace_index: int, point_index: int) -> None:
    """Send the message the browser sends when a point is clicked (static/plot.js)."""
    figure._on_message(figure, {"type": "click", "trace": trace_index, "points": [point_index]}, [])
