"""Which upstream runtime's recovery behaviours the model runs: one table, one place to change it.

Issue #12 items 3 and 4 (addendum §1.1, §2). Every behaviour is a flag of :class:`RuntimeModel`;
:func:`runtime_model` maps a runtime name to its flags:

| flag | 0.3 | 0.4 | main | what it is |
|---|---|---|---|---|
| ``subagent_results`` | no | no | yes | a REUSED child replays ``subagentResultEvents`` (not ``outputEvents``) as its caller's result; its forwarded envelopes are not sent again (addendum §1.1) |
| ``pending_slots`` | no | no | yes | an internal sub-agent call reserves a PENDING caller slot first (a batch in one write); a PENDING slot re-submits the call with the same ids |
| ``no_rebootstrap`` | no | no | yes | a completed root caller's stored bootstrap envelope is not sent again on reuse |
| ``keeps_pending`` | no | yes | yes | pending states survive checkpoints (#1158 Kafka, #1175 Fluss): checkpoint-time refresh rows are recognised |

Why so: the sub-agent facts were read in post-0.4 main tests whose records carry
``subagentResultEvents`` (V4), and V4 means main (addendum §1.2–§1.3: whether release-0.4 writes
the field is open). The pending-state changes (#1158, 444e9790 of 2026-10-16) predate the 0.4.0
release. ``0.3`` is the model the spec was written from, the default everywhere.

``kafka_pending`` is the Kafka mechanism for kept pending states, open upstream (addendum §2.3):

- ``"refresh"`` (the default): Kafka re-appends retained states at checkpoint time, as Fluss does.
  The evidence: the change that made pending states survive (444e9790) is in the backend-neutral
  ``DurableExecutionManager``, and the #1101 Kafka marker revision has no refresh of its own and
  no way to move back; the #1158 test restores from a plain marker and still finds the state.
- ``"marker"``: the checkpoint's marker is moved back to the oldest retained state. There are then
  no refresh rows in a Kafka log, and nothing is collapsed. A Kafka log that has them after the markers
  was written by a refreshing writer: the recovery settings refuse "marker" over it (a ``RecoveryError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_inspect._types import RuntimeLike

from dataclasses import dataclass

from agent_inspect.history import KAFKA_PENDING, writes_refresh_rows
from agent_inspect.log import KEEPS_PENDING

__all__ = ["RUNTIME_NAMES", "KAFKA_PENDING", "RuntimeModel", "runtime_model"]

RUNTIME_NAMES = ("0.3", "0.4", "main")
"""Runtimes the model knows (``"auto"`` is resolved to one of them from the log by the callers that have one)."""


@dataclass(frozen=True)
class RuntimeModel:
    """The recovery behaviours of one upstream runtime (see the table in this module's doc).

    For example::

        model = ai.store.runtime_model("main")
        model.subagent_results, model.pending_slots, model.refresh_rows
        ai.store.RuntimeModel(name="0.4", kafka_pending="keep")
    """

    name: str = "0.3"
    subagent_results: bool = False
    pending_slots: bool = False
    no_rebootstrap: bool = False
    keeps_pending: bool = False
    kafka_pending: str = "refresh"

    def refresh_rows(self, source_kind: str | None) -> bool:
        """Whether a log of ``source_kind`` written by this runtime has checkpoint-time refresh rows
        (:func:`agent_inspect.history.writes_refresh_rows`, the one rule)."""
        return writes_refresh_rows(self.keeps_pending, source_kind, self.kafka_pending)


def runtime_model(runtime: str | RuntimeLike | None = None, *, kafka_pending: str | None = None) -> RuntimeModel:
    """The :class:`RuntimeModel` of ``runtime``: a name ("0.3", "0.4", "main"), an object with a
    ``name`` (the log's inferred runtime), a ``RuntimeModel`` (returned as is unless
    ``kafka_pending`` is given), or None / "auto" without a log to infer from ("0.3", today's model).

    For example::

        ai.store.runtime_model("0.3"), ai.store.runtime_model(log.runtime())   # by name or the log's own
    """
    from agent_inspect._errors import RecoveryError

    if isinstance(runtime, RuntimeModel):
        model = runtime
    else:
        name = getattr(runtime, "model", None) or getattr(runtime, "name", runtime)  # an unknown runtime's model
        if name is None or name == "auto":
            name = "0.3"
        name = str(name)
        if name not in RUNTIME_NAMES:
            raise RecoveryError(f"unknown runtime {name!r}; use one of {', '.join(RUNTIME_NAMES)}")
        main = name == "main"
        model = RuntimeModel(name=name, subagent_results=main, pending_slots=main, no_rebootstrap=main,
                             keeps_pending=name in KEEPS_PENDING)
    if kafka_pending is not None:
        if kafka_pending not in KAFKA_PENDING:
            raise RecoveryError(f"unknown kafka_pending {kafka_pending!r}; use one of {', '.join(KAFKA_PENDING)}")
        model = RuntimeModel(model.name, model.subagent_results, model.pending_slots, model.no_rebootstrap,
                             model.keeps_pending, kafka_pending)
    return model
