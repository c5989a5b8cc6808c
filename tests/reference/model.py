"""A deliberately separate reference model of a recovery, written from the spec alone (§6.5, §8.2, §9.3).

It shares nothing with the product's recovery engine (no ``Store``, ``RecoverySession``, rule objects or
task loop): a plain dict is the cache, the two rules are a few lines each, one loop dispatches the tasks.
It uses the product only for what is not a decision: the state-key text (``KeyIdentity.state_key``), the
event fingerprint (``codec.event_uuid``), the agent's routing and bodies, and decoded record values.

It covers a deliberately small class of recoveries and says so (:class:`Unsupported`) for anything else:
segment-matched keys (K1.5, K1.6; not K1's prefixes, not K2's restore checks), the ``original`` and ``naive``
rules, plain ``{partition: offset}`` markers, no restored in-flight tasks, no begin event, no sub-agents and
no 0.4+ refresh rows. Within it, it answers what each dispatched task does: REUSE / RESUME / RERUN, and how
many cached records its lookups removed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_inspect.agents import OUTPUT_EVENT, SUBAGENT_EVENT, AgentEvent
from agent_inspect.codec import event_uuid

RULES = ("original", "naive")


class Unsupported(Exception):
    """The recovery is outside the model's class (the reason says which part)."""


@dataclass
class Cached:
    """One cached record: where it sits, whether it completed, and what a reuse sends again."""

    business_key: str
    seq: int
    completed: bool
    outputs: list[AgentEvent] | None = None   # None: read from the log record at ``pos`` when reused
    pos: int | None = None


@dataclass(frozen=True)
class TaskOutcome:
    business_key: str
    seq: int
    action: str
    outcome: str
    removed: int


@dataclass
class _Memory:
    data: dict[str, Any] = field(default_factory=dict)

    def get(self, path: str, default: Any = None) -> Any:
        return self.data.get(path, default)

    def set(self, path: str, value: Any) -> None:
        self.data[path] = value


@dataclass
class _Context:
    """What a body may do here: send events, use memory, make durable calls (not run: no value)."""

    key: str
    seq: int
    action: str
    event: AgentEvent
    short_term: _Memory
    sensory: _Memory
    sent: list[AgentEvent] = field(default_factory=list)

    def send_event(self, type: str, attributes: Mapping[str, Any] | None = None) -> None:
        self.sent.append(AgentEvent(type, dict(attributes or {})))

    def durable_execute(self, function_id: str, args_digest: str, call: Callable[[], Any]) -> Any:
        return None

    def durable_execute_reconcilable(self, function_id: str, args_digest: str, call: Callable[[], Any],
                                     reconciler: Callable[[], Any]) -> Any:
        return None

    def call_subagent(self, *args: Any, **kwargs: Any) -> Any:
        raise Unsupported("a sub-agent call")


def rebuild(records: Any, markers: Sequence[Mapping[int, int]] | None) -> dict[str, Cached]:
    """Spec §6.5: read the window (per marker partition from the lowest marker on; None: every record) in
    log order; last write wins; a tombstone deletes."""
    if markers is not None:
        if any(not all(isinstance(p, int) and isinstance(o, int) for p, o in m.items()) for m in markers):
            raise Unsupported("versioned markers")
        start: dict[int, int] = {}
        for m in markers:
            for p, o in m.items():
                start[p] = min(start.get(p, o), o)
    cache: dict[str, Cached] = {}
    for row in records.itertuples():
        if markers is not None and (row.partition not in start or row.offset < start[row.partition]):
            continue
        if row.error is not None and row.error == row.error:
            raise Unsupported("an undecodable record")
        if bool(row.tombstone):
            cache.pop(row.state_key, None)
        else:
            cache[row.state_key] = Cached(str(row.business_key), int(row.seq), bool(row.completed), pos=int(row.Index))
    return cache


def lookup(cache: dict[str, Cached], rule: str, key: str, seq: int, state_key: str) -> tuple[Cached | None, int]:
    """Spec §8.2 (original, segment matching) and its variant without the count check (naive): the record,
    and how many cached records the lookup evicted (the key's records of later rounds)."""
    at_round = sum(1 for c in cache.values() if c.business_key == key and c.seq == seq)
    diverged = state_key not in cache or (rule == "original" and at_round > 1)
    removed = 0
    if diverged:
        later = [sk for sk, c in cache.items() if c.business_key == key and c.seq > seq]
        for sk in later:
            del cache[sk]
        removed = len(later)
    return cache.get(state_key), removed


def predict(log: Any, plan: Any, agent: Any, rule: str,
            markers: Sequence[Mapping[int, int]] | None) -> list[TaskOutcome]:
    """Every dispatched task of replaying ``plan`` with ``agent`` after a rebuild of ``log`` under ``rule``."""
    if rule not in RULES:
        raise Unsupported(f"rule {rule!r}")
    if plan.pending or plan.begin_event:
        raise Unsupported("restored in-flight tasks or a begin event")
    if any(d.scope is not None for d in agent.actions):
        raise Unsupported("a sub-agent")
    records = log.records
    if set(records["key_format"].astype(str)) - {"K1.5", "K1.6"}:
        raise Unsupported("key formats other than K1.5 / K1.6")
    cache = rebuild(records, markers)
    seqs: dict[str, int] = {}
    memory: dict[str, _Memory] = {}
    out: list[TaskOutcome] = []
    for replayed in plan.inputs:
        ident = plan.keys[replayed.key]
        if ident.key_format not in ("K1.5", "K1.6"):
            raise Unsupported(f"key format {ident.key_format}")
        seq = seqs.get(replayed.key, plan.seq_of(replayed.key)) + 1
        seqs[replayed.key] = seq
        key = ident.business_key
        stm = memory.setdefault(key, _Memory())
        sensory = _Memory()
        queue = deque((d.name, replayed.event) for d in agent.listeners(replayed.event))
        while queue:
            action, event = queue.popleft()
            fingerprint = event_uuid(dict(event.attributes))
            state_key = ident.state_key(seq, fingerprint, agent.action_uuid(action, ident.key_format,
                                                                              attempt=plan.attempt))
            # §9.3 step 1: get
            record, removed = lookup(cache, rule, key, seq, state_key)
            if record is not None and record.completed:
                # step 2: reuse — the stored outputs (and memory updates) again, nothing written
                outcome = "REUSE"
                sent = _stored_outputs(log, record, stm, sensory)
            else:
                outcome = "RESUME" if record is not None else "RERUN"
                if record is None:
                    again, n = lookup(cache, rule, key, seq, state_key)
                    removed += n
                    if again is None:
                        cache[state_key] = Cached(key, seq, completed=False)
                    removed += lookup(cache, rule, key, seq, state_key)[1]
                ctx = _Context(replayed.key, seq, action, event, stm, sensory)
                agent.run_action(action, ctx)
                removed += lookup(cache, rule, key, seq, state_key)[1]
                cache[state_key] = Cached(key, seq, completed=True, outputs=list(ctx.sent))
                sent = ctx.sent
            out.append(TaskOutcome(key, seq, action, outcome, removed))
            # step 4: route — outputs go downstream, every other event to the actions listening to it
            for ev in sent:
                if ev.type == SUBAGENT_EVENT:
                    raise Unsupported("a sub-agent envelope")
                if ev.type != OUTPUT_EVENT:
                    queue.extend((d.name, ev) for d in agent.listeners(ev))
    return out


def _stored_outputs(log: Any, record: Cached, stm: _Memory, sensory: _Memory) -> list[AgentEvent]:
    if record.outputs is not None:
        return record.outputs
    state = log.value(record.pos)
    for update in state.short_term_memory_updates:
        stm.set(update.path, update.value)
    for update in state.sensory_memory_updates:
        sensory.set(update.path, update.value)
    sent = []
    for ev in state.output_events:
        attrs = ev.attrs() if hasattr(ev, "attrs") else ev.attributes
        sent.append(AgentEvent(str(ev.type), dict(attrs)))
    return sent
