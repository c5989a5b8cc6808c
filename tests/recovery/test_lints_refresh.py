"""Lints read a 0.4+ log without its checkpoint-time refresh rows: a checkpoint re-appending a retained state byte
for byte is no attempt and no attempt's write (addendum §2.2), as the history and reconstruct read it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from recovery_logs import LogBuilder, inp, work

import agent_inspect as ai
from agent_inspect.recovery import lint

U1, U2 = "0d6d1c4e-7e39-3b7b-9d8e-1a2b3c4d5e6f", "1d6d1c4e-7e39-3b7b-9d8e-1a2b3c4d5e6f"


def _checkpoint(b: LogBuilder, *positions: int) -> list[int]:
    """Re-append the records at ``positions`` byte for byte (a 0.4+ checkpoint's refresh rows); their positions."""
    out = []
    for pos in positions:
        part = b.batch.partition[pos]
        off = b.offsets[part]
        b.offsets[part] = off + 1
        out.append(len(b.batch))
        b.batch.append(part, off, 1_700_000_000_000 + off, b.batch.key[pos], b.batch.value[pos])
    return out


def _p03_with_a_checkpoint() -> tuple[ai.ActionStateLog, list[int]]:
    """A Java action's hash-based UUID changing with the JVM (P03) in a 0.4 log: rounds 5 and 6 complete, a
    checkpoint re-appends both, then a restore in a new JVM handles round 5's input under another action UUID."""
    b = LogBuilder(fmt="K1")
    b.run("j", 5, "IA", inp("A", "p1"), action_uuid=U1, outs=[work("a")])     # outputs with lineage: 0.4
    five = len(b.batch) - 1
    b.run("j", 6, "IA", inp("B", "p2"), action_uuid=U1, outs=[work("b")])
    refresh = _checkpoint(b, five, len(b.batch) - 1)
    b.run("j", 5, "IA", inp("A", "p3"), action_uuid=U2, outs=[work("a")])      # attempt 2 in a new JVM
    return b.log(), refresh


def test_an_unstable_action_uuid_is_told_in_the_attempts_the_history_shows_without_refresh_rows() -> None:
    log, refresh = _p03_with_a_checkpoint()
    assert log.runtime().model == "0.4" and ai.history.refresh_rows(log) == frozenset(refresh)
    assert ai.history.attempts(log)["attempt"].tolist() == [1, 2]
    found = lint(log)
    assert found["lint"].tolist() == ["action-uuid-unstable"]
    row = found.iloc[0]
    assert "in attempt 1 and" in row["message"] and "in attempt 2:" in row["message"]   # was attempt 3
    assert not set(row["positions"]) & set(refresh)
    # read as a writer that re-appends nothing (or as given), the repeats are writes and start attempts again
    as_writes = lint(log, refresh=())
    assert "in attempt 3:" in as_writes.iloc[0]["message"] and set(refresh) & set(as_writes.iloc[0]["positions"])


def test_a_reconstruction_s_lints_skip_the_refresh_rows_too() -> None:
    log, refresh = _p03_with_a_checkpoint()
    lints = ai.reconstruct(log).lints
    assert lints["message"].tolist() == lint(log)["message"].tolist()
    assert not {p for ps in lints["positions"] for p in ps} & set(refresh)


def test_a_reconstruction_s_lints_read_the_log_under_its_own_runtime() -> None:
    # read as 0.3 (which writes no refresh rows) the repeats are writes: the lints tell the attempts this
    # reconstruction's history shows, not the ones the log's inferred runtime would (was "in attempt 2")
    log, refresh = _p03_with_a_checkpoint()
    what_if = ai.reconstruct(log, runtime="0.3")
    assert what_if.history.attempts["attempt"].tolist() == [1, 2, 3]
    assert what_if.lints["message"].tolist() == lint(log, refresh=())["message"].tolist()
    assert "in attempt 3:" in what_if.lints.iloc[0]["message"]
    assert set(refresh) & {p for ps in what_if.lints["positions"] for p in ps}
