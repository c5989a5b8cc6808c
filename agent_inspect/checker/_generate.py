"""Random recovery histories for the rule safety checker, written by the replay executor as production writes them.

A history is a random agent, 1–N business keys with several rounds each, and 1–K production attempts.
Every attempt is the operator of a job (:class:`~agent_inspect.executor.ReplayExecutor` in production
mode) running under its own production rule: it restores a checkpoint (the latest, or an older one,
like a savepoint), replays the source's inputs after it (sometimes with a branch change: a different
input at the same seq, or two inputs of a key swapped), takes checkpoints (completing ones prune the
cache and, with tombstones on, write a tombstone per pruned state key, spec §6.6) and dies at a random
step. The history ends with the recovery to judge: one more restore and its inputs, run to the end.

The generator knows the true history, so every record carries its *branch*: the inputs of its
business key at seqs ``0..s`` in the attempt that wrote it, and whether it is *tainted* (written after
its attempt reused a record of another branch, so its memory was already wrong, spec §10.3).
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any, NamedTuple

from agent_inspect.agents import INPUT_EVENT, AgentEvent, DeclarativeAgent
from agent_inspect.cases import parse_case
from agent_inspect.checker._history import (
    _VALUES,
    Attempt,
    Execution,
    History,
    HistoryOptions,
    RuleCheckError,
    _Checkpoint,
    event_notation,
)
from agent_inspect.checker._shapes import JOURNAL_SHAPES, changed_code, journal_steps
from agent_inspect.executor import KeyMaker, ReplayExecutor, StepKind, StepOutcome, as_plan
from agent_inspect.log import ActionStateLog
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.recovery import PendingTask, ReplayPlan, agent_event
from agent_inspect.recovery.engine import effective_status

__all__ = ["HistoryOptions", "History", "Attempt", "Execution", "generate_history", "RuleCheckError",
           "event_notation"]


def generate_history(seed: int, options: HistoryOptions | Mapping[str, Any] | None = None,
                     **overrides: Any) -> History:
    """Generate the history of ``seed`` (reproducible: the same seed and options give the same history).

    For example::

        h = ai.checker.generate_history(3)             # the same seed gives the same history
        ai.predict(h.log, markers=h.markers, plan=h.plan, agent=h.agent).tasks.head()
    """
    return _generate(int(seed), HistoryOptions.of(options, **overrides))


@lru_cache(maxsize=1024)
def _generate(seed: int, o: HistoryOptions) -> History:
    return _Generator(seed, o).run()


# -- the agent -----------------------------------------------------------------------------------------


def _agent_spec(rng: random.Random, o: HistoryOptions, shapes: random.Random,
                calls_rng: random.Random) -> dict[str, Any]:
    """A random agent in the case-file ``[agent]`` form: roots, fan-out, cascades, calls, a sub-agent.

    ``shapes`` draws what older versions did not (identical siblings), so a seed keeps its history otherwise;
    ``calls_rng`` draws the call cases' shapes (``journal_steps``), so they leave every other draw alone.
    """
    values = _VALUES[:o.values]
    n_roots = rng.randint(1, o.roots)
    fanout = rng.randint(0, o.fanout)
    shared = rng.random() < o.shared_children
    identical = fanout > 1 and shapes.random() < o.identical_children
    cascade = fanout > 0 and rng.random() < o.cascades
    calls = rng.random() < o.durable_calls
    sub = rng.random() < o.subagents
    shape = calls_rng.choice(JOURNAL_SHAPES) if calls and calls_rng.random() < o.call_shapes else None
    java = shape is not None and n_roots > 1 and calls_rng.random() < 0.35
    actions: list[dict[str, Any]] = []
    on: dict[str, dict[str, list[dict[str, Any]]]] = {}

    def declare(name: str, trigger: str, scope: str | None = None, *, is_java: bool = False) -> None:
        decl: dict[str, Any] = {"name": name, "triggers": [trigger], "module": "generated",
                                "qualname": f"Generated.{name}"}
        if scope:
            decl["scope"] = scope
        if is_java:
            decl["java"] = True
        actions.append(decl)

    for i in range(n_roots):
        declare(f"R{i}", INPUT_EVENT, is_java=java and i > 0)
    if fanout:
        declare("W", "Work")
    if cascade:
        declare("W2", "Work2")
    if sub:
        declare("P", INPUT_EVENT)
        declare("CA", INPUT_EVENT, scope="child")
    work: dict[str, dict[str, Any]] = {}
    for v in values:
        # #1084: identical siblings share one state key (G09); shared: the same children under every input (G02)
        kids = [{"x": "0" if identical else f"{j}" if shared else f"{v}{j}"} for j in range(fanout)]
        steps: list[dict[str, Any]] = [{"set": "h", "value": v}]
        for attrs in kids:
            ev = event_notation(AgentEvent("Work", attrs))
            steps.append({"emit": ev})
            work[ev] = attrs
        on.setdefault("R0", {})[f"In({v})"] = steps
    for i in range(1, n_roots):
        on[f"R{i}"] = {"*": [{"set": f"r{i}", "value": 1}]
                       + (journal_steps(shape, f"generated.r{i}", "d0", java=java) if calls else [])}
    for ev, attrs in work.items():
        steps = journal_steps(shape, "generated.w", f"d{attrs['x']}") if calls else []
        if cascade:
            steps.append({"emit": event_notation(AgentEvent("Work2", {"y": attrs["x"]}))})
        on.setdefault("W", {})[ev] = steps
    if cascade:
        on["W2"] = {"*": [{"set": "w2", "value": 1}]}
    if sub:
        on["P"] = {f"In({v})": [{"subagent": "child", "session": "s0", "call_id": "s0-1",
                                 "event": event_notation(AgentEvent(INPUT_EVENT, {"q": v}))}] for v in values}
        on["CA"] = {"*": (journal_steps(shape, "generated.review", "d0") if calls else [])
                    + [{"emit": event_notation(AgentEvent("_output_event", {"o": "1"}))}]}
    return {"actions": actions, "on": on}


class CaseAgent(NamedTuple):
    """A bundled case's agent as generated histories run it."""

    id: str
    agent: dict[str, Any]                   # the case's ``[agent]`` table
    letters: str                            # the input alphabet its inputs use
    runtime: str                            # "0.3" runs on any runtime; "0.4" or "main" needs its own
    replay_agent: dict[str, Any] | None     # new code the judged recovery runs (``[replay_agent]``, L01)


@lru_cache(maxsize=1)
def case_agents() -> tuple[CaseAgent, ...]:
    """Every bundled case whose agent a generated history can run: declared agents, with their begin events
    (``agent-run.begin-event`` on) and their changed replay agent (the judged recovery runs it)."""
    import tomllib

    from agent_inspect.cases import builtin_path

    out = []
    for path in sorted(builtin_path().glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        agent, setup = data.get("agent"), data.get("setup", {})
        if not agent or not agent.get("actions"):
            continue
        text = " ".join([*map(str, data.get("replay", [])), *(str(ln.get("event", "")) for ln in data.get("log", [])),
                         *(t for table in agent.get("on", {}).values() for t in table)])
        letters = "".join(sorted({m for m in re.findall(r"In\((\w)\)", text)}))
        out.append(CaseAgent(str(data["id"]), agent, letters or _VALUES[:3], str(setup.get("runtime", "0.3")),
                             data.get("replay_agent")))
    return tuple(out)


def agent_from_spec(spec: Mapping[str, Any], replay_agent: Mapping[str, Any] | None = None) -> DeclarativeAgent:
    """The :class:`~agent_inspect.agents.DeclarativeAgent` of a case-file ``[agent]`` mapping (the ``[replay_agent]``
    one when it is given: the code a restored job runs)."""
    data: dict[str, Any] = {"id": "generated", "replay": [], "log": [], "agent": dict(spec)}
    if replay_agent is not None:
        data["replay_agent"] = dict(replay_agent)
    (case,) = parse_case(data)
    return case.agent()


# -- the attempts -------------------------------------------------------------------------------------


def _mutate(rng: random.Random, inputs: list[tuple[str, str]], values: str) -> tuple[list[tuple[str, str]], str | None]:
    """A branch change: a different input at one seq, or two inputs of one key swapped."""
    if not inputs:
        return inputs, None
    out = list(inputs)
    by_key: dict[str, list[int]] = {}
    for i, (k, _) in enumerate(out):
        by_key.setdefault(k, []).append(i)
    swaps = [(i, j) for idx in by_key.values() for n, i in enumerate(idx) for j in idx[n + 1:] if out[i][1] != out[j][1]]
    if swaps and rng.random() < 0.4:
        i, j = rng.choice(swaps)
        out[i], out[j] = (out[i][0], out[j][1]), (out[j][0], out[i][1])
        return out, f"swapped {out[i][0]}'s inputs {out[j][1]} and {out[i][1]}"
    others = [v for v in values]
    i = rng.randrange(len(out))
    k, v = out[i]
    choices = [x for x in others if x != v]
    if not choices:
        return out, None
    new = rng.choice(choices)
    out[i] = (k, new)
    return out, f"{k}: input {new} instead of {v}"


def _boundary(step: Any) -> bool:
    if step.kind is StepKind.ROUND_COMPLETE:
        return True
    # a top-level task about to run: checkpoints fall between mailbox actions, never inside a sub-agent call
    return step.kind is StepKind.LOOKUP and step.scope is None and step.outcome != "NOT-DISPATCHED"


def _carry(cp: Any, marker: Mapping[int, int]) -> Any:
    """The checkpoint with the marker as the topic has it (the executor's checkpoint already holds
    every key's state, restored keys included, as Flink's does)."""
    return replace(cp, marker=dict(marker))


class _Generator:
    def __init__(self, seed: int, o: HistoryOptions) -> None:
        self.seed, self.o = seed, o
        self.rng = random.Random(seed)
        self.log: Any = None
        self.checkpoints: list[_Checkpoint] = []
        self.attempts: list[Attempt] = []
        self.writes: list[dict[str, Any]] = []     # per log position (tombstones included)
        self.latest = 0                             # the failed job's latest checkpoint
        self.values = _VALUES[:o.values]            # the input alphabet
        self.value_format = "V3"                    # what the attempts write ("V1": 0.2, no call status)
        self.key_texts: dict[str, str] = {}         # K2: a key's digest (steps, checkpoints) -> its text
        self.key_format = o.key_format

    def run(self) -> History:
        rng, o = self.rng, self.o
        shapes = random.Random(f"{self.seed}:shapes")
        calls_rng = random.Random(f"{self.seed}:calls")
        spec = _agent_spec(rng, o, shapes, calls_rng)
        replay: dict[str, Any] | None = None
        self.case_agent: str | None = None
        # drawn from the shapes stream, so a 0.3 history is the one older versions generated for its seed
        self.runtime = shapes.choice(o.runtimes) if len(o.runtimes) > 1 else o.runtimes[0]
        if shapes.random() < o.case_agents:
            # a shape the case matrix knows: a bundled case's agent and inputs, under random attempts
            # a 0.3 case's agent runs on any runtime; a 0.4 or main case's needs its own (pending slots, result events)
            pool = [c for c in case_agents() if (not o.case_ids or c.id in o.case_ids)
                    and (c.runtime == "0.3" or c.runtime in o.runtimes)]
            if not pool:
                raise RuleCheckError(f"history options case_ids={list(o.case_ids)}, runtimes={list(o.runtimes)}: no "
                                     "bundled case with a runnable agent; use some of "
                                     f"{', '.join(c.id for c in case_agents())}")
            case = shapes.choice(pool)
            self.case_agent, self.values, replay = case.id, case.letters, copy.deepcopy(case.replay_agent)
            self.runtime = self.runtime if case.runtime == "0.3" else case.runtime
            spec = copy.deepcopy(case.agent)
        else:
            if calls_rng.random() < o.changed_calls:
                replay = changed_code(spec, calls_rng)
            subagent = any("subagent" in st for table in spec["on"].values() for body in table.values() for st in body)
            # 0.2 wrote V1 values: no call status (D04); it had no sub-agents
            if self.runtime == "0.3" and not subagent and calls_rng.random() < o.legacy_values:
                self.value_format = "V1"
            # a random agent may write K2 keys (a case agent keeps its keys), drawn from a stream of its own: the
            # histories that keep key_format are the ones it always made
            if o.key_format != "K2" and random.Random(f"{self.seed}:keys").random() < o.k2_keys:
                self.key_format = "K2"
        agent = agent_from_spec(spec)
        self.begin = bool(spec.get("begin"))          # the agent regenerates a begin event per input (N10, N16)
        keys = [f"k{i}" for i in range(rng.randint(1, o.keys))]
        order = [k for k in keys for _ in range(rng.randint(1, o.rounds))]
        rng.shuffle(order)
        values = self.values
        inputs = [(k, rng.choice(values)) for k in order]
        names = KeyMaker(None, key_format=self.key_format)
        self.key_texts = {str(names.identity(k).business_key): k for k in keys if self.key_format == "K2"}
        self.source = inputs
        self.tombstones = rng.random() < o.tombstones
        for number in range(1, rng.randint(o.min_attempts, o.attempts) + 1):
            self._attempt(number, agent, inputs)
        restored, cp_inputs, change = self._restore_choice()
        ck = self.checkpoints[restored]
        paths = self._paths(ck, cp_inputs)
        base = as_plan({"inputs": [(k, AgentEvent(INPUT_EVENT, {"input": v}, self._id())) for k, v in cp_inputs]})
        km = KeyMaker(self.log, key_format=self.key_format)
        all_keys = sorted({*paths, *keys})

        cp = ck.checkpoint
        plan = ReplayPlan(inputs=base.inputs, restored_seq=dict(cp.restored_seq),
                          pending=tuple(PendingTask(k, s, a, e) for k, s, a, e in cp.pending),
                          keys={k: km.identity(k) for k in all_keys}, attempt=len(self.attempts) + 1,
                          begin_event=self.begin)
        branch_ok, tainted = [], []
        for w in self.writes:
            if w["tomb"]:
                branch_ok.append(True)
                tainted.append(False)
                continue
            path = paths.get(w["key"], ())
            branch_ok.append(w["branch"] == tuple(path[:w["seq"] + 1]))
            tainted.append(w["tainted"])
        return History(
            seed=self.seed, options=o, agent_spec=spec, log=self.log, attempts=tuple(self.attempts),
            agent=agent if replay is None else agent_from_spec(spec, replay), replay_agent_spec=replay,
            checkpoints=tuple(self.checkpoints), executions=tuple(self._executions()), restored=restored,
            recovery_inputs=tuple(cp_inputs), recovery_branch_change=change, markers=(dict(cp.marker),),
            plan=plan, paths={k: tuple(v) for k, v in paths.items()}, tombstones=self.tombstones,
            branch_ok=tuple(branch_ok), tainted=tuple(tainted), case_agent=self.case_agent, runtime=self.runtime,
            value_format=self.value_format, key_format=self.key_format, key_texts=dict(self.key_texts))

    def _id(self) -> str:
        import uuid

        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _restore_choice(self) -> tuple[int, list[tuple[str, str]], str | None]:
        rng, o = self.rng, self.o
        # a failover restores the latest checkpoint of the job that failed; a savepoint restore any older one
        latest = self.latest
        if latest == 0 or rng.random() >= o.savepoints:
            idx = latest
        else:
            idx = 0 if o.savepoint_target == "first" else rng.randrange(len(self.checkpoints))
        ck = self.checkpoints[idx]
        # the source replays its own records after the checkpoint; a branch change is this attempt's
        # deviation from them (another interleaving, another record at that seq)
        remaining = list(self.source[ck.consumed:])
        change = None
        if rng.random() < o.branch_changes:
            remaining, change = _mutate(rng, remaining, self.values)
        return idx, remaining, change

    def _paths(self, ck: _Checkpoint | None, inputs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
        paths: dict[str, list[str]] = {}
        if ck is not None:
            for k, s in ck.checkpoint.restored_seq.items():
                name = self._text(k)
                paths[name] = list(ck.paths.get(name, ()))[:int(s) + 1]
        for k, v in inputs:
            paths.setdefault(k, []).append(v)
        return paths

    def _attempt(self, number: int, agent: Any, first_inputs: list[tuple[str, str]]) -> None:
        rng, o = self.rng, self.o
        rule = rng.choice(o.production_rules)
        if number == 1:
            restored, ck, inputs, change = None, None, list(first_inputs), None
        else:
            restored, inputs, change = self._restore_choice()
            ck = self.checkpoints[restored]
        start = ck.consumed if ck is not None else 0
        paths = self._paths(ck, inputs)
        tainted = set(ck.tainted) if ck is not None else set()
        base_end = len(self.log) if self.log is not None else 0
        # the keys' identities, so a checkpoint's pending tasks named by a K2 digest resolve before any record
        km = KeyMaker(self.log, key_format=self.key_format)
        plan = replace(as_plan({"inputs": list(inputs)}), begin_event=self.begin,
                       keys={k: km.identity(k) for k in dict.fromkeys(k for k, _ in self.source)})
        ex = ReplayExecutor(self.log, agent=agent, plan=plan,
                            restore=ck.checkpoint if ck is not None else None, rule=rule, attempt=number,
                            seed=rng.getrandbits(62), key_format=self.key_format, num_partitions=1,
                            markers=None if ck is not None else [],
                            runtime=self.runtime,   # one write per PERSIST step, refresh rows (0.4+) included
                            value_format=self.value_format)
        persists: list[tuple[int, Any, bool]] = []         # (step index, step, key tainted at the write)
        taken: list[tuple[int, int, list[str], Any, frozenset[str]]] = []

        def checkpoint() -> None:
            before = [e.state_key for e in ex.store.entries()]
            at = len(ex.step_list)
            marker = ex.checkpoint(complete=True)
            # 0.4+: the refresh rows the checkpoint appended (their branch and taint are their state's, see _append)
            persists.extend((st.index, st, False) for st in ex.step_list[at:] if st.kind is StepKind.PERSIST)
            after = {e.state_key for e in ex.store.entries()}
            pruned = [sk for sk in before if sk not in after] if self.tombstones else []
            taken.append((at, marker[0] - base_end, pruned, ex.checkpoints[-1], frozenset(tainted)))

        if number == 1:
            ex.step()
            checkpoint()
        while True:
            s = ex.step()
            if s is None:
                break
            if s.kind is StepKind.PERSIST:
                persists.append((s.index, s, self._text(s.key) in tainted))
            elif s.kind is StepKind.LOOKUP and s.outcome in ("REUSE", "RESUME"):
                assert s.state_key is not None and s.key is not None and s.seq is not None  # a lookup names its task
                entry = ex.store.get(s.state_key)
                if entry is not None and entry.pos is not None:
                    w = self.writes[entry.pos]
                    if w["tainted"] or w["branch"] != tuple(paths.get(self._text(s.key), ())[:s.seq + 1]):
                        tainted.add(self._text(s.key))
            if _boundary(s) and rng.random() < o.checkpoints:
                checkpoint()
        total = len(ex.step_list)
        cut = rng.randint(min(2, total), total)
        kept = [p for p in persists if p[0] < cut]
        cks = [t for t in taken if t[0] <= cut]
        before = len(self.checkpoints)
        self._append(number, ex, kept, cks, start, paths, base_end, ck.checkpoint if ck is not None else None)
        self.latest = len(self.checkpoints) - 1 if len(self.checkpoints) > before else (restored or 0)
        self.attempts.append(Attempt(number=number, rule=rule, restored=restored, inputs=tuple(inputs),
                                     branch_change=change, steps=cut,
                                     records=len(self.log) - base_end))

    def _append(self, number: int, ex: Any, kept: list[tuple[int, Any, bool]],
                cks: list[tuple[int, int, list[str], Any, frozenset[str]]], start: int,
                paths: Mapping[str, list[str]], base_end: int, restored: Any) -> None:
        """The topic after this attempt: its writes up to the failure, tombstones after completed checkpoints."""
        journal = ex.journal
        batch = RawBatch()
        off = base_end
        pending = sorted(cks, key=lambda t: t[1])

        def flush(upto: int) -> None:
            nonlocal off
            while pending and pending[0][1] <= upto:
                _, _, pruned, cp, tainted = pending.pop(0)
                self.checkpoints.append(_Checkpoint(number, _carry(cp, {0: off}), start + cp.inputs_consumed,
                                                    {k: tuple(v) for k, v in paths.items()}, tainted))
                for sk in pruned:
                    batch.append(0, off, None, sk.encode("utf-8"), None)
                    self.writes.append({"tomb": True, "attempt": number, "state_key": sk})
                    off += 1

        for w, (_, step, was_tainted) in enumerate(kept):
            flush(w)
            batch.append(0, off, None, journal.key[w], journal.value[w])
            if step.outcome == StepOutcome.REFRESH:
                # a refresh row repeats the state's latest write: its task, branch and taint are that write's
                self.writes.append({**self._latest_write(step.state_key), "attempt": number, "what": "refresh"})
            else:
                key = self._text(step.key)
                self.writes.append({"tomb": False, "attempt": number, "key": key, "seq": int(step.seq),
                                    "action": step.action, "state_key": step.state_key, "what": step.outcome,
                                    "branch": tuple(paths.get(key, ())[:int(step.seq) + 1]),
                                    "tainted": was_tainted})
            off += 1
        flush(len(kept))
        batches = [self.log.raw, batch] if self.log is not None else [batch]
        source = SourceInfo(kind="kafka", location="agent_inspect:rules.check", topic="action-state",
                            start_offsets={0: 0}, end_offsets={0: off},
                            options={"generated": True, "seed": self.seed})
        self.log = ActionStateLog.from_raw(batches, source)

    def _text(self, key: str | None) -> str:
        """A step's key as the source names it (K2 steps name it by its digest)."""
        return self.key_texts.get(str(key), str(key))

    def _latest_write(self, state_key: str | None) -> dict[str, Any]:
        """The latest write (not a tombstone) of ``state_key`` so far."""
        return next(w for w in reversed(self.writes) if not w["tomb"] and w["state_key"] == state_key)

    def _executions(self) -> list[Execution]:
        log = self.log
        out: list[dict[str, Any]] = []
        open_: dict[tuple[int, str], dict[str, Any]] = {}
        last_event: dict[str, tuple[str, int, str, AgentEvent]] = {}
        for pos, w in enumerate(self.writes):
            if w["tomb"]:
                key, seq, action, ev = last_event[w["state_key"]]
                out.append({"attempt": w["attempt"], "key": key, "seq": seq, "action": action, "event": ev,
                            "status": "TOMB", "positions": [pos], "branch": (), "tainted": False})
                continue
            sid = (w["attempt"], w["state_key"])
            ex = open_.get(sid)
            # a refresh row is a line of its own: the state again, after the marker of the checkpoint that wrote it
            if ex is None or w["what"] in ("initial", "refresh"):
                state = log.value(pos)
                ev = agent_event(state.task_event)
                ex = {"attempt": w["attempt"], "key": w["key"], "seq": w["seq"], "action": w["action"],
                      "event": ev, "positions": [], "branch": w["branch"], "tainted": w["tainted"]}
                open_[sid] = ex
                out.append(ex)
                last_event[w["state_key"]] = (w["key"], w["seq"], w["action"], ev)
            ex["positions"].append(pos)
        result = []
        for ex in out:
            if ex.get("status") == "TOMB":
                result.append(Execution(ex["attempt"], ex["key"], ex["seq"], ex["action"], ex["event"], "TOMB",
                                        tuple(ex["positions"])))
                continue
            state = log.value(ex["positions"][-1])
            calls = tuple((c.function_id, c.args_digest, effective_status(c.status, c.exception_payload))
                          for c in state.call_results)
            status = "C" if state.completed else ("P" if calls else "I")
            outs = tuple(agent_event(e) for e in state.output_events) if state.completed else ()
            result.append(Execution(ex["attempt"], ex["key"], ex["seq"], ex["action"], ex["event"], status,
                                    tuple(ex["positions"]), outs, calls if status == "P" else (),
                                    tuple(ex["branch"]), bool(ex["tainted"])))
        return result
