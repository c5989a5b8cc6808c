"""A Trace Log line's ``timestamp``: ISO-8601 text as upstream writes it, or epoch time as a log shipper may."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["timestamps"]

#: the representable timestamp range: from the Unix epoch (upstream writes ``Instant.now()``; an OTLP span's time is
#: unsigned nanoseconds since it, so an earlier line, a clock or shipper error, could not be exported) to pandas' end
_TS_MIN, _TS_MAX = pd.Timestamp(0, tz="UTC"), pd.Timestamp.max.tz_localize("UTC")
_RANGE = f"outside the representable range {_TS_MIN:%Y-%m-%d} to {_TS_MAX:%Y-%m-%d}"


#: a numeric timestamp's unit by its magnitude: (bound, unit in words, pandas unit), the first bound above it
#: wins, so any instant from 1973 to 5138 reads right in whichever unit a log shipper wrote it
_UNITS = ((1e11, "seconds", "s"), (1e14, "milliseconds", "ms"), (1e17, "microseconds", "us"),
          (math.inf, "nanoseconds", "ns"))


def _shown(v: float) -> str:
    text = repr(v)
    return text if len(text) <= 40 else f"{text[:20]}…"


def _epoch_times(nums: pd.Series, ts: pd.Series, why: pd.Series) -> None:
    """Fill ``ts`` (or ``why``) for numeric timestamps: epoch time in the unit of :data:`_UNITS` for their size."""
    try:
        floats = nums.map(float).astype("float64")
    except OverflowError:   # an int no float holds: out of range in any unit
        floats = nums.map(lambda v: (1e300 if v > 0 else -1e300) if isinstance(v, int) and abs(v) > 2 ** 1000
                          else float(v)).astype("float64")
    finite = pd.Series(np.isfinite(floats.to_numpy()), index=nums.index)
    why[finite[~finite].index] = [f"timestamp {v!r} is not a finite number" for v in nums[~finite]]
    size = floats.abs()
    low = 0.0
    for bound, unit, code in _UNITS:
        mine = finite & (size >= low) & (size < bound)
        low = bound
        if not mine.any():
            continue
        per = pd.Timedelta(1, unit=code).value
        ok = mine & (floats >= _TS_MIN.value / per) & (floats <= _TS_MAX.value / per)
        if ok.any():
            numbers = pd.to_numeric(nums[ok])    # int64 when every one is an int: nanoseconds stay exact
            read = pd.to_datetime(numbers, unit=code, utc=True, errors="coerce")
            if numbers.dtype.kind == "f":        # a double holds today's epoch seconds to a quarter microsecond
                read = read.dt.round("us")
            ts[ok[ok].index] = read.astype("datetime64[ns, UTC]")
            ok[ok] = read.notna()
        bad = mine & ~ok
        why[bad[bad].index] = [f"timestamp {_shown(v)} (epoch {unit}) is {_RANGE}" for v in nums[bad]]


def timestamps(raw: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Timestamps as UTC nanoseconds, and the reason per unreadable one.

    Upstream writes ISO-8601 text (addendum §3.2). A number is a log shipper's rewrite: epoch time in the unit
    its magnitude gives (:data:`_UNITS`: below 1e11 seconds, below 1e14 milliseconds, below 1e17 microseconds,
    else nanoseconds), so ``1733400000.5`` and ``1733400000500`` are the same instant, not one of them in 1970.
    """
    ts = pd.Series(pd.NaT, index=raw.index, dtype="datetime64[ns, UTC]")
    why = pd.Series(None, index=raw.index, dtype=object)
    if not len(raw):
        return ts, why
    numeric = raw.map(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)).astype(bool) & raw.notna()
    text = raw.map(lambda v: isinstance(v, str)).astype(bool)
    other = raw.notna() & ~numeric & ~text
    why[other] = [f"timestamp is a {type(v).__name__}, not ISO-8601 text or epoch time" for v in raw[other]]
    if text.any():
        parsed = pd.to_datetime(raw[text], utc=True, errors="coerce", format="ISO8601")
        ok = parsed.notna() & (parsed >= _TS_MIN) & (parsed <= _TS_MAX)
        ts[ok[ok].index] = parsed[ok].astype("datetime64[ns, UTC]")
        out = parsed.notna() & ~ok
        why[out[out].index] = [f"timestamp {str(v)[:40]!r} is {_RANGE}" for v in raw[out[out].index]]
        bad = parsed.isna()
        why[bad[bad].index] = [f"timestamp {str(v)[:40]!r} is not ISO-8601" for v in raw[bad[bad].index]]
    if numeric.any():
        _epoch_times(raw[numeric], ts, why)
    return ts, why
