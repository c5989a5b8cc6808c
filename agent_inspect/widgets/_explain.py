"""ExplainView: "why did this run?" as a short vertical story, each step linked into the log browser."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as w

from agent_inspect._glossary import define, plural, split_spec
from agent_inspect._html import escape
from agent_inspect.widgets._browser import LogBrowser
from agent_inspect.widgets._common import KIND_COLOURS, colour_for
from agent_inspect.widgets._style import PALETTE, View, colour

if TYPE_CHECKING:
    from agent_inspect._types import LogLike
    from agent_inspect.diffing import Explanation

__all__ = ["ExplainView"]

_KIND_COLOURS = {**KIND_COLOURS, "outcome": colour("info"), "record": colour("muted"), "calls": colour("warn"),
                 "evict": colour("bad"), "invalidate": colour("violet"), "remove": colour("bad"),
                 "tombstone": colour("brown"), "window": colour("line"), "miss": colour("bad"),
                 "undecodable": colour("pink"), "dispatch": colour("line")}
#: palette role of each colour: a step's bar takes its colour from the theme's ``--ai-<role>`` in views.css
_ROLE_OF = {shade.light: role for role, shade in PALETTE.items()}


class ExplainView(View):
    """An :class:`~agent_inspect.diffing.Explanation`: the chain from the task's outcome back to its cause
    (``.ai-explain-step`` items, the cause last and marked ``.ai-explain-cause``), the cost downstream,
    other rules' outcomes, and a button per linked record (``.ai-explain-record``) that opens the record
    in a log browser below (``log=``: the log the explanation's positions refer to).

    For example::

        e = ai.explain(log, "user-0001", 1, "chat", markers=markers)
        ai.widgets.ExplainView(e, log=log)             # or ai.inspect(e)
    """

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
            b = w.Button(description=f"record {p}", layout=w.Layout(width="auto", min_width="max-content",
                                                                    flex="0 0 auto"),
                         tooltip=(f"open record {p} in the log browser, filtered to key {explanation.key}"
                                  if log is not None else "no log given: pass log= to open records"))
            b.add_class("ai-explain-record")
            b.disabled = log is None
            b.on_click(lambda _b, pos=p: self.open_record(pos))
            self.record_buttons.append(b)
        self.browser_box = w.VBox()
        self.browser: LogBrowser | None = None
        self.children = [self.story, w.HBox(self.record_buttons, layout=w.Layout(flex_flow="row wrap")),
                         self.browser_box]

    def open_record(self, pos: int) -> LogBrowser | None:
        """Show record ``pos`` in the log browser (created on first use), filtered to the explained key."""
        if self.source_log is None:
            return None
        if self.browser is None:
            self.browser = LogBrowser(self.source_log)
            self.browser_box.children = [self.browser]
        self.browser.open_record(int(pos), key=self._record_key(int(pos)))
        return self.browser

    def _record_key(self, pos: int) -> str | None:
        """The business key of record ``pos`` as the log stores it (the explained key when it is not there)."""
        records = getattr(self.source_log, "records", None)
        if records is not None and pos in records.index and "business_key" in records.columns:
            key = records.at[pos, "business_key"]
            if isinstance(key, str):
                return key
        return str(self.explanation.key) if self.explanation.key is not None else None


def _story_html(ex: Any) -> str:
    items = []
    last = len(ex.steps) - 1
    for n, s in enumerate(ex.steps):
        cls = "ai-explain-step" + (" ai-explain-cause" if n == last and n > 0 else "")
        tone = _ROLE_OF.get(colour_for(s.kind, _KIND_COLOURS), "muted")
        records = (f"<div class='ai-explain-positions'>records {escape(', '.join(map(str, s.positions)))}</div>"
                   if s.positions else "")
        items.append(
            f"<li class='{cls}' data-kind='{escape(s.kind)}' data-tone='{escape(tone)}'>"
            f"<div><b>{escape(s.title)}</b></div>"
            + _detail_html(s.detail) + records + "</li>")
        if n < last:
            items.append("<li class='ai-explain-because'>↑ because</li>")
    extra = []
    if ex.cost:
        extra.append(f"<div class='ai-explain-cost'>cost of this decision downstream: "
                     f"{plural(ex.cost.get('bodies', 0), 'action body', 'action bodies')}, "
                     f"{plural(ex.cost.get('calls', 0), 'durable call')} run again</div>")
    for rule, outcome in ex.alternatives.items():
        extra.append(f"<div class='ai-explain-alternative'>under rule <code>{escape(rule)}</code>: "
                     f"<b>{escape(outcome)}</b></div>")
    head = (f"<div class='ai-title'>why <b>{escape(ex.action)}</b> at round {escape(ex.seq)} of key "
            f"{escape(ex.key)} → <b title='{escape(define(str(ex.outcome)))}'>{escape(ex.outcome)}</b> "
            f"under rule <code>{escape(ex.rule_label)}</code></div>")
    return head + "<ol class='ai-explain-chain'>" + "".join(items) + "</ol>" + "".join(extra)


def _detail_html(detail: str | None) -> str:
    """A step's detail in words, its spec sections in a details line of their own."""
    if not detail:
        return ""
    text, refs = split_spec(str(detail))
    return (f"<div class='ai-explain-detail'>{escape(text)}</div>"
            + (f"<div class='ai-details'>details: {escape(refs)}</div>" if refs else ""))
