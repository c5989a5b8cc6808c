"""The views' stylesheet (``static/views.css``), brought into the page by one hidden anywidget."""

from __future__ import annotations

from pathlib import Path

import anywidget
import ipywidgets as w

__all__ = ["ViewStyle", "view_style", "close_view", "widgets_under"]

_STATIC = Path(__file__).parent / "static"


class ViewStyle(anywidget.AnyWidget):
    """A hidden widget whose only job is anywidget's ``_css``: it puts ``views.css`` on the page."""

    _esm = _STATIC / "views.js"
    _css = _STATIC / "views.css"
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


def close_view(view: w.Widget) -> None:
    """Close ``view`` and every widget model under it (:func:`widgets_under`), leaving shared ones open.

    ``Widget.close()`` closes one model: a view rebuilt on every refresh (the live panes) would otherwise leave its
    old children, their layouts and their data registered in the kernel for as long as it runs.
    """
    for widget in widgets_under(view):
        widget.close()


#: The divergence mark of the graphs, the timeline and the stepper (the ring and ✕ on a diverging node, record or
#: step): (light, dark). Text-like near-black / near-white, so it never reads as one of the status colours.
DIVERGENCE_COLOURS = ("#1f2328", "#e6edf3")
