"""Case files: machine-readable recovery histories with expected outcomes (format: docs/reference/cases.md)."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_inspect._errors import CaseFileError
from agent_inspect._glossary import count_words
from agent_inspect.agents import ActionDecl, Behaviour, Call, Emit, SetMemory, Step, SubagentBatch, SubagentCall
from agent_inspect.cases._log_agent import agent_from_log
from agent_inspect.cases._notation import EventRef, parse_event, parse_expectation
from agent_inspect.cases._shape import check_shape
from agent_inspect.cases._spec import (
    CALL_STATUSES,
    KEY_FORMATS,
    SOURCES,
    STATUSES,
    AgentSpec,
    CallCase,
    CallSpec,
    Case,
    CaseSetup,
    CheckpointLine,
    KeySpec,
    LogLine,
    PendingSpec,
    ReplaySpec,
    StaleMark,
)
from agent_inspect.store import KAFKA_PENDING, RUNTIME_NAMES

__all__ = ["Case", "CaseSetup", "KeySpec", "LogLine", "CallSpec", "PendingSpec", "ReplaySpec", "CallCase",
           "AgentSpec", "load_cases", "parse_case", "builtin", "builtin_path", "BUILTIN"]

#: The name :func:`load_cases` reads as the bundled case matrix.
BUILTIN = "builtin"


def builtin_path() -> Path:
    """The directory of the bundled case files (the matrix of ``docs/spec/divergence-cases.md``), installed
    with the package.

    For example::

        sorted(p.name for p in ai.cases.builtin_path().glob("*.toml"))[:5]
    """
    return Path(__file__).resolve().parent / "_matrix"


def builtin() -> list[Case]:
    """The bundled case matrix, from anywhere (no checkout needed): ``load_cases("builtin")``.

    For example::

        [case.id for case in ai.cases.builtin()][:5]   # the bundled matrix, no checkout needed
    """
    return load_cases(builtin_path())


def load_cases(paths: str | Path | Iterable[str | Path]) -> list[Case]:
    """Load case files (``*.toml``; directories are searched) into cases, variants expanded, sorted by id.

    ``"builtin"`` names the bundled case matrix (:func:`builtin`); a path of that name in the working
    directory wins.

    For example::

        cases = ai.cases.load_cases("cases/")           # a file, a directory, or "builtin"
        len(cases), cases[0].id
    """
    files: list[Path] = []
    for p in [paths] if isinstance(paths, (str, Path)) else paths:
        p = Path(p)
        if str(p) == BUILTIN and not p.exists():
            p = builtin_path()
        if p.is_dir():
            files.extend(sorted(p.glob("*.toml")))
        elif p.is_file():
            files.append(p)
        else:
            raise CaseFileError(f"{p}: no such case file or directory (the bundled cases are named \"builtin\", from "
                                f"any directory: `agent-inspect cases run builtin`, or load_cases(\"builtin\"))")
    cases: list[Case] = []
    for f in files:
        try:
            data = tomllib.loads(f.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:   # not UTF-8: a picture passed by mistake
            raise CaseFileError(f"{f}: not valid TOML: {exc}" if isinstance(exc, tomllib.TOMLDecodeError) else
                                f"{f}: not a case file (not UTF-8 text); pass a case .toml file or a folder") from None
        cases.extend(parse_case(data, path=str(f)))
    return sorted(cases, key=lambda c: (_order(c.id), c.id))


def _order(case_id: str) -> tuple[int, str]:
    prefix = "NGPLSD".find(case_id[:1])
    return (prefix if prefix >= 0 else 99, case_id)


def parse_case(data: Mapping[str, Any], *, path: str | None = None) -> list[Case]:
    """Parse one case file's TOML data; returns the base case followed by its variants.

    For example::

        import tomllib
        data = tomllib.loads(open("cases/G01.toml").read())
        [case.id for case in ai.cases.parse_case(data, path="cases/G01.toml")]   # the case, then its variants
    """
    where = path or "<case>"
    try:
        case_id = str(data["id"])
    except KeyError:
        raise CaseFileError(f"{where}: missing 'id'") from None
    where = f"{where} ({case_id})"
    _known(data, {"id", "name", "category", "summary", "note", "setup", "keys", "log", "replay", "pending",
                  "agent", "replay_agent", "expect", "expect_calls", "expect_results", "variants", "call_case"}, where)
    check_shape(data, where)
    try:
        return _parsed(data, case_id, where, path)
    except (TypeError, ValueError, AttributeError) as exc:   # a wrong kind of value deeper than check_shape looks
        raise CaseFileError(f"{where}: a value of the wrong kind ({exc}); see docs/reference/cases.md") from None


def _parsed(data: Mapping[str, Any], case_id: str, where: str, path: str | None) -> list[Case]:
    setup = _setup(data.get("setup", {}), CaseSetup(), where)
    log, checkpoints = _log(data.get("log", []), where)
    replay = tuple(_replay(r, where) for r in data.get("replay", []))
    pending = tuple(_pending(p, where) for p in data.get("pending", []))
    actions, behaviours, begin = _agent(data.get("agent", {}), where)
    if not actions and log:
        actions, behaviours = agent_from_log(log)
    replay_agent = _replay_agent(data["replay_agent"], where) if "replay_agent" in data else None
    used = [ln.key for ln in log] + [r.key for r in replay] + [p.key for p in pending]
    keys = _keys(data.get("keys", {}), used, where)
    expect = {rule: parse_expectation(rule, text, where=f"{where} expect.{rule}")
              for rule, text in data.get("expect", {}).items()}
    base = Case(id=case_id, name=str(data.get("name", case_id)), category=str(data.get("category", "")),
                setup=setup, keys=keys, log=log, replay=replay, pending=pending, actions=actions,
                behaviours=behaviours, begin=begin, expect=expect,
                expect_calls=_expect_calls(data.get("expect_calls", {}), where),
                expect_results=_expect_results(data.get("expect_results", {}), where),
                call_case=_call_case(data["call_case"], where) if "call_case" in data else None,
                replay_agent=replay_agent, summary=str(data.get("summary", "")), note=str(data.get("note", "")),
                path=path, checkpoints=checkpoints)
    _check_lines(base, where)
    out = [base]
    for v in data.get("variants", []):
        _known(v, {"name", "setup", "expect", "expect_calls", "expect_results", "note", "keys", "call_case",
                   "replay_agent"}, f"{where} variant")
        name = str(v.get("name") or "")
        if not name:
            raise CaseFileError(f"{where}: every [[variants]] entry needs a 'name'")
        vexpect = dict(expect)
        vexpect.update({rule: parse_expectation(rule, text, where=f"{where} {name} expect.{rule}")
                        for rule, text in v.get("expect", {}).items()})
        vcalls = dict(base.expect_calls)
        vcalls.update(_expect_calls(v.get("expect_calls", {}), where))
        vresults = dict(base.expect_results)
        vresults.update(_expect_results(v.get("expect_results", {}), where))
        vkeys = _keys({**data.get("keys", {}), **v.get("keys", {})}, used, where) if "keys" in v else keys
        vcall = base.call_case
        if "call_case" in v:
            vcall = _call_case({**data.get("call_case", {}), **v["call_case"]}, f"{where} {name}")
        vagent = _replay_agent(v["replay_agent"], f"{where} {name}") if "replay_agent" in v else replay_agent
        variant = replace(base, id=f"{case_id}/{name}", variant=name, setup=_setup(v.get("setup", {}), setup, where),
                          keys=vkeys, expect=vexpect, expect_calls=vcalls, expect_results=vresults,
                          call_case=vcall, replay_agent=vagent,
                          note=str(v.get("note", base.note)))
        _check_lines(variant, f"{where} variant {name}")
        out.append(variant)
    return out


def _replay_agent(raw: Any, where: str) -> AgentSpec:
    if not isinstance(raw, Mapping) or not raw.get("actions"):
        raise CaseFileError(f"{where}: replay_agent is a table like [agent] with at least one action")
    actions, behaviours, begin = _agent(raw, f"{where} replay_agent")
    return AgentSpec(actions, behaviours, begin)


def _known(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise CaseFileError(f"{where}: unknown {count_words(len(extra), 'field')} {', '.join(extra)}; see docs/reference/cases.md")


def _setup(raw: Mapping[str, Any], base: CaseSetup, where: str) -> CaseSetup:
    _known(raw, set(CaseSetup.__dataclass_fields__), f"{where} [setup]")
    s = replace(base, **raw)
    if s.key_format not in KEY_FORMATS:
        raise CaseFileError(f"{where}: key_format {s.key_format!r} is not one of {', '.join(KEY_FORMATS)}")
    if s.source not in SOURCES:
        raise CaseFileError(f"{where}: source {s.source!r} is not one of {', '.join(SOURCES)}")
    if s.pipeline not in ("java", "python"):
        raise CaseFileError(f"{where}: pipeline must be 'java' or 'python'")
    if s.runtime not in RUNTIME_NAMES:
        raise CaseFileError(f"{where}: runtime {s.runtime!r} is not one of {', '.join(RUNTIME_NAMES)}")
    if s.kafka_pending not in KAFKA_PENDING:
        raise CaseFileError(f"{where}: kafka_pending {s.kafka_pending!r} is not one of {', '.join(KAFKA_PENDING)}")
    return s


def _keys(raw: Mapping[str, Any], used: Sequence[str], where: str) -> dict[str, KeySpec]:
    out: dict[str, KeySpec] = {}
    for label in dict.fromkeys([*raw, *used]):
        spec = raw.get(label, {})
        _known(spec, {"text", "type", "restored_seq"}, f"{where} keys.{label}")
        out[label] = KeySpec(label=label, text=str(spec.get("text", label)), type=str(spec.get("type", "string")),
                             restored_seq=int(spec.get("restored_seq", 4)))
    return out


def _log(raw: Any, where: str) -> tuple[tuple[LogLine, ...], tuple[CheckpointLine, ...]]:
    lines: list[LogLine] = []
    checkpoints: list[CheckpointLine] = []
    for i, item in enumerate(raw, start=1):
        if isinstance(item, Mapping) and ("checkpoint" in item or "restore" in item):
            w = f"{where} log entry {i}"
            _known(item, {"checkpoint", "restore", "completed"}, w)
            restore = "restore" in item
            if restore and ("checkpoint" in item or "completed" in item):
                raise CaseFileError(f"{w}: a restore line is {{ restore = \"C1\" }} alone")
            completed = item.get("completed", {})
            if not isinstance(completed, Mapping):
                raise CaseFileError(f"{w}: completed maps key labels to lastCompletedSequenceNumber")
            checkpoints.append(CheckpointLine(n=i, name=str(item["restore" if restore else "checkpoint"]),
                                              after=len(lines), restore=restore,
                                              completed={str(k): int(v) for k, v in completed.items()}))
            continue
        lines.append(_line(len(lines) + 1, item, where))
    names = [c.name for c in checkpoints if not c.restore]
    if len(set(names)) != len(names):
        raise CaseFileError(f"{where}: checkpoint names must be unique ({', '.join(names)})")
    seen: set[str] = set()
    for c in checkpoints:
        if c.restore and c.name not in seen:
            raise CaseFileError(f"{where}: restore {c.name!r} names no earlier checkpoint line")
        seen.add(c.name)
    return tuple(lines), tuple(checkpoints)


def _line(i: int, raw: Any, where: str) -> LogLine:
    w = f"{where} log line {i}"
    if not isinstance(raw, Mapping):
        raise CaseFileError(f"{w}: each log line is an inline table {{ att=, key=, seq=, action=, event=, status= }}")
    _known(raw, {"n", "att", "key", "seq", "action", "event", "status", "out", "calls", "stale", "results"}, w)
    for f in ("key", "seq", "action", "event", "status"):
        if f not in raw:
            raise CaseFileError(f"{w}: missing '{f}'")
    status = str(raw["status"])
    if status not in STATUSES:
        raise CaseFileError(f"{w}: status {status!r} is not one of {', '.join(STATUSES)}")
    action, _, label = str(raw["action"]).partition("@")
    return LogLine(n=int(raw.get("n", i)), attempt=int(raw.get("att", 1)), key=str(raw["key"]), seq=int(raw["seq"]),
                   action=action, action_label=label or None, event=parse_event(raw["event"], where=w),
                   status=status, outputs=tuple(parse_event(e, where=w) for e in raw.get("out", [])),
                   calls=tuple(_call_spec(c, w) for c in raw.get("calls", [])), stale=_stale(raw.get("stale"), w),
                   results=tuple(parse_event(e, where=w) for e in raw.get("results", [])))


def _stale(raw: Any, where: str) -> StaleMark | None:
    if raw is None or raw is False:
        return None
    if raw is True:
        return StaleMark(always=True)
    if isinstance(raw, Mapping):
        _known(raw, {"keys", "events"}, f"{where} stale")
        return StaleMark(keys=tuple(map(str, raw.get("keys", ()))),
                         events=tuple(str(e).lstrip("#") for e in raw.get("events", ())))
    raise CaseFileError(f"{where}: stale must be true or {{ keys = [...], events = [...] }}")


def _call_spec(raw: Any, where: str) -> CallSpec:
    if isinstance(raw, str):
        # "function/argsDigest STATUS" (the spec's shorthand); a missing digest is "" (Java)
        ident, _, status = raw.strip().partition(" ")
        fn, _, digest = ident.partition("/")
        raw = {"fn": fn, "args": digest, "status": status.strip() or "SUCCEEDED"}
    if not isinstance(raw, Mapping):
        raise CaseFileError(f"{where}: a call is \"fn/digest STATUS\" or {{ fn=, args=, status= }}")
    _known(raw, {"fn", "args", "status", "result", "exception"}, f"{where} call")
    call_status = raw.get("status")
    if call_status is not None and call_status not in CALL_STATUSES:
        raise CaseFileError(f"{where}: call status {call_status!r} is not one of {', '.join(CALL_STATUSES)}")
    return CallSpec(function_id=str(raw["fn"]), args_digest=str(raw.get("args", "")), status=call_status,
                    result=raw.get("result"), exception=raw.get("exception"))


def _replay(raw: Any, where: str) -> ReplaySpec:
    if isinstance(raw, str):
        key, sep, ev = raw.partition(":")
        if not sep:
            raise CaseFileError(f"{where}: replay entries are \"key:Event\", e.g. \"k:In(A)\"; got {raw!r}")
        return ReplaySpec(key.strip(), parse_event(ev, where=f"{where} replay"))
    if isinstance(raw, Mapping) and "key" in raw and "event" in raw:
        return ReplaySpec(str(raw["key"]), parse_event(raw["event"], where=f"{where} replay"))
    raise CaseFileError(f"{where}: replay entries are \"key:Event\" or {{ key=, event= }}")


def _pending(raw: Any, where: str) -> PendingSpec:
    if not isinstance(raw, Mapping) or not {"key", "seq", "action", "event"} <= set(raw):
        raise CaseFileError(f"{where}: pending tasks are {{ key=, seq=, action=, event= }}")
    return PendingSpec(str(raw["key"]), int(raw["seq"]), str(raw["action"]),
                       parse_event(raw["event"], where=f"{where} pending"))


def _agent(raw: Mapping[str, Any], where: str) -> tuple[
        tuple[ActionDecl, ...], dict[str, tuple[Behaviour, ...]], tuple[tuple[EventRef, EventRef], ...]]:
    _known(raw, {"actions", "on", "begin"}, f"{where} [agent]")
    actions = []
    for a in raw.get("actions", []):
        _known(a, {"name", "triggers", "module", "qualname", "java", "scope"}, f"{where} agent.actions")
        if "name" not in a or "triggers" not in a:
            raise CaseFileError(f"{where}: every agent action needs 'name' and 'triggers'")
        actions.append(ActionDecl(name=str(a["name"]), triggers=tuple(map(str, a["triggers"])),
                                  module=a.get("module") or "case_agent",
                                  qualname=a.get("qualname") or f"CaseAgent.{a['name']}",
                                  java=bool(a.get("java", False)), scope=a.get("scope")))
    names = {a.name for a in actions}
    behaviours: dict[str, tuple[Behaviour, ...]] = {}
    for action, table in raw.get("on", {}).items():
        if action not in names:
            raise CaseFileError(f"{where}: agent.on.{action} names an undeclared action")
        out = []
        for trigger, steps in table.items():
            w = f"{where} agent.on.{action}.{trigger!r}"
            steps_t = tuple(_step(s, w) for s in steps)
            if trigger == "*":
                out.append(Behaviour(steps_t))
            else:
                ev = parse_event(trigger, where=w)
                if ev.type == "InternalSubagentCallEvent":
                    ev = EventRef(ev.attributes["delegateType"], ev.attributes["delegateAttributes"])
                out.append(Behaviour(steps_t, ev.type, ev.attributes))
        # specific triggers win over "*", whatever the order in the file
        behaviours[action] = tuple(sorted(out, key=lambda b: b.trigger_type is None))
    begin = tuple((parse_event(trigger, where=f"{where} agent.begin"), parse_event(ev, where=f"{where} agent.begin"))
                  for trigger, ev in raw.get("begin", {}).items())
    return tuple(actions), behaviours, begin


def _step(raw: Any, where: str) -> Step:
    if not isinstance(raw, Mapping):
        raise CaseFileError(f"{where}: a step is {{ emit = ... }}, {{ call = ... }}, {{ subagent = ... }} or {{ set = ... }}")
    if "emit" in raw:
        _known(raw, {"emit"}, where)
        ev = parse_event(raw["emit"], where=where)
        return Emit(ev.type, ev.attributes)
    if "call" in raw:
        _known(raw, {"call", "args", "reconciler", "result", "raises", "catch"}, where)
        rec = raw.get("reconciler")
        if rec not in (None, "succeeds", "raises"):
            raise CaseFileError(f"{where}: reconciler must be \"succeeds\" or \"raises\"")
        return Call(str(raw["call"]), str(raw.get("args", "")), rec, raw.get("result"), raw.get("raises"),
                    bool(raw.get("catch", False)))
    if "subagent" in raw:
        _known(raw, {"subagent", "session", "call_id", "event"}, where)
        ev = parse_event(raw.get("event", "Ev(_input_event)"), where=where)
        return SubagentCall(str(raw["subagent"]), str(raw["session"]), str(raw["call_id"]), ev.type, ev.attributes)
    if "batch" in raw:
        _known(raw, {"batch"}, where)
        calls = [_step(c, f"{where} batch") for c in raw["batch"]]
        if not calls or not all(isinstance(c, SubagentCall) for c in calls):
            raise CaseFileError(f"{where}: a batch is a list of {{ subagent = ... }} calls")
        return SubagentBatch(tuple(c for c in calls if isinstance(c, SubagentCall)))
    if "set" in raw:
        _known(raw, {"set", "value", "memory"}, where)
        return SetMemory(str(raw["set"]), raw.get("value"), str(raw.get("memory", "short_term")))
    raise CaseFileError(f"{where}: unknown step {dict(raw)!r}")


def _expect_calls(raw: Mapping[str, Any], where: str) -> dict[str, dict[str, int]]:
    out = {}
    for rule, table in raw.items():
        if not isinstance(table, Mapping):
            raise CaseFileError(f"{where}: expect_calls.{rule} maps function ids to call counts")
        out[rule] = {str(k): int(v) for k, v in table.items()}
    return out


def _expect_results(raw: Mapping[str, Any], where: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for rule, table in raw.items():
        if not isinstance(table, Mapping):
            raise CaseFileError(f"{where}: expect_results.{rule} maps sub-agent call ids to result labels")
        out[rule] = {}
        for fid, want in table.items():
            if want == "journal":
                out[rule][str(fid)] = "journal"
            elif isinstance(want, list):
                out[rule][str(fid)] = tuple(str(x).lstrip("#") for x in want)
            else:
                raise CaseFileError(f"{where}: expect_results.{rule}.{fid} is a list of event labels or \"journal\"")
    return out


def _call_case(raw: Mapping[str, Any], where: str) -> CallCase:
    w = f"{where} [call_case]"
    _known(raw, {"record", "body", "expect", "warnings", "truncated_to", "final_record", "effective_statuses",
                 "producer", "value_format"}, w)
    body = []
    for s in raw.get("body", []):
        step = _step(s, w)
        if not isinstance(step, Call):
            raise CaseFileError(f"{w}: the body of a call case holds only {{ call = ... }} steps")
        body.append(step)
    expect = tuple(raw.get("expect", []))
    producer = str(raw.get("producer", "python"))
    if producer not in ("python", "java"):
        raise CaseFileError(f"{w}: producer must be \"python\" or \"java\"")
    for e in expect:
        _known(e, {"outcome", "index", "returns", "raises", "null_payloads", "throws"}, f"{w} expect")
        if e.get("outcome") not in ("hit", "reraise", "execute", "reconcile"):
            raise CaseFileError(f"{w}: expect outcome must be hit, reraise, execute or reconcile")
        if "throws" in e and (e["outcome"] != "hit" or producer != "java"):
            raise CaseFileError(f"{w}: 'throws' is for a Java hit that cannot be delivered (Optional.of(null), "
                                "spec §9.4); use it with outcome = \"hit\" and producer = \"java\"")
    if len(expect) != len(body):
        raise CaseFileError(f"{w}: one expect entry per body call ({len(body)} calls, {len(expect)} entries)")
    final = raw.get("final_record")
    eff = raw.get("effective_statuses")
    return CallCase(record=tuple(_call_spec(c, w) for c in raw.get("record", [])), body=tuple(body),
                    expect=expect, warnings=tuple(raw.get("warnings", ())),
                    truncated_to=raw.get("truncated_to"),
                    final_record=tuple(final) if final is not None else None,
                    effective_statuses=tuple(eff) if eff is not None else None,
                    producer=producer, value_format=str(raw.get("value_format", "V3")))


def _check_lines(case: Case, where: str) -> None:
    names = {a.name for a in case.actions}
    restore = case.setup.restore
    if restore is not None and restore not in {c.name for c in case.checkpoints if not c.restore}:
        raise CaseFileError(f"{where}: [setup] restore = {restore!r} names no checkpoint line of the log")
    for ln in case.log:
        if ln.results and ln.status != "C":
            raise CaseFileError(f"{where}: log line {ln.n} has results, which only a completed (C) record holds")
        if case.actions and ln.action not in names:
            raise CaseFileError(f"{where}: log line {ln.n} uses action {ln.action!r} that the agent does not declare")
        if ln.status == "TOMB" and case.setup.source == "fluss":
            raise CaseFileError(f"{where}: log line {ln.n} is a TOMB, but Fluss writes no tombstones (spec §7.3); "
                                "use source = \"kafka\" or drop the line")
        if ln.status == "TOMB" and not case.setup.tombstones:
            raise CaseFileError(f"{where}: log line {ln.n} is a TOMB, but tombstones are off; "
                                "set [setup] tombstones = true (kafkaActionStateTombstoneEnabled, spec §6.6)")
    replay_names = {a.name for a in case.replay_agent.actions} if case.replay_agent else names
    for p in case.pending:
        if replay_names and p.action not in replay_names:
            raise CaseFileError(f"{where}: pending task uses undeclared action {p.action!r}")
