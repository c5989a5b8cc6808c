"""The views' stylesheet (``static/views.css``), brought into the page by one hidden anywidget."""

from __future__ import annotations

from pathlib import Path

import anywidget
import ipywidgets as w

__all__ = ["ViewStyle", "view_style"]

_STATIC = Path(__file__).parent / "static"


class ViewStyle(anywidget.AnyWidget):
    """A hidden widget whose only job is anywidget's ``_css``: it puts ``views.css`` on the page."""

    _esm = _STATIC / "views.js"
    _css = _STATIC / "views.css"

    def __init__(self) -> None:
        super().__init__(layout=w.Layout(display="none"))


_shared: dict[str, ViewStyle] = {}


def view_style() -> ViewStyle:
    """The one live :class:`ViewStyle` every view shows (a new one after ``Widget.close_all()``)."""
    style = _shared.get("style")
    if style is None or style.comm is None:
        style = _shared["style"] = ViewStyle()
    return style
