"""Sizes for the graph views: label lines, layer height, margins, and edges that leave a node under its label.

The layered layout puts nodes in layers one unit apart; a view knows its figure's height, so one unit is a
known number of pixels (``Geometry.layer_px``). Labels sit under their node, wrapped to a few short lines;
edges start under the label of their source and end just above their target's marker, and a long edge
crosses the layers between in a slot of its own (``history.layered_drawing``), so no edge runs through a
label. Widths are estimated from the font size: text is never measured in the kernel.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Geometry", "wrap_label", "label_px", "label_lines"]

FONT_PX = 9
_LINE_PX = 11            # one line of a 9 px label
_CHAR_PX = 5.6           # an average character of it (an over-estimate: labels keep their distance)
_MARKER_PX = 13          # a node's marker and its outline
RING_PX = 22             # the divergence ring around a node (its label sits under the ring)
_RING_OUTER_PX = RING_PX + 3
_WRAP = 24               # characters per label line
_MAX_LINES = 4
_ARROW_GAP_PX = 4
WORD_PX = 10             # a line of an edge's words ("then", "re-runs"), under its source's label


def wrap_label(text: str, width: int = _WRAP) -> list[str]:
    """``text`` in lines of at most ``width`` characters: parts joined by " · " stay whole where they fit,
    longer words break at spaces, "_" or a lower-upper case change (``InternalSubagentCallEvent`` →
    ``InternalSubagent``, ``CallEvent``); at most four lines, the last ending in "…" when text is left over."""
    pieces: list[tuple[str, str]] = []          # (joiner before it, piece)
    for i, part in enumerate(p for p in text.split(" · ")):
        joiner = " · " if i else ""
        if len(part) <= width:
            pieces.append((joiner, part))
            continue
        for j, word in enumerate(w for w in re.split(r"(?<= )|(?<=_)|(?<=[a-z])(?=[A-Z])", part) if w):
            while len(word) > width:
                pieces.append((joiner if j == 0 else "", word[:width]))
                word, joiner, j = word[width:], "", 1
            pieces.append((joiner if j == 0 else "", word))
    lines: list[str] = []
    for joiner, piece in pieces:
        if lines and len(lines[-1]) + len(joiner) + len(piece.rstrip()) <= width:
            lines[-1] += joiner + piece
        else:
            lines.append(piece)
    lines = [ln.strip() for ln in lines if ln.strip()]
    if len(lines) > _MAX_LINES:
        lines = lines[:_MAX_LINES]
        lines[-1] = lines[-1][:width - 1] + "…"
    return lines or [""]


def label_px(text: str) -> float:
    """The estimated width of the longest line of a plotly label (``<br>`` between lines, tags, entities)."""
    lines = html.unescape(re.sub(r"<(?!br>)[^>]*>", "", text)).split("<br>")
    return max((len(line) for line in lines), default=0) * _CHAR_PX


def label_lines(text: str) -> int:
    """The number of lines of a plotly label."""
    return text.count("<br>") + 1 if text else 0


@dataclass(frozen=True)
class Geometry:
    """Pixel sizes of one drawing: ``layer_px`` per layout unit of height, the figure's height and margins,
    and the axis ranges that keep every label inside the figure."""

    layer_px: float
    height: int
    margin: dict[str, int]
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    below: float             # layout units from a labelled node's centre to the bottom of its label
    above: float             # layout units from a node's centre to the top of its marker
    word: float = 0.0        # layout units of the line under the labels kept for edges' words (0: none)
    titles: float = 0.0      # layout units from the top row's centre to the bottom of the lane titles over it

    @classmethod
    def of(cls, positions: Mapping[Hashable, tuple[float, float]], label_lines: Mapping[Hashable, int],
           label_widths: Iterable[float], *, min_height: int, legend_rows: int, lanes: bool,
           ringed: bool = False, words: bool = False, entry: float = 0.0) -> Geometry:
        """``entry``: how far over a row edges run across to their targets (a wrapped drawing's, layout units);
        the lane titles sit over that line."""
        lines = max(label_lines.values(), default=0)
        # a ringed node's label starts under its ring: every label of the drawing gets that room
        marker = _RING_OUTER_PX if ringed else _MARKER_PX
        # a graph whose edges carry words keeps a line for them under the tallest label
        layer_px = float(marker + 14 + _LINE_PX * max(lines, 1) + (WORD_PX if words else 0))
        ys = [p[1] for p in positions.values()] or [0.0]
        xs = [p[0] for p in positions.values()] or [0.0]
        below = (marker / 2 + 2 + _LINE_PX * lines) / layer_px
        above = (_MARKER_PX / 2 + _ARROW_GAP_PX) / layer_px
        # room above the top layer for the lane titles (over the edges running across to it), under the bottom
        # one for its labels
        titles = max(above, entry + _ARROW_GAP_PX / layer_px if entry else 0.0)
        top = titles + ((_LINE_PX + 8) / layer_px if lanes else 0.1)
        bottom = below + 6 / layer_px
        y_range = (min(ys) - bottom, max(ys) + top)
        margin = dict(l=10, r=10, t=34 + 22 * max(legend_rows - 1, 0), b=10)
        half = math.ceil(max(label_widths, default=0.0) / 2)
        margin["l"] = margin["r"] = max(10, min(half, 140))   # the outermost labels overhang the axis range
        plot_px = (y_range[1] - y_range[0]) * layer_px
        height = max(min_height, int(math.ceil(plot_px)) + margin["t"] + margin["b"])
        # the plot area is the layers' height (centred in a taller figure), so one unit is layer_px
        extra = (height - margin["t"] - margin["b"]) / layer_px - (y_range[1] - y_range[0])
        y_range = (y_range[0] - extra / 2, y_range[1] + extra / 2)
        return cls(layer_px, height, margin, (min(xs) - 0.6, max(xs) + 0.6), y_range, below, above,
                   (WORD_PX if words else 0) / layer_px, titles)

    def edge_arrays(self, routes: Iterable[Sequence[tuple[float, float]]], labelled: bool
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """x, y (NaN between edges) and marker sizes (an arrowhead at each edge's end) of the edges along
        ``routes``: each leaves its source under the source's label and stops above its target's marker."""
        xs: list[float] = []
        ys: list[float] = []
        size: list[float] = []
        drop = self.below if labelled else self.above
        for route in routes:
            points = [tuple(p) for p in route]
            if len(points) < 2:
                continue
            (x0, y0), (x1, y1) = points[0], points[-1]
            if points[1][1] < y0:        # leaving downwards: start under the label
                points[0] = (x0, y0 - drop)
            if points[-2][1] > y1:       # arriving from above: end above the marker
                points[-1] = (x1, y1 + self.above)
            else:                        # from the side (a wrapped band's gutter) or below (a cycle): stop short
                dx, dy = x1 - points[-2][0], y1 - points[-2][1]
                length = math.hypot(dx, dy) or 1.0
                back = min(self.above, 0.4 * length)
                points[-1] = (x1 - dx / length * back, y1 - dy / length * back)
            for x, y in points:
                xs.append(x)
                ys.append(y)
                size.append(0.0)
            size[-1] = 9.0
            xs.append(math.nan)
            ys.append(math.nan)
            size.append(0.0)
        return np.array(xs, dtype=float), np.array(ys, dtype=float), np.array(size, dtype=float)
