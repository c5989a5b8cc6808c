"""New-user audit (s16) of the executor as a debugger: breakpoints that could never stop a run are refused."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import agent_inspect as ai
from agent_inspect import ReplayError
from agent_inspect.executor._steps import MemoryByKey


@pytest.fixture(scope="module")
def log() -> ai.ActionStateLog:
    return ai.load(ai.samples.path("production"))


def test_a_breakpoint_seq_given_as_text_is_refused_not_silently_never_matched(log: ai.ActionStateLog) -> None:
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"))
    with pytest.raises(ReplayError, match=r"breakpoint seq takes a round number \(an int\).*'3'"):
        ex.add_breakpoint(seq="3")      # type: ignore[arg-type]
    with pytest.raises(ReplayError, match="breakpoint seq"):
        ai.executor.Breakpoint(seq=2.0)  # type: ignore[arg-type]
    assert ex.breakpoints == []
    bp = ex.add_breakpoint(seq=np.int64(2), kind="lookup")   # a numpy count from a frame will do
    assert bp.seq == 2 and type(bp.seq) is int
    step = ex.run()
    assert step is not None and step.seq == 2 and step.kind is ai.executor.StepKind.LOOKUP


def test_memory_of_an_unknown_key_says_why_and_names_the_closest(log: ai.ActionStateLog) -> None:
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"))
    ex.run(max_steps=40)
    with pytest.raises(KeyError, match=r"no memory of key .user-001. as of this step.*did you mean .*user-0001"):
        ex.memory["user-001"]
    assert ex.memory.get("user-001") is None and "user-001" not in ex.memory   # still a Mapping
    assert "user-0009" in ex.memory


class _CountingKeys(dict):
    """Memory states that count how often their keys are listed (a close-match search lists them all)."""

    listed = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        type(self).listed += 1
        return super().__iter__()


def test_a_miss_of_get_or_in_searches_no_close_key_only_a_shown_error_does() -> None:
    # get() and `in` miss through the KeyError: a close-match search per miss cost 4.6 ms over 1,111 keys
    states = _CountingKeys({f"user-{i:04d}": {} for i in range(1111)})
    memory = MemoryByKey(states, str)      # what ex.memory is
    assert memory.get("user-9999") is None and "user-9999" not in memory
    assert _CountingKeys.listed == 0
    with pytest.raises(KeyError) as raised:
        memory["user-00001"]
    assert raised.value.args == ("user-00001",) and isinstance(pickle.loads(pickle.dumps(raised.value)), KeyError)
    assert "did you mean 'user-0001'" in str(raised.value) and "keys with memory so far" in str(raised.value)
