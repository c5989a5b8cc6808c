"""A fleet-sized synthetic action-state topic: many keys over many partitions, generated at any size.

Every key runs rounds of a three-action agent (``plan`` → ``call_tool`` with a durable call →
``answer``); every ``branch_every``-th key was restored once with a different input at seq 1 (a
branch change: conflicting roots at one round, what #1301's fix must still protect), so the rules disagree
on it. The records are built with the codec exactly as upstream writes them (K1.5 keys, V3 values) and placed by
the upstream partitioner. Deterministic for a seed.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_inspect.raw import RawBatch

from agent_inspect.codec import (
    ActionState,
    CallResult,
    Event,
    MemoryUpdate,
    encode_action_state,
    event_uuid,
    format_state_key,
    java_string_hash,
    kafka_partition,
    key_group,
    python_action_uuid,
)

__all__ = ["fleet_records", "fleet_batches", "write_fleet"]

_ACTIONS = (("plan", "_input_event"), ("call_tool", "tool_request"), ("answer", "tool_result"))
_UUIDS = {name: python_action_uuid(name, "fleet_agent.actions", name, [trigger]) for name, trigger in _ACTIONS}
_WORDS = ("refund", "order", "shipping", "invoice", "customer", "delay", "policy", "agent", "tool", "weather")


def fleet_records(keys: int = 200, *, rounds: int = 3, branch_every: int = 10, seed: int = 0,
                  payload_words: int = 12) -> Iterator[tuple[str, bytes]]:
    """``(state key, value)`` pairs in write order: per key, ``rounds`` rounds, 6 records each.

    For example::

        state_key, value = next(ai.samples.fleet_records(10))   # (state key, value bytes) in write order
    """
    rng = random.Random(seed)

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    for k in range(keys):
        text = f"customer-{k:06d}"
        for seq in range(rounds):
            yield from _round(rng, text, seq, new_id, payload_words)
        if branch_every and k % branch_every == 0 and rounds > 1:
            # the restore re-ran seq 1 with a different input: a second root at (k, 1)
            yield from _round(rng, text, 1, new_id, payload_words, only_root=True)


def _round(rng: random.Random, text: str, seq: int, new_id: Any, words: int,
           only_root: bool = False) -> Iterator[tuple[str, bytes]]:
    prompt = " ".join(rng.choice(_WORDS) for _ in range(words))
    root = Event.new("_input_event", {"input": prompt, "n": rng.randint(0, 10**6)}, id=new_id())
    task = root
    for action, _trigger in _ACTIONS[:1] if only_root else _ACTIONS:
        key = format_state_key("K1.5", seq=seq, event_uuid=event_uuid(task.attributes), action_uuid=_UUIDS[action],
                               key_text=text, key_group=key_group(java_string_hash(text)))
        nxt = {"plan": "tool_request", "call_tool": "tool_result", "answer": "_output_event"}[action]
        out = Event.new(nxt, {"tool": rng.choice(_WORDS), "q": rng.choice(_WORDS)}, id=new_id(),
                        upstream_event_id=task.id, upstream_action_name=action)
        calls: tuple[CallResult, ...] = ()
        if action == "call_tool":
            calls = (CallResult(function_id=f"tools.{rng.choice(_WORDS)}", args_digest=f"{rng.getrandbits(64):016x}",
                                result_payload="gAR9lC4=", status="SUCCEEDED"),)
        # the call is journaled before the action completes; completing clears the call results (spec §9.4)
        yield key, encode_action_state(ActionState(task_event=task, call_results=calls))
        yield key, encode_action_state(ActionState(
            task_event=task, output_events=(out,), completed=True,
            short_term_memory_updates=(MemoryUpdate.new(f"{action}.last", kryo_payload=bytes([seq % 256]) * 8),)))
        task = out


def fleet_batches(keys: int = 200, *, partitions: int = 8, **options: Any) -> dict[int, RawBatch]:
    """The records placed by the upstream partitioner: ``{partition: RawBatch}`` with offsets from 0.

    For example::

        batches = ai.samples.fleet_batches(20, partitions=2)   # {partition: RawBatch}, offsets from 0
        {p: len(b.offset) for p, b in batches.items()}
    """
    from agent_inspect.sources import RawBatch

    out: dict[int, RawBatch] = {p: RawBatch() for p in range(partitions)}
    for key, value in fleet_records(keys, **options):
        p = kafka_partition(key, partitions)
        b = out[p]
        b.append(p, len(b), None, key.encode(), value)
    return out


def write_fleet(path: str | os.PathLike[str], keys: int = 200, *, partitions: int = 8, **options: Any) -> Path:
    """Write a fleet as one Parquet dump (exact bytes, all partitions) and return its path.

    For example::

        path = ai.samples.write_fleet("fleet.parquet", 50, partitions=4)   # one Parquet dump
        ai.load(path).records["partition"].value_counts()   # or ai.scan(path) on Dask
    """
    from agent_inspect.log import ActionStateLog
    from agent_inspect.sources import RawBatch, SourceInfo, write_parquet

    batches = fleet_batches(keys, partitions=partitions, **options)
    raw = RawBatch()
    for p in sorted(batches):
        b = batches[p]
        raw.partition += b.partition
        raw.offset += b.offset
        raw.timestamp_ms += b.timestamp_ms
        raw.key += b.key
        raw.value += b.value
    info = SourceInfo(kind="kafka", location=f"kafka://fleet/{Path(path).stem}", topic=Path(path).stem,
                      start_offsets={p: 0 for p in batches}, end_offsets={p: len(b) for p, b in batches.items()})
    return write_parquet(ActionStateLog.from_raw([raw], info), path)
