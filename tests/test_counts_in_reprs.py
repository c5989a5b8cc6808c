"""The reprs of a recovery session, a store, a live log, a log, a diff, a safety report and a checker history write
counts as the rest of the API does: "1,531 entries", "1 divergence" (they printed "1531 entries" and "1 divergences").
"""

from __future__ import annotations

from agent_inspect.log import LiveLog
from agent_inspect.rules import resolve_rule
from agent_inspect.store import RecoverySession, Store
from tests.support.idle import IdleFollower


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
    live = LiveLog(IdleFollower(), start=False)
    live.count = 1_531
    live.log = [None] * 1_000                            # type: ignore[assignment]   # only its length is read
    assert repr(live) == "<LiveLog live: 1,000 records in the window, 1,531 received, from 'kafka://idle/topic'>"


def _bare(cls: type, **fields: object) -> object:
    """An instance with only the fields a repr reads (building the real thing would take the whole pipeline)."""
    obj = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


def test_a_log_a_diff_a_safety_report_and_a_history_print_counts_with_separators() -> None:
    # they printed "2989 records, … 1 errors", "same=1531", "1203 not replay-safe" and "records=2048"
    from types import SimpleNamespace

    import pandas as pd

    import agent_inspect as ai
    from agent_inspect.checker import History
    from agent_inspect.diffing import Diff
    from agent_inspect.executor import ReplaySafetyReport

    log = ai.load(ai.samples.path("production"))
    assert repr(log) == f"<ActionStateLog 2,989 records, 40 business keys, 0 errors from file {log.source.location!r}>"
    pairs = pd.DataFrame({"status": ["same"] * 1_531 + ["changed"] * 1_002 + ["only in a"]})
    diff = _bare(Diff, pairs=pairs, a=SimpleNamespace(label="a"), b=SimpleNamespace(label="b"))
    assert repr(diff) == "Diff(a='a', b='b', same=1,531, changed=1,002, only_in_a=1, only_in_b=0)"
    report = _bare(ReplaySafetyReport, frame=pd.DataFrame({"safe": [False] * 1_203}), rule_label=None, failure=None)
    assert repr(report) == "ReplaySafetyReport(1,203 tasks, 1,203 not replay-safe)"
    history = _bare(History, seed=20_260, paths={}, attempts=(None,) * 1_100, log=[None] * 2_048)
    assert repr(history) == "History(seed=20260, keys=0, attempts=1,100, records=2,048)"
