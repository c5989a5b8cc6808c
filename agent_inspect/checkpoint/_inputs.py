"""A checkpoint's buffered inputs (``pendingInputEvents``), decoded, and where they go in the replay plan.

Upstream buffers an input that arrives for a key while one of its rounds is in flight; when the round's last task
finishes, the operator takes the first buffered input and runs it as the key's next round (it gets the next
seqNum then). The source committed those inputs with the checkpoint, so after a restore they come from the
buffer, in its order, after the key's pending tasks, with the event ids they arrived with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent_inspect._glossary import plural
from agent_inspect.checkpoint._tasks import event_of
from agent_inspect.codec import StateValue

if TYPE_CHECKING:
    from agent_inspect.agents import AgentEvent
    from agent_inspect.recovery import ReplayInput

__all__ = ["decoded_inputs", "inputs_from_checkpoint"]


def decoded_inputs(input_events: Mapping[str, tuple[StateValue, ...]],
                   counts: Mapping[str, int | None]) -> dict[str, tuple[AgentEvent, ...]]:
    """Per key, its buffered input events where every element of its ``pendingInputEvents`` list was decoded as
    an upstream ``Event`` (keys with any element not decoded, or not all of it read, are left out)."""
    out: dict[str, tuple[AgentEvent, ...]] = {}
    for key, values in input_events.items():
        if not values or counts.get(key) != len(values) or not all(v.decoded for v in values):
            continue
        events = [event_of(v.value) for v in values]
        if all(e is not None for e in events):
            out[key] = tuple(e for e in events if e is not None)
    return out


def inputs_from_checkpoint(log_inputs: tuple[ReplayInput, ...], buffered: Mapping[str, tuple[AgentEvent, ...]],
                           undecoded: Mapping[str, str], checkpoint_id: int) -> tuple[tuple[ReplayInput, ...],
                                                                                      list[str]]:
    """The plan's inputs with each key's buffered events as its next inputs, in the buffer's order.

    A buffered event is matched to the first of its key's inputs in ``log_inputs`` with the same type and
    attributes, whose place it takes (keeping its event id); the key's other log inputs follow it. The key's
    inputs stay in the slots the log gave them (more buffered events than slots: the extra ones join the key's
    first slot; a key the log has no input for: the front, as the buffer holds them at the restore).
    ``undecoded``: per key whose buffer was not decoded, why (its inputs stay the log's). One note per key.
    """
    from agent_inspect.recovery import ReplayInput

    slots: dict[str, list[int]] = {}
    for i, item in enumerate(log_inputs):
        slots.setdefault(item.key, []).append(i)
    placed: dict[int, list[ReplayInput]] = {i: [item] for i, item in enumerate(log_inputs)}
    front: list[ReplayInput] = []
    notes: list[str] = []
    where = f"checkpoint {checkpoint_id}'s pendingInputEvents"
    for key, events in buffered.items():
        positions = slots.get(key, [])
        logged = [log_inputs[i] for i in positions]
        taken: list[int] = []
        missing: list[AgentEvent] = []
        for event in events:
            found = next((n for n, item in enumerate(logged) if n not in taken and item.event.type == event.type
                          and item.event.attributes == event.attributes), None)
            if found is None:
                missing.append(event)
            else:
                taken.append(found)
        order = [ReplayInput(key, event) for event in events] + [
            item for n, item in enumerate(logged) if n not in taken]
        if not positions:
            front.extend(order)
        else:
            extra = len(order) - len(positions)
            placed[positions[0]] = order[:1 + extra]
            for slot, item in zip(positions[1:], order[1 + extra:]):
                placed[slot] = [item]
        notes.append(f"{key}: {plural(len(events), 'buffered input')} from {where}, next after its pending tasks"
                     f"{_said(taken, missing)}")
    for key, why in undecoded.items():
        notes.append(f"{key}: its buffered inputs from the log ({where} not decoded: {why})")
    return (*front, *(item for i in range(len(log_inputs)) for item in placed[i])), notes


def _said(taken: list[int], missing: list[AgentEvent]) -> str:
    said = []
    if missing:
        said.append("not in the log's inputs: " + ", ".join(f"{e.type} {e.id} {e.attributes}" for e in missing))
    if taken != list(range(len(taken))):
        said.append("the log has them after other inputs of the key; the buffer's order is taken")
    if not said:
        return ", as the log shows them" if taken else ""
    return " (" + "; ".join(said) + ")"
