"""ExplainView: "why did this run?" as a short vertical story, each step linked into the log browser."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as w

from agent_inspect._html import escape
from agent_inspect.widgets._browser import LogBrowser
from agent_inspect.widgets._common import KIND_COLOURS, colour_for
from agent_inspect.widgets._style import colour

if TYPE_CHECKING:
    from agent_inspect._types import LogLike
    from agent_inspect.diffing import Explanation

__all__ = ["ExplainView"]

_KIND_COLOURS = {**KIND_COLOURS, "outcome": colour("info"), "record": colour("muted"), "calls": colour("warn"),
                 "evict": colour("bad"), "invalidate": colour("violet"), "remove": colour("bad"),
                 "tombstone": colour("brown"), "window": colour("line"), "miss": colour("bad"),
                 "undecodable": colour("pink")}


class ExplainView(w.VBox):
    """An :class:`~agent_inspect.diffing.Explanation`: the chain from the task's outcome back to its cause
    (``.ai-explain-step`` items, the cause last and marked ``.ai-explain-cause``), the cost downstream,
    other rules' outcomes, and a button per linked record (``.ai-explain-record``) that opens the record
    in a log browser below (``log=``: the log the explanation's positions refer to)."""

    def __init__(self, explanation: Explanation, *, log: LogLike | None = None) -> None:
        super().__init__()
        self.add_class("ai-explain")
        self.explanation = explanation
        self.source_log = log
        self.story = w.HTML(_story_html(explanation))
        self.story.add_class("ai-explain-story")
        positions = sorted({p for s in explanation.steps for p in s.positions})
        self.record_buttons = []
        for p in positions[:40]:
            b = w.Button(description=f"record {p}", layout=w.Layout(width="auto"),
                         tooltip="open this record in the log browser" if log is not None else "no log given")
            b.add_class("ai-explain-record")
            b.disabled = log is None
            b.on_click(lambda _b, pos=p: self.open_record(pos))
            self.record_buttons.append(b)
        self.browser_box = w.VBox()
        self.browser: LogBrowser | None = None
        self.children = [self.story, w.HBox(self.record_buttons), self.browser_box]

    def open_record(self, pos: int) -> LogBrowser | None:
        """Show record ``pos`` in the log browser (created on first use)."""
        if self.source_log is None:
            return None
        if self.browser is None:
            self.browser = LogBrowser(self.source_log)
            self.browser_box.children = [self.browser]
        self.browser.show_record(int(pos))
        return self.browser


def _story_html(ex: Any) -> str:
    items = []
    last = len(ex.steps) - 1
    for n, s in enumerate(ex.steps):
        cls = "ai-explain-step" + (" ai-explain-cause" if n == last and n > 0 else "")
        colour = colour_for(s.kind, _KIND_COLOURS)
        records = (f"<div class='ai-explain-positions'>records {escape(', '.join(map(str, s.positions)))}</div>"
                   if s.positions else "")
        items.append(
            f"<li class='{cls}' data-kind='{escape(s.kind)}' style='border-left:4px solid {escape(colour)};"
            f"padding:2px 8px;margin:4px 0;list-style:none'>"
            f"<div><b>{escape(s.title)}</b></div>"
            + (f"<div>{escape(s.detail)}</div>" if s.detail else "") + records + "</li>")
        if n < last:
            items.append("<li style='list-style:none;color:var(--ai-muted, var(--jp-ui-font-color2));margin-left:10px'>↑ because</li>")
    extra = []
    if ex.cost:
        extra.append(f"<div class='ai-explain-cost'>cost of this decision downstream: {int(ex.cost.get('bodies', 0))}"
                     f" action bodies, {int(ex.cost.get('calls', 0))} durable calls run again</div>")
    for rule, outcome in ex.alternatives.items():
        extra.append(f"<div class='ai-explain-alternative'>under rule <code>{escape(rule)}</code>: "
                     f"<b>{escape(outcome)}</b></div>")
    head = (f"<div class='ai-title'>why {escape(ex.key)}@{escape(ex.seq)} <b>{escape(ex.action)}</b> → "
            f"<b>{escape(ex.outcome)}</b> under rule <code>{escape(ex.rule)}</code></div>")
    return head + "<ol style='padding-left:0'>" + "".join(items) + "</ol>" + "".join(extra)
