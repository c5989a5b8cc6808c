"""The views' colours and stylesheet.

Every colour of the views and the static report is JupyterLab's own (``--jp-…`` CSS variables) or one role of
:data:`PALETTE`, which has a light and a dark variant. The page gets the palette as CSS custom properties
(``--ai-good``, ``--ai-bad``, …) that switch with JupyterLab's theme (``data-jp-theme-light`` on ``<body>``) or,
in the static report, with the reader's ``prefers-color-scheme``. Charts are built with the light variants;
``static/plot.js`` swaps them for the dark ones (:func:`dark_swaps`) when the theme is dark, as the static
report's page script does for a dark ``prefers-color-scheme``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple, TypeVar

import anywidget
import ipywidgets as w

from agent_inspect._controls import show_controls

__all__ = ["ViewStyle", "View", "view_style", "static_text", "close_view", "widgets_under", "PALETTE", "Shade",
           "colour", "dark_swaps", "palette_css", "choices"]

_T = TypeVar("_T")

_STATIC = Path(__file__).parent / "static"


def static_text(name: str) -> str:
    """The text of ``widgets/static/<name>``, for an anywidget's ``_esm`` or ``_css``.

    Text, not a path: anywidget connects every instance of a widget whose ``_esm`` is a path to that file's change
    signal, strongly, so each such widget (and the frame it shows) would stay alive for as long as the kernel runs.
    """
    return (_STATIC / name).read_text(encoding="utf-8")


def choices(values: Iterable[_T]) -> list[_T] | list[tuple[str, _T]]:
    """A picker's options for values from a log (keys, event types): the values themselves, or ``(label, value)``
    pairs when a value's text holds control characters, its label writing them out (a key's bidi override would
    turn the label around) while the value stays exact."""
    values = list(values)
    labels = [show_controls(str(v)) for v in values]
    if all(label == str(v) for label, v in zip(labels, values)):
        return values
    return list(zip(labels, values))


class Shade(NamedTuple):
    """One palette role: its colour on a light background and on a dark one."""

    light: str
    dark: str


PALETTE: Mapping[str, Shade] = {
    "good": Shade("#1a7f37", "#3fb950"),  # agrees, live, reused
    "bad": Shade("#c62828", "#f85149"),  # disagrees, evicted
    "orange": Shade("#bc4c00", "#f0883e"),  # re-run (a cost, apart from the eviction that caused it)
    "warn": Shade("#9a6700", "#d29922"),  # undetermined, in flight, resumed, changed
    "info": Shade("#0969da", "#58a6ff"),  # records, persisted, selected
    "violet": Shade("#8250df", "#bc8cff"),  # invalidated
    "muted": Shade("#656d76", "#8b949e"),  # superseded, rebuilt, secondary text
    "brown": Shade("#8c564b", "#c69076"),  # tombstones, pruning
    "pink": Shade("#bf3989", "#f778ba"),  # errors, undecodable records
    "cyan": Shade("#1b7c83", "#39c5cf"),  # lookups, consumed calls
    "olive": Shade("#6f7a0e", "#b5bd2e"),  # pruned, round complete
    "ink": Shade("#1f2328", "#e6edf3"),  # text and outlines
    "line": Shade("#d0d7de", "#30363d"),  # borders, grid, things outside the picture
    "paper": Shade("#ffffff", "#0d1117"),  # background (the static report; JupyterLab has its own)
    "heat": Shade("#e29393", "#823130"),  # the hot end of a heatmap: half "bad" on paper, "ink" text reads on it
}
"""The semantic palette. Text in any role reads at ≥ 4.5:1 on JupyterLab's light and dark backgrounds."""


def colour(role: str) -> str:
    """The light variant of palette role ``role``: what a chart is built with (the page swaps it when dark)."""
    return PALETTE[role].light


def dark_swaps() -> dict[str, str]:
    """Each role's light colour mapped to its dark one, for the charts' front end."""
    return {shade.light: shade.dark for shade in PALETTE.values()}


def _declarations(variant: str) -> str:
    return "".join(f"--ai-{role}:{getattr(shade, variant)};" for role, shade in PALETTE.items())


def palette_css(*, jupyterlab: bool = True) -> str:
    """The palette as ``--ai-<role>`` custom properties: switched by JupyterLab's theme, or by the reader's
    ``prefers-color-scheme`` (``jupyterlab=False``, the static report).

    For example::

        css = ai.widgets.palette_css(jupyterlab=False)  # --ai-<role> properties for prefers-color-scheme
        css.splitlines()[0]
    """
    light, dark = _declarations("light"), _declarations("dark")
    if jupyterlab:
        return f':root{{{light}}}\nbody[data-jp-theme-light="false"]{{{dark}}}\n'
    return f":root{{{light}color-scheme:light dark}}\n@media (prefers-color-scheme: dark){{:root{{{dark}}}}}\n"


class ViewStyle(anywidget.AnyWidget):
    """A hidden widget whose only job is anywidget's ``_css``: the palette and ``views.css`` on the page."""

    _esm = static_text("views.js")
    _css = palette_css() + static_text("views.css")
    #: one instance serves every view: :func:`close_view` leaves it open
    shared = True

    def __init__(self) -> None:
        super().__init__(layout=w.Layout(display="none"))


_shared: dict[str, ViewStyle] = {}


def view_style() -> ViewStyle:
    """The one live :class:`ViewStyle` every view shows (a new one after ``Widget.close_all()``)."""
    style = _shared.get("style")
    if style is None or style.comm is None:
        style = _shared["style"] = ViewStyle()
    return style


def widgets_under(view: w.Widget) -> list[w.Widget]:
    """``view`` and every widget model under it (children, layouts, styles), shared ones (``shared = True``) left
    out with what is under them."""
    stack, seen, out = [view], set(), []
    while stack:
        widget = stack.pop()
        if id(widget) in seen or getattr(widget, "shared", False) is True:
            continue
        seen.add(id(widget))
        out.append(widget)
        for name in ("children", "layout", "style"):
            value = getattr(widget, name, None) if widget.has_trait(name) else None
            parts = value if isinstance(value, (tuple, list)) else (value,)
            stack.extend(part for part in parts if isinstance(part, w.Widget))
    return out


class View(w.VBox):
    """A view composed of widgets: closing it closes every widget model under it (shared ones stay open), so the
    closed view, and the frames its tables and charts show, can be freed. ``Widget.close()`` closes one model."""

    def close(self) -> None:
        for part in (*self.children, self.layout):
            close_view(part)
        super().close()


def close_view(view: w.Widget) -> None:
    """Close ``view`` and every widget model under it (:func:`widgets_under`), leaving shared ones open.

    ``Widget.close()`` closes one model: a view rebuilt on every refresh (the live panes) would otherwise leave its
    old children, their layouts and their data registered in the kernel for as long as it runs.
    """
    for widget in widgets_under(view):
        widget.close()
