"""``LiveLog``: a log that grows while a source is followed, within a window, telling its listeners.

A daemon thread polls a follower (:class:`Follower`: ``poll()`` hands out what arrived, bounded; ``close()``)
and keeps the records of the window: the newest ``last`` records, or those written since a time (a fixed
one, or a sliding ``timedelta`` before now). After each poll that brought records (and at most once per
``refresh`` seconds) it decodes the window with the same builder as ``ai.load`` — bad records become
rows with an ``error`` — and calls each listener with the new :class:`ActionStateLog`. ``pause()`` stops
polling and publishing (the consumer stays open; records a poll under way brought wait), ``resume()``
goes on where it stopped, ``stop()`` ends the thread and closes the follower.

A live log that is no longer needed stops by itself: the thread holds it only through a weak reference,
so once nothing else refers to it the thread closes the follower and ends. A viewer that may vanish
without saying so (a notebook output) keeps it polling with :meth:`LiveLog.lease`: when a lease runs out
the log idles (the follower's consumer closes) until the next lease, then reads on where it stopped.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, Protocol

from agent_inspect._errors import InspectError, SourceError
from agent_inspect._glossary import plural
from agent_inspect.log._log import ActionStateLog
from agent_inspect.raw import RawBatch, SourceInfo

__all__ = ["Follower", "LiveLog", "Listener", "TailWindow", "follow", "window_bounds"]

State = Literal["live", "paused", "idle", "stopped", "failed"]
Listener = Callable[["ActionStateLog"], None]
TailWindow = int | dt.timedelta | dt.datetime | str
"""What a live window keeps: the newest N records, a span before now (``"15min"``), or a start time."""
_Row = tuple[int, int, "int | None", "bytes | None", "bytes | None"]


class Follower(Protocol):
    """What :class:`LiveLog` reads from: a source that hands out new records, bounded per call.

    For example::

        class Replay:                                    # hands out the sample once, then nothing new
            info, batches = log.source, [log.raw]
            def poll(self): return self.batches.pop() if self.batches else ai.raw.RawBatch()
            def close(self): pass

        live = ai.log.LiveLog(Replay(), window=500, start=False)
        live.poll_once(), live.publish().records.shape
    """

    info: SourceInfo

    def poll(self) -> RawBatch: ...

    def close(self) -> None: ...

    # Optional: ``suspend()`` lets go of the connection while the log idles; the next ``poll()`` reopens it
    # where reading stopped. Followers without it stay connected while idle. ``trouble`` (text or None) says
    # why nothing arrives while the follower keeps retrying (a broker down).


def window_bounds(window: TailWindow | None) -> tuple[int | None, dt.timedelta | None, dt.datetime | None]:
    """``window`` as (last N records, sliding span, fixed start); exactly one is set, or none for ``None``.

    An ``int`` keeps the newest N records; a ``timedelta`` (or text such as ``"15min"``, ``"2h"``) the
    records of that span before now; a ``datetime`` (naive = UTC) those written since then.
    """
    if window is None:
        return None, None, None
    if isinstance(window, bool):
        raise InspectError(f"window must be a record count, a duration or a start time, not {window!r}")
    if isinstance(window, int):
        if window < 1:
            raise InspectError(f"window must keep at least one record, not {window}")
        return window, None, None
    if isinstance(window, str):
        import pandas as pd

        try:
            span = pd.Timedelta(window).to_pytimedelta()
        except ValueError:
            raise InspectError(f"window {window!r} is not a duration such as '15min' or '2h'") from None
        window = span
    if isinstance(window, dt.timedelta):
        if window <= dt.timedelta(0):
            raise InspectError(f"window must be a positive duration, not {window}")
        return None, window, None
    if isinstance(window, dt.datetime):
        return None, None, window if window.tzinfo else window.replace(tzinfo=dt.UTC)
    raise InspectError(f"window must be a record count, a duration or a start time, not {type(window).__name__}")


def _time_key(row: _Row) -> tuple[bool, int]:
    return row[2] is not None, row[2] or 0


def _ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


class LiveLog:
    """A growing log: ``log`` (the window, decoded), ``state``, ``count``, ``updated``; listeners get each new log.

    For example::

        import types

        batches = [log.raw]                           # a Follower: ai.log.follow(URL) starts one over Kafka
        follower = types.SimpleNamespace(info=log.source, close=lambda: None,
                                         poll=lambda: batches.pop() if batches else ai.raw.RawBatch())
        live = ai.log.LiveLog(follower, window=500, start=False)
        live.add_listener(lambda newest: print(len(newest.records)))
        live.poll_once(), live.publish().records.shape
        live.stop()
    """

    def __init__(self, follower: Follower, *, window: TailWindow | None = 1000, refresh: float = 0.5,
                 start: bool = True) -> None:
        self._follower = follower
        self._last, self._span, self._since = window_bounds(window)
        if self._last is None and self._span is None and self._since is None:
            self._last = 1000
        self.refresh = float(refresh)
        self.source: SourceInfo = follower.info
        self._rows: list[_Row] = []
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._running = threading.Event()  # set = polling, clear = paused
        self._running.set()
        self._thread: threading.Thread | None = None
        self._dirty = True
        #: records received since the start (including those the window dropped since)
        self.count = 0
        #: when the last decoded log was published (UTC), None before the first
        self.updated: dt.datetime | None = None
        #: the error that ended the thread, if one did
        self.error: BaseException | None = None
        self._lease_until: float | None = None  # monotonic time; None: no lease needed
        self._suspended = False
        self._holders = 0  # the open views (hold/release)
        self._warned: tuple[str | None, str | None] = (None, None)  # the warning and data loss last told of
        self.log: ActionStateLog = self._build()
        if start:
            self.start()

    # -- control -----------------------------------------------------------------------------------

    @property
    def state(self) -> State:
        if self.error is not None:
            return "failed"
        if self._stop.is_set():
            return "stopped"
        if not self._running.is_set():
            return "paused"
        return "idle" if self._lease_expired() else "live"

    @property
    def window(self) -> dict[str, int | dt.timedelta | dt.datetime | None]:
        """The window as set: ``{"last": N}``, ``{"span": timedelta}`` or ``{"since": datetime}``."""
        if self._last is not None:
            return {"last": self._last}
        return {"span": self._span} if self._span is not None else {"since": self._since}

    def start(self) -> None:
        """Start polling in a daemon thread (``LiveLog(..., start=False)`` waits for this)."""
        if self._thread is not None:
            return
        if self._stop.is_set():
            raise InspectError("this live log is stopped; follow the source again")
        # The thread gets a weak reference only: a live log nobody refers to any more is collected, and its
        # thread then closes the follower and ends instead of polling until the interpreter exits.
        self._thread = threading.Thread(target=_follow, args=(weakref.ref(self), self._follower, self._stop),
                                        name=f"agent-inspect tail {self.source.location}", daemon=True)
        self._thread.start()

    def pause(self) -> None:
        """Stop polling (no update until :meth:`resume`); the consumer stays open at its position."""
        if not self._stop.is_set():
            self._running.clear()
            self._notify_state()

    def resume(self) -> None:
        """Poll again from where the pause left off."""
        if not self._stop.is_set():
            self._running.set()
            self._notify_state()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop polling for good and close the consumer (waits up to ``timeout`` s for the thread)."""
        self._stop.set()
        self._running.set()  # wakes a paused thread so that it can end
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        if thread is None or not thread.is_alive():
            self._close()
        self._notify_state()

    def hold(self) -> None:
        """A view shows this log: :meth:`release` (the view closing) stops it only once no other view holds it."""
        with self._lock:
            self._holders += 1

    def release(self) -> None:
        """A view of this log closed: the last view to close stops the log; the others keep it live."""
        with self._lock:
            self._holders = max(0, self._holders - 1)
            last = self._holders == 0
        if last:
            self.stop()

    def lease(self, seconds: float) -> None:
        """Keep polling for ``seconds`` more; without a new lease by then the log idles until the next one.

        A log never leased polls until it is stopped. While idle it polls nothing and the follower lets
        go of its connection; the next lease reads on from where it stopped (nothing is skipped).
        """
        idle = self._lease_expired()
        self._lease_until = time.monotonic() + max(0.0, float(seconds))
        if idle and not self._stop.is_set():
            self._notify_state()

    def _lease_expired(self) -> bool:
        until = self._lease_until
        return until is not None and time.monotonic() >= until

    @property
    def warning(self) -> str | None:
        """Why nothing arrives while polling goes on (the follower's ``trouble``: a broker down …), else None."""
        trouble = getattr(self._follower, "trouble", None)  # optional in the Follower protocol
        return trouble if isinstance(trouble, str) and trouble else None

    @property
    def data_loss(self) -> str | None:
        """Which records the follower could not read because they were gone (retention …; it reads on), else None."""
        lost = getattr(self._follower, "data_loss", None)  # optional in the Follower protocol
        return lost if isinstance(lost, str) and lost else None

    @property
    def alive(self) -> bool:
        """The polling thread is running."""
        return self._thread is not None and self._thread.is_alive()

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(log)`` with each new log (from the polling thread)."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def poll_once(self) -> int:
        """One poll of the follower, applied to the window; returns the records it brought.

        The polling thread calls this; without a thread (``start=False``) a caller drives it.
        """
        batch = self._follower.poll()
        n = len(batch)
        if n:
            self._add(batch)
        return n

    def publish(self) -> ActionStateLog:
        """Decode the window now and tell the listeners (the thread does this after new records)."""
        log = self._build()
        with self._lock:
            self.log = log
            self._dirty = False
            self.updated = dt.datetime.now(dt.UTC)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(log)
            except Exception:  # a broken view must not stop the tail
                import logging

                logging.getLogger("agent_inspect.log.live").exception("a live-log listener failed")
        return log

    # -- the window --------------------------------------------------------------------------------

    def _add(self, batch: RawBatch) -> None:
        rows = list(zip(batch.partition, batch.offset, batch.timestamp_ms, batch.key, batch.value))
        with self._lock:
            self.count += len(rows)
            newest = _time_key(self._rows[-1]) if self._rows else (False, 0)
            self._rows.extend(rows)
            # kept in record-time order (stable: arrival order among equal times; no time counts as oldest),
            # which is usually arrival order already: then no sort
            if any(_time_key(r) < newest for r in rows) or any(
                    _time_key(b) < _time_key(a) for a, b in zip(rows, rows[1:])):
                self._rows.sort(key=_time_key)
            self._rows = self._trimmed(self._rows)
            self._dirty = True

    def _trimmed(self, rows: list[_Row]) -> list[_Row]:
        if self._last is not None:
            return rows if len(rows) <= self._last else rows[-self._last:]
        start = self._since if self._since is not None else dt.datetime.now(dt.UTC) - (
            self._span or dt.timedelta(0))
        floor = _ms(start)
        return [r for r in rows if r[2] is None or r[2] >= floor]

    def _build(self) -> ActionStateLog:
        with self._lock:
            rows = list(self._rows) if self._span is None else self._trimmed(self._rows)
        batch = RawBatch([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows],
                         [r[4] for r in rows])
        return ActionStateLog.from_raw([batch], self.source)

    # -- the thread --------------------------------------------------------------------------------

    def _step(self, last_publish: float) -> float:
        """One turn of the polling thread; returns when it last published."""
        if not self._running.is_set():
            self._running.wait(0.5)
            return last_publish
        if self._lease_expired():
            if not self._suspended:
                self._suspended = True
                suspend = getattr(self._follower, "suspend", None)  # optional in the Follower protocol
                if suspend is not None:
                    suspend()
                self._notify_state()
            self._stop.wait(0.25)
            return last_publish
        if self._suspended:
            self._suspended = False
            self._notify_state()
        self.poll_once()
        warning = (self.warning, self.data_loss)
        if warning != self._warned:  # the view says why nothing comes, and stops saying so once it does
            self._warned = warning
            self._notify_state()
        # a poll under way when pause() came may still bring records: they wait for resume()
        if self._dirty and self._running.is_set() and not self._stop.is_set() and \
                time.monotonic() - last_publish >= self.refresh:
            self.publish()
            last_publish = time.monotonic()
        return last_publish

    def _notify_state(self) -> None:
        """Call the listeners with the current log: the state changed (paused, resumed, stopped, failed)."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(self.log)
            except Exception:  # noqa: BLE001
                pass

    def _close(self) -> None:
        try:
            self._follower.close()
        except (SourceError, RuntimeError):
            pass

    def __repr__(self) -> str:
        return (f"<LiveLog {self.state}: {plural(len(self.log), 'record')} in the window, {self.count:,} received, "
                f"from {self.source.location!r}>")


def _follow(ref: weakref.ref[LiveLog], follower: Follower, stop: threading.Event) -> None:
    """The polling thread: turns of the live log while it exists and is not stopped; then the follower closes."""
    last_publish = 0.0
    try:
        while not stop.is_set():
            live = ref()
            if live is None:
                break
            try:
                last_publish = live._step(last_publish)
            except BaseException as exc:  # noqa: BLE001 - kept for the view; the thread ends
                live.error = exc
                stop.set()
                live._notify_state()
            del live  # between turns only the weak reference remains
    finally:
        try:
            follower.close()
        except (SourceError, RuntimeError):
            pass


def follow(source: str, *, business_keys: Iterable[str | int] | None = None, window: TailWindow | None = 1000,
           config: Mapping[str, object] | None = None, timeout: float | None = None, refresh: float = 0.5) -> LiveLog:
    """Follow ``kafka://host:port/topic`` live: a started :class:`LiveLog` over the given window.

    The window decides where reading starts: the last N records of each partition read (the
    partitions ``business_keys`` hash to, when given), or the first record at or after the window's
    start time. Reads are read-only like ``ai.load``: assign + explicit offsets, no commits, no group.

    For example::

        live = ai.log.follow("kafka://127.0.0.1:9092/agent-action-state", business_keys=["user-0011"], window=1000)
        live.publish().records.tail()
        live.stop()
    """
    from agent_inspect.sources import check_timeout, open_kafka_tail, resolve_timeout, source_scheme, split_source_url

    text = str(source)
    scheme = source_scheme(text)
    if scheme != "kafka":
        what = f"{scheme}:// sources" if scheme else "files"
        raise SourceError(f"tail follows Kafka topics only (kafka://host:port/topic); {what} cannot be followed. "
                          "Load a snapshot with ai.load(...) instead")
    timeout = resolve_timeout(timeout)
    check_timeout(timeout)
    last, span, since = window_bounds(window)
    if last is None and span is None and since is None:
        last = 1000
    start = since if since is not None else (dt.datetime.now(dt.UTC) - span if span is not None else None)
    servers, topic = split_source_url(text, "kafka")
    follower = open_kafka_tail(servers, topic, last=last, since_ms=None if start is None else _ms(start),
                               business_keys=business_keys, config=config, timeout=timeout)
    try:
        return LiveLog(follower, window=window if window is not None else last, refresh=refresh)
    except BaseException:
        follower.close()
        raise
