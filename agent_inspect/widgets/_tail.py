"""Live tail (incident mode): a followed topic's window, with its state, controls and views updating in place.

``tail(source, business_keys=…, window=…)`` follows a Kafka topic (:func:`agent_inspect.log.follow`)
and returns a :class:`LiveTail`: a "live" / "paused" / "stopped" badge, Pause/Resume and Stop buttons,
the record counter and the time of the last update, the settings each window is reconstructed under
(the rule, labelled a what-if when it is one, and the markers), then the views. Each view is a
:class:`~agent_inspect._types.LogViewer`: it takes every new window with ``show_log(log, recovery)``. By
default these are the key timeline and the divergences of the followed key.

A tail stops by itself when nobody can see it: closing its last view (a widget closed, or its comm closed by the
front end) stops it, and a tail whose output no page shows for :attr:`LiveTail.grace` seconds idles (its consumer
closes) until a view appears again — each view on a page sends a heartbeat (``static/presence.js``).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

import anywidget
import ipywidgets as w
import traitlets

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words, plural
from agent_inspect._html import escape
from agent_inspect._types import LogLike, LogViewer, RecoveryOverrides
from agent_inspect.log import ActionStateLog, LiveLog, TailWindow, follow
from agent_inspect.sources import business_key_texts
from agent_inspect.widgets._common import message_html
from agent_inspect.widgets._style import View, close_view, static_text, view_style

if TYPE_CHECKING:
    from agent_inspect._types import RuleLike
    from agent_inspect.recovery import Recovery

__all__ = ["LiveTail", "LiveKeyHistory", "LiveKeyTimeline", "LiveDivergences", "tail"]

_STATE_TEXT = {"live": "● live", "paused": "❚❚ paused", "idle": "◌ idle: no view was open", "stopped": "■ stopped",
               "failed": "✕ stopped by an error"}


def tail(source: str | os.PathLike[str], *, recovery: Recovery | None = None,
         business_keys: Iterable[str | int] | None = None, window: TailWindow | None = 1000, key: str | None = None,
         config: Mapping[str, object] | None = None, timeout: float | None = None, refresh: float = 1.0,
         views: Sequence[LogViewer] | None = None, **overrides: Unpack[RecoveryOverrides]) -> LiveTail:
    """Follow ``kafka://host:port/topic`` live and show it (incident mode); ``.stop()`` ends it.

    - ``business_keys``: read only the partitions these keys hash to and keep only their records.
    - ``window``: what stays on screen: the newest N records (an int, default 1000), a span before
      now (``timedelta`` or text such as ``"15min"``) or everything since a ``datetime``. Reading
      starts at the window too: the last N records of each partition read, or the window's start time.
    - ``key``: the business key the timeline and divergences show (default: the first of
      ``business_keys``, else the key most affected in the first window).
    - ``recovery`` and the settings every verb takes (``rule``, ``markers``, ``runtime``, …): what each
      window is reconstructed under, as ``ai.reconstruct(view.log, recovery=…, rule=…, …)`` would (default:
      the rule the runtime ships, the whole window as the rebuild window). A what-if rule says so in the header.
    - ``refresh``: the least time in seconds between two updates of the views.
    - ``views``: the :class:`~agent_inspect._types.LogViewer` widgets each window goes to (default: the key
      timeline, divergences and compact history of ``key``), e.g. ``[ai.widgets.LiveKeyTimeline("user-42")]``.

    Several views of one tail (``ai.inspect(view.live)`` again) share it: closing one view leaves the others live,
    the last one closed stops the tail; ``.stop()`` (or a Stop button) stops it in every view at once.
    Records gone before the tail read them (retention) are never skipped silently: the badge says which, and the
    tail reads on from the earliest retained offset.

    Reads are read-only like ``ai.load``: assign + explicit offsets, bounded polls, no commits, no
    consumer group. Sources other than Kafka raise :class:`~agent_inspect.SourceError`. A new tail of
    the same topic and keys (the cell run again) stops the previous one.

    For example::

        view = ai.tail("kafka://broker:9092/agent-action-state", business_keys=["user-42"], window=1000)
        view.stop()
    """
    keys = business_key_texts(business_keys)   # one string is one key; an int its text
    _settings(None, recovery, overrides)  # a wrong setting fails here, before anything is read
    live = follow(os.fspath(source), business_keys=keys, window=window, config=config, timeout=timeout,
                  refresh=refresh)
    try:
        view = LiveTail(live, key=key if key is not None else (keys[0] if keys else None), recovery=recovery,
                        views=views, **overrides)
    except BaseException:
        live.stop()
        raise
    # Running the cell again replaces its tail: the previous one of the same topic and keys stops, so
    # re-runs do not pile up polling threads the notebook no longer shows.
    same = (live.source.location, tuple(keys or ()))
    previous = _TAILS.get(same)
    if previous is not None:
        previous.stop()
    _TAILS[same] = live
    return view


# weak: a tail the notebook no longer refers to must be free to go (and stop)
_TAILS: weakref.WeakValueDictionary[tuple[str, tuple[str, ...]], LiveLog] = weakref.WeakValueDictionary()


def _settings(log: ActionStateLog | None, recovery: Recovery | None, overrides: Mapping[str, Any]) -> Recovery:
    """The settings a window is reconstructed under: what every verb resolves first."""
    from agent_inspect.recovery import Recovery

    return Recovery.resolve(log, recovery, **overrides)


_SHOWN: list[tuple[ActionStateLog, Any, Any]] = []  # the newest reconstructions, shared by the views of a window
_SHOWN_LOCK = threading.Lock()


def _reconstruction(log: ActionStateLog, settings: Any) -> Any:
    """The reconstruction of one window under ``settings`` (a resolved ``Recovery``, a rule, or None)."""
    from agent_inspect.recovery import Recovery, reconstruct

    with _SHOWN_LOCK:
        for shown_log, shown_settings, result in _SHOWN:
            if shown_log is log and shown_settings is settings:
                return result
    result = (reconstruct(log, recovery=settings) if isinstance(settings, Recovery)
              else reconstruct(log, rule=settings))
    with _SHOWN_LOCK:
        _SHOWN[:] = [(log, settings, result), *_SHOWN[:1]]
    return result


def _short_of_markers(log: ActionStateLog, settings: Recovery) -> str:
    """What the rebuild misses when the window starts after the markers in some partition ("" when nothing)."""
    from agent_inspect.recovery import rebuild_start

    merged = rebuild_start(settings.markers)
    if not merged or not len(log.records):
        return ""
    firsts = log.records.groupby("partition")["offset"].min()
    late = [(int(p), int(o)) for p, o in firsts.items() if int(p) in merged and int(o) > merged[int(p)]]
    if not late:
        return ""
    where = "; ".join(f"partition {p} from offset {o}, the markers at {merged[p]}" for p, o in late[:3])
    return (f"the window starts after the markers ({where}{'; …' if len(late) > 3 else ''}): the rebuild misses "
            "the records between; use a window that reaches back to the markers")


def _window(pane: Any, log: LogLike, settings: Any) -> Any:
    """The window's reconstruction for ``pane`` (None while it is empty); fixes the pane's key on first use.

    Without a key the panes follow the first window's most affected key and keep it.
    """
    from agent_inspect.widgets._timeline import most_affected_key

    if not len(log.records):
        return None
    result = _reconstruction(log, settings) if isinstance(log, ActionStateLog) else log
    if pane.key is None:
        pane.key = most_affected_key(result)
    return result


class _KeyPane(View):
    """A live pane of one key: "waiting for records…" until the first window, a notice while the key is absent."""

    def __init__(self, key: str | None, css: str) -> None:
        super().__init__()
        self.add_class(css)
        self.key = key
        self.message = w.HTML(message_html("waiting for records…"))
        self.children = [self.message]

    def _key_absent(self) -> None:
        self.message.value = message_html(f"no record of key {self.key} in the window yet")
        self.children = [self.message]


class LiveKeyTimeline(_KeyPane):
    """The key timeline of the newest window (a :class:`~agent_inspect._types.LogViewer`).

    For example::

        view = ai.widgets.LiveKeyTimeline("user-0011")   # a view for ai.tail(..., views=[view])
        view.show_log(log)
    """

    def __init__(self, key: str | None = None) -> None:
        super().__init__(key, "ai-live-timeline")
        self.timeline: w.Widget | None = None

    def show_log(self, log: LogLike, rule: RuleLike | Recovery | None = None) -> None:
        from agent_inspect.widgets._timeline import KeyTimeline

        result = _window(self, log, rule)
        if result is None:
            return
        try:
            timeline = KeyTimeline(result, self.key)
        except InspectError:
            self._key_absent()
            return
        old, self.timeline = self.timeline, timeline
        self.children = [timeline]
        if old is not None:
            close_view(old)


class LiveKeyHistory(_KeyPane):
    """The compact history of the followed key in the newest window, updated in place (a
    :class:`~agent_inspect._types.LogViewer`): the page, the search and the opened lines survive an update.

    For example::

        view = ai.widgets.LiveKeyHistory("user-0011")    # a view for ai.tail(..., views=[view])
        view.show_log(log, rule="fixed")
    """

    def __init__(self, key: str | None = None) -> None:
        super().__init__(key, "ai-live-history")
        self.history: Any = None

    def show_log(self, log: LogLike, rule: RuleLike | Recovery | None = None) -> None:
        from agent_inspect.widgets._history import KeyHistory

        result = _window(self, log, rule)
        if result is None:
            return
        try:
            if self.history is None:
                self.history = KeyHistory(result, self.key)
            else:
                self.history.show_result(result)
        except InspectError:
            self._key_absent()
            return
        self.children = [self.history]


class LiveDivergences(View):
    """The divergences of the followed key in the newest window (a :class:`~agent_inspect._types.LogViewer`).

    For example::

        view = ai.widgets.LiveDivergences("user-0011")   # a view for ai.tail(..., views=[view])
        view.show_log(log)                               # what the tail does with each new window
    """

    def __init__(self, key: str | None = None) -> None:
        super().__init__()
        self.add_class("ai-live-divergences")
        self.key = key
        self.view: w.Widget | None = None
        self.count = 0
        self.title = w.HTML()
        self.children = [self.title]

    def show_log(self, log: LogLike, rule: RuleLike | Recovery | None = None) -> None:
        from agent_inspect.widgets._divergence import DivergenceView

        result = _window(self, log, rule)
        if result is None:
            return
        key = self.key
        view = DivergenceView(result, key=key)
        self.count = len(view.divergences)
        self.title.value = (f'<div class="ai-title">{plural(self.count, "divergence")} of key <code>{escape(key)}</code> '
                            f"in the window</div>")
        old, self.view = self.view, view
        self.children = [self.title, view]
        if old is not None:
            close_view(old)


class _ViewPresence(anywidget.AnyWidget):
    """Hidden; each of its views on a page sends ``{"type": "seen"}`` every ``heartbeat`` seconds."""

    _esm = static_text("presence.js")
    heartbeat = traitlets.Float(10.0).tag(sync=True)

    def __init__(self, live: LiveLog, heartbeat: float, grace: float) -> None:
        super().__init__(heartbeat=heartbeat, layout=w.Layout(display="none"))
        ref = weakref.ref(live)  # the widget registry keeps this widget: it must not keep the log

        def seen(_widget: Any, content: Any, _buffers: Any) -> None:
            target = ref()
            if target is not None and isinstance(content, dict) and content.get("type") == "seen":
                target.lease(grace)

        self.on_msg(seen)


class LiveTail(View):
    """A followed topic: state badge, Pause/Resume and Stop, record counter, last update, then the views.

    ``views`` are :class:`~agent_inspect._types.LogViewer` widgets; each new window goes to every
    one of them, with the settings it is reconstructed under (``recovery`` and the verbs' overrides, resolved
    for that window as ``ai.reconstruct`` resolves them). Pausing stops polling (the views keep the last window); Stop (or :meth:`stop`)
    ends the polling thread and closes the consumer; closing the widget does too once no other view of the live log is open.

    Polling goes on only while a page shows the tail: with no view for ``grace`` seconds it idles (the
    consumer closes; the badge says "idle") and it reads on from where it stopped as soon as a view
    appears. Views send a heartbeat every ``heartbeat`` seconds; ``grace`` outlasts a background tab's
    throttled timers (about once a minute in chromium).

    For example::

        class Replay:                                    # a Follower handing out the sample once (ai.tail reads Kafka)
            info, batches = log.source, [log.raw]
            def poll(self): return self.batches.pop() if self.batches else ai.raw.RawBatch()
            def close(self): pass

        tail = ai.widgets.LiveTail(ai.log.LiveLog(Replay(), window=500), views=[ai.widgets.LiveKeyTimeline()])
        tail.stop()
    """

    #: seconds without any view on a page before polling idles
    grace: float = 75.0
    #: seconds between two heartbeats of a view
    heartbeat: float = 10.0

    def __init__(self, live: LiveLog, *, key: str | None = None, recovery: Recovery | None = None,
                 views: Sequence[LogViewer] | None = None, **overrides: Unpack[RecoveryOverrides]) -> None:
        super().__init__()
        self.add_class("ai-live-tail")
        self.live = live
        #: the settings each window is reconstructed under, as every verb takes them
        self.recovery = recovery
        self.overrides: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
        _settings(None, recovery, self.overrides)  # a wrong setting fails now, not in the polling thread
        #: the rule and markers of the newest window (a what-if says so)
        self.settings = w.HTML()
        self.settings.add_class("ai-live-settings")
        self.state = w.HTML()
        self.state.add_class("ai-live-state")
        self.counter = w.HTML()
        self.counter.add_class("ai-live-counter")
        self.pause_button = w.Button(description="Pause", icon="pause", tooltip="stop polling; resume later")
        self.pause_button.add_class("ai-live-pause")
        self.stop_button = w.Button(description="Stop", icon="stop", tooltip="stop following and close the consumer")
        self.stop_button.add_class("ai-live-stop")
        self.pause_button.on_click(lambda _: self.resume() if self.live.state == "paused" else self.pause())
        self.stop_button.on_click(lambda _: self.stop())
        self.views: list[LogViewer] = list(views) if views is not None else [LiveKeyTimeline(key), LiveDivergences(key), LiveKeyHistory(key)]
        for view in self.views:
            if not isinstance(view, LogViewer):
                raise InspectError(f"a live view needs show_log(log, rule); {type(view).__name__} has none")
        self._header = header = w.HBox([self.state, self.counter, self.pause_button, self.stop_button, self.settings])
        header.add_class("ai-live-header")
        self._presence = _ViewPresence(live, self.heartbeat, self.grace)
        self.children = [header, *[v for v in self.views if isinstance(v, w.Widget)], view_style(), self._presence]
        self._shown: Any = None
        self._closed = False
        self._drawing = threading.Lock()  # the polling thread and a button click may both redraw
        # listening first, then drawing the newest window: a window published meanwhile is drawn, not missed
        # (a tail opened on a stopped job gets no later window to catch up with)
        live.hold()
        live.add_listener(self._on_log)
        self._on_log(live.log)
        live.lease(self.grace)  # time for the first view to show up
        if self.comm is not None:  # the front end closing the widget's comm stops the tail too
            ref = weakref.ref(self)

            def close_tail(_msg: Any) -> None:
                tail = ref()
                if tail is not None:
                    tail.close()
            self.comm.on_close(close_tail)

    @property
    def log(self) -> ActionStateLog:
        """The newest window, decoded."""
        return self.live.log

    def pause(self) -> None:
        """Stop polling; the views keep the last window until :meth:`resume`."""
        self.live.pause()

    def resume(self) -> None:
        self.live.resume()

    def stop(self) -> None:
        """Stop following for good: the polling thread ends and the consumer closes."""
        self.live.stop()

    def close(self) -> None:
        """Close this view; the live log stops with it unless another view of it is still open."""
        if self._closed:
            return
        self._closed = True
        self.live.remove_listener(self._on_log)
        self.live.release()
        super().close()   # every widget under it too: they hold the last window in their charts and tables

    def _on_log(self, _log: ActionStateLog) -> None:
        with self._drawing:
            self._draw(self.live.log)  # the newest: a listener called with an older window may come last

    def _draw(self, log: ActionStateLog) -> None:
        live = self.live
        state = live.state
        text = _STATE_TEXT[state]
        if state == "failed":
            text += f": {escape(live.error)}"
        warning = live.warning if state == "live" else None
        if warning is not None:
            text += f' <span class="ai-live-trouble">· nothing can arrive: {escape(warning)} (retrying)</span>'
        if live.data_loss is not None:
            text += f' <span class="ai-live-trouble ai-live-data-loss">· {escape(live.data_loss)}</span>'

        # the buttons before the badge: a reader (or a browser test) that sees "stopped" finds them disabled
        self.pause_button.description, self.pause_button.icon = (
            ("Resume", "play") if state == "paused" else ("Pause", "pause"))
        self.pause_button.disabled = self.stop_button.disabled = state in ("stopped", "failed")
        self.state.value = f'<span class="ai-live-badge ai-live-{state}">{text}</span>'
        if log is not self._shown:
            self._shown = log
            settings = _settings(log, self.recovery, self.overrides)
            what_if = " ai-what-if" if settings.what_if else ""
            text = (f'<span class="ai-live-rule{what_if}">rule <code>{escape(settings.rule_label)}</code>'
                    f"</span> · markers {escape(settings.markers_label)}")
            short = _short_of_markers(log, settings)
            if short:
                text += f' <span class="ai-live-window-short">· {escape(short)}</span>'
            try:
                for view in self.views:
                    view.show_log(log, settings)
            except InspectError as exc:  # the views keep the last window they could show
                text += (f' <span class="ai-live-window-error">· this window cannot be reconstructed under these '
                         f"settings: {escape(exc)}</span>")
            self.settings.value = text
        # after the views: the counter describes what they show
        updated = live.updated.strftime("%H:%M:%S UTC") if live.updated is not None else "—"
        self.counter.value = (f'<span class="ai-counter">{len(log):,} {count_words(len(log), "record")} in the window · '
                              f"{live.count:,} received · last update {updated}</span>")
