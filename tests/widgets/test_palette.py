"""One semantic palette, light and dark: every colour of the views and the report comes from it or from JupyterLab."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_inspect.widgets import PALETTE, palette_css
from agent_inspect.widgets._common import KIND_COLOURS, STATUS_COLOURS
from agent_inspect.widgets._plot import Plot, plotly_library
from agent_inspect.widgets._style import colour, dark_swaps

PACKAGE = Path(__file__).resolve().parents[2] / "agent_inspect"
HEX = re.compile(r"#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b")
# JupyterLab's own backgrounds: --jp-layout-color0 of "JupyterLab Light" and of "JupyterLab Dark"
LIGHT_BACKGROUND, DARK_BACKGROUND = (255, 255, 255), (17, 17, 17)


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _luminance(rgb: tuple[int, int, int]) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_at_most_30_hex_colours_in_the_views_and_the_report() -> None:
    hits = [(path.relative_to(PACKAGE), m.group()) for folder in ("widgets", "report")
            for path in sorted((PACKAGE / folder).rglob("*")) if path.suffix in {".py", ".css", ".js"}
            for m in HEX.finditer(path.read_text(encoding="utf-8"))]
    assert len(hits) <= 30, hits
    # and they are the palette's: no file but _style.py holds one
    assert {str(p) for p, _ in hits} <= {"widgets/_style.py"}, hits


@pytest.mark.parametrize("role", [r for r in PALETTE if r not in ("line", "paper", "heat")])
def test_text_in_every_role_reads_on_both_themes(role: str) -> None:
    shade = PALETTE[role]
    assert contrast(_rgb(shade.light), LIGHT_BACKGROUND) >= 4.5, shade.light
    assert contrast(_rgb(shade.dark), DARK_BACKGROUND) >= 4.5, shade.dark
    assert contrast(_rgb(shade.light), _rgb(PALETTE["paper"].light)) >= 4.5
    assert contrast(_rgb(shade.dark), _rgb(PALETTE["paper"].dark)) >= 4.5


def test_text_reads_on_the_hot_end_of_a_heatmap() -> None:
    heat, ink = PALETTE["heat"], PALETTE["ink"]
    assert contrast(_rgb(ink.light), _rgb(heat.light)) >= 4.5
    assert contrast(_rgb(ink.dark), _rgb(heat.dark)) >= 4.5


def test_the_css_switches_with_jupyterlab_and_with_the_readers_scheme() -> None:
    lab = palette_css()
    assert f"--ai-bad:{PALETTE['bad'].light};" in lab.split("\n")[0]
    dark_rule = next(line for line in lab.splitlines() if 'data-jp-theme-light="false"' in line)
    assert f"--ai-bad:{PALETTE['bad'].dark};" in dark_rule
    report = palette_css(jupyterlab=False)
    assert "@media (prefers-color-scheme: dark)" in report and PALETTE["paper"].dark in report


def test_every_view_colour_is_a_palette_colour() -> None:
    lights = {shade.light for shade in PALETTE.values()}
    assert set(STATUS_COLOURS.values()) | set(KIND_COLOURS.values()) <= lights
    assert colour("good") == PALETTE["good"].light
    assert dark_swaps()[PALETTE["bad"].light] == PALETTE["bad"].dark


def test_charts_carry_no_light_template_and_the_page_gets_the_dark_swaps() -> None:
    plot = Plot()
    spec = plot._spec
    # plotly's default template would paint a light block (and weigh 6 kB per chart): the page themes the chart
    assert "layout" not in spec["layout"]["template"], spec["layout"]["template"]
    plot.layout = {"title": {"text": "replaced"}}
    assert "layout" not in plot._spec["layout"]["template"]
    assert plotly_library().dark_swaps == dark_swaps()


def test_every_jupyterlab_variable_in_the_views_css_has_a_fallback() -> None:
    """Outside JupyterLab (a saved notebook's HTML, a frontend without its variables) a ``var(--jp-…)`` with no
    fallback drops the declaration: each one falls back to the palette (or a neutral value)."""
    bare = [(path.name, m.group()) for path in sorted((PACKAGE / "widgets" / "static").glob("*.css"))
            for m in re.finditer(r"var\(--jp-[\w-]+\)", path.read_text(encoding="utf-8"))]
    assert not bare, bare
