"""A scan's task keeps nothing of the window it read, and frees it without waiting for the cyclic GC: a worker runs
window after window, and the logs kept (about 5 KB a record) filled its memory until it paused, or was restarted."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

import agent_inspect as ai
from agent_inspect.agents import AsRecordedAgent
from agent_inspect.agents._recorded import _BY_LOG
from agent_inspect.fleet import ScanOptions, key_frame, scan_window


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    """Freed means freed by reference counts: a reference cycle holding a log fails the test (as the objects a
    scan makes under gc_paused, which the cyclic GC rarely gets to)."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_the_as_recorded_agent_cache_does_not_keep_its_log(no_cyclic_gc: None) -> None:
    log = ai.load(ai.samples.path("production"))
    agent = AsRecordedAgent.of(log)
    assert AsRecordedAgent.of(log) is agent     # still one agent per log
    before = len(_BY_LOG)
    gone = weakref.ref(log)
    del log, agent
    assert gone() is None
    assert len(_BY_LOG) == before - 1


def test_key_frame_keeps_no_log(no_cyclic_gc: None) -> None:
    log = ai.load(ai.samples.path("production"))
    key_frame(log, rules=("original", "fixed"))
    gone = weakref.ref(log)
    del log
    assert gone() is None


def test_predict_keeps_no_log(no_cyclic_gc: None) -> None:
    log = ai.load(ai.samples.path("production"))
    assert len(ai.predict(log).tasks)
    gone = weakref.ref(log)
    del log
    assert gone() is None


def test_a_window_scanned_leaves_no_log_behind(tmp_path, monkeypatch, no_cyclic_gc: None) -> None:  # type: ignore[no-untyped-def]
    path = ai.samples.write_fleet(tmp_path / "fleet.parquet", 40, partitions=2)
    plan = ai.fleet.plan_scan(str(path))
    kept: list[weakref.ref] = []
    real = ai.log.read_window

    def read_window(*args, **kwargs):  # type: ignore[no-untyped-def]
        log = real(*args, **kwargs)
        kept.append(weakref.ref(log))
        return log

    monkeypatch.setattr(ai.log, "read_window", read_window)   # scan_window imports it when called
    results = [scan_window(plan.spec, w, ScanOptions()) for w in plan.windows]
    assert kept and all(len(r.keys) for r in results)
    assert [ref() for ref in kept] == [None] * len(kept)
