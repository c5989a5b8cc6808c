"""Flink checkpoints and savepoints of a Flink Agents job: where the recovery markers come from.

::

    ckpt = ai.checkpoint.read("s3://bucket/checkpoints/<job-id>")   # latest completed chk-N; or a chk-N dir,
    ckpt.markers, ckpt.merged, ckpt.checkpoint_id                   # a savepoint dir, a _metadata file
    ai.predict(log, markers=ckpt)                                   # every verb takes it as markers=
    ckpt.keyed.message_seq                                          # messageSequenceNumber per key
    ckpt.keyed.tasks["user-42"]                                     # its pending ActionTasks: action, event, ids
    ckpt.keyed.action_tasks["user-42"]                              # the raw list: decoded, or named + size + why
    ckpt.keyed.short_term["user-42"]                                # {memory key: value size in bytes}
    ckpt.not_read                                                   # what the checkpoint holds that was not read

Reads Flink's ``_metadata`` itself (Flink 1.20 and 2.x), the ``recoveryMarker`` union list state (Kryo
``HashMap<Integer, Long>``), and the agent operator's keyed state of hashmap-backend snapshots by the
serializer snapshots they hold, with upstream's Kryo-serialized ``ActionTask`` and ``Event`` classes read field
by field; no JVM.
"""

from __future__ import annotations

from agent_inspect.checkpoint._markers_text import parse_markers_text, read_markers_text
from agent_inspect.checkpoint._read import MARKER_STATE, Checkpoint, KeyedRestore, names_checkpoint, read
from agent_inspect.checkpoint._tasks import CheckpointTask

__all__ = ["read", "names_checkpoint", "read_markers_text", "parse_markers_text", "Checkpoint", "KeyedRestore", "CheckpointTask", "MARKER_STATE"]
