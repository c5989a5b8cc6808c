"""An agent that re-emits what the log shows: the "deterministic rerun" assumption of spec §15.6."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from agent_inspect._bulk import once_per_log
from agent_inspect._errors import InspectError
from agent_inspect.agents._protocol import (
    BEGIN_EVENT,
    INPUT_EVENT,
    SUBAGENT_EVENT,
    ActionContext,
    ActionDecl,
    AgentEvent,
    BaseAgent,
)

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog

__all__ = ["AsRecordedAgent"]


class AsRecordedAgent(BaseAgent):
    """Actions and bodies read back from a log.

    Actions are the distinct action UUIDs of the log, named after ``upstreamActionName`` on their
    outputs (else ``action-<uuid prefix>``), listening to the event types they were triggered by.
    A body run for (key, seq, action, event fingerprint) replays the durable calls of the latest
    incomplete record and the outputs of the latest completed record there (falling back to the
    same key, action and fingerprint at any seq): same types and attributes, fresh ids. A recorded failed
    call the record goes on past (a fallback call, outputs) is caught, as the body did; a failed last call raises. Sub-agent
    calls (``<sessionId>#<callId>`` results) re-send the recorded bootstrap; a bootstrap no recorded
    call explains is re-sent by the record its ``upstreamEventId`` names, else by the round's first
    root. A sub-agent call whose child never wrote a record (a PENDING slot of a batch, addendum §1.1)
    has no recorded bootstrap: it is re-submitted to the sub-agent its session's other calls name (or the
    log's only sub-agent), with its input unknown (empty ``delegateAttributes``), so the child's
    re-run shows; with no sub-agent to name it stays a plain durable call. An action with no record does
    nothing, so its subtree stops. With ``agent-run.begin-event`` on, a round's input sends again the begin
    event recorded in its round (found by the input's id, else by its round and attributes, else by its attributes).

    What the as-recorded agent cannot know (no record holds it; declare the agent to predict these):

    - what a body does for an input the log never saw (it does nothing);
    - code changed between attempts: a renamed action, or under K1 a changed module, qualname or triggers, gets
      a new action UUID, while this agent reuses the recorded one;
    - a Java action's hash-based UUID, new in every JVM under K1–K1.6 (``ActionDecl(java=True)``);
    - a sub-agent no record names: the scope and body of a child that never wrote;
    - memory: its bodies write none (``replays_memory`` is False), so the executor's ``diff`` policy compares
      outputs only and says the record's memory updates were not replayed.

    For example::

        agent = ai.agents.AsRecordedAgent(log)          # what predict and the executor use by default
        ai.predict(log, markers=markers, agent=agent).tasks["outcome"].value_counts()
    """

    calls_declared = True   # its calls are declarations (DeclaredCalls): predict makes them

    replays_memory = False

    @classmethod
    def of(cls, log: ActionStateLog) -> AsRecordedAgent:
        """The agent of ``log``, built once per log: it holds nothing between runs, so ``predict``, ``reconstruct``
        and the default plan share it (building it reads every record's value)."""
        return once_per_log(_BY_LOG, log, lambda: cls._cached(log))

    @classmethod
    def _cached(cls, log: ActionStateLog) -> AsRecordedAgent:
        """The agent :meth:`of` keeps for ``log``: it refers to its log weakly. The cache is keyed weakly by the log,
        so a value that held the log would keep it, and itself, alive for as long as the process runs (a scan's
        worker would keep every window it read: about 5 KB a record)."""
        agent = cls(log)
        try:
            agent._log = weakref.proxy(log)
        except TypeError:   # a log that cannot be weakly referenced is not cached either (see once_per_log)
            pass
        return agent

    def __init__(self, log: ActionStateLog) -> None:
        self._log = log
        recs = log.records
        ok = recs[recs["error"].isna() & ~recs["tombstone"].fillna(False).astype(bool)]
        names: dict[str, str] = {}
        triggers: dict[str, dict[tuple[str | None, str], None]] = {}
        self._records: dict[tuple[str, int, str, str], list[int]] = {}
        self._any_seq: dict[tuple[str, str, str], list[int]] = {}
        self._bootstraps: dict[tuple[str, int, str], AgentEvent] = {}
        claimed: set[tuple[str, int, str]] = set()
        sessions: dict[tuple[str, str], tuple[Any, str]] = {}   # (key, sessionId) -> (targetScope, delegateType)
        first_root: dict[tuple[str, int], str] = {}
        round_begin: dict[tuple[str, int], AgentEvent] = {}
        value, records, any_seq = log.value, self._records, self._any_seq
        # a record's task-event type, output and call counts are columns: its value is read only where they do
        # not tell (sub-agent and begin events, no type, an action still unnamed) and, for the calls sub-agent
        # bootstraps are matched against, once a bootstrap is seen
        types, outputs, calls = (_column(ok, name) for name in ("task_event_type", "output_event_count", "call_count"))
        #: per record (by position): completed and its call count, None where unknown (read the value)
        self._completed: list[bool | None] = _column(recs, "completed")
        self._calls: list[int | None] = _column(recs, "call_count")
        with_calls: list[tuple[int, str, int]] = []
        for pos, bk, seq, au, eu, event_type, n_out, n_calls in zip(
                ok.index.tolist(), ok["business_key"].astype(object).tolist(), ok["seq"].tolist(),
                ok["action_uuid"].astype(object).tolist(), ok["event_uuid"].astype(object).tolist(), types, outputs,
                calls):
            au, bk, seq, eu = str(au), str(bk), int(seq), str(eu)
            ev = state = None
            if event_type is None or event_type == SUBAGENT_EVENT or event_type == BEGIN_EVENT:
                state = value(pos)
                if state is None or state.task_event is None:
                    continue
                ev = state.task_event
                event_type = ev.type
            if au not in names and (n_out is None or n_out > 0):
                if state is None:
                    state = value(pos)
                for out in state.output_events if state is not None else ():
                    if out.upstream_action_name:
                        names[au] = out.upstream_action_name
                        break
            if ev is not None and event_type == SUBAGENT_EVENT:   # the sub-agent and begin events were read
                attrs = _attrs(ev)   # routing sits in a wrapper's attributes; other events route by type
                route = (attrs.get("targetScope"), str(attrs.get("delegateType")))
                sid = f"{attrs.get('sessionId')}#{attrs.get('callId')}"
                if attrs.get("delegateType") == INPUT_EVENT:
                    self._bootstraps.setdefault((bk, seq, sid), AgentEvent(
                        SUBAGENT_EVENT, attrs, ev.id, upstream_event_id=ev.upstream_event_id))
                sessions.setdefault((bk, str(attrs.get("sessionId"))), route)
            else:
                route = (None, str(event_type))
                if event_type == INPUT_EVENT:
                    first_root.setdefault((bk, seq), au)
                elif ev is not None and event_type == BEGIN_EVENT:   # the round's latest begin event wins
                    round_begin[(bk, seq)] = AgentEvent.of(BEGIN_EVENT, _attrs(ev), None, ev.event_class, fingerprint=eu)
            if n_calls is None or n_calls > 0:
                with_calls.append((pos, bk, seq))
            triggers.setdefault(au, {})[route] = None
            records.setdefault((bk, seq, au, eu), []).append(pos)
            any_seq.setdefault((bk, au, eu), []).append(pos)
        if self._bootstraps:   # the calls each record shows, to tell which bootstraps a recorded call explains
            for pos, bk, seq in with_calls:
                state = value(pos)
                if state is not None and state.call_results:
                    claimed.update((bk, seq, cr.function_id) for cr in state.call_results)
        # bootstraps no recorded call explains (the caller completed, which clears its call results, or had
        # not recorded the call yet): their caller is the record their lineage names, else the round's first root
        self._unclaimed: dict[tuple[str, int], list[AgentEvent]] = {}
        for (bk, seq, sid), boot in self._bootstraps.items():
            if (bk, seq, sid) not in claimed:
                self._unclaimed.setdefault((bk, seq), []).append(boot)
        self._first_root = first_root
        # the begin event a round's input regenerates, found by the input's id, else by its round (key, seq) and
        # fingerprint, else by its fingerprint alone (the first recorded round's: begin_event sees the input alone)
        self._begin_by_id: dict[str, AgentEvent] = {}
        self._begin_by_fingerprint: dict[str, AgentEvent] = {}
        self._begin_by_round: dict[tuple[str, int, str], AgentEvent] = {}
        if round_begin:   # rare (agent-run.begin-event): the rounds' inputs are looked up only then
            inputs = ok[ok["task_event_type"] == INPUT_EVENT]
            for bk, seq, fingerprint, event_id in zip(inputs["business_key"].astype(str), inputs["seq"].tolist(),
                                                      inputs["event_uuid"].astype(str),
                                                      inputs["task_event_id"].astype(object)):
                begin = round_begin.get((bk, int(seq)))
                if begin is not None:
                    if isinstance(event_id, str):
                        self._begin_by_id.setdefault(event_id, begin)
                    self._begin_by_fingerprint.setdefault(fingerprint, begin)
                    self._begin_by_round[(bk, int(seq), fingerprint)] = begin
        self._sessions = sessions
        routes_seen = set(sessions.values())
        self._only_route = next(iter(routes_seen)) if len(routes_seen) == 1 else None
        self._scripts: dict[tuple[str, int, str, str], list[tuple[str, tuple[Any, ...]]]] = {}
        self._uuid_of: dict[str, str] = {}
        decls = []
        for au, routes in triggers.items():
            name = names.get(au) or f"action-{au[:8]}"
            if name in self._uuid_of:
                name = f"{name}-{au[:8]}"
            self._uuid_of[name] = au
            scopes = {s for s, _ in routes}
            scope = next(iter(scopes)) if len(scopes) == 1 else None
            decls.append(ActionDecl(name=name, triggers=tuple(t for _, t in routes), scope=scope))
        super().__init__(decls)

    def action_uuid(self, action: str, key_format: str, *, attempt: int = 0) -> str:
        """The action UUID the log shows, reused as it is.

        A Java action under K1–K1.6 gets a new hash-based UUID in every JVM (spec §4.4), so its real
        lookups miss; declare such agents (``ActionDecl(java=True)``) to predict that.
        """
        self.action(action)
        return self._uuid_of[action]

    def begin_event(self, input_event: AgentEvent) -> AgentEvent | None:
        """The ``_agent_run_begin_event`` recorded in the round of ``input_event`` (that input's id, else the same
        attributes), without its id: the restarted run sends it again under a fresh one."""
        by_id = self._begin_by_id.get(input_event.id) if input_event.id is not None else None
        return by_id if by_id is not None else self._begin_by_fingerprint.get(input_event.fingerprint)

    def begin_event_of_round(self, input_event: AgentEvent, key: str, seq: int) -> AgentEvent | None:
        """The begin event recorded in round ``seq`` of ``key`` when that round's input is ``input_event`` (same
        attributes), so a key that sends one input twice gets each round's own; else :meth:`begin_event`."""
        by_id = self._begin_by_id.get(input_event.id) if input_event.id is not None else None
        if by_id is not None:
            return by_id
        own = self._begin_by_round.get((key, seq, input_event.fingerprint))
        return own if own is not None else self._begin_by_fingerprint.get(input_event.fingerprint)

    def run_action(self, action: str, ctx: ActionContext) -> None:
        bk = getattr(ctx, "business_key", None) or ctx.key
        key = (bk, ctx.seq, self._uuid_of[action], ctx.event.fingerprint)
        script = self._scripts.get(key)
        if script is None:
            script = self._scripts[key] = self._script(*key)
        for i, (op, args) in enumerate(script):
            if op == "call":
                try:
                    ctx.durable_execute(args[0], args[1], _nothing)
                except InspectError:
                    raise                       # a denied call or a replay error: not the body's to handle
                except Exception:               # a recorded failure, replayed as the record shows
                    if not (args[2] and i + 1 < len(script)):
                        raise
                    # the record goes on past this failed call (a fallback, outputs): the body caught it
            elif op == "subagent":
                scope, delegate_type, attrs, session_id, call_id = args
                ctx.call_subagent(scope, delegate_type, dict(attrs), session_id=session_id, call_id=call_id)
            else:
                ctx.send_event(args[0], args[1])

    def _script(self, bk: str, seq: int, au: str, fp: str) -> list[tuple[str, tuple[Any, ...]]]:
        """What the body of (key, seq, action, fingerprint) does, worked out once: every rule's replay and every
        rerun reads the same records."""
        positions = self._records.get((bk, seq, au, fp)) or self._any_seq.get((bk, au, fp)) or []
        value, completed, calls = self._log.value, self._completed, self._calls
        # the latest incomplete record with calls and the latest completed one, in one pass from the end; a record
        # whose columns rule it out is not read
        incomplete = complete = None
        for p in reversed(positions):
            done = completed[p]
            if complete is None and done is not False:
                s = value(p)
                if s is not None and s.completed:
                    complete = s
            if incomplete is None and not done and calls[p] != 0:
                s = value(p)
                if s is not None and not s.completed and s.call_results:
                    incomplete = s
            if complete is not None and incomplete is not None:
                break
        script: list[tuple[str, tuple[Any, ...]]] = []
        issued: set[str] = set()
        if incomplete is not None:
            for cr in incomplete.call_results:
                fn = cr.function_id
                sub_agent = self._subagent_call(bk, seq, fn) if "#" in fn else None
                script.append(("subagent", sub_agent) if sub_agent is not None
                              else ("call", (fn, cr.args_digest, cr.status == "FAILED")))
                issued.add(fn)
        unclaimed = self._unclaimed.get((bk, seq), ())
        recorded_ids = {s.task_event.id for p in positions for s in (value(p),)
                        if s is not None and s.task_event is not None} if unclaimed else set()
        for boot in unclaimed:
            a = boot.attributes
            sid = f"{a.get('sessionId')}#{a.get('callId')}"
            mine = (boot.upstream_event_id in recorded_ids if boot.upstream_event_id
                    else self._first_root.get((bk, seq)) == au)
            if mine and sid not in issued:
                issued.add(sid)
                script.append(("subagent", _subagent_call(boot)))
        if complete is not None:
            for out in complete.output_events:
                attrs = _attrs(out)
                if out.type == SUBAGENT_EVENT:
                    # inside a sub-agent the context re-wraps: send the delegate
                    script.append(("send", (str(attrs.get("delegateType")), dict(attrs.get("delegateAttributes") or {}))))
                else:
                    script.append(("send", (str(out.type), attrs)))
        return script


    def _subagent_call(self, bk: str, seq: int, function_id: str) -> tuple[str, str, dict[str, Any], str, str] | None:
        """The sub-agent call ``<sessionId>#<callId>`` as its recorded bootstrap sent it; when its child wrote nothing,
        routed as its session's other calls (or the log's only sub-agent) with its input unknown; None when no
        sub-agent can be named."""
        boot = self._bootstraps.get((bk, seq, function_id))
        if boot is not None:
            return _subagent_call(boot)
        session_id, _, call_id = function_id.partition("#")
        route = self._sessions.get((bk, session_id), self._only_route)
        if route is None:
            return None
        scope, delegate_type = route
        return str(scope), delegate_type, {}, session_id, call_id


def _nothing() -> None:
    return None


def _subagent_call(boot: AgentEvent) -> tuple[str, str, dict[str, Any], str, str]:
    a = boot.attributes
    return (str(a.get("targetScope")), str(a.get("delegateType")), dict(a.get("delegateAttributes") or {}),
            str(a.get("sessionId")), str(a.get("callId")))


def _column(frame: Any, name: str) -> list[Any]:
    """``frame[name]`` as Python values, None where missing (all None when the frame has no such column)."""
    if name not in frame.columns:
        return [None] * len(frame)
    col = frame[name]
    return [None if missing else v for v, missing in zip(col.astype(object).tolist(), col.isna().tolist())]


def _attrs(ev: Any) -> dict[str, Any]:
    try:
        attrs = ev.attrs()
    except Exception:  # noqa: BLE001 - undecodable attributes: treat as empty rather than fail the replay
        return {}
    return attrs if isinstance(attrs, dict) else {}


_BY_LOG: weakref.WeakKeyDictionary[Any, AsRecordedAgent] = weakref.WeakKeyDictionary()
