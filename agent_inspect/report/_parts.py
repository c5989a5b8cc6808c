"""What every report section is made of: a titled HTML part, static figures and their scripts."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["_Section", "_static_figure", "_split_scripts", "_dark_charts_script"]


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


# The charts are built with the palette's light variants. For a reader in the dark scheme, redraw each chart with
# every palette colour swapped for its dark one (what static/plot.js does in JupyterLab): report.css alone recolours
# paper, text and grid, and left the marks light, e.g. a crash mark in near-black "ink" on the dark paper.
_DARK_CHARTS = """(() => {
  const swaps = %s;
  const swap = (v) => typeof v === "string" ? (swaps[v.toLowerCase()] || v)
    : Array.isArray(v) ? v.map(swap)
    : v && typeof v === "object" && v.constructor === Object
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, swap(x)])) : v;
  const scheme = matchMedia("(prefers-color-scheme: dark)");
  const light = new Map();
  const paint = () => {
    for (const gd of document.querySelectorAll(".js-plotly-plot")) {
      if (!gd._fullLayout) continue;
      if (!light.has(gd)) light.set(gd, [structuredClone(gd.data), structuredClone(gd.layout)]);
      const [data, layout] = light.get(gd);
      Plotly.react(gd, scheme.matches ? swap(data) : structuredClone(data),
                   scheme.matches ? swap(layout) : structuredClone(layout));
    }
  };
  window.addEventListener("load", () => { if (scheme.matches) paint(); scheme.addEventListener("change", paint); });
})();"""


def _dark_charts_script() -> str:
    """The page script that gives the report's charts the palette's dark variants in the dark scheme."""
    from agent_inspect.widgets import PALETTE

    return _DARK_CHARTS % json.dumps({s.light.lower(): s.dark for s in PALETTE.values()}, sort_keys=True)
