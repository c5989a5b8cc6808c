"""``ai.checkpoint.read``: the recovery markers and the keyed restore of a Flink Agents job's checkpoint."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from agent_inspect._controls import show_controls
from agent_inspect._errors import CheckpointFormatError, SourceError
from agent_inspect._glossary import first_few, plural
from agent_inspect.checkpoint._inputs import decoded_inputs, inputs_from_checkpoint
from agent_inspect.checkpoint._tasks import CheckpointTask, decoded_tasks, pending_from_checkpoint
from agent_inspect.codec import KRYO2, KRYO5, StateValue, parse_metadata, read_keyed_state, read_kryo_object
from agent_inspect.sources import open_checkpoint

if TYPE_CHECKING:
    from agent_inspect.agents import AgentEvent
    from agent_inspect.codec._flink_metadata import CheckpointMetadata, OperatorState
    from agent_inspect.codec._flink_state import KeyedState
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery import ReplayPlan
    from agent_inspect.sources import CheckpointFiles

__all__ = ["Checkpoint", "KeyedRestore", "CheckpointTask", "read", "names_checkpoint", "MARKER_STATE"]

MARKER_STATE = "recoveryMarker"
"""The operator union list state the agent operator keeps its recovery marker in (addendum §6)."""
_LAST_COMPLETED = "lastCompletedSequenceNumber"
_MESSAGE_SEQ = "messageSequenceNumber"
_ACTION_TASKS = "actionTasks"
_PENDING_INPUTS = "pendingInputEvents"
_V = TypeVar("_V")
#: Keyed snapshot kinds this reader does not read, in words.
_SNAPSHOT_WORDS = {"incremental": "a RocksDB incremental snapshot (its SST files in RocksDB's own format)",
                   "changelog": "a changelog snapshot (state changes in the changelog storage)"}


@dataclass(frozen=True, repr=False)
class KeyedRestore:
    """The agent operator's keyed state, per business key, as far as it was read.

    ``message_seq``: ``messageSequenceNumber``, the seqNum of the key's last input (the next input gets one
    more: a :class:`ReplayPlan`'s ``restored_seq``); ``last_completed``: ``lastCompletedSequenceNumber``, the
    last round that finished (what the store prunes up to).
    ``action_tasks`` / ``input_events``: per key, the elements of its ``actionTasks`` / ``pendingInputEvents``
    list, each a :class:`~agent_inspect.codec.StateValue`: decoded where the state's serializer allows (upstream's
    ``ActionTask`` and ``Event`` classes, Kryo-serialized, become :class:`~agent_inspect.codec.KryoObject`; a POJO
    a dict of its fields), else named with its serializer and size (None where a heap checkpoint gives it no
    length) and why. ``tasks``: per key whose every task was decoded, its :class:`CheckpointTask` s (action, event
    type, id and attributes) in the order the restore re-submits them; ``buffered``: per key whose every buffered
    input was decoded, its events (:class:`~agent_inspect.agents.AgentEvent`, with their ids) in the order the key
    runs them after its pending tasks. ``task_count`` / ``input_count``: each key's list length, None where it is not known (a
    savepoint's undecodable Kryo list is one run of bytes); ``pending_tasks`` / ``pending_inputs``: the keys
    whose list is not empty. ``short_term`` / ``sensory``: per key, its memory keys and each value's size in
    bytes (None when not known). ``unread``: the states not (fully) read, whose fields above are then partial
    (see :attr:`Checkpoint.not_read`).

    For example::

        chk = ai.checkpoint.read("tests/fixtures/checkpoints/production/checkpoints")
        chk.keyed.message_seq["user-0009"], chk.keyed.tasks["user-0009"]   # restored seqNum; its pending task
    """

    message_seq: Mapping[str, int] = field(default_factory=dict)
    last_completed: Mapping[str, int] = field(default_factory=dict)
    action_tasks: Mapping[str, tuple[StateValue, ...]] = field(default_factory=dict)
    input_events: Mapping[str, tuple[StateValue, ...]] = field(default_factory=dict)
    task_count: Mapping[str, int | None] = field(default_factory=dict)
    input_count: Mapping[str, int | None] = field(default_factory=dict)
    pending_tasks: tuple[str, ...] = ()
    pending_inputs: tuple[str, ...] = ()
    short_term: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)
    sensory: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)
    unread: tuple[str, ...] = ()
    tasks: Mapping[str, tuple[CheckpointTask, ...]] = field(default_factory=dict)
    buffered: Mapping[str, tuple[AgentEvent, ...]] = field(default_factory=dict)

    def __repr__(self) -> str:
        # one line: the fields hold every key's state (the task trees alone run to kilobytes)
        def some(keys: tuple[str, ...], what: str) -> str:
            return plural(len(keys), f"key with {what}", f"keys with {what}") + (
                f" ({first_few(keys, 3, counted=False)})" if keys else "")

        keys = {*self.message_seq, *self.last_completed, *self.short_term, *self.sensory}
        unread = f"not read: {', '.join(self.unread)}" if self.unread else "all read"
        return (f"KeyedRestore({plural(len(keys), 'key')}, {some(self.pending_tasks, 'pending tasks')}, "
                f"{some(self.pending_inputs, 'buffered inputs')}, {unread})")

    def for_keys(self, keys: set[str]) -> KeyedRestore:
        """The restore of the keys a log whose business keys are ``keys`` holds (a scan's window, one key), each
        under the log's name for it: the checkpoint names a key by its Flink key (its text), a K1.6 or K2 log by
        its digest (:func:`agent_inspect.log.logged_key`)."""
        from agent_inspect.log import logged_key

        every = {*self.message_seq, *self.last_completed, *self.action_tasks, *self.input_events, *self.task_count,
                 *self.input_count, *self.pending_tasks, *self.pending_inputs, *self.short_term, *self.sensory,
                 *self.tasks, *self.buffered}
        name = {k: n for k in every if (n := logged_key(k, keys)) is not None}

        def only(per_key: Mapping[str, _V]) -> dict[str, _V]:
            return {name[k]: v for k, v in per_key.items() if k in name}

        return KeyedRestore(
            message_seq=only(self.message_seq), last_completed=only(self.last_completed),
            action_tasks=only(self.action_tasks), input_events=only(self.input_events),
            task_count=only(self.task_count), input_count=only(self.input_count),
            pending_tasks=tuple(name[k] for k in self.pending_tasks if k in name),
            pending_inputs=tuple(name[k] for k in self.pending_inputs if k in name), short_term=only(self.short_term),
            sensory=only(self.sensory), unread=self.unread, tasks=only(self.tasks), buffered=only(self.buffered))


@dataclass(frozen=True)
class Checkpoint:
    """A Flink checkpoint or savepoint of a Flink Agents job, as :func:`read` found it.

    ``markers`` holds one ``{partition: offset}`` map per subtask (subtask order), as each subtask wrote its
    ``recoveryMarker``; the restore merges them by minimum. Pass the checkpoint itself as ``markers=`` to any
    verb. ``timestamp`` is when ``_metadata`` was written (the file's modification time: the file itself holds
    none). ``keyed`` is None when no keyed state was read; ``keyed_snapshots`` is the agent operator's keyed
    snapshot kind per subtask: ``"full"`` (a heap checkpoint) and ``"savepoint"`` are read, ``"incremental"``
    (RocksDB's own files: what Flink 1.20 and 2.x write for a RocksDB checkpoint, incremental or not) and
    ``"changelog"`` are not (the markers still are; the plan is then the log's);
    ``not_read`` names, one sentence each, what the checkpoint holds that was not read.

    For example::

        chk = ai.checkpoint.read("tests/fixtures/checkpoints/production/checkpoints")   # the sample's checkpoint
        chk.checkpoint_id, chk.markers, chk.merged      # what was not read is in chk.not_read
        ai.predict(log, markers=chk)                   # a Checkpoint is a marker source
    """

    path: str
    checkpoint_id: int
    timestamp: datetime | None
    flink_version: str
    metadata_version: int
    savepoint: bool | None
    operator: str
    parallelism: int
    markers: tuple[Mapping[int, int], ...]
    keyed: KeyedRestore | None = None
    not_read: tuple[str, ...] = ()
    keyed_snapshots: tuple[str, ...] = ()

    def recovery_markers(self) -> list[dict[int, int]]:
        """The markers as verbs take them: one map per subtask."""
        return [dict(m) for m in self.markers]

    @property
    def merged(self) -> dict[int, int]:
        """The rebuild's start offset per partition: the minimum over the subtasks' markers."""
        out: dict[int, int] = {}
        for marker in self.markers:
            for p, o in marker.items():
                out[p] = min(o, out.get(p, o))
        return out

    def replay_plan(self, log: ActionStateLog, **kwargs: Any) -> ReplayPlan:
        """The replay plan of restoring this checkpoint over ``log``: what the runtime restores.

        Inputs come from the log (:meth:`ReplayPlan.from_log` with these markers); the restored seqNum of each
        key is the checkpoint's ``messageSequenceNumber`` where it was read (for every key the checkpoint holds
        that the log shows, also those without replayed input). Pending tasks are the checkpoint's
        ``actionTasks`` where they were decoded (each matched to the log's view of the tasks in flight by event id
        and action, and then taken as the log shows it), else the log's in-flight inference; a key the checkpoint
        holds with no tasks has none. A key's buffered inputs (``pendingInputEvents``) are its next inputs after
        its pending tasks, in order, with their event ids, each in the place of the log's same input where the
        log has it. The plan's ``notes`` say, per key with pending tasks or buffered inputs, which source they
        came from and where the checkpoint and the log disagree. Keys the log does not show are left out.
        """
        from dataclasses import replace

        from agent_inspect.recovery import ReplayPlan

        plan = ReplayPlan.from_log(log, markers=self.recovery_markers(), **kwargs)
        if self.keyed is None:
            return plan
        records = log.records
        keyed = self.keyed.for_keys(set(records["business_key"].dropna().astype(str)))
        if keyed.message_seq:   # its seqNums win; inputs of rounds it had consumed are not replayed
            plan = replace(plan, notes=(*plan.notes, f"restored seqNums from checkpoint {self.checkpoint_id}'s "
                                                     "messageSequenceNumber"))
            plan = plan.restored_at(keyed.message_seq, source=f"checkpoint {self.checkpoint_id}")
        event_ids = set(records["task_event_id"].dropna().astype(str)) if "task_event_id" in records else set()
        pending, said = pending_from_checkpoint(plan.pending, keyed, self.checkpoint_id, event_ids)
        undecoded = {k: _why_not(values) for k, values in keyed.input_events.items()
                     if values and k not in keyed.buffered}
        inputs, buffered_said = inputs_from_checkpoint(plan.inputs, keyed.buffered, undecoded, self.checkpoint_id)
        return replace(plan, inputs=inputs, pending=pending, notes=(*plan.notes, *said, *buffered_said))

    def holds_plan(self) -> bool:
        """True when the agent operator's keyed state was read: the checkpoint gives the restore's plan."""
        return self.keyed is not None

    def plan_words(self) -> str:
        """What the checkpoint's plan is made of, in words (a ``Recovery``'s provenance of its plan); or, when no
        keyed state was read, why not."""
        kind = "savepoint" if self.savepoint else "checkpoint"
        if self.keyed is None:
            why = next((w for w in self.not_read if "keyed state" in w), "its keyed state was not read")
            return f"{kind} {self.checkpoint_id} gives markers only ({why})"
        k = self.keyed
        undecoded = [key for key in k.pending_tasks if key not in k.tasks]
        parts = [f"{_keys(len(k.message_seq))} restored seqNums",
                 f"{_keys(len(k.tasks))} pending tasks decoded"
                 + (f", {len(undecoded)} from the log ({undecoded[0]}: {_why_not(k.action_tasks[undecoded[0]])})"
                    if undecoded else "")]
        unbuffered = [key for key in k.pending_inputs if key not in k.buffered]
        parts.append(f"{_keys(len(k.buffered))} buffered inputs decoded"
                     + (f", {len(unbuffered)} from the log ({unbuffered[0]}: {_why_not(k.input_events[unbuffered[0]])})"
                        if unbuffered else ""))
        return f"from {kind} {self.checkpoint_id}'s keyed state: " + "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the checkpoint's identity, markers (partition keys as text), keyed restore and what was not read."""
        from dataclasses import asdict

        from agent_inspect._jsonable import jsonable

        out: dict[str, Any] = jsonable({k: v for k, v in asdict(self).items() if k != "keyed"})
        out["keyed"] = None if self.keyed is None else jsonable(asdict(self.keyed))
        return out

    @property
    def provenance(self) -> str:
        """Where these markers come from, in words (a ``Recovery``'s provenance of its markers)."""
        kind = "savepoint" if self.savepoint else "checkpoint"
        return f"read from {kind} {self.checkpoint_id} (Flink {self.flink_version}) at {self.path}"

    def __repr__(self) -> str:
        kind = {True: "savepoint", False: "checkpoint", None: "checkpoint"}[self.savepoint]
        # the operator's uid or name and the Flink version are the _metadata file's text: shown, never obeyed
        return show_controls(f"<Checkpoint {self.checkpoint_id} ({kind}, Flink {self.flink_version}) of {self.operator}: "
                             f"{plural(len(self.markers), 'subtask marker')}, merged {self.merged}>")


def names_checkpoint(text: str | os.PathLike[str]) -> bool:
    """Whether a markers argument names a checkpoint for :func:`read` (a directory, a ``_metadata`` file or a
    ``scheme://`` URL) rather than markers as JSON or a markers ``.json`` file: one answer for ``--markers``,
    ``--checkpoint`` and a diff side's ``@markers=``.

    For example::

        ai.checkpoint.names_checkpoint(ai.samples.checkpoint("production"))        # True: a folder
        ai.checkpoint.names_checkpoint(ai.samples.path("production", "markers"))   # False: a markers file
    """
    path = os.fspath(text)
    path = path[1:] if path.startswith("@") else path
    if path.lstrip().startswith(("[", "{")):
        return False
    return "://" in path or os.path.isdir(path) or os.path.basename(path) == "_metadata"


def read(path_or_url: str | os.PathLike[str], *, checkpoint: int | None = None, keyed: bool = True,
         timeout: float | None = None) -> Checkpoint:
    """Read the recovery markers (and, with ``keyed``, the keyed restore) of a Flink Agents checkpoint.

    ``path_or_url``: a ``_metadata`` file, a checkpoint (``chk-N``) or savepoint directory, or a checkpoint
    base directory, where the latest completed ``chk-N`` is taken (or ``chk-{checkpoint}``); local paths,
    ``file://`` and fsspec URLs (``s3://``, ``gs://``, ``hdfs://`` with their fsspec packages; the
    ``checkpoint`` extra). Flink 1.20 and 2.x checkpoints and savepoints are read; a corrupt, truncated or
    unknown-version ``_metadata``, or a job without a ``recoveryMarker`` state, raises
    :class:`~agent_inspect.CheckpointFormatError` saying what was found. ``timeout``: seconds the storage behind a
    URL may take to connect and to answer each request before the read stops with one line saying so (default 10,
    as :func:`agent_inspect.load` waits for a broker; S3 tries a request twice, so a silent endpoint takes about
    twice that; hdfs:// waits as its Hadoop settings say). ``s3://`` and ``s3a://`` take their endpoint and
    credentials from the AWS environment (``AWS_ENDPOINT_URL`` for an S3-compatible store, ``AWS_ACCESS_KEY_ID``…).

    For example::

        chk = ai.checkpoint.read("tests/fixtures/checkpoints/production/checkpoints")   # base dir: latest chk-N
        plan = chk.replay_plan(log)                    # seqNums from the checkpoint, inputs from the log
        ai.predict(log, markers=chk, plan=plan).tasks["outcome"].value_counts()
        ai.checkpoint.read("tests/fixtures/checkpoints/production/savepoint", timeout=30)   # s3://… waits 30 s at most
    """
    files = open_checkpoint(path_or_url, checkpoint=checkpoint, timeout=timeout)
    try:
        meta = parse_metadata(files.metadata)
    except CheckpointFormatError as exc:
        # a file given under another name is named itself, not the folder holding it (messages name _metadata)
        named = files.metadata_file and not files.metadata_file.replace("\\", "/").endswith("/_metadata")
        where = files.metadata_file if named else files.location
        raise CheckpointFormatError(f"{where}: {exc}{_damaged_advice(str(exc))}") from None
    generation = KRYO5 if meta.version >= 5 else KRYO2
    operator = _agent_operator(meta, files.location)
    markers, not_read = _markers(operator, files, generation)
    keyed_restore = None
    if keyed:
        keyed_restore, keyed_not_read = _keyed(operator, files, generation)
        not_read += keyed_not_read
    label = operator.uid or operator.name or operator.operator_id
    return Checkpoint(path=files.location, checkpoint_id=meta.checkpoint_id, timestamp=files.modified,
                      flink_version="2.x" if meta.version >= 5 else "1.x", metadata_version=meta.version,
                      savepoint=meta.savepoint, operator=label, parallelism=operator.parallelism,
                      markers=tuple(markers), keyed=keyed_restore, not_read=tuple(not_read),
                      keyed_snapshots=tuple(s.managed_keyed.kind for s in sorted(operator.subtasks, key=lambda s: s.index)
                                            if s.managed_keyed is not None))


def _damaged_advice(problem: str) -> str:
    if problem.startswith("not a Flink checkpoint"):
        return "; pass a checkpoint's chk-N directory, its _metadata file, or the checkpoint base directory"
    if not problem.startswith("_metadata is"):   # a version this reader lacks
        return ""
    return "; copy it again, or read an earlier checkpoint (checkpoint=N, or its chk-N directory)"


def _agent_operator(meta: CheckpointMetadata, where: str) -> OperatorState:
    holders = [op for op in meta.operators
               if any(s.managed_operator is not None and MARKER_STATE in s.managed_operator.states
                      for s in op.subtasks)]
    if not holders:
        seen = sorted({name for op in meta.operators for s in op.subtasks if s.managed_operator is not None
                       for name in s.managed_operator.states})
        raise CheckpointFormatError(
            f"checkpoint {meta.checkpoint_id} at {where} has no {MARKER_STATE!r} operator state, so it is not a Flink "
            f"Agents job's: {plural(len(meta.operators), 'operator')} with operator states {seen or 'none'}")
    if len(holders) > 1:
        raise CheckpointFormatError(f"checkpoint {meta.checkpoint_id} at {where} has {len(holders)} operators with a "
                                    f"{MARKER_STATE!r} state; this reader expects one agent operator")
    return holders[0]


def _markers(operator: OperatorState, files: CheckpointFiles,
             generation: int) -> tuple[list[Mapping[int, int]], list[str]]:
    markers: list[Mapping[int, int]] = []
    not_read: list[str] = []
    for subtask in sorted(operator.subtasks, key=lambda s: s.index):
        handle = subtask.managed_operator
        if handle is None or MARKER_STATE not in handle.states:
            continue
        mode, offsets = handle.states[MARKER_STATE]
        if mode != "UNION":
            raise CheckpointFormatError(f"subtask {subtask.index}'s {MARKER_STATE!r} state is {mode}, not the UNION "
                                        "list state the agent operator declares")
        if not offsets:
            continue
        stream = handle.stream
        if stream is None:
            raise CheckpointFormatError(f"subtask {subtask.index}'s {MARKER_STATE!r} state names no state bytes")
        data = stream.data if stream.data is not None else files.read_state_file(stream.path or "",
                                                                                relative=stream.relative)
        for offset in offsets:
            value = _kryo_either(data, offset, generation, subtask.index)
            if not isinstance(value, Mapping):
                raise CheckpointFormatError(f"subtask {subtask.index}'s {MARKER_STATE!r} element is a "
                                            f"{type(value).__name__}, not the HashMap<Integer, Long> a marker is")
            try:
                markers.append({int(p): int(o) for p, o in value.items()})
            except (TypeError, ValueError):
                raise CheckpointFormatError(f"subtask {subtask.index}'s {MARKER_STATE!r} map holds non-integer "
                                            f"entries: {value!r}"[:300]) from None
    return markers, not_read


def _kryo_either(data: bytes, offset: int, generation: int, subtask: int) -> Any:
    """Read with the Kryo generation the Flink version ships, then the other one (a job migrated across)."""
    try:
        return read_kryo_object(data, offset, generation)[0]
    except CheckpointFormatError as first:
        other = KRYO2 if generation == KRYO5 else KRYO5
        try:
            return read_kryo_object(data, offset, other)[0]
        except CheckpointFormatError:
            raise CheckpointFormatError(f"subtask {subtask}'s {MARKER_STATE!r} element does not decode: {first}") \
                from None


def _keyed(operator: OperatorState, files: CheckpointFiles,
           generation: int) -> tuple[KeyedRestore | None, list[str]]:
    not_read: list[str] = []
    states: list[KeyedState] = []
    for subtask in sorted(operator.subtasks, key=lambda s: s.index):
        handle = subtask.managed_keyed
        if handle is None:
            continue
        if handle.kind not in ("full", "savepoint") or handle.stream is None:
            not_read.append(f"subtask {subtask.index}'s keyed state is {_SNAPSHOT_WORDS.get(handle.kind, handle.kind)}"
                            ": not read; restored seqNums, pending tasks, buffered inputs and memory come from the log")
            continue
        stream = handle.stream
        try:
            data = stream.data if stream.data is not None else files.read_state_file(stream.path or "",
                                                                                    relative=stream.relative)
            states.append(read_keyed_state(data, handle.kind, handle.key_groups, handle.offsets,
                                           operator.max_parallelism, generation))
        except (CheckpointFormatError, SourceError) as exc:
            not_read.append(f"subtask {subtask.index}'s keyed state: {exc}")
            continue
        not_read.extend(f"subtask {subtask.index}: {why}" for why in states[-1].not_read)
    if not states:
        return None, not_read
    merged: dict[str, dict[str, Any]] = {}
    counts: dict[str, dict[str, int]] = {}
    for state in states:
        for name, values in state.values.items():
            merged.setdefault(name, {}).update(values)
        for name, known in state.counts.items():
            counts.setdefault(name, {}).update(known)

    def longs(name: str) -> dict[str, int]:
        return {k: int(v) for k, v in sorted(merged.get(name, {}).items()) if isinstance(v, int)}

    def lists(name: str) -> dict[str, tuple[StateValue, ...]]:
        return {k: tuple(v) for k, v in sorted(merged.get(name, {}).items()) if isinstance(v, list)}

    def lengths(name: str) -> dict[str, int | None]:
        return {k: counts.get(name, {}).get(k) for k in sorted(merged.get(name, {}))}

    def sizes(name: str) -> dict[str, dict[str, int | None]]:
        return {k: {m: item.size for m, item in sorted(v.items())}
                for k, v in sorted(merged.get(name, {}).items()) if isinstance(v, dict)}

    tasks, inputs = lists(_ACTION_TASKS), lists(_PENDING_INPUTS)
    restore = KeyedRestore(message_seq=longs(_MESSAGE_SEQ), last_completed=longs(_LAST_COMPLETED),
                           action_tasks=tasks, input_events=inputs,
                           task_count=lengths(_ACTION_TASKS), input_count=lengths(_PENDING_INPUTS),
                           pending_tasks=tuple(k for k, v in tasks.items() if v),
                           pending_inputs=tuple(k for k, v in inputs.items() if v),
                           short_term=sizes("shortTermMemory"), sensory=sizes("sensoryMemory"),
                           unread=tuple(sorted({name for state in states for name in state.unread})),
                           tasks=decoded_tasks(tasks, lengths(_ACTION_TASKS), longs(_MESSAGE_SEQ)),
                           buffered=decoded_inputs(inputs, lengths(_PENDING_INPUTS)))
    return restore, not_read


def _why_not(values: tuple[StateValue, ...]) -> str:
    """Why a key's list state was not decoded as upstream classes, in words."""
    return next((v.why for v in values if not v.decoded and v.why), "not all of the list read, or not upstream's class")


def _keys(n: int) -> str:
    return f"{n} key's" if n == 1 else f"{n} keys'"
