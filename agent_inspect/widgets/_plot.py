"""The one chart widget of every view: plotly.js reaches the page once, each chart carries only its data.

:class:`Plot` is a thin anywidget around a plain ``go.Figure`` with the part of ``go.FigureWidget``'s API the
views use (``data``, ``layout``, ``add_trace``, ``update_layout``, ``batch_update``, ``trace.on_click``), plus
``on_hover`` (hover text built in the kernel when the mouse reaches a point) and ``on_relayout`` (zoom).

What travels (``static/plot.js`` is the front end):

- the figure as JSON with every numeric array lifted out into a binary buffer (a typed array in the browser);
  hover text never travels with the figure: the browser asks for one point's text when the mouse is on it;
- plotly.js itself only once per kernel: the installed plotly package's own bundle, gzipped, is the state of
  one shared model (:func:`plotly_library`) that every chart refers to. The page gets it once with that model,
  the first chart on a page loads it and every chart awaits that one promise (``globalThis.__agentInspectPlotly``).
  A chart's own state therefore stays small; a page reopened while the kernel runs draws its charts again from
  their state, and a notebook saved with its widget state ("Save Widget State Automatically") holds plotly.js
  once and draws its charts without the kernel that made them.
"""

from __future__ import annotations

import gzip
import html
import json
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as w
import numpy as np
import plotly.graph_objects as go
import traitlets
from plotly.callbacks import Points
from plotly.io.json import to_json_plotly

from agent_inspect.widgets._style import dark_swaps, palette_css, static_text

__all__ = ["Plot", "plotly_bundle", "plotly_library", "hover_lines"]

_BUNDLE = Path(go.__file__).resolve().parents[1] / "package_data" / "plotly.min.js"
# Numeric lists at least this long travel as typed arrays too (shorter ones are cheaper as JSON).
_MIN_LIST = 16
_BREAK = re.compile(r"<br\s*/?>", re.I)
_TAG = re.compile(r"<[^>]*>")

_PLAIN = go.layout.Template()

HoverProvider = Callable[[int, Any], "str | None"]
RelayoutCallback = Callable[[dict[str, Any]], None]


def _compress_bundle() -> bytes:
    # level 1: a third of level 6's time for 15 % more bytes (1.7 MB), once per kernel
    return gzip.compress(_BUNDLE.read_bytes(), compresslevel=1, mtime=0)


# Compressing starts when this module is imported (``ai.inspect`` is looked up before its argument loads) and
# runs beside the caller: zlib lets go of the GIL, so the first chart finds the bundle ready.
_BUNDLE_JOB: Future[bytes] = Future()


def _compress_in_background() -> None:
    try:
        _BUNDLE_JOB.set_result(_compress_bundle())
    except BaseException as error:  # noqa: BLE001 - plotly_bundle() raises it where the bundle is needed
        _BUNDLE_JOB.set_exception(error)


threading.Thread(target=_compress_in_background, name="ai-plotly-bundle", daemon=True).start()


@lru_cache(maxsize=1)
def plotly_bundle() -> bytes:
    """The installed plotly package's ``plotly.min.js``, gzipped (the state of :func:`plotly_library`)."""
    return _BUNDLE_JOB.result()


class _PlotlyLibrary(anywidget.AnyWidget):
    """Never shown; its state is plotly.js, gzipped, and the charts load it from there.

    An anywidget rather than a plain ``Widget``: the front end's plain model copies its state through JSON
    when the widget state is saved, which turns the bundle into ``{}``; anywidget's keeps binary values.
    """

    _esm = "export default {};"
    bundle = traitlets.Bytes().tag(sync=True)
    #: the palette's light colours mapped to their dark variants: the charts swap them in JupyterLab's dark theme
    dark_swaps = traitlets.Dict().tag(sync=True)
    #: one instance serves every chart: :func:`~agent_inspect.widgets._style.close_view` leaves it open
    shared = True


_shared: dict[str, _PlotlyLibrary] = {}


def plotly_library() -> _PlotlyLibrary:
    """The one live model holding plotly.js that every :class:`Plot` refers to (a new one after ``close_all()``)."""
    library = _shared.get("plotly")
    if library is None or library.comm is None:
        library = _shared["plotly"] = _PlotlyLibrary(bundle=plotly_bundle(), dark_swaps=dark_swaps())
    return library


def hover_lines(text: Any) -> list[str]:
    """Plain lines of a plotly hover string (escaped HTML with ``<br>``): the browser shows them as text."""
    if text is None:
        return []
    return [html.unescape(_TAG.sub("", part)) for part in _BREAK.split(str(text))]


class _Figure(go.Figure):
    """A plain figure that tells its chart when it changed (where ``FigureWidget`` would send a message)."""

    def __init__(self, owner: Plot, data: Any = None, layout: Any = None) -> None:
        self._owner: Plot | None = None
        super().__init__(data=data, layout=layout)
        self._owner = owner

    def _changed(self, *_args: Any, **_kwargs: Any) -> None:
        if self._owner is not None:
            self._owner._changed()

    _send_addTraces_msg = _send_moveTraces_msg = _send_deleteTraces_msg = _changed
    _send_restyle_msg = _send_relayout_msg = _send_update_msg = _send_animate_msg = _changed


class Plot(anywidget.AnyWidget):
    """One chart. ``Plot(layout=...)`` or ``Plot(figure)``; then use it like ``go.FigureWidget``."""

    _esm = static_text("plot.js")
    _css = palette_css() + static_text("plot.css")
    _spec = traitlets.Dict().tag(sync=True)
    _arrays: traitlets.List[memoryview] = traitlets.List().tag(sync=True)
    _library = traitlets.Instance(_PlotlyLibrary, allow_none=True).tag(sync=True, **w.widget_serialization)
    #: How many data items the chart stands for (records even when binned, steps…); -1: its points.
    #: The page shows it as ``data-ai-drawn`` once drawn (benchmarks/views_browser.py reads it).
    items = traitlets.Int(-1).tag(sync=True)

    def __init__(self, figure: Any = None, *, layout: Any = None) -> None:
        super().__init__(_library=plotly_library())
        self._hold = 0
        self._dirty = False
        self._hover: HoverProvider | None = None
        self._relayout: list[RelayoutCallback] = []
        self.figure = _Figure(self, figure, layout)
        # plotly's default template paints a light chart; the page sets one that follows the theme (plot.js)
        self.figure.layout.template = _PLAIN
        self.on_msg(self._on_message)
        self._sync()

    # -- the FigureWidget-like API ------------------------------------------------------------------

    @property
    def layout(self) -> Any:
        """The plotly layout (``go.Layout``); changing it redraws the chart."""
        return self.figure.layout

    @layout.setter
    def layout(self, value: Any) -> None:
        self.figure.layout = value
        self.figure.layout.template = _PLAIN
        self._changed()

    @property
    def data(self) -> tuple[Any, ...]:
        """The traces; assign a list to replace them."""
        traces: tuple[Any, ...] = self.figure.data
        return traces

    @data.setter
    def data(self, traces: Any) -> None:
        with self.batch_update():
            self.figure.data = ()
            self.figure.add_traces(list(traces))

    def add_trace(self, trace: Any, **kwargs: Any) -> Plot:
        self.figure.add_trace(trace, **kwargs)
        return self

    def add_traces(self, traces: Any, **kwargs: Any) -> Plot:
        self.figure.add_traces(traces, **kwargs)
        return self

    def update_layout(self, *args: Any, **kwargs: Any) -> Plot:
        self.figure.update_layout(*args, **kwargs)
        return self

    def update_traces(self, *args: Any, **kwargs: Any) -> Plot:
        self.figure.update_traces(*args, **kwargs)
        return self

    def to_dict(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.figure.to_dict()
        return spec

    @contextmanager
    def batch_update(self) -> Iterator[None]:
        """Changes inside reach the browser as one redraw when the block ends."""
        self._hold += 1
        try:
            with self.figure.batch_update():
                yield
        finally:
            self._hold -= 1
            if not self._hold and self._dirty:
                self._sync()

    def on_hover(self, provider: HoverProvider | None) -> None:
        """``provider(trace_index, point_number)`` returns the hover text (plotly HTML) of one point."""
        self._hover = provider
        self._changed()

    def on_relayout(self, callback: RelayoutCallback) -> None:
        """``callback(event)`` runs with plotly's relayout event (``{"xaxis.range[0]": …}``) after a zoom."""
        self._relayout.append(callback)

    # -- sync -------------------------------------------------------------------------------------

    def _changed(self) -> None:
        if self._hold:
            self._dirty = True
        else:
            self._sync()

    def _sync(self) -> None:
        self._dirty = False
        arrays: list[memoryview] = []
        traces = []
        hover = []
        for n, trace in enumerate(self.figure._data):
            info = trace.get("hoverinfo")
            kernel_hover = info not in ("skip", "none") and (self._hover is not None or "hovertext" in trace)
            if kernel_hover:
                hover.append(n)
            trace = {k: v for k, v in trace.items() if k != "hovertext"}
            if kernel_hover:
                trace["hoverinfo"] = "none"
            traces.append(_lift(trace, arrays))
        skeleton = {"data": traces, "layout": _lift(self.figure._layout, arrays), "hover": hover}
        spec = json.loads(to_json_plotly(skeleton))
        with self.hold_sync():
            self._arrays = arrays
            self._spec = spec

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "hover":
            text = self._hover_text(int(content.get("trace", -1)), content.get("point"))
            self.send({"type": "hover", "id": content.get("id"), "lines": hover_lines(text)})
        elif kind == "click":
            self._click(int(content.get("trace", -1)), list(content.get("points") or []))
        elif kind == "relayout" and isinstance(content.get("event"), dict):
            for callback in list(self._relayout):
                callback(content["event"])

    def _hover_text(self, index: int, point: Any) -> str | None:
        if not 0 <= index < len(self.figure.data) or point is None:
            return None
        if self._hover is not None:
            return self._hover(index, point)
        text = self.figure.data[index].hovertext
        if text is None or isinstance(text, str):
            return text
        try:
            for i in (point if isinstance(point, list) else [point]):
                text = text[int(i)]
        except (IndexError, TypeError, ValueError):
            return None
        return str(text)

    def _click(self, index: int, points: list[Any]) -> None:
        if not 0 <= index < len(self.figure.data):
            return
        trace = self.figure.data[index]
        inds = [int(p) for p in points if isinstance(p, (int, float))]
        trace._dispatch_on_click(Points(point_inds=inds, trace_name=trace.name, trace_index=index), None)


def _lift(value: Any, arrays: list[memoryview]) -> Any:
    """``value`` with numeric arrays replaced by ``{"__ai_array__": n, …}`` and their bytes in ``arrays``."""
    if isinstance(value, dict):
        return {k: _lift(v, arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if len(value) >= _MIN_LIST and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return _lift(np.asarray(value, dtype=float), arrays)
        return [_lift(v, arrays) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "b" or (value.dtype.kind in "iu" and value.dtype.itemsize == 8):
            value = value.astype(np.float64)
        if value.dtype.kind in "iuf" and value.size:
            data = np.ascontiguousarray(value)
            arrays.append(data.reshape(-1).view(np.uint8).data)
            return {"__ai_array__": len(arrays) - 1, "dtype": data.dtype.name, "shape": list(data.shape)}
        return [_lift(v, arrays) for v in value.tolist()]
    return value
