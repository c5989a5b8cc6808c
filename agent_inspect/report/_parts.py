"""What every report section is made of: a titled HTML part, static figures and their scripts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["_Section", "_static_figure", "_split_scripts"]


@dataclass(frozen=True)
class _Section:
    """One titled part of the report: escaped HTML body plus the scripts it needs (figures)."""

    anchor: str
    title: str
    body: str
    scripts: tuple[str, ...] = field(default=())


def _static_figure(widget_figure: Any) -> Any:
    """A plain ``go.Figure`` copy with WebGL traces as SVG (renders without a GPU, anywhere)."""
    import plotly.graph_objects as go  # present: the caller imported the widgets

    spec = widget_figure.to_dict()
    for trace in spec.get("data", []):
        if trace.get("type") == "scattergl":
            trace["type"] = "scatter"
    return go.Figure(spec)


_SCRIPT = re.compile(r"<script[^>]*>(.*?)</script>", re.S)


def _split_scripts(fragment: str) -> tuple[str, list[str]]:
    """Move inline ``<script>`` bodies out of a plotly div so the page's CSP can hash them."""
    return _SCRIPT.sub("", fragment), _SCRIPT.findall(fragment)
