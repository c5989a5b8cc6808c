"""Real action-state logs for the widget tests, written the way upstream writes them.

Keys via ``format_state_key``, values via ``encode_action_state``, identities via ``event_uuid`` and
``name_action_uuid``, then ``ActionStateLog.from_raw`` — the path production data takes.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import msgspec

from agent_inspect.codec import (
    ActionState,
    CallResult,
    Event,
    MemoryUpdate,
    encode_action_state,
    event_uuid,
    format_state_key,
    java_string_hash,
    key_group,
    name_action_uuid,
)
from agent_inspect.log import ActionStateLog
from agent_inspect.raw import RawBatch, SourceInfo

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert('xss')</script>"
PROBES = (IMG, SCRIPT)


@dataclass
class Journal:
    """Collects upstream-style writes (one record per write) into a one-partition raw batch."""

    key_format: str = "K1.5"
    batch: RawBatch = field(default_factory=RawBatch)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def new_id(self) -> str:
        return str(uuid.UUID(int=next(self._ids), version=4))

    def write(self, key: str, seq: int, action: str, event: Event, *, completed: bool = False,
              outputs: tuple[Event, ...] = (), calls: tuple[CallResult, ...] = (),
              memory: tuple[MemoryUpdate, ...] = (), value_format: str = "V3") -> None:
        attributes = msgspec.json.decode(bytes(event.attributes))
        state_key = format_state_key(
            self.key_format, seq=seq, event_uuid=event_uuid(attributes), action_uuid=name_action_uuid(action),
            key_text=key, key_group=key_group(java_string_hash(key)))
        state = ActionState(task_event=event, completed=completed, output_events=outputs, call_results=calls,
                            short_term_memory_updates=memory)
        offset = len(self.batch)
        self.batch.append(0, offset, 1_700_000_000_000 + offset, state_key.encode(),
                          encode_action_state(state, value_format=value_format))

    def execution(self, key: str, seq: int, action: str, event: Event, *, outputs: tuple[Event, ...] = (),
                  calls: tuple[CallResult, ...] = (), memory: tuple[MemoryUpdate, ...] = (),
                  complete: bool = True) -> None:
        """The record lifecycle of one action execution (spec §5.6): initial, one per call, completed."""
        self.write(key, seq, action, event)
        for i in range(len(calls)):
            self.write(key, seq, action, event, calls=calls[: i + 1])
        if complete:
            self.write(key, seq, action, event, completed=True, outputs=outputs, memory=memory)

    def log(self) -> ActionStateLog:
        source = SourceInfo(kind="file", location="memory://widgets-test", topic="action-state",
                            start_offsets={0: 0}, end_offsets={0: len(self.batch)}, file_format="jsonl")
        return ActionStateLog.from_raw([self.batch], source)


def event(journal: Journal, type_: str, attributes: dict, *, upstream: Event | None = None,
          upstream_action: str | None = None) -> Event:
    return Event.new(type_, attributes, id=journal.new_id(),
                     upstream_event_id=None if upstream is None else upstream.id, upstream_action_name=upstream_action)


def round_(journal: Journal, key: str, seq: int, attributes: dict, *, probe: str = IMG,
           complete_child: bool = True) -> None:
    """One input round: root action ``plan`` emits a work event, action ``act`` handles it with a tool call."""
    root = event(journal, "_input_event", attributes)
    # one root action for every key, as in a real agent (the one _widget_agents declares)
    work = event(journal, f"Work{probe}", {"task": f"do {probe}", "seq": seq}, upstream=root,
                 upstream_action=f"plan{SCRIPT}")
    journal.execution(key, seq, f"plan{SCRIPT}", root, outputs=(work,))
    out = event(journal, "_output_event", {"output": f"done {probe}"}, upstream=work, upstream_action="act")
    call = CallResult(function_id=f"tool{probe}", args_digest="d1", result_payload="eyJvayI6IHRydWV9",
                      status="SUCCEEDED")
    journal.execution(key, seq, "act", work, outputs=(out,), calls=(call,),
                      memory=(MemoryUpdate.new(f"notes.{probe}", kryo_payload=b"\x01\x02"),),
                      complete=complete_child)


def probe_history(key_format: str = "K1.5") -> Journal:
    """Two keys whose texts, event types, attributes, memory paths and function ids carry script probes.

    Key 1 has a branch change: attempt 1 runs A at seq 0 and seq 1 (the last child left incomplete),
    attempt 2 restores and runs a different input B at seq 0 (a root conflict under the fixed rule).
    """
    j = Journal(key_format=key_format)
    k1, k2 = f"user-{IMG}", f"acct-{SCRIPT}"
    round_(j, k1, 0, {"input": f"A {SCRIPT}"})
    round_(j, k2, 0, {"input": f"hello {IMG}"}, probe=SCRIPT)
    round_(j, k1, 1, {"input": "A2"}, complete_child=False)
    round_(j, k2, 1, {"input": "again"}, probe=SCRIPT)
    round_(j, k1, 0, {"input": f"B {IMG}"})
    round_(j, k1, 1, {"input": "B2"})
    return j


def probe_case(directory: Any, case_id: str = "G01", key: str = f"k{IMG}") -> Any:
    """Case ``case_id`` of ``cases/`` built with a script probe as its key label ``k`` (written to ``directory``)."""
    from pathlib import Path

    from agent_inspect.cases import build_case, load_cases

    cases = Path(__file__).resolve().parents[2] / "cases"
    text = (cases / f"{case_id}.toml").read_text().replace('key = "k"', f'key = "{key}"').replace('"k:', f'"{key}:')
    path = Path(directory) / f"{case_id}-probe.toml"
    path.write_text(text)
    return build_case(load_cases([path])[0])
