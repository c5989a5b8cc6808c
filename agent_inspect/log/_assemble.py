"""Raw batches to a log, with the reasons of malformed file lines put into the ``error`` column."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words, did_you_mean, plural
from agent_inspect.log._log import ActionStateLog, logged_key
from agent_inspect.raw import RawBatch, SourceInfo

if TYPE_CHECKING:
    from agent_inspect.log._parallel import Workers

__all__ = ["build_log"]


def build_log(batches: Iterable[RawBatch], source: SourceInfo, *,
              line_errors: Mapping[int, str] | None = None, pool: Workers | None = None) -> ActionStateLog:
    """Hand raw batches to the log builder; reasons of malformed file lines go into the ``error`` column.

    ``line_errors`` (row index → reason) needs a single batch.

    For example::

        again = ai.log.build_log([log.raw], log.source)   # the builder every loader hands raw batches to
        again.records.equals(log.records)
    """
    build = ActionStateLog.from_raw if pool is None else pool.build  # the pool builds partition groups apart
    if not line_errors:
        return build(batches, source)
    (batch,) = list(batches)
    batch, line_errors = _in_physical_order(batch, line_errors)
    log = build([batch], source)
    _attach_line_errors(log, line_errors)
    return log


def _in_physical_order(batch: RawBatch, line_errors: Mapping[int, str]) -> tuple[RawBatch, Mapping[int, str]]:
    # Sorted here, stably by (partition, offset) like the log builder, so the builder keeps the order
    # and row indexes are positions: an error finds its row even when positions repeat.
    import numpy as np

    part = np.asarray(batch.partition, dtype=np.int64)
    off = np.asarray(batch.offset, dtype=np.int64)
    order = np.lexsort((off, part))
    if bool(np.all(order[1:] > order[:-1])):
        return batch, line_errors
    moved_to = np.empty_like(order)
    moved_to[order] = np.arange(len(order))
    idx = order.tolist()

    def pick(col: list[Any]) -> list[Any]:
        return [col[i] for i in idx]

    out = RawBatch(pick(batch.partition), pick(batch.offset), pick(batch.timestamp_ms), pick(batch.key),
                   pick(batch.value), None if batch.agent_key is None else pick(batch.agent_key))
    return out, {int(moved_to[row]): reason for row, reason in line_errors.items()}


def _attach_line_errors(log: Any, line_errors: Mapping[int, str]) -> None:
    import pandas as pd

    records = log.records
    errors = records["error"].to_numpy(dtype=object, na_value=None).copy()
    for pos, reason in line_errors.items():
        errors[pos] = reason
    records["error"] = pd.array(errors, dtype=records["error"].dtype)


def check_business_keys(log: ActionStateLog, keys: Iterable[str], *,
                        known: Callable[[], Iterable[str]] | None = None) -> ActionStateLog:
    """``log``, loaded for ``keys``, checked for keys with no record (a typo reads as an empty log otherwise).

    The one check every loader (and the CLI's ``--key``) uses. None of the keys has a record: an
    :class:`~agent_inspect.InspectError` naming them, with the closest keys ``known()`` gives (``did_you_mean``;
    only where the loader has the other keys at hand: a file's, a Fluss table's, the Kafka partitions a
    one-process load read, a scan dataset's partitions read). Some have records: the log is kept, its
    ``source.options["missing_business_keys"]`` lists the others and a ``UserWarning`` names them, since the
    caller asked for several keys and is owed the ones that are there. A key matches by text or by digest
    (K1.6 and K2 logs name keys by digest).
    """
    asked = list(dict.fromkeys(map(str, keys)))
    found = set(map(str, log.records["business_key"].dropna().unique()))
    missing = [k for k in asked if logged_key(k, found) is None]
    if not missing:
        return log
    where = log.source.location
    names = ", ".join(map(repr, missing))
    if len(missing) == len(asked):
        hint = did_you_mean(missing, known()) if known is not None else ""
        said = (f"{count_words(len(missing), 'business key')} {names} "
                f"{count_words(len(missing), 'has', 'have')} no records in {where}{hint}")
        # the command line lists no keys: the shell's user is told where they are listed
        raise InspectError(f"{said} (log.keys() of a load without business_keys lists them)",
                           cli=f"{said} (in Python, agent_inspect.load(source).keys() lists the log's keys)")
    warnings.warn(f"no records of business {count_words(len(missing), 'key')} {names} in {where}; the log "
                  f"holds the other {len(asked) - len(missing)} asked for", UserWarning, stacklevel=2)
    log.source = dataclasses.replace(log.source, options={**log.source.options, "missing_business_keys": missing})
    return log


def key_texts(batch: RawBatch) -> set[str]:
    """The business keys a raw batch's state keys name (text, or digest for K1.6 and K2); keys that do not parse
    are left out. Only for suggestions: it parses every key."""
    from agent_inspect.codec import parse_state_key

    out: set[str] = set()
    for raw in dict.fromkeys(k for k in batch.key if k is not None):
        try:
            out.add(parse_state_key(raw.decode("utf-8")).business_key)
        except Exception:  # noqa: BLE001 - a key that does not parse names no business key
            continue
    return out


def note_repeated_positions(log: ActionStateLog) -> ActionStateLog:
    """``log``, with a warning (and ``source.options["repeated_positions"]``) when some record of the file sits at a
    partition and offset an earlier line has: Kafka and Fluss keep one record per position, so the file holds
    records twice (overlapping dumps put together), and each repeat would count as one more write."""
    r = log.records
    placed = r.loc[r["partition"] >= 0, ["partition", "offset"]]
    repeated = placed.duplicated()
    if not repeated.any():
        return log
    n = int(repeated.sum())
    first = placed[repeated].iloc[0]
    warnings.warn(f"{log.source.location} holds {plural(n, 'record')} at a partition and offset an earlier line has "
                  f"(first: partition {int(first['partition'])}, offset {int(first['offset'])}); a log has one record "
                  "per position, so overlapping dumps were put together and each repeat counts as one more write: "
                  "load one dump, or drop the repeated lines", UserWarning, stacklevel=4)
    log.source = dataclasses.replace(log.source, options={**log.source.options, "repeated_positions": n})
    return log
