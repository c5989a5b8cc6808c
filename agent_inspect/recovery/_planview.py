"""The engine's cursor over a :class:`~agent_inspect.recovery.ReplayPlan` (seqNum assignment, §9.2)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeAlias

from agent_inspect._errors import ReplayError
from agent_inspect.agents import INPUT_EVENT, AgentEvent
from agent_inspect.recovery._plan import PendingTask, ReplayInput, ReplayPlan

__all__ = ["PlanView", "as_plan", "PlanLike"]

PlanLike: TypeAlias = "ReplayPlan | Mapping[str, Any]"
"""A :class:`~agent_inspect.recovery.ReplayPlan` or a mapping with its fields (``{"inputs": [...]}``)."""


class PlanView:
    """Restored rounds first, then the inputs in arrival order; each input takes its key's next seq.

    A key is looked up by its plan name first, then by its business key (``business_key``), so a
    key named by its text in the plan and by its digest in a checkpoint (K1.6/K2) shares one
    counter, while two typed keys with one key text (#1099) keep their own.

    For example::

        plan = ai.executor.as_plan({"inputs": [("user-1", "a"), ("user-1", "b")], "restored_seq": {"user-1": 4}})
        view = ai.recovery.engine.PlanView(plan)
        view.next_seq("user-1"), view.next_seq("user-1")   # 5, 6: each input takes its key's next seq
    """

    def __init__(self, plan: ReplayPlan, *, business_key: Callable[[str], str] = str) -> None:
        self.plan = plan
        self.inputs: tuple[ReplayInput, ...] = plan.inputs
        self._bk = business_key
        self._restored = {str(k): int(v) for k, v in plan.restored_seq.items()}
        self._next: dict[str, int] = {}

    def _lookup(self, table: Mapping[str, int], key: str, default: int) -> int:
        if key in table:
            return table[key]
        bk = self._bk(key)
        return table.get(bk, default) if bk != key else default

    def restored_rounds(self) -> Iterator[tuple[str, int, list[tuple[str, AgentEvent]]]]:
        rounds: dict[tuple[str, int], list[tuple[str, AgentEvent]]] = {}
        for p in self.plan.pending:
            rounds.setdefault((str(p.key), int(p.seq)), []).append((p.action, p.event))
        for (key, seq), tasks in rounds.items():
            self._next[key] = max(self._next.get(key, self._lookup(self._restored, key, -1) + 1), seq + 1)
            yield key, seq, tasks

    def next_seq(self, key: str, known: int | None = None) -> int:
        """The seq of ``key``'s next input: ``known`` (the input's own, :attr:`ReplayInput.seq`) when given and
        not behind the key's counter, else the counter's."""
        seq = self._lookup(self._next, key, self._lookup(self._restored, key, -1) + 1)
        if known is not None and known > seq:
            seq = known
        self._next[key] = seq + 1
        return seq


def as_plan(plan: PlanLike) -> ReplayPlan:
    """A ``ReplayPlan`` from a plan or a mapping of its fields: ``{"inputs": [(key, value_or_event), ...],
    "restored_seq": {key: n}, "pending": [(key, seq, action, event), ...]}``, or ``"inputs": {key: [values]}`` (one
    value, a string or an event, is one input); a plain value becomes ``_input_event`` ``{"input": value}``. A log's
    own later attempt is ``ai.ReplayPlan.from_log(log, markers=...)``.

    For example::

        plan = ai.executor.as_plan({"inputs": [("user-1", "hello")], "restored_seq": {"user-1": 4}})
        plan.inputs[0].event, plan.seq_of("user-1")
    """
    if isinstance(plan, ReplayPlan):
        return plan
    if isinstance(plan, Mapping):
        given = plan.get("inputs", ())
        # {key: [values]}: a key's list of inputs; one value (a string, an event, a mapping) is one input, not many
        pairs = ([(k, v) for k, vs in given.items() for v in ([vs] if _one_value(vs) else vs)]
                 if isinstance(given, Mapping) else given)
        inputs = tuple(ReplayInput(str(k), _event(v))
                       for k, v in _items(pairs, "inputs", "(key, value_or_event)", "('user-1', 'hello')"))
        pending_shape = ("pending", "(key, seq, action, event)", "('user-1', 3, 'chat', 'hello')")
        pending = tuple(PendingTask(str(k), _seq(s, (k, s, a, e), *pending_shape), str(a), _event(e))
                        for k, s, a, e in _items(plan.get("pending", ()), *pending_shape))
        return ReplayPlan(inputs=inputs, restored_seq=dict(plan.get("restored_seq", {})), pending=pending,
                          keys=dict(plan.get("keys", {})), attempt=int(plan.get("attempt", 1)))
    raise ReplayError(f"not a replay plan: {type(plan).__name__}; pass a ReplayPlan or a mapping with 'inputs' "
                      "(a log's own later attempt: ai.ReplayPlan.from_log(log, markers=...))")


def _items(items: Any, name: str, shape: str, example: str) -> list[tuple[Any, ...]]:
    """``items`` as tuples of ``shape``'s length; anything else (a dict, whose keys would unpack as the fields, a
    string, a number) raises ``ReplayError`` naming the shape."""
    n, out = shape.count(",") + 1, []
    for item in [items] if _scalar(items) else items:
        fields = () if _scalar(item) else tuple(item)
        if len(fields) != n or item is items:
            raise ReplayError(f"a plan's {name!r} takes a list of {shape} tuples, got {item!r}; e.g. "
                              f"{{{name!r}: [{example}]}}")
        out.append(fields)
    return out


def _one_value(value: Any) -> bool:
    """Whether a key's entry of a mapping's ``inputs`` is one input value rather than a list of them."""
    return isinstance(value, AgentEvent) or _scalar(value)


def _scalar(value: Any) -> bool:
    """One value, not a sequence of them: a text, a mapping (whose keys would iterate as items) or no iterable."""
    return isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable)


def _seq(seq: Any, item: tuple[Any, ...], name: str, shape: str, example: str) -> int:
    try:
        return int(seq)
    except (TypeError, ValueError):
        raise ReplayError(f"a plan's {name!r} takes a list of {shape} tuples with an int seq, got {item!r}; e.g. "
                          f"{{{name!r}: [{example}]}}") from None


def _event(value: Any) -> AgentEvent:
    if isinstance(value, AgentEvent):
        return value
    if isinstance(value, Mapping) and "type" in value:
        return AgentEvent(str(value["type"]), dict(value.get("attributes") or {}), value.get("id"))
    return AgentEvent(INPUT_EVENT, {"input": value})
