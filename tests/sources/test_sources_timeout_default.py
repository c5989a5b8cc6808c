"""``timeout=None`` is every reader's default and means 10 s, so a caller holding an optional timeout (the CLI's
``--timeout``, a diff side's) passes it straight through instead of leaving the keyword out when it is None."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.log import _load
from agent_inspect.sources import _checkpoint

READERS: list[Callable[..., Any]] = [
    ai.load_kafka, ai.load_fluss, ai.log.plan_windows, ai.log.follow, ai.tail, ai.scan, ai.fleet.plan_scan,
    ai.sources.open_kafka, ai.sources.open_kafka_tail, ai.sources.read_fluss, ai.sources.plan_fluss,
    ai.sources.read_fluss_bucket, ai.sources.open_checkpoint, ai.checkpoint.read, ai.checkpoint.read_markers_text,
]


class _Reached(Exception):
    """Raised where the lowest layer is reached, with the timeout it was given."""


@pytest.mark.parametrize("reader", READERS, ids=lambda f: f"{f.__module__}.{f.__qualname__}")
def test_every_reader_defaults_to_none(reader: Callable[..., Any]) -> None:
    assert inspect.signature(reader).parameters["timeout"].default is None


def test_none_resolves_to_ten_seconds_and_a_given_timeout_stays() -> None:
    assert ai.sources.resolve_timeout(None) == 10.0
    assert ai.sources.resolve_timeout(2.5) == 2.5


def _capture(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def reached(*args: Any, timeout: Any, **options: Any) -> Any:
        seen["timeout"] = timeout
        raise _Reached

    monkeypatch.setattr(module, name, reached)
    return seen


@pytest.mark.parametrize("url, reader", [("kafka://127.0.0.1:1/t", "open_kafka"),
                                         ("fluss://127.0.0.1:1/db.t", "read_fluss")])
@pytest.mark.parametrize("given", [{}, {"timeout": None}])
def test_load_with_timeout_none_waits_ten_seconds(url: str, reader: str, given: dict[str, Any],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, _load, reader)
    with pytest.raises(_Reached):
        ai.load(url, progress=False, **given)
    assert seen["timeout"] == 10.0


@pytest.mark.parametrize("read", [ai.checkpoint.read, ai.checkpoint.read_markers_text])
def test_a_checkpoint_read_with_timeout_none_waits_ten_seconds(read: Callable[..., Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []

    def reached(url: str, checkpoint: int | None, timeout: float) -> Any:
        calls.append(timeout)
        raise _Reached

    monkeypatch.setattr(_checkpoint, "_open_fsspec", reached)
    for given in ({}, {"timeout": None}):
        with pytest.raises(_Reached):
            read("ftp://127.0.0.1:1/checkpoints", **given)
    assert calls == [10.0, 10.0]


def test_a_local_checkpoint_reads_alike_with_timeout_none() -> None:
    path = ai.samples.checkpoint("production")
    assert ai.checkpoint.read(path, timeout=None).markers == ai.checkpoint.read(path).markers
