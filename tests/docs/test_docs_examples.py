"""Every public name shows a short example in its reference entry, and every example runs as written.

The public surface is ``agent_inspect.__all__`` and each public subpackage's ``__all__``; an object exported
from several packages is one entry (its docstring is written once). Examples are the literal blocks after
``For example::``; each runs in a fresh namespace holding what the API reference says every example may
assume (``EXAMPLE_GLOBALS``): ``ai``, the production sample ``log`` (loaded once for the whole file) and its
``markers``, in a scratch directory where ``sample_logs/``, ``cases/`` and ``tests/fixtures/`` resolve as in a checkout.
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

MARK = "For example::"

# Examples that need a live service (a Kafka broker, a Fluss cluster, an OTLP endpoint) or an IPython shell:
# compiled, never run here (the guides run the Kafka ones against the tansu broker, tests/docs/test_docs_code_blocks.py).
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

# The ratchet: public names still without an example (functions and classes) or, for constants, without a
# docstring saying what they are. It fails when a listed name gains one (take it off) or a new name lacks one.
LACKING: set[str] = {
    "agent_inspect.agents.BEGIN_EVENT",
    "agent_inspect.agents.INPUT_EVENT",
    "agent_inspect.agents.OUTPUT_EVENT",
    "agent_inspect.agents.SUBAGENT_EVENT",
    "agent_inspect.agents.Step",
    "agent_inspect.cases.CALL_RULE",
    "agent_inspect.cases.COLUMN_MEANINGS",
    "agent_inspect.cases.OUTCOMES",
    "agent_inspect.checker.FAILURE_KINDS",
    "agent_inspect.checker.KNOWN_LIMITS",
    "agent_inspect.checkpoint.MARKER_STATE",
    "agent_inspect.codec.CALL_MATCHING",
    "agent_inspect.codec.GENERIC_EVENT",
    "agent_inspect.codec.KEY_FORMATS",
    "agent_inspect.codec.KRYO2",
    "agent_inspect.codec.KRYO5",
    "agent_inspect.codec.PYTHON_EVENT",
    "agent_inspect.codec.SUBAGENT_EVENT",
    "agent_inspect.codec.VALUE_FORMATS",
    "agent_inspect.codec.read_keyed_state",
    "agent_inspect.codec.read_kryo_object",
    "agent_inspect.diffing.CAUSE_KINDS",
    "agent_inspect.diffing.FIRST_COLUMNS",
    "agent_inspect.diffing.PAIR_COLUMNS",
    "agent_inspect.diffing.PASSES",
    "agent_inspect.diffing.SELECTORS",
    "agent_inspect.diffing.STATUSES",
    "agent_inspect.fleet.CALLS_PREFIX",
    "agent_inspect.fleet.KEY_COLUMNS",
    "agent_inspect.fleet.RULE_COLUMNS",
    "agent_inspect.fleet.RUNTIMES",
    "agent_inspect.history.ATTEMPT_REASONS",
    "agent_inspect.history.MAX_CHILDREN",
    "agent_inspect.history.REMOVED_STATUSES",
    "agent_inspect.log.COLUMNS",
    "agent_inspect.log.RUNTIMES",
    "agent_inspect.log.SUMMARY_LABELS",
    "agent_inspect.log.TailWindow",
    "agent_inspect.markers.CONFIDENCE_MEANS",
    "agent_inspect.markers.MARKER_SOURCES",
    "agent_inspect.otel.CALL_OPERATIONS",
    "agent_inspect.otel.RESOURCE",
    "agent_inspect.recovery.CallMatching",
    "agent_inspect.recovery.IMPACT_ORDER",
    "agent_inspect.recovery.LINTS",
    "agent_inspect.recovery.Markers",
    "agent_inspect.recovery.NOT_DISPATCHED",
    "agent_inspect.recovery.SETTING_NAMES",
    "agent_inspect.recovery.STATUSES",
    "agent_inspect.recovery.STORE_FLAVOURS",
    "agent_inspect.rules.FLAVOURS",
    "agent_inspect.rules.RULES",
    "agent_inspect.samples.FORMATS",
    "agent_inspect.samples.INCONSISTENT",
    "agent_inspect.samples.SAMPLES",
    "agent_inspect.samples.TRACE_RULE",
    "agent_inspect.store.DIVERGENCE_KINDS",
    "agent_inspect.store.KAFKA_PENDING",
    "agent_inspect.store.RUNTIME_NAMES",
    "agent_inspect.trace.CANDIDATE_RULES",
    "agent_inspect.trace.CAUSES",
    "agent_inspect.trace.CONFIDENCES",
    "agent_inspect.trace.ENTITY_TYPES",
    "agent_inspect.trace.JOIN_METHODS",
    "agent_inspect.trace.OBSERVED",
    "agent_inspect.trace.PROBLEM_CATEGORIES",
    "agent_inspect.trace.STATUSES",
    "agent_inspect.trace.STORE_FLAVOURS",
    "agent_inspect.trace.TOKEN_ATTRIBUTES",
    "agent_inspect.trace.TRUNCATION_WRAPPERS",
    "agent_inspect.trace.UNDETERMINED_CAUSES",
    "agent_inspect.widgets.PALETTE",
}


def _package_names() -> list[str]:
    return ["agent_inspect", *(f"agent_inspect.{name}" for name in ai._SUBMODULES)]


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


def test_every_public_name_has_an_example_or_is_listed(griffe_root: Any) -> None:
    assert len(ENTRIES) > 350
    lacking = {dotted for dotted, obj in ENTRIES.items() if _lacks(griffe_root, dotted, obj)}
    assert sorted(lacking - LACKING) == [], "new public names without an example (or a constant's docstring)"
    assert sorted(LACKING - lacking) == [], "these have one now: take them off LACKING"


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
def test_the_example_runs(dotted: str, example_globals: dict[str, object]) -> None:
    for number, block in enumerate(examples(ENTRIES[dotted])):
        code = compile(block, f"<example {number} of {dotted}>", "exec")
        if dotted not in NOT_RUN_HERE:
            exec(code, dict(example_globals))


def test_the_service_list_is_narrow() -> None:
    assert NOT_RUN_HERE <= set(RUNNABLE)
