"""The pending ``ActionTask``s of a checkpoint, decoded, and the replay plan's pending tasks taken from them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_inspect._glossary import plural
from agent_inspect.agents import AgentEvent
from agent_inspect.codec import KryoObject, StateValue

if TYPE_CHECKING:
    from agent_inspect.checkpoint._read import KeyedRestore
    from agent_inspect.recovery import PendingTask

__all__ = ["CheckpointTask", "decoded_tasks", "event_of", "pending_from_checkpoint"]

_TASK_FIELDS = frozenset({"action", "event", "key", "observationId", "traceContext", "executionStartedEventEmitted"})


@dataclass(frozen=True)
class CheckpointTask:
    """One pending ``ActionTask`` of a key's ``actionTasks`` state, decoded.

    ``action``: the action's name; ``event``: the event it runs on (type, attributes, id, Java class, lineage);
    ``seq``: the key's ``messageSequenceNumber`` (upstream's task carries no seqNum: a key runs one input at a
    time, so its tasks belong to that round); ``task_class``: ``PythonActionTask``, ``JavaActionTask`` or
    ``PythonGeneratorActionTask`` (a suspended Python continuation), fully named; ``function``:
    ``module:qualName`` (Python) or ``Class#method`` (Java); ``observation_id`` / ``execution_id``: the ids the
    task keeps across the restore; ``started``: its started event was already emitted.

    For example::

        chk = ai.checkpoint.read("tests/fixtures/checkpoints/production/savepoint")
        task = chk.keyed.tasks["user-0009"][0]
        task.action, task.event.type, task.event.id, task.event.attributes
    """

    key: str
    seq: int | None
    action: str
    event: AgentEvent
    task_class: str
    function: str | None = None
    observation_id: str | None = None
    execution_id: str | None = None
    started: bool = False

    def pending(self) -> PendingTask:
        """The task as a :class:`~agent_inspect.recovery.PendingTask` of a replay plan."""
        from agent_inspect.recovery import PendingTask

        return PendingTask(self.key, -1 if self.seq is None else self.seq, self.action, self.event)


def event_of(value: object) -> AgentEvent | None:
    """The :class:`AgentEvent` of a decoded upstream ``Event`` (any subclass), else None."""
    if not isinstance(value, KryoObject) or not isinstance(value.fields.get("type"), str):
        return None
    f = value.fields
    attributes = f.get("attributes")
    return AgentEvent(f["type"], attributes if isinstance(attributes, dict) else {}, _text(f.get("id")),
                      value.type_name, _text(f.get("upstreamEventId")), _text(f.get("upstreamActionName")))


def _task(key: str, seq: int | None, value: object) -> CheckpointTask | None:
    if not isinstance(value, KryoObject) or not _TASK_FIELDS <= value.fields.keys():
        return None
    f = value.fields
    action, event, trace = f["action"], event_of(f["event"]), f["traceContext"]
    if not isinstance(action, KryoObject) or not isinstance(action.fields.get("name"), str) or event is None:
        return None
    return CheckpointTask(key, seq, action.fields["name"], event, value.type_name, _function(action.fields.get("exec")),
                          _text(f["observationId"]),
                          _text(trace.fields.get("executionId")) if isinstance(trace, KryoObject) else None,
                          bool(f["executionStartedEventEmitted"]))


def _function(exec_: object) -> str | None:
    if not isinstance(exec_, KryoObject):
        return None
    f = exec_.fields
    if "module" in f:
        return f"{f['module']}:{f.get('qualName')}"
    return f"{f.get('qualName')}#{f.get('methodName')}"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def decoded_tasks(action_tasks: Mapping[str, tuple[StateValue, ...]], counts: Mapping[str, int | None],
                  message_seq: Mapping[str, int]) -> dict[str, tuple[CheckpointTask, ...]]:
    """Per key, its pending tasks where every element of its ``actionTasks`` list was decoded as an upstream
    ``ActionTask`` (keys with any element not decoded, or not all of it read, are left out)."""
    out: dict[str, tuple[CheckpointTask, ...]] = {}
    for key, values in action_tasks.items():
        if not values or counts.get(key) != len(values) or not all(v.decoded for v in values):
            continue
        tasks = [_task(key, message_seq.get(key), v.value) for v in values]
        if all(t is not None for t in tasks):
            out[key] = tuple(t for t in tasks if t is not None)
    return out


def pending_from_checkpoint(log_pending: tuple[PendingTask, ...], keyed: KeyedRestore, checkpoint_id: int,
                            log_event_ids: set[str]) -> tuple[tuple[PendingTask, ...], list[str]]:
    """The plan's pending tasks: per key, the checkpoint's decoded tasks (matched to the log's view of the tasks
    in flight by event id), else the log's; and one note per key with pending tasks saying where they came from
    and where the checkpoint and the log disagree. ``keyed`` is the :class:`KeyedRestore`; ``log_event_ids`` the
    event ids the log's records hold (as a task's trigger)."""
    by_key: dict[str, list[PendingTask]] = {}
    for task in log_pending:
        by_key.setdefault(task.key, []).append(task)
    fully_read = "actionTasks" not in keyed.unread
    keys = list(by_key) + sorted(k for k in keyed.tasks if k not in by_key)
    out: list[PendingTask] = []
    notes: list[str] = []
    where = f"checkpoint {checkpoint_id}'s actionTasks"
    for key in keys:
        from_log = by_key.get(key, [])
        if key in keyed.tasks:
            tasks, said = _matched(keyed.tasks[key], from_log, log_event_ids)
            out.extend(tasks)
            notes.append(f"{key}: {plural(len(tasks), 'pending task')} from {where}{said}")
        elif any(not v.decoded for v in keyed.action_tasks.get(key, ())):
            why = next(v.why for v in keyed.action_tasks[key] if not v.decoded)
            out.extend(from_log)
            notes.append(f"{key}: {plural(len(from_log), 'pending task')} from the log ({where} not decoded: {why})")
        elif key in keyed.message_seq and fully_read:
            shown = ", ".join(f"{t.action} on {t.event.type} {t.event.id}" for t in from_log)
            notes.append(f"{key}: no pending tasks ({where} holds none; the log shows {shown} in flight, "
                         "not re-submitted)")
        else:
            out.extend(from_log)
            notes.append(f"{key}: {plural(len(from_log), 'pending task')} from the log (the checkpoint's keyed state does not hold the key)")
    return tuple(out), notes


def _matched(held: tuple[CheckpointTask, ...], from_log: list[PendingTask],
             log_event_ids: set[str]) -> tuple[list[PendingTask], str]:
    """The checkpoint's tasks, each as the log shows it where the log has it in flight (same event id and action),
    and what disagrees, in words."""
    logged = {(t.event.id, t.action): t for t in from_log}
    tasks: list[PendingTask] = []
    unmatched: list[str] = []
    for task in held:
        seen = logged.pop((task.event.id, task.action), None)
        if seen is not None and seen.seq == task.seq:
            tasks.append(seen)
            continue
        if seen is not None:
            tasks.append(task.pending())
            unmatched.append(f"{task.action} on {task.event.type} {task.event.id} at seq {task.seq}, the log's at "
                             f"seq {seen.seq}")
            continue
        tasks.append(task.pending())
        known = "an event the log holds" if task.event.id in log_event_ids else "an event the log does not hold"
        unmatched.append(f"{task.action} on {task.event.type} {task.event.id} ({known})")
    said = []
    if unmatched:
        said.append(f"not as the log's view of the tasks in flight has them: {'; '.join(unmatched)}")
    if logged:
        said.append("the log's view also has " + ", ".join(f"{t.action} on {t.event.type} {t.event.id}"
                                                           for t in logged.values()) + ", not re-submitted")
    if not said:
        return tasks, (", as the log shows them in flight" if from_log else "")
    return tasks, " (" + "; ".join(said) + ")"
