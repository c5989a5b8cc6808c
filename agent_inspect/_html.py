"""HTML helpers shared by every ``_repr_html_``, widget and the report, and the display mixin.

Every string that came from a record is untrusted: it goes through :func:`escape` (or
:func:`frame_html`, which escapes every cell and header) before it reaches HTML. Result objects get
their notebook HTML from :class:`HtmlRepr`, which renders the parts they yield and escapes them all.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_inspect._controls import show_controls
from agent_inspect._glossary import define, plural

__all__ = [
    "escape",
    "plotly_text",
    "frame_html",
    "table_html",
    "labelled",
    "HtmlRepr",
    "HtmlPart",
    "Text",
    "Heading",
    "Strong",
    "Code",
    "Em",
    "Term",
    "Facts",
    "Table",
    "Bullets",
    "Details",
    "render_parts",
]


def escape(value: Any) -> str:
    """HTML-escape ``str(value)``, quotes included (safe in text and in attribute values); control characters
    are written out (:func:`show_controls`): an escape sequence shows, a bidi override cannot turn text around."""
    return show_controls(html.escape("" if value is None else str(value), quote=True))


def plotly_text(value: Any) -> str:
    """Escape ``str(value)`` for plotly text (hover, labels, trace names), which plotly reads as HTML.

    Plotly knows numeric entities but not ``&quot;``, so quotes become ``&#34;`` / ``&#39;``: inert
    and still shown as quotes.
    """
    text = show_controls(html.escape("" if value is None else str(value), quote=False))
    return text.replace('"', "&#34;").replace("'", "&#39;")


def frame_html(frame: Any, *, max_rows: int = 20, caption: str | None = None,
               meanings: Mapping[str, str] | None = None) -> str:
    """A small escaped HTML table of the first ``max_rows`` rows of a DataFrame; a column header says on hover
    what ``meanings`` says of its column, else the glossary's line for it."""
    shown = frame.head(max_rows)
    said = meanings or {}
    head = "".join(labelled("th", c, meaning=said.get(c)) for c in shown.columns)
    rows = [f"<tr><th>{escape(idx)}</th>{''.join(_td(_cell(v)) for v in row)}</tr>"
            for idx, row in zip(shown.index, shown.itertuples(index=False, name=None))]
    return table_html(head, rows, caption=caption, more=len(frame) - len(shown))


def table_html(head: str, rows: Iterable[str], *, caption: str | None = None, more: int = 0) -> str:
    """An ``agent-inspect`` table from its header cells and rows (HTML the caller escaped), the rows left out
    (``more``) said below it."""
    foot = f"<p>… {plural(more, 'more row')}</p>" if more > 0 else ""
    cap = labelled("caption", caption) if caption else ""
    return (f'<table class="agent-inspect">{cap}<thead><tr><th></th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>{foot}")


_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d")


def _td(value: Any) -> str:
    """A table cell; a long word (a UUID, a state key) or a timestamp also in its title: the views cut them
    to one line, and the title shows them whole on hover. A glossary term (an outcome, a status) has its meaning
    there instead."""
    text, raw = escape(value), str(value)
    if len(raw) > 16 and (" " not in raw or _TIMESTAMP.match(raw)):
        return f'<td title="{text}">{text}</td>'
    return labelled("td", raw)


def labelled(tag: str, label: Any, *, term: str | None = None, cls: str | None = None,
             meaning: str | None = None) -> str:
    """``<tag>label</tag>`` (escaped), with the glossary's line on hover when the label — or ``term``, the word
    it counts ("step" of "step 12") — is one of its terms; ``meaning``, when given, is the line instead."""
    word = str(label) if term is None else term
    if not meaning:
        meaning = define(word) if len(word) <= 40 else ""
    title = f' title="{escape(meaning)}"' if meaning else ""
    klass = f' class="{escape(cls)}"' if cls else ""
    return f"<{tag}{klass}{title}>{escape(label)}</{tag}>"


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)) and not any(isinstance(v, (list, tuple, dict)) for v in value):
        return ", ".join(map(str, value))  # log positions (995,) read as 995, not as a Python tuple
    try:
        import pandas as pd

        if value is None or (not isinstance(value, (list, tuple, dict)) and pd.isna(value)):
            return ""
    except (TypeError, ValueError):
        pass
    return value


# -- the display mixin ----------------------------------------------------------------------------------


class Strong:
    """Bold text inside a :class:`Text`."""

    __slots__ = ("text",)

    def __init__(self, text: Any) -> None:
        self.text = text


class Code(Strong):
    """Code-styled text inside a :class:`Text`."""

    __slots__ = ()


class Em(Strong):
    """Italic text inside a :class:`Text`."""

    __slots__ = ()


class Term:
    """A word with a tooltip inside a :class:`Text`: ``title`` says what it means (the glossary's line)."""

    __slots__ = ("text", "title")

    def __init__(self, text: Any, title: str) -> None:
        self.text = text
        self.title = title

    @classmethod
    def of(cls, word: Any) -> Term | str:
        """``word`` with the glossary's line on hover, or the plain text when the glossary has no such term."""
        meaning = define(str(word))
        return cls(word, meaning) if meaning else str(word)


class Text:
    """A paragraph of spans: plain values, :class:`Strong`, :class:`Em`, :class:`Code` and :class:`Term` (all
    escaped)."""

    __slots__ = ("spans",)
    tag = "p"

    def __init__(self, *spans: Any) -> None:
        self.spans = spans


class Heading(Text):
    """A small heading of spans."""

    __slots__ = ()
    tag = "h4"


@dataclass(frozen=True)
class Facts:
    """A two-column table of (label, value) rows; rows whose value is None are left out. A label may be a
    :class:`Term` (its meaning on hover)."""

    rows: Iterable[tuple[Any, Any]]


@dataclass(frozen=True)
class Table:
    """The first ``max_rows`` rows of a DataFrame (:func:`frame_html`)."""

    frame: Any
    caption: str | None = None
    max_rows: int = 20


@dataclass(frozen=True)
class Bullets:
    """A bulleted list."""

    items: Iterable[Any]


@dataclass(frozen=True)
class Details:
    """A collapsed ``<pre>`` block under a summary line."""

    summary: Any
    text: Any


HtmlPart = Text | Facts | Table | Bullets | Details


class HtmlRepr:
    """Mixin: a result object's notebook HTML (``_repr_html_``) from its one hook, ``_html_parts()``.

    The object yields parts (rich's protocol-hook style); only :func:`render_parts` writes tags, so
    every value an object hands over is escaped and no object writes HTML of its own.
    """

    __slots__ = ()

    def _html_parts(self) -> Iterable[HtmlPart]:
        raise NotImplementedError(f"{type(self).__name__} must yield its HTML parts")

    def _repr_html_(self) -> str:
        return render_parts(self._html_parts())

    def __rich__(self) -> Any:
        """The same parts for rich (``rich.print(result)``, a rich console or IPython with rich's pretty hook)."""
        return rich_parts(self._html_parts())


def render_parts(parts: Iterable[HtmlPart]) -> str:
    """The escaped HTML of display parts, in one ``<div class="ai-repr">``."""
    return '<div class="ai-repr">' + "".join(map(_render_part, parts)) + "</div>"


def _render_part(part: HtmlPart) -> str:
    if isinstance(part, Text):
        return f"<{part.tag}>{''.join(map(_span, part.spans))}</{part.tag}>"
    if isinstance(part, Facts):
        rows = "".join(f"<tr><th>{_span(k)}</th><td>{escape(v)}</td></tr>" for k, v in part.rows if v is not None)
        return f'<table class="agent-inspect facts">{rows}</table>'
    if isinstance(part, Table):
        return frame_html(part.frame, max_rows=part.max_rows, caption=part.caption)
    if isinstance(part, Bullets):
        return "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in part.items) + "</ul>"
    if isinstance(part, Details):
        return f"<details><summary>{escape(part.summary)}</summary><pre>{escape(part.text)}</pre></details>"
    raise TypeError(f"not an HTML part: {type(part).__name__}")


def rich_parts(parts: Iterable[HtmlPart]) -> Any:
    """The display parts as one rich renderable; every value is literal text, never console markup, and its
    control characters are written out (:func:`show_controls`): rich passes an escape sequence through to the terminal.

    rich is not a dependency: this runs only when rich asks an object to render itself.
    """
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table as RichTable
    from rich.text import Text as RichText

    def plain(value: Any, style: str = "") -> RichText:
        return RichText(show_controls(str(value)), style=style)

    def line(spans: Iterable[Any], style: str = "") -> RichText:
        text = RichText(style=style)
        for span in spans:
            styled = "bold" if type(span) is Strong else "italic" if isinstance(span, Em) else \
                "cyan" if isinstance(span, Code) else "underline" if isinstance(span, Term) else ""
            text.append(show_controls(str(span.text if isinstance(span, (Strong, Term)) else span)), style=styled)
        return text

    out: list[Any] = []
    for part in parts:
        if isinstance(part, Text):
            out.append(line(part.spans, "bold" if isinstance(part, Heading) else ""))
        elif isinstance(part, Facts):
            grid = RichTable.grid(padding=(0, 2))
            for label, value in part.rows:
                if value is not None:
                    grid.add_row(line([label], "bold"), plain(value))
            out.append(grid)
        elif isinstance(part, Table):
            frame = part.frame.head(part.max_rows)
            table = RichTable(title=None if part.caption is None else plain(part.caption),
                              caption=f"{len(part.frame)} rows" if len(part.frame) > part.max_rows else None)
            for column in frame.columns:
                table.add_column(plain(column))
            for row in frame.itertuples(index=False):
                table.add_row(*(plain(_cell(v)) for v in row))
            out.append(table)
        elif isinstance(part, Bullets):
            out.extend(plain("• " + str(item)) for item in part.items)
        elif isinstance(part, Details):
            out.extend([plain(part.summary, "bold"), Padding(plain(part.text), (0, 0, 0, 2))])
        else:
            raise TypeError(f"not a display part: {type(part).__name__}")
    return Group(*out)


def _span(span: Any) -> str:
    if isinstance(span, Term):
        return f'<span class="ai-term" title="{escape(span.title)}">{escape(span.text)}</span>'
    if isinstance(span, Code):
        return f"<code>{escape(span.text)}</code>"
    if isinstance(span, Em):
        return f"<i>{escape(span.text)}</i>"
    if isinstance(span, Strong):
        return f"<b>{escape(span.text)}</b>"
    return escape(span)
