"""The reprs of a recovery session, a store and a live log write counts as the rest of the API does: "1,531
entries", "1 divergence" (they printed "1531 entries" and "1 divergences")."""

from __future__ import annotations

from agent_inspect.log import LiveLog
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.rules import resolve_rule
from agent_inspect.store import RecoverySession, Store


class _Idle:
    info = SourceInfo(kind="kafka", location="kafka://idle/topic", topic="topic")

    def poll(self) -> RawBatch:
        return RawBatch()

    def close(self) -> None:
        pass


def _store(entries: int, keys: int) -> Store:
    store = Store()
    store._cache = dict.fromkeys(range(entries))       # type: ignore[assignment]   # only the sizes are read
    store._index = dict.fromkeys(range(keys))           # type: ignore[assignment]
    return store


def test_a_store_and_a_session_print_counts_with_separators_and_the_right_noun() -> None:
    assert repr(_store(1_531, 1_200)) == "Store(1,531 entries, 1,200 business keys)"
    assert repr(_store(1, 1)) == "Store(1 entry, 1 business key)"
    session = RecoverySession(resolve_rule("original"), store=_store(1_531, 2))
    session.events = [None] * 2_048                     # type: ignore[list-item]
    session.divergences = [None]                        # type: ignore[list-item]
    assert repr(session) == "RecoverySession(rule='original', 1,531 cached, 2,048 cache events, 1 divergence)"


def test_a_live_log_prints_its_counts_with_separators() -> None:
    live = LiveLog(_Idle(), start=False)
    live.count = 1_531
    live.log = [None] * 1_000                            # type: ignore[assignment]   # only its length is read
    assert repr(live) == "<LiveLog live: 1,000 records in the window, 1,531 received, from 'kafka://idle/topic'>"
