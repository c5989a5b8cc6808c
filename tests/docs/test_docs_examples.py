"""Every public name shows a short example in its reference entry, and every example runs as written.

The public surface is ``agent_inspect.__all__`` and each public subpackage's ``__all__``; an object exported
from several packages is one entry (its docstring is written once). Examples are the literal blocks after
``For example::``; each runs in a fresh namespace holding what the API reference index says every example may
assume (the ``example_globals`` fixture): ``ai``, the production sample ``log`` (loaded once for the whole file)
and its ``markers``, in a scratch directory where ``sample_logs/``, ``cases/`` and ``tests/fixtures/`` resolve as
in a checkout.

An example must also show something: under :mod:`tests.support.example_probe` a ``for`` loop whose body never
runs, or a shown value that is None or empty, fails it, unless ``SHOWS_NOTHING_ON_PURPOSE`` lists that finding.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from tests.support.docs_site import REPO
from tests.support.example_probe import run_example

MARK = "For example::"

# Examples that need a live service (a Kafka broker, a Fluss cluster, an OTLP endpoint) or an IPython shell:
# compiled, never run here (the guides' Kafka code runs against the tansu broker: tests/docs/test_docs_code_blocks.py).
NOT_RUN_HERE = {
    "agent_inspect.configure",
    "agent_inspect.load_fluss",
    "agent_inspect.load_kafka",
    "agent_inspect.log.follow",
    "agent_inspect.sources.KafkaTail",
    "agent_inspect.sources.export_spans",
    "agent_inspect.sources.open_kafka",
    "agent_inspect.sources.open_kafka_tail",
    "agent_inspect.sources.plan_fluss",
    "agent_inspect.sources.read_fluss",
    "agent_inspect.sources.read_fluss_bucket",
    "agent_inspect.sources.read_partitions",
    "agent_inspect.tail",
}


# Findings of the probe that are the example's point: the value it shows *is* None or empty, as its comment
# says. Each entry is one exact finding (expression, line, what it showed), never a whole example.
SHOWS_NOTHING_ON_PURPOSE = {
    # the answer for a name with no router / no traced entity / a key the strict parser rejects is None
    "agent_inspect.codec.call_router": {"ai.codec.call_router('chat') (line 1) is None"},
    "agent_inspect.trace.call_entity": {"ai.trace.call_entity('my_helper') (line 2) is None"},
    "agent_inspect.store.strict_k1_seq": {"ai.store.strict_k1_seq('user_1_3_e2f0_9b1c') (line 2) is None"},
    # no markers at all means a fresh start, which normalize_markers says with None
    "agent_inspect.recovery.normalize_markers": {"ai.recovery.normalize_markers([]) (line 2) is None"},
    # a fresh start reads nothing: {} is what tells it from the whole log (None)
    "agent_inspect.recovery.rebuild_start": {"ai.recovery.rebuild_start([]) (line 3) is an empty dict"},
    # a rule that never failed has no broken hook to report
    "agent_inspect.rules.GuardedRule": {"guarded.broken (line 3) is None"},
    # an engine run that ends without a failure returns None; the example shows the bodies it re-ran beside it
    "agent_inspect.recovery.engine.Engine": {"run.run() (line 14) is None"},
    # a new EngineState is empty by definition: the example shows what one pass starts from
    "agent_inspect.recovery.engine.EngineState": {"state.seq_of (line 2) is an empty dict",
                                                  "state.failure (line 2) is None"},
    # the bundled traces are single files named for their sample, and every line of them parses
    "agent_inspect.sources.TraceFile": {"files[0].job_id (line 2) is None", "files[0].subtask_id (line 2) is None"},
    "agent_inspect.sources.TraceItem": {"items[0].error (line 2) is None"},
}


def _package_names() -> list[str]:
    """The public packages, and the engine's public seams (``agent_inspect.recovery.engine``)."""
    packages = ["agent_inspect", *(f"agent_inspect.{name}" for name in ai._SUBMODULES)]
    return [*packages, "agent_inspect.recovery.engine"]


def _kind(obj: object) -> str:
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "exception"
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return "api"
    return "constant"


def public_entries() -> dict[str, object]:
    """``package.name`` -> object, each function or class once (under the first package exporting it)."""
    entries: dict[str, object] = {}
    seen: set[tuple[str, str]] = set()
    for package in _package_names():
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            if _kind(obj) != "constant":
                identity = (obj.__module__, obj.__qualname__)  # type: ignore[attr-defined]
                if identity in seen:
                    continue
                seen.add(identity)
            entries[f"{package}.{name}"] = obj
    return entries


ENTRIES = public_entries()


def examples(obj: object) -> list[str]:
    """The literal blocks after ``For example::`` in an object's docstring, dedented."""
    lines = (inspect.getdoc(obj) or "").splitlines()
    blocks: list[str] = []
    for i, line in enumerate(lines):
        if line.strip() != MARK:
            continue
        indent = len(line) - len(line.lstrip())
        block: list[str] = []
        for follower in lines[i + 1:]:
            if follower.strip() and len(follower) - len(follower.lstrip()) <= indent:
                break
            block.append(follower)
        blocks.append(inspect.cleandoc("\n".join(block)))
    return blocks


@pytest.fixture(scope="module")
def griffe_root() -> Any:
    import griffe

    return griffe.load("agent_inspect", search_paths=[str(REPO)], resolve_aliases=True, resolve_external=False)


def _constant_docstring(root: Any, dotted: str) -> str:
    member = root[dotted.removeprefix("agent_inspect.")]
    return member.docstring.value if member.docstring else ""


def _lacks(root: Any, dotted: str, obj: object) -> bool:
    kind = _kind(obj)
    if kind == "exception":
        return not (obj.__doc__ or "").strip()     # exempt from an example: its docstring says when it is raised
    if kind == "constant":
        return not _constant_docstring(root, dotted).strip()
    return not examples(obj)


def test_every_public_name_has_an_example(griffe_root: Any) -> None:
    """Functions and classes show an example; exception classes say when they are raised and constants what they
    are (an attribute docstring, which the reference renders) instead."""
    assert len(ENTRIES) > 350
    lacking = sorted(dotted for dotted, obj in ENTRIES.items() if _lacks(griffe_root, dotted, obj))
    assert lacking == [], "public names without an example (or, for a constant, a docstring)"


@pytest.fixture(scope="module")
def example_globals(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """What every example may assume, as the API reference index says; run in a scratch working directory."""
    scratch = tmp_path_factory.mktemp("examples")
    for name in ("sample_logs", "cases", "tests"):     # tests/fixtures/checkpoints: the samples' checkpoints
        (scratch / name).symlink_to(REPO / name, target_is_directory=True)
    before = Path.cwd()
    os.chdir(scratch)
    try:
        yield {"ai": ai, "log": ai.load(ai.samples.path("production")), "markers": ai.samples.markers("production")}
    finally:
        os.chdir(before)


RUNNABLE = sorted(dotted for dotted, obj in ENTRIES.items() if examples(obj))


@pytest.mark.parametrize("dotted", RUNNABLE)
def test_the_example_runs_and_shows_something(dotted: str, example_globals: dict[str, object]) -> None:
    nothing: list[str] = []
    for number, block in enumerate(examples(ENTRIES[dotted])):
        name = f"<example {number} of {dotted}>"
        compile(block, name, "exec")
        if dotted not in NOT_RUN_HERE:
            nothing += run_example(block, name, dict(example_globals))
    unexpected = sorted(set(nothing) - SHOWS_NOTHING_ON_PURPOSE.get(dotted, set()))
    assert unexpected == [], "the example shows nothing here: make it show something real on a bundled sample"


def test_the_service_list_is_narrow() -> None:
    assert NOT_RUN_HERE <= set(RUNNABLE)


def test_the_allow_list_is_narrow_and_current(example_globals: dict[str, object]) -> None:
    """Every allowed finding still happens (a stale entry would hide a regression)."""
    assert set(SHOWS_NOTHING_ON_PURPOSE) <= set(RUNNABLE) - NOT_RUN_HERE and len(SHOWS_NOTHING_ON_PURPOSE) <= 12
    for dotted, allowed in SHOWS_NOTHING_ON_PURPOSE.items():
        found = {f for n, block in enumerate(examples(ENTRIES[dotted])) for f in run_example(block, dotted, dict(example_globals))}
        assert allowed <= found, dotted
