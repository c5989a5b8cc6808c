"""The matrix sweep: one history for each shape the bundled cases know, judged by every ``check`` beside its
random histories, so a check with its defaults goes through every case of the matrix, however few random
histories it draws (random draws reach a given one of 41 case agents and six call shapes only now and then)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from agent_inspect.checker._generate import case_agents

__all__ = ["SweepShape", "sweep", "CALL_OPTIONS", "CALL_SHAPE_SEEDS"]

CALL_OPTIONS: Mapping[str, Any] = {
    "call_shapes": 1.0, "durable_calls": 1.0, "case_agents": 0.0, "keys": 1, "rounds": 3, "fanout": 1,
    "subagents": 0.0, "checkpoints": 0.3, "changed_calls": 0.5, "legacy_values": 0.5, "key_format": "K2",
    "runtimes": ("0.3",)}
"""History options under which a recovery resumes many bodies with durable calls: every call case's journal
decisions occur (one key, short rounds, 0.3 with V1 values at times, K2 keys so Java actions keep their records)."""

CALL_SHAPE_SEEDS: Mapping[str, int] = {"D01": 151, "D02": 27, "D03": 8, "D04": 9, "D05": 12, "D06": 115}
"""For each call case, the first seed whose history under :data:`CALL_OPTIONS` goes through it (``call_shapes``;
tests/checker holds them to that)."""


class SweepShape(NamedTuple):
    """One history of the sweep: the case it shows, and the seed and options that generate it.

    For example::

        shape = next(s for s in ai.checker.sweep() if s.case == "D04")
        ai.checker.generate_history(shape.seed, shape.options).value_format   # 'V1': 0.2's values, D04
    """

    case: str
    seed: int
    options: Mapping[str, Any]


def sweep() -> tuple[SweepShape, ...]:
    """The sweep's histories: each bundled case with an agent runs as a case agent (seed 1), each call case
    D01–D06 is the history of its seed under :data:`CALL_OPTIONS`.

    For example::

        shapes = ai.checker.sweep()
        len(shapes), sorted(s.case for s in shapes)[:3]         # every bundled case: 47, ['D01', 'D02', 'D03']
    """
    agents = tuple(SweepShape(c.id, 1, {"case_agents": 1.0, "case_ids": (c.id,)}) for c in case_agents())
    calls = tuple(SweepShape(case, seed, CALL_OPTIONS) for case, seed in CALL_SHAPE_SEEDS.items())
    return agents + calls
